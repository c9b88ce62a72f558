"""The library's optimisers: nonlinear conjugate gradient and Levenberg–Marquardt.

Every solver of the library that minimises a smooth function calls one of these
(the IK of Lee & Shin, the verbs' polish, Shin et al.'s body posture, Tak &
Ko's dynamic filter on one curve), so each algorithm is written once:

* :func:`conjugate_gradient`: many problems at once, each with its own
  direction, strong-Wolfe line search (cubic interpolation, secant
  extrapolation) and stopping test; Polak–Ribière+ with restarts and an
  optional (re-linearised) preconditioner (:func:`retarget.ik.numeric.solve_ik`);
  :func:`finite_difference_gradient` makes its objective from values alone;
* :func:`backtracking_conjugate_gradient`: one problem, Polak–Ribière+ with an
  Armijo backtracking line search (:mod:`retarget.ik.posture`, whose squared
  hinges defeat a strong-Wolfe search);
* :func:`levenberg_marquardt`: least squares ``½|r(x)|²`` for a batch of
  problems, forward-difference Jacobians (:mod:`retarget.ik.hybrid`,
  :func:`retarget.ik.verbs.polish`); :func:`least_squares_cg` minimises the
  same function by :func:`conjugate_gradient` preconditioned by the
  Gauss–Newton Hessian (the hybrid IK's ``minimizer="cg"``);
* :func:`banded_levenberg_marquardt`: one large problem whose normal equations
  are banded (LAPACK's banded Cholesky), Jacobians from the caller
  (:func:`retarget.physics.curve.curve_update`).

Problems are rows of ``x`` (B, n); objectives are called with the rows they
are asked about and the problems' indices, ``(x (B', n), index (B',))``, so a
batch whose problems stop at different iterations is evaluated only where it
still runs. Numpy alone at import (scipy's banded solver is imported when
:func:`banded_levenberg_marquardt` runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .arrays import Array

__all__ = [
    "CGResult",
    "backtracking_conjugate_gradient",
    "banded_levenberg_marquardt",
    "conjugate_gradient",
    "finite_difference_gradient",
    "least_squares_cg",
    "levenberg_marquardt",
]

Index = NDArray[np.intp]
ValueAndGradient = Callable[[Array, Index], tuple[Array, Array]]
Residuals = Callable[[Array, Index], Array]


# --------------------------------------------------------------------------------------
# nonlinear conjugate gradient, batched
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class CGResult:
    """Outcome of :func:`conjugate_gradient`, one entry per problem of the batch.

    Attributes
    ----------
    x : ndarray, shape (B, n)
        The minimisers found.
    value : ndarray, shape (B,)
    gradient : ndarray, shape (B, n)
    iterations : ndarray of int, shape (B,)
        Line searches done (CG iterations).
    evaluations : ndarray of int, shape (B,)
        Calls of the objective (value and gradient) for each problem.
    converged : ndarray of bool, shape (B,)
        A stopping test held (gradient, relative decrease, or no decrease
        possible along steepest descent); ``False`` after ``max_iterations``.
    """

    x: Array
    value: Array
    gradient: Array
    iterations: NDArray[np.int64]
    evaluations: NDArray[np.int64]
    converged: NDArray[np.bool_]


def _cubic_minimum(a1: Array, f1: Array, d1: Array, a2: Array, f2: Array, d2: Array) -> Array:
    """Minimiser of the cubic through two points with slopes (Nocedal & Wright eq. 3.59).

    NaN where there is none (then the caller bisects).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t1 = d1 + d2 - 3.0 * (f1 - f2) / (a1 - a2)
        disc = t1 * t1 - d1 * d2
        t2 = np.sign(a2 - a1) * np.sqrt(np.maximum(disc, 0.0))
        a = a2 - (a2 - a1) * (d2 + t2 - t1) / (d2 - d1 + 2.0 * t2)
    return np.where((disc >= 0.0) & np.isfinite(a), a, np.nan)


