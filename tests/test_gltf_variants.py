"""glTF characters as other exporters write them (issue 41, items 1 and 2).

Each shared glTF character is made another way by ``tests/gltf_variants.py`` (its own
reading of the file's bytes; meshoptimizer's encoders for the compressed one): names
gone or meaningless, node matrices, a Z-up bind space in centimetres, a prop's joint
under a second root, sparse accessors, weights that do not add up to 1,
``KHR_mesh_quantization``, ``EXT_meshopt_compression``. Read, each must be the same
character: the same skeleton and rest pose, the same animations through our forward
kinematics, the same surface, the same humanoid roles, and the same retargeting
result; written, every GLB passes the Khronos glTF-Validator with no error, and
Blender and three.js play it where our forward kinematics puts it. A file whose
vertices only Draco holds is refused in one line.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import warnings
from pathlib import Path

import gltf_variants as variants
import numpy as np
import pytest
from conftest import missing

from retarget.core.kinematics import forward_kinematics, rest_pose
from retarget.humanoid.roles import find_roles, height
from retarget.io import read_motion
from retarget.io.gltf import character_motion, read_character, skin_points

CHARACTERS = (
    "kaykit_Knight.glb",
    "RobotExpressive.glb",
    "quaternius_UAL_Standard/AnimationLibrary_Godot_Standard.gltf",
)
VARIANTS = (
    "renamed",
    "unnamed",
    "with_matrices",
    "matrices_no_clips",
    "z_up",
    "with_prop",
    "sparse",
    "unnormalised",
    "quantized",
    "meshopt",
)
#: How far a variant may put a joint or a vertex from the original's, a share of the
#: height: 16-bit quaternions (meshopt's filter); 16-bit positions whose dequantisation
#: the float32 inverse bind matrices carry (a translation of 1e4 file units holds 1e-3).
TOLERANCE = {"meshopt": 2e-4, "quantized": 5e-4, "z_up": 1e-6}


@pytest.fixture(scope="module")
def made(data_dir, tmp_path_factory):
    """Each character's variants, made once: (character, variant) -> path."""
    folder = tmp_path_factory.mktemp("variants")
    out: dict[tuple[str, str], Path] = {}

    def get(character: str, variant: str) -> Path:
        key = (character, variant)
        if key not in out:
            src = data_dir.parent / "characters" / character
            if not src.is_file():
                missing(f"{src} not found (../shared/characters beside RETARGET_DATA)")
            doc = getattr(variants, variant)(variants.load(src))
            out[key] = variants.save(doc, folder / f"{Path(character).stem}_{variant}.glb")
        return out[key]

    return get


