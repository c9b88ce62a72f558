"""The command line: commands, one-line errors with exit code 2, outputs never over inputs."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import missing

from retarget.cli import main
from retarget.core.errors import RetargetWarning
from retarget.core.kinematics import positions
from retarget.core.strict_json import GENERIC_NOTE
from retarget.io import read_bvh, write_bvh
from retarget.io.formats import read_motion
from retarget.methods.puppetry import sensor_stream


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
        (["plot", "{walk}", "{bank}", "-o", "f.png"], "has 455 frames, the source 7184"),
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
    """``retarget demo`` onto every kind of target: the presets, a robot (``--robot``: the
    G1 of ../shared; ``make demo`` fetches its own from the package index), a glTF
    character (a mannequin made of a preset): their files, the report, the page."""
    monkeypatch.setenv("RETARGET_DATA", str(data_dir))
    out = tmp_path / "demo"
    g1 = data_dir.parent / "robots" / "unitree_g1" / "g1_29dof.xml"
    args = ["demo", "--out", out, "--frames", "0:450", "--robot", g1, "--quiet"]
    code, text, err = run(capsys, *args)
    assert code == 0, err
    for name in (
        "blubby.bvh",
        "sally.bvh",
        "walk_blubby_copy.bvh",
        "walk_sally_copy.bvh",
        "walk_blubby_hierarchical.bvh",
        "walk_sally_hierarchical.bvh",
        "walk_g1_29dof.npz",
        "mannequin.glb",
        "walk_mannequin.glb",
        "feet.png",
        "report.json",
        "view.html",
    ):
        assert (out / name).is_file(), name
    assert f"open {(out / 'view.html').resolve()}" in text
    page = (out / "view.html").read_text()
    assert page.count('"name":') == 7  # the source, 4 results, the robot, the character
    report = strict_loads((out / "report.json").read_text())
    assert GENERIC_NOTE not in (out / "report.json").read_text()
    assert set(report["characters"]) == {"blubby", "sally"}
    assert set(report["characters"]["sally"]) == {"copy", "hierarchical"}
    assert report["robot"]["measures"]["limit_violations"] == 0
    assert report["character"]["measures"]["skate_result"] > 0
    with np.load(out / "walk_g1_29dof.npz") as z:
        assert z["dof_pos"].shape == (450, 29)
    assert read_motion(out / "walk_mannequin.glb", animation="lafan_walk").num_frames == 450
    assert "skate %H/s" in text and "blubby" in text and "foot skate" in text
    assert (out / "feet.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- warnings: input read in part ------------------------------------------------------------


def test_a_file_with_a_frame_more_than_declared_warns_on_one_line(capsys, data_dir, tmp_path):
    """assimp's Boxing_Toes.bvh (3070 data lines under 'Frames: 3069'): every command reads
    the 3069 frames, prints one warning line naming the file and the line, and exits 0."""
    path = data_dir / "real" / "assimp_boxing_toes.bvh"
    if not path.is_file():
        missing(f"{path} not found")
    expected = (
        f"retarget: warning: {path}:3199: more motion data than 'Frames: 3069': 1 more frame "
        "from this line on, ignored (the 3069 declared are read)"
    )
    code, out, err = run(capsys, "info", path, "--json")
    assert code == 0 and json.loads(out)["frames"] == 3069
    assert err.splitlines() == [expected]
    copy = tmp_path / "boxing.bvh"
    code, out, err = run(capsys, "convert", path, copy)
    assert code == 0 and err.splitlines() == [expected]
    again = read_bvh(copy)  # no warning: the written file is whole
    assert again.num_frames == 3069
    with pytest.warns(RetargetWarning):
        original = read_bvh(path)
    np.testing.assert_allclose(positions(again), positions(original), atol=1e-6)


def test_console_script_prints_the_warning_without_python_s_decoration(tmp_path):
    bad = tmp_path / "extra.bvh"
    bad.write_text(
        "HIERARCHY\nROOT a\n{\n  OFFSET 0 0 0\n  CHANNELS 3 Xposition Yposition Zposition\n"
        "  End Site\n  {\n    OFFSET 0 1 0\n  }\n}\n"
        "MOTION\nFrames: 1\nFrame Time: 0.1\n1 2 3\n4 5 6\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "retarget.cli", "info", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"retarget: warning: {bad}:15: more motion data than 'Frames: 1': 1 more frame "
        "from this line on, ignored (the 1 declared are read)"
    ]


# -- strict JSON: every JSON the command line writes, on a still and a one-frame clip ---------


def strict_loads(text: str):
    """``json.loads`` that refuses NaN, Infinity and -Infinity (as JSON.parse and jq do)."""

    def refuse(word: str):
        raise ValueError(f"not strict JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def _checked(text: str):
    """Parsed strictly; no value was left for the serialiser's generic note."""
    assert GENERIC_NOTE not in text, text
    return strict_loads(text)


@pytest.fixture(scope="module")
def short_clips(lafan, tmp_path_factory):
    """Frame 100 of lafan_walk.bvh held for 30 frames (a still clip), and alone."""
    folder = tmp_path_factory.mktemp("short")
    write_bvh(folder / "still.bvh", lafan[np.full(30, 100)])
    write_bvh(folder / "one.bvh", lafan[100:101])
    return folder


