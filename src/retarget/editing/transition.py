"""Transitions between two motions of one character (Lee & Shin 1999, §6).

"We seamlessly connect the motion data by fading one out while fading the
other in. Over the fading duration, Hermite interpolation and time warping
techniques are used to smoothly blend the joint parameters. Since joint
parameter blending may cause foot sliding, we enforce foot contact
constraints with the motion fitting method." The steps, for clips ``a`` and
``b`` and a blend of ``L`` frames:

1. **Align** ``b`` to ``a``: one rotation about the vertical (y) axis and one
   horizontal translation put ``b``'s first frame where ``a`` is at its
   ``L``-th frame from the end, facing the same way; heights are untouched.
2. **Time warping**: dynamic time warping (:func:`warp_path`) pairs the poses
   of ``a``'s last ``L`` frames with those of ``b``'s first ``L`` frames (pose
   distance: every joint relative to the root, in the body's heading frame),
   with a slope constraint (at most one frame of either clip per frame of the
   other: neither clip stalls). The path, smoothed, is followed at a speed that
   starts at ``a``'s and ends at ``b``'s (a cubic Hermite reparametrisation,
   :func:`_warp_times`), so playback speed is continuous at both seams.
3. **Blend** along the warped time with the Hermite weight
   ``w = 3x² − 2x³`` (smoothstep, C¹), ``x = (u + 1) / (L + 1)`` at window frame
   ``u``: rotations by slerp, the root position linearly. The output is ``a``
   before the window, the ``L`` blended frames, then ``b`` after its first ``L``
   frames: ``len(a) + len(b) − L`` frames. (Both windows are ``L`` frames long,
   so ``L`` is also the mean of the two warped lengths.)
4. **Contacts**: inside the window, a foot point is planted where the clip of
   larger blend weight (``a`` for ``w < ½``, ``b`` from ``w ≥ ½``) has it planted
   at its warped time (nearest frame); outside, each clip's own. Gaps of up to
   0.05 s touching the window are closed, so a foot that ``a`` lifts and ``b``
   has down stays down instead of hopping between two footprints. The
   footplants are enforced by hierarchical motion fitting
   (:func:`retarget.editing.fitting.fit_motion`, hybrid IK) on a stretch around
   the window only: the window, every footprint reaching into it, and a
   margin. The first and last frames of that stretch keep their pose, so the
   output equals ``a`` (and aligned ``b``) exactly outside it.

   Which contacts are pinned: outside the window, the strict plants of
   :mod:`retarget.methods.hierarchical` (a heel rising in place is real motion
   and stays free); inside it, every contact of the measures (DESIGN.md). A
   planted foot that moves in the window is not the clips' motion but the
   blend's: two footprints averaged. Pinning only the strict plants there
   leaves it sliding (measured on lafan_walk.bvh, walk into walk, 20 frames:
   window skate 56 → 38 % of height per second, against 0 when every
   contact is pinned).
"""

from __future__ import annotations

import dataclasses
import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array, runs
from ..core.errors import RetargetError
from ..core.kinematics import positions as motion_positions
from ..core.motion import Motion, concatenate
from ..core.result import Result
from ..core.skeleton import Skeleton
from ..humanoid.contacts import Contacts, detect_contacts
from ..humanoid.metrics import skate
from ..humanoid.roles import Roles, find_roles, height
from ..ik.hybrid import HybridSolver
from ..tasks import IKFrames, IKSolver
from .constraints import footplants
from .fitting import fit_motion

__all__ = ["transition", "warp_path"]


_Y = np.array([0.0, 1.0, 0.0])
# Plants enforced outside the window: stricter than the contacts of the measures, as in
# retarget.methods.hierarchical (a heel rising in place is not pinned).
_STRICT: dict[str, Any] = {
    "height_tol": 0.02,
    "speed_tol": 0.05,
    "release": 1.0,
    "vertical_speed": True,
}
_MAX_GAP = 0.05  # seconds: contact gaps this short, touching the window, are closed
_EASE = 0.2  # seconds over which a foot eases into and out of a plant
_HOLD = 4  # frames held unchanged at each inner end of the fitted stretch


# -- checks ---------------------------------------------------------------------------------------


