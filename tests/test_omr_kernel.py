"""The compiled update of the online retargeter against a plain numpy evaluation.

The kernel (:mod:`retarget.online._kernels.omr`) and the compiled rate-control step
(:func:`retarget.ik.rate.rate_step`) are checked here on random poses and
problems against the same math written with the library's task objects
(:func:`retarget.tasks.stack`) and numpy's SVD: the rows and residuals, the step,
and one whole update (full-DOF and hinged skeletons, priorities, rigidity, levers,
the §3.1 correction).
"""

from __future__ import annotations

import numpy as np
import pytest

from retarget.core import quat
from retarget.core.dofs import channel_axes, project_to_dofs
from retarget.core.kinematics import Pose
from retarget.core.motion import ominus
from retarget.ik.rate import damped_pseudo_inverse, dexterity, rate_step
from retarget.io import read_asf_amc
from retarget.online import Effector, GoalFrame, OnlineRetargeter
from retarget.online._kernels.omr import _task_rows
from retarget.tasks import OrientationTask, PositionTask, stack


# -- a plain numpy evaluation -----------------------------------------------------------------
def numpy_rate_step(
    jac,
    change,
    error,
    s_change,
    s_error,
    *,
    damping,
    gains,
    min_dex,
    max_input,
    rigidity,
    priority,
    activation=None,
):
    """Eq. (21) with priorities, one problem, from numpy's SVD (no shared code); a row of
    activation ``a`` asks for ``a`` of its input and ``1 − a`` of ``J_i (Δ_{i−1} + P s)``."""
    act = np.ones(len(change)) if activation is None else np.asarray(activation, np.float64)
    root_w = np.sqrt(rigidity)
    j = jac / root_w
    levels = np.unique(priority)
    sv_top = np.linalg.svd(j[priority == levels[0]], compute_uv=False)
    dex = sv_top.min() / sv_top.max()
    gain = min(1.0, dex / min_dex) if min_dex > 0 else 1.0
    u = change + gains[0] * gain * error
    clamped = False
    for lv in levels:
        rows = priority == lv
        length = np.linalg.norm(u[rows])
        if length > max_input:
            u[rows] *= max_input / length
            clamped = True
    s = (s_change + gains[1] * gain * s_error) * root_w
    n = j.shape[1]
    delta, proj = np.zeros(n), np.eye(n)
    for lv in levels:
        rows = priority == lv
        a = j[rows] @ proj
        uu, sv, vt = np.linalg.svd(a, full_matrices=False)
        live = sv > 1e-9 * sv[0]  # zero below round-off: those directions are arbitrary
        ask = act[rows] * (u[rows] - j[rows] @ delta) + (1.0 - act[rows]) * (a @ s)
        coef = np.where(live, sv / (sv**2 + damping**2), 0.0) * (uu.T @ ask)
        delta = delta + vt.T @ coef
        proj = proj - vt[live].T @ vt[live]
    return (delta + proj @ s) / root_w, dex, gain, clamped


