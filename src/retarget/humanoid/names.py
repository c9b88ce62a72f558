"""What joint names say: the naming conventions of rigs, mocap files and robots.

The body's shape and hierarchy say most of what a joint is
(:mod:`retarget.humanoid.anatomy`); names break the ties the shape leaves (a rest
pose lying along one axis, a twist bone on a straight limb, knees of equal claim)
and read a skeleton whose rest pose says nothing (:func:`retarget.humanoid.roles.find_roles`).
The conventions read here:

- sides: ``Left``/``Right``, ``L_``/``R_``, ``_l``/``_r``, ``.L``/``.R``, ``FootL``, a
  leading ``l``/``r`` as in ``lfemur`` (:data:`SIDE_SWAPS`);
- knees and elbows (:data:`KNEE`, :data:`ELBOW`), leg and arm words (:data:`LEG_WORDS`,
  :data:`ARM_WORDS`), heads, necks and end joints (:data:`HEAD`, :data:`NECK`, :data:`END`);
- segments inside a limb bone (:data:`SEGMENT`: twist, roll, bend bones, Blender
  B-bone segments) and the axis words of robots' hinge names (:data:`AXIS_WORDS`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.skeleton import Skeleton

__all__ = [
    "ARM_WORDS",
    "AXIS_WORDS",
    "ELBOW",
    "END",
    "HEAD",
    "KNEE",
    "LEG_WORDS",
    "NECK",
    "SEGMENT",
    "SIDE_SWAPS",
    "inside_segment",
    "name_sides",
    "one_joint",
    "stem",
]

SIDE_SWAPS: tuple[tuple[re.Pattern[str], str, str], ...] = (
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

KNEE = re.compile(
    r"knee|tibia|shin|calf|lower_?leg|(?<!up)(?<!upper)(?<!upper_)leg(?!.*up)", re.IGNORECASE
)
"""Knee joints: Mocapbank/SMPL ``Knee``, ASF ``tibia``, Blender/Daz ``shin``, Unreal/CC/Biped
``calf``, LAFAN1/Mixamo ``Leg`` (not ``UpLeg``, ``UpperLeg``)."""
ELBOW = re.compile(r"elbow|fore_?arm|radius|lower_?arm|ulna", re.IGNORECASE)
"""Elbow joints: Mocapbank/SMPL ``Elbow``, LAFAN1/Mixamo/Blender/Daz/CC/Biped ``ForeArm``,
ASF ``radius``, Unreal ``lowerarm``."""
LEG_WORDS = re.compile(r"leg|hip|thigh|femur|knee|tibia|foot|ankle|toe", re.IGNORECASE)
"""Words of leg joints, counted along a branch to tell a leg from an arm."""
ARM_WORDS = re.compile(r"arm|shoulder|clav|collar|humerus|elbow|hand|wrist", re.IGNORECASE)
"""Words of arm joints, likewise."""
SEGMENT = re.compile(r"twist|roll|bend|share|part|\.\d{3}$", re.IGNORECASE)
"""Joints that can be a segment inside a limb bone: Unreal/Daz/CC ``Twist``, ``Roll``,
``Bend``, ``Share`` bones, Blender B-bone segments (``DEF-thigh.L.001``)."""
HEAD = re.compile(r"head", re.IGNORECASE)
NECK = re.compile(r"neck", re.IGNORECASE)
END = re.compile(r"top|end|nub", re.IGNORECASE)
"""End joints standing for an end site: Mixamo ``HeadTop_End``, 3ds Max Biped ``HeadNub``."""

AXIS_WORDS = frozenset(
    "pitch roll yaw x y z rx ry rz link joint jnt dof rot rotation flexion extension "
    "abduction adduction".split()
)
"""Words that name a hinge's axis (or say joint, link) in robots' joint names."""


def name_sides(skeleton: Skeleton) -> dict[int, str]:
    """Joint → side, for the joints whose name has a side token another joint's name swaps."""
    names = set(skeleton.names)
    sides: dict[int, str] = {}
    for j, name in enumerate(skeleton.names):
        for pattern, other, side in SIDE_SWAPS:
            partner = pattern.sub(other, name, count=1)
            if partner != name and partner in names:
                sides[j] = side
                break
    return sides


def stem(name: str) -> tuple[str, ...]:
    """A joint name's words without the ones that name an axis or say joint/link
    (``left_hip_pitch_link``, ``Left_Hip_Roll``, ``l_hip_yaw`` → their side and ``hip``)."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    return tuple(w.lower() for w in words if w.lower() not in AXIS_WORDS)


def one_joint(skeleton: Skeleton, a: int, b: int, names: Sequence[str] | None = None) -> bool:
    """Whether joints ``a`` (the parent) and ``b`` are hinges of one robot joint: both
    with one rotation channel and one name but for its axis words (:func:`stem`), a
    word left to name it (``left_hip_pitch_joint`` and ``left_hip_roll_joint``, not
    ``left_hip_joint`` and ``left_knee_joint``). ``names``: the names to compare
    (default the skeleton's)."""
    nj = skeleton.num_joints
    if not (a < nj and b < nj):
        return False
    named = skeleton.names if names is None else names
    one = [len(skeleton.euler_orders[j]) == 1 for j in (a, b)]
    stems = [stem(named[j]) for j in (a, b)]
    words = [w for w in stems[0] if w not in ("left", "right", "l", "r")]
    return all(one) and stems[0] == stems[1] and bool(words)


def inside_segment(skeleton: Skeleton, pos: NDArray[np.float64], a: int, j: int, b: int) -> bool:
    """Whether joint ``j`` is a segment of the bone from ``a`` to ``b``: named so
    (:data:`SEGMENT`) and lying on it at rest (within 2 % of its length), inside it (not
    within 2 % of either end: a robot's wrist ``Roll`` hinge at its wrist's place)."""
    if not SEGMENT.search(skeleton.names[j]):
        return False
    ab, aj = pos[b] - pos[a], pos[j] - pos[a]
    length = float(np.linalg.norm(ab))
    if length <= 0.0:
        return False
    along = float(aj @ ab) / length**2
    off = float(np.linalg.norm(aj - along * ab))
    return 0.02 < along < 0.98 and off <= 0.02 * length
