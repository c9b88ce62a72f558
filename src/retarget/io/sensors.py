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
from numpy.typing import NDArray

from ..errors import FormatError

__all__ = ["format_pose", "parse_sensor_frame", "read_sensor_frames"]

Array = NDArray[np.float64]


def _rows(value: Any, count: int, width: int, what: str, where: tuple[str, int]) -> Array:
    if not isinstance(value, list) or len(value) != count:
        got = f"{len(value)} rows" if isinstance(value, list) else type(value).__name__
        raise FormatError(*where, f"expected `{what}` to be a list of {count} rows, got {got}")
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
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise FormatError(*where, f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise FormatError(*where, "expected a JSON object with positions and orientations")
    for key in ("positions", "orientations"):
        if key not in data:
            raise FormatError(*where, f"missing `{key}`")
    frame = data.get("frame")
    if frame is not None and (not isinstance(frame, int) or isinstance(frame, bool)):
        raise FormatError(*where, f"`frame` must be a whole number, got {frame!r}")
    p = _rows(data["positions"], num_sensors, 3, "positions", where)
    q = _rows(data["orientations"], num_sensors, 4, "orientations", where)
    norm = np.linalg.norm(q, axis=-1)
    bad = np.flatnonzero(np.isfinite(norm) & (norm < 1e-6))
    if len(bad):
        raise FormatError(*where, f"`orientations[{int(bad[0])}]` is not a rotation (zero norm)")
    lost = ~(np.isfinite(p).all(-1) & np.isfinite(q).all(-1))
    p[lost], q[lost] = np.nan, np.nan
    return frame, p, q / np.where(lost, 1.0, norm)[:, None]


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
    return json.dumps(
        {
            "frame": int(frame),
            "root_position": np.round(root_position, digits).tolist(),
            "rotations": np.round(rotations, digits).tolist(),
            "importance": {k: round(float(v), 5) for k, v in importance},
            "iterations": int(iterations),
        },
        separators=(",", ":"),
    )
