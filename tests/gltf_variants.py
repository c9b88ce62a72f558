"""The shared characters made the ways other exporters make them (issue 41).

Each function takes a :class:`Gltf` (a document and one ``bytes`` per buffer view, read
here from the file's own bytes, not by the library) and returns a new one that shows
the same character another way:

- :func:`renamed`, :func:`unnamed`: every node a meaningless name, or none;
- :func:`with_matrices`: every node no animation targets placed by a ``matrix``;
- :func:`z_up`: the scene under a node turning a Z-up armature and meshes in
  centimetres into glTF's Y-up metres (Khronos's CesiumMan: the bind space is the
  Z-up one, the inverse bind matrices carry the turn);
- :func:`with_prop`: a second joint tree beside the body (a prop's joint at the scene
  root in the body's skin, a triangle weighted to it);
- :func:`sparse`: animation keys and vertex positions as sparse accessors
  (glTF 2.0 §3.6.2.3: a base with some elements replaced);
- :func:`unnormalised`: skin weights that do not add up to 1;
- :func:`quantized`: ``KHR_mesh_quantization`` (positions int16, normals int8,
  texture coordinates uint16, weights uint8, all normalised; the dequantisation in
  the inverse bind matrices and the nodes);
- :func:`meshopt`: ``EXT_meshopt_compression`` (meshoptimizer's encoders: vertex
  attributes and animation keys by the attribute codec, indices by the triangle
  codec, normals by the octahedral filter and rotations by the quaternion filter;
  the compressed data in its own buffer, a fallback buffer with none);
- :func:`draco_declared`: a primitive that only ``KHR_draco_mesh_compression`` carries.

:func:`save` writes a GLB. The transforms keep the character where it was: the same
skeleton, rest pose and animations up to the quantisation.
"""

from __future__ import annotations

import copy
import ctypes
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

DTYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32}
DTYPES[5126] = np.float32
CODES = {np.dtype(v).str: k for k, v in DTYPES.items()}
WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


@dataclass
class Gltf:
    """A glTF document and the bytes of each of its buffer views."""

    json: dict
    views: list[bytes]

    def copy(self) -> Gltf:
        return Gltf(copy.deepcopy(self.json), list(self.views))


def load(path: Path) -> Gltf:
    """A ``.glb`` or a ``.gltf`` (its buffers beside it or as data URIs)."""
    data = Path(path).read_bytes()
    chunk = b""
    if data[:4] == b"glTF":
        at, js = 12, None
        while at + 8 <= len(data):
            size, kind = struct.unpack_from("<II", data, at)
            if kind == 0x4E4F534A:
                js = json.loads(data[at + 8 : at + 8 + size])
            elif kind == 0x004E4942:
                chunk = data[at + 8 : at + 8 + size]
            at += 8 + size
    else:
        js = json.loads(data)
    assert js is not None
    buffers = []
    for buf in js.get("buffers", []):
        uri = buf.get("uri")
        if uri is None:
            buffers.append(chunk)
        elif uri.startswith("data:"):
            import base64

            buffers.append(base64.b64decode(uri.split(",", 1)[1]))
        else:
            buffers.append((Path(path).parent / uri).read_bytes())
    views = []
    for view in js.get("bufferViews", []):
        start = view.get("byteOffset", 0)
        views.append(buffers[view["buffer"]][start : start + view["byteLength"]])
    for image in js.get("images", []):  # images beside the file into views
        uri = image.get("uri")
        if uri and not uri.startswith("data:"):
            image.pop("uri")
            image["bufferView"] = len(views)
            image["mimeType"] = "image/png" if uri.lower().endswith("png") else "image/jpeg"
            js["bufferViews"].append({"buffer": 0, "byteLength": 0})
            views.append((Path(path).parent / uri).read_bytes())
    return Gltf(js, views)