def _line_search(
    fun: ValueAndGradient,
    x: Array,
    f: Array,
    d: Array,
    dphi0: Array,
    alpha0: Array,
    index: Index,
    evaluations: NDArray[np.int64],
    *,
    c1: float,
    c2: float,
    max_steps: int,
) -> tuple[Array, Array, Array, NDArray[np.bool_]]:
    """Vectorised strong-Wolfe line search along ``d`` for every row of ``x``.

    Each row keeps its own bracket ``[lo, hi]`` (``lo`` = best point meeting
    the sufficient-decrease test so far, starting at 0) and proposes its next
    step by cubic interpolation of values and slopes (inside the bracket,
    safeguarded to its inner 80 %) or, while not yet bracketed, by a secant on
    the slopes (extrapolation by 1.5x to 8x). This is the "zoom" scheme of
    Nocedal & Wright, Algorithms 3.5-3.6, run in lockstep over the rows.

    Returns
    -------
    alpha, f_new, g_new : accepted step, value and gradient per row
    ok : rows that decreased ``f`` (others keep ``alpha = 0``)
    """
    m, n = x.shape
    a_lo = np.zeros(m)
    f_lo = f.copy()
    s_lo = dphi0.copy()
    g_lo = np.full((m, n), np.nan)  # gradient at lo (only needed once lo > 0)
    a_hi = np.full(m, np.inf)
    f_hi = np.full(m, np.nan)
    s_hi = np.full(m, np.nan)
    a = alpha0.copy()
    done = np.zeros(m, dtype=bool)
    ok = np.zeros(m, dtype=bool)
    out_a = np.zeros(m)
    out_f = f.copy()
    out_g = np.full((m, n), np.nan)
    for _ in range(max_steps):
        s = np.flatnonzero(~done)
        if s.size == 0:
            break
        fs, gs = fun(x[s] + a[s, None] * d[s], index[s])
        evaluations[index[s]] += 1
        fs = np.asarray(fs, dtype=np.float64)
        gs = np.asarray(gs, dtype=np.float64)
        slope = np.einsum("ij,ij->i", gs, d[s])
        finite = np.isfinite(fs) & np.isfinite(slope)
        armijo = finite & (fs <= f[s] + c1 * a[s] * dphi0[s])
        accept = armijo & (np.abs(slope) <= c2 * np.abs(dphi0[s]))
        acc = s[accept]
        out_a[acc], out_f[acc], out_g[acc] = a[acc], fs[accept], gs[accept]
        done[acc] = ok[acc] = True
        # -- update the brackets of the others (zoom) -----------------------------------
        rest = ~accept
        to_hi = rest & (~armijo | (fs >= f_lo[s]))
        to_lo = rest & ~to_hi
        with np.errstate(invalid="ignore"):  # 0 · inf while not bracketed
            flip = to_lo & (slope * (a_hi[s] - a_lo[s]) >= 0.0)
        prev_a_lo, prev_s_lo = a_lo[s].copy(), s_lo[s].copy()
        i = s[flip]
        a_hi[i], f_hi[i], s_hi[i] = a_lo[i], f_lo[i], s_lo[i]
        i = s[to_hi]
        a_hi[i], f_hi[i] = a[i], np.where(finite[to_hi], fs[to_hi], np.nan)
        s_hi[i] = np.where(finite[to_hi], slope[to_hi], np.nan)
        i = s[to_lo]
        a_lo[i], f_lo[i], s_lo[i], g_lo[i] = a[i], fs[to_lo], slope[to_lo], gs[to_lo]
        # -- next trial -------------------------------------------------------------------
        bracketed = np.isfinite(a_hi[s])
        lo_b = np.minimum(a_lo[s], a_hi[s])
        hi_b = np.where(bracketed, np.maximum(a_lo[s], a_hi[s]), lo_b)
        width = hi_b - lo_b
        cubic = _cubic_minimum(a_lo[s], f_lo[s], s_lo[s], a_hi[s], f_hi[s], s_hi[s])
        cubic = np.where(np.isnan(cubic), 0.5 * (lo_b + hi_b), cubic)
        inside = np.clip(cubic, lo_b + 0.1 * width, hi_b - 0.1 * width)
        with np.errstate(divide="ignore", invalid="ignore"):
            secant = a[s] - slope * (a[s] - prev_a_lo) / (slope - prev_s_lo)
        secant = np.where(np.isfinite(secant) & (slope > prev_s_lo), secant, 8.0 * a[s])
        outside = np.clip(secant, 1.5 * a[s], 8.0 * a[s])
        nxt = np.where(bracketed, inside, outside)
        # stop when the bracket has collapsed to rounding
        tiny = bracketed & (width <= 1e-14 * np.maximum(hi_b, 1e-300))
        a[s] = nxt
        stop = s[rest & tiny]
        done[stop] = True
    # rows without a strong-Wolfe point: take the best sufficient decrease seen
    fallback = np.flatnonzero(~ok & (a_lo > 0.0))
    out_a[fallback], out_f[fallback], out_g[fallback] = (
        a_lo[fallback],
        f_lo[fallback],
        g_lo[fallback],
    )
    ok[fallback] = True
    return out_a, out_f, out_g, ok


