"""Retarget a walk onto skeletons: another rig (mapped by its roles) and a preset character.

The pipeline is one call whatever the target (:func:`retarget.retarget`); a skeleton
file of another hierarchy (here mocapbank's, 19 joints, other names and rest pose) is
mapped by the humanoid roles found from its body, a preset is made from the source's
own skeleton.

    python examples/onto_skeleton.py [WALK.bvh] [--frames A:B]

Writes WALK_on_mocapbank.bvh and WALK_blubby.bvh into the working directory.
"""

from pathlib import Path

from _setup import read_source, source_parser

import retarget as rt
from retarget.io.samples import sample_path

args = source_parser(__doc__).parse_args()
path, walk = read_source(args)

for target in (sample_path("mocapbank.bvh"), "blubby"):
    out = rt.retarget(walk, rt.open_target(target), method="hierarchical", name=str(path))
    m, mapping = out.measures, out.report["mapping"]
    name = f"{path.stem}_{'on_mocapbank' if isinstance(target, Path) else target}.bvh"
    out.write(name)
    print(
        f"{out.target.name}: skate {m['skate_source']:.2f} -> {m['skate_result']:.2f} %H/s, "
        f"limbs {mapping['bone_direction_error_mean_deg']:.1f} deg from the source's "
        f"(mapped by roles: {mapping['mapped']}) -> {name}"
    )
