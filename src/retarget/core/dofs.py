"""Joint degrees of freedom: channel angles, their axes in the tangent space, limits.

A joint's local rotation is ``q = A ⊗ E(θ) ⊗ A⁻¹`` (:mod:`retarget.core.skeleton`):
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

import dataclasses
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import quat
from .arrays import Array
from .skeleton import Skeleton

__all__ = [
    "aim_on_channels",
    "channel_angles",
    "channel_axes",
    "channel_limits",
    "clamp_to_limits",
    "limit_violation",
    "project_to_dofs",
    "rotations_from_channel_angles",
    "twist_for_hinge",
    "widen_limits",
]

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
    """Local rotation-vector directions of the channel angle rates, shape (..., J, 3, 3),
    at ``rotations`` (..., J, 4) (parameters as in :func:`channel_angles`).

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


def limit_violation(
    skeleton: Skeleton, rotations: ArrayLike, joints: ArrayLike | None = None
) -> Array:
    """How far each channel angle lies outside its limits (radians, ≥ 0), shape (..., J, 3)
    (or (..., len(joints), 3): those joints' only, the others not decomposed).

    Only joints whose channels are all present or that have finite limits are
    bounded; a missing channel's angle counts as a violation of ``[0, 0]``.
    """
    lim = channel_limits(skeleton)
    if joints is None:
        theta = channel_angles(skeleton, rotations)
    else:
        joints = np.asarray(joints, dtype=np.intp)
        rotations = np.asarray(rotations, dtype=np.float64)[..., joints, :]
        local = quat.multiply(
            quat.multiply(quat.conjugate(skeleton.axes[joints]), rotations), skeleton.axes[joints]
        )
        orders = [_full_orders(skeleton)[j] for j in joints]
        theta = np.empty((*local.shape[:-1], 3))
        for order, at in _group(orders).items():
            theta[..., at, :] = quat.euler_from_quat(local[..., at, :], order)
        lim = lim[joints]
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


def widen_limits(skeleton: Skeleton, rotations: ArrayLike) -> Skeleton:
    """The skeleton with each finite channel limit widened to take in the given motion.

    A method that keeps joints within limits then never pulls a joint back
    that the input motion itself takes outside them (a motion mapped from
    another performer onto an ASF skeleton whose limits are its subject's), yet
    does not push one further out.

    Parameters
    ----------
    skeleton : Skeleton
    rotations : array_like, shape (F, J, 4)
    """
    theta = channel_angles(skeleton, rotations)
    lim = np.array(skeleton.limits)
    for j, order in enumerate(skeleton.euler_orders):
        for k, a in enumerate(order):
            lo, hi = lim[j, _AXIS[a]]
            lim[j, _AXIS[a]] = (min(lo, theta[:, j, k].min()), max(hi, theta[:, j, k].max()))
    return dataclasses.replace(skeleton, limits=lim)


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


def _angle_about(axis: Array, u: Array, d: Array) -> tuple[Array, Array]:
    """Angle turning ``u`` onto ``d`` about the unit ``axis`` (their components across
    it), and the product of those components' lengths (0: no angle does better than
    another). ``u, d``: (..., 3)."""
    u_p = u - (u @ axis)[..., None] * axis
    d_p = d - (d @ axis)[..., None] * axis
    sin = np.cross(u_p, d_p) @ axis
    cos = (u_p * d_p).sum(-1)
    return np.arctan2(sin, cos), np.hypot(sin, cos)


def _nearest_root(a: Array, b: Array, c: Array, near: Array) -> Array:
    """The solution of ``a cos x + b sin x = c`` in ``[-π/2, π/2]`` (the range of a
    middle Euler angle, as :func:`channel_angles` reads it back) nearest ``near``,
    else the nearest outside; the closest reach when there is none."""
    r = np.hypot(a, b)
    base = np.arctan2(b, a)
    spread = np.arccos(np.clip(c / np.maximum(r, 1e-300), -1.0, 1.0))
    roots = np.angle(np.exp(1j * (base[..., None] + np.stack([spread, -spread], axis=-1))))
    gap = np.abs(np.angle(np.exp(1j * (roots - near[..., None]))))
    gap = gap + 2.0 * np.pi * (np.abs(roots) > 0.5 * np.pi)
    return np.where(
        r > 1e-12, np.take_along_axis(roots, gap.argmin(-1)[..., None], -1)[..., 0], near
    )


