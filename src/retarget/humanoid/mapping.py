"""Joint mapping and rest-pose alignment between skeletons of different hierarchies.

The papers retarget between skeletons that share one hierarchy. Here a source
of any humanoid hierarchy drives a target of any other, by **world bone
directions**, not local angles:

1. **Roles** (:func:`retarget.humanoid.roles.find_roles`) name the humanoid joints of
   both skeletons; a mapping file completes or overrides them
   (:func:`read_overrides`). Every target point with a role the source also has
   gets a *counterpart* in the source: that joint or site. A target spine joint
   gets the point at the same share of the bone-path length along the source's
   spine chain (hips → neck), so two spine joints drive four.
2. **Drivers**: each target joint with a counterpart is driven by a source
   joint: the joint of the same role, or for a spine joint the source chain
   joint whose bone holds its counterpart. Target joints without one (twist
   bones, fingers, a toe the source lacks) keep their rest local rotation;
   source joints without a target counterpart fold into their parents.
3. **Rest alignment** (T-pose against A-pose, rest poses lying along an axis):
   in the source's world at rest, the rotation ``B_t`` that turns the target's
   rest bone direction from joint ``t`` to its next counterpart-bearing point
   exactly onto the source's (the point up the spine chain first, else the
   farthest; for the hips the head: the pelvis stands as the whole trunk stands,
   not as the first spine bone leans, which on a robot is a waist hinge a few
   centimetres above the pelvis), twisted about it so that the directions to
   its other next points (hips to thighs, chest to clavicles) come closest; a
   joint with one such point takes the smallest turn after its parent's ``B``, so twist
   carries down a chain (with ``level_feet``, a robot's, the ankles are turned about
   the up axis only: a sole plate of its own proportions lies flat where the
   performer's foot stands flat). Then, with ``A`` the change of world
   axes (source up onto target up), ``G`` the rest world rotations and ``W``
   the world rotations of a frame,

   ``W_t = A ⊗ W_s[driver] ⊗ C_t``,  ``C_t = G_s[driver]⁻¹ ⊗ B_t ⊗ A⁻¹ ⊗ G_t``,

   so every target bone between counterpart-bearing points points where the
   source's does: ``W_t u_t = A W_s u_s``.
4. **Units and axes**: the target's unit and up axis are honoured: the root
   (hips) position is the source's turned by ``A`` and scaled by the ratio of
   the legs' lengths (thigh + shin, in each skeleton's unit), or with
   ``scale_root=False`` by the ratio of the units only (:data:`retarget.humanoid.world.UNITS`). Both
   skeletons' up axes and units are those :mod:`retarget.humanoid.world` found when
   they were read (a target whose rest pose lies down, LAFAN1's, is up as its
   own frames say).
5. **Limb ends**: a wrist or ankle role may be an end site (a rig without hand
   or foot joints): it is aimed at like any point and drives nothing; for the
   methods, :func:`map_for_method` makes it a joint with a hand (foot) beyond
   (:func:`_with_limb_ends`).

:func:`rerig` builds the target's hierarchy with the source's proportions: the
source re-expressed on it (:func:`transfer`) can go through any method of
:mod:`retarget.methods`, which all assume one hierarchy.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..core import dofs, quat
from ..core.arrays import Array
from ..core.errors import RetargetError
from ..core.kinematics import forward_kinematics, rest_pose
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from . import world
from .plausible import implausible
from .roles import Roles, find_roles, leg_length
from .travel import below_hips, from_hips, root_above

__all__ = [
    "REQUIRED_ROLES",
    "ForMethod",
    "JointMap",
    "MappingError",
    "bone_direction_error",
    "map_for_method",
    "map_skeletons",
    "needs_mapping",
    "read_overrides",
    "required_roles",
    "rerig",
    "same_hierarchy",
    "same_rest",
    "transfer",
]


_SIDED = ("hip", "knee", "ankle", "shoulder", "elbow", "wrist")
#: Roles a mapping cannot do without, on both skeletons (but a body without arms:
#: :func:`required_roles`).
REQUIRED_ROLES = ("hips", "head", *(f"{s}_{r}" for s in ("left", "right") for r in _SIDED))
_ARM_ROLES = {f"{s}_{r}" for s in ("left", "right") for r in ("clavicle", *_SIDED[3:], "hand_tip")}


def required_roles(roles: Mapping[str, int]) -> tuple[str, ...]:
    """The roles of :data:`REQUIRED_ROLES` a skeleton with ``roles`` must have: all, but
    the arms' on a body found without arms (no arm role at all: a robot that is a pair
    of legs and a trunk, Berkeley's), whose source arms then drive nothing."""
    if _ARM_ROLES.isdisjoint(roles):
        return tuple(r for r in REQUIRED_ROLES if r not in _ARM_ROLES)
    return REQUIRED_ROLES


#: Bones compared by :func:`bone_direction_error`: (name, from role, to role).
_BONES = (
    ("trunk", "hips", "neck"),
    ("neck", "neck", "head"),
    ("head", "head", "head_top"),
    ("pelvis", "left_hip", "right_hip"),
    ("shoulders", "left_shoulder", "right_shoulder"),
    *(
        (f"{s}_{name}", f"{s}_{a}", f"{s}_{b}")
        for s in ("left", "right")
        for name, a, b in (
            ("clavicle", "clavicle", "shoulder"),
            ("upper_arm", "shoulder", "elbow"),
            ("forearm", "elbow", "wrist"),
            ("hand", "wrist", "hand_tip"),
            ("thigh", "hip", "knee"),
            ("shin", "knee", "ankle"),
            ("foot", "ankle", "toe"),
            ("toes", "toe", "toe_tip"),
        )
    ),
)
LEG_BONES = tuple(
    b[0] for b in _BONES if b[0].split("_", 1)[-1] in ("thigh", "shin", "foot", "toes")
)


class MappingError(RetargetError):
    """Roles a mapping needs but could not find."""


