"""Blender side of ``tools/verify_blender.py``: import BVH files with Blender's importer.

Run by the Python of the Blender venv (``.venv-blender``, which has ``bpy``),
never by the project's own venv::

    .venv-blender/bin/python tools/_blender_import.py JOB.json

``JOB.json`` holds ``{"clips": [{"bvh": ..., "frames": [...], "out": ...}, ...]}``.
For every clip the scene is reset to factory settings, the file is imported with
``bpy.ops.import_anim.bvh`` (options in :data:`IMPORT_OPTIONS`), and for every
listed BVH frame ``f`` the scene is set to Blender frame ``f + 1`` and the world
head position of every pose bone, ``armature.matrix_world @ pose_bone.head``, is
read. The result goes to ``out`` (.npz) with the keys

``bones``      bone names, in the armature's order, shape (B,)
``parents``    each bone's parent name ("" for a root), shape (B,)
``frames``     the BVH frames read, shape (K,)
``heads``      world head positions in Blender's axes, shape (K, B, 3)
``rest_heads`` rest (edit-bone) head positions, shape (B, 3)
``version``    Blender's version string
``options``    the importer options, as JSON

and, so the caller can re-evaluate Blender's keyed values in double precision,
``modes`` (each pose bone's rotation mode), ``connect`` (use_connect),
``rest_matrices`` (bone.matrix_local, (B, 4, 4)), ``matrix_world`` (4, 4),
``locations`` and ``eulers`` (the evaluated pose channels, (K, B, 3)).

A clip that Blender cannot import gets an .npz with only ``error`` (the
traceback) and ``version``, so the caller can report it and go on.
"""

from __future__ import annotations

import json
import sys
import traceback

import bpy
import numpy as np

# Option names checked against bpy 5.0.1 by introspection of
# ``bpy.ops.import_anim.bvh.get_rna_type().properties``: target, global_scale,
# frame_start, use_fps_scale, update_scene_fps, update_scene_duration,
# use_cyclic, rotate_mode, axis_forward, axis_up (plus filepath, filter_glob).
IMPORT_OPTIONS = {
    "target": "ARMATURE",
    "global_scale": 1.0,
    "rotate_mode": "NATIVE",
    "axis_forward": "-Z",
    "axis_up": "Y",
    "use_fps_scale": False,
    "update_scene_fps": False,
    "update_scene_duration": True,
    "use_cyclic": False,
    "frame_start": 1,
}


def _check_options() -> None:
    """Fail loudly if this Blender's operator lacks an option we set."""
    props = {p.identifier for p in bpy.ops.import_anim.bvh.get_rna_type().properties}
    missing = sorted(set(IMPORT_OPTIONS) - props)
    if missing:
        raise RuntimeError(f"import_anim.bvh has no option(s) {missing}; it has {sorted(props)}")


def _import_clip(bvh: str, frames: list[int]) -> dict[str, np.ndarray]:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    if "io_anim_bvh" not in bpy.context.preferences.addons:
        import addon_utils  # importable only once bpy is

        addon_utils.enable("io_anim_bvh", default_set=True)
    _check_options()
    before = set(bpy.data.objects)
    result = bpy.ops.import_anim.bvh(filepath=bvh, **IMPORT_OPTIONS)
    if "FINISHED" not in result:
        raise RuntimeError(f"import_anim.bvh returned {result}")
    armatures = [ob for ob in bpy.data.objects if ob not in before and ob.type == "ARMATURE"]
    if len(armatures) != 1:
        raise RuntimeError(f"expected one new armature, found {len(armatures)}")
    arm = armatures[0]
    scene = bpy.context.scene
    pbones = list(arm.pose.bones)
    heads = np.empty((len(frames), len(pbones), 3))
    locations = np.empty_like(heads)
    eulers = np.empty_like(heads)
    for k, f in enumerate(frames):
        scene.frame_set(f + 1)  # BVH frame f is Blender frame f + frame_start
        mw = arm.matrix_world
        for b, pb in enumerate(pbones):
            heads[k, b] = tuple(mw @ pb.head)
            locations[k, b] = tuple(pb.location)
            eulers[k, b] = tuple(pb.rotation_euler)
    bones = arm.data.bones
    mw = arm.matrix_world
    return {
        "bones": np.array([pb.name for pb in pbones]),
        "parents": np.array([pb.parent.name if pb.parent else "" for pb in pbones]),
        "frames": np.asarray(frames, dtype=np.int64),
        "heads": heads,
        "rest_heads": np.array([tuple(mw @ bones[pb.name].head_local) for pb in pbones]),
        "matrix_world": np.array([list(row) for row in mw]),
        "modes": np.array([pb.rotation_mode for pb in pbones]),
        "connect": np.array([pb.bone.use_connect for pb in pbones]),
        "rest_matrices": np.array([[list(r) for r in pb.bone.matrix_local] for pb in pbones]),
        "locations": locations,
        "eulers": eulers,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as fh:
        job = json.load(fh)
    version = bpy.app.version_string
    print(f"Blender {version} (bpy), importing {len(job['clips'])} clip(s)", flush=True)
    for clip in job["clips"]:
        try:
            data = _import_clip(clip["bvh"], [int(f) for f in clip["frames"]])
            data["options"] = np.array(json.dumps(IMPORT_OPTIONS))
        except Exception:  # report per clip, keep going
            data = {"error": np.array(traceback.format_exc())}
            last = traceback.format_exc().strip().splitlines()[-1]
            print(f"FAILED to import {clip['bvh']}: {last}", file=sys.stderr, flush=True)
        data["version"] = np.array(version)
        np.savez(clip["out"], **data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
