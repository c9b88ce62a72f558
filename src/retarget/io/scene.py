"""The environment's file format: a scene of shapes (:mod:`retarget.environment`) as JSON,
or one height field as ``.npz``.

``write_environment`` writes, and ``read_environment`` reads, a JSON object
(``--terrain FILE``)::

    {
      "format": "retarget-environment",   # optional on reading
      "version": 1,                         # optional on reading
      "unit": "cm",                         # optional: the unit of every length
      "shapes": [
        {"type": "floor", "height": 0.0},
        {"type": "slope", "height": 0.0, "slope": [dh/dx, dh/dz]},
        {"type": "box", "center": [x, y, z], "half_extents": [hx, hy, hz],
         "rotation": [w, x, y, z]},         # rotation optional (identity)
        {"type": "sphere", "center": [x, y, z], "radius": r},
        {"type": "heightfield", "origin": [x0, z0], "spacing": [dx, dz],
         "heights": [[h00, h01, ...], [h10, ...], ...]}
      ]
    }

``heights`` has one row per x sample (``nx >= 2`` rows of ``nz >= 2``
numbers); ``spacing`` may be one number. Numbers must be finite. A ``.npz``
archive with keys ``origin``, ``spacing``, ``heights`` (and optionally
``unit``) is read as a scene holding that one height field.
"""

from __future__ import annotations

import io as _io
import json
import math
import os
import re
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.arrays import Array
from ..core.errors import FormatError, RetargetError
from ..environment import Box, Floor, HeightField, Scene, Shape, Slope, Sphere
from .files import atomic_write
from .formats import format_of

__all__ = ["FORMAT", "VERSION", "read_environment", "shape_dicts", "write_environment"]


FORMAT = "retarget-environment"
VERSION = 1

_TYPES = ("floor", "slope", "box", "sphere", "heightfield")
_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # required, optional
    "floor": ((), ("height",)),
    "slope": (("slope",), ("height",)),
    "box": (("center", "half_extents"), ("rotation",)),
    "sphere": (("center", "radius"), ()),
    "heightfield": (("origin", "spacing", "heights"), ()),
}
_TOP_KEYS = ("format", "version", "unit", "shapes")
_ZIP_MAGIC = b"PK\x03\x04"


