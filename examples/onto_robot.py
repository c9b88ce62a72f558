"""Retarget a walk onto a humanoid robot: its joint trajectories, measured through MuJoCo.

The robot (MJCF or URDF) is opened once (MuJoCo compiles it; its hinges are gathered
into the joints the methods run on); the result is carried back onto its hinges and
written as the joint trajectories robotics users load (``root_pos``, ``root_quat``
w, x, y, z, ``dof_pos`` in the model's joint order, ``fps``, ``joint_names``).

    python examples/onto_robot.py [WALK.bvh] [--frames A:B] [--robot ROBOT.xml]

The robot defaults to MuJoCo Menagerie's Booster T1, fetched from the package index.
Writes WALK_ROBOT.npz into the working directory.
"""

from pathlib import Path

from _setup import read_source, source_parser

import retarget as rt
from retarget.io.samples import sample_path

parser = source_parser(__doc__)
parser.add_argument("--robot", help="MJCF or URDF (default: the Booster T1 sample)")
args = parser.parse_args()
path, walk = read_source(args)

robot = rt.open_target(Path(args.robot) if args.robot else sample_path("booster_t1"))
for method in ("hierarchical", "omr"):
    out = rt.retarget(walk, robot, method=method, name=str(path))
    m = out.measures
    written = out.write(f"{path.stem}_{Path(robot.name).stem}_{method}.npz")
    print(
        f"{method}: {out.output.dof_pos.shape[1]} hinges x {out.output.num_frames} frames; "
        f"skate {m['skate_ratio']:.2f}x the source's, soles floating {m['float_cm']:.2f} cm, "
        f"links into each other on {100 * m['self_collision_share']:.1f} % of frames, "
        f"{m['limit_violations']} limits crossed -> {written.name}"
    )
