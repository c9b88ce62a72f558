"""Numerical IK (Lee & Shin 1999, §5.1): solve_ik's properties."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from retarget.core import dofs, quat
from retarget.core.kinematics import Pose
from retarget.core.motion import oplus
from retarget.ik.numeric import _GaussNewton, _Objective, _Parameters, default_rigidity, solve_ik
from retarget.io import read_asf_amc
from retarget.tasks import (
    GroundTask,
    JointLimitTask,
    OrientationTask,
    PositionTask,
    penalty,
    penalty_and_gradient,
)


# -- IK fixtures ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def vicon(data_dir):
    return read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")


def arm_target(lafan, frames, rng, spread=0.4):
    """Goals a pose can reach: the left hand of the same frames with the left arm turned."""
    sk = lafan.skeleton
    rot = lafan.rotations[frames].copy()
    for name in ("LeftArm", "LeftForeArm", "LeftHand"):
        j = sk.index(name)
        rot[:, j] = quat.multiply(rot[:, j], quat.exp(rng.normal(0, spread, (len(frames), 3))))
    pose = Pose.of(sk, lafan.root_position[frames], rot)
    hand, end = sk.index("LeftHand"), sk.index("LeftHand_end")
    return pose.positions[:, end], pose.world_rotations[:, hand]


def hand_reach(lafan, seed):
    """The left hand reaching at frames 100, 300, …, 1900 of the walk: ``(frames (10,),
    task)``, a :class:`PositionTask` on LeftHand_end (weight 1e4 / cm²) at the
    :func:`arm_target` goals drawn with ``default_rng(seed)``."""
    frames = np.arange(100, 2000, 200)
    p_goal, _ = arm_target(lafan, frames, np.random.default_rng(seed))
    return frames, PositionTask(lafan.skeleton.index("LeftHand_end"), p_goal, weight=1e4)


# -- IK -----------------------------------------------------------------------------------------
def test_reaches_position_and_orientation_goals(lafan):
    sk = lafan.skeleton
    rng = np.random.default_rng(0)
    frames = np.arange(0, lafan.num_frames, 300)
    p_goal, q_goal = arm_target(lafan, frames, rng)
    tasks = [
        PositionTask(sk.index("LeftHand_end"), p_goal, weight=1e6),
        OrientationTask(sk.index("LeftHand"), q_goal, weight=1e6),
    ]
    before = penalty(tasks, Pose.of(sk, lafan.root_position[frames], lafan.rotations[frames]))
    result = solve_ik(sk, lafan.root_position[frames], lafan.rotations[frames], tasks)
    assert before.min() > 1e3  # the goals are far from the reference
    assert result.converged.all()
    assert np.abs(result.task_residuals[0]).max() < 1e-4  # cm
    assert np.abs(result.task_residuals[1]).max() < 1e-4  # rad
    pose = Pose.of(sk, result.root_position, result.rotations)
    np.testing.assert_allclose(pose.positions[:, sk.index("LeftHand_end")], p_goal, atol=1e-4)
    np.testing.assert_allclose(result.penalty, penalty(tasks, pose))
    assert np.isfinite(result.x).all() and (result.iterations <= 30).all()


def test_minimal_displacement_leaves_unrelated_joints_alone(lafan):
    sk = lafan.skeleton
    frames, task = hand_reach(lafan, 1)
    result = solve_ik(sk, lafan.root_position[frames], lafan.rotations[frames], [task])
    x = result.x[:, 3:].reshape(len(frames), sk.num_joints, 3)
    chain = {j for j in sk.chain("LeftHand_end").tolist() if j < sk.num_joints}
    unrelated = [j for j in range(sk.num_joints) if j not in chain]
    assert "RightUpLeg" in [sk.names[j] for j in unrelated]
    assert np.all(x[:, unrelated] == 0.0)  # legs, right arm, head: untouched
    moved = np.linalg.norm(x[:, sorted(chain)], axis=-1)
    assert np.all(moved.max(axis=1) > 1e-3)
    np.testing.assert_array_equal(
        result.rotations[:, unrelated], lafan.rotations[frames][:, unrelated]
    )


def test_rigidity_shifts_motion_between_joints(lafan):
    sk = lafan.skeleton
    frames, task = hand_reach(lafan, 2)
    args = (sk, lafan.root_position[frames], lafan.rotations[frames], [task])
    shoulder, spine = sk.index("LeftArm"), sk.index("Spine1")

    def turn(result, j):
        return np.linalg.norm(result.x[:, 3 + 3 * j : 6 + 3 * j], axis=-1)

    base = solve_ik(*args)
    stiff = default_rigidity(sk)
    stiff[1 + shoulder] = 100.0
    stiff_shoulder = solve_ik(*args, rigidity=stiff)
    assert np.all(turn(stiff_shoulder, shoulder) < 0.5 * turn(base, shoulder))
    assert np.all(turn(stiff_shoulder, spine) > turn(base, spine))
    # an infinitely stiff joint is locked, the root too
    locked = default_rigidity(sk)
    locked[0] = np.inf
    locked[1 + shoulder] = np.inf
    result = solve_ik(*args, rigidity=locked)
    assert np.all(result.x[:, :3] == 0.0) and np.all(turn(result, shoulder) == 0.0)
    assert np.abs(result.task_residuals[0]).max() < 0.05  # still reached (by the other joints)


def test_default_rigidity_is_unit_consistent(lafan):
    sk = lafan.skeleton
    m = default_rigidity(sk)
    assert m.shape == (sk.num_joints + 1,) and np.all(m[1:] == 1.0)
    metres = sk.scaled(0.01)
    np.testing.assert_allclose(default_rigidity(metres)[0], m[0] * 1e4)
    # the same problem in metres gives the same pose
    frames = np.arange(0, 600, 150)
    p_goal, _ = arm_target(lafan, frames, np.random.default_rng(3))
    hand = sk.index("LeftHand_end")
    cm = solve_ik(
        sk,
        lafan.root_position[frames],
        lafan.rotations[frames],
        [PositionTask(hand, p_goal, weight=1e2)],
    )
    m_ = solve_ik(
        metres,
        lafan.root_position[frames] * 0.01,
        lafan.rotations[frames],
        [PositionTask(hand, p_goal * 0.01, weight=1e6)],
    )
    np.testing.assert_allclose(m_.x[:, 3:], cm.x[:, 3:], atol=1e-6)
    np.testing.assert_allclose(m_.x[:, :3] * 100, cm.x[:, :3], atol=1e-4)


def test_batched_solve_equals_per_frame(lafan):
    sk = lafan.skeleton
    rng = np.random.default_rng(4)
    frames = np.arange(0, 1200, 200)
    p_goal, q_goal = arm_target(lafan, frames, rng)
    feet = sk.indices(["LeftToe_end", "RightToe_end"])
    toe = Pose.of(sk, lafan.root_position[frames], lafan.rotations[frames]).positions[:, feet]
    toe_goal = toe + rng.normal(0, 2.0, toe.shape)
    toe_goal[::2, 1] = np.nan  # some frames without a right-foot goal
    tasks = [
        PositionTask(sk.index("LeftHand_end"), p_goal, weight=1e3),
        OrientationTask(sk.index("LeftHand"), q_goal, weight=10.0),
        PositionTask(feet[0], toe_goal[:, 0], weight=1e3),
        PositionTask(feet[1], toe_goal[:, 1], weight=1e3),
    ]
    root, rot = lafan.root_position[frames], lafan.rotations[frames]
    batch = solve_ik(sk, root, rot, tasks)
    for i in range(len(frames)):
        one = solve_ik(sk, root[i], rot[i], [t.take([i]) for t in tasks])
        assert one.rotations.shape == (1, sk.num_joints, 4)
        np.testing.assert_allclose(one.x[0], batch.x[i], atol=1e-9)
        np.testing.assert_allclose(one.objective[0], batch.objective[i], rtol=1e-12)
        assert one.iterations[0] == batch.iterations[i]
    # (B, F) batches: the same frames twice
    twice = solve_ik(sk, np.stack([root, root]), np.stack([rot, rot]), tasks)
    assert twice.x.shape == (2, len(frames), 3 + 3 * sk.num_joints)
    assert twice.task_residuals[0].shape == (2, len(frames), 3)
    np.testing.assert_allclose(twice.x[1], batch.x, atol=1e-9)
    np.testing.assert_allclose(twice.objective[0], batch.objective, rtol=1e-12)


def test_inactive_frames_do_not_move(lafan):
    sk = lafan.skeleton
    frames = np.arange(0, 900, 100)
    p_goal, _ = arm_target(lafan, frames, np.random.default_rng(5))
    p_goal[1::2] = np.nan
    result = solve_ik(
        sk,
        lafan.root_position[frames],
        lafan.rotations[frames],
        [PositionTask(sk.index("LeftHand_end"), p_goal, weight=1e4)],
    )
    assert np.all(result.x[1::2] == 0.0) and np.all(result.iterations[1::2] == 0)
    assert np.all(np.abs(result.x[::2]).max(axis=1) > 1e-3)


def test_unreachable_goals_stay_finite(lafan):
    sk = lafan.skeleton
    frames = np.arange(0, 500, 100)
    far = np.full((len(frames), 3), 1e4)
    result = solve_ik(
        sk,
        lafan.root_position[frames],
        lafan.rotations[frames],
        [
            PositionTask(sk.index("LeftHand_end"), far, weight=1e6),
            PositionTask(sk.index("RightToe_end"), -far, weight=1e6),
        ],
        max_iterations=50,
    )
    for a in (result.root_position, result.rotations, result.x, result.objective):
        assert np.isfinite(a).all()
    np.testing.assert_allclose(np.linalg.norm(result.rotations, axis=-1), 1.0)


def test_matches_scipy_on_single_frames(lafan):
    """The same objective handed to scipy's BFGS: the same minimum."""
    sk = lafan.skeleton
    rng = np.random.default_rng(6)
    frames = [150, 900, 2400]
    p_goal, q_goal = arm_target(lafan, np.array(frames), rng, spread=0.3)
    feet = sk.indices(["LeftToe_end", "RightToe_end"])
    for i, f in enumerate(frames):
        root, rot = lafan.root_position[f], lafan.rotations[f]
        toe = Pose.of(sk, root, rot).positions[feet]
        tasks = [
            PositionTask(sk.index("LeftHand_end"), p_goal[i], weight=1.0),
            OrientationTask(sk.index("LeftHand"), q_goal[i], weight=50.0),
            PositionTask(feet[0], toe[0] + [3.0, 4.0, -2.0], weight=1.0),
            GroundTask(feet, toe[:, 1].min() + 1.5, weight=2.0),  # pushes the lower toe up
        ]
        m = np.repeat(default_rigidity(sk), 3)  # the same for every frame

        def g(x, root=root, rot=rot, tasks=tasks, m=m):  # x (..., n): batched evaluation
            pose = Pose.of(sk, *oplus(root, rot, x))
            return 0.5 * np.sum(m * x * x, axis=-1) + penalty(tasks, pose)

        def fd_gradient(x, g=g, h=1e-6):  # central differences, all directions in one batch
            steps = h * np.eye(x.size)
            return (g(x + steps) - g(x - steps)) / (2 * h)

        ref = scipy.optimize.minimize(
            g, np.zeros(m.size), method="BFGS", jac=fd_gradient, options={"gtol": 1e-7}
        )
        ours = solve_ik(sk, root, rot, tasks)  # one pose: no batch axis
        assert ours.x.shape == (m.size,) and ours.objective.shape == () and ours.converged
        np.testing.assert_allclose(g(ours.x), ours.objective, rtol=1e-12)
        assert ours.objective <= ref.fun * (1 + 1e-6)
        np.testing.assert_allclose(ours.objective, ref.fun, rtol=1e-6)


