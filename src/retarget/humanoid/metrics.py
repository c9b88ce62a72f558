"""The measures of "good" (DESIGN.md, "What good means").

Lengths are reported as a percentage of the character's height (the
bone-path length from the head to an ankle, :func:`retarget.humanoid.roles.height`),
so a source and a result of other sizes compare directly. Foot points are
matched between source and result by role (left ankle, left toe, …); joints by
name. Contacts are always those of the **source** and the floor is the
source's: the world floor does not move with the character.

Each measure is a small function over arrays; :func:`evaluate` computes all of
them for a (source, result) pair and returns a flat dict (keys documented in
README.md and in :data:`MEASURES`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array
from ..core.kinematics import positions as motion_positions
from ..core.motion import Motion
from . import world
from .contacts import UP, Contacts, detect_contacts
from .cuts import find_cuts
from .roles import LEG_ROLES, find_roles, height

__all__ = [
    "MEASURES",
    "Matched",
    "evaluate",
    "floating",
    "joint_angles",
    "penetration",
    "pop",
    "pose_deviation",
    "skate",
    "sliding_ratio",
    "smoothness",
    "source_on_result",
    "tracking_error",
    "travel",
]


MEASURES: Mapping[str, str] = {
    "frames": "number of frames compared",
    "height_source": "source character height (head to ankle bone path), file unit",
    "height_result": "result character height, file unit",
    "contact_share": "share of (frame, foot point) pairs in contact in the source",
    "skate_source": "mean horizontal speed of source foot points over consecutive contact "
    "frames, % height / s",
    "skate_result": "the same for the result's foot points, over the source's contact frames, "
    "% height / s",
    "skate_ratio": "skate_result / skate_source (None, with skate_ratio_note, when the "
    "source's feet do not skate)",
    "sliding_ratio_source": "share of source contact steps longer than 0.6 % of height",
    "sliding_ratio_result": "the same for the result",
    "penetration_source": "mean depth of the lowest point of each foot below the floor, % height",
    "penetration_result": "the same for the result",
    "float_source": "mean height of the lowest point of each planted foot above the floor, "
    "% height",
    "float_result": "the same for the result",
    "pose_deviation_deg": "mean geodesic angle between result and source local rotations, "
    "joints outside the legs (None, with pose_deviation_deg_note, when the skeletons share "
    "no joint name)",
    "smoothness": "mean squared jerk of joint positions (in heights), result over the source "
    "carried onto the result's body (its angles on the result's bones; the source itself "
    "across hierarchies: the points with a role in both), the source's cuts left out; None, "
    "with smoothness_note, when the source has no jerk",
    "smoothness_literal": "the same over the source as it is (not carried onto the result's "
    "body), the source's cuts left out",
    "pop": "largest one-frame step of a knee or ankle beyond the step of the source carried "
    "onto the result's body at that frame, % height, the source's cuts left out",
    "pop_literal": "the same beyond the source's own step (not carried onto the result's "
    "body), the source's cuts left out",
    "travel_source": "horizontal path of the source's hips, in heights, the source's cuts left out",
    "travel_result": "the same for the result's hips",
    "travel_ratio": "travel_result / travel_source (None, with travel_ratio_note, when the "
    "source's hips do not travel)",
    "tracking_error_max": "largest distance of a constrained end-effector from its goal, "
    "% height (with goals)",
    "tracking_error_mean": "mean of those distances, % height (with goals)",
}


def _horizontal(p: Array) -> Array:
    return np.delete(p, UP, axis=-1)


def skate(pos: Array, mask: NDArray[np.bool_], fps: float, height: float) -> float:
    """Mean horizontal speed (% of height per second) over pairs of consecutive contact frames.

    Parameters
    ----------
    pos : ndarray, shape (F, K, 3)
        Foot point positions.
    mask : ndarray of bool, shape (F, K)
        Contacts (of the source).
    """
    pairs = mask[1:] & mask[:-1]
    if not pairs.any():
        return 0.0
    step = np.linalg.norm(_horizontal(np.diff(pos, axis=0)), axis=-1)  # (F-1, K)
    return float(step[pairs].mean() * fps / height * 100.0)


def travel(hips: Array, height: float, cuts: ArrayLike = ()) -> float:
    """Horizontal path of the hips (F, 3) in heights: the sum of their one-frame steps
    along the floor, the steps into the frames ``cuts`` left out (a jump to another
    take is no travel)."""
    step = np.linalg.norm(_horizontal(np.diff(hips, axis=0)), axis=-1)
    across = np.asarray(cuts, dtype=np.intp) - 1
    step[across[(across >= 0) & (across < len(step))]] = 0.0
    return float(step.sum() / height)


def sliding_ratio(
    pos: Array, mask: NDArray[np.bool_], height: float, threshold: float = 0.006
) -> float:
    """Share of consecutive contact steps longer than ``threshold`` × height."""
    pairs = mask[1:] & mask[:-1]
    if not pairs.any():
        return 0.0
    step = np.linalg.norm(_horizontal(np.diff(pos, axis=0)), axis=-1)
    return float((step[pairs] > threshold * height).mean())


def _lowest_per_foot(pos: Array, sides: tuple[str, ...]) -> tuple[Array, list[str]]:
    """Height of each foot's lowest point per frame, shape (F, 2)."""
    names = sorted(set(sides))
    cols = [np.array([k for k, s in enumerate(sides) if s == side]) for side in names]
    return np.stack([pos[:, c, UP].min(axis=1) for c in cols], axis=1), names


