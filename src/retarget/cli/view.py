"""Commands that show motions: ``view``, ``plot``, ``render``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.errors import RetargetError
from ..core.motion import frame_slice
from ..humanoid.roles import require_humanoid
from ._common import motion_options, named_motions, read_input, read_report

__all__ = ["add_parsers"]


def cmd_view(args: argparse.Namespace) -> int:
    from ..io.formats import holds_character, is_trajectory, read_trajectories
    from ..viz.viewer import live_motion, write_viewer

    if not (args.files or args.live):
        raise RetargetError("nothing to view: give motion files or --live ws://HOST:PORT")
    motions = [live_motion(args.live)] if args.live else []
    capsules: dict[int, list[tuple[int, int, float]]] = {}
    robot = None
    if args.robot:
        from ..targets.robot.model import read_robot

        robot = read_robot(Path(args.robot))
    meshes: dict[int, tuple[bytes, int]] = {}
    for path in args.files:
        if holds_character(path):  # a character: its mesh too
            glb, clip, motion = _character(args, path)
            meshes[len(motions)] = (glb, clip)
            motions.append((Path(path).name, motion))
            continue
        if robot is None or not is_trajectory(path):
            motions += named_motions(_only(args, path))
            continue
        # a robot's joint trajectories: drawn on its skeleton with its collision capsules
        from ..targets.robot.measures import robot_view

        traj = read_trajectories(path, robot.joint_names)
        motion, capsules[len(motions)] = robot_view(robot, traj)
        if args.frames:
            motion = motion[frame_slice(args.frames, motion.num_frames)]
        motions.append((Path(path).name, motion))
    report = read_report(args.report) if args.report else None
    out = write_viewer(
        args.output,
        motions,
        report=report,
        overlay=args.overlay,
        inputs=[*args.files, *([args.report] if args.report else [])],
        live=args.live,
        capsules=capsules,
        meshes=meshes,
    )
    print(f"view: {len(motions)} motion(s){' and ' + args.live if args.live else ''} -> {out}")
    return 0


def _character(args: argparse.Namespace, path: str) -> tuple[bytes, int, Any]:
    """A glTF (or FBX) character's file as one GLB, the animation shown (``--animation``;
    else the one named after another file given, as ``retarget run`` names the clip it
    adds; else its last) and that animation as a motion."""
    from ..io.formats import read_character
    from ..io.gltf import character_motion, one_file

    character = read_character(path)
    names = character.animations
    stems = {Path(p).stem for p in args.files}
    if args.animation is not None:
        wanted: str | int = args.animation
    else:
        wanted = next((n for n in reversed(names) if n in stems), len(names) - 1)
    motion = character_motion(character, wanted, fps=args.fps)
    clip = names.index(wanted) if isinstance(wanted, str) and wanted in names else int(wanted)
    if args.frames:
        motion = motion[frame_slice(args.frames, motion.num_frames)]
    return one_file(character.path), clip, motion


def _only(args: argparse.Namespace, path: str) -> argparse.Namespace:
    """``args`` with ``files`` just ``path``."""
    return argparse.Namespace(**{**vars(args), "files": [path]})


def cmd_render(args: argparse.Namespace) -> int:
    from ..viz.render import render_video

    motions = named_motions(args)
    width, _, high = args.size.partition("x")
    try:
        size = (int(width), int(high))
    except ValueError:
        raise RetargetError(f"--size: expected WIDTHxHEIGHT in pixels, got {args.size!r}") from None
    out = render_video(args.output, motions, fps=args.rate, size=size, inputs=args.files)
    print(f"render: {len(motions)} motion(s) -> {out}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from ..io.formats import format_of
    from ..viz.plots import plot_feet, plot_joint_angles, plot_report

    format_of(args.output, "figure")  # (refused before any work)
    first = args.inputs[0]
    if format_of(first, "report", strict=False):
        if len(args.inputs) > 1:
            raise RetargetError("give one report, or motion files (the source first)")
        try:
            out = plot_report(read_report(first), args.output, fps=args.fps)
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


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the sub-parsers ``sub`` of ``retarget``."""
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
    p.add_argument(
        "--robot",
        metavar="MODEL",
        help="trajectory files (.npz, .csv) are this robot's (.xml MJCF, .urdf): drawn with "
        "its collision capsules",
    )
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
