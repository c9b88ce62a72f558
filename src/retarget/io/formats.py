"""Motion file formats by suffix: ``.bvh``, ``.amc`` (+ ``.asf``), ``.npz``, and the
animations of glTF characters (``.glb``, ``.gltf``: read) and FBX ones (read through
Blender, :mod:`retarget.io.blender`).

A format is a reader/writer pair registered under its suffix (:func:`register`,
:data:`FORMATS`); :func:`read_motion` and :func:`write_motion` choose by the file's
suffix, and every command that reads or writes motions (``info``, ``convert``,
``run``, ``batch``, ...) goes through them, so a new format is one
:class:`Format` registered here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .. import world
from ..errors import RetargetError
from ..motion import Motion

__all__ = [
    "FORMATS",
    "READABLE",
    "WRITABLE",
    "Format",
    "read_motion",
    "readable",
    "register",
    "writable",
    "write_motion",
]

#: ``(path, skeleton=, fps=, unit=, up=) -> Motion``: the motion, its unit and up settled.
Reader = Callable[..., Motion]
#: ``(path, motion, inputs=) -> Path``: written atomically, never over ``inputs``.
Writer = Callable[..., Path]


@dataclass(frozen=True)
class Format:
    """A motion file format: its suffix, reader and writer.

    Parameters
    ----------
    suffix : str
        Lower case, with the dot (``".bvh"``).
    read : callable, optional
        ``read(path, *, skeleton, fps, unit, up) -> Motion``, the unit and up axis
        recorded (:mod:`retarget.world`): ``unit``/``up`` override what is found.
    write : callable, optional
        ``write(path, motion, *, inputs) -> Path``.
    any_skeleton : bool
        The written file holds its own skeleton, so any motion can be written (an
        AMC needs its ASF): ``retarget batch --format`` offers only these.
    animations : bool
        A file of several named animations: its reader takes ``animation=``.
    """

    suffix: str
    read: Reader | None = None
    write: Writer | None = None
    any_skeleton: bool = True
    animations: bool = False


_FORMATS: dict[str, Format] = {}
#: The registered formats by suffix, in the order they were registered.
FORMATS: Mapping[str, Format] = MappingProxyType(_FORMATS)


def register(fmt: Format) -> Format:
    """Add (or replace) the format of ``fmt.suffix``; returns it."""
    _FORMATS[fmt.suffix.lower()] = fmt
    _update_lists()
    return fmt


def _update_lists() -> None:
    global READABLE, WRITABLE
    READABLE = tuple(s for s, f in _FORMATS.items() if f.read is not None)
    WRITABLE = tuple(s for s, f in _FORMATS.items() if f.write is not None)


READABLE: tuple[str, ...] = ()  # (the suffixes when this module was imported: readable())
WRITABLE: tuple[str, ...] = ()


def readable() -> tuple[str, ...]:
    """The suffixes :func:`read_motion` reads (``.bvh``, ``.amc``, ``.npz``, ...)."""
    return READABLE


def writable(*, any_skeleton: bool = False) -> tuple[str, ...]:
    """The suffixes :func:`write_motion` writes; with ``any_skeleton``, only those
    whose files hold their own skeleton (what ``retarget batch`` writes)."""
    return tuple(s for s in WRITABLE if _FORMATS[s].any_skeleton or not any_skeleton)


def read_motion(
    path: str | os.PathLike,
    *,
    skeleton: str | os.PathLike | None = None,
    fps: float | None = None,
    unit: str | None = None,
    up: str | None = None,
    animation: str | None = None,
) -> Motion:
    """Read a motion file, choosing the reader by extension.

    The skeleton records the file's length unit and world up axis
    (:mod:`retarget.world`): BVH's unit found from the body's size, the others'
    as the file declares it; the up axis from the body over the frames.

    Parameters
    ----------
    path : path
        ``.bvh``, ``.npz`` or ``.amc`` (any suffix of :data:`READABLE`).
    skeleton : path, optional
        The ``.asf`` of an ``.amc`` (default: the ``.asf`` beside it with the
        same stem, or the only ``.asf`` in its folder).
    fps : float, optional
        Frame rate of an ``.amc`` (Acclaim files do not store it; default 120).
    unit, up : str, optional
        Override the unit (``"cm"``, ``"m"``, ``"in"``, ...) and the up axis
        (``"y"``, ``"z"``, ``"-x"``, ...) found or declared.
    animation : str, optional
        Of a file of several animations (a glTF character's): its name or number
        (default: the first).
    """
    path = Path(path)
    ext = path.suffix.lower()
    fmt = _FORMATS.get(ext)
    if fmt is None or fmt.read is None:
        raise RetargetError(f"{path}: cannot read '{ext}' files; readable: {', '.join(READABLE)}")
    if fmt.animations:
        return fmt.read(path, skeleton=skeleton, fps=fps, unit=unit, up=up, animation=animation)
    if animation is not None:
        raise RetargetError(f"{path}: a '{ext}' file has one motion; --animation is for glTF")
    return fmt.read(path, skeleton=skeleton, fps=fps, unit=unit, up=up)


def write_motion(
    path: str | os.PathLike, motion: Motion, *, inputs: tuple[str | os.PathLike, ...] = ()
) -> Path:
    """Write a motion, choosing the writer by extension (atomically; never over ``inputs``)."""
    ext = Path(path).suffix.lower()
    fmt = _FORMATS.get(ext)
    if fmt is None or fmt.write is None:
        raise RetargetError(f"{path}: cannot write '{ext}' files; writable: {', '.join(WRITABLE)}")
    return fmt.write(path, motion, inputs=inputs)


# -- the formats ---------------------------------------------------------------------------------


def _read_bvh(path: Path, *, unit: str | None, up: str | None, **_: object) -> Motion:
    from .bvh import read_bvh

    return read_bvh(path, unit=unit, up=up)


def _write_bvh(path: str | os.PathLike, motion: Motion, *, inputs: tuple) -> Path:
    from .bvh import write_bvh

    return write_bvh(path, motion, inputs=inputs)


def _read_amc(
    path: Path,
    *,
    skeleton: str | os.PathLike | None,
    fps: float | None,
    unit: str | None,
    up: str | None,
) -> Motion:
    from .asf_amc import read_asf_amc

    asf = Path(skeleton) if skeleton is not None else _sibling_asf(path)
    motion = read_asf_amc(asf, path, fps=fps) if fps is not None else read_asf_amc(asf, path)
    return world.settle(motion, unit=unit, up=up)


def _sibling_asf(amc: Path) -> Path:
    same = amc.with_suffix(".asf")
    if same.is_file():
        return same
    found = sorted(amc.parent.glob("*.asf"))
    if len(found) == 1:
        return found[0]
    raise RetargetError(f"{amc}: which skeleton? give the .asf with --skeleton")


def _write_amc(path: str | os.PathLike, motion: Motion, *, inputs: tuple) -> Path:
    from .asf_amc import write_amc

    return write_amc(path, motion, inputs=inputs)


def _read_npz(path: Path, *, unit: str | None, up: str | None, **_: object) -> Motion:
    from .npz import read_npz

    return world.settle(read_npz(path), unit=unit, up=up)


def _write_npz(path: str | os.PathLike, motion: Motion, *, inputs: tuple) -> Path:
    from .npz import write_npz

    return write_npz(path, motion, inputs=inputs)


register(Format(".bvh", _read_bvh, _write_bvh))
register(Format(".amc", _read_amc, _write_amc, any_skeleton=False))
register(Format(".npz", _read_npz, _write_npz))


def _read_gltf(
    path: Path,
    *,
    fps: float | None,
    unit: str | None,
    up: str | None,
    animation: str | None,
    **_: object,
) -> Motion:
    from .gltf import character_motion, read_character

    motion = character_motion(read_character(path), animation, fps=fps)
    return world.settle(motion, unit=unit, up=up)


def _read_fbx(path: Path, **options: object) -> Motion:
    from .blender import as_glb

    return _read_gltf(as_glb(path), **options)  # type: ignore[arg-type]


register(Format(".glb", _read_gltf, animations=True))
register(Format(".gltf", _read_gltf, animations=True))
register(Format(".fbx", _read_fbx, animations=True))
