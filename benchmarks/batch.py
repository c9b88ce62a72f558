"""``retarget batch`` at scale: clips per minute against workers, resume after a kill.

The shared clips (``$RETARGET_DATA``: lafan_walk.bvh, mocapbank.bvh and
vicon.amc) are replicated to ``--clips`` inputs (default 200): time-shifted
slices of ``--frames`` frames (default 300) written as BVH, taken in turn from
the three, plus one corrupt input (a slice cut off in its MOTION section).
Every run retargets them all onto ``blubby`` with ``hierarchical`` (the default
method) through the command line, as a user would:

1. **throughput** -- a fresh output folder per run; Dask ``LocalCluster`` of
   1 and of 2 single-threaded workers (and the local process pool, and Ray
   when installed, with 2), ``--repeats`` times in round-robin order; the
   median clips per minute of wall time (cluster start included) and the
   ratio of 2 workers to 1. Every run must leave a complete manifest: each
   input's last record, ok but for the corrupt one, whose error is recorded.
2. **kill and resume** -- Dask with 2 workers, killed (SIGKILL to its
   process group) once half the clips are in the manifest, then run again:
   the second run must carry out only the clips the first did not finish
   (none of whose output files changes).

The table is printed and saved to ``benchmarks/results/YYYY-MM-DD-batch.md``.
The goal (issue 10): 2 workers at least 1.8x one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as common

from retarget.io import read_motion, write_bvh
from retarget.pipeline.batch import read_manifest

REPEATS = 3
RETARGET = [sys.executable, "-m", "retarget.cli"]


def make_inputs(folder: Path, clips: int, frames: int) -> list[Path]:
    """``clips`` time-shifted slices of the shared clips, and one corrupt file."""
    data = common.clip_path().parent
    sources = [
        read_motion(data / "lafan_walk.bvh"),
        read_motion(data / "mocapbank.bvh"),
        read_motion(data / "vicon.amc"),
    ]
    paths = []
    for k in range(clips - 1):
        m = sources[k % len(sources)]
        n = min(frames, m.num_frames)
        span = m.num_frames - n
        start = (k // len(sources) * 37) % (span + 1)
        path = folder / f"clip_{k:03d}.bvh"
        write_bvh(path, m[start : start + n])
        paths.append(path)
    good = paths[0].read_text(encoding="utf-8").splitlines()
    cut = good.index("MOTION") + 10
    corrupt = folder / "clip_corrupt.bvh"
    corrupt.write_text("\n".join([*good[:cut], "0.0 1.0 oops"]) + "\n", encoding="utf-8")
    return [*paths, corrupt]


def batch(inputs: Path, out: Path, engine: str, workers: int, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [
            *RETARGET,
            "batch",
            str(inputs / "*.bvh"),
            "--target-preset",
            "blubby",
            "--out",
            str(out),
            "--engine",
            engine,
            "--workers",
            str(workers),
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def check_manifest(out: Path, clips: int) -> tuple[int, int]:
    """(ok, failed) of the manifest's last records; raises when incomplete."""
    records = read_manifest(out / "manifest.jsonl")
    if len(records) != clips:
        raise RuntimeError(f"{out}: manifest has {len(records)} clips of {clips}")
    failed = [r for r in records.values() if r["status"] != "ok"]
    if [Path(r["input"]).name for r in failed] != ["clip_corrupt.bvh"]:
        raise RuntimeError(f"unexpected failures: {[r['error'] for r in failed]}")
    return clips - len(failed), len(failed)


def timed_run(
    inputs: Path, scratch: Path, engine: str, workers: int, clips: int
) -> tuple[float, float]:
    """Clips per minute of one batch run into a fresh folder: over the command's wall time,
    and steady (between the first and the last clip finished, from the manifest)."""
    out = scratch / f"out-{engine}-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    proc = batch(inputs, out, engine, workers)
    _, err = proc.communicate()
    seconds = time.perf_counter() - t0
    if proc.returncode != 1:  # 1: the corrupt clip failed, as it must
        raise RuntimeError(f"batch exit {proc.returncode}: {err.strip()[-500:]}")
    check_manifest(out, clips)
    finished = sorted(
        datetime.datetime.fromisoformat(r["finished"]).timestamp()
        for r in read_manifest(out / "manifest.jsonl").values()
    )
    steady = 60.0 * (len(finished) - 1) / (finished[-1] - finished[0])
    return 60.0 * clips / seconds, steady


