"""The compiled kernels of :mod:`retarget.core.so3` (numba; private).

Loaded on first use, as :mod:`retarget.core._kernels.quat` is; ``_so3._coefficients_of``
and ``_so3._matrix_entries`` stay importable by name for other compiled kernels
(:mod:`retarget.online._kernels.omr`).
"""

from __future__ import annotations

import numba
import numpy as np

__all__: list[str] = []


_SMALL = 1e-4  # below this angle (rad), the series expansions


@numba.njit(cache=True, nogil=True)
def _coefficients_of(theta):  # pragma: no cover - jitted
    """``a = (1 − cos θ)/θ²``, ``b = (θ − sin θ)/θ³``, ``c = 1/θ² − cot(θ/2)/(2θ)`` at one angle."""
    t2 = theta * theta
    if theta < _SMALL:
        return (
            0.5 - t2 / 24.0 + t2 * t2 / 720.0,
            1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0,
            1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0,
        )
    # cot(θ/2) = sin θ / (1 − cos θ): finite at θ = π, singular only at θ = 2π
    half = 0.5 * theta
    return (
        (1.0 - np.cos(theta)) / t2,
        (theta - np.sin(theta)) / (t2 * theta),
        1.0 / t2 - np.cos(half) / (2.0 * theta * np.sin(half)),
    )


@numba.njit(cache=True, nogil=True)
def _matrix_entries(x, y, z, a, b):  # pragma: no cover - jitted
    """``I + a [v]_× + b [v]_×²`` with ``[v]_×² = v vᵀ − |v|² I``, row by row (9 values)."""
    xx, yy, zz, xy, xz, yz = x * x, y * y, z * z, x * y, x * z, y * z
    return (
        1.0 - b * (yy + zz),
        -a * z + b * xy,
        a * y + b * xz,
        a * z + b * xy,
        1.0 - b * (xx + zz),
        -a * x + b * yz,
        -a * y + b * xz,
        a * x + b * yz,
        1.0 - b * (xx + yy),
    )


@numba.njit(cache=True, nogil=True)
def _coefficient_rows(v, out):  # pragma: no cover - jitted
    for i in range(v.shape[0]):
        theta = np.sqrt(v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2])
        out[i, 0], out[i, 1], out[i, 2] = _coefficients_of(theta)


@numba.njit(cache=True, nogil=True)
def _matrix_rows(v, inverse, out):  # pragma: no cover - jitted
    """``J_r(v)`` (or ``J_r(v)⁻¹``) of each row of ``v`` (N, 3) into ``out`` (N, 9)."""
    for i in range(v.shape[0]):
        x, y, z = v[i, 0], v[i, 1], v[i, 2]
        a, b, c = _coefficients_of(np.sqrt(x * x + y * y + z * z))
        if inverse:
            a, b = 0.5, c
        else:
            a = -a
        entries = _matrix_entries(x, y, z, a, b)
        for k in range(9):
            out[i, k] = entries[k]
