"""Online commands: ``puppet``, ``serve``, ``noise``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import RetargetError
from ..core.motion import frame_slice
from ..humanoid.roles import require_humanoid
from ..io.files import write_json
from ._common import Presets, add_option, motion_options, read_input, target_skeleton

__all__ = ["add_parsers"]


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _noise_model(path: str | None):
    """Kalman parameters whose R is read from a `retarget noise` output."""
    from ..filters import KalmanParameters

    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        r = np.asarray(data["measurement_noise"], dtype=np.float64)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise RetargetError(f"{path}: not a noise model of `retarget noise` ({exc})") from None
    try:
        return KalmanParameters(measurement_noise=r)
    except ValueError as exc:
        raise RetargetError(f"{path}: {exc}") from None


def _foot_hold(args: argparse.Namespace) -> dict[str, Any]:
    """``{"hold_feet": False}`` when ``--no-foot-hold`` was given (``serve``), else {}."""
    from ..methods import FOOT_HOLD

    given = getattr(args, FOOT_HOLD.dest, None)
    return {FOOT_HOLD.name: FOOT_HOLD.value(given)} if FOOT_HOLD.given(given) else {}


def _serve_options(p: argparse.ArgumentParser) -> None:
    """``serve``'s options declared by the puppetry method (added when it parses)."""
    from ..methods import FOOT_HOLD

    add_option(p, FOOT_HOLD, f"puppetry: {FOOT_HOLD.help}")


def _puppeteer(args: argparse.Namespace):
    """The Puppeteer of ``puppet`` and ``serve``: performer (and calibration take),
    character, objects, noise model, lag and foot hold."""
    from ..io.scene import read_environment
    from ..online.puppetry import Puppeteer

    take = read_input(args.performer)
    performer = take.skeleton
    require_humanoid(args.performer, performer)
    target = target_skeleton(args, take)
    options: dict[str, Any] = _foot_hold(args)
    if args.terrain:
        options["objects"] = read_environment(args.terrain).shapes
    params = _noise_model(args.noise_model)
    if params is not None and params.measurement_noise.ndim == 3:
        if params.measurement_noise.shape[0] != performer.num_joints:
            raise RetargetError(
                f"{args.noise_model}: {params.measurement_noise.shape[0]} sensors, "
                f"the performer has {performer.num_joints} joints"
            )
    if getattr(args, "filter_lag", 0):
        from ..filters import KalmanParameters

        params = dataclasses.replace(params or KalmanParameters(), lag=args.filter_lag)
    return Puppeteer(
        performer,
        target,
        fps=args.fps,
        filter_parameters=params,
        calibration=take if take.num_frames > 1 else None,
        **options,
    )


def cmd_puppet(args: argparse.Namespace) -> int:
    from ..core.frames import SensorFrame
    from ..io.sensors import format_pose, read_sensor_frames
    from ..online.puppetry import EFFECTORS

    puppeteer = _puppeteer(args)
    performer = puppeteer.performer
    out = sys.stdout
    labels: list[Any] = []  # with a filter lag, each pose is that of the frame lag back
    for frame, p, q in read_sensor_frames(sys.stdin, performer.num_joints):
        labels = [*labels, frame][-(args.filter_lag + 1) :]
        pose = puppeteer.step(SensorFrame(p, q))
        root, rot = pose.root_position, pose.rotations
        last = puppeteer.last
        assert last is not None
        line = format_pose(
            labels[0],
            root,
            rot,
            importance=list(zip(EFFECTORS, last.importance[0], strict=True)),
            iterations=int(last.iterations[0]),
        )
        out.write(line + "\n")
        out.flush()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import asyncio

    from ..online.server import serve, summary_line
    from ..online.stream import LiveStream, OMRLive, PuppetryLive

    if args.method == "puppetry":
        live: Any = PuppetryLive(_puppeteer(args))
    elif _foot_hold(args):
        raise RetargetError(
            "--no-foot-hold is puppetry's (the foot hold): --method omr and physics have none"
        )
    elif args.method == "physics":
        from ..methods.physics import PhysicsLive, parse_named

        if args.target or args.target_preset:
            raise RetargetError("--method physics filters the performer's own body: no --target")
        take = read_input(args.performer)
        require_humanoid(args.performer, take.skeleton)
        live = PhysicsLive(
            take.skeleton,
            fps=args.fps,
            passes=args.passes,
            mass=args.mass,
            loads=parse_named(args.load, "--load", "kg"),
        )
    else:
        take = read_input(args.performer)
        require_humanoid(args.performer, take.skeleton)
        live = OMRLive(
            take.skeleton,
            target_skeleton(args, take),
            fps=args.fps,
            setup=args.setup or "lower",
            scaled=args.scaled_goals,
        )
    if args.max_gap is not None and args.max_gap < 0:
        raise RetargetError(f"--max-gap must be >= 0, got {args.max_gap}")
    stream = LiveStream(live, fps=args.fps, max_gap=args.max_gap)
    summary = asyncio.run(
        serve(stream, args.input, args.output or ["stdout"], duration=args.duration)
    )
    print(summary_line(summary), file=sys.stderr)
    if args.stats:
        write_json(args.stats, summary, inputs=[args.performer])
    return 0


