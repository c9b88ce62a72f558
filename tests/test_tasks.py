"""Tasks: Jacobians against finite differences under ⊕, NaN goals, batching, penalties."""

from __future__ import annotations

import numpy as np
import pytest

from retarget.core import dofs, quat
from retarget.core.kinematics import Pose
from retarget.core.motion import oplus
from retarget.core.so3 import (
    apply_right_jacobian,
    apply_right_jacobian_inverse,
    right_jacobian,
    right_jacobian_inverse,
)
from retarget.environment import Floor, Scene, Shape, Slope
from retarget.io import read_asf_amc
from retarget.tasks import (
    Ground,
    GroundTask,
    HalfSpaceTask,
    JointLimitTask,
    OrientationTask,
    PositionTask,
    SegmentTask,
    Task,
    penalty,
    penalty_and_gradient,
    penalty_gradient,
    stack,
)


# -- helpers ------------------------------------------------------------------------------
def perturbed(motion, frames, rng, angle=0.3, shift=5.0):
    """Frames of a motion with random rotation increments (away from special values)."""
    rot = motion.rotations[frames]
    rot = quat.multiply(rot, quat.exp(rng.normal(0, angle, (*rot.shape[:-1], 3))))
    root = motion.root_position[frames] + rng.normal(0, shift, (len(rot), 3))
    return root, rot


def fd_jacobian(task, skeleton, root, rot, h=1e-6):
    """Central differences of ``task.residual(pose ⊕ x)`` at x = 0, shape (..., m, n)."""
    n = 3 + 3 * skeleton.num_joints
    steps = np.eye(n) * h
    steps = steps.reshape(n, *([1] * (root.ndim - 1)), n)
    plus = task.residual(Pose.of(skeleton, *oplus(root, rot, steps)))
    minus = task.residual(Pose.of(skeleton, *oplus(root, rot, -steps)))
    return np.moveaxis((plus - minus) / (2 * h), 0, -1)


def limited(skeleton, lo=-0.6, hi=0.7):
    return skeleton.replace(limits=np.tile([lo, hi], (skeleton.num_joints, 3, 1)))


def bumpy_height(xz):
    return 3.0 * np.sin(0.02 * xz[..., 0]) + 0.001 * xz[..., 1] ** 2


def bumpy_gradient(xz):
    return np.stack([0.06 * np.cos(0.02 * xz[..., 0]), 0.002 * xz[..., 1]], axis=-1)


class Bumpy(Shape):
    """A ground of :func:`bumpy_height` (ground queries only); its slope exact, or by the
    contract's central differences when ``exact`` is False."""

    def __init__(self, exact: bool = True) -> None:
        self.exact = exact

    def closest(self, points):
        raise NotImplementedError("a ground for tasks only")

    def ground_height(self, xz, *, below=None):
        return bumpy_height(np.asarray(xz, dtype=np.float64))

    def ground_gradient(self, xz, *, below=None):
        if self.exact:
            return bumpy_gradient(np.asarray(xz, dtype=np.float64))
        return super().ground_gradient(xz, below=below)


def make_tasks(sk, n_frames, rng):
    """One task of every kind, goals of shape (F, ...)."""
    hand = sk.index("LeftHand_end")
    return {
        "position": PositionTask(hand, rng.normal(0, 60, (n_frames, 3)), weight=2.0),
        "orientation": OrientationTask(
            sk.index("RightHand"), quat.exp(rng.normal(0, 1.0, (n_frames, 3))), weight=3.0
        ),
        "ground": GroundTask(
            sk.indices(["LeftToe_end", "RightToe_end", "Head"]),
            Bumpy(),
            clearance=[1.0, 2.0, 150.0],
        ),
        "ground_fd": GroundTask(sk.indices(["LeftToe_end", "Hips"]), Bumpy(exact=False)),
        "limits": JointLimitTask(limited(sk), weight=5.0),
        "segment": SegmentTask(
            sk.index("LeftForeArm"), hand, rng.normal(0, 30, (n_frames, 3)), weight=4.0
        ),
        "segment_across": SegmentTask(  # two limbs: the start not above the end
            sk.index("RightHand"), sk.index("LeftToe_end"), rng.normal(0, 30, (n_frames, 3))
        ),
        "halfspace": halfspace_task(sk, n_frames, rng),
    }