def _check_same_skeleton(a: Skeleton, b: Skeleton) -> None:
    """Raise a RetargetError that says how two skeletons differ (joints, parents, offsets, unit)."""
    if a is b:
        return
    if a.names != b.names:
        only_a = [n for n in a.names if n not in set(b.names)]
        only_b = [n for n in b.names if n not in set(a.names)]
        if only_a or only_b:
            raise RetargetError(
                "the clips must share one skeleton: joints only in a: "
                f"{only_a[:8] or 'none'}; only in b: {only_b[:8] or 'none'}"
            )
        raise RetargetError(
            "the clips must share one skeleton: the same joints in another order "
            f"(a: {', '.join(a.names[:6])}…; b: {', '.join(b.names[:6])}…)"
        )
    if not np.array_equal(a.parents, b.parents):
        moved = [a.names[j] for j in np.flatnonzero(a.parents != b.parents)]
        raise RetargetError(f"the clips must share one skeleton: parents differ at {moved[:8]}")
    if a.unit != b.unit:
        raise RetargetError(
            f"the clips must share one skeleton: units differ ({a.unit!r} and {b.unit!r})"
        )
    scale = max(float(np.abs(a.offsets).max(initial=0.0)), 1.0)
    diff = np.linalg.norm(a.offsets - b.offsets, axis=-1)
    bad = np.flatnonzero(diff > 1e-6 * scale)
    if bad.size:
        names = [a.names[j] for j in bad]
        raise RetargetError(
            f"the clips must share one skeleton: offsets differ at {names[:8]} "
            f"(largest difference {diff.max():.4g} {a.unit})"
        )


def _check_blend(blend: object, na: int, nb: int) -> int:
    if isinstance(blend, bool) or not isinstance(blend, numbers.Integral):
        raise RetargetError(f"blend must be a whole number of frames, got {blend!r}")
    longest = min(na, nb)
    if not 1 <= int(blend) <= longest:
        raise RetargetError(
            f"blend must be between 1 and {longest} frames (the shorter clip: a has {na}, "
            f"b has {nb}), got {blend}"
        )
    return int(blend)


# -- alignment ------------------------------------------------------------------------------------


def _yaw_between(q_to: Array, q_from: Array) -> Array:
    """The rotation about y that brings orientation ``q_from`` closest to ``q_to``.

    ``R q_from`` is nearest ``q_to`` (largest ``|⟨R q_from, q_to⟩| = |⟨R, q_to q_from⁻¹⟩|``)
    for ``R`` the normalised projection of ``d = q_to q_from⁻¹`` onto ``(w, 0, y, 0)``:
    the heading difference, whatever the root's own axes (lafan's rest pose lies
    along +x).
    """
    d = quat.multiply(q_to, quat.conjugate(q_from))
    r = np.array([d[0], 0.0, d[2], 0.0])
    norm = np.linalg.norm(r)
    if norm < 1e-9:  # a half turn about a horizontal axis: no heading to match
        return np.array([1.0, 0.0, 0.0, 0.0])
    return r / norm


def _align(b: Motion, frame_a: int, a: Motion) -> tuple[Motion, Array, Array]:
    """``b`` turned about y and shifted horizontally: its frame 0 on ``a``'s ``frame_a``.

    Returns the aligned motion, the rotation (w, x, y, z) and the horizontal shift.
    """
    r = _yaw_between(a.rotations[frame_a, 0], b.rotations[0, 0])
    pivot = b.root_position[0] * [1.0, 0.0, 1.0]
    target = a.root_position[frame_a] * [1.0, 0.0, 1.0]
    root = quat.rotate(r, b.root_position - pivot) + target  # y unchanged: r turns about y
    rot = b.rotations.copy()
    rot[:, 0] = quat.multiply(r, b.rotations[:, 0])
    return b.replace(root_position=root, rotations=rot), r, target - pivot


# -- time warping ---------------------------------------------------------------------------------


def _heading_features(motion: Motion, roles: Roles, pos: Array) -> Array:
    """Every point relative to the root's floor projection, in the body's heading frame.

    The heading is the horizontal direction perpendicular to the hip line
    (``(left hip − right hip) × up``), so the features ignore where the body
    stands and which way it faces. Shape (F, P · 3), in heights.
    """
    across = pos[:, roles["left_hip"]] - pos[:, roles["right_hip"]]
    facing = np.cross(across, _Y)
    yaw = np.arctan2(facing[:, 0], facing[:, 2])
    undo = quat.exp(-yaw[:, None] * _Y)  # (F, 4): rotation by -yaw about y
    local = pos - motion.root_position[:, None] * [1.0, 0.0, 1.0]
    local = quat.rotate(undo[:, None], local)
    return local.reshape(len(pos), -1) / height(motion.skeleton, roles)


