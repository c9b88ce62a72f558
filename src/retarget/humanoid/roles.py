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
   ``l``/``r`` as in ``lfemur``: :data:`_SIDE_SWAPS`) gives another joint's
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
   name says so (:data:`_KNEE`, :data:`_ELBOW`); failing names, the joint between
   the two longest consecutive bones. The hip (shoulder) is its parent, the
   clavicle the one above, the ankle (wrist) its child, then the toe; the
   chain's end point is the toe tip (hand tip). A limb that ends in an end
   site right after the knee (elbow), a rig without foot (hand) joints, has that
   site as its ankle (wrist): a point with no rotation of its own, and no toe
   or tip.

   A joint *inside* a limb bone (rigify's B-bone segment ``DEF-thigh.L.001``,
   Daz Genesis's ``lThighTwist``: a :data:`_SEGMENT` name, lying on the bone at
   rest) is passed over: the hip is the joint above it. The methods' limb IK
   wants hip, knee and ankle each the parent of the next: the mapping folds
   such segments away for them (:func:`retarget.humanoid.mapping.map_for_method`).

The character's **height** (DESIGN.md, measures) is the bone-path length from
the head joint down to an ankle, the mean over both ankles: pose independent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.errors import RetargetError
from ..core.kinematics import rest_pose
from ..core.skeleton import Skeleton

__all__ = [
    "LEG_ROLES",
    "Roles",
    "find_roles",
    "foot_length",
    "height",
    "leg_length",
    "one_joint",
    "require_humanoid",
    "standing_heights",
]

_SIDE_SWAPS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    # Left/Right as words: LAFAN1, Mixamo, Mocapbank, MotionBuilder, SMPL-X (left_hip)
    (re.compile(r"Left"), "Right", "left"),
    (re.compile(r"Right"), "Left", "right"),
    (re.compile(r"left"), "right", "left"),
    (re.compile(r"right"), "left", "right"),
    (re.compile(r"LEFT"), "RIGHT", "left"),
    (re.compile(r"RIGHT"), "LEFT", "right"),
    # L/R before a separator or a word: SMPL L_Hip, CC_Base_L_Calf, Bip01 L Calf, LHand
    (re.compile(r"(?<![A-Za-z])L(?=[_\-. :]|[A-Z][a-z])"), "R", "left"),
    (re.compile(r"(?<![A-Za-z])R(?=[_\-. :]|[A-Z][a-z])"), "L", "right"),
    # L/R after a separator: Blender thigh.L, thigh_L, rigify segments DEF-thigh.L.001
    (re.compile(r"(?<=[_\-. :])L$|(?<=[_.])L(?=[_.\d])"), "R", "left"),
    (re.compile(r"(?<=[_\-. :])R$|(?<=[_.])R(?=[_.\d])"), "L", "right"),
    # L/R glued to the end of a word: Quaternius UpperArmL, FootR, Thumb2L
    (re.compile(r"(?<=[a-z0-9])L$"), "R", "left"),
    (re.compile(r"(?<=[a-z0-9])R$"), "L", "right"),
    # l/r suffix: Unreal thigh_l, index_01_l
    (re.compile(r"(?<=[_\-. :])l$"), "r", "left"),
    (re.compile(r"(?<=[_\-. :])r$"), "l", "right"),
    # l/r prefix: CMU/VICON ASF lfemur, CMU Daz-friendly BVH lShin, iCub l_hip_pitch
    (re.compile(r"^l(?=[A-Za-z]|[_\-. ])"), "r", "left"),
    (re.compile(r"^r(?=[A-Za-z]|[_\-. ])"), "l", "right"),
)
"""(side token, the other side's token, the side the token names), tried in order."""