def _read(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_character(path)


READABLE = [
    (c, v)
    for c in CHARACTERS
    for v in VARIANTS
    if (c, v) != ("RobotExpressive.glb", "matrices_no_clips")  # (below)
]


def test_a_rig_its_clips_complete_is_refused_without_them(made):
    """RobotExpressive's feet hang from its root in the file and follow its shins only in
    its clips: without them no legs can be found, and reading says so in one line."""
    from retarget.core.errors import RetargetError

    with pytest.raises(RetargetError, match="cannot find the humanoid limbs"):
        find_roles(_read(made("RobotExpressive.glb", "matrices_no_clips")).skeleton)


@pytest.mark.parametrize(("character", "variant"), READABLE)
def test_a_variant_reads_as_the_character(character, variant, made, data_dir):
    """The skeleton (joints in the same order, the same rest pose), its roles (the same
    joints), the first animation's joints through our FK and the surface by joint (rest
    pose) of the variant are the original's, within :data:`TOLERANCE` of the height
    (1e-9 where nothing is quantised)."""
    # (without its clips a character is compared with itself without them: a rig whose
    # feet its clips carry from its shins shows it only in them)
    same = made(character, "no_clips") if variant == "matrices_no_clips" else None
    ours = _read(same or data_dir.parent / "characters" / character)
    other = _read(made(character, variant))
    a, b = ours.skeleton, other.skeleton
    assert b.num_joints == a.num_joints and list(other.nodes) == list(ours.nodes)
    tall = height(a)
    tol = TOLERANCE.get(variant, 1e-9) * tall
    np.testing.assert_allclose(rest_pose(b)[0], rest_pose(a)[0], atol=tol)
    roles_a, roles_b = find_roles(a), find_roles(b)
    assert dict(roles_b.points) == dict(roles_a.points)
    if other.animations:
        m_a, m_b = character_motion(ours, 0), character_motion(other, 0)
        p_a, _ = forward_kinematics(a, m_a.root_position, m_a.rotations, m_a.translations)
        p_b, _ = forward_kinematics(b, m_b.root_position, m_b.rotations, m_b.translations)
        np.testing.assert_allclose(p_b, p_a, atol=tol)
    else:
        assert variant == "matrices_no_clips"
    s_a, s_b = skin_points(ours), skin_points(other)
    assert s_b.keys() == s_a.keys()
    for k in s_a:  # (vertex order kept: the same meshes, primitive by primitive)
        np.testing.assert_allclose(s_b[k], s_a[k], atol=max(tol, 1e-6 * tall))


@pytest.mark.parametrize("variant", ["renamed", "unnamed"])
@pytest.mark.parametrize("character", CHARACTERS)
def test_renaming_every_joint_changes_no_result(character, variant, made, data_dir, lafan):
    """The walk onto the character by hierarchical editing (the whole pipeline: mapping,
    roles, the hands kept out of the body) gives the same rotations within 1e-9 with
    every node renamed or unnamed: the body is read from its shape. (RobotExpressive
    without its names read its shins as thighs: its long feet drew the middle of the
    leg's bone path below the knee.)"""
    import retarget as rt

    walk = lafan[:200]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = rt.retarget(walk, str(data_dir.parent / "characters" / character), "hierarchical")
        other = rt.retarget(walk, str(made(character, variant)), "hierarchical")
    np.testing.assert_allclose(other.output.rotations, ours.output.rotations, atol=1e-9)
    np.testing.assert_allclose(other.output.root_position, ours.output.root_position, atol=1e-9)


def _khronos(*files: Path) -> list[dict]:
    from test_gltf import khronos_validate

    return khronos_validate(*files)


@pytest.fixture(scope="module")
def written(made, data_dir, tmp_path_factory):
    """``retarget run lafan_walk.bvh --frames 0:120 --target VARIANT -o OUT.glb`` (and the
    same run to a BVH, our FK's reference), made once per (character, variant)."""
    folder = tmp_path_factory.mktemp("written")
    out: dict[tuple[str, str], tuple[Path, Path]] = {}

    def get(character: str, variant: str) -> tuple[Path, Path]:
        key = (character, variant)
        if key not in out:
            stem = f"{Path(character).stem}_{variant}"
            glb, bvh = folder / f"{stem}.glb", folder / f"{stem}.bvh"
            base = [sys.executable, "-m", "retarget.cli", "run", str(data_dir / "lafan_walk.bvh")]
            base += ["--frames", "0:120", "--method", "hierarchical"]
            for to in (glb, bvh):
                run = subprocess.run(
                    [*base, "--target", str(made(character, variant)), "-o", str(to)],
                    capture_output=True,
                    text=True,
                )
                assert run.returncode == 0, run.stderr
            out[key] = (glb, bvh)
        return out[key]

    return get


def test_every_written_glb_passes_the_validator(written):
    """Every variant of every character, written with the walk: no error in the Khronos
    glTF-Validator, whatever the input carried (a meshopt-compressed input is written
    decompressed, the extension dropped with a warning; weights not adding up to 1
    written normalised; keyed nodes placed by TRS, not a matrix; joints under two roots
    given one above them)."""
    files = [written(c, v)[0] for c, v in READABLE]
    reports = _khronos(*files)
    bad = {f.name: r["messages"][:3] for f, r in zip(files, reports, strict=True) if r["errors"]}
    assert not bad, bad


@pytest.mark.parametrize("variant", ["z_up", "quantized", "meshopt", "matrices_no_clips"])
def test_blender_plays_a_written_variant_as_our_fk(variant, written, tmp_path):
    """Blender's glTF importer reads the knight's variants as written with the walk:
    every bone's head where our FK of the same run puts its joint, within 1e-4 of the
    height, on every 10th frame."""
    from test_fbx import assert_blender_plays_as_our_fk

    from retarget.core.errors import RetargetError
    from retarget.io.blender import blender_python

    try:
        blender = blender_python()
    except RetargetError as exc:
        missing(str(exc))
    glb, bvh = written(CHARACTERS[0], variant)
    assert_blender_plays_as_our_fk(blender, glb, bvh, 10, tmp_path)


@pytest.mark.parametrize("variant", ["z_up", "quantized", "meshopt", "with_prop"])
def test_three_js_plays_a_written_variant_as_our_fk(variant, written, made, browser):
    """three.js (GLTFLoader, AnimationMixer, headless Chromium) plays the walk written onto
    the knight's variants with every joint node where our FK puts it, within 1e-4 of the
    height, on 12 frames."""
    from test_gltf import _THREE_EVAL, THREE

    if not THREE.is_file():
        missing(f"{THREE} not built: run make")
    glb, bvh = written(CHARACTERS[0], variant)
    char = _read(made(CHARACTERS[0], variant))
    motion = read_motion(bvh)  # (the same run: the character's skeleton, Y up, metres)
    frames = np.unique(np.linspace(0, motion.num_frames - 1, 12).round().astype(int))
    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    page.add_script_tag(path=str(THREE))
    got = np.array(
        page.evaluate(
            _THREE_EVAL,
            [
                base64.b64encode(glb.read_bytes()).decode(),
                [int(n) for n in char.nodes],
                (frames / motion.fps).tolist(),
                "lafan_walk",
            ],
        )
    )
    page.close()
    pos, _ = forward_kinematics(motion.skeleton, motion.root_position, motion.rotations)
    tall = np.ptp(pos[0], axis=0).max()
    joints = [motion.skeleton.names.index(n) for n in char.skeleton.names]
    np.testing.assert_allclose(got, pos[frames][:, joints], atol=1e-4 * tall)


@pytest.mark.parametrize("command", ["info", "run"])
def test_a_draco_only_mesh_is_refused_in_one_line(command, made, data_dir, tmp_path):
    """A character whose vertices only a Draco stream holds: exit 2 and one line saying
    so (the extension named), not zeros read as vertices."""
    path = made(CHARACTERS[0], "draco_declared")
    args = [str(path)] if command == "info" else [
        str(data_dir / "lafan_walk.bvh"), "--frames", "0:10", "--target", str(path),
        "-o", str(tmp_path / "out.glb"),
    ]  # fmt: skip
    run = subprocess.run(
        [sys.executable, "-m", "retarget.cli", command, *args], capture_output=True, text=True
    )
    assert run.returncode == 2, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("retarget: error")]
    assert len(lines) == 1 and "KHR_draco_mesh_compression" in lines[0], run.stderr
    assert "Traceback" not in run.stderr