@pytest.mark.parametrize("clip", ["still", "one"])
def test_every_json_written_is_strict_on_still_and_one_frame_clips(
    capsys, short_clips, tmp_path, clip, monkeypatch
):
    src = short_clips / f"{clip}.bvh"
    code, out, err = run(capsys, "info", src, "--json")
    assert code == 0, err
    assert _checked(out)["frames"] == (30 if clip == "still" else 1)

    for method in ("copy", "hierarchical", "omr", "puppetry"):
        out_bvh, report = tmp_path / f"{method}.bvh", tmp_path / f"{method}.json"
        code, out, err = run(
            capsys, "run", src, "--target-preset", "blubby", "--method", method, "-o", out_bvh,
            "--report", report,
        )  # fmt: skip
        assert code == 0, err
        rep = _checked(report.read_text())
        m = rep["measures"]
        assert m["skate_ratio"] is None and "no ratio" in m["skate_ratio_note"]
        if clip == "still":
            assert m["smoothness"] is None and "no jerk" in m["smoothness_note"]
        assert (rep["frames_per_second"] is None) == ("frames_per_second_note" in rep)

    code, out, err = run(capsys, "eval", src, tmp_path / "hierarchical.bvh", "--json")
    assert code == 0, err
    measures = _checked(out)
    assert measures["skate_ratio"] is None
    code, out, err = run(capsys, "eval", src, tmp_path / "hierarchical.bvh")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("skate_ratio"))
    assert line.split()[1] == "-" and line.endswith(measures["skate_ratio_note"])

    report = tmp_path / "physics.json"
    code, out, err = run(
        capsys, "physics", src, "--target-preset", "blubby", "--passes", "1K",
        "-o", tmp_path / "physics.bvh", "--report", report,
    )  # fmt: skip
    assert code == 0, err
    assert _checked(report.read_text())["method"] == "physics"

    constraints = tmp_path / "c.json"
    constraints.write_text('[{"joint": "LeftHand", "frame": 0, "offset": [0, 5, 0]}]')
    report = tmp_path / "edit.json"
    code, out, err = run(
        capsys, "edit", src, "--constraints", constraints, "-o", tmp_path / "edit.bvh",
        "--report", report,
    )  # fmt: skip
    assert code == 0, err
    _checked(report.read_text())

    motion = read_bvh(src)
    measured = tmp_path / "points.npz"
    np.savez(measured, LeftHand=positions(motion)[:, motion.skeleton.index("LeftHand")] + 1.0)
    report = tmp_path / "enhance.json"
    code, out, err = run(
        capsys, "enhance", src, "--positions", measured, "-o", tmp_path / "enhance.bvh",
        "--report", report,
    )  # fmt: skip
    assert code == 0, err
    _checked(report.read_text())

    report = tmp_path / "transition.json"
    code, out, err = run(
        capsys, "transition", src, src, "--blend", "1", "-o", tmp_path / "transition.bvh",
        "--report", report,
    )  # fmt: skip
    assert code == 0, err
    _checked(report.read_text())

    noise = tmp_path / "noise.json"
    code, out, err = run(capsys, "noise", src, "-o", noise)
    if clip == "still":
        assert code == 0, err
        assert _checked(noise.read_text())["format"] == "retarget-noise"
    else:  # one frame holds no still stretch: one line, no traceback
        assert code == 2 and err.startswith(f"retarget: error: {src}: ") and err.count("\n") == 1

    page = tmp_path / "view.html"
    code, out, err = run(
        capsys, "view", src, tmp_path / "hierarchical.bvh", "--report",
        tmp_path / "hierarchical.json", "-o", page,
    )  # fmt: skip
    assert code == 0, err
    payload = re.search(
        r"<script id='data' type='application/json'>(.*?)</script>", page.read_text(), re.S
    )
    assert payload is not None
    assert len(_checked(payload.group(1).replace("<\\/", "</"))["motions"]) == 2

    pos, ori = sensor_stream(motion)
    frames = [
        json.dumps({"frame": k, "positions": p.tolist(), "orientations": q.tolist()})
        for k, (p, q) in enumerate(zip(pos, ori, strict=True))
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(frames) + "\n"))
    code, out, err = run(
        capsys, "puppet", "--stdin", "--performer", src, "--target-preset", "blubby"
    )
    assert code == 0, err
    assert [_checked(x)["frame"] for x in out.splitlines()] == list(range(len(frames)))


def test_run_and_eval_of_one_frame_of_a_real_file(capsys, data_dir, tmp_path):
    """``--frames 100:101`` of the real walk: the report and eval's JSON are strict."""
    report = tmp_path / "r.json"
    code, out, err = run(
        capsys, "run", data_dir / "lafan_walk.bvh", "--frames", "100:101", "--target-preset",
        "sally", "-o", tmp_path / "one.bvh", "--report", report,
    )  # fmt: skip
    assert code == 0, err
    assert _checked(report.read_text())["frames"] == 1
    code, out, err = run(
        capsys, "eval", data_dir / "lafan_walk.bvh", tmp_path / "one.bvh", "--frames",
        "100:101", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert _checked(out)["skate_ratio_note"].endswith("no ratio")


def test_verb_solve_json_is_strict(capsys, tmp_path):
    verb = tmp_path / "arm3.npz"
    assert run(capsys, "verb", "example", "arm3", "-o", verb)[0] == 0
    code, out, err = run(capsys, "verb", "solve", verb, "--goal", "1", "1", "--json")
    assert code == 0, err
    assert _checked(out)["error_percent"] >= 0.0


def _subparsers(parser):
    import argparse

    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def test_a_parser_built_for_one_command_is_the_full_parser_for_it():
    from retarget.cli import build_parser

    full = build_parser()
    commands = _subparsers(full)
    assert len(commands) >= 20
    for name, whole in commands.items():
        one = build_parser(name)
        assert one.format_help() == full.format_help()  # every command listed, with its help
        built = _subparsers(one)
        assert list(built) == list(commands)
        assert built[name].format_help() == whole.format_help(), name
        assert all(built[n] is None for n in commands if n != name)  # listed, not built
