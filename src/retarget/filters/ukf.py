"""The unscented Kalman filter as a constraint solver (Tak & Ko 2005, §5.3, eqs. 12-16).

The process model takes each frame's prior from the source motion, with a
constant prior covariance (eq. 12), so the update of one frame does not
depend on another's: :func:`unscented_update` takes a batch of frames and
evaluates the measurement (constraint) function once on all their ``2n + 1``
sigma points (eq. 13), an array ``(B, 2n + 1, n)``, never in a Python loop
over points. Eqs. (14)-(16) follow:

    Ẑ⁻ = Σ W_i Z_i,   P_zz = Σ W_i (Z_i − Ẑ⁻)(Z_i − Ẑ⁻)ᵀ + N_z,
    P_xz = Σ W_i (X_i − x̂⁻)(Z_i − Ẑ⁻)ᵀ,   K = P_xz P_zz⁻¹,   x̂ = x̂⁻ + K (Z − Ẑ⁻).

Sigma points are Julier's (the paper's eq. 13): ``X_0 = x̂⁻``, ``X_i = x̂⁻ ±``
the i-th column of the lower Cholesky factor of ``(n + κ) P``, weights
``κ / (n + κ)`` and ``1 / (2 (n + κ))`` for mean and covariance alike;
``κ = 3 − n`` by default (Julier and Uhlmann's choice for Gaussian priors,
after Wan and van der Merwe). A constraint row whose goal is NaN in a frame
is off there (its gain column is zero): the batch keeps one shape when
constraints switch on and off.

Why our own: filterpy's ``UnscentedKalmanFilter`` calls the measurement
function once per sigma point and handles one frame at a time (17 ms per
step for 66 states and 12 measurements, issue 8); it stays the reference of
``tests/test_ukf.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from ..core.arrays import Array

__all__ = ["UnscentedResult", "sigma_points", "unscented_update"]


def sigma_points(mean: ArrayLike, covariance: ArrayLike, kappa: float | None = None):
    """Eq. (13): Julier's sigma points and weights.

    Parameters
    ----------
    mean : array_like, shape (B, n)
    covariance : array_like, shape (n, n) or (B, n, n)
        Symmetric positive definite.
    kappa : float, optional
        Default ``3 − n``; ``n + κ`` must be positive.

    Returns
    -------
    points : ndarray, shape (B, 2n + 1, n)
    weights : ndarray, shape (2n + 1,)
    """
    x = np.asarray(mean, dtype=np.float64)
    n = x.shape[-1]
    k = 3.0 - n if kappa is None else float(kappa)
    if not n + k > 0:
        raise ValueError(f"Expected n + kappa > 0, got n = {n}, kappa = {k}")
    root = np.linalg.cholesky((n + k) * np.asarray(covariance, dtype=np.float64))
    spread = np.swapaxes(np.broadcast_to(root, (*x.shape[:-1], n, n)), -1, -2)  # rows: columns
    points = np.concatenate(
        [x[..., None, :], x[..., None, :] + spread, x[..., None, :] - spread], axis=-2
    )
    weights = np.full(2 * n + 1, 0.5 / (n + k))
    weights[0] = k / (n + k)
    return points, weights


@dataclass(frozen=True, eq=False)
class UnscentedResult:
    """One batched update (eqs. 14-16).

    Attributes
    ----------
    mean : ndarray, shape (B, n)
        ``x̂``.
    covariance : ndarray, shape (B, n, n)
        ``P⁻ − K P_zz Kᵀ``.
    predicted : ndarray, shape (B, m)
        ``Ẑ⁻``, the constraint values the prior gives.
    residual : ndarray, shape (B, m)
        ``Z − H(x̂)``, the constraints' error after the update (NaN where off);
        found on first use, by one more call of the measurement function on the
        posterior means ``(B, 1, n)`` (an iterated update that only needs the
        mean does not pay for it).
    """

    mean: Array
    covariance: Array
    predicted: Array
    measure: Callable[[Array], Array] = field(repr=False)
    goal: Array = field(repr=False)

    @cached_property
    def residual(self) -> Array:
        after = np.asarray(self.measure(self.mean[:, None, :]), dtype=np.float64)[:, 0]
        return np.where(np.isfinite(self.goal), self.goal - after, np.nan)


def unscented_update(
    mean: ArrayLike,
    covariance: ArrayLike,
    measure: Callable[[Array], Array],
    goal: ArrayLike,
    noise: ArrayLike | None = None,
    *,
    kappa: float | None = None,
    at: ArrayLike | None = None,
) -> UnscentedResult:
    """Eqs. (13)-(16) for a batch of frames with a common measurement function.

    Parameters
    ----------
    mean : array_like, shape (B, n)
        Each frame's prior ``x̂⁻`` (eq. 12: from the source motion).
    covariance : array_like, shape (n, n) or (B, n, n)
        ``P⁻``, constant over frames in the paper.
    measure : callable
        ``H``: sigma points ``(B, S, n)`` → constraint values ``(B, S, m)``,
        one call for the whole batch (and once more, on the posterior means
        ``(B, 1, n)``, if the result's ``residual`` is read).
    goal : array_like, shape (B, m)
        ``Z``; NaN switches a row off in that frame.
    noise : array_like, shape (m, m) or (B, m, m), optional
        ``N_z`` (default zero: hard constraints).
    kappa : float, optional
        See :func:`sigma_points`.
    at : array_like, shape (B, n), optional
        Linearise about this estimate instead of the prior mean: the iterated
        form (Gauss–Newton on ``‖x − x̂⁻‖²_P⁻¹`` subject to ``H(x) = Z``). The
        sigma points spread about ``at``, ``Hₛ = P_xzᵀ P⁻¹`` is their
        statistical Jacobian, and ``x̂ = x̂⁻ + K (Z − Ẑ − Hₛ (x̂⁻ − at))``; with
        ``at = x̂⁻`` this is eq. (16).
    """
    x = np.asarray(mean, dtype=np.float64)
    given = np.asarray(covariance, dtype=np.float64)
    p = np.broadcast_to(given, (*x.shape, x.shape[-1]))
    centre = x if at is None else np.asarray(at, dtype=np.float64)
    points, w = sigma_points(centre, given, kappa)  # one factorisation when P is shared
    z_pts = np.asarray(measure(points), dtype=np.float64)  # (B, S, m)
    target = np.asarray(goal, dtype=np.float64)
    m = z_pts.shape[-1]
    if target.shape != (*x.shape[:-1], m):
        raise ValueError(f"Expected `goal` of shape {(*x.shape[:-1], m)}, got {target.shape}")
    on = np.isfinite(target)
    z_hat = np.einsum("s,bsm->bm", w, z_pts)
    dz = z_pts - z_hat[:, None, :]
    dx = points - centre[:, None, :]
    wdz = np.swapaxes(dz * w[:, None], -1, -2)  # (B, m, S): BLAS products, not einsum
    p_zz = wdz @ dz
    if noise is not None:
        p_zz = p_zz + np.asarray(noise, dtype=np.float64)
    p_xz = np.swapaxes(dx * w[:, None], -1, -2) @ dz
    # rows switched off: no cross-covariance, no innovation
    off = ~on
    p_xz = np.where(off[:, None, :], 0.0, p_xz)
    p_zz = np.where(off[:, :, None] | off[:, None, :], 0.0, p_zz)
    # rows switched off get the active rows' mean variance (decoupled: their gain is 0)
    count = np.maximum(on.sum(axis=-1), 1)
    scale = np.maximum(np.einsum("bii,bi->b", p_zz, on.astype(np.float64)) / count, 1e-300)
    p_zz = p_zz + np.einsum("bi,ij->bij", off * scale[:, None], np.eye(m))
    innovation = target - z_hat
    if at is not None:  # Hₛ (x̂⁻ − at) with Hₛ = P_xzᵀ P⁻¹
        if given.ndim == 2:  # one P⁻ for the batch: one solve, a column per frame
            step = np.linalg.solve(given, (x - centre).T).T
        else:
            step = np.linalg.solve(p, (x - centre)[..., None])[..., 0]
        innovation = innovation - np.einsum("bnm,bn->bm", p_xz, step)
    innovation = np.where(on, innovation, 0.0)
    # K = P_xz P_zz⁺: P_zz is rank-deficient when goals are redundant (three points of
    # one rigid foot) or the chosen DOFs cannot move them; its pseudo-inverse (eigen-
    # values under 1e-10 of the largest dropped) gives such directions no gain, where an
    # inverse would turn round-off in them into arbitrary corrections
    values, vectors = np.linalg.eigh(p_zz)
    kept = values > 1e-10 * values[:, -1:]
    inverse = np.where(kept, 1.0 / np.where(kept, values, 1.0), 0.0)
    p_zz_pinv = (vectors * inverse[:, None, :]) @ np.swapaxes(vectors, -1, -2)
    gain = p_xz @ p_zz_pinv
    post = x + np.einsum("bnm,bm->bn", gain, innovation)
    cov = p - gain @ p_zz @ np.swapaxes(gain, -1, -2)
    return UnscentedResult(post, cov, z_hat, measure, target)