def cmd_noise(args: argparse.Namespace) -> int:
    from ..filters import estimate_noise, still_window
    from ..io.formats import format_of
    from ..io.sensors import read_sensor_frames
    from ..methods.puppetry import parse_noise, sensor_stream

    if format_of(args.recording, "recording", strict=False):
        if not args.performer:
            raise RetargetError("a .jsonl recording needs --performer (its skeleton)")
        n = read_input(args.performer).skeleton.num_joints
        with open(args.recording, encoding="utf-8") as fh:
            frames = list(read_sensor_frames(fh, n, name=args.recording))
        if not frames:
            raise RetargetError(f"{args.recording}: no sensor frames")
        pos = np.stack([f[1] for f in frames])
        ori = np.stack([f[2] for f in frames])
        fps = args.rate
    else:
        motion = read_input(args.recording, args)
        noise = parse_noise(args.simulate) if args.simulate else (0.0, 0.0)
        pos, ori = sensor_stream(motion, noise)
        fps = motion.fps
    window = frame_slice(args.frames, len(pos)) if args.frames else None
    try:  # (a recording too short for a window: one line, not a traceback)
        window = window or still_window(pos, fps, args.seconds)
        r = estimate_noise(pos[window], ori[window])
    except ValueError as exc:
        raise RetargetError(f"{args.recording}: {exc}") from None
    start, stop, _ = window.indices(len(pos))
    data = {
        "format": "retarget-noise",
        "frames": [start, stop],
        "measurement_noise": r,
        "position_std": np.sqrt(np.diagonal(r, axis1=-2, axis2=-1)[:, :3].mean(-1)),
        "orientation_std_deg": np.degrees(
            np.sqrt(np.diagonal(r, axis1=-2, axis2=-1)[:, 3:].mean(-1))
        ),
    }
    write_json(args.output, data, inputs=[args.recording])
    print(
        f"noise over frames {start}:{stop}: position std {np.median(data['position_std']):.4g}, "
        f"orientation std {np.median(data['orientation_std_deg']):.4g} deg (median of sensors) "
        f"-> {args.output}"
    )
    return 0


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the sub-parsers ``sub`` of ``retarget``."""

    p = sub.add_parser(
        "puppet",
        help="online puppetry: sensor frames in (JSON lines), character poses out",
        description=(
            "Computer puppetry (Shin et al. 2001) on a live stream: read one JSON sensor "
            "frame per line, write one JSON pose per line, flushed (schema: "
            "retarget.io.sensors)."
        ),
    )
    p.add_argument("--stdin", action="store_true", required=True, help="read sensor frames")
    p.add_argument(
        "--performer",
        required=True,
        help="the performer: its skeleton wears the sensors, its frames calibrate",
    )
    p.add_argument(
        "--target", help="the character: a motion file's skeleton (.bvh, .amc, .npz) or an .asf"
    )
    p.add_argument("--target-preset", choices=Presets())
    p.add_argument("--fps", type=float, default=120.0, help="sensor rate (default 120)")
    p.add_argument("--noise-model", metavar="R.json", help="filter noise from `retarget noise`")
    p.add_argument(
        "--filter-lag",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="smooth each pose by the N frames after it: the pose of frame t comes out with "
        "frame t+N (0, the paper's filter, by default; 2 at 120 Hz halves the noise left)",
    )
    p.add_argument("--terrain", metavar="FILE", help="the environment (.json scene)")
    p.set_defaults(func=cmd_puppet, target_from=None, target_to=None, skeleton=None)

    p = sub.add_parser(
        "serve",
        help="live server: sensor or pose frames in (UDP or stdin), character poses out "
        "(WebSocket, UDP or stdout)",
        complete=_serve_options,
        description="Retarget a live stream frame by frame: one JSON frame per datagram or "
        "line in, one JSON pose per message out; late, duplicated and malformed frames are "
        "counted and skipped, gaps predicted through (schema: README 'Live server').",
    )
    p.add_argument("--method", choices=("puppetry", "omr", "physics"), default="puppetry")
    p.add_argument(
        "--performer",
        required=True,
        help="the performer: its skeleton wears the sensors (puppetry) or is the source "
        "skeleton of the poses (omr, physics); its frames calibrate puppetry",
    )
    p.add_argument(
        "--target", help="the character: a motion file's skeleton (.bvh, .amc, .npz) or an .asf"
    )
    p.add_argument("--target-preset", choices=Presets())
    p.add_argument(
        "--in", dest="input", default="stdin", metavar="ADDRESS", help="udp://HOST:PORT or stdin"
    )
    p.add_argument(
        "--out",
        dest="output",
        action="append",
        metavar="ADDRESS",
        help="ws://HOST:PORT, udp://HOST:PORT or stdout (repeatable; default stdout)",
    )
    p.add_argument("--fps", type=float, default=120.0, help="frame rate (default 120)")
    p.add_argument(
        "--max-gap", type=int, metavar="N", help="longest gap predicted through (default fps/2)"
    )
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    p.add_argument("--stats", metavar="FILE.json", help="write the counts and latencies on exit")
    p.add_argument("--noise-model", metavar="R.json", help="puppetry: filter noise")
    p.add_argument("--terrain", metavar="FILE", help="puppetry: the environment (.json scene)")
    p.add_argument("--setup", choices=("lower", "full"), help="omr: end-effectors (default lower)")
    p.add_argument("--scaled-goals", action="store_true", help="omr: goals scaled to the target")
    p.add_argument(
        "--passes",
        default="2D+1K",
        help="physics: Tak & Ko's applications, the paper's form online (default 2D+1K: "
        "poses 82 frames behind)",
    )
    p.add_argument("--mass", type=float, default=70.0, help="physics: body mass in kg")
    p.add_argument("--load", action="append", default=[], metavar="JOINT=KG", help="physics")
    p.set_defaults(func=cmd_serve, target_from=None, target_to=None, skeleton=None)

    p = sub.add_parser(
        "noise",
        help="measure sensor noise (the Kalman filter's R) on a still stretch",
        description=(
            "Estimate the measurement noise covariance R of every sensor (Shin et al. "
            "2001, section 3) from a recording: JSON sensor lines (.jsonl, with "
            "--performer) or a motion file (sensors at its joints)."
        ),
    )
    p.add_argument("recording", help=".jsonl sensor frames, or .bvh/.amc/.npz")
    p.add_argument("--performer", help="the skeleton of a .jsonl recording")
    p.add_argument("--frames", metavar="A:B", help="the still stretch (default: found)")
    p.add_argument("--seconds", type=float, default=0.5, help="length of a found stretch")
    p.add_argument(
        "--simulate", metavar="P,DEG", help="motion file: add this white noise first (a check)"
    )
    p.add_argument("--rate", type=float, default=120.0, help="frame rate of a .jsonl recording")
    p.add_argument("-o", "--output", required=True, help="R.json")
    motion_options(p)
    p.set_defaults(func=cmd_noise)