def aim_on_channels(
    skeleton: Skeleton,
    joint: int,
    guess: ArrayLike,
    bone: ArrayLike | None = None,
    direction: ArrayLike | None = None,
) -> Array:
    """A local rotation on the joint's channels that points a bone along a direction.

    Parameters
    ----------
    skeleton : Skeleton
    joint : int
    guess : array_like, shape (F, 4)
        The wanted local rotation (any three-axis rotation).
    bone : array_like, shape (3,), optional
        Unit bone direction in the joint's own frame.
    direction : array_like, shape (F, 3), optional
        Unit direction the bone should take, in the parent's frame.

    Returns
    -------
    ndarray, shape (F, 4)
        ``guess`` for a joint with three channels; the identity for one with
        none. One channel: the angle that turns ``bone`` closest to ``direction``
        about the axis, or, for a bone along the axis (a twist joint) or without
        ``direction``, the twist of ``guess`` about it. Two channels ``R_a(θ0)
        R_b(θ1)``: ``θ1`` brings the bone's component along ``a`` to the
        direction's (the root nearest the guess's ``θ1``; the nearest reach when
        out of range), then ``θ0`` turns it about ``a``; without ``direction``,
        the guess's first two Euler angles.
    """
    guess = np.asarray(guess, dtype=np.float64)
    order = skeleton.euler_orders[joint]
    if len(order) == 3 and guess.size:
        return guess.copy()
    if not order:
        return quat.identity(guess.shape[:-1])
    frame = skeleton.axes[joint]
    inv = quat.conjugate(frame)
    g = quat.multiply(quat.multiply(inv, guess), frame)  # in the channel frame
    full = order + "".join(a for a in "XYZ" if a not in order)
    theta = quat.euler_from_quat(g, full)
    e = np.eye(3)[[_AXIS[a] for a in order]]
    u = d = None
    if bone is not None and direction is not None:
        u = quat.rotate(inv, np.asarray(bone, dtype=np.float64))
        d = quat.rotate(inv, np.asarray(direction, dtype=np.float64))
    angles = np.zeros_like(theta)
    if len(order) == 1:
        twist = 2.0 * np.arctan2(g[..., 1:] @ e[0], g[..., 0])
        angles[..., 0] = twist
        if u is not None and d is not None and np.linalg.norm(np.cross(u, e[0])) > 0.2:
            aimed, reach = _angle_about(e[0], u, d)
            angles[..., 0] = np.where(reach > 1e-9, aimed, twist)
    elif u is None or d is None:
        angles[..., :2] = theta[..., :2]
    else:
        a_axis, b_axis = e
        u_across = u - (u @ b_axis) * b_axis
        t1 = _nearest_root(
            np.broadcast_to(u_across @ a_axis, theta.shape[:-1]),
            np.broadcast_to(np.cross(b_axis, u) @ a_axis, theta.shape[:-1]),
            d @ a_axis,
            theta[..., 1],
        )
        half = 0.5 * t1[..., None]
        turn_b = np.concatenate([np.cos(half), np.sin(half) * b_axis], axis=-1)
        t0, reach = _angle_about(a_axis, quat.rotate(turn_b, u), d)
        angles[..., 0] = np.where(reach > 1e-9, t0, theta[..., 0])
        angles[..., 1] = t1
    local = quat.quat_from_euler(angles, full)
    return quat.multiply(quat.multiply(frame, local), inv)


def twist_for_hinge(
    skeleton: Skeleton,
    child: int,
    parent_bone: ArrayLike,
    child_bone: ArrayLike,
    direction: ArrayLike,
) -> Array:
    """The twist of a parent about its bone that lets a one-channel child reach a direction.

    A hinge (a knee, an elbow) turns its bone on a cone about its axis; the
    parent's twist about its own bone sets where that cone lies. This is the
    twist ``φ`` (radians) for which the child's bone can point along
    ``direction``: the root of ``A cos φ + B sin φ = C`` whose hinge angle keeps
    within the child's limits, else the one nearest the previous frame's (the
    first frame's: nearest 0), so a knee passing through straight, where the two
    roots trade places, does not flip its thigh; the closest reach when no
    twist reaches it, the previous frame's twist when any does.

    Parameters
    ----------
    skeleton : Skeleton
    child : int
        The one-channel joint.
    parent_bone : array_like, shape (3,)
        Unit direction of the parent's bone, in the parent's frame.
    child_bone : array_like, shape (3,)
        Unit direction of the child's bone, in the child's frame.
    direction : array_like, shape (F, 3)
        Unit direction wanted for the child's bone, in the parent's frame
        (before the twist).

    Returns
    -------
    ndarray, shape (F,)
        ``φ``: the parent's local rotation becomes ``q ⊗ exp(φ u)``.
    """
    order = skeleton.euler_orders[child]
    if len(order) != 1:
        raise ValueError(f"joint {skeleton.names[child]!r} has channels {order!r}, not one")
    axis_name = order[0]
    frame = skeleton.axes[child]
    h = quat.rotate(frame, np.eye(3)[_AXIS[axis_name]])  # hinge axis, parent's frame
    u = np.asarray(parent_bone, dtype=np.float64)
    c_bone = np.asarray(child_bone, dtype=np.float64)
    d = np.asarray(direction, dtype=np.float64)
    h_along = (h @ u) * u
    a, b = d @ (h - h_along), d @ np.cross(u, h)
    c = c_bone @ h - d @ h_along
    r = np.hypot(a, b)
    base = np.arctan2(b, a)
    spread = np.arccos(np.clip(c / np.maximum(r, 1e-300), -1.0, 1.0))
    roots = np.stack([base + spread, base - spread], axis=-1)  # (F, 2)
    roots = np.angle(np.exp(1j * roots))
    lo, hi = skeleton.limits[child, _AXIS[axis_name]]
    half = 0.5 * roots[..., None]
    turn = np.concatenate([np.cos(half), np.sin(half) * u], axis=-1)  # (F, 2, 4)
    d_twisted = quat.rotate(quat.conjugate(turn), d[..., None, :])
    hinge, _ = _angle_about(h, c_bone, d_twisted)
    outside = np.maximum(lo - hinge, 0.0) + np.maximum(hinge - hi, 0.0)
    out = np.empty(len(roots))
    last = 0.0
    two_pi = 2.0 * math.pi
    reach, pairs, off = r.tolist(), roots.tolist(), outside.tolist()
    for f in range(len(pairs)):  # frame by frame: a straight knee's roots swap places
        if reach[f] > 1e-12:
            (r0, r1), (o0, o1) = pairs[f], off[f]
            c0 = (10.0 + o0 if o0 > 1e-12 else 0.0) + abs(math.remainder(r0 - last, two_pi))
            c1 = (10.0 + o1 if o1 > 1e-12 else 0.0) + abs(math.remainder(r1 - last, two_pi))
            last = r0 if c0 <= c1 else r1  # inside first, then nearest the last
        out[f] = last
    return out