@dataclass(frozen=True, eq=False)
class JointMap:
    """How a source skeleton drives a target skeleton (module docstring).

    Attributes
    ----------
    source, target : Skeleton
    source_roles, target_roles : dict of str to int
        Role → point (joint or site index) on each, overrides applied.
    driver : ndarray of int, shape (J_target,)
        The source joint whose world rotation drives each target joint; -1: the
        joint keeps its rest local rotation.
    offset : ndarray, shape (J_target, 4)
        ``C_t`` of ``W_t = A ⊗ W_s[driver] ⊗ C_t`` (identity where undriven).
    axes : ndarray, shape (4,)
        ``A``: source world → target world.
    scale : float
        Target length unit per source length unit for the root position.
    unit_scale : float
        The same from the units alone.
    counterpart : ndarray of int, shape (P_target,)
        For each target point, -1 or its source point: the point of the same
        role, or for a spine joint the source chain joint below its counterpart.
    counterpart_next : ndarray of int, shape (P_target,)
        The source point after ``counterpart`` on the spine chain (itself for a role).
    counterpart_share : ndarray, shape (P_target,)
        The counterpart lies at this share from ``counterpart`` to ``counterpart_next``.
    counterpart_rest : ndarray, shape (P_target, 3)
        Rest position of each counterpart in the source (NaN where none).
    aim : ndarray of int, shape (J_target,)
        The target point each driven joint aims at (-1: none): in every frame the
        joint turns by the smallest rotation that points its bone to it along
        the source's bone to its counterpart (source joints folded into their
        parents, such as a hand below a wrist, still count).
    aim_local : ndarray, shape (J_target, 3)
        That bone's rest direction in the joint's frame (unit).
    align : ndarray, shape (J_target, 4)
        ``B_t``: in the source's world at rest, the turn of each target joint
        onto its counterpart (the parent's for an undriven joint).
    lift : ndarray, shape (J_target,)
        For a one-channel joint aimed from a three-channel parent (a robot's knee
        below its hip ball): how much higher on its hinge axis (rad, the elevation
        of the bone's direction from the plane square to the axis) the target's
        bone stands at rest than its parent's (a straight limb's). A robot
        whose thigh and shin zig-zag at rest (the OP3's by 20°, the H1's by 16°
        across the leg, its hip's last hinge out to the side) cannot straighten
        them as a performer does, and the hinge cannot reach across: the wanted
        direction is raised by it (:func:`_on_channels`), so the rest stands for
        the rest (aimed as it was, the parent turned about itself by up to a half
        turn to reach the unreachable: the OP3's hips swung 0.85 rad in a frame).
        Measured through the points of the hinges' axes the limbs aim at
        (:func:`_on_axes`), where those zig-zags vanish: zero for every robot of the
        tests.
    """

    source: Skeleton
    target: Skeleton
    source_roles: dict[str, int]
    target_roles: dict[str, int]
    driver: NDArray[np.intp]
    offset: Array
    axes: Array
    scale: float
    unit_scale: float
    counterpart: NDArray[np.intp]
    counterpart_next: NDArray[np.intp]
    counterpart_share: Array
    counterpart_rest: Array
    aim: NDArray[np.intp]
    aim_local: Array
    align: Array
    lift: Array | None = None

    @property
    def bones(self) -> tuple[tuple[str, int, int, int, int], ...]:
        """Bones both skeletons have: (name, source from, source to, target from, target to)."""
        s, t = self.source_roles, self.target_roles
        pos_s, _ = rest_pose(self.source)
        pos_t, _ = rest_pose(self.target)
        return tuple(
            (name, s[a], s[b], t[a], t[b])
            for name, a, b in _BONES
            if a in s and b in s and a in t and b in t
            if min(
                np.linalg.norm(pos_s[s[b]] - pos_s[s[a]]), np.linalg.norm(pos_t[t[b]] - pos_t[t[a]])
            )
            > 1e-9
        )


# -- roles ----------------------------------------------------------------------------------


def _point_names(skeleton: Skeleton) -> tuple[str, ...]:
    return (*skeleton.names, *skeleton.site_names)


def _roles(skeleton: Skeleton, overrides: Mapping[str, str], which: str) -> dict[str, int]:
    """Role → point of one skeleton, with overrides applied."""
    try:
        found: Roles | None = find_roles(skeleton)
    except RetargetError:
        found = None
    points = dict(found.points) if found is not None else {}
    names = _point_names(skeleton)
    for role, name in overrides.items():
        if name not in names:
            raise MappingError(f"the {which} mapping names {name!r} for {role!r}: no such joint")
        points[role] = names.index(name)
    return points


def read_overrides(path: str | Path) -> dict[str, dict[str, str]]:
    """A mapping file: ``{"source": {role: joint}, "target": {role: joint}}`` (JSON).

    Either part may be missing; roles are those of :mod:`retarget.humanoid.roles`
    (``hips``, ``neck``, ``head``, ``left_knee``, ``right_wrist``, ...).
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise MappingError(f"{path}: cannot read the mapping file: {exc}") from None
    ok = isinstance(data, dict) and set(data) <= {"source", "target"}
    ok = ok and all(
        isinstance(v, dict) and all(isinstance(n, str) for n in v.values()) for v in data.values()
    )
    if not ok:
        raise MappingError(
            f'{path}: expected {{"source": {{role: joint name}}, "target": {{role: joint name}}}}'
        )
    return {k: dict(v) for k, v in data.items()}


def _implausible_message(which: str, skeleton: Skeleton, problems: list[str]) -> str:
    example = {which: {"head": f"<a joint of the {which}, e.g. {skeleton.names[-1]}>"}}
    return (
        f"the {which}'s roles do not stand as a humanoid's: {'; '.join(problems[:3])}"
        f"{'; ...' if len(problems) > 3 else ''}; name them with --map map.json, "
        f"e.g. {json.dumps(example)}"
    )


def _missing_message(missing: dict[str, list[str]], skeletons: dict[str, Skeleton]) -> str:
    example = {
        which: {role: f"<a joint of the {which}, e.g. {skeletons[which].names[-1]}>"}
        for which, roles in missing.items()
        for role in roles[:1]
    }
    listed = "; ".join(f"{which}: {', '.join(roles)}" for which, roles in missing.items())
    return (
        f"cannot map the skeletons, roles not found ({listed}); complete them with "
        f"--map map.json, e.g. {json.dumps(example)}"
    )


# -- geometry -------------------------------------------------------------------------------


def _chain_points(chain: list[int], pos: Array) -> Array:
    """Cumulative bone-path share (0 … 1) of each joint of a chain, shape (len(chain),)."""
    seg = np.linalg.norm(np.diff(pos[chain], axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    return cum / max(cum[-1], 1e-12)


def _path(skeleton: Skeleton, top: int, bottom: int) -> list[int]:
    """The points from ``top`` down to its descendant ``bottom`` (a joint, or an end site
    such as a robot's head), both included."""
    parents, names = skeleton.point_parents, skeleton.point_names
    path = [bottom]
    while path[-1] != top:
        if path[-1] < 0:
            raise MappingError(f"{names[bottom]} is not below {names[top]}")
        path.append(int(parents[path[-1]]))
    return path[::-1]


def _spine_shares(
    s_chain: list[int],
    t_chain: list[int],
    s_roles: Mapping[str, int],
    t_roles: Mapping[str, int],
    pos_s: Array,
    pos_t: Array,
) -> list[tuple[int, int, float, int]]:
    """Counterparts of the target's spine joints that have no role.

    The chains (hips to head) are cut at the roles both have on
    them (hips, neck, head); a target joint inside a piece gets the source
    point at the same bone-path share of the matching piece. Returns, per such
    joint, ``(t, k, λ, k_mid)``: the point lies at ``λ`` from source chain joint
    ``k`` to the next, and ``k_mid`` is the source joint whose bone holds the
    middle of the target joint's own bone (its driver).
    """
    cuts = [r for r in ("hips", "neck", "head") if r in s_roles and r in t_roles]
    cut_t = [t_chain.index(t_roles[r]) for r in cuts if t_roles[r] in t_chain]
    cut_s = [s_chain.index(s_roles[r]) for r in cuts if s_roles[r] in s_chain]
    out = []
    for (t0, t1), (s0, s1) in zip(pairwise(cut_t), pairwise(cut_s), strict=True):
        sc, tc = s_chain[s0 : s1 + 1], t_chain[t0 : t1 + 1]
        s_share, t_share = _chain_points(sc, pos_s), _chain_points(tc, pos_t)
        last = len(sc) - 2
        for i in range(1, len(tc) - 1):
            k = int(np.clip(np.searchsorted(s_share, t_share[i], side="right") - 1, 0, last))
            lam = (t_share[i] - s_share[k]) / max(s_share[k + 1] - s_share[k], 1e-12)
            mid = 0.5 * (t_share[i] + t_share[i + 1])
            k_mid = int(np.clip(np.searchsorted(s_share, mid, side="right") - 1, 0, last))
            out.append((tc[i], sc[k], float(lam), sc[k_mid]))
    return out


#: Least total product of the sines (others against the aim, target's times
#: source's) that still sets a twist: below it the others lie along the aim in
#: one skeleton (collars on the neck point) and say nothing about the twist.
_TWIST_EVIDENCE = 0.01


def _aim(e: Array, d: Array, inherited: Array) -> Array:
    """The rotation (4,) turning the first unit direction ``e[0]`` exactly onto ``d[0]``,
    then about ``d[0]`` by the twist that best turns the others ``e[1:]`` onto ``d[1:]``
    (least squares on their components across ``d[0]``); with no others, or others
    along ``d[0]`` (:data:`_TWIST_EVIDENCE`), the twist of ``inherited`` is kept (the
    smallest turn after it). ``e, d``: (n, 3)."""
    swing = quat.quat_between(e[0], d[0])
    axis = d[0]
    a = quat.rotate(swing, e[1:])
    a = a - (a @ axis)[:, None] * axis
    b = d[1:] - (d[1:] @ axis)[:, None] * axis
    evidence = float((np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)).sum())
    if evidence < _TWIST_EVIDENCE:
        turned = quat.rotate(inherited, e[0])
        return quat.multiply(quat.quat_between(turned, d[0]), inherited)
    theta = np.arctan2((np.cross(a, b) @ axis).sum(), (a * b).sum())
    return quat.multiply(quat.quat_from_rotvec(theta * axis), swing)


