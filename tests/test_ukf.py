"""The batched unscented update (Tak & Ko 2005, eqs. 12-16) against filterpy's UKF."""

from __future__ import annotations

import numpy as np
import pytest
from filterpy.kalman import JulierSigmaPoints, UnscentedKalmanFilter

from retarget.filters.ukf import sigma_points, unscented_update

N, M, B = 6, 3, 5


def h_rows(x):
    """A nonlinear measurement of (..., 6) states: (..., 3)."""
    return np.stack(
        [
            np.sin(x[..., 0]) + x[..., 1] ** 2,
            x[..., 2] * x[..., 3],
            np.exp(0.1 * x[..., 4]) + x[..., 5],
        ],
        axis=-1,
    )


def spd(rng, n, scale):
    a = rng.normal(size=(n, n))
    return scale * (a @ a.T + n * np.eye(n))


def filterpy_update(x, p, z, r, kappa, rows=slice(None)):
    points = JulierSigmaPoints(N, kappa=kappa)
    ukf = UnscentedKalmanFilter(
        dim_x=N,
        dim_z=len(z[rows]),
        dt=1.0,
        hx=lambda s: h_rows(s)[rows],
        fx=lambda s, dt: s,
        points=points,
    )
    ukf.x, ukf.P, ukf.R = x.copy(), p.copy(), r[rows][:, rows]
    ukf.sigmas_f = points.sigma_points(x, p)
    ukf.update(z[rows])
    return ukf.x, ukf.P


@pytest.mark.parametrize("kappa", [None, 1.0])
def test_equals_filterpy_on_every_frame_of_a_batch(kappa):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(B, N))
    p = spd(rng, N, 0.05)
    r = np.diag([0.01, 0.02, 0.03])
    z = h_rows(x) + rng.normal(scale=0.3, size=(B, M))
    calls = []

    def measure(points):
        calls.append(points.shape)
        return h_rows(points)

    out = unscented_update(x, p, measure, z, r, kappa=kappa)
    assert calls[0] == (B, 2 * N + 1, N)  # every sigma point of every frame in one call
    k = 3.0 - N if kappa is None else kappa
    for b in range(B):
        mean, cov = filterpy_update(x[b], p, z[b], r, k)
        np.testing.assert_allclose(out.mean[b], mean, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(out.covariance[b], cov, rtol=1e-8, atol=1e-9)


def test_a_row_switched_off_is_the_smaller_problem():
    """A NaN goal drops that constraint in that frame: filterpy on the other rows."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(B, N))
    p = spd(rng, N, 0.05)
    r = np.diag([0.01, 0.02, 0.03])
    z = h_rows(x) + rng.normal(scale=0.3, size=(B, M))
    z[2, 1] = np.nan
    out = unscented_update(x, p, h_rows, z, r, kappa=1.0)
    mean, _ = filterpy_update(x[2], p, z[2], r, 1.0, rows=[0, 2])
    np.testing.assert_allclose(out.mean[2], mean, rtol=1e-9, atol=1e-9)
    assert np.isnan(out.residual[2, 1]) and np.isfinite(out.residual[[0, 1, 3, 4]]).all()


def test_hard_linear_constraints_are_met_exactly():
    """With N_z = 0 and a linear constraint the update is the exact conditional mean:
    the constraint holds afterwards (the paper's hard constraints)."""
    rng = np.random.default_rng(6)
    a = rng.normal(size=(M, N))
    x = rng.normal(size=(B, N))
    p = np.diag(np.full(N, 1e-2))
    z = rng.normal(size=(B, M))
    out = unscented_update(x, p, lambda s: s @ a.T, z, kappa=1.0)
    np.testing.assert_allclose(out.residual, 0.0, atol=1e-8)
    # the smallest change in the prior's metric: the exact Kalman update
    gain = p @ a.T @ np.linalg.inv(a @ p @ a.T)
    np.testing.assert_allclose(out.mean, x + (z - x @ a.T) @ gain.T, atol=1e-9)


def test_sigma_points_carry_the_mean_and_covariance():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, N))
    p = spd(rng, N, 1.0)
    pts, w = sigma_points(x, p)
    assert w.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(np.einsum("s,bsn->bn", w, pts), x, atol=1e-12)
    d = pts - x[:, None]
    np.testing.assert_allclose(
        np.einsum("s,bsi,bsj->bij", w, d, d), np.broadcast_to(p, (2, N, N)), atol=1e-10
    )
    with pytest.raises(ValueError, match="n \\+ kappa"):
        sigma_points(x, p, kappa=-N)
