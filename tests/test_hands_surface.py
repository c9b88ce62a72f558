"""The hands' depth in the posed body surface (issue 41, item 3).

Checked on shapes whose answer is known (a closed box and one open at both ends, with
points at known depths inside and outside), on the artists' own walks (which score 0)
and against the capsule measure of the run's report (the knight's hands go into its
chest armour, which no capsule covers: the report says so now).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import missing
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget.targets.character.surface import depths_inside


def _box(size=(2.0, 3.0, 1.0), open_ends: bool = False) -> np.ndarray:
    """A box centred on 0 as (T, 3, 3) outward-wound triangles (its ±y faces left out
    with ``open_ends``: a trunk cut at the neck and the hips)."""
    h = np.asarray(size) / 2
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h
    faces = {  # outward: counter-clockwise seen from outside
        "-x": (0, 1, 3, 2), "+x": (4, 6, 7, 5), "-y": (0, 4, 5, 1),
        "+y": (2, 3, 7, 6), "-z": (0, 2, 6, 4), "+z": (1, 5, 7, 3),
    }  # fmt: skip
    tris = []
    for name, (a, b, c, d) in faces.items():
        if open_ends and name in ("-y", "+y"):
            continue
        tris += [corners[[a, b, c]], corners[[a, c, d]]]
    return np.array(tris)


@settings(max_examples=80, deadline=None)
@given(
    x=st.floats(-0.99, 0.99), y=st.floats(-1.49, 1.49), z=st.floats(-0.49, 0.49),
    far=st.floats(0.01, 3.0),
)  # fmt: skip
def test_depths_inside_a_closed_box(x, y, z, far):
    """Inside: winding number 1 and the depth the distance to the nearest face; outside
    (moved past a face): winding number 0 and depth 0."""
    box = _box()
    w, d = depths_inside(np.array([[x, y, z]]), box)
    assert w[0] == pytest.approx(1.0, abs=1e-9)
    assert d[0] == pytest.approx(min(1 - abs(x), 1.5 - abs(y), 0.5 - abs(z)), abs=1e-9)
    w, d = depths_inside(np.array([[1.0 + far, y, z]]), box)
    assert abs(w[0]) < 1e-9 and d[0] == 0.0


@settings(max_examples=80, deadline=None)
@given(
    x=st.floats(-0.99, 0.99), y=st.floats(-1.49, 1.49), z=st.floats(-0.49, 0.49),
    far=st.floats(0.01, 3.0),
)  # fmt: skip
def test_signed_distances_to_a_closed_box(x, y, z, far):
    """Inside: minus the distance to the nearest face, the nearest point on it and that
    face's outward normal; outside (moved past +x): the distance, the normal from the
    nearest point to the point (outward again); the nearest point the brute force's."""
    from retarget.targets.character.surface import signed_distances

    box = _box()
    half = np.array([1.0, 1.5, 0.5])
    p = np.array([x, y, z])
    gaps = half - np.abs(p)
    axis = int(gaps.argmin())
    d, near, normal = signed_distances(p[None], box)
    assert d[0] == pytest.approx(-gaps[axis], abs=1e-9)
    out = np.zeros(3)
    out[axis] = np.sign(p[axis])
    if np.partition(gaps, 1)[1] - gaps[axis] > 1e-6 and abs(p[axis]) > 1e-6:  # (one face)
        np.testing.assert_allclose(
            normal[0], out, atol=1e-6
        )  # (a point within 1e-7 of the face: its gap rounds)
        np.testing.assert_allclose(near[0], p + gaps[axis] * out, atol=1e-8)
    q = np.array([1.0 + far, y, z])
    d, near, normal = signed_distances(q[None], box)
    assert d[0] == pytest.approx(far, abs=1e-9)
    np.testing.assert_allclose(normal[0], [1.0, 0.0, 0.0], atol=1e-9)
    d_far, _, _ = signed_distances(q[None], box, band=0.5 * far)  # (not tested for inside)
    assert d_far[0] == pytest.approx(far, abs=1e-9)