def _children(skeleton: Skeleton) -> list[list[int]]:
    parents = np.concatenate([skeleton.parents, skeleton.site_parents])
    kids: list[list[int]] = [[] for _ in range(len(parents))]
    for p, par in enumerate(parents):
        if par >= 0:
            kids[par].append(p)
    return kids


def _next_points(
    j: int, kids: list[list[int]], has: NDArray[np.bool_], pos: Array | None = None
) -> list[int]:
    """The nearest descendants of ``j`` with a counterpart (none in between); with rest
    positions ``pos`` (P, 3), points that sit on ``j`` itself are looked through."""
    out, stack = [], list(kids[j])
    while stack:
        p = stack.pop()
        on_j = pos is not None and np.linalg.norm(pos[p] - pos[j]) <= 1e-9
        if has[p] and not on_j:
            out.append(p)
        else:
            stack.extend(kids[p])
    return sorted(out)


def map_skeletons(
    source: Skeleton,
    target: Skeleton,
    *,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
    source_up: Array | None = None,
    target_up: Array | None = None,
    scale_root: bool = True,
    source_pose: Array | None = None,
    level_feet: bool = False,
) -> JointMap:
    """Map a source skeleton onto a target skeleton of any hierarchy (module docstring).

    Parameters
    ----------
    source, target : Skeleton
    overrides : {"source": {role: joint name}, "target": {...}}, optional
        Roles that complete or replace those found (:func:`read_overrides`).
    source_up, target_up : array_like, shape (3,), optional
        World up axes; default from the rest poses (:func:`up_axis`): pass the
        source's from its motion when its rest pose lies along an axis.
    scale_root : bool
        Root motion scaled by the legs' length ratio (default) or by the
        units' ratio only.
    source_pose : array_like, shape (J_source, 4), optional
        Local rotations of a source pose to align at instead of its rest pose
        (:func:`standing_frame`: a rest pose lying along an axis, every bone in
        one line, says nothing of the twists of a limb that has one next point).
    level_feet : bool
        The ankles aligned by their soles, not their bones: each turned about the up
        axis only, its heading (ankle to next point, across the up axis) onto the
        source's, so that the target's foot lies as its rest pose lies where the
        source's stands flat, and not aimed frame by frame. For a target whose foot
        is a plate of other proportions than a human's (a robot's: JVRC-1's ankle
        stands 10.8 cm over a sole reaching 13.7 cm ahead, 38° down to its tip
        against the performer's 16°; aimed along the bone, its planted feet stood
        toes up 13°, its knees bent 45°).

    Raises
    ------
    MappingError
        When a role of :data:`REQUIRED_ROLES` is missing on either skeleton: the
        message names them and gives a JSON mapping that would complete them.
    """
    overrides = overrides or {}
    src_roles = _roles(source, overrides.get("source", {}), "source")
    tgt_roles = _roles(target, overrides.get("target", {}), "target")
    missing = {
        which: [r for r in required_roles(roles) if r not in roles]
        for which, roles in (("source", src_roles), ("target", tgt_roles))
    }
    missing = {k: v for k, v in missing.items() if v}
    if missing:
        raise MappingError(_missing_message(missing, {"source": source, "target": target}))
    for which, skeleton, roles in (("source", source, src_roles), ("target", target, tgt_roles)):
        problems = implausible(skeleton, roles)
        if problems:
            raise MappingError(_implausible_message(which, skeleton, problems))
    s_up = np.asarray(
        source_up if source_up is not None else world.up_axis(source, roles=src_roles),
        dtype=np.float64,
    )
    t_up = np.asarray(
        target_up if target_up is not None else world.up_axis(target, roles=tgt_roles),
        dtype=np.float64,
    )
    axes = quat.quat_between(s_up, t_up)
    a_inv = quat.conjugate(axes)
    if source_pose is None:
        pos_s, g_s = rest_pose(source)
    else:
        pos_s, g_s = forward_kinematics(source, np.zeros(3), np.asarray(source_pose, float))
    pos_t, g_t = rest_pose(target)
    pos_t_in_s = quat.rotate(a_inv, pos_t)  # the target's rest in the source's world axes

    # counterparts: roles, then spine joints by bone-path share along the chain
    n_t = target.num_joints + len(target.site_names)
    counterpart = np.full(n_t, -1, dtype=np.intp)
    cp_pos = np.full((n_t, 3), np.nan)  # the counterpart's rest position in the source
    cp_share = np.zeros(n_t)
    driver = np.full(target.num_joints, -1, dtype=np.intp)
    for role, p in tgt_roles.items():
        if role in src_roles:
            counterpart[p] = src_roles[role]
            cp_pos[p] = pos_s[src_roles[role]]
            if p < target.num_joints and src_roles[role] < source.num_joints:
                driver[p] = src_roles[role]
    s_chain = _path(source, src_roles["hips"], src_roles["head"])
    t_chain = _path(target, tgt_roles["hips"], tgt_roles["head"])
    cp_next = counterpart.copy()
    for t, k, lam, k_mid in _spine_shares(s_chain, t_chain, src_roles, tgt_roles, pos_s, pos_t):
        counterpart[t], cp_next[t], cp_share[t] = k, s_chain[s_chain.index(k) + 1], lam
        cp_pos[t] = (1.0 - lam) * pos_s[k] + lam * pos_s[cp_next[t]]
        driver[t] = k_mid

    # rest alignment B_t in the source's world, then C_t: each joint aims first along
    # the spine chain (else at its farthest next point), the other points set the twist
    chain_set = set(t_chain)
    level = {tgt_roles[f"{side}_ankle"] for side in ("left", "right")} if level_feet else set()
    # the up of the target's rest pose (a robot's zero configuration stands on its own
    # axes, whatever world it is declared in), in the source's world
    rest_up = quat.rotate(a_inv, world.up_vector(world.find_up(target)[0])) if level else s_up
    kids = _children(target)
    has = counterpart >= 0
    # a hinge's place on its axis is the maker's choice: the limbs aim through the point
    # of each hinge's axis nearest the line from its parent to its next point
    middles = [
        tgt_roles.get(f"{side}_{r}") for side in ("left", "right") for r in ("knee", "elbow")
    ]
    on_axes = _on_axes(target, pos_t, g_t, kids, has, [m for m in middles if m is not None])
    if not np.array_equal(on_axes, pos_t):
        pos_t, pos_t_in_s = on_axes, quat.rotate(a_inv, on_axes)
    align = np.tile(quat.identity(), (target.num_joints, 1))
    offset = np.tile(quat.identity(), (target.num_joints, 1))
    aim = np.full(target.num_joints, -1, dtype=np.intp)
    aim_local = np.zeros((target.num_joints, 3))
    for t in range(target.num_joints):
        par = int(target.parents[t])
        inherited = align[par] if par >= 0 else quat.identity()
        if driver[t] < 0:
            align[t] = inherited
            continue
        nxt = _next_points(t, kids, has, pos_t)
        nxt.sort(key=lambda p: (p not in chain_set, -np.linalg.norm(pos_t[p] - pos_t[t])))
        if t == tgt_roles["hips"]:  # the pelvis stands as the trunk stands: toward the head
            nxt = [tgt_roles["head"], *nxt]
        e = pos_t_in_s[nxt] - pos_t_in_s[t]
        d = cp_pos[nxt] - cp_pos[t]
        keep = (np.linalg.norm(e, axis=1) > 1e-9) & (np.linalg.norm(d, axis=1) > 1e-9)
        first = nxt[int(np.argmax(keep))] if keep.any() else -1
        if t in level and keep.any():  # a foot: rest up onto up, heading onto the source's
            e_h = e[keep][0] - (e[keep][0] @ rest_up) * rest_up
            d_h = d[keep][0] - (d[keep][0] @ s_up) * s_up
            if min(np.linalg.norm(e_h), np.linalg.norm(d_h)) > 1e-9:  # (else: along its bone)
                align[t] = _aim(
                    np.stack([rest_up, e_h / np.linalg.norm(e_h)]),
                    np.stack([s_up, d_h / np.linalg.norm(d_h)]),
                    inherited,
                )
                offset[t] = quat.multiply(
                    quat.multiply(quat.conjugate(g_s[driver[t]]), align[t]),
                    quat.multiply(a_inv, g_t[t]),
                )
                continue
        # the hips aim at nothing frame by frame: the legs hang from the pelvis, which
        # keeps the source's turn (aimed at the first spine point, on a robot a waist
        # hinge 2-4 cm above it, the pelvis leaned as the performer's lumbar bone leans:
        # iCub's by 39° on the walk, its thighs into its pelvis)
        if first >= 0 and t != tgt_roles["hips"]:
            aim[t] = first
            v = quat.rotate(quat.conjugate(g_t[t]), pos_t[aim[t]] - pos_t[t])
            aim_local[t] = v / np.linalg.norm(v)
        e = e[keep] / np.linalg.norm(e[keep], axis=1, keepdims=True)
        d = d[keep] / np.linalg.norm(d[keep], axis=1, keepdims=True)
        if len(e):
            align[t] = _aim(e, d, inherited)
        else:
            align[t] = inherited
        offset[t] = quat.multiply(
            quat.multiply(quat.conjugate(g_s[driver[t]]), align[t]),
            quat.multiply(a_inv, g_t[t]),
        )
    lift = _hinge_lifts(target, driver, aim, pos_t)
    unit_scale = world.UNITS.get(source.unit, 1.0) / world.UNITS.get(target.unit, 1.0)
    scale = unit_scale
    if scale_root:
        scale = float(
            leg_length(target, tgt_roles, chords=True) / leg_length(source, src_roles, chords=True)
        )
    return JointMap(
        source=source,
        target=target,
        source_roles=src_roles,
        target_roles=tgt_roles,
        driver=driver,
        offset=offset,
        axes=axes,
        scale=float(scale),
        unit_scale=float(unit_scale),
        counterpart=counterpart,
        counterpart_next=cp_next,
        counterpart_share=cp_share,
        counterpart_rest=cp_pos,
        aim=aim,
        aim_local=aim_local,
        align=align,
        lift=lift,
    )


