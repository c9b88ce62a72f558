"""Hierarchical motion fitting (Lee & Shin 1999, Algorithm 1, §4.3-4.5).

Given a motion ``m_0`` and constraints, level by level (knot spacings coarse
to fine, e.g. 16, 8, 4, 2 frames):

1. at every constrained frame ``t_i``, an IK solver finds the pose that meets
   the frame's constraints and deviates least from ``m_{k−1}(t_i)`` (eq. 4);
2. its displacement ``d_i = m^i ⊖ m_{k−1}(t_i)`` is a sample for the level's
   B-spline (eq. 2), fitted over all frames;
3. ``m_k = m_{k−1} ⊕ d_k`` (eq. 3): levels compose by ⊕, never by summing
   rotation vectors.

A frame is constrained when it has a goal, when a ground point dips below
the ground (non-penetration), or when two pieces of the body come nearer than
their margin (``Constraints.apart``: a robot's links). Optionally, after the last level, each
constraint is enforced exactly by the IK solver at its frame (§4.4), and
joint limits are enforced on every frame by clamping the channel angles.

The initial guess (§4.5) shifts the root by the average change of geometry
under the contacts (each footprint's height change), smoothed over frames by a
multilevel B-spline, so a stance foot pulled up a hill does not force a squat.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..core.arrays import Array, runs
from ..core.dofs import clamp_to_limits, limit_violation
from ..core.kinematics import Pose
from ..core.motion import Motion, ominus
from ..core.skeleton import Skeleton
from ..tasks import Constraints, IKFrames, IKSolver
from .mba import fit_bspline, multilevel_fit

__all__ = ["FitResult", "LevelReport", "fit_motion", "root_guess"]


@dataclass(frozen=True)
class LevelReport:
    """What one level (or the exact pass) did; lengths in % of the character's height."""

    level: int
    spacing: float
    frames_solved: int
    max_error: float
    mean_error: float
    max_penetration: float
    seconds: float

    def as_dict(self) -> dict[str, float]:
        """JSON-friendly form."""
        return {
            k: (float(v) if isinstance(v, (float, np.floating)) else v)
            for k, v in self.__dict__.items()
        }


@dataclass(frozen=True)
class FitResult:
    """The fitted motion and one report per level (the exact pass last, level = -1)."""

    motion: Motion
    levels: tuple[LevelReport, ...]


def _pose(motion: Motion) -> Pose:
    return Pose.of(motion.skeleton, motion.root_position, motion.rotations, motion.translations)


def _asked(
    motion: Motion, frames: NDArray[np.intp], constraints: Constraints, spacing: float | None
) -> IKFrames:
    """The solver's question at ``frames`` of ``motion`` (its per-frame offsets, if any)."""
    return IKFrames(
        motion.skeleton,
        motion.root_position[frames],
        motion.rotations[frames],
        frames,
        constraints,
        spacing,
        None if motion.translations is None else motion.translations[frames],
    )


def _errors(
    constraints: Constraints, pose: Pose, height: float | Array
) -> tuple[float, float, float]:
    """Max and mean goal error and deepest penetration, in % of each frame's ``height``."""
    scale = 100.0 / np.broadcast_to(np.asarray(height, dtype=np.float64), (pose.batch_shape[0],))
    err = constraints.position_errors(pose) * scale[:, None]
    err = err[np.isfinite(err)]
    pen = 0.0
    if constraints.ground is not None:
        from ..humanoid.contacts import UP

        gap = pose.positions[..., constraints.ground.points, UP] - constraints.ground.lowest(
            pose.positions
        )
        pen = float(max(0.0, -(gap * scale[:, None]).min())) if gap.size else 0.0
    if err.size == 0:
        return 0.0, 0.0, pen
    return float(err.max()), float(err.mean()), pen


#: The smoothed exact pass may leave a ground point this share of height under the
#: ground (:func:`_smoothed_exact`); deeper, the point's chain is held closer to the
#: exact pose.
_GROUND_TOLERANCE = 1e-4
#: Each round, the weight of the exact pose grows this many times at the frames and
#: joints of a point still under the ground (:func:`_smoothed_exact`) ...
_GROUND_GAIN = 10.0
#: ... for at most this many rounds (10⁸: as firm as a footplant).
_GROUND_ROUNDS = 8
#: The weight of a correction that must be met exactly (a footplant's chain).
_HARD = 1e8


