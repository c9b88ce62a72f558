"""Ground tasks: points above the ground, ``y − h(x, z) − clearance ≥ 0`` (one row per point)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array
from ..core.kinematics import Pose
from ..environment.shapes import Shape, as_shape
from .base import Task, _frozen_array, _wrench_vjp

__all__ = ["GroundTask"]


@dataclass(frozen=True, eq=False)
class GroundTask(Task):
    """Points above the ground: ``y − h(x, z) − clearance ≥ 0`` per point.

    Parameters
    ----------
    points : array_like of int, shape (K,)
        Point indices (toes, heels, ankles...).
    ground : Shape or float, default 0.0
        The ground (:mod:`retarget.environment`): ``h`` is its
        :meth:`~retarget.environment.Shape.ground_height` and the normal of each
        row ``(−h_x, 1, −h_z)`` comes from its
        :meth:`~retarget.environment.Shape.ground_gradient`; a number is the
        height of a level :class:`~retarget.environment.Floor`.
    clearance : array_like, shape (..., K), default 0
        Distance each point must keep above the ground; per batch element,
        NaN = inactive for that point and element.
    weight : float, keyword-only
    """

    points: NDArray[np.intp]
    ground: Shape = 0.0  # type: ignore[assignment]
    clearance: Array = 0.0  # type: ignore[assignment]
    inequality: bool = field(default=True, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {"clearance": 1}

    def __post_init__(self) -> None:
        super().__post_init__()
        points = np.array(self.points, dtype=np.intp).reshape(-1)
        points.setflags(write=False)
        object.__setattr__(self, "points", points)
        clearance = np.array(self.clearance, dtype=np.float64)
        clearance = np.broadcast_to(clearance, (*clearance.shape[:-1], len(points)))
        if clearance.ndim == 0 or clearance.shape[-1] != len(points):
            clearance = np.broadcast_to(clearance, (len(points),))
        object.__setattr__(self, "clearance", _frozen_array(clearance, "clearance", (len(points),)))
        object.__setattr__(self, "ground", as_shape(self.ground))

    @property
    def size(self) -> int:
        return len(self.points)

    def _raw(self, pose: Pose) -> tuple[Array, Array, NDArray[np.bool_]]:
        p = pose.positions[..., self.points, :]
        xz = p[..., [0, 2]]
        r = p[..., 1] - self.ground.ground_height(xz) - self.clearance
        active = np.isfinite(r)
        return r, xz, active

    def residual(self, pose: Pose) -> Array:
        r, _, active = self._raw(pose)
        return np.where(active, r, 0.0)

    def _normals(self, pose: Pose) -> tuple[Array, NDArray[np.bool_]]:
        """``∂r/∂p`` per point, ``(−h_x, 1, −h_z)``, shape (..., K, 3)."""
        r, xz, active = self._raw(pose)
        slope = np.broadcast_to(self.ground.ground_gradient(xz), (*r.shape, 2))
        n = np.stack([-slope[..., 0], np.ones(r.shape), -slope[..., 1]], axis=-1)
        return np.where(active[..., None], n, 0.0), active

    def jacobian(self, pose: Pose) -> Array:
        normals, _ = self._normals(pose)  # (..., K, 3)
        jac = pose.jacobian(self.points)  # (..., 3K, n)
        jac = jac.reshape(*jac.shape[:-2], len(self.points), 3, jac.shape[-1])
        return np.einsum("...kc,...kcn->...kn", normals, jac)

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        points, f, _ = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, points, f, None)

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, Array | None]:
        normals, _ = self._normals(pose)
        return [int(p) for p in self.points], normals * c[..., None], None