def penetration(pos: Array, sides: tuple[str, ...], floor: float, height: float) -> float:
    """Mean depth (% of height) of each foot's lowest point below the floor, over all frames."""
    low, _ = _lowest_per_foot(pos, sides)
    return float(np.maximum(floor - low, 0.0).mean() / height * 100.0) if low.size else 0.0


def floating(pos: Array, contacts: Contacts, height: float) -> float:
    """Mean height (% of height) of each planted foot's lowest point above the floor."""
    low, names = _lowest_per_foot(pos, contacts.sides)
    planted = np.stack([contacts.foot(side) for side in names], axis=1)
    if not planted.any():
        return 0.0
    return float(np.maximum(low - contacts.floor, 0.0)[planted].mean() / height * 100.0)


def tracking_error(pos: Array, goals: Array) -> tuple[float, float]:
    """Max and mean distance of end-effectors from goals, ignoring NaN goals.

    Parameters
    ----------
    pos : ndarray, shape (F, K, 3)
    goals : ndarray, shape (F, K, 3)
        NaN where an effector is unconstrained.
    """
    d = np.linalg.norm(pos - goals, axis=-1)
    d = d[np.isfinite(d)]
    return (float(d.max()), float(d.mean())) if d.size else (0.0, 0.0)


def pose_deviation(rot_result: Array, rot_source: Array) -> float:
    """Mean geodesic angle (degrees) between matched local rotations, shape (F, J, 4) each."""
    if rot_result.size == 0:
        return 0.0
    return float(np.degrees(quat.angle(rot_result, rot_source)).mean())


@dataclasses.dataclass(frozen=True)
class Matched:
    """Matched points of a result and of its source, what :func:`smoothness` and
    :func:`pop` compare.

    Attributes
    ----------
    pos_result, pos_source : ndarray, shape (F, K, 3)
        The same K points (by name or role) of each, each in its own unit.
    height_result, height_source : float
        The characters' heights (:func:`retarget.humanoid.roles.height`): lengths are compared
        in them.
    cuts : array_like of int
        Frames where the source starts a new piece (:func:`retarget.humanoid.cuts.find_cuts`;
        the step from ``f − 1`` to ``f`` is left out).
    """

    pos_result: Array
    pos_source: Array
    height_result: float
    height_source: float
    cuts: ArrayLike = ()


def smoothness(m: Matched) -> float:
    """Mean squared jerk of positions in heights, result over source (1 = no new high frequencies).

    The frame rate cancels in the ratio. A source
    without jerk (a still clip) has no ratio: inf, or NaN when the result has
    none either (:func:`evaluate` reports None and why). Third differences that
    span a frame of ``cuts`` (the source jumping to another pose,
    :func:`retarget.humanoid.cuts.find_cuts`) are left out of both sides: the jump would
    fill the source's side and hide what the result adds elsewhere.
    :func:`evaluate` compares the result with the source carried onto the
    result's body (:func:`source_on_result`), so a change of proportions alone
    scores 1.
    """
    if len(m.pos_source) < 4:
        return 1.0
    jr = np.diff(m.pos_result / m.height_result, 3, axis=0)
    js = np.diff(m.pos_source / m.height_source, 3, axis=0)
    keep = np.ones(len(js), bool)
    for c in np.asarray(m.cuts, dtype=np.intp):
        keep[max(0, c - 3) : max(0, c)] = False  # windows [t, t + 3] holding the step c-1 → c
    if not keep.any():
        return 1.0
    num, denom = float(np.mean(jr[keep] ** 2)), float(np.mean(js[keep] ** 2))
    if denom > 0:
        return num / denom
    return float("inf") if num > 0 else float("nan")


