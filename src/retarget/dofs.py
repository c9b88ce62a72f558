"""Joint degrees of freedom: channel angles, their axes in the tangent space, limits.

A joint's local rotation is ``q = A ⊗ E(θ) ⊗ A⁻¹`` (:mod:`retarget.skeleton`):
``A`` its fixed axis rotation (ASF ``axis``; identity for BVH) and ``E`` the
Euler rotation of its rotation channels in file order (``"ZX"`` means
``E = Rz(θ0) Rx(θ1)``). The channel angles ``θ`` are what ASF limits bound and
what a hinge joint (one channel) may change.

In the library's tangent space (``q ⊗ exp(v)``, DESIGN.md idea 1) an angle
rate ``θ̇_k`` is the local rotation vector ``v = A ω_k θ̇_k`` with ``ω_k`` the
body-frame axis of channel k of ``E``. For ``E = R_a(θ0) R_b(θ1) R_c(θ2)``:

.. math::
    ω_0 = R_c(θ_2)^T R_b(θ_1)^T e_a,\\quad ω_1 = R_c(θ_2)^T e_b,\\quad ω_2 = e_c

:func:`channel_axes` returns these columns (zero for absent channels); a
solver that moves a joint by ``v = axes @ δθ`` keeps it on its DOFs to first
order, and :func:`project_to_dofs` puts it back exactly.

All arrays broadcast over leading axes; angles in radians.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import quat
from .skeleton import Skeleton

__all__ = [
    "channel_angles",
    "channel_axes",
    "channel_limits",
    "clamp_to_limits",
    "limit_violation",
    "project_to_dofs",
    "rotations_from_channel_angles",
]

Array = NDArray[np.float64]
_AXIS = {"X": 0, "Y": 1, "Z": 2}


def _full_orders(skeleton: Skeleton) -> list[str]:
    """Each joint's channel order completed with the missing axes (``"ZX"`` → ``"ZXY"``)."""
    return [o + "".join(a for a in "XYZ" if a not in o) for o in skeleton.euler_orders]


def _channel_frame(skeleton: Skeleton, rotations: Array) -> Array:
    """``A⁻¹ ⊗ q ⊗ A``: the rotation in each joint's channel frame, shape (..., J, 4)."""
    axes = skeleton.axes
    return quat.multiply(quat.multiply(quat.conjugate(axes), rotations), axes)


def channel_angles(skeleton: Skeleton, rotations: ArrayLike) -> Array:
    """Euler angles of each joint in its channel order (completed to three axes).

    Parameters
    ----------
    skeleton : Skeleton
    rotations : array_like, shape (..., J, 4)

    Returns
    -------
    ndarray, shape (..., J, 3)
        Column k is the angle of the k-th axis of the joint's completed order
        (the first ``len(euler_orders[j])`` are its channels; the rest are 0
        when the joint keeps to its DOFs).
    """
    local = _channel_frame(skeleton, np.asarray(rotations, dtype=np.float64))
    out = np.empty((*local.shape[:-1], 3))
    for order, joints in _group(_full_orders(skeleton)).items():
        out[..., joints, :] = quat.euler_from_quat(local[..., joints, :], order)
    return out


def rotations_from_channel_angles(skeleton: Skeleton, angles: ArrayLike) -> Array:
    """Local rotations ``A ⊗ E(θ) ⊗ A⁻¹`` from angles in completed channel order, (..., J, 4)."""
    angles = np.asarray(angles, dtype=np.float64)
    local = np.empty((*angles.shape[:-1], 4))
    for order, joints in _group(_full_orders(skeleton)).items():
        local[..., joints, :] = quat.quat_from_euler(angles[..., joints, :], order)
    axes = skeleton.axes
    return quat.multiply(quat.multiply(axes, local), quat.conjugate(axes))