def test_batch_onto_a_folder_of_characters(made, data_dir, tmp_path):
    """``retarget batch CLIPS --targets FOLDER --out DIR``: every clip onto every
    character of the folder, each into ``DIR/<character>/`` (a GLB per clip, or with
    ``--one-file`` one GLB of every clip), each passing the validator; a character that
    cannot be read (a Draco-only mesh) is one line and exit 1, the others done."""
    from retarget.io import write_bvh

    walk = read_motion(data_dir / "lafan_walk.bvh")
    clips, folder = tmp_path / "clips", tmp_path / "characters"
    clips.mkdir()
    folder.mkdir()
    write_bvh(clips / "a.bvh", walk[:40])
    write_bvh(clips / "b.bvh", walk[300:340])
    for character in CHARACTERS[:2]:
        src = made(character, "renamed")
        (folder / f"{Path(character).stem}.glb").write_bytes(src.read_bytes())
    (folder / "broken.glb").write_bytes(made(CHARACTERS[0], "draco_declared").read_bytes())
    (folder / "notes.txt").write_text("not a character")
    base = [sys.executable, "-m", "retarget.cli", "batch", str(clips / "*.bvh"), "--targets"]
    base += [str(folder), "--method", "copy", "--workers", "1", "--no-progress"]
    for out, extra in ((tmp_path / "each", []), (tmp_path / "one", ["--one-file"])):
        run = subprocess.run([*base, "--out", str(out), *extra], capture_output=True, text=True)
        assert run.returncode == 1, run.stderr
        failed = [ln for ln in run.stderr.splitlines() if ln.strip().startswith("failed:")]
        assert len(failed) == 1 and "broken.glb" in failed[0] and "Draco" in failed[0]
        assert "Traceback" not in run.stderr
    stems = [Path(c).stem for c in CHARACTERS[:2]]
    files = [tmp_path / "each" / s / f"{c}.glb" for s in stems for c in ("a", "b")]
    files += [tmp_path / "one" / s / f"{s}.glb" for s in stems]
    assert all(f.is_file() for f in files), [f for f in files if not f.is_file()]
    assert not (tmp_path / "each" / "broken").exists() or not any(
        (tmp_path / "each" / "broken").glob("*.glb")
    )
    one = _read(tmp_path / "one" / stems[0] / f"{stems[0]}.glb")
    assert one.animations[-2:] == ("a", "b")
    reports = _khronos(*files)
    assert [r["errors"] for r in reports] == [0] * len(files)