def test_degenerate_triangles_are_points_and_segments():
    """Triangles with two or three corners at one place (a mesh's collapsed faces): the
    distance to the point or segment they are, no division by zero (the demo's
    mannequin has them)."""
    p = np.array([[0.0, 1.0, 0.0], [2.0, 0.5, 0.0], [-1.0, 0.0, 0.0]])
    tri = np.array([
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]],
        [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]],
    ])  # fmt: skip
    from retarget.targets.character.surface import signed_distances

    w, _ = depths_inside(p, tri)
    d, near, normal = signed_distances(p, tri)
    np.testing.assert_allclose(d, [1.0, np.hypot(1.0, 0.5), 1.0], atol=1e-12)
    np.testing.assert_allclose(w, 0.0, atol=1e-12)
    np.testing.assert_allclose(near, [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0)


def test_depths_inside_a_trunk_open_at_both_ends():
    """A box open at its ends (a trunk without neck and legs): its middle is inside
    (winding number over one half), a point beyond an open end is not."""
    box = _box(open_ends=True)
    w, d = depths_inside(np.array([[0.0, 0.0, 0.2], [0.0, 2.5, 0.0]]), box)
    assert w[0] > 0.5 and d[0] == pytest.approx(0.3, abs=1e-9)
    assert w[1] < 0.5 and d[1] == 0.0


@pytest.fixture(scope="module")
def characters(data_dir):
    path = data_dir.parent / "characters"
    if not path.is_dir():
        missing(f"{path} not found (../shared/characters beside RETARGET_DATA)")
    return path


@pytest.mark.parametrize(
    ("name", "walk"),
    [
        ("kaykit_Knight.glb", "Walking_A"),
        ("RobotExpressive.glb", "Walking"),
        ("quaternius_UAL_Standard/AnimationLibrary_Godot_Standard.gltf", "Walk_Loop"),
    ],
)
def test_the_artists_own_walks_score_zero(name, walk, characters):
    """Each character's own walk, as its artist made it: no hand vertex deeper than 1 %
    of the height in the body on any frame measured."""
    from retarget.io.gltf import character_motion, read_character, skin_mesh
    from retarget.targets.character.surface import hands_in_surface

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        char = read_character(characters / name)
    got = hands_in_surface(character_motion(char, walk), skin_mesh(char))
    assert got.share == 0.0, (got.depth.max(), got.limit)


def test_the_report_says_what_the_surface_says(characters, lafan):
    """The knight by hierarchical editing: the report's figure is the posed surface's
    (``measured_on``), the capsules' beside it; the capsule pass alone left its hands in
    the chest armour (which sticks out of the capsules) on half the frames, the surface
    pass on none, and its departure from the method's arms is reported per frame."""
    import retarget as rt
    from retarget.targets.character import target as character_target

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = rt.retarget(lafan[:300], str(characters / "kaykit_Knight.glb"), "hierarchical")
    hands = out.report["hands_in_body"]
    assert hands["measured_on"] == "surface"
    assert hands["share_of_frames"] == 0.0 and hands["deepest"] < hands["depth_counted"]
    assert hands["before"]["share_of_frames"] > 0.5
    assert set(hands["capsules"]) == {"share_of_frames", "deepest", "before"}
    assert hands["own_animations"]["Walking_A"] == 0.0
    departure = hands["surface_pass"]["arm_departure_deg"]
    assert len(departure["per_frame"]) == 300 and departure["max"] > 5.0
    # the capsules alone: the same run without the surface pass
    real = character_target.clear_hands
    try:
        character_target.clear_hands = lambda *a, **k: None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alone = rt.retarget(lafan[:300], str(characters / "kaykit_Knight.glb"), "hierarchical")
    finally:
        character_target.clear_hands = real
    assert alone.report["hands_in_body"]["share_of_frames"] > 0.1
    assert "surface_pass" not in alone.report["hands_in_body"]


def test_compiled_skinning_is_the_meshs_own(characters):
    """:func:`posed_vertices` (compiled) equals :meth:`SkinMesh.posed` (numpy) on the
    knight's own walk, every vertex, every frame."""
    from retarget.core.kinematics import forward_kinematics, rest_pose
    from retarget.io.gltf import character_motion, read_character, skin_mesh
    from retarget.targets.character.surface import posed_vertices

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        char = read_character(characters / "kaykit_Knight.glb")
    walk = character_motion(char, "Walking_A")
    mesh, sk = skin_mesh(char), walk.skeleton
    pos, rot = forward_kinematics(sk, walk.root_position, walk.rotations)
    rest, _ = rest_pose(sk)
    np.testing.assert_allclose(
        posed_vertices(mesh, pos, rot, rest), mesh.posed(pos, rot, rest), atol=1e-12
    )


def test_every_frame_at_once_is_each_frame_alone(characters):
    """:func:`signed_distances_posed` (every frame, in parallel, the nearest triangles
    looked for among those near each group of points) gives each frame's depths as
    :func:`depths_inside` does alone, on the knight's hands in its retargeting-free
    2H attack (its hands cross its body)."""
    from retarget.core.kinematics import forward_kinematics, rest_pose
    from retarget.io.gltf import character_motion, read_character, skin_mesh
    from retarget.targets.character.skin import hand_and_body_joints
    from retarget.targets.character.surface import (
        _body_joints,
        posed_vertices,
        signed_distances_posed,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        char = read_character(characters / "kaykit_Knight.glb")
    clip = character_motion(char, "2H_Melee_Attack_Slice")
    mesh, sk = skin_mesh(char), clip.skeleton
    main = mesh.joints[np.arange(len(mesh.joints)), mesh.weights.argmax(axis=1)]
    hands, _ = hand_and_body_joints(sk)
    tris = mesh.triangles[np.isin(main, _body_joints(clip))[mesh.triangles].all(axis=1)]
    pts = np.flatnonzero(np.isin(main, hands) & ~mesh.rigid)
    pos, rot = forward_kinematics(sk, clip.root_position, clip.rotations)
    posed = posed_vertices(mesh, pos, rot, rest_pose(sk)[0])
    groups = np.arange(len(pts)) % 2
    signed, _, _ = signed_distances_posed(posed, tris, pts, np.inf, groups=groups)
    inside = 0
    for f in range(len(posed)):
        _, alone = depths_inside(posed[f][pts], posed[f][tris])
        np.testing.assert_allclose(np.maximum(-signed[f], 0.0), alone, atol=1e-12)
        inside += int((alone > 0).any())
    assert inside > 0
