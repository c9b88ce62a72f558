"""What the command groups share: the parser class, common options, result writing."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import RetargetError, RetargetWarning

if TYPE_CHECKING:
    from ..core.motion import Motion
    from ..core.skeleton import Skeleton
    from ..methods import Option
    from ..pipeline import RunJob
    from ..targets import Target

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2, like the rest of the CLI.

    ``complete``, when given, adds the rest of the parser's arguments the first time it
    parses or prints help: ``run`` and ``batch`` add the methods' options then, so that
    ``retarget --help`` and the other commands never import the methods.
    """

    def __init__(
        self,
        *args: Any,
        complete: Callable[[argparse.ArgumentParser], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._complete = complete

    def _completed(self) -> None:
        if self._complete is not None:
            complete, self._complete = self._complete, None
            complete(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._completed()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._completed()
        return super().format_help()

    def format_usage(self) -> str:
        self._completed()
        return super().format_usage()

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _write_result(
    args: argparse.Namespace, motion: Motion, report: dict[str, Any], inputs: Sequence[str]
) -> None:
    """Write ``motion`` to ``--output`` and, with ``--report``, ``report`` as JSON.

    Both files name ``inputs`` (the paths read) and the ``--skeleton`` file as their
    sources, the report also the output motion.
    """
    from ..io.files import write_json
    from ..io.formats import write_motion

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


def _unit_option(text: str) -> str:
    from ..humanoid.world import parse_unit

    try:
        return parse_unit(text)
    except RetargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _up_option(text: str) -> str:
    from ..humanoid.world import parse_up

    try:
        return parse_up(text)
    except RetargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@contextlib.contextmanager
def warnings_on_stderr() -> Iterator[None]:
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


class Presets:
    """The names of the preset characters, as argparse ``choices``, loaded when a
    command line is checked or shown (not when the parser is built)."""

    def _names(self) -> list[str]:
        from ..humanoid.characters import PRESETS

        return sorted(PRESETS)

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def writes_motion(p: argparse.ArgumentParser) -> None:
    """``-o/--output`` (required) and ``--report``, then :func:`motion_options`: a
    command that reads motion files and writes a motion and its report."""
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--report", metavar="REPORT.json")
    motion_options(p)


def motion_options(p: argparse.ArgumentParser) -> None:
    """``--skeleton``, ``--fps``, ``--unit``, ``--up``: how motion files are read."""
    p.add_argument("--skeleton", help="the .asf of an .amc input (default: the .asf beside it)")
    p.add_argument(
        "--fps",
        type=float,
        help="frame rate of an .amc input (default 120); the rate a glTF animation is "
        "sampled at (default: its keys' where even, else 30)",
    )
    p.add_argument(
        "--animation",
        metavar="NAME",
        help="the animation of a glTF input (.glb, .gltf), by name or number (default: the "
        "first; `retarget info` lists them)",
    )
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
    """The character, method and run options shared by ``run`` and ``batch`` (the
    methods' own options come with :func:`method_options`)."""
    from ..methods import METHODS

    p.add_argument(
        "--target",
        help="the character: a motion file's skeleton (.bvh, .amc, .npz) or an .asf; a "
        "glTF character (.glb, .gltf): -o OUT.glb is the character with the clip added as "
        "an animation; or a robot (.xml MJCF, .urdf): joint trajectories out (.npz, .csv)",
    )
    p.add_argument(
        "--no-body-collision",
        dest="body_collision",
        action="store_false",
        help="onto a glTF or FBX character: leave its hands where the method put them (by "
        "default its arms keep its hands' capsules out of its torso, hips and thighs)",
    )
    p.add_argument(
        "--replace-animations",
        action="store_true",
        help="onto a glTF character, -o OUT.glb: its own animations dropped (default: kept)",
    )
    p.add_argument("--target-preset", choices=Presets())
    p.add_argument(
        "--velocity-limit",
        type=float,
        metavar="RAD_S",
        help="onto a robot: the hinges' speed limit where the model gives none",
    )
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
        "--map",
        metavar="MAP.json",
        help='roles completing the joint mapping: {"source": {role: joint}, "target": {...}}',
    )
    motion_options(p)


def method_options(p: argparse.ArgumentParser) -> None:
    """Every method's declared options (:class:`retarget.methods.Option`), as one group;
    each says which methods take it."""
    from ..methods import method_options as declared

    group = p.add_argument_group("method options (refused by a method that does not take them)")
    for option, methods in declared().values():
        if option.flag is not None:  # (not an argument only the library gives)
            add_option(group, option, f"{', '.join(methods)}: {option.help}")


def add_option(p: Any, option: Option, help: str) -> None:
    """A method's declared option (:class:`retarget.methods.Option`) on the parser or
    argument group ``p``, shown with ``help``; parsed into ``args.<option.dest>``."""
    kwargs: dict[str, Any] = {"help": help}
    if option.const is not None:
        kwargs.update(action="store_const", const=option.const, default=option.default)
    else:
        kwargs.update(default=option.default)
        if option.many:
            kwargs["action"] = "append"
        if option.type is not None:
            kwargs["type"] = option.type
        if option.choices is not None:
            kwargs["choices"] = option.choices
        if option.metavar is not None:
            kwargs["metavar"] = option.metavar
    assert option.flag is not None
    p.add_argument(option.flag, **kwargs)


def read_report(path: str) -> dict[str, Any]:
    """A run's ``--report`` JSON object."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RetargetError(f"{path}: not JSON ({exc})") from None
    if not isinstance(report, dict):
        raise RetargetError(f"{path}: expected a JSON object (a run's --report)")
    return report


def named_motions(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """``args.files`` read, each as (file name, motion), cut to ``--frames``."""
    from ..core.motion import frame_slice

    motions = []
    for path in args.files:
        motion = read_input(path, args)
        if args.frames:
            motion = motion[frame_slice(args.frames, motion.num_frames)]
        motions.append((Path(path).name, motion))
    return motions


def read_input(path: str, args: argparse.Namespace | None = None) -> Motion:
    """A motion file read with the options of ``args`` (``--skeleton``, ``--fps``,
    ``--animation``, and ``--unit``/``--up``: overrides of what
    :mod:`retarget.humanoid.world` finds)."""
    from ..io.formats import read_motion

    keys = ("skeleton", "fps", "unit", "up", "animation")
    return read_motion(path, **{k: getattr(args, k, None) for k in keys})


def given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The methods' options given on the command line, by name
    (:class:`retarget.methods.Option`; what :attr:`RunJob.method_options` holds)."""
    from ..methods import method_options

    found = {}
    for name, (option, _) in method_options().items():
        if option.flag is None:  # (an argument only the library gives)
            continue
        value = getattr(args, option.dest, None)
        if option.given(value):
            found[name] = value
    return found


def job_of(args: argparse.Namespace, **changes: Any) -> RunJob:
    """The :class:`retarget.pipeline.RunJob` of parsed ``run`` (or ``batch``) arguments,
    with ``changes``; the methods' options given go into ``method_options``."""
    import dataclasses

    from ..pipeline import RunJob

    fields = [f for f in dataclasses.fields(RunJob) if f.name != "method_options"]
    given = {f.name: getattr(args, f.name) for f in fields if hasattr(args, f.name)}
    return RunJob(
        **{"source": "", "output": "", **given, **changes}, method_options=given_options(args)
    )


def open_args_target(args: argparse.Namespace) -> Target:
    """The target ``--target``, ``--target-preset`` or ``--target-from``/``--target-to``
    name (:meth:`retarget.pipeline.RunJob.open_target`)."""
    return job_of(args).open_target()


def target_skeleton(args: argparse.Namespace, source: Motion) -> Skeleton:
    """The skeleton of the target the arguments name, made for ``source`` (a preset's
    from it; a morph's first frame's), its roles checked: for the commands that run a
    method on a skeleton themselves (``physics``, ``puppet``, ``serve``); a robot is
    refused (its trajectories come from ``retarget run``)."""
    from ..humanoid.roles import require_humanoid

    target = open_args_target(args)
    if target.kind == "robot":
        raise RetargetError(
            f"{target.name}: a robot is a target of `retarget run` and `retarget batch`; "
            "this command takes a skeleton or a character"
        )
    prepared = target.prepare(source)
    if prepared.check_roles is not None:
        require_humanoid(prepared.check_roles, prepared.skeleton)
    return prepared.skeleton
