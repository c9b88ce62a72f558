"""How long the command line takes to start: ``retarget --help`` and ``retarget info``.

Each command runs as a user runs it, a new process each time (the venv's
``retarget`` console script; ``python -m retarget.cli`` when there is none),
``--repeats`` times (10) in round-robin order with ``python -c "import numpy"``,
the floor any numpy program pays, so a noisy machine slows all three alike.
Before timing, the package's bytecode is compiled (``compileall``), as ``pip install``
does for a user: a checkout run with ``PYTHONDONTWRITEBYTECODE`` (as on this
machine) would otherwise compile every module from source on each run, which
numpy, installed, never pays.
The table gives each command's median wall time and its ratio to numpy's median
(issue 25's bound: at most 2), and ``python -X importtime``'s ten slowest modules
of ``import retarget.cli`` (cumulative microseconds), to show what still loads.

Run: ``python benchmarks/startup.py [--repeats N] [--no-save]``; the table is
printed and appended to ``benchmarks/results/YYYY-MM-DD-startup.md``.
"""

from __future__ import annotations

import compileall
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _common as common
import numpy as np

import retarget


def _retarget() -> list[str]:
    script = Path(sys.executable).with_name("retarget")
    if script.is_file():
        return [str(script)]
    found = shutil.which("retarget")
    return [found] if found else [sys.executable, "-m", "retarget.cli"]


def contenders(clip: Path) -> dict[str, list[str]]:
    retarget = _retarget()
    return {
        'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
        "retarget --help": [*retarget, "--help"],
        f"retarget info {clip.name}": [*retarget, "info", str(clip)],
    }


def wall(command: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=dict(os.environ))
    return time.perf_counter() - t0


def import_times(top: int = 10) -> list[tuple[str, int]]:
    """The slowest modules of ``import retarget.cli`` (cumulative µs, -X importtime)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import retarget.cli"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((m.group(4), int(m.group(2))))
    return sorted(rows, key=lambda r: -r[1])[:top]


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(__doc__, 10, argv)
    clip = common.clip_path()
    commands = contenders(clip)
    package = Path(retarget.__file__).parent
    compileall.compile_dir(package, quiet=1)  # as pip install does
    for command in commands.values():  # warm the file cache and numba's disk cache
        wall(command)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeats):
        for name, command in commands.items():
            samples[name].append(wall(command))
    floor = float(np.median(samples['python -c "import numpy"']))
    lines = [
        f"# Start-up of the command line ({time.strftime('%Y-%m-%d %H:%M')})",
        "",
        f"- commit {common.commit()}",
        common.cpu_line(),
        common.platform_line(),
        f"- {args.repeats} runs of each, round-robin, one invocation; median wall time",
        "- the package's bytecode compiled first (compileall), as pip install does",
        "",
        common.row(["command", "median (s)", "min (s)", "max (s)", "× numpy"]),
        common.row(["---", "---:", "---:", "---:", "---:"]),
    ]
    for name, times in samples.items():
        median = float(np.median(times))
        lines.append(
            common.row(
                [
                    f"`{name}`",
                    f"{median:.3f}",
                    f"{min(times):.3f}",
                    f"{max(times):.3f}",
                    f"{median / floor:.2f}",
                ]
            )
        )
    lines += ["", "Slowest imports of `import retarget.cli` (cumulative, -X importtime):", ""]
    lines += [f"- {name}: {us / 1000:.0f} ms" for name, us in import_times()]
    common.publish(lines, "startup", not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
