"""The command line: commands, one-line errors with exit code 2, outputs never over inputs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from retarget.cli import main
from retarget.io import read_bvh
from retarget.io.formats import read_motion
from retarget.kinematics import positions


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_info_text_and_json(capsys, data_dir):
    code, out, _ = run(capsys, "info", data_dir / "lafan_walk.bvh")
    assert code == 0 and "7184" in out and "ZYX: 22" in out
    code, out, _ = run(capsys, "info", data_dir / "mocapbank.bvh", "--json")
    info = json.loads(out)
    assert info["joints"] == 19 and info["frames"] == 455 and info["fps"] == 30.0
    assert info["channel_orders"] == {"ZXY": 19} and info["height"] == pytest.approx(
        153.17, abs=0.01
    )


def test_run_then_eval(capsys, data_dir, tmp_path):
    out_bvh, report = tmp_path / "b.bvh", tmp_path / "r.json"
    code, out, err = run(
        capsys,
        "run",
        data_dir / "lafan_walk.bvh",
        "--target-preset",
        "blubby",
        "--method",
        "copy",
        "-o",
        out_bvh,
        "--report",
        report,
        "--frames",
        "0:900",
    )
    assert code == 0, err
    rep = json.loads(report.read_text())
    assert rep["method"] == "copy" and rep["frames"] == 900
    assert rep["measures"]["skate_result"] > 3 * rep["measures"]["skate_source"]
    code, out, err = run(
        capsys, "eval", data_dir / "lafan_walk.bvh", out_bvh, "--frames", "0:900", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["skate_result"] == pytest.approx(rep["measures"]["skate_result"])
    code, _, err = run(capsys, "eval", data_dir / "lafan_walk.bvh", out_bvh)
    assert code == 2 and "--frames" in err


def test_run_onto_a_target_file_and_character(capsys, data_dir, tmp_path):
    sally = tmp_path / "sally.bvh"
    code, out, err = run(
        capsys, "character", data_dir / "mocapbank.bvh", "--preset", "sally", "-o", sally
    )
    assert code == 0, err
    char = read_bvh(sally)
    assert char.num_frames == 1 and "height" in out
    code, _, err = run(
        capsys, "run", data_dir / "mocapbank.bvh", "--target", sally, "-o", tmp_path / "s.npz"
    )
    assert code == 0, err
    result = read_motion(tmp_path / "s.npz")
    np.testing.assert_allclose(result.skeleton.offsets[1:], char.skeleton.offsets[1:], atol=1e-9)
    code, _, err = run(
        capsys,
        "character",
        data_dir / "mocapbank.bvh",
        "--scale",
        "thigh=0.5",
        "shin",
        "-o",
        tmp_path / "x.bvh",
    )
    assert code == 2 and "SEGMENT=FACTOR" in err


def test_convert_round_trip(capsys, data_dir, tmp_path):
    code, _, _ = run(capsys, "convert", data_dir / "mocapbank.bvh", tmp_path / "m.npz")
    assert code == 0
    code, _, _ = run(capsys, "convert", tmp_path / "m.npz", tmp_path / "m.bvh")
    assert code == 0
    a = positions(read_bvh(data_dir / "mocapbank.bvh"))
    b = positions(read_bvh(tmp_path / "m.bvh"))
    np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize(
    "args, phrase",
    [
        (["info", "missing.bvh"], "cannot read the file"),
        (["info", "{bad}"], "expected 'HIERARCHY'"),
        (["run", "{walk}", "-o", "x.bvh"], "--target"),
        (
            ["run", "{walk}", "--target-preset", "blubby", "-o", "{walk}"],
            "refusing to write over the input",
        ),
        (
            ["run", "{walk}", "--target-preset", "blubby", "-o", "x.bvh", "--frames", "9:3"],
            "selects no frame",
        ),
        (["run", "{walk}", "--target-preset", "blubby", "-o", "x.txt"], "cannot write '.txt'"),
        (["convert", "{walk}", "out.fbx"], "writable: .bvh, .amc, .npz"),
        (["run", "{walk}", "--method", "nope", "-o", "x.bvh"], "invalid choice"),
    ],
)
def test_errors_are_one_line_with_exit_code_2(
    capsys, data_dir, tmp_path, monkeypatch, args, phrase
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.bvh").write_text(
        "HIERACHY\nROOT a\n{\n}\nMOTION\nFrames: 0\nFrame Time: 0.1\n"
    )
    subst = {
        "{walk}": str(data_dir / "lafan_walk.bvh"),
        "{bank}": str(data_dir / "mocapbank.bvh"),
        "{bad}": str(tmp_path / "bad.bvh"),
    }
    args = [subst.get(a, a) for a in args]
    with pytest.raises(SystemExit) if "invalid choice" in phrase else _nothing():
        code = main(args)
        assert code == 2
    err = capsys.readouterr().err
    assert phrase in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_console_script_malformed_file_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.bvh"
    bad.write_text(
        "HIERARCHY\nROOT a\n{\n  OFFSET 0 0 0\n  CHANNELS 3 Xrotation Yrotation Zrotation\n}\n"
        "MOTION\nFrames: 2\nFrame Time: 0.1\n1 2 3\n4 nan 6\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "retarget.cli", "info", str(bad)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"retarget: error: {bad}:11: expected a finite number in the motion data, found 'nan'"
    )


def test_demo_on_a_short_stretch(capsys, data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("RETARGET_DATA", str(data_dir))
    out = tmp_path / "demo"
    code, text, err = run(capsys, "demo", "--out", out, "--frames", "0:450", "--quiet")
    assert code == 0, err
    for name in (
        "blubby.bvh",
        "sally.bvh",
        "walk_blubby_copy.bvh",
        "walk_sally_copy.bvh",
        "walk_blubby_hierarchical.bvh",
        "walk_sally_hierarchical.bvh",
        "feet.png",
        "report.json",
        "view.html",
    ):
        assert (out / name).is_file(), name
    assert f"open {(out / 'view.html').resolve()}" in text
    page = (out / "view.html").read_text()
    assert page.count('"name":') == 5  # the source and 4 results
    report = json.loads((out / "report.json").read_text())
    assert set(report["characters"]) == {"blubby", "sally"}
    assert set(report["characters"]["sally"]) == {"copy", "hierarchical"}
    assert "skate %H/s" in text and "blubby" in text
    assert (out / "feet.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
