"""The body read from its shape: a humanoid's roles from its rest pose and hierarchy, not its names.

A robot's links are named by its maker (``Trunk, H1, AL3``; servo part numbers;
``b7``), a rig's bones by its exporter; the body itself says what each part is.
:func:`read_anatomy` finds the humanoid roles of a skeleton (the points of
:class:`retarget.humanoid.roles.Roles`) from its rest pose (a robot's zero
configuration) and its hierarchy alone, names only breaking the ties the shape
leaves (:mod:`retarget.humanoid.names`):

1. **Up**: the axis the skeleton records first (``Skeleton.up``), then the other
   five; the first that reads as a standing humanoid (below) is the body's.
2. **Feet**: the two lowest leaves (end points) whose common ancestor stands well
   above them (a third of the height: not a toe and a heel of one foot); that
   ancestor is the **pelvis**, the branches from it to the feet the **legs**, and the
   line between the legs the body's lateral axis.
3. **Arms**: of the other leaves, the pair mirrored across the body's midplane
   (within a tenth of the height) reaching farthest from their common ancestor, the
   **chest**; their branches from it the arms (none: a robot without arms, a pair of
   legs with a torso). The **hips** are where legs and arms branch (the common
   ancestor of the four; a robot floated at its trunk, its legs on a waist below:
   the trunk).
4. **Head**: the highest point near the midplane above the chest (the hips without
   arms), outside the limbs; the head is the last joint on the way to it and that
   point its top (a robot's fixed head: the point itself). The **neck** is the joint
   after the chest toward the head; the **spine** the joints between hips and head
   other than the neck (as :mod:`retarget.humanoid.roles` says).
5. **Sides**: the left is ``up × forward`` (right-handed axes), forward the way the
   feet point from the legs' tops (a robot's soles reach forward of its ankles);
   where the feet point nowhere, the names say, else the body is not read.
6. **Joints in a limb**, along its main chain: the knee (elbow) is the joint
   nearest the middle of the leg's drop from its top to its lowest point (of the
   arm's bone path from its top to its end)
   (:func:`_middle`: not a twist hinge, whose axis runs along its bone, nor a bone
   segment; a one-way hinge, then the name, where two are as near). Above it, the
   hip (shoulder) is the top of the **run** of hinges that make one joint
   (:func:`hinge_runs`: a robot's pitch, roll and yaw), with the clavicle above in
   an arm; below it, the ankle (wrist) and its run, then a toe.

A result must stand as a humanoid does: the legs hanging from the pelvis (each
dropping at least half its bone path from its top to its foot), knees between
hips and feet, the head above the hips; otherwise :func:`read_anatomy` returns
None and the roles are read from names (:func:`retarget.humanoid.roles.find_roles`).

**Hinge runs** (:func:`hinge_runs`): a robot's hip is three hinges a few centimetres
apart, its ankle two; the methods want hip, knee and ankle each the parent of the
next, so the hinges of one joint are gathered into one ball
(:func:`retarget.targets.robot.hinges.gather_hinges`). In a limb, the run above the
knee is the hinges from the knee's parent up to the limb's top (at most three,
each axis square to the next; a fourth above them, a shoulder girdle's, stays
apart); the run below is the hinges after the knee each close to the last (a tenth
of the limb's path) or on the last one's axis (a forearm's twist, the wrist on its
axis). Elsewhere (a waist, a neck) hinges at one place, a short link apart or on
each other's axes make one run, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from ..core import dofs, quat
from ..core.arrays import Array
from ..core.kinematics import rest_pose
from ..core.skeleton import Skeleton
from . import names as naming
from .tree import children_of, common_ancestor, main_chain

__all__ = ["Anatomy", "hinge_axis", "hinge_runs", "read_anatomy"]

#: The six axes tried as the rest pose's up, after the one the skeleton records.
_AXES = ("y", "z", "-y", "-z", "x", "-x")

#: Feet: leaves within this share of the height of the lowest point.
_FOOT_BAND = 0.15
#: The legs' common ancestor at least this share of the height above the feet.
_PELVIS_RISE = 0.3
#: Arms: leaves at least this share of the height off the midplane, mirrored within
#: the next share, reaching at least the last from their common ancestor.
_OFF_MIDPLANE, _MIRROR, _ARM_REACH = 0.03, 0.1, 0.15
#: The head: within this share of the height of the midplane.
_MIDLINE = 0.1
#: A hinge is a twist of its bone when its axis is within this angle (rad) of it.
_TWIST = np.radians(20.0)
#: Two knee (elbow) candidates this near the middle (share of the chain) are a tie.
_TIE = 0.05
#: Hinges this share of the body's extent apart stand at one place.
_AT_ONE_PLACE = 0.01
#: A link between two hinges shorter than this share of the bone the second carries
#: makes them one joint (TALOS's shoulder: its first hinge 14 cm in from the other two,
#: which carry a 27 cm upper arm).
_SHORT = 0.6


@dataclass(frozen=True)
class Anatomy:
    """What :func:`read_anatomy` found.

    Attributes
    ----------
    points : mapping of str to int
        Role → point (joint or site), as :class:`retarget.humanoid.roles.Roles`.
    spine : tuple of int
        The joints from the hips to the head, exclusive of both, but the neck.
    up, left : (3,) float
        The rest pose's up and left (unit).
    runs : tuple of tuple of int
        The runs of hinges (one-channel joints) that make one joint, top first, two
        or more each (:func:`hinge_runs`).
    """

    points: Mapping[str, int]
    spine: tuple[int, ...]
    up: NDArray[np.float64]
    left: NDArray[np.float64]
    runs: tuple[tuple[int, ...], ...] = field(default=())


def hinge_axis(skeleton: Skeleton, j: int) -> NDArray[np.float64]:
    """The axis (3,) of one-channel joint ``j`` in its frame at rest (unit)."""
    axes = dofs.channel_axes(skeleton, quat.identity((skeleton.num_joints,)))[j]
    k = int(np.flatnonzero(np.abs(axes).sum(axis=0) > 0)[0])
    a = axes[:, k]
    return a / np.linalg.norm(a)


def _is_hinge(skeleton: Skeleton, p: int) -> bool:
    return p < skeleton.num_joints and len(skeleton.euler_orders[p]) == 1


def _square(a: Array, b: Array) -> bool:
    return abs(float(a @ b)) < 0.1


class _Tree:
    """A skeleton's points at rest and the queries the reading makes of them."""

    def __init__(self, skeleton: Skeleton) -> None:
        self.sk = skeleton
        self.pos = rest_pose(skeleton)[0]
        self.kids = children_of(skeleton)
        self.parents = skeleton.point_parents
        self.lengths = np.linalg.norm(skeleton.point_offsets, axis=1)
        self.lengths[0] = 0.0
        self.extent = float(np.ptp(self.pos, axis=0).max()) if len(self.pos) > 1 else 0.0
        self.chains = [
            [int(q) for q in skeleton.chain(p)] for p in range(skeleton.num_points)
        ]  # root first

    def lca(self, *points: int) -> int:
        return common_ancestor(self.sk, list(points))

    def below(self, top: int) -> set[int]:
        out, todo = {top}, [top]
        while todo:
            for c in self.kids[todo.pop()]:
                out.add(c)
                todo.append(c)
        return out

    def toward(self, top: int, point: int) -> int:
        """The child of ``top`` on the way down to ``point``."""
        chain = self.chains[point]
        return chain[chain.index(top) + 1]

    def path(self, top: int, point: int) -> float:
        """Bone path length from ``top`` down to ``point``."""
        chain = self.chains[point]
        return float(self.lengths[chain[chain.index(top) + 1 :]].sum())

    def leaves(self) -> list[int]:
        return [p for p in range(1, self.sk.num_points) if not self.kids[p]]

    def carried(self, j: int) -> float:
        """The bone below joint ``j``: to the farthest child of the first joint down its
        chain not at its place (:data:`_AT_ONE_PLACE`)."""
        near = _AT_ONE_PLACE * self.extent
        k = j
        while len(self.kids[k]) == 1 and self.lengths[self.kids[k][0]] <= near:
            k = self.kids[k][0]
        return max((float(self.lengths[c]) for c in self.kids[k]), default=0.0)


