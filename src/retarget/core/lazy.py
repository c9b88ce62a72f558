"""Modules loaded on first use: what keeps ``import retarget`` and the command line quick.

numba, scipy and matplotlib take a fresh process 0.1 to 0.3 s each to import, longer
than ``retarget --help`` or ``retarget info FILE`` take in all, so the core modules
(:mod:`retarget.core.quat`, :mod:`retarget.core.kinematics`, :mod:`retarget.core.so3`,
:mod:`retarget.io`) keep their compiled kernels in private ``_*_kernels`` modules
that :func:`loader` imports on the first call; compiled code that calls a kernel
imports it from its ``_*_kernels`` module.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, Protocol

__all__ = ["Kernel", "approximate", "loader", "numpy_twins"]


class Kernel(Protocol):
    """A compiled kernel (a numba dispatcher or gufunc), as a type."""

    def __call__(self, *args: Any) -> Any: ...


def loader(name: str) -> Callable[[], ModuleType]:
    """A function returning module ``name``, imported on its first call (then cached)."""
    module: ModuleType | None = None

    def load() -> ModuleType:
        nonlocal module
        if module is None:
            module = importlib.import_module(name)
        return module

    load.__doc__ = f":mod:`{name}`, imported on the first call."
    return load


_APPROXIMATE = False


@contextlib.contextmanager
def approximate() -> Iterator[None]:
    """Within: numpy may stand in for a kernel whose numbers it gives only to an ulp or
    so (reading a BVH file's Euler angles), while numba is not loaded: for a command
    that prints a summary (``retarget info``), never for one that writes motion."""
    global _APPROXIMATE
    before, _APPROXIMATE = _APPROXIMATE, True
    try:
        yield
    finally:
        _APPROXIMATE = before


def numpy_twins(*, exact: bool = True) -> bool:
    """Whether to compute with numpy instead of the kernels: numba is not loaded (its
    import would cost more than the work) and, unless the twin is ``exact`` (the same
    operations in the same order, so the same bits), within :func:`approximate`."""
    return "numba" not in sys.modules and (exact or _APPROXIMATE)