def _violated(constraints: Constraints, pose: Pose) -> NDArray[np.bool_]:
    """Frames an inequality constrains (F,): a ground point under the ground, a pair of
    the body's pieces nearer than its margin."""
    return constraints.violated_ground(pose) | constraints.violated_apart(pose)


def _pieces(num_frames: int, cuts: Sequence[int]) -> list[slice]:
    from ..humanoid.cuts import segments

    return segments(num_frames, list(cuts))


def _fit_pieces(
    times: Array,
    values: Array,
    spacing: float,
    num_frames: int,
    weights: Array,
    pieces: Sequence[slice],
) -> Array:
    """One B-spline level (:func:`retarget.editing.mba.fit_bspline`) fitted to each
    piece of the clip on its own and evaluated at every frame, shape (F, d): a
    displacement never reaches across a cut (:mod:`retarget.humanoid.cuts`)."""
    out = np.zeros((num_frames, values.shape[1]))
    for piece in pieces:
        start, stop = int(piece.start), int(piece.stop)
        inside = (times >= start) & (times < stop)
        if not inside.any():
            continue
        held = _held_value(times[inside] - start, values[inside], stop - start, weights[inside])
        if held is not None:
            out[start:stop] = held
            continue
        spline = fit_bspline(
            times[inside] - start, values[inside], spacing, stop - start, weights[inside]
        )
        out[start:stop] = spline(np.arange(stop - start, dtype=float))
    return out


def _held_value(
    times: Array, values: Array, num_frames: int, weights: Array | None
) -> Array | None:
    """The one value of samples that give it at every frame of a piece, equally weighted,
    else None (dimensions of weight 0 are 0).

    Eq. (2) reproduces a constant only approximately (each finer level shrinks the
    error, none removes it), and a knee near full extension turns a 0.05 mm wobble
    of the root into half a degree: a held pose would shimmer, and a clip of one
    frame (fitted exactly: one sample) would not be what thirty repeats of it are.
    Constant data over a whole piece is therefore that constant, exactly.
    """
    frames = np.unique(times)
    if len(frames) != num_frames or not np.array_equal(frames, np.arange(num_frames)):
        return None
    scale = max(1.0, float(np.abs(values).max(initial=0.0)))
    if np.ptp(values, axis=0).max(initial=0.0) > 1e-12 * scale:
        return None
    if weights is None:
        return np.asarray(values[0], dtype=np.float64)
    if np.ptp(weights, axis=0).max(initial=0.0) > 0.0:
        return None
    # a dimension no sample knows (weight 0: a free joint) stays 0, as eq. (2) leaves it
    return np.where(weights[0] > 0.0, values[0], 0.0)


