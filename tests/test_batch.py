"""retarget batch: one task per clip on every engine, the manifest, resume after a kill."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retarget.cli import main
from retarget.core.errors import RetargetError
from retarget.io import read_motion, write_bvh
from retarget.pipeline import RunJob
from retarget.pipeline.batch import file_hash, plan_batch, read_manifest, run_batch


def _clips(folder: Path, data_dir: Path, count: int, frames: int = 90) -> list[Path]:
    """Time-shifted slices of the shared walk (and the mocapbank clip) as BVH files."""
    walk = read_motion(data_dir / "lafan_walk.bvh")
    bank = read_motion(data_dir / "mocapbank.bvh")
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        m = bank if k % 4 == 3 else walk
        start = (k * 53) % (m.num_frames - frames)
        path = folder / f"clip_{k:02d}.bvh"
        write_bvh(path, m[start : start + frames])
        paths.append(path)
    return paths


def _corrupt(path: Path) -> Path:
    lines = path.read_text(encoding="utf-8").splitlines()
    cut = lines.index("MOTION") + 6
    bad = path.with_name("broken.bvh")
    bad.write_text("\n".join([*lines[:cut], "1.0 2.0 nope"]) + "\n", encoding="utf-8")
    return bad


def _template(method: str = "copy") -> RunJob:
    return RunJob(source="", output="", method=method, target_preset="blubby")


def test_engines_write_what_run_writes(tmp_path, data_dir):
    """Every engine writes the file `retarget run` writes, byte for byte, and the manifest
    records hashes, measures and times."""
    sources = _clips(tmp_path / "in", data_dir, 3)
    assert (
        main(
            [
                "run",
                str(sources[1]),
                "--target-preset",
                "blubby",
                "--method",
                "copy",
                "-o",
                str(tmp_path / "alone.bvh"),
            ]
        )
        == 0
    )
    expected = (tmp_path / "alone.bvh").read_bytes()
    engines = ["local", "dask"]
    try:
        import ray  # noqa: F401

        engines.append("ray")
    except ImportError:  # the optional extra; the test extras install it
        pytest.fail("ray is not installed: pip install -e '.[test]'")
    for engine in engines:
        out = tmp_path / f"out-{engine}"
        tasks = plan_batch(sources, out, _template())
        summary = run_batch(tasks, out / "manifest.jsonl", engine=engine, workers=2)
        assert (summary.done, summary.skipped, summary.failed) == (3, 0, 0), engine
        assert (out / "clip_01.bvh").read_bytes() == expected, engine
        records = read_manifest(out / "manifest.jsonl")
        assert len(records) == 3
        for task in tasks:
            r = records[task.job.output]
            assert r["status"] == "ok" and r["error"] is None
            assert r["input_hash"] == file_hash(task.job.source)
            assert r["output_hash"] == file_hash(task.job.output)
            assert r["key"] == task.key and r["frames"] == 90 and r["seconds"] > 0
            assert {"skate_source", "skate_result", "pose_deviation_deg"} <= set(r["measures"])


def test_corrupt_input_recorded_others_succeed(tmp_path, data_dir, capsys):
    sources = _clips(tmp_path / "in", data_dir, 3)
    bad = _corrupt(sources[0])
    out = tmp_path / "out"
    code = main(
        [
            "batch",
            str(tmp_path / "in" / "*.bvh"),
            "--target-preset",
            "blubby",
            "--method",
            "copy",
            "--out",
            str(out),
            "--workers",
            "2",
            "--engine",
            "dask",
        ]
    )
    assert code == 1
    records = read_manifest(out / "manifest.jsonl")
    assert len(records) == 4
    failed = [r for r in records.values() if r["status"] == "error"]
    assert [Path(r["input"]).name for r in failed] == [bad.name]
    assert re.search(r"broken\.bvh:\d+: expected", failed[0]["error"])
    assert "\n" not in failed[0]["error"] and failed[0]["output_hash"] is None
    assert not Path(failed[0]["output"]).exists()
    assert sum(r["status"] == "ok" for r in records.values()) == 3
    assert "1 failed" in capsys.readouterr().out


def test_manifest_is_strict_json_and_records_warnings(tmp_path, data_dir, capsys, monkeypatch):
    """A still clip's measures without a ratio are null with their notes (no bare NaN or
    Infinity in the JSON lines), and a clip read in part records its warning, which the
    command prints once on one line (clips run in this process: the engine is replaced)."""
    import numpy as np

    from retarget.pipeline import batch

    walk = read_motion(data_dir / "lafan_walk.bvh")
    folder = tmp_path / "in"
    folder.mkdir()
    write_bvh(folder / "still.bvh", walk[np.full(30, 100)])
    write_bvh(folder / "extra.bvh", walk[:40])
    text = (folder / "extra.bvh").read_text().replace("Frames: 40", "Frames: 39")
    (folder / "extra.bvh").write_text(text)
    last_line = text.count("\n")
    monkeypatch.setitem(
        batch._ENGINES, "local", lambda tasks, workers, scheduler: map(batch.run_clip, tasks)
    )
    out = tmp_path / "out"
    code = main(
        [
            "batch", str(folder / "*.bvh"), "--target-preset", "blubby", "--method", "copy",
            "--out", str(out), "--no-progress",
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    lines = (out / "manifest.jsonl").read_text().splitlines()

    def refuse(word):
        raise ValueError(word)

    records = {
        Path(r["input"]).name: r for r in (json.loads(x, parse_constant=refuse) for x in lines)
    }
    still = records["still.bvh"]["measures"]
    assert still["skate_ratio"] is None and still["skate_ratio_note"].endswith("no ratio")
    assert still["smoothness"] is None and "no jerk" in still["smoothness_note"]
    assert "not a finite number" not in "".join(lines)
    message = (
        f"{folder / 'extra.bvh'}:{last_line}: more motion data than 'Frames: 39': 1 more frame "
        "from this line on, ignored (the 39 declared are read)"
    )
    assert records["extra.bvh"]["warnings"] == [message]
    assert records["extra.bvh"]["frames"] == 39 and records["still.bvh"]["warnings"] == []
    assert err.splitlines() == [f"retarget: warning: {message}"]


def test_rerun_redoes_only_what_changed(tmp_path, data_dir):
    sources = _clips(tmp_path / "in", data_dir, 3)
    out, manifest = tmp_path / "out", tmp_path / "out" / "manifest.jsonl"
    first = run_batch(plan_batch(sources, out, _template()), manifest)
    assert first.done == 3
    again = run_batch(plan_batch(sources, out, _template()), manifest)
    assert (again.done, again.skipped) == (0, 3)
    # an input changed: only its clip again
    write_bvh(sources[2], read_motion(sources[0]))
    changed = run_batch(plan_batch(sources, out, _template()), manifest)
    assert (changed.done, changed.skipped) == (1, 2)
    # an output edited or removed by hand: redone
    (out / "clip_00.bvh").write_text("edited", encoding="utf-8")
    (out / "clip_01.bvh").unlink()
    assert run_batch(plan_batch(sources, out, _template()), manifest).done == 2
    # another method: a different key for every clip
    assert run_batch(plan_batch(sources, out, _template("hierarchical")), manifest).done == 3


def test_manifest_tolerates_a_torn_last_line(tmp_path, data_dir):
    sources = _clips(tmp_path / "in", data_dir, 2)
    out, manifest = tmp_path / "out", tmp_path / "out" / "manifest.jsonl"
    run_batch(plan_batch(sources, out, _template()), manifest)
    with open(manifest, "a", encoding="utf-8") as fh:
        fh.write('{"input": "x", "output": "')
    assert len(read_manifest(manifest)) == 2
    assert run_batch(plan_batch(sources, out, _template()), manifest).skipped == 2


def test_kill_halfway_and_restart_redoes_no_finished_clip(tmp_path, data_dir):
    """SIGKILL to the whole batch (driver and workers) once some clips are in the manifest;
    the re-run carries out exactly the others, and no finished output is touched."""
    _clips(tmp_path / "in", data_dir, 10, frames=240)
    out, manifest = tmp_path / "out", tmp_path / "out" / "manifest.jsonl"
    command = [
        sys.executable,
        "-m",
        "retarget.cli",
        "batch",
        str(tmp_path / "in" / "*.bvh"),
        "--target-preset",
        "blubby",
        "--method",
        "hierarchical",
        "--out",
        str(out),
        "--workers",
        "2",
        "--no-progress",
    ]
    proc = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300
    while len(read_manifest(manifest)) < 3:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = read_manifest(manifest)
    assert 3 <= len(first) < 10, "killed too late to test a resume"
    stamps = {o: Path(o).stat().st_mtime_ns for o in first}
    lines = len(manifest.read_text(encoding="utf-8").splitlines())
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    new = [json.loads(x) for x in manifest.read_text(encoding="utf-8").splitlines()[lines:]]
    assert {r["output"] for r in new}.isdisjoint(first)
    assert len(new) == 10 - len(first)
    assert all(Path(o).stat().st_mtime_ns == t for o, t in stamps.items())
    final = read_manifest(manifest)
    assert len(final) == 10 and all(r["status"] == "ok" for r in final.values())
    assert f"{10 - len(first)} done, {len(first)} unchanged" in rerun.stdout


def test_plan_refuses_bad_batches(tmp_path, data_dir):
    sources = _clips(tmp_path / "in", data_dir, 1)
    with pytest.raises(RetargetError, match="over the input"):
        plan_batch(sources, tmp_path / "in", _template())
    with pytest.raises(RetargetError, match="no input"):
        plan_batch([], tmp_path / "out", _template())
    with pytest.raises(RetargetError, match="unknown engine"):
        run_batch(plan_batch(sources, tmp_path / "o", _template()), tmp_path / "m", engine="x")
    assert (
        main(
            [
                "batch",
                str(tmp_path / "none" / "*.bvh"),
                "--target-preset",
                "blubby",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    assert main(["batch", str(sources[0]), "--out", str(tmp_path / "o")]) == 2
