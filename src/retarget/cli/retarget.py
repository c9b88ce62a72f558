"""Commands that retarget: ``run``, ``batch``, ``physics``, ``demo``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import RetargetError
from ._common import (
    Presets,
    _measure_table,
    _write_result,
    job_of,
    method_options,
    open_args_target,
    read_input,
    run_options,
    writes_motion,
)

if TYPE_CHECKING:
    from ..core.motion import Motion

__all__ = ["add_parsers"]


def cmd_run(args: argparse.Namespace) -> int:
    from ..pipeline import run_job

    outcome = run_job(job_of(args))
    report, measures = outcome.report, outcome.measures
    said = f", {outcome.target.describe(measures)}" if measures else ""
    fps = report.get("frames_per_second")
    rate = f"{fps:.0f} frames/s" if fps is not None else "- frames/s (no time measured)"
    print(f"{args.method}: {report['frames']} frames at {rate} -> {args.output}{said}")
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    if args.targets:
        return _batch_targets(args)
    return _batch(args)


def _target_files(patterns: list[str]) -> list[str]:
    """``--targets``: the files the globs match, a folder's files, that are targets (a
    character, a robot, a skeleton's file: :func:`retarget.targets.registry.kind_of`)."""
    import glob

    from ..targets.registry import kind_of

    found: set[str] = set()
    for pattern in patterns:
        for p in glob.glob(pattern, recursive=True):
            path = Path(p)
            files = sorted(path.rglob("*")) if path.is_dir() else [path]
            found |= {str(f) for f in files if f.is_file() and kind_of(f) is not None}
    return sorted(found)


def _batch_targets(args: argparse.Namespace) -> int:
    """``batch --targets GLOB ...``: the clips onto every target the globs match, each
    into ``DIR/<target's name>/`` with its own manifest (and, with ``--one-file``, its
    own ``DIR/<name>/<name>.glb`` of every clip); a target that cannot be opened is
    listed with its one-line reason and the others go on."""
    import copy

    if args.target or args.target_preset or args.target_from:
        raise RetargetError("give the characters by --targets or one by --target, not both")
    targets = _target_files(args.targets)
    if not targets:
        raise RetargetError(
            f"no character, robot or skeleton file matches {' '.join(args.targets)}"
        )
    stems = [Path(t).stem for t in targets]
    names = [s if stems.count(s) == 1 else f"{s}_{k}" for k, s in enumerate(stems)]
    failed = 0
    for target, name in zip(targets, names, strict=True):
        one = copy.copy(args)
        one.target, one.targets = target, None
        one.out = str(Path(args.out) / name)
        one.manifest = None
        try:
            code = _batch(one)
        except RetargetError as exc:
            print(f"  failed: {target}: {exc}".splitlines()[0], file=sys.stderr)
            code = 1
        failed += code != 0
    print(
        f"batch: {len(targets) - failed} of {len(targets)} targets without a failure -> {args.out}"
    )
    return 1 if failed else 0


def _batch(args: argparse.Namespace) -> int:
    import glob

    from ..io.formats import is_motion_file, readable
    from ..pipeline.batch import plan_batch, run_batch

    if not (args.target or args.target_preset or args.target_from):
        raise RetargetError("say which character: --target TARGET.bvh or --target-preset NAME")
    matched = {p for pattern in args.sources for p in glob.glob(pattern, recursive=True)}
    sources = sorted(p for p in matched if is_motion_file(p))
    if not sources:
        kinds = ", ".join(readable())
        raise RetargetError(f"no motion file ({kinds}) matches {' '.join(args.sources)}")
    template = job_of(args, report=None)
    target = template.open_target()
    if args.one_file and not hasattr(target, "write_clips"):
        raise RetargetError("--one-file: a glTF or FBX --target character holds the clips")
    out_dir = Path(args.out) / ".clips" if args.one_file else Path(args.out)
    suffix = ".npz" if args.one_file else ("." + args.format.lstrip(".") if args.format else None)
    tasks = plan_batch(sources, out_dir, template, suffix=suffix)
    manifest = Path(args.manifest or out_dir / "manifest.jsonl")
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
    if args.one_file and not summary.failed:
        print(f"batch: every clip in {_one_file(args, target, tasks)}")
    return 1 if summary.failed else 0