def _smoothed_exact(
    motion: Motion,
    constraints: Constraints,
    frames: NDArray[np.intp],
    exact: tuple[Array, Array, NDArray[np.bool_]],
    height: float | Array,
    width: int,
    pieces: Sequence[slice],
) -> Motion:
    """``motion`` with the exact pass's corrections (``exact``: its root, rotations and
    determined joints at ``frames``) smoothed in time (:func:`_smooth_corrections`):
    exact where a joint carries a footplant, smooth elsewhere, and held only as
    firmly as keeps the ground points on or above the ground.

    A ground point's chain starts as smooth as any other joint; while the smoothed
    motion puts a point more than :data:`_GROUND_TOLERANCE` × height under the
    ground, the weight of the exact pose (or, at a frame the pass did not solve,
    of the motion before it) at those frames and joints grows :data:`_GROUND_GAIN`
    times, for at most :data:`_GROUND_ROUNDS` rounds. Held exactly wherever the
    exact pose had a point on the ground (as before), the per-frame solution's
    switches went into the motion: a swinging foot that the solver turned up by
    the least angle clearing the ground from one frame, or a heel that it stopped
    easing the frame after, jerked the ankle and toes 2.5 to 4 times as much as
    the source on an Emilya walk at 120 frames/s.
    """
    from ..humanoid.contacts import UP

    root, rot, determined = exact
    num_frames, skeleton = motion.num_frames, motion.skeleton
    d = ominus(root, rot, motion.root_position[frames], motion.rotations[frames])
    target = np.zeros((num_frames, d.shape[1]))
    solved = np.repeat(np.asarray(determined, bool), 3, axis=1)
    target[frames] = np.where(solved, d, 0.0)
    held = [
        (p, np.asarray(np.isfinite(goal).all(axis=1))) for p, goal in constraints.positions.items()
    ]
    plants = np.zeros((num_frames, d.shape[1]), bool)
    plants[frames] = np.repeat(_chain_joints(skeleton, held, num_frames)[frames], 3, axis=1)
    plants[frames] &= solved
    weight = np.where(plants, _HARD, 1.0)
    ground = constraints.ground
    h_rows = np.broadcast_to(np.asarray(height, np.float64), (num_frames,))
    if ground is not None:  # where the pose held to (exact, else before) is on the ground
        goal = _pose(motion.displace(target)).positions
        reachable = goal[:, ground.points, UP] - ground.lowest(goal) >= (
            -_GROUND_TOLERANCE * h_rows[:, None]
        )
    for _ in range(_GROUND_ROUNDS + 1):
        out = motion.displace(_smooth_corrections(target, weight, width, pieces))
        if ground is None:
            break
        pos = _pose(out).positions
        gap = pos[:, ground.points, UP] - ground.lowest(pos)
        under = gap < -_GROUND_TOLERANCE * h_rows[:, None]
        if not under.any():
            break
        chains = [(int(p), under[:, k] & reachable[:, k]) for k, p in enumerate(ground.points)]
        firmer = np.repeat(_chain_joints(skeleton, chains, num_frames), 3, axis=1) & ~plants
        if not firmer.any() or weight[firmer].min() >= _HARD:
            break
        weight[firmer] = np.minimum(weight[firmer] * _GROUND_GAIN, _HARD)
    return out


def _chain_joints(
    skeleton: Skeleton, held: Sequence[tuple[int, NDArray[np.bool_]]], num_rows: int
) -> NDArray[np.bool_]:
    """(N, 1 + J): the root and the joints that carry each point of ``held`` (point, rows
    (N,) where it is held): the chain from the root to the point, at its rows."""
    out = np.zeros((num_rows, skeleton.num_joints + 1), bool)
    for point, rows in held:
        rows = np.asarray(rows, bool)
        if rows.any():
            chain = np.asarray(
                [1 + int(j) for j in skeleton.chain(int(point)) if j < skeleton.num_joints],
                np.intp,
            )
            out[np.ix_(rows, chain)] = True
            out[rows, 0] = True
    return out


def _smooth_corrections(target: Array, weight: Array, width: int, pieces: Sequence[slice]) -> Array:
    r"""Corrections ``target`` (F, d) smoothed in time with weights ``weight`` (F, d), (F, d).

    Column by column, the curve ``x`` minimising

    .. math:: \sum_t w_t (x_t - d_t)^2 + λ \sum_t (x_{t-1} - 2 x_t + x_{t+1})^2,
              \quad λ = \mathrm{width}^4

    (a smoothing spline: a banded system per piece, one factorisation for the
    columns of the same weights). :func:`_smoothed_exact` gives ``d`` the exact
    pass's correction where the joint was solved and 0 elsewhere (the correction
    fades out over about ``width`` frames), and ``w`` :data:`_HARD` where the
    joint carries a footplant (met exactly), 1 elsewhere, more where the ground
    needs it. Per-frame IK corrections jump where a constraint starts or ends and
    wobble where an eased goal pulls a leg near full extension: at 120 frames/s
    the knee's jerk was 3 to 8 times the source's.
    """
    from scipy.linalg import solveh_banded

    out = np.zeros_like(target, dtype=np.float64)
    lam = float(width) ** (2 * _ORDER)
    groups: dict[bytes, list[int]] = {}
    for c in range(target.shape[1]):
        groups.setdefault(np.ascontiguousarray(weight[:, c]).tobytes(), []).append(c)
    for cols in groups.values():
        if not target[:, cols].any():
            continue
        w_all = weight[:, cols[0]]
        for piece in pieces:
            start, stop = int(piece.start), int(piece.stop)
            n = stop - start
            w = w_all[start:stop]
            d = target[start:stop][:, cols]
            if n < 3:
                out[start:stop, cols] = d
                continue
            # (W + λ DᵀD) x = W d, D the second difference
            ab = lam * _difference_gram(n, _ORDER)
            ab[-1] += w
            out[start:stop, cols] = solveh_banded(ab, w[:, None] * d)
    return out


