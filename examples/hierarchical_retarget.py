"""Retarget a captured walk onto a character of other proportions (Lee & Shin 1999).

The source's footplants become goals on the new character; a hierarchy of
B-spline displacement maps (knots 16, 8, 4, 2 frames apart) meets them, coarse
to fine, with hybrid IK at the constrained frames, then an exact IK pass.

    python examples/hierarchical_retarget.py [WALK.bvh] [--frames A:B]

Writes WALK_blubby.bvh into the working directory.
"""

from pathlib import Path

from _setup import read_source, source_parser

from retarget.humanoid.characters import make_character
from retarget.humanoid.metrics import evaluate
from retarget.io import write_bvh
from retarget.methods.hierarchical import hierarchical_retarget

args = source_parser(__doc__).parse_args()
path, source = read_source(args)

# The target: the source's skeleton with short legs and a long torso.
blubby = make_character(source.skeleton, preset="blubby")
result = hierarchical_retarget(source, blubby)

report = result.report
print(f"{path.name}: {source.num_frames} frames onto blubby in {report['seconds']:.2f} s")
print("level  knots  frames  max error  mean error  penetration  seconds  (% of height)")
for lv in report["levels"]:
    level = "exact" if lv["level"] == -1 else str(lv["level"])
    print(
        f"{level:>5} {lv['spacing']:6g} {lv['frames_solved']:7d} {lv['max_error']:10.3f} "
        f"{lv['mean_error']:11.4f} {lv['max_penetration']:12.3f} {lv['seconds']:8.3f}"
    )

m = evaluate(source, result.motion, goals=result.goals)
print(f"foot skate       {m['skate_source']:.2f} -> {m['skate_result']:.2f} % height/s")
print(f"footplant error  {m['tracking_error_max']:.2e} % height (max)")
print(f"smoothness       {m['smoothness']:.2f} (jerk, result / source)")
print(f"pose deviation   {m['pose_deviation_deg']:.3f} deg (joints outside the legs)")

out = Path.cwd() / f"{path.stem}_blubby.bvh"
write_bvh(out, result.motion, inputs=(path,))
print(f"wrote {out}")
