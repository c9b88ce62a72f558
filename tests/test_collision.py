"""The body-collision task (tasks/collision.py): closest points of segments against brute
force, the Jacobian against finite differences, capsules fitted to points."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget.core import quat
from retarget.core.kinematics import Pose
from retarget.core.motion import oplus
from retarget.core.skeleton import Skeleton
from retarget.tasks import CollisionTask, fit_capsules
from retarget.tasks.collision import closest_points, separate_pairs

coords = st.floats(-2.0, 2.0, allow_nan=False)
vec = st.tuples(coords, coords, coords).map(np.array)


@settings(max_examples=200, deadline=None)
@given(vec, vec, vec, vec)
def test_closest_points_of_segments_against_brute_force(p0, p1, q0, q1):
    ca, cb = closest_points(p0, p1, q0, q1)
    s = np.linspace(0.0, 1.0, 401)
    a = p0 + s[:, None] * (p1 - p0)
    b = q0 + s[:, None] * (q1 - q0)
    brute = np.linalg.norm(a[:, None] - b[None], axis=-1).min()
    got = np.linalg.norm(ca - cb)
    assert got <= brute + 1e-9
    step = max(np.linalg.norm(p1 - p0), np.linalg.norm(q1 - q0)) / 400
    assert got >= brute - step - 1e-9


@settings(max_examples=200, deadline=None)
@given(vec, vec, vec, vec, st.sampled_from(["", "point", "parallel"]))
def test_the_compiled_closest_points_are_numpys(p0, p1, q0, q1, case):
    """The compiled kernel of CollisionTask (tasks/_kernels/collision.py) gives the numpy
    function's closest points, on random segments, a segment of no length, parallel ones."""
    from retarget.tasks._kernels.collision import closest_pairs

    if case == "point":
        p1 = p0.copy()
    elif case == "parallel":
        q1 = q0 + 0.7 * (p1 - p0)
    want_a, want_b = closest_points(p0, p1, q0, q1)
    a, b = np.stack([p0, q0])[None], np.stack([p1, q1])[None]
    ca, cb = np.empty((1, 1, 3)), np.empty((1, 1, 3))
    closest_pairs(a, b, np.array([[0, 1]], np.intp), ca, cb)
    np.testing.assert_allclose(ca[0, 0], want_a, atol=1e-12)
    np.testing.assert_allclose(cb[0, 0], want_b, atol=1e-12)


def _chain():
    """Two arms of three joints from a root, capsules on the last two of each."""
    names = ("root", "a1", "a2", "a3", "b1", "b2", "b3")
    parents = [-1, 0, 1, 2, 0, 4, 5]
    offsets = [
        [0, 0, 0],
        [0.3, 0, 0],
        [0, 0.5, 0],
        [0, 0.5, 0],
        [-0.3, 0, 0],
        [0, 0.5, 0],
        [0, 0.5, 0],
    ]
    return Skeleton(names, parents, np.array(offsets, float), unit="m")


def test_collision_jacobian_matches_finite_differences():
    sk = _chain()
    rng = np.random.default_rng(0)
    caps = fit_capsules(
        [
            (j, rng.normal(scale=0.05, size=(30, 3)) + np.array([0.0, 0.25, 0.0]))
            for j in (2, 3, 5, 6)
        ]
    )
    rot = quat.quat_from_rotvec(rng.normal(scale=0.4, size=(4, sk.num_joints, 3)))
    root = rng.normal(size=(4, 3))
    pose = Pose.of(sk, root, rot)
    task = CollisionTask(caps, [(0, 2), (0, 3), (1, 2), (1, 3)], margin=0.01)
    jac = task.jacobian(pose)
    n = 3 + 3 * sk.num_joints
    eps = 1e-6
    numeric = np.empty_like(jac)
    for k in range(n):
        dx = np.zeros(n)
        dx[k] = eps
        up = oplus(root, rot, dx)
        dn = oplus(root, rot, -dx)
        numeric[..., k] = (task.residual(Pose.of(sk, *up)) - task.residual(Pose.of(sk, *dn))) / (
            2 * eps
        )
    np.testing.assert_allclose(jac, numeric, atol=1e-6)
    cot = rng.normal(size=(4, task.size))
    np.testing.assert_allclose(task.vjp(pose, cot), np.einsum("bm,bmn->bn", cot, jac), atol=1e-12)


def test_fitted_capsule_and_pairs():
    """A cylinder's surface points give its axis and radius; a joint and its parent are
    not a pair; a pair keeps the margin, or no less than its gap at rest."""
    t = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    ring = np.stack([0.1 * np.cos(t), np.zeros_like(t), 0.1 * np.sin(t)], 1)
    cyl = np.concatenate([ring + np.array([0.0, y, 0.0]) for y in np.linspace(0, 0.5, 6)])
    caps = fit_capsules([(2, cyl), (3, cyl), (5, cyl), (6, cyl)])
    np.testing.assert_allclose(caps.radius, 0.1, atol=1e-9)
    assert np.allclose(np.abs(caps.b - caps.a)[:, 1], 0.3, atol=1e-9)  # 0.5 − 2 r
    sk = _chain()
    rest = Pose.of(sk, np.zeros(3), np.tile(quat.identity(), (sk.num_joints, 1)))
    pairs, gaps = separate_pairs(sk, caps, rest, margin=0.05)
    assert {tuple(p) for p in pairs.tolist()} == {(0, 2), (0, 3), (1, 2), (1, 3)}
    np.testing.assert_allclose(gaps, 0.05)  # all 0.4 apart at rest: the margin
    bent = Pose.of(
        sk,
        np.zeros(3),
        quat.quat_from_rotvec(np.array([[0, 0, 0]] * 2 + [[0, 0, 1.2]] + [[0, 0, 0]] * 4)),
    )
    _, gaps = separate_pairs(sk, caps, bent, margin=0.05)
    assert gaps.min() < 0.0  # overlapping in that pose: no deeper than that


def test_gaps_below_are_the_residual_where_near_and_a_bound_elsewhere():
    """CollisionTask.gaps_below (the compiled broad phase of which pairs are near): the
    residual where it is under the threshold, a value at least the threshold and at most
    the residual elsewhere; Constraints.violated_apart uses it."""
    from retarget.tasks import Constraints

    rng = np.random.default_rng(3)
    sk = _chain()
    caps = fit_capsules([(j, rng.normal(size=(12, 3)) * [0.05, 0.2, 0.05]) for j in (2, 3, 5, 6)])
    task = CollisionTask(caps, [(0, 2), (0, 3), (1, 2), (1, 3)], margin=0.01)
    root = rng.normal(size=(40, 3))
    rot = quat.quat_from_rotvec(rng.normal(size=(40, sk.num_joints, 3)))
    pose = Pose.of(sk, root, rot)
    exact = task.residual(pose)
    for below in (-0.05, 0.0, 0.1):
        got = task.gaps_below(pose, below)
        near = exact < below
        np.testing.assert_allclose(got[near], exact[near], atol=1e-12)
        assert (got[~near] >= below - 1e-12).all() and (got[~near] <= exact[~near] + 1e-12).all()
    violated = Constraints(40, apart=task).violated_apart(pose)
    np.testing.assert_array_equal(violated, (exact < 0).any(axis=1))
