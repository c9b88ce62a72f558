"""Humanoid roles: which joint of a skeleton is the hips, a knee, an ankle, …

Names say what they can, the hierarchy and the bone lengths the rest, so the
same code reads every common naming convention:

- Ubisoft LAFAN1, MotionBuilder and Mixamo with or without a prefix
  (``mixamorig:LeftUpLeg, LeftLeg, LeftFoot, LeftToeBase``, ``HeadTop_End``);
- Mocapbank/Biovision BVH (``Chest, LeftCollar, LeftHip, LeftKnee, LeftAnkle``);
- CMU/VICON ASF (``lhipjoint, lfemur, ltibia, lfoot, lclavicle, lhumerus, lradius``);
- Blender: rigify deform bones (``DEF-spine.001, DEF-thigh.L, DEF-shin.L``; but
  see the end of 4.) and metarigs (``spine.004, thigh.L`` or ``thigh_L, upper_arm.L``);
- SMPL and SMPL-X (``Pelvis, L_Hip, L_Knee, L_Collar``; ``pelvis, left_hip``);
- the Unreal Engine mannequins (``root, pelvis, thigh_l, calf_l, ball_l, clavicle_l,
  lowerarm_l``, twist bones, an ``ik_foot_root``/``ik_hand_root`` branch);
- the CMU "Daz-friendly" BVH (``hip, abdomen, lButtock, lThigh, lShin, lShldr``),
  Character Creator (``CC_Base_Hip, CC_Base_L_Calf``) and 3ds Max Biped
  (``Bip01 L Calf``);
- Quaternius' robots (``UpperLegL, LowerLegL, FootL, UpperArmL, LowerArmL``);
- neutral names (``joint0, joint1, …``): sides from the rest pose.

1. **Sides** by pairing: a joint is left (right) when swapping its side token
   (``Left``/``Right``, ``L_``/``R_``, ``_l``/``_r``, ``.L``/``.R``, ``FootL``, a leading
   ``l``/``r`` as in ``lfemur``: :data:`naming.SIDE_SWAPS`) gives another joint's
   name; the token swapped says which side. When no name has a side, the limbs
   are the two outermost *mirror pairs* (sibling branches of one shape: legs,
   then arms) and the rest pose tells left from right: in right-handed axes
   the left is ``up × forward``, up from the hips to the chest, forward the
   way the feet point.
2. **Limbs**: a sided branch (a sided joint whose parent is not sided) whose
   main chain has three points or more (IK targets and corrective leaves do
   not) is a leg or an arm as its joint names say; failing names, the leg is
   the one leaving the root closer than the other branches of its side.
3. **Trunk**: the hips is the joint where legs and arms branch (their common
   ancestor: not a ``root`` above it; Character Creator's ``CC_Base_Hip``
   rather than its ``CC_Base_Pelvis``, which carries the legs only); the
   chest, where the arms branch. The head is the shallowest unsided
   ``head``-named joint below the chest in the hierarchy (not a look-at helper
   elsewhere) or, failing names, the end of the trunk: from the chest into its
   only unsided child joint until a joint has none or several. The neck is the
   first ``neck``-named joint between hips and head or, failing names, the
   joint after the chest (the chest itself when the head hangs from it, as
   from a 3ds Max Biped neck holding the clavicles, unless the chest stands in
   the trunk's lower half: a robot's waist is its spine). The spine: the joints
   between hips and head other than the neck.
4. **Joints in a limb**, along its main chain (so twist, corrective and finger
   joints beside it are never taken): the knee (elbow) is the first joint whose
   name says so (:data:`naming.KNEE`, :data:`naming.ELBOW`); failing names, the joint between
   the two longest consecutive bones. The hip (shoulder) is its parent, the
   clavicle the one above, the ankle (wrist) its child, then the toe; the
   chain's end point is the toe tip (hand tip). A limb that ends in an end
   site right after the knee (elbow), a rig without foot (hand) joints, has that
   site as its ankle (wrist): a point with no rotation of its own, and no toe
   or tip.

   A joint *inside* a limb bone (rigify's B-bone segment ``DEF-thigh.L.001``,
   Daz Genesis's ``lThighTwist``: a :data:`naming.SEGMENT` name, lying on the bone at
   rest) is passed over: the hip is the joint above it. The methods' limb IK
   wants hip, knee and ankle each the parent of the next: the mapping folds
   such segments away for them (:func:`retarget.humanoid.mapping.map_for_method`).

The character's **height** (DESIGN.md, measures) is the bone-path length from
the head joint down to an ankle, the mean over both ankles: pose independent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.errors import RetargetError
from ..core.kinematics import rest_pose
from ..core.skeleton import Skeleton
from . import names as naming
from .anatomy import read_anatomy
from .tree import common_ancestor, main_chain, mirror_pairs

__all__ = [
    "LEG_ROLES",
    "Roles",
    "find_roles",
    "foot_length",
    "hand_joints",
    "height",
    "leg_length",
    "require_humanoid",
    "standing_heights",
]

LEG_ROLES = ("hip", "knee", "ankle", "toe", "toe_tip")
ARM_ROLES = ("clavicle", "shoulder", "elbow", "wrist", "hand_tip")


@dataclass(frozen=True)
class Roles(Mapping[str, int]):
    """Role name → point index (a joint, or a site for the ``*_tip`` roles).

    Role names: ``hips``, ``spine`` (not a key: see :attr:`spine`), ``neck``,
    ``head``, and per side ``left_``/``right_`` + one of :data:`LEG_ROLES` and
    ``clavicle, shoulder, elbow, wrist, hand_tip``. Roles a skeleton lacks
    (no toe joint, no clavicle) are absent.
    """

    points: Mapping[str, int]
    spine: tuple[int, ...]  # joints from the hips up to the head, exclusive of both

    def __getitem__(self, role: str) -> int:
        try:
            return self.points[role]
        except KeyError:
            raise KeyError(f"role {role!r} not found; found: {', '.join(self.points)}") from None

    def __iter__(self):
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    def limb(self, side: str, kind: str) -> tuple[int, ...]:
        """Point indices of a limb's roles, top to tip, e.g. ``limb("left", "leg")``."""
        names = LEG_ROLES if kind == "leg" else ARM_ROLES
        return tuple(self.points[f"{side}_{n}"] for n in names if f"{side}_{n}" in self.points)

    def feet(self) -> dict[str, tuple[int, ...]]:
        """Per side, the foot points used for contacts: ankle, toe (if any), toe tip."""
        out = {}
        for side in ("left", "right"):
            pts = [self.points.get(f"{side}_{r}") for r in ("ankle", "toe", "toe_tip")]
            out[side] = tuple(dict.fromkeys(p for p in pts if p is not None))
        return out