Preconditioner = Callable[[Array, Index], Array]


def _preconditioner(
    preconditioner: ArrayLike | Preconditioner | None, b: int, n: int
) -> Preconditioner:
    if preconditioner is None:
        return lambda g, index: g
    if callable(preconditioner):
        return preconditioner
    diag = np.broadcast_to(np.asarray(preconditioner, dtype=np.float64), (b, n))
    if not (np.isfinite(diag).all() and (diag > 0).all()):
        raise ValueError("Expected a finite, positive diagonal preconditioner")
    return lambda g, index: diag[index] * g


def conjugate_gradient(
    value_and_gradient: ValueAndGradient,
    x0: ArrayLike,
    *,
    max_iterations: int = 1000,
    tolerance: float = 1e-10,
    gradient_tolerance: float = 1e-10,
    restart: int | None = None,
    refresh: int | None = None,
    preconditioner: ArrayLike | Preconditioner | None = None,
    curvature: float = 0.1,
    max_line_search: int = 20,
) -> CGResult:
    """Minimise many smooth functions at once by nonlinear conjugate gradient.

    Polak-Ribière+ with restarts (every ``restart`` iterations, when the
    direction is not a descent direction, and Powell's test ``|gₖ₊₁ᵀPgₖ| ≥
    0.2 gₖ₊₁ᵀPgₖ₊₁``), an optional preconditioner ``P``, and a strong-Wolfe
    line search per problem (:func:`_line_search`: cubic interpolation,
    secant extrapolation; first trial from the last decrease, ``α₀ = 2.02
    (f_{k−1} − f_k) / (−gᵀd)`` capped at 1, as scipy's CG).

    .. math::
        d_{k+1} = -P g_{k+1} + β_k d_k,\\qquad
        β_k = \\max\\Big(0, \\frac{g_{k+1}^T P (g_{k+1} - g_k)}{g_k^T P g_k}\\Big)

    Every problem of the batch has its own direction, step and stopping
    test; problems that stop are no longer evaluated nor changed.

    Parameters
    ----------
    value_and_gradient : callable
        ``(x (B', n), index (B',)) -> (values (B',), gradients (B', n))``: the
        objectives of the problems ``index`` (rows of ``x0``) at the points
        ``x``. A function of ``x`` alone may ignore ``index``; finite-difference
        gradients fit too (:func:`finite_difference_gradient`).
    x0 : array_like, shape (B, n) or (n,)
        Starting points.
    max_iterations : int
    tolerance : float
        Stop a problem when an iteration decreases its value by at most
        ``tolerance · max(|f_k|, |f_{k+1}|)``.
    gradient_tolerance : float
        Stop a problem when ``max |g| ≤ gradient_tolerance``.
    restart : int, optional
        Restart with (preconditioned) steepest descent every ``restart``
        iterations (default n).
    refresh : int, optional
        With an updatable preconditioner: re-linearise it every ``refresh``
        iterations (default: at restarts only).
    preconditioner : array_like or callable, optional
        ``P``, an approximation of the inverse Hessian: a positive diagonal
        (shape (n,) or (B, n)) or a function ``(g (B', n), index) -> P g`` of a
        symmetric positive definite ``P`` per problem. If the function has a
        method ``update(x (B', n), index)``, it is called at the start, at
        every restart and every ``refresh`` iterations, so ``P`` may follow
        the current point (a Gauss-Newton Hessian, say). β then compares
        ``P_{k+1} g_{k+1}`` with ``P_k g_k`` (flexible PR+).
    curvature : float
        ``c₂`` of the strong Wolfe test ``|φ'(α)| ≤ c₂ |φ'(0)|`` (0.1 = nearly
        exact line searches, as CG wants).
    max_line_search : int
        Evaluations per line search.

    Returns
    -------
    CGResult
        Shapes (B, ...) or, for ``x0`` of shape (n,), without the batch axis.

    Examples
    --------
    >>> import numpy as np
    >>> def bowl(x, index):
    ...     return np.sum((x - 1.0) ** 2, axis=1), 2.0 * (x - 1.0)
    >>> r = conjugate_gradient(bowl, np.zeros((2, 3)))
    >>> np.round(r.x, 6).tolist(), r.converged.tolist()
    ([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], [True, True])
    """
    x = np.array(x0, dtype=np.float64)
    single = x.ndim == 1
    if single:
        x = x[None]
    if x.ndim != 2:
        raise ValueError(f"Expected `x0` of shape (B, n) or (n,), got {x.shape}")
    b, n = x.shape
    if not np.isfinite(x).all():
        raise ValueError("`x0` contains NaN or infinite values")
    apply_p = _preconditioner(preconditioner, b, n)
    restart = n if restart is None else max(int(restart), 1)
    refresh = restart if refresh is None else max(int(refresh), 1)
    all_index = np.arange(b)
    evaluations = np.ones(b, dtype=np.int64)
    f, g = value_and_gradient(x, all_index)
    f = np.array(f, dtype=np.float64).reshape(b)
    g = np.array(g, dtype=np.float64).reshape(b, n)
    if not (np.isfinite(f).all() and np.isfinite(g).all()):
        raise ValueError("The objective or its gradient is not finite at `x0`")
    update = getattr(preconditioner, "update", None)
    if update is not None:
        update(x, all_index)
    pg = apply_p(g, all_index)
    d = -pg
    gpg = np.einsum("ij,ij->i", g, pg)
    f_old = f + 0.5 * np.linalg.norm(g, axis=1)  # scipy's guess of a previous value
    since_restart = np.zeros(b, dtype=np.int64)
    iterations = np.zeros(b, dtype=np.int64)
    converged = np.abs(g).max(axis=1, initial=0.0) <= gradient_tolerance
    active = ~converged
    for _ in range(max_iterations):
        act = np.flatnonzero(active)
        if act.size == 0:
            break
        dphi0 = np.einsum("ij,ij->i", g[act], d[act])
        steep = dphi0 >= 0.0  # not a descent direction: restart
        if steep.any():
            d[act[steep]] = -pg[act[steep]]
            dphi0[steep] = -gpg[act[steep]]
            since_restart[act[steep]] = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha0 = 2.02 * (f_old[act] - f[act]) / -dphi0
        alpha0 = np.where(np.isfinite(alpha0) & (alpha0 > 0.0), np.minimum(alpha0, 1.0), 1.0)
        alpha, f_new, g_new, ok = _line_search(
            value_and_gradient,
            x[act],
            f[act],
            d[act],
            dphi0,
            alpha0,
            act,
            evaluations,
            c1=1e-4,
            c2=curvature,
            max_steps=max_line_search,
        )
        iterations[act] += 1
        # -- no decrease: restart, or stop if steepest descent already failed ----------
        failed = act[~ok]
        was_steep = since_restart[failed] == 0
        stalled = failed[was_steep]
        converged[stalled] = True
        active[stalled] = False
        retry = failed[~was_steep]
        d[retry] = -pg[retry]
        since_restart[retry] = 0
        # -- accepted steps -------------------------------------------------------------
        i = act[ok]
        f_i, fn = f[i], f_new[ok]
        gn = g_new[ok]
        x[i] += alpha[ok, None] * d[i]
        scale = np.maximum(np.maximum(np.abs(f_i), np.abs(fn)), 1e-300)
        stop = (f_i - fn <= tolerance * scale) | (np.abs(gn).max(axis=1) <= gradient_tolerance)
        since = since_restart[i] + 1
        renew = ~stop & ((since >= restart) | (since % refresh == 0))
        if update is not None and renew.any():  # re-linearise the preconditioner
            update(x[i[renew]], i[renew])
        pgn = apply_p(gn, i)
        gpg_new = np.einsum("ij,ij->i", gn, pgn)
        with np.errstate(divide="ignore", invalid="ignore"):
            beta = np.einsum("ij,ij->i", gn, pgn - pg[i]) / gpg[i]
        beta = np.where(np.isfinite(beta), np.maximum(beta, 0.0), 0.0)
        powell = np.abs(np.einsum("ij,ij->i", gn, pg[i])) >= 0.2 * gpg_new
        reset = (since >= restart) | powell
        beta = np.where(reset, 0.0, beta)
        d[i] = -pgn + beta[:, None] * d[i]
        since_restart[i] = np.where(reset, 0, since)
        f_old[i] = f_i
        f[i], g[i], pg[i], gpg[i] = fn, gn, pgn, gpg_new
        converged[i[stop]] = True
        active[i[stop]] = False
    out = CGResult(x, f, g, iterations, evaluations, converged)
    if single:
        out = CGResult(x[0], f[0], g[0], iterations[0], evaluations[0], converged[0])
    return out


