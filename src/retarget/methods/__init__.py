"""Retargeting methods, by name: the ``--method`` of ``retarget run``.

Every method has the offline shape of DESIGN.md: a function
``(source: Motion, target: Skeleton, **options) -> Result``. A :class:`Result`
carries the new motion, the goals it aimed at (for tracking error) and a report
of what it did (residuals, iterations, timings: JSON-serialisable).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..errors import RetargetError
from ..result import Result
from ._base import Method

__all__ = ["METHODS", "Method", "Result", "get_method"]


def _registry() -> dict[str, Method]:
    from .copy import copy_retarget
    from .hierarchical import hierarchical_retarget
    from .omr import omr_retarget
    from .puppetry import puppetry_retarget

    methods = [
        Method(
            "copy",
            "baseline: copy local rotations, scale the root by the height ratio, "
            "put the feet on the floor",
            copy_retarget,
        ),
        Method(
            "hierarchical",
            "Lee & Shin 1999: footplants met by a hierarchy of B-spline displacement maps "
            "and hybrid IK (analytic limbs); --terrain moves contacts onto a surface",
            hierarchical_retarget,
        ),
        Method(
            "omr",
            "Choi & Ko 2000: online, frame by frame: end-effectors tracked by closed-loop "
            "inverse rate control, the source's joints imitated in the null space",
            omr_retarget,
        ),
        Method(
            "puppetry",
            "Shin et al. 2001: online, sensors at the source's joints filtered, end-effectors "
            "weighted by importance near objects, root by ball intersection, analytic limbs",
            puppetry_retarget,
        ),
    ]
    return {m.name: m for m in methods}


METHODS: Mapping[str, Method] = MappingProxyType(_registry())


def get_method(name: str) -> Method:
    """The method called ``name``; the error lists the available ones."""
    try:
        return METHODS[name]
    except KeyError:
        raise RetargetError(f"unknown method {name!r}; methods: {', '.join(METHODS)}") from None