def warp_path(cost: Array) -> tuple[NDArray[np.intp], float]:
    """Dynamic time warping with a slope constraint.

    The cheapest monotone path from cell ``(0, 0)`` to ``(n − 1, m − 1)`` in
    steps ``(1, 1)``, ``(1, 0)`` and ``(0, 1)``, never two ``(1, 0)`` or two
    ``(0, 1)`` steps in a row: the local slope stays within [½, 2], so neither
    sequence stalls for more than one frame. A diagonal step counts its cell
    twice (the symmetric form of Sakoe & Chiba 1978), so the path is not
    favoured for cutting corners.

    Parameters
    ----------
    cost : array_like, shape (n, m)
        Distance between frame ``i`` of the first sequence and ``j`` of the second.

    Returns
    -------
    path : ndarray of int, shape (K, 2)
        The cells ``(i, j)`` of the path, in order.
    total : float
        Its cost.

    Raises
    ------
    ValueError
        When no path fits the slope constraint (``max(n, m) > 2 min(n, m)``).

    Examples
    --------
    >>> path, _ = warp_path(np.abs(np.subtract.outer([0, 1, 2, 3], [0, 2, 3])))
    >>> path.tolist()
    [[0, 0], [1, 0], [2, 1], [3, 2]]
    """
    c = np.asarray(cost, dtype=np.float64)
    if c.ndim != 2 or not c.size:
        raise ValueError(f"Expected a non-empty cost matrix of shape (n, m), got {c.shape}")
    n, m = c.shape
    inf = np.inf
    # D[s, i, j]: cheapest path to (i, j) whose last step was s (0 diagonal, 1 along i,
    # 2 along j); rows depend only on the previous row, except the (0, 1) steps, which
    # depend on the same row's states 0 and 1: each row is two vector operations.
    d = np.full((3, n, m), inf)
    d[0, 0, 0] = c[0, 0]
    for i in range(n):
        if i > 0:
            d[0, i, 1:] = 2.0 * c[i, 1:] + d[:, i - 1, :-1].min(axis=0)
            d[1, i] = c[i] + np.minimum(d[0, i - 1], d[2, i - 1])
        d[2, i, 1:] = c[i, 1:] + np.minimum(d[0, i, :-1], d[1, i, :-1])
    total = float(d[:, n - 1, m - 1].min())
    if not np.isfinite(total):
        raise ValueError(f"No path from (0, 0) to ({n - 1}, {m - 1}) keeps the slope in [1/2, 2]")
    i, j, s = n - 1, m - 1, int(np.argmin(d[:, n - 1, m - 1]))
    path = [(i, j)]
    while (i, j) != (0, 0):
        if s == 0:
            i, j = i - 1, j - 1
            s = int(np.argmin(d[:, i, j]))
        elif s == 1:
            i -= 1
            s = 0 if d[0, i, j] <= d[2, i, j] else 2
        else:
            j -= 1
            s = 0 if d[0, i, j] <= d[1, i, j] else 1
        path.append((i, j))
    return np.array(path[::-1], dtype=np.intp), total


def _smooth(values: Array, passes: int) -> Array:
    """``passes`` rounds of the (1, 2, 1)/4 filter on the inner samples; ends fixed.

    A positive filter keeps a non-decreasing sequence non-decreasing.
    """
    v = values.copy()
    for _ in range(passes if len(v) > 2 else 0):
        v[1:-1] = 0.25 * v[:-2] + 0.5 * v[1:-1] + 0.25 * v[2:]
    return v


def _hermite(p0: float, p1: float, t0: float, t1: float, s: Array) -> Array:
    """Cubic Hermite curve from ``p0`` to ``p1`` with end tangents ``t0``, ``t1`` (per unit s)."""
    s2, s3 = s * s, s * s * s
    return (
        (2 * s3 - 3 * s2 + 1) * p0
        + (s3 - 2 * s2 + s) * t0
        + (-2 * s3 + 3 * s2) * p1
        + (s3 - s2) * t1
    )


