"""The least-squares filter of Tak & Ko 2005 (§6, eqs. 17-19): one B-spline through q, q̇, q̈.

The Kalman stage treats each frame's position, velocity and acceleration as
independent; this filter makes them one curve again. Per degree of freedom
it finds the control points ``c`` of a uniform cubic B-spline (a knot every
``spacing`` frames: 4 in the paper, 2 for fast motions) that best fit the
stacked profile ``q̌ = (q, q̇, q̈)`` (eq. 17),

    min (B c − q̌)ᵀ W (B c − q̌),   W = diag(I, β I, β² I)   (eq. 18),

so ``c = (Bᵀ W B)⁻¹ Bᵀ W q̌`` (eq. 19; the paper's print drops the ``Bᵀ``), and
returns the curve and its two derivatives at the frames. ``B`` stacks the
basis functions and their first and second time derivatives (seconds). §7
gives ``β ≈ 0.1``, which the physics filter uses; this function's default,
``β = Δt²``, weighs a velocity residual as the position change it makes in
one frame, and an acceleration's likewise (``β² = Δt⁴``): a plain smoother.

``window`` gives the sliding form of Figure 5: each control point is solved
from the frames within ``window`` frames centred on its knot only, so the
filter can trail the per-frame Kalman stage by half a window; with ``window
= 64`` it matches the global fit (``tests/test_lsq.py``). All degrees of
freedom share one factorisation (the columns of ``q``).

Quaternion components are fitted as four such scalars and renormalised by
the caller (the physics filter), as the paper does.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array

__all__ = ["bspline_basis", "lsq_filter", "window_control_point", "window_frames"]


def bspline_basis(num_frames: int, spacing: float, fps: float) -> tuple[Array, Array, Array]:
    """Uniform cubic B-spline basis at frames ``0 .. F-1`` with a knot every ``spacing``.

    Returns
    -------
    b, db, ddb : ndarray, shape (F, M)
        The basis functions and their first and second derivatives with
        respect to time (per second, per second²). ``M = ceil((F-1)/spacing) + 3``.
    """
    if not spacing > 0:
        raise ValueError(f"Expected a knot spacing > 0 frames, got {spacing}")
    u = np.arange(num_frames) / float(spacing)
    segments = max(int(np.ceil(u[-1] - 1e-12)), 1) if num_frames > 1 else 1
    m = segments + 3
    i = np.minimum(np.floor(u).astype(np.intp), segments - 1)
    s = u - i
    weights = (
        np.stack(
            [(1 - s) ** 3, 3 * s**3 - 6 * s**2 + 4, -3 * s**3 + 3 * s**2 + 3 * s + 1, s**3], axis=1
        )
        / 6.0
    )
    d1 = np.stack([-3 * (1 - s) ** 2, 9 * s**2 - 12 * s, -9 * s**2 + 6 * s + 3, 3 * s**2], axis=1)
    d1 = d1 / 6.0
    d2 = np.stack([6 * (1 - s), 18 * s - 12, -18 * s + 6, 6 * s], axis=1) / 6.0
    per_second = fps / float(spacing)  # du/dt
    out = [np.zeros((num_frames, m)) for _ in range(3)]
    rows = np.arange(num_frames)
    for k in range(4):
        out[0][rows, i + k] = weights[:, k]
        out[1][rows, i + k] = d1[:, k] * per_second
        out[2][rows, i + k] = d2[:, k] * per_second**2
    return out[0], out[1], out[2]


def lsq_filter(
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    fps: float,
    *,
    spacing: float = 4.0,
    beta: float | None = None,
    window: int | None = None,
) -> tuple[Array, Array, Array]:
    """Eqs. (17)-(19): the B-spline fit of positions, velocities and accelerations.

    Parameters
    ----------
    q, qd, qdd : array_like, shape (F, D)
        Per frame and degree of freedom (units per second and per second²).
    fps : float
    spacing : float
        Frames between knots.
    beta : float, optional
        Default ``Δt²`` (module docstring; §7's value is 0.1).
    window : int, optional
        Frames of the sliding window (Figure 5); default: the global fit.

    Returns
    -------
    q, qd, qdd : ndarray, shape (F, D)
        The fitted curve, its velocity and its acceleration at the frames.
    """
    q = np.asarray(q, dtype=np.float64)
    qd = np.asarray(qd, dtype=np.float64)
    qdd = np.asarray(qdd, dtype=np.float64)
    if q.ndim == 1:
        out = lsq_filter(
            q[:, None], qd[:, None], qdd[:, None], fps, spacing=spacing, beta=beta, window=window
        )
        return out[0][:, 0], out[1][:, 0], out[2][:, 0]
    if not (q.shape == qd.shape == qdd.shape):
        raise ValueError(
            f"Expected q, qd, qdd of one shape, got {q.shape}, {qd.shape}, {qdd.shape}"
        )
    n = q.shape[0]
    b0, b1, b2 = bspline_basis(n, spacing, fps)
    beta = (1.0 / fps) ** 2 if beta is None else float(beta)
    big_b = np.vstack([b0, b1, b2])
    w = np.concatenate([np.ones(n), np.full(n, beta), np.full(n, beta**2)])
    data = np.vstack([q, qd, qdd])
    if window is None:
        normal = big_b.T @ (w[:, None] * big_b)
        control = np.linalg.solve(normal, big_b.T @ (w[:, None] * data))
    else:
        control = _windowed(b0, big_b, w, data, spacing, int(window))
    return b0 @ control, b1 @ control, b2 @ control


def _windowed(b0: Array, big_b: Array, w: Array, data: Array, spacing: float, window: int) -> Array:
    """Each control point from the frames within ``window`` of its knot (Figure 5)."""
    n, m = b0.shape
    bases = (b0, big_b[n : 2 * n], big_b[2 * n :])
    weights = (float(w[0]), float(w[n]), float(w[2 * n]))
    profile = (data[:n], data[n : 2 * n], data[2 * n :])
    return np.array(
        [window_control_point(j, bases, weights, profile, spacing, window) for j in range(m)]
    )


def window_frames(j: int, num_frames: int, spacing: float, window: int) -> NDArray[np.intp]:
    """The frames control point ``j`` is solved from (Figure 5): those within
    ``window / 2`` of its knot, frame ``(j − 1) · spacing`` (the nearest, when none is)."""
    frames = np.arange(num_frames)
    centre = (j - 1) * spacing  # control point j peaks at knot j - 1
    near = (frames >= centre - window / 2) & (frames <= centre + window / 2)
    if not near.any():
        near = np.abs(frames - centre) == np.abs(frames - centre).min()
    return np.flatnonzero(near)


def window_control_point(
    j: int,
    bases: tuple[Array, Array, Array],
    weights: tuple[float, float, float],
    profile: tuple[Array, Array, Array],
    spacing: float,
    window: int,
) -> Array:
    """Control point ``j`` of the sliding least-squares filter (Figure 5), shape (D,).

    Parameters
    ----------
    bases : (b, ḃ, b̈), each ndarray (F, M)
        :func:`bspline_basis` at the frames read so far (F; any M > j + 3).
    weights : (1, β, β²)
    profile : (q, q̇, q̈), each ndarray (F, D)
    spacing, window : as :func:`lsq_filter`

    It reads the frames up to ``(j − 1) · spacing + window / 2`` only: a filter that
    scans the motion can solve it as soon as that frame is in, and gets the
    global sliding fit's numbers.
    """
    rows = window_frames(j, len(bases[0]), spacing, window)
    sub = np.vstack([b[rows] for b in bases])
    cols = np.flatnonzero(np.abs(sub).sum(axis=0) > 0)
    sub = sub[:, cols]
    w = np.concatenate([np.full(len(rows), wk) for wk in weights])
    data = np.vstack([d[rows] for d in profile])
    normal = sub.T @ (w[:, None] * sub)
    local = np.linalg.lstsq(normal, sub.T @ (w[:, None] * data), rcond=None)[0]
    return local[int(np.flatnonzero(cols == j)[0])] if j in cols else np.zeros(data.shape[1])
