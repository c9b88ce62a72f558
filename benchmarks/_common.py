"""What the benchmark scripts share: the clip, the protocol, the machine, the results file.

``hierarchical.py``, ``io_kinematics.py`` and ``omr.py`` time their contenders
the same way: each runs once to warm up (:func:`attempts`), then ``--repeats``
times in round-robin order (:func:`round_robin`), garbage collected before every
timed call (:func:`timed`). A contender is any object with ``run`` (the call, or
None when it cannot run), ``failure`` (None, or why it cannot run), ``ok`` and
``samples`` (seconds). The report, Markdown, is printed and appended to
``benchmarks/results/YYYY-MM-DD-<script>.md`` (:func:`publish`).
``puppetry.py`` takes the clip and the results file from here.

The scripts import this module as ``_common`` (``benchmarks/`` is on the path
when one runs as ``python benchmarks/X.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from retarget.core.motion import Motion
from retarget.io import read_bvh

PROJECT_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = PROJECT_ROOT / "benchmarks" / "results"
CLIP = "lafan_walk.bvh"


class Timeable(Protocol):
    """What :func:`attempts` and :func:`round_robin` use of a contender."""

    run: Callable[[], Any] | None
    failure: str | None
    samples: list[float]

    @property
    def ok(self) -> bool: ...


C = TypeVar("C", bound=Timeable)


# -- the command line and the clip ------------------------------------------------------------


def parse_args(doc: str, repeats: int, argv: list[str] | None) -> argparse.Namespace:
    """``--repeats`` (default ``repeats``, at least 1) and ``--no-save``; ``doc``'s first
    line describes the script."""
    parser = argparse.ArgumentParser(description=doc.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=repeats, help="timed runs per contender")
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def clip_path(name: str = CLIP) -> Path:
    """``name`` in ``$RETARGET_DATA`` (default ``../shared/data`` beside the project).

    Raises
    ------
    SystemExit
        With status 2, when the file is not there (said on stderr).
    """
    data_dir = Path(os.environ.get("RETARGET_DATA", PROJECT_ROOT.parent / "shared" / "data"))
    path = data_dir / name
    if not path.is_file():
        print(f"{path} not found (set RETARGET_DATA to the folder holding {name})", file=sys.stderr)
        raise SystemExit(2)
    return path


def read_clip(name: str = CLIP) -> tuple[Path, Motion]:
    """:func:`clip_path` and the motion read from it (said on stderr)."""
    path = clip_path(name)
    motion = read_bvh(path)
    print(f"{path}: {motion!r}", file=sys.stderr)
    return path, motion


# -- timing -----------------------------------------------------------------------------------


def reason(exc: BaseException, relative_to: Path | None = None) -> str:
    """One line on why a call failed: the exception, its message and where it was raised
    (the file's name; with ``relative_to``, its path from that folder when inside it)."""
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = ""
    if last:
        file = Path(last[0].filename)
        if relative_to is None:
            file = Path(file.name)
        else:
            with contextlib.suppress(ValueError):
                file = file.resolve().relative_to(relative_to)
        where = f" (at {file}:{last[0].lineno})"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}{where}"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds of one call of ``fn`` (garbage collected before), and what it returned."""
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    t1 = time.perf_counter()
    return t1 - t0, out


def median_seconds(fn: Callable[[], Any], repeats: int, *, warm_up: bool = False) -> float:
    """Median seconds of ``repeats`` calls of ``fn`` (one untimed call first with ``warm_up``)."""
    if warm_up:
        fn()
    return float(np.median([timed(fn)[0] for _ in range(repeats)]))


def attempts(
    contenders: Iterable[C],
    timer: Callable[[Callable[[], Any]], tuple[float, Any]] = timed,
    why: Callable[[BaseException], str] = reason,
) -> Iterator[tuple[C, float, Any]]:
    """``timer(c.run)`` of each contender still ok, in turn: ``(c, seconds, output)``.

    A call that raises is not yielded; ``c.failure`` says ``why``.
    """
    for c in contenders:
        if not c.ok:
            continue
        try:
            seconds, out = timer(c.run)  # type: ignore[arg-type]
        except Exception as exc:
            c.failure = why(exc)
            continue
        yield c, seconds, out


def round_robin(
    contenders: Sequence[C],
    repeats: int,
    timer: Callable[[Callable[[], Any]], tuple[float, Any]] = timed,
    why: Callable[[BaseException], str] = reason,
    progress: bool = True,
) -> Iterator[tuple[C, Any]]:
    """``repeats`` rounds over the contenders that are ok, the starting one rotating every
    round; each call's seconds are appended to ``c.samples`` and ``(c, output)`` yielded.

    A contender whose call raises is left out from then on (:func:`attempts`). Says on
    stderr how many contenders it times and, with ``progress``, when each round is done.
    """
    live = [c for c in contenders if c.ok]
    print(f"timing {len(live)} contenders x {repeats} ...", file=sys.stderr)
    for r in range(repeats if live else 0):
        k = r % len(live)
        for c, seconds, out in attempts(live[k:] + live[:k], timer, why):
            c.samples.append(seconds)
            yield c, out
        if progress:
            print(f"  round {r + 1}/{repeats} done", file=sys.stderr)


def percentiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """10th, 50th and 90th percentiles."""
    p10, p50, p90 = np.percentile(samples, [10, 50, 90])
    return float(p10), float(p50), float(p90)


