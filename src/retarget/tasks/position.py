"""Position tasks: a point's world position at a goal, ``r = p_point − goal`` (3 rows).

A root-position task is ``PositionTask(0, goal)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..core.arrays import Array
from ..core.kinematics import Pose
from .base import _check_point, _frozen_array, _PointTask, _wrench_vjp

__all__ = ["PositionTask"]


@dataclass(frozen=True, eq=False)
class PositionTask(_PointTask):
    """World position of a point (joint or end site).

    .. math:: r = p_{point} − goal

    Parameters
    ----------
    point : int
        Point index (``skeleton.index(name)``); 0 is the root.
    goal : array_like, shape (..., 3)
        Goal positions. A NaN component makes that row inactive for that batch
        element: ``(x, NaN, z)`` constrains the horizontal position only,
        all-NaN the whole element.
    weight : float, keyword-only
        In 1/unit².
    """

    @staticmethod
    def _goal(goal: ArrayLike) -> Array:
        return _frozen_array(goal, "goal", (3,))

    def residual(self, pose: Pose) -> Array:
        p = pose.positions[..., _check_point(pose, self.point), :]
        r = p - self.goal
        return np.where(np.isnan(r), 0.0, r)

    def jacobian(self, pose: Pose) -> Array:
        jac = pose.jacobian([_check_point(pose, self.point)])
        return jac * np.isfinite(self.goal)[..., None]

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        points, f, _ = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, points, f, None)

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, Array | None]:
        f = np.where(np.isfinite(self.goal), c, 0.0)
        return [_check_point(pose, self.point)], f[..., None, :], None
