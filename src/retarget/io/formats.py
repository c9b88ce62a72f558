"""The file formats by suffix: the one place that looks at a file's suffix to read or
write it (the kinds of target have their own registry, :mod:`retarget.targets`).

* **Motions** (:data:`FORMATS`): ``.bvh``, ``.amc`` (+ ``.asf``, a skeleton alone),
  ``.npz``, and the animations of rigged characters: glTF (``.glb``, ``.gltf``) and
  FBX (through Blender, :mod:`retarget.io.blender`), which also hold the characters
  themselves (:func:`read_character`, :func:`write_character`). A format is a
  reader/writer pair registered under its suffix (:func:`register`);
  :func:`read_motion`, :func:`read_skeleton` and :func:`write_motion` choose by the
  file's suffix, and every command that reads or writes motions (``info``,
  ``convert``, ``run``, ``batch``, ...) goes through them, so a new format is one
  :class:`Format` registered here.
* **Joint trajectories** of robots (:data:`TRAJECTORY_FORMATS`: ``.npz``, ``.csv``;
  :mod:`retarget.io.trajectories`): :func:`read_trajectories`,
  :func:`write_trajectories`.
* **Other files** the commands write or read beside them, each a family of suffixes
  (:data:`FAMILIES`: figures, videos, scenes, sensor recordings, reports):
  :func:`format_of`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..core.errors import RetargetError
from ..core.motion import Motion
from ..humanoid import world
from . import trajectories
from .trajectories import RobotTrajectory

if TYPE_CHECKING:
    from ..core.skeleton import Skeleton
    from .gltf import Character

__all__ = [
    "FAMILIES",
    "FORMATS",
    "READABLE",
    "TRAJECTORY_FORMATS",
    "WRITABLE",
    "Format",
    "TrajectoryFormat",
    "character_needed",
    "character_suffixes",
    "character_writes",
    "format_of",
    "holds_character",
    "is_motion_file",
    "is_trajectory",
    "read_character",
    "read_motion",
    "read_skeleton",
    "read_trajectories",
    "readable",
    "register",
    "trajectory_suffixes",
    "unit_source",
    "writable",
    "write_character",
    "write_motion",
    "write_trajectories",
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
        recorded (:mod:`retarget.humanoid.world`): ``unit``/``up`` override what is found.
    write : callable, optional
        ``write(path, motion, *, inputs) -> Path``.
    any_skeleton : bool
        The written file holds its own skeleton, so any motion can be written (an
        AMC needs its ASF): ``retarget batch --format`` offers only these.
    animations : bool
        A file of several named animations: its reader takes ``animation=``.
    skeleton : callable, optional
        ``skeleton(path) -> Skeleton`` for a file that holds a skeleton alone (an
        ``.asf``), its unit and up axis recorded; other files' skeletons are their
        motions' (:func:`read_skeleton`).
    character : {"glb", "gltf", "fbx"}, optional
        The file holds a rigged character (:func:`read_character`): glTF's binary or
        JSON container, or FBX through Blender.
    unit : str
        Where a motion's length unit comes from, as ``retarget info`` says it:
        ``"found"`` (from the body's size, BVH), ``"skeleton"`` (declared by the
        skeleton file), ``"stored"`` (in the file).
    """

    suffix: str
    read: Reader | None = None
    write: Writer | None = None
    any_skeleton: bool = True
    animations: bool = False
    skeleton: Callable[[Path], Skeleton] | None = None
    character: str | None = None
    unit: str = "stored"


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


def is_motion_file(path: str | os.PathLike) -> bool:
    """Whether :func:`read_motion` reads ``path``, by its suffix (``retarget batch``'s
    globbing keeps those)."""
    return Path(path).suffix.lower() in READABLE


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
    (:mod:`retarget.humanoid.world`): BVH's unit found from the body's size, the others'
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


def read_skeleton(path: str | os.PathLike) -> Skeleton:
    """A file's skeleton, its unit and up axis recorded: a skeleton file's (an ``.asf``,
    up from its rest pose), a character's (:func:`read_character`), else its motion's
    (:func:`read_motion`: up from its frames)."""
    fmt = _FORMATS.get(Path(path).suffix.lower())
    if fmt is not None and fmt.skeleton is not None:
        return fmt.skeleton(Path(path))
    if fmt is not None and fmt.character is not None:
        return read_character(path).skeleton
    return read_motion(path).skeleton