def numpy_update(
    filt,
    options,
    pose,
    goals,
    last_goals,
    ori,
    last_ori,
    source,
    last_source,
    *,
    moving,
    correction,
):
    """One update of :class:`OnlineRetargeter` (made with ``options``) from task objects,
    ``stack`` and numpy."""
    sk, h = filt.skeleton, filt.height
    tasks, rows, scale, change, level, act = [], [], [], [], [], []
    for k, e in enumerate(filt.effectors):
        if e.axes:
            goal = np.full(3, np.nan)
            goal[list(e.axes)] = goals[k, list(e.axes)]
            tasks.append(PositionTask(e.point, goal))
            rows.append(np.isfinite(goal))
            scale.append(np.full(3, 1.0 / h))
            change.append(goal - last_goals[k] if moving else np.zeros(3))
            level.append(np.full(3, e.priority))
            act.append(np.full(3, filt._activation[k]))
    for k, e in enumerate(filt.effectors):
        if e.orientation:
            tasks.append(OrientationTask(e.point, ori[k]))
            rows.append(np.full(3, np.isfinite(ori[k]).all()))
            scale.append(np.full(3, e.lever / h if e.lever > 0 else 1.0))
            turn = quat.log(quat.multiply(ori[k], quat.conjugate(last_ori[k])))
            change.append(turn if moving else np.zeros(3))
            level.append(np.full(3, e.priority))
            act.append(np.full(3, filt._activation[k]))
    residual, jac, _, _ = stack(tasks, pose)
    rows, scale, level = np.concatenate(rows), np.concatenate(scale), np.concatenate(level)
    act = np.concatenate(act)
    change = np.concatenate(change)
    change = np.where(np.isfinite(change), change * scale, 0.0)
    error = -residual * scale - change
    active = np.zeros(sk.num_joints, bool)
    active[options.get("active_joints", slice(None))] = True
    active[0] = True
    joints = np.flatnonzero(active)
    cols = np.concatenate([np.arange(3), (3 + 3 * joints[:, None] + np.arange(3)).ravel()])
    jac = jac[:, cols] * scale[:, None]
    jac[:, :3] *= h
    sec_error = ominus(*last_source, pose.root_position, pose.rotations)
    sec_change = ominus(*source, *last_source) if moving else np.zeros_like(sec_error)
    sec_error[:3] /= h
    sec_change[:3] /= h
    if correction:
        sec_error[:] = sec_change[:] = 0.0
    sec_error, sec_change = sec_error[cols], sec_change[cols]
    basis = None
    if not sk.dof_mask.all():  # columns along the channels: v = C δθ
        basis = channel_axes(sk, pose.rotations)[joints]
        jac[:, 3:] = np.einsum("mai,aik->mak", jac[:, 3:].reshape(len(jac), -1, 3), basis).reshape(
            len(jac), -1
        )
        pinv = np.linalg.pinv(basis)
        for vec in (sec_error, sec_change):
            vec[3:] = np.einsum("aki,ai->ak", pinv, vec[3:].reshape(-1, 3)).ravel()
    weights = np.repeat(options.get("rigidity", np.ones(sk.num_joints + 1)), 3)[cols]
    delta, *_ = numpy_rate_step(
        jac[rows],
        change[rows],
        error[rows],
        sec_change,
        sec_error,
        damping=filt.damping,
        gains=filt.gains,
        min_dex=filt.min_dexterity,
        max_input=filt.max_input,
        rigidity=weights,
        priority=level[rows],
        activation=act[rows],
    )
    if basis is not None:
        delta[3:] = np.einsum("aik,ak->ai", basis, delta[3:].reshape(-1, 3)).ravel()
    x = np.zeros(3 + 3 * sk.num_joints)
    x[cols] = delta
    root = pose.root_position + h * x[:3]
    rot = quat.multiply(pose.rotations, quat.exp(x[3:].reshape(-1, 3)))
    rot[~active] = source[1][~active]
    if not sk.dof_mask.all():
        rot = project_to_dofs(sk, rot)
    return root, rot


# -- fixtures ---------------------------------------------------------------------------------
def random_pose(motion, rng, angle=0.4):
    f = rng.integers(motion.num_frames)
    rot = quat.multiply(
        motion.rotations[f], quat.exp(rng.normal(0, angle, (motion.skeleton.num_joints, 3)))
    )
    if not motion.skeleton.dof_mask.all():
        rot = project_to_dofs(motion.skeleton, rot)
    return motion.root_position[f] + rng.normal(0, 5.0, 3), rot


@pytest.fixture(scope="module")
def vicon(data_dir):
    return read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")[:200]


def walk_filter(motion, **options):
    """Toes, a hand, a foot orientation with a lever, the pelvis x, z; two levels."""
    sk = motion.skeleton
    names = [n for n in sk.point_names if n.endswith("_end")]
    left, right, hand = names[0], names[1], names[-1]
    foot = int(sk.point_parents[sk.index(left)])
    effectors = [
        Effector(sk.index(left)),
        Effector(sk.index(right), priority=1),
        Effector(sk.index(hand), axes=(0, 1)),
        Effector(foot, axes=(), orientation=True, lever=12.0, priority=1),
        Effector(sk.index(right), axes=(), orientation=True),
        Effector(0, axes=(0, 2)),
    ]
    return OnlineRetargeter(sk, effectors, height=170.0, fps=motion.fps, **options)


def random_goals(filt, pose, rng, spread=3.0):
    """Goals near the pose's points (a NaN component or row now and then)."""
    points = [e.point for e in filt.effectors]
    goals = pose.positions[points] + rng.normal(0, spread, (len(points), 3))
    ori = quat.multiply(
        pose.world_rotations[points], quat.exp(rng.normal(0, 0.2, (len(points), 3)))
    )
    goals[rng.random(goals.shape) < 0.1] = np.nan
    ori[rng.random(len(points)) < 0.2] = np.nan
    return goals, ori