# -- ASF: partial DOFs and limits -----------------------------------------------------------------
def test_objective_gradient_with_partial_dofs(vicon):
    """The gradient w.r.t. the parameters (hinges, two-channel joints, J_r), by differences."""
    sk = vicon.skeleton
    rng = np.random.default_rng(7)
    frames = np.array([10, 700, 1500])
    root, rot = vicon.root_position[frames], vicon.rotations[frames]
    pose = Pose.of(sk, root, rot)
    ends = sk.indices(["ltoes_end", "rfingers_end", "lthumb_end"])
    tasks = [
        PositionTask(int(p), pose.positions[:, p] + rng.normal(0, 2, (3, 3)), weight=10.0)
        for p in ends
    ]
    tasks.append(JointLimitTask(sk, weight=3.0))
    tasks.append(OrientationTask(sk.index("lfoot"), quat.exp(rng.normal(0, 1, (3, 3)))))
    params = _Parameters(sk, default_rigidity(sk), rot)
    assert params.hinge.size > 4 and params.pair.size > 4
    objective = _Objective(sk, params, tasks, root, rot)
    index = np.arange(3)
    p = rng.normal(0, 0.3, (3, params.size))
    _, grad = objective(p, index)
    h = 1e-6
    fd = np.stack(
        [
            (objective(p + h * e, index)[0] - objective(p - h * e, index)[0]) / (2 * h)
            for e in np.eye(params.size)
        ],
        axis=-1,
    )
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5 * np.abs(fd).max())


