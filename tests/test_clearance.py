"""The hands kept off the posed body surface by the least departure (clearance.py).

On a body whose answer is known: the LAFAN performer's skeleton with a cylinder for a
torso, skinned to its chest, narrower than the arms swing, and a ring of vertices round
each hand. After the pass no hand vertex is inside the cylinder; where one was, the
nearest hand vertex ends at the clearance (it departs until it touches, no further);
where the hands never came near, the arms are the method's exactly; and the departure
reported is the arms' own change of direction.
"""

from __future__ import annotations

import numpy as np
import pytest

from retarget.core import quat
from retarget.core.kinematics import forward_kinematics, rest_pose
from retarget.humanoid.roles import find_roles, height
from retarget.io.gltf import SkinMesh
from retarget.targets.character.clearance import (
    BAND,
    CLEARANCE,
    arm_departure,
    clear_hands,
)
from retarget.targets.character.skin import arm_joints
from retarget.targets.character.surface import hands_in_surface, signed_distances


def _cylinder(a, b, radius, around=32, rings=12):
    """A closed cylinder from ``a`` to ``b`` (3,): vertices (V, 3) and outward-wound
    triangles (T, 3)."""
    axis = (b - a) / np.linalg.norm(b - a)
    u = np.cross(axis, [0.0, 0.0, 1.0] if abs(axis[2]) < 0.9 else [1.0, 0.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    t = np.linspace(0.0, 1.0, rings)
    phi = 2 * np.pi * np.arange(around) / around
    ring = radius * (np.cos(phi)[:, None] * u + np.sin(phi)[:, None] * v)
    verts = [a + s * (b - a) + ring for s in t]
    side = np.concatenate(verts)
    tris = []
    for r in range(rings - 1):
        for k in range(around):
            p0, p1 = r * around + k, r * around + (k + 1) % around
            q0, q1 = p0 + around, p1 + around
            tris += [(p0, p1, q1), (p0, q1, q0)]
    n = len(side)
    caps = np.array([a, b])
    for k in range(around):  # the ends: fans round their centres
        k1 = (k + 1) % around
        tris.append((n, k1, k))
        tris.append((n + 1, (rings - 1) * around + k, (rings - 1) * around + k1))
    return np.concatenate([side, caps]), np.asarray(tris, np.intp)


@pytest.fixture(scope="module")
def body(lafan):
    return cylinder_body(lafan)


def cylinder_body(lafan):
    """The walk's first 300 frames, and a mesh: a cylinder round the spine skinned to
    Spine1 (reaching below the hips), a quarter of the hands' swing inside it, and
    rings round the hands."""
    motion = lafan[:300]
    sk = motion.skeleton
    rest, _ = rest_pose(sk)
    chest = sk.index("Spine1")
    a, b = rest[sk.index("Hips")], rest[sk.index("Neck")]
    pos, rot = forward_kinematics(sk, motion.root_position, motion.rotations)
    axis = (b - a) / np.linalg.norm(b - a)
    radial = []
    for hand in ("LeftHand", "RightHand"):  # each hand in the chest's rest frame
        local = quat.rotate(quat.conjugate(rot[:, chest]), pos[:, sk.index(hand)] - pos[:, chest])
        local = local + rest[chest] - a
        along = local @ axis
        inside_span = (along > 0.1 * np.linalg.norm(b - a)) & (along < np.linalg.norm(b - a))
        radial.append(np.linalg.norm(local - along[:, None] * axis, axis=1)[inside_span])
    radius = float(np.quantile(np.concatenate(radial), 0.25))
    # (longer than the trunk: its rims, whose normals are averaged, beyond the hands)
    cyl, tris = _cylinder(a - 0.4 * (b - a), b + 0.2 * (b - a), radius)
    hands = []
    for hand in ("LeftHand", "RightHand"):
        phi = 2 * np.pi * np.arange(12) / 12
        ring = 3.0 * np.stack([np.zeros(12), np.cos(phi), np.sin(phi)], axis=1)
        hands.append(rest[sk.index(hand)] + ring)
    verts = np.concatenate([cyl, *hands])
    joints = np.full((len(verts), 4), -1, np.intp)
    joints[: len(cyl), 0] = chest
    joints[len(cyl) : len(cyl) + 12, 0] = sk.index("LeftHand")
    joints[len(cyl) + 12 :, 0] = sk.index("RightHand")
    weights = np.zeros((len(verts), 4))
    weights[:, 0] = 1.0
    mesh = SkinMesh(verts, joints, weights, tris, np.zeros(len(verts), bool))
    return motion, mesh, tris, len(cyl)


def _hand_signed(motion, mesh, tris, n_body):
    """Per frame, the smallest signed distance of a hand vertex to the cylinder."""
    sk = motion.skeleton
    rest, _ = rest_pose(sk)
    pos, rot = forward_kinematics(sk, motion.root_position, motion.rotations)
    posed = mesh.posed(pos, rot, rest)
    return np.array([signed_distances(p[n_body:], p[tris])[0].min() for p in posed])


def test_hands_end_outside_touching_where_they_were_inside(body):
    motion, mesh, tris, n_body = body
    tall = height(motion.skeleton, find_roles(motion.skeleton))
    before = _hand_signed(motion, mesh, tris, n_body)
    inside = before < 0.0
    assert 0.1 < inside.mean() < 0.9  # (the body is as meant: in on some frames)
    cleared = clear_hands(motion, mesh)
    assert cleared is not None
    after = _hand_signed(cleared.motion, mesh, tris, n_body)
    # no vertex inside, anywhere; and where one was, the nearest ends at the clearance
    # (departing until it touches: the least)
    assert after.min() > -1e-3 * tall
    over = (after[inside] - CLEARANCE * tall) / tall  # (measured: 0.04 % at most)
    assert np.abs(over).max() < 1e-3 and abs(over.mean()) < 2e-4
    assert hands_in_surface(cleared.motion, mesh, every=1).share == 0.0
    # far from the body (beyond the band on every round), the arms are the method's
    far = before > 2 * BAND * tall
    assert far.any()
    np.testing.assert_allclose(cleared.motion.rotations[far], motion.rotations[far], atol=1e-12)
    # the departure reported is the arms' change of direction
    np.testing.assert_allclose(cleared.departure, arm_departure(cleared.motion, motion))
    assert cleared.departure[inside].min() > 0.5 and cleared.departure[far].max() < 1e-5
    # the legs, the root and the trunk did not move
    rest = [j for j in range(motion.skeleton.num_joints) if j not in arm_joints(motion.skeleton)]
    assert len(rest) == 14  # (the hips, legs, spine, neck and head)
    np.testing.assert_allclose(
        cleared.motion.rotations[:, rest], motion.rotations[:, rest], atol=1e-12
    )
    np.testing.assert_allclose(cleared.motion.root_position, motion.root_position, atol=1e-12)


def test_arm_departure_of_a_turned_forearm(lafan):
    """A forearm turned 20° about an axis across it: the departure is 20° on those frames."""
    motion = lafan[:10]
    sk = motion.skeleton
    elbow = sk.index("RightForeArm")
    pos, rot = forward_kinematics(sk, motion.root_position, motion.rotations)
    bone = pos[:, sk.index("RightHand")] - pos[:, elbow]
    across = np.cross(bone, [0.0, 1.0, 0.0])
    across /= np.linalg.norm(across, axis=1, keepdims=True)
    turn = quat.quat_from_rotvec(np.radians(20.0) * across)  # world, about the elbow
    local = quat.multiply(quat.conjugate(rot[:, elbow]), quat.multiply(turn, rot[:, elbow]))
    rotations = motion.rotations.copy()
    rotations[:, elbow] = quat.multiply(rotations[:, elbow], local)
    turned = motion.replace(rotations=rotations)
    np.testing.assert_allclose(arm_departure(turned, motion), 20.0, atol=1e-6)
