"""The exceptions the library raises on bad input.

Every error a user can cause by a file or an argument is a :class:`RetargetError`;
the command line prints it on one line and exits with code 2.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FormatError", "RetargetError", "UnknownJointError"]


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
