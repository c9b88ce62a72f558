"""Hierarchical motion fitting (Lee & Shin 1999, Algorithm 1, §4.3-4.5).

Given a motion ``m_0`` and constraints, level by level (knot spacings coarse
to fine, e.g. 16, 8, 4, 2 frames):

1. at every constrained frame ``t_i``, an IK solver finds the pose that meets
   the frame's constraints and deviates least from ``m_{k−1}(t_i)`` (eq. 4);
2. its displacement ``d_i = m^i ⊖ m_{k−1}(t_i)`` is a sample for the level's
   B-spline (eq. 2), fitted over all frames;
3. ``m_k = m_{k−1} ⊕ d_k`` (eq. 3): levels compose by ⊕, never by summing
   rotation vectors.

A frame is constrained when it has a goal, or when a ground point dips below
the ground (non-penetration). Optionally, after the last level, each
constraint is enforced exactly by the IK solver at its frame (§4.4), and
joint limits are enforced on every frame by clamping the channel angles.

The initial guess (§4.5) shifts the root by the average shift of the contact
goals from the contact points at each frame, smoothed over frames by a
multilevel B-spline, so a stance foot pulled up a hill does not force a squat.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ..dofs import clamp_to_limits, limit_violation
from ..kinematics import Pose
from ..motion import Motion, ominus
from ..skeleton import Skeleton
from .constraints import Constraints
from .mba import fit_bspline, multilevel_fit

__all__ = ["FitResult", "IKSolver", "LevelReport", "fit_motion", "root_guess"]

Array = NDArray[np.float64]


class IKSolver(Protocol):
    """Poses meeting the constraints at some frames, minimally displaced from reference poses.

    Returns ``(root_position (N, 3), rotations (N, J, 4), determined (N, J + 1))``:
    ``determined[i, 0]`` says the root translation at frame i is the solver's
    answer, ``determined[i, 1 + j]`` the same of joint j's rotation. A joint the
    solver left alone because nothing constrains it there (a free leg) is not
    determined: its displacement at that frame is missing data for the
    B-spline, interpolated from the frames where it was solved, rather than
    pinned to zero.
    """

    def __call__(
        self,
        skeleton: Skeleton,
        root_position: Array,
        rotations: Array,
        frames: NDArray[np.intp],
        constraints: Constraints,
        *,
        spacing: float | None = None,
        translations: Array | None = None,
    ) -> tuple[Array, Array, NDArray[np.bool_]]:
        """Return root positions, rotations and the ``determined`` mask for the N ``frames``.

        ``spacing`` is the knot spacing of the level asking (0 for the exact pass).
        ``translations`` (N, J, 3): the frames' own joint offsets when the motion
        has them (:attr:`retarget.motion.Motion.translations`), else None.
        """
        ...


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


def _translations(motion: Motion, frames: NDArray[np.intp]) -> Array | None:
    """The motion's per-frame joint offsets at ``frames`` (N, J, 3), None when it has none."""
    return None if motion.translations is None else motion.translations[frames]


def _errors(
    constraints: Constraints, pose: Pose, height: float | Array
) -> tuple[float, float, float]:
    """Max and mean goal error and deepest penetration, in % of each frame's ``height``."""
    scale = 100.0 / np.broadcast_to(np.asarray(height, dtype=np.float64), (pose.batch_shape[0],))
    err = constraints.position_errors(pose) * scale[:, None]
    err = err[np.isfinite(err)]
    pen = 0.0
    if constraints.ground is not None:
        from ..contacts import UP

        gap = pose.positions[..., constraints.ground.points, UP] - constraints.ground.lowest(
            pose.positions
        )
        pen = float(max(0.0, -(gap * scale[:, None]).min())) if gap.size else 0.0
    if err.size == 0:
        return 0.0, 0.0, pen
    return float(err.max()), float(err.mean()), pen


