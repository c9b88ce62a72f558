"""Multilevel B-spline approximation of scattered samples (Lee & Shin 1999, §3.2).

A uniform cubic B-spline over the frames ``[0, F − 1]`` with knots every
``spacing`` frames is

.. math:: f(t) = \\sum_{k=0}^{3} B_k(u)\\, b_{i+k-1},\\qquad i = ⌊t/s⌋,\\ u = t/s − i,

with control points ``b_{-1} … b_{n+1}``. Fitting it to scattered samples
``(t_i, x_i)`` is local and closed-form (eq. 2): a sample touches the four
control points of its interval with weights ``w_k = B_k(u)``; its wish for
control point ``k`` is ``φ_k = w_k x_i / Σ_l w_l²``; each control point takes
the ``w²``-weighted mean of the wishes it received,

.. math:: b_j = \\frac{\\sum_i w_{ij}^2 φ_{ij}}{\\sum_i w_{ij}^2},

and control points no sample touches stay 0, so a fitted displacement fades
to zero away from the samples. A sample at frame ``t`` influences only frames
``t'`` with ``⌊t/s⌋ − 3 ≤ t'/s < ⌊t/s⌋ + 4`` (:func:`reach`).

The **multilevel** approximation (§3.2) fits level 0 to the samples, level
k + 1 to what levels ≤ k left, on a knot sequence twice as dense, and sums the
levels. That sum is right for vectors; for motions, Algorithm 1 instead fits
one level per IK pass and applies it with ⊕ (:mod:`retarget.editing.fitting`).

Arrays: samples ``times (N,)`` in frames (need not be whole), ``values
(N, d)``; everything is vectorised over samples and dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array

__all__ = ["BSpline", "bspline_weights", "fit_bspline", "multilevel_fit", "reach"]


def bspline_weights(u: ArrayLike) -> Array:
    """Uniform cubic B-spline basis ``B_0 … B_3`` at local parameters ``u ∈ [0, 1)``.

    Returns
    -------
    ndarray, shape (..., 4)
        Non-negative weights that sum to 1.

    >>> bspline_weights(0.0).tolist()
    [0.16666666666666666, 0.6666666666666666, 0.16666666666666666, 0.0]
    """
    u = np.asarray(u, dtype=np.float64)
    u2 = u * u
    u3 = u2 * u
    return np.stack(
        [
            (1 - u) ** 3 / 6.0,
            (3 * u3 - 6 * u2 + 4) / 6.0,
            (-3 * u3 + 3 * u2 + 3 * u + 1) / 6.0,
            u3 / 6.0,
        ],
        axis=-1,
    )


def _locate(times: Array, spacing: float) -> tuple[NDArray[np.intp], Array]:
    """Interval index ``i = ⌊t/s⌋`` and local parameter ``u``."""
    scaled = np.asarray(times, dtype=np.float64) / spacing
    i = np.floor(scaled)
    return i.astype(np.intp), scaled - i


@dataclass(frozen=True)
class BSpline:
    """A uniform cubic B-spline over frames: ``control[j + 1] = b_j`` for ``j = -1 … n + 1``.

    Attributes
    ----------
    spacing : float
        Frames between knots.
    control : ndarray, shape (n + 3, d)
    """

    spacing: float
    control: Array

    def __post_init__(self) -> None:
        self.control.setflags(write=False)

    def __call__(self, times: ArrayLike) -> Array:
        """Values at frames ``times`` (shape (T,)), shape (T, d)."""
        i, u = _locate(np.atleast_1d(np.asarray(times, dtype=np.float64)), self.spacing)
        idx = np.clip(
            i[:, None] + np.arange(4), 0, len(self.control) - 1
        )  # control[i + k] = b_{i+k-1}
        return np.einsum("tk,tkd->td", bspline_weights(u), self.control[idx])


def _num_controls(num_frames: int, spacing: float) -> int:
    return int(np.floor(max(num_frames - 1, 0) / spacing)) + 4


def fit_bspline(
    times: ArrayLike,
    values: ArrayLike,
    spacing: float,
    num_frames: int,
    weights: ArrayLike | None = None,
) -> BSpline:
    """One level of B-spline approximation (Lee & Shin 1999, eq. 2).

    Parameters
    ----------
    times : array_like, shape (N,)
        Sample frames in ``[0, num_frames − 1]``.
    values : array_like, shape (N, d)
        Sample values (e.g. displacement maps of constrained frames).
    spacing : float
        Frames between knots (> 0).
    num_frames : int
        Length of the domain.
    weights : array_like, shape (N, d) or (N,), optional
        Per-sample (per-dimension) weights ``c_i ≥ 0`` multiplying each sample's
        ``w²`` in the control-point means; 0 marks a dimension a sample does not
        know (missing data: the curve there is interpolated from the others).

    Returns
    -------
    BSpline
        Control points that are zero where no sample reaches.
    """
    if not spacing > 0:
        raise ValueError(f"Expected a positive knot spacing, got {spacing}")
    t = np.asarray(times, dtype=np.float64)
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or t.shape != x.shape[:1]:
        raise ValueError(f"Expected times (N,) and values (N, d), got {t.shape} and {x.shape}")
    if t.size and (t.min() < 0 or t.max() > num_frames - 1):
        raise ValueError(f"Sample times must lie in [0, {num_frames - 1}]")
    n_ctrl = _num_controls(num_frames, spacing)
    control = np.zeros((n_ctrl, x.shape[1]))
    if t.size == 0:
        return BSpline(float(spacing), control)
    d = x.shape[1]
    c = (
        np.ones((len(t), d))
        if weights is None
        else np.broadcast_to(np.asarray(weights, dtype=np.float64).reshape(len(t), -1), (len(t), d))
    )
    i, u = _locate(t, spacing)
    w = bspline_weights(u)  # (N, 4)
    w2 = w * w
    phi = (w / w2.sum(axis=1, keepdims=True))[:, :, None] * x[:, None, :]  # (N, 4, d)
    cw2 = w2[:, :, None] * c[:, None, :]  # (N, 4, d)
    idx = i[:, None] + np.arange(4)  # control[i + k] = b_{i+k-1}
    num = np.zeros_like(control)
    den = np.zeros_like(control)
    np.add.at(num, idx.ravel(), (cw2 * phi).reshape(-1, d))
    np.add.at(den, idx.ravel(), cw2.reshape(-1, d))
    touched = den > 0
    control[touched] = num[touched] / den[touched]
    return BSpline(float(spacing), control)


def reach(frame: float, spacing: float, num_frames: int) -> tuple[int, int]:
    """First and last frame a sample at ``frame`` can change (inclusive), for one level.

    Its four control points ``b_{i-1} … b_{i+2}`` act on ``t/s ∈ [i − 3, i + 4)``.
    """
    i = int(np.floor(frame / spacing))
    first = max(0, int(np.ceil((i - 3) * spacing)))
    last = min(num_frames - 1, int(np.ceil((i + 4) * spacing)) - 1)
    return first, last


def multilevel_fit(
    times: ArrayLike, values: ArrayLike, spacings: Sequence[float], num_frames: int
) -> list[BSpline]:
    """Multilevel B-spline approximation of vector samples (§3.2).

    Level 0 fits the samples; level k fits the residual of levels < k. The
    approximation at frames ``t`` is ``sum(level(t) for level in levels)``.

    Parameters
    ----------
    times : array_like, shape (N,)
    values : array_like, shape (N, d)
    spacings : sequence of float
        Knot spacings, coarse to fine (usually halving: 16, 8, 4, 2).
    num_frames : int
    """
    t = np.asarray(times, dtype=np.float64)
    residual = np.asarray(values, dtype=np.float64).copy()
    levels = []
    for spacing in spacings:
        level = fit_bspline(t, residual, spacing, num_frames)
        residual -= level(t) if t.size else 0.0
        levels.append(level)
    return levels
