"""3-vectors as tuples, for compiled kernels (private helpers).

numba kernels that work one frame at a time on scalars (the ball search of
:mod:`retarget.ik.root`, the compiled frame of computer puppetry in
:mod:`retarget.online._kernels.puppetry`) keep points and directions in 3-tuples
of floats, which numba holds in registers: no array is allocated per call.
These are their vector operations, shared so that every kernel rounds them the
same way (components summed in the order ``x, y, z``).

Each takes and returns 3-tuples (``scale``: a tuple and a float; ``dot`` and
``norm``: a float). Callable from numba-compiled code and from Python.
"""

from __future__ import annotations

import math

import numba

__all__ = ["add", "cross", "dot", "norm", "row", "scale", "sub"]


@numba.njit(cache=True, nogil=True)
def add(a, b):  # pragma: no cover - jitted
    """``a + b``."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@numba.njit(cache=True, nogil=True)
def sub(a, b):  # pragma: no cover - jitted
    """``a − b``."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@numba.njit(cache=True, nogil=True)
def scale(a, s):  # pragma: no cover - jitted
    """``s a`` for a float ``s``."""
    return (a[0] * s, a[1] * s, a[2] * s)


@numba.njit(cache=True, nogil=True)
def dot(a, b):  # pragma: no cover - jitted
    """``a · b``."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@numba.njit(cache=True, nogil=True)
def norm(a):  # pragma: no cover - jitted
    """``|a|``."""
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@numba.njit(cache=True, nogil=True)
def cross(a, b):  # pragma: no cover - jitted
    """``a × b``."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@numba.njit(cache=True, nogil=True)
def row(a, i):  # pragma: no cover - jitted
    """Row ``i`` of an (n, 3) array as a 3-tuple."""
    return (a[i, 0], a[i, 1], a[i, 2])