def _one_file(args: argparse.Namespace, target: Any, tasks: list[Any]) -> Path:
    """``batch --one-file``: the character once, each clip's motion (the batch's .npz,
    under ``DIR/.clips``) an animation named after its path below the sources' folder."""
    from ..io.npz import read_npz

    root = (Path(args.out) / ".clips").absolute()
    clips = [
        (str(Path(t.job.output).relative_to(root).with_suffix("")), read_npz(t.job.output))
        for t in tasks
    ]
    out = Path(args.out) / f"{Path(args.target).stem}.glb"
    return target.write_clips(out, clips, inputs=tuple(args.sources))  # type: ignore[no-any-return]


def cmd_physics(args: argparse.Namespace) -> int:
    """``retarget physics``: Tak & Ko's filter onto a target (``--target``,
    ``--target-preset``: the pipeline's ``--method physics``, :func:`retarget.retarget`:
    the source retargeted by the hierarchical method first), or on the source's own body
    (:func:`retarget.methods.physics.filter_motion`)."""
    from ..core.motion import frame_slice
    from ..physics.filter import parse_passes

    source = read_input(args.source, args)
    passes = parse_passes(args.passes)  # (refused before any work)
    options = {
        "passes": args.passes,
        "mass": args.mass,
        "loads": args.load,
        "torque_limits": args.torque_limit,
        "widen": args.widen,
        "constraints": args.constraints,
        "free_feet": args.free_feet,
        "footprints": args.footprints,
        "balance": not args.no_balance,
        "momentum": not args.no_momentum,
        "spacing": args.spacing,
        "iterations": args.iterations,
        "form": args.form,
    }
    files = [p for p in (args.constraints, args.hint) if p]
    if args.target or args.target_preset:  # onto another character first (Lee & Shin 1999)
        from ..pipeline import retarget

        frames = frame_slice(args.frames, source.num_frames)
        if args.hint:  # (on the target's joints, the source's frames)
            options["hint"] = read_input(args.hint, args)[frames]
        outcome = retarget(
            source, open_args_target(args), "physics", frames=frames, name=args.source, **options
        )
        report, motion = {**outcome.report, "output": args.output}, outcome.output
        inputs = [args.source, *outcome.target.inputs, *files]
    else:
        report, motion = _filter_own_body(args, source, options)
        inputs = [args.source, *files]
    _write_result(args, motion, report, inputs)
    first, last = report["stages"][0], report["stages"][-1]
    print(
        f"physics: {report['frames']} frames, {'+'.join(passes)} in {report['seconds']:.2f} s; "
        f"ZMP outside the support on {100 * first['zmp_outside']:.1f} % -> "
        f"{100 * last['zmp_outside']:.1f} % of support frames -> {args.output}"
    )
    return 0


def _filter_own_body(
    args: argparse.Namespace, source: Motion, options: dict[str, Any]
) -> tuple[dict[str, Any], Motion]:
    """``retarget physics SRC`` without a target: the filter on the source's own body,
    Y up, then back into the file's axes; the report and the motion."""
    from ..core.motion import frame_slice
    from ..humanoid import world
    from ..humanoid.roles import require_humanoid
    from ..methods.physics import filter_motion, parse_named
    from ..physics.filter import parse_passes

    require_humanoid(args.source, source.skeleton)
    source = source[frame_slice(args.frames, source.num_frames)]
    file_up = world.up_of(source)
    upright = world.upright(source)

    def hint() -> Motion:
        motion = world.upright(
            read_input(args.hint, args)[frame_slice(args.frames, source.num_frames)]
        )
        if (
            motion.skeleton.names != upright.skeleton.names
            or motion.num_frames != upright.num_frames
        ):
            raise RetargetError(f"{args.hint}: a hint must have the source's joints and frames")
        return motion

    result, _ = filter_motion(
        upright,
        name=args.source,
        **{
            **options,
            "passes": parse_passes(args.passes),
            "loads": parse_named(args.load, "--load", "kg"),
            "torque_limits": parse_named(args.torque_limit, "--torque-limit", "Nm"),
        },
        frame=source,
        turn=world.axes_between(file_up, "y"),
        hint=hint if args.hint else None,
    )
    report = {
        **result.report,
        "source": args.source,
        "output": args.output,
        "frames": upright.num_frames,
    }
    return report, world.reorient(result.motion, file_up)


