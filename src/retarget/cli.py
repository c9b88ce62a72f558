"""The ``retarget`` command line.

Every error a user can cause (a malformed file, a bad option, an output that
would overwrite an input) is printed on one line and exits with code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import __version__
from ._json import strict_json
from .errors import RetargetError, RetargetWarning
from .mapping import (
    MappingError,
    map_for_method,
    map_skeletons,
    read_overrides,
    up_axis,
)
from .run import (
    dumps_json,
    frame_slice,
    parse_noise,
    read_character,
    read_input,
    require_humanoid,
    target_skeleton,
    write_json,
)

if TYPE_CHECKING:
    from .motion import Motion

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2, like the rest of the CLI."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# -- helpers ------------------------------------------------------------------------------------


def _write_result(
    args: argparse.Namespace, motion: Motion, report: dict[str, Any], inputs: Sequence[str]
) -> None:
    """Write ``motion`` to ``--output`` and, with ``--report``, ``report`` as JSON.

    Both files name ``inputs`` (the paths read) and the ``--skeleton`` file as their
    sources, the report also the output motion.
    """
    from .io.formats import write_motion

    sources = [*inputs, *([args.skeleton] if args.skeleton else [])]
    write_motion(args.output, motion, inputs=tuple(sources))
    if args.report:
        write_json(args.report, report, inputs=[*sources, args.output])


def _cell(value: float | None, width: int, digits: int) -> str:
    """A table cell: the number, or '-' where a measure has none (None, with a note)."""
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def _measure_table(rows: dict[str, dict[str, Any]]) -> str:
    keys = ["skate", "sliding_ratio", "penetration", "float"]
    titles = [
        ("skate %H/s", 12),
        ("sliding", 10),
        ("penetr. %H", 12),
        ("float %H", 10),
        ("pose dev°", 11),
        ("jerk ratio", 12),
    ]
    width = max(10, *(len(name) + 2 for name in rows))
    head = f"{'':<{width}}" + "".join(f"{t:>{w}}" for t, w in titles)
    lines = [head]
    first = next(iter(rows.values()))
    lines.append(
        f"{'source':<{width}}"
        + "".join(
            f"{first[k + '_source']:>{w}.3f}" for k, w in zip(keys, (12, 10, 12, 10), strict=True)
        )
        + f"{0.0:>11.2f}{1.0:>12.3f}"
    )
    for name, m in rows.items():
        lines.append(
            f"{name:<{width}}"
            + "".join(
                f"{m[k + '_result']:>{w}.3f}" for k, w in zip(keys, (12, 10, 12, 10), strict=True)
            )
            + _cell(m["pose_deviation_deg"], 11, 2)
            + _cell(m["smoothness"], 12, 3)
        )
    return "\n".join(lines)


# -- commands -----------------------------------------------------------------------------------


def cmd_info(args: argparse.Namespace) -> int:
    from .roles import find_roles, height

    motion = read_input(args.file, args)
    sk = motion.skeleton
    orders: dict[str, int] = {}
    for order in sk.euler_orders:
        orders[order or "-"] = orders.get(order or "-", 0) + 1
    unit_reason, up_reason = _world_reasons(args, args.file, motion)
    info: dict[str, Any] = {
        "file": args.file,
        "joints": sk.num_joints,
        "end_sites": sk.num_sites,
        "frames": motion.num_frames,
        "fps": motion.fps,
        "duration_s": motion.duration,
        "unit": sk.unit,
        "unit_reason": unit_reason,
        "up": sk.up,
        "up_reason": up_reason,
        "root": sk.names[0],
        "channel_orders": orders,
        "channels_per_frame": sk.num_channels,
        "hinge_or_partial_joints": [
            n for n, m in zip(sk.names, sk.dof_mask, strict=True) if 0 < m.sum() < 3
        ],
        "joints_with_limits": int(np.isfinite(sk.limits).any(axis=(1, 2)).sum()),
        "animated_translations": motion.translations is not None,
    }
    try:
        info["height"] = height(sk, find_roles(sk))
    except (RetargetError, KeyError) as exc:
        info["height"] = None
        info["height_note"] = str(exc)
    if args.json:
        sys.stdout.write(dumps_json(info))
        return 0
    for key, value in info.items():
        if isinstance(value, float):
            value = f"{value:.6g}"
        elif isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(value) or "none"
        print(f"{key:<24}{value}")
    return 0


def _world_reasons(args: argparse.Namespace, path: str, motion: Motion) -> tuple[str, str]:
    """Why a motion file read with ``args`` has its unit and its up axis
    (:mod:`retarget.world`): an option, the file's declaration or the body."""
    from . import world

    sk = motion.skeleton
    if getattr(args, "unit", None):
        unit = "given with --unit"
    elif Path(path).suffix.lower() == ".bvh":
        unit = world.find_unit(sk)[1]
    elif Path(path).suffix.lower() == ".amc":
        unit = f"declared by the ASF (:units length; lengths in {sk.unit})"
    else:
        unit = "stored in the file"
    up = "given with --up" if getattr(args, "up", None) else world.find_up(sk, motion)[1]
    return unit, up


def cmd_convert(args: argparse.Namespace) -> int:
    from .io.formats import write_motion

    motion = read_input(args.input, args)
    inputs = [args.input] + ([args.skeleton] if args.skeleton else [])
    write_motion(args.output, motion, inputs=tuple(inputs))
    print(f"wrote {args.output} ({motion.num_frames} frames, {motion.skeleton.num_joints} joints)")
    return 0


def _parse_scales(items: Sequence[str]) -> dict[str, float]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise RetargetError(f"--scale expects SEGMENT=FACTOR (e.g. thigh=0.6), got {item!r}")
    return out


