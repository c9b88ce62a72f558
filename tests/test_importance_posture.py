"""Importance (Shin et al. 2001, eqs. 11-15) and the body posture solver (eqs. 18-20)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from retarget import find_roles, height, make_character
from retarget.core import quat
from retarget.core.kinematics import forward_kinematics
from retarget.environment import Box, Floor, Sphere
from retarget.ik.posture import BodyProblem, body_energy, body_joints, solve_body_posture
from retarget.online.importance import end_effector_importance, importance_curve


@given(st.floats(-5, 5))
def test_importance_curve_is_the_clamped_cubic(d):
    p = float(importance_curve(d))
    assert 0.0 <= p <= 1.0
    if 0 <= d < 1:
        assert p == pytest.approx(2 * d**3 - 3 * d**2 + 1, abs=1e-12)
    if d >= 1:
        assert p == 0.0
    if d <= 0:
        assert p == 1.0


def test_importance_curve_ends():
    eps = 1e-6
    assert importance_curve(0.0) == 1.0 and importance_curve(1.0) == 0.0
    # zero slope at both ends (eq. 14's conditions)
    assert abs(importance_curve(eps) - 1.0) / eps < 1e-5
    assert abs(importance_curve(1 - eps)) / eps < 1e-5
    d = np.linspace(0, 1, 101)
    assert (np.diff(importance_curve(d)) <= 0).all()


def test_importance_eqs_11_to_15():
    floor, box = Floor(0.0), Box([0.0, 50.0, 0.0], [10.0, 10.0, 10.0])
    points = np.array([[[100.0, 5.0, 0.0], [0.0, 65.0, 0.0]]])  # (1, 2, 3)
    velocity = np.array([[[0.0, -20.0, 0.0], [0.0, 0.0, 0.0]]])
    imp = end_effector_importance(
        points,
        velocity,
        [floor, box],
        [[10.0, 0.0], [20.0, 20.0]],
        clearance=[2.0, 0.0],
        lookahead=0.1,
    )
    # foot: d = 5 - 2 = 3, ḋ = -20 -> d+ = 1, d̄ = 0.1; the box does not interact (D = 0)
    assert imp.distance[0, 0, 0] == pytest.approx(3.0)
    assert imp.predicted[0, 0, 0] == pytest.approx(1.0)
    assert imp.weights[0, 0] == pytest.approx(2 * 0.1**3 - 3 * 0.1**2 + 1)
    assert imp.pairs[0, 0, 1] == 0.0
    # hand: 65 above the floor (d̄ > 1: 0), 5 above the box (d̄ = 0.25): max over objects
    assert imp.weights[0, 1] == pytest.approx(2 * 0.25**3 - 3 * 0.25**2 + 1)
    assert imp.nearest[0, 1] == 1


def test_importance_is_continuous_through_contact():
    sphere = Sphere([0.0, 0.0, 0.0], 10.0)
    t = np.linspace(-1, 1, 2001)
    points = np.stack([np.zeros_like(t), 10 + 8 * t**2, np.zeros_like(t)], -1)[:, None]
    vel = np.stack([np.zeros_like(t), 16 * t, np.zeros_like(t)], -1)[:, None]  # d/dt, t in s
    w = end_effector_importance(points, vel, [sphere], 15.0, lookahead=0.05).weights[:, 0]
    assert np.abs(np.diff(w)).max() < 0.01
    assert w.max() == 1.0 and w.min() < 0.4
    # approaching raises importance earlier than leaving keeps it (eq. 12)
    assert w[500] > w[1500]


@pytest.fixture(scope="module")
def blubby_pose(lafan):
    character = make_character(lafan.skeleton, preset="blubby")
    return character, lafan.root_position[100], lafan.rotations[100]


def test_body_posture_gradient_matches_finite_differences(blubby_pose):
    from scipy.optimize import check_grad

    sk, root, rot = blubby_pose
    roles = find_roles(sk)
    uppers = np.array([roles[r] for r in ("left_hip", "right_hip", "left_shoulder")])
    pos, _ = forward_kinematics(sk, root, rot)
    goals = pos[uppers] + np.array([[0, -70.0, 5], [10, -75.0, 0], [0, -80, 0]])
    radii = np.array([56.0, 50.0, np.inf])
    f = body_energy(
        BodyProblem(sk, root, rot, uppers, goals, radii, height=height(sk), alpha=0.1, beta=0.5)
    )
    k = len(body_joints(sk, uppers))
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.normal(0, 0.1, 3 + 3 * k)
        err = check_grad(lambda x: f(x)[0], lambda x: f(x)[1], x, epsilon=1e-7)
        assert err < 1e-5 * max(1.0, np.linalg.norm(f(x)[1]))
        assert f(x)[0] > 0


def test_body_posture_reaches_and_keeps_the_rest(blubby_pose):
    sk, root, rot = blubby_pose
    roles = find_roles(sk)
    uppers = np.array(
        [roles[r] for r in ("left_hip", "right_hip", "left_shoulder", "right_shoulder")]
    )
    pos, _ = forward_kinematics(sk, root, rot)
    lengths = np.array([55.0, 55.0, 50.0, 50.0])
    goals = pos[uppers] + np.array([[0, -70.0, 5], [5, -68.0, 0], [0, -20, 0], [0, -20, 0]])
    radii = lengths / np.array([1.0, 1.0, 0.0001, 0.0001])
    out = solve_body_posture(sk, root, rot, uppers, goals, radii, height=height(sk), alpha=1e-4)
    assert out.iterations > 0
    assert out.shortfall.max() < 0.05  # within 0.5 mm of reach, from 15 cm
    moved = body_joints(sk, uppers)
    others = np.setdiff1d(np.arange(sk.num_joints), moved)
    assert np.array_equal(out.rotations[others], rot[others])
    assert np.allclose(np.linalg.norm(out.rotations, axis=-1), 1.0)
    # goals already in reach: nothing moves, no iteration
    near = solve_body_posture(sk, root, rot, uppers, pos[uppers], radii, height=height(sk))
    assert near.iterations == 0
    assert quat.angle(near.rotations, rot).max() < 1e-12