def _feet(t: _Tree, h: Array, tall: float) -> tuple[int, int] | None:
    """The two lowest leaves in different legs (module docstring, 2.)."""
    low = float(h.min())
    near = sorted((p for p in t.leaves() if h[p] <= low + _FOOT_BAND * tall), key=lambda p: h[p])
    for i, a in enumerate(near):
        for b in near[i + 1 :]:
            if h[t.lca(a, b)] >= low + _PELVIS_RISE * tall:
                return a, b
    return None


def _arms(
    t: _Tree, h: Array, tall: float, legs: set[int], centre: Array, lateral: Array, pelvis: int
) -> tuple[int, int, int] | None:
    """The mirrored pair of leaves reaching farthest from their common ancestor, outside
    the legs and standing no lower than the pelvis (not an IK helper's branch from a
    root on the floor), and that ancestor: (leaf on ``+lateral``, leaf on ``-lateral``,
    chest)."""
    off = (t.pos - centre) @ lateral
    free = [p for p in t.leaves() if p not in legs]
    plus = [p for p in free if off[p] > _OFF_MIDPLANE * tall]
    minus = [p for p in free if off[p] < -_OFF_MIDPLANE * tall]
    best: tuple[float, int, int, int] | None = None
    for x in plus:
        mirrored = t.pos[x] - 2.0 * off[x] * lateral
        for y in minus:
            if np.linalg.norm(mirrored - t.pos[y]) > _MIRROR * tall:
                continue
            chest = t.lca(x, y)
            if chest in legs or h[chest] < h[pelvis] - 0.05 * tall:
                continue
            reach = min(t.path(chest, x), t.path(chest, y))
            if best is None or reach > best[0] * (1 + 1e-9):
                best = (reach, x, y, chest)
    if best is None or best[0] < _ARM_REACH * tall:
        return None
    return best[1], best[2], best[3]


