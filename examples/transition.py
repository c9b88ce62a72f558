"""Join two clips with a transition (Lee & Shin 1999, §6).

The second clip is turned and moved to continue where the first is, the two
are time-warped so their steps line up, faded over the blend window, and the
footplants are enforced again by hierarchical fitting around the window.

    python examples/transition.py [WALK.bvh] [--blend FRAMES]

The same from the command line, with two files:

    retarget transition A.bvh B.bvh --blend 20 -o joined.bvh

Writes WALK_transition.bvh into the working directory.
"""

import argparse
from pathlib import Path

from retarget import evaluate, read_bvh, transition, write_bvh
from retarget.io.samples import sample_path

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("bvh", nargs="?", help="source motion (default: the sample lafan_walk.bvh)")
parser.add_argument("--blend", type=int, default=20, help="frames of the fade")
args = parser.parse_args()

path = Path(args.bvh) if args.bvh else sample_path("lafan_walk.bvh")
clip = read_bvh(path)
a, b = clip[:300], clip[1000:1400]  # a turning walk, then a slow walk
result = transition(a, b, args.blend)
rep = result.report
w0, w1 = rep["window"]
print(f"{path.name}: frames 0-299 then 1000-1399, {args.blend}-frame blend at {w0}..{w1}")
print(f"b turned by {rep['alignment']['yaw_deg']:.1f} deg to continue a")
for lv in rep["fit"]["levels"]:
    knots = f"knots {lv['spacing']:g}" if lv["spacing"] else "exact IK"
    print(f"  {knots:>8}: max footplant error {lv['max_error']:.3f} % of height")
m = evaluate(result.motion, result.motion, goals=result.goals)
print(f"footplant error after fitting: {m['tracking_error_max']:.4f} % of height")

dest = Path.cwd() / f"{path.stem}_transition.bvh"
write_bvh(dest, result.motion, inputs=(path,))
print(f"wrote {dest}")
