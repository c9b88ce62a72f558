"""Retarget a walk onto a rigged glTF character: the character's own file with the clip.

The character (glTF, or FBX through Blender) is read once; the methods run on its skin's
skeleton, its hands are then kept out of its body, and the file is written back whole
(meshes, materials, its own animations) with the clip added as an animation.

    python examples/onto_character.py [WALK.bvh] [--frames A:B] [--character CHAR.glb]

Without ``--character``, a mannequin the library makes of the preset ``blubby``.
Writes WALK_CHAR.glb (and the mannequin) into the working directory.
"""

from pathlib import Path

from _setup import read_source, source_parser

import retarget as rt
from retarget.io.gltf import mannequin

parser = source_parser(__doc__)
parser.add_argument("--character", help="a rigged .glb, .gltf or .fbx")
args = parser.parse_args()
path, walk = read_source(args)

if args.character:
    figure = Path(args.character)
else:  # a skinned mannequin of the walk's own skeleton, blubby's proportions
    figure = Path("mannequin.glb")
    figure.write_bytes(mannequin(rt.make_character(walk.skeleton, preset="blubby")))
character = rt.open_target(figure)
out = rt.retarget(walk, character, method="hierarchical", name=str(path))
hands, m = out.report["hands_in_body"], out.measures
written = out.write(f"{path.stem}_{figure.stem}.glb")
print(
    f"{figure.name}: skate {m['skate_source']:.2f} -> {m['skate_result']:.2f} %H/s; hands in "
    f"the body on {100 * hands['share_of_frames']:.1f} % of frames "
    f"({100 * hands['before']['share_of_frames']:.1f} % before the pass) -> {written.name}, "
    f"the clip '{path.stem}' added"
)