# -- the rows ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_kernel_rows_are_the_tasks_rows(lafan, seed):
    rng = np.random.default_rng(seed)
    filt = walk_filter(lafan)
    pose = Pose.of(lafan.skeleton, *random_pose(lafan, rng))
    goals, ori = random_goals(filt, pose, rng)
    tasks = []
    for k, e in enumerate(filt.effectors):
        if e.axes:
            goal = np.full(3, np.nan)
            goal[list(e.axes)] = goals[k, list(e.axes)]
            tasks.append(PositionTask(e.point, goal))
    tasks += [
        OrientationTask(e.point, ori[k]) for k, e in enumerate(filt.effectors) if e.orientation
    ]
    residual, jac, _, _ = stack(tasks, pose)
    m, n = jac.shape
    got_r, got_j, got_on = np.empty(m), np.empty((m, n)), np.empty(m, bool)
    sk = lafan.skeleton
    _task_rows(
        pose.positions[None],
        pose.world_rotations[None],
        sk.point_parents,
        sk.num_joints,
        goals,
        ori,
        filt._layout,
        got_r,
        got_j,
        got_on,
    )
    np.testing.assert_allclose(got_r, residual, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got_j, jac, rtol=0, atol=1e-11)
    expected_on = np.concatenate(
        [
            np.isfinite(t.goal) if isinstance(t, PositionTask) else np.isfinite(t.goal[:3])
            for t in tasks
        ]
    )
    np.testing.assert_array_equal(got_on, expected_on)
    assert not got_on.all()  # the pelvis height, the hand's z: rows off


# -- the step ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_rate_step_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    m, n, batch = rng.integers(2, 14), rng.integers(14, 40), 3
    jac = rng.normal(size=(batch, m, n))
    change, error = rng.normal(size=(2, batch, m))
    s_change, s_error = rng.normal(size=(2, batch, n))
    options = dict(
        damping=float(rng.choice([1e-3, 0.05])),
        gains=(1.0, 0.3),
        min_dexterity=float(rng.choice([0.0, 0.5])),
        max_input=float(rng.choice([np.inf, 1.0])),
        rigidity=rng.uniform(0.5, 10.0, n),
        priority=rng.integers(0, 3, m),
    )
    if len(np.unique(options["priority"])) > 1:  # rows fading in and out (one level: 1)
        options["activation"] = np.where(rng.random(m) < 0.5, 1.0, rng.random(m))
    out = rate_step(jac, change, error, s_change, s_error, **options)
    for b in range(batch):
        delta, dex, gain, clamped = numpy_rate_step(
            jac[b],
            change[b].copy(),
            error[b],
            s_change[b],
            s_error[b],
            damping=options["damping"],
            gains=options["gains"],
            min_dex=options["min_dexterity"],
            max_input=options["max_input"],
            rigidity=options["rigidity"],
            priority=options["priority"],
            activation=options.get("activation"),
        )
        np.testing.assert_allclose(out.delta[b], delta, rtol=1e-9, atol=1e-9)
        assert out.dexterity[b] == pytest.approx(dex, rel=1e-9)
        assert out.gain[b] == pytest.approx(gain, rel=1e-9)
        assert bool(out.clamped[b]) == clamped


def test_rate_step_broadcasts_and_checks_shapes():
    rng = np.random.default_rng(0)
    jac = rng.normal(size=(4, 9))
    u, s = rng.normal(size=(5, 4)), rng.normal(size=9)
    out = rate_step(jac, u, np.zeros(4), s, np.zeros(9), priority=[0, 0, 1, 1])
    assert out.delta.shape == (5, 9) and out.gain.shape == (5,) and out.clamped.dtype == bool
    for b in range(5):
        one = rate_step(jac, u[b], np.zeros(4), s, np.zeros(9), priority=[0, 0, 1, 1])
        np.testing.assert_array_equal(out.delta[b], one.delta)
    assert damped_pseudo_inverse(np.stack([jac, 2 * jac]), 0.0).shape == (2, 9, 4)
    assert dexterity(np.stack([jac, jac])).shape == (2,)
    with pytest.raises(ValueError, match="primary_error"):
        rate_step(jac, u, np.zeros(3), s, np.zeros(9))
    with pytest.raises(ValueError, match="priority"):
        rate_step(jac, u, np.zeros(4), s, np.zeros(9), priority=[0, 1])


# -- one whole update -------------------------------------------------------------------------
CASES = {
    "all joints": dict(iterations=2),
    "some joints, rigid root, lowered gains": dict(
        active_joints=[1, 2, 3, 4, 5, 6, 7, 8], min_dexterity=0.9, damping=0.05, gains=(0.8, 0.3)
    ),
    "clamped": dict(max_input=0.001),
}


