"""Segment tasks: the vector from one point to another at a goal, ``r = (p_end − p_start) − goal``.

A limb segment's direction (a thigh from hip to knee) as the method put it, wherever
the segment's start ends up: a robot whose hinges stand a few centimetres apart
cannot put every joint where a method's ball joints put them, but it can point every
segment the same way (:func:`retarget.targets.robot.hinges.to_robot`). The Jacobian is the end's
position Jacobian less the start's: ``∂r/∂x = J_end − J_start``, so the joints
above the start turn the whole segment (``u_j × (p_end − p_start)``) and the root's
translation moves neither end relative to the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ..core.arrays import Array
from ..core.kinematics import Pose
from .base import Task, _check_point, _frozen_array, _wrench_vjp

__all__ = ["SegmentTask"]


@dataclass(frozen=True, eq=False)
class SegmentTask(Task):
    """The vector from point ``start`` to point ``end`` at ``goal`` (3 rows).

    .. math:: r = (p_{end} − p_{start}) − goal

    Parameters
    ----------
    start, end : int
        Point indices (joints or end sites).
    goal : array_like, shape (..., 3)
        Goal vectors (skeleton unit); a NaN component makes that row inactive.
    weight : float, keyword-only
        In 1/unit².
    """

    start: int
    end: int
    goal: Array
    inequality: bool = field(default=False, init=False)
    batched_fields: ClassVar = {"goal": 1}

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "start", int(self.start))
        object.__setattr__(self, "end", int(self.end))
        object.__setattr__(self, "goal", _frozen_array(self.goal, "goal", (3,)))

    @property
    def size(self) -> int:
        return 3

    def residual(self, pose: Pose) -> Array:
        p = pose.positions
        r = p[..., _check_point(pose, self.end), :] - p[..., _check_point(pose, self.start), :]
        r = r - self.goal
        return np.where(np.isnan(r), 0.0, r)

    def jacobian(self, pose: Pose) -> Array:
        jac = pose.jacobian([_check_point(pose, self.end), _check_point(pose, self.start)])
        return (jac[..., :3, :] - jac[..., 3:, :]) * np.isfinite(self.goal)[..., None]

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        points, f, _ = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, points, f, None)

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, None]:
        """``Jᵀ c``: the force ``c`` at the end and ``−c`` at the start."""
        f = np.where(np.isfinite(self.goal), c, 0.0)
        return [self.end, self.start], np.stack([f, -f], axis=-2), None
