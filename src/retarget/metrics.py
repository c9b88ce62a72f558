"""The measures of "good" (DESIGN.md, "What good means").

Lengths are reported as a percentage of the character's height (the
bone-path length from the head to an ankle, :func:`retarget.roles.height`),
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
from itertools import pairwise
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import quat, world
from .contacts import UP, Contacts, detect_contacts
from .cuts import find_cuts
from .kinematics import positions as motion_positions
from .motion import Motion
from .roles import LEG_ROLES, find_roles, height
from .skeleton import Skeleton

__all__ = [
    "MEASURES",
    "evaluate",
    "floating",
    "joint_angles",
    "limb_scale",
    "penetration",
    "pop",
    "pose_deviation",
    "skate",
    "sliding_ratio",
    "smoothness",
    "tracking_error",
]

Array = NDArray[np.float64]

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
    "smoothness": "mean squared jerk of joint positions (in heights), result over source "
    "(joints by name, else the points with a role in both; None, with smoothness_note, when "
    "the source has no jerk)",
    "pop": "largest one-frame step of a knee or ankle beyond the source's step at that "
    "frame in the result's proportions, % height, the source's cuts left out",
    "pop_literal": "the same with the source's step as it is (not in the result's proportions) "
    "and at the source's cuts too",
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


def smoothness(
    pos_result: Array, pos_source: Array, height_result: float, height_source: float
) -> float:
    """Mean squared jerk of positions in heights, result over source (1 = no new high frequencies).

    The frame rate cancels in the ratio; positions shape (F, P, 3). A source
    without jerk (a still clip) has no ratio: inf, or NaN when the result has
    none either (:func:`evaluate` reports None and why).
    """
    if len(pos_source) < 4:
        return 1.0
    jr = np.diff(pos_result / height_result, 3, axis=0)
    js = np.diff(pos_source / height_source, 3, axis=0)
    num, denom = float(np.mean(jr**2)), float(np.mean(js**2))
    if denom > 0:
        return num / denom
    return float("inf") if num > 0 else float("nan")


def pop(
    pos_result: Array,
    pos_source: Array,
    height_result: float,
    height_source: float,
    scale: ArrayLike = 1.0,
    cuts: ArrayLike = (),
) -> float:
    r"""Largest one-frame step of a point beyond the source's step at that frame (% of height).

    .. math:: \max_{t,k} \big(|p^r_{t+1,k} - p^r_{t,k}| / h_r
              - \rho_k |p^s_{t+1,k} - p^s_{t,k}| / h_s\big)

    A single-frame jump of a knee or ankle that the source does not make (a limb's
    branch or swivel flipping, a footplant switched on in one frame, a filter
    smearing a cut) shows here; a result that moves as its source does scores
    about 0 (never below 0).

    ``ρ_k`` takes the source's step into the result's proportions: a character
    whose thigh is 1.2 heights of the source's per height swings its knee 1.2
    times as far for the same turn of the hip, so a fast source step (a leading
    T-pose frame, a kick at 30 fps) is not a pop of a longer-legged result.
    :func:`evaluate` passes ``max(1, ·)`` of the largest per-height length ratio of
    the bones from the hips to the point; ``ρ = 1`` is the literal measure.

    The steps into the frames ``cuts`` are left out: there the source itself jumps
    to another pose (:func:`retarget.cuts.find_cuts`: a leading T-pose frame, joined
    takes), the pieces on either side are retargeted apart, and how far a knee
    moves across the jump says nothing about the method.

    Parameters
    ----------
    pos_result, pos_source : ndarray, shape (F, K, 3)
        Matched points (knees and ankles), each in its own unit.
    height_result, height_source : float
    scale : array_like, shape (K,) or scalar
        ``ρ_k`` (≥ 1 in :func:`evaluate`).
    cuts : array_like of int
        Frames where the source starts a new piece (the step from ``f − 1`` to ``f``
        is left out).
    """
    if len(pos_source) < 2 or pos_source.shape[1] == 0:
        return 0.0
    step_r = np.linalg.norm(np.diff(pos_result, axis=0), axis=-1) / height_result
    step_s = np.linalg.norm(np.diff(pos_source, axis=0), axis=-1) / height_source
    excess = step_r - np.asarray(scale, dtype=np.float64) * step_s
    across = np.asarray(cuts, dtype=np.intp) - 1
    excess[across[(across >= 0) & (across < len(excess))]] = 0.0
    return float(max(0.0, float(excess.max())) * 100.0)


def limb_scale(
    source: Skeleton,
    result: Skeleton,
    roles_source: Mapping[str, int],
    roles_result: Mapping[str, int],
    role: str,
    height_source: float,
    height_result: float,
) -> float:
    """``ρ`` of :func:`pop` for a leg point: ``max(1, ·)`` of the per-height length ratio,
    result over source, of the leg's role segments from the hips down to ``role``
    (hips → hip → knee → ankle), each the bone-path length between the two roles."""
    side = role.partition("_")[0]
    chain = ["hips", f"{side}_hip", f"{side}_knee", f"{side}_ankle"]
    chain = chain[: chain.index(role) + 1]
    ratio = 1.0
    for a, b in pairwise(chain):
        if not all(r in roles_source.keys() and r in roles_result.keys() for r in (a, b)):
            continue
        ls = source.path_length(roles_source[a], roles_source[b]) / height_source
        lr = result.path_length(roles_result[a], roles_result[b]) / height_result
        if ls > 0.0 and lr > 0.0:
            ratio = max(ratio, lr / ls)
    return ratio


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

    Every measure is defined Y up (:data:`retarget.contacts.UP`): both motions are
    first turned upright, each from its own up axis (:func:`retarget.world.upright`),
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
    jerk_ratio = smoothness(pos_r[:, pr], pos_s[:, ps], h_r, h_s)
    out["smoothness"] = jerk_ratio if np.isfinite(jerk_ratio) else None
    if out["smoothness"] is None:
        out["smoothness_note"] = "the source's joints have no jerk (a still clip): no ratio"
    limbs = [
        f"{side}_{r}"
        for side in ("left", "right")
        for r in ("knee", "ankle")
        if f"{side}_{r}" in roles_s
    ]
    limbs = [r for r in limbs if r in roles_r.points]
    ks = np.array([roles_s[r] for r in limbs], dtype=np.intp)
    kr = np.array([roles_r[r] for r in limbs], dtype=np.intp)
    rho = [
        limb_scale(source.skeleton, result.skeleton, roles_s, roles_r, r, h_s, h_r) for r in limbs
    ]
    cuts = find_cuts(source, roles=roles_s)
    out["pop"] = pop(pos_r[:, kr], pos_s[:, ks], h_r, h_s, rho, cuts)
    out["pop_literal"] = pop(pos_r[:, kr], pos_s[:, ks], h_r, h_s)
    if goals:
        names = list(goals)
        g = np.stack([np.asarray(goals[n], dtype=np.float64) for n in names], axis=1)
        mx, mean = tracking_error(pos_r[:, result.skeleton.indices(names)], g)
        out["tracking_error_max"] = mx / h_r * 100.0
        out["tracking_error_mean"] = mean / h_r * 100.0
    return out
