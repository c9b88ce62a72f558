"""The frame-by-frame Gauss-Newton IK (retarget.ik.newton): its compiled rows against the
task objects, its gradient against finite differences, its minimiser against the batched
CG of solve_ik, and its hard rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget.core import dofs, quat
from retarget.core.kinematics import Pose, forward_kinematics
from retarget.core.skeleton import Skeleton
from retarget.ik import newton
from retarget.ik.numeric import default_rigidity, solve_ik
from retarget.targets.robot.hinges import geom_capsules
from retarget.targets.robot.model import read_robot
from retarget.tasks import (
    CollisionTask,
    GroundTask,
    HalfSpaceTask,
    JointLimitTask,
    OrientationTask,
    PositionTask,
    SegmentTask,
    Task,
    penalty,
)
from retarget.tasks.collision import separate_pairs

ALEXANDER = Path(__file__).parent / "data" / "robots" / "ihmc_alexander" / "ihmc_alexander.urdf"


@pytest.fixture(scope="module")
def robot():
    return read_robot(ALEXANDER)


def _random_poses(sk: Skeleton, frames: int, rng, spread: float = 0.5):
    rot = np.tile(quat.identity(), (frames, sk.num_joints, 1))
    axes = dofs.channel_axes(sk, rot[0])
    for j in range(1, sk.num_joints):
        if len(sk.euler_orders[j]) == 1:
            theta = rng.uniform(-spread, spread, frames)
            rot[:, j] = quat.quat_from_rotvec(theta[:, None] * axes[j, :, 0])
    rot[:, 0] = quat.quat_from_rotvec(rng.normal(size=(frames, 3)) * 0.3)
    root = rng.normal(size=(frames, 3)) * 0.1 + [0.0, 0.0, 1.0]
    return root, rot


def _tasks(robot, root, rot, rng, push: float = 1.0):
    """One task of every kind the kernel takes, all partly violated (``push``: how far
    the goals are moved from the pose)."""
    sk = robot.skeleton
    frames = len(root)
    pm, wm = forward_kinematics(sk, root, rot)
    capsules = geom_capsules(robot.geoms)
    rest = Pose.of(sk, np.zeros(3), quat.identity((sk.num_joints,)))
    pairs, gaps = separate_pairs(sk, capsules, rest, 0.01)
    hand = sk.num_points - 1
    feet = np.arange(sk.num_joints, sk.num_points)
    floor = pm[:, feet, 1].min() + 0.1 * push  # under it at a few frames
    goal = pm[:, 7] + rng.normal(size=(frames, 3)) * 0.05 * push
    goal[0, 1] = np.nan  # a component not tracked
    turned = quat.multiply(
        wm[:, 9], quat.quat_from_rotvec(rng.normal(size=(frames, 3)) * 0.3 * push)
    )
    return [
        PositionTask(7, goal, weight=1e4),
        PositionTask(hand, pm[:, hand] + rng.normal(size=(frames, 3)) * 0.05 * push, weight=1e3),
        OrientationTask(9, turned, weight=2.0),
        SegmentTask(
            4, hand, pm[:, hand] - pm[:, 4] + rng.normal(size=(frames, 3)) * 0.05 * push, weight=5e3
        ),
        GroundTask(feet, floor, rng.uniform(0, 0.05 * push, (frames, len(feet))), weight=1e5),
        CollisionTask(capsules, pairs, margin=gaps + 0.05 * push, weight=1e5),
        JointLimitTask(sk, weight=1e3),
        _half_spaces(sk, pm, wm, hand, rng, push),
    ]


def _half_spaces(sk, pm, wm, hand, rng, push):
    """Points blended over three joints (as skinned vertices), each kept beyond a plane
    through its position moved along the normal (violated where moved out); a row of
    every other frame inactive."""
    frames, k = len(pm), 3
    joints = np.array([7, 9, sk.site_parents[hand - sk.num_joints]])
    offsets = rng.normal(size=(frames, k, 3, 3)) * 0.05
    weights = rng.dirichlet(np.ones(3), (frames, k))
    normal = rng.normal(size=(frames, k, 3))
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    points = np.einsum(
        "fki,fkic->fkc",
        weights,
        pm[:, joints, None].swapaxes(1, 2) + quat.rotate(wm[:, None, joints], offsets),
    )
    level = (normal * points).sum(-1) + rng.normal(size=(frames, k)) * 0.03 * push
    normal[::2, 1] = np.nan
    return HalfSpaceTask(joints, offsets, weights, normal, level, weight=1e5)


def _kernel_problem(sk, root, rot, tasks, rigidity):
    frames = len(root)
    skel = newton._joints(sk, rigidity, rot[0])
    flat = [t.flatten_batch((frames,)) if t.batch_shape else t for t in tasks]
    lowered, _ = newton._lower(flat, frames, skel[3], set())
    theta = np.zeros((frames, sk.num_joints))
    hinges = np.flatnonzero(skel[3] == 1)
    theta[:, hinges] = dofs.channel_angles(sk, rot)[:, hinges, 0]
    return skel, lowered, theta


def test_rows_equal_the_tasks_residuals(robot):
    rng = np.random.default_rng(1)
    sk = robot.skeleton
    root, rot = _random_poses(sk, 6, rng)
    tasks = _tasks(robot, root, rot, rng)
    res = newton.solve_ik_newton(
        sk, root, rot, tasks, max_iterations=0, first_iterations=0, carry=False, residuals=True
    )
    pose = Pose.of(sk, root, rot)
    assert res.task_residuals is not None
    for task, ours in zip(tasks, res.task_residuals, strict=True):
        np.testing.assert_allclose(ours, task.residual(pose), atol=1e-12)
    np.testing.assert_allclose(res.penalty, penalty(tasks, pose), rtol=1e-12)
    assert (res.penalty > 0).all()


def test_hessian_and_gradient_are_the_tasks_jacobians(robot):
    """``H = M + 2 Jᵀ W J`` and ``g = M p + 2 Jᵀ W r`` with ``J`` the tasks' own
    tangent-space Jacobians (:meth:`Task.jacobian`) on the kernel's parameters."""
    rng = np.random.default_rng(2)
    sk = robot.skeleton
    root, rot = _random_poses(sk, 3, rng)
    tasks = _tasks(robot, root, rot, rng)
    rigidity = default_rigidity(sk)
    skel, lowered, theta = _kernel_problem(sk, root, rot, tasks, rigidity)
    kind, col, axis, t_col, m_reg = skel[3], skel[4], skel[5], skel[6], skel[7]
    n = len(m_reg)
    # tangent columns (3 + 3J) -> the kernel's parameters
    basis = np.zeros((3 + 3 * sk.num_joints, n))
    basis[:3, t_col : t_col + 3] = np.eye(3)
    for j in range(sk.num_joints):
        if kind[j] == 1:
            basis[3 + 3 * j : 6 + 3 * j, col[j]] = axis[j]
        elif kind[j] == 3:
            basis[3 + 3 * j : 6 + 3 * j, col[j] : col[j] + 3] = np.eye(3)
    kernel = newton._kernel()
    for f in range(len(root)):
        _, pen, grad, hess = kernel.evaluate_frame(
            skel, lowered, root, rot, theta, f, np.zeros(n), 1.0, 0.0, 0.0
        )
        pose = Pose.of(sk, root[f], rot[f])
        h = np.diag(m_reg)
        g = np.zeros(n)
        for task in tasks:
            t = task.take(np.array([f])) if task.batch_shape else task
            r = t.residual(pose).reshape(-1)
            jac = t.jacobian(pose).reshape(len(r), -1) @ basis
            on = r < 0 if task.inequality else np.ones(len(r), bool)
            h += 2 * task.weight * jac[on].T @ jac[on]
            g += 2 * task.weight * jac[on].T @ r[on]
        scale = np.abs(h).max()
        np.testing.assert_allclose(hess, h, atol=1e-9 * scale)
        np.testing.assert_allclose(grad, g, atol=1e-9 * np.abs(g).max())
        assert pen == pytest.approx(float(penalty(tasks, Pose.of(sk, root, rot))[f]), rel=1e-12)


