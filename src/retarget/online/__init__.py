"""Online (causal, frame-by-frame) retargeting: one contract, :mod:`.contract`.

Every online method is an object with ``reset()`` and ``step(frame) -> frame``
(:class:`OnlineMethod`); its frames are :class:`SensorFrame`, :class:`PoseFrame`
and :class:`GoalFrame`. Choi & Ko 2000: :mod:`.omr` (the filter), Shin et al.
2001: :mod:`.puppetry`.
"""

from .contract import GoalFrame, OnlineMethod, PoseFrame, SensorFrame
from .omr import BaseSwitching, Effector, Foot, OnlineRetargeter

__all__ = [
    "BaseSwitching",
    "Effector",
    "Foot",
    "GoalFrame",
    "OnlineMethod",
    "OnlineRetargeter",
    "PoseFrame",
    "SensorFrame",
]