def save(doc: Gltf, path: Path) -> Path:
    """``doc`` as a GLB: the views one after another in buffer 0, each 4-byte aligned
    (views of another buffer, the meshopt fallback's, keep theirs)."""
    js = copy.deepcopy(doc.json)
    body = bytearray()
    for view, data in zip(js.get("bufferViews", []), doc.views, strict=True):
        if view.get("buffer", 0) != 0:
            continue
        body += b"\x00" * (-len(body) % 4)
        view["buffer"], view["byteOffset"], view["byteLength"] = 0, len(body), len(data)
        body += data
    for view in js.get("bufferViews", []):  # meshopt's compressed data, after the views
        ext = view.get("extensions", {}).get("EXT_meshopt_compression")
        if ext is not None and "_data" in ext:
            body += b"\x00" * (-len(body) % 4)
            ext["buffer"], ext["byteOffset"] = 0, len(body)
            body += ext.pop("_data")
    body += b"\x00" * (-len(body) % 4)
    buffers = js.setdefault("buffers", [{}])
    buffers[0] = {"byteLength": len(body)}
    text = json.dumps(js, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    path = Path(path)
    path.write_bytes(
        struct.pack("<III", 0x46546C67, 2, 28 + len(text) + len(body))
        + struct.pack("<II", len(text), 0x4E4F534A)
        + text
        + struct.pack("<II", len(body), 0x004E4942)
        + bytes(body)
    )
    return path


# -- accessors --------------------------------------------------------------------------------


def read(doc: Gltf, index: int) -> np.ndarray:
    """An accessor's elements (count, width) in its own component type (sparse applied)."""
    acc = doc.json["accessors"][index]
    dtype, width, count = np.dtype(DTYPES[acc["componentType"]]), WIDTH[acc["type"]], acc["count"]
    if "bufferView" in acc:
        view = doc.json["bufferViews"][acc["bufferView"]]
        data = doc.views[acc["bufferView"]]
        item = dtype.itemsize * width
        stride = view.get("byteStride") or item
        start = acc.get("byteOffset", 0)
        rows = [data[start + k * stride : start + k * stride + item] for k in range(count)]
        out = np.frombuffer(b"".join(rows), dtype).reshape(count, width).copy()
    else:
        out = np.zeros((count, width), dtype)
    if "sparse" in acc:
        sp = acc["sparse"]
        idx = np.frombuffer(
            doc.views[sp["indices"]["bufferView"]], DTYPES[sp["indices"]["componentType"]]
        )[: sp["count"]]
        val = np.frombuffer(doc.views[sp["values"]["bufferView"]], dtype)[: sp["count"] * width]
        out[idx.astype(np.intp)] = val.reshape(-1, width)
    return out


def add_view(doc: Gltf, data: bytes, **fields) -> int:
    doc.json.setdefault("bufferViews", []).append({"buffer": 0, "byteLength": len(data), **fields})
    doc.views.append(bytes(data))
    return len(doc.views) - 1


def put(doc: Gltf, index: int, values: np.ndarray, *, vertex: bool = False, **fields) -> None:
    """Replace accessor ``index``'s data by ``values`` (count, width), in their dtype, in a
    view of their own (``fields`` added to the accessor, e.g. ``normalized``; ``vertex``: a
    vertex attribute, whose stride is a multiple of 4 bytes)."""
    acc = doc.json["accessors"][index]
    values = np.ascontiguousarray(values)
    old = doc.json["bufferViews"][acc["bufferView"]] if "bufferView" in acc else {}
    view = {k: old[k] for k in ("target",) if k in old}
    item = values.dtype.itemsize * values.shape[1]
    vertex = vertex or old.get("target") == 34962
    if vertex and item % 4:  # vertex attributes: 4-byte aligned strides
        stride = item + (-item % 4)
        padded = np.zeros((len(values), stride), np.uint8)
        padded[:, :item] = values.view(np.uint8).reshape(len(values), item)
        data, view["byteStride"] = padded.tobytes(), stride
    else:
        data = values.tobytes()
        if old.get("byteStride"):
            view["byteStride"] = item
    acc["bufferView"] = add_view(doc, data, **view)
    acc["byteOffset"] = 0
    acc["count"] = len(values)
    acc["componentType"] = CODES[values.dtype.str]
    acc.pop("sparse", None)
    acc.update(fields)
    if "min" in acc or "max" in acc:
        acc["min"] = values.min(axis=0).tolist()
        acc["max"] = values.max(axis=0).tolist()


# -- node transforms ----------------------------------------------------------------------------


def _animated(doc: Gltf) -> set[int]:
    return {
        ch["target"]["node"]
        for anim in doc.json.get("animations", [])
        for ch in anim["channels"]
        if "node" in ch["target"]
    }


def _matrix(node: dict) -> np.ndarray:
    """A node's local matrix (4, 4)."""
    if "matrix" in node:
        return np.asarray(node["matrix"], float).reshape(4, 4).T
    m = np.eye(4)
    x, y, z, w = node.get("rotation", (0, 0, 0, 1))
    m[:3, :3] = Rotation.from_quat([x, y, z, w]).as_matrix() * np.asarray(
        node.get("scale", (1, 1, 1)), float
    )
    m[:3, 3] = node.get("translation", (0, 0, 0))
    return m


def _set_trs(node: dict, m: np.ndarray) -> None:
    """A node placed by ``m`` (a rotation times a positive uniform scale, then a move)."""
    node.pop("matrix", None)
    s = float(np.cbrt(np.linalg.det(m[:3, :3])))
    node["translation"] = m[:3, 3].tolist()
    node["rotation"] = Rotation.from_matrix(m[:3, :3] / s).as_quat().tolist()
    node["scale"] = [s, s, s]


def renamed(doc: Gltf, seed: int = 0) -> Gltf:
    """Every node named by a random number: no name says anything."""
    out = doc.copy()
    rng = np.random.default_rng(seed)
    for k, node in enumerate(out.json["nodes"]):
        node["name"] = f"n{rng.integers(10**6):06d}_{k}"
    return out


def no_clips(doc: Gltf) -> Gltf:
    """The character without its animations (a rigged character as modelled)."""
    out = doc.copy()
    out.json.pop("animations", None)
    return out


def matrices_no_clips(doc: Gltf) -> Gltf:
    """:func:`with_matrices` of the character without its animations."""
    return with_matrices(doc, clips=False)


def unnamed(doc: Gltf) -> Gltf:
    out = doc.copy()
    for node in out.json["nodes"]:
        node.pop("name", None)
    return out


def with_matrices(doc: Gltf, *, clips: bool = True) -> Gltf:
    """Every node no animation channel targets placed by its ``matrix`` (``clips`` False:
    the animations dropped first, a rigged character with no clip, every node a matrix,
    as Assimp writes them)."""
    out = doc.copy()
    if not clips:
        out.json.pop("animations", None)
    animated = _animated(out)
    for k, node in enumerate(out.json["nodes"]):
        if k not in animated and "matrix" not in node:
            m = _matrix(node)
            for key in ("translation", "rotation", "scale"):
                node.pop(key, None)
            node["matrix"] = m.T.reshape(-1).tolist()
    return out


def z_up(doc: Gltf, scale: float = 100.0) -> Gltf:
    """The scene's nodes, meshes and bind poses in a Z-up space of ``scale`` units a metre,
    under one new scene root turning it into Y-up metres: every world place unchanged."""
    out = doc.copy()
    js = out.json
    turn = np.eye(4)  # child (Z-up, cm) -> world (Y-up, m): x, y, z -> x, z, -y, / scale
    turn[:3, :3] = Rotation.from_euler("x", -90, degrees=True).as_matrix() / scale
    inverse = np.linalg.inv(turn)
    scene = js["scenes"][js.get("scene", 0)]
    tops = list(scene["nodes"])
    for k in tops:  # each old scene root: its world kept under the new one
        node = js["nodes"][k]
        m = inverse @ _matrix(node)
        if "matrix" in node:
            node["matrix"] = m.T.reshape(-1).tolist()
        else:
            _set_trs(node, m)
    q_in = Rotation.from_matrix(inverse[:3, :3] * scale)  # the turn of child from world
    for anim in js.get("animations", []):
        for ch in anim["channels"]:
            if ch["target"].get("node") not in tops:
                continue
            sampler = anim["samplers"][ch["sampler"]]
            what = ch["target"]["path"]
            v = read(out, sampler["output"]).astype(np.float64)
            if what == "translation":
                v = v @ inverse[:3, :3].T
            elif what == "rotation":
                v = (q_in * Rotation.from_quat(v)).as_quat()
            elif what == "scale":
                v = v * scale
            else:
                continue
            sampler["output"] = _new_accessor(out, v.astype(np.float32), sampler["output"])
    js["nodes"].append({"name": "Z_UP", "children": tops})
    _set_trs(js["nodes"][-1], turn)
    scene["nodes"] = [len(js["nodes"]) - 1]
    # skinned meshes: their vertices in the Z-up space, the bind matrices turned with them
    skinned = {n["mesh"] for n in js["nodes"] if "mesh" in n and "skin" in n}
    done: set[int] = set()
    for m in skinned:
        for prim in js["meshes"][m]["primitives"]:
            for key, kind in (("POSITION", "p"), ("NORMAL", "n"), ("TANGENT", "t")):
                idx = prim["attributes"].get(key)
                if idx is not None and idx not in done:
                    done.add(idx)
                    v = read(out, idx).astype(np.float64)
                    v[:, :3] = v[:, :3] @ (inverse[:3, :3] if kind == "p" else q_in.as_matrix()).T
                    put(out, idx, v.astype(np.float32))
            for target in prim.get("targets", []):
                for key, idx in target.items():
                    if idx in done:
                        continue
                    done.add(idx)
                    v = read(out, idx).astype(np.float64)
                    rot = inverse[:3, :3] if key == "POSITION" else q_in.as_matrix()
                    put(out, idx, (v @ rot.T).astype(np.float32))
    for skin in js.get("skins", []):
        if "inverseBindMatrices" in skin:
            ibm = read(out, skin["inverseBindMatrices"]).astype(np.float64).reshape(-1, 4, 4)
            ibm = np.transpose(ibm, (0, 2, 1)) @ turn  # (column-major in the file)
            put(
                out,
                skin["inverseBindMatrices"],
                np.transpose(ibm, (0, 2, 1)).reshape(-1, 16).astype(np.float32),
            )
    return out


def _new_accessor(doc: Gltf, values: np.ndarray, like: int) -> int:
    acc = dict(doc.json["accessors"][like])
    acc.pop("sparse", None)
    doc.json["accessors"].append(acc)
    index = len(doc.json["accessors"]) - 1
    put(doc, index, values)
    return index


def with_prop(doc: Gltf) -> Gltf:
    """A prop's joint at the scene root, added to the first skin, and a triangle of the
    first skinned mesh node's weighted to it alone: the skin's joints under two roots."""
    out = doc.copy()
    js = out.json
    js["nodes"].append({"name": "prop", "translation": [0.5, 0.0, 0.0]})
    prop = len(js["nodes"]) - 1
    js["scenes"][js.get("scene", 0)]["nodes"].append(prop)
    skin = js["skins"][0]
    skin["joints"].append(prop)
    ibm = read(out, skin["inverseBindMatrices"]).astype(np.float32)
    bind = np.eye(4, dtype=np.float32)
    bind[3, :3] = [-0.5, 0.0, 0.0]  # (column-major: the move in the last column)
    skin["inverseBindMatrices"] = _new_accessor(
        out, np.r_[ibm, bind.reshape(1, 16)], skin["inverseBindMatrices"]
    )
    node = next(n for n in js["nodes"] if "skin" in n and n["skin"] == 0)
    pos = np.array([[0.5, 0.0, 0.0], [0.6, 0.0, 0.0], [0.5, 0.1, 0.0]], np.float32)

    def accessor(values: np.ndarray, kind: str, target: int | None = 34962, minmax=False) -> int:
        acc = {
            "bufferView": add_view(out, values.tobytes(), **({"target": target} if target else {})),
            "componentType": CODES[values.dtype.str],
            "count": len(values),
            "type": kind,
        }
        if minmax:
            acc["min"], acc["max"] = values.min(axis=0).tolist(), values.max(axis=0).tolist()
        js["accessors"].append(acc)
        return len(js["accessors"]) - 1

    joints = np.zeros((3, 4), np.uint16)
    joints[:, 0] = len(skin["joints"]) - 1
    weights = np.zeros((3, 4), np.float32)
    weights[:, 0] = 1.0
    js["meshes"].append(
        {
            "name": "prop",
            "primitives": [
                {
                    "attributes": {
                        "POSITION": accessor(pos, "VEC3", minmax=True),
                        "JOINTS_0": accessor(joints, "VEC4"),
                        "WEIGHTS_0": accessor(weights, "VEC4"),
                    },
                    "indices": accessor(np.array([[0], [1], [2]], np.uint16), "SCALAR", 34963),
                }
            ],
        }
    )
    js["nodes"].append({"name": "prop_mesh", "mesh": len(js["meshes"]) - 1, "skin": 0})
    js["scenes"][js.get("scene", 0)]["nodes"].append(len(js["nodes"]) - 1)
    _ = node
    return out


def sparse(doc: Gltf) -> Gltf:
    """Every rotation output of the first animation and every ``POSITION`` as a sparse
    accessor: a base of other values (the keys: the first one's; the positions: none, all
    zero) with the true ones at every index where they differ, as exporters write
    mostly-constant keys and morph targets."""
    out = doc.copy()
    js = out.json
    first = js.get("animations", [])[:1]
    targets = {
        anim["samplers"][ch["sampler"]]["output"]
        for anim in first
        for ch in anim["channels"]
        if ch["target"]["path"] == "rotation"
    }
    positions = {
        prim["attributes"]["POSITION"] for mesh in js["meshes"] for prim in mesh["primitives"]
    }
    for index in sorted(targets | positions):
        v = read(out, index)
        base = np.zeros_like(v) if index in positions else np.repeat(v[:1], len(v), axis=0)
        differ = np.flatnonzero((base != v).any(axis=1)).astype(np.uint32)
        if not len(differ):
            continue
        acc = js["accessors"][index]
        if index in positions:
            acc.pop("bufferView", None)
            acc.pop("byteOffset", None)
        else:
            put(out, index, base)
            if "min" in acc:  # (the bounds of the values the sparse part makes)
                acc["min"], acc["max"] = v.min(axis=0).tolist(), v.max(axis=0).tolist()
        acc["sparse"] = {
            "count": len(differ),
            "indices": {"bufferView": add_view(out, differ.tobytes()), "componentType": 5125},
            "values": {"bufferView": add_view(out, np.ascontiguousarray(v[differ]).tobytes())},
        }
    return out


def unnormalised(doc: Gltf, seed: int = 0) -> Gltf:
    """Every vertex's weights times a factor of its own (0.5 to 2)."""
    out = doc.copy()
    rng = np.random.default_rng(seed)
    for mesh in out.json["meshes"]:
        for prim in mesh["primitives"]:
            for key, index in prim["attributes"].items():
                if (
                    key.startswith("WEIGHTS_")
                    and out.json["accessors"][index]["componentType"] == 5126
                ):
                    w = read(out, index)
                    factor = rng.uniform(0.5, 2.0, (len(w), 1)).astype(np.float32)
                    put(out, index, w * factor)
    return out


def quantized(doc: Gltf) -> Gltf:
    """``KHR_mesh_quantization``: skinned positions as normalised int16 about their bounds,
    the dequantisation folded into the inverse bind matrices (and into the nodes of
    meshes that are not skinned); normals int8, texture coordinates uint16 (in [0, 1]:
    else left as they are) and weights uint8, normalised; joints uint8 where they fit."""
    out = doc.copy()
    js = out.json
    skin_of = {n["mesh"]: n["skin"] for n in js["nodes"] if "mesh" in n and "skin" in n}
    bounds: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # one grid a skin: its meshes share it
    for m, skin in skin_of.items():
        for prim in js["meshes"][m]["primitives"]:
            p = read(out, prim["attributes"]["POSITION"]).astype(np.float64)
            lo, hi = bounds.get(skin, (p.min(axis=0), p.max(axis=0)))
            bounds[skin] = (np.minimum(lo, p.min(axis=0)), np.maximum(hi, p.max(axis=0)))
    done: set[int] = set()
    for m, mesh in enumerate(js["meshes"]):
        if m not in skin_of:
            continue  # (rigid meshes: their nodes would carry the scale)
        lo, hi = bounds[skin_of[m]]
        size = float(np.max(hi - lo)) / 2 or 1.0
        centre = (hi + lo) / 2
        for prim in mesh["primitives"]:
            attrs = prim["attributes"]
            for key, index in attrs.items():
                if index in done:
                    continue
                done.add(index)
                v = read(out, index).astype(np.float64)
                if key == "POSITION":
                    q = np.round((v - centre) / size * 32767).astype(np.int16)
                    put(out, index, q, normalized=True, vertex=True)
                elif key == "NORMAL":
                    n8 = np.round(v * 127).astype(np.int8)
                    put(out, index, n8, normalized=True, vertex=True)
                elif key.startswith("TEXCOORD_") and v.min() >= 0 and v.max() <= 1:
                    put(
                        out,
                        index,
                        np.round(v * 65535).astype(np.uint16),
                        normalized=True,
                        vertex=True,
                    )
                elif key.startswith("WEIGHTS_"):
                    w = v / np.maximum(v.sum(axis=1, keepdims=True), 1e-12)
                    q = np.floor(w * 255).astype(np.int64)
                    q[np.arange(len(q)), np.argmax(w, axis=1)] += 255 - q.sum(axis=1)  # sum 255
                    put(out, index, q.astype(np.uint8), normalized=True, vertex=True)
                elif key.startswith("JOINTS_") and v.max() < 256:
                    put(out, index, v.astype(np.uint8), vertex=True)
            for target in prim.get("targets", []):
                if "POSITION" in target and target["POSITION"] not in done:
                    done.add(target["POSITION"])
                    d = read(out, target["POSITION"]).astype(np.float64) / size
                    put(out, target["POSITION"], d.astype(np.float32))
    for k, (lo, hi) in bounds.items():
        size = float(np.max(hi - lo)) / 2 or 1.0
        centre = (hi + lo) / 2
        skin = js["skins"][k]
        ibm = read(out, skin["inverseBindMatrices"]).astype(np.float64).reshape(-1, 4, 4)
        de = np.eye(4)
        de[:3, :3] *= size
        de[:3, 3] = centre
        ibm = np.transpose(ibm, (0, 2, 1)) @ de
        put(
            out,
            skin["inverseBindMatrices"],
            np.transpose(ibm, (0, 2, 1)).reshape(-1, 16).astype(np.float32),
        )
    used = js.setdefault("extensionsUsed", [])
    required = js.setdefault("extensionsRequired", [])
    for ext in (used, required):
        if "KHR_mesh_quantization" not in ext:
            ext.append("KHR_mesh_quantization")
    return out


def meshopt(doc: Gltf) -> Gltf:
    """``EXT_meshopt_compression`` by meshoptimizer's own encoders (module docstring)."""
    import meshoptimizer
    from meshoptimizer._loader import lib

    out = doc.copy()
    js = out.json
    meshoptimizer.encode_vertex_version(0)  # (the extension's codec version)
    views_of: dict[int, list[int]] = {}
    for k, acc in enumerate(js["accessors"]):
        if "bufferView" in acc:
            views_of.setdefault(acc["bufferView"], []).append(k)
    normals = {
        prim["attributes"]["NORMAL"]
        for mesh in js["meshes"]
        for prim in mesh["primitives"]
        if "NORMAL" in prim["attributes"]
    }
    rotations = {
        anim["samplers"][ch["sampler"]]["output"]
        for anim in js.get("animations", [])
        for ch in anim["channels"]
        if ch["target"]["path"] == "rotation"
    }
    # normals and rotations into the filters' own formats first (one accessor a view)
    f32 = ctypes.POINTER(ctypes.c_float)
    for fn in (lib.meshopt_encodeFilterOct, lib.meshopt_encodeFilterQuat):
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, f32]
        fn.restype = None
    for index in sorted(normals):
        v = read(out, index).astype(np.float32)
        four = np.ascontiguousarray(np.c_[v, np.zeros(len(v))], np.float32)
        data = np.zeros((len(v), 4), np.int8)
        lib.meshopt_encodeFilterOct(data.ctypes.data, len(v), 4, 8, four.ctypes.data_as(f32))
        put(out, index, data, normalized=True)
        acc = js["accessors"][index]
        acc["type"] = "VEC3"  # (x, y, z and a byte of padding)
        if "min" in acc:
            acc["min"], acc["max"] = acc["min"][:3], acc["max"][:3]
        js["bufferViews"][js["accessors"][index]["bufferView"]]["byteStride"] = 4
        js["accessors"][index]["_filter"] = "OCTAHEDRAL"
    for index in sorted(rotations):
        v = np.ascontiguousarray(read(out, index), np.float32)
        data = np.zeros((len(v), 4), np.int16)
        lib.meshopt_encodeFilterQuat(data.ctypes.data, len(v), 8, 16, v.ctypes.data_as(f32))
        put(out, index, data, normalized=True)
        js["accessors"][index]["_filter"] = "QUATERNION"
    views_of = {}
    for k, acc in enumerate(js["accessors"]):
        if "bufferView" in acc:
            views_of.setdefault(acc["bufferView"], []).append(k)
    fallback = 0
    for v, view in enumerate(js["bufferViews"]):
        owners = views_of.get(v, [])
        if len(owners) != 1:
            continue  # (images, shared views: as they are)
        acc = js["accessors"][owners[0]]
        values = read(out, owners[0])
        item = values.dtype.itemsize * values.shape[1]
        item = view.get("byteStride") or item  # (whole vertices: padding included)
        raw = np.frombuffer(out.views[v], np.uint8)
        filt = acc.pop("_filter", "NONE")
        if view.get("target") == 34963:  # indices: the triangle codec
            if acc["count"] % 3:
                continue
            meshoptimizer.encode_index_version(1)
            data = meshoptimizer.encode_index_buffer(values.reshape(-1).astype(np.uint32))
            mode, stride = "TRIANGLES", values.dtype.itemsize
        elif item % 4 == 0 and acc.get("byteOffset", 0) == 0 and len(raw) == len(values) * item:
            data = meshoptimizer.encode_vertex_buffer(raw.reshape(len(values), item))
            mode, stride = "ATTRIBUTES", item
        else:
            continue
        size = int(acc["count"]) * stride
        view["extensions"] = {
            "EXT_meshopt_compression": {
                "_data": bytes(data),  # (placed in buffer 0 by save)
                "byteLength": len(data),
                "byteStride": stride,
                "count": int(acc["count"]),
                "mode": mode,
                **({"filter": filt} if filt != "NONE" else {}),
            }
        }
        if mode == "ATTRIBUTES" and view.get("target") == 34962:
            view["byteStride"] = stride
        view["buffer"], view["byteOffset"], view["byteLength"] = 1, fallback, size
        fallback += size + (-size % 4)
        out.views[v] = b""
    for acc in js["accessors"]:
        acc.pop("_filter", None)
    js["buffers"] = [
        {},
        {
            "byteLength": max(fallback, 4),
            "extensions": {"EXT_meshopt_compression": {"fallback": True}},
        },
    ]
    for ext in (js.setdefault("extensionsUsed", []), js.setdefault("extensionsRequired", [])):
        ext += [e for e in ("EXT_meshopt_compression", "KHR_mesh_quantization") if e not in ext]
    return out


def draco_declared(doc: Gltf) -> Gltf:
    """The first primitive carried by ``KHR_draco_mesh_compression`` alone (its attributes
    in a Draco stream: here a stand-in, which a reader must refuse, not misread)."""
    out = doc.copy()
    js = out.json
    prim = js["meshes"][0]["primitives"][0]
    stream = add_view(out, b"DRACO" + b"\x00" * 27)
    prim["extensions"] = {
        "KHR_draco_mesh_compression": {
            "bufferView": stream,
            "attributes": {k: i for i, k in enumerate(prim["attributes"])},
        }
    }
    for index in [*prim["attributes"].values(), prim.get("indices")]:
        if index is not None:  # (only the stream holds them now)
            acc = js["accessors"][index]
            acc = js["accessors"][index] = {
                k: v for k, v in acc.items() if k not in ("bufferView", "byteOffset")
            }
    for ext in (js.setdefault("extensionsUsed", []), js.setdefault("extensionsRequired", [])):
        ext.append("KHR_draco_mesh_compression")
    return out