def _warp_times(path: NDArray[np.intp], length: int) -> tuple[Array, Array]:
    """Frame times of the two windows at each of the ``length`` output frames.

    The path is read as a function of its mean time ``m = (i + j) / 2`` (which
    grows along it), sampled at ``m = 0 … L − 1`` and smoothed, giving ``t_a(m)``
    and ``t_b(m) = 2m − t_a(m)``. The output frame ``u`` reads both at ``m(u)``, a
    cubic Hermite from 0 to ``L − 1`` whose end slopes ``1 / t_a'(0)`` and
    ``1 / t_b'(L − 1)`` make ``a`` play at its own speed at the start and ``b`` at
    its own at the end. The slope constraint keeps those in [½, 2], where the
    Hermite is monotone (Fritsch & Carlson 1980: α² + β² ≤ 9).
    """
    if length < 2:
        return np.zeros(length), np.zeros(length)
    mean = path.sum(axis=1) / 2.0
    grid = np.arange(length, dtype=np.float64)
    t_a = _smooth(np.interp(grid, mean, path[:, 0].astype(np.float64)), passes=4)
    t_b = 2.0 * grid - t_a
    slope0 = float(np.clip(1.0 / max(t_a[1] - t_a[0], 1e-9), 0.5, 2.0))
    slope1 = float(np.clip(1.0 / max(t_b[-1] - t_b[-2], 1e-9), 0.5, 2.0))
    s = grid / (length - 1)
    span = length - 1.0
    m = _hermite(0.0, span, slope0 * span, slope1 * span, s)
    m = np.clip(np.maximum.accumulate(m), 0.0, span)
    ta = np.interp(m, grid, t_a)
    return ta, 2.0 * m - ta


# -- sampling and blending ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Clip:
    """Arrays of a motion ready for sampling at fractional frames (rotations unrolled)."""

    root: Array
    rotations: Array
    translations: Array

    @classmethod
    def of(cls, motion: Motion) -> _Clip:
        sk = motion.skeleton
        trans = (
            motion.translations
            if motion.translations is not None
            else np.broadcast_to(sk.offsets, (motion.num_frames, *sk.offsets.shape))
        )
        return cls(motion.root_position, quat.unroll(motion.rotations, axis=0), np.asarray(trans))

    def at(self, t: Array) -> tuple[Array, Array, Array]:
        """Root (N, 3), rotations (N, J, 4), translations (N, J, 3) at frame times ``t``."""
        last = len(self.root) - 1
        i0 = np.clip(np.floor(t).astype(np.intp), 0, last)
        i1 = np.minimum(i0 + 1, last)
        f = np.clip(t - i0, 0.0, 1.0)
        lerp = f[:, None]
        root = (1 - lerp) * self.root[i0] + lerp * self.root[i1]
        rot = quat.slerp(self.rotations[i0], self.rotations[i1], f[:, None])
        trans = (1 - lerp[..., None]) * self.translations[i0] + lerp[..., None] * self.translations[
            i1
        ]
        return root, rot, trans


def _smoothstep(x: ArrayLike) -> Array:
    """The cubic Hermite weight ``3x² − 2x³``: 0 → 1 with zero slope at both ends (C¹)."""
    x = np.asarray(x, dtype=np.float64)
    return x * x * (3.0 - 2.0 * x)


# -- contacts -------------------------------------------------------------------------------------


def _combine(
    ca: Contacts, cb: Contacts, w0: int, t_a: Array, t_b: Array, weight: Array
) -> NDArray[np.bool_]:
    """Contact mask of the output, shape (len(a) + len(b) − L, K): ``a``'s before the
    window, ``b``'s after it, and inside it the mask of the clip with the larger
    blend weight at its warped time (nearest frame)."""
    length = len(weight)
    frame_a = np.clip(np.rint(w0 + t_a).astype(np.intp), 0, len(ca.mask) - 1)
    frame_b = np.clip(np.rint(t_b).astype(np.intp), 0, len(cb.mask) - 1)
    inside = np.where((weight < 0.5)[:, None], ca.mask[frame_a], cb.mask[frame_b])
    return np.concatenate([ca.mask[:w0], inside, cb.mask[length:]])


