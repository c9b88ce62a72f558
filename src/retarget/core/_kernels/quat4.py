"""Quaternions as 4-tuples, for the compiled kernels (private).

The compiled update of online retargeting (:mod:`retarget.online._kernels.omr`) and
the compiled frame of computer puppetry (:mod:`retarget.online._kernels.puppetry`)
work on one pose at a time with quaternions ``(w, x, y, z)`` held in 4-tuples
and vectors in 3-tuples (as :mod:`retarget.core._kernels.vec3`). These are their shared
quaternion steps, built on :mod:`retarget.core.quat`'s scalar kernels
(``_product``, ``_rotvec_from_wxyz``), so that both kernels round them the same
way. Callable from numba-compiled code and from Python.
"""

from __future__ import annotations

import numba

from .quat import _product, _rotvec_from_wxyz

__all__ = ["conj", "multiply", "ominus", "rotate", "row"]


@numba.njit(cache=True, nogil=True)
def row(a, i):  # pragma: no cover - jitted
    """Row ``i`` of an (n, 4) array as a 4-tuple."""
    return (a[i, 0], a[i, 1], a[i, 2], a[i, 3])


@numba.njit(cache=True, nogil=True)
def multiply(a, b):  # pragma: no cover - jitted
    """``a ⊗ b`` of 4-tuples (:func:`retarget.core.quat.multiply`)."""
    return _product(a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3])


@numba.njit(cache=True, nogil=True)
def conj(q):  # pragma: no cover - jitted
    """``q*``, the inverse of a unit quaternion."""
    return (q[0], -q[1], -q[2], -q[3])


@numba.njit(cache=True, nogil=True)
def rotate(q, v):  # pragma: no cover - jitted
    """``R(q) v = q v q⁻¹`` of a unit 4-tuple and a 3-tuple (:func:`retarget.core.quat.rotate`):
    ``v + w t + u × t`` with ``t = 2 u × v``."""
    w, x, y, z = q
    vx, vy, vz = v
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return (
        vx + w * tx + (y * tz - z * ty),
        vy + w * ty + (z * tx - x * tz),
        vz + w * tz + (x * ty - y * tx),
    )


@numba.njit(cache=True, nogil=True)
def ominus(q, q0):  # pragma: no cover - jitted
    """``q ⊖ q0 = log(q0⁻¹ ⊗ q)`` of two unit quaternions ``(w, x, y, z)`` (4-tuples or
    (4,) arrays): the local rotation vector (3-tuple, radians) that turns ``q0`` into
    ``q``, one joint's block of :func:`retarget.core.motion.ominus`."""
    r = _product(q0[0], -q0[1], -q0[2], -q0[3], q[0], q[1], q[2], q[3])
    return _rotvec_from_wxyz(r[0], r[1], r[2], r[3])