def halfspace_task(sk, n_frames, rng, points=4):
    """Points blended over a hand, its forearm and a foot (as skinned vertices are), kept
    beyond random planes; a row of every other frame inactive."""
    joints = sk.indices(["LeftHand", "LeftForeArm", "RightFoot"])
    weights = rng.dirichlet(np.ones(3), (n_frames, points))
    weights[:, 0] = [1.0, 0.0, 0.0]  # a point on one joint
    normal = rng.normal(size=(n_frames, points, 3))
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    normal[::2, 1] = np.nan
    return HalfSpaceTask(
        joints,
        rng.normal(0, 10, (n_frames, points, 3, 3)),
        weights,
        normal,
        rng.normal(0, 50, (n_frames, points)),
        weight=2.5,
    )


KINDS = [
    "position",
    "orientation",
    "ground",
    "ground_fd",
    "limits",
    "segment",
    "segment_across",
    "halfspace",
]


@pytest.fixture(scope="module")
def walk(lafan):
    rng = np.random.default_rng(7)
    frames = np.arange(0, lafan.num_frames, 700)
    root, rot = perturbed(lafan, frames, rng)
    return lafan.skeleton, root, rot, make_tasks(lafan.skeleton, len(frames), rng)


@pytest.fixture(scope="module")
def vicon(data_dir):
    return read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")


# -- SO(3) Jacobians ------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1e-7, 1e-3, 0.5, 2.0, 3.1])
def test_right_jacobian_matches_finite_differences(scale):
    rng = np.random.default_rng(0)
    v = rng.normal(size=(6, 3))
    v = scale * v / np.linalg.norm(v, axis=-1, keepdims=True)
    h = 1e-6
    fd = np.stack(
        [
            (
                quat.log(quat.multiply(quat.conjugate(quat.exp(v)), quat.exp(v + h * e)))
                - quat.log(quat.multiply(quat.conjugate(quat.exp(v)), quat.exp(v - h * e)))
            )
            / (2 * h)
            for e in np.eye(3)
        ],
        axis=-1,
    )  # exp(v + δ) = exp(v) exp(J_r δ)
    jr = right_jacobian(v)
    np.testing.assert_allclose(jr, fd, atol=1e-8)
    np.testing.assert_allclose(
        right_jacobian_inverse(v) @ jr, np.broadcast_to(np.eye(3), jr.shape), atol=1e-12
    )
    u = rng.normal(size=(6, 3))
    np.testing.assert_allclose(
        apply_right_jacobian(v, u), np.einsum("bij,bj->bi", jr, u), atol=1e-14
    )
    np.testing.assert_allclose(
        apply_right_jacobian(v, u, transpose=True), np.einsum("bji,bj->bi", jr, u), atol=1e-14
    )
    jri = right_jacobian_inverse(v)
    np.testing.assert_allclose(
        apply_right_jacobian_inverse(v, u, transpose=True),
        np.einsum("bji,bj->bi", jri, u),
        atol=1e-12,
    )


# -- Jacobians --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_jacobian_matches_finite_differences(walk, kind):
    sk, root, rot, tasks = walk
    task = tasks[kind]
    pose = Pose.of(sk, root, rot)
    jac = task.jacobian(pose)
    assert jac.shape == (len(root), task.size, 3 + 3 * sk.num_joints)
    fd = fd_jacobian(task, sk, root, rot)
    scale = max(1.0, np.abs(fd).max())
    np.testing.assert_allclose(jac, fd, atol=2e-7 * scale)
    assert np.abs(jac).max() > 0.1


@pytest.mark.parametrize("kind", KINDS)
def test_vjp_is_jacobian_transpose(walk, kind):
    sk, root, rot, tasks = walk
    task = tasks[kind]
    pose = Pose.of(sk, root, rot)
    c = np.random.default_rng(3).normal(size=(len(root), task.size))
    expect = np.einsum("fm,fmn->fn", c, task.jacobian(pose))
    got = task.vjp(pose, c)
    np.testing.assert_allclose(got, expect, atol=1e-9 * max(1.0, np.abs(expect).max()))


