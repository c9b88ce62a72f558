"""Joint DOFs: channel angles, their tangent axes (finite differences), limits, projection."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget import Skeleton
from retarget.core import quat
from retarget.core.dofs import (
    aim_on_channels,
    channel_angles,
    channel_axes,
    channel_limits,
    clamp_to_limits,
    limit_violation,
    project_to_dofs,
    rotations_from_channel_angles,
    twist_for_hinge,
    widen_limits,
)
from retarget.core.kinematics import Pose, jacobian
from retarget.io import read_asf_amc


def mixed_skeleton():
    """Every kind of joint: full ZYX, hinge X with an axis rotation, two-channel ZX, none."""
    axes = quat.identity(5)
    axes[1] = quat.exp([0.3, -0.2, 0.9])
    axes[2] = quat.exp([-1.0, 0.4, 0.2])
    channels = (
        ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation"),
        ("Xrotation",),
        ("Zrotation", "Xrotation"),
        (),
        ("Yrotation", "Xrotation", "Zrotation"),
    )
    limits = np.tile([-np.inf, np.inf], (5, 3, 1))
    limits[1, 0] = [-0.2, 2.5]
    limits[2, 2] = [-0.5, 0.5]  # z of joint 2
    return Skeleton(
        ("r", "h", "t", "n", "b"),
        [-1, 0, 1, 2, 3],
        np.ones((5, 3)),
        channels,
        axes=axes,
        limits=limits,
    )


def test_angles_round_trip():
    sk = mixed_skeleton()
    rng = np.random.default_rng(0)
    theta = rng.uniform(-1.2, 1.2, (7, 5, 3))
    present = np.array(
        [[True] * 3, [True, False, False], [True, True, False], [False] * 3, [True] * 3]
    )
    theta = np.where(present, theta, 0.0)
    rot = rotations_from_channel_angles(sk, theta)
    np.testing.assert_allclose(channel_angles(sk, rot), theta, atol=1e-12)
    # the hinge turns about A x only
    hinge_axis = quat.rotate(sk.axes[1], [1.0, 0, 0])
    v = quat.log(rot[:, 1])
    np.testing.assert_allclose(np.cross(v, hinge_axis), 0.0, atol=1e-12)


def test_channel_axes_match_finite_differences():
    sk = mixed_skeleton()
    rng = np.random.default_rng(1)
    theta = rng.uniform(-1.0, 1.0, (4, 5, 3))
    rot = rotations_from_channel_angles(sk, theta)
    axes = channel_axes(sk, rot)
    h = 1e-6
    for k in range(3):
        d = np.zeros_like(theta)
        d[..., k] = h
        plus = rotations_from_channel_angles(sk, theta + d)
        minus = rotations_from_channel_angles(sk, theta - d)
        # q ⊗ exp(v) = plus  →  v = log(q⁻¹ plus)
        fd = (
            quat.log(quat.multiply(quat.conjugate(rot), plus))
            - quat.log(quat.multiply(quat.conjugate(rot), minus))
        ) / (2 * h)
        present = np.array([len(o) > k for o in sk.euler_orders])
        np.testing.assert_allclose(axes[..., k][:, present], fd[:, present], atol=1e-7)
        assert np.all(axes[..., k][:, ~present] == 0.0)


def test_limits_clamp_and_projection():
    sk = mixed_skeleton()
    lim = channel_limits(sk)
    assert lim[1, 0].tolist() == [-0.2, 2.5] and lim[1, 1].tolist() == [0.0, 0.0]
    assert lim[2, 1].tolist() == [-np.inf, np.inf] and lim[2, 2].tolist() == [0.0, 0.0]
    theta = np.zeros((1, 5, 3))
    theta[0, 1, 0] = 3.0  # beyond the hinge's 2.5
    rot = rotations_from_channel_angles(sk, theta)
    rot[0, 2] = quat.multiply(rot[0, 2], quat.exp([0.0, 0.3, 0.0]))  # off its ZX DOFs
    viol = limit_violation(sk, rot)
    assert viol[0, 1, 0] == pytest.approx(0.5) and viol[0, 2].max() > 0.1
    fixed = clamp_to_limits(sk, rot)
    assert limit_violation(sk, fixed).max() < 1e-12
    assert np.array_equal(
        fixed[0, [0, 3, 4]], rot[0, [0, 3, 4]]
    )  # untouched joints stay bit-identical
    proj = project_to_dofs(sk, rot)
    assert channel_angles(sk, proj)[0, 1, 0] == pytest.approx(3.0)  # projection ignores limits
    assert (
        np.abs(np.where(channel_limits(sk)[:, :, 1] == 0, channel_angles(sk, proj), 0)).max()
        < 1e-12
    )


def test_vicon_source_sits_on_its_dofs(data_dir):
    m = read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")
    sk = m.skeleton
    np.testing.assert_allclose(project_to_dofs(sk, m.rotations), m.rotations, atol=1e-12)
    axes = channel_axes(sk, m.rotations[:10])
    assert np.linalg.matrix_rank(axes[0, sk.index("ltibia")]) == 1


def test_pose_shares_fk_with_jacobian(lafan):
    m = lafan[:5]
    pose = Pose.of(m.skeleton, m.root_position, m.rotations)
    pts = m.skeleton.indices(["LeftToe_end", "Head"])
    expected = jacobian(m.skeleton, m.root_position, m.rotations, pts, orientation=True)
    np.testing.assert_array_equal(pose.jacobian(pts, orientation=True), expected)
    assert pose.batch_shape == (5,)


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_aim_on_channels_reaches_what_the_channels_can(seed):
    """A direction made by the joint's own channels is reached exactly, on its channels;
    three channels keep the guess; none gives the identity."""
    sk = mixed_skeleton()
    rng = np.random.default_rng(seed)
    theta = np.zeros((6, 5, 3))
    theta[:, 1, 0] = rng.uniform(-3, 3, 6)
    theta[:, 2, :2] = rng.uniform(-1.4, 1.4, (6, 2))  # away from gimbal lock
    made = rotations_from_channel_angles(sk, theta)
    guess = quat.normalize(rng.normal(size=(6, 4)))
    for j in (1, 2):
        bone = _unit(rng.normal(size=3))
        if j == 1:  # a hinge reaches the cone of a bone across its axis about it
            axis = quat.rotate(sk.axes[1], [1.0, 0, 0])
            bone = _unit(_unit(np.cross(axis, bone)) + rng.uniform(-0.5, 0.5) * axis)
        want = quat.rotate(made[:, j], bone)
        got = aim_on_channels(sk, j, guess, bone, want)
        np.testing.assert_allclose(quat.rotate(got, bone), want, atol=1e-9)
        on = np.tile(quat.identity(), (6, 5, 1))
        on[:, j] = got
        np.testing.assert_allclose(quat.angle(project_to_dofs(sk, on)[:, j], got), 0, atol=1e-9)
    np.testing.assert_allclose(aim_on_channels(sk, 4, guess), guess)
    np.testing.assert_allclose(aim_on_channels(sk, 3, guess), quat.identity(6))


def test_aim_on_channels_twist_joint_keeps_the_twist():
    """A one-channel joint whose bone lies along its axis takes the guess's twist about it."""
    sk = mixed_skeleton()
    axis = quat.rotate(sk.axes[1], [1.0, 0, 0])
    twist = quat.quat_from_rotvec(0.7 * axis)
    swing = quat.quat_from_rotvec(0.3 * _unit(np.cross(axis, [0, 0, 1.0])))
    got = aim_on_channels(sk, 1, quat.multiply(swing, twist)[None], axis, axis[None])
    assert abs(channel_angles(sk, np.tile(got, (5, 1)))[1, 0] - 0.7) < 0.1


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_twist_for_hinge_makes_the_direction_reachable(seed):
    """Turning the parent by the twist about its bone puts the wanted child direction on
    the hinge's cone, at an angle within the hinge's limits when one is."""
    sk = mixed_skeleton()
    rng = np.random.default_rng(seed)
    axis = quat.rotate(sk.axes[1], [1.0, 0, 0])
    u = _unit(rng.normal(size=3))
    child_bone = _unit(np.cross(axis, rng.normal(size=3)))  # across the hinge, as a shin
    bend = rng.uniform(0.0, 2.4, 5)
    phi0 = rng.uniform(-np.pi, np.pi, 5)
    reach = quat.rotate(quat.quat_from_rotvec(bend[:, None] * axis), child_bone)
    d = quat.rotate(quat.quat_from_rotvec(phi0[:, None] * u), reach)  # a twisted parent's
    phi = twist_for_hinge(sk, 1, u, child_bone, d)
    d_after = quat.rotate(quat.conjugate(quat.quat_from_rotvec(phi[:, None] * u)), d)
    np.testing.assert_allclose(d_after @ axis, child_bone @ axis, atol=1e-9)
    on_hinge = aim_on_channels(sk, 1, quat.identity(5), child_bone, d_after)
    np.testing.assert_allclose(quat.rotate(on_hinge, child_bone), d_after, atol=1e-9)
    angle = channel_angles(sk, np.tile(on_hinge[:, None], (1, 5, 1)))[:, 1, 0]
    lo, hi = sk.limits[1, 0]
    assert np.all((angle >= lo - 1e-9) & (angle <= hi + 1e-9))