def _parse_named(items: Sequence[str], option: str, unit: str) -> dict[str, float]:
    """``JOINT=VALUE[unit]`` items (``RightHand=8kg``) → {joint: value}."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            out[key.strip()] = float(value.strip().removesuffix(unit).strip())
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            raise RetargetError(
                f"{option} expects JOINT=VALUE (e.g. RightHand=8{unit}), got {item!r}"
            )
    return out


def cmd_physics(args: argparse.Namespace) -> int:
    from . import quat, world
    from .contacts import detect_contacts
    from .editing.constraints import parse_constraints
    from .physics import body_model
    from .physics.filter import (
        FilterSettings,
        PhysicsGoals,
        footplant_goals,
        parse_passes,
        physics_filter,
    )

    source = read_input(args.source, args)
    require_humanoid(args.source, source.skeleton)
    source = source[frame_slice(args.frames, source.num_frames)]
    passes = parse_passes(args.passes)
    mapping = None
    character = None
    file_up = world.up_of(source)
    frame = source  # the motion constraints and a hint refer to
    turn = quat.identity()  # its axes -> Y up, where the filter works
    if args.target or args.target_preset:  # onto another character first (Lee & Shin 1999)
        from .methods import get_method

        target = target_skeleton(args, source)
        character = args.target or f"preset:{args.target_preset}"
        mapping = map_for_method(source, target, None)
        source = get_method("hierarchical").run(mapping.motion, mapping.target).motion
        frame = source
    else:
        turn = world.axes_between(file_up, "y")
        source = world.upright(source)
    sk = source.skeleton

    def joint(name: str, option: str) -> int:
        if name not in sk.names:
            raise RetargetError(f"{option}: no joint named {name!r} in {character or args.source}")
        return sk.index(name)

    loads = _parse_named(args.load, "--load", "kg")
    for name in loads:
        joint(name, "--load")
    limits = {
        joint(k, "--torque-limit"): v
        for k, v in _parse_named(args.torque_limit, "--torque-limit", "Nm").items()
    }
    if any(v <= 0 for v in limits.values()):
        raise RetargetError("--torque-limit: limits must be positive (N m)")
    body = body_model(sk, args.mass, loads=loads)
    contacts = detect_contacts(source)
    positions = (
        footplant_goals(source, contacts, args.widen, footprints=args.footprints)
        if not args.free_feet
        else {}
    )
    inputs = [args.source, *([args.target] if args.target else [])]
    if args.constraints:
        try:
            text = Path(args.constraints).read_text(encoding="utf-8")
        except OSError as exc:
            raise RetargetError(
                f"{args.constraints}: cannot read the file ({exc.strerror})"
            ) from None
        extra = parse_constraints(text, frame, name=args.constraints)
        for p, goal in extra.positions.items():
            goal = quat.rotate(turn, goal)
            merged = positions.get(p, np.full((source.num_frames, 3), np.nan)).copy()
            have = np.isfinite(goal).all(axis=1)
            merged[have] = goal[have]
            positions[p] = merged
        inputs.append(args.constraints)
    hint = None
    if args.hint:
        hint = read_input(args.hint, args)[frame_slice(args.frames, source.num_frames)]
        hint = world.upright(hint) if mapping is None else hint
        if hint.skeleton.names != sk.names or hint.num_frames != source.num_frames:
            raise RetargetError(f"{args.hint}: a hint must have the source's joints and frames")
        inputs.append(args.hint)
    goals = PhysicsGoals(
        contacts,
        positions,
        balance=not args.no_balance,
        torque_limits=limits,
        momentum=not args.no_momentum,
    )
    settings = FilterSettings(spacing=args.spacing, iterations=args.iterations)
    result = physics_filter(source, body, goals, passes, settings, hint=hint)
    report = {**result.report, "source": args.source, "output": args.output}
    if character:
        report["target"] = character
    if mapping is None:  # back into the file's axes
        motion = world.reorient(result.motion, file_up)
    else:
        motion = mapping.finish(result.motion)
    _write_result(args, motion, report, inputs)
    first, last = report["stages"][0], report["stages"][-1]
    print(
        f"physics: {source.num_frames} frames, {'+'.join(passes)} in {report['seconds']:.2f} s; "
        f"ZMP outside the support on {100 * first['zmp_outside']:.1f} % -> "
        f"{100 * last['zmp_outside']:.1f} % of support frames -> {args.output}"
    )
    return 0


def cmd_character(args: argparse.Namespace) -> int:
    from .characters import make_character
    from .io.formats import write_motion
    from .motion import Motion
    from .roles import height

    source = read_input(args.source, args)
    scales = _parse_scales(args.scale) if args.scale else None
    if args.preset is None and scales is None and args.uniform == 1.0:
        raise RetargetError("say how to scale: --preset NAME, --scale SEGMENT=F ... or --uniform S")
    require_humanoid(args.source, source.skeleton)  # (a character is a target: a humanoid)
    target = make_character(source.skeleton, scales, preset=args.preset, uniform=args.uniform)
    rest = Motion(
        target, target.offsets[:1], np.tile([1.0, 0, 0, 0], (1, target.num_joints, 1)), source.fps
    )
    write_motion(args.output, rest, inputs=(args.source,))
    print(
        f"wrote {args.output}: height {height(target):.4g} {target.unit} "
        f"(source {height(source.skeleton):.4g})"
    )
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    from .editing.constraints import parse_constraints
    from .editing.edit import edit_motion

    motion = read_input(args.source, args)
    motion = motion[frame_slice(args.frames, motion.num_frames)]
    try:
        text = Path(args.constraints).read_text(encoding="utf-8")
    except OSError as exc:
        raise RetargetError(f"{args.constraints}: cannot read the file ({exc.strerror})") from None
    constraints = parse_constraints(text, motion, name=args.constraints)
    result = edit_motion(
        motion,
        constraints,
        knot_spacing=args.knot_spacing,
        levels=args.levels,
        keep_feet=not args.free_feet,
        exact=not args.approximate,
    )
    _write_result(args, result.motion, dict(result.report), [args.source, args.constraints])
    last = result.report["levels"][-1]
    print(
        f"edit: {motion.num_frames} frames, constraints met within "
        f"{last['max_error']:.3g} % of height -> {args.output}"
    )
    return 0


def _read_positions(path: str, num_frames: int) -> dict[str, np.ndarray]:
    """Measured positions: one (F, 3) array per point name in an .npz archive."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: np.asarray(npz[k], dtype=np.float64) for k in npz.files}
    except (OSError, ValueError) as exc:
        raise RetargetError(f"{path}: cannot read the positions archive ({exc})") from None
    if not arrays:
        raise RetargetError(f"{path}: no arrays; expected one (F, 3) array per point name")
    for name, a in arrays.items():
        if a.shape != (num_frames, 3):
            raise RetargetError(
                f"{path}: array {name!r} has shape {a.shape}, expected ({num_frames}, 3)"
            )
    return arrays


def cmd_enhance(args: argparse.Namespace) -> int:
    from .methods.omr import enhance_motion

    motion = read_input(args.source, args)
    motion = motion[frame_slice(args.frames, motion.num_frames)]
    measured = _read_positions(args.positions, motion.num_frames)
    unknown = [n for n in measured if n not in motion.skeleton.point_names]
    if unknown:
        raise RetargetError(
            f"{args.positions}: no joint or end site named {', '.join(map(repr, unknown))}"
        )
    result = enhance_motion(motion, measured)
    _write_result(args, result.motion, dict(result.report), [args.source, args.positions])
    before = max(result.report["mean_error_before"].values())
    after = max(result.report["mean_error_after"].values())
    print(
        f"enhance: {motion.num_frames} frames, end-effector error {before:.4g} -> "
        f"{after:.4g} {motion.skeleton.unit} (worst point, mean) -> {args.output}"
    )
    return 0


