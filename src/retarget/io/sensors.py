"""Sensor frames and poses as JSON lines (``retarget puppet --stdin``, ``retarget noise``).

One JSON object per line, UTF-8. A **sensor frame** (input)::

    {"frame": 17, "positions": [[x, y, z], ...], "orientations": [[w, x, y, z], ...]}

with one row per performer joint, in the order of the performer's skeleton
(the ``--performer`` file); ``frame`` is optional (counted from 0 when
absent); a ``null`` row is a sensor that reported nothing this frame (the
filter predicts it). Positions are in the performer's unit, orientations
unit quaternions (normalised on reading; a zero quaternion is an error).

A **pose** (output)::

    {"frame": 17, "root_position": [x, y, z], "rotations": [[w, x, y, z], ...],
     "importance": {"left_foot": 1.0, ...}, "iterations": 0}

``rotations`` are the character's local joint rotations in its skeleton's
order. Both directions write nothing but the object and a newline per frame.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..core.arrays import Array
from ..core.errors import FormatError
from ..core.skeleton import Skeleton
from ..core.strict_json import strict_json

__all__ = [
    "format_pose",
    "frame_time",
    "parse_sensor_frame",
    "pose_frame",
    "read_sensor_frames",
    "sensor_frame",
    "skeleton_from_message",
    "skeleton_message",
]


def _rows(value: Any, count: int, width: int, what: str, where: tuple[str, int]) -> Array:
    if not isinstance(value, list) or len(value) != count:
        got = f"{len(value)} rows" if isinstance(value, list) else type(value).__name__
        raise FormatError(*where, f"expected `{what}` to be a list of {count} rows, got {got}")
    try:  # the common case at once: every row numbers (no null, string or true/false)
        whole = np.array(value)
    except ValueError:  # rows of different lengths, or null rows
        whole = None
    if (
        whole is not None
        and whole.dtype.kind in "fi"
        and whole.shape == (count, width)
        and np.isfinite(whole).all()
        and not any(v is True or v is False for row in value for v in row)
    ):
        return whole.astype(np.float64)
    out = np.full((count, width), np.nan)
    for i, row in enumerate(value):
        if row is None:
            continue
        if (
            not isinstance(row, list)
            or len(row) != width
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row)
            or not all(math.isfinite(v) for v in row)
        ):
            raise FormatError(*where, f"`{what}[{i}]` must be {width} finite numbers or null")
        out[i] = row
    return out


def parse_sensor_frame(
    line: str, num_sensors: int, *, where: tuple[str, int] = ("<stdin>", 1)
) -> tuple[int | None, Array, Array]:
    """One sensor frame from a JSON line.

    Parameters
    ----------
    line : str
    num_sensors : int
        Rows expected (the performer's joint count).
    where : (str, int)
        File name and line number for error messages.

    Returns
    -------
    frame : int or None
    positions : ndarray, shape (S, 3)
        NaN rows for sensors that reported nothing.
    orientations : ndarray, shape (S, 4)
        Unit quaternions; NaN rows likewise.

    Raises
    ------
    FormatError
        With ``where`` and what was expected.
    """
    return sensor_frame(_object(line, where), num_sensors, where=where)


def _object(line: str | bytes, where: tuple[str, int]) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        column = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise FormatError(*where, f"not JSON ({message}{column})") from None
    if not isinstance(data, dict):
        raise FormatError(*where, "expected a JSON object")
    return data


def _frame_number(data: dict[str, Any], where: tuple[str, int]) -> int | None:
    frame = data.get("frame")
    if frame is not None and (not isinstance(frame, int) or isinstance(frame, bool)):
        raise FormatError(*where, f"`frame` must be a whole number, got {frame!r}")
    return frame


def _unit_rows(value: Any, count: int, what: str, where: tuple[str, int]) -> Array:
    q = _rows(value, count, 4, what, where)
    norm = np.linalg.norm(q, axis=-1)
    bad = np.flatnonzero(np.isfinite(norm) & (norm < 1e-6))
    if len(bad):
        raise FormatError(*where, f"`{what}[{int(bad[0])}]` is not a rotation (zero norm)")
    return q / np.where(np.isfinite(norm), norm, 1.0)[:, None]


def sensor_frame(
    data: dict[str, Any], num_sensors: int, *, where: tuple[str, int] = ("<stdin>", 1)
) -> tuple[int | None, Array, Array]:
    """:func:`parse_sensor_frame` of an already decoded JSON object."""
    for key in ("positions", "orientations"):
        if key not in data:
            raise FormatError(*where, f"missing `{key}`")
    frame = _frame_number(data, where)
    p = _rows(data["positions"], num_sensors, 3, "positions", where)
    q = _unit_rows(data["orientations"], num_sensors, "orientations", where)
    lost = ~(np.isfinite(p).all(-1) & np.isfinite(q).all(-1))
    p[lost], q[lost] = np.nan, np.nan
    return frame, p, q


def pose_frame(
    data: dict[str, Any], num_joints: int, *, where: tuple[str, int] = ("<stdin>", 1)
) -> tuple[int | None, Array, Array]:
    """A **pose frame** (input of ``retarget serve --method omr``) of a decoded JSON object::

        {"frame": 17, "root_position": [x, y, z], "rotations": [[w, x, y, z], ...]}

    with the local rotations of the source skeleton's joints in its order.

    Returns
    -------
    frame : int or None
    root_position : ndarray, shape (3,)
    rotations : ndarray, shape (J, 4)
        Unit quaternions.
    """
    for key in ("root_position", "rotations"):
        if key not in data:
            raise FormatError(*where, f"missing `{key}`")
    frame = _frame_number(data, where)
    root = _rows([data["root_position"]], 1, 3, "root_position", where)[0]
    rotations = _unit_rows(data["rotations"], num_joints, "rotations", where)
    if not (np.isfinite(root).all() and np.isfinite(rotations).all()):
        raise FormatError(*where, "a pose frame needs every joint (no null rows)")
    return frame, root, rotations


def frame_time(data: dict[str, Any], where: tuple[str, int]) -> float | None:
    """The optional ``time`` of a frame (seconds, the sender's clock)."""
    t = data.get("time")
    if t is None:
        return None
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t):
        raise FormatError(*where, f"`time` must be a number of seconds, got {t!r}")
    return float(t)


def skeleton_message(skeleton: Skeleton, **fields: Any) -> dict[str, Any]:
    """The character as a stream announces it once (``"type": "skeleton"``): joints in
    order with parents, offsets (file unit) and channels, end sites, unit, and ``fields``."""
    return {
        "type": "skeleton",
        **fields,
        "unit": skeleton.unit,
        "joints": list(skeleton.names),
        "parents": skeleton.parents.tolist(),
        "offsets": skeleton.offsets.tolist(),
        "channels": [list(c) for c in skeleton.channels],
        "sites": list(skeleton.site_names),
        "site_parents": skeleton.site_parents.tolist(),
        "site_offsets": skeleton.site_offsets.tolist(),
    }


def skeleton_from_message(data: Any, *, where: tuple[str, int] = ("<stream>", 1)) -> Skeleton:
    """The :class:`~retarget.core.skeleton.Skeleton` of a :func:`skeleton_message`."""
    if not isinstance(data, dict) or data.get("type") != "skeleton":
        raise FormatError(*where, 'expected the stream\'s first message, {"type": "skeleton", …}')
    try:
        return Skeleton(
            names=tuple(data["joints"]),
            parents=np.asarray(data["parents"], dtype=np.intp),
            offsets=np.asarray(data["offsets"], dtype=np.float64).reshape(-1, 3),
            channels=tuple(tuple(c) for c in data["channels"]),
            site_names=tuple(data["sites"]),
            site_parents=np.asarray(data["site_parents"], dtype=np.intp),
            site_offsets=np.asarray(data["site_offsets"], dtype=np.float64).reshape(-1, 3),
            unit=str(data["unit"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(*where, f"not a skeleton message ({exc})") from None


def read_sensor_frames(
    lines: Iterable[str], num_sensors: int, *, name: str = "<stdin>"
) -> Iterator[tuple[int, Array, Array]]:
    """Sensor frames from JSON lines, blank lines skipped; frames without a
    number are counted from the previous one (0 first)."""
    next_frame = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        frame, p, q = parse_sensor_frame(line, num_sensors, where=(name, number))
        frame = next_frame if frame is None else frame
        next_frame = frame + 1
        yield frame, p, q


def format_pose(
    frame: int,
    root_position: Array,
    rotations: Array,
    importance: Sequence[tuple[str, float]] = (),
    iterations: int = 0,
    digits: int = 7,
) -> str:
    """One pose as a JSON line (no trailing newline)."""
    return strict_json(
        {
            "frame": int(frame),
            "root_position": np.round(root_position, digits).tolist(),
            "rotations": np.round(rotations, digits).tolist(),
            "importance": {k: round(float(v), 5) for k, v in importance},
            "iterations": int(iterations),
        }
    )