def _sides_from_rest_pose(skeleton: Skeleton) -> dict[int, str]:
    """Joint → side for a skeleton whose names have no side: the two outermost mirror
    pairs are the legs and the arms, and the left is ``up × forward`` at rest (right-handed
    axes; up from the hips to the chest, forward from the hips to the leg chains' ends)."""
    pairs = mirror_pairs(skeleton)
    if len(pairs) < 2:
        return {}
    legs, arms = pairs[:2]
    pos = rest_pose(skeleton)[0]
    up = pos[common_ancestor(skeleton, arms)] - pos[common_ancestor(skeleton, legs + arms)]
    forward = np.mean([pos[main_chain(skeleton, top)[-1]] - pos[top] for top in legs], axis=0)
    left = np.cross(up, forward)
    sides: dict[int, str] = {}
    for a, b in (legs, arms):
        across = np.mean(pos[main_chain(skeleton, a)], 0) - np.mean(pos[main_chain(skeleton, b)], 0)
        # the pair must lie clearly along the left (within 60°), not along up or forward
        if abs(across @ left) <= 0.5 * np.linalg.norm(across) * np.linalg.norm(left):
            raise RetargetError(
                "no joint name says left or right and the rest pose does not show which "
                f"is which (joints: {', '.join(skeleton.names)})"
            )
        sides[a], sides[b] = ("left", "right") if across @ left > 0 else ("right", "left")
    for j in range(1, skeleton.num_joints):
        if j not in sides and skeleton.parents[j] in sides:
            sides[j] = sides[skeleton.parents[j]]
    return sides


