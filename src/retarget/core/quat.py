"""Quaternion and rotation-vector algebra, batched over any leading axes.

Conventions (DESIGN.md, "Conventions"):

* quaternions are ``(w, x, y, z)``, unit, float64, shape ``(..., 4)``;
* rotation vectors are ``(..., 3)``: direction = axis, norm = angle in radians;
* rotations act on column vectors, Hamilton product: ``multiply(a, b)`` rotates
  by ``b`` first, then by ``a`` (as ``A @ B`` for matrices);
* Euler angles follow BVH: channels ``"Zrotation Yrotation Xrotation"`` are the
  order ``"ZYX"`` and mean ``R = Rz(a) @ Ry(b) @ Rx(c)`` (intrinsic rotations in
  the listed order; scipy's upper-case ``from_euler("ZYX", [a, b, c])``).

The Hamilton product, the rotation of vectors, ``exp`` and ``log`` are compiled
with numba: solvers call them thousands of times per clip, and numpy spends
most of that time on one temporary array per arithmetic operation (6x slower
on 54k quaternions; ``benchmarks/hierarchical.py`` profiles it). Each is one
scalar function (``_product``, ``_rotvec_from_wxyz``, ``_wxyz_from_rotvec``)
that the public batched functions loop over and that compiled kernels
(:mod:`retarget.online._kernels.omr`) call directly, so the formula exists once.
Everything else is plain numpy.

The kernels live in :mod:`retarget.core._kernels.quat`, loaded on first use:
importing numba costs a fresh process some 0.3 s, more than a command such as
``retarget info`` takes in all. Until numba is loaded, :func:`multiply` and
:func:`rotate` on batches of up to :data:`_NUMPY_BATCH` numbers compute the
same formulas with numpy, operation for operation, so the two give the same
bits (no fused multiply-add: numba compiles without fastmath;
``tests/test_quat.py`` checks it). Compiled code takes the scalar kernels
(``_product`` and the others) from :mod:`retarget.core._kernels.quat`.

``exp`` and ``log`` map rotation vectors to quaternions and back. Shin et al.
2001 write ``q = e^{θn/2}`` with the half angle inside the quaternion
exponential; here ``exp(v)`` takes the *full* angle ``|v|`` and puts the half
angle into the quaternion itself, so ``exp(θ n) = (cos θ/2, n sin θ/2)``.
"""

from __future__ import annotations

import sys

import numpy as np
from numpy.typing import ArrayLike

from .arrays import Array
from .lazy import loader

__all__ = [
    "angle",
    "canonical",
    "conjugate",
    "euler_from_quat",
    "exp",
    "identity",
    "inverse",
    "log",
    "matrix_from_quat",
    "multiply",
    "normalize",
    "quat_between",
    "quat_from_euler",
    "quat_from_matrix",
    "quat_from_rotvec",
    "rotate",
    "rotvec_from_quat",
    "slerp",
    "unroll",
]


_AXES = {"X": 0, "Y": 1, "Z": 2}
#: Most numbers in an operand of :func:`multiply` or :func:`rotate` computed with numpy
#: while numba is not loaded; a larger batch loads the kernels (used from then on).
_NUMPY_BATCH = 1 << 18
#: The scalar and batched kernels of :mod:`retarget.core._kernels.quat`, as attributes here.
_kernels = loader("retarget.core._kernels.quat")


def _compiled(*arrays: Array) -> bool:
    """Whether to call the kernels: numba is loaded anyway, or the batch is large."""
    return "numba" in sys.modules or max(a.size for a in arrays) > _NUMPY_BATCH


def _as_quat(q: ArrayLike, name: str = "q") -> Array:
    q = np.asarray(q, dtype=np.float64)
    if q.shape[-1:] != (4,):
        raise ValueError(f"Expected `{name}` to have shape (..., 4), got {q.shape}")
    return q


def _as_vec3(v: ArrayLike, name: str) -> Array:
    v = np.asarray(v, dtype=np.float64)
    if v.shape[-1:] != (3,):
        raise ValueError(f"Expected `{name}` to have shape (..., 3), got {v.shape}")
    return v


