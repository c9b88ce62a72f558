"""Retargeting methods, by name: the ``--method`` of ``retarget run``.

Every method has the offline shape of DESIGN.md: a function
``(source: Motion, target: Skeleton, **options) -> Result``. A :class:`Result`
carries the new motion, the goals it aimed at (for tracking error) and a report
of what it did (residuals, iterations, timings: JSON-serialisable).

A method is one module: its function and, at the end, ``OPTIONS``, the
:class:`Option` s that ``retarget run``, ``retarget batch`` and
:class:`~retarget.pipeline.run.RunJob` offer. Adding one is that module and one line of
:data:`METHODS` below; a module is imported when its method is first used.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..core.errors import RetargetError
from ._base import FOOT_HOLD, Method, Option

if TYPE_CHECKING:
    from ..core.result import Result

__all__ = ["FOOT_HOLD", "METHODS", "Method", "Option", "Result", "get_method", "method_options"]

_METHODS = (
    Method(
        "copy",
        "baseline: copy local rotations, scale the root by the height ratio, "
        "put the feet on the floor",
        "retarget.methods.copy:copy_retarget",
    ),
    Method(
        "hierarchical",
        "Lee & Shin 1999: footplants met by a hierarchy of B-spline displacement maps "
        "and hybrid IK (analytic limbs); --terrain moves contacts onto a surface",
        "retarget.methods.hierarchical:hierarchical_retarget",
    ),
    Method(
        "omr",
        "Choi & Ko 2000: online, frame by frame: end-effectors tracked by closed-loop "
        "inverse rate control, the source's joints imitated in the null space",
        "retarget.methods.omr:omr_retarget",
    ),
    Method(
        "puppetry",
        "Shin et al. 2001: online, sensors at the source's joints filtered, end-effectors "
        "weighted by importance near objects, root by ball intersection, analytic limbs",
        "retarget.methods.puppetry:puppetry_retarget",
    ),
    Method(
        "physics",
        "Tak & Ko 2005: the hierarchical result made physically plausible: balance (ZMP "
        "in the support), torque limits and momentum by a Kalman filter per frame and "
        "a B-spline displacement (the same as `retarget physics`)",
        "retarget.methods.physics:physics_retarget",
    ),
)

#: Every method by name (its module is imported when its ``run`` or ``options`` is used).
METHODS: Mapping[str, Method] = MappingProxyType({m.name: m for m in _METHODS})


def get_method(name: str) -> Method:
    """The method called ``name``; the error lists the available ones."""
    try:
        return METHODS[name]
    except KeyError:
        raise RetargetError(f"unknown method {name!r}; methods: {', '.join(METHODS)}") from None


def method_options() -> dict[str, tuple[Option, tuple[str, ...]]]:
    """Every method's options by name, each with the methods that declare it, in the
    order of :data:`METHODS` and their declarations (what ``retarget run`` offers;
    the first declaration of a name gives its flag and help)."""
    found: dict[str, tuple[Option, tuple[str, ...]]] = {}
    for method in METHODS.values():
        for option in method.options:
            first, names = found.get(option.name, (option, ()))
            found[option.name] = (first, (*names, method.name))
    return found


def __getattr__(name: str) -> Any:
    """``Result``, importable from here, loaded on first use (the registry stays light)."""
    if name == "Result":
        from ..core.result import Result

        return Result
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