def test_gradient_against_finite_differences(robot):
    """Along each parameter, moved as the solver moves it (a ball by ``exp(v) exp(δ)``)."""
    rng = np.random.default_rng(3)
    sk = robot.skeleton
    root, rot = _random_poses(sk, 2, rng)
    tasks = _tasks(robot, root, rot, rng)
    skel, lowered, theta = _kernel_problem(sk, root, rot, tasks, default_rigidity(sk))
    kernel = newton._kernel()
    n = len(skel[7])
    p = rng.normal(size=n) * 0.05
    h = 1e-6
    for f in range(2):
        _, _, grad, _ = kernel.evaluate_frame(skel, lowered, root, rot, theta, f, p, 1.0, 0.0, 0.0)
        fd = np.zeros(n)
        for a in range(n):
            e = np.zeros(n)
            e[a] = h
            ahead, back = np.zeros(n), np.zeros(n)
            kernel._step(skel, p, e, 1.0, ahead)
            kernel._step(skel, p, -e, 1.0, back)
            up = kernel.evaluate_frame(skel, lowered, root, rot, theta, f, ahead, 1.0, 0.0, 0.0)[0]
            down = kernel.evaluate_frame(skel, lowered, root, rot, theta, f, back, 1.0, 0.0, 0.0)[0]
            fd[a] = (up - down) / (2 * h)
        np.testing.assert_allclose(grad, fd, atol=1e-6 * np.abs(fd).max())


