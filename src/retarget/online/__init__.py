"""Online (causal, frame-by-frame) retargeting: Choi & Ko 2000 (:mod:`.omr`)."""

from .omr import BaseSwitching, Effector, Foot, OnlineRetargeter

__all__ = ["BaseSwitching", "Effector", "Foot", "OnlineRetargeter"]