def _twist(t: _Tree, j: int, child: int) -> bool:
    """Hinge ``j`` turns the bone to ``child`` about itself."""
    if not _is_hinge(t.sk, j):
        return False
    bone = t.pos[child] - t.pos[j]
    size = float(np.linalg.norm(bone))
    if size <= 0.0:
        return False
    return abs(float(hinge_axis(t.sk, j) @ bone)) >= np.cos(_TWIST) * size


def _one_way(sk: Skeleton, j: int) -> bool:
    """A hinge bending one way only (a knee's, an elbow's range: about 0 to a radian
    or more)."""
    if not _is_hinge(sk, j):
        return False
    lo, hi = sk.limits[j, "XYZ".index(sk.euler_orders[j])]
    return bool((lo >= -0.2 and hi >= 1.0) or (hi <= 0.2 and lo <= -1.0))


def _middle(t: _Tree, chain: list[int], kind: str, up: Array | None = None) -> int | None:
    """The index of the knee (elbow) in a limb's main chain (module docstring, 6.): the
    joint nearest the middle of the chain's bone path, a leg's (``up`` given) of its drop
    from its top to its lowest point. Along the path a long foot drew the middle down
    past the knee (a robot's foot 1.7 times a person's for its height: its shin read as
    the thigh, with the names gone)."""
    sk, nj = t.sk, t.sk.num_joints
    if kind == "leg" and up is not None:
        h = t.pos[chain] @ up
        reach = h[0] - h
        total = float(reach.max())
    else:
        steps = np.linalg.norm(np.diff(t.pos[chain], axis=0), axis=1)
        reach = np.concatenate([[0.0], np.cumsum(steps)])
        total = float(reach[-1])
    if total <= 0.0:
        return None
    pattern = naming.KNEE if kind == "leg" else naming.ELBOW
    scored = []
    for k in range(1, len(chain) - 1):
        j = chain[k]
        if j >= nj or len(sk.euler_orders[j]) == 0 or _twist(t, j, chain[k + 1]):
            continue
        if naming.inside_segment(sk, t.pos, chain[k - 1], j, chain[k + 1]):
            continue
        miss = abs(float(reach[k]) - 0.5 * total) / total
        scored.append((miss, k))
    if not scored:
        return None
    best = min(m for m, _ in scored)
    tied = [k for m, k in scored if m <= best + _TIE]
    if len(tied) > 1:
        bends = [k for k in tied if _one_way(sk, chain[k])]
        named = [k for k in (bends or tied) if pattern.search(sk.names[chain[k]])]
        tied = named or bends or tied
    miss_of = {k: m for m, k in scored}
    return min(tied, key=lambda k: miss_of[k])