def test_minimum_no_worse_than_solve_ik(robot):
    """The same objective: Gauss-Newton frame by frame reaches the batched CG's minimum
    (or a lower one) and is stationary there (goals near the pose: one minimum; links
    crossing each other, whose normal flips, are the next test's)."""
    rng = np.random.default_rng(4)
    sk = robot.skeleton
    root, rot = _random_poses(sk, 4, rng, spread=0.3)
    tasks = [t for t in _tasks(robot, root, rot, rng, push=0.5) if not isinstance(t, CollisionTask)]
    rigidity = default_rigidity(sk)
    ours = newton.solve_ik_newton(
        sk, root, rot, tasks, rigidity=rigidity, tolerance=1e-10, carry=False
    )
    cg = solve_ik(sk, root, rot, tasks, rigidity=rigidity, max_iterations=300)
    assert (ours.objective <= cg.objective * (1 + 1e-6)).all()
    assert (ours.iterations < 100).all()
    skel, lowered, theta = _kernel_problem(sk, root, rot, tasks, rigidity)
    kernel = newton._kernel()
    for f in range(len(root)):
        obj, _, grad, hess = kernel.evaluate_frame(
            skel, lowered, root, rot, theta, f, ours.x[f], 1.0, 0.0, 0.0
        )
        assert obj == pytest.approx(ours.objective[f], rel=1e-12)
        # the Newton decrement at the result: nothing left to gain
        assert grad @ np.linalg.solve(hess, grad) < 1e-8 * obj