def _hinge_axis_in_parent(skeleton: Skeleton, j: int) -> Array:
    """A one-channel joint's axis (3,) in its parent's frame (its own at rest)."""
    k = "XYZ".index(skeleton.euler_orders[j])
    return quat.rotate(skeleton.axes[j], np.eye(3)[k])


def _elevation(direction: Array, axis: Array) -> Array:
    """The angle (rad) of unit ``direction`` (..., 3) out of the plane square to ``axis``."""
    return np.arcsin(np.clip(direction @ axis, -1.0, 1.0))


#: A zig-zag at rest (rad) from which :attr:`JointMap.lift` is taken: the parent's
#: twist reaches the directions a smaller one leaves out (the G1's 0.5° knees and 1.4°
#: elbows, an ASF's straight ones). Measured through the anchors, the OP3's knees and
#: elbows zig-zagged 20° and 25°, the H1's and Berkeley Humanoid's knees 16° and 20°;
#: through the points of their axes :func:`_on_axes` aims at, none does: a lift is
#: left for a hinge whose point could not be moved there.
_ZIGZAG = np.radians(8.0)


def _on_axes(
    target: Skeleton,
    pos: Array,
    rest: Array,
    kids: list[list[int]],
    has: NDArray[np.bool_],
    joints: Sequence[int],
) -> Array:
    """Rest positions (P, 3) with each of ``joints`` (the knees and elbows) that is a
    one-channel joint with a counterpart moved along its axis to the point nearest the
    line from its parent to its farthest next point, where the limb's bones meet as a
    knee's do. A maker places a hinge's anchor anywhere on its axis (Berkeley
    Humanoid's knee at its motor, out to the side): aimed through it, the thigh and
    shin zig-zagged 20° across the knee at rest, and the mapping's lift for that
    zig-zag swung its legs (body jerk 25 times the source's on the first 2,400 frames
    of the LAFAN walk). A move beyond half the shorter bone is not made, nor one of
    round-off's size (JVRC-1's right arm, solved by the IK pass from a pose 1e-16 m
    apart, took another of two near-equal poses at frame 4,183 and kept it: body jerk
    0.67 -> 1.64 times the source's)."""
    out = np.array(pos, dtype=np.float64)
    for c in joints:
        p = int(target.parents[c])
        if len(target.euler_orders[c]) != 1 or p < 0 or not has[c]:
            continue
        nxt = _next_points(c, kids, has, pos)
        if not nxt:
            continue
        n = max(nxt, key=lambda q: float(np.linalg.norm(pos[q] - pos[c])))
        h = quat.rotate(rest[c], _hinge_axis_in_parent(target, c))
        line = pos[n] - pos[p]
        w0 = pos[c] - pos[p]
        a, b, cc = float(h @ h), float(h @ line), float(line @ line)
        den = a * cc - b * b
        if den <= 1e-12 * a * cc:
            continue
        s = (b * float(line @ w0) - cc * float(h @ w0)) / den
        shorter = min(np.linalg.norm(pos[c] - pos[p]), np.linalg.norm(pos[n] - pos[c]))
        if 1e-6 * shorter < abs(s) <= 0.5 * shorter:  # (not round-off)
            out[c] = pos[c] + s * h
    return out