def _upper_run(t: _Tree, chain: list[int], mid: int) -> list[int]:
    """The hinges above the knee (elbow) making the hip (shoulder): from the knee's
    parent up to the limb's top, at most three, each axis square to the next;
    indices into ``chain``, top first."""
    sk = t.sk
    run = [mid - 1]
    if not _is_hinge(sk, chain[mid - 1]):
        return run
    k = mid - 1
    while (
        k >= 1
        and len(run) < 3
        and _is_hinge(sk, chain[k - 1])
        and _square(hinge_axis(sk, chain[k - 1]), hinge_axis(sk, chain[k]))
    ):
        k -= 1
        run.insert(0, k)
    return run


def _joins(t: _Tree, a: int, b: int) -> bool:
    """Whether hinge ``b``, the child of hinge ``a``, is part of ``a``'s joint: axes square,
    and at one place, a short link before the bone ``b`` carries (:data:`_SHORT`), or on
    ``a``'s axis (a twist hinge, the next on its axis anywhere along it)."""
    sk = t.sk
    if not (_is_hinge(sk, a) and _is_hinge(sk, b)):
        return False
    if not _square(hinge_axis(sk, a), hinge_axis(sk, b)):
        return False
    link = float(np.linalg.norm(t.pos[b] - t.pos[a]))
    near = link <= _AT_ONE_PLACE * t.extent or link < _SHORT * t.carried(b)
    return near or _twist(t, a, b)


def _lower_run(t: _Tree, chain: list[int], low: int, mid: int) -> list[int]:
    """The hinges from the ankle (wrist) at ``chain[low]`` making one joint, at most
    three: each axis square to the last, the third along the first only on its line (a
    toe's hinge, beside the ankle's pitch, is the toe's), each nearer the last than the lower bone
    is long (from the knee ``chain[mid]``: the G1's wrist spreads its three hinges
    over 8 cm of a 10 cm forearm); indices into ``chain``."""
    sk = t.sk
    run = [low]
    if not _is_hinge(sk, chain[low]):
        return run
    bone = float(np.linalg.norm(t.pos[chain[low]] - t.pos[chain[mid]]))
    k = low
    while k + 1 < len(chain) and len(run) < 3 and _is_hinge(sk, chain[k + 1]):
        a, b = chain[k], chain[k + 1]
        axes = [hinge_axis(sk, chain[i]) for i in run] + [hinge_axis(sk, b)]
        if not _square(axes[-2], axes[-1]):
            break
        if len(axes) == 3 and abs(float(np.linalg.det(np.stack(axes)))) < 0.5:
            # the third along the first: one ball only on the first's line (a forearm's
            # twist and a wrist's yaw, Z-X-Z), not beside it (a toe's pitch)
            off = t.pos[b] - t.pos[chain[run[0]]]
            if np.linalg.norm(off - (off @ axes[0]) * axes[0]) > 2 * _AT_ONE_PLACE * t.extent:
                break
        if float(np.linalg.norm(t.pos[b] - t.pos[a])) > bone and not _twist(t, a, b):
            break
        k += 1
        run.append(k)
    return run


def _limb(
    t: _Tree, top: int, kind: str, up: Array | None = None
) -> tuple[dict[str, int], list[tuple[int, ...]]] | None:
    """A limb's roles along its main chain from ``top`` and its hinge runs (``up``: the
    body's, for a leg's knee)."""
    sk, nj = t.sk, t.sk.num_joints
    chain = main_chain(sk, top)
    if len(chain) < 3:
        return None
    mid = _middle(t, chain, kind, up)
    if mid is None:
        return None
    upper, middle, lower, tip = (
        ("hip", "knee", "ankle", "toe_tip")
        if kind == "leg"
        else ("shoulder", "elbow", "wrist", "hand_tip")
    )
    above = _upper_run(t, chain, mid)
    first = above[0]
    while first >= 1 and naming.inside_segment(
        sk, t.pos, chain[first - 1], chain[first], chain[mid]
    ):
        first -= 1  # up over a bone segment (a twist bone, a B-bone) by its name
    low = mid + 1
    while (
        low + 1 < len(chain)
        and chain[low + 1] < nj
        and naming.inside_segment(sk, t.pos, chain[mid], chain[low], chain[low + 1])
    ):
        low += 1
    below = _lower_run(t, chain, low, mid) if low < len(chain) else []
    out = {upper: chain[first], middle: chain[mid]}
    if low < len(chain):
        out[lower] = chain[low]
    end = below[-1] if below else low
    if kind == "leg" and chain[low] < nj and end + 1 < len(chain) and chain[end + 1] < nj:
        out["toe"] = chain[end + 1]
    if low < len(chain) and chain[low] < nj:
        out[tip] = chain[-1]
    if kind == "arm" and first >= 1:
        out["clavicle"] = chain[first - 1]
    runs = [tuple(chain[k] for k in r) for r in (above, below) if len(r) > 1]
    return out, runs


