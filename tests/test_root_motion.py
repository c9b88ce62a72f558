"""Root motion wherever a file puts it (issue 40, item 1).

The same clip in three layouts (:mod:`root_layouts`): a static reference joint above
the hips with 6 channels on every joint; a floor-level root carrying the travel along
the floor and the heading, the hips the rest; the floor root carrying it all. Every
method carries the body's travel on each, and gives the same result on each.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import root_layouts

from retarget.core.kinematics import positions
from retarget.humanoid.roles import find_roles, height
from retarget.humanoid.travel import mover, moving_joints, travel_on_root
from retarget.io import read_bvh, write_bvh
from retarget.pipeline import retarget

FRAMES = 300
METHODS = ("copy", "hierarchical", "omr", "puppetry")


@pytest.fixture(scope="module")
def layouts(data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("layouts")
    src = data_dir / "lafan_walk.bvh"
    out = {"original": read_bvh(src)[:FRAMES]}
    for name in root_layouts.LAYOUTS:
        path = root_layouts.rewrite(src, name, folder / f"{name}.bvh", frames=FRAMES)
        out[name] = read_bvh(path)
    return out


def _by_name(motion, names):
    return motion.skeleton.indices(list(names))


@pytest.mark.parametrize("layout", root_layouts.LAYOUTS)
def test_every_layout_is_the_same_motion(layouts, layout):
    """The fixtures themselves: every joint of the original where each layout puts it."""
    a, b = layouts["original"], layouts[layout]
    pa, pb = positions(a), positions(b)
    names = a.skeleton.point_names
    idx = [b.skeleton.point_names.index(n) for n in names]
    assert np.abs(pb[:, idx] - pa).max() < 1e-4  # (cm: the text's six decimals)


@pytest.mark.parametrize(
    ("layout", "moving"),
    [("original", []), ("reference", ["Hips"]), ("floor_root", ["Hips"]), ("floor_root_all", [])],
)
def test_which_joint_moves_the_body(layouts, layout, moving):
    m = layouts[layout]
    assert [m.skeleton.names[j] for j in moving_joints(m)] == moving
    assert m.skeleton.names[mover(m)] == (moving[-1] if moving else m.skeleton.names[0])


@pytest.mark.parametrize("layout", root_layouts.LAYOUTS)
def test_travel_on_root_keeps_every_joint_below_the_hips(layouts, layout):
    m = layouts[layout]
    folded = travel_on_root(m)
    roles = find_roles(m.skeleton)
    parents = m.skeleton.point_parents
    below = [roles["hips"]]
    for p in range(m.skeleton.num_points):  # (the root's other children move with it)
        if int(parents[p]) in below:
            below.append(p)
    assert len(below) > 20
    assert np.abs(positions(folded)[:, below] - positions(m)[:, below]).max() < 1e-9
    assert not moving_joints(folded)
    if layout == "reference":  # the studio's constant 6 channels are offsets again
        assert folded.translations is None
        top = np.linalg.norm(np.diff(folded.root_position[:, [0, 2]], axis=0), axis=1).sum()
        assert top > 100.0  # cm: the root now travels as the hips do


def test_travel_on_root_leaves_a_clip_whose_root_moves_as_it_is(layouts):
    m = layouts["original"]
    assert travel_on_root(m) is m


def _hips_path(motion) -> float:
    roles = find_roles(motion.skeleton)
    p = positions(motion)[:, roles["hips"]]
    up = {"y": 1, "z": 2}[motion.skeleton.up or "y"]
    flat = np.delete(np.diff(p, axis=0), up, axis=1)
    return float(np.linalg.norm(flat, axis=1).sum() / height(motion.skeleton, roles))


@pytest.mark.parametrize("method", METHODS)
def test_every_method_carries_the_travel_of_every_layout(layouts, method):
    """Onto ``blubby`` (made from each source's own rig, so its root is the layout's
    too): the hips travel as far as the source's, in heights, within the acceptance's
    0.5-2, and every layout gives the one result the original gives."""
    results = {}
    for name in ("original", *root_layouts.LAYOUTS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = retarget(layouts[name], "blubby", method)
        results[name] = out
        assert out.report["source_travel"] == ("root" if name == "floor_root_all" else "Hips")
        ratio = out.report["measures"]["travel_ratio"]
        assert 0.5 <= ratio <= 2.0, (name, ratio)
        assert abs(_hips_path(out.output) / _hips_path(layouts[name]) - ratio) < 1e-6
    ref = results["reference"]
    for name in ("floor_root", "floor_root_all"):
        a, b = ref.output, results[name].output
        pa = positions(a)[:, _by_name(a, ["Hips", "LeftFoot", "RightHand", "Head"])]
        pb = positions(b)[:, _by_name(b, ["Hips", "LeftFoot", "RightHand", "Head"])]
        assert np.abs(pa - pb).max() < 1e-3 * height(a.skeleton), name  # (the text's decimals)


def test_a_target_with_a_reference_joint_above_its_hips(layouts, tmp_path):
    """Onto a file of the source's own rig (the same hierarchy): the method's body
    starts at the hips; the joints above come back at rest, the root placed under the
    hips as the method moved them."""
    m = layouts["reference"]
    path = write_bvh(tmp_path / "rig.bvh", m[:1])
    for method in ("hierarchical", "omr"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = retarget(m, path, method)
        assert out.output.skeleton.names == m.skeleton.names
        assert 0.5 <= out.report["measures"]["travel_ratio"] <= 2.0
        assert out.report["measures"]["skate_ratio"] <= 1.2
        root = out.output.rotations[:, 0]
        assert np.allclose(np.abs(root[:, 0]), 1.0)  # the reference joint at rest


def test_map_says_which_joint_moves_the_body(layouts, tmp_path, capsys):
    from retarget.cli import main

    for name, joint in (("reference", "Hips"), ("floor_root_all", "root")):
        path = write_bvh(tmp_path / f"{name}.bvh", layouts[name])
        assert main(["map", str(path), str(path)]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        assert first.endswith(f"the body moves by {joint!r}"), first


@pytest.mark.parametrize("layout", ["reference", "floor_root"])
def test_renamed_joints_move_the_body_alike(layouts, layout):
    """Every joint renamed to a meaningless name: the joint that moves the body is found
    from the motion and the hierarchy, not the names, and the result is the same."""
    import dataclasses

    m = layouts[layout]
    sk = m.skeleton
    renamed = dataclasses.replace(
        sk,
        names=tuple(f"j{k}" for k in range(sk.num_joints)),
        site_names=tuple(f"s{k}" for k in range(sk.num_sites)),
    )
    other = m.replace(skeleton=renamed)
    assert mover(other) == mover(m) and mover(m) == sk.index("Hips")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = retarget(m, "blubby", "omr").output
        b = retarget(other, "blubby", "omr").output
    np.testing.assert_allclose(positions(b), positions(a), atol=1e-9)


def test_a_live_stream_of_a_floor_root_rig(layouts):
    """``retarget serve --method omr`` (:class:`OMRLive`) with a performer whose travel is
    on a floor-level root above the hips: its frames retarget as the same motion on a
    hips-rooted rig does, and the character's root comes back under its hips."""
    from retarget.core.frames import PoseFrame
    from retarget.humanoid.characters import make_character
    from retarget.online.stream import OMRLive

    def live(motion):
        character = make_character(motion.skeleton, preset="blubby")
        method = OMRLive(motion.skeleton, character, fps=motion.fps)
        frames = [
            method.step(PoseFrame(motion.root_position[f], motion.rotations[f])) for f in range(120)
        ]
        root = np.array([r for r, _, _ in frames])
        rot = np.array([q for _, q, _ in frames])
        from retarget.core.motion import Motion

        return positions(Motion(character, root, rot, motion.fps)), character

    a, ca = live(layouts["original"])
    b, cb = live(layouts["floor_root_all"])
    names = ["Hips", "LeftFoot", "RightToe", "Head", "LeftHand"]
    ia = [ca.point_names.index(n) for n in names]
    ib = [cb.point_names.index(n) for n in names]
    assert np.abs(a[:, ia] - b[:, ib]).max() < 1e-3 * height(ca)