def _limb_tops(skeleton: Skeleton, sides: Mapping[int, str]) -> dict[tuple[str, str], int]:
    """(side, ``"leg"``/``"arm"``) → the top joint of that limb's branch."""
    parents = skeleton.parents
    depth = skeleton.depth

    def kind_of(j: int) -> str:
        sub = [skeleton.names[p] for p in main_chain(skeleton, j) if p < skeleton.num_joints]
        leg = sum(bool(naming.LEG_WORDS.search(n)) for n in sub)
        arm = sum(bool(naming.ARM_WORDS.search(n)) for n in sub)
        return "leg" if leg > arm else "arm" if arm > leg else ""

    tops: dict[tuple[str, str], int] = {}
    problems = []
    for side in ("left", "right"):
        branches = sorted(
            (
                j
                for j, s in sides.items()
                if s == side and parents[j] not in sides and len(main_chain(skeleton, j)) >= 3
            ),
            key=lambda j: (depth[j], j),
        )
        if len(branches) < 2:
            problems.append(f"{side} arm and leg (found {len(branches)} {side} branch(es))")
            continue
        kinds = {j: kind_of(j) for j in branches}
        legs = [j for j in branches if kinds[j] == "leg"] or branches[:1]
        arms = [j for j in branches if kinds[j] == "arm" and j not in legs] or [
            j for j in branches if j not in legs
        ][:1]
        tops[side, "leg"], tops[side, "arm"] = legs[0], arms[0]
    if problems:
        raise RetargetError(
            "cannot find the humanoid limbs of this skeleton: missing "
            + "; ".join(problems)
            + f" (joints: {', '.join(skeleton.names)})"
        )
    return tops


def _limb_roles(skeleton: Skeleton, chain: list[int], kind: str) -> dict[str, int]:
    nj = skeleton.num_joints
    pattern = naming.KNEE if kind == "leg" else naming.ELBOW
    mid = next(
        (k for k, p in enumerate(chain) if p < nj and pattern.search(skeleton.names[p])), None
    )
    if mid is None or mid == 0 or mid + 1 >= len(chain):
        lengths = skeleton.bone_lengths()[chain]
        # knee/elbow between the two longest consecutive bones
        # (bones k and k+1 end at chain[k] and chain[k+1])
        pair = [lengths[k] + lengths[k + 1] for k in range(1, len(chain) - 1)]
        if not pair:
            raise RetargetError(f"limb starting at {skeleton.names[chain[0]]!r} is too short")
        mid = 1 + int(np.argmax(pair))
    upper, middle, lower, tip = (
        ("hip", "knee", "ankle", "toe_tip")
        if kind == "leg"
        else ("shoulder", "elbow", "wrist", "hand_tip")
    )
    pos = rest_pose(skeleton)[0]
    top = mid - 1  # up over joints inside the upper bone (a twist, a B-bone segment)
    while top >= 1 and naming.inside_segment(skeleton, pos, chain[top - 1], chain[top], chain[mid]):
        top -= 1
    while top >= 1 and naming.one_joint(skeleton, chain[top - 1], chain[top]):
        top -= 1  # up a robot's hinges that make one hip (shoulder): pitch, roll, yaw
    low = mid + 1  # down over joints inside the lower bone
    while (
        low + 1 < len(chain)
        and chain[low + 1] < nj
        and naming.inside_segment(skeleton, pos, chain[mid], chain[low], chain[low + 1])
    ):
        low += 1
    end = low  # the last hinge of a robot's ankle (wrist)
    while end + 1 < len(chain) and naming.one_joint(skeleton, chain[end], chain[end + 1]):
        end += 1
    out = {upper: chain[top], middle: chain[mid]}
    if low < len(chain):  # a joint, or the end site of a limb without hand or foot joints
        out[lower] = chain[low]
    if kind == "leg" and chain[low] < nj and end + 1 < len(chain) and chain[end + 1] < nj:
        out["toe"] = chain[end + 1]
    if chain[low] < nj:  # (a leaf wrist joint is its own hand tip, as before)
        out[tip] = chain[-1]
    if kind == "arm" and top >= 1:
        out["clavicle"] = chain[top - 1]
    return out