def _hinge_lifts(
    target: Skeleton, driver: NDArray[np.intp], aim: NDArray[np.intp], pos_t: Array
) -> Array:
    """:attr:`JointMap.lift` of every joint: for a one-channel joint aimed from a
    three-channel parent, the elevation from its hinge's plane of its bone at rest less
    that of its parent's bone (a straight limb's), its place on its axis
    :func:`_on_axes`'s (``pos_t``); zero elsewhere."""
    lift = np.zeros(target.num_joints)
    channels = [len(o) for o in target.euler_orders]
    for t in range(target.num_joints):
        c = int(aim[t])
        if driver[t] < 0 or channels[t] != 3 or not 0 <= c < target.num_joints:
            continue
        if channels[c] != 1 or aim[c] < 0 or driver[c] < 0:
            continue
        h = _hinge_axis_in_parent(target, c)
        parent_bone, bone = pos_t[c] - pos_t[t], pos_t[aim[c]] - pos_t[c]
        sizes = np.linalg.norm(parent_bone), np.linalg.norm(bone)
        if min(sizes) <= 0:
            continue
        zig = float(_elevation(bone / sizes[1], h) - _elevation(parent_bone / sizes[0], h))
        lift[c] = zig if abs(zig) >= _ZIGZAG else 0.0
    return lift


def _lifted(direction: Array, axis: Array, lift: float) -> Array:
    """Unit ``direction`` (F, 3) raised by ``lift`` (rad) toward ``axis`` (3,): turned
    about ``axis × direction`` (:attr:`JointMap.lift`)."""
    turn_axis = np.cross(axis, direction)
    size = np.linalg.norm(turn_axis, axis=-1, keepdims=True)
    unit = np.divide(turn_axis, size, out=np.zeros_like(turn_axis), where=size > 1e-12)
    return quat.rotate(quat.quat_from_rotvec(-lift * unit), direction)


def standing_frame(motion: Motion, roles: Mapping[str, int], up: Array) -> int | None:
    """The frame of ``motion`` to align a mapping at when its rest pose does not stand
    (its hips-to-head direction more than 25° from ``up`` (3,), LAFAN1's lying
    along +X), else None (the rest pose).

    A rest pose lying along an axis has every bone in one line: a foot along its
    shin, a hand along its forearm, so the rest alignment has only the twist
    carried down from the pelvis for them, and on a target whose foot stands
    square to its shin it came out 170° about the foot (a robot told to stand on
    the back of its foot). The frame is the most neutral stance among up to 400
    spread over the clip: the straightest legs (hip to ankle over thigh plus
    shin, the worse leg) times how upright the trunk is (hips to head along
    ``up``).
    """
    need = ("hips", "head", "left_hip", "left_knee", "left_ankle")
    if motion.num_frames == 0 or not all(r in roles for r in need):
        return None
    rest, _ = rest_pose(motion.skeleton)
    up = np.asarray(up, dtype=np.float64) / np.linalg.norm(up)
    trunk = rest[roles["head"]] - rest[roles["hips"]]
    if float(trunk @ up) >= np.cos(np.radians(25.0)) * np.linalg.norm(trunk):
        return None
    frames = np.unique(np.linspace(0, motion.num_frames - 1, 400).round().astype(np.intp))
    pos, _ = forward_kinematics(
        motion.skeleton, motion.root_position[frames], motion.rotations[frames]
    )
    trunk = pos[:, roles["head"]] - pos[:, roles["hips"]]
    upright = np.clip((trunk @ up) / np.maximum(np.linalg.norm(trunk, axis=-1), 1e-300), 0, 1)
    straight = np.ones(len(frames))
    for side in ("left", "right"):
        hip, knee, ankle = (roles.get(f"{side}_{j}") for j in ("hip", "knee", "ankle"))
        if hip is None or knee is None or ankle is None:
            continue
        length = np.linalg.norm(rest[knee] - rest[hip]) + np.linalg.norm(rest[ankle] - rest[knee])
        reach = np.linalg.norm(pos[:, ankle] - pos[:, hip], axis=-1) / max(length, 1e-300)
        straight = np.minimum(straight, reach)
    return int(frames[int(np.argmax(straight * upright))])


# -- transfer -------------------------------------------------------------------------------


def transfer(motion: Motion, joint_map: JointMap, skeleton: Skeleton | None = None) -> Motion:
    """The source motion on the target hierarchy (module docstring, step 3).

    Parameters
    ----------
    motion : Motion
        On ``joint_map.source``.
    joint_map : JointMap
    skeleton : Skeleton, optional
        The skeleton of the result: ``joint_map.target`` (default) or one with
        its hierarchy and rest directions, such as :func:`rerig`'s.

    Returns
    -------
    Motion
        The midpoint of the target's hip joints on the source's, turned by ``A``
        and scaled by ``joint_map.scale`` (by ``unit_scale`` on a :func:`rerig`
        skeleton, whose proportions are the source's).
    """
    jm = joint_map
    sk = skeleton if skeleton is not None else jm.target
    if sk.names != jm.target.names:
        raise ValueError("the skeleton must have the target's hierarchy")
    p_s, w_s = forward_kinematics(jm.source, motion.root_position, motion.rotations)
    lam = jm.counterpart_share[:, None]
    cp = (1.0 - lam) * p_s[:, np.maximum(jm.counterpart, 0)] + lam * p_s[
        :, np.maximum(jm.counterpart_next, 0)
    ]  # (F, P_target, 3): where each target point's counterpart is
    n_frames, n_t = motion.num_frames, sk.num_joints
    wanted = np.tile(quat.identity(), (n_frames, n_t, 1))  # W_t, the target's world axes
    direction = np.full((n_frames, n_t, 3), np.nan)  # where each aimed bone points
    for t in np.flatnonzero(jm.driver >= 0):
        wanted[:, t] = quat.multiply(jm.axes, quat.multiply(w_s[:, jm.driver[t]], jm.offset[t]))
        if jm.aim[t] >= 0:  # the bone along the source's, whatever folds into it
            here = quat.rotate(wanted[:, t], jm.aim_local[t])
            there = quat.rotate(jm.axes, cp[:, jm.aim[t]] - cp[:, t])
            wanted[:, t] = quat.multiply(quat.quat_between(here, there), wanted[:, t])
            direction[:, t] = there / np.linalg.norm(there, axis=-1, keepdims=True)
    local = _on_channels(sk, jm, wanted, direction)
    # the root puts the target's hip joints where the source's are (their midpoint):
    # the legs then stand where the source's stand, however each skeleton places its
    # root joint within the pelvis
    scale = jm.unit_scale if skeleton is not None else jm.scale
    legs = [f"{s}_hip" for s in ("left", "right")]
    centre_s = p_s[:, [jm.source_roles[r] for r in legs]].mean(axis=1)
    p_here = forward_kinematics(sk, np.zeros(3), local)[0]
    centre_here = p_here[:, [jm.target_roles[r] for r in legs]].mean(axis=1)
    goal = quat.rotate(jm.axes, centre_s * scale)
    return Motion(sk, goal - centre_here, quat.canonical(local), motion.fps)