def _close_gaps(mask: NDArray[np.bool_], window: slice, max_gap: int) -> NDArray[np.bool_]:
    """Close each point's gaps of at most ``max_gap`` frames that touch ``window``.

    Where ``a`` lifts a foot that ``b`` has down (the two clips' steps do not
    quite line up), the foot stays down instead of hopping between two
    footprints within a frame or two.
    """
    out = mask.copy()
    for k in range(out.shape[1]):
        for start, stop in runs(~out[:, k]):
            inner = 0 < start and stop < len(out)
            if inner and stop - start <= max_gap and start < window.stop and stop > window.start:
                out[start:stop, k] = True
    return out


def _contacts(like: Contacts, other: Contacts, mask: NDArray[np.bool_]) -> Contacts:
    """Contacts of the output with ``mask``; floor and clearances the mean of both clips'."""
    return Contacts(
        like.points.copy(),
        like.sides,
        mask,
        0.5 * (like.floor + other.floor),
        0.5 * (like.clearance + other.clearance),
        like.height,
    )


def _skate(pos: Array, contacts: Contacts, frames: slice, fps: float) -> float:
    return skate(pos[frames][:, contacts.points], contacts.mask[frames], fps, contacts.height)


# -- fitting on a stretch -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _HeldEnds(IKSolver):
    """An IK solver that answers the ``held`` frames with the given poses, the rest with ``solver``.

    Each level's displacement sample at a held frame is then "back to the held
    pose", so the fitted displacement map fades to zero there and the exact
    pass puts those frames back exactly.
    """

    solver: IKSolver
    held: NDArray[np.bool_]
    root_position: Array
    rotations: Array

    def solve(self, q: IKFrames) -> tuple[Array, Array, NDArray[np.bool_]]:
        held = self.held[q.frames]
        root, rot = q.root_position.copy(), q.rotations.copy()
        determined = np.ones((len(q.frames), q.skeleton.num_joints + 1), dtype=bool)
        root[held], rot[held] = self.root_position[q.frames[held]], self.rotations[q.frames[held]]
        free = ~held
        if free.any():
            root[free], rot[free], determined[free] = self.solver.solve(q.take(free))
        return root, rot, determined


