"""Every real file through every command (issue 24, deliverable 1).

Each BVH and AMC file of ``RETARGET_DATA`` and ``RETARGET_DATA/real`` (listed
when the tests are collected, so a file added there is covered) goes through
the console entry point as a user runs it: ``info`` (and ``info --json``),
``convert`` to .bvh and back (an AMC also to .amc with ``--skeleton``),
``run`` with every method onto ``blubby`` with a ``--report``, ``physics
--target-preset``, ``eval`` of the source against the run's output, and
``view``. A humanoid goes through everything with exit code 0; a file without
the humanoid roles (:data:`NOT_HUMANOID`) still goes through ``info``,
``convert`` and ``view``, while ``run``, ``physics``, ``eval`` and ``map`` exit
with code 2 and one line that names the file and says what it lacks.

Nothing but ``retarget: warning: ...`` lines may reach stderr on success (no
traceback, no Python warning), and every JSON printed or written is read with a
strict parser (no NaN or Infinity, as JavaScript's ``JSON.parse``).
"""

from __future__ import annotations

import base64
import functools
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import NOT_HUMANOID, _data_dir, motion_files

from retarget.cli import main
from retarget.core.errors import RetargetWarning
from retarget.core.kinematics import positions
from retarget.core.strict_json import GENERIC_NOTE
from retarget.humanoid.metrics import MEASURES
from retarget.io.formats import read_motion

METHODS = ("copy", "hierarchical", "omr", "puppetry")
#: Source frames retargeted (``--frames``): enough for contacts and measures, fast.
FRAMES = (0, 120)
#: Round trip through a written file, largest joint position difference as a share of
#: the motion's size. BVH is written with 10 significant digits: a value's rounding is
#: at most 5e-10 of it, an angle's (|a| <= 360 degrees) at most 3.2e-9 rad, and each
#: of a point's <= 3 channels x ~30 ancestors moves it by at most that angle times its
#: distance (<= the size): <= 3e-7 of the size, the 1e-6 leaves room for the root's
#: translation. AMC keeps 6 significant digits (as CMU writes it): 3.2e-5 rad per angle,
#: but the files already hold 6 digits and are written back the same, so 1e-5.
ROUND_TRIP = {".bvh": 1e-6, ".npz": 1e-6, ".amc": 1e-5}
#: Python warnings a user does not see by default (not shown outside ``__main__``).
HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


FILES = motion_files(_data_dir())
HUMANOIDS = [f for f in FILES if Path(f).name not in NOT_HUMANOID]
OTHERS = [f for f in FILES if Path(f).name in NOT_HUMANOID]