def _taker(skeleton: Skeleton, joint_map: JointMap, t: int) -> int:
    """The first undriven joint with two or more channels between a joint with fewer
    than three and its aim point (-1: none): it takes up the aim the joint's own
    channels miss (an ASF wrist that only twists, the hand below it bends)."""
    jm = joint_map
    p = int(jm.aim[t])
    if p < 0 or len(skeleton.euler_orders[t]) == 3:
        return -1
    parents = np.concatenate([skeleton.parents, skeleton.site_parents])
    path = []
    while int(parents[p]) not in (t, -1):
        p = int(parents[p])
        path.append(p)
    for k in reversed(path):
        if jm.driver[k] < 0 and len(skeleton.euler_orders[k]) >= 2:
            return k
    return -1


def _on_channels(skeleton: Skeleton, joint_map: JointMap, wanted: Array, direction: Array) -> Array:
    """Local rotations (F, J, 4) that give each driven joint its wanted world rotation,
    on the joint's channels (an ASF hinge, a two-axis foot).

    Joints with three channels take it whole. Others keep their bone's direction
    (:func:`retarget.core.dofs.aim_on_channels`) and lose the rest; a three-channel
    parent of a hinge turns about its own bone so that the hinge can reach its
    direction (:func:`retarget.core.dofs.twist_for_hinge`: the twist moves up the
    chain); an undriven joint below a joint that cannot aim takes up the aim
    (:func:`_taker`). Undriven joints keep their rest rotation.
    """
    sk, jm = skeleton, joint_map
    n_frames, n_t = wanted.shape[:2]
    channels = [len(o) for o in sk.euler_orders]
    rest_pos, rest_rot = rest_pose(sk)
    takers = {k: t for t in range(n_t) if (k := _taker(sk, jm, t)) >= 0}
    world = np.empty((n_frames, n_t, 4))
    local = np.empty((n_frames, n_t, 4))
    pos = np.zeros((n_frames, n_t, 3))
    for t in range(n_t):
        par = int(sk.parents[t])
        above = world[:, par] if par >= 0 else quat.identity((n_frames,))
        back = quat.conjugate(above)
        if par >= 0:
            pos[:, t] = pos[:, par] + quat.rotate(above, sk.offsets[t])
        child = int(jm.aim[t])
        if jm.driver[t] >= 0:
            q = quat.multiply(back, wanted[:, t])
            if channels[t] < 3:
                d = quat.rotate(back, direction[:, t]) if child >= 0 else None
                q = dofs.aim_on_channels(sk, t, q, jm.aim_local[t] if child >= 0 else None, d)
            elif 0 <= child < n_t and channels[child] == 1 and jm.aim[child] >= 0:
                d = quat.rotate(quat.conjugate(quat.multiply(above, q)), direction[:, child])
                if jm.lift is not None and jm.lift[child] != 0.0:
                    d = _lifted(d, _hinge_axis_in_parent(sk, child), float(jm.lift[child]))
                phi = dofs.twist_for_hinge(sk, child, jm.aim_local[t], jm.aim_local[child], d)
                q = quat.multiply(q, quat.quat_from_rotvec(phi[:, None] * jm.aim_local[t]))
        elif t in takers:
            src = takers[t]
            end = int(jm.aim[src])
            reach = np.linalg.norm(rest_pos[end] - rest_pos[src])
            need = pos[:, src] + reach * direction[:, src] - pos[:, t]
            need /= np.maximum(np.linalg.norm(need, axis=-1, keepdims=True), 1e-300)
            bone = quat.rotate(quat.conjugate(rest_rot[t]), rest_pos[end] - rest_pos[t])
            q = dofs.aim_on_channels(
                sk,
                t,
                quat.identity((n_frames,)),
                bone / np.linalg.norm(bone),
                quat.rotate(back, need),
            )
        else:
            q = quat.identity((n_frames,))
        local[:, t] = q
        world[:, t] = quat.multiply(above, q)
    return local


def rerig(joint_map: JointMap) -> Skeleton:
    """The target's hierarchy with the source's proportions, in the target's unit.

    Every target point with a counterpart sits, at rest, where the source's
    counterpart sits relative to the counterpart of its nearest such ancestor
    ``a``, turned into the target by ``A ⊗ B_a⁻¹``: its own offset takes the
    change (on an aim the direction is the target's already and only the length
    changes; a hip joint placed off the aim moves to the source's pelvis
    width). The source re-expressed on it (:func:`transfer`) then has the
    source's world positions at those points. Other bones scale by the ratio
    of the source's to the target's rest distance between the nearest
    counterpart-bearing points around them, or by the legs' ratio.
    """
    jm = joint_map
    tg = jm.target
    n_j = tg.num_joints
    pos_t, g_t = rest_pose(tg)
    parents = np.concatenate([tg.parents, tg.site_parents])
    kids = _children(tg)
    has = jm.counterpart >= 0
    cp = jm.counterpart_rest
    factors = np.full(len(parents), jm.scale)
    above = np.full(len(parents), -1)  # nearest counterpart-bearing ancestor
    for p in range(1, len(parents)):
        a = int(parents[p])
        while a >= 0 and not has[a]:
            a = int(parents[a])
        above[p] = a
        below = [p] if has[p] else _next_points(p, kids, has)
        if a < 0 or not below:
            continue
        b = below[0]
        lt = np.linalg.norm(pos_t[b] - pos_t[a])
        ls = np.linalg.norm(cp[b] - cp[a]) * jm.unit_scale
        if lt > 1e-9 and ls > 1e-9:
            factors[p] = ls / lt
    offsets = np.concatenate([tg.offsets, tg.site_offsets]) * factors[:, None]
    scaled = dataclasses.replace(tg, offsets=offsets[:n_j], site_offsets=offsets[n_j:])
    pos, _ = rest_pose(scaled)
    for p in (np.flatnonzero(has[1:]) + 1).tolist():
        a, par = int(above[p]), int(parents[p])
        if a < 0:
            continue
        turn = quat.multiply(jm.axes, quat.conjugate(jm.align[a]))
        want = quat.rotate(turn, cp[p] - cp[a]) * jm.unit_scale  # a → p, target's axes
        offsets[p] = quat.rotate(quat.conjugate(g_t[par]), want - (pos[par] - pos[a]))
    return dataclasses.replace(tg, offsets=offsets[:n_j], site_offsets=offsets[n_j:])


# -- measure --------------------------------------------------------------------------------


def bone_direction_error(
    source: Motion,
    result: Motion,
    joint_map: JointMap,
    *,
    exclude: tuple[str, ...] = (),
) -> tuple[Array, tuple[str, ...]]:
    """Angle (degrees) between corresponding world bone directions, per frame and bone.

    Bones are segments between role points both skeletons have (the trunk
    hips → neck, neck → head, pelvis, shoulders, and per side clavicle, upper
    arm, forearm, hand, thigh, shin, foot, toes); the source's directions are
    turned into the target's axes by ``A``.

    Returns
    -------
    angles : ndarray, shape (F, B)
    names : tuple of str, length B
    """
    bones = [b for b in joint_map.bones if b[0] not in exclude]
    ps, _ = forward_kinematics(source.skeleton, source.root_position, source.rotations)
    pr, _ = forward_kinematics(result.skeleton, result.root_position, result.rotations)
    idx = np.array([b[1:] for b in bones], dtype=np.intp).reshape(-1, 4)
    ds = quat.rotate(joint_map.axes, ps[:, idx[:, 1]] - ps[:, idx[:, 0]])
    dr = pr[:, idx[:, 3]] - pr[:, idx[:, 2]]
    cos = (ds * dr).sum(-1) / np.maximum(
        np.linalg.norm(ds, axis=-1) * np.linalg.norm(dr, axis=-1), 1e-300
    )
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))), tuple(b[0] for b in bones)


