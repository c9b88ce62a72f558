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

from .. import __version__
from ..errors import RetargetError
from . import edit, files, online, retarget, verb, view
from ._common import EXIT_USAGE, _Parser, warnings_on_stderr

__all__ = ["EXIT_USAGE", "build_parser", "main"]

#: The command groups, in the order ``retarget --help`` lists their commands.
GROUPS = (files, retarget, edit, online, view, verb)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``retarget`` and every command (``func``: the command to run)."""
    parser = _Parser(prog="retarget", description="Retarget, edit and clean captured motion.")
    parser.add_argument("--version", action="version", version=f"retarget {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for group in GROUPS:
        group.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``retarget`` with ``argv`` (default: the process's); the exit status."""
    parser = build_parser()
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
