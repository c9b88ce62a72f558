"""Hierarchical retargeting of a long walk: speed and quality, side by side.

What is measured, on ``lafan_walk.bvh`` (22 joints + 5 end sites, 7184 frames
at 30 fps; from ``$RETARGET_DATA``, default ``../shared/data`` beside the
project), onto the characters ``blubby`` and ``sally``
(:func:`retarget.humanoid.characters.make_character` presets):

* **hierarchical (LM)** -- the whole of
  :func:`retarget.methods.hierarchical.hierarchical_retarget` with its defaults
  (roles, contacts, transfer, footplants, four fitting levels, the exact pass):
  the HybridSolver's default minimiser, Levenberg--Marquardt. The seconds of
  each level come from the result's ``report["levels"]``; "setup" is the rest
  of the call (roles, contacts, transfer, footplants, root guess).
* **hierarchical (CG)** -- the same call with ``minimizer="cg"``: the
  HybridSolver minimises the same objective by the paper's nonlinear conjugate
  gradient, Gauss--Newton preconditioned. The report says how far its motion
  is from LM's.
* **copy** -- the baseline :func:`retarget.methods.copy.copy_retarget`
  (rotations copied, root scaled, feet rested on the floor; no IK), for scale.

For context the table also shows the paper's figure (Lee & Shin 1999: a
464-frame rough-terrain walk in about 5.5 s on their machine, 84 frames/s);
it was not measured here. The goal (from the issue): hierarchical (LM),
``lafan_walk`` onto ``blubby``, at least 2000 frames/s.

Quality: :func:`retarget.humanoid.metrics.evaluate` of each contender's result
(``skate_result`` against ``skate_source``, ``tracking_error_max`` against the
method's own goals, ``smoothness``, ``pose_deviation_deg``, and
``penetration_result``), so that speed and quality sit side by side. Every
timed repeat's motion is compared with the warm-up's: the methods are
deterministic, so the measures hold for every run (the table says if not).

Protocol: each contender runs once to warm up (numba JIT, caches), then N
times (``--repeats``, default 5) in round-robin order, the starting contender
rotating every round, so that the noise of a shared machine falls on all
alike; garbage is collected before every timed call and inputs are built
outside the timed region. The table gives median and p10/p90 in seconds,
frames/s = 7184 / median, and time ratios of medians against hierarchical (LM)
on the same character (with p10-p90 of the per-round ratios). It is printed as
Markdown and appended to ``benchmarks/results/YYYY-MM-DD-hierarchical.md``
(one file a day holds that day's runs: quote the medians of several).

Run: ``make bench`` or ``.venv/bin/python benchmarks/hierarchical.py --repeats 5``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import _common as common
import numpy as np

from retarget.core.motion import Motion
from retarget.core.result import Result
from retarget.humanoid.characters import make_character
from retarget.humanoid.metrics import evaluate
from retarget.methods.copy import copy_retarget
from retarget.methods.hierarchical import hierarchical_retarget

CHARACTERS = ("blubby", "sally")
GOAL_FPS = 2000.0  # hierarchical (LM), lafan_walk -> blubby
GOAL_CHARACTER = "blubby"
PAPER_FRAMES, PAPER_SECONDS = 464, 5.5  # Lee & Shin 1999, rough-terrain walk, their machine
LM, CG, COPY = "hierarchical (LM)", "hierarchical (CG)", "copy"
MEASURES = (
    ("skate_result", "skate % h/s"),
    ("skate_ratio", "skate ratio"),
    ("tracking_error_max", "tracking max % h"),
    ("smoothness", "smoothness"),
    ("pose_deviation_deg", "pose dev. °"),
    ("penetration_result", "penetration % h"),
)
DISTRIBUTIONS = ("retarget", "numpy", "numba", "scipy")


# -- contenders -------------------------------------------------------------------------------


@dataclass
class Contender:
    """One timed call on one character: ``run()`` retargets the whole clip once."""

    character: str
    name: str
    what: str
    run: Callable[[], Result]
    ours: bool = False  # hierarchical (LM): the reference of the ratios
    failure: str | None = None
    samples: list[float] = field(default_factory=list)  # seconds, whole call
    levels: list[list[float]] = field(default_factory=list)  # per run: seconds of each level
    level_info: list[dict] = field(default_factory=list)  # levels of the warm-up run
    reference: Motion | None = None  # the warm-up's motion
    measures: dict[str, float] = field(default_factory=dict)
    max_drift: float = 0.0  # largest difference of a timed run's motion from the warm-up's

    @property
    def ok(self) -> bool:
        return self.failure is None

    def percentiles(self) -> tuple[float, float, float]:
        return common.percentiles(self.samples)


def contenders(source: Motion) -> list[Contender]:
    out = []
    for preset in CHARACTERS:
        target = make_character(source.skeleton, preset=preset)
        out += [
            Contender(
                preset,
                LM,
                "retarget.methods.hierarchical.hierarchical_retarget(source, target) "
                "(defaults; HybridSolver minimizer='lm')",
                run=lambda t=target: hierarchical_retarget(source, t),
                ours=True,
            ),
            Contender(
                preset,
                CG,
                "retarget.methods.hierarchical.hierarchical_retarget(source, target, "
                "minimizer='cg') (HybridSolver's preconditioned CG)",
                run=lambda t=target: hierarchical_retarget(source, t, minimizer="cg"),
            ),
            Contender(
                preset,
                COPY,
                "retarget.methods.copy.copy_retarget(source, target)",
                run=lambda t=target: copy_retarget(source, t),
            ),
        ]
    return out


def compare_minimizers(cs: list[Contender]) -> list[str]:
    """How far CG's motion is from LM's, per character (warm-up results)."""
    lines = []
    for preset in CHARACTERS:
        lm = next((c for c in cs if c.character == preset and c.name == LM), None)
        cg = next((c for c in cs if c.character == preset and c.name == CG), None)
        if lm is None or cg is None or lm.reference is None or cg.reference is None:
            continue
        a, b = lm.reference, cg.reference
        d_root = float(np.abs(a.root_position - b.root_position).max())
        d_rot = float(np.abs(a.rotations - b.rotations).max())
        lines.append(
            f"{preset}: CG's motion differs from LM's by at most {d_root:.1e} "
            f"{a.skeleton.unit} (root position) and {d_rot:.1e} (quaternion components)"
        )
    return lines


def warm_up(cs: list[Contender], source: Motion) -> None:
    """Run each once (JIT, caches); keep its motion, levels and measures."""
    for c, _, result in common.attempts(cs):
        c.reference = result.motion
        c.level_info = list(result.report.get("levels", []))
        c.measures = evaluate(source, result.motion, goals=result.goals or None)
        print(f"  warm-up {c.character} / {c.name} done", file=sys.stderr)


def measure(cs: list[Contender], repeats: int) -> None:
    for c, result in common.round_robin(cs, repeats):
        c.levels.append([lv["seconds"] for lv in result.report.get("levels", [])])
        if c.reference is not None:
            c.max_drift = max(c.max_drift, common.max_difference(result.motion, c.reference))


# -- the report -------------------------------------------------------------------------------


def machine_info() -> list[str]:
    threads = [
        f"{v}={os.environ[v]}"
        for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
        if v in os.environ
    ]
    return [
        common.cpu_line(),
        common.platform_line() + (f"; {', '.join(threads)}" if threads else ""),
        f"- versions: {common.versions(DISTRIBUTIONS)}; commit {common.commit()}",
    ]


def report(
    cs: list[Contender], source: Motion, path: Path, repeats: int, notes: list[str]
) -> list[str]:
    n = source.num_frames
    lines = [
        f"# Hierarchical retargeting: `{path.name}` ({n} frames) onto "
        + ", ".join(f"`{p}`" for p in CHARACTERS),
        "",
        common.protocol_line("hierarchical.py", repeats),
        "",
        *machine_info(),
        "",
        "## Whole retarget",
        "",
        "| character | contender | median s | p10 s | p90 s | frames/s | "
        "time / hierarchical (LM) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for preset in CHARACTERS:
        rows = [c for c in cs if c.character == preset]
        ref = next(c for c in rows if c.ours)
        ref_timed = ref.ok and bool(ref.samples)
        for c in rows:
            if not c.ok or not c.samples:
                lines.append(f"| {preset} | {c.name} | failed | | | | |")
                continue
            ratio = "—" if c.ours or not ref_timed else common.ratio_text(c.samples, ref.samples, 1)
            lines.append(common.row([preset, c.name, *common.timing_cells(c.samples, n), ratio]))
    lines += [
        f"| (paper) | Lee & Shin 1999, {PAPER_FRAMES}-frame rough-terrain walk, their "
        f"machine (not measured here) | ≈{PAPER_SECONDS} | | | "
        f"{PAPER_FRAMES / PAPER_SECONDS:,.0f} | |",
        "",
    ]
    for c in cs:
        if c.character == CHARACTERS[0]:
            status = "" if c.ok else f"; FAILED: {c.failure}"
            lines.append(f"- {c.name}: `{c.what}`{status}")
    lines += [f"- {note}" for note in notes]
    lines.append("")

    # per level
    level_cs = [c for c in cs if c.ok and c.levels and c.level_info]
    if level_cs:
        heads = [
            "exact" if lv["level"] == -1 else f"L{lv['level']} ({lv['spacing']:g})"
            for lv in level_cs[0].level_info
        ]
        lines += [
            "## Per level (median s over the repeats; setup = the call minus its levels)",
            "",
            "| character | contender | " + " | ".join(heads) + " | setup | total |",
            "|---|---|" + "---:|" * (len(heads) + 2),
        ]
        for c in level_cs:
            per = np.array(c.levels)  # (runs, levels)
            setup = np.array(c.samples) - per.sum(axis=1)
            cells = [f"{np.median(per[:, k]):.3f}" for k in range(per.shape[1])]
            lines.append(
                f"| {c.character} | {c.name} | "
                + " | ".join(cells)
                + f" | {np.median(setup):.3f} | {np.median(c.samples):.3f} |"
            )
        lines.append("")
        for c in level_cs:
            solved = ", ".join(str(lv["frames_solved"]) for lv in c.level_info)
            err = ", ".join(common.fmt(lv["max_error"]) for lv in c.level_info)
            pen = ", ".join(common.fmt(lv["max_penetration"]) for lv in c.level_info)
            lines.append(
                f"- {c.character} / {c.name}: frames solved per level {solved}; max footplant "
                f"error after each level {err} % h; deepest ground penetration {pen} % h"
            )
        lines.append("")

    # quality
    lines += [
        "## Quality of the result (`retarget.humanoid.metrics.evaluate`, the method's own goals)",
        "",
        "| character | contender | "
        + " | ".join(label for _, label in MEASURES)
        + " | same motion every repeat |",
        "|---|---|" + "---:|" * (len(MEASURES) + 1),
    ]
    for preset in CHARACTERS:
        rows = [c for c in cs if c.character == preset and c.measures]
        if rows:
            m = rows[0].measures
            lines.append(
                f"| {preset} | source | {common.fmt(m['skate_source'])} | 1 | — | 1 | 0 | "
                f"{common.fmt(m['penetration_source'])} | |"
            )
        for c in rows:
            cells = [common.fmt(c.measures.get(key)) for key, _ in MEASURES]
            same = "yes" if c.max_drift == 0.0 else f"NO (max abs difference {c.max_drift:.1e})"
            lines.append(common.row([preset, c.name, *cells, same]))
    lines += [
        "",
        "% h = % of the character's height. skate: mean horizontal speed of foot points over "
        "the source's contact frames (lower is better; ratio to the source's); tracking: the "
        "farthest constrained point from its goal (copy has no goals); smoothness: mean "
        "squared jerk, result over source (1 = no new high frequencies); pose dev.: mean "
        "angle from the source's rotations, joints outside the legs; penetration: mean depth "
        "of each foot's lowest point below the floor.",
        "",
    ]

    # goals
    lines += ["## Goals (medians)", ""]
    ours = next((c for c in cs if c.ours and c.character == GOAL_CHARACTER), None)
    label = f"hierarchical (LM), `{path.name}` → `{GOAL_CHARACTER}`, ≥ {GOAL_FPS:,.0f} frames/s"
    if ours is None or not ours.ok or not ours.samples:
        lines.append(f"- {label}: **UNKNOWN** — could not run")
    else:
        p10, p50, p90 = ours.percentiles()
        fps = n / p50
        verdict = "MET" if fps >= GOAL_FPS else "NOT MET"
        lines.append(
            f"- {label}: **{verdict}** — {fps:,.0f} frames/s "
            f"(per-run {n / p90:,.0f}-{n / p10:,.0f}, p90-p10 of the times); "
            f"{fps / (PAPER_FRAMES / PAPER_SECONDS):,.0f}x the paper's "
            f"{PAPER_FRAMES / PAPER_SECONDS:.0f} frames/s (other machine, other clip)"
        )
    lines += common.could_not_run(cs, lambda c: f"{c.character} / {c.name}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(__doc__, 5, argv)
    path, source = common.read_clip()
    cs = contenders(source)
    print(f"warming up {len(cs)} contenders ...", file=sys.stderr)
    warm_up(cs, source)
    notes = compare_minimizers(cs)
    measure(cs, args.repeats)

    common.publish(report(cs, source, path, args.repeats, notes), "hierarchical", not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