def identity(shape: tuple[int, ...] | int = ()) -> Array:
    """Identity quaternions, a new writable array of shape ``(*shape, 4)``.

    >>> identity(2).tolist()
    [[1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    q = np.zeros((*shape, 4))
    q[..., 0] = 1.0
    return q


def multiply(a: ArrayLike, b: ArrayLike) -> Array:
    """Hamilton product ``a ⊗ b`` (rotate by ``b``, then by ``a``).

    Parameters
    ----------
    a, b : array_like, shape (..., 4)
        Quaternions (w, x, y, z); leading axes broadcast.

    Returns
    -------
    ndarray, shape (..., 4)
    """
    a, b = _as_quat(a, "a"), _as_quat(b, "b")
    if _compiled(a, b):
        return np.asarray(_kernels()._multiply(a, b))
    return _multiply_numpy(a, b)


def _multiply_numpy(a: Array, b: Array) -> Array:
    """:func:`multiply` in numpy: the operations of ``_quat_kernels._product``, in its
    order, so the same bits."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def conjugate(q: ArrayLike) -> Array:
    """``(w, -x, -y, -z)``; the inverse of a unit quaternion."""
    q = _as_quat(q)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def inverse(q: ArrayLike) -> Array:
    """Multiplicative inverse ``q* / |q|²`` (equal to the conjugate for unit ``q``)."""
    q = _as_quat(q)
    return conjugate(q) / np.sum(q * q, axis=-1, keepdims=True)


def normalize(q: ArrayLike) -> Array:
    """Scale quaternions to unit norm. Raises ``ValueError`` on a zero quaternion."""
    q = _as_quat(q)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n == 0.0) or not np.all(np.isfinite(n)):
        raise ValueError("Cannot normalize a zero or non-finite quaternion")
    return q / n


def canonical(q: ArrayLike) -> Array:
    """The representative of ``±q`` whose first non-zero component is positive.

    Usually that is ``w > 0``; for half turns (``w = 0``) the tie is broken by
    x, then y, then z, so that ``canonical(q) == canonical(-q)`` always.
    """
    q = _as_quat(q)
    key = q[..., 0]
    for k in (1, 2, 3):
        key = np.where(key == 0.0, q[..., k], key)
    return np.where(key[..., None] < 0.0, -q, q)


def unroll(q: ArrayLike, axis: int = 0) -> Array:
    """Flip signs along ``axis`` so consecutive quaternions lie in one hemisphere.

    Each quaternion keeps its rotation; the sequence becomes continuous in R⁴,
    which linear blending and interpolation of successive frames need.

    Parameters
    ----------
    q : array_like, shape (..., 4)
    axis : int
        The sequence axis (frames); must not be the last axis.
    """
    q = np.moveaxis(_as_quat(q), axis, 0)
    if q.shape[0] < 2:
        return np.moveaxis(q.copy(), 0, axis)
    dots = np.sum(q[1:] * q[:-1], axis=-1)
    flips = np.concatenate([np.zeros((1, *dots.shape[1:]), bool), dots < 0.0])
    sign = np.where(np.cumsum(flips, axis=0) % 2 == 1, -1.0, 1.0)[..., None]
    return np.moveaxis(q * sign, 0, axis)


def quat_from_rotvec(v: ArrayLike) -> Array:
    """``exp``: the unit quaternion of rotation vector ``v``.

    .. math:: \\exp(v) = (\\cos(|v|/2),\\ \\sin(|v|/2)\\, v/|v|)

    Parameters
    ----------
    v : array_like, shape (..., 3)
        Axis times angle (radians).

    Returns
    -------
    ndarray, shape (..., 4)

    >>> np.round(quat_from_rotvec([np.pi, 0, 0]), 12).tolist()
    [0.0, 1.0, 0.0, 0.0]
    """
    v = _as_vec3(v, "v")
    out = np.empty((*v.shape[:-1], 4))
    _kernels()._exp_rows(np.ascontiguousarray(v).reshape(-1, 3), out.reshape(-1, 4))
    return out


def rotvec_from_quat(q: ArrayLike) -> Array:
    """``log``: the rotation vector of ``q`` on the shortest arc (angle in [0, π]).

    ``q`` and ``-q`` give the same vector.

    Parameters
    ----------
    q : array_like, shape (..., 4)
        Unit quaternions.

    Returns
    -------
    ndarray, shape (..., 3)
    """
    q = _as_quat(q)
    out = np.empty((*q.shape[:-1], 3))
    _kernels()._log_rows(np.ascontiguousarray(q).reshape(-1, 4), out.reshape(-1, 3))
    return out


exp = quat_from_rotvec
log = rotvec_from_quat


def rotate(q: ArrayLike, v: ArrayLike) -> Array:
    """Rotate vectors ``v`` by unit quaternions ``q``.

    Parameters
    ----------
    q : array_like, shape (..., 4)
    v : array_like, shape (..., 3)

    Returns
    -------
    ndarray, shape (..., 3)
        ``R(q) @ v``, broadcast over leading axes.
    """
    q, v = _as_quat(q), _as_vec3(v, "v")
    if _compiled(q, v):
        return np.asarray(_kernels()._rotate(q, v))
    return _rotate_numpy(q, v)


