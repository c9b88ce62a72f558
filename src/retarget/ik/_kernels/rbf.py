"""The compiled kernel of :mod:`retarget.ik.rbf` (numba; private).

Loaded on first use (:func:`retarget.core.lazy.loader`), as the other ``_*_kernels``
modules are. Eq. (2) point by point: the radial functions have compact support
(the cubic B-spline is zero from ``2 α_k`` on), so a point meets only the few
centres near it, and one pass over the centres with no temporaries of shape
(points, centres) costs a fraction of the dense numpy expression.
"""

from __future__ import annotations

import math

import numba

__all__: list[str] = []


@numba.njit(cache=True, nogil=True)
def weights_kernel(points, centres, inv_radii, radial, linear, out):  # pragma: no cover - jitted
    """``out[i] = Σ_k B(|p_i − c_k| / α_k) r_k + [p_i, 1] a`` (eq. 2) for every point.

    ``points`` (P, D), ``centres`` (C, D), ``inv_radii`` (C,) = ``1 / α``, ``radial``
    (C, N), ``linear`` (D + 1, N), ``out`` (P, N).
    """
    n_points, d = points.shape
    n_centres = centres.shape[0]
    n = radial.shape[1]
    for i in range(n_points):
        for j in range(n):
            acc = linear[d, j]
            for a in range(d):
                acc += points[i, a] * linear[a, j]
            out[i, j] = acc
        for k in range(n_centres):
            square = 0.0
            for a in range(d):
                g = points[i, a] - centres[k, a]
                square += g * g
            t = math.sqrt(square) * inv_radii[k]
            if t >= 2.0:
                continue
            if t < 1.0:
                b = 2.0 / 3.0 - t * t + 0.5 * t * t * t
            else:
                u = 2.0 - t
                b = u * u * u / 6.0
            for j in range(n):
                out[i, j] += b * radial[k, j]
