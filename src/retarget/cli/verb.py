"""``retarget verb``: example-based IK (Rose, Sloan & Cohen 2001)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import RetargetError
from ..core.motion import frame_slice
from ..core.strict_json import strict_json
from ._common import _Parser, read_input, read_report

if TYPE_CHECKING:
    from ..core.motion import Motion

__all__ = ["add_parsers"]


def _read_verb(path: str):
    from ..core.errors import FormatError
    from ..ik.verbs import verb_from_arrays
    from ..io.npz import read_npz_arrays

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
    from ..ik.verbs import verb_arrays
    from ..io.formats import format_of
    from ..io.npz import write_npz

    format_of(path, "verb")
    reference, arrays = verb_arrays(verb)
    write_npz(path, reference, inputs=inputs, extra=arrays)


def _spec_verb(path: str):
    """A verb from a SPEC.json (README, "Verbs")."""
    from ..ik.verbs import EndEffector, VerbExample, build_verb

    spec = read_report(path)  # a JSON object
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
    from ..ik.verb_examples import arm3_verb, reach_verb
    from ..io.samples import sample_path

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
    from ..core.motion import Motion
    from ..io.formats import write_motion

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
    from ..ik.verbs import error_map
    from ..viz.plots import plot_error_map

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
    from ..ik.verbs import refine

    verb = _read_ik_verb(args.verb)
    refined, history = refine(
        verb,
        args.max_pseudo,
        hybrid=args.hybrid,
        search=args.search,
        resolution=args.resolution,
        tolerance=args.tolerance,
    )
    _write_verb(args.output, refined, (args.verb,))
    (m0, x0), (m1, x1) = history[0], history[-1]
    print(
        f"{refined.pseudo_examples - verb.pseudo_examples} pseudo-examples: error mean "
        f"{m0:.4f} -> {m1:.4f} %, max {x0:.4f} -> {x1:.4f} % -> {args.output}"
    )
    return 0


def _search_option(p: argparse.ArgumentParser) -> None:
    """``--search``: the p′ search iterations a query runs (``solve``, ``errormap``)."""
    p.add_argument("--search", type=int, help="p' search iterations (default: the verb's)")


def add_parsers(sub: Any) -> None:
    """Add this group's commands to the sub-parsers ``sub`` of ``retarget``."""
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
    _search_option(p)
    p.add_argument("--exact", action="store_true", help="finish with exact IK (LM)")
    p.add_argument("--json", action="store_true", help="print goal, adverb, achieved as JSON")
    p.add_argument("-o", "--output", help="the whole character in the solved pose (.bvh/.npz)")
    p.set_defaults(func=cmd_verb_solve)
    p = vsub.add_parser("errormap", help="error over the working volume and its warped grid")
    p.add_argument("verb")
    p.add_argument("-o", "--output", help="the figure (.png, .svg, .pdf)")
    _search_option(p)
    p.add_argument(
        "--resolution", type=int, help="grid points per axis (41 in 2-D, 25 in 3-D; with search 13)"
    )
    p.set_defaults(func=cmd_verb_errormap)
    p = vsub.add_parser(
        "refine",
        help="insert pseudo-examples at the worst points",
        description=(
            "Pseudo-examples (Rose et al. 2001, section 4.3) make the blend itself "
            "accurate: the refined verb needs no p' search at run time (solve --search 0)."
        ),
    )
    p.add_argument("verb")
    p.add_argument("--max-pseudo", type=int, default=200, help="at most this many (default 200)")
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="stop when the map's worst error is below this (%% of reach; default 0)",
    )
    p.add_argument("--hybrid", action="store_true", help="with the p' search at runtime")
    p.add_argument("--search", type=int, default=6, help="hybrid: p' search iterations (default 6)")
    p.add_argument(
        "--resolution", type=int, help="grid points per axis (41 in 2-D, 25 in 3-D; hybrid 13)"
    )
    p.add_argument("-o", "--output", required=True, help="the refined verb (.npz)")
    p.set_defaults(func=cmd_verb_refine)
