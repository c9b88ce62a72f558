"""Motion data model and displacement maps (Lee & Shin 1999, eq. 1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from retarget import Motion, Skeleton, concatenate
from retarget.core import quat
from retarget.core.motion import ominus, ominus_joints, oplus, oplus_joints, tangent_size


def chain_skeleton(n=4):
    return Skeleton(
        names=tuple(f"j{k}" for k in range(n)),
        parents=np.arange(-1, n - 1),
        offsets=np.tile([0.0, 1.0, 0.0], (n, 1)),
        site_names=("tip",),
        site_parents=[n - 1],
        site_offsets=[[0.0, 0.5, 0.0]],
    )


def random_motion(rng, frames=10, n=4, fps=30.0):
    sk = chain_skeleton(n)
    rot = quat.normalize(rng.normal(size=(frames, n, 4)))
    return Motion(sk, rng.normal(size=(frames, 3)), rot, fps)


@given(st.integers(0, 2**32 - 1))
def test_displacement_round_trip_is_exact(seed):
    rng = np.random.default_rng(seed)
    m0 = random_motion(rng)
    m1 = random_motion(rng)
    d = m1.displacement(m0)
    assert d.shape == (10, tangent_size(4))
    back = m0.displace(d)
    np.testing.assert_allclose(back.root_position, m1.root_position, atol=1e-12)
    dots = np.abs(np.sum(back.rotations * m1.rotations, axis=-1))
    np.testing.assert_allclose(dots, 1.0, atol=1e-12)


def test_displacement_is_applied_on_the_right_and_not_summed():
    rng = np.random.default_rng(0)
    m = random_motion(rng, frames=1)
    a = np.zeros(tangent_size(4))
    b = np.zeros(tangent_size(4))
    a[3:6] = [0.5, 0.0, 0.0]
    b[3:6] = [0.0, 0.5, 0.0]
    twice = m.displace(a).displace(b).rotations[0, 0]
    expected = quat.multiply(quat.multiply(m.rotations[0, 0], quat.exp(a[3:6])), quat.exp(b[3:6]))
    np.testing.assert_allclose(twice, expected, atol=1e-14)
    summed = m.displace(a + b).rotations[0, 0]
    assert quat.angle(twice, summed) > 1e-3  # exp(a) exp(b) != exp(a + b)


def test_oplus_ominus_on_single_poses_and_batches():
    rng = np.random.default_rng(1)
    m = random_motion(rng)
    x = rng.normal(scale=0.3, size=(10, tangent_size(4)))
    root, rot = oplus(m.root_position, m.rotations, x)
    np.testing.assert_allclose(ominus(root, rot, m.root_position, m.rotations), x, atol=1e-12)
    _, q1 = oplus(m.root_position[3], m.rotations[3], x[3])
    np.testing.assert_allclose(q1, rot[3])
    with pytest.raises(ValueError, match="tangent"):
        oplus(m.root_position, m.rotations, np.zeros((10, 5)))


def test_oplus_ominus_on_a_subset_of_joints():
    rng = np.random.default_rng(3)
    m = random_motion(rng)
    joints = np.array([3, 1])
    v = rng.normal(scale=0.3, size=(10, 2, 3))
    x = np.zeros((10, tangent_size(4)))
    x[:, 3 + 3 * joints[:, None] + np.arange(3)] = v
    _, full = oplus(m.root_position, m.rotations, x)
    turned = oplus_joints(m.rotations, v, joints)
    np.testing.assert_allclose(turned, full, atol=1e-15)
    assert np.all(turned[:, [0, 2]] == m.rotations[:, [0, 2]])  # the others untouched
    np.testing.assert_allclose(ominus_joints(turned, m.rotations, joints), v, atol=1e-12)
    # one joint; one pose turned by a batch of vectors; the input is not written
    before = np.array(m.rotations)
    one = oplus_joints(m.rotations, v[:, 0], 3)
    np.testing.assert_allclose(one[:, 3], turned[:, 3])
    np.testing.assert_allclose(ominus_joints(one, m.rotations, 3), v[:, 0], atol=1e-12)
    batch = oplus_joints(m.rotations[0], v, joints)
    assert batch.shape == (10, 4, 4)
    np.testing.assert_allclose(batch[0], turned[0])
    assert np.all(m.rotations == before)


def test_motion_is_immutable_and_copies_inputs():
    rng = np.random.default_rng(2)
    root = rng.normal(size=(5, 3))
    rot = quat.normalize(rng.normal(size=(5, 4, 4)))
    m = Motion(chain_skeleton(), root, rot, 30)
    root[:] = 0.0
    rot[:] = 1.0
    assert not np.allclose(m.root_position, 0.0)
    with pytest.raises(ValueError):
        m.root_position[0, 0] = 1.0
    with pytest.raises(ValueError):
        m.rotations[0, 0, 0] = 1.0
    with pytest.raises(ValueError):
        m.skeleton.offsets[0, 0] = 1.0
    with pytest.raises(AttributeError):
        m.fps = 10  # type: ignore[misc]


def test_motion_normalises_and_rejects_bad_values():
    sk = chain_skeleton()
    rot = np.tile([2.0, 0, 0, 0], (3, 4, 1))
    m = Motion(sk, np.zeros((3, 3)), rot, 30)
    np.testing.assert_allclose(m.rotations[..., 0], 1.0)
    with pytest.raises(ValueError, match="zero, NaN"):
        Motion(sk, np.zeros((3, 3)), np.zeros((3, 4, 4)), 30)
    bad = rot.copy()
    bad[1, 2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Motion(sk, np.zeros((3, 3)), bad, 30)
    with pytest.raises(ValueError, match="shape"):
        Motion(sk, np.zeros((3, 3)), rot[:, :3], 30)
    with pytest.raises(ValueError, match="fps"):
        Motion(sk, np.zeros((3, 3)), rot, 0)


def test_slicing_and_concatenation():
    rng = np.random.default_rng(3)
    m = random_motion(rng, frames=20)
    a, b = m[:12], m[12:]
    assert (a.num_frames, b.num_frames) == (12, 8)
    both = concatenate([a, b])
    np.testing.assert_array_equal(both.rotations, m.rotations)
    np.testing.assert_array_equal(both.root_position, m.root_position)
    every_other = m[::2]
    assert every_other.fps == 15.0 and every_other.num_frames == 10
    picked = m[np.array([0, 5, 7])]
    np.testing.assert_array_equal(picked.rotations[1], m.rotations[5])
    with pytest.raises(ValueError, match="fps"):
        concatenate([m, m[::2]])


def test_resample_keeps_samples_and_interpolates_by_slerp():
    rng = np.random.default_rng(4)
    m = random_motion(rng, frames=11, fps=10.0)
    up = m.resample(20.0)
    assert up.num_frames == 21 and up.fps == 20.0
    np.testing.assert_allclose(np.abs(np.sum(up.rotations[::2] * m.rotations, -1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(up.root_position[::2], m.root_position, atol=1e-12)
    mid = quat.slerp(quat.unroll(m.rotations)[3], quat.unroll(m.rotations)[4], 0.5)
    np.testing.assert_allclose(np.abs(np.sum(up.rotations[7] * mid, -1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(up.root_position[7], 0.5 * (m.root_position[3] + m.root_position[4]))
    down = m.resample(5.0)
    assert down.num_frames == 6
    np.testing.assert_allclose(down.root_position, m.root_position[::2], atol=1e-12)
    assert np.isclose(up.duration, m.duration)


def test_skeleton_validation_and_lookup():
    sk = chain_skeleton()
    assert sk.index("tip") == 4 and sk.index("j2") == 2
    with pytest.raises(KeyError, match="available: j0, j1, j2, j3, tip"):
        sk.index("nope")
    with pytest.raises(ValueError, match="parents"):
        Skeleton(("a", "b"), [-1, 1], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="unique"):
        Skeleton(("a", "a"), [-1, 0], np.zeros((2, 3)))
    assert sk.path_length("j0", "tip") == pytest.approx(3.5)
    assert sk.path_length("tip", "j1") == pytest.approx(2.5)
    assert list(sk.chain("tip")) == [0, 1, 2, 3, 4]
    assert sk.dof_mask.all() and sk.euler_orders[1] == "ZYX"
    assert sk.scaled(2.0).path_length("j0", "tip") == pytest.approx(7.0)
