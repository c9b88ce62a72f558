"""The optimisers (retarget.core.optimize): CG against scipy, batches, Levenberg–Marquardt."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from retarget.core.optimize import (
    backtracking_conjugate_gradient,
    banded_levenberg_marquardt,
    conjugate_gradient,
    finite_difference_gradient,
    least_squares_cg,
    levenberg_marquardt,
)


# -- conjugate gradient ------------------------------------------------------------------------
def rosenbrock(x, index=None):
    """Extended Rosenbrock, rows of x (B, n) with n even; values (B,), gradients (B, n)."""
    a, b = x[:, 0::2], x[:, 1::2]
    value = np.sum(100.0 * (b - a**2) ** 2 + (1.0 - a) ** 2, axis=1)
    grad = np.empty_like(x)
    grad[:, 0::2] = -400.0 * a * (b - a**2) - 2.0 * (1.0 - a)
    grad[:, 1::2] = 200.0 * (b - a**2)
    return value, grad


STARTS = [[-1.2, 1.0], [2.0, -1.5], [0.3, 0.8], [-0.5, -0.5]]


@pytest.mark.parametrize("start", STARTS)
def test_cg_matches_scipy_on_rosenbrock(start):
    ours = conjugate_gradient(rosenbrock, np.array(start), tolerance=1e-14, gradient_tolerance=1e-9)
    ref = scipy.optimize.minimize(
        lambda x: rosenbrock(x[None])[0][0],
        start,
        jac=lambda x: rosenbrock(x[None])[1][0],
        method="CG",
        options={"gtol": 1e-9},
    )
    assert ours.converged and ref.success
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-6)
    np.testing.assert_allclose(ours.x, [1.0, 1.0], atol=1e-6)
    assert ours.value < 1e-12


def test_cg_batch_solves_every_problem_on_its_own():
    x0 = np.array([[-1.2, 1.0, 0.5, 0.5], [2.0, -1.5, -1.0, 1.2], [1.0, 1.0, 1.0, 1.0]])
    batch = conjugate_gradient(rosenbrock, x0, tolerance=1e-14, gradient_tolerance=1e-9)
    assert batch.x.shape == (3, 4) and batch.converged.all()
    np.testing.assert_allclose(batch.x, 1.0, atol=1e-6)
    for i in range(3):
        single = conjugate_gradient(rosenbrock, x0[i], tolerance=1e-14, gradient_tolerance=1e-9)
        np.testing.assert_allclose(single.x, batch.x[i], atol=1e-12)
        assert single.iterations == batch.iterations[i]
    # the problem that starts at the minimum is evaluated once and never moves
    assert batch.iterations[2] == 0 and batch.evaluations[2] == 1
    assert np.all(batch.x[2] == 1.0)
    assert batch.iterations[0] != batch.iterations[1]  # own stopping tests


def test_cg_only_evaluates_active_problems():
    seen = []

    def fun(x, index):
        seen.append(np.array(index))
        return rosenbrock(x)

    conjugate_gradient(fun, np.array([[1.0, 1.0], [-1.2, 1.0]]))
    assert all(0 not in s for s in seen[1:])  # problem 0 stopped at once


def test_cg_with_finite_difference_gradient():
    fd = finite_difference_gradient(lambda x, index: rosenbrock(x)[0])
    x = np.array([[-1.2, 1.0, 0.3, 0.1], [1.5, 2.0, -0.3, 0.4]])
    f, g = fd(x, np.arange(2))
    np.testing.assert_allclose(g, rosenbrock(x)[1], rtol=1e-6)
    np.testing.assert_allclose(f, rosenbrock(x)[0])
    result = conjugate_gradient(fd, x, gradient_tolerance=1e-6)
    np.testing.assert_allclose(result.x, 1.0, atol=1e-4)


def test_cg_diagonal_preconditioner_solves_scaled_bowl_in_one_step():
    scale = np.array([1.0, 1e4, 1e-2])

    def bowl(x, index):
        return 0.5 * np.sum(scale * (x - 3.0) ** 2, axis=1), scale * (x - 3.0)

    plain = conjugate_gradient(bowl, np.zeros((1, 3)), gradient_tolerance=1e-10)
    pre = conjugate_gradient(bowl, np.zeros((1, 3)), preconditioner=1.0 / scale)
    np.testing.assert_allclose(pre.x, 3.0, atol=1e-9)
    assert pre.iterations[0] <= 2 < plain.iterations[0]


def test_cg_rejects_bad_input():
    with pytest.raises(ValueError, match="x0"):
        conjugate_gradient(rosenbrock, np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="not finite"):
        conjugate_gradient(lambda x, i: (np.full(len(x), np.nan), x), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="preconditioner"):
        conjugate_gradient(rosenbrock, np.zeros((1, 2)), preconditioner=[1.0, -1.0])


# -- least squares ----------------------------------------------------------------------------
def rosenbrock_residuals(x, index):
    """Rosenbrock as residuals ``(1 - x, 10 (y - x²))``, rows of x (B, 2)."""
    return np.stack([1.0 - x[:, 0], 10.0 * (x[:, 1] - x[:, 0] ** 2)], axis=1)


def test_levenberg_marquardt_finds_least_squares_minima():
    # a batch of Rosenbrock problems as residuals (1 - x, 10 (y - x^2)), and a linear one
    x = levenberg_marquardt(
        rosenbrock_residuals, np.array([[-1.2, 1.0], [2.0, 2.0], [0.0, 0.0]]), max_iterations=200
    )
    np.testing.assert_allclose(x, 1.0, atol=1e-6)


def test_least_squares_cg_finds_the_same_minima():
    x = least_squares_cg(
        rosenbrock_residuals, np.array([[-1.2, 1.0], [2.0, 2.0], [0.0, 0.0]]), max_iterations=200
    )
    np.testing.assert_allclose(x, 1.0, atol=1e-5)


def test_backtracking_cg_minimises_one_problem():
    # a badly scaled bowl with a squared hinge (the shape of the posture energy)
    scale = np.array([1.0, 30.0, 0.2])
    centre = np.array([0.5, -1.0, 2.0])

    def fun(x):
        hinge = min(x[0] - 1.0, 0.0)
        value = float(np.sum(scale * (x - centre) ** 2) + 10.0 * hinge**2)
        grad = 2.0 * scale * (x - centre)
        grad[0] += 20.0 * hinge
        return value, grad

    x, value, iterations = backtracking_conjugate_gradient(
        fun, np.zeros(3), tolerance=1e-10, max_iterations=500
    )
    assert value == pytest.approx(fun(x)[0])
    expected = [(0.5 + 10.0) / 11.0, -1.0, 2.0]  # the hinge pulls x0 toward 1
    np.testing.assert_allclose(x, expected, atol=1e-5)
    assert 0 < iterations <= 500


class _Line:
    """A banded problem: values y (N,) fitted by x (N,) with a smoothness penalty
    ``s (x_{i+1} − x_i)``; residuals linear, so one Gauss–Newton step solves it."""

    def __init__(self, y, s):
        self.y, self.s = y, s

    def residual(self, x):
        return np.concatenate([self.y - x, -self.s * np.diff(x)])

    def evaluate(self, x):
        class Evaluation:
            merit = float(np.sum(self.residual(x) ** 2))

        return Evaluation()

    def linearise(self, x, evaluation):
        n = len(x)
        jac = np.vstack([np.eye(n), self.s * np.diff(np.eye(n), axis=0)])  # ∂(−r)/∂x
        jtj = jac.T @ jac
        band = np.zeros((2, n))
        band[0] = np.diag(jtj)
        band[1, :-1] = np.diag(jtj, -1)
        return band, jac.T @ self.residual(x)


def test_banded_levenberg_marquardt_solves_a_banded_least_squares_problem():
    rng = np.random.default_rng(3)
    line = _Line(rng.normal(size=12), 2.0)
    x, evaluation, done = banded_levenberg_marquardt(
        line.evaluate, line.linearise, np.zeros(12), iterations=20
    )
    n = 12
    a = np.vstack([np.eye(n), 2.0 * np.diff(np.eye(n), axis=0)])
    b = np.concatenate([line.y, np.zeros(n - 1)])
    exact = np.linalg.lstsq(a, b, rcond=None)[0]
    np.testing.assert_allclose(x, exact, atol=1e-6)
    assert evaluation.merit == pytest.approx(float(np.sum((a @ exact - b) ** 2)), rel=1e-9)
    assert 1 <= done <= 20


def test_banded_levenberg_marquardt_stops_when_nothing_is_active():
    x, _, done = banded_levenberg_marquardt(
        lambda x: type("E", (), {"merit": 1.0})(), lambda x, e: None, np.ones(3), iterations=5
    )
    assert done == 0 and np.all(x == 1.0)