def test_widen_limits_takes_in_the_motion_only(data_dir):
    asf = read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")[:200]
    rng = np.random.default_rng(3)
    rot = quat.multiply(
        asf.rotations, quat.exp(rng.normal(scale=0.6, size=(*asf.rotations.shape[:-1], 3)))
    )
    rot = project_to_dofs(asf.skeleton, rot)
    wide = widen_limits(asf.skeleton, rot)
    assert limit_violation(wide, rot).max() <= 1e-12
    assert limit_violation(asf.skeleton, rot).max() > 0.1
    assert np.all(wide.limits[..., 0] <= asf.skeleton.limits[..., 0])
    assert np.all(wide.limits[..., 1] >= asf.skeleton.limits[..., 1])
    inside = widen_limits(asf.skeleton, clamp_to_limits(asf.skeleton, rot))
    np.testing.assert_allclose(inside.limits, asf.skeleton.limits, rtol=0, atol=1e-12)


def test_limit_violation_of_some_joints_is_theirs(data_dir):
    """Decomposing only the joints asked (the hybrid IK's limited ones) gives their rows
    of the whole skeleton's, on CMU's skeleton (one, two and three channels, turned
    channel frames) at random rotations."""
    from retarget.core import dofs

    sk = read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")[:2].skeleton
    rng = np.random.default_rng(0)
    rot = quat.normalize(rng.normal(size=(40, sk.num_joints, 4)))
    joints = np.array([0, 3, 5, 7, 12, sk.num_joints - 1])
    whole = dofs.limit_violation(sk, rot)
    np.testing.assert_array_equal(dofs.limit_violation(sk, rot, joints), whole[:, joints])
    assert whole[:, joints].max() > 0.1
