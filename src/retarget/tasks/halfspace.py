"""Half-space tasks: blended points on the outer side of planes, ``n·p − level ≥ 0`` (one row each).

A row's point is carried by several joints at once, as a skinned vertex is (linear
blend skinning): ``p = Σ_i w_i (p_{j_i} + W_{j_i} o_i)``, ``o_i`` the point's offset
in joint ``j_i``'s frame and ``w_i`` its weights; a point on one joint is the case of
one weight 1. Each row keeps its point on the side of a plane (``n`` the unit normal,
``level`` the plane's offset along it, a clearance added) that the normal points to,
per batch element (a frame): the tangent plane of a surface at the point's nearest
point on it, which linearises "outside the surface" about a pose
(:mod:`retarget.targets.character.clearance` keeps a character's hands off its
posed body so).

Its Jacobian is that of the blended point along the normal:
``∂r/∂x = Σ_i w_i (nᵀ J_p(j_i) + ((W_{j_i} o_i) × n)ᵀ J_ω(j_i))`` (a point carried by
joint ``j`` moves as ``ṗ_j + ω_j × (W_j o)``), checked against finite differences in
``tests/test_tasks.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array
from ..core.kinematics import Pose
from .base import Task, _frozen_array, _wrench_vjp

__all__ = ["HalfSpaceTask"]


@dataclass(frozen=True, eq=False)
class HalfSpaceTask(Task):
    """Blended points kept on the outer side of planes (module docstring).

    Parameters
    ----------
    joints : array_like of int, shape (I,)
        The joints that carry the points.
    offsets : array_like, shape (..., K, I, 3)
        Each point's offset in each joint's frame (skeleton unit).
    weights : array_like, shape (..., K, I)
        Each point's share of each joint (rows adding up to 1; 0: not carried).
    normal : array_like, shape (..., K, 3)
        The planes' unit normals, pointing to the side the point keeps; NaN: the row
        is inactive for that batch element.
    level : array_like, shape (..., K)
        ``n·p`` the point must reach (the plane's offset plus the clearance).
    weight : float, keyword-only
        In 1/unit².
    """

    joints: NDArray[np.intp]
    offsets: Array
    weights: Array
    normal: Array
    level: Array
    inequality: bool = field(default=True, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {
        "offsets": 3,
        "weights": 2,
        "normal": 2,
        "level": 1,
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        joints = np.array(self.joints, dtype=np.intp).reshape(-1)
        joints.setflags(write=False)
        object.__setattr__(self, "joints", joints)
        normal = _frozen_array(np.asarray(self.normal, dtype=np.float64), "normal", (3,))
        k = normal.shape[-2] if normal.ndim >= 2 else 0
        i = len(joints)
        offsets = _frozen_array(np.asarray(self.offsets, dtype=np.float64), "offsets", (k, i, 3))
        weights = _frozen_array(np.asarray(self.weights, dtype=np.float64), "weights", (k, i))
        level = _frozen_array(np.asarray(self.level, dtype=np.float64), "level", (k,))
        if not (np.isfinite(offsets).all() and np.isfinite(weights).all()):
            raise ValueError("`offsets` and `weights` must be finite")
        fields = {"offsets": offsets, "weights": weights, "normal": normal, "level": level}
        for name, arr in fields.items():
            object.__setattr__(self, name, arr)

    @property
    def size(self) -> int:
        return int(self.normal.shape[-2])

    def _arms(self, pose: Pose) -> tuple[Array, Array]:
        """The points' offsets turned into the world, ``W_{j_i} o_i`` (..., K, I, 3),
        and the points (..., K, 3)."""
        w = pose.world_rotations[..., self.joints, :]  # (..., I, 4)
        arms = quat.rotate(w[..., None, :, :], self.offsets)  # (..., K, I, 3)
        p = pose.positions[..., self.joints, :][..., None, :, :] + arms
        return arms, (self.weights[..., None] * p).sum(axis=-2)

    def _active(self) -> tuple[Array, NDArray[np.bool_]]:
        active = np.isfinite(self.normal).all(axis=-1) & np.isfinite(self.level)
        return np.where(active[..., None], self.normal, 0.0), active

    def residual(self, pose: Pose) -> Array:
        n, active = self._active()
        _, p = self._arms(pose)
        r = (n * p).sum(axis=-1) - np.where(active, self.level, 0.0)
        return np.where(active, r, 0.0)

    def jacobian(self, pose: Pose) -> Array:
        n, _ = self._active()  # (..., K, 3)
        arms, _ = self._arms(pose)
        jac = pose.jacobian(self.joints, orientation=True)  # (..., 6I, n)
        batch, i = jac.shape[:-2], len(self.joints)
        jac_p = jac[..., : 3 * i, :].reshape(*batch, i, 3, -1)
        jac_w = jac[..., 3 * i :, :].reshape(*batch, i, 3, -1)
        lever = np.cross(arms, n[..., None, :])  # (..., K, I, 3): (W o) × n
        wn = self.weights[..., None] * n[..., None, :]  # (..., K, I, 3)
        return np.einsum("...kic,...icn->...kn", wn, jac_p) + np.einsum(
            "...kic,...icn->...kn", self.weights[..., None] * lever, jac_w
        )

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        points, forces, torques = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, points, forces, torques)

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, Array]:
        """``Jᵀ c`` as forces ``c w_i n`` at the joints with the torques ``(W o_i) × f``."""
        n, _ = self._active()
        arms, _ = self._arms(pose)
        f = c[..., None, None] * self.weights[..., None] * n[..., None, :]  # (..., K, I, 3)
        torque = np.cross(arms, f)
        batch = f.shape[:-3]
        k, i = f.shape[-3], f.shape[-2]
        points = [int(j) for j in self.joints] * k
        return points, f.reshape(*batch, k * i, 3), torque.reshape(*batch, k * i, 3)