def paired_ratio(
    samples: Sequence[float], reference: Sequence[float]
) -> tuple[float, float, float]:
    """Ratio of the medians, and the 10th and 90th percentiles of the per-round ratios
    (the i-th sample of each, made in the same round)."""
    ratio = percentiles(samples)[1] / percentiles(reference)[1]
    n = min(len(samples), len(reference))
    paired = np.array(samples[:n]) / np.array(reference[:n])
    lo, hi = np.percentile(paired, [10, 90])
    return ratio, float(lo), float(hi)


def ratio_text(samples: Sequence[float], reference: Sequence[float], digits: int) -> str:
    """:func:`paired_ratio` as ``"1.5x (per-round 1.4-1.6x)"``: ``digits`` decimals, four
    below 0.1."""
    ratio, lo, hi = paired_ratio(samples, reference)
    d = digits if ratio >= 0.1 else 4
    return f"{ratio:.{d}f}x (per-round {lo:.{d}f}-{hi:.{d}f}x)"


def max_difference(a: Motion, b: Motion) -> float:
    """Largest absolute difference of the root positions and rotations of two motions."""
    return float(
        max(
            np.abs(a.root_position - b.root_position).max(),
            np.abs(a.rotations - b.rotations).max(),
        )
    )


# -- the machine ------------------------------------------------------------------------------


def cpu_line() -> str:
    """Markdown item: the CPU model, its logical cores (and how many this process may use),
    the load average now."""
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"- CPU: {cpu}; {os.cpu_count()} logical cores ({usable} usable); "
        f"load average at start {load}"
    )


def platform_line() -> str:
    """Markdown item: the operating system and the Python version."""
    return f"- {platform.platform()}; Python {platform.python_version()}"


def versions(distributions: Iterable[str]) -> str:
    """``"numpy 2.1.0, pybvh not installed, …"``."""
    out = []
    for dist in distributions:
        try:
            out.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{dist} not installed")
    return ", ".join(out)


def _fingerprint(changed: list[str]) -> str:
    """sha1 (10 hex digits) of the names and contents of ``git status --porcelain`` entries."""
    digest = hashlib.sha1()
    for entry in sorted(changed):
        name = entry[3:].split(" -> ")[-1].strip('"')
        digest.update(name.encode())
        with contextlib.suppress(OSError):
            digest.update((PROJECT_ROOT / name).read_bytes())
    return digest.hexdigest()[:10]


def commit(digest: bool = False) -> str:
    """HEAD's short hash and how many files under src/ differ from it ("unknown" without
    git); ``digest``: also a fingerprint of their contents, to tell runs of a working tree
    apart."""
    text = "unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = ["git", "-C", str(PROJECT_ROOT)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "src"], capture_output=True, text=True
        )
        if head.returncode == 0:
            changed = dirty.stdout.splitlines()
            text = head.stdout.strip()
            if changed:
                text += f" with {len(changed)} uncommitted change(s) under src/"
                if digest:
                    text += f" (their contents' sha1 {_fingerprint(changed)})"
    return text


# -- the report -------------------------------------------------------------------------------


def protocol_line(script: str, repeats: int) -> str:
    """The time now, the command, and the protocol it ran."""
    return (
        f"{dt.datetime.now().isoformat(timespec='seconds')}; `benchmarks/{script} "
        f"--repeats {repeats}`: one warm-up, then {repeats} round-robin repeats per contender."
    )


def header(title: str, script: str, repeats: int) -> list[str]:
    """A report's first lines: its title, the protocol, the machine and the commit."""
    return [
        f"# {title}",
        "",
        protocol_line(script, repeats),
        f"- {cpu_line()}",
        f"- {platform_line()}",
        f"- commit {commit()}",
        "",
    ]


def row(cells: Iterable[str]) -> str:
    """A Markdown table row."""
    return "| " + " | ".join(cells) + " |"


def timing_cells(
    samples: Sequence[float], num_frames: int, scale: float = 1.0, digits: int = 3
) -> list[str]:
    """Table cells: median, p10 and p90 of the times (seconds times ``scale``, ``digits``
    decimals), and frames/s at the median."""
    p10, p50, p90 = percentiles(samples)
    return [*(f"{scale * t:.{digits}f}" for t in (p50, p10, p90)), f"{num_frames / p50:,.0f}"]


def fmt(x: float | None) -> str:
    """A measure in three significant digits (small ones in scientific notation); None: —."""
    if x is None:
        return "—"
    return f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"


def could_not_run(contenders: Iterable[C], label: Callable[[C], str]) -> list[str]:
    """Markdown section: each contender that failed, by ``label``, and why; nothing when
    none failed."""
    failed = [f"- {label(c)}: {c.failure}" for c in contenders if not c.ok]
    return ["", "## Could not run", "", *failed] if failed else []


def results_path(name: str) -> Path:
    """``benchmarks/results/YYYY-MM-DD-<name>`` for today (the folder made if needed)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    return RESULTS_DIR / f"{dt.date.today().isoformat()}-{name}"


def publish(lines: list[str], script: str, save: bool) -> None:
    """Print the report; with ``save``, append it to today's ``<script>.md`` of results.

    Runs of one day are appended, after a rule: quote the medians of several.
    """
    text = "\n".join(lines) + "\n"
    print(text)
    if save:
        out = results_path(f"{script}.md")
        earlier = out.exists() and out.stat().st_size > 0
        with out.open("a", encoding="utf-8") as fh:
            fh.write(("\n---\n\n" if earlier else "") + text)
        print(f"appended to {out.relative_to(PROJECT_ROOT)}", file=sys.stderr)