def test_joint_limit_rows_of_partial_dofs(vicon):
    sk = vicon.skeleton
    task = JointLimitTask(sk, weight=1.0)
    lim = dofs.channel_limits(sk)
    expect = sum(
        int(np.isfinite(lim[j, k, s]))
        for j, order in enumerate(sk.euler_orders)
        for k in range(len(order))
        for s in (0, 1)
    )
    assert task.size == expect > 50
    # only present channels: the knee (hinge "X") has two rows, the hips' root none
    knee = sk.index("ltibia")
    assert sorted(task.rows[task.rows[:, 0] == knee, 1:].tolist()) == [[0, 0], [0, 1]]
    assert not np.any(task.rows[:, 0] == sk.index("lhipjoint"))
    rng = np.random.default_rng(11)
    root, rot = perturbed(vicon, np.arange(0, vicon.num_frames, 400), rng)
    pose = Pose.of(sk, root, rot)
    theta = dofs.channel_angles(sk, rot)
    r = task.residual(pose)
    lower = task.rows[:, 2] == 0
    j, k = task.rows[:, 0], task.rows[:, 1]
    np.testing.assert_allclose(r[:, lower], theta[:, j[lower], k[lower]] - lim[j, k, 0][lower])
    np.testing.assert_allclose(r[:, ~lower], lim[j, k, 1][~lower] - theta[:, j[~lower], k[~lower]])
    np.testing.assert_allclose(task.jacobian(pose), fd_jacobian(task, sk, root, rot), atol=1e-6)


def test_joint_limit_jacobian_is_finite_at_gimbal_lock(lafan):
    sk = limited(lafan.skeleton)
    rot = lafan.rotations[:1].copy()
    rot[0, 3] = quat.quat_from_euler([0.2, np.pi / 2, -0.4], "ZYX")  # middle angle at 90°
    jac = JointLimitTask(sk).jacobian(Pose.of(sk, lafan.root_position[:1], rot))
    assert np.isfinite(jac).all()


# -- conventions ----------------------------------------------------------------------------
def test_orientation_residual_is_world_rotation_vector(walk):
    sk, root, rot, _ = walk
    pose = Pose.of(sk, root, rot)
    point = sk.index("RightHand")
    omega = np.random.default_rng(2).normal(0, 0.4, (len(root), 3))
    # goal ⊗ (a world rotation exp(ω) applied on the left) = current frame
    goal = quat.multiply(quat.exp(-omega), pose.world_rotations[:, point])
    np.testing.assert_allclose(OrientationTask(point, goal).residual(pose), omega, atol=1e-12)


def test_joint_and_position_residual_signs(walk):
    sk, root, rot, _ = walk
    pose = Pose.of(sk, root, rot)
    hand = sk.index("LeftHand_end")
    goal = pose.positions[:, hand] - [1.0, 2.0, 3.0]
    np.testing.assert_allclose(
        PositionTask(hand, goal).residual(pose), [[1.0, 2.0, 3.0]] * len(root)
    )
    floor = GroundTask([hand], 10.0, clearance=1.0)
    np.testing.assert_allclose(floor.residual(pose)[:, 0], pose.positions[:, hand, 1] - 11.0)
    assert floor.inequality and not PositionTask(hand, goal).inequality


def test_ground_is_a_shape_or_a_floor_height(walk):
    """The one environment (DESIGN.md, idea 3): a number is a level floor; any shape
    answers through its ground height and slope; anything else is refused."""
    sk, root, rot, _ = walk
    pose = Pose.of(sk, root, rot)
    points = sk.indices(["LeftToe_end", "RightToe_end"])
    exact, by_differences = GroundTask(points, Bumpy()), GroundTask(points, Bumpy(exact=False))
    np.testing.assert_allclose(exact.residual(pose), by_differences.residual(pose))
    np.testing.assert_allclose(exact.jacobian(pose), by_differences.jacobian(pose), atol=1e-6)
    level = GroundTask(points, 4.0)
    assert level.ground == Floor(4.0)
    for same in (Floor(4.0), Slope(4.0, [0.0, 0.0]), Scene((Floor(4.0),))):
        task = GroundTask(points, same)
        np.testing.assert_allclose(task.residual(pose), level.residual(pose))
        np.testing.assert_allclose(task.jacobian(pose), level.jacobian(pose), atol=1e-9)
    for wrong in ("floor", bumpy_height):
        with pytest.raises(TypeError, match="ground"):
            GroundTask(points, wrong)
    ground = Ground(np.array(points), np.zeros(2), Slope(1.0, [0.5, 0.0]))
    np.testing.assert_allclose(ground.height(np.array([[2.0, 7.0]])), [2.0])
    with pytest.raises(TypeError, match="surface"):
        Ground(np.array(points), np.zeros(2), bumpy_height)


