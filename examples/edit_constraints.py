"""Edit a captured walk under constraints (Lee & Shin 1999, Figure 2).

Raises the left hand 20 cm at one frame and lowers the pelvis 10 cm at
another, and shows how far each change reaches: a
displacement map whose coarsest knots are N frames apart touches about 3.5 N
frames on each side of a constraint, so a coarser spacing spreads the same
change over more of the clip.

    python examples/edit_constraints.py [WALK.bvh] [--frames A:B] [--knot-spacing N]

Writes WALK_edited.bvh and WALK_edits.json (the constraints, in the format of
``retarget edit --constraints``) into the working directory.
"""

import json
from pathlib import Path

import numpy as np
from _setup import read_source, source_parser

from retarget import edit_motion, parse_constraints, positions, write_bvh
from retarget.humanoid.roles import height

parser = source_parser(__doc__)
parser.add_argument("--knot-spacing", type=float, default=16, help="coarsest knot spacing")
args = parser.parse_args()
path, source = read_source(args)
n = source.num_frames
hand_frame, pelvis_frame = n // 3, 2 * n // 3
edits = [
    {"joint": "LeftHand", "frame": hand_frame, "offset": [0.0, 20.0, 0.0]},
    {"joint": "Hips", "frame": pelvis_frame, "offset": [0.0, -10.0, 0.0]},
]
text = json.dumps(edits, indent=1)
(Path.cwd() / f"{path.stem}_edits.json").write_text(text)

constraints = parse_constraints(text, source, name="edits")
# keep_feet=False: only the two edits move the motion, so their reach shows; the
# default (True) also holds every footplant of the source, over the whole clip
result = edit_motion(source, constraints, knot_spacing=args.knot_spacing, levels=4, keep_feet=False)

before, after = positions(source), positions(result.motion)
sk = source.skeleton
h = height(sk)
print(f"{path.name}: {n} frames, coarsest knots {args.knot_spacing:g} frames apart")
for edit in edits:
    joint, frame = sk.index(edit["joint"]), edit["frame"]
    goal = before[frame, joint] + np.asarray(edit["offset"])
    error = np.linalg.norm(after[frame, joint] - goal) / h * 100
    first, last = result.report["reach"][frame]
    print(
        f"  {edit['joint']:<9} at frame {frame:4d}: error {error:.4f} % of height; "
        f"frames {first}..{last} may change"
    )
moved = np.linalg.norm(after - before, axis=-1).max(axis=1) > 1e-6
changed = np.flatnonzero(moved)
print(f"  frames that changed: {changed.min()}..{changed.max()} ({moved.sum()} of {n})")

out = Path.cwd() / f"{path.stem}_edited.bvh"
write_bvh(out, result.motion, inputs=(path,))
print(f"wrote {out}")
