"""Online (causal, frame-by-frame) retargeting: one contract, :mod:`retarget.core.frames`.

Every online method is an object with ``reset()`` and ``step(frame) -> frame``
(:class:`OnlineMethod`); its frames are :class:`SensorFrame`, :class:`PoseFrame` and
:class:`GoalFrame`. Choi & Ko 2000 (:mod:`.omr`): :class:`OMRRetargeter` (a source's
poses in) over the filter :class:`OnlineRetargeter` (its inputs in); Shin et al. 2001
(:mod:`.puppetry`, its importance :mod:`.importance`): :class:`Puppeteer` (sensor
frames in); Tak & Ko 2005 frame by frame (:mod:`.physics`). The live adapters of
``retarget serve`` (:mod:`.stream`) parse messages into these frames and call ``step``.
"""

from ..core.frames import GoalFrame, OnlineMethod, PoseFrame, SensorFrame
from .omr import BaseSwitching, Effector, Foot, OMRRetargeter, OnlineRetargeter

__all__ = [
    "BaseSwitching",
    "Effector",
    "Foot",
    "GoalFrame",
    "OMRRetargeter",
    "OnlineMethod",
    "OnlineRetargeter",
    "PoseFrame",
    "SensorFrame",
]
