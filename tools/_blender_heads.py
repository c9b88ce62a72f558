"""Blender's own evaluation of a character's animation, for ``tests/test_fbx.py``: run
by Blender's Python (``bpy``), never by the project's::

    BLENDER_PYTHON tools/_blender_heads.py FILE ACTION FPS OUT.json FRAME...

Imports FILE (.fbx or .glb) with Blender's importer at FPS, gives every armature the
action whose name ends with ACTION, and writes, per listed frame, every pose bone's
world head (``armature.matrix_world @ pose_bone.head``) in Blender's axes (Z up) to
OUT.json: ``{"bones": [...], "heads": [[[x, y, z], ...], ...]}``.
"""

from __future__ import annotations

import json
import sys

import bpy


def main(path: str, action: str, fps: float, out: str, frames: list[int]) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = round(fps), round(fps) / fps
    if path.lower().endswith(".fbx"):
        bpy.ops.import_scene.fbx(filepath=path)
    else:
        bpy.ops.import_scene.gltf(filepath=path)
    act = [a for a in bpy.data.actions if a.name.endswith(action)]
    if not act:
        raise SystemExit(f"no action {action!r}: {[a.name for a in bpy.data.actions]}")
    arms = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    for arm in arms:
        arm.animation_data_create()
        arm.animation_data.action = act[0]
        if hasattr(arm.animation_data, "action_slot") and act[0].slots:
            arm.animation_data.action_slot = act[0].slots[0]
    start = int(act[0].frame_range[0])
    bones, heads = [], []
    for arm in arms:
        bones += [b.name for b in arm.pose.bones]
    for f in frames:
        scene.frame_set(start + f)
        heads.append([list(arm.matrix_world @ b.head) for arm in arms for b in arm.pose.bones])
    with open(out, "w") as fh:
        json.dump({"bones": bones, "heads": heads, "start": start}, fh)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], a[1], float(a[2]), a[3], [int(x) for x in a[4:]])