def finite_difference_gradient(
    value: Callable[[Array, Index], Array], *, step: float = 1e-6
) -> ValueAndGradient:
    """A ``value_and_gradient`` for :func:`conjugate_gradient` from values alone.

    Central differences with steps ``step · max(1, |x_i|)``; the ``2n + 1``
    points of every problem go to ``value`` in one batched call.

    Parameters
    ----------
    value : callable
        ``(x (B', n), index (B',)) -> values (B',)``.
    step : float

    Examples
    --------
    >>> import numpy as np
    >>> fg = finite_difference_gradient(lambda x, i: np.sum(x**2, axis=1))
    >>> f, g = fg(np.array([[1.0, -2.0]]), np.array([0]))
    >>> np.round(g, 6).tolist()
    [[2.0, -4.0]]
    """

    def value_and_gradient(x: Array, index: Index) -> tuple[Array, Array]:
        b, n = x.shape
        h = step * np.maximum(1.0, np.abs(x))  # (b, n)
        shifts = np.eye(n)[None] * h[:, None, :]  # (b, n, n)
        points = np.concatenate([x[:, None, :], x[:, None, :] + shifts, x[:, None, :] - shifts], 1)
        idx = np.repeat(np.asarray(index), 2 * n + 1)
        vals = np.asarray(value(points.reshape(-1, n), idx), dtype=np.float64).reshape(b, 2 * n + 1)
        grad = (vals[:, 1 : n + 1] - vals[:, n + 1 :]) / (2.0 * h)
        return vals[:, 0], grad

    return value_and_gradient


