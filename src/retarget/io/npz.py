"""The library's own compressed format: a motion and its skeleton in one ``.npz``.

Lossless (float64, every skeleton field: channels, axes, limits, sites, unit)
and fast to load. Keys: ``format`` ("retarget-motion"), ``version`` (1),
``names``, ``parents``, ``offsets``, ``channels`` (JSON), ``site_names``,
``site_parents``, ``site_offsets``, ``unit``, ``axes``, ``limits``,
``root_position``, ``rotations``, ``fps`` and, when present, ``translations``.
"""

from __future__ import annotations

import io as _io
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from ..core.errors import FormatError
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from .files import atomic_write

__all__ = ["read_npz", "read_npz_arrays", "write_npz"]

FORMAT = "retarget-motion"
VERSION = 1


def _motion_arrays(motion: Motion) -> dict[str, np.ndarray]:
    """The archive's arrays of a motion (module docstring), for :func:`numpy.savez`."""
    sk = motion.skeleton
    arrays = {
        "format": np.array(FORMAT),
        "version": np.array(VERSION),
        "names": np.array(sk.names, dtype=str),
        "parents": sk.parents,
        "offsets": sk.offsets,
        "channels": np.array(json.dumps([list(c) for c in sk.channels])),
        "site_names": np.array(sk.site_names, dtype=str),
        "site_parents": sk.site_parents,
        "site_offsets": sk.site_offsets,
        "unit": np.array(sk.unit),
        "axes": sk.axes,
        "limits": sk.limits,
        "root_position": motion.root_position,
        "rotations": motion.rotations,
        "fps": np.array(motion.fps),
    }
    if motion.translations is not None:
        arrays["translations"] = motion.translations
    return arrays


def write_npz(
    path: str | os.PathLike,
    motion: Motion,
    *,
    inputs: tuple[str | os.PathLike, ...] = (),
    extra: dict[str, np.ndarray] | None = None,
) -> Path:
    """Write a motion as compressed npz, atomically; ``extra`` arrays are stored beside
    it (a verb's, :mod:`retarget.ik.verbs`)."""
    buffer = _io.BytesIO()
    arrays = {**_motion_arrays(motion), **(extra or {})}
    np.savez_compressed(buffer, allow_pickle=False, **arrays)  # as read_npz loads it
    return atomic_write(path, buffer.getvalue(), inputs=inputs)


def read_npz(path: str | os.PathLike) -> Motion:
    """Read a motion written by :func:`write_npz`."""
    return read_npz_arrays(path)[0]


def read_npz_arrays(path: str | os.PathLike) -> tuple[Motion, dict[str, np.ndarray]]:
    """A motion written by :func:`write_npz` and every array of the archive.

    Raises
    ------
    FormatError
        When the file is not such an archive or a field is missing or invalid.
    """
    name = str(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            if "format" not in data.files or str(data["format"]) != FORMAT:
                raise FormatError(name, None, f"not a {FORMAT} archive (no 'format' key)")
            if int(data["version"]) > VERSION:
                raise FormatError(
                    name, None, f"archive version {int(data['version'])} is newer than {VERSION}"
                )
            fields = {k: data[k] for k in data.files}
    except FormatError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, KeyError, EOFError) as exc:
        raise FormatError(name, None, f"cannot read the npz archive ({exc})") from None
    try:
        skeleton = Skeleton(
            names=tuple(str(n) for n in fields["names"]),
            parents=fields["parents"],
            offsets=fields["offsets"],
            channels=tuple(tuple(c) for c in json.loads(str(fields["channels"]))),
            site_names=tuple(str(n) for n in fields["site_names"]),
            site_parents=fields["site_parents"],
            site_offsets=fields["site_offsets"],
            unit=str(fields["unit"]),
            axes=fields["axes"],
            limits=fields["limits"],
        )
        motion = Motion(
            skeleton,
            fields["root_position"],
            fields["rotations"],
            float(fields["fps"]),
            fields.get("translations"),
        )
    except (KeyError, ValueError, TypeError, json.JSONDecodeError) as exc:
        raise FormatError(name, None, f"invalid motion archive: {exc}") from None
    return motion, fields