def _head(skeleton: Skeleton, chest: int, sides: Mapping[int, str]) -> int:
    """The shallowest unsided ``head``-named joint below the chest; failing that, the
    highest ``head``-named end site below it at rest (a robot's head is a fixed body);
    failing names, the end of the trunk: from the chest into the only unsided child
    joint while there is one."""
    nj = skeleton.num_joints
    named = [
        j
        for j in range(nj)
        if j not in sides and naming.HEAD.search(skeleton.names[j]) and chest in skeleton.chain(j)
    ]
    if named:
        return min(named, key=lambda j: skeleton.depth[j])
    parents = skeleton.point_parents
    ends = [  # a robot's head: a fixed body, an end site
        p
        for p in range(nj, skeleton.num_points)
        if parents[p] not in sides
        and naming.HEAD.search(skeleton.point_names[p])
        and chest in skeleton.chain(int(parents[p]))
    ]
    if ends:  # the highest at rest (a head's origin may lie at the neck, a marker above)
        pos = rest_pose(skeleton)[0]
        above = [p for p in range(skeleton.num_points) if chest in skeleton.chain(p)]
        up = pos[above].mean(axis=0) - pos[0]  # the trunk's way from the root
        return max(ends, key=lambda p: float(pos[p] @ up))
    head = chest
    while len(up := [c for c in skeleton.children(head) if c < nj and c not in sides]) == 1:
        head = up[0]
    return head


def _low(skeleton: Skeleton, hips: int, chest: int, head: int) -> bool:
    """Whether the chest stands in the lower half of the trunk at rest, nearer the
    hips than the head: a robot's waist the head hangs from (iCub's torso hinges
    at its pelvis, IHMC Alexander's spine yaw) is its spine, not a neck."""
    pos = rest_pose(skeleton)[0]
    trunk = pos[head] - pos[hips]
    return bool((pos[chest] - pos[hips]) @ trunk < 0.5 * (trunk @ trunk))


def _names_agree(skeleton: Skeleton, points: Mapping[str, int]) -> bool:
    """Whether the names leave a reading of the body's shape standing: no limb joint it
    puts on one side named for the other, no leg whose joints' names say arm (nor an arm
    whose say leg), no knee (elbow) unnamed where a joint of its limb is named one. (A
    rest pose can mislead where names do not: a file whose finger offsets are a hundred
    times too long reads its fingers as legs, a thumb fifteen times too long takes the
    elbow to the hand; a mirrored file's left stands on the right.)"""
    sides = naming.name_sides(skeleton)
    nj = skeleton.num_joints
    for side in ("left", "right"):
        for kind, words, other in (
            ("leg", naming.LEG_WORDS, naming.ARM_WORDS),
            ("arm", naming.ARM_WORDS, naming.LEG_WORDS),
        ):
            roles = LEG_ROLES if kind == "leg" else ARM_ROLES
            joints = [points[f"{side}_{r}"] for r in roles if f"{side}_{r}" in points]
            joints = [j for j in joints if j < nj]
            if any(sides.get(j, side) != side for j in joints):
                return False
            said = [skeleton.names[j] for j in joints]
            if sum(bool(other.search(n)) for n in said) > sum(bool(words.search(n)) for n in said):
                return False
            bend = naming.KNEE if kind == "leg" else naming.ELBOW
            middle = points.get(f"{side}_{'knee' if kind == 'leg' else 'elbow'}")
            top = points.get(f"{side}_{roles[1] if kind == 'arm' else roles[0]}")
            if middle is None or top is None:
                continue
            chain = main_chain(skeleton, top)
            if any(bend.search(skeleton.names[j]) for j in chain if j < nj) and not bend.search(
                skeleton.names[middle]
            ):
                return False
    return True