def source_on_result(source: Motion, result: Motion) -> Motion | None:
    """The source carried onto the result's body: its local rotations on the result's
    bones (by joint name), its root path at the result's size (scaled by the ratio of
    the heights), the result's per-frame offsets if it has any. What copying the
    angles gives, before any method acts; None when the result lacks a source joint
    (another hierarchy: :func:`evaluate` then compares with the source as it is).

    A longer bone per height swings its end farther, and jerks it more, for the same
    turn: measured against this, a change of proportions alone adds no pop and no jerk
    (``copy`` scores 0 and 1), and what remains is what the method did.
    """
    names = set(result.skeleton.names)
    if not all(n in names for n in source.skeleton.names):
        return None
    rotations = np.tile([1.0, 0.0, 0.0, 0.0], (source.num_frames, result.skeleton.num_joints, 1))
    rotations[:, result.skeleton.indices(source.skeleton.names)] = source.rotations
    ratio = height(result.skeleton) / height(source.skeleton)
    root = source.root_position * ratio
    return Motion(result.skeleton, root, rotations, source.fps, result.translations)


def pop(m: Matched) -> float:
    r"""Largest one-frame step of a point beyond the source's step at that frame (% of height).

    .. math:: \max_{t,k} \big(|p^r_{t+1,k} - p^r_{t,k}| / h_r - |p^s_{t+1,k} - p^s_{t,k}| / h_s\big)

    A single-frame jump of a knee or ankle that the source does not make (a limb's
    branch or swivel flipping, a footplant switched on in one frame, a filter
    smearing a cut) shows here; a result that moves as its source does scores
    about 0 (never below 0). :func:`evaluate` compares with the source carried onto
    the result's body (:func:`source_on_result`): a knee on a thigh 1.2 times as
    long per height swings 1.2 times as far for the same turn of the hip, and a
    fast source step (a kick at 30 frames/s) is no pop of a longer-legged result.

    The steps into the frames ``cuts`` are left out: there the source itself jumps
    to another pose (:func:`retarget.humanoid.cuts.find_cuts`: a leading T-pose frame, joined
    takes), the pieces on either side are retargeted apart, and how far a knee
    moves across the jump says nothing about the method.
    :func:`evaluate` matches the knees and ankles.
    """
    if len(m.pos_source) < 2 or m.pos_source.shape[1] == 0:
        return 0.0
    step_r = np.linalg.norm(np.diff(m.pos_result, axis=0), axis=-1) / m.height_result
    step_s = np.linalg.norm(np.diff(m.pos_source, axis=0), axis=-1) / m.height_source
    excess = step_r - step_s
    across = np.asarray(m.cuts, dtype=np.intp) - 1
    excess[across[(across >= 0) & (across < len(excess))]] = 0.0
    return float(max(0.0, float(excess.max())) * 100.0)


