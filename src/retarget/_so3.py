"""Jacobians of the SO(3) exponential map, in closed form (private helpers).

With rotations applied on the right, as everywhere in the library
(``q ⊗ exp(v)``, :mod:`retarget.motion`), the *right Jacobian* ``J_r(v)`` says
how a change of the rotation vector ``v`` shows up as an increment at the
rotated frame:

.. math::
    \\exp(v + δ) ≈ \\exp(v) \\exp(J_r(v)\\, δ), \\qquad
    J_r(v) = I - \\frac{1 - \\cos θ}{θ^2} [v]_× + \\frac{θ - \\sin θ}{θ^3} [v]_×^2,

and its inverse ``log(exp(v) exp(δ)) ≈ v + J_r(v)⁻¹ δ`` with

.. math::
    J_r(v)^{-1} = I + \\tfrac12 [v]_×
        + \\Big(\\frac{1}{θ^2} - \\frac{\\cot(θ/2)}{2θ}\\Big) [v]_×^2 .

The left Jacobians are ``J_l(v) = J_r(-v) = J_r(v)ᵀ`` (``log(exp(δ) exp(v)) ≈ v
+ J_l(v)⁻¹ δ``). Reference: J. Solà, J. Deray, D. Atchuthan, *A micro Lie
theory for state estimation in robotics* (2018), eqs. (143)-(146).

Each function comes as a matrix (``..., 3, 3``) and as a product with vectors
(``apply_*``), the cheap form that gradients need. Series expansions take over
below ``θ = 1e-4`` rad, where they are exact to float64.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "apply_right_jacobian",
    "apply_right_jacobian_inverse",
    "cross",
    "right_jacobian",
    "right_jacobian_inverse",
]

Array = NDArray[np.float64]
_SMALL = 1e-4


def cross(a: Array, b: Array) -> Array:
    """``a × b`` over the last axis, broadcast (``np.cross`` without its overhead)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _coefficients(v: Array) -> tuple[Array, Array, Array]:
    """``a = (1 − cos θ)/θ²``, ``b = (θ − sin θ)/θ³``, ``c = 1/θ² − cot(θ/2)/(2θ)``, (..., 1)."""
    theta = np.sqrt(np.einsum("...i,...i->...", v, v))[..., None]
    t2 = theta * theta
    small = theta < _SMALL
    safe = np.where(small, 1.0, theta)
    s2 = safe * safe
    a = np.where(small, 0.5 - t2 / 24.0 + t2 * t2 / 720.0, (1.0 - np.cos(safe)) / s2)
    b = np.where(
        small, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0, (safe - np.sin(safe)) / (s2 * safe)
    )
    # cot(θ/2) = sin θ / (1 − cos θ): finite at θ = π, singular only at θ = 2π
    half = 0.5 * safe
    c = np.where(
        small,
        1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0,
        1.0 / s2 - np.cos(half) / (2.0 * safe * np.sin(half)),
    )
    return a, b, c


def _outer_terms(v: Array, a: Array, b: Array) -> Array:
    """``I + a [v]_× + b [v]_×²`` with ``[v]_×² = v vᵀ − |v|² I``, shape (..., 3, 3)."""
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    a, b = a[..., 0], b[..., 0]
    xx, yy, zz, xy, xz, yz = x * x, y * y, z * z, x * y, x * z, y * z
    return np.stack(
        [
            1.0 - b * (yy + zz),
            -a * z + b * xy,
            a * y + b * xz,
            a * z + b * xy,
            1.0 - b * (xx + zz),
            -a * x + b * yz,
            -a * y + b * xz,
            a * x + b * yz,
            1.0 - b * (xx + yy),
        ],
        axis=-1,
    ).reshape(*v.shape[:-1], 3, 3)


def right_jacobian(v: ArrayLike) -> Array:
    """``J_r(v)``, shape (..., 3, 3), of rotation vectors ``v`` (..., 3)."""
    v = np.asarray(v, dtype=np.float64)
    a, b, _ = _coefficients(v)
    return _outer_terms(v, -a, b)


def right_jacobian_inverse(v: ArrayLike) -> Array:
    """``J_r(v)⁻¹``, shape (..., 3, 3), for ``|v| < 2π``."""
    v = np.asarray(v, dtype=np.float64)
    _, _, c = _coefficients(v)
    return _outer_terms(v, np.full(c.shape, 0.5), c)


def apply_right_jacobian(v: Array, u: Array, *, transpose: bool = False) -> Array:
    """``J_r(v) u`` (or ``J_r(v)ᵀ u = J_l(v) u``) for vectors ``u`` (..., 3)."""
    a, b, _ = _coefficients(v)
    vu = cross(v, u)
    sign = 1.0 if transpose else -1.0
    return u + sign * a * vu + b * cross(v, vu)


def apply_right_jacobian_inverse(v: Array, u: Array, *, transpose: bool = False) -> Array:
    """``J_r(v)⁻¹ u`` (or ``J_r(v)⁻ᵀ u = J_l(v)⁻¹ u``) for vectors ``u`` (..., 3)."""
    _, _, c = _coefficients(v)
    vu = cross(v, u)
    sign = -0.5 if transpose else 0.5
    return u + sign * vu + c * cross(v, vu)
