"""Walk a captured clip over rough terrain (Lee & Shin 1999, §4.5 and Figure 5).

Builds a random height field with bumps up to 10 % of the character's height,
saves it as ``terrain.npz`` (the file ``retarget run --terrain`` reads), and
moves every footplant onto it: the root is shifted first so the knees are not
forced into a squat, then the displacement-map hierarchy meets the feet.

    python examples/rough_terrain.py [WALK.bvh] [--frames A:B]

The same from the command line:

    retarget run WALK.bvh --target WALK.bvh --method hierarchical --terrain terrain.npz -o out.bvh

Writes terrain.npz and WALK_terrain.bvh into the working directory.
"""

from pathlib import Path

import numpy as np
from _setup import read_source, source_parser

from retarget import get_method, positions, write_bvh
from retarget.environment import random_height_field
from retarget.humanoid.contacts import detect_contacts
from retarget.humanoid.roles import find_roles, height
from retarget.ik.limb import hinge_angle, limb_from_roles
from retarget.io.scene import write_environment

args = source_parser(__doc__).parse_args()
path, source = read_source(args)
sk = source.skeleton
h = height(sk)

# terrain under the whole walk: samples 80 % of the height apart, heights within 10 %
xz = positions(source)[..., [0, 2]].reshape(-1, 2)
extent = np.stack([xz.min(axis=0) - h, xz.max(axis=0) + h], axis=1)
field = random_height_field(extent, 0.8 * h, 0.1 * h, np.random.default_rng(1), smoothness=0.0)
write_environment(Path.cwd() / "terrain.npz", field)

result = get_method("hierarchical").run(source, sk, terrain=field)
out = positions(result.motion)
worst = 0.0
for name, goal in result.goals.items():
    worst = max(worst, float(np.nanmax(np.linalg.norm(out[:, sk.index(name)] - goal, axis=1))))
print(f"{path.name}: {source.num_frames} frames over bumps up to {0.1 * h:.1f} {sk.unit}")
print("level  max footplant error (% of height)")
for lv in result.report["levels"]:
    print(f"{'exact' if lv['level'] == -1 else lv['level']:>5}  {lv['max_error']:.4f}")
print(f"every footplant on the surface within {worst / h * 100:.4f} % of the height")

# no foot point under the ground (each point's planted clearance above it)
roles = find_roles(sk)
contacts = detect_contacts(source, roles=roles)
for k, p in enumerate(contacts.points):
    ground = field.height(out[:, p][:, [0, 2]]) + contacts.clearance[k]
    depth = max(0.0, float((ground - out[:, p, 1]).max()))
    print(
        f"  {sk.point_names[p]:<14} deepest below its clearance: {depth / h * 100:.4f} % of height"
    )

# stance knees against the source's: the root shift keeps them from squatting
for side in ("left", "right"):
    limb = limb_from_roles(sk, roles, side, "leg", motion=source)
    diff = np.degrees(
        np.abs(hinge_angle(limb, result.motion.rotations) - hinge_angle(limb, source.rotations))
    )
    stance = diff[contacts.foot(side)]
    print(
        f"  {side} knee flexion minus the source's in stance: mean {stance.mean():.1f}, "
        f"95th percentile {np.percentile(stance, 95):.1f}, max {stance.max():.1f} deg; "
        f"{(stance > 10).mean() * 100:.1f} % of stance frames beyond 10 deg"
    )

dest = Path.cwd() / f"{path.stem}_terrain.bvh"
write_bvh(dest, result.motion, inputs=(path,))
print(f"wrote {dest}")
