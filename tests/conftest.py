"""Shared fixtures: the real captured clips of RETARGET_DATA, and the reference libraries.

Tests that need the clips take the ``data_dir`` fixture; tests that compare with
another library (pyacclaim, pinocchio) import it with :func:`reference`. When
either is missing they are skipped locally with the reason shown, and fail under
CI (``CI=true``), so a missing data set or library can never pass silently: both
go through :func:`missing`.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

# Each pytest-xdist worker compiles into its own numba cache: numba's cache files are
# not safe against several processes writing the same entry at once, which crashed
# workers (SIGSEGV) on a fresh clone's first run. Set before anything imports numba.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["NUMBA_CACHE_DIR"] = str(
        Path(__file__).resolve().parents[1] / ".numba-cache" / os.environ["PYTEST_XDIST_WORKER"]
    )

CLIPS = ("lafan_walk.bvh", "mocapbank.bvh", "vicon.asf", "vicon.amc")


def _data_dir() -> Path | None:
    env = os.environ.get("RETARGET_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[1].parent / "shared" / "data")
    for c in candidates:
        if all((c / f).is_file() for f in CLIPS):
            return c
    return None


def missing(msg: str) -> NoReturn:
    """What a test does when something it needs is not there (data, a reference
    library, a browser): skipped locally with ``msg``, failed under ``CI=true``."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(msg)
    pytest.skip(msg)


def reference(module: str) -> ModuleType:
    """The reference library ``module`` (a test extra of pyproject.toml), imported;
    :func:`missing` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing(f"reference library {module!r} not installed ({exc}): pip install -e '.[test]'")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    found = _data_dir()
    if found is None:
        missing(f"real clips {CLIPS} not found (set RETARGET_DATA to their folder)")
    return found


#: Files of ``RETARGET_DATA/real`` (real files from other people's tools, its README).
REAL = ("pybvh_test3.bvh", "tomochi_optitrack.bvh", "bvhpython_freebvh.bvh", "01.asf")


@pytest.fixture(scope="session")
def real_dir(data_dir) -> Path:
    """``RETARGET_DATA/real``: skipped locally when missing, a failure under ``CI=true``."""
    real = data_dir / "real"
    if not all((real / f).is_file() for f in REAL):
        missing(f"real files {REAL} not found in {real}")
    return real


#: The motion files of the data that are not humanoids (no two arms and legs); every
#: other motion file must be one.
NOT_HUMANOID = ("fairmotion_sinusoidal.bvh", "pybvh_rotation_first_root.bvh")


def motion_files(folder: Path | None) -> list[str]:
    """The BVH and AMC files of the data and its ``real`` folder, by relative path
    (listed when the tests are collected, so a file added there is covered; a
    placeholder that fails when the data is missing)."""
    if folder is None:
        return ["(RETARGET_DATA missing)"]
    found = [*folder.glob("*.bvh"), *folder.glob("*.amc")]
    found += [*(folder / "real").glob("*.bvh"), *(folder / "real").glob("*.amc")]
    return sorted(str(p.relative_to(folder)) for p in found)


#: Issue 24's clips: every humanoid motion file of the data and its ``real/``.
HUMANOID_CLIPS = [f for f in motion_files(_data_dir()) if Path(f).name not in NOT_HUMANOID]


def issue_24_measures(data_dir: Path, name: str, method: str, target: str, out: Path) -> dict:
    """The measures of ``retarget run NAME --target-preset TARGET --method METHOD --frames
    0:600`` (:func:`retarget.pipeline.run_job`, an AMC with the ASF beside it), as
    ``benchmarks/real_files.py`` takes them for issue 24's acceptance."""
    import warnings

    from retarget.core.errors import RetargetWarning
    from retarget.pipeline import RunJob, run_job

    job = RunJob(
        source=str(data_dir / name),
        output=str(out),
        method=method,
        target_preset=target,
        frames="0:600",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetargetWarning)  # assimp's extra data line
        measures = run_job(job).report["measures"]
    print(
        f"{name} -> {target} ({method}): skate {measures['skate_ratio']}, "
        f"pop {measures['pop']:.2f}, jerk {measures['smoothness']}"
    )
    return measures


@pytest.fixture(scope="session")
def lafan(data_dir):
    from retarget.io import read_bvh

    return read_bvh(data_dir / "lafan_walk.bvh")


@pytest.fixture(scope="session")
def mocapbank(data_dir):
    from retarget.io import read_bvh

    return read_bvh(data_dir / "mocapbank.bvh")


@pytest.fixture
def start_server(data_dir):
    """Start ``retarget serve`` (performer lafan_walk.bvh, 30 fps) in its own process:
    ``start_server(preset, *options)`` → (process, {"udp": port, "ws": port} of the ready
    line, for the addresses given with port 0). Stopped with SIGINT at the end."""
    import re
    import subprocess
    import sys

    started = []

    def start(preset, *options):
        command = [sys.executable, "-m", "retarget.cli", "serve", "--performer"]
        command += [str(data_dir / "lafan_walk.bvh"), "--target-preset", preset, "--fps", "30"]
        proc = subprocess.Popen(
            [*command, *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        ports = {}
        if "stdin" not in options:
            line = proc.stderr.readline()
            assert "ready" in line, line + proc.stderr.read()
            ports = {s: int(p) for s, p in re.findall(r"(udp|ws)://127\.0\.0\.1:(\d+)", line)}
        return proc, ports

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(2)
            proc.communicate(timeout=60)


# -- a headless browser (the viewer, three.js as a reference) ----------------------------------

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        missing("Chromium not found (Debian's chromium package: `make test` installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()
