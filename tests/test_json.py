"""Strict JSON: the one serialiser never writes NaN or Infinity (null, and a note why)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget.core.strict_json import GENERIC_NOTE, dumps_json, finite_json, strict_json
from retarget.io.files import write_json


def strict_loads(text: str):
    """``json.loads`` that refuses NaN, Infinity and -Infinity, as JavaScript's JSON.parse."""

    def refuse(word: str):
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def test_strict_loads_refuses_what_python_writes():
    with pytest.raises(ValueError, match="NaN"):
        strict_loads(json.dumps({"a": float("nan")}))
    with pytest.raises(ValueError, match="-Infinity"):
        strict_loads(json.dumps([-math.inf]))


def test_finite_values_are_written_as_json_writes_them():
    data = {"a": 1.5, "b": [1, 2.25, None, True, "x"], "c": {"d": -0.0}}
    assert strict_json(data) == json.dumps(data, separators=(",", ":"))
    assert dumps_json(data) == json.dumps(data, indent=2) + "\n"


def test_nested_dicts_get_a_note_beside_the_key():
    data = {"stages": [{"fps": math.inf, "n": 3}], "m": {"ratio": math.nan, "k": 1.0}}
    out = strict_loads(strict_json(data, indent=2))
    assert out["stages"][0] == {
        "fps": None,
        "fps_note": f"{GENERIC_NOTE} (inf): null",
        "n": 3,
    }
    assert out["m"] == {"ratio": None, "ratio_note": f"{GENERIC_NOTE} (nan): null", "k": 1.0}
    assert "stages_note" not in out and "m_note" not in out  # the nested dict took the note
    assert list(out["m"]) == ["ratio", "ratio_note", "k"]  # the note right after its key


def test_a_producer_note_is_kept_and_no_generic_one_added():
    data = {"skate_ratio": math.inf, "skate_ratio_note": "the source's feet do not skate"}
    assert strict_loads(strict_json(data)) == {
        "skate_ratio": None,
        "skate_ratio_note": "the source's feet do not skate",
    }


def test_lists_numpy_scalars_and_arrays():
    data = {
        "f32": np.float32(0.5),
        "f64_nan": np.float64("nan"),
        "i": np.int64(7),
        "b": np.bool_(True),
        "arr": np.array([[1.0, np.nan], [np.inf, -np.inf]]),
        "ints": np.arange(3),
        "tuple": (1.0, -math.inf),
        "path": Path("a/b.bvh"),
    }
    out = strict_loads(strict_json(data))
    assert out["f32"] == 0.5 and out["i"] == 7 and out["b"] is True
    assert out["f64_nan"] is None and out["f64_nan_note"] == f"{GENERIC_NOTE} (nan): null"
    assert out["arr"] == [[1.0, None], [None, None]]
    assert out["arr_note"] == f"{GENERIC_NOTE} (3 values: -inf, inf, nan): null"
    assert out["ints"] == [0, 1, 2] and "ints_note" not in out
    assert out["tuple"] == [1.0, None] and out["tuple_note"] == f"{GENERIC_NOTE} (-inf): null"
    assert out["path"] == "a/b.bvh"


def test_top_level_values_and_lists():
    assert strict_json(math.nan) == "null"
    assert strict_json([1.0, np.float64(np.inf), [np.nan]]) == "[1.0,null,[null]]"
    assert finite_json((np.int32(2), np.array([np.nan]))) == [2, [None]]


def test_unknown_types_still_raise():
    with pytest.raises(TypeError, match="not JSON serialisable: object"):
        strict_json({"a": object()})
    with pytest.raises(TypeError, match="not JSON serialisable: complex"):
        strict_json({"a": [math.nan, 1j]})


def test_write_json_is_strict(tmp_path):
    path = tmp_path / "r.json"
    write_json(str(path), {"x": np.array([np.nan, 1.0])}, inputs=[])
    assert strict_loads(path.read_text()) == {
        "x": [None, 1.0],
        "x_note": f"{GENERIC_NOTE} (nan): null",
    }


json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5)
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(min_size=1, max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def same_finite(a, b) -> bool:
    """``b`` (written and read back) equals ``a`` with every non-finite float as None and
    notes added beside keys."""
    if isinstance(a, dict):
        return all(k in b and same_finite(v, b[k]) for k, v in a.items()) and all(
            k in a or k.endswith("_note") for k in b
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(same_finite(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and not math.isfinite(a):
        return b is None
    return a == b and type(a) is type(b)


def has_non_finite(value) -> bool:
    if isinstance(value, dict):
        return any(has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(has_non_finite(v) for v in value)
    return isinstance(value, float) and not math.isfinite(value)


@settings(max_examples=300, deadline=None)
@given(data=json_values, indent=st.sampled_from([None, 2]))
def test_any_value_is_written_strictly_and_read_back(data, indent):
    text = strict_json(data, indent=indent)
    back = strict_loads(text)
    assert same_finite(data, back)
    if not has_non_finite(data):
        assert GENERIC_NOTE not in text or GENERIC_NOTE in json.dumps(data)
