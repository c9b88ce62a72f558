"""The ``retarget`` command line: one module per group of commands.

Every error a user can cause (a malformed file, a bad option, an output that
would overwrite an input) is printed on one line and exits with code 2.

Each group module (:mod:`.files`, :mod:`.retarget`, :mod:`.edit`, :mod:`.online`,
:mod:`.view`, :mod:`.verb`) holds its commands and an ``add_parsers(sub)`` that
adds them; everything heavy (numba kernels, scipy, matplotlib, the methods) is
imported by the command that runs, so ``retarget --help`` starts at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..core.errors import RetargetError
from . import edit, files, online, retarget, verb, view
from ._common import EXIT_USAGE, _Parser, warnings_on_stderr

__all__ = ["EXIT_USAGE", "build_parser", "main"]

#: The command groups, in the order ``retarget --help`` lists their commands.
GROUPS = (files, retarget, edit, online, view, verb)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``retarget`` and every command (``func``: the command to run).

    With ``command``, only that command's parser is built: the others are listed,
    with their one-line help, without a parser (argparse takes about 0.3 ms to make
    one and 0.1 ms an argument, and ``retarget`` has 20 commands and over 200
    arguments), which is all that parsing a command line naming ``command`` can show.
    """
    parser = _Parser(prog="retarget", description="Retarget, edit and clean captured motion.")
    parser.add_argument("--version", action="version", version=f"retarget {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, action=_Commands
    )
    target = sub if command is None else _OneCommand(sub, command)
    for group in GROUPS:
        group.add_parsers(target)
    return parser


class _Commands(argparse._SubParsersAction):
    """argparse's sub-parsers, where a command can be listed without a parser."""

    def list_only(self, name: str, help: str | None) -> None:
        """List ``name`` in ``retarget --help`` and among the choices; no parser."""
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help))
        self._name_parser_map[name] = None


class _OneCommand:
    """The sub-parsers of ``retarget`` where only ``command`` gets a parser."""

    def __init__(self, sub: Any, command: str) -> None:
        self._sub, self._command = sub, command

    def add_parser(self, name: str, **kwargs: Any) -> object:
        if name == self._command:
            return self._sub.add_parser(name, **kwargs)
        self._sub.list_only(name, kwargs.get("help"))
        return _Unbuilt()


class _Unbuilt:
    """Stands for a command's parser that is not built: every call does nothing."""

    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: self


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``retarget`` with ``argv`` (default: the process's); the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    try:
        with warnings_on_stderr():
            return int(args.func(args) or 0)
    except RetargetError as exc:
        print(f"retarget: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"retarget: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
