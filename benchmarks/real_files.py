"""Every real file through every method: exit, skate, travel, pops, jerk and speed in one table.

What is run: every motion file in ``$RETARGET_DATA`` (default ``../shared/data``)
and its ``real/`` folder (BVH files, and ASF/AMC pairs: an ``.amc`` with the
``.asf`` of its name or the folder's only one), and the clips made from
``lafan_walk.bvh`` for what those lack (``made/``, written to a temporary folder
by the tests' own makers, ``tests/root_layouts.py`` and ``tests/made_clips.py``:
the travel below a static reference joint with 6 channels on every joint, on a
floor-level root with the hips, all on a floor-level root; a high kick behind; a
capture glitch of a foot at 30 and at 120 Hz), their first ``--frames`` frames
(default 600), through
:func:`retarget.pipeline.run_job` -- exactly what ``retarget run SRC
--target-preset T --method M`` does -- onto the characters ``blubby`` and ``sally``
with each method (``copy``, ``hierarchical``, ``omr``, ``puppetry``). One process
per job (a pool of ``--workers``, default 2), so a crash of one job is a row, not
the end of the table.

Each row gives, from the run's own report (:func:`retarget.humanoid.metrics.evaluate`):

- **exit**: 0, 2 for a one-line error (a non-humanoid: the message is listed),
  1 for anything else (a traceback: a defect);
- **skate**: the result's foot skate over the source's contacts, as a multiple
  of the source's own (``skate_ratio``; ``-`` when the source has no contact
  steps);
- **travel**: the hips' horizontal path in heights, the result's over the
  source's (``travel_ratio``);
- **pop %H**: the largest one-frame step of a knee or ankle beyond the source's
  step at that frame, each in its own heights, % of height (``pop_literal``;
  :func:`retarget.humanoid.metrics.pop`); **copy** the same of ``copy`` onto the
  same target (the share of the body's own proportions: a knee on a longer thigh
  per height swings farther); **(carried)** beyond the step of the source carried
  onto the result's body (``pop``: 0 for ``copy``);
- **jerk**: mean squared jerk of the joint positions, result over source
  (``smoothness_literal``); **copy** the same of ``copy``; **(carried)** over the
  source carried onto the result's body, its cuts left out (``smoothness``);
- **frames/s**: the method alone (``frames_per_second``: no file I/O, no
  mapping), one core, one run: a rough figure beside the quality measures;
  ``benchmarks/hierarchical.py`` and friends time the methods properly.

The acceptance bounds of issue 40 are marked (bold): skate above 1 for
hierarchical (the source's own) and 1.2 for omr and puppetry; travel outside
0.5-2; a pop above 1.5 % of height, or, where copy's exceeds 1 %, above copy's
plus 0.5; a jerk above 1.5, or, where copy's exceeds 1.5, above 1.2 times copy's.

Run: ``python benchmarks/real_files.py [--files GLOB] [--methods M,...]
[--targets T,...] [--frames N] [--workers N] [--no-made] [--no-save]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import fnmatch
import math
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common as common

METHODS = ("copy", "hierarchical", "omr", "puppetry")
TARGETS = ("blubby", "sally")
#: Acceptance bounds (issue 40): skate ratio per method, travel ratio, pop % of height
#: (or copy's plus POP_OVER_COPY where copy's exceeds POP_COPY), jerk ratio (or
#: JERK_OVER_COPY times copy's where copy's exceeds it).
SKATE_BOUND = {"hierarchical": 1.0, "omr": 1.2, "puppetry": 1.2}
TRAVEL_BOUNDS = (0.5, 2.0)
POP_BOUND = 1.5
POP_COPY = 1.0
POP_OVER_COPY = 0.5
JERK_BOUND = 1.5
JERK_OVER_COPY = 1.2
TESTS = common.PROJECT_ROOT / "tests"


@dataclass(frozen=True)
class Clip:
    """A motion file (and, for an AMC, its skeleton)."""

    path: Path
    skeleton: Path | None = None

    @property
    def name(self) -> str:
        folder = self.path.parent.name
        return f"{folder}/{self.path.name}" if folder in ("real", "made") else self.path.name


def data_dir() -> Path:
    return Path(os.environ.get("RETARGET_DATA", common.PROJECT_ROOT.parent / "shared" / "data"))


def clips(pattern: str = "*") -> list[Clip]:
    """Every BVH and AMC file of the data folder and its ``real/``, sorted by name."""
    out = []
    for folder in (data_dir(), data_dir() / "real"):
        if not folder.is_dir():
            continue
        asfs = sorted(folder.glob("*.asf"))
        for path in sorted(folder.iterdir()):
            suffix = path.suffix.lower()
            if suffix == ".bvh":
                clip = Clip(path)
            elif suffix == ".amc":
                named = path.with_name(path.stem.split("_")[0] + ".asf")
                same = path.with_suffix(".asf")
                asf = same if same.exists() else named if named.exists() else None
                if asf is None and len(asfs) == 1:
                    asf = asfs[0]
                clip = Clip(path, asf)
            else:
                continue
            if fnmatch.fnmatch(clip.name, pattern) or fnmatch.fnmatch(path.name, pattern):
                out.append(clip)
    return out


def made_clips(folder: Path, pattern: str = "*") -> list[Clip]:
    """The clips made from ``lafan_walk.bvh`` (module docstring), written into
    ``folder / "made"``."""
    sys.path.insert(0, str(TESTS))
    import made_clips
    import root_layouts

    out = folder / "made"
    out.mkdir()
    walk = data_dir() / "lafan_walk.bvh"
    paths = [
        root_layouts.rewrite(walk, k, out / f"{k}.bvh", frames=600) for k in root_layouts.LAYOUTS
    ]
    paths += list(made_clips.made(data_dir(), out).values())
    chosen = [Clip(p) for p in paths]
    return [
        c
        for c in chosen
        if fnmatch.fnmatch(c.name, pattern) or fnmatch.fnmatch(c.path.name, pattern)
    ]


def run_one(clip: Clip, target: str, method: str, frames: int) -> dict[str, Any]:
    """One ``retarget run``, in this (worker) process; a row of the table."""
    from retarget.core.errors import RetargetError
    from retarget.pipeline import RunJob, run_job

    row: dict[str, Any] = {"clip": clip.name, "target": target, "method": method}
    with tempfile.TemporaryDirectory() as tmp:
        job = RunJob(
            source=str(clip.path),
            output=str(Path(tmp) / "out.bvh"),
            method=method,
            target_preset=target,
            frames=f"0:{frames}",
            skeleton=str(clip.skeleton) if clip.skeleton else None,
        )
        try:
            report = run_job(job).report
        except RetargetError as exc:
            row.update(exit=2, message=str(exc).splitlines()[0])
            return row
        except Exception as exc:  # a defect: the table shows it
            row.update(
                exit=1,
                message=f"{type(exc).__name__}: {exc}",
                traceback=traceback.format_exc(limit=-3),
            )
            return row
    m = report.get("measures", {})
    row.update(
        exit=0,
        frames=report["frames"],
        contacts=m.get("contact_share"),
        skate=m.get("skate_ratio") if m.get("skate_source") else None,
        travel=m.get("travel_ratio"),
        pop=m.get("pop_literal"),
        pop_carried=m.get("pop"),
        jerk=m.get("smoothness_literal"),
        jerk_carried=m.get("smoothness"),
        fps=report.get("frames_per_second"),
        note=report.get("measures_note"),
    )
    return row


def _cell(value: float | None, digits: int, over: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    text = f"{value:.{digits}f}"
    return f"**{text}**" if over else text


def bounds(row: dict[str, Any], copy: dict[str, Any] | None) -> dict[str, bool]:
    """Which of issue 40's bounds ``row`` breaks (module docstring), ``copy`` the row of
    ``copy`` on the same clip and target."""
    c_pop = copy.get("pop") if copy else None
    c_jerk = copy.get("jerk") if copy else None
    pop_bound = POP_BOUND
    if c_pop is not None and c_pop > POP_COPY:
        pop_bound = max(POP_BOUND, c_pop + POP_OVER_COPY)
    jerk_bound = JERK_BOUND
    if c_jerk is not None and c_jerk > JERK_BOUND:
        jerk_bound = JERK_OVER_COPY * c_jerk
    lo, hi = TRAVEL_BOUNDS
    return {
        "skate": row["skate"] is not None
        and row["skate"] > SKATE_BOUND.get(row["method"], math.inf),
        "travel": row["travel"] is not None and not lo <= row["travel"] <= hi,
        "pop": row["pop"] is not None and row["pop"] > pop_bound,
        "jerk": row["jerk"] is not None and row["jerk"] > jerk_bound,
    }


def _copy_of(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["clip"], r["target"]): r for r in rows if r["method"] == "copy" and r["exit"] == 0}


def table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown: one row per clip and method, both targets side by side."""
    head = ["clip", "method"]
    for t in TARGETS:
        head += [f"{t} exit", "skate", "travel", "pop %H", "copy", "(carried)"]
        head += ["jerk", "copy", "(carried)", "frames/s"]
    lines = [common.row(head), common.row(["---"] * 2 + ["---:"] * (len(head) - 2))]
    by = {(r["clip"], r["method"], r["target"]): r for r in rows}
    copies = _copy_of(rows)
    order = list(dict.fromkeys((r["clip"], r["method"]) for r in rows))
    failures: list[str] = []
    for clip, method in order:
        cells = [clip, method]
        for t in TARGETS:
            r = by.get((clip, method, t))
            if r is None:
                cells += [""] * 10
                continue
            cells.append(str(r["exit"]))
            if r["exit"] != 0:
                cells += [""] * 9
                failures.append(f"- {clip}, {method} onto {t} (exit {r['exit']}): {r['message']}")
                if r.get("traceback"):
                    failures.append("  ```\n  " + r["traceback"].replace("\n", "\n  ") + "```")
                continue
            c = copies.get((clip, t), {})
            over = bounds(r, c)
            cells += [
                _cell(r["skate"], 2, over["skate"]),
                _cell(r["travel"], 2, over["travel"]),
                _cell(r["pop"], 2, over["pop"]),
                _cell(c.get("pop"), 2),
                _cell(r["pop_carried"], 2),
                _cell(r["jerk"], 2, over["jerk"]),
                _cell(c.get("jerk"), 2),
                _cell(r["jerk_carried"], 2),
                _cell(r["fps"], 0),
            ]
        lines.append(common.row(cells))
    if failures:
        lines += ["", "Jobs that did not finish:", "", *failures]
    return lines


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """How many rows break each bound (issue 40's acceptance)."""
    ok = [r for r in rows if r["exit"] == 0]
    copies = _copy_of(rows)
    broken = {
        r["clip"] + r["method"] + r["target"]: bounds(r, copies.get((r["clip"], r["target"])))
        for r in ok
    }
    crashed = [r for r in rows if r["exit"] == 1]

    def names(rs: list[dict[str, Any]]) -> str:
        return ", ".join(f"{r['clip']} {r['method']}→{r['target']}" for r in rs) or "none"

    def over(key: str) -> list[dict[str, Any]]:
        return [r for r in ok if broken[r["clip"] + r["method"] + r["target"]][key]]

    return [
        f"- jobs: {len(rows)}; finished {len(ok)}; one-line errors "
        f"{sum(r['exit'] == 2 for r in rows)}; tracebacks {len(crashed)} ({names(crashed)})",
        f"- skate above its bound: {len(over('skate'))} ({names(over('skate'))})",
        f"- travel outside {TRAVEL_BOUNDS}: {len(over('travel'))} ({names(over('travel'))})",
        f"- pop above its bound: {len(over('pop'))} ({names(over('pop'))})",
        f"- jerk above its bound: {len(over('jerk'))} ({names(over('jerk'))})",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", default="*", help="glob of clip names (default: all)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--frames", type=int, default=600, help="first N frames of each clip")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--no-made", action="store_true", help="only the data folder's clips")
    args = parser.parse_args(argv)
    made_dir = tempfile.TemporaryDirectory()
    chosen = clips(args.files)
    if not args.no_made:
        chosen += made_clips(Path(made_dir.name), args.files)
    if not chosen:
        print(f"no clip matches {args.files!r} in {data_dir()}", file=sys.stderr)
        return 2
    jobs = [
        (c, t, m, args.frames)
        for c in chosen
        for m in args.methods.split(",")
        for t in args.targets.split(",")
    ]
    t0 = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(args.workers, mp_context=context) as pool:
        rows = list(pool.map(run_one, *zip(*jobs, strict=True)))
    seconds = time.perf_counter() - t0
    lines = [
        f"# Real files × methods ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"- commit {common.commit(digest=True)}",
        common.cpu_line(),
        common.platform_line(),
        f"- {len(chosen)} clips from {data_dir()}, first {args.frames} frames, onto "
        f"{', '.join(TARGETS)}; {args.workers} worker processes; {seconds:.0f} s in all",
        "- bold: outside issue 40's bound (skate: hierarchical 1, omr and puppetry 1.2; "
        f"travel {TRAVEL_BOUNDS}; pop {POP_BOUND} % of height or copy's + {POP_OVER_COPY} "
        f"where copy's > {POP_COPY}; jerk {JERK_BOUND} or {JERK_OVER_COPY} × copy's where "
        "copy's is above it)",
        "",
        *summary(rows),
        "",
        *table(rows),
    ]
    common.publish(lines, "real_files", not args.no_save)
    made_dir.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