def joint_angles(rotations: Array, reference: Array | None = None) -> tuple[Array, Array]:
    """Each joint's angle about its main axis of motion (Choi & Ko 2000, Figure 10).

    Rotations are taken relative to each joint's mean rotation in
    ``reference`` (default: ``rotations`` itself); the axis is the principal
    direction of those relative rotation vectors, the flexion axis of a hip,
    knee or ankle; the angle is the twist about it, ``2 atan2(u·a, w)``, so a
    result compares with its source on the source's axes and offsets.

    Parameters
    ----------
    rotations : ndarray, shape (F, J, 4)
        Local rotations.
    reference : ndarray, shape (F', J, 4), optional

    Returns
    -------
    angles : ndarray, shape (F, J)
        Radians.
    axes : ndarray, shape (J, 3)
        The unit axes (local frames), signed so the reference's mean angle is ≥ 0.
    """
    ref = quat.canonical(np.asarray(rotations if reference is None else reference, np.float64))
    # each joint's mean rotation (sign-aligned quaternion average): angles are about it
    mean = ref.sum(axis=0)
    mean = mean / np.linalg.norm(mean, axis=-1, keepdims=True)

    def relative(q: Array) -> Array:
        return np.asarray(quat.multiply(quat.conjugate(mean), q))

    v = quat.log(relative(ref))
    # principal direction per joint: top eigenvector of the 3 × 3 scatter
    axes = np.linalg.eigh(np.einsum("fji,fjk->jik", v, v))[1][..., -1]

    def twist(q: Array) -> Array:
        r = relative(q)
        r = np.where(r[..., :1] < 0, -r, r)
        u = np.einsum("fji,ji->fj", r[..., 1:], axes)
        return np.asarray(2.0 * np.arctan2(u, r[..., 0]))

    sign = np.where(twist(ref).mean(axis=0) < 0, -1.0, 1.0)
    axes = axes * sign[:, None]
    return twist(np.asarray(rotations, np.float64)), axes


