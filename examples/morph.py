"""Retarget a walk onto a character that changes shape as it walks (Lee & Shin 1999, Fig. 5d).

The character grows from the source's own proportions into ``blubby`` (short
legs, long body) over the clip: every frame has its own bone lengths, the
stride follows the frame's legs, and every footplant is still met.

    python examples/morph.py [WALK.bvh] [--frames A:B]

The same from the command line, with two character files:

    retarget run WALK.bvh --method hierarchical --target-from A.bvh --target-to B.bvh -o out.bvh

Writes WALK_morph.bvh (joints carry per-frame position channels) into the working directory.
"""

from pathlib import Path

import numpy as np
from _setup import read_source, source_parser

from retarget import evaluate, make_character, positions, write_bvh
from retarget.humanoid.characters import morph_translations
from retarget.methods.hierarchical import hierarchical_retarget

args = source_parser(__doc__).parse_args()
path, source = read_source(args)

start_shape, end_shape = source.skeleton, make_character(source.skeleton, preset="blubby")
offsets = morph_translations(start_shape, end_shape, source.num_frames)
result = hierarchical_retarget(source, start_shape, translations=offsets)

out = positions(result.motion)
worst = 0.0
for name, goal in result.goals.items():
    err = np.linalg.norm(out[:, start_shape.index(name)] - goal, axis=1)
    worst = max(worst, float(np.nanmax(err)))
ratio = result.report["ratio"]
first, last = ratio["first"], ratio["last"]
print(f"{path.name}: {source.num_frames} frames, stride ratio {first:.3f} -> {last:.3f}")
print(f"largest footplant error {worst:.4f} {start_shape.unit}")
m = evaluate(source, result.motion, goals=result.goals)
print(f"foot skate {m['skate_source']:.2f} -> {m['skate_result']:.2f} % height/s")

dest = Path.cwd() / f"{path.stem}_morph.bvh"
write_bvh(dest, result.motion, inputs=(path,))
print(f"wrote {dest}")