_KNEE = re.compile(
    r"knee|tibia|shin|calf|lower_?leg|(?<!up)(?<!upper)(?<!upper_)leg(?!.*up)", re.IGNORECASE
)
"""Knee joints: Mocapbank/SMPL ``Knee``, ASF ``tibia``, Blender/Daz ``shin``, Unreal/CC/Biped
``calf``, LAFAN1/Mixamo ``Leg`` (not ``UpLeg``, ``UpperLeg``)."""
_ELBOW = re.compile(r"elbow|fore_?arm|radius|lower_?arm|ulna", re.IGNORECASE)
"""Elbow joints: Mocapbank/SMPL ``Elbow``, LAFAN1/Mixamo/Blender/Daz/CC/Biped ``ForeArm``,
ASF ``radius``, Unreal ``lowerarm``."""
_LEG_NAME = re.compile(r"leg|hip|thigh|femur|knee|tibia|foot|ankle|toe", re.IGNORECASE)
"""Words of leg joints, counted along a branch to tell a leg from an arm."""
_ARM_NAME = re.compile(r"arm|shoulder|clav|collar|humerus|elbow|hand|wrist", re.IGNORECASE)
"""Words of arm joints, likewise."""
_SEGMENT = re.compile(r"twist|roll|bend|share|part|\.\d{3}$", re.IGNORECASE)
"""Joints that can be a segment inside a limb bone: Unreal/Daz/CC ``Twist``, ``Roll``,
``Bend``, ``Share`` bones, Blender B-bone segments (``DEF-thigh.L.001``)."""
_HEAD = re.compile(r"head", re.IGNORECASE)
_NECK = re.compile(r"neck", re.IGNORECASE)
_END = re.compile(r"top|end|nub", re.IGNORECASE)
"""End joints standing for an end site: Mixamo ``HeadTop_End``, 3ds Max Biped ``HeadNub``."""

_AXIS_WORDS = frozenset(
    "pitch roll yaw x y z rx ry rz link joint jnt dof rot rotation flexion extension "
    "abduction adduction".split()
)
"""Words that name a hinge's axis (or say joint, link) in robots' joint names."""

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


def _sides(skeleton: Skeleton) -> dict[int, str]:
    """Joint → side, for the joints whose name has a side token another joint's name swaps."""
    names = set(skeleton.names)
    sides: dict[int, str] = {}
    for j, name in enumerate(skeleton.names):
        for pattern, other, side in _SIDE_SWAPS:
            partner = pattern.sub(other, name, count=1)
            if partner != name and partner in names:
                sides[j] = side
                break
    return sides


def _main_chain(skeleton: Skeleton, top: int) -> list[int]:
    """From ``top`` down, always into the child with the longest sub-chain (points);
    between children of equal reach, the one going on most straight (a hand's end
    rather than a thumb beside it of the same length)."""
    parents = skeleton.point_parents
    offsets = skeleton.point_offsets
    lengths = skeleton.bone_lengths()
    kids: list[list[int]] = [[] for _ in range(skeleton.num_points)]
    reach = np.zeros(skeleton.num_points)  # longest bone path below each point
    for p in range(skeleton.num_points - 1, 0, -1):
        a = parents[p]
        kids[a].insert(0, p)
        reach[a] = max(reach[a], reach[p] + lengths[p])

    def longest(among: list[int]) -> list[int]:
        total = [reach[c] + lengths[c] for c in among]
        return [c for c, t in zip(among, total, strict=True) if t >= max(total) * (1 - 1e-9)]

    def straightness(c: int, incoming: NDArray[np.float64]) -> float:
        """Cosine of the first non-zero step from the parent into ``c``'s sub-chain
        with the bone into the parent."""
        step, k = offsets[c], c
        while not step.any() and kids[k]:
            k = longest(kids[k])[0]
            step = offsets[k]
        norm = float(np.linalg.norm(step) * np.linalg.norm(incoming))
        return float(step @ incoming) / norm if norm > 0 else -1.0

    chain = [top]
    while kids[chain[-1]]:
        ties = longest(kids[chain[-1]])
        incoming = offsets[chain[-1]]
        chain.append(max(ties, key=lambda c: straightness(c, incoming)))
    return chain


def _common_ancestor(skeleton: Skeleton, points: Sequence[int]) -> int:
    """The deepest point whose subtree holds all ``points``."""
    chains = [skeleton.chain(p) for p in points]
    k = 0
    while all(len(c) > k + 1 for c in chains) and len({int(c[k + 1]) for c in chains}) == 1:
        k += 1
    return int(chains[0][k])