def _group(orders: list[str]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for j, order in enumerate(orders):
        groups.setdefault(order, []).append(j)
    return groups


def _present(skeleton: Skeleton) -> NDArray[np.bool_]:
    """present[j, k]: the k-th axis of joint j's completed order is one of its channels, (J, 3)."""
    return np.array([[k < len(o) for k in range(3)] for o in skeleton.euler_orders])


def channel_axes(skeleton: Skeleton, rotations: ArrayLike) -> Array:
    """Local rotation-vector directions of the channel angle rates.

    Parameters
    ----------
    skeleton : Skeleton
    rotations : array_like, shape (..., J, 4)

    Returns
    -------
    ndarray, shape (..., J, 3, 3)
        Column k: ``∂v/∂θ_k`` in the joint's local frame (the increment
        ``q ⊗ exp(v)`` that changes channel angle k alone), zero for channels
        the joint does not have.
    """
    rotations = np.asarray(rotations, dtype=np.float64)
    theta = channel_angles(skeleton, rotations)
    orders = _full_orders(skeleton)
    n_joints = skeleton.num_joints
    e = np.zeros((n_joints, 3, 3))  # e[j, k]: unit vector of axis k of joint j's order
    for j, order in enumerate(orders):
        for k, a in enumerate(order):
            e[j, k, _AXIS[a]] = 1.0
    # rotations about axis k of the order by angle θ_k, as quaternions (..., J, 3, 4)
    half = 0.5 * theta
    q_axis = np.zeros((*theta.shape, 4))
    q_axis[..., 0] = np.cos(half)
    q_axis[..., 1:] = np.sin(half)[..., None] * e
    inv_c = quat.conjugate(q_axis[..., 2, :])
    inv_b = quat.conjugate(q_axis[..., 1, :])
    w0 = quat.rotate(inv_c, quat.rotate(inv_b, np.broadcast_to(e[:, 0], theta.shape)))
    w1 = quat.rotate(inv_c, np.broadcast_to(e[:, 1], theta.shape))
    w2 = np.broadcast_to(e[:, 2], theta.shape)
    body = np.stack([w0, w1, w2], axis=-1)  # (..., J, 3, 3): columns per channel
    local = quat.matrix_from_quat(skeleton.axes)[..., :, :] @ body  # A ω_k
    return np.asarray(local * _present(skeleton)[:, None, :])


def channel_limits(skeleton: Skeleton) -> Array:
    """Limits in completed channel order (radians), shape (J, 3, 2).

    Absent channels are pinned to ``[0, 0]`` (a hinge may not turn about other
    axes); present channels take the skeleton's per-axis limits (±inf if none).
    """
    out = np.zeros((skeleton.num_joints, 3, 2))
    for j, order in enumerate(_full_orders(skeleton)):
        for k, a in enumerate(order):
            if k < len(skeleton.euler_orders[j]):
                out[j, k] = skeleton.limits[j, _AXIS[a]]
    return out


def limit_violation(skeleton: Skeleton, rotations: ArrayLike) -> Array:
    """How far each channel angle lies outside its limits (radians, ≥ 0), shape (..., J, 3).

    Only joints whose channels are all present or that have finite limits are
    bounded; a missing channel's angle counts as a violation of ``[0, 0]``.
    """
    theta = channel_angles(skeleton, rotations)
    lim = channel_limits(skeleton)
    return np.maximum(lim[:, :, 0] - theta, 0.0) + np.maximum(theta - lim[:, :, 1], 0.0)


def clamp_to_limits(skeleton: Skeleton, rotations: ArrayLike) -> Array:
    """Rotations with every channel angle clamped into its limits and absent channels zeroed.

    The nearest rotation in Euler-angle terms; joints already within limits are
    returned unchanged (bit for bit).
    """
    rotations = np.asarray(rotations, dtype=np.float64)
    theta = channel_angles(skeleton, rotations)
    lim = channel_limits(skeleton)
    clamped = np.clip(theta, lim[:, :, 0], lim[:, :, 1])
    changed = np.asarray(np.any(clamped != theta, axis=-1))
    if not changed.any():
        return rotations.copy()
    fixed = rotations_from_channel_angles(skeleton, clamped)
    return np.where(changed[..., None], fixed, rotations)


def project_to_dofs(skeleton: Skeleton, rotations: ArrayLike) -> Array:
    """Rotations with the angles of absent channels set to zero (limits not applied).

    Joints with all three channels and no axis rotation are returned unchanged.
    """
    rotations = np.asarray(rotations, dtype=np.float64)
    present = _present(skeleton)
    if present.all():
        return rotations.copy()
    theta = channel_angles(skeleton, rotations)
    fixed = rotations_from_channel_angles(skeleton, np.where(present, theta, 0.0))
    partial = np.asarray(~present.all(axis=1))
    return np.where(partial[:, None], fixed, rotations)