def _fit_stretch(
    motion: Motion,
    plants: Contacts,
    roles: Roles,
    start: int,
    stop: int,
    ease: int,
    spacings: Sequence[float],
) -> tuple[Motion, dict[str, Any], dict[int, Array]]:
    """Footplants enforced on frames ``[start, stop)`` of ``motion`` by hierarchical fitting,
    the first and last few frames of the stretch held as they are (unless the stretch
    starts or ends the motion); the fitted stretch spliced back in."""
    segment = motion[start:stop]
    n = segment.num_frames
    hold = max(1, min(_HOLD, n // 4))
    held = np.zeros(n, dtype=bool)
    if start > 0:
        held[:hold] = True
    if stop < motion.num_frames:
        held[n - hold :] = True
    mask = plants.mask[start:stop].copy()
    mask[held] = False  # held frames keep their pose: no footplant there
    local = dataclasses.replace(plants, mask=mask)
    constraints = footplants(
        segment,
        segment,
        local,
        roles,
        roles,
        ratio=1.0,
        clearance=local.clearance,
        surface=local.floor,
        blend=ease,
    )
    goals = dict(constraints.positions)
    # the held frames need a goal to be visited by the fitting: the root where it is
    root_goal = np.full((n, 3), np.nan)
    root_goal[held] = segment.root_position[held]
    constraints = constraints.with_goals({0: root_goal})
    if np.isfinite(motion.skeleton.limits).any():
        constraints = constraints.with_goals(joint_limits=True)
    sk = motion.skeleton
    solver = _HeldEnds(
        HybridSolver.for_skeleton(sk, roles, motion=segment, max_iterations=30, root_spacing=0.5),
        held,
        segment.root_position,
        segment.rotations,
    )
    fitted = fit_motion(
        segment,
        constraints,
        solver,
        spacings=spacings,
        height=plants.height,
        exact=True,
        root_spacing=8.0,
    )
    pieces = [motion[:start], fitted.motion, motion[stop:]]
    out = concatenate([p for p in pieces if p.num_frames])
    report = {
        "frames": [int(start), int(stop)],
        "held_frames": [int(f) + start for f in np.flatnonzero(held)],
        "spacings": [float(s) for s in spacings],
        "levels": [lv.as_dict() for lv in fitted.levels],
        "ik_solves": int(sum(lv.frames_solved for lv in fitted.levels)),
    }
    full = {}
    for p, g in goals.items():
        whole = np.full((motion.num_frames, 3), np.nan)
        whole[start:stop] = g
        full[p] = whole
    return out, report, full


# -- the transition -------------------------------------------------------------------------------


def transition(
    a: Motion,
    b: Motion,
    blend: int,
    *,
    warp: bool = True,
    fit: bool = True,
    spacings: Sequence[float] = (16, 8, 4, 2),
    margin: int | None = None,
) -> Result:
    """``a`` followed by ``b``, faded over ``blend`` frames (Lee & Shin 1999, §6).

    Parameters
    ----------
    a, b : Motion
        Clips of one humanoid skeleton (same joint names, parents and
        offsets). ``b`` is resampled to ``a``'s frame rate when they differ.
    blend : int
        Frames of the fade: ``a``'s last ``blend`` frames overlap ``b``'s first
        ``blend``; between 1 and the shorter clip's length.
    warp : bool
        Pair similar poses of the two windows by dynamic time warping
        (:func:`warp_path`); otherwise frame ``u`` of one window meets frame
        ``u`` of the other.
    fit : bool
        Enforce the combined footplants by hierarchical motion fitting.
    spacings : sequence of float
        Knot spacings of the fitting levels, coarse to fine (frames).
    margin : int, optional
        Frames fitted beyond the window and the footprints reaching into it, on
        each side (default: twice the coarsest knot spacing); beyond them the
        output is ``a`` (aligned ``b``) unchanged. ``report["fit"]["frames"]``
        says which frames were fitted.

    Returns
    -------
    Result
        ``motion``: ``len(a) + len(b) − blend`` frames at ``a``'s rate: ``a``'s
        first ``len(a) − blend`` frames, the blended window, then ``b``'s frames
        from ``blend`` on, turned and shifted so ``b`` starts where and facing
        the way ``a`` is at the window's first frame. ``goals``: the footplant
        goals of the fitted stretch (NaN elsewhere). ``report``: the window, the
        alignment, the warp path, contacts, per-level fitting report, skate (%
        of height per second) of ``a``, ``b``, and of the window before and after
        fitting over the combined contacts, seconds.

    Raises
    ------
    RetargetError
        When the skeletons differ (the message says how), the blend length is
        out of range, or the skeleton is not a humanoid (contacts need feet).

    Notes
    -----
    Contacts inside the window: the foot points in contact in the clip whose
    blend weight is larger, read at that clip's warped time. The skate reported
    is measured over these combined contacts (those of DESIGN.md). Pinned are,
    inside the window, the same contacts with gaps of up to 0.05 s closed;
    outside it, the stricter plants of
    :func:`retarget.methods.hierarchical.hierarchical_retarget` (within 2 % of
    height of the clearance, slower than 5 % of height per second in 3-D).
    The window's frames are ``[len(a) − blend, len(a))`` of both ``a`` and the
    output, and ``[0, blend)`` of ``b``.
    """
    t0 = time.perf_counter()
    _check_same_skeleton(a.skeleton, b.skeleton)
    if len(spacings) == 0 or min(spacings) <= 0:
        raise RetargetError(f"spacings must be positive knot spacings (frames), got {spacings}")
    resampled = None
    if not np.isclose(a.fps, b.fps):
        resampled = {"from_fps": b.fps, "to_fps": a.fps, "frames_before": b.num_frames}
        b = b.resample(a.fps)
    sk = a.skeleton
    b = b.replace(skeleton=sk)
    length = _check_blend(blend, a.num_frames, b.num_frames)
    roles = find_roles(sk)
    w0 = a.num_frames - length

    b_al, turn, shift = _align(b, w0, a)
    pos_a, pos_b = motion_positions(a), motion_positions(b_al)

    # time warping over the two windows
    path = np.stack([np.arange(length), np.arange(length)], axis=1)
    cost = 0.0
    if warp and length > 1:
        fa = _heading_features(a[w0:], roles, pos_a[w0:])
        fb = _heading_features(b_al[:length], roles, pos_b[:length])
        dist = ((fa[:, None, :] - fb[None, :, :]) ** 2).sum(axis=-1)
        path, cost = warp_path(dist)
        t_a, t_b = _warp_times(path, length)
    else:
        t_a = t_b = np.arange(length, dtype=np.float64)
    weight = _smoothstep((np.arange(length) + 1.0) / (length + 1.0))

    # the blended window
    root_a, rot_a, tr_a = _Clip.of(a[w0:]).at(t_a)
    root_b, rot_b, tr_b = _Clip.of(b_al[:length]).at(t_b)
    w = weight[:, None]
    translations = None
    if a.translations is not None or b.translations is not None:
        translations = (1 - w[..., None]) * tr_a + w[..., None] * tr_b
    window = Motion(
        sk,
        (1 - w) * root_a + w * root_b,
        quat.slerp(rot_a, rot_b, w),
        a.fps,
        translations,
    )
    pieces = [a[:w0], window, b_al[length:]]
    out = concatenate([p for p in pieces if p.num_frames])

    # contacts: measured (DESIGN.md) and enforced, combined across the window
    measure_a = detect_contacts(a, roles=roles)
    measure_b = detect_contacts(b_al, roles=roles)
    plants_a = detect_contacts(a, roles=roles, floor=measure_a.floor, **_STRICT)
    plants_b = detect_contacts(b_al, roles=roles, floor=measure_b.floor, **_STRICT)
    span = slice(w0, w0 + length)
    measured = _contacts(measure_a, measure_b, _combine(measure_a, measure_b, w0, t_a, t_b, weight))
    plant_mask = _combine(plants_a, plants_b, w0, t_a, t_b, weight)
    plant_mask[span] = measured.mask[span]
    plant_mask = _close_gaps(plant_mask, span, round(_MAX_GAP * a.fps))
    plants = _contacts(plants_a, plants_b, plant_mask)

    pos_out = motion_positions(out)
    skates: dict[str, float] = {
        "a": _skate(pos_a, measure_a, slice(None), a.fps),
        "b": _skate(pos_b, measure_b, slice(None), a.fps),
        "window_before": _skate(pos_out, measured, span, a.fps),
    }
    fit_report: dict[str, Any] = {"enabled": fit}
    goals: Mapping[int, Array] = {}
    if fit:
        ease = max(1, round(_EASE * a.fps))
        pad = int(2 * max(spacings)) if margin is None else int(margin)
        first, last = span.start, span.stop
        for side in ("left", "right"):  # footprints that reach into the window, whole
            for run_start, run_stop in runs(plants.foot(side)):
                if run_start < span.stop and run_stop > span.start:
                    first, last = min(first, run_start - ease), max(last, run_stop + ease)
        start, stop = int(max(0, first - pad)), int(min(out.num_frames, last + pad))
        out, details, goals = _fit_stretch(out, plants, roles, start, stop, ease, spacings)
        fit_report.update(details)
        pos_fit = motion_positions(out)
        fitted = slice(start, stop)
        skates["window_after"] = _skate(pos_fit, measured, span, a.fps)
        skates["fitted_before"] = _skate(pos_out, measured, fitted, a.fps)
        skates["fitted_after"] = _skate(pos_fit, measured, fitted, a.fps)
    seconds = time.perf_counter() - t0
    yaw = float(np.degrees(2.0 * np.arctan2(turn[2], turn[0])))
    report: dict[str, Any] = {
        "method": "transition",
        "frames": {"a": a.num_frames, "b": b.num_frames, "output": out.num_frames},
        "fps": a.fps,
        "resampled_b": resampled,
        "blend": length,
        "window": [w0, w0 + length],
        "alignment": {
            "yaw_deg": (yaw + 180.0) % 360.0 - 180.0,
            "shift": [float(shift[0]), float(shift[2])],
        },
        "warp": {
            "enabled": bool(warp and length > 1),
            "path_length": len(path),
            "path": path.tolist(),
            "cost": float(cost),
            "a_times": t_a.tolist(),
            "b_times": t_b.tolist(),
        },
        "weight": "smoothstep 3x^2 - 2x^3, x = (u + 1) / (blend + 1)",
        "contacts": {
            "floor_a": measure_a.floor,
            "floor_b": measure_b.floor,
            "window": "planted where the clip with the larger blend weight is planted",
            "planted_share_window": float(plants.mask[span].mean()) if length else 0.0,
        },
        "fit": fit_report,
        "skate": skates,
        "seconds": seconds,
    }
    names = sk.point_names
    return Result(out, report, {names[p]: g for p, g in goals.items()})
