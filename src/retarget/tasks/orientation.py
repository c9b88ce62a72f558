"""Orientation tasks: a point's world frame at a goal, ``r = log(W_point ⊗ goal⁻¹)`` (3 rows)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array
from ..core.kinematics import Pose
from ..core.so3 import apply_right_jacobian_inverse, right_jacobian_inverse
from .base import _active_rows, _check_point, _PointTask, _unit_goals, _wrench_vjp

__all__ = ["OrientationTask"]


@dataclass(frozen=True, eq=False)
class OrientationTask(_PointTask):
    """World orientation of a point's frame.

    .. math:: r = \\log(W_{point} ⊗ goal^{-1})

    a world-frame rotation vector (the rotation that takes the goal to the
    current frame), matching the orientation rows of
    :meth:`~retarget.core.kinematics.Pose.jacobian`: ``∂r/∂x = J_l(r)⁻¹ J_ω``.

    Parameters
    ----------
    point : int
    goal : array_like, shape (..., 4)
        Goal world rotations (w, x, y, z); a NaN makes that element inactive.
    weight : float, keyword-only
        In 1/rad².
    """

    @staticmethod
    def _goal(goal: ArrayLike) -> Array:
        return _unit_goals(goal)

    def _raw(self, pose: Pose) -> tuple[Array, NDArray[np.bool_]]:
        w = pose.world_rotations[..., _check_point(pose, self.point), :]
        active = _active_rows(self.goal)
        goal = np.where(active[..., None], self.goal, np.array([1.0, 0.0, 0.0, 0.0]))
        return quat.log(quat.multiply(w, quat.conjugate(goal))), active

    def residual(self, pose: Pose) -> Array:
        r, active = self._raw(pose)
        return np.where(active[..., None], r, 0.0)

    def jacobian(self, pose: Pose) -> Array:
        r, active = self._raw(pose)
        j_omega = pose.jacobian([_check_point(pose, self.point)], orientation=True)[..., 3:, :]
        jl_inv = np.swapaxes(right_jacobian_inverse(r), -1, -2)  # J_l(r)⁻¹ = J_r(r)⁻ᵀ
        return (jl_inv @ j_omega) * active[..., None, None]

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        point, f, m = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, point, f, m)

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, Array | None]:
        r, active = self._raw(pose)
        # (J_l⁻¹)ᵀ c = J_r⁻¹ c: a world torque at the point
        m = np.where(active[..., None], apply_right_jacobian_inverse(r, c), 0.0)
        return [_check_point(pose, self.point)], np.zeros_like(m)[..., None, :], m[..., None, :]