class _Bad(Exception):
    """A semantic error at a place in the document (becomes a FormatError)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)


def _number(value: Any, where: str, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(where, f"expected a number, got {json.dumps(value)[:40]}")
    v = float(value)
    if not math.isfinite(v):
        raise _Bad(where, f"expected a finite number, got {value}")
    if minimum is not None and v < minimum:
        raise _Bad(where, f"expected a number >= {minimum}, got {value}")
    return v


def _numbers(value: Any, where: str, shape: tuple[int | None, ...], what: str) -> Array:
    """``value`` as a finite float array of ``shape`` (None: any length >= 2)."""
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged nesting
        raise _Bad(where, f"expected {what}, got a ragged list") from None
    if arr.dtype.kind not in "iuf" or arr.ndim != len(shape):
        raise _Bad(where, f"expected {what}, got {json.dumps(value)[:60]}")
    for want, got in zip(shape, arr.shape, strict=True):
        if (want is None and got < 2) or (want is not None and got != want):
            raise _Bad(where, f"expected {what}, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise _Bad(where, "contains NaN or infinite values")
    return arr


def _spacing_field(value: Any, where: str) -> Array:
    if isinstance(value, list):
        s = _numbers(value, where, (2,), "[dx, dz]")
    else:
        s = np.full(2, _number(value, where))
    if (s <= 0.0).any():
        raise _Bad(where, f"expected spacing > 0, got {s.tolist()}")
    return s


def _shape_from_dict(entry: Any, where: str) -> Shape:
    if not isinstance(entry, dict):
        raise _Bad(where, f"expected an object with a 'type', got {json.dumps(entry)[:40]}")
    kind = entry.get("type")
    if kind not in _KEYS:
        raise _Bad(
            f"{where}.type", f"unknown shape type {kind!r}; expected one of {', '.join(_TYPES)}"
        )
    required, optional = _KEYS[kind]
    missing = [k for k in required if k not in entry]
    if missing:
        raise _Bad(where, f"{kind} needs {', '.join(required)}; missing {', '.join(missing)}")
    extra = sorted(set(entry) - {"type", *required, *optional})
    if extra:
        allowed = ", ".join(("type", *required, *optional))
        raise _Bad(where, f"unexpected key {extra[0]!r} for a {kind}; expected {allowed}")
    at = f"{where}."
    if kind == "floor":
        return Floor(_number(entry.get("height", 0.0), at + "height"))
    if kind == "slope":
        return Slope(
            _number(entry.get("height", 0.0), at + "height"),
            _numbers(entry["slope"], at + "slope", (2,), "[dh/dx, dh/dz]"),
        )
    if kind == "sphere":
        return Sphere(
            _numbers(entry["center"], at + "center", (3,), "[x, y, z]"),
            _number(entry["radius"], at + "radius", 0.0),
        )
    if kind == "box":
        e = _numbers(entry["half_extents"], at + "half_extents", (3,), "[hx, hy, hz]")
        if (e < 0.0).any():
            raise _Bad(at + "half_extents", f"expected numbers >= 0, got {e.tolist()}")
        q = _numbers(entry.get("rotation", [1, 0, 0, 0]), at + "rotation", (4,), "[w, x, y, z]")
        if np.linalg.norm(q) < 1e-12:
            raise _Bad(at + "rotation", "expected a non-zero quaternion [w, x, y, z]")
        return Box(_numbers(entry["center"], at + "center", (3,), "[x, y, z]"), e, q)
    return _height_field(entry["origin"], entry["spacing"], entry["heights"], at)


def _height_field(origin: Any, spacing: Any, heights: Any, at: str) -> HeightField:
    return HeightField(
        _numbers(origin, at + "origin", (2,), "[x0, z0]"),
        _spacing_field(spacing, at + "spacing"),
        _numbers(heights, at + "heights", (None, None), "an nx × nz list of lists, nx, nz >= 2"),
    )


_WS = re.compile(r"\s*")


def _shape_lines(text: str) -> list[int]:
    """1-based line of each element of the top-level ``"shapes"`` array ([] if unknown).

    Used only to point at a bad shape; the text is already valid JSON.
    """
    dec = json.JSONDecoder()

    def skip(pos: int) -> int:
        m = _WS.match(text, pos)
        return m.end() if m else pos

    try:
        pos = skip(0)
        if text[pos] != "{":
            return []
        pos = skip(pos + 1)
        while text[pos] != "}":
            key, pos = dec.raw_decode(text, pos)
            pos = skip(skip(pos) + 1)  # past ':'
            if key == "shapes" and text[pos] == "[":
                lines: list[int] = []
                pos = skip(pos + 1)
                while text[pos] != "]":
                    lines.append(text.count("\n", 0, pos) + 1)
                    _, pos = dec.raw_decode(text, pos)
                    pos = skip(pos)
                    if text[pos] == ",":
                        pos = skip(pos + 1)
                return lines
            _, pos = dec.raw_decode(text, pos)
            pos = skip(pos)
            if text[pos] == ",":
                pos = skip(pos + 1)
    except (IndexError, ValueError):
        pass
    return []


def _scene_from_json(text: str, name: str) -> Scene:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            name, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    if not isinstance(doc, dict):
        raise FormatError(name, 1, 'expected a JSON object {"shapes": [...]}')
    extra = sorted(set(doc) - set(_TOP_KEYS))
    if extra:
        raise FormatError(
            name, None, f"unexpected key {extra[0]!r}; expected {', '.join(_TOP_KEYS)}"
        )
    if "format" in doc and doc["format"] != FORMAT:
        raise FormatError(name, None, f"format: expected {FORMAT!r}, got {doc['format']!r}")
    version = doc.get("version", VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version > VERSION:
        raise FormatError(name, None, f"version: expected an integer <= {VERSION}, got {version!r}")
    unit = doc.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise FormatError(name, None, f"unit: expected a string such as 'cm', got {unit!r}")
    shapes = doc.get("shapes")
    if not isinstance(shapes, list) or not shapes:
        raise FormatError(name, None, "expected 'shapes': a non-empty list of shapes")
    parsed = []
    for i, entry in enumerate(shapes):
        try:
            parsed.append(_shape_from_dict(entry, f"shapes[{i}]"))
        except (_Bad, ValueError) as exc:
            lines = _shape_lines(text)
            raise FormatError(name, lines[i] if i < len(lines) else None, str(exc)) from None
    return Scene(tuple(parsed), unit=unit)


def _scene_from_npz(data: bytes, name: str) -> Scene:
    try:
        with np.load(_io.BytesIO(data), allow_pickle=False) as npz:
            fields = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise FormatError(name, None, f"cannot read the npz archive ({exc})") from None
    missing = [k for k in ("origin", "spacing", "heights") if k not in fields]
    if missing:
        raise FormatError(
            name,
            None,
            f"a height-field archive needs origin, spacing, heights; missing {', '.join(missing)}",
        )
    unit = str(fields["unit"]) if "unit" in fields else None
    try:
        spacing = fields["spacing"]
        hf = _height_field(
            fields["origin"].tolist(),
            spacing.tolist() if spacing.ndim else float(spacing),
            fields["heights"].tolist(),
            "",
        )
    except (_Bad, ValueError, TypeError) as exc:
        raise FormatError(name, None, str(exc)) from None
    return Scene((hf,), unit=unit)


def read_environment(path: str | os.PathLike) -> Scene:
    """Read a scene: the JSON format of the module docstring, or a ``.npz`` height field.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Scene

    Raises
    ------
    FormatError
        When the file cannot be read or is malformed; the message says where
        (line, ``shapes[i].key``) and what was expected.
    """
    name = str(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise FormatError(name, None, f"cannot read the file ({exc.strerror})") from None
    if data.startswith(_ZIP_MAGIC):
        return _scene_from_npz(data, name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(name, line, "not UTF-8 text (expected a JSON environment)") from None
    return _scene_from_json(text, name)


#: Each shape class, its JSON type and the attributes written, in the format's order.
_WRITTEN: tuple[tuple[type[Shape], str, tuple[str, ...]], ...] = (
    (Floor, "floor", ("height",)),
    (Slope, "slope", ("height", "slope")),
    (Sphere, "sphere", ("center", "radius")),
    (Box, "box", ("center", "half_extents", "rotation")),
    (HeightField, "heightfield", ("origin_xz", "spacing", "heights")),
)
#: The JSON keys of attributes named otherwise.
_KEY = {"origin_xz": "origin"}


def _shape_to_dict(shape: Shape) -> dict[str, Any]:
    for cls, kind, entries in _WRITTEN:
        if isinstance(shape, cls):
            out: dict[str, Any] = {"type": kind}
            for attribute in entries:
                value = getattr(shape, attribute)
                out[_KEY.get(attribute, attribute)] = (
                    value.tolist() if isinstance(value, np.ndarray) else value
                )
            return out
    raise RetargetError(f"cannot write a {type(shape).__name__}; expected {', '.join(_TYPES)}")


def shape_dicts(scene: Shape | Iterable[Shape]) -> list[dict[str, Any]]:
    """The shapes as the JSON format's entries (module docstring), e.g. for a run's report."""
    shapes = (
        scene.shapes
        if isinstance(scene, Scene)
        else ((scene,) if isinstance(scene, Shape) else tuple(scene))
    )
    return [_shape_to_dict(shape) for shape in shapes]


def _json_text(scene: Scene) -> str:
    """The document, one shape per line and one height-field row per line."""
    head = {"format": FORMAT, "version": VERSION}
    if scene.unit is not None:
        head["unit"] = scene.unit
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    lines.append('  "shapes": [')
    items = []
    for shape in scene.shapes:
        entry = _shape_to_dict(shape)
        rows = entry.pop("heights", None)
        text = json.dumps(entry, allow_nan=False)
        if rows is not None:
            body = ",\n".join(f"      {json.dumps(r, allow_nan=False)}" for r in rows)
            text = f'{text[:-1]}, "heights": [\n{body}\n    ]}}'
        items.append(f"    {text}")
    lines.append(",\n".join(items))
    lines += ["  ]", "}", ""]
    return "\n".join(lines)


def write_environment(
    path: str | os.PathLike,
    scene: Shape | Iterable[Shape],
    *,
    inputs: Sequence[str | os.PathLike] = (),
) -> Path:
    """Write a scene atomically: JSON (module docstring), or ``.npz`` for one height field.

    Parameters
    ----------
    path : str or path-like
        A ``.npz`` suffix writes the archive read by :func:`read_environment`
        (the scene must be one :class:`HeightField`); anything else writes JSON.
    scene : Shape or iterable of Shape
        A :class:`Scene`, a single shape, or shapes.
    inputs : sequence of path-like
        Files that must not be overwritten.

    Returns
    -------
    Path
    """
    if not isinstance(scene, Scene):
        scene = Scene((scene,) if isinstance(scene, Shape) else tuple(scene))
    path = Path(path)
    if format_of(path, "scene", strict=False) == "npz":
        if len(scene) != 1 or not isinstance(scene.shapes[0], HeightField):
            raise RetargetError(f"{path}: an .npz environment holds one height field; use JSON")
        hf = scene.shapes[0]
        arrays: dict[str, Any] = {
            "origin": hf.origin_xz,
            "spacing": hf.spacing,
            "heights": hf.heights,
        }
        if scene.unit is not None:
            arrays["unit"] = np.array(scene.unit)
        buffer = _io.BytesIO()
        np.savez_compressed(buffer, allow_pickle=False, **arrays)
        return atomic_write(path, buffer.getvalue(), inputs=inputs)
    return atomic_write(path, _json_text(scene), inputs=inputs)