def test_links_pushed_apart(robot):
    """The arms' links asked to keep 3 cm further from the legs' than at the zero
    configuration (they hang by the hips) end (nearly) that far apart."""
    sk = robot.skeleton
    root = np.array([[0.0, 0.0, 1.0]])
    rot = quat.identity((1, sk.num_joints))
    capsules = geom_capsules(robot.geoms)
    rest = Pose.of(sk, root[0], rot[0])
    pairs, gaps = separate_pairs(sk, capsules, rest, np.inf)
    names = [sk.names[j] for j in capsules.joints]
    arm = np.array(["ELBOW" in n or "WRIST" in n for n in names])
    leg = np.array(["HIP" in n or "KNEE" in n for n in names])
    close = (gaps < 0.02) & (
        arm[pairs[:, 0]] & leg[pairs[:, 1]] | leg[pairs[:, 0]] & arm[pairs[:, 1]]
    )
    task = CollisionTask(capsules, pairs[close], margin=gaps[close] + 0.03, weight=1e5)
    before = task.residual(rest)
    assert before.min() < -0.02
    res = newton.solve_ik_newton(sk, root, rot, [task], tolerance=1e-10, residuals=True)
    assert res.task_residuals is not None
    after = res.task_residuals[0]
    assert after.min() > -0.1 * -before.min()
    assert res.iterations[0] < 100


def test_carry_reaches_the_same_minima_as_a_cold_start(robot):
    """Each frame started from the last one's result (extrapolated) or from the
    reference: the same minima."""
    rng = np.random.default_rng(5)
    sk = robot.skeleton
    root, rot = _random_poses(sk, 1, rng, spread=0.3)
    # a smooth clip: the pose turned slowly
    turn = quat.quat_from_rotvec(np.linspace(0, 0.4, 12)[:, None] * [0.0, 0.0, 1.0])
    rot = np.repeat(rot, 12, axis=0)
    rot[:, 0] = quat.multiply(turn, rot[:, 0])
    root = np.repeat(root, 12, axis=0)
    tasks = [  # (the half-spaces' random planes change from frame to frame: not smooth)
        t
        for t in _tasks(robot, root, rot, rng, push=0.5)
        if not isinstance(t, CollisionTask | HalfSpaceTask)
    ]
    kw = {"tolerance": 1e-9, "max_iterations": 300, "first_iterations": 300}
    warm = newton.solve_ik_newton(sk, root, rot, tasks, predict=1.0, **kw)
    cold = newton.solve_ik_newton(sk, root, rot, tasks, carry=False, **kw)
    assert (warm.iterations < 300).all() and (cold.iterations < 300).all()
    np.testing.assert_allclose(warm.objective, cold.objective, rtol=1e-8)
    np.testing.assert_allclose(warm.x, cold.x, atol=1e-5)


def test_hard_rows_made_firmer(robot):
    """A floor the hands are pushed through: soft, the penalty leaves them under it;
    hard, the frames are solved again firmer and end within the slack."""
    sk = robot.skeleton
    rng = np.random.default_rng(6)
    root, rot = _random_poses(sk, 3, rng, spread=0.2)
    pm, _ = forward_kinematics(sk, root, rot)
    feet = np.arange(sk.num_joints, sk.num_points)
    floor = pm[:, feet, 1].min() + 0.05
    below = pm[:, feet].copy()
    below[..., 1] = floor - 0.2
    tasks = [
        *[PositionTask(int(p), below[:, k], weight=1e3) for k, p in enumerate(feet)],
        GroundTask(feet, floor, weight=1e3),
    ]
    soft = newton.solve_ik_newton(sk, root, rot, tasks, residuals=True)
    hard = newton.solve_ik_newton(sk, root, rot, tasks, hard=[len(tasks) - 1], slack=1e-4)
    assert soft.task_residuals is not None
    assert soft.task_residuals[-1].min() < -1e-2
    assert (hard.boosted > 0).all()
    assert (hard.hard_violation < soft.task_residuals[-1].min(axis=1) * -0.01 + 1e-3).all()
    pos, _ = forward_kinematics(sk, hard.root_position, hard.rotations)
    assert pos[:, feet, 1].min() > floor - 2e-3


class _Height(Task):
    """A task of a kind the kernel does not know (the root's height)."""

    @property
    def size(self) -> int:
        return 1

    def residual(self, pose):
        return pose.positions[..., 0, 1:2]

    def jacobian(self, pose):
        return pose.jacobian([0])[..., 1:2, :]


