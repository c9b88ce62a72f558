"""What a method returns: the motion, the goals it aimed at and a report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .motion import Motion

__all__ = ["Result", "speed"]


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


def speed(frames: int, seconds: float, *, why: str | None = None) -> dict[str, Any]:
    """A report's ``frames_per_second`` entry: the rate, or None with its reason.

    A run too short for the clock (``seconds`` = 0) has no rate; JSON has no
    infinity, so the entry is ``None`` with ``frames_per_second_note`` (``why``,
    or that no time was measured).

    Examples
    --------
    >>> speed(300, 0.5)
    {'frames_per_second': 600.0}
    >>> speed(1, 0.0)["frames_per_second_note"]
    'the run took no measurable time (0 s): no rate'
    """
    if seconds > 0:
        return {"frames_per_second": frames / seconds}
    return {
        "frames_per_second": None,
        "frames_per_second_note": why
        or f"the run took no measurable time ({seconds:g} s): no rate",
    }
