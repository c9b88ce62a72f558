"""The compiled kernels of :mod:`retarget.core.quat` (numba; private).

Importing this module loads numba and the kernels from numba's disk cache
(``cache=True``: compiled once per machine), some 0.3 s in a fresh process, so
nothing imports it at start-up: :mod:`retarget.core.quat` loads it on first use,
and its module ``__getattr__`` hands out the scalar kernels (``quat._product``,
``quat._rotvec_from_wxyz``, ``quat._wxyz_from_rotvec``) that other compiled
kernels call (:mod:`retarget.online._kernels.omr`, :mod:`retarget.filters.kalman`).
The formulas are those of :mod:`retarget.core.quat`'s docstrings, each written once.
"""

from __future__ import annotations

import numba
import numpy as np

__all__: list[str] = []


_SMALL_ANGLE = 1e-4  # below this |v| (rad), series expansions are exact to float64


@numba.njit(cache=True, nogil=True)
def _product(aw, ax, ay, az, bw, bx, by, bz):  # pragma: no cover - jitted
    """``a ⊗ b`` of two quaternions given by their components, as ``(w, x, y, z)``."""
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


@numba.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->(n)", cache=True)
def _multiply(a, b, out):  # pragma: no cover - jitted
    out[0], out[1], out[2], out[3] = _product(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3])


@numba.njit(cache=True, nogil=True)
def _wxyz_from_rotvec(x, y, z):  # pragma: no cover - jitted
    """``exp`` of one rotation vector: ``(cos(θ/2), sin(θ/2) v/θ)`` with ``θ = |v|``."""
    theta = np.sqrt(x * x + y * y + z * z)
    half = 0.5 * theta
    if theta < _SMALL_ANGLE:  # sin(θ/2)/θ by its Taylor series near 0
        t2 = theta * theta
        scale = 0.5 - t2 / 48.0 + t2 * t2 / 3840.0
    else:
        scale = np.sin(half) / theta
    return np.cos(half), scale * x, scale * y, scale * z


@numba.njit(cache=True, nogil=True)
def _rotvec_from_wxyz(w, x, y, z):  # pragma: no cover - jitted
    """``log`` of one unit quaternion, on the shortest arc: ``θ n`` with ``θ`` in [0, π]."""
    key = w  # the sign of :func:`canonical`: the first non-zero component
    if key == 0.0:
        key = x
        if key == 0.0:
            key = y
            if key == 0.0:
                key = z
    if key < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s = np.sqrt(x * x + y * y + z * z)
    # atan2 is relatively accurate for tiny s, so θ/s is too; only s = 0 needs care
    # (then w = 1 for a unit quaternion and the limit of θ/s is 2)
    scale = 2.0 if s == 0.0 else 2.0 * np.arctan2(s, w) / s
    return scale * x, scale * y, scale * z


@numba.njit(cache=True, nogil=True)
def _exp_rows(v, out):  # pragma: no cover - jitted
    for i in range(v.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = _wxyz_from_rotvec(v[i, 0], v[i, 1], v[i, 2])


@numba.njit(cache=True, nogil=True)
def _log_rows(q, out):  # pragma: no cover - jitted
    for i in range(q.shape[0]):
        out[i, 0], out[i, 1], out[i, 2] = _rotvec_from_wxyz(q[i, 0], q[i, 1], q[i, 2], q[i, 3])


@numba.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(m)->(m)", cache=True)
def _rotate(q, v, out):  # pragma: no cover - jitted
    w, x, y, z = q[0], q[1], q[2], q[3]
    vx, vy, vz = v[0], v[1], v[2]
    # t = 2 u × v;  R v = v + w t + u × t
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    out[0] = vx + w * tx + (y * tz - z * ty)
    out[1] = vy + w * ty + (z * tx - x * tz)
    out[2] = vz + w * tz + (x * ty - y * tx)