def test_partial_dof_parameters_are_exact_channel_angles(vicon):
    sk = vicon.skeleton
    rot = vicon.rotations[[5, 50]]
    params = _Parameters(sk, default_rigidity(sk), rot)
    rng = np.random.default_rng(8)
    p = rng.normal(0, 0.5, (2, params.size))
    _, moved, _ = params.pose(vicon.root_position[[5, 50]], rot, p, np.arange(2))
    theta = dofs.channel_angles(sk, rot)
    theta[:, params.hinge, 0] += p[:, params.s_hinge]
    theta[:, params.pair, :2] += p[:, params.s_pair].reshape(2, -1, 2)
    expect = dofs.rotations_from_channel_angles(sk, theta)
    partial = np.concatenate([params.hinge, params.pair])
    assert quat.angle(moved[:, partial], expect[:, partial]).max() < 1e-12


def test_hinges_stay_hinges_and_unchanneled_joints_stay(vicon):
    sk = vicon.skeleton
    rng = np.random.default_rng(9)
    frames = np.arange(0, 2700, 300)
    root, rot = vicon.root_position[frames], vicon.rotations[frames]
    pose = Pose.of(sk, root, rot)
    ankles = sk.indices(["lfoot", "rfoot"])
    goals = pose.positions[:, ankles] + rng.normal(0, 3.0, (len(frames), 2, 3))
    tasks = [PositionTask(int(a), goals[:, k], weight=1e4) for k, a in enumerate(ankles)]
    result = solve_ik(sk, root, rot, tasks)
    assert np.abs(np.concatenate(result.task_residuals, -1)).max() < 0.05
    present = np.array([[k < len(o) for k in range(3)] for o in sk.euler_orders])
    theta = dofs.channel_angles(sk, result.rotations)
    assert np.abs(theta[:, ~present]).max() < 1e-12  # no rotation about missing channels
    knees = sk.indices(["ltibia", "rtibia"])
    assert np.abs(theta[:, knees, 0] - dofs.channel_angles(sk, rot)[:, knees, 0]).max() > 1e-2
    none = [j for j, o in enumerate(sk.euler_orders) if not o]
    np.testing.assert_array_equal(result.rotations[:, none], rot[:, none])


