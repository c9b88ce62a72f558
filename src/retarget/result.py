"""What a method returns: the motion, the goals it aimed at and a report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .motion import Motion

__all__ = ["Result"]


@dataclass(frozen=True)
class Result:
    """What a method returns.

    Attributes
    ----------
    motion : Motion
        The retargeted motion, on the target skeleton.
    report : mapping
        JSON-serialisable facts: method name, options, timings, residuals.
    goals : mapping of point name to ndarray (F, 3)
        End-effector goals the method aimed at (NaN rows where unconstrained).
    """

    motion: Motion
    report: Mapping[str, Any]
    goals: Mapping[str, NDArray[np.float64]] = field(default_factory=dict)