def cmd_map(args: argparse.Namespace) -> int:
    from .roles import height

    source = read_input(args.source, args)
    target = read_character(args.target)
    overrides = read_overrides(args.map) if args.map else {}
    require_humanoid(args.source, source.skeleton, overrides.get("source"), side="source")
    require_humanoid(args.target, target, overrides.get("target"), side="target")
    try:
        jm = map_skeletons(
            source.skeleton,
            target,
            overrides=overrides,
            source_up=up_axis(source.skeleton, source),
            target_up=up_axis(target),
        )
    except MappingError as exc:  # (roles the --map file left missing): which files
        raise MappingError(f"{args.source} onto {args.target}: {exc}") from None
    sides = (("source", args.source, source.skeleton), ("target", args.target, target))
    for which, path, sk in sides:
        roles = jm.source_roles if which == "source" else jm.target_roles
        tall = f"height {height(sk):.4g} {sk.unit}, "
        spine = len(_path_between(sk, roles.get("hips"), roles.get("head"))) - 2
        fingers = sum(1 for n in sk.names if _FINGER.search(n))
        ends = [
            f"{r} is the end site {sk.point_names[p]!r}"
            for r, p in roles.items()
            if r.split("_", 1)[-1] in ("wrist", "ankle") and p >= sk.num_joints
        ]
        print(
            f"{which} {path}: {sk.num_joints} joints, {tall}unit {sk.unit}, up {sk.up or '?'}, "
            f"{max(spine, 0)} joints between hips and head, {fingers} finger joints"
            + "".join(f"; {e}" for e in ends)
        )
    s_names, t_names = source.skeleton.point_names, target.point_names
    print(f"{'role':<20} {'source':<24} target")
    for role, p in sorted(jm.target_roles.items(), key=lambda kv: kv[1]):
        src = s_names[jm.source_roles[role]] if role in jm.source_roles else "-"
        print(f"{role:<20} {src:<24} {t_names[p]}")
    driven = [
        f"{target.names[t]} <- {source.skeleton.names[d]}"
        for t, d in enumerate(jm.driver)
        if d >= 0 and target.names[t] not in {t_names[p] for p in jm.target_roles.values()}
    ]
    if driven:
        print("spine joints by bone-path share: " + ", ".join(driven))
    kept = [target.names[t] for t, d in enumerate(jm.driver) if d < 0]
    used = set(jm.driver.tolist())
    folded = [n for j, n in enumerate(source.skeleton.names) if j not in used]
    print(
        "target joints without a source joint (rest rotation, or taking up an aim their "
        "parent's channels miss): " + (", ".join(kept) or "none")
    )
    print("source joints folded into their parents: " + (", ".join(folded) or "none"))
    return 0


_FINGER = re.compile(r"thumb|index|middle|ring|pinky|finger", re.IGNORECASE)
"""Finger joint names (Mixamo, LAFAN1, Biovision, CMU, Unreal), counted by ``map``."""


def _path_between(skeleton: Any, top: int | None, bottom: int | None) -> list[int]:
    """Joints from ``top`` down to ``bottom`` (both included); [] when either is None."""
    if top is None or bottom is None:
        return []
    chain = [int(p) for p in skeleton.chain(bottom)]
    return chain[chain.index(top) :] if top in chain else []


def cmd_run(args: argparse.Namespace) -> int:
    from .run import RunJob, run_job

    report = run_job(RunJob.from_args(args))
    m = report.get("measures", {})
    skate = f", skate {m['skate_result']:.3g} vs source {m['skate_source']:.3g} %H/s" if m else ""
    fps = report.get("frames_per_second")
    rate = f"{fps:.0f} frames/s" if fps is not None else "- frames/s (no time measured)"
    print(f"{args.method}: {report['frames']} frames at {rate} -> {args.output}{skate}")
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    import glob

    from .batch import plan_batch, run_batch
    from .run import RunJob

    if not (args.target or args.target_preset or args.target_from):
        raise RetargetError("say which character: --target TARGET.bvh or --target-preset NAME")
    matched = {p for pattern in args.sources for p in glob.glob(pattern, recursive=True)}
    sources = sorted(p for p in matched if Path(p).suffix.lower() in (".bvh", ".amc", ".npz"))
    if not sources:
        raise RetargetError(f"no motion file (.bvh, .amc, .npz) matches {' '.join(args.sources)}")
    template = RunJob.from_args(args, source="", output="", report=None)
    tasks = plan_batch(sources, args.out, template, suffix=f".{args.format}")
    manifest = Path(args.manifest or Path(args.out) / "manifest.jsonl")
    summary = run_batch(
        tasks,
        manifest,
        engine=args.engine,
        workers=args.workers,
        scheduler=args.scheduler,
        progress=False if args.no_progress else None,
    )
    print(
        f"batch: {summary.done} done, {summary.skipped} unchanged, {summary.failed} failed "
        f"in {summary.seconds:.1f} s ({summary.clips_per_minute:.1f} clips/min) -> {manifest}"
    )
    for _, message in summary.errors[:10]:
        print(f"  failed: {message}", file=sys.stderr)
    return 1 if summary.failed else 0


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
    from .filters import KalmanParameters

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


def _puppeteer(args: argparse.Namespace):
    """The Puppeteer of ``puppet`` and ``serve``: performer (and calibration take),
    character, objects, noise model and lag."""
    from .io.scene import read_environment
    from .online.puppetry import Puppeteer

    take = read_input(args.performer)
    performer = take.skeleton
    require_humanoid(args.performer, performer)
    target = target_skeleton(args, take)
    options: dict[str, Any] = {}
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
        from .filters import KalmanParameters

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
    from .io.sensors import format_pose, read_sensor_frames
    from .online.puppetry import EFFECTORS

    puppeteer = _puppeteer(args)
    performer = puppeteer.performer
    out = sys.stdout
    labels: list[Any] = []  # with a filter lag, each pose is that of the frame lag back
    for frame, p, q in read_sensor_frames(sys.stdin, performer.num_joints):
        labels = [*labels, frame][-(args.filter_lag + 1) :]
        root, rot = puppeteer.step(p, q)
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

    from .online.server import serve, summary_line
    from .online.stream import LiveStream, OMRLive, PuppetryLive

    if args.method == "puppetry":
        live: Any = PuppetryLive(_puppeteer(args))
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
    from .filters import estimate_noise, still_window
    from .io.sensors import read_sensor_frames
    from .methods.puppetry import sensor_stream

    if args.recording.endswith(".jsonl"):
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