def test_joint_limits_hold_against_a_goal(vicon):
    sk = vicon.skeleton
    frames = np.arange(0, 2700, 300)
    root, rot = vicon.root_position[frames], vicon.rotations[frames]
    knee = sk.index("ltibia")
    lo = sk.limits[knee, 0, 0]
    # the ankle where a knee bent 25° past its lower limit would put it ...
    theta = dofs.channel_angles(sk, rot)
    theta[:, knee, 0] = lo - np.radians(25.0)
    bent = dofs.rotations_from_channel_angles(sk, theta)
    goal = Pose.of(sk, root, bent).positions[:, sk.index("ltoes_end")]
    reach = PositionTask(sk.index("ltoes_end"), goal, weight=1e2)
    # ... with only the knee and the ankle free to reach it
    rigidity = np.full(sk.num_joints + 1, np.inf)
    rigidity[1 + sk.indices(["ltibia", "lfoot"])] = 1.0
    free = solve_ik(sk, root, rot, [reach], rigidity=rigidity)
    bounded = solve_ik(sk, root, rot, [reach, JointLimitTask(sk, weight=1e8)], rigidity=rigidity)
    assert np.all(dofs.channel_angles(sk, free.rotations)[:, knee, 0] < lo - np.radians(15.0))
    leg = sk.indices(["ltibia", "lfoot"])  # (the capture breaks some limits elsewhere)
    assert dofs.limit_violation(sk, bounded.rotations)[:, leg].max() < np.radians(0.05)
    np.testing.assert_allclose(
        dofs.channel_angles(sk, bounded.rotations)[:, knee, 0], lo, atol=1e-3
    )
    leg_rows = np.isin(JointLimitTask(sk).rows[:, 0], leg)
    assert np.all(bounded.task_residuals[1][:, leg_rows] > -1e-3)
    assert np.all(np.linalg.norm(bounded.task_residuals[0], axis=-1) > 1.0)  # the goal gave way


