"""Computer puppetry over a recording (Shin et al. 2001), ``--method puppetry``.

The source clip plays the performer: a sensor sits at every joint and reports
the joint's world position and orientation (forward kinematics), optionally
with white noise (``noise``: position standard deviation per axis in the
file's unit, orientation standard deviation per axis in degrees) and at
another sensor rate (``sensor_fps``, e.g. the paper's 120 Hz: the clip is
resampled, retargeted at that rate and the result sampled back at the clip's
frames). The sensor stream then goes through the online method of
:mod:`retarget.online.puppetry`, a loop over
:class:`~retarget.online.puppetry.Puppeteer` (``reset()``, then
``step(SensorFrame)`` per frame: :func:`run_puppeteer`), restarted where the
source jumps to another pose (:func:`retarget.humanoid.cuts.find_cuts`); its set-up
(clearances, hinge axes: :func:`~retarget.online.puppetry.make_puppet`) is
measured beforehand on the whole filtered take and kept over the pieces.

For a puppet the compiled frame does not support
(:func:`~retarget.online.puppetry.frame_plan` None: objects other than floors,
boxes and spheres, lower limb joints with limits, as on ASF skeletons), every
``step`` would take :func:`~retarget.online.puppetry.solve_frames` on its one
frame; the loop then runs as that function over each piece's frames at once
(the filter's recursion, then stages 2-9 vectorised: the same frames to
rounding, 1e-9, and some 60 times faster than frame by frame).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.arrays import Array
from ..core.errors import RetargetError
from ..core.frames import SensorFrame
from ..core.kinematics import forward_kinematics
from ..core.motion import Motion
from ..core.result import Result, speed
from ..core.skeleton import Skeleton
from ..environment import Floor, Shape
from ..filters import KalmanParameters, SensorEstimate, filter_stream
from ..filters.glitch import MAX_SPEED, SensorGate, through_gate
from ..humanoid.contacts import detect_contacts
from ..humanoid.cuts import find_cuts, segments
from ..online.puppetry import (
    DEFAULT_SMOOTHING,
    EFFECTORS,
    Puppeteer,
    PuppetFrames,
    Smoothing,
    frame_plan,
    local_rotations,
    make_puppet,
    solve_frames,
)
from ._base import FOOT_HOLD, GLITCH_SPEED, TERRAIN, Option, check_same_hierarchy

__all__ = ["parse_noise", "puppetry_retarget", "run_puppeteer", "sensor_stream"]


def sensor_stream(
    motion: Motion, noise: tuple[float, float] = (0.0, 0.0), seed: int = 0
) -> tuple[Array, Array]:
    """Simulated sensors at every joint of ``motion``, with optional white noise.

    Parameters
    ----------
    motion : Motion
    noise : (float, float)
        Standard deviation of the position noise per axis (file unit) and of the
        orientation noise per rotation-vector axis (degrees).
    seed : int

    Returns
    -------
    positions : ndarray, shape (F, J, 3)
    orientations : ndarray, shape (F, J, 4)
    """
    from ..core import quat

    pos, world = forward_kinematics(
        motion.skeleton, motion.root_position, motion.rotations, motion.translations
    )
    j = motion.skeleton.num_joints
    pos, world = pos[:, :j].copy(), world[:, :j].copy()
    sigma_p, sigma_r = float(noise[0]), float(np.radians(noise[1]))
    if sigma_p > 0 or sigma_r > 0:
        rng = np.random.default_rng(seed)
        pos += rng.normal(0.0, sigma_p, pos.shape)
        world = quat.multiply(world, quat.exp(rng.normal(0.0, sigma_r, pos.shape)))
    return pos, world


def filter_parameters(noise: tuple[float, float]) -> KalmanParameters:
    """The default filter with ``R`` the covariance of the given white noise (a tiny
    floor when there is none: the filter then passes clean data through)."""
    sigma_p = max(float(noise[0]), 1e-3)
    sigma_r = max(float(np.radians(noise[1])), 1e-5)
    r = np.diag([sigma_p**2] * 3 + [sigma_r**2] * 3)
    return KalmanParameters(measurement_noise=r)


def puppetry_retarget(
    source: Motion,
    target: Skeleton,
    *,
    noise: tuple[float, float] = (0.0, 0.0),
    seed: int = 0,
    sensor_fps: float | None = None,
    terrain: Shape | None = None,
    objects: Sequence[Shape] = (),
    influence: float | Array | None = None,
    lookahead: float = 0.05,
    root_estimation: bool = True,
    hold_feet: bool = True,
    softness: float = 0.05,
    stride: float | None = None,
    smoothing: Smoothing = DEFAULT_SMOOTHING,
    parameters: KalmanParameters | None = None,
    glitch_speed: float = math.degrees(MAX_SPEED),
) -> Result:
    """Retarget a clip as a puppeteer's performance (module docstring).

    Parameters
    ----------
    source : Motion
        The performer's motion; the sensors are simulated at its joints.
    target : Skeleton
        The character (the source's joint names).
    noise : (float, float)
        Sensor noise: position std (unit), orientation std (degrees).
    seed : int
    sensor_fps : float, optional
        Sensor rate; default the clip's.
    terrain, objects : Shape
        The environment: ``terrain`` the ground (the scene of ``--terrain``;
        default the floor under the source's planted feet,
        :func:`retarget.humanoid.contacts.detect_contacts`), ``objects`` further shapes
        (boxes).
    glitch_speed : float
        Degrees per second: a sensor's joint whose bones turn faster is a capture
        glitch, held ahead of the Kalman filter
        (:class:`retarget.filters.glitch.SensorGate`); 0: none is.
    influence : float or array (4, m), optional
        ``D_ij`` of eq. 13; default 30 % of the source's height.
    lookahead : float
        ``λ`` of eq. 12 (seconds).
    root_estimation : bool
        Section 5.1 (off: the "without" column of Table I).
    hold_feet : bool
        Stage 4b, the foot hold (:mod:`retarget.online.puppetry`; off: the
        paper's goals, the performer's feet).
    softness : float
        Soft reach of the limb IK (:class:`retarget.online.puppetry.Puppet`).
    stride : float, optional
        The sensors' horizontal positions about the first frame's root times this
        (:mod:`retarget.online.puppetry`, stage 1b); default the leg-length ratio,
        at most 1, on a flat floor, else 1 (the paper's unscaled goals).
    smoothing : Smoothing
        The smoothing of the plant weights and of the root
        (:class:`retarget.online.puppetry.Smoothing`);
        :data:`~retarget.online.puppetry.PAPER_SMOOTHING`: the paper's stage 5.
    parameters : KalmanParameters, optional
        Default: :func:`filter_parameters` of ``noise``.

    Returns
    -------
    Result
        ``report``: importance curves (per end-effector), conjugate-gradient
        iterations per frame, seconds per stage, frames/s, tracking error of
        the end-effectors while their importance is 1, deviation of the arm
        joints from the captured ones while the hands' importance is 0.
    """
    check_same_hierarchy(source.skeleton, target)
    t_start = time.perf_counter()
    clip = source
    if sensor_fps is not None and abs(sensor_fps - source.fps) > 1e-9:
        clip = source.resample(sensor_fps)
    # the ground: the given terrain, else the floor the source's feet rest on (not
    # y = 0: a file's floor lies where its capture put it)
    ground = terrain if terrain is not None else Floor(detect_contacts(source).floor)
    scene: list[Shape] = [ground, *objects]
    positions, orientations = sensor_stream(clip, noise, seed)
    params = parameters if parameters is not None else filter_parameters(noise)
    # the Kalman filter and the foot hold restart where the source jumps to another
    # pose (a leading T-pose frame, joined takes): they would smear the jump
    cuts = find_cuts(clip)
    pieces = segments(clip.num_frames, cuts)
    # capture glitches held ahead of the filter, as the Puppeteer holds them frame by frame
    sensor_gate = SensorGate(clip.skeleton, clip.fps, math.radians(glitch_speed))
    gated_p, gated_q = through_gate(sensor_gate, positions, orientations, cuts=cuts)
    gate = sensor_gate.gate
    t0 = time.perf_counter()
    est = _concatenate_estimates(
        [filter_stream(gated_p[p], gated_q[p], clip.fps, params) for p in pieces]
    )
    t_filter = time.perf_counter() - t0
    # calibration: the filtered take itself (the first frame for clearances, all of
    # them for the knee and elbow axes; a property of the bodies, not of the motion)
    cal = local_rotations(clip.skeleton, est.orientations)
    puppet = make_puppet(
        clip.skeleton,
        target,
        cal,
        fps=clip.fps,
        objects=scene,
        influence=influence,
        lookahead=lookahead,
        root_estimation=root_estimation,
        hold_feet=hold_feet,
        softness=softness,
        calibration_positions=est.positions,
        stride=stride,
        smoothing=smoothing,
    )
    if frame_plan(puppet) is not None:
        puppeteer = Puppeteer(
            clip.skeleton,
            target,
            fps=clip.fps,
            filter_parameters=params,
            puppet=puppet,
            glitch_speed=glitch_speed,
        )
        frames = run_puppeteer(puppeteer, positions, orientations, pieces)
    else:  # Puppeteer.step's own fallback, for the frames of a piece at once
        frames = _concatenate_frames(
            [solve_frames(puppet, _estimate_slice(est, p)) for p in pieces]
        )
        frames.seconds["filter"] = t_filter
    motion = Motion(target, frames.root_position, frames.rotations, clip.fps)
    goals = frames.goals
    if clip is not source:
        motion = motion.resample(source.fps)
        keep = np.clip(np.round(np.arange(motion.num_frames) * clip.fps / source.fps), 0, None)
        goals = goals[keep.astype(np.intp).clip(max=len(goals) - 1)]
        motion = motion[: source.num_frames]
        goals = goals[: source.num_frames]
    seconds = time.perf_counter() - t_start
    report = _report(frames, puppet_seconds=seconds, n=clip.num_frames)
    report.update(
        {
            "method": "puppetry",
            "options": {
                "noise": list(noise),
                "seed": seed,
                "sensor_fps": clip.fps,
                "lookahead": lookahead,
                "root_estimation": root_estimation,
                "hold_feet": hold_feet,
                "softness": softness,
                "stride": puppet.stride,
                **{  # the smoothing, but K
                    k: v
                    for k, v in dataclasses.asdict(puppet.smoothing).items()
                    if k != "root_stiffness"
                },
                "influence": np.asarray(puppet.influence).tolist(),
            },
            "glitches": {  # sensors' joints turning faster than a joint can: held
                "speed_deg_per_s": glitch_speed,
                "frames": gate.frames,
                "joint_frames": gate.held,
            },
        }
    )
    names = [target.names[limb.lower] for limb in puppet.limbs]
    importance = frames.importance
    if clip is not source:
        importance = importance[keep.astype(np.intp).clip(max=len(importance) - 1)]
    goal_map = {
        name: np.where(importance[: len(goals), i, None] >= 1.0 - 1e-9, goals[:, i], np.nan)
        for i, name in enumerate(names)
    }
    return Result(motion=motion, report=report, goals=goal_map)


def _estimate_slice(est: SensorEstimate, frames: slice) -> SensorEstimate:
    return SensorEstimate(
        est.positions[frames],
        est.orientations[frames],
        est.velocities[frames],
        est.angular_velocities[frames],
    )


def run_puppeteer(
    puppeteer: Puppeteer, positions: Array, orientations: Array, pieces: Sequence[slice] = ()
) -> PuppetFrames:
    """A sensor recording through :class:`~retarget.online.puppetry.Puppeteer`, the
    offline shape as a loop over the online one (:mod:`retarget.core.frames`):
    ``reset()`` at the start of every piece, then ``step(SensorFrame)`` for each of its
    frames.

    Parameters
    ----------
    puppeteer : Puppeteer
    positions : ndarray, shape (F, S, 3)
    orientations : ndarray, shape (F, S, 4)
        The sensor frames (:func:`sensor_stream`).
    pieces : sequence of slice
        Consecutive pieces covering the frames (:func:`retarget.humanoid.cuts.segments`): the
        filter and the recursions restart at each (a set-up given to ``puppeteer`` is
        kept); default one piece.

    Returns
    -------
    PuppetFrames
        :attr:`Puppeteer.last` of every frame, joined on the frame axis (stage times
        summed, the last frame's state).
    """
    lasts = []
    for piece in pieces or [slice(0, len(positions))]:
        puppeteer.reset()
        for f in range(len(positions))[piece]:
            puppeteer.step(SensorFrame(positions[f], orientations[f]))
            assert puppeteer.last is not None
            lasts.append(puppeteer.last)
    return _concatenate_frames(lasts)


def _concatenate_estimates(pieces: Sequence[SensorEstimate]) -> SensorEstimate:
    """Filtered pieces of one recording, one after the other (frame axis first)."""
    return SensorEstimate(
        *(
            np.concatenate([getattr(e, name) for e in pieces])
            for name in ("positions", "orientations", "velocities", "angular_velocities")
        )
    )


def _concatenate_frames(pieces: Sequence[PuppetFrames]) -> PuppetFrames:
    """:func:`solve_frames` of consecutive pieces as one: arrays joined on the frame
    axis, stage times summed, the last piece's state."""
    arrays = {
        f.name: np.concatenate([getattr(p, f.name) for p in pieces])
        for f in dataclasses.fields(PuppetFrames)
        if f.name not in ("state", "seconds")
    }
    seconds = {k: float(sum(p.seconds.get(k, 0.0) for p in pieces)) for k in pieces[0].seconds}
    return PuppetFrames(**arrays, state=pieces[-1].state, seconds=seconds)


def _report(frames: PuppetFrames, *, puppet_seconds: float, n: int) -> dict[str, Any]:
    """The per-run report of :func:`puppetry_retarget` (JSON-serialisable)."""
    from ..core import quat

    w = frames.importance
    out: dict[str, Any] = {
        **speed(n, puppet_seconds),
        "seconds": puppet_seconds,
        "stage_seconds": {k: float(v) for k, v in frames.seconds.items()},
        "iterations": {
            "total": int(frames.iterations.sum()),
            "frames_with_iterations": int((frames.iterations > 0).sum()),
            "share_without": float((frames.iterations == 0).mean()),
            "per_frame": frames.iterations.tolist(),
        },
        "importance": {name: np.round(w[:, i], 5).tolist() for i, name in enumerate(EFFECTORS)},
        # planted: the weight within 1e-3 of 1 (its lags reach 1 only in the limit)
        "planted_share": {
            name: float((frames.planted[:, i] >= 1.0 - 1e-3).mean())
            for i, name in enumerate(EFFECTORS[:2])
        },
        "penetration_fixed_frames": {
            name: int(frames.penetration_fixed[:, i].sum()) for i, name in enumerate(EFFECTORS)
        },
        "unreached": {
            name: {
                "frames": int((frames.residual[:, i] > 1e-6).sum()),
                "max": float(frames.residual[:, i].max(initial=0.0)),
            }
            for i, name in enumerate(EFFECTORS)
        },
    }
    # how far the output's limb rotations are from the captured ones, where importance is 0
    dev = quat.angle(frames.rotations, frames.captured)  # (F, J)
    out["max_rotation_change_deg"] = float(np.degrees(dev.max(initial=0.0)))
    return out


# -- options: what `retarget run --method puppetry` and RunJob.method_options offer -----------


def parse_noise(spec: str | tuple[float, float]) -> tuple[float, float]:
    """``P,DEG`` (or the pair) → (position std in the file's unit, orientation std in
    degrees)."""
    try:
        p, d = (float(v) for v in (spec.split(",") if isinstance(spec, str) else spec))
    except (ValueError, TypeError):
        raise RetargetError(f"--noise expects P,DEG (e.g. 0.5,1), got {spec!r}") from None
    if not (np.isfinite(p) and np.isfinite(d) and p >= 0 and d >= 0):
        raise RetargetError(f"--noise expects two finite numbers >= 0, got {spec!r}")
    return p, d


OPTIONS = (
    TERRAIN,
    Option(
        "noise",
        "--noise",
        "white sensor noise, position std (file unit) and orientation std (deg)",
        metavar="P,DEG",
        convert=parse_noise,
        given=bool,
    ),
    Option(
        "sensor_fps",
        "--sensor-fps",
        "sensor rate (default: the clip's; paper 120)",
        type=float,
        given=bool,
    ),
    Option(
        "root_estimation",
        "--no-root-estimation",
        "start the body from the captured root (Table I's 'without')",
        const=False,
    ),
    FOOT_HOLD,
    Option("seed", "--seed", "seed of the sensor noise", type=int),
    GLITCH_SPEED,
)
