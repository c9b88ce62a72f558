"""Joint-limit tasks: every finite channel-angle bound as an inequality row,
``θ − lo ≥ 0`` and/or ``hi − θ ≥ 0`` (Lee & Shin 1999, §5.1's inequality constraints)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import dofs
from ..core.arrays import Array
from ..core.kinematics import Pose
from ..core.skeleton import Skeleton
from .base import Task

__all__ = ["JointLimitTask"]


def _inverse3(m: Array, damping: float) -> Array:
    """``(mᵀm + λ²I)⁻¹ mᵀ`` of 3×3 matrices in closed form: the inverse, damped by
    ``λ = damping`` only where ``|det m| < damping`` (near singular)."""
    det_m = np.linalg.det(m)
    lam2 = np.where(np.abs(det_m) < damping, damping**2, 0.0)[..., None, None]
    a = np.swapaxes(m, -1, -2) @ m + lam2 * np.eye(3)
    # adjugate of the symmetric matrix a
    c00 = a[..., 1, 1] * a[..., 2, 2] - a[..., 1, 2] * a[..., 2, 1]
    c01 = a[..., 0, 2] * a[..., 2, 1] - a[..., 0, 1] * a[..., 2, 2]
    c02 = a[..., 0, 1] * a[..., 1, 2] - a[..., 0, 2] * a[..., 1, 1]
    c11 = a[..., 0, 0] * a[..., 2, 2] - a[..., 0, 2] * a[..., 2, 0]
    c12 = a[..., 0, 2] * a[..., 1, 0] - a[..., 0, 0] * a[..., 1, 2]
    c22 = a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    adj = np.stack([c00, c01, c02, c01, c11, c12, c02, c12, c22], axis=-1)
    adj = adj.reshape(*a.shape[:-2], 3, 3)
    det = a[..., 0, 0] * c00 + a[..., 0, 1] * c01 + a[..., 0, 2] * c02
    return (adj / det[..., None, None]) @ np.swapaxes(m, -1, -2)


@dataclass(frozen=True, eq=False)
class JointLimitTask(Task):
    """Channel-angle limits of a skeleton, as inequality rows.

    For every *present* rotation channel ``k`` of joint ``j`` with a finite
    bound (:func:`retarget.core.dofs.channel_limits`), one row

    .. math:: θ_{jk} − lo_{jk} ≥ 0 \\quad\\text{and/or}\\quad hi_{jk} − θ_{jk} ≥ 0,

    with ``θ`` from :func:`retarget.core.dofs.channel_angles`. The angle rates per
    tangent increment are the inverse of the joint's Euler-rate matrix (the
    columns of :func:`retarget.core.dofs.channel_axes` of its channel order
    completed to three axes). Near gimbal lock (middle angle within 0.06° of
    ±90°, ``|det C| < 1e-3``) it is a damped inverse ``(CᵀC + λ²I)⁻¹Cᵀ`` with
    ``λ = 1e-3``, so that gimbal lock itself gives large (≤ ~500) but
    finite rows. Angles wrap at ±π (first and last axis) and ±π/2 (middle).

    Parameters
    ----------
    skeleton : Skeleton
    weight : float, keyword-only
        In 1/rad².

    Attributes
    ----------
    rows : ndarray of int, shape (m, 3)
        ``(joint, channel, side)`` per row: channel in the completed order of
        :func:`~retarget.core.dofs.channel_angles`, side 0 = lower, 1 = upper bound.
    """

    skeleton: Skeleton
    inequality: bool = field(default=True, init=False)
    rows: NDArray[np.intp] = field(init=False, repr=False)
    _bounds: Array = field(init=False, repr=False)
    _full: Skeleton = field(init=False, repr=False)

    _DAMPING: ClassVar[float] = 1e-3

    def __post_init__(self) -> None:
        super().__post_init__()
        sk = self.skeleton
        limits = dofs.channel_limits(sk)  # (J, 3, 2), completed order
        rows = [
            (j, k, side)
            for j, order in enumerate(sk.euler_orders)
            for k in range(len(order))
            for side in (0, 1)
            if np.isfinite(limits[j, k, side])
        ]
        rows_arr = np.array(rows, dtype=np.intp).reshape(-1, 3)
        bounds = limits[rows_arr[:, 0], rows_arr[:, 1], rows_arr[:, 2]]
        rows_arr.setflags(write=False)
        bounds.setflags(write=False)
        # The same skeleton with every joint's order completed to three channels:
        # its channel_axes are the full Euler-rate matrices (the same angles).
        channels = []
        for j, chans in enumerate(sk.channels):
            order = sk.euler_orders[j]
            missing = tuple(f"{a}rotation" for a in "XYZ" if a not in order)
            channels.append(tuple(chans) + missing)
        full = sk.replace(channels=tuple(channels))
        object.__setattr__(self, "rows", rows_arr)
        object.__setattr__(self, "_bounds", bounds)
        object.__setattr__(self, "_full", full)

    @property
    def size(self) -> int:
        return len(self.rows)

    @property
    def _sign(self) -> Array:
        return np.where(self.rows[:, 2] == 0, 1.0, -1.0)

    def _check(self, pose: Pose) -> None:
        if pose.skeleton.num_joints != self.skeleton.num_joints:
            raise ValueError(
                f"JointLimitTask for {self.skeleton.num_joints} joints used on a pose of "
                f"{pose.skeleton.num_joints}"
            )

    def _joints(self) -> NDArray[np.intp]:
        return np.unique(self.rows[:, 0])

    def residual(self, pose: Pose) -> Array:
        self._check(pose)
        theta = dofs.channel_angles(self._full, pose.rotations)
        return self._sign * (theta[..., self.rows[:, 0], self.rows[:, 1]] - self._bounds)

    def _rates(self, pose: Pose) -> tuple[NDArray[np.intp], Array]:
        """Used joints (U,) and ``∂θ/∂v`` per used joint, shape (..., U, 3, 3)."""
        joints = self._joints()
        axes = dofs.channel_axes(self._full, pose.rotations)[..., joints, :, :]
        return joints, _inverse3(axes, self._DAMPING)

    def _joint_rows(self, pose: Pose) -> tuple[NDArray[np.intp], Array]:
        """Each row's joint (m,) and its gradient w.r.t. that joint's increment (..., m, 3)."""
        self._check(pose)
        joints, rates = self._rates(pose)
        pos = np.searchsorted(joints, self.rows[:, 0])
        return self.rows[:, 0], rates[..., pos, self.rows[:, 1], :] * self._sign[:, None]

    def jacobian(self, pose: Pose) -> Array:
        _, block = self._joint_rows(pose)  # (..., m, 3)
        n_joints = self.skeleton.num_joints
        jac = np.zeros((*block.shape[:-2], self.size, 3 + 3 * n_joints))
        cols = 3 + 3 * self.rows[:, 0][:, None] + np.arange(3)  # (m, 3)
        jac[..., np.arange(self.size)[:, None], cols] = block
        return jac

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        c = np.asarray(cotangent, dtype=np.float64)
        _, block = self._joint_rows(pose)  # (..., m, 3)
        contrib = block * c[..., None]
        batch = np.broadcast_shapes(contrib.shape[:-2])
        out = np.zeros((*batch, 3 + 3 * self.skeleton.num_joints))
        rot = out[..., 3:].reshape(*batch, self.skeleton.num_joints, 3)
        np.add.at(np.moveaxis(rot, -2, 0), self.rows[:, 0], np.moveaxis(contrib, -2, 0))
        return out