# --------------------------------------------------------------------------------------
# least squares: Levenberg–Marquardt, batched
# --------------------------------------------------------------------------------------
def _fd_jacobian(
    residuals: Residuals, x: Array, index: NDArray[np.intp], step: float
) -> tuple[Array, Array]:
    """Residuals (b, m) at x (b, n) and their forward-difference Jacobian (b, m, n): one call."""
    b, n = x.shape
    points = np.concatenate([x[:, None, :], x[:, None, :] + step * np.eye(n)[None]], axis=1)
    res = residuals(points.reshape(-1, n), np.repeat(index, n + 1)).reshape(b, n + 1, -1)
    r0 = res[:, 0]
    return r0, np.swapaxes(res[:, 1:] - r0[:, None], 1, 2) / step


def levenberg_marquardt(
    residuals: Residuals,
    x0: ArrayLike,
    *,
    max_iterations: int = 30,
    step: float = 1e-7,
    tolerance: float = 1e-8,
) -> Array:
    """Minimise ``½|r(x)|²`` for a batch of problems by Levenberg–Marquardt.

    ``residuals(x (b, n), index (b,)) -> (b, m)`` for the problems ``index``;
    Jacobians by forward differences (``n + 1`` points in one call). Each
    iteration solves ``(JᵀJ + μ diag(JᵀJ)) δ = −Jᵀr`` per problem, accepts the
    step when it lowers the objective (then ``μ /= 3``), else ``μ *= 4``; a
    problem stops when a step changes its objective by less than ``tolerance``
    (relative) or moves no parameter by more than ``1e-9``.

    Returns
    -------
    ndarray, shape (B, n)
    """
    x = np.array(x0, dtype=np.float64)
    b, n = x.shape
    mu = np.full(b, 1e-3)
    live = np.arange(b)
    r, jac = _fd_jacobian(residuals, x, live, step)
    f = 0.5 * np.sum(r**2, axis=1)
    for _ in range(max_iterations):
        if live.size == 0:
            break
        jtj = np.einsum("bmi,bmj->bij", jac, jac)
        g = np.einsum("bmi,bm->bi", jac, r)
        diag = np.einsum("bii->bi", jtj)
        a = jtj + (mu[live, None] * np.maximum(diag, 1e-12))[:, :, None] * np.eye(n)
        delta = -np.linalg.solve(a, g[..., None])[..., 0]
        trial = x[live] + delta
        r_new = residuals(trial, live)
        f_new = 0.5 * np.sum(r_new**2, axis=1)
        better = f_new < f
        small = (np.abs(f - f_new) <= tolerance * np.maximum(f, 1e-300)) | (
            np.abs(delta).max(axis=1) < 1e-9
        )
        x[live[better]] = trial[better]
        mu[live[better]] /= 3.0
        mu[live[~better]] *= 4.0
        keep = ~(small & better) & (mu[live] < 1e12)
        f = np.where(better, f_new, f)[keep]
        live = live[keep]
        if live.size == 0:
            break
        # new Jacobians where the point moved; the old ones stay valid elsewhere
        moved = better[keep]
        r = np.where(better[:, None], r_new, r)[keep]
        jac = jac[keep]
        if moved.any():
            r_m, jac_m = _fd_jacobian(residuals, x[live[moved]], live[moved], step)
            r[moved], jac[moved] = r_m, jac_m
    return x