@lru_cache(maxsize=64)
def _find_roles_cached(skeleton: Skeleton) -> Roles:
    body = read_anatomy(skeleton)  # the body's shape first, names where it says nothing
    if body is not None and _names_agree(skeleton, body.points):
        return Roles(points=dict(body.points), spine=body.spine)
    sides = naming.name_sides(skeleton) or _sides_from_rest_pose(skeleton)
    tops = _limb_tops(skeleton, sides)
    hips = common_ancestor(skeleton, list(tops.values()))
    points: dict[str, int] = {"hips": hips}
    for (side, kind), top in tops.items():
        for role, p in _limb_roles(skeleton, main_chain(skeleton, top), kind).items():
            points[f"{side}_{role}"] = p
    chest = common_ancestor(skeleton, [tops["left", "arm"], tops["right", "arm"]])
    head = points["head"] = _head(skeleton, chest, sides)
    kids = skeleton.children(head)
    tips = [s for s in kids if s >= skeleton.num_joints] or [
        c for c in kids if not skeleton.children(c) and naming.END.search(skeleton.point_names[c])
    ]
    if tips:
        points["head_top"] = tips[0]
    path = [int(j) for j in skeleton.chain(head)]
    inner = path[path.index(hips) + 1 : -1]  # between hips and head
    necks = [j for j in inner if naming.NECK.search(skeleton.names[j])]
    if necks:
        points["neck"] = necks[0]
    elif chest in inner and not (head >= skeleton.num_joints and path[-2] == chest):
        # (a head fixed on the chest, a robot's: no neck, the chest is the chest)
        above = path[path.index(chest) + 1]
        if above != head:
            points["neck"] = above
        elif not _low(skeleton, hips, chest, head):
            points["neck"] = chest  # (a Biped's neck, holding the clavicles)
    spine = tuple(j for j in inner if j != points.get("neck"))
    return Roles(points=points, spine=spine)


def find_roles(skeleton: Skeleton) -> Roles:
    """The humanoid roles of a skeleton (cached per skeleton).

    Raises
    ------
    RetargetError
        When no left and right arm and leg can be found; the message lists the joints.

    Examples
    --------
    >>> import numpy as np
    >>> names = ("Hips", "LeftUpLeg", "LeftLeg", "LeftFoot", "RightUpLeg", "RightLeg",
    ...          "RightFoot", "Spine", "Head", "LeftArm", "LeftForeArm", "LeftHand",
    ...          "RightArm", "RightForeArm", "RightHand")
    >>> parents = [-1, 0, 1, 2, 0, 4, 5, 0, 7, 7, 9, 10, 7, 12, 13]
    >>> sk = Skeleton(names, parents, np.ones((15, 3)))
    >>> roles = find_roles(sk)
    >>> [sk.names[roles[r]] for r in ("left_knee", "right_ankle", "left_elbow", "head")]
    ['LeftLeg', 'RightFoot', 'LeftForeArm', 'Head']
    """
    return _find_roles_cached(skeleton)


