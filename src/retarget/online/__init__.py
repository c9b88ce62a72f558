"""Online (causal, frame-by-frame) retargeting: one contract, :mod:`retarget.frames`.

Every online method is an object with ``reset()`` and ``step(frame) -> frame``
(:class:`OnlineMethod`); its frames are :class:`SensorFrame`, :class:`PoseFrame`
and :class:`GoalFrame`. Choi & Ko 2000: :class:`OMRRetargeter` (:mod:`.omr_plan`:
a source's poses in) over the filter :class:`OnlineRetargeter` (:mod:`.omr`: its
inputs in); Shin et al. 2001: :class:`retarget.online.puppetry.Puppeteer` (sensor
frames in). The live adapters of ``retarget serve`` (:mod:`.stream`) parse
messages into these frames and call ``step``.
"""

from ..frames import GoalFrame, OnlineMethod, PoseFrame, SensorFrame
from .omr import BaseSwitching, Effector, Foot, OnlineRetargeter
from .omr_plan import OMRRetargeter

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
