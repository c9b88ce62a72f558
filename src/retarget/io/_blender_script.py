"""Blender's side of :mod:`retarget.io.blender`: run by Blender's Python (``bpy``),
never imported by the library::

    BLENDER_PYTHON _blender_script.py SOURCE SRC WRITTEN DST [FPS]

Resets Blender to an empty scene, imports ``SRC`` with Blender's own importer as
``SOURCE`` says (``fbx``: ``import_scene.fbx``; ``glb``: ``import_scene.gltf``) and
exports the scene to ``DST`` as ``WRITTEN`` says (``glb``: ``export_scene.gltf``,
every action an animation; ``fbx``: ``export_scene.fbx``, the animations baked, no
leaf bones added, every baked key kept). Prints one line, ``ok`` or the error, last.
"""

from __future__ import annotations

import sys
import traceback


def main(source: str, src: str, written: str, dst: str, fps: float | None = None) -> None:
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    if fps:  # (glTF keys are seconds: Blender turns them into frames at the scene's rate)
        scene.render.fps, scene.render.fps_base = round(fps), round(fps) / fps
    if source == "fbx":
        bpy.ops.import_scene.fbx(filepath=src)
    else:
        bpy.ops.import_scene.gltf(filepath=src)
    ranges = [a.frame_range for a in bpy.data.actions]
    if ranges:  # every action's frames baked, the first and the last
        scene.frame_start = int(min(r[0] for r in ranges))
        scene.frame_end = round(max(r[1] for r in ranges))
    if written == "fbx":
        bpy.ops.export_scene.fbx(
            filepath=dst,
            add_leaf_bones=False,
            bake_anim=True,
            bake_anim_use_all_actions=True,
            bake_anim_use_nla_strips=False,
            bake_anim_simplify_factor=0.0,  # (every baked key kept: 1.0 moved joints 2 cm)
        )
    else:
        bpy.ops.export_scene.gltf(
            filepath=dst,
            export_format="GLB",
            export_animations=True,
            export_animation_mode="ACTIONS",
        )


if __name__ == "__main__":
    args = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    try:
        main(args[0], args[1], args[2], args[3], float(args[4]) if len(args) > 4 else None)
    except Exception:  # (the caller reads the last line)
        print("error: " + traceback.format_exc().strip().splitlines()[-1])
        sys.exit(1)
    print("ok")