def test_refuses_what_it_cannot_solve(robot):
    sk = robot.skeleton
    root, rot = _random_poses(sk, 2, np.random.default_rng(7))
    goal = _Height(weight=1.0)
    with pytest.raises(ValueError, match=r"_Height.*solve_ik"):
        newton.solve_ik_newton(sk, root, rot, [goal])
    two = sk.replace(channels=(sk.channels[0], ("Xrotation", "Yrotation"), *sk.channels[2:]))
    with pytest.raises(ValueError, match="two rotation channels"):
        newton.solve_ik_newton(two, root, rot, [])
    with pytest.raises(ValueError, match="NaN"):
        newton.solve_ik_newton(sk, root * np.nan, rot, [])


def test_never_nan_on_a_degenerate_problem(robot):
    """Goals at the joint they belong to and an unreachable goal: finite results."""
    sk = robot.skeleton
    root, rot = _random_poses(sk, 2, np.random.default_rng(8))
    far = np.full((2, 3), 1e3)
    res = newton.solve_ik_newton(sk, root, rot, [PositionTask(sk.num_points - 1, far, weight=1e6)])
    assert np.isfinite(res.rotations).all() and np.isfinite(res.root_position).all()
    assert np.isfinite(res.objective).all()


def test_hinge_speeds_kept_by_the_others(robot):
    """A hand asked to jump: without a speed limit the elbow turns fast; with one, it
    turns at most its rate a frame (to the penalty's slack) and the shoulder and the
    body take more of the jump."""
    sk = robot.skeleton
    frames = 8
    root = np.tile([0.0, 0.0, 1.0], (frames, 1))
    rot = quat.identity((frames, sk.num_joints))
    pm, _ = forward_kinematics(sk, root, rot)
    hand = sk.index("LEFT_GRIPPER_Z")
    goal = np.repeat(pm[:1, hand], frames, axis=0)
    goal[3:] += [0.25, 0.0, 0.2]  # a jump at frame 3
    tasks = [PositionTask(hand, goal, weight=1e4)]
    elbow = sk.index("LEFT_ELBOW_Y")
    free = newton.solve_ik_newton(sk, root, rot, tasks)
    rate = np.full(sk.num_joints, np.inf)
    rate[elbow] = 0.05
    slow = newton.solve_ik_newton(sk, root, rot, tasks, rate=rate)

    def elbow_steps(res):
        return np.abs(np.diff(res.x[:, res.columns[elbow]]))

    assert elbow_steps(free).max() > 0.15
    assert elbow_steps(slow).max() < 0.05 + 1e-3
    pos, _ = forward_kinematics(sk, slow.root_position, slow.rotations)
    assert np.linalg.norm(pos[-1, hand] - goal[-1]) < 0.05  # the others reached it
    with pytest.raises(ValueError, match="rate"):
        newton.solve_ik_newton(sk, root, rot, tasks, rate=np.ones(3))