@overload
def height(skeleton: Skeleton, roles: Roles | None = None, translations: None = None) -> float: ...
@overload
def height(
    skeleton: Skeleton, roles: Roles | None, translations: ArrayLike
) -> NDArray[np.float64]: ...
def height(
    skeleton: Skeleton, roles: Roles | None = None, translations: ArrayLike | None = None
) -> float | NDArray[np.float64]:
    """Bone-path length from the head joint to the ankles (mean of both), in ``skeleton.unit``.

    Per frame, shape (...), for per-frame joint offsets ``translations`` of shape
    (..., J, 3) (a character whose proportions change over a clip).
    """
    roles = roles or find_roles(skeleton)
    sides = [
        skeleton.path_length(roles["head"], roles[f"{side}_ankle"], translations)
        for side in ("left", "right")
    ]
    mean = np.mean(np.asarray(sides, dtype=np.float64), axis=0)
    return float(mean) if translations is None else mean


def _mean_path(
    skeleton: Skeleton, pairs: list[tuple[int, int]], translations: NDArray[np.float64] | None
) -> float | NDArray[np.float64]:
    lengths = [skeleton.path_length(a, b, translations) for a, b in pairs]
    mean = np.mean(np.asarray(lengths, dtype=np.float64), axis=0)
    return float(mean) if translations is None else mean


def foot_length(
    skeleton: Skeleton, roles: Roles, translations: NDArray[np.float64] | None = None
) -> float | NDArray[np.float64]:
    """Mean bone path from ankle to toe tip, file unit; per frame, shape (F,), for
    per-frame joint offsets ``translations`` (F, J, 3)."""
    pairs = [(roles[f"{s}_ankle"], roles[f"{s}_toe_tip"]) for s in ("left", "right")]
    return _mean_path(skeleton, pairs, translations)


def standing_heights(
    skeleton: Skeleton, roles: Roles, points: Sequence[int]
) -> NDArray[np.float64]:
    """Each point's height (K,) over the lowest point of its foot (the ankle and every
    point below it) in the rest pose, along the rest pose's hips-to-head direction,
    file unit: how high the body's own foot holds it when the foot stands flat as at
    rest; 0 for a point on no foot. Two feet of one shape have heights in the ratio of
    their lengths; a robot's sole plate does not (JVRC-1's ankle 10.8 cm over a
    17.9 cm foot, a performer's 7.9 cm over 18 cm)."""
    pos = rest_pose(skeleton)[0]
    up = pos[roles["head"]] - pos[roles["hips"]]
    up = up / max(float(np.linalg.norm(up)), 1e-300)
    out = np.zeros(len(points))
    for side in ("left", "right"):
        ankle = roles[f"{side}_ankle"]
        foot = [p for p in range(skeleton.num_points) if ankle in skeleton.chain(p)]
        low = min(float(pos[p] @ up) for p in foot)
        for k, p in enumerate(points):
            if p in foot:
                out[k] = float(pos[p] @ up) - low
    return out


def hand_joints(skeleton: Skeleton, side: str, roles: Mapping[str, int] | None = None) -> list[int]:
    """The joints of one hand (``side`` "left" or "right"; none without a wrist): the
    wrist and every joint below it, and the branches of the wrist's parent that carry a
    hand's other parts: each sibling of the wrist with joints below it (a palm bone, a
    thumb: a rig whose fingers each hang from the forearm, as Quaternius' robot's do) or
    within a tenth of the forearm of the wrist (a palm bone on its own); not a
    forearm's twist bone, which hangs on its own along the forearm. ``roles``:
    :func:`find_roles`'s by default."""
    roles = find_roles(skeleton) if roles is None else roles
    wrist = roles.get(f"{side}_wrist")
    if wrist is None or wrist >= skeleton.num_joints:
        return []
    n = skeleton.num_joints
    parents = skeleton.parents
    tops = [wrist]
    up = int(parents[wrist])
    if up >= 0:
        pos = rest_pose(skeleton)[0]
        elbow = roles.get(f"{side}_elbow", up)
        forearm = float(np.linalg.norm(pos[wrist] - pos[elbow])) or float("inf")
        for s in range(n):
            if s == wrist or int(parents[s]) != up:
                continue
            below = any(int(parents[k]) == s for k in range(n))
            if below or np.linalg.norm(pos[s] - pos[wrist]) < 0.1 * forearm:
                tops.append(s)
    return [j for j in range(n) if any(t in skeleton.chain(j) for t in tops)]