def evaluate(
    source: Motion,
    result: Motion,
    *,
    contacts: Contacts | None = None,
    goals: Mapping[str, Array] | None = None,
) -> dict[str, Any]:
    """Every measure for a source and its retargeted result.

    Parameters
    ----------
    source, result : Motion
        Same frame count; skeletons may differ (foot points matched by role: those
        the result lacks are left out; joints by name).
    contacts : Contacts, optional
        The source's; detected when not given.
    goals : mapping of point name to ndarray (F, 3), optional
        End-effector goals of the result (NaN rows where unconstrained), in the
        result's world axes.

    Every measure is defined Y up (:data:`retarget.humanoid.contacts.UP`): both motions are
    first turned upright, each from its own up axis (:func:`retarget.humanoid.world.upright`),
    so a Z-up copy of a pair measures as the pair does; ``contacts``, when given,
    are those of the upright source.

    Returns
    -------
    dict of str to float, None or str
        Keys of :data:`MEASURES`, floats, all finite. A ratio or comparison that
        does not exist for this pair (``skate_ratio`` when the source's feet do
        not skate, ``smoothness`` when the source has no jerk,
        ``pose_deviation_deg`` across hierarchies) is None, and ``<key>_note``
        says why in words (JSON has no NaN or infinity).
    """
    if source.num_frames != result.num_frames:
        raise ValueError(
            "source and result must have the same frames, "
            f"got {source.num_frames} and {result.num_frames}"
        )
    if goals and world.up_of(result) != "y":
        turn = world.axes_between(world.up_of(result), "y")
        goals = {name: quat.rotate(turn, np.asarray(g, np.float64)) for name, g in goals.items()}
    source, result = world.upright(source), world.upright(result)
    roles_s = find_roles(source.skeleton)
    roles_r = find_roles(result.skeleton)
    h_s = height(source.skeleton, roles_s)
    h_r = height(result.skeleton, roles_r)
    contacts = contacts or detect_contacts(source, roles=roles_s)
    by_point = {p: role for role, p in roles_s.items()}
    both = [k for k, p in enumerate(contacts.points) if by_point[p] in roles_r]
    if len(both) < len(contacts.points):  # foot points the result lacks (a toe) are left out
        contacts = dataclasses.replace(
            contacts,
            points=contacts.points[both],
            sides=tuple(contacts.sides[k] for k in both),
            mask=contacts.mask[:, both],
            clearance=contacts.clearance[both],
        )
    result_points = np.array([roles_r[by_point[p]] for p in contacts.points], dtype=np.intp)
    pos_s = motion_positions(source)
    pos_r = motion_positions(result)
    feet_s = pos_s[:, contacts.points]
    feet_r = pos_r[:, result_points]
    out: dict[str, Any] = {
        "frames": float(source.num_frames),
        "height_source": h_s,
        "height_result": h_r,
        "contact_share": float(contacts.mask.mean()) if contacts.mask.size else 0.0,
        "skate_source": skate(feet_s, contacts.mask, source.fps, h_s),
        "skate_result": skate(feet_r, contacts.mask, result.fps, h_r),
        "sliding_ratio_source": sliding_ratio(feet_s, contacts.mask, h_s),
        "sliding_ratio_result": sliding_ratio(feet_r, contacts.mask, h_r),
        "penetration_source": penetration(feet_s, contacts.sides, contacts.floor, h_s),
        "penetration_result": penetration(feet_r, contacts.sides, contacts.floor, h_r),
        "float_source": floating(feet_s, contacts, h_s),
        "float_result": floating(feet_r, contacts, h_r),
    }
    if out["skate_source"] > 0:
        out["skate_ratio"] = out["skate_result"] / out["skate_source"]
    else:
        out["skate_ratio"] = None
        out["skate_ratio_note"] = (
            "the source's feet do not skate (0 % of height/s): no ratio"
            if (contacts.mask[1:] & contacts.mask[:-1]).any()
            else "the source has no foot planted over two consecutive frames: no ratio"
        )
    # joints by name; pose deviation leaves out the legs (the constrained limbs)
    common = [n for n in source.skeleton.names if n in set(result.skeleton.names)]
    legs = {
        source.skeleton.point_names[roles_s[f"{side}_{r}"]]
        for side in ("left", "right")
        for r in LEG_ROLES
        if f"{side}_{r}" in roles_s
    }
    free = [n for n in common if n not in legs]
    js = source.skeleton.indices(free)
    jr = result.skeleton.indices(free)
    if common:
        out["pose_deviation_deg"] = pose_deviation(result.rotations[:, jr], source.rotations[:, js])
    else:  # other hierarchies
        out["pose_deviation_deg"] = None
        out["pose_deviation_deg_note"] = (
            "the skeletons share no joint name: their local rotations do not compare"
        )
    if common:
        ps = source.skeleton.indices(common)
        pr = result.skeleton.indices(common)
    else:  # other hierarchies: the points both have a role for
        shared = [r for r in roles_s.points if r in roles_r.points]
        ps = np.array([roles_s[r] for r in shared], dtype=np.intp)
        pr = np.array([roles_r[r] for r in shared], dtype=np.intp)
    cuts = find_cuts(source, roles=roles_s)
    carried = source_on_result(source, result)
    if carried is not None:  # the source on the result's body: the same points, by name
        pos_c, h_c = motion_positions(carried), h_r
        pc = carried.skeleton.indices([result.skeleton.point_names[p] for p in pr])
    else:
        pos_c, h_c, pc = pos_s, h_s, ps
    for key, ref, h_ref, at in (
        ("smoothness", pos_c[:, pc], h_c, cuts),
        ("smoothness_literal", pos_s[:, ps], h_s, cuts),
    ):
        jerk_ratio = smoothness(Matched(pos_r[:, pr], ref, h_r, h_ref, at))
        out[key] = jerk_ratio if np.isfinite(jerk_ratio) else None
        if out[key] is None:
            out[f"{key}_note"] = "the source's joints have no jerk (a still clip): no ratio"
    limbs = [
        f"{side}_{r}"
        for side in ("left", "right")
        for r in ("knee", "ankle")
        if f"{side}_{r}" in roles_s
    ]
    limbs = [r for r in limbs if r in roles_r.points]
    ks = np.array([roles_s[r] for r in limbs], dtype=np.intp)
    kr = np.array([roles_r[r] for r in limbs], dtype=np.intp)
    kc = kr if carried is not None else ks
    out["pop"] = pop(Matched(pos_r[:, kr], pos_c[:, kc], h_r, h_c, cuts))
    out["pop_literal"] = pop(Matched(pos_r[:, kr], pos_s[:, ks], h_r, h_s, cuts))
    out["travel_source"] = travel(pos_s[:, roles_s["hips"]], h_s, cuts)
    out["travel_result"] = travel(pos_r[:, roles_r["hips"]], h_r, cuts)
    if out["travel_source"] > 0:
        out["travel_ratio"] = out["travel_result"] / out["travel_source"]
    else:
        out["travel_ratio"] = None
        out["travel_ratio_note"] = "the source's hips do not move along the floor: no ratio"
    if goals:
        names = list(goals)
        g = np.stack([np.asarray(goals[n], dtype=np.float64) for n in names], axis=1)
        mx, mean = tracking_error(pos_r[:, result.skeleton.indices(names)], g)
        out["tracking_error_max"] = mx / h_r * 100.0
        out["tracking_error_mean"] = mean / h_r * 100.0
    return out