def test_ground_task_lifts_feet(lafan):
    sk = lafan.skeleton
    frames = np.arange(0, 1500, 150)
    root = lafan.root_position[frames] - [0.0, 8.0, 0.0]  # sink the body into the floor
    rot = lafan.rotations[frames]
    feet = sk.indices(["LeftToe_end", "RightToe_end", "LeftFoot", "RightFoot"])
    result = solve_ik(sk, root, rot, [GroundTask(feet, 0.0, weight=1e4)])
    before = Pose.of(sk, root, rot).positions[:, feet, 1]
    after = Pose.of(sk, result.root_position, result.rotations).positions[:, feet, 1]
    assert before.min() < -5.0
    assert after.min() > -0.01


def test_preconditioner_is_the_gauss_newton_inverse(lafan):
    sk = lafan.skeleton
    frames = np.array([3, 333])
    root, rot = lafan.root_position[frames], lafan.rotations[frames]
    p_goal, q_goal = arm_target(lafan, frames, np.random.default_rng(10))
    tasks = [
        PositionTask(sk.index("LeftHand_end"), p_goal, weight=50.0),
        OrientationTask(sk.index("LeftHand"), q_goal, weight=7.0),
    ]
    params = _Parameters(sk, default_rigidity(sk), rot)
    objective = _Objective(sk, params, tasks, root, rot)
    pre = _GaussNewton(objective)
    p = np.random.default_rng(11).normal(0, 0.2, (2, params.size))
    index = np.arange(2)
    pre.update(p, index)
    # J in parameter space by finite differences of the residuals
    h = 1e-6

    def residuals(q):
        root_q, rot_q, _ = params.pose(root, rot, q, index)
        return np.concatenate(
            penalty_and_gradient(tasks, Pose.of(sk, root_q, rot_q), gradient=False)[2], -1
        )

    jac = np.stack(
        [(residuals(p + h * e) - residuals(p - h * e)) / (2 * h) for e in np.eye(params.size)], -1
    )
    w = np.repeat([50.0, 7.0], 3)
    hessian = np.diag(params.diagonal) + 2 * np.einsum("bkn,k,bkm->bnm", jac, w, jac)
    g = np.random.default_rng(12).normal(size=(2, params.size))
    expect = np.linalg.solve(hessian, g[..., None])[..., 0]
    np.testing.assert_allclose(pre(g, index), expect, rtol=1e-5, atol=1e-6 * np.abs(expect).max())


def test_rejects_bad_input(lafan):
    sk = lafan.skeleton
    with pytest.raises(ValueError, match="rigidity"):
        solve_ik(sk, lafan.root_position[:2], lafan.rotations[:2], [], rigidity=np.ones(3))
    with pytest.raises(ValueError, match="rotations"):
        solve_ik(sk, lafan.root_position[:2], lafan.rotations[:2, :5], [])
    with pytest.raises(ValueError, match="NaN"):
        solve_ik(sk, np.full((2, 3), np.nan), lafan.rotations[:2], [])
    empty = solve_ik(sk, lafan.root_position[:2], lafan.rotations[:2], [])
    assert np.all(empty.x == 0.0) and empty.converged.all()