def cmd_demo(args: argparse.Namespace) -> int:
    """``retarget demo``: the sample walk onto every kind of target (the presets
    ``blubby`` and ``sally``, a humanoid robot from the package index, a rigged glTF
    character), measured, plotted and drawn in one viewer page."""
    from tqdm import tqdm

    from ..core.motion import Motion, frame_slice
    from ..humanoid.characters import PRESETS, make_character
    from ..humanoid.contacts import detect_contacts
    from ..io.bvh import read_bvh, write_bvh
    from ..io.files import atomic_write, write_json
    from ..io.gltf import mannequin, one_file
    from ..io.samples import sample_path
    from ..methods import METHODS
    from ..pipeline import retarget
    from ..targets.character import open_character
    from ..targets.robot import open_robot
    from ..targets.robot.measures import robot_view
    from ..viz.plots import plot_feet
    from ..viz.viewer import write_viewer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    methods = [METHODS[name] for name in dict.fromkeys(args.method or ["copy", "hierarchical"])]
    steps = tqdm(
        total=3 + len(PRESETS) * (1 + 2 * len(methods)) + 4,
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
    for name in PRESETS:  # presets made from the walk's own skeleton
        target = make_character(source.skeleton, preset=name)
        write_bvh(out / f"{name}.bvh", Motion.at_rest(target, fps=source.fps))
        steps.update()
        report["characters"][name] = {}
        for method in methods:
            steps.set_postfix_str(f"retargeting onto {name} ({method.name})")
            output = out / f"walk_{name}_{method.name}.bvh"
            done = retarget(source, f"preset:{name}", method.name, name=str(walk_path))
            write_bvh(output, done.output)
            steps.update()
            steps.set_postfix_str(f"measuring {name} ({method.name})")
            if done.measures is None:
                raise RetargetError(f"demo: {done.report['measures_note']}")
            report["characters"][name][method.name] = {
                "report": dict(done.result.report),
                "measures": done.measures,
                "output": str(output),
            }
            rows[f"{name} {method.name}"] = done.measures
            results.append((f"{name} ({method.name})", done.output))
            steps.update()
    # a humanoid robot from the package index: its joint trajectories
    steps.set_postfix_str("fetching a robot")
    robot_file = Path(args.robot) if args.robot else sample_path("booster_t1")
    robot = open_robot(robot_file)
    steps.update()
    steps.set_postfix_str(f"retargeting onto {robot_file.stem} (hierarchical)")
    done = retarget(source, robot, "hierarchical", name=str(walk_path))
    trajectories = done.write(out / f"walk_{robot_file.stem}.npz")
    robot_measures = done.measures or {}
    report["robot"] = {
        "model": str(robot_file),
        "output": str(trajectories),
        "measures": robot_measures,
        "robot": done.report["robot"],
    }
    drawn, capsules = robot_view(robot.robot, done.output)
    steps.update()
    # a rigged glTF character: a skinned mannequin the library makes of a preset
    steps.set_postfix_str("retargeting onto a glTF character (hierarchical)")
    figure = atomic_write(
        out / "mannequin.glb", mannequin(make_character(source.skeleton, preset="blubby"))
    )
    character = open_character(figure)
    done = retarget(source, character, "hierarchical", name=str(walk_path))
    written = done.write(out / "walk_mannequin.glb")
    report["character"] = {
        "file": str(figure),
        "output": str(written),
        "measures": done.measures,
        "hands_in_body": done.report.get("hands_in_body"),
    }
    rows["mannequin (glTF) hierarchical"] = done.measures or {}
    # the page: the walk, the robot (its capsules), the character (its skinned mesh), the rest
    shown = [
        (walk_path.name, source),
        (f"{robot_file.stem} (hierarchical)", drawn),
        ("mannequin.glb (hierarchical)", done.output),
        *results,
    ]
    capsules_at = {1: capsules}
    meshes = {2: (one_file(written), len(character.character.animations))}
    results.append(("mannequin (hierarchical)", done.output))
    steps.update()
    steps.set_postfix_str("plotting")
    plot_feet(source, results, out / "feet.png", contacts=contacts)
    write_json(out / "report.json", report, inputs=[str(walk_path)])
    steps.set_postfix_str("writing the viewer")
    viewer = write_viewer(
        out / "view.html", shown, inputs=[str(walk_path)], capsules=capsules_at, meshes=meshes
    )
    steps.update()
    steps.close()
    print(f"\n{source.num_frames} frames of {walk_path.name} retargeted:")
    print(_measure_table(rows))
    print(f"\nonto the robot {robot_file.name} ({trajectories.name}, its joint trajectories):")
    print(_robot_table(robot_measures))
    print(f"\nwrote {out}/: {', '.join(sorted(p.name for p in out.iterdir()))}")
    print(f"open {viewer.resolve()} in a browser to watch them")
    return 0


def _robot_table(measures: dict[str, Any]) -> str:
    """The robot measures (:data:`retarget.targets.robot.measures.ROBOT_MEASURES`), a line
    each."""
    from ..targets.robot.measures import ROBOT_MEASURES

    lines = []
    for key, what in ROBOT_MEASURES.items():
        value = measures.get(key)
        shown = "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)
        lines.append(f"  {what:<64}{shown:>10}")
    return "\n".join(lines)


def _batch_options(p: argparse.ArgumentParser) -> None:
    """``batch``'s arguments, added when ``batch`` parses or shows its help (its formats
    and engines import the batch machinery and the formats, its options the methods)."""
    from ..pipeline.batch import ENGINES

    p.add_argument("sources", nargs="+", metavar="SRC_GLOB", help="clips (quote globs: '**/*.bvh')")
    p.add_argument("--out", required=True, metavar="DIR", help="outputs, by their source paths")
    p.add_argument(
        "--format",
        metavar="EXT",
        help="what each clip is written as, one of the target's: a motion format holding "
        "its skeleton (bvh, the default, npz); onto a robot npz (the default) or csv joint "
        "trajectories; onto a glTF or FBX character glb (the default; fbx for an FBX one)",
    )
    p.add_argument(
        "--engine", choices=ENGINES, default="local", help="local process pool (default), dask, ray"
    )
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)"
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler or Ray cluster")
    p.add_argument("--manifest", metavar="FILE", help="default: DIR/manifest.jsonl")
    p.add_argument(
        "--one-file",
        action="store_true",
        help="onto a glTF or FBX character: one GLB, DIR/<character>.glb, every clip an "
        "animation in it (each clip's motion kept in DIR/.clips for reruns)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--targets",
        nargs="+",
        metavar="TARGET_GLOB",
        help="onto every character, robot or skeleton file these globs (or folders) hold, "
        "each into DIR/<its name>/ with its own manifest (instead of --target)",
    )
    run_options(p)
    method_options(p)


