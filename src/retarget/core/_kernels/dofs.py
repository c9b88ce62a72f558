"""The compiled channel kernels of :mod:`retarget.core.dofs` for one pose (numba; private).

The online retargeter (:mod:`retarget.online.omr`) moves joints with fewer than
three channels along their channels: before each step it needs every active
joint's channel axes (:func:`retarget.core.dofs.channel_axes`) and their
pseudo-inverse, after it the pose put back on the channels
(:func:`retarget.core.dofs.project_to_dofs`). In numpy, on one pose of a robot's
fourteen joints, these cost ≈0.9 ms a frame, five times the step itself; here
a few microseconds. The formulas are those of :mod:`retarget.core.dofs` and
:func:`retarget.core.quat.euler_from_quat`, for one pose; ``tests/test_omr_kernel.py``
checks them against those functions.

Arrays: ``rot`` (J, 4) local rotations; ``axes`` (J, 4) each joint's channel frame
``A`` (:attr:`retarget.core.skeleton.Skeleton.axes`); ``order`` (J, 3) the axes (0, 1, 2
for x, y, z) of each joint's channel order completed to three; ``count`` (J,) its
channels.
"""

from __future__ import annotations

import numba
import numpy as np

from .quat import _product

__all__: list[str] = []


@numba.njit(cache=True, nogil=True)
def _matrix(w, x, y, z):  # pragma: no cover - jitted
    """The rotation matrix of a unit quaternion, (3, 3)."""
    m = np.empty((3, 3))
    m[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    m[0, 1] = 2.0 * (x * y - w * z)
    m[0, 2] = 2.0 * (x * z + w * y)
    m[1, 0] = 2.0 * (x * y + w * z)
    m[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    m[1, 2] = 2.0 * (y * z - w * x)
    m[2, 0] = 2.0 * (x * z - w * y)
    m[2, 1] = 2.0 * (y * z + w * x)
    m[2, 2] = 1.0 - 2.0 * (x * x + y * y)
    return m


@numba.njit(cache=True, nogil=True)
def _channel_frame(rot, axes, j):  # pragma: no cover - jitted
    """``A⁻¹ ⊗ q ⊗ A`` of joint ``j`` (4-tuple)."""
    a0, a1, a2, a3 = axes[j, 0], axes[j, 1], axes[j, 2], axes[j, 3]
    t = _product(a0, -a1, -a2, -a3, rot[j, 0], rot[j, 1], rot[j, 2], rot[j, 3])
    return _product(t[0], t[1], t[2], t[3], a0, a1, a2, a3)


@numba.njit(cache=True, nogil=True)
def _euler(q, i, j, k):  # pragma: no cover - jitted
    """Euler angles ``(a, b, c)`` of ``q`` in the order of axes ``i, j, k``
    (:func:`retarget.core.quat.euler_from_quat`: ``b`` in [−π/2, π/2], ``c = 0`` at lock)."""
    r = _matrix(q[0], q[1], q[2], q[3])
    s = 1.0 if (j - i) % 3 == 1 else -1.0
    sb = min(max(s * r[i, k], -1.0), 1.0)
    cb = np.hypot(r[i, i], r[i, j])
    b = np.arctan2(sb, cb)
    if cb < 1e-9:
        sign = 1.0 if sb > 0.0 else (-1.0 if sb < 0.0 else 0.0)
        return np.arctan2(sign * r[j, i], r[j, j]), b, 0.0
    return np.arctan2(-s * r[j, k], r[k, k]), b, np.arctan2(-s * r[i, j], r[i, i])


@numba.njit(cache=True, nogil=True)
def _about(axis, angle):  # pragma: no cover - jitted
    """The rotation matrix of ``angle`` about coordinate axis ``axis``."""
    h = 0.5 * angle
    w, x, y, z = np.cos(h), 0.0, 0.0, 0.0
    if axis == 0:
        x = np.sin(h)
    elif axis == 1:
        y = np.sin(h)
    else:
        z = np.sin(h)
    return _matrix(w, x, y, z)


@numba.njit(cache=True, nogil=True)
def channel_basis(rot, joints, axes, order, count, basis, basis_inverse):  # pragma: no cover
    """For each joint ``joints[t]``: its channel axes (columns, local frame, zero for the
    channels it has not; :func:`retarget.core.dofs.channel_axes`) into ``basis[t]`` (3, 3) and
    their pseudo-inverse (the present columns' ``(CᵀC)⁻¹ Cᵀ``, zero rows elsewhere)
    into ``basis_inverse[t]``."""
    body = np.zeros((3, 3))
    local = np.zeros((3, 3))
    for t in range(joints.shape[0]):
        j = joints[t]
        i0, i1, i2 = order[j, 0], order[j, 1], order[j, 2]
        _, b, c = _euler(_channel_frame(rot, axes, j), i0, i1, i2)
        rb = _about(i1, b)
        rc = _about(i2, c)
        body[:, :] = 0.0  # columns Rcᵀ Rbᵀ e0, Rcᵀ e1, e2
        for r in range(3):
            for m in range(3):
                body[r, 0] += rc[m, r] * rb[i0, m]
            body[r, 1] = rc[i1, r]
        body[i2, 2] = 1.0
        frame = _matrix(axes[j, 0], axes[j, 1], axes[j, 2], axes[j, 3])
        local[:, :] = 0.0  # A ω_k
        for r in range(3):
            for k in range(3):
                for m in range(3):
                    local[r, k] += frame[r, m] * body[m, k]
        n = count[j]
        for r in range(3):
            for k in range(3):
                basis[t, r, k] = local[r, k] if k < n else 0.0
                basis_inverse[t, k, r] = 0.0
        if n == 0:
            continue
        # (CᵀC)⁻¹ Cᵀ of the n present columns: the Gram matrix's inverse in closed form
        g00 = local[0, 0] ** 2 + local[1, 0] ** 2 + local[2, 0] ** 2
        if n == 1:
            for r in range(3):
                basis_inverse[t, 0, r] = local[r, 0] / g00
            continue
        g01 = local[0, 0] * local[0, 1] + local[1, 0] * local[1, 1] + local[2, 0] * local[2, 1]
        g11 = local[0, 1] ** 2 + local[1, 1] ** 2 + local[2, 1] ** 2
        if n == 2:
            det = g00 * g11 - g01 * g01
            for r in range(3):
                basis_inverse[t, 0, r] = (g11 * local[r, 0] - g01 * local[r, 1]) / det
                basis_inverse[t, 1, r] = (g00 * local[r, 1] - g01 * local[r, 0]) / det
            continue
        inverse = np.linalg.inv(local)  # three channels: C itself is square
        for p in range(3):
            for r in range(3):
                basis_inverse[t, p, r] = inverse[p, r]


@numba.njit(cache=True, nogil=True)
def project(rot, axes, order, count):  # pragma: no cover - jitted
    """Each joint with fewer than three channels put back on them in place: its angles
    about the absent axes set to zero (:func:`retarget.core.dofs.project_to_dofs`)."""
    for j in range(rot.shape[0]):
        n = count[j]
        if n >= 3:
            continue
        i0, i1, i2 = order[j, 0], order[j, 1], order[j, 2]
        angles = _euler(_channel_frame(rot, axes, j), i0, i1, i2)
        q = (1.0, 0.0, 0.0, 0.0)
        for k in range(n):
            axis = order[j, k]
            h = 0.5 * angles[k]
            s = np.sin(h)
            q = _product(
                q[0],
                q[1],
                q[2],
                q[3],
                np.cos(h),
                s if axis == 0 else 0.0,
                s if axis == 1 else 0.0,
                s if axis == 2 else 0.0,
            )
        a0, a1, a2, a3 = axes[j, 0], axes[j, 1], axes[j, 2], axes[j, 3]
        t = _product(a0, a1, a2, a3, q[0], q[1], q[2], q[3])
        q = _product(t[0], t[1], t[2], t[3], a0, -a1, -a2, -a3)
        for c in range(4):
            rot[j, c] = q[c]