_ORDER = 2


def _difference_gram(n: int, order: int) -> Array:
    """``DᵀD`` of the ``order``-th difference on ``n`` samples, in the upper banded form
    of :func:`scipy.linalg.solveh_banded`, shape (order + 1, n)."""
    coef = np.array([1.0])
    for _ in range(order):
        coef = np.convolve(coef, [-1.0, 1.0])
    bands = np.zeros((order + 1, n))
    rows = np.arange(max(n - order, 0))
    for a in range(order + 1):
        for b in range(a, order + 1):
            # entry (r + a, r + b) gains coef[a] coef[b]; band k = b - a holds column r + b
            np.add.at(bands[order - (b - a)], rows + b, coef[a] * coef[b])
    return bands


def _smooth_envelope(
    frames: NDArray[np.intp],
    values: Array,
    num_frames: int,
    width: float,
    pieces: Sequence[slice] | None = None,
) -> Array:
    """A smooth curve that is at least ``values`` at ``frames``, shape (F,), within each
    piece of the clip (``pieces``): the running maximum over ``width`` frames on
    either side, then averaged over the same window by a smootherstep-shaped kernel
    (its weights sum to 1, so every frame's value is an average of values at least
    its own need: the curve stays above the needs), and 0 far from any need.

    The upper envelope of bumps that it replaces is only continuous where two bumps
    cross: the root it lowered (:meth:`retarget.ik.hybrid.HybridSolver.reach_drop`)
    turned at those frames, a jerk of the whole body."""
    out = np.zeros(num_frames)
    need = np.zeros(num_frames)
    need[frames] = np.maximum(values, 0.0)
    radius = max(1, round(0.5 * width))
    u = 1.0 - np.abs(np.arange(-radius, radius + 1)) / (radius + 1.0)
    kernel = u**3 * (u * (6.0 * u - 15.0) + 10.0)
    kernel /= kernel.sum()
    from scipy.ndimage import maximum_filter1d

    for piece in pieces or [slice(0, num_frames)]:
        start, stop = int(piece.start), int(piece.stop)
        here = need[start:stop]
        if not (here > 0).any():
            continue
        # the ends of a piece continue its edge values: a need there is no bump
        wide = maximum_filter1d(here, size=2 * radius + 1, mode="nearest")
        padded = np.pad(wide, radius, mode="edge")
        out[start:stop] = np.convolve(padded, kernel, mode="valid")
    return out