# -- inactive goals and batches ----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["position", "orientation"])
def test_nan_goals_give_zero_rows(walk, kind):
    sk, root, rot, tasks = walk
    task = tasks[kind]
    pose = Pose.of(sk, root, rot)
    goal = np.array(task.goal)
    goal[::2] = np.nan
    partial = type(task)(task.point, goal, weight=task.weight)
    r, jac = partial.residual(pose), partial.jacobian(pose)
    assert np.all(r[::2] == 0.0) and np.all(jac[::2] == 0.0)
    np.testing.assert_allclose(r[1::2], task.residual(pose)[1::2])
    np.testing.assert_allclose(jac[1::2], task.jacobian(pose)[1::2])
    assert np.all(partial.vjp(pose, np.ones(r.shape))[::2] == 0.0)


def test_nan_component_makes_one_position_row_inactive(walk):
    sk, root, rot, tasks = walk
    pose = Pose.of(sk, root, rot)
    goal = np.array(tasks["position"].goal)
    goal[:, 1] = np.nan  # horizontal goal only
    task = PositionTask(tasks["position"].point, goal)
    assert np.all(task.residual(pose)[:, 1] == 0.0)
    assert np.all(task.jacobian(pose)[:, 1] == 0.0)
    np.testing.assert_allclose(
        task.residual(pose)[:, [0, 2]], tasks["position"].residual(pose)[:, [0, 2]]
    )


def test_nan_clearance_makes_ground_rows_inactive(walk):
    sk, root, rot, _ = walk
    pose = Pose.of(sk, root, rot)
    clearance = np.zeros((len(root), 2))
    clearance[::3, 1] = np.nan
    task = GroundTask(sk.indices(["LeftToe_end", "RightToe_end"]), 0.0, clearance)
    assert np.all(task.residual(pose)[::3, 1] == 0.0)
    assert np.all(task.jacobian(pose)[::3, 1] == 0.0)
    assert np.all(task.residual(pose)[1::3] != 0.0)


@pytest.mark.parametrize("kind", KINDS)
def test_batches_equal_per_pose_evaluation(lafan, kind):
    rng = np.random.default_rng(5)
    sk = lafan.skeleton
    b, f = 2, 3
    root, rot = perturbed(lafan, np.arange(b * f) * 300, rng)
    root, rot = root.reshape(b, f, 3), rot.reshape(b, f, -1, 4)
    task = make_tasks(sk, f, rng)[kind]  # goals (F, ...) broadcast over B
    pose = Pose.of(sk, root, rot)
    r, jac = task.residual(pose), task.jacobian(pose)
    c = rng.normal(size=r.shape)
    g = task.vjp(pose, c)
    assert r.shape == (b, f, task.size) and jac.shape == (b, f, task.size, 3 + 3 * sk.num_joints)
    for i in range(b):
        for k in range(f):
            single = task.take([k]) if task.batch_shape else task
            p1 = Pose.of(sk, root[i, k : k + 1], rot[i, k : k + 1])
            np.testing.assert_allclose(r[i, k], single.residual(p1)[0], atol=1e-12)
            np.testing.assert_allclose(jac[i, k], single.jacobian(p1)[0], atol=1e-9)
            np.testing.assert_allclose(g[i, k], single.vjp(p1, c[i, k : k + 1])[0], atol=1e-9)


def test_flatten_batch_and_take():
    goal = np.arange(2 * 3 * 3, dtype=float).reshape(2, 3, 3)
    task = PositionTask(4, goal)
    assert task.batch_shape == (2, 3)
    flat = task.flatten_batch((2, 3))
    assert flat.goal.shape == (6, 3)
    np.testing.assert_array_equal(flat.take([4, 1]).goal, goal.reshape(6, 3)[[4, 1]])
    shared = PositionTask(4, [1.0, 2.0, 3.0]).flatten_batch((5,))
    assert shared.goal.shape == (5, 3) and shared.take([0, 3]).goal.shape == (2, 3)
    assert flat.point == 4 and flat.weight == task.weight


