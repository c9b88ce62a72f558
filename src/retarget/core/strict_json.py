"""Strict JSON: the one serialiser of every JSON the library writes or prints.

JSON has no NaN or infinity; Python's ``json`` writes them as the bare words
``NaN``, ``Infinity`` and ``-Infinity``, which JavaScript's ``JSON.parse``, jq
and most other parsers reject. The rule (README, "Measures"): a value that is
not finite is written as ``null``, and its producer puts the reason in words
beside it, in a sibling key ``<key>_note`` (``"skate_ratio": null,
"skate_ratio_note": "the source's feet do not skate …"``).

:func:`strict_json` is the last line of defence: it writes with
``allow_nan=False``, and should a non-finite float still be there (in a dict,
a list, a numpy scalar or array) it writes ``null`` and adds the generic note
:data:`GENERIC_NOTE` beside the nearest enclosing key, so that a run never
fails on writing its report. A generic note in a file means a producer that
forgot to say why: the tests check that none appears on the real data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["GENERIC_NOTE", "dumps_json", "finite_json", "json_default", "strict_json"]

#: The start of the note :func:`finite_json` puts beside a value no producer explained.
GENERIC_NOTE = "not a finite number when written"


def json_default(value: Any) -> Any:
    """numpy scalars and arrays, and paths, as JSON values (``json.dumps(default=...)``)."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def strict_json(data: Any, *, indent: int | None = None) -> str:
    """JSON text of ``data`` without NaN or infinity (module docstring).

    Parameters
    ----------
    data : object
        Dicts (any mapping), lists, tuples, str, int, float, bool, None, numpy
        scalars and arrays, paths.
    indent : int, optional
        Indentation of nested values; None (default) writes one compact line
        (``","`` and ``":"`` without spaces: wire messages, JSON lines).

    Returns
    -------
    str
        No trailing newline.

    Examples
    --------
    >>> strict_json({"ratio": float("inf"), "n": np.int64(3)})
    '{"ratio":null,"ratio_note":"not a finite number when written (inf): null","n":3}'
    >>> strict_json({"ratio": None, "ratio_note": "no contact"})
    '{"ratio":null,"ratio_note":"no contact"}'
    """
    separators = (",", ":") if indent is None else (",", ": ")
    try:  # the usual case, at the json module's own speed
        return json.dumps(
            data, indent=indent, separators=separators, default=json_default, allow_nan=False
        )
    except ValueError:  # a NaN or an infinity somewhere: null, and a note beside it
        return json.dumps(finite_json(data), indent=indent, separators=separators, allow_nan=False)


def finite_json(data: Any) -> Any:
    """``data`` as plain JSON values, every non-finite float ``None`` with a note.

    Mappings become dicts, tuples and arrays lists, numpy scalars Python
    numbers. Beside each key whose value held a non-finite float (itself, or
    anywhere in the lists under it) comes ``<key>_note``: :data:`GENERIC_NOTE`,
    the values found and ``null``, unless the mapping already has that key
    (the producer's own reason). A nested mapping takes the note itself.

    Examples
    --------
    >>> finite_json({"a": [1.0, float("nan")], "b": {"c": -np.inf}})["b"]
    {'c': None, 'c_note': 'not a finite number when written (-inf): null'}
    """
    return _finite(data, [])


def _finite(value: Any, found: list[float]) -> Any:
    """``value`` made finite; non-finite floats replaced are appended to ``found``."""
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            bad: list[float] = []
            out[key] = _finite(item, bad)
            note = f"{key}_note"
            if bad and note not in value:
                out[note] = _note(bad)
        return out
    if isinstance(value, (list, tuple)):
        return [_finite(item, found) for item in value]
    if isinstance(value, np.ndarray):
        return _finite(value.tolist(), found)
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if math.isfinite(number):
            return number
        found.append(number)
        return None
    return _finite(json_default(value), found)


def _note(bad: list[float]) -> str:
    kinds = ", ".join(sorted({repr(x) for x in bad}))
    what = kinds if len(bad) == 1 else f"{len(bad)} values: {kinds}"
    return f"{GENERIC_NOTE} ({what}): null"


def dumps_json(data: Any) -> str:
    """The JSON text of a report or listing, indented, ending in a newline: strict
    (:func:`strict_json`: never NaN or Infinity)."""
    return strict_json(data, indent=2) + "\n"