def root_guess(
    motion: Motion,
    constraints: Constraints,
    spacings: Sequence[float],
    cuts: Sequence[int] = (),
    shift: str = "geometry",
) -> Motion:
    """Shift the root by the smoothed average shift of the contact goals (§4.5).

    At each frame with contact goals, the sample is the mean over contact
    points of their shift; a multilevel B-spline over those samples gives a
    root displacement for every frame (of each piece between ``cuts`` on its
    own). The shift of a contact point (``shift``):

    ``"geometry"`` (default)
        the change of geometry the paper moves the root for ("the position of
        a stance foot ... is pulled upward at a small hill"): the vertical part
        of each footprint's goal less the point's mean position over the run of
        frames it holds. A point's drift within a run (a capture's foot sliding
        while planted) and the horizontal offset of a footprint from the foot
        of ``motion`` (another leg's proportions) change no geometry: shifted
        by them frame by frame, the root left the source's path, carried the
        free foot 1.5 times as far as the source's between footprints (a
        boxing clip's skate 1.16 times the source's) and turned the drift into
        knee jerk (a Xia walk's jerk ratio 1.7, 1.3 without).
    ``"contacts"``
        ``goal − position`` at each frame, all three axes: the paper's words
        taken literally.
    """
    if shift not in ("geometry", "contacts"):
        raise ValueError(f"Expected shift 'geometry' or 'contacts', got {shift!r}")
    points = [p for p in constraints.positions if p in constraints.contact_points]
    if not points:
        return motion
    pos = _pose(motion).positions
    shifts = np.stack([constraints.positions[p] - pos[:, p] for p in points], axis=1)  # (F, K, 3)
    have = np.asarray(np.isfinite(shifts).all(axis=2))
    if shift == "geometry":
        from ..humanoid.contacts import UP

        vertical = np.zeros_like(shifts)
        for k in range(len(points)):
            for start, stop in runs(have[:, k]):
                vertical[start:stop, k, UP] = shifts[start:stop, k, UP].mean()
        shifts = np.where(have[..., None], vertical, np.nan)
    count = have.sum(axis=1)
    frames = np.flatnonzero(count > 0)
    if frames.size == 0:
        return motion
    mean = np.where(have[..., None], shifts, 0.0).sum(axis=1)[frames] / count[frames, None]
    out = np.zeros((motion.num_frames, 3))
    for piece in _pieces(motion.num_frames, cuts):
        start, stop = int(piece.start), int(piece.stop)
        inside = (frames >= start) & (frames < stop)
        if not inside.any():
            continue
        times = (frames[inside] - start).astype(float)
        held = _held_value(times, mean[inside], stop - start, None)
        if held is not None:
            out[start:stop] = held
            continue
        levels = multilevel_fit(times, mean[inside], spacings, stop - start)
        here = np.arange(stop - start, dtype=float)
        out[start:stop] = sum((level(here) for level in levels), np.zeros((stop - start, 3)))
    return motion.replace(root_position=motion.root_position + out)