# -- many tasks ------------------------------------------------------------------------------
def test_stack_layout(walk):
    sk, root, rot, tasks = walk
    pose = Pose.of(sk, root, rot)
    chosen = [tasks["position"], tasks["limits"], tasks["ground"]]
    r, jac, w, ineq = stack(chosen, pose)
    sizes = [t.size for t in chosen]
    total = sum(sizes)
    assert r.shape == (len(root), total) and jac.shape == (len(root), total, 3 + 3 * sk.num_joints)
    np.testing.assert_array_equal(w, np.repeat([2.0, 5.0, 1.0], sizes))
    np.testing.assert_array_equal(ineq, np.repeat([False, True, True], sizes))
    np.testing.assert_allclose(r[:, 3 : 3 + sizes[1]], tasks["limits"].residual(pose))
    empty = stack([], pose)
    assert empty[0].shape == (len(root), 0) and empty[1].shape == (len(root), 0, 69)


def test_penalty_and_gradient(walk):
    sk, root, rot, tasks = walk
    pose = Pose.of(sk, root, rot)
    chosen = [tasks[k] for k in KINDS]
    r, jac, w, ineq = stack(chosen, pose)
    assert np.any(ineq & (r < 0)) and np.any(ineq & (r > 0))  # both sides of the inequalities
    c = np.where(ineq, np.minimum(r, 0.0), r)
    expect = np.einsum("fm,m,fm->f", c, w, c)
    np.testing.assert_allclose(penalty(chosen, pose), expect, rtol=1e-12)
    expect_grad = np.einsum("fm,m,fmn->fn", 2 * c, w, jac)
    grad = penalty_gradient(chosen, pose)
    np.testing.assert_allclose(grad, expect_grad, rtol=1e-9, atol=1e-9 * np.abs(expect_grad).max())
    value, grad2, residuals = penalty_and_gradient(chosen, pose)
    np.testing.assert_allclose(value, expect, rtol=1e-12)
    np.testing.assert_allclose(grad2, grad)
    assert [x.shape[-1] for x in residuals] == [t.size for t in chosen]
    # the gradient is the derivative of the penalty along ⊕ (away from the kinks min(r, 0))
    h = 1e-6
    direction = np.random.default_rng(9).normal(size=grad.shape)
    plus = penalty(chosen, Pose.of(sk, *oplus(root, rot, h * direction)))
    minus = penalty(chosen, Pose.of(sk, *oplus(root, rot, -h * direction)))
    np.testing.assert_allclose((plus - minus) / (2 * h), np.sum(grad * direction, -1), rtol=1e-5)


def test_zero_weight_task_adds_nothing(walk):
    sk, root, rot, tasks = walk
    pose = Pose.of(sk, root, rot)
    silent = PositionTask(tasks["position"].point, tasks["position"].goal, weight=0.0)
    assert np.all(penalty([silent], pose) == 0.0)
    assert np.all(penalty_gradient([silent], pose) == 0.0)


# -- values ---------------------------------------------------------------------------------
def test_tasks_are_immutable_values():
    goal = np.zeros((4, 3))
    task = PositionTask(2, goal)
    goal[0] = 5.0  # the caller's array is copied
    assert np.all(task.goal == 0.0)
    with pytest.raises(ValueError):
        task.goal[0, 0] = 1.0
    with pytest.raises(AttributeError):
        task.weight = 3.0  # type: ignore[misc]
    assert isinstance(task, Task)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\)"):
        PositionTask(1, [1.0, 2.0])
    with pytest.raises(ValueError, match="weight"):
        PositionTask(1, [1.0, 2.0, 3.0], weight=-1.0)
    with pytest.raises(ValueError, match="infinite"):
        PositionTask(1, [np.inf, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"\(\.\.\., 4\)"):
        OrientationTask(1, [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="zero"):
        OrientationTask(1, [0.0, 0.0, 0.0, 0.0])


def test_point_out_of_range(walk):
    sk, root, rot, _ = walk
    with pytest.raises(ValueError, match="out of range"):
        PositionTask(sk.num_points, [0.0, 0.0, 0.0]).residual(Pose.of(sk, root, rot))
