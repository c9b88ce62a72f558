"""Jacobians of the SO(3) exponential map, in closed form (private helpers).

With rotations applied on the right, as everywhere in the library
(``q ⊗ exp(v)``, :mod:`retarget.core.motion`), the *right Jacobian* ``J_r(v)`` says
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
below ``θ = 1e-4`` rad, where they are exact to float64. The coefficients and
the matrices are compiled scalar functions (``_coefficients_of``,
``_matrix_entries``) so that numba kernels (:mod:`retarget.online._kernels.omr`)
call the same formulas as the batched functions here (they live in
:mod:`retarget.core._kernels.so3`, loaded on first use, and are importable from here by name).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .arrays import Array
from .lazy import loader

__all__ = [
    "apply_right_jacobian",
    "apply_right_jacobian_inverse",
    "cross",
    "right_jacobian",
    "right_jacobian_inverse",
]

_kernels = loader("retarget.core._kernels.so3")


def cross(a: Array, b: Array) -> Array:
    """``a × b`` over the last axis, broadcast (``np.cross`` without its overhead)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _coefficients(v: Array) -> tuple[Array, Array, Array]:
    """``a``, ``b``, ``c`` (:func:`_coefficients_of`) of rotation vectors ``v``, each (..., 1)."""
    out = np.empty((*v.shape[:-1], 3))
    rows = np.ascontiguousarray(v, dtype=np.float64).reshape(-1, 3)
    _kernels()._coefficient_rows(rows, out.reshape(-1, 3))
    return out[..., 0:1], out[..., 1:2], out[..., 2:3]


def _matrices(v: ArrayLike, inverse: bool) -> Array:
    v = np.asarray(v, dtype=np.float64)
    out = np.empty((*v.shape[:-1], 3, 3))
    _kernels()._matrix_rows(np.ascontiguousarray(v).reshape(-1, 3), inverse, out.reshape(-1, 9))
    return out


def right_jacobian(v: ArrayLike) -> Array:
    """``J_r(v)``, shape (..., 3, 3), of rotation vectors ``v`` (..., 3)."""
    return _matrices(v, False)


def right_jacobian_inverse(v: ArrayLike) -> Array:
    """``J_r(v)⁻¹``, shape (..., 3, 3), for ``|v| < 2π``."""
    return _matrices(v, True)


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
