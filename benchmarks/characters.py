"""Rigged characters (issue 28): the whole LAFAN walk onto glTF characters by
``hierarchical``, retargeting alone against retargeting and writing the GLB.

Per character, two contenders timed round-robin (``_common``'s protocol): the run
as ``retarget run`` does it up to the result (:func:`retarget.retarget` onto the character
opened once: mapping, method, the hands kept out of the body, measures), and the same
followed by writing the character with the clip added (:meth:`retarget.pipeline.Outcome.write`,
to a scratch folder). The issue's figure is the ratio of their medians (at most 1.5).
The characters are opened once, before the timing (as ``retarget run`` opens its target
once); their capsules are fitted at the warm-up.

Usage: ``python benchmarks/characters.py [--repeats N] [--no-save]``.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as common

from retarget.pipeline import retarget
from retarget.targets import open_target

CHARACTERS = (
    "RobotExpressive.glb",
    "kaykit_Knight.glb",
    "quaternius_UAL_Standard/AnimationLibrary_Godot_Standard.gltf",
)


@dataclass
class Contender:
    label: str
    run: Any
    failure: str | None = None
    samples: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(__doc__ or "", 3, argv)
    clip, source = common.read_clip()
    folder = clip.parent.parent / "characters"
    title = f"Characters: {clip.name} ({source.num_frames} frames) onto glTF characters"
    lines = [
        *common.header(title, "characters.py", args.repeats),
        "| character | contender | median s | p10 | p90 | frames/s | write ÷ retarget |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    scratch = Path(tempfile.mkdtemp(prefix="retarget-bench-"))
    contenders: list[Contender] = []
    for name in CHARACTERS:
        path = folder / name
        if not path.is_file():
            print(f"{path}: not found", file=sys.stderr)
            return 2
        target = open_target(path)

        def alone(target=target):
            return retarget(source, target, name=str(clip))

        def written(target=target, stem=Path(name).stem):
            return retarget(source, target, name=str(clip)).write(scratch / f"{stem}.glb")

        contenders += [Contender(f"{name}|retarget", alone), Contender(f"{name}|+ write", written)]
    for _c, _, _ in common.attempts(contenders):  # warm-up
        pass
    for _ in common.round_robin(contenders, args.repeats):
        pass
    for k in range(0, len(contenders), 2):
        a, b = contenders[k], contenders[k + 1]
        name = a.label.split("|")[0]
        ratio = common.ratio_text(b.samples, a.samples, 2) if a.ok and b.ok else "—"
        for c, extra in ((a, ""), (b, ratio)):
            cells = common.timing_cells(c.samples, source.num_frames) if c.ok else ["—"] * 4
            lines.append(common.row([name, c.label.split("|")[1], *cells, extra]))
    lines += common.could_not_run(contenders, lambda c: c.label)
    common.publish(lines, "characters", not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
