"""The library's private array toolbox: the ``Array`` alias, checks at the public
boundary, read-only copies and runs of a mask.

Everything here is numpy alone (no numba, no scipy): every module of the
library, the lightest included, may import it.

* :data:`Array`: ``NDArray[np.float64]``, the type of nearly every array;
* :func:`as_batch`: a float64 view of an argument whose trailing axes must be
  given (STYLE.md, "check at the public boundary, once": pytransform3d's
  ``check_*``, scipy's "Expected `quat` to have shape (..., 4), got (3,)");
* :func:`frozen`: a read-only copy the caller cannot reach (STYLE.md, "truly
  immutable values": copy arrays in, ``setflags(write=False)``);
* :func:`runs`: ``[start, end)`` of the runs of True in a 1-D mask (contacts,
  footprints, stances).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

__all__ = ["Array", "as_batch", "frozen", "runs"]

Array = NDArray[np.float64]


def _want(shape: tuple[int | None, ...], *, whole: bool = False) -> str:
    """The shape as the message writes it; a whole 1-tuple keeps its comma: ``3,``."""
    text = ", ".join("n" if s is None else str(s) for s in shape)
    return text + "," if whole and len(shape) == 1 else text


def as_batch(x: ArrayLike, trailing: tuple[int, ...], name: str) -> Array:
    """``x`` as a float64 array of shape ``(..., *trailing)`` (no copy when it is one).

    Raises
    ------
    ValueError
        "Expected `name` to have shape (..., 3), got (2,)".

    Examples
    --------
    >>> as_batch([[1, 2, 3]], (3,), "p").shape
    (1, 3)
    """
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim < len(trailing) or arr.shape[arr.ndim - len(trailing) :] != trailing:
        raise ValueError(
            f"Expected `{name}` to have shape (..., {_want(trailing)}), got {arr.shape}"
        )
    return arr


def frozen(
    a: ArrayLike,
    shape: tuple[int | None, ...] | None = None,
    name: str = "array",
    *,
    dtype: DTypeLike = np.float64,
    trailing: bool = False,
    finite: bool = False,
    order: Any = "K",
) -> NDArray[Any]:
    """A read-only copy of ``a`` (``dtype``, float64 by default) that nobody else holds.

    Parameters
    ----------
    a : array_like
    shape : tuple of int or None, optional
        The shape it must have (``None`` entries: any length); with
        ``trailing``, the shape of its last axes (``(..., *shape)``).
    name : str
        The argument's name, for the error message.
    dtype : dtype
    trailing : bool
    finite : bool
        Reject NaN and infinite values.
    order : {"K", "C", ...}
        Memory layout of the copy (``np.array``'s).

    Raises
    ------
    ValueError
        "Expected `offsets` to have shape (n, 3), got (4,)"; "`name` contains NaN
        or infinite values".

    Examples
    --------
    >>> x = frozen([1.0, 2.0], (2,), "x")
    >>> x.flags.writeable
    False
    """
    arr: NDArray[Any] = np.array(a, dtype=dtype, order=order)  # always a copy
    if shape is not None:
        if trailing:
            tail = arr.shape[arr.ndim - len(shape) :] if arr.ndim >= len(shape) else None
            ok = tail is not None and all(
                s is None or s == n for s, n in zip(shape, tail, strict=True)
            )
            if not ok:
                raise ValueError(
                    f"Expected `{name}` to have shape (..., {_want(shape)}), got {arr.shape}"
                )
        elif arr.ndim != len(shape) or any(
            s is not None and s != n for s, n in zip(shape, arr.shape, strict=False)
        ):
            raise ValueError(
                f"Expected `{name}` to have shape ({_want(shape, whole=True)}), got {arr.shape}"
            )
    if finite and not np.isfinite(arr).all():
        raise ValueError(f"`{name}` contains NaN or infinite values")
    arr.setflags(write=False)
    return arr


def runs(mask: ArrayLike) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of True in a 1-D mask, in order.

    Examples
    --------
    >>> runs([False, True, True, False, True])
    [(1, 3), (4, 5)]
    """
    m = np.asarray(mask, dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], m.astype(np.int8), [0]])))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
