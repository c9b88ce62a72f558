"""The world of a file: its up axis and its length unit, found once from the body.

BVH says neither which way is up nor in which unit its lengths are; exporters
write Y up or Z up, centimetres, metres, inches, or CMU's ASF unit. Both are
found here, once, by the readers (:func:`retarget.io.read_bvh`,
:func:`retarget.io.read_motion`), recorded on the skeleton (:attr:`Skeleton.unit`,
:attr:`Skeleton.up`) and read back by every consumer through this module:
``run`` and the mapping, ``eval`` (:func:`retarget.humanoid.metrics.evaluate` turns both
motions upright first), ``view`` and ``render``, and physics (SI conversion).
``--unit`` and ``--up`` (``unit=``, ``up=``) override what is found.

**Unit** (:func:`find_unit`). Files that declare their unit keep it (ASF
``:units``, ``.npz``, the sensor stream). For BVH, the character's height
(:func:`retarget.humanoid.roles.height`, the bone path from the head joint to an ankle:
about 0.88 of stature, 1.3 to 1.7 m for adults) is read in each candidate unit
of :data:`CANDIDATES` (mm, cm, dm, m, in, ft and CMU's ASF unit ``in/0.45``,
1/0.45 inch ≈ 5.644 cm, which CMU's BVH conversions keep: their bodies are
about 24.8 units from head to ankle), and the unit that puts it nearest
:data:`HUMAN_HEIGHT` (1.5 m) on a log scale wins. Neighbouring candidates are
1.8 to 3.3 times apart, so an adult body has one answer; a body far from adult
size (a child's 0.8 m in cm reads as inches) needs ``--unit``. A skeleton
without humanoid roles keeps BVH's usual cm, and the reason says so.

**Up** (:func:`find_up`). In every frame (at most :data:`UP_FRAMES`, evenly
spread) the direction from the hips up to the head names its nearest axis, with
its sign; the axis named by the most frames is up when it is named by a third
of them at least (bending over points the trunk forward, but forward turns with
the performer and spreads those frames over four horizontal axes:
mocapbank.bvh stands along +Y in 51 % of its frames). Frames first, because
rest poses need not stand (LAFAN1's lies along +X while its frames are Y up)
and because a file's world may be turned against its rest pose
(``pybvh_test3.bvh``: rest pose along +Y, frames Z up). When the frames do not
stand along one axis (a body tumbling through every direction), the rest pose
decides, and so it does for a skeleton without frames (an ``.asf`` alone) or
frames that only hold the rest pose (a character file of one rest frame): along
±Y or ±Z it stands (BVH's Y up; the Z up of Blender, 3ds Max and Unreal), along
±X it lies in a Y-up world, as LAFAN1's rest pose does (no tool writes X-up
worlds). A still T-pose stands and is decided like any other clip. What the body cannot
tell: a performer lying along one axis through most of the clip reads as a
world whose up is that axis; give ``--up``. A skeleton without humanoid roles
is Y up (the BVH convention).

Every measure and method works Y up (DESIGN.md): :func:`upright` turns a
motion so (the root's rotation and position only), :func:`reorient` turns it
into any recorded up axis, exactly back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..core import quat
from ..core.arrays import Array
from ..core.errors import RetargetError
from ..core.motion import Motion
from ..core.skeleton import UP_AXES, Skeleton
from .roles import Roles, find_roles, height

__all__ = [
    "CANDIDATES",
    "HUMAN_HEIGHT",
    "UNITS",
    "UP_AXES",
    "UP_FRAMES",
    "axes_between",
    "find_unit",
    "find_up",
    "metres_per_unit",
    "parse_unit",
    "parse_up",
    "reorient",
    "settle",
    "settle_skeleton",
    "turn",
    "up_axis",
    "up_name",
    "up_of",
    "up_vector",
    "upright",
]


#: Centimetres per unit of each length unit spelling a skeleton may carry.
UNITS: Mapping[str, float] = {
    "mm": 0.1,
    "cm": 1.0,
    "dm": 10.0,
    "m": 100.0,
    "in": 2.54,
    "inch": 2.54,
    "inches": 2.54,
    "ft": 30.48,
    "in/0.45": 2.54 / 0.45,
}
#: The units a BVH body is measured in (:func:`find_unit`), with how each is named.
CANDIDATES: Mapping[str, str] = {
    "mm": "mm",
    "cm": "cm",
    "dm": "dm",
    "m": "m",
    "in": "in",
    "ft": "ft",
    "in/0.45": "in/0.45 (CMU's ASF unit)",
}
#: Head-to-ankle height (m) of the body a unit should make: an adult of about 1.7 m.
HUMAN_HEIGHT = 1.5
#: Frames (evenly spread) whose body directions find the up axis.
UP_FRAMES = 512
#: Share of the frames whose hips-to-head direction is nearest one axis (more than any
#: other) for the clip to stand along it: bending over points the trunk forward, but
#: forward turns with the performer and splits its frames over the horizontal axes.
_MOST = 1.0 / 3.0
_ALIASES = {"inch": "in", "inches": "in", "cmu": "in/0.45", "feet": "ft", "foot": "ft"}


# -- units ------------------------------------------------------------------------------------


def parse_unit(text: str) -> str:
    """A unit's canonical spelling (``"inches"`` → ``"in"``, ``"cmu"`` → ``"in/0.45"``).

    Raises
    ------
    RetargetError
        For a unit not in :data:`UNITS`, listing those that are.
    """
    unit = str(text).strip().lower()
    unit = _ALIASES.get(unit, unit)
    if unit not in UNITS:
        raise RetargetError(
            f"unknown length unit {text!r}; units: {', '.join(CANDIDATES)} (cmu = in/0.45)"
        )
    return unit


def metres_per_unit(unit: str) -> float:
    """Metres per ``unit`` (a spelling of :data:`UNITS`; :func:`parse_unit`'s error else)."""
    return UNITS[parse_unit(unit)] / 100.0


def _roles_or_reason(skeleton: Skeleton, roles: Roles | None) -> tuple[Roles | None, str]:
    if roles is not None:
        return roles, ""
    try:
        return find_roles(skeleton), ""
    except RetargetError as exc:
        return None, str(exc).split(" (joints:")[0]
    except Exception as exc:  # a tree the role finder cannot read is no humanoid here:
        return None, f"no roles ({type(exc).__name__})"  # reading must not fail on it


def find_unit(skeleton: Skeleton, roles: Roles | None = None) -> tuple[str, str]:
    """The length unit of a BVH body, and why (module docstring).

    Returns
    -------
    unit : str
        One of :data:`CANDIDATES`.
    reason : str
        E.g. "the body is 24.8 units from head to ankle: 1.40 m in in/0.45 (CMU's
        ASF unit), nearest an adult's 1.5 m; in would make it 0.63 m".

    Examples
    --------
    >>> import numpy as np
    >>> names = ("Hips", "LeftUpLeg", "LeftLeg", "LeftFoot", "RightUpLeg", "RightLeg",
    ...          "RightFoot", "Spine", "Head", "LeftArm", "LeftForeArm", "LeftHand",
    ...          "RightArm", "RightForeArm", "RightHand")
    >>> parents = [-1, 0, 1, 2, 0, 4, 5, 0, 7, 7, 9, 10, 7, 12, 13]
    >>> sk = Skeleton(names, parents, np.full((15, 3), 0.2))  # 1.73 m from head to ankle
    >>> find_unit(sk)[0], find_unit(sk.scaled(100.0))[0]
    ('m', 'cm')
    """
    found, why_not = _roles_or_reason(skeleton, roles)
    if found is None:
        return "cm", f"no humanoid body to measure ({why_not}): BVH's usual cm"
    h = float(height(skeleton, found))
    if not (np.isfinite(h) and h > 0.0):
        return "cm", "the body has no height to measure (head and ankles coincide): BVH's usual cm"

    def miss(unit: str) -> float:
        return abs(math.log(h * UNITS[unit] / 100.0 / HUMAN_HEIGHT))

    ranked = sorted(CANDIDATES, key=miss)
    best, second = ranked[0], ranked[1]
    other = "cm" if best != "cm" else second
    return best, (
        f"the body is {h:.4g} units from head to ankle: {h * UNITS[best] / 100.0:.2f} m in "
        f"{CANDIDATES[best]}, nearest an adult's {HUMAN_HEIGHT} m; {CANDIDATES[other]} would "
        f"make it {h * UNITS[other] / 100.0:.2f} m"
    )


# -- up ---------------------------------------------------------------------------------------


def parse_up(text: str) -> str:
    """An up axis's canonical spelling (``"+Z"`` → ``"z"``); :class:`RetargetError` else."""
    up = str(text).strip().lower().removeprefix("+")
    if up not in UP_AXES:
        raise RetargetError(f"unknown up axis {text!r}; axes: {', '.join(UP_AXES)}")
    return up


def up_vector(up: str) -> Array:
    """The unit vector (3,) of an up axis name (``"-z"`` → ``[0, 0, -1]``)."""
    up = parse_up(up)
    out = np.zeros(3)
    out["xyz".index(up[-1])] = -1.0 if up.startswith("-") else 1.0
    return out


def up_name(vector: Array) -> str:
    """The name of the axis nearest a direction (3,)."""
    v = np.asarray(vector, dtype=np.float64)
    k = int(np.argmax(np.abs(v)))
    return ("-" if v[k] < 0 else "") + "xyz"[k]


def _point_positions(skeleton: Skeleton, motion: Motion | None, points: tuple[int, ...]) -> Array:
    """World positions (F, K, 3) of a few points, over at most :data:`UP_FRAMES` frames
    of ``motion`` (the rest pose, F = 1, without one). Chains only: no full FK."""
    if motion is None or motion.num_frames == 0:
        frames = np.zeros(1, dtype=np.intp)
        rotations = quat.identity((1, skeleton.num_joints))
        translations = None
    else:
        n = motion.num_frames
        frames = np.linspace(0, n - 1, min(n, UP_FRAMES)).round().astype(np.intp)
        frames = frames[np.diff(frames, prepend=-1) > 0]  # (sorted: np.unique would import np.ma)
        rotations = motion.rotations[frames]
        translations = None if motion.translations is None else motion.translations[frames]
    out = np.zeros((len(frames), len(points), 3))
    offsets = skeleton.point_offsets
    for k, point in enumerate(points):
        chain = [int(c) for c in skeleton.chain(point)]
        q = rotations[:, 0]
        p = np.zeros((len(frames), 3))
        for c in chain[1:]:
            offset = (
                translations[:, c]
                if translations is not None and c < skeleton.num_joints
                else offsets[c]
            )
            p = p + quat.rotate(q, offset)
            if c < skeleton.num_joints:
                q = quat.multiply(q, rotations[:, c])
        out[:, k] = p
    return out


def _standing(d: Array) -> tuple[str, float]:
    """The signed axis nearest the most of the directions ``d`` (F, 3), and the share of
    them nearest it (ties: the larger mean component along it)."""
    n = np.linalg.norm(d, axis=-1)
    d = d[n > 0.0] / n[n > 0.0, None]
    if not len(d):
        return "y", 0.0
    k = np.argmax(np.abs(d), axis=-1)
    signed = k + 3 * (d[np.arange(len(d)), k] < 0)  # 0..5: x, y, z, -x, -y, -z
    votes = np.bincount(signed, minlength=6)
    mean = d.mean(axis=0)
    along = np.concatenate([mean, -mean])
    best = int(max(range(6), key=lambda a: (votes[a], along[a])))
    return UP_AXES[best], float(votes[best] / len(d))


def find_up(
    skeleton: Skeleton, motion: Motion | None = None, roles: Roles | None = None
) -> tuple[str, str]:
    """The world up axis of a body, and why (module docstring): from the head above the
    hips over ``motion``'s frames, else (no frames, or frames that do not stand along
    one axis) the rest pose. Ignores :attr:`Skeleton.up` (:func:`up_axis` honours it).

    Returns
    -------
    up : str
        One of :data:`UP_AXES`.
    reason : str
    """
    found, why_not = _roles_or_reason(skeleton, roles)
    if found is None:
        return "y", f"no humanoid body ({why_not}): BVH's Y up"
    points = (found["hips"], found["head"])
    rest = _point_positions(skeleton, None, points)
    rest_d = rest[0, 1] - rest[0, 0]
    rest_axis, rest_up, rest_says = _rest_up(rest_d)
    if motion is not None and motion.num_frames > 0:
        pos = _point_positions(skeleton, motion, points)
        d = pos[:, 1] - pos[:, 0]
        frames = f"{min(motion.num_frames, UP_FRAMES)} frames"
        scale = max(float(np.linalg.norm(rest_d)), 1e-300)
        if np.abs(d - rest_d).max() <= 1e-9 * scale:  # the frames hold the rest pose
            return rest_up, f"the {frames} hold the rest pose: {rest_says}"
        axis, share = _standing(d)
        if share >= _MOST:
            also = "" if rest_axis == axis else f"; the rest pose has it along {_signed(rest_axis)}"
            return axis, (
                f"the head is above the hips along {_signed(axis)} in {share:.0%} of {frames}{also}"
            )
        return rest_up, (
            f"the frames do not stand along one axis (the head is above the hips along "
            f"{_signed(axis)} in only {share:.0%} of {frames}); {rest_says}"
        )
    return rest_up, f"no frames: {rest_says}"


def _rest_up(d: Array) -> tuple[str, str, str]:
    """What a rest pose's hips-to-head direction ``d`` (3,) says: the axis it lies
    along, the up axis taken from it, and why. Along ±Y or ±Z it stands (BVH's Y up,
    the Z up of Blender, 3ds Max and Unreal); along ±X it lies in a Y-up world, as
    LAFAN1's does: no tool writes X-up worlds."""
    if not np.linalg.norm(d) > 0.0:
        return "y", "y", "the rest pose has no height: BVH's Y up"
    axis = up_name(d)
    if axis.endswith("x"):
        return (
            axis,
            "y",
            (
                f"the rest pose lies along {_signed(axis)}, as in BVH's Y-up world (LAFAN1's "
                "does; no tool writes X-up worlds)"
            ),
        )
    return axis, axis, f"the rest pose stands along {_signed(axis)}"


def _signed(axis: str) -> str:
    return axis if axis.startswith("-") else f"+{axis}"


def up_axis(
    skeleton: Skeleton, motion: Motion | None = None, roles: Mapping[str, int] | None = None
) -> Array:
    """The world up axis (3,) of a skeleton (and its motion), a unit vector along ±x, ±y
    or ±z: :attr:`Skeleton.up` when recorded (by its reader), else :func:`find_up` (the
    head above the hips over ``motion``'s frames, else the rest pose); ``roles`` (role →
    point, or :class:`Roles`) complete or replace those found."""
    if skeleton.up is not None:
        return up_vector(skeleton.up)
    found = (
        roles if roles is None or isinstance(roles, Roles) else Roles(points=dict(roles), spine=())
    )
    return up_vector(find_up(skeleton, motion, found)[0])


# -- recording and turning --------------------------------------------------------------------


def settle_skeleton(
    skeleton: Skeleton,
    motion: Motion | None = None,
    *,
    unit: str | None = None,
    up: str | None = None,
) -> Skeleton:
    """The skeleton with its unit and up axis recorded: ``unit``/``up`` when given
    (overrides), else its own unit and :func:`find_up` (from ``motion``'s frames, or
    the rest pose) unless already recorded."""
    changes: dict[str, object] = {}
    if unit is not None and parse_unit(unit) != skeleton.unit:
        changes["unit"] = parse_unit(unit)
    if up is not None:
        if parse_up(up) != skeleton.up:
            changes["up"] = parse_up(up)
    elif skeleton.up is None:
        changes["up"] = find_up(skeleton, motion)[0]
    return skeleton.replace(**changes) if changes else skeleton


def settle(motion: Motion, *, unit: str | None = None, up: str | None = None) -> Motion:
    """The motion with its skeleton's unit and up axis recorded (:func:`settle_skeleton`
    from its own frames)."""
    sk = settle_skeleton(motion.skeleton, motion, unit=unit, up=up)
    return motion if sk is motion.skeleton else motion.replace(skeleton=sk)


def turn(motion: Motion, axes: Array) -> Motion:
    """The motion with its whole world turned by ``axes`` (4,): root rotation and
    position only (a change of world axes, Y up to Z up). The skeleton is kept."""
    rot = motion.rotations.copy()
    rot[:, 0] = quat.multiply(axes, rot[:, 0])
    return motion.replace(root_position=quat.rotate(axes, motion.root_position), rotations=rot)


def axes_between(a: str, b: str) -> Array:
    """The rotation (4,) taking up axis ``a`` onto ``b`` (names of :data:`UP_AXES`): the
    shortest arc, and for opposite axes a half turn about x (for ±y) or y (else)."""
    u, v = up_vector(a), up_vector(b)
    if u @ v < -0.5:
        k = "xyz".index(a[-1])
        axis = np.zeros(3)
        axis[1 if k != 1 else 0] = 1.0
        return np.concatenate([[0.0], axis])
    return quat.quat_between(u, v)


def up_of(motion: Motion) -> str:
    """The name of a motion's up axis: recorded on its skeleton, else :func:`find_up`."""
    sk = motion.skeleton
    return sk.up if sk.up is not None else find_up(sk, motion)[0]


def reorient(motion: Motion, up: str) -> Motion:
    """The motion turned so that its up axis (:func:`up_of`) becomes ``up``, which is
    recorded; the motion itself when it already is. Turning into ``b`` and back into
    ``a`` gives the motion back (to rounding). The turn is
    ``axes_between(up_of(motion), up)``."""
    up = parse_up(up)
    sk = motion.skeleton
    here = up_of(motion)
    if here == up:
        return motion if sk.up == up else motion.replace(skeleton=sk.replace(up=up))
    turned = turn(motion, axes_between(here, up))
    return turned.replace(skeleton=sk.replace(up=up))


def upright(motion: Motion) -> Motion:
    """The motion turned Y up (:func:`reorient` into ``"y"``): the world every measure
    and method works in."""
    return reorient(motion, "y")
