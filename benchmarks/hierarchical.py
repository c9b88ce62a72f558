"""Hierarchical retargeting of a long walk: speed and quality, side by side.

What is measured, on ``lafan_walk.bvh`` (22 joints + 5 end sites, 7184 frames
at 30 fps; from ``$RETARGET_DATA``, default ``../shared/data`` beside the
project), onto the characters ``blubby`` and ``sally``
(:func:`retarget.characters.make_character` presets):

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

Quality: :func:`retarget.metrics.evaluate` of each contender's result
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

import argparse
import contextlib
import datetime as dt
import gc
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from retarget.characters import make_character
from retarget.io import read_bvh
from retarget.methods.copy import copy_retarget
from retarget.methods.hierarchical import hierarchical_retarget
from retarget.metrics import evaluate
from retarget.motion import Motion
from retarget.result import Result

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FILE_NAME = "lafan_walk.bvh"
RESULTS_DIR = PROJECT_ROOT / "benchmarks" / "results"
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


def _max_diff(a: Motion, b: Motion) -> float:
    return float(
        max(
            np.abs(a.root_position - b.root_position).max(),
            np.abs(a.rotations - b.rotations).max(),
        )
    )


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
        p10, p50, p90 = np.percentile(self.samples, [10, 50, 90])
        return float(p10), float(p50), float(p90)


def _reason(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {Path(last[0].filename).name}:{last[0].lineno})" if last else ""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}{where}"


def _timed(fn: Callable[[], Result]) -> tuple[float, Result]:
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    t1 = time.perf_counter()
    return t1 - t0, out


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
    for c in cs:
        try:
            _, result = _timed(c.run)
        except Exception as exc:
            c.failure = _reason(exc)
            continue
        c.reference = result.motion
        c.level_info = list(result.report.get("levels", []))
        c.measures = evaluate(source, result.motion, goals=result.goals or None)
        print(f"  warm-up {c.character} / {c.name} done", file=sys.stderr)


def measure(cs: list[Contender], repeats: int) -> None:
    live = [c for c in cs if c.ok]
    for r in range(repeats):
        k = r % len(live)
        for c in live[k:] + live[:k]:
            if not c.ok:
                continue
            try:
                seconds, result = _timed(c.run)
            except Exception as exc:
                c.failure = _reason(exc)
                continue
            c.samples.append(seconds)
            c.levels.append([lv["seconds"] for lv in result.report.get("levels", [])])
            if c.reference is not None:
                c.max_drift = max(c.max_drift, _max_diff(result.motion, c.reference))
        print(f"  round {r + 1}/{repeats} done", file=sys.stderr)


# -- the report -------------------------------------------------------------------------------


def _versions() -> dict[str, str]:
    out = {}
    for dist in ["retarget", "numpy", "numba", "scipy"]:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def machine_info() -> list[str]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    versions = ", ".join(f"{k} {v}" for k, v in _versions().items())
    commit = "unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = ["git", "-C", str(PROJECT_ROOT)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "src"], capture_output=True, text=True
        )
        if head.returncode == 0:
            changed = len(dirty.stdout.splitlines())
            commit = head.stdout.strip() + (
                f" with {changed} uncommitted change(s) under src/" if changed else ""
            )
    threads = [
        f"{v}={os.environ[v]}"
        for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
        if v in os.environ
    ]
    return [
        f"- CPU: {cpu}; {os.cpu_count()} logical cores ({usable} usable); "
        f"load average at start {load}",
        f"- {platform.platform()}; Python {platform.python_version()}"
        + (f"; {', '.join(threads)}" if threads else ""),
        f"- versions: {versions}; commit {commit}",
    ]


def _ratio_text(c: Contender, ref: Contender) -> str:
    ratio = c.percentiles()[1] / ref.percentiles()[1]
    n = min(len(c.samples), len(ref.samples))
    paired = np.array(c.samples[:n]) / np.array(ref.samples[:n])
    lo, hi = np.percentile(paired, [10, 90])
    digits = 1 if ratio >= 0.1 else 4
    return f"{ratio:.{digits}f}x (per-round {lo:.{digits}f}-{hi:.{digits}f}x)"


def _fmt(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"


def report(
    cs: list[Contender], source: Motion, path: Path, repeats: int, notes: list[str]
) -> list[str]:
    n = source.num_frames
    lines = [
        f"# Hierarchical retargeting: `{path.name}` ({n} frames) onto "
        + ", ".join(f"`{p}`" for p in CHARACTERS),
        "",
        f"{dt.datetime.now().isoformat(timespec='seconds')}; `benchmarks/hierarchical.py "
        f"--repeats {repeats}`: one warm-up, then {repeats} round-robin repeats per contender.",
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
        for c in rows:
            if not c.ok or not c.samples:
                lines.append(f"| {preset} | {c.name} | failed | | | | |")
                continue
            p10, p50, p90 = c.percentiles()
            ratio = "—" if c.ours or not (ref.ok and ref.samples) else _ratio_text(c, ref)
            lines.append(
                f"| {preset} | {c.name} | {p50:.3f} | {p10:.3f} | {p90:.3f} | "
                f"{n / p50:,.0f} | {ratio} |"
            )
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
            err = ", ".join(_fmt(lv["max_error"]) for lv in c.level_info)
            pen = ", ".join(_fmt(lv["max_penetration"]) for lv in c.level_info)
            lines.append(
                f"- {c.character} / {c.name}: frames solved per level {solved}; max footplant "
                f"error after each level {err} % h; deepest ground penetration {pen} % h"
            )
        lines.append("")

    # quality
    lines += [
        "## Quality of the result (`retarget.metrics.evaluate`, the method's own goals)",
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
                f"| {preset} | source | {_fmt(m['skate_source'])} | 1 | — | 1 | 0 | "
                f"{_fmt(m['penetration_source'])} | |"
            )
        for c in rows:
            cells = [_fmt(c.measures.get(key)) for key, _ in MEASURES]
            same = "yes" if c.max_drift == 0.0 else f"NO (max abs difference {c.max_drift:.1e})"
            lines.append(f"| {preset} | {c.name} | " + " | ".join(cells) + f" | {same} |")
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
    failed = [c for c in cs if not c.ok]
    if failed:
        lines += ["", "## Could not run", ""]
        lines += [f"- {c.character} / {c.name}: {c.failure}" for c in failed]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per contender")
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    data_dir = Path(os.environ.get("RETARGET_DATA", PROJECT_ROOT.parent / "shared" / "data"))
    path = data_dir / FILE_NAME
    if not path.is_file():
        print(
            f"{path} not found (set RETARGET_DATA to the folder holding {FILE_NAME})",
            file=sys.stderr,
        )
        return 2

    source = read_bvh(path)
    print(f"{path}: {source!r}", file=sys.stderr)
    cs = contenders(source)
    print(f"warming up {len(cs)} contenders ...", file=sys.stderr)
    warm_up(cs, source)
    notes = compare_minimizers(cs)
    live = sum(c.ok for c in cs)
    print(f"timing {live} contenders x {args.repeats} ...", file=sys.stderr)
    measure(cs, args.repeats)

    lines = report(cs, source, path, args.repeats, notes)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / f"{dt.date.today().isoformat()}-hierarchical.md"
        # Runs of one day are appended: quote the medians of several.
        earlier = out.exists() and out.stat().st_size > 0
        with out.open("a", encoding="utf-8") as fh:
            fh.write(("\n---\n\n" if earlier else "") + text)
        print(f"appended to {out.relative_to(PROJECT_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
