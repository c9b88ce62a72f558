"""The command line the example scripts share: a source walk, optionally a stretch of it.

A package (not ``examples/_setup.py``) so that ``tests/test_examples.py``, which
runs every ``examples/*.py``, does not take it for an example. The scripts run
as ``python examples/X.py``, so ``examples/`` is on the path and they import it
as ``_setup``.
"""

import argparse
from pathlib import Path

from retarget import Motion, read_bvh
from retarget.io.samples import sample_path


def source_parser(doc: str) -> argparse.ArgumentParser:
    """A parser described by the first line of ``doc``, for ``[WALK.bvh] [--frames A:B]``."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("bvh", nargs="?", help="source motion (default: the sample lafan_walk.bvh)")
    parser.add_argument("--frames", metavar="A:B", help="only these source frames, e.g. 0:300")
    return parser


def read_source(args: argparse.Namespace) -> tuple[Path, Motion]:
    """The source's path and motion, cut to ``args.frames`` when given (``A:B``, either empty)."""
    path = Path(args.bvh) if args.bvh else sample_path("lafan_walk.bvh")
    source = read_bvh(path)
    if args.frames:
        start, stop = (int(x) if x else None for x in args.frames.split(":"))
        source = source[start:stop]
    return path, source
