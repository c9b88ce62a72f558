"""Reading and writing a motion by file extension: ``.bvh``, ``.amc`` (+ ``.asf``), ``.npz``."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import RetargetError
from ..motion import Motion
from .asf_amc import write_amc
from .bvh import read_bvh, write_bvh
from .npz import read_npz, write_npz

__all__ = ["READABLE", "WRITABLE", "read_motion", "write_motion"]

READABLE = (".bvh", ".amc", ".npz")
WRITABLE = (".bvh", ".amc", ".npz")


def read_motion(
    path: str | os.PathLike, *, skeleton: str | os.PathLike | None = None, fps: float | None = None
) -> Motion:
    """Read a motion file, choosing the reader by extension.

    Parameters
    ----------
    path : path
        ``.bvh``, ``.npz`` or ``.amc``.
    skeleton : path, optional
        The ``.asf`` of an ``.amc`` (default: the ``.asf`` beside it with the
        same stem, or the only ``.asf`` in its folder).
    fps : float, optional
        Frame rate of an ``.amc`` (Acclaim files do not store it; default 120).
    """
    path = Path(path)
    ext = path.suffix.lower()
    if ext == ".bvh":
        return read_bvh(path)
    if ext == ".npz":
        return read_npz(path)
    if ext == ".amc":
        from .asf_amc import read_asf_amc

        asf = Path(skeleton) if skeleton is not None else _sibling_asf(path)
        if fps is not None:
            return read_asf_amc(asf, path, fps=fps)
        return read_asf_amc(asf, path)
    raise RetargetError(f"{path}: cannot read '{ext}' files; readable: {', '.join(READABLE)}")


def _sibling_asf(amc: Path) -> Path:
    same = amc.with_suffix(".asf")
    if same.is_file():
        return same
    found = sorted(amc.parent.glob("*.asf"))
    if len(found) == 1:
        return found[0]
    raise RetargetError(f"{amc}: which skeleton? give the .asf with --skeleton")


def write_motion(
    path: str | os.PathLike, motion: Motion, *, inputs: tuple[str | os.PathLike, ...] = ()
) -> Path:
    """Write a motion, choosing the writer by extension (atomically; never over ``inputs``)."""
    ext = Path(path).suffix.lower()
    if ext == ".bvh":
        return write_bvh(path, motion, inputs=inputs)
    if ext == ".npz":
        return write_npz(path, motion, inputs=inputs)
    if ext == ".amc":
        return write_amc(path, motion, inputs=inputs)
    raise RetargetError(f"{path}: cannot write '{ext}' files; writable: {', '.join(WRITABLE)}")
