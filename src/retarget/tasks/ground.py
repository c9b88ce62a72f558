"""Ground tasks: points above the ground, ``y − h(x, z) − clearance ≥ 0`` (one row per point)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._arrays import Array
from ..kinematics import Pose
from .base import Task, _frozen_array, _wrench_vjp

__all__ = ["GroundTask", "HeightFn"]

HeightFn = Callable[[Array], Array]


@dataclass(frozen=True, eq=False)
class GroundTask(Task):
    """Points above the ground: ``y − h(x, z) − clearance ≥ 0`` per point.

    Parameters
    ----------
    points : array_like of int, shape (K,)
        Point indices (toes, heels, ankles...).
    ground : float, callable or object, default 0.0
        A floor height (flat floor, Y up); or ``height(xz (..., 2)) -> (...)``;
        or any object with a ``height(xz)`` method and optionally
        ``gradient(xz) -> (..., 2)`` (``retarget.environment`` height fields).
    clearance : array_like, shape (..., K), default 0
        Distance each point must keep above the ground; per batch element,
        NaN = inactive for that point and element.
    gradient : callable, optional
        ``∂h/∂(x, z)``, ``(..., 2) -> (..., 2)``; without one (and without a
        ``ground.gradient``), central differences of ``height``.
    weight : float, keyword-only
    """

    points: NDArray[np.intp]
    ground: Any = 0.0
    clearance: Array = 0.0  # type: ignore[assignment]
    gradient: HeightFn | None = None
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
        g = self.ground
        if not (isinstance(g, (int, float, np.floating, np.integer)) or callable(g)):
            if not callable(getattr(g, "height", None)):
                raise ValueError(
                    "Expected `ground` to be a floor height, a height function h(xz), or an "
                    f"object with a height(xz) method; got {type(g).__name__}"
                )
        if isinstance(g, (int, float, np.floating, np.integer)):
            object.__setattr__(self, "ground", float(g))

    @property
    def size(self) -> int:
        return len(self.points)

    def _height(self, xz: Array) -> Array:
        g = self.ground
        if isinstance(g, float):
            return np.full(xz.shape[:-1], g)
        fn = g if callable(g) and not hasattr(g, "height") else g.height
        return np.asarray(fn(xz), dtype=np.float64)

    def _slope(self, xz: Array) -> Array:
        g = self.ground
        if isinstance(g, float):
            return np.zeros(xz.shape)
        fn = self.gradient or getattr(g, "gradient", None)
        if fn is not None:
            return np.asarray(fn(xz), dtype=np.float64)
        h = 1e-6 * np.maximum(1.0, np.abs(xz))
        out = np.empty(xz.shape)
        for c in range(2):
            step = np.zeros(xz.shape)
            step[..., c] = h[..., c]
            out[..., c] = (self._height(xz + step) - self._height(xz - step)) / (2 * h[..., c])
        return out

    def _raw(self, pose: Pose) -> tuple[Array, Array, NDArray[np.bool_]]:
        p = pose.positions[..., self.points, :]
        xz = p[..., [0, 2]]
        r = p[..., 1] - self._height(xz) - self.clearance
        active = np.isfinite(r)
        return r, xz, active

    def residual(self, pose: Pose) -> Array:
        r, _, active = self._raw(pose)
        return np.where(active, r, 0.0)

    def _normals(self, pose: Pose) -> tuple[Array, NDArray[np.bool_]]:
        """``∂r/∂p`` per point, ``(−h_x, 1, −h_z)``, shape (..., K, 3)."""
        r, xz, active = self._raw(pose)
        slope = self._slope(xz)
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