def same_hierarchy(a: Skeleton, b: Skeleton) -> bool:
    """Whether two skeletons have the same joints by name, in the same order."""
    return a.names == b.names and np.array_equal(a.parents, b.parents)


@dataclass(frozen=True, eq=False)
class ForMethod:
    """A source made ready for a method onto a target (:func:`map_for_method`).

    Attributes
    ----------
    motion : Motion
        The source, Y up (its skeleton records it): on ``target``'s hierarchy with
        the source's proportions when ``mapped``, else the source itself turned.
    target : Skeleton
        The skeleton to give the method, Y up: the target with the joints inside
        its limb bones folded away (:func:`_inner_joints`), so hip, knee and ankle
        (shoulder, elbow, wrist) are each the parent of the next, as the limb
        IK wants; the target itself when it has none.
    joint_map : JointMap or None
        Source (its axes) → the whole target, Y up (for :func:`bone_direction_error`
        against :meth:`unfold` of a method's result); ``None`` when the skeletons
        share one hierarchy whose roles are not all found (nothing to compare).
    axes : ndarray, shape (4,)
        Y up → the target's world axes.
    whole : Skeleton
        The target as given.
    mapped : bool
        Whether the source went through the role mapping (another hierarchy, or
        limb segments to fold): ``False`` when only its world was turned.
    """

    motion: Motion
    target: Skeleton
    joint_map: JointMap | None
    axes: Array
    whole: Skeleton
    mapped: bool = True

    @cached_property
    def _whole_upright(self) -> Skeleton:
        return self.whole if self.whole.up == "y" else self.whole.replace(up="y")

    def unfold(self, result: Motion) -> Motion:
        """A method's result on :attr:`target` → on the whole target (folded joints at
        rest), Y up (its skeleton records it)."""
        whole = self._whole_upright
        if result.skeleton.names == whole.names:
            return result.replace(skeleton=whole)
        # joints the whole target has (not a wrist or ankle it has as an end site)
        ours = [k for k, n in enumerate(result.skeleton.names) if n in set(whole.names)]
        where = whole.indices([result.skeleton.names[k] for k in ours])
        rotations = np.tile(quat.identity(), (result.num_frames, whole.num_joints, 1))
        rotations[:, where] = result.rotations[:, ours]
        # joints above the method's root (:func:`retarget.humanoid.travel.from_hips`) at
        # rest, the root placed so that the method's root is where the method put it
        root = root_above(whole, result.skeleton.names[0], result.root_position)
        return Motion(whole, root, rotations, result.fps)

    def finish(self, result: Motion) -> Motion:
        """A method's result on :attr:`whole` (its skeleton) in the target's axes."""
        return world.turn(self.unfold(result), self.axes).replace(skeleton=self.whole)


def _inner_joints(skeleton: Skeleton, roles: Mapping[str, int]) -> list[int]:
    """Joints strictly between hip and knee, knee and ankle, shoulder and elbow, elbow
    and wrist (segments inside a limb bone: :data:`retarget.humanoid.names.SEGMENT`)."""
    out = []
    for side in ("left", "right"):
        for a, b in (("hip", "knee"), ("knee", "ankle"), ("shoulder", "elbow"), ("elbow", "wrist")):
            top, j = roles.get(f"{side}_{a}"), roles.get(f"{side}_{b}")
            if top is None or j is None:
                continue
            j = int(skeleton.point_parents[j])  # (an ankle or wrist may be an end site)
            while j not in (top, -1):
                out.append(j)
                j = int(skeleton.parents[j])
    return sorted(out)


def _without(skeleton: Skeleton, joints: list[int]) -> Skeleton:
    """The skeleton with ``joints`` folded away: their offsets go into their children's
    (exact while their local rotations stay at rest). A plain :class:`Skeleton`."""
    gone = set(joints)
    keep = [j for j in range(skeleton.num_joints) if j not in gone]
    new = {j: k for k, j in enumerate(keep)}

    def lift(parent: int, offset: Array) -> tuple[int, Array]:
        while parent in gone:
            offset = skeleton.offsets[parent] + offset
            parent = int(skeleton.parents[parent])
        return (new[parent] if parent >= 0 else -1), offset

    joints_up = [lift(int(skeleton.parents[j]), skeleton.offsets[j]) for j in keep]
    sites_up = [
        lift(int(p), o) for p, o in zip(skeleton.site_parents, skeleton.site_offsets, strict=True)
    ]
    return Skeleton(
        tuple(skeleton.names[j] for j in keep),
        np.array([p for p, _ in joints_up], dtype=np.intp),
        np.array([o for _, o in joints_up]).reshape(-1, 3),
        tuple(skeleton.channels[j] for j in keep),
        site_names=skeleton.site_names,
        site_parents=np.array([p for p, _ in sites_up], dtype=np.intp),
        site_offsets=np.array([o for _, o in sites_up]).reshape(-1, 3),
        unit=skeleton.unit,
        axes=skeleton.axes[keep],
        limits=skeleton.limits[keep],
        up=skeleton.up,
    )


#: Length of a stub hand (foot) given to a target limb that ends in an end site
#: where the source has no hand (foot) either, as a share of its forearm (shin).
STUB = 0.1


def _site_ends(skeleton: Skeleton, roles: Mapping[str, int]) -> list[str]:
    """Wrist and ankle roles that are end sites (a rig without hand or foot joints)."""
    return [
        f"{side}_{r}"
        for side in ("left", "right")
        for r in ("wrist", "ankle")
        if roles.get(f"{side}_{r}", -1) >= skeleton.num_joints
    ]