def _pieces(num_frames: int, cuts: Sequence[int]) -> list[slice]:
    from ..cuts import segments

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
    displacement never reaches across a cut (:mod:`retarget.cuts`)."""
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


def _smooth_envelope(
    frames: NDArray[np.intp],
    values: Array,
    num_frames: int,
    width: float,
    pieces: Sequence[slice] | None = None,
) -> Array:
    """The smallest-looking smooth curve that is at least ``values`` at ``frames``:
    the upper envelope of ``values[i] · k((t − frames[i]) / width)``, ``k`` a
    smootherstep bump of half-width ``width`` frames (C² at its ends), shape (F,); a
    bump stops at the ends of the piece of the clip (``pieces``) that holds its frame."""
    out = np.zeros(num_frames)
    bounds = [(int(p.start), int(p.stop)) for p in (pieces or [slice(0, num_frames)])]
    for f in np.flatnonzero(values > 0):
        start, stop = next((a, b) for a, b in bounds if a <= frames[f] < b)
        lo, hi = max(start, int(frames[f] - width)), min(stop, int(frames[f] + width) + 1)
        u = 1.0 - np.abs(np.arange(lo, hi) - frames[f]) / (width + 1.0)
        bump = u**3 * (u * (6.0 * u - 15.0) + 10.0)
        out[lo:hi] = np.maximum(out[lo:hi], values[f] * bump)
    return out


def root_guess(
    motion: Motion,
    constraints: Constraints,
    spacings: Sequence[float],
    cuts: Sequence[int] = (),
) -> Motion:
    """Shift the root by the smoothed average shift of the contact goals (§4.5).

    At each frame with contact goals, the sample is the mean over contact
    points of ``goal − position``; a multilevel B-spline over those samples
    gives a root displacement for every frame (of each piece between ``cuts``
    on its own).
    """
    points = [p for p in constraints.positions if p in constraints.contact_points]
    if not points:
        return motion
    pos = _pose(motion).positions
    shifts = np.stack([constraints.positions[p] - pos[:, p] for p in points], axis=1)  # (F, K, 3)
    have = np.asarray(np.isfinite(shifts).all(axis=2))
    count = have.sum(axis=1)
    frames = np.flatnonzero(count > 0)
    if frames.size == 0:
        return motion
    mean = np.where(have[..., None], shifts, 0.0).sum(axis=1)[frames] / count[frames, None]
    shift = np.zeros((motion.num_frames, 3))
    for piece in _pieces(motion.num_frames, cuts):
        start, stop = int(piece.start), int(piece.stop)
        inside = (frames >= start) & (frames < stop)
        if not inside.any():
            continue
        times = (frames[inside] - start).astype(float)
        held = _held_value(times, mean[inside], stop - start, None)
        if held is not None:
            shift[start:stop] = held
            continue
        levels = multilevel_fit(times, mean[inside], spacings, stop - start)
        here = np.arange(stop - start, dtype=float)
        shift[start:stop] = sum((level(here) for level in levels), np.zeros((stop - start, 3)))
    return motion.replace(root_position=motion.root_position + shift)


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
        Frames where the source jumps to another pose (:func:`retarget.cuts.find_cuts`):
        every displacement (each level, the root guess, the reach drop) is fitted
        on each piece between them on its own, so none reaches across a cut.

    Returns
    -------
    FitResult
    """
    if len(spacings) == 0:
        raise ValueError("Expected at least one level (knot spacing)")
    if initial_guess:
        coarse = [sp for sp in spacings if sp >= 8] or [max(spacings)]
        motion = root_guess(motion, constraints, guess_spacings or coarse, cuts)
    num_frames = motion.num_frames
    pieces = _pieces(num_frames, cuts)
    active = constraints.active()
    reports = []
    for level, spacing in enumerate(spacings, start=1):
        t0 = time.perf_counter()
        pose = _pose(motion)
        frames = np.flatnonzero(active | constraints.violated_ground(pose))
        if frames.size:
            root, rot, determined = solver(
                motion.skeleton,
                motion.root_position[frames],
                motion.rotations[frames],
                frames,
                constraints,
                spacing=float(spacing),
                translations=_translations(motion, frames),
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
        frames = np.flatnonzero(active | constraints.violated_ground(pose))
        reach_drop = getattr(solver, "reach_drop", None)
        if reach_drop is not None and frames.size and root_spacing > 0:
            # the root comes down where a leg cannot reach its goal, smoothly
            need = reach_drop(
                motion.skeleton,
                motion.root_position[frames],
                motion.rotations[frames],
                frames,
                constraints,
                translations=_translations(motion, frames),
            )
            envelope = _smooth_envelope(frames, need, num_frames, root_spacing, pieces)
            if envelope.any():
                from ..contacts import UP

                root = motion.root_position.copy()
                root[:, UP] -= envelope
                motion = motion.replace(root_position=root)
                pose = _pose(motion)
        root_position, rotations = motion.root_position.copy(), motion.rotations.copy()
        if frames.size:
            root_position[frames], rotations[frames], _ = solver(
                motion.skeleton,
                root_position[frames],
                rotations[frames],
                frames,
                constraints,
                spacing=0.0,
                translations=_translations(motion, frames),
            )
            motion = motion.replace(root_position=root_position, rotations=rotations)
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
