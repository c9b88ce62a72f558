"""Reading and writing a motion by file extension: ``.bvh``, ``.amc`` (+ ``.asf``), ``.npz``."""

from __future__ import annotations

import os
from pathlib import Path

from .. import world
from ..errors import RetargetError
from ..motion import Motion
from .asf_amc import write_amc
from .bvh import read_bvh, write_bvh
from .npz import read_npz, write_npz

__all__ = ["READABLE", "WRITABLE", "read_motion", "write_motion"]

READABLE = (".bvh", ".amc", ".npz")
WRITABLE = (".bvh", ".amc", ".npz")


def read_motion(
    path: str | os.PathLike,
    *,
    skeleton: str | os.PathLike | None = None,
    fps: float | None = None,
    unit: str | None = None,
    up: str | None = None,
) -> Motion:
    """Read a motion file, choosing the reader by extension.

    The skeleton records the file's length unit and world up axis
    (:mod:`retarget.world`): BVH's unit found from the body's size, the others'
    as the file declares it; the up axis from the body over the frames.

    Parameters
    ----------
    path : path
        ``.bvh``, ``.npz`` or ``.amc``.
    skeleton : path, optional
        The ``.asf`` of an ``.amc`` (default: the ``.asf`` beside it with the
        same stem, or the only ``.asf`` in its folder).
    fps : float, optional
        Frame rate of an ``.amc`` (Acclaim files do not store it; default 120).
    unit, up : str, optional
        Override the unit (``"cm"``, ``"m"``, ``"in"``, ...) and the up axis
        (``"y"``, ``"z"``, ``"-x"``, ...) found or declared.
    """
    path = Path(path)
    ext = path.suffix.lower()
    if ext == ".bvh":
        return read_bvh(path, unit=unit, up=up)
    if ext == ".npz":
        motion = read_npz(path)
    elif ext == ".amc":
        from .asf_amc import read_asf_amc

        asf = Path(skeleton) if skeleton is not None else _sibling_asf(path)
        motion = read_asf_amc(asf, path, fps=fps) if fps is not None else read_asf_amc(asf, path)
    else:
        raise RetargetError(f"{path}: cannot read '{ext}' files; readable: {', '.join(READABLE)}")
    return world.settle(motion, unit=unit, up=up)


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
