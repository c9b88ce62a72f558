"""Shared fixtures: the real captured clips of RETARGET_DATA.

Tests that need the clips take the ``data_dir`` fixture. When the folder is
missing they are skipped locally with the reason shown, and fail under CI
(``CI=true``), so a missing data set can never pass silently.
"""

from __future__ import annotations

import os
from pathlib import Path

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


@pytest.fixture(scope="session")
def data_dir() -> Path:
    found = _data_dir()
    if found is None:
        msg = f"real clips {CLIPS} not found (set RETARGET_DATA to their folder)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return found


def _missing(msg: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(msg)
    pytest.skip(msg)


#: Files of ``RETARGET_DATA/real`` (real files from other people's tools, its README).
REAL = ("pybvh_test3.bvh", "tomochi_optitrack.bvh", "bvhpython_freebvh.bvh", "01.asf")


@pytest.fixture(scope="session")
def real_dir(data_dir) -> Path:
    """``RETARGET_DATA/real``: skipped locally when missing, a failure under ``CI=true``."""
    real = data_dir / "real"
    if not all((real / f).is_file() for f in REAL):
        _missing(f"real files {REAL} not found in {real}")
    return real


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
