"""An FBX character written again by Blender, its bones renamed or not, for
``tests/test_fbx.py``: run by Blender's Python (``bpy``), never by the project's::

    BLENDER_PYTHON tools/_blender_rename.py IN.fbx OUT.fbx keep|rename SEED

Imports IN.fbx with Blender's importer and exports it to OUT.fbx with Blender's
exporter; with ``rename``, every bone first takes a meaningless name (``b<k>``, in an
order shuffled by SEED), its vertex groups and the actions' channels with it, so the
two files differ in names alone.
"""

from __future__ import annotations

import random
import sys

import bpy


def _channels(action):
    """The action's channel bags (its F-curves and groups): the action itself before
    Blender 4.4's slotted actions, each strip's bags after."""
    if hasattr(action, "fcurves"):
        return [action]
    return [bag for layer in action.layers for strip in layer.strips for bag in strip.channelbags]


def main(src: str, out: str, mode: str, seed: int) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.fbx(filepath=src)
    if mode == "rename":
        names: dict[str, str] = {}
        for arm in (o for o in bpy.data.objects if o.type == "ARMATURE"):
            bones = list(arm.data.bones)
            order = list(range(len(bones)))
            random.Random(seed).shuffle(order)
            for k, bone in zip(order, bones, strict=True):
                names[bone.name] = f"b{k}"
            for bone in bones:
                bone.name = names[bone.name]
        # the vertex groups and the actions' paths, each by its old name (Blender
        # carries them only for the objects its rename finds)
        for obj in bpy.data.objects:
            for group in obj.vertex_groups:
                if group.name in names:
                    group.name = names[group.name]
        for action in bpy.data.actions:
            for bag in _channels(action):
                for curve in bag.fcurves:
                    for old, new in names.items():
                        key = f'pose.bones["{old}"]'
                        if curve.data_path.startswith(key):
                            curve.data_path = f'pose.bones["{new}"]' + curve.data_path[len(key) :]
                            break
                for group in bag.groups:
                    if group.name in names:
                        group.name = names[group.name]
    bpy.ops.export_scene.fbx(filepath=out, add_leaf_bones=False, bake_anim=True)


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    main(argv[0], argv[1], argv[2], int(argv[3]))