def _head(
    t: _Tree, h: Array, tall: float, base: int, limbs: set[int], off: Array
) -> tuple[int, int | None] | None:
    """The head and its top (module docstring, 4.); None when nothing stands above
    ``base`` near the midplane. The top: the highest point on the midplane (within a
    hundredth of the height: not an eye), else near it (:data:`_MIDLINE`: a robot's
    head geometry's farthest point); of points as high, the deepest."""
    sk, nj = t.sk, t.sk.num_joints
    free = [p for p in t.below(base) if p not in limbs]
    top = base
    for band in (0.01, _MIDLINE):
        near = [p for p in free if abs(off[p]) <= band * tall] or [base]
        top = max(near, key=lambda p: (round(float(h[p]) / tall, 6), len(t.chains[p])))
        if h[top] > h[base] + 0.02 * tall:
            break
    else:
        return None
    path = t.chains[top][t.chains[top].index(base) + 1 :]
    joints = [p for p in path if p < nj]
    if not joints:  # a site on the chest: a robot's fixed head
        return top, None
    head = joints[-1]
    if (
        not [c for c in t.kids[head] if c < nj] and len(joints) > 1
    ):  # an end joint: the top of a head
        # that holds eyes beside it, or named an end (``HeadTop_End``), is the head's end
        # (SMPL's ``Head`` is the head: the only child of its neck)
        if len(t.kids[joints[-2]]) > 1 or naming.END.search(sk.names[head]):
            return joints[-2], head
    sites = [c for c in t.kids[head] if c >= nj]
    return head, (sites[0] if sites else None)


def _forward(t: _Tree, up: Array, tops: Sequence[int], chains: Sequence[list[int]]) -> Array:
    """The way the feet point from the legs' tops, in the floor's plane."""
    way = np.mean([t.pos[c[-1]] - t.pos[top] for top, c in zip(tops, chains, strict=True)], 0)
    return way - (way @ up) * up


def _read(t: _Tree, up: Array, named: Mapping[int, str]) -> Anatomy | None:
    sk, nj = t.sk, t.sk.num_joints
    h = t.pos @ up
    tall = float(h.max() - h.min())
    if tall <= 0.0 or sk.num_points < 6:
        return None
    feet = _feet(t, h, tall)
    if feet is None:
        return None
    pelvis = t.lca(*feet)
    legs = [t.toward(pelvis, f) for f in feet]
    leg_chains = [main_chain(sk, top) for top in legs]
    in_legs = t.below(legs[0]) | t.below(legs[1])
    means = [t.pos[c].mean(axis=0) for c in leg_chains]
    across = means[0] - means[1]
    across = across - (across @ up) * up
    width = float(np.linalg.norm(across))
    if width < 0.02 * tall:
        return None
    lateral = across / width
    centre = 0.5 * (means[0] + means[1])
    for top, foot in zip(legs, feet, strict=True):  # the legs hang from the pelvis
        if h[top] - h[foot] < 0.5 * t.path(top, foot):
            return None
    arms = _arms(t, h, tall, in_legs, centre, lateral, pelvis)
    arm_tops = [t.toward(arms[2], arms[0]), t.toward(arms[2], arms[1])] if arms else []
    hips = t.lca(*legs, *arm_tops)
    chest = arms[2] if arms else hips
    limbs = in_legs.union(*(t.below(a) for a in arm_tops))
    off = (t.pos - centre) @ lateral
    head = _head(t, h, tall, chest, limbs, off)
    if head is None or h[head[0]] <= h[hips]:
        return None
    # sides: the left is up × forward; the names where the feet point nowhere
    forward = _forward(t, up, legs, leg_chains)
    leg_length = np.mean([t.path(top, c[-1]) for top, c in zip(legs, leg_chains, strict=True)])
    if float(np.linalg.norm(forward)) >= 0.05 * leg_length:
        first_left = float(np.cross(up, forward) @ lateral) > 0.0
    else:
        said = [named.get(legs[0]), named.get(legs[1])]
        if set(said) != {"left", "right"}:
            return None
        first_left = said[0] == "left"
    sides = ("left", "right") if first_left else ("right", "left")
    points: dict[str, int] = {"hips": hips}
    runs: list[tuple[int, ...]] = []
    limbs_of = {
        side: [("leg", legs[k])] + ([("arm", arm_tops[k])] if arm_tops else [])
        for k, side in enumerate(sides)
    }
    for side in ("left", "right"):  # (no arms: a pair of legs with a trunk)
        for kind, top in limbs_of[side]:
            found = _limb(t, top, kind, up)
            if found is None:
                return None
            roles, limb_runs = found
            points |= {f"{side}_{role}": p for role, p in roles.items()}
            runs += limb_runs
    for side in ("left", "right"):  # knees between hips and feet
        ankle = points.get(f"{side}_ankle")
        if ankle is None or not h[points[f"{side}_hip"]] > h[points[f"{side}_knee"]] > h[ankle]:
            return None
    runs += _trunk_runs(t, points, runs)
    first_of = {j: r[0] for r in runs for j in r}
    top, tip = head
    head_joint = first_of.get(top, top)  # a head of several hinges: the top of their run
    points["head"] = head_joint
    if tip is not None:
        points["head_top"] = tip
    path = t.chains[head_joint]
    inner = [p for p in path[path.index(hips) + 1 : -1] if p < nj]
    fixed = head_joint >= nj and path[-2] == chest  # a head fixed on the chest: no neck
    neck: tuple[int, ...] = ()
    if (chest == hips or chest in inner) and not fixed:
        after = path[path.index(chest) + 1]
        if after != head_joint and after < nj:
            neck = next((r for r in runs if after in r), (after,))
        elif chest != hips and not _low(t, hips, chest, head_joint):
            neck = (chest,)  # (a Biped's neck, holding the clavicles)
    if neck:
        points["neck"] = neck[0]
    spine = tuple(j for j in inner if j not in neck)
    left = lateral if first_left else -lateral
    return Anatomy(points, spine, up, left, tuple(runs))


