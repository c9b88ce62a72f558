"""Position tasks: a point's world position at a goal, ``r = p_point − goal`` (3 rows).

A root-position task is ``PositionTask(0, goal)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .._arrays import Array
from ..kinematics import Pose
from .base import Task, _check_point, _frozen_array, _wrench_vjp

__all__ = ["PositionTask"]


@dataclass(frozen=True, eq=False)
class PositionTask(Task):
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

    point: int
    goal: Array
    inequality: bool = field(default=False, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {"goal": 1}

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "point", int(self.point))
        object.__setattr__(self, "goal", _frozen_array(self.goal, "goal", (3,)))

    @property
    def size(self) -> int:
        return 3

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