def test_hinge_corrections_damped_exactly(robot):
    """One free hinge (every other joint rigid) held by a goal on its orientation while
    its reference alternates: each frame minimises ``½ m x² + ½ d (x − x_prev)² + ½ w
    (θ_ref + x − goal)²`` (the goal's rows are the rotation vector, exact about one
    axis): ``x = (d x_prev + w (goal − θ_ref)) / (m + d + w)``, frame after frame, ``w``
    read off the undamped solve; with no task the reference moves as it will."""
    sk = robot.skeleton
    frames = 9
    elbow = sk.index("LEFT_ELBOW_Y")
    axes = dofs.channel_axes(sk, quat.identity((sk.num_joints,)))[elbow]  # one non-zero column
    axis = axes[:, np.flatnonzero(np.abs(axes).sum(axis=0) > 0)[0]]
    wanted = np.where(np.arange(frames) % 2, -0.8, -0.4)  # the reference, about the hinge
    rot = quat.identity((frames, sk.num_joints))
    rot[:, elbow] = quat.quat_from_rotvec(wanted[:, None] * axis)
    root = np.tile([0.0, 0.0, 1.0], (frames, 1))
    rigidity = np.full(sk.num_joints + 1, np.inf)
    rigidity[elbow + 1] = 1.0
    damping = np.zeros(sk.num_joints)
    damping[elbow] = 3.0
    goal = -0.6
    task = OrientationTask(elbow, quat.quat_from_rotvec(goal * axis), weight=2.0)
    still = newton.solve_ik_newton(
        sk, root, rot, [], rigidity=rigidity, damping=damping, tolerance=1e-12
    )
    assert np.abs(still.x).max() < 1e-12  # no task: the reference, moving as it will
    free = newton.solve_ik_newton(sk, root, rot, [task], rigidity=rigidity, tolerance=1e-12)
    xf = free.x[:, free.columns[elbow]]
    w = xf / (goal - wanted - xf)  # x = w (goal − θ_ref) / (1 + w), frame by frame
    np.testing.assert_allclose(w, w[0], rtol=1e-6)
    res = newton.solve_ik_newton(
        sk, root, rot, [task], rigidity=rigidity, damping=damping, tolerance=1e-12
    )
    x = res.x[:, res.columns[elbow]]
    expected = [xf[0]]  # (the first frame has no last one)
    for f in range(1, frames):
        expected.append((3.0 * expected[-1] + w[0] * (goal - wanted[f])) / (1.0 + 3.0 + w[0]))
    np.testing.assert_allclose(x, expected, atol=1e-9)
    assert np.abs(np.diff(xf)).max() > 1.5 * np.abs(np.diff(x)).max()  # it alternates less
    with pytest.raises(ValueError, match="damping"):
        newton.solve_ik_newton(sk, root, rot, [], damping=-np.ones(sk.num_joints))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_cholesky_solve_is_numpys(n, seed):
    """``retarget.core._kernels.cholesky.cholesky_solve``: ``−H⁻¹ g`` as numpy's solve gives
    it for a
    symmetric positive definite ``H``; False for one that is not."""
    from retarget.core._kernels.cholesky import cholesky_solve

    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n))
    h = a @ a.T + 1e-3 * np.eye(n)
    g = rng.normal(size=n)
    out, lower = np.empty(n), np.empty((n, n))
    assert cholesky_solve(h, g, out, lower)
    np.testing.assert_allclose(out, -np.linalg.solve(h, g), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.tril(lower) @ np.tril(lower).T, h, rtol=1e-9, atol=1e-9)
    h[n - 1, n - 1] = -1.0 - np.abs(h).sum()  # no longer positive definite
    assert not cholesky_solve(h, g, out, lower)


def test_parameters_of_a_result_are_its_x(robot):
    """:func:`newton.parameters` reads back the parameters of the solver's own result
    (hinges and the free root), so that a solve can start where another ended."""
    rng = np.random.default_rng(11)
    sk = robot.skeleton
    root, rot = _random_poses(sk, 5, rng, spread=0.3)
    tasks = [t for t in _tasks(robot, root, rot, rng, push=0.5) if not isinstance(t, CollisionTask)]
    rigidity = default_rigidity(sk)
    res = newton.solve_ik_newton(sk, root, rot, tasks, rigidity=rigidity, carry=False)
    got = newton.parameters(sk, rigidity, res.root_position, res.rotations, root, rot)
    np.testing.assert_allclose(got, res.x, atol=1e-9)
    again = newton.solve_ik_newton(
        sk, root, rot, tasks, rigidity=rigidity, carry=False, start=got, max_iterations=0
    )
    np.testing.assert_allclose(again.rotations, res.rotations, atol=1e-9)