def least_squares_cg(residuals: Residuals, x0: ArrayLike, *, max_iterations: int = 30) -> Array:
    """Minimise ``½|r(x)|²`` for a batch of problems by :func:`conjugate_gradient`,
    preconditioned by the Gauss–Newton Hessian ``JᵀJ`` (lightly damped).

    ``residuals`` as for :func:`levenberg_marquardt`; gradients ``Jᵀr`` from
    forward-difference Jacobians (step 1e-7), each kept for the preconditioner
    of the point it was found at. Lee & Shin's minimiser (1999, §5.1) on the
    hybrid IK's residuals.

    Returns
    -------
    ndarray, shape (B, n)
    """
    start = np.array(x0, dtype=np.float64)
    n, n_params = start.shape
    cache: dict[str, Array] = {}

    def value_and_gradient(x: Array, index: NDArray[np.intp]) -> tuple[Array, Array]:
        r0, jac = _fd_jacobian(residuals, x, index, 1e-7)
        if "jac" not in cache or cache["jac"].shape[1] != jac.shape[1]:
            cache["jac"] = np.zeros((n, jac.shape[1], n_params))
        cache["jac"][index] = jac
        return 0.5 * np.sum(r0**2, axis=1), np.einsum("bmn,bm->bn", jac, r0)

    def gauss_newton(g: Array, index: NDArray[np.intp]) -> Array:
        jac = cache["jac"][index]
        hess = np.einsum("bmi,bmj->bij", jac, jac)
        damping = 1e-9 * np.trace(hess, axis1=1, axis2=2)[:, None, None] / n_params + 1e-12
        return np.linalg.solve(hess + damping * np.eye(n_params), g[..., None])[..., 0]

    result = conjugate_gradient(
        value_and_gradient,
        start,
        max_iterations=max_iterations,
        tolerance=1e-12,
        gradient_tolerance=1e-12,
        preconditioner=gauss_newton,
    )
    return result.x