def fit_motion(
    motion: Motion,
    constraints: Constraints,
    solver: IKSolver,
    *,
    spacings: Sequence[float] = (16, 8, 4, 2),
    height: float | Array = 1.0,
    tolerance: float = 0.0,
    exact: bool = False,
    initial_guess: bool = True,
    guess_spacings: Sequence[float] | None = None,
    root_spacing: float = 0.0,
    cuts: Sequence[int] = (),
    feather: int = 0,
    guess: str = "geometry",
) -> FitResult:
    """Algorithm 1: a smooth displacement map hierarchy that meets the constraints.

    Parameters
    ----------
    motion : Motion
        ``m_0``, on the skeleton the constraints refer to. With per-frame joint
        offsets (:attr:`Motion.translations`: a character whose proportions
        change over the clip) every pose is that frame's: the FK here and the
        solver's (passed as ``translations``); the result keeps them.
    constraints : Constraints
    solver : IKSolver
        E.g. :class:`retarget.ik.hybrid.HybridSolver` (humanoids) or
        :class:`retarget.ik.numeric.NumericSolver` (any tree).
    spacings : sequence of float
        Knot spacing of each level, coarse to fine (frames).
    height : float or ndarray, shape (F,)
        Character height, the unit of the reported errors (%); per frame for a
        character whose proportions change over the clip.
    tolerance : float
        Stop early once every goal is within this share of height (% ; 0: never).
    exact : bool
        After the last level, enforce each constraint exactly by IK at its frame.
    initial_guess : bool
        Shift the root by the contact goals first (§4.5).
    guess : {"geometry", "contacts"}
        The shift of the initial guess (:func:`root_guess`): the change of
        geometry under each footprint (vertical; default), or each contact
        goal's offset at each frame.
    root_spacing : float
        The root's displacement (translation and rotation) is fitted with knots
        at least this many frames apart at every level, while the joints use the
        level's spacing: per-frame IK optima of the root jump where a contact
        starts or ends, and a fine spline would copy the jumps into the body.
    guess_spacings : sequence of float, optional
        Knot spacings of the root guess; by default those of ``spacings`` of at
        least 8 frames (or the coarsest): the average contact shift jumps where
        a contact starts or ends, and the root must not follow such jumps.
    cuts : sequence of int
        Frames where the source jumps to another pose (:func:`retarget.humanoid.cuts.find_cuts`):
        every displacement (each level, the root guess, the reach drop) is fitted
        on each piece between them on its own, so none reaches across a cut.
    feather : int
        The exact pass's corrections are smoothed in time over about this many
        frames (:func:`_smooth_corrections`): exact where a joint carries a hard
        goal (a footplant), smooth where it was solved for an eased goal or the
        ground, fading out beyond. 0: the corrections at their frames only.

    Returns
    -------
    FitResult
    """
    if len(spacings) == 0:
        raise ValueError("Expected at least one level (knot spacing)")
    if initial_guess:
        coarse = [sp for sp in spacings if sp >= 8] or [max(spacings)]
        motion = root_guess(motion, constraints, guess_spacings or coarse, cuts, guess)
    num_frames = motion.num_frames
    pieces = _pieces(num_frames, cuts)
    active = constraints.active()
    reports = []
    for level, spacing in enumerate(spacings, start=1):
        t0 = time.perf_counter()
        pose = _pose(motion)
        frames = np.flatnonzero(active | _violated(constraints, pose))
        if frames.size:
            root, rot, determined = solver.solve(
                _asked(motion, frames, constraints, float(spacing))
            )
            samples = ominus(root, rot, motion.root_position[frames], motion.rotations[frames])
            weights = np.repeat(determined.astype(np.float64), 3, axis=1)
            times = frames.astype(float)
            displacement = _fit_pieces(times, samples, spacing, num_frames, weights, pieces)
            if root_spacing > spacing:  # the root (translation, orientation) on coarser knots
                displacement[:, :6] = _fit_pieces(
                    times, samples[:, :6], root_spacing, num_frames, weights[:, :6], pieces
                )
            motion = motion.displace(displacement)
        max_err, mean_err, pen = _errors(constraints, _pose(motion), height)
        reports.append(
            LevelReport(
                level,
                float(spacing),
                int(frames.size),
                max_err,
                mean_err,
                pen,
                time.perf_counter() - t0,
            )
        )
        if tolerance > 0 and max_err <= tolerance and pen <= tolerance:
            break
    if exact:
        t0 = time.perf_counter()
        pose = _pose(motion)
        frames = np.flatnonzero(active | _violated(constraints, pose))
        reach_drop = getattr(solver, "reach_drop", None)
        if reach_drop is not None and frames.size and root_spacing > 0:
            # the root comes down where a leg cannot reach its goal, smoothly (the
            # frames the lowered root puts under the ground join the exact pass)
            from ..humanoid.contacts import UP

            need = reach_drop(_asked(motion, frames, constraints, None))
            if need.max(initial=0.0) > 0.0:
                envelope = _smooth_envelope(frames, need, num_frames, root_spacing, pieces)
                root = motion.root_position.copy()
                root[:, UP] -= envelope
                motion = motion.replace(root_position=root)
                pose = _pose(motion)
                frames = np.flatnonzero(active | _violated(constraints, pose))
        if frames.size:
            root_exact, rot_exact, determined = solver.solve(
                _asked(motion, frames, constraints, 0.0)
            )
            exact_d = ominus(
                root_exact, rot_exact, motion.root_position[frames], motion.rotations[frames]
            )
            if feather > 0:
                motion = _smoothed_exact(
                    motion,
                    constraints,
                    frames,
                    (root_exact, rot_exact, determined),
                    height,
                    feather,
                    pieces,
                )
            else:  # the corrections at their frames only
                corrections = np.zeros((num_frames, exact_d.shape[1]))
                corrections[frames] = exact_d
                motion = motion.displace(corrections)
        max_err, mean_err, pen = _errors(constraints, _pose(motion), height)
        reports.append(
            LevelReport(-1, 0.0, int(frames.size), max_err, mean_err, pen, time.perf_counter() - t0)
        )
    if (
        constraints.joint_limits
        and limit_violation(motion.skeleton, motion.rotations).max(initial=0) > 0
    ):
        motion = motion.replace(rotations=clamp_to_limits(motion.skeleton, motion.rotations))
    return FitResult(motion, tuple(reports))