def _with_limb_ends(joint_map: JointMap) -> tuple[Skeleton, dict[str, str]]:
    """The target with each end-site wrist (ankle) made a joint, and an end site beyond
    it: the methods' limb IK wants shoulder, elbow, wrist joints each the parent of
    the next, and their feet a foot. The new site is the source's hand tip (toe tip)
    as seen from its wrist (ankle), turned into the target by ``A ⊗ B⁻¹`` of the
    elbow (knee) as :func:`rerig` turns every counterpart; where the source has no
    hand (foot) either, a stub of :data:`STUB` × the forearm (shin) continuing it.
    The new joint has nothing of the target to drive: :meth:`ForMethod.unfold` drops
    it. Returns the skeleton (``joint_map.target`` itself when no limb ends in a
    site) and role → point name overrides naming its roles."""
    jm = joint_map
    tg = jm.target
    ends = _site_ends(tg, jm.target_roles)
    names = tg.point_names
    overrides = {r: names[p] for r, p in jm.target_roles.items()}
    if not ends:
        return tg, overrides
    pos_t, g_t = rest_pose(tg)
    pos_s, _ = rest_pose(jm.source)
    n_j = tg.num_joints
    joints = list(tg.names)
    parents = list(tg.parents)
    offsets = list(tg.offsets)
    channels = list(tg.channels)
    site_names = list(tg.site_names)
    site_parents = list(tg.site_parents)
    site_offsets = list(tg.site_offsets)
    promoted = {}
    for role in ends:
        site = jm.target_roles[role] - n_j
        side, kind = role.split("_")
        tip_role = f"{side}_{'hand_tip' if kind == 'wrist' else 'toe_tip'}"
        elbow = int(tg.site_parents[site])
        s_end, s_tip = jm.source_roles.get(role), jm.source_roles.get(tip_role)
        if s_end is not None and s_tip is not None and s_tip != s_end:
            turn = quat.multiply(jm.axes, quat.conjugate(jm.align[elbow]))
            want = quat.rotate(turn, pos_s[s_tip] - pos_s[s_end]) * jm.unit_scale
        else:
            want = STUB * (pos_t[n_j + site] - pos_t[elbow])
        promoted[site] = len(joints)
        joints.append(tg.site_names[site])
        parents.append(elbow)
        offsets.append(tg.site_offsets[site])
        channels.append(("Zrotation", "Yrotation", "Xrotation"))
        tip = f"{tg.site_names[site]}_tip"
        while tip in names or tip in site_names:
            tip += "_"
        site_names.append(tip)
        site_parents.append(-1 - site)  # renumbered below
        site_offsets.append(quat.rotate(quat.conjugate(g_t[elbow]), want))
        overrides[tip_role] = tip
    keep = [k for k in range(len(site_names)) if k not in promoted]
    ext = Skeleton(
        tuple(joints),
        np.array(parents, dtype=np.intp),
        np.array(offsets),
        tuple(channels),
        site_names=tuple(site_names[k] for k in keep),
        site_parents=np.array(
            [promoted[-1 - q] if q < 0 else q for q in (int(site_parents[k]) for k in keep)],
            dtype=np.intp,
        ),
        site_offsets=np.array([site_offsets[k] for k in keep]).reshape(-1, 3),
        unit=tg.unit,
        axes=np.concatenate([tg.axes, np.tile(quat.identity(), (len(promoted), 1))]),
        limits=np.concatenate([tg.limits, np.tile([-np.inf, np.inf], (len(promoted), 3, 1))]),
        up=tg.up,
    )
    return ext, overrides


#: Two rest poses of one hierarchy are the same when every bone points within this
#: angle (degrees) of the other's.
REST_DEGREES = 1.0


def same_rest(a: Skeleton, b: Skeleton, degrees: float = REST_DEGREES) -> bool:
    """Whether two skeletons of one hierarchy stand alike at rest: every bone (joint
    offset) of both lengths points within ``degrees`` of the other's. A T-pose and an
    A-pose, or a rig standing and the same rig lying, differ: their local rotations
    mean other poses."""
    u, v = a.offsets[1:], b.offsets[1:]
    nu, nv = np.linalg.norm(u, axis=1), np.linalg.norm(v, axis=1)
    both = (nu > 1e-9 * max(float(nu.max(initial=0.0)), 1e-300)) & (nv > 0)
    cos = (u[both] * v[both]).sum(axis=1) / (nu[both] * nv[both])
    return bool((cos >= np.cos(np.radians(degrees))).all())


def needs_mapping(source: Motion, target: Skeleton) -> bool:
    """Whether a method needs the source mapped by roles (:func:`map_for_method`) to
    run onto ``target``: another hierarchy, the same one standing otherwise at rest
    (:func:`same_rest`), or a target with segments inside its limb bones. Other world
    axes alone need no mapping: :func:`map_for_method` then only turns the source
    upright. Joints above the target's hips (a static reference, a floor-level root)
    need it too: a method moves the body by its root
    (:func:`retarget.humanoid.travel.from_hips`)."""
    if not same_hierarchy(source.skeleton, target) or not same_rest(source.skeleton, target):
        return True
    try:
        roles = find_roles(target)
    except RetargetError:
        return False
    if not {"hips", "head"} <= set(roles):
        return False
    return bool(roles["hips"] > 0 or _inner_joints(target, roles) or _site_ends(target, roles))


def map_for_method(
    source: Motion,
    target: Skeleton,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
    *,
    level_feet: bool = False,
) -> ForMethod:
    """The source made ready for a method onto a target of any hierarchy and axes.

    The methods of :mod:`retarget.methods` work on one hierarchy, Y up (their
    floor and contacts, DESIGN.md), with limbs whose three joints are each the
    parent of the next. When :func:`needs_mapping`, the source is mapped onto
    :func:`rerig` of the target with Y up, whatever either file's up axis, and
    the joints inside the target's limb bones are folded away (they stay at
    rest in the mapping); otherwise (the same hierarchy) the source is only
    turned upright, its local rotations untouched. A method then retargets
    :attr:`ForMethod.motion` onto :attr:`ForMethod.target`, and
    :meth:`ForMethod.finish` carries its result onto the whole target in the
    target's axes (its recorded up axis, :func:`retarget.humanoid.world.up_axis`: found from
    its own frames when its rest pose does not stand). ``level_feet``: the ankles
    aligned by their soles (:func:`map_skeletons`), for a target whose feet are
    plates of their own proportions (a robot's).
    """
    overrides = overrides or {}
    t_up = world.up_name(world.up_axis(target))
    axes = world.axes_between("y", t_up)
    y_up = np.array([0.0, 1.0, 0.0])
    upright_target = target if target.up == "y" else target.replace(up="y")
    if not needs_mapping(source, target):
        jm: JointMap | None
        try:
            jm = map_skeletons(
                source.skeleton,
                upright_target,
                overrides=overrides,
                source_up=world.up_axis(source.skeleton, source),
                target_up=y_up,
            )
        except (RetargetError, KeyError, IndexError, ValueError):
            jm = None  # nothing to compare bones by; the method says what it lacks
        return ForMethod(world.upright(source), upright_target, jm, axes, target, mapped=False)
    s_roles = _roles(source.skeleton, overrides.get("source", {}), "source")
    known = {"hips", "head"} <= set(s_roles)  # else map_skeletons names what is missing
    s_up = world.up_axis(source.skeleton, source, roles=s_roles) if known else None
    frame = standing_frame(source, s_roles, s_up) if s_up is not None else None
    pose = None if frame is None else source.rotations[frame]
    jm = map_skeletons(
        source.skeleton,
        upright_target,
        overrides=overrides,
        source_up=s_up,
        target_up=y_up,
        source_pose=pose,
        level_feet=level_feet,
    )
    ext, named = _with_limb_ends(jm)  # end-site wrists and ankles made joints
    jm_ext = jm
    if ext is not upright_target:
        jm_ext = map_skeletons(
            source.skeleton,
            ext,
            overrides={"source": dict(overrides.get("source", {})), "target": named},
            source_up=s_up,
            target_up=y_up,
            source_pose=pose,
            level_feet=level_feet,
        )
    mapped = transfer(source, jm_ext, rerig(jm_ext))  # (rerig keeps the Y-up record)
    rest = np.abs(mapped.rotations[..., 0]).min(axis=0) >= 1.0 - 1e-12  # (J,) at rest
    inner = [j for j in _inner_joints(ext, jm_ext.target_roles) if rest[j]]
    hips_name = ext.point_names[jm_ext.target_roles["hips"]]
    if inner:
        keep = [j for j in range(ext.num_joints) if j not in set(inner)]
        mapped = Motion(
            _without(mapped.skeleton, inner),
            mapped.root_position,
            mapped.rotations[:, keep],
            mapped.fps,
        )
        ext = _without(ext, inner)
    hips = ext.names.index(hips_name)
    if hips > 0:  # joints above the hips: the method's body starts at them
        mapped, ext = from_hips(mapped, hips), below_hips(ext, hips)[0]
    return ForMethod(mapped, ext, jm, axes, target)