def leg_length(
    skeleton: Skeleton,
    roles: Mapping[str, int] | None = None,
    translations: NDArray[np.float64] | None = None,
    *,
    chords: bool = False,
) -> float | NDArray[np.float64]:
    """Mean thigh + shin length of both legs, file unit: the bone path from the hip joint
    to the ankle; per frame, shape (F,), for per-frame joint offsets ``translations``
    (F, J, 3). With ``chords``, the rest distances hip to knee and knee to ankle instead
    (a joint inside a limb bone, a twist, off the path: what the role mapping scales
    the root by, :func:`retarget.humanoid.mapping.map_skeletons`). ``roles``:
    :func:`find_roles`'s by default."""
    roles = find_roles(skeleton) if roles is None else roles
    if chords:
        pos = rest_pose(skeleton)[0]
        return float(
            np.mean(
                [
                    np.linalg.norm(pos[roles[f"{s}_knee"]] - pos[roles[f"{s}_hip"]])
                    + np.linalg.norm(pos[roles[f"{s}_ankle"]] - pos[roles[f"{s}_knee"]])
                    for s in ("left", "right")
                ]
            )
        )
    pairs = [(roles[f"{s}_hip"], roles[f"{s}_ankle"]) for s in ("left", "right")]
    return _mean_path(skeleton, pairs, translations)


def require_humanoid(
    path: str,
    skeleton: Skeleton,
    overrides: Mapping[str, str] | None = None,
    *,
    side: str | None = None,
    arms: bool = False,
) -> None:
    """Refuse, naming the file, a skeleton without the humanoid roles a retargeting
    command needs (hips, head, two legs, and with ``arms`` two arms: a performer has
    them; a target may be a pair of legs with a trunk: :func:`find_roles`).

    A motion file that is not a humanoid (a joint chain, a rig cut to a few joints)
    can still be read, converted and viewed; ``run``, ``physics``, ``eval``, ``map``
    and the other commands that find roles refuse it here, before any work, with the
    one line ``PATH: cannot find the humanoid limbs ...: missing ...``.

    Parameters
    ----------
    path : str
        The file the skeleton was read from, named in the message.
    skeleton : Skeleton
    overrides : mapping of str to str, optional
        The file's part of a ``--map`` file (role → joint name): when it names roles,
        the mapping checks what is still missing instead
        (:func:`retarget.humanoid.mapping.map_skeletons`).
    side : {"source", "target"}, optional
        For a command that takes ``--map``: the part of a map file that could name the
        roles, which the message then suggests.

    Raises
    ------
    RetargetError
        The file, what is missing and the joints it has.
    """
    if overrides:
        return
    try:
        roles = find_roles(skeleton)
        lost = [
            f"{s} arm"
            for s in ("left", "right")
            if arms and not all(f"{s}_{r}" in roles.points for r in ("shoulder", "elbow", "wrist"))
        ]
        if lost:
            raise RetargetError(
                f"cannot find the humanoid limbs of this skeleton: missing {' and '.join(lost)} "
                f"(roles found: {', '.join(roles.points)})"
            )
    except RetargetError as exc:
        hint = ""
        if side is not None:
            example = json.dumps({side: {"hips": "<joint>", "left_knee": "<joint>"}})
            hint = f"; roles not found: name them with --map map.json, e.g. {example}"
        raise RetargetError(f"{path}: {exc}{hint}") from None