def _mirror_pairs(skeleton: Skeleton) -> list[tuple[int, int]]:
    """Pairs of sibling joints with subtrees of one shape and 3+ points on their main
    chains (limbs), shallowest first; none is looked for inside a pair."""
    kids: list[list[int]] = [[] for _ in range(skeleton.num_points)]
    for p in range(1, skeleton.num_points):
        kids[skeleton.point_parents[p]].append(p)
    shapes: dict[tuple[int, ...], int] = {}
    shape = [0] * skeleton.num_points
    for p in range(skeleton.num_points - 1, -1, -1):
        shape[p] = shapes.setdefault(tuple(sorted(shape[c] for c in kids[p])), len(shapes))
    pairs: list[tuple[int, int]] = []
    todo = [0]
    for j in todo:  # breadth first: by depth
        for c in kids[j]:
            twins = [d for d in kids[j] if shape[d] == shape[c]]
            if len(twins) == 2 and len(_main_chain(skeleton, c)) >= 3:
                if c == twins[0]:
                    pairs.append((twins[0], twins[1]))
            else:
                todo.append(c)
    return pairs


def _sides_from_rest_pose(skeleton: Skeleton) -> dict[int, str]:
    """Joint → side for a skeleton whose names have no side: the two outermost mirror
    pairs are the legs and the arms, and the left is ``up × forward`` at rest (right-handed
    axes; up from the hips to the chest, forward from the hips to the leg chains' ends)."""
    pairs = _mirror_pairs(skeleton)
    if len(pairs) < 2:
        return {}
    legs, arms = pairs[:2]
    pos = rest_pose(skeleton)[0]
    up = pos[_common_ancestor(skeleton, arms)] - pos[_common_ancestor(skeleton, legs + arms)]
    forward = np.mean([pos[_main_chain(skeleton, top)[-1]] - pos[top] for top in legs], axis=0)
    left = np.cross(up, forward)
    sides: dict[int, str] = {}
    for a, b in (legs, arms):
        across = np.mean(pos[_main_chain(skeleton, a)], 0) - np.mean(
            pos[_main_chain(skeleton, b)], 0
        )
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
        sub = [skeleton.names[p] for p in _main_chain(skeleton, j) if p < skeleton.num_joints]
        leg = sum(bool(_LEG_NAME.search(n)) for n in sub)
        arm = sum(bool(_ARM_NAME.search(n)) for n in sub)
        return "leg" if leg > arm else "arm" if arm > leg else ""

    tops: dict[tuple[str, str], int] = {}
    problems = []
    for side in ("left", "right"):
        branches = sorted(
            (
                j
                for j, s in sides.items()
                if s == side and parents[j] not in sides and len(_main_chain(skeleton, j)) >= 3
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
    pattern = _KNEE if kind == "leg" else _ELBOW
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
    while top >= 1 and _inside(skeleton, pos, chain[top - 1], chain[top], chain[mid]):
        top -= 1
    while top >= 1 and one_joint(skeleton, chain[top - 1], chain[top]):
        top -= 1  # up a robot's hinges that make one hip (shoulder): pitch, roll, yaw
    low = mid + 1  # down over joints inside the lower bone
    while (
        low + 1 < len(chain)
        and chain[low + 1] < nj
        and _inside(skeleton, pos, chain[mid], chain[low], chain[low + 1])
    ):
        low += 1
    end = low  # the last hinge of a robot's ankle (wrist)
    while end + 1 < len(chain) and one_joint(skeleton, chain[end], chain[end + 1]):
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


def _stem(name: str) -> tuple[str, ...]:
    """A joint name's words without the ones that name an axis or say joint/link
    (``left_hip_pitch_link``, ``Left_Hip_Roll``, ``l_hip_yaw`` → their side and ``hip``)."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    return tuple(w.lower() for w in words if w.lower() not in _AXIS_WORDS)


def one_joint(skeleton: Skeleton, a: int, b: int, names: Sequence[str] | None = None) -> bool:
    """Whether joints ``a`` (the parent) and ``b`` are hinges of one robot joint: both
    with one rotation channel and one name but for its axis words (:func:`_stem`), a
    word left to name it (``left_hip_pitch_joint`` and ``left_hip_roll_joint``, not
    ``left_hip_joint`` and ``left_knee_joint``). ``names``: the names to compare
    (default the skeleton's)."""
    nj = skeleton.num_joints
    if not (a < nj and b < nj):
        return False
    named = skeleton.names if names is None else names
    one = [len(skeleton.euler_orders[j]) == 1 for j in (a, b)]
    stems = [_stem(named[j]) for j in (a, b)]
    words = [w for w in stems[0] if w not in ("left", "right", "l", "r")]
    return all(one) and stems[0] == stems[1] and bool(words)


def _inside(skeleton: Skeleton, pos: NDArray[np.float64], a: int, j: int, b: int) -> bool:
    """Whether joint ``j`` is a segment of the bone from ``a`` to ``b``: named so
    (:data:`_SEGMENT`) and lying on it at rest (within 2 % of its length)."""
    if not _SEGMENT.search(skeleton.names[j]):
        return False
    ab, aj = pos[b] - pos[a], pos[j] - pos[a]
    length = float(np.linalg.norm(ab))
    if length <= 0.0:
        return False
    along = float(aj @ ab) / length**2
    off = float(np.linalg.norm(aj - along * ab))
    return 0.0 < along < 1.0 and off <= 0.02 * length


def _head(skeleton: Skeleton, chest: int, sides: Mapping[int, str]) -> int:
    """The shallowest unsided ``head``-named joint below the chest; failing that, the
    highest ``head``-named end site below it at rest (a robot's head is a fixed body);
    failing names, the end of the trunk: from the chest into the only unsided child
    joint while there is one."""
    nj = skeleton.num_joints
    named = [
        j
        for j in range(nj)
        if j not in sides and _HEAD.search(skeleton.names[j]) and chest in skeleton.chain(j)
    ]
    if named:
        return min(named, key=lambda j: skeleton.depth[j])
    parents = skeleton.point_parents
    ends = [  # a robot's head: a fixed body, an end site
        p
        for p in range(nj, skeleton.num_points)
        if parents[p] not in sides
        and _HEAD.search(skeleton.point_names[p])
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


@lru_cache(maxsize=64)
def _find_roles_cached(skeleton: Skeleton) -> Roles:
    sides = _sides(skeleton) or _sides_from_rest_pose(skeleton)
    tops = _limb_tops(skeleton, sides)
    hips = _common_ancestor(skeleton, list(tops.values()))
    points: dict[str, int] = {"hips": hips}
    for (side, kind), top in tops.items():
        for role, p in _limb_roles(skeleton, _main_chain(skeleton, top), kind).items():
            points[f"{side}_{role}"] = p
    chest = _common_ancestor(skeleton, [tops["left", "arm"], tops["right", "arm"]])
    head = points["head"] = _head(skeleton, chest, sides)
    kids = skeleton.children(head)
    tips = [s for s in kids if s >= skeleton.num_joints] or [
        c for c in kids if not skeleton.children(c) and _END.search(skeleton.point_names[c])
    ]
    if tips:
        points["head_top"] = tips[0]
    path = [int(j) for j in skeleton.chain(head)]
    inner = path[path.index(hips) + 1 : -1]  # between hips and head
    necks = [j for j in inner if _NECK.search(skeleton.names[j])]
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
) -> None:
    """Refuse, naming the file, a skeleton without the humanoid roles a retargeting
    command needs (hips, head, two arms and two legs: :func:`find_roles`).

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
        find_roles(skeleton)
    except RetargetError as exc:
        hint = ""
        if side is not None:
            example = json.dumps({side: {"hips": "<joint>", "left_knee": "<joint>"}})
            hint = f"; roles not found: name them with --map map.json, e.g. {example}"
        raise RetargetError(f"{path}: {exc}{hint}") from None
