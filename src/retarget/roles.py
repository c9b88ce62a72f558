"""Humanoid roles: which joint of a skeleton is the hips, a knee, an ankle, …

Found from the hierarchy first and names second, so the same code reads
LAFAN1 (``LeftUpLeg, LeftLeg, LeftFoot``), Mocapbank (``LeftHip, LeftKnee,
LeftAnkle``), CMU/VICON ASF (``lfemur, ltibia, lfoot``) and Mixamo-style names:

1. **Sides** by pairing: a name is left (right) when swapping its side token
   (``Left``/``Right``, ``L_``/``R_``, ``_l``/``_r``, ``.L``/``.R``, a leading
   ``l``/``r`` as in ``lfemur``) gives another joint's name.
2. **Limbs**: each sided branch (a sided joint whose parent is not sided) is a
   leg when it leaves the root closer than the other branches of its side,
   an arm otherwise.
3. **Joints in a limb**: the knee (elbow) is the first joint of the limb's
   main chain whose name says so (``knee``, ``tibia``, ``shin``, ``Leg`` but not
   ``UpLeg``; ``elbow``, ``forearm``, ``radius``, ``lowerarm``); failing names,
   the joint between the two longest consecutive bones. The hip (shoulder) is
   its parent, the ankle (wrist) its child on the chain, then the toe, and the
   chain's end point is the toe tip (hand tip).

The character's **height** (DESIGN.md, measures) is the bone-path length from
the head joint down to an ankle, the mean over both ankles: pose independent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import RetargetError
from .skeleton import Skeleton

__all__ = ["LEG_ROLES", "Roles", "find_roles", "height"]

_SIDE_SWAPS = [
    (re.compile(r"Left"), "Right"),
    (re.compile(r"Right"), "Left"),
    (re.compile(r"left"), "right"),
    (re.compile(r"right"), "left"),
    (re.compile(r"LEFT"), "RIGHT"),
    (re.compile(r"RIGHT"), "LEFT"),
    (re.compile(r"(?<![A-Za-z])L(?=[_\-. :]|[A-Z][a-z])"), "R"),
    (re.compile(r"(?<![A-Za-z])R(?=[_\-. :]|[A-Z][a-z])"), "L"),
    (re.compile(r"(?<=[_\-. :])L$|(?<=[_.])L(?=[_.\d])"), "R"),
    (re.compile(r"(?<=[_\-. :])R$|(?<=[_.])R(?=[_.\d])"), "L"),
    (re.compile(r"(?<=[_\-. :])l$"), "r"),
    (re.compile(r"(?<=[_\-. :])r$"), "l"),
    (re.compile(r"^l(?=[a-z])"), "r"),
    (re.compile(r"^r(?=[a-z])"), "l"),
]
_LEFT_HINT = re.compile(r"left|^l(?=[a-z_.])|(?<![a-z])l(?![a-z])|[_.]l$", re.IGNORECASE)

_KNEE = re.compile(r"knee|tibia|shin|calf|lower_?leg|(?<!up)leg(?!.*up)", re.IGNORECASE)
_ELBOW = re.compile(r"elbow|fore_?arm|radius|lower_?arm|ulna", re.IGNORECASE)
_LEG_NAME = re.compile(r"leg|hip|thigh|femur|knee|tibia|foot|ankle|toe", re.IGNORECASE)
_ARM_NAME = re.compile(r"arm|shoulder|clav|collar|humerus|elbow|hand|wrist", re.IGNORECASE)
_HEAD = re.compile(r"head", re.IGNORECASE)
_NECK = re.compile(r"neck", re.IGNORECASE)

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


def _side_partner(name: str, names: set[str]) -> str | None:
    for pattern, repl in _SIDE_SWAPS:
        other = pattern.sub(repl, name, count=1)
        if other != name and other in names:
            return other
    return None


def _sides(skeleton: Skeleton) -> dict[int, str]:
    names = set(skeleton.names)
    sides: dict[int, str] = {}
    for j, name in enumerate(skeleton.names):
        partner = _side_partner(name, names)
        if partner is None:
            continue
        # the partner names the other side; which one is left? The one the hint says.
        left_here = bool(_LEFT_HINT.search(name))
        left_there = bool(_LEFT_HINT.search(partner))
        if left_here != left_there:
            sides[j] = "left" if left_here else "right"
    return sides


def _main_chain(skeleton: Skeleton, top: int) -> list[int]:
    """From ``top`` down, always into the child with the longest sub-chain (points)."""
    parents = skeleton.point_parents
    lengths = skeleton.bone_lengths()
    reach = np.zeros(skeleton.num_points)  # longest bone path below each point
    for p in range(skeleton.num_points - 1, 0, -1):
        a = parents[p]
        reach[a] = max(reach[a], reach[p] + lengths[p])
    chain = [top]
    while True:
        kids = [c for c in range(skeleton.num_points) if parents[c] == chain[-1]]
        if not kids:
            return chain
        chain.append(max(kids, key=lambda c: reach[c] + lengths[c]))


def _limb_roles(skeleton: Skeleton, chain: list[int], kind: str) -> dict[str, int]:
    pattern = _KNEE if kind == "leg" else _ELBOW
    joints = [p for p in chain if p < skeleton.num_joints]
    mid = next(
        (
            k
            for k, p in enumerate(chain)
            if p < skeleton.num_joints and pattern.search(skeleton.names[p])
        ),
        None,
    )
    if mid is None or mid == 0 or mid + 1 >= len(chain):
        lengths = skeleton.bone_lengths()[chain]
        # knee/elbow between the two longest consecutive bones
        # (bones k and k+1 end at chain[k] and chain[k+1])
        pair = [lengths[k] + lengths[k + 1] for k in range(1, len(chain) - 1)]
        if not pair:
            raise RetargetError(f"limb starting at {skeleton.names[chain[0]]!r} is too short")
        mid = 1 + int(np.argmax(pair))
    names = LEG_ROLES if kind == "leg" else ("shoulder", "elbow", "wrist", "hand_next", "hand_tip")
    out = {names[0]: chain[mid - 1], names[1]: chain[mid]}
    if mid + 1 < len(chain) and chain[mid + 1] < skeleton.num_joints:
        out[names[2]] = chain[mid + 1]
    if kind == "leg" and mid + 2 < len(chain) and chain[mid + 2] < skeleton.num_joints:
        out["toe"] = chain[mid + 2]
    out[names[4]] = chain[-1]
    if kind == "arm" and mid >= 2 and chain[mid - 2] in joints:
        out["clavicle"] = chain[mid - 2]
    out.pop("hand_next", None)
    return out


@lru_cache(maxsize=64)
def _find_roles_cached(skeleton: Skeleton) -> Roles:
    sides = _sides(skeleton)
    parents = skeleton.parents
    depth = skeleton.depth
    tops: dict[str, list[int]] = {"left": [], "right": []}
    for j, side in sides.items():
        if parents[j] < 0 or parents[j] not in sides:
            tops[side].append(j)
    points: dict[str, int] = {"hips": 0}
    problems = []
    for side in ("left", "right"):
        branches = sorted(tops[side], key=lambda j: (depth[j], j))
        if len(branches) < 2:
            problems.append(f"{side} arm and leg (found {len(branches)} {side} branch(es))")
            continue

        def kind_of(j: int) -> str:
            sub = [skeleton.names[p] for p in _main_chain(skeleton, j) if p < skeleton.num_joints]
            leg = sum(bool(_LEG_NAME.search(n)) for n in sub)
            arm = sum(bool(_ARM_NAME.search(n)) for n in sub)
            return "leg" if leg > arm else "arm" if arm > leg else ""

        kinds = {j: kind_of(j) for j in branches}
        legs = [j for j in branches if kinds[j] == "leg"] or branches[:1]
        arms = [j for j in branches if kinds[j] == "arm" and j not in legs] or [
            j for j in branches if j not in legs
        ][:1]
        for kind, top in (("leg", legs[0]), ("arm", arms[0])):
            for role, p in _limb_roles(skeleton, _main_chain(skeleton, top), kind).items():
                points[f"{side}_{role}"] = p
    heads = [
        j for j in range(skeleton.num_joints) if j not in sides and _HEAD.search(skeleton.names[j])
    ]
    if heads:
        head = min(heads, key=lambda j: depth[j])
    else:  # the unsided leaf joint farthest from the root
        unsided = [j for j in range(skeleton.num_joints) if j not in sides]
        head = max(unsided, key=lambda j: depth[j])
    points["head"] = head
    tips = [s for s in skeleton.children(head) if s >= skeleton.num_joints]
    if tips:
        points["head_top"] = tips[0]
    path = list(skeleton.chain(head))
    necks = [j for j in path if _NECK.search(skeleton.names[j])]
    if necks:
        points["neck"] = necks[0]
    elif len(path) >= 3:
        points["neck"] = path[-2]
    if problems:
        raise RetargetError(
            "cannot find the humanoid limbs of this skeleton: missing "
            + "; ".join(problems)
            + f" (joints: {', '.join(skeleton.names)})"
        )
    spine = tuple(j for j in path[1:-1] if j != points.get("neck"))
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