def _rotate_numpy(q: Array, v: Array) -> Array:
    """:func:`rotate` in numpy: the operations of ``_quat_kernels._rotate``, in its order
    (``t = 2 u × v``, ``R v = v + w t + u × t``), so the same bits."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    vx, vy, vz = v[..., 0], v[..., 1], v[..., 2]
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return np.stack(
        [
            vx + w * tx + (y * tz - z * ty),
            vy + w * ty + (z * tx - x * tz),
            vz + w * tz + (x * ty - y * tx),
        ],
        axis=-1,
    )


def angle(a: ArrayLike, b: ArrayLike | None = None) -> Array:
    """Geodesic angle (radians, in [0, π]) of ``a``, or between ``a`` and ``b``.

    Uses ``2 atan2(|vec(a⁻¹b)|, |w(a⁻¹b)|)``, accurate near 0 and near π, and
    blind to the double cover (``angle(q, -q) == 0``).
    """
    d = _as_quat(a, "a") if b is None else multiply(conjugate(a), b)
    return 2.0 * np.arctan2(np.linalg.norm(d[..., 1:], axis=-1), np.abs(d[..., 0]))


def slerp(a: ArrayLike, b: ArrayLike, t: ArrayLike) -> Array:
    """Spherical linear interpolation on the shortest arc.

    Parameters
    ----------
    a, b : array_like, shape (..., 4)
        Unit quaternions, the values at ``t = 0`` and ``t = 1``.
    t : array_like, shape (...)
        Interpolation parameter; broadcast against the leading axes.

    Returns
    -------
    ndarray, shape (..., 4)
        ``a ⊗ exp(t · log(a⁻¹ ⊗ b))``.
    """
    a = _as_quat(a, "a")
    d = multiply(conjugate(a), b)
    t = np.asarray(t, dtype=np.float64)[..., None]
    return multiply(a, quat_from_rotvec(t * rotvec_from_quat(d)))


def matrix_from_quat(q: ArrayLike) -> Array:
    """Rotation matrices of unit quaternions.

    Parameters
    ----------
    q : array_like, shape (..., 4)

    Returns
    -------
    ndarray, shape (..., 3, 3)
    """
    q = _as_quat(q)
    w, x, y, z = np.moveaxis(q, -1, 0)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m = np.stack(
        [
            1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy),
            2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx),
            2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy),
        ],
        axis=-1,
    )  # fmt: skip
    return m.reshape(*q.shape[:-1], 3, 3)


def quat_from_matrix(m: ArrayLike) -> Array:
    """Unit quaternions (``w >= 0``) of rotation matrices (Shepperd's method).

    Parameters
    ----------
    m : array_like, shape (..., 3, 3)

    Returns
    -------
    ndarray, shape (..., 4)
    """
    m = np.asarray(m, dtype=np.float64)
    if m.shape[-2:] != (3, 3):
        raise ValueError(f"Expected `m` to have shape (..., 3, 3), got {m.shape}")
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    # Four candidates, each accurate when its pivot is the largest.
    cands = np.stack(
        [
            np.stack([1 + trace, m[..., 2, 1] - m[..., 1, 2],
                      m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], -1),
            np.stack([m[..., 2, 1] - m[..., 1, 2], 1 + m00 - m11 - m22,
                      m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0]], -1),
            np.stack([m[..., 0, 2] - m[..., 2, 0], m[..., 0, 1] + m[..., 1, 0],
                      1 - m00 + m11 - m22, m[..., 1, 2] + m[..., 2, 1]], -1),
            np.stack([m[..., 1, 0] - m[..., 0, 1], m[..., 0, 2] + m[..., 2, 0],
                      m[..., 1, 2] + m[..., 2, 1], 1 - m00 - m11 + m22], -1),
        ],
        axis=-2,
    )  # fmt: skip
    pivot = np.argmax(np.stack([trace, m00, m11, m22], -1), axis=-1)
    q = np.take_along_axis(cands, pivot[..., None, None], axis=-2)[..., 0, :]
    return canonical(normalize(q))


def _axis_quat(axis: int, angles: Array) -> Array:
    q = np.zeros((*angles.shape, 4))
    q[..., 0] = np.cos(0.5 * angles)
    q[..., 1 + axis] = np.sin(0.5 * angles)
    return q


def _check_order(order: str, max_len: int = 3) -> str:
    order = order.upper()
    if (
        not 1 <= len(order) <= max_len
        or any(c not in _AXES for c in order)
        or len(set(order)) != len(order)
    ):
        raise ValueError(
            f"Expected an Euler order of distinct axes from 'XYZ' (such as 'ZYX'), got {order!r}"
        )
    return order


def quat_from_euler(angles: ArrayLike, order: str) -> Array:
    """Quaternions of Euler angles in BVH's convention.

    Parameters
    ----------
    angles : array_like, shape (..., n)
        Angles in radians, in the order of ``order``.
    order : str
        ``n`` distinct axes, e.g. ``"ZYX"`` for ``R = Rz @ Ry @ Rx`` (channels
        "Zrotation Yrotation Xrotation"); one or two axes describe joints with
        fewer rotation channels.

    Returns
    -------
    ndarray, shape (..., 4)
    """
    order = _check_order(order)
    angles = np.asarray(angles, dtype=np.float64)
    if angles.shape[-1:] != (len(order),):
        raise ValueError(
            f"Expected `angles` to have shape (..., {len(order)}) for order {order!r}, "
            f"got {angles.shape}"
        )
    q = _axis_quat(_AXES[order[0]], angles[..., 0])
    for k in range(1, len(order)):
        q = multiply(q, _axis_quat(_AXES[order[k]], angles[..., k]))
    return q


def euler_from_quat(q: ArrayLike, order: str) -> Array:
    """Euler angles (radians) in BVH's convention; inverse of :func:`quat_from_euler`.

    For three axes the middle angle lies in [-π/2, π/2] and the others in
    (-π, π]; at gimbal lock the last angle is set to 0. With fewer than three
    axes the rotation is decomposed with the missing axes appended and their
    angles dropped, which is exact when ``q`` has no rotation about them.

    Parameters
    ----------
    q : array_like, shape (..., 4)
    order : str
        One to three distinct axes, e.g. ``"ZXY"``.

    Returns
    -------
    ndarray, shape (..., len(order))
    """
    order = _check_order(order)
    n = len(order)
    full = order + "".join(c for c in "XYZ" if c not in order)
    i, j, k = (_AXES[c] for c in full)
    s = 1.0 if (j - i) % 3 == 1 else -1.0  # parity of the permutation (i, j, k)
    r = matrix_from_quat(q)
    sb = np.clip(s * r[..., i, k], -1.0, 1.0)
    cb = np.hypot(r[..., i, i], r[..., i, j])
    b = np.arctan2(sb, cb)
    lock = cb < 1e-9
    a = np.where(
        lock,
        np.arctan2(np.sign(sb) * r[..., j, i], r[..., j, j]),
        np.arctan2(-s * r[..., j, k], r[..., k, k]),
    )
    c = np.where(lock, 0.0, np.arctan2(-s * r[..., i, j], r[..., i, i]))
    return np.stack([a, b, c], axis=-1)[..., :n]


def quat_between(u: ArrayLike, v: ArrayLike) -> Array:
    """The shortest-arc rotation taking direction ``u`` to direction ``v``.

    Parameters
    ----------
    u, v : array_like, shape (..., 3)
        Non-zero vectors (need not be unit).

    Returns
    -------
    ndarray, shape (..., 4)
        For opposite vectors, a half turn about an axis perpendicular to ``u``.
    """
    u = _as_vec3(u, "u")
    v = _as_vec3(v, "v")
    u, v = np.broadcast_arrays(u, v)
    un = u / np.linalg.norm(u, axis=-1, keepdims=True)
    vn = v / np.linalg.norm(v, axis=-1, keepdims=True)
    # cos(θ/2) = |u + v| / 2 and sin(θ/2) = |u − v| / 2 stay accurate near θ = π,
    # where 1 + u·v loses every digit; the axis is the direction of u × v
    w = 0.5 * np.linalg.norm(un + vn, axis=-1, keepdims=True)
    cross = np.cross(un, vn)
    sin_norm = np.linalg.norm(cross, axis=-1, keepdims=True)
    half = 0.5 * np.linalg.norm(un - vn, axis=-1, keepdims=True)
    # near θ = 0 the cross product is all rounding, so its norm and |u − v| disagree:
    # there sin(θ/2) axis = (u × v) / (2 cos(θ/2)) instead, exact as θ → 0
    xyz = np.where(
        w > 0.5, cross / (2.0 * np.maximum(w, 0.5)), cross * (half / np.maximum(sin_norm, 1e-300))
    )
    opposite = (sin_norm[..., 0] < 1e-300) & (w[..., 0] < 0.5)
    if np.any(opposite):
        # any axis perpendicular to u: cross with the least aligned basis vector
        basis = np.eye(3)[np.argmin(np.abs(un), axis=-1)]
        perp = np.cross(un, basis)
        xyz = np.where(opposite[..., None], perp, xyz)
        w = np.where(opposite[..., None], 0.0, w)
    return normalize(np.concatenate([w, xyz], axis=-1))
