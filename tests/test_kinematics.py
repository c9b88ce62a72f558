"""Forward kinematics, tangent-space Jacobians (finite differences) and centre of mass."""

from __future__ import annotations

import numpy as np
import pytest

from retarget import Motion, Skeleton
from retarget.core import quat
from retarget.core.kinematics import center_of_mass, forward_kinematics, jacobian, positions
from retarget.core.motion import oplus, tangent_size


def tree_skeleton():
    # root with two branches and sites, irregular offsets
    names = ("root", "a", "b", "c", "d", "e")
    parents = [-1, 0, 1, 0, 3, 4]
    rng = np.random.default_rng(7)
    return Skeleton(
        names,
        parents,
        rng.normal(size=(6, 3)),
        site_names=("b_tip", "e_tip"),
        site_parents=[2, 5],
        site_offsets=rng.normal(size=(2, 3)),
    )


def reference_fk(sk, root, rot):
    """Plain recursive FK with matrices: the definition."""
    n = sk.num_points
    pos = np.zeros((n, 3))
    mats = np.zeros((n, 3, 3))
    for p in range(n):
        local = quat.matrix_from_quat(rot[p]) if p < sk.num_joints else np.eye(3)
        if p == 0:
            pos[p], mats[p] = root, local
        else:
            a = sk.point_parents[p]
            pos[p] = pos[a] + mats[a] @ sk.point_offsets[p]
            mats[p] = mats[a] @ local
    return pos, mats


def test_fk_matches_reference_and_batches():
    sk = tree_skeleton()
    rng = np.random.default_rng(0)
    rot = quat.normalize(rng.normal(size=(3, 2, 6, 4)))
    root = rng.normal(size=(3, 2, 3))
    pos, world = forward_kinematics(sk, root, rot)
    assert pos.shape == (3, 2, 8, 3) and world.shape == (3, 2, 8, 4)
    for i in range(3):
        for k in range(2):
            p_ref, m_ref = reference_fk(sk, root[i, k], rot[i, k])
            np.testing.assert_allclose(pos[i, k], p_ref, atol=1e-12)
            np.testing.assert_allclose(quat.matrix_from_quat(world[i, k]), m_ref, atol=1e-12)


def test_fk_with_per_frame_translations():
    sk = tree_skeleton()
    rng = np.random.default_rng(1)
    rot = quat.normalize(rng.normal(size=(4, 6, 4)))
    trans = rng.normal(size=(4, 6, 3))
    pos, _ = forward_kinematics(sk, np.zeros((4, 3)), rot, trans)
    for f in range(4):
        sk_f = sk.replace(offsets=trans[f])
        np.testing.assert_allclose(pos[f], reference_fk(sk_f, np.zeros(3), rot[f])[0], atol=1e-12)


@pytest.mark.parametrize("orientation", [False, True])
def test_jacobian_matches_finite_differences(orientation):
    sk = tree_skeleton()
    rng = np.random.default_rng(2)
    rot = quat.normalize(rng.normal(size=(6, 4)))
    root = rng.normal(size=3)
    eff = sk.indices(["b_tip", "e", "c", "root"])
    jac = jacobian(sk, root, rot, eff, orientation=orientation)
    n = tangent_size(6)
    assert jac.shape == ((6 if orientation else 3) * 4, n)
    _, world0 = forward_kinematics(sk, root, rot)
    h = 1e-6
    fd = np.zeros_like(jac)
    for k in range(n):
        x = np.zeros(n)
        x[k] = h
        r1, q1 = oplus(root, rot, x)
        r2, q2 = oplus(root, rot, -x)
        p1, w1 = forward_kinematics(sk, r1, q1)
        p2, w2 = forward_kinematics(sk, r2, q2)
        fd[: 3 * len(eff), k] = ((p1[eff] - p2[eff]) / (2 * h)).ravel()
        if orientation:
            # world-frame rotation vector of the change: log(W(x) W0⁻¹)
            d1 = quat.log(quat.multiply(w1[eff], quat.conjugate(world0[eff])))
            d2 = quat.log(quat.multiply(w2[eff], quat.conjugate(world0[eff])))
            fd[3 * len(eff) :, k] = ((d1 - d2) / (2 * h)).ravel()
    np.testing.assert_allclose(jac, fd, atol=1e-7)