def unit_source(path: str | os.PathLike) -> str:
    """Where the length unit of a motion file comes from (:attr:`Format.unit`)."""
    fmt = _FORMATS.get(Path(path).suffix.lower())
    return "stored" if fmt is None else fmt.unit


# -- rigged characters ------------------------------------------------------------------------


def holds_character(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a rigged character's file (glTF, FBX)."""
    fmt = _FORMATS.get(Path(path).suffix.lower())
    return fmt is not None and fmt.character is not None


def character_needed(path: str | os.PathLike) -> str | None:
    """Why a motion alone cannot be written to ``path`` when it names a character's file
    (a target of another kind given ``-o OUT.glb``), or None."""
    ext = Path(path).suffix.lower()
    fmt = _FORMATS.get(ext)
    if fmt is None or fmt.character is None:
        return None
    return (
        f"{path}: a {ext} output needs a --target character of {', '.join(_holding(fmt.character))}"
    )


def character_suffixes() -> tuple[str, ...]:
    """The suffixes of files that hold rigged characters."""
    return tuple(s for s, f in _FORMATS.items() if f.character is not None)


def _holding(kind: str) -> tuple[str, ...]:
    """The suffixes of characters a file of ``kind`` can be written for: an FBX one's
    (Blender writes it back), a GLB for any."""
    return (
        character_suffixes()
        if kind == "glb"
        else tuple(s for s, f in _FORMATS.items() if f.character == kind)
    )


def character_writes(held: str | os.PathLike) -> tuple[str, ...]:
    """The suffixes a character read from the file ``held`` is written as, with its clips
    added (:func:`write_character`): a GLB, and an FBX for an FBX character."""
    own = Path(held).suffix.lower()
    return tuple(f".{kind}" for kind in ("glb", "fbx") if own in _holding(kind))


def read_character(path: str | os.PathLike) -> Character:
    """The rigged character of a glTF file, or of an FBX one as the GLB Blender makes of
    it (:func:`retarget.io.blender.as_glb`), read once (:func:`retarget.io.gltf.read_character`)."""
    from .gltf import read_character as read_gltf

    fmt = _FORMATS.get(Path(path).suffix.lower())
    if fmt is None or fmt.character is None:
        raise RetargetError(
            f"{path}: not a rigged character's file; characters: {', '.join(character_suffixes())}"
        )
    if fmt.character == "fbx":
        from .blender import as_glb

        return read_gltf(as_glb(path))
    return read_gltf(path)


def write_character(
    path: str | os.PathLike,
    character: Character,
    clips: Sequence[tuple[str, Motion]],
    *,
    held: str | os.PathLike,
    replace: bool = False,
    inputs: Sequence[str | os.PathLike] = (),
) -> Path:
    """The character's file with ``clips`` (name, motion on its skeleton) added as
    animations (:func:`retarget.io.gltf.write_character`): a GLB, or an FBX through
    Blender (:func:`retarget.io.blender.convert`) for a character read from one;
    ``held`` the file the character was read from (its format decides what it can be
    written as). Atomically, never over ``inputs``."""
    import tempfile

    from .files import check_not_input
    from .gltf import write_character as write_gltf

    ext = Path(path).suffix.lower()
    fmt = _FORMATS.get(ext)
    kind = "" if fmt is None or fmt.character is None else fmt.character
    if kind not in ("glb", "fbx"):
        raise RetargetError(f"{path}: a character is written as .glb, or .fbx for an FBX one")
    if Path(held).suffix.lower() not in _holding(kind):
        raise RetargetError(
            f"{path}: a {ext} output needs a --target character of {', '.join(_holding(kind))}"
        )
    check_not_input(path, inputs)
    (name, motion), *also = clips
    if kind == "glb":
        return write_gltf(
            path, character, motion, name=name, also=also, replace=replace, inputs=tuple(inputs)
        )
    from .blender import convert

    with tempfile.TemporaryDirectory(prefix="retarget-fbx-") as tmp:
        glb = Path(tmp) / f"{Path(path).stem}.glb"
        write_gltf(glb, character, motion, name=name, also=also, replace=replace)
        return convert(glb, path, source="glb", written="fbx", fps=motion.fps)


# -- joint trajectories -----------------------------------------------------------------------


@dataclass(frozen=True)
class TrajectoryFormat:
    """A file format of robots' joint trajectories (:mod:`retarget.io.trajectories`):
    ``read(path, names)`` (columns in the order of ``names``, when given) and
    ``write(path, trajectory, *, inputs)``."""

    suffix: str
    read: Callable[..., RobotTrajectory]
    write: Callable[..., Path]


#: The formats of joint trajectories by suffix, in order (the first is a batch's default).
TRAJECTORY_FORMATS: Mapping[str, TrajectoryFormat] = MappingProxyType(
    {
        ".npz": TrajectoryFormat(".npz", trajectories.read_npz, trajectories.write_npz),
        ".csv": TrajectoryFormat(".csv", trajectories.read_csv, trajectories.write_csv),
    }
)


def trajectory_suffixes() -> tuple[str, ...]:
    """The suffixes joint trajectories are written and read as."""
    return tuple(TRAJECTORY_FORMATS)


def _trajectory_format(path: str | os.PathLike, verb: str) -> TrajectoryFormat:
    found = TRAJECTORY_FORMATS.get(Path(path).suffix.lower())
    if found is None:
        kinds = " or ".join(TRAJECTORY_FORMATS)
        raise RetargetError(f"{path}: a robot's trajectories are {verb} {kinds}")
    return found


def read_trajectories(
    path: str | os.PathLike, names: tuple[str, ...] | None = None
) -> RobotTrajectory:
    """Joint trajectories read back (ours, or another retargeter's with the same keys:
    GMR's), with ``names`` in that joint order (:meth:`RobotTrajectory.in_order`)."""
    return _trajectory_format(path, "read from").read(path, names)


def write_trajectories(
    path: str | os.PathLike, trajectory: RobotTrajectory, *, inputs: Sequence = ()
) -> Path:
    """Joint trajectories written atomically (never over ``inputs``)."""
    return _trajectory_format(path, "written as").write(path, trajectory, inputs=tuple(inputs))


def is_trajectory(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds joint trajectories: a ``.csv``, or a ``.npz`` with ``dof_pos``
    (the library's own ``.npz`` motions have no such key)."""
    ext = Path(path).suffix.lower()
    if ext not in TRAJECTORY_FORMATS or not Path(path).is_file():
        return False
    if ext == ".csv":
        return True
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            return "dof_pos" in z.files
    except (OSError, ValueError):
        return False


# -- the other files ----------------------------------------------------------------------------

#: Other files by family: the suffixes each is written or read as (:func:`format_of`).
FAMILIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "figure": (".png", ".svg", ".pdf"),
        "video": (".gif", ".mp4"),
        "scene": (".json", ".npz"),
        "verb": (".npz",),
        "recording": (".jsonl",),
        "report": (".json",),
    }
)


def format_of(path: str | os.PathLike, family: str, *, strict: bool = True) -> str | None:
    """The format of ``path`` within ``family`` (:data:`FAMILIES`): its suffix without the
    dot (``"png"``); not of the family: a one-line error listing the family's, or None
    when not ``strict``."""
    ext = Path(path).suffix.lower()
    if ext in FAMILIES[family]:
        return ext[1:]
    if not strict:
        return None
    raise RetargetError(
        f"{path}: cannot write '{ext}' {family}s; writable: {', '.join(FAMILIES[family])}"
    )


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


def _read_asf(path: Path) -> Skeleton:
    from .asf_amc import read_asf

    return world.settle_skeleton(read_asf(path))


def _read_gltf(
    path: Path,
    *,
    fps: float | None,
    unit: str | None,
    up: str | None,
    animation: str | None,
    **_: object,
) -> Motion:
    from .gltf import character_motion

    motion = character_motion(read_character(path), animation, fps=fps)
    return world.settle(motion, unit=unit, up=up)


register(Format(".bvh", _read_bvh, _write_bvh, unit="found"))
register(Format(".amc", _read_amc, _write_amc, any_skeleton=False, unit="skeleton"))
register(Format(".asf", skeleton=_read_asf))
register(Format(".npz", _read_npz, _write_npz))
register(Format(".glb", _read_gltf, animations=True, character="glb"))
register(Format(".gltf", _read_gltf, animations=True, character="gltf"))
register(Format(".fbx", _read_gltf, animations=True, character="fbx"))
