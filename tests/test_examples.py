"""Every script in examples/ runs to the end and writes its output.

Each runs in a fresh working directory with ``RETARGET_DATA`` set to the real
clips (so samples come from there, never from the network), on frames 0:300
when it takes ``--frames``, onto the robot and the character of ``../shared`` when it
takes ``--robot`` or ``--character`` (by default they fetch or make their own).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path, data_dir: Path, tmp_path: Path):
    args = [sys.executable, str(script)]
    text = script.read_text(encoding="utf-8")
    if "--frames" in text:
        args += ["--frames", "0:300"]
    if "--robot" in text:
        args += ["--robot", str(data_dir.parent / "robots" / "unitree_g1" / "g1_29dof.xml")]
    if "--character" in text:
        args += ["--character", str(data_dir.parent / "characters" / "kaykit_Knight.glb")]
    env = {**os.environ, "RETARGET_DATA": str(data_dir)}
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.stat().st_size > 0]
    assert written, f"{script.name} wrote nothing into its working directory:\n{done.stdout}"