def _run_options(p: argparse.ArgumentParser) -> None:
    """``run``'s description and options that need the methods (added when it parses)."""
    from ..methods import METHODS

    methods = "\n".join(f"  {m.name:<14}{m.summary}" for m in METHODS.values())
    p.description = f"Retarget SRC onto a character.\n\nmethods:\n{methods}"
    run_options(p)
    method_options(p)


def _demo_options(p: argparse.ArgumentParser) -> None:
    """``demo``'s options (added when it parses: ``--method`` lists the methods)."""
    from ..methods import METHODS

    p.add_argument("--out", default="demo-output", help="output folder (default demo-output)")
    p.add_argument(
        "--method",
        action="append",
        choices=list(METHODS),
        help="a method to run (repeatable; default: copy and hierarchical)",
    )
    p.add_argument("--frames", metavar="A:B", help="only these frames of the walk")
    p.add_argument(
        "--robot",
        metavar="ROBOT.xml",
        help="the robot (MJCF or URDF; default: MuJoCo Menagerie's Booster T1, fetched from "
        "the package index)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the sub-parsers ``sub`` of ``retarget``."""
    p = sub.add_parser(
        "run",
        help="retarget a motion onto a character",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        complete=_run_options,
    )
    p.add_argument("source")
    p.add_argument("-o", "--output", required=True, help=".bvh or .npz")
    p.add_argument(
        "--report", metavar="REPORT.json", help="write what the method did and the measures"
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "batch",
        help="retarget every clip matching a glob, resumably, on a process pool, Dask or Ray",
        description="Retarget SRC_GLOB's clips onto a character, one task per clip. A manifest "
        "(JSON lines) records each clip's hashes, output, measures, time and error; a re-run "
        "skips clips whose inputs and output are unchanged. Exit 1 when a clip failed.",
        complete=_batch_options,
    )
    p.set_defaults(func=cmd_batch)

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
    p.add_argument("--target-preset", choices=Presets(), help="the same, onto a preset")
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
    p.add_argument(
        "--form",
        choices=("curve", "paper"),
        default="curve",
        help="dynamic applications on one B-spline displacement (curve, the default) or as "
        "printed: per-frame Kalman stage, then the least-squares filter (paper)",
    )
    p.add_argument("--frames", metavar="A:B", help="only these frames")
    writes_motion(p)
    p.set_defaults(func=cmd_physics)

    p = sub.add_parser(
        "demo",
        help="retarget the sample walk onto presets, a robot and a glTF character; measure, "
        "plot, view",
        complete=_demo_options,
    )
    p.set_defaults(func=cmd_demo)