def kill_and_resume(inputs: Path, scratch: Path, clips: int) -> dict:
    out = scratch / "out-kill"
    shutil.rmtree(out, ignore_errors=True)
    manifest = out / "manifest.jsonl"
    proc = batch(inputs, out, "dask", 2, start_new_session=True)
    while len(read_manifest(manifest)) < clips // 2:
        if proc.poll() is not None:
            raise RuntimeError("the batch ended before it was killed")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = read_manifest(manifest)
    finished = {o: r for o, r in first.items() if r["status"] == "ok"}
    stamps = {o: Path(o).stat().st_mtime_ns for o in finished}
    lines_before = len(manifest.read_text(encoding="utf-8").splitlines())
    proc = batch(inputs, out, "dask", 2)
    _, err = proc.communicate()
    if proc.returncode != 1:
        raise RuntimeError(f"resumed batch exit {proc.returncode}: {err.strip()[-500:]}")
    new = [json.loads(x) for x in manifest.read_text(encoding="utf-8").splitlines()[lines_before:]]
    redone = [r["output"] for r in new if r["output"] in finished]
    changed = [o for o, t in stamps.items() if Path(o).stat().st_mtime_ns != t]
    ok, failed = check_manifest(out, clips)
    return {
        "killed_after": len(first),
        "finished_before_kill": len(finished),
        "second_run": len(new),
        "redone": len(redone),
        "outputs_changed": len(changed),
        "ok": ok,
        "failed": failed,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed runs per engine")
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--clips", type=int, default=200, help="inputs, the corrupt one included")
    parser.add_argument("--frames", type=int, default=300, help="frames per slice")
    parser.add_argument(
        "--engines",
        default="dask:1,dask:2,local:1,local:2,ray:2",
        help="ENGINE:WORKERS, comma-separated (ray skipped when not installed)",
    )
    args = parser.parse_args(argv)
    clips = args.clips
    try:
        import ray  # noqa: F401

        have_ray = True
    except ImportError:
        have_ray = False
    engines = [
        (name, int(workers))
        for name, _, workers in (item.partition(":") for item in args.engines.split(","))
        if have_ray or name != "ray"
    ]
    if ("dask", 1) not in engines:
        parser.error("--engines must include dask:1 (the reference)")
    with tempfile.TemporaryDirectory(prefix="retarget-batch-") as tmp:
        scratch = Path(tmp)
        inputs = scratch / "inputs"
        inputs.mkdir()
        make_inputs(inputs, clips, args.frames)
        rates: dict[tuple[str, int], list[tuple[float, float]]] = {e: [] for e in engines}
        for _ in range(args.repeats):
            for engine, workers in engines:
                wall, steady = timed_run(inputs, scratch, engine, workers, clips)
                rates[(engine, workers)].append((wall, steady))
                print(
                    f"{engine} x{workers}: {wall:.1f} clips/min ({steady:.1f} steady)",
                    file=sys.stderr,
                )
        resume = kill_and_resume(inputs, scratch, clips)
    wall = {e: statistics.median(r[0] for r in runs) for e, runs in rates.items()}
    steady = {e: statistics.median(r[1] for r in runs) for e, runs in rates.items()}
    one, one_steady = wall[("dask", 1)], steady[("dask", 1)]
    lines = [
        f"# retarget batch: {clips} clips of {args.frames} frames onto blubby (hierarchical)",
        "",
        f"{datetime.datetime.now().isoformat(timespec='seconds')}; `benchmarks/batch.py "
        f"--clips {clips} --frames {args.frames} --repeats {args.repeats}`: each engine "
        f"{args.repeats} times, round-robin, a fresh output folder each time; wall time of "
        "the command (cluster start included).",
        common.cpu_line(),
        common.platform_line(),
        common.versions(["retarget", "dask", "distributed", "ray"]),
        "",
        "| engine | workers | clips/min, wall (median) | vs dask x1 | clips/min, steady "
        "(median) | vs dask x1 | runs (wall / steady) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (engine, workers), runs in rates.items():
        e = (engine, workers)
        text = ", ".join(f"{a:.1f} / {b:.1f}" for a, b in runs)
        lines.append(
            f"| {engine} | {workers} | {wall[e]:.1f} | {wall[e] / one:.2f}x | {steady[e]:.1f} | "
            f"{steady[e] / one_steady:.2f}x | {text} |"
        )
    lines += [
        "",
        "Kill and resume (dask, 2 workers, SIGKILL at half the manifest): "
        + ", ".join(f"{k} {v}" for k, v in resume.items()),
        "",
        f"Goal: dask x2 at least 1.8x dask x1; measured {wall[('dask', 2)] / one:.2f}x over "
        f"the wall time, {steady[('dask', 2)] / one_steady:.2f}x steady. "
        "Resume redoes no finished clip: "
        f"{'met' if resume['redone'] == 0 and resume['outputs_changed'] == 0 else 'NOT met'}.",
    ]
    common.publish(lines, "batch", not args.no_save)


if __name__ == "__main__":
    main()