def banded_levenberg_marquardt(
    evaluate: Callable[[Array], Any],
    linearise: Callable[[Array, Any], tuple[Array, Array] | None],
    x0: ArrayLike,
    *,
    iterations: int,
    ridge: float = 1e-4,
    trials: int = 12,
    evaluation: Any = None,
) -> tuple[Array, Any, int]:
    """Gauss–Newton with a Levenberg–Marquardt ridge on banded normal equations.

    One problem in ``x`` (any shape, flattened in C order for the normal
    equations). ``evaluate(x)`` returns an evaluation whose ``merit`` (a float,
    the sum of squared weighted residuals) is to be minimised;
    ``linearise(x, evaluation)`` returns the normal equations there, ``JᵀJ`` in
    LAPACK's lower band storage (``(K, N)``, row 0 the diagonal) and ``Jᵀr``
    (N,), or None when no residual is active (then the minimisation stops).
    Each iteration solves

    .. math:: (J^T J + μ \\bar d I) δ = J^T r

    by banded Cholesky (``d̄`` the mean diagonal of ``JᵀJ``, 1 where it is
    zero) and tries ``x + δ``: accepted when the merit drops (then ``μ /= 3``,
    at least 1e-9), else ``μ *= 10`` and another try, up to ``trials`` tries;
    it stops when none is accepted. ``μ`` starts at ``ridge``; ``evaluation`` is
    ``evaluate(x0)`` when the caller has it already.

    Returns
    -------
    x : ndarray
        The last accepted point.
    evaluation
        ``evaluate`` at it.
    linearisations : int
        How many times the problem was linearised.
    """
    import scipy.linalg as linalg

    x = np.array(x0, dtype=np.float64)
    now = evaluate(x) if evaluation is None else evaluation
    done = 0
    for _ in range(iterations):
        normal_equations = linearise(x, now)
        if normal_equations is None:
            break
        normal, gradient = normal_equations
        done += 1
        level = float(normal[0].mean()) or 1.0
        for _ in range(trials):
            damped = normal.copy()
            damped[0] += ridge * level
            candidate = x + linalg.solveh_banded(damped, gradient, lower=True).reshape(x.shape)
            trial = evaluate(candidate)
            if trial.merit < now.merit:
                x, now = candidate, trial
                ridge = max(ridge / 3.0, 1e-9)
                break
            ridge *= 10.0
        else:
            break
    return x, now, done


# --------------------------------------------------------------------------------------
# one problem: conjugate gradient with backtracking
# --------------------------------------------------------------------------------------
def backtracking_conjugate_gradient(
    fun: Callable[[Array], tuple[float, Array]],
    x0: Array,
    *,
    tolerance: float = 1e-8,
    max_iterations: int = 200,
) -> tuple[Array, float, int]:
    """Nonlinear conjugate gradient for one problem (Polak-Ribière+, restarted when not
    a descent direction) with a backtracking Armijo line search.

    Written here rather than taken from scipy: ``scipy.optimize.minimize(method="CG")``
    gives up on its first strong-Wolfe line search on these objectives (squared
    hinge terms, "precision loss") while plain backtracking makes steady progress.

    Returns ``(x, E(x), iterations)``; stops when the largest gradient component
    falls below ``tolerance`` or ``E`` stops decreasing.
    """
    x = np.array(x0, dtype=np.float64)
    value, grad = fun(x)
    direction = -grad
    step = 1.0
    iterations = 0
    while iterations < max_iterations and np.abs(grad).max() > tolerance:
        slope = float(grad @ direction)
        t = step
        for _ in range(60):
            trial_value, trial_grad = fun(x + t * direction)
            if trial_value <= value + 1e-4 * t * slope:
                break
            t *= 0.5
        else:
            break  # no decrease along a descent direction: at the precision limit
        iterations += 1
        x = x + t * direction
        decrease = value - trial_value
        beta = max(0.0, float(trial_grad @ (trial_grad - grad)) / float(grad @ grad))
        value, grad = trial_value, trial_grad
        direction = -grad + beta * direction
        if grad @ direction >= 0.0:
            direction = -grad
        step = min(2.0 * t, 1.0)
        if decrease <= 1e-15 * max(1.0, abs(value)):
            break
    return x, float(value), iterations