def _low(t: _Tree, hips: int, chest: int, head: int) -> bool:
    """Whether the chest stands in the lower half of the trunk at rest (a robot's waist
    the head hangs from is its spine, not a neck)."""
    trunk = t.pos[head] - t.pos[hips]
    return bool((t.pos[chest] - t.pos[hips]) @ trunk < 0.5 * (trunk @ trunk))


def _trunk_runs(
    t: _Tree, points: Mapping[str, int], limb_runs: Sequence[tuple[int, ...]]
) -> list[tuple[int, ...]]:
    """Runs of hinges outside the limbs' (a waist's, a neck's): each the only child of the
    last and part of its joint (:func:`_joins`), at most three."""
    sk = t.sk
    taken = {j for r in limb_runs for j in r}
    taken |= {p for r, p in points.items() if r.startswith(("left_", "right_"))}
    runs: list[tuple[int, ...]] = []
    seen: set[int] = set()
    for j in range(1, sk.num_joints):
        if j in seen or j in taken or not _is_hinge(sk, j):
            continue
        run = [j]
        while len(run) < 3:
            kids = [c for c in t.kids[run[-1]] if c < sk.num_joints]
            if len(kids) != 1 or kids[0] in taken or not _joins(t, run[-1], kids[0]):
                break
            run.append(kids[0])
        seen |= set(run)
        if len(run) > 1:
            runs.append(tuple(run))
    return runs


@lru_cache(maxsize=64)
def read_anatomy(skeleton: Skeleton) -> Anatomy | None:
    """The humanoid roles of ``skeleton`` read from its rest pose and hierarchy
    (module docstring); None when no axis shows a standing humanoid (cached per
    skeleton)."""
    if skeleton.num_points < 6:
        return None
    t = _Tree(skeleton)
    named = naming.name_sides(skeleton)
    order = [skeleton.up] if skeleton.up else []
    order += [a for a in _AXES if a not in order]
    for axis in order:
        up = np.zeros(3)
        up["xyz".index(axis[-1])] = -1.0 if axis.startswith("-") else 1.0  # ("z", "-y", ...)
        found = _read(t, up, named)
        if found is not None:
            return found
    return None


def hinge_runs(skeleton: Skeleton) -> tuple[tuple[int, ...], ...] | None:
    """The runs of hinges of ``skeleton`` that make one joint (module docstring), or
    None when its body is not read (:func:`read_anatomy`)."""
    found = read_anatomy(skeleton)
    return None if found is None else found.runs
