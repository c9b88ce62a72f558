"""Every real file through every method: exit code, skate, pops, jerk and speed in one table.

What is run: every motion file in ``$RETARGET_DATA`` (default ``../shared/data``)
and its ``real/`` folder (BVH files, and ASF/AMC pairs: an ``.amc`` with the
``.asf`` of its name or the folder's only one), its first ``--frames`` frames
(default 600), through :func:`retarget.pipeline.run_job` -- exactly what
``retarget run SRC --target-preset T --method M`` does -- onto the characters
``blubby`` and ``sally`` with each method (``copy``, ``hierarchical``, ``omr``,
``puppetry``). One process per job (a pool of ``--workers``, default 2), so a
crash of one job is a row, not the end of the table.

Each row gives, from the run's own report (:func:`retarget.humanoid.metrics.evaluate`):

- **exit**: 0, 2 for a one-line error (a non-humanoid: the message is listed),
  1 for anything else (a traceback: a defect);
- **skate**: the result's foot skate over the source's contacts, as a multiple
  of the source's own (``skate_ratio``; ``-`` when the source has no contact
  steps);
- **pop %H**: the largest one-frame step of a knee or ankle beyond the source's
  step at that frame taken in the result's proportions, % of height (``pop``;
  :func:`retarget.humanoid.metrics.pop`), and **(literal)** the same beyond the source's
  step as it is (``pop_literal``);
- **jerk**: mean squared jerk of the joint positions, result over source, each
  result point's jerk taken in the source's proportions and the source's cuts
  left out (``smoothness``), and **(literal)** the raw ratio
  (``smoothness_literal``);
- **frames/s**: the method alone (``frames_per_second``: no file I/O, no
  mapping), one core, one run: a rough figure beside the quality measures;
  ``benchmarks/hierarchical.py`` and friends time the methods properly.

The acceptance bounds of issue 24 are marked: hierarchical skate above 1
(the source's own), omr and puppetry above 1.2, any pop above 1.5 % of height,
any jerk ratio above 1.5.

Run: ``python benchmarks/real_files.py [--files GLOB] [--methods M,...]
[--targets T,...] [--frames N] [--workers N] [--no-save]``.
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
#: Acceptance bounds (issue 24): skate ratio per method, pop % of height, jerk ratio.
SKATE_BOUND = {"hierarchical": 1.0, "omr": 1.2, "puppetry": 1.2}
POP_BOUND = 1.5
JERK_BOUND = 1.5


@dataclass(frozen=True)
class Clip:
    """A motion file (and, for an AMC, its skeleton)."""

    path: Path
    skeleton: Path | None = None

    @property
    def name(self) -> str:
        folder = self.path.parent.name
        return f"{folder}/{self.path.name}" if folder == "real" else self.path.name


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
        pop=m.get("pop"),
        pop_literal=m.get("pop_literal"),
        jerk=m.get("smoothness"),
        jerk_literal=m.get("smoothness_literal"),
        fps=report.get("frames_per_second"),
        note=report.get("measures_note"),
    )
    return row


def _cell(value: float | None, digits: int, bound: float | None = None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    text = f"{value:.{digits}f}"
    return f"**{text}**" if bound is not None and value > bound else text


def table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown: one row per clip and method, both targets side by side."""
    head = ["clip", "method"]
    for t in TARGETS:
        head += [f"{t} exit", "skate", "pop %H", "(literal)", "jerk", "(literal)", "frames/s"]
    lines = [common.row(head), common.row(["---"] * 2 + ["---:"] * (len(head) - 2))]
    by = {(r["clip"], r["method"], r["target"]): r for r in rows}
    order = list(dict.fromkeys((r["clip"], r["method"]) for r in rows))
    failures: list[str] = []
    for clip, method in order:
        cells = [clip, method]
        for t in TARGETS:
            r = by.get((clip, method, t))
            if r is None:
                cells += ["", "", "", "", "", "", ""]
                continue
            cells.append(str(r["exit"]))
            if r["exit"] != 0:
                cells += ["", "", "", "", "", ""]
                failures.append(f"- {clip}, {method} onto {t} (exit {r['exit']}): {r['message']}")
                if r.get("traceback"):
                    failures.append("  ```\n  " + r["traceback"].replace("\n", "\n  ") + "```")
                continue
            cells += [
                _cell(r["skate"], 2, SKATE_BOUND.get(method)),
                _cell(r["pop"], 2, POP_BOUND),
                _cell(r["pop_literal"], 2),
                _cell(r["jerk"], 2, JERK_BOUND),
                _cell(r["jerk_literal"], 2),
                _cell(r["fps"], 0),
            ]
        lines.append(common.row(cells))
    if failures:
        lines += ["", "Jobs that did not finish:", "", *failures]
    return lines


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """How many rows break each bound (issue 24's acceptance), over clips with contacts."""
    ok = [r for r in rows if r["exit"] == 0]
    skate = [
        r
        for r in ok
        if r["skate"] is not None and r["skate"] > SKATE_BOUND.get(r["method"], math.inf)
    ]
    pops = [r for r in ok if r["pop"] is not None and r["pop"] > POP_BOUND]
    jerk = [r for r in ok if r["jerk"] is not None and r["jerk"] > JERK_BOUND]
    crashed = [r for r in rows if r["exit"] == 1]

    def names(rs: list[dict[str, Any]]) -> str:
        return ", ".join(f"{r['clip']} {r['method']}→{r['target']}" for r in rs) or "none"

    return [
        f"- jobs: {len(rows)}; finished {len(ok)}; one-line errors "
        f"{sum(r['exit'] == 2 for r in rows)}; tracebacks {len(crashed)} ({names(crashed)})",
        f"- skate above its bound: {len(skate)} ({names(skate)})",
        f"- pop above {POP_BOUND} % of height: {len(pops)} ({names(pops)})",
        f"- jerk ratio above {JERK_BOUND}: {len(jerk)} ({names(jerk)})",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", default="*", help="glob of clip names (default: all)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--frames", type=int, default=600, help="first N frames of each clip")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(argv)
    chosen = clips(args.files)
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
        "- bold: above the acceptance bound (skate: hierarchical 1, omr and puppetry 1.2; "
        f"pop {POP_BOUND} % of height; jerk {JERK_BOUND})",
        "",
        *summary(rows),
        "",
        *table(rows),
    ]
    common.publish(lines, "real_files", not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
