"""Broken glTF characters through ``retarget info`` and ``retarget run`` (issue 41), as a
target and as a source (the character's own animation retargeted).

Each mutation of the knight's GLB is a way a file goes wrong in the field: a rotation
of zeros or NaN, a scale of zero, a NaN translation, an accessor counting past its
buffer, the binary chunk cut short, a cycle in the node tree, an interpolation the
format does not have, a skin cut short, keys that go back in time, indices that point
nowhere. Every run ends with exit 0 (a quirk the reference tools read, with a
warning) or exit 2 and one line saying what is wrong; never a traceback, never a NaN
written.
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
from collections.abc import Callable
from pathlib import Path

import gltf_variants as variants
import numpy as np
import pytest
from conftest import missing

from retarget.cli import main

Mutation = Callable[[variants.Gltf], variants.Gltf | bytes]


def _joint(doc: variants.Gltf, k: int = 3) -> dict:
    """The ``k``-th joint node of the first skin."""
    return doc.json["nodes"][doc.json["skins"][0]["joints"][k]]


def _rotation_keys(doc: variants.Gltf) -> int:
    anim = doc.json["animations"][0]
    ch = next(c for c in anim["channels"] if c["target"]["path"] == "rotation")
    return anim["samplers"][ch["sampler"]]["output"]


def _set(doc: variants.Gltf, fn) -> variants.Gltf:
    out = doc.copy()
    fn(out)
    return out


def _keys(doc: variants.Gltf, index: int, change) -> variants.Gltf:
    out = doc.copy()
    values = variants.read(out, index).astype(np.float32)
    variants.put(out, index, change(values))
    return out


def _glb(doc: variants.Gltf) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return variants.save(doc, Path(tmp) / "x.glb").read_bytes()


MUTATIONS: dict[str, Mutation] = {
    "zero rotation": lambda d: _set(d, lambda o: _joint(o).update(rotation=[0, 0, 0, 0])),
    "nan rotation": lambda d: _set(d, lambda o: _joint(o).update(rotation=[float("nan")] * 4)),
    "zero scale": lambda d: _set(d, lambda o: _joint(o).update(scale=[0, 0, 0])),
    "nan translation": lambda d: _set(
        d, lambda o: _joint(o).update(translation=[float("nan"), 0, 0])
    ),
    "infinite translation": lambda d: _set(
        d, lambda o: _joint(o, 1).update(translation=[float("inf"), 0, 0])
    ),
    "zero matrix": lambda d: _set(
        d,
        lambda o: (
            [_joint(o).pop(k, None) for k in ("translation", "rotation", "scale")],
            _joint(o).update(matrix=[0] * 16),
        ),
    ),
    "short matrix": lambda d: _set(d, lambda o: _joint(o, 2).update(matrix=[1, 0, 0])),
    "nan rotation keys": lambda d: _keys(d, _rotation_keys(d), lambda v: v * np.nan),
    "zero rotation keys": lambda d: _keys(d, _rotation_keys(d), lambda v: v * 0),
    "times backwards": lambda d: _keys(
        d,
        d.json["animations"][0]["samplers"][0]["input"],
        lambda v: v[::-1].copy(),
    ),
    "nan times": lambda d: _keys(
        d, d.json["animations"][0]["samplers"][0]["input"], lambda v: v * np.nan
    ),
    "count past buffer": lambda d: _set(
        d, lambda o: o.json["accessors"][_rotation_keys(o)].update(count=10**7)
    ),
    "negative count": lambda d: _set(
        d, lambda o: o.json["accessors"][_rotation_keys(o)].update(count=-4)
    ),
    "view past buffer": lambda d: _set(
        d, lambda o: o.json["bufferViews"][0].update(byteLength=10**9)
    ),
    "unknown component type": lambda d: _set(
        d, lambda o: o.json["accessors"][_rotation_keys(o)].update(componentType=5130)
    ),
    "cycle": lambda d: _set(
        d,
        lambda o: _joint(o, 5).setdefault("children", []).append(o.json["skins"][0]["joints"][0]),
    ),
    "child out of range": lambda d: _set(
        d, lambda o: _joint(o, 4).setdefault("children", []).append(10**6)
    ),
    "unknown interpolation": lambda d: _set(
        d,
        lambda o: o.json["animations"][0]["samplers"][0].update(interpolation="BEZIER"),
    ),
    "cubic with too few keys": lambda d: _set(
        d,
        lambda o: o.json["animations"][0]["samplers"][0].update(interpolation="CUBICSPLINE"),
    ),
    "skin cut short": lambda d: _set(
        d, lambda o: o.json["skins"][0].update(joints=o.json["skins"][0]["joints"][:3])
    ),
    "skin joint out of range": lambda d: _set(
        d, lambda o: o.json["skins"][0]["joints"].append(10**6)
    ),
    "channel to no node": lambda d: _set(
        d,
        lambda o: o.json["animations"][0]["channels"][0]["target"].update(node=10**6),
    ),
    "sampler out of range": lambda d: _set(
        d, lambda o: o.json["animations"][0]["channels"][0].update(sampler=10**6)
    ),
    "no nodes": lambda d: _set(d, lambda o: o.json.pop("nodes")),
    "nodes not a list": lambda d: _set(d, lambda o: o.json.update(nodes={"a": 1})),
    "name not a string": lambda d: _set(d, lambda o: _joint(o).update(name=[1, 2])),
    "truncated binary": lambda d: _glb(d)[: len(_glb(d)) // 2],
    "truncated json": lambda d: _glb(d)[:40],
    "bad chunk length": lambda d: (lambda b: b[:12] + struct.pack("<I", 10**9) + b[16:])(_glb(d)),
    "not utf-8": lambda d: (lambda b: b[:20] + b"\xff\xfe" + b[22:])(_glb(d)),
}


@pytest.fixture(scope="module")
def knight(data_dir) -> variants.Gltf:
    path = data_dir.parent / "characters" / "kaykit_Knight.glb"
    if not path.is_file():
        missing(f"{path} not found (../shared/characters beside RETARGET_DATA)")
    doc = variants.load(path)
    # (a smaller knight: its first two animations, so a run is quick)
    doc.json["animations"] = doc.json["animations"][:2]
    return doc


def _cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


@pytest.mark.parametrize("command", ["info", "run", "source"])
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_broken_character_is_read_or_refused_in_one_line(
    name, command, knight, data_dir, tmp_path
):
    """Exit 0, or exit 2 with one error line; no traceback (an exception out of
    :func:`retarget.cli.main` is one); a run's GLB has no NaN."""
    made = MUTATIONS[name](knight)
    path = tmp_path / "broken.glb"
    if isinstance(made, bytes):
        path.write_bytes(made)
    else:
        variants.save(made, path)
    out = tmp_path / "out.glb"
    argv = {
        "info": ["info", str(path)],
        "run": ["run", str(data_dir / "lafan_walk.bvh"), "--frames", "0:20", "--method", "copy",
                "--target", str(path), "-o", str(out)],
        "source": ["run", str(path), "--frames", "0:20", "--method", "copy",
                   "--target-preset", "blubby", "-o", str(tmp_path / "out.bvh")],
    }[command]  # fmt: skip
    code, err = _cli(*argv)
    errors = [ln for ln in err.splitlines() if ln.startswith("retarget: error")]
    assert code in (0, 2), (name, code, err[-500:])
    if code == 2:
        assert len(errors) == 1, err
    else:
        assert not errors, err
        if command == "source":
            assert "nan" not in (tmp_path / "out.bvh").read_text().lower()
        if command == "run":
            text = out.read_bytes()
            length = struct.unpack_from("<I", text, 12)[0]
            js = json.loads(text[20 : 20 + length])
            json.dumps(js, allow_nan=False)  # (strict JSON: raises on a NaN)
