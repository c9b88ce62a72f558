"""What every retargeting method returns, and checks they share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import RetargetError
from ..motion import Motion
from ..skeleton import Skeleton

__all__ = ["Method", "Result", "check_same_hierarchy"]


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


@dataclass(frozen=True)
class Method:
    """A named retargeting method."""

    name: str
    summary: str
    run: Callable[..., Result]


def check_same_hierarchy(source: Skeleton, target: Skeleton) -> None:
    """Methods that copy rotations joint by joint need the target to have the
    source's joints by name (mapping between other hierarchies: see roles)."""
    missing = [n for n in source.names if n not in set(target.names)]
    if missing:
        raise RetargetError(
            f"the target lacks the source joints {missing[:8]}{'…' if len(missing) > 8 else ''}; "
            "use a target with the source's joint names"
        )