def strict_loads(text: str):
    """``json.loads`` that refuses NaN, Infinity and -Infinity, as JavaScript's JSON.parse."""

    def refuse(word: str):
        raise ValueError(f"not strict JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def strict_report(path: Path) -> dict:
    """A JSON file written by the command: strict, an object, and no value left without
    its producer's reason (the generic note of :mod:`retarget.core.strict_json`)."""
    text = path.read_text(encoding="utf-8")
    assert GENERIC_NOTE not in text, f"{path.name}: a value written null without a reason"
    data = strict_loads(text)
    assert isinstance(data, dict)
    return data


def cli(capsys, *args) -> tuple[int, str, str]:
    """``retarget ARGS`` in this process: (exit code, stdout, stderr).

    Any Python warning a user would see fails the test (the command line prints only
    ``retarget: warning:`` lines); so does a traceback, or anything else on stderr
    when the command succeeds.
    """
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        code = main([str(a) for a in args])
    captured = capsys.readouterr()
    command = " ".join(str(a) for a in args)
    shown = [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
        for w in seen
        if not issubclass(w.category, (RetargetWarning, *HIDDEN))
    ]
    assert not shown, f"retarget {command}: Python warnings shown to the user: {shown}"
    assert "Traceback" not in captured.err, f"retarget {command}:\n{captured.err}"
    if code == 0:
        other = [
            line for line in captured.err.splitlines() if not line.startswith("retarget: warning: ")
        ]
        assert not other, f"retarget {command}: stderr besides warnings: {other}"
    return code, captured.out, captured.err


def ok(capsys, *args) -> str:
    """``retarget ARGS`` that must succeed: its stdout."""
    code, out, err = cli(capsys, *args)
    assert code == 0, f"retarget {' '.join(map(str, args))} -> {code}: {err}"
    return out


def _asf_of(path: Path) -> Path:
    same = path.with_suffix(".asf")
    return same if same.is_file() else next(path.parent.glob("*.asf"))


@functools.lru_cache(maxsize=8)
def _read(path: Path, skeleton: Path | None = None):
    """A motion file as the library reads it (motions are immutable: shared by the tests
    of one worker)."""
    with warnings.catch_warnings():  # (a file with more data than it declares: tested below)
        warnings.simplefilter("ignore", RetargetWarning)
        return read_motion(path, skeleton=skeleton)


def _size(p: np.ndarray) -> float:
    """The motion's size: the largest extent of its points over the clip."""
    return float(np.ptp(p.reshape(-1, 3), axis=0).max())


def _same_motion(a, b, tol: float, what: str) -> None:
    assert b.skeleton.names == a.skeleton.names, what
    assert b.num_frames == a.num_frames and b.fps == pytest.approx(a.fps), what
    assert (b.skeleton.unit, b.skeleton.up) == (a.skeleton.unit, a.skeleton.up), what
    pa, pb = positions(a), positions(b)
    worst = float(np.abs(pa - pb).max()) / _size(pa)
    assert worst <= tol, f"{what}: positions differ by {worst:.3g} of the motion's size"


def _source(data_dir: Path, name: str) -> Path:
    path = data_dir / name
    assert path.is_file(), f"{path} is gone"
    return path


def _skeleton_option(path: Path) -> list[str]:
    """``--skeleton`` with an AMC's ASF (other commands of the tests find it beside it)."""
    return ["--skeleton", str(_asf_of(path))] if path.suffix == ".amc" else []


# -- every file -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FILES)
def test_info_convert_view(data_dir, name, tmp_path, capsys):
    """``info`` (text and strict JSON), ``convert`` to .bvh and on to .npz and back (an
    AMC also to .amc with ``--skeleton``) giving the same positions, and ``view``, whose
    page carries the file's joint positions: exit 0 for every file, humanoid or not."""
    path = _source(data_dir, name)
    motion = _read(path)
    humanoid = path.name not in NOT_HUMANOID

    out = ok(capsys, "info", path)
    assert re.search(rf"^frames\s+{motion.num_frames}$", out, re.M), out
    assert re.search(rf"^unit\s+{re.escape(motion.skeleton.unit)}$", out, re.M), out
    info = strict_loads(ok(capsys, "info", path, "--json"))
    assert info["joints"] == motion.skeleton.num_joints
    assert info["frames"] == motion.num_frames and info["fps"] == pytest.approx(motion.fps)
    assert (info["unit"], info["up"]) == (motion.skeleton.unit, motion.skeleton.up)
    assert info["unit_reason"] and info["up_reason"]
    if humanoid:
        assert info["height"] > 0, info
    else:
        assert info["height"] is None and "humanoid" in info["height_note"], info

    bvh = tmp_path / "out.bvh"
    assert f"wrote {bvh}" in ok(capsys, "convert", path, bvh)
    _same_motion(motion, _read(bvh), ROUND_TRIP[".bvh"], f"{name} -> .bvh")
    ok(capsys, "convert", bvh, tmp_path / "out.npz")
    ok(capsys, "convert", tmp_path / "out.npz", tmp_path / "back.bvh")
    _same_motion(motion, _read(tmp_path / "out.npz"), ROUND_TRIP[".npz"], f"{name} -> .npz")
    _same_motion(motion, _read(tmp_path / "back.bvh"), ROUND_TRIP[".bvh"], f"{name} -> back")
    if path.suffix == ".amc":
        asf = _asf_of(path)
        ok(capsys, "convert", path, tmp_path / "out.amc", "--skeleton", asf)
        again = _read(tmp_path / "out.amc", skeleton=asf)
        _same_motion(motion, again, ROUND_TRIP[".amc"], f"{name} -> .amc")

    page = tmp_path / "view.html"
    ok(capsys, "view", path, "-o", page)
    found = re.search(
        r"<script id='data' type='application/json'>(.*?)</script>", page.read_text(), re.S
    )
    assert found, "the page carries no data"
    data = strict_loads(found.group(1).replace("<\\/", "</"))
    (shown,) = data["motions"]
    sk = motion.skeleton
    assert (shown["frames"], shown["points"]) == (motion.num_frames, sk.num_points)
    assert shown["names"] == list(sk.point_names) and shown["unit"] == sk.unit
    drawn = np.frombuffer(base64.b64decode(shown["positions"]), dtype="<f4")
    p = positions(motion)
    # float32 on the page: 6e-8 of each coordinate
    np.testing.assert_allclose(drawn.reshape(p.shape), p, rtol=0, atol=1e-6 * np.abs(p).max())


# -- humanoids: every retargeting command ---------------------------------------------------------


def _frames(motion) -> int:
    return len(range(motion.num_frames)[slice(*FRAMES)])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", HUMANOIDS)
def test_run_then_eval(data_dir, name, method, tmp_path, capsys):
    """``run`` onto blubby with each method (``--frames``, ``--report``), then ``eval``
    of the source against the written result: exit 0, strict JSON, and ``eval`` of the
    file measures what the run's report measured."""
    path = _source(data_dir, name)
    motion = _read(path)
    out, report = tmp_path / "out.bvh", tmp_path / "report.json"
    frames = f"{FRAMES[0]}:{FRAMES[1]}"
    printed = ok(
        capsys,
        "run", path, "--target-preset", "blubby", "--method", method,
        "--frames", frames, "-o", out, "--report", report, *_skeleton_option(path),
    )  # fmt: skip
    assert printed.startswith(f"{method}: {_frames(motion)} frames"), printed
    rep = strict_report(report)
    assert rep["method"] == method and rep["frames"] == _frames(motion)
    assert rep["world"]["source_unit"] == motion.skeleton.unit
    assert rep["world"]["source_up"] == motion.skeleton.up
    assert "measures" in rep, rep.get("measures_note")
    result = _read(out)
    assert result.num_frames == _frames(motion) and np.isfinite(result.rotations).all()
    assert result.skeleton.up == motion.skeleton.up

    skeleton = _skeleton_option(path)  # (an AMC's ASF; the .bvh result ignores it)
    measured = strict_loads(ok(capsys, "eval", path, out, "--frames", frames, "--json", *skeleton))
    # every measure but the goals' tracking (eval has no goals), as the run's report
    assert {k for k in MEASURES if not k.startswith("tracking")} <= set(measured)
    assert set(measured) <= set(rep["measures"])
    for key in (k for k in MEASURES if k in measured):
        a, b = measured[key], rep["measures"][key]
        assert (a is None) == (b is None), (key, a, b)
        if a is None:
            assert measured[f"{key}_note"], key
        else:
            # the file holds 10 digits of each angle: the measures of its motion agree
            # with those of the run's own to far better than they are ever read
            assert a == pytest.approx(b, rel=1e-3, abs=1e-6), key

    ok(capsys, "view", path, out, "--frames", frames, "--report", report, "-o", tmp_path / "v.html")


@pytest.mark.parametrize("name", HUMANOIDS)
def test_physics_onto_a_preset(data_dir, name, tmp_path, capsys):
    """``physics --target-preset blubby --frames``: exit 0 and a strict report."""
    path = _source(data_dir, name)
    motion = _read(path)
    out, report = tmp_path / "out.bvh", tmp_path / "report.json"
    frames = f"{FRAMES[0]}:{FRAMES[1]}"
    printed = ok(
        capsys,
        "physics", path, "--target-preset", "blubby", "--frames", frames,
        "-o", out, "--report", report,
    )  # fmt: skip
    assert printed.startswith(f"physics: {_frames(motion)} frames"), printed
    rep = strict_report(report)
    assert rep["target"] == "preset:blubby" and rep["stages"]
    result = _read(out)
    assert result.num_frames == _frames(motion) and np.isfinite(result.rotations).all()


# -- not humanoids: info, convert and view work (above), retargeting says why not --------------


def _one_line_error(err: str, path: Path, command: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"retarget {command}: {len(lines)} lines on stderr:\n{err}"
    (line,) = lines
    assert line.startswith("retarget: error: ") and str(path) in line, line
    assert "humanoid" in line and ("missing" in line or "not found" in line), line


@pytest.mark.parametrize("name", OTHERS)
def test_retargeting_a_non_humanoid_is_one_line(data_dir, name, tmp_path, capsys):
    """``run`` (every method, onto a preset or from or onto a humanoid file),
    ``physics``, ``eval`` and ``map`` on a file that is not a humanoid: exit 2 and one
    line naming the file and what it lacks; no output written."""
    path = _source(data_dir, name)
    humanoid = data_dir / "mocapbank.bvh"
    out = tmp_path / "out.bvh"
    ok(capsys, "convert", path, tmp_path / "same.bvh")
    commands = [
        *(["run", path, "--target-preset", "blubby", "--method", m, "-o", out] for m in METHODS),
        ["run", path, "--target", humanoid, "--method", "copy", "-o", out],
        ["run", humanoid, "--target", path, "--method", "copy", "-o", out],
        ["physics", path, "--target-preset", "blubby", "-o", out],
        ["physics", path, "-o", out],
        ["eval", path, tmp_path / "same.bvh", "--json"],
        ["eval", humanoid, path],
        ["map", path, humanoid],
        ["map", humanoid, path],
    ]
    for args in commands:
        code, stdout, err = cli(capsys, *args)
        command = " ".join(map(str, args))
        assert code == 2, f"retarget {command} -> {code}: {stdout}{err}"
        _one_line_error(err, path, command)
        assert not out.exists(), command


@pytest.mark.parametrize("name", OTHERS)
def test_a_user_sees_one_line(data_dir, name, tmp_path):
    """What a user sees of ``retarget run`` on a non-humanoid: in its own process,
    one line on stderr and nothing else, exit code 2."""
    path = _source(data_dir, name)
    out = tmp_path / "out.bvh"
    proc = subprocess.run(
        [sys.executable, "-m", "retarget.cli", "run", path, "--target-preset", "blubby", "-o", out],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and not proc.stdout, proc.stdout + proc.stderr
    _one_line_error(proc.stderr, path, "run")


def test_every_non_humanoid_is_listed(real_dir):
    """The files named as not humanoids exist (else their tests would silently go)."""
    for name in NOT_HUMANOID:
        assert any(Path(f).name == name for f in FILES), f"{name} not in {real_dir}"
