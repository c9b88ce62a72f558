"""Commands that edit or measure a motion: ``edit``, ``enhance``, ``transition``, ``eval``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import RetargetError
from ..core.motion import frame_slice
from ..core.strict_json import dumps_json
from ..humanoid.roles import require_humanoid
from ._common import _write_result, motion_options, read_input, writes_motion

__all__ = ["add_parsers"]


def cmd_edit(args: argparse.Namespace) -> int:
    from ..editing.constraints import parse_constraints
    from ..editing.edit import edit_motion

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
    from ..online.omr import enhance_motion

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


def cmd_eval(args: argparse.Namespace) -> int:
    from ..humanoid.metrics import MEASURES, evaluate

    source = read_input(args.source, args)
    require_humanoid(args.source, source.skeleton)
    source = source[frame_slice(args.frames, source.num_frames)]
    if args.robot:
        return _eval_robot(args, source)
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


def _eval_robot(args: argparse.Namespace, source: Any) -> int:
    """``eval --robot MODEL``: a robot's joint trajectories (ours or another
    retargeter's) measured against their human source as robotics users measure."""
    from ..io.formats import read_trajectories
    from ..targets.robot.measures import ROBOT_MEASURES, measure_robot
    from ..targets.robot.model import read_robot

    robot = read_robot(Path(args.robot))
    traj = read_trajectories(args.result, robot.joint_names)
    if traj.num_frames != source.num_frames:
        raise RetargetError(
            f"{args.result} has {traj.num_frames} frames, the source {source.num_frames}: "
            "pass the --frames used for the run"
        )
    measures = measure_robot(robot, traj, source, velocity=args.velocity_limit)
    if args.json:
        sys.stdout.write(dumps_json(measures))
        return 0
    for key, what in ROBOT_MEASURES.items():
        value = measures[key]
        assert isinstance(value, int | float)
        print(f"{key:<24}{float(value):>12.4f}   {what}")
    pairs = measures["self_collision_pairs"]
    assert isinstance(pairs, list)
    for pair in pairs[:8]:
        a, b = pair["bodies"]
        print(f"  {a} – {b}: {pair['frames']} frames, {pair['depth_cm']:.2f} cm deep")
    return 0


def cmd_transition(args: argparse.Namespace) -> int:
    from ..editing.transition import transition

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


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the sub-parsers ``sub`` of ``retarget``."""
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
    writes_motion(p)
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
    writes_motion(p)
    p.set_defaults(func=cmd_enhance)

    p = sub.add_parser(
        "eval", help="measure a result against its source (skate, contacts, pose, jerk)"
    )
    p.add_argument("source")
    p.add_argument("result")
    p.add_argument("--frames", metavar="A:B", help="the source frames the result was made from")
    p.add_argument("--json", action="store_true", help="print JSON (keys: README.md)")
    p.add_argument(
        "--robot",
        metavar="MODEL",
        help="RESULT is joint trajectories (.npz, .csv) of this robot (.xml MJCF, .urdf): "
        "the robot measures",
    )
    p.add_argument(
        "--velocity-limit",
        type=float,
        metavar="RAD_S",
        help="with --robot: the hinges' speed limit where the model gives none",
    )
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