def cmd_eval(args: argparse.Namespace) -> int:
    from .metrics import MEASURES, evaluate

    source = read_input(args.source, args)
    require_humanoid(args.source, source.skeleton)
    source = source[frame_slice(args.frames, source.num_frames)]
    result = read_input(args.result, args)
    require_humanoid(args.result, result.skeleton)
    if result.num_frames != source.num_frames:
        raise RetargetError(
            f"{args.result} has {result.num_frames} frames, the source {source.num_frames}: "
            "pass the --frames used for the run"
        )
    measures = evaluate(source, result)
    if args.json:
        sys.stdout.write(dumps_json(measures))
        return 0
    for key in MEASURES:
        if key not in measures:
            continue
        if measures[key] is None:  # not measurable here: '-' and the reason
            print(f"{key:<24}{'-':>12}   {measures.get(key + '_note', MEASURES[key])}")
        else:
            print(f"{key:<24}{measures[key]:>12.4f}   {MEASURES[key]}")
    return 0


def _named_motions(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """``args.files`` read, each as (file name, motion), cut to ``--frames``."""
    motions = []
    for path in args.files:
        motion = read_input(path, args)
        if args.frames:
            motion = motion[frame_slice(args.frames, motion.num_frames)]
        motions.append((Path(path).name, motion))
    return motions


def _read_report(path: str) -> dict[str, Any]:
    """A run's ``--report`` JSON object."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RetargetError(f"{path}: not JSON ({exc})") from None
    if not isinstance(report, dict):
        raise RetargetError(f"{path}: expected a JSON object (a run's --report)")
    return report


def cmd_view(args: argparse.Namespace) -> int:
    from .viz.viewer import live_motion, write_viewer

    if not (args.files or args.live):
        raise RetargetError("nothing to view: give motion files or --live ws://HOST:PORT")
    motions = ([live_motion(args.live)] if args.live else []) + _named_motions(args)
    report = _read_report(args.report) if args.report else None
    out = write_viewer(
        args.output,
        motions,
        report=report,
        overlay=args.overlay,
        inputs=[*args.files, *([args.report] if args.report else [])],
        live=args.live,
    )
    print(f"view: {len(motions)} motion(s){' and ' + args.live if args.live else ''} -> {out}")
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    from .viz.render import render_video

    motions = _named_motions(args)
    width, _, high = args.size.partition("x")
    try:
        size = (int(width), int(high))
    except ValueError:
        raise RetargetError(f"--size: expected WIDTHxHEIGHT in pixels, got {args.size!r}") from None
    out = render_video(args.output, motions, fps=args.rate, size=size, inputs=args.files)
    print(f"render: {len(motions)} motion(s) -> {out}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from .viz.plots import plot_feet, plot_joint_angles, plot_report

    ext = Path(args.output).suffix.lower()
    if ext not in (".png", ".svg", ".pdf"):
        raise RetargetError(
            f"{args.output}: cannot write '{ext}' figures; writable: .png, .svg, .pdf"
        )
    first = args.inputs[0]
    if Path(first).suffix.lower() == ".json":
        if len(args.inputs) > 1:
            raise RetargetError("give one report, or motion files (the source first)")
        try:
            out = plot_report(_read_report(first), args.output, fps=args.fps)
        except ValueError as exc:
            raise RetargetError(f"{first}: {exc}") from None
    else:
        source = read_input(first, args)
        results = [(Path(p).name, read_input(p, args)) for p in args.inputs[1:]]
        if args.frames:
            pick = frame_slice(args.frames, source.num_frames)
            source = source[pick]
            results = [(name, m[pick]) for name, m in results]
        require_humanoid(first, source.skeleton)
        for path, (_, m) in zip(args.inputs[1:], results, strict=True):
            if m.num_frames != source.num_frames:  # (frame by frame against the source)
                raise RetargetError(
                    f"{path} has {m.num_frames} frames, the source {source.num_frames}: "
                    "give motions of the same frames (--frames for a run's source)"
                )
        if args.kind == "angles":
            out = plot_joint_angles(source, results, args.output)
        else:
            out = plot_feet(source, results, args.output)
    print(f"plot: {out}")
    return 0


def cmd_transition(args: argparse.Namespace) -> int:
    from .editing.transition import transition

    first, second = read_input(args.first, args), read_input(args.second, args)
    result = transition(first, second, args.blend, warp=not args.no_warp, fit=not args.no_fit)
    report = {**result.report, "first": args.first, "second": args.second, "output": args.output}
    _write_result(args, result.motion, report, [args.first, args.second])
    skate = report["skate"]
    after = f" -> {skate['window_after']:.3g}" if "window_after" in skate else ""
    print(
        f"transition: {first.num_frames} + {second.num_frames} frames, blend {args.blend} -> "
        f"{args.output} ({result.motion.num_frames} frames); skate in the window "
        f"{skate['window_before']:.3g}{after} %H/s"
    )
    return 0


def cmd_samples(args: argparse.Namespace) -> int:
    from .samples import SAMPLES, sample_path

    for name in args.names or list(SAMPLES):
        print(sample_path(name))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .characters import PRESETS, make_character
    from .contacts import detect_contacts
    from .io.bvh import read_bvh, write_bvh
    from .methods import METHODS
    from .metrics import evaluate
    from .motion import Motion
    from .samples import sample_path
    from .viz.plots import plot_feet
    from .viz.viewer import write_viewer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    methods = [METHODS[name] for name in dict.fromkeys(args.method or ["copy", "hierarchical"])]
    steps = tqdm(
        total=3 + len(PRESETS) * (1 + 2 * len(methods)),
        desc="demo",
        unit="step",
        file=sys.stderr,
        disable=args.quiet,
    )
    steps.set_postfix_str("fetching the sample walk")
    walk_path = sample_path("lafan_walk.bvh")
    steps.update()
    steps.set_postfix_str("reading")
    source = read_bvh(walk_path)
    if args.frames:
        source = source[frame_slice(args.frames, source.num_frames)]
    contacts = detect_contacts(source)
    steps.update()
    report: dict[str, Any] = {
        "source": str(walk_path),
        "frames": source.num_frames,
        "methods": [m.name for m in methods],
        "characters": {},
    }
    results = []
    rows: dict[str, dict[str, Any]] = {}
    for name in PRESETS:
        target = make_character(source.skeleton, preset=name)
        rest = Motion(
            target,
            target.offsets[:1],
            np.tile([1.0, 0, 0, 0], (1, target.num_joints, 1)),
            source.fps,
        )
        write_bvh(out / f"{name}.bvh", rest)
        steps.update()
        report["characters"][name] = {}
        for method in methods:
            steps.set_postfix_str(f"retargeting onto {name} ({method.name})")
            result = method.run(source, target)
            output = out / f"walk_{name}_{method.name}.bvh"
            write_bvh(output, result.motion)
            steps.update()
            steps.set_postfix_str(f"measuring {name} ({method.name})")
            measures = evaluate(
                source, result.motion, contacts=contacts, goals=result.goals or None
            )
            report["characters"][name][method.name] = {
                "report": dict(result.report),
                "measures": measures,
                "output": str(output),
            }
            rows[f"{name} {method.name}"] = measures
            results.append((f"{name} ({method.name})", result.motion))
            steps.update()
    steps.set_postfix_str("plotting")
    plot_feet(source, results, out / "feet.png", contacts=contacts)
    write_json(str(out / "report.json"), report, inputs=[str(walk_path)])
    steps.set_postfix_str("writing the viewer")
    viewer = write_viewer(
        out / "view.html", [(walk_path.name, source), *results], inputs=[str(walk_path)]
    )
    steps.update()
    steps.close()
    print(f"\n{source.num_frames} frames of {walk_path.name} retargeted:")
    print(_measure_table(rows))
    print(f"\nwrote {out}/: {', '.join(sorted(p.name for p in out.iterdir()))}")
    print(f"open {viewer.resolve()} in a browser to watch them")
    return 0


# -- verbs (Rose, Sloan & Cohen 2001) ------------------------------------------------------------


def _read_verb(path: str):
    from .errors import FormatError
    from .ik.verbs import verb_from_arrays
    from .io.npz import read_npz_arrays

    reference, arrays = read_npz_arrays(path)
    try:
        return verb_from_arrays(reference, arrays)
    except (KeyError, ValueError) as exc:
        raise FormatError(path, None, f"not a verb archive ({exc})") from None


def _read_ik_verb(path: str):
    """A verb whose adverbs are end-effector goals."""
    verb = _read_verb(path)
    if verb.effector is None:
        raise RetargetError(f"{path}: this verb's adverbs are not end-effector goals")
    return verb


def _write_verb(path: str, verb, inputs: tuple[str, ...] = ()) -> None:
    from .ik.verbs import verb_arrays
    from .io.npz import write_npz

    if Path(path).suffix.lower() != ".npz":
        raise RetargetError(f"{path}: a verb is written as .npz")
    reference, arrays = verb_arrays(verb)
    write_npz(path, reference, inputs=inputs, extra=arrays)


def _spec_verb(path: str):
    """A verb from a SPEC.json (README, "Verbs")."""
    from .ik.verbs import EndEffector, VerbExample, build_verb

    spec = _read_report(path)  # a JSON object
    folder = Path(path).parent
    motions: dict[str, Motion] = {}

    def clip(entry: dict, what: str) -> Motion:
        if "file" not in entry:
            raise RetargetError(f"{path}: {what} needs a 'file'")
        name = str(folder / entry["file"])
        if name not in motions:
            motions[name] = read_input(name)
        return motions[name]

    examples = []
    entries = spec.get("examples")
    if not isinstance(entries, list) or len(entries) < 2:
        raise RetargetError(f"{path}: 'examples' must list at least two examples")
    for k, entry in enumerate(entries):
        m = clip(entry, f"example {k}")
        if "frame" in entry:
            m = m[int(entry["frame"]) : int(entry["frame"]) + 1]
        elif "frames" in entry:
            m = m[frame_slice(str(entry["frames"]), m.num_frames)]
        keys = tuple(float(t) for t in entry.get("keytimes", [0.0]))
        adverb = tuple(float(a) for a in entry["adverb"]) if "adverb" in entry else None
        examples.append(VerbExample(m.root_position, m.rotations, keys, adverb))
    sk = next(iter(motions.values())).skeleton
    joints = [int(j) for j in sk.indices(spec.get("joints", list(sk.names)))]
    effector = None
    if "end_effector" in spec:
        axes = tuple(int(a) for a in spec.get("axes", [0, 1, 2]))
        base = sk.index(spec.get("base", sk.names[0]))
        frame = np.array([1.0, 0.0, 0.0, 0.0])
        effector = EndEffector(sk.index(spec["end_effector"]), base, frame, axes)
    reference = None
    if "reference" in spec:
        ref = clip(spec["reference"], "the reference")[int(spec["reference"].get("frame", 0))]
        reference = (ref.root_position[0], ref.rotations[0])
    try:
        verb = build_verb(
            sk,
            examples,
            joints,
            effector=effector,
            key=int(spec.get("key", 0)),
            reference=reference,
            fps=next(iter(motions.values())).fps,
        )
    except ValueError as exc:
        raise RetargetError(f"{path}: {exc}") from None
    return verb, tuple(motions)


def cmd_verb_build(args: argparse.Namespace) -> int:
    verb, inputs = _spec_verb(args.spec)
    _write_verb(args.output, verb, (args.spec, *inputs))
    print(f"verb: {verb.basis.examples} examples, {verb.basis.dimension} adverbs -> {args.output}")
    return 0


def cmd_verb_example(args: argparse.Namespace) -> int:
    from .ik.verb_examples import arm3_verb, reach_verb
    from .samples import sample_path

    inputs: tuple[str, ...] = ()
    if args.name == "arm3":
        verb = arm3_verb()
    else:
        clip = str(sample_path("lafan_walk.bvh"))
        verb, inputs = reach_verb(read_input(clip), args.examples), (clip,)
    _write_verb(args.output, verb, inputs)
    print(f"verb {args.name}: {verb.basis.examples} examples -> {args.output}")
    return 0


def cmd_verb_solve(args: argparse.Namespace) -> int:
    from .io.formats import write_motion
    from .motion import Motion

    verb = _read_ik_verb(args.verb)
    goal = np.array(args.goal, dtype=np.float64)
    if goal.shape != (verb.basis.dimension,):
        raise RetargetError(f"--goal needs {verb.basis.dimension} numbers for this verb")
    t0 = time.perf_counter()
    sol = verb.solve(goal, search=args.search, exact=args.exact)
    seconds = time.perf_counter() - t0
    error = float(np.linalg.norm(sol.achieved - goal))
    if args.output:
        keys = verb.keytimes.shape[1] > 1 or any(len(c) > 1 for c in verb.curves)
        if keys:
            motion = verb.motion(sol.adverbs)
        else:
            motion = Motion(verb.skeleton, sol.root_position[None], sol.rotations[None], verb.fps)
        write_motion(args.output, motion, inputs=(args.verb,))
    out = {
        "goal": goal,
        "adverb": sol.adverbs,
        "achieved": sol.achieved,
        "error": error,
        "error_percent": error * 100.0 / verb.scale,
        "seconds": seconds,
    }
    if args.json:
        print(strict_json(out))
    else:
        print(
            f"achieved {np.round(sol.achieved, 4).tolist()} ({verb.skeleton.unit}), "
            f"error {error:.4g} = {out['error_percent']:.3f} % of {verb.scale:.4g}"
        )
    return 0


def cmd_verb_errormap(args: argparse.Namespace) -> int:
    from .ik.verbs import error_map
    from .viz.plots import plot_error_map

    verb = _read_ik_verb(args.verb)
    search = verb.search if args.search is None else args.search
    emap = error_map(verb, args.resolution, search=search)
    print(
        f"{len(emap.grid)} grid points in the working volume: error mean {emap.mean:.4f} %, "
        f"max {emap.max:.4f} % of {verb.scale:.4g} {verb.skeleton.unit}"
    )
    if args.output:
        print(f"plot: {plot_error_map(verb, search, args.output)}")
    return 0


def cmd_verb_refine(args: argparse.Namespace) -> int:
    from .ik.verbs import refine

    verb = _read_ik_verb(args.verb)
    refined, history = refine(verb, args.max_pseudo, hybrid=args.hybrid, search=args.search)
    _write_verb(args.output, refined, (args.verb,))
    (m0, x0), (m1, x1) = history[0], history[-1]
    print(
        f"{refined.pseudo_examples - verb.pseudo_examples} pseudo-examples: error mean "
        f"{m0:.4f} -> {m1:.4f} %, max {x0:.4f} -> {x1:.4f} % -> {args.output}"
    )
    return 0


# -- the parser ---------------------------------------------------------------------------------


def _unit_option(text: str) -> str:
    from .world import parse_unit

    try:
        return parse_unit(text)
    except RetargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _up_option(text: str) -> str:
    from .world import parse_up

    try:
        return parse_up(text)
    except RetargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    from .batch import ENGINES
    from .characters import PRESETS, SEGMENTS
    from .methods import METHODS

    parser = _Parser(prog="retarget", description="Retarget, edit and clean captured motion.")
    parser.add_argument("--version", action="version", version=f"retarget {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def motion_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--skeleton", help="the .asf of an .amc input (default: the .asf beside it)")
        p.add_argument("--fps", type=float, help="frame rate of an .amc input (default 120)")
        p.add_argument(
            "--unit",
            type=_unit_option,
            metavar="UNIT",
            help="length unit of the motion file(s) read (not of a --target character): "
            "mm, cm, dm, m, in, ft, in/0.45 (CMU's ASF unit); default: declared by the "
            "file, or for BVH found from the body's size (`retarget info` says why)",
        )
        p.add_argument(
            "--up",
            type=_up_option,
            metavar="AXIS",
            help="world up axis of the motion file(s) read (not of a --target character): "
            "x, y, z, -x, -y, -z; default: found from the body (head above hips over the "
            "frames)",
        )

    def run_options(p: argparse.ArgumentParser) -> None:
        """The character, method and its options: shared by run and batch."""
        p.add_argument(
            "--target", help="the character: a motion file's skeleton (.bvh, .amc, .npz) or an .asf"
        )
        p.add_argument("--target-preset", choices=sorted(PRESETS))
        p.add_argument(
            "--target-from",
            metavar="A.bvh",
            help="a character morphing over the clip: its first frame's (with --target-to)",
        )
        p.add_argument(
            "--target-to",
            metavar="B.bvh",
            help="the morph's last frame's character (same joints as A; offsets linear in time)",
        )
        p.add_argument(
            "--method", default="hierarchical", choices=list(METHODS), help="default: hierarchical"
        )
        p.add_argument("--frames", metavar="A:B", help="only these source frames")
        p.add_argument(
            "--terrain", metavar="FILE", help="ground to walk on (.json scene or .npz height field)"
        )
        p.add_argument(
            "--setup",
            choices=("lower", "full"),
            help="omr: end-effectors toe tips + pelvis x,z (lower, the paper's walk) or + hands",
        )
        p.add_argument(
            "--scaled-goals",
            action="store_true",
            help="omr: goals scaled to the target's height (default: strides its legs can take)",
        )
        p.add_argument(
            "--limits",
            choices=("strict", "source"),
            help="hierarchical, a target with joint limits: they hold on every frame (strict, "
            "the default) or are widened to the source's own range (source, the default for a "
            "target of another hierarchy)",
        )
        p.add_argument(
            "--noise",
            metavar="P,DEG",
            help="puppetry: white sensor noise, position std (file unit) and orientation std (deg)",
        )
        p.add_argument(
            "--sensor-fps",
            type=float,
            help="puppetry: sensor rate (default: the clip's; paper 120)",
        )
        p.add_argument(
            "--no-root-estimation",
            action="store_true",
            help="puppetry: start the body from the captured root (Table I's 'without')",
        )
        p.add_argument(
            "--no-foot-hold",
            action="store_true",
            help="puppetry: goals are the performer's feet even where planted (the paper's)",
        )
        p.add_argument("--seed", type=int, help="puppetry: seed of the sensor noise")
        p.add_argument(
            "--map",
            metavar="MAP.json",
            help='roles completing the joint mapping: {"source": {role: joint}, "target": {...}}',
        )
        motion_options(p)

    p = sub.add_parser(
        "info", help="joints, frames, fps, unit, height, channel orders of a motion file"
    )
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="print JSON")
    motion_options(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("convert", help="convert between .bvh, .amc (+.asf) and .npz")
    p.add_argument("input")
    p.add_argument("output", help=".bvh or .npz")
    motion_options(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("character", help="make a target character by scaling a skeleton's segments")
    p.add_argument("source", help="motion file whose skeleton is the model")
    p.add_argument("--preset", choices=sorted(PRESETS))
    p.add_argument(
        "--scale", nargs="+", metavar="SEGMENT=F", help=f"segments: {', '.join(SEGMENTS)}"
    )
    p.add_argument("--uniform", type=float, default=1.0, help="factor on every bone")
    p.add_argument("-o", "--output", required=True, help="BVH with one rest frame")
    motion_options(p)
    p.set_defaults(func=cmd_character)

    methods = "\n".join(f"  {m.name:<14}{m.summary}" for m in METHODS.values())
    p = sub.add_parser(
        "run",
        help="retarget a motion onto a character",
        description=f"Retarget SRC onto a character.\n\nmethods:\n{methods}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source")
    p.add_argument("-o", "--output", required=True, help=".bvh or .npz")
    p.add_argument(
        "--report", metavar="REPORT.json", help="write what the method did and the measures"
    )
    run_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "batch",
        help="retarget every clip matching a glob, resumably, on a process pool, Dask or Ray",
        description="Retarget SRC_GLOB's clips onto a character, one task per clip. A manifest "
        "(JSON lines) records each clip's hashes, output, measures, time and error; a re-run "
        "skips clips whose inputs and output are unchanged. Exit 1 when a clip failed.",
    )
    p.add_argument("sources", nargs="+", metavar="SRC_GLOB", help="clips (quote globs: '**/*.bvh')")
    p.add_argument("--out", required=True, metavar="DIR", help="outputs, by their source paths")
    p.add_argument("--format", choices=("bvh", "npz"), default="bvh", help="default: bvh")
    p.add_argument(
        "--engine", choices=ENGINES, default="local", help="local process pool (default), dask, ray"
    )
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)"
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler or Ray cluster")
    p.add_argument("--manifest", metavar="FILE", help="default: DIR/manifest.jsonl")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    run_options(p)
    p.set_defaults(func=cmd_batch)

    p = sub.add_parser(
        "map",
        help="print the joint mapping between two skeletons of any hierarchy",
        description="Roles found on both skeletons, the target joints each source joint "
        "drives, and what stays unmapped (exit 2 when a required role is missing).",
    )
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--map", metavar="MAP.json", help="roles completing or overriding the found")
    motion_options(p)
    p.set_defaults(func=cmd_map)

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
    p.add_argument("--target-preset", choices=sorted(PRESETS))
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
        description="Retarget a live stream frame by frame: one JSON frame per datagram or "
        "line in, one JSON pose per message out; late, duplicated and malformed frames are "
        "counted and skipped, gaps predicted through (schema: README 'Live server').",
    )
    p.add_argument("--method", choices=("puppetry", "omr"), default="puppetry")
    p.add_argument(
        "--performer",
        required=True,
        help="the performer: its skeleton wears the sensors (puppetry) or is the source "
        "skeleton of the poses (omr); its frames calibrate puppetry",
    )
    p.add_argument(
        "--target", help="the character: a motion file's skeleton (.bvh, .amc, .npz) or an .asf"
    )
    p.add_argument("--target-preset", choices=sorted(PRESETS))
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

    p = sub.add_parser(
        "physics",
        help="make a motion physically plausible (Tak & Ko 2005): balance, torque limits, momentum",
        description="Kinematic (K) and dynamic (D) filter applications in sequence; the report "
        "gives the ZMP, torque and momentum measures of the source and after each.",
    )
    p.add_argument("source")
    p.add_argument(
        "--target",
        help="filter on this character instead: the source retargeted onto it first by the "
        "hierarchical method (a motion file's skeleton or an .asf)",
    )
    p.add_argument("--target-preset", choices=sorted(PRESETS), help="the same, onto a preset")
    p.set_defaults(target_from=None, target_to=None)
    p.add_argument("--passes", default="2D+1K", help="e.g. 1K+3D+1K (default 2D+1K)")
    p.add_argument("--mass", type=float, default=70.0, help="body mass in kg, loads excluded")
    p.add_argument("--load", action="append", default=[], metavar="JOINT=KG")
    p.add_argument("--torque-limit", action="append", default=[], metavar="JOINT=NM")
    p.add_argument(
        "--widen",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="move the feet outward by this share of height (wide steps)",
    )
    p.add_argument("--constraints", metavar="C.json", help="more position goals (as for edit)")
    p.add_argument("--hint", metavar="HINT.bvh", help="a kinematic hint: the first prior")
    p.add_argument("--free-feet", action="store_true", help="no footplant goals")
    p.add_argument(
        "--footprints",
        action="store_true",
        help="hold each footplant at its mean position (default: where the source has it)",
    )
    p.add_argument("--no-balance", action="store_true")
    p.add_argument("--no-momentum", action="store_true")
    p.add_argument(
        "--spacing",
        type=float,
        default=4.0,
        help="frames per knot of the B-spline (default 4; 2 for fast motion)",
    )
    p.add_argument("--iterations", type=int, default=3, help="Kalman updates per application")
    p.add_argument("--frames", metavar="A:B", help="only these frames")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--report", metavar="REPORT.json")
    motion_options(p)
    p.set_defaults(func=cmd_physics)

    p = sub.add_parser(
        "edit",
        help="pin end-effectors at frames; the motion bends smoothly around them",
        description='Constraints (JSON): a list of {"joint": NAME, "frame": F or "frames": [A, B], '
        '"position": [x, y, z] | "offset": [dx, dy, dz], "orientation": [w, x, y, z]}.',
    )
    p.add_argument("source")
    p.add_argument("--constraints", required=True, metavar="C.json")
    p.add_argument(
        "--knot-spacing", type=float, default=16.0, help="frames per knot, coarsest level"
    )
    p.add_argument("--levels", type=int, default=4, help="levels, the spacing halving each time")
    p.add_argument("--free-feet", action="store_true", help="do not hold the motion's footplants")
    p.add_argument("--approximate", action="store_true", help="skip the final exact IK pass")
    p.add_argument("--frames", metavar="A:B", help="only these frames")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--report", metavar="REPORT.json")
    motion_options(p)
    p.set_defaults(func=cmd_edit)

    p = sub.add_parser(
        "enhance",
        help="correct measured joint angles so measured end-effector positions are met",
        description="POSITIONS.npz: one (F, 3) array per measured point, named as the "
        "skeleton's joint or end site, in the motion's unit (Choi & Ko 2000, section 5).",
    )
    p.add_argument("source")
    p.add_argument("--positions", required=True, metavar="P.npz")
    p.add_argument("--frames", metavar="A:B", help="only these frames (the positions' frames)")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--report", metavar="REPORT.json")
    motion_options(p)
    p.set_defaults(func=cmd_enhance)

    p = sub.add_parser(
        "eval", help="measure a result against its source (skate, contacts, pose, jerk)"
    )
    p.add_argument("source")
    p.add_argument("result")
    p.add_argument("--frames", metavar="A:B", help="the source frames the result was made from")
    p.add_argument("--json", action="store_true", help="print JSON (keys: README.md)")
    motion_options(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser(
        "transition",
        help="play A then B, faded over --blend frames (time-warped, feet kept planted)",
    )
    p.add_argument("first", metavar="A", help="the motion that plays first")
    p.add_argument("second", metavar="B", help="the motion that follows (same skeleton)")
    p.add_argument("--blend", type=int, required=True, metavar="FRAMES", help="frames of the fade")
    p.add_argument("-o", "--output", required=True, help=".bvh or .npz")
    p.add_argument("--report", metavar="REPORT.json", help="write the window, warp, fit, skate")
    p.add_argument("--no-warp", action="store_true", help="blend frame by frame, no time warping")
    p.add_argument("--no-fit", action="store_true", help="do not enforce the footplants")
    motion_options(p)
    p.set_defaults(func=cmd_transition)

    p = sub.add_parser(
        "view", help="an HTML page playing motions side by side in 3-D (opens offline)"
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="motions (.bvh, .amc, .npz)")
    p.add_argument("-o", "--output", required=True, help="the page (.html)")
    p.add_argument(
        "--live",
        metavar="ws://HOST:PORT",
        help="show a `retarget serve` stream as it comes (the page connects to it)",
    )
    p.add_argument("--report", metavar="REPORT.json", help="a run's report: goals, scene")
    p.add_argument("--overlay", action="store_true", help="in one place, not side by side")
    p.add_argument("--frames", metavar="A:B", help="only these frames of each motion")
    motion_options(p)
    p.set_defaults(func=cmd_view)

    p = sub.add_parser(
        "plot", help="figures: a run's report (levels, importance), or feet / joint angles"
    )
    p.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="REPORT.json, or SRC [RESULT ...] motions"
    )
    p.add_argument("-o", "--output", required=True, help=".png, .svg or .pdf")
    p.add_argument(
        "--kind",
        choices=("feet", "angles"),
        default="feet",
        help="for motions: foot trajectories with contacts (default) or leg joint angles",
    )
    p.add_argument("--frames", metavar="A:B", help="only these frames of the motions")
    p.add_argument("--fps", type=float, help="a report's time axis in seconds at this rate")
    p.add_argument("--skeleton", help="the .asf of an .amc input (default: the .asf beside it)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("render", help="a video (.gif or .mp4) of motions side by side")
    p.add_argument("files", nargs="+", metavar="FILE", help="motions (.bvh, .amc, .npz)")
    p.add_argument("-o", "--output", required=True, help="the video (.gif or .mp4)")
    p.add_argument("--frames", metavar="A:B", help="only these frames of each motion")
    p.add_argument("--rate", type=float, help="video frames per second (default: min(clip, 30))")
    p.add_argument("--size", default="640x360", help="WIDTHxHEIGHT in pixels (default 640x360)")
    motion_options(p)
    p.set_defaults(func=cmd_render)

    p = sub.add_parser(
        "samples", help="fetch the public sample clips (or find them in RETARGET_DATA)"
    )
    p.add_argument("names", nargs="*", help="default: all")
    p.set_defaults(func=cmd_samples)

    verb = sub.add_parser(
        "verb", help="example-based IK: build, solve, measure and refine verbs (Rose et al. 2001)"
    )
    vsub = verb.add_subparsers(dest="verb_command", required=True, parser_class=_Parser)
    p = vsub.add_parser("build", help="a verb from a SPEC.json (README, 'Verbs')")
    p.add_argument("spec")
    p.add_argument("-o", "--output", required=True, help="the verb (.npz)")
    p.set_defaults(func=cmd_verb_build)
    p = vsub.add_parser("example", help="build a shipped verb: arm3 or reach")
    p.add_argument("name", choices=["arm3", "reach"])
    p.add_argument("-o", "--output", required=True, help="the verb (.npz)")
    p.add_argument("--examples", type=int, default=24, help="reach: frames taken (default 24)")
    p.set_defaults(func=cmd_verb_example)
    p = vsub.add_parser(
        "solve",
        help="the pose whose end-effector is at a goal",
        description=(
            "Goals are in the verb's adverb frame. arm3: the tip's (x, y) in metres, "
            "the first hinge at the origin. reach: the right wrist joint (RightHand) "
            "relative to the right shoulder joint (RightArm), in the reference pose's "
            "world axes (the character at the origin facing +Z: x to its left, y up, "
            "z forward), in the clip's unit (cm for lafan_walk.bvh). A verb built "
            "from a SPEC: the end-effector relative to 'base', in the files' world axes."
        ),
    )
    p.add_argument("verb")
    p.add_argument("--goal", nargs="+", type=float, required=True, metavar="X")
    p.add_argument("--search", type=int, help="p' search iterations (default: the verb's)")
    p.add_argument("--exact", action="store_true", help="finish with exact IK (LM)")
    p.add_argument("--json", action="store_true", help="print goal, adverb, achieved as JSON")
    p.add_argument("-o", "--output", help="the whole character in the solved pose (.bvh/.npz)")
    p.set_defaults(func=cmd_verb_solve)
    p = vsub.add_parser("errormap", help="error over the working volume and its warped grid")
    p.add_argument("verb")
    p.add_argument("-o", "--output", help="the figure (.png, .svg, .pdf)")
    p.add_argument("--search", type=int, help="p' search iterations (default: the verb's)")
    p.add_argument("--resolution", type=int, help="grid points per axis (41 in 2-D, 13 in 3-D)")
    p.set_defaults(func=cmd_verb_errormap)
    p = vsub.add_parser("refine", help="insert pseudo-examples at the worst points")
    p.add_argument("verb")
    p.add_argument("--max-pseudo", type=int, default=50, help="at most this many (default 50)")
    p.add_argument("--hybrid", action="store_true", help="with the p' search at runtime")
    p.add_argument("--search", type=int, default=6, help="p' search iterations (default 6)")
    p.add_argument("-o", "--output", required=True, help="the refined verb (.npz)")
    p.set_defaults(func=cmd_verb_refine)

    p = sub.add_parser("demo", help="retarget the sample walk onto blubby and sally, measure, plot")
    p.add_argument("--out", default="demo-output", help="output folder (default demo-output)")
    p.add_argument(
        "--method",
        action="append",
        choices=list(METHODS),
        help="a method to run (repeatable; default: copy and hierarchical)",
    )
    p.add_argument("--frames", metavar="A:B", help="only these frames of the walk")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo)
    return parser


@contextlib.contextmanager
def _warnings_on_stderr() -> Iterator[None]:
    """Each distinct :class:`RetargetWarning` of the command printed once, as one line
    ``retarget: warning: <file>:<line>: <message>`` (no source line); other warnings
    as Python shows them."""
    shown: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", RetargetWarning)
        python_show = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None) -> None:
            if not issubclass(category, RetargetWarning):
                python_show(message, category, filename, lineno, file, line)
                return
            text = " ".join(str(message).splitlines())
            if text not in shown:
                shown.add(text)
                print(f"retarget: warning: {text}", file=sys.stderr)

        warnings.showwarning = show
        yield


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with _warnings_on_stderr():
            return int(args.func(args) or 0)
    except RetargetError as exc:
        print(f"retarget: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"retarget: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
