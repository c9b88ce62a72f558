"""The exceptions the library raises on bad input, and the warning it gives on
input it could read only in part.

Every error a user can cause by a file or an argument is a :class:`RetargetError`;
the command line prints it on one line and exits with code 2. Input the library
recovers from (a BVH file with more motion data than its ``Frames:`` line) is
read and a :class:`RetargetWarning` says what was left out: library users get a
normal Python warning, the command line prints it on one line
(``retarget: warning: <file>:<line>: <message>``) and still exits 0.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable

__all__ = ["FormatError", "RetargetError", "RetargetWarning", "UnknownJointError", "warn"]


class RetargetError(ValueError):
    """Base class of the errors caused by bad input."""


class FormatError(RetargetError):
    """A motion file that cannot be read.

    Parameters
    ----------
    path : str
        The file (or ``"<string>"`` for text given directly).
    line : int or None
        1-based line number where the problem was found, if known.
    message : str
        What was expected and what was found.
    """

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # keep pickling (process pools) working
        return (type(self), (self.path, self.line, self.message))


class UnknownJointError(RetargetError, KeyError):
    """A joint or end-site name that the skeleton does not have; lists the ones it has."""

    def __init__(self, name: str, available: Iterable[str]) -> None:
        self.name = name
        self.available = tuple(available)
        super().__init__(
            f"no joint or end site named {name!r}; available: {', '.join(self.available)}"
        )

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])

    def __reduce__(self):
        return (type(self), (self.name, self.available))


class RetargetWarning(UserWarning):
    """Input that was read, but not all of it as written (what was done is in the message).

    Parameters
    ----------
    message : str
        What was found and what the library did about it.
    path : str, optional
        The file, when a file is the cause.
    line : int, optional
        1-based line number in that file.

    Examples
    --------
    >>> str(RetargetWarning("2 more frames than 'Frames: 10', ignored", "walk.bvh", 27))
    "walk.bvh:27: 2 more frames than 'Frames: 10', ignored"
    """

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        self.message = str(message)
        self.path = None if path is None else str(path)
        self.line = line
        if self.path is None:
            where = ""
        else:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(f"{where}{self.message}")

    def __reduce__(self):  # keep pickling (process pools) working
        return (type(self), (self.message, self.path, self.line))


def warn(message: str, *, path: str | None = None, line: int | None = None) -> None:
    """Issue a :class:`RetargetWarning`, attributed to the first caller outside the library.

    ``warnings.warn(..., stacklevel=k)`` with the ``k`` that skips every frame of
    the ``retarget`` package, so that the warning names the user's line that
    read the file (``read_bvh``, ``read_motion`` or a method called on it),
    however deep in the library it was found.
    """
    package = __name__.partition(".")[0]
    frame = sys._getframe(1)
    level = 2
    while True:
        name = frame.f_globals.get("__name__", "")
        back = frame.f_back
        if back is None or (name != package and not name.startswith(package + ".")):
            break
        frame = back
        level += 1
    warnings.warn(RetargetWarning(message, path, line), stacklevel=level)