def test_jacobian_batched_equals_per_frame(lafan):
    m = lafan[100:104]
    eff = m.skeleton.indices(["LeftToe_end", "RightHand", "Head"])
    jac = jacobian(m.skeleton, m.root_position, m.rotations, eff, orientation=True)
    assert jac.shape == (4, 18, tangent_size(m.skeleton.num_joints))
    np.testing.assert_allclose(
        jac[2], jacobian(m.skeleton, m.root_position[2], m.rotations[2], eff, orientation=True)
    )


def test_center_of_mass():
    sk = tree_skeleton()
    pos, _ = forward_kinematics(sk, np.zeros(3), quat.identity(6))
    com = center_of_mass(pos, [1.0, 3.0], [0, 3], [1, 4], [0.5, 0.25])
    seg1 = 0.5 * (pos[0] + pos[1])
    seg2 = 0.75 * pos[3] + 0.25 * pos[4]
    np.testing.assert_allclose(com, (seg1 + 3 * seg2) / 4)
    with pytest.raises(ValueError, match="positive total mass"):
        center_of_mass(pos, [0.0], [0], [1], [0.5])


def test_positions_of_a_motion(mocapbank):
    pos = positions(mocapbank)
    assert pos.shape == (455, mocapbank.skeleton.num_points, 3)
    # bone lengths are kept in every frame
    sk = mocapbank.skeleton
    lengths = np.linalg.norm(pos[:, 1:] - pos[:, sk.point_parents[1:]], axis=-1)
    np.testing.assert_allclose(
        lengths, np.broadcast_to(sk.bone_lengths()[1:], lengths.shape), atol=1e-9
    )


def test_motion_with_translations_round_trips_through_fk():
    sk = tree_skeleton()
    rng = np.random.default_rng(3)
    trans = np.broadcast_to(sk.offsets, (5, 6, 3)).copy()
    trans[:, 2] += rng.normal(size=(5, 3))
    m = Motion(sk, np.zeros((5, 3)), quat.identity((5, 6)), 30, translations=trans)
    np.testing.assert_allclose(
        positions(m)[:, 2], positions(m.replace(translations=None))[:, 1] + trans[:, 2]
    )


def test_restricted_skeleton_gives_the_same_points(lafan):
    """FK of the paths to a few points (a joint, an end site) on the restricted skeleton
    equals the whole skeleton's FK of those points."""
    sk = lafan.skeleton
    site = sk.site_names[sk.site_parents.tolist().index(sk.index("LeftToe"))]
    points = ["LeftToe", site, "RightFoot"]
    sub, joints = sk.restricted(points)
    assert sub.num_joints == len(joints) < sk.num_joints and sub.site_names == (site,)
    assert [sk.names[j] for j in joints] == list(sub.names)
    np.testing.assert_array_equal(sub.offsets, sk.offsets[joints])
    frames = lafan[::97]
    whole = forward_kinematics(sk, frames.root_position, frames.rotations)
    part = forward_kinematics(sub, frames.root_position, frames.rotations[:, joints])
    for name in points:
        for a, b in zip(part, whole, strict=True):
            np.testing.assert_allclose(a[:, sub.index(name)], b[:, sk.index(name)], atol=1e-12)


def test_numpy_forward_kinematics_gives_the_kernels_bits(lafan):
    """Until numba is loaded, forward kinematics of up to 2^18 numbers runs in numpy
    (a quick command never imports numba): the kernel's operations in its order, so
    the same bits, with the skeleton's offsets and with per-frame ones."""
    from retarget.core import kinematics

    sk = lafan.skeleton
    rot = np.ascontiguousarray(lafan.rotations[:300])
    root = np.ascontiguousarray(lafan.root_position[:300])
    parents = np.ascontiguousarray(sk.point_parents)
    rng = np.random.default_rng(3)
    for offsets in (
        np.ascontiguousarray(sk.point_offsets[None]),
        sk.point_offsets[None] * rng.uniform(0.5, 2.0, size=(300, sk.num_points, 1)),
    ):
        want = np.empty((300, sk.num_points, 3)), np.empty((300, sk.num_points, 4))
        got = np.empty_like(want[0]), np.empty_like(want[1])
        kinematics._kernels()._fk_kernel(root, rot, parents, offsets, sk.num_joints, *want)
        kinematics._fk_numpy(root, rot, parents, offsets, sk.num_joints, *got)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
