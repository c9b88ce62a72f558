"""Small symmetric positive definite systems solved inside compiled loops (numba; private).

The frame-by-frame IK (:mod:`retarget.ik._kernels.newton`) and the hinge split
(:mod:`retarget.targets.robot._kernels.hinges`) take a Gauss-Newton step of a few to a few dozen
unknowns per frame and iteration, millions of times a clip: a Cholesky solve written
out here, into caller-owned buffers, allocates nothing, where ``np.linalg.solve`` from
a numba loop allocates and dispatches to LAPACK for every call.
"""

from __future__ import annotations

import numba
import numpy as np

__all__: list[str] = []


@numba.njit(cache=True, nogil=True)
def cholesky_solve(h, g, out, lower):  # pragma: no cover - jitted
    """``out = −H⁻¹ g`` for symmetric positive definite ``H`` (n, n), ``g`` (n,), its
    factor into ``lower`` (n, n). Returns False where the factorisation fails (``H``
    not positive definite), ``out`` then undefined."""
    n = h.shape[0]
    for i in range(n):
        for k in range(i + 1):
            s = h[i, k]
            for m in range(k):
                s -= lower[i, m] * lower[k, m]
            if i == k:
                if s <= 0.0:
                    return False
                lower[i, i] = np.sqrt(s)
            else:
                lower[i, k] = s / lower[k, k]
    for i in range(n):  # L y = −g
        s = -g[i]
        for m in range(i):
            s -= lower[i, m] * out[m]
        out[i] = s / lower[i, i]
    for i in range(n - 1, -1, -1):  # Lᵀ x = y
        s = out[i]
        for m in range(i + 1, n):
            s -= lower[m, i] * out[m]
        out[i] = s / lower[i, i]
    return True
