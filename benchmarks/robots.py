"""Humanoid robots as targets (issue 27): the whole LAFAN walk onto the Unitree G1, this
library's methods beside GMR's output, every robot measure and frames/s, in one table.

GMR (General Motion Retargeting) was run on ``lafan_walk.bvh`` onto the G1 of
``../shared/robots/unitree_g1/g1_29dof.xml``; its output,
``../shared/robots/reference/gmr_lafan_walk_g1.npz``, is measured here the same way
as ours (:func:`retarget.targets.robot.measures.measure_robot`: MuJoCo's kinematics and
collision detection of the model). GMR's speed is the issue's (96 frames/s on
one core of this machine; GMR itself is not installed here).

Ours: ``retarget run lafan_walk.bvh --target g1_29dof.xml --method M`` as the
library does it (:func:`retarget.retarget` onto the robot opened once), timed from the
source read to the trajectories (the measures excluded; the model compiled and its
hinges gathered once, when the target is opened), the median of ``--repeats`` runs
after a warm-up, one core (``NUMBA_NUM_THREADS=1`` and one BLAS thread are set
before numpy loads).

``--robot MODEL`` runs the same commands onto another robot (MJCF or URDF, no
configuration; GMR's column only where ``--reference`` names its output for that
robot): the second robots of the issue's acceptance are IHMC's Alexander, iCub and
Aldebaran's Romeo, the URDFs of ``tests/data/robots/ihmc_alexander``,
``tests/data/robots/icub`` and ``tests/data/robots/romeo``.

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
from pathlib import Path  # noqa: E402

import _common as common  # noqa: E402
import numpy as np  # noqa: E402

from retarget.io.trajectories import RobotTrajectory  # noqa: E402
from retarget.pipeline import retarget  # noqa: E402
from retarget.targets.robot import open_robot  # noqa: E402
from retarget.targets.robot.measures import measure_robot  # noqa: E402

GMR_FPS = 96.0  # the measure of GMR on this machine

ROWS = (
    ("skate_ratio", "skate ÷ source's", "≤ 1"),
    ("float_cm", "floating, mean during contact (cm)", "≤ 0.5"),
    ("float_over_2cm_share", "contact frames floating > 2 cm", ""),
    ("penetration_frames", "frames with a sole > 0.5 cm under the floor", "0"),
    ("penetration_max_cm", "deepest sole (cm)", ""),
    ("limit_violations", "joint-limit violations (frames × joints)", "0"),
    ("velocity_violations", "velocity-limit violations", ""),
    ("self_collision_share", "frames with links > 0.5 cm into each other", "0"),
    ("self_collision_max_cm", "deepest (cm)", ""),
    ("jerk_ratio", "body jerk ÷ scaled source's", "≤ 1.2"),
    ("segment_direction_deg", "limb segment directions from the human's (°)", "≤ 5"),
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--frames", type=int, default=0, help="first N frames (0: all)")
    parser.add_argument("--methods", default="hierarchical,omr")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--robot", default="", help="MJCF or URDF (default: the G1)")
    parser.add_argument("--reference", default="", help="GMR's npz for --robot (default: G1's)")
    args = parser.parse_args(argv)
    clip_path, source = common.read_clip()
    if args.frames:
        source = source[: args.frames]
    shared = clip_path.parent.parent / "robots"
    model = Path(args.robot) if args.robot else shared / "unitree_g1" / "g1_29dof.xml"
    target = open_robot(model)
    robot = target.robot
    reference = args.reference or (
        "" if args.robot else shared / "reference" / "gmr_lafan_walk_g1.npz"
    )
    n = source.num_frames
    columns = {}
    if reference:
        gmr = np.load(reference)
        theirs = RobotTrajectory(
            gmr["root_pos"][:n], gmr["root_quat"][:n], gmr["dof_pos"][:n], float(gmr["fps"])
        )
        columns["GMR (reference output)"] = (measure_robot(robot, theirs, source), GMR_FPS)
    for method in args.methods.split(","):
        samples = []
        for k in range(args.repeats + 1):  # the first: warm-up
            t0 = time.perf_counter()
            ours = retarget(source, target, method, measure=False).output
            if k:
                samples.append(time.perf_counter() - t0)
        columns[f"ours: {method}"] = (
            measure_robot(robot, ours, source),
            n / float(np.median(samples)),
        )
    onto = model.name if args.robot else "the Unitree G1"
    lines = [
        *common.header(
            f"Robots: {clip_path.name} ({n} frames) onto {onto}", "robots.py", args.repeats
        ),
        common.row(["measure", *columns, "goal"]),
        common.row(["---"] * (len(columns) + 2)),
    ]
    for key, label, goal in ROWS:
        lines.append(
            common.row([label, *(common.fmt(float(m[key])) for m, _ in columns.values()), goal])
        )
    lines.append(
        common.row(
            [
                "frames/s (one core)",
                *(f"{fps:,.0f}" for _, fps in columns.values()),
                "≥ 1,000 / 2,000",
            ]
        )
    )
    lines += ["", "Self-collision pairs, most frames first (frames, deepest cm):", ""]
    for name, (m, _) in columns.items():
        pairs = ", ".join(
            f"{p['bodies'][0]}–{p['bodies'][1]} {p['frames']}, {p['depth_cm']:.1f}"
            for p in m["self_collision_pairs"][:8]
        )
        lines.append(f"- {name}: {pairs or 'none'}")
    common.publish(lines, "robots", save=not args.no_save)


if __name__ == "__main__":
    sys.exit(main())