@pytest.mark.parametrize("skeleton", ["bvh", "asf hinges"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("kind", ["step", "correction", "settle"])
def test_update_matches_numpy(lafan, vicon, skeleton, case, kind):
    motion = lafan if skeleton == "bvh" else vicon
    sk = motion.skeleton
    rng = np.random.default_rng(len(case) + 7 * len(kind) + len(skeleton))
    options = dict(CASES[case])
    if "active_joints" in options:
        options["rigidity"] = np.concatenate([[10.0, 4.0], rng.uniform(1, 3, sk.num_joints - 1)])
    filt = walk_filter(motion, **options)
    root, rot = random_pose(motion, rng)
    pose = Pose.of(sk, root, rot)
    goals, ori = random_goals(filt, pose, rng)
    last_goals, last_ori = random_goals(filt, pose, rng)
    source, last_source = random_pose(motion, rng, 0.2), random_pose(motion, rng, 0.2)
    filt.reset(settle=0)
    filt.step(GoalFrame(root, rot, goals, ori))
    filt._activation[:] = rng.choice([1.0, 0.0, 0.4], len(filt.effectors))  # rows fading
    moving, correction = kind == "step", kind == "correction"
    gain, clamped = filt._update(
        last_goals, goals, last_ori, ori, last_source, source, moving=moving, correction=correction
    )
    assert (gain < 1.0) == ("lowered" in case)
    assert clamped or case != "clamped"
    want_root, want_rot = numpy_update(
        filt,
        options,
        pose,
        goals,
        last_goals,
        ori,
        last_ori,
        source,
        last_source,
        moving=moving,
        correction=correction,
    )
    got_root, got_rot = filt.pose.root_position, filt.pose.rotations
    assert np.abs(got_root - root).max() > 1e-6  # the update did move the pose
    np.testing.assert_allclose(got_root, want_root, rtol=0, atol=1e-9)
    np.testing.assert_allclose(quat.canonical(got_rot), quat.canonical(want_rot), atol=1e-10)
    fk = Pose.of(sk, got_root, got_rot)  # the kept FK is the new pose's
    np.testing.assert_allclose(filt._pos[0], fk.positions, atol=1e-9)
    np.testing.assert_allclose(filt._world[0], fk.world_rotations, atol=1e-12)


def test_filter_leaves_its_inputs_alone(lafan):
    walk = lafan[:5]
    filt = walk_filter(walk)
    points = [e.point for e in filt.effectors]
    world = Pose.of(walk.skeleton, walk.root_position, walk.rotations)
    goals, ori = world.positions[:, points], world.world_rotations[:, points]
    root, rot = walk.root_position.copy(), walk.rotations.copy()
    for f in range(5):
        filt.step(GoalFrame(root[f], rot[f], goals[f], ori[f]))
    np.testing.assert_array_equal(root, walk.root_position)  # the state is the filter's own
    np.testing.assert_array_equal(rot, walk.rotations)


# -- the channels of one pose (retarget.core._kernels.dofs) ----------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_channel_kernels_are_the_dofs_functions(vicon, seed):
    """Channel axes, their pseudo-inverse and the projection onto the channels of one
    pose, compiled, against :func:`retarget.core.dofs.channel_axes`, ``numpy.linalg.pinv`` and
    :func:`retarget.core.dofs.project_to_dofs`, on CMU's skeleton (one, two and three channels,
    channel frames turned) at random rotations off the channels."""
    from retarget.core._kernels.dofs import channel_basis, project

    sk = vicon.skeleton
    rng = np.random.default_rng(seed)
    rot = quat.normalize(rng.normal(size=(sk.num_joints, 4)))
    order = np.array(
        [
            ["XYZ".index(a) for a in o + "".join(c for c in "XYZ" if c not in o)]
            for o in sk.euler_orders
        ],
        dtype=np.intp,
    )
    count = np.array([len(o) for o in sk.euler_orders], dtype=np.intp)
    assert set(count) == {0, 1, 2, 3}
    joints = np.flatnonzero(count > 0)
    basis = np.zeros((len(joints), 3, 3))
    inverse = np.zeros((len(joints), 3, 3))
    axes = np.ascontiguousarray(sk.axes)
    channel_basis(rot, joints, axes, order, count, basis, inverse)
    want = channel_axes(sk, rot)[joints]
    np.testing.assert_allclose(basis, want, atol=1e-12)
    np.testing.assert_allclose(inverse, np.linalg.pinv(want), atol=1e-9)
    projected = rot.copy()
    project(projected, axes, order, count)
    np.testing.assert_allclose(
        quat.canonical(projected), quat.canonical(project_to_dofs(sk, rot)), atol=1e-12
    )
