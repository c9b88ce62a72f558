"""Run the same jobs in two checkouts and compare what they write: a refactor's guard.

``python tools/compare_outputs.py BEFORE AFTER`` takes two checkouts of the project
(folders holding ``src/retarget``; the same one twice is allowed), runs in each,
with that checkout's ``src`` first on ``PYTHONPATH`` and this Python:

- ``retarget run SRC --target-preset T --method M -o OUT.bvh --report OUT.json`` for
  every method ``copy``, ``hierarchical``, ``omr``, ``puppetry`` on
  ``lafan_walk.bvh``, ``mocapbank.bvh`` and ``vicon.amc`` (whole clips) onto
  ``blubby`` and ``sally``, and ``retarget physics SRC --target-preset T`` (first
  ``--physics-frames``, 240 by default: a dynamic pass is slow);
- the same methods and ``--method physics`` (its first ``--physics-frames``) onto the
  Unitree G1 (``../shared/robots/unitree_g1/g1_29dof.xml``, joint trajectories
  ``-o OUT.npz``) and onto the KayKit knight (``../shared/characters/kaykit_Knight.glb``,
  the character with the clip added, ``-o OUT.glb``);
- ``retarget --help`` and ``retarget CMD --help`` for every command and sub-command
  (the options a user has).

Then, job by job, it reads both written files with AFTER's reader and prints a
table: the largest difference of any joint position over all frames (forward
kinematics, in the file's unit; for a robot's trajectories, of any number of
``root_pos``, ``root_quat`` and ``dof_pos``; for a character, of its skeleton's joints
in the animation the run added), the largest difference of any number written (a BVH's
MOTION section, the trajectories' arrays, the GLB's animation channels as
sampled), and whether the report's measures are equal.
Every option string (``--flag``) that BEFORE's help shows and AFTER's does not is
listed: an option that went away.

Exit status 0 when every position differs by at most ``--tolerance`` (1e-9 of the
unit) and no option went away, 1 otherwise, 2 when a checkout cannot run a job.
Outputs stay in ``--keep DIR`` when given (else a temporary folder);
``--before-outputs DIR`` reuses BEFORE's outputs of an earlier ``--keep`` (its
``before`` folder) instead of running BEFORE again.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CLIPS = ("lafan_walk.bvh", "mocapbank.bvh", "vicon.amc")
TARGETS = ("blubby", "sally")
METHODS = ("copy", "hierarchical", "omr", "puppetry")
#: Targets that are files of ``../shared`` (name, path below it, the output's suffix).
FILE_TARGETS = (
    ("g1", "robots/unitree_g1/g1_29dof.xml", ".npz"),
    ("knight", "characters/kaykit_Knight.glb", ".glb"),
)
#: Where each job's numbers may differ (jitter-free measures of the report).
MEASURES = ("skate_ratio", "pop", "smoothness", "pose_deviation_deg", "float_result")


def data_dir() -> Path:
    here = Path(__file__).resolve().parents[1]
    return Path(os.environ.get("RETARGET_DATA", here.parent / "shared" / "data"))


Job = tuple[str, list[str], str]


def jobs(physics_frames: int) -> list[Job]:
    """(name, arguments of ``retarget``, output suffix) of every job."""
    data = data_dir()
    out: list[Job] = []
    for clip in CLIPS:
        stem, src = Path(clip).stem, str(data / clip)
        for target in TARGETS:
            for method in METHODS:
                name = f"{stem}-{target}-{method}"
                out.append(
                    (name, ["run", src, "--target-preset", target, "--method", method], ".bvh")
                )
            frames = ["--frames", f"0:{physics_frames}"]
            out.append(
                (
                    f"{stem}-{target}-physics",
                    ["physics", src, "--target-preset", target, *frames],
                    ".bvh",
                )
            )
        for target, below, suffix in FILE_TARGETS:
            path = str(data.parent / below)
            for method in (*METHODS, "physics"):
                cut = ["--frames", f"0:{physics_frames}"] if method == "physics" else []
                args = ["run", src, "--target", path, "--method", method, *cut]
                out.append((f"{stem}-{target}-{method}", args, suffix))
    return out


def _run(checkout: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(checkout / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("RETARGET_DATA", str(data_dir()))
    return subprocess.run(
        [sys.executable, "-m", "retarget.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def run_checkout(checkout: Path, folder: Path, physics_frames: int, workers: int) -> list[str]:
    """Every job and help text of ``checkout`` into ``folder``; the failures."""
    folder.mkdir(parents=True, exist_ok=True)
    failures = []

    def one(item: Job) -> str | None:
        name, args, suffix = item
        done = _run(
            checkout,
            [
                *args,
                "-o",
                str(folder / f"{name}{suffix}"),
                "--report",
                str(folder / f"{name}.json"),
            ],
            folder,
        )
        if done.returncode != 0:
            command = " ".join(args)
            return f"{checkout}: retarget {command} -> {done.returncode}: {done.stderr[-400:]}"
        return None

    with cf.ThreadPoolExecutor(workers) as pool:
        failures += [f for f in pool.map(one, jobs(physics_frames)) if f]
    write_helps(checkout, folder)
    return failures


def write_helps(checkout: Path, folder: Path) -> None:
    """``retarget --help`` and every command's and sub-command's, into ``help.json``."""
    helps = {"": _run(checkout, ["--help"], folder).stdout}
    for command in _commands(helps[""]):
        text = _run(checkout, [command, "--help"], folder).stdout
        helps[command] = text
        for sub in _commands(text):
            helps[f"{command} {sub}"] = _run(checkout, [command, sub, "--help"], folder).stdout
    (folder / "help.json").write_text(json.dumps(helps, indent=1), encoding="utf-8")


def _commands(help_text: str) -> list[str]:
    """The sub-commands a ``--help`` lists in its ``{a,b,c} ...`` choice (argparse's
    sub-parsers; an option's choices, ``[--format {bvh,npz}]``, are not commands)."""
    found = re.search(r"\{([a-z0-9_,-]+)\}\s+\.\.\.", help_text)
    return found.group(1).split(",") if found else []


def _options(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", help_text))


def _motion_numbers(path: Path) -> np.ndarray:
    text = path.read_text(encoding="utf-8")
    motion = text[text.index("MOTION") :].split("\n", 3)[-1]
    return np.array(motion.split(), dtype=np.float64)


def _trajectory_numbers(path: Path) -> np.ndarray:
    with np.load(path) as z:
        return np.concatenate([np.ravel(z[k]) for k in ("root_pos", "root_quat", "dof_pos")])


def _differences(a: Path, b: Path, source: str) -> tuple[float, float] | str:
    """(largest position difference, largest number difference) of two outputs, or what
    keeps them from being compared."""
    from retarget.core.kinematics import positions
    from retarget.io.formats import read_motion

    if a.suffix == ".npz":  # a robot's joint trajectories: the numbers are the positions
        na, nb = _trajectory_numbers(a), _trajectory_numbers(b)
        if na.shape != nb.shape:
            return "other joints or frames"
        d = float(np.abs(na - nb).max())
        return d, d
    options = {"animation": source} if a.suffix == ".glb" else {}
    ma, mb = read_motion(a, **options), read_motion(b, **options)
    if ma.skeleton.names != mb.skeleton.names or ma.num_frames != mb.num_frames:
        return "other joints or frames"
    dp = float(np.abs(positions(ma) - positions(mb)).max())
    if a.suffix == ".bvh":
        na, nb = _motion_numbers(a), _motion_numbers(b)
        dc = float(np.abs(na - nb).max()) if na.shape == nb.shape else math.inf
    else:
        dc = float(np.abs(ma.rotations - mb.rotations).max())
    return dp, dc


def _measures(report: dict) -> dict:
    """The measures of a run's report (onto a robot, before issue 38, under ``robot``)."""
    robot = report.get("robot") or {}
    return robot.get("measures") or report.get("measures") or {}


def compare(before: Path, after: Path, tolerance: float) -> tuple[list[str], bool]:
    """The table's lines and whether everything is within ``tolerance``."""
    lines = [
        "| job | largest position difference (unit) | largest channel difference "
        "| measures equal |",
        "| --- | ---: | ---: | --- |",
    ]
    ok = True
    for name, args, suffix in jobs(0):
        a, b = before / f"{name}{suffix}", after / f"{name}{suffix}"
        if not (a.is_file() and b.is_file()):
            lines.append(f"| {name} | missing | | |")
            ok = False
            continue
        found = _differences(a, b, Path(args[1]).stem)
        if isinstance(found, str):
            lines.append(f"| {name} | {found} | | |")
            ok = False
            continue
        dp, dc = found
        ra = _measures(json.loads(a.with_suffix(".json").read_text(encoding="utf-8")))
        rb = _measures(json.loads(b.with_suffix(".json").read_text(encoding="utf-8")))
        keys = [k for k in ra if not k.endswith("_note") and "second" not in k]
        keys = [k for k in keys if k in MEASURES or suffix == ".npz"]
        same = all(ra.get(k) == rb.get(k) for k in keys)
        ok &= dp <= tolerance
        lines.append(f"| {name} | {dp:.3g} | {dc:.3g} | {'yes' if same else 'no'} |")
    ha = json.loads((before / "help.json").read_text(encoding="utf-8"))
    hb = json.loads((after / "help.json").read_text(encoding="utf-8"))
    gone = []
    for command, text in ha.items():
        lost = _options(text) - _options(hb.get(command, ""))
        if command not in hb:
            gone.append(f"command `retarget {command}` went away")
        elif lost:
            gone.append(f"`retarget {command}` lost {sorted(lost)}")
    lines += ["", f"- commands compared: {len(ha)}; options gone: {len(gone)}", *gone]
    return lines, ok and not gone


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("before", type=Path, help="a checkout (folder with src/retarget)")
    parser.add_argument("after", type=Path, help="another checkout (or the same)")
    parser.add_argument("--physics-frames", type=int, default=240)
    parser.add_argument("--tolerance", type=float, default=1e-9, help="of the unit")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the outputs here")
    parser.add_argument(
        "--before-outputs", type=Path, metavar="DIR", help="BEFORE's outputs of an earlier run"
    )
    args = parser.parse_args(argv)
    for checkout in (args.before, args.after):
        if not (checkout / "src" / "retarget").is_dir():
            print(f"{checkout}: not a checkout (no src/retarget)", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        folders = [args.before_outputs or root / "before", root / "after"]
        failures: list[str] = []
        for checkout, folder in zip((args.before, args.after), folders, strict=True):
            if folder == args.before_outputs:
                if not (folder / "help.json").is_file():
                    print(f"{folder}: no outputs of an earlier run", file=sys.stderr)
                    return 2
                continue
            failures += run_checkout(checkout.resolve(), folder, args.physics_frames, args.workers)
        if failures:
            print("\n".join(failures), file=sys.stderr)
            return 2
        lines, ok = compare(*folders, args.tolerance)
    print(f"# Outputs of {args.before} and {args.after}\n")
    print("\n".join(lines))
    print(f"\n{'SAME' if ok else 'DIFFERENT'} within {args.tolerance:g} of the unit")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
