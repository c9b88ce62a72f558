"""glTF 2.0 characters (``.glb``, ``.gltf`` + ``.bin``): a skin's joints as a skeleton,
the file's animations as motions.

The file is read here, not by :mod:`pygltflib`: its JSON by :func:`json.loads`, its
buffers (a GLB's binary chunk, a ``.bin`` beside the file, a data URI) as bytes, and
accessors decoded with numpy (component types, strides, normalised integers).
pygltflib turns the JSON into dataclasses through ``dataclasses_json``: 12 s for the
KayKit knight's 76 animations, against milliseconds here. What is read:

* **The skeleton**: the joints of every skin (several skins sharing one skeleton are
  one), less the *control bones* (IK targets, poles, roll controls: joints no vertex
  of any skinned mesh is weighted to and under which no joint is), plus the nodes
  that join them to one root. Its rest pose is the nodes' own (``translation``,
  ``rotation``, ``scale`` or ``matrix``), with every node above the root applied: an
  armature turned Z-up under the Y-up world, or scaled by 0.01, stands as the file
  shows it. glTF's world is Y up, in metres.
* **Detached joints**: a joint hanging from the root beside the body that one of the
  body's leaf joints carries rigidly in every animation (feet hung from a rig's root
  and driven by IK constraints, baked: its shin's end) hangs from that joint in the
  skeleton, as a humanoid's foot does; the file keeps its hierarchy
  (:attr:`Character.node_parents`), and the writer keys the joint in its own
  parent's frame. A foot that is a leaf joint gets an end site where its geometry
  ends ahead of it, level with the ankle: glTF has no bone tails.
* **Rest rotations baked**: this library's skeletons stand at rest with every
  joint's frame the world's (BVH's convention), so each offset is the rest world
  vector from the parent (scale applied) and a node's animated local rotation
  ``q_j`` becomes ``r_j = G_p ⊗ q_j ⊗ G_j⁻¹`` (``G``: the rest world rotations; at
  rest, ``r = 1``); :func:`gltf_rotations` inverts it. Animated translations below
  the root become per-frame bone offsets (:attr:`retarget.core.motion.Motion.translations`).
* **Animations**: each channel's keys sampled at the animation's rate (the keys'
  own where they are evenly spaced, else 30 frames/s) over its whole duration,
  ``LINEAR`` (rotations by slerp), ``STEP`` or ``CUBICSPLINE`` (Hermite, rotations
  normalised), as glTF 2.0 §3.11 defines them; a joint no channel drives keeps its
  rest. A node's animated scale is taken as uniform (its mean; uneven, said once, as
  a warning): an armature scaled over a clip scales its bones (per-frame offsets).

Units: metres, Y up; quaternions (w, x, y, z) here, (x, y, z, w) in the file.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import struct
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array, frozen
from ..core.errors import FormatError, RetargetError, RetargetWarning
from ..core.kinematics import rest_pose
from ..core.motion import Motion
from ..core.skeleton import Skeleton

__all__ = [
    "Character",
    "SkinMesh",
    "character_motion",
    "gltf_rotations",
    "mannequin",
    "one_file",
    "read_character",
    "skin_mesh",
    "skin_points",
    "write_character",
]

_DTYPES = {
    5120: np.int8,
    5121: np.uint8,
    5122: np.int16,
    5123: np.uint16,
    5125: np.uint32,
    5126: np.float32,
}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


@dataclass(frozen=True)
class Character:
    """A glTF file's rigged character (read-only arrays).

    Attributes
    ----------
    path : Path
    skeleton : Skeleton
        Metres, Y up, rest rotations baked (module docstring).
    nodes : (J,) int
        The glTF node of each skeleton joint.
    rest_world : (J, 4)
        ``G_j``: each joint node's rest world rotation (w, x, y, z).
    parent_rest : (4,)
        The rest world rotation of the root joint's parent node (identity at a scene root).
    control : tuple of str
        Skin joints left out: no vertex weighted to them nor to any joint below them.
    skins : tuple of (str, tuple of str)
        Each skin's name and its joints' names.
    animations : tuple of str
        The animations' names, in file order (unnamed: ``animation<k>``).
    node_parents : (J,) int
        Each joint's parent in the file (a skeleton index, -1 for the root): the
        skeleton's own parent but for a *detached* joint (module docstring), which the
        skeleton hangs from the joint that carries it.
    """

    path: Path
    skeleton: Skeleton
    nodes: NDArray[np.intp]
    rest_world: Array
    parent_rest: Array
    control: tuple[str, ...]
    skins: tuple[tuple[str, tuple[str, ...]], ...]
    animations: tuple[str, ...]
    node_parents: NDArray[np.intp] | None = None
    _gltf: tuple | None = None  # (the document and its nodes' rest, for the animations)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", frozen(self.nodes, dtype=np.intp))
        object.__setattr__(self, "rest_world", frozen(self.rest_world))
        object.__setattr__(self, "parent_rest", frozen(self.parent_rest))
        if self.node_parents is not None:
            object.__setattr__(self, "node_parents", frozen(self.node_parents, dtype=np.intp))


def _fail(path: Path, what: str) -> FormatError:
    return FormatError(str(path), None, what)


class _Doc:
    """A glTF document: its JSON (``dict``) and its buffers' bytes."""

    def __init__(self, path: Path) -> None:
        data = path.read_bytes()
        chunk = b""
        try:
            if data[:4] == b"glTF":
                version, length = struct.unpack_from("<II", data, 4)
                if version != 2:
                    raise ValueError(f"GLB version {version}, not 2")
                at, js = 12, None
                while at + 8 <= min(length, len(data)):
                    size, kind = struct.unpack_from("<II", data, at)
                    body = data[at + 8 : at + 8 + size]
                    if kind == 0x4E4F534A:
                        js = body
                    elif kind == 0x004E4942:
                        chunk = body
                    at += 8 + size
                if js is None:
                    raise ValueError("no JSON chunk")
                self.json = json.loads(js.decode("utf-8"))
            else:
                self.json = json.loads(data.decode("utf-8-sig"))
        except (ValueError, UnicodeDecodeError, struct.error) as exc:
            raise _fail(path, f"not a glTF 2.0 file ({exc})") from None
        if not isinstance(self.json, dict) or not str(
            (self.json.get("asset") or {}).get("version", "")
        ).startswith("2"):
            raise _fail(path, "not a glTF 2.0 file (asset.version is not 2.x)")
        _check_document(path, self.json)
        self.buffers: list[bytes] = []
        for k, buf in enumerate(self.json.get("buffers", [])):
            uri = buf.get("uri")
            if uri is None:  # the GLB's chunk is buffer 0's; another is a meshopt fallback
                self.buffers.append(chunk if k == 0 else b"")
            elif uri.startswith("data:"):
                self.buffers.append(base64.b64decode(uri.split(",", 1)[1]))
            else:
                file = path.parent / unquote(uri)
                if not file.is_file():
                    raise _fail(path, f"buffer {k}: {uri} not found beside it")
                self.buffers.append(file.read_bytes())
        self.nodes = self.json.get("nodes", [])
        self.skins = self.json.get("skins", [])
        self.meshes = self.json.get("meshes", [])
        self.animations = self.json.get("animations", [])
        self._decoded: dict[int, bytes] = {}

    def view(self, path: Path, index: int) -> tuple[bytes, int, int | None]:
        """Buffer view ``index``: the bytes holding it, where it starts in them, and its
        byte stride (``EXT_meshopt_compression`` views decoded, once)."""
        try:
            view = self.json["bufferViews"][index]
            ext = (view.get("extensions") or {}).get("EXT_meshopt_compression")
            if ext is None:
                return (
                    self.buffers[view["buffer"]],
                    int(view.get("byteOffset", 0)),
                    (view.get("byteStride")),
                )
            if index not in self._decoded:
                from .meshopt import decode_view

                self._decoded[index] = decode_view(path, index, ext, self.buffers[ext["buffer"]])
            return self._decoded[index], 0, int(ext["byteStride"])
        except (KeyError, IndexError, TypeError):
            raise _fail(path, f"buffer view {index}: not a glTF buffer view") from None


_LISTS = (
    "nodes", "skins", "meshes", "animations", "accessors", "bufferViews", "buffers", "scenes",
)  # fmt: skip
_INTERPOLATIONS = ("LINEAR", "STEP", "CUBICSPLINE")


def _check_document(path: Path, js: dict) -> None:
    """The document's structure as glTF 2.0 §5 has it, as far as reading a character
    needs: lists of objects, indices that point at something, node transforms of
    finite numbers (a rotation that is one), known interpolations and component types;
    else one :class:`FormatError` saying what and where. (A reader that trusted them
    ended in a traceback on 7 of 40 runs of broken files: issue 41.)"""

    def bad(what: str) -> FormatError:
        return _fail(path, what)

    for key in _LISTS:
        items = js.get(key, [])
        if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
            raise bad(f"'{key}' is not a list of objects")
    n = {key: len(js.get(key, [])) for key in _LISTS}

    def index(value, key: str, where: str) -> None:
        if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n[key]):
            raise bad(f"{where}: {value!r} is not one of the {n[key]} {key}")

    def numbers(value, count: int, where: str) -> Array:
        try:
            out = np.asarray(value, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            out = np.zeros(0)
        if out.size != count or not np.isfinite(out).all():
            raise bad(f"{where}: {value!r} is not {count} finite numbers")
        return out

    for i, node in enumerate(js.get("nodes", [])):
        where = f"node {i}"
        children = node.get("children", [])
        if not isinstance(children, list):
            raise bad(f"{where}: children is not a list")
        for c in children:
            index(c, "nodes", f"{where}, a child")
        for key, count in (("translation", 3), ("scale", 3), ("matrix", 16)):
            if key in node:
                numbers(node[key], count, f"{where}, {key}")
        if (
            "rotation" in node
            and not np.linalg.norm(numbers(node["rotation"], 4, f"{where}, rotation")) > 0
        ):
            raise bad(f"{where}: rotation {node['rotation']} is not a rotation (a zero quaternion)")
        for key, of in (("mesh", "meshes"), ("skin", "skins")):
            if key in node:
                index(node[key], of, f"{where}, {key}")
    for k, skin in enumerate(js.get("skins", [])):
        joints = skin.get("joints", [])
        if not isinstance(joints, list) or not joints:
            raise bad(f"skin {k}: no joints")
        for j in joints:
            index(j, "nodes", f"skin {k}, a joint")
        if "inverseBindMatrices" in skin:
            index(skin["inverseBindMatrices"], "accessors", f"skin {k}, inverseBindMatrices")
    for k, acc in enumerate(js.get("accessors", [])):
        if acc.get("componentType") not in _DTYPES or acc.get("type") not in _WIDTH:
            raise bad(
                f"accessor {k}: component type {acc.get('componentType')!r}, type "
                f"{acc.get('type')!r} not glTF's"
            )
        count = acc.get("count")
        if not isinstance(count, int) or count < 0:
            raise bad(f"accessor {k}: count {count!r}")
        if "bufferView" in acc:
            index(acc["bufferView"], "bufferViews", f"accessor {k}, bufferView")
    for k, view in enumerate(js.get("bufferViews", [])):
        index(view.get("buffer"), "buffers", f"buffer view {k}, buffer")
    for a, anim in enumerate(js.get("animations", [])):
        samplers, channels = anim.get("samplers", []), anim.get("channels", [])
        if not isinstance(samplers, list) or not isinstance(channels, list):
            raise bad(f"animation {a}: samplers and channels are not lists")
        for s, sampler in enumerate(samplers):
            where = f"animation {a}, sampler {s}"
            if not isinstance(sampler, dict):
                raise bad(f"{where}: not an object")
            index(sampler.get("input"), "accessors", f"{where}, input")
            index(sampler.get("output"), "accessors", f"{where}, output")
            if sampler.get("interpolation", "LINEAR") not in _INTERPOLATIONS:
                raise bad(f"{where}: interpolation {sampler.get('interpolation')!r} is not glTF's")
        for c, channel in enumerate(channels):
            if not isinstance(channel, dict) or not isinstance(channel.get("target"), dict):
                raise bad(f"animation {a}, channel {c}: no target")
            if not (
                isinstance(channel.get("sampler"), int) and 0 <= channel["sampler"] < len(samplers)
            ):
                raise bad(f"animation {a}, channel {c}: sampler {channel.get('sampler')!r}")


def _accessor(path: Path, doc: _Doc, index: int) -> Array:
    """An accessor's elements (count, width) as float64 (normalised integers scaled)."""
    try:
        acc = doc.json["accessors"][index]
        width = _WIDTH[acc["type"]]
        dtype = np.dtype(_DTYPES[acc["componentType"]])
        count = int(acc["count"])
    except (KeyError, IndexError, TypeError):
        raise _fail(path, f"accessor {index}: not a glTF accessor") from None
    if count < 0:
        raise _fail(path, f"accessor {index}: count {count}")
    if "bufferView" in acc:
        out = _elements(
            path, doc, index, acc["bufferView"], acc.get("byteOffset", 0), dtype, count, width
        )
    else:
        out = np.zeros((count, width))
    if "sparse" in acc:  # glTF 2.0 §3.6.2.3: some elements replaced
        try:
            sp = acc["sparse"]
            n = int(sp["count"])
            if n < 0:
                raise _fail(path, f"accessor {index}: sparse count {n}")
            kind = np.dtype(_DTYPES[sp["indices"]["componentType"]])
            at, values = (
                _elements(path, doc, index, part["bufferView"], part.get("byteOffset", 0), t, n, w)
                for part, t, w in ((sp["indices"], kind, 1), (sp["values"], dtype, width))
            )
        except (KeyError, TypeError):
            raise _fail(
                path, f"accessor {index}: a sparse accessor needs count, indices, values"
            ) from None
        rows = at[:, 0].astype(np.int64)
        if kind.kind != "u" or (n and (rows.min() < 0 or rows.max() >= count)):
            raise _fail(path, f"accessor {index}: sparse indices beyond its {count} elements")
        out[rows] = values
    if acc.get("normalized") and dtype.kind in "iu":
        out = out / float(np.iinfo(dtype.type).max)  # type: ignore[type-var]
        if dtype.kind == "i":
            out = np.maximum(out, -1.0)
    return out


def _elements(
    path: Path,
    doc: _Doc,
    index: int,
    view: int,
    offset: int,
    dtype: np.dtype,
    count: int,
    width: int,
) -> Array:
    """``count`` elements of ``width`` components of ``dtype`` at ``offset`` in buffer view
    ``view`` (for accessor ``index``), as float64 (count, width)."""
    blob, at, stride = doc.view(path, view)
    start = at + int(offset)
    item = width * dtype.itemsize
    stride = stride or item
    if start < 0 or stride < item or (count and start + stride * (count - 1) + item > len(blob)):
        raise _fail(path, f"accessor {index} reaches past its buffer")
    raw = np.lib.stride_tricks.as_strided(
        np.frombuffer(blob, dtype=np.uint8, count=len(blob) - start, offset=start),
        shape=(count, item),
        strides=(stride, 1),
    )
    return np.ascontiguousarray(raw).view(dtype).reshape(count, width).astype(np.float64)


def _local(node: dict) -> tuple[Array, Array, Array]:
    """A node's rest translation (3,), rotation (4,) w-first and scale (3,)."""
    if "matrix" in node:
        m = np.asarray(node["matrix"], dtype=np.float64).reshape(4, 4).T  # (column-major)
        t = m[:3, 3].copy()
        s = np.linalg.norm(m[:3, :3], axis=0)
        r = m[:3, :3] / np.where(s > 0, s, 1.0)
        if np.linalg.det(r) < 0:
            s[0], r[:, 0] = -s[0], -r[:, 0]
        return t, quat.quat_from_matrix(r), s
    t = np.asarray(node.get("translation", (0.0, 0.0, 0.0)), float)
    x = node.get("rotation", (0.0, 0.0, 0.0, 1.0))
    r = quat.normalize(np.array([x[3], x[0], x[1], x[2]], dtype=np.float64))
    s = np.asarray(node.get("scale", (1.0, 1.0, 1.0)), float)
    return t, r, s


def read_character(path: str | os.PathLike) -> Character:
    """The rigged character of a glTF file (module docstring).

    Raises
    ------
    FormatError
        Not glTF 2.0, no skin, or a skin whose joints are not one tree.
    """
    path = Path(path)
    if not path.is_file():
        raise _fail(path, "no such file")
    doc = _Doc(path)
    if not doc.skins:
        raise _fail(path, "no skin: a rigged character's file has its joints in a skin")
    for m, mesh in enumerate(doc.meshes):
        for prim in mesh.get("primitives", []):
            accessors = doc.json.get("accessors", [])
            if "KHR_draco_mesh_compression" in (prim.get("extensions") or {}) and any(
                "bufferView" not in accessors[a]
                for a in (prim.get("attributes") or {}).values()
                if isinstance(a, int) and 0 <= a < len(accessors)
            ):
                raise _fail(
                    path,
                    f"mesh {m}: its vertices are only in a Draco stream "
                    "(KHR_draco_mesh_compression), which is not decoded here; export it "
                    "without Draco compression (Blender: untick Compression)",
                )
    n = len(doc.nodes)
    parent = np.full(n, -1, np.intp)
    for i, node in enumerate(doc.nodes):
        for c in node.get("children", []):
            if not 0 <= c < n or parent[c] >= 0:
                raise _fail(path, f"node {i}: child {c} is not a node or has two parents")
            parent[c] = i
    for i in range(n):  # (a node its own ancestor: a cycle, which no parent check sees)
        k, steps = i, 0
        while k >= 0 and steps <= n:
            k, steps = int(parent[k]), steps + 1
        if steps > n:
            raise _fail(path, f"node {i}: the nodes' children make a cycle")
    local = [_local(node) for node in doc.nodes]
    # rest world transforms: rotation, uniform scale, position, from the scene roots down
    w_rot = np.tile(quat.identity(), (n, 1))
    w_scale = np.ones(n)
    w_pos = np.zeros((n, 3))
    done = np.zeros(n, bool)

    def world(i: int) -> None:
        chain = []
        while i >= 0 and not done[i]:
            chain.append(i)
            i = int(parent[i])
        for k in reversed(chain):
            t, r, s = local[k]
            if np.ptp(s) > 1e-4 * max(abs(s).max(), 1e-12):
                warnings.warn(
                    f"{path}: node {_name(doc, k)!r} is scaled unevenly {tuple(s)}; "
                    "read with its mean scale",
                    RetargetWarning,
                    stacklevel=3,
                )
            p = int(parent[k])
            if p >= 0:
                w_pos[k] = w_pos[p] + w_scale[p] * quat.rotate(w_rot[p], t)
                w_rot[k] = quat.multiply(w_rot[p], r)
                w_scale[k] = w_scale[p] * float(np.mean(s))
            else:
                w_pos[k], w_rot[k], w_scale[k] = t, r, float(np.mean(s))
            done[k] = True

    for i in range(n):
        world(i)
    # the skins' joints, less the control bones, joined under one root
    joints: list[int] = []
    for skin in doc.skins:
        joints += [j for j in skin.get("joints", []) if j not in joints]
    weighted = _weighted(path, doc, parent, joints)
    below = {j: _descendants(j, doc) for j in joints}
    control = [j for j in joints if j not in weighted and not any(d in weighted for d in below[j])]
    keep = [j for j in joints if j not in control]
    if not keep:
        raise _fail(path, "no vertex is weighted to any joint of its skins")
    trees: dict[int, list[int]] = {}  # the kept joints by the scene root above them
    for j in keep:
        trees.setdefault(_ancestors(j, parent)[-1], []).append(j)
    if len(trees) > 1:  # joints under several roots: the body is the largest tree
        body = max(trees.values(), key=len)
        apart = [j for j in keep if j not in set(body)]
        warnings.warn(
            f"{path}: the skins' joints hang from {len(trees)} roots; the skeleton is the "
            f"tree of {len(body)} joints, left out: "
            f"{', '.join(_name(doc, j) for j in apart[:8])}{' …' if len(apart) > 8 else ''}",
            RetargetWarning,
            stacklevel=2,
        )
        control += apart
        keep = body
    keep_set = set(keep)
    ancestors = [set(_ancestors(j, parent)) for j in keep]
    common = set.intersection(*ancestors) if ancestors else set()
    top = max(common, key=lambda a: len(_ancestors(a, parent)), default=-1)  # deepest
    for j in keep:  # the nodes on the way up to the common root
        k = int(parent[j]) if j != top else -1
        while k >= 0 and k != top and k not in keep_set:
            keep_set.add(k)
            k = int(parent[k])
    roots = [j for j in keep_set if int(parent[j]) not in keep_set]
    if len(roots) > 1:
        keep_set.add(top)
        roots = [top]
    info = (doc, parent, local, w_pos, w_rot, w_scale, control, keep_set, roots[0])
    character = _character(path, info, {})
    hang = _detached(character)
    return _foot_tips(_character(path, info, hang) if hang else character)


def _character(path: Path, info: tuple, hang: dict[int, int]) -> Character:
    """The character of a read document (``info``: :func:`read_character`'s), with each
    node of ``hang`` hung from the node given (a detached joint from its carrier)."""
    doc, parent, local, w_pos, w_rot, w_scale, control, keep_set, root = info
    up_of = {j: hang.get(j, int(parent[j])) for j in keep_set}
    order: list[int] = []
    stack = [root]
    while stack:  # depth first, parents before children, the file's child order
        j = stack.pop()
        order.append(j)
        kids = [c for c in doc.nodes[j].get("children", []) if c in keep_set and c not in hang]
        kids += [c for c in sorted(hang) if hang[c] == j]  # (a detached joint last)
        stack.extend(reversed(kids))
    index = {j: k for k, j in enumerate(order)}
    names = _names(doc, order)
    parents = np.array([index.get(up_of[j], -1) if k else -1 for k, j in enumerate(order)], np.intp)
    offsets = np.array(
        [w_pos[j] - (w_pos[up_of[j]] if parents[k] >= 0 else 0.0) for k, j in enumerate(order)]
    )
    # a control bone hanging from a joint with no joint below it is that chain's end
    # site (a leaf bone's tip: an FBX's HeadTop_End, LeftToe_End, a finger's fourth bone;
    # not the IK targets hanging from a rig's root)
    leaves = set(order) - {up_of[j] for j in order}
    ends = [c for c in control if int(parent[c]) in leaves]
    skeleton = Skeleton(
        names=names,
        parents=parents,
        offsets=offsets,
        site_names=tuple(_name(doc, c) for c in ends),
        site_parents=np.array([index[int(parent[c])] for c in ends], np.intp),
        site_offsets=np.array([w_pos[c] - w_pos[parent[c]] for c in ends]).reshape(-1, 3),
        channels=(
            ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation"),
            *([("Zrotation", "Yrotation", "Xrotation")] * (len(order) - 1)),
        ),
        unit="m",
        up="y",
    )
    up = int(parent[order[0]])
    return Character(
        path=path,
        skeleton=skeleton,
        nodes=np.array(order, np.intp),
        rest_world=w_rot[order].copy(),
        parent_rest=w_rot[up].copy() if up >= 0 else quat.identity(),
        control=tuple(_name(doc, j) for j in control),
        skins=tuple(
            (s.get("name") or f"skin{k}", tuple(_name(doc, j) for j in s.get("joints", [])))
            for k, s in enumerate(doc.skins)
        ),
        animations=tuple(a.get("name") or f"animation{k}" for k, a in enumerate(doc.animations)),
        node_parents=np.array(
            [index.get(int(parent[j]), -1) if k else -1 for k, j in enumerate(order)], np.intp
        ),
        _gltf=(doc, parent, local, w_scale),
    )


DETACHED = 0.01
"""A joint hanging from the root beside the body is *detached* when, over every frame
of the file's animations, it keeps its place in one leaf joint's frame within this
share of the skeleton's rest size (its bounding box's longest side): the median
distance from its median place."""


def _foot_tips(character: Character) -> Character:
    """The character with an end site at the tip of each foot that is a leaf joint (a
    rig with no toe joint and no bone past its ankle: glTF has no bone tails): level
    with the ankle (glTF's up is +Y), the way the foot's geometry goes from it (its
    vertices' mean, level), as far as its farthest vertex goes that way. A skeleton
    whose limbs are not found, or whose feet have a joint or site past the ankle, is
    returned as it is."""
    from ..humanoid.roles import find_roles

    sk = character.skeleton
    try:
        roles = find_roles(sk)
    except RetargetError:
        return character
    feet = sorted(  # (in the skeleton's order: the same sites whichever side is read)
        roles[f"{side}_ankle"]
        for side in ("left", "right")
        if f"{side}_toe_tip" in roles and roles[f"{side}_ankle"] == roles[f"{side}_toe_tip"]
    )
    if not feet:
        return character
    points = skin_points(character)
    names, parents, offsets = [], [], []
    for foot in feet:
        v = points.get(foot)
        if v is None or not len(v):
            continue
        u = v.mean(axis=0) * [1.0, 0.0, 1.0]
        if not np.linalg.norm(u) > 0:
            continue
        u /= np.linalg.norm(u)
        names.append(f"{sk.names[foot]}_tip")
        parents.append(foot)
        offsets.append(float((v @ u).max()) * u)
    if not names:
        return character
    skeleton = sk.replace(
        site_names=(*sk.site_names, *names),
        site_parents=np.r_[sk.site_parents, parents].astype(np.intp),
        site_offsets=np.r_[sk.site_offsets.reshape(-1, 3), np.reshape(offsets, (-1, 3))],
    )
    return dataclasses.replace(character, skeleton=skeleton)


def _detached(character: Character) -> dict[int, int]:
    """Detached joints (node → carrier node): a joint hanging from the skeleton's root
    beside the rest of the body, carried in every animation by one leaf joint of the
    body (not itself hanging from the root) as if hung from it (:data:`DETACHED`); the
    rest pose is unchanged (its offset is from the carrier). A rig whose feet hang from
    its root and follow its shins by IK constraints, baked into its animations
    (Quaternius' RobotExpressive): the feet become the shins' children, as a
    humanoid's are. The file keeps its own
    hierarchy: the writer keys a detached joint's translation in its own parent's
    frame (:func:`write_character`). A file without animations shows nothing detached."""
    from ..core.kinematics import forward_kinematics

    sk = character.skeleton
    top = [k for k in range(1, sk.num_joints) if sk.parents[k] == 0]
    if len(top) < 2 or not character.animations:
        return {}
    below = [{d for d in range(sk.num_joints) if k in sk.chain(d)} for k in top]
    # (carriers: leaves of the body, not joints hanging from the root themselves)
    leaves = sorted(set(range(sk.num_joints)) - set(sk.parents.tolist()) - set(top))
    rel: dict[int, list[Array]] = {k: [] for k in top}
    for a in range(len(character.animations)):
        m = character_motion(character, a)
        pos, rot = forward_kinematics(sk, m.root_position, m.rotations, m.translations)
        for k in top:
            rel[k].append(quat.rotate(quat.conjugate(rot[:, leaves]), pos[:, [k]] - pos[:, leaves]))
    extent = float(np.ptp(rest_pose(character.skeleton)[0], axis=0).max())
    out: dict[int, int] = {}
    for k, sub in zip(top, below, strict=True):
        r = np.concatenate(rel[k])  # (F, L, 3)
        spread = np.median(np.linalg.norm(r - np.median(r, axis=0), axis=-1), axis=0)
        spread[[i for i, leaf in enumerate(leaves) if leaf in sub]] = np.inf
        best = int(np.argmin(spread))
        if spread[best] <= DETACHED * extent:
            out[int(character.nodes[k])] = int(character.nodes[leaves[best]])
    return out


def one_file(path: str | os.PathLike) -> bytes:
    """A glTF file as one self-contained file's bytes: a GLB as it is, a ``.gltf`` with
    its buffers (a ``.bin`` beside it) and images as data URIs (what a page can load
    without a server)."""
    path = Path(path)
    data = path.read_bytes()
    if data[:4] == b"glTF":  # (a GLB: one file already)
        return data
    doc = _Doc(path)
    js = json.loads(json.dumps(doc.json))
    js["buffers"] = [
        {**b, "uri": "data:application/octet-stream;base64," + base64.b64encode(data).decode()}
        for b, data in zip(doc.json.get("buffers", []), doc.buffers, strict=True)
    ]
    for image in js.get("images", []):
        uri = image.get("uri")
        if uri and not uri.startswith("data:"):
            file = path.parent / unquote(uri)
            data = file.read_bytes()
            image["uri"] = f"data:{_mime(data)};base64," + base64.b64encode(data).decode()
    return json.dumps(js).encode("utf-8")


def _mime(image: bytes) -> str:
    """An image's media type from its first bytes (glTF's images are PNG or JPEG)."""
    return "image/png" if image[:8] == b"\x89PNG\r\n\x1a\n" else "image/jpeg"


def _name(doc, j: int) -> str:
    name = doc.nodes[j].get("name")
    return name if isinstance(name, str) and name else f"node{j}"


def _names(doc, order: list[int]) -> tuple[str, ...]:
    """Unique joint names (a repeated name gets its node number)."""
    raw = [_name(doc, j) for j in order]
    return tuple(r if raw.count(r) == 1 else f"{r}_{j}" for r, j in zip(raw, order, strict=True))


def _ancestors(j: int, parent: NDArray[np.intp]) -> list[int]:
    out = []
    while j >= 0:
        out.append(j)
        j = int(parent[j])
    return out


def _descendants(j: int, doc) -> list[int]:
    out, stack = [], list(doc.nodes[j].get("children", []))
    while stack:
        k = stack.pop()
        out.append(k)
        stack.extend(doc.nodes[k].get("children", []))
    return out


def _weighted(path: Path, doc, parent: NDArray[np.intp], joints: list[int]) -> set[int]:
    """The joints that carry the body: some skinned vertex weighted to them, or a mesh
    node hanging from them (a robot of rigid parts: RobotExpressive's feet, head and
    legs are meshes parented to their bones, only its hands skinned)."""
    out: set[int] = set()
    joint_set = set(joints)
    for i, node in enumerate(doc.nodes):
        if "mesh" not in node:
            continue
        if "skin" not in node:
            k = int(parent[i])
            while k >= 0 and k not in joint_set:
                k = int(parent[k])
            if k >= 0:
                out.add(k)
            continue
        skin = doc.skins[node["skin"]].get("joints", [])
        for prim in doc.meshes[node["mesh"]].get("primitives", []):
            attrs = prim.get("attributes", {})
            for k in range(4):
                j_acc = attrs.get(f"JOINTS_{k}")
                w_acc = attrs.get(f"WEIGHTS_{k}")
                if j_acc is None or w_acc is None:
                    break
                idx = _accessor(path, doc, j_acc).astype(np.intp)
                w = _accessor(path, doc, w_acc)
                used = np.unique(idx[w > 0])
                if used.size and used.max() >= len(skin):
                    raise _fail(path, f"mesh {node['mesh']}: a vertex weighted to joint {used[-1]}")
                out |= {skin[int(u)] for u in used}
    return out


def _pick(character: Character, animation: str | int | None) -> int:
    names = character.animations
    if not names:
        raise _fail(character.path, "no animation")
    if animation is None:
        return 0
    if isinstance(animation, int) or (isinstance(animation, str) and animation.isdigit()):
        k = int(animation)
        if 0 <= k < len(names):
            return k
    elif animation in names:
        return names.index(animation)
    raise _fail(character.path, f"no animation {animation!r}; it has: {', '.join(names)}")


def _sample(path: Path, doc, sampler, times: Array, rotation: bool) -> Array:
    """A sampler's output at ``times`` (glTF 2.0 §3.11: STEP, LINEAR, CUBICSPLINE)."""
    keys = _accessor(path, doc, sampler["input"])[:, 0]
    values = _accessor(path, doc, sampler["output"])
    kind = sampler.get("interpolation", "LINEAR")
    where = f"the sampler of accessors {sampler['input']} -> {sampler['output']}"
    if not len(keys) or not np.isfinite(keys).all() or (np.diff(keys) < 0).any():
        raise _fail(path, f"{where}: key times are not finite and increasing")
    per = 3 if kind == "CUBICSPLINE" else 1
    if values.size % (per * len(keys)) or not np.isfinite(values).all():
        raise _fail(
            path, f"{where}: {len(values)} finite values wanted for {len(keys)} {kind} keys"
        )
    if kind == "CUBICSPLINE":
        values = values.reshape(len(keys), 3, -1)  # in-tangent, value, out-tangent
        v, a, b = values[:, 1], values[:, 0], values[:, 2]
    else:
        v = values.reshape(len(keys), -1)
    if rotation:  # (x, y, z, w) -> (w, x, y, z)
        v = v[:, [3, 0, 1, 2]]
        if kind == "CUBICSPLINE":
            a, b = a[:, [3, 0, 1, 2]], b[:, [3, 0, 1, 2]]
    if len(keys) == 1:
        return np.repeat(v[:1], len(times), axis=0)
    k = np.clip(np.searchsorted(keys, times, side="right") - 1, 0, len(keys) - 2)
    dt = keys[k + 1] - keys[k]
    u = np.clip((times - keys[k]) / np.where(dt > 0, dt, 1.0), 0.0, 1.0)
    if kind == "STEP":
        out = np.where((u >= 1.0)[:, None], v[k + 1], v[k])
    elif kind == "CUBICSPLINE":
        u2, u3 = u * u, u * u * u
        h = [2 * u3 - 3 * u2 + 1, u3 - 2 * u2 + u, -2 * u3 + 3 * u2, u3 - u2]
        out = (
            h[0][:, None] * v[k]
            + (h[1] * dt)[:, None] * b[k]
            + h[2][:, None] * v[k + 1]
            + (h[3] * dt)[:, None] * a[k + 1]
        )
    elif rotation:
        if not (np.linalg.norm(v, axis=1) > 0).all():
            raise _fail(path, f"{where}: a rotation key of zeros")
        out = quat.slerp(quat.normalize(v[k]), quat.normalize(v[k + 1]), u)
    else:
        out = v[k] + u[:, None] * (v[k + 1] - v[k])
    if rotation and not (np.linalg.norm(out, axis=1) > 0).all():
        raise _fail(path, f"{where}: a rotation of zeros")
    return quat.normalize(out) if rotation else out


def character_motion(
    character: Character, animation: str | int | None = None, *, fps: float | None = None
) -> Motion:
    """One of the character's animations (default: the first) on its skeleton (module
    docstring), sampled at ``fps`` (default: its keys' rate where even, else 30)."""
    if character._gltf is None:
        raise ValueError("a Character from read_character")
    doc: _Doc = character._gltf[0]
    parent: NDArray[np.intp] = character._gltf[1]
    local: list[tuple[Array, Array, Array]] = character._gltf[2]
    path = character.path
    anim = doc.animations[_pick(character, animation)]
    channels = anim.get("channels", [])
    samplers = anim.get("samplers", [])
    inputs = {
        c["sampler"]: _accessor(path, doc, samplers[c["sampler"]]["input"])[:, 0] for c in channels
    }
    for s, t in inputs.items():
        if not np.isfinite(t).all():
            raise _fail(path, f"animation {anim.get('name')!r}, sampler {s}: key times not finite")
    end = max((float(t.max()) for t in inputs.values() if len(t)), default=0.0)
    start = min((float(t.min()) for t in inputs.values() if len(t)), default=0.0)
    if fps is None:
        fps = 30.0
        steps = np.concatenate([np.diff(t) for t in inputs.values() if len(t) > 2] or [np.zeros(0)])
        if steps.size and steps.min() > 0 and np.ptp(steps) <= 1e-3 * steps.mean():
            fps = float(np.round(1.0 / steps.mean(), 3))
    # (keys are float32 seconds: the last one may be short of its frame by 1e-4 of one)
    count = max(int(np.floor((end - start) * fps + 1e-3)) + 1, 1)
    times = start + np.arange(count) / fps
    # every node's local rotation and translation over the frames (rest where undriven)
    n = len(doc.nodes)
    rot = np.tile(np.array([loc[1] for loc in local]), (count, 1, 1))  # (F, N, 4)
    pos = np.tile(np.array([loc[0] for loc in local]), (count, 1, 1))
    scale = np.tile(np.array([float(np.mean(loc[2])) for loc in local]), (count, 1))  # (F, N)
    uneven = False
    for c in channels:
        node, what = c.get("target", {}).get("node"), c.get("target", {}).get("path")
        if node is None or not 0 <= node < n:
            continue
        sampler = samplers[c["sampler"]]
        if what == "rotation":
            rot[:, node] = _sample(path, doc, sampler, times, rotation=True)
        elif what == "translation":
            pos[:, node] = _sample(path, doc, sampler, times, rotation=False)
        elif what == "scale":  # (uniform: a node's size; uneven is not carried)
            s = _sample(path, doc, sampler, times, False)
            uneven = uneven or bool((np.ptp(s, axis=1) > 1e-4 * np.abs(s).max(axis=1)).any())
            scale[:, node] = s.mean(axis=1)
    if uneven:
        warnings.warn(
            f"{path}: animation {anim.get('name')!r} scales nodes unevenly; read with each "
            "node's mean scale",
            RetargetWarning,
            stacklevel=2,
        )
    # world rotations, scales and positions of the skeleton's nodes, from the roots down
    order = [int(j) for j in character.nodes]
    needed = sorted(
        {a for j in order for a in _ancestors(j, parent)}, key=lambda a: len(_ancestors(a, parent))
    )
    w_rot: dict[int, Array] = {}
    w_pos: dict[int, Array] = {}
    w_size: dict[int, Array] = {}
    for k in needed:
        p = int(parent[k])
        if p >= 0:
            w_pos[k] = w_pos[p] + w_size[p][:, None] * quat.rotate(w_rot[p], pos[:, k])
            w_rot[k] = quat.multiply(w_rot[p], rot[:, k])
            w_size[k] = w_size[p] * scale[:, k]
        else:
            w_pos[k], w_rot[k], w_size[k] = pos[:, k] * 1.0, rot[:, k], scale[:, k]
    # baked: W'_j = W_j ⊗ G_j⁻¹, local r_j = W'_p⁻¹ ⊗ W'_j
    baked = np.stack(
        [
            quat.multiply(w_rot[j], quat.conjugate(character.rest_world[k]))
            for k, j in enumerate(order)
        ],
        axis=1,
    )
    sk = character.skeleton
    local_rot = baked.copy()
    for k in range(1, sk.num_joints):
        local_rot[:, k] = quat.multiply(quat.conjugate(baked[:, sk.parents[k]]), baked[:, k])
    world_pos = np.stack([w_pos[j] for j in order], axis=1)  # (F, J, 3)
    offsets = np.zeros_like(world_pos)
    for k in range(1, sk.num_joints):
        p = sk.parents[k]
        offsets[:, k] = quat.rotate(quat.conjugate(baked[:, p]), world_pos[:, k] - world_pos[:, p])
    moving = np.abs(offsets[:, 1:] - sk.offsets[None, 1:]).max(initial=0.0) > 1e-6 * max(
        float(np.abs(sk.offsets).max(initial=0.0)), 1e-12
    )
    translations = None
    if moving:
        offsets[:, 0] = sk.offsets[0]
        translations = offsets
    return Motion(sk, world_pos[:, 0], quat.canonical(local_rot), fps, translations)


def gltf_rotations(character: Character, rotations: Array) -> Array:
    """The nodes' local rotations (F, J, 4), w first, of this library's local rotations
    (F, J, 4) on the character's skeleton: ``q_j = G_p⁻¹ ⊗ r_j ⊗ G_p ⊗ Q_j`` (module
    docstring), the root's parent node's rest ``G`` for the root; a detached joint's
    in its own parent node's frame, ``q_j = (W_P ⊗ G_P)⁻¹ ⊗ W_j ⊗ G_j`` (``W``: the
    joints' world rotations, ``P`` its node's parent)."""
    g = character.rest_world
    sk = character.skeleton
    parent_rest = np.array([g[p] if p >= 0 else character.parent_rest for p in sk.parents])
    rest_local = quat.multiply(quat.conjugate(parent_rest), g)  # Q_j = G_p⁻¹ G_j
    q = quat.multiply(
        quat.multiply(quat.conjugate(parent_rest), rotations),
        quat.multiply(parent_rest, rest_local),
    )
    moved = _moved(character)
    if moved.size:
        world = _world_rotations(sk, rotations)
        up = character.node_parents[moved]  # type: ignore[index]
        q[..., moved, :] = quat.multiply(
            quat.conjugate(quat.multiply(world[..., up, :], g[up])),
            quat.multiply(world[..., moved, :], g[moved]),
        )
    return q


def _moved(character: Character) -> NDArray[np.intp]:
    """The detached joints: the skeleton hangs them elsewhere than the file."""
    if character.node_parents is None:
        return np.zeros(0, np.intp)
    return np.flatnonzero(character.node_parents != character.skeleton.parents)


def _world_rotations(sk: Skeleton, rotations: Array) -> Array:
    """World rotations (..., J, 4) of local ones (..., J, 4)."""
    world = np.array(rotations, dtype=np.float64, copy=True)
    for k in range(1, sk.num_joints):
        world[..., k, :] = quat.multiply(world[..., sk.parents[k], :], world[..., k, :])
    return world


def _pad(data: bytes, fill: bytes = b"\x00") -> bytes:
    return data + fill * (-len(data) % 4)


def write_character(
    path: str | os.PathLike,
    character: Character,
    motion: Motion,
    *,
    name: str = "retargeted",
    replace: bool = False,
    also: Sequence[tuple[str, Motion]] = (),
    inputs: tuple[str | os.PathLike, ...] = (),
) -> Path:
    """The character's file as a GLB with ``motion`` (on its skeleton, metres, Y up)
    added as the animation ``name``, and each ``(name, motion)`` of ``also`` after it:
    every mesh, skin, material, texture, morph target and (unless ``replace``)
    animation of the file kept as it is. Each skeleton joint
    gets a rotation channel (:func:`gltf_rotations`), the root and a joint with
    per-frame offsets a translation channel, keys at the motion's frames, LINEAR; the
    other joints' translations and every joint's scale are keyed at rest. The buffers
    become the GLB's one binary chunk (a ``.bin`` and images beside a ``.gltf`` are
    taken in). Written atomically, never over ``inputs``."""
    from ..core.kinematics import forward_kinematics
    from .files import atomic_write

    if any(m.skeleton.names != character.skeleton.names for _, m in ((name, motion), *also)):
        raise ValueError("the motions must be on the character's skeleton")
    assert character._gltf is not None
    doc: _Doc = character._gltf[0]  # (the document read with the character: parsed once)
    js = json.loads(json.dumps(doc.json))  # (a copy to change)
    # one binary chunk: every buffer, then external images, then the new animation
    blob = bytearray()
    starts = []
    for data in doc.buffers:
        starts.append(len(blob))
        blob += _pad(data)
    for view in js.get("bufferViews", []):
        view["byteOffset"] = view.get("byteOffset", 0) + starts[view["buffer"]]
        view["buffer"] = 0

    def add_view(data: bytes, target: int | None = None) -> int:
        nonlocal blob
        views = js.setdefault("bufferViews", [])
        view = {"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)}
        if target is not None:
            view["target"] = target
        views.append(view)
        blob += _pad(data)
        return len(views) - 1

    _decompressed(character.path, doc, js, add_view)
    for image in js.get("images", []):
        uri = image.get("uri")
        if uri is not None and not uri.startswith("data:"):
            file = character.path.parent / unquote(uri)
            if not file.is_file():
                raise _fail(character.path, f"image {uri} not found beside it")
            data = file.read_bytes()
            image["bufferView"] = add_view(data)
            image["mimeType"] = image.get("mimeType") or _mime(data)
            del image["uri"]

    def add_accessor(values: Array, kind: str, minmax: bool = False) -> int:
        data = np.ascontiguousarray(values, dtype=np.float32)
        acc = {
            "bufferView": add_view(data.tobytes()),
            "componentType": 5126,
            "count": int(data.shape[0]),
            "type": kind,
        }
        if minmax:
            acc["min"] = data.min(axis=0).reshape(-1).tolist()
            acc["max"] = data.max(axis=0).reshape(-1).tolist()
        accessors = js.setdefault("accessors", [])
        accessors.append(acc)
        return len(accessors) - 1

    assert character._gltf is not None
    parent, local, w_scale = character._gltf[1], character._gltf[2], character._gltf[3]
    sk = character.skeleton
    g = character.rest_world

    def animation(name: str, motion: Motion) -> dict:
        f = motion.num_frames
        times = add_accessor(np.arange(f, dtype=np.float64)[:, None] / motion.fps, "SCALAR", True)
        q = gltf_rotations(character, motion.rotations)
        q = quat.unroll(q, axis=0)  # (no sign flips between keys: slerp takes the short arc)
        channels, samplers = [], []

        def channel(
            node: int, what: str, values: Array, kind: str, keys: int | None = None
        ) -> None:
            out = add_accessor(values, kind)
            samplers.append({"input": times if keys is None else keys, "output": out})
            channels.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": what}})

        for k, node in enumerate(character.nodes):
            channel(int(node), "rotation", q[:, k][:, [1, 2, 3, 0]], "VEC4")
        # the root's translation: its world position in its parent node's frame (rest)
        root = int(character.nodes[0])
        up = int(parent[root])
        if up >= 0:
            above_pos, above_rot, above_scale = _rest_world(character, up)
            t = (
                quat.rotate(quat.conjugate(above_rot), motion.root_position - above_pos)
                / above_scale
            )
        else:
            t = motion.root_position
        channel(root, "translation", t, "VEC3")
        # every other joint's translation and every joint's scale keyed too, at rest where
        # the motion does not change them (two keys): a player switching from another of
        # the file's animations leaves what a clip does not key as that one left it
        # (Blender: the KayKit knight's hips 1.4 cm low)
        ends = add_accessor(np.array([[0.0], [(f - 1) / motion.fps]]), "SCALAR", True)
        moved = set(_moved(character).tolist())
        if moved:  # a detached joint's place in its own parent node's frame
            x, w = forward_kinematics(
                sk, motion.root_position, motion.rotations, motion.translations
            )
        for k in range(sk.num_joints):
            node = int(character.nodes[k])
            if k in moved:
                p = int(character.node_parents[k])  # type: ignore[index]
                t = (
                    quat.rotate(quat.conjugate(quat.multiply(w[:, p], g[p])), x[:, k] - x[:, p])
                    / w_scale[int(parent[node])]
                )
            elif k > 0:
                t = np.tile(local[node][0], (f, 1))
                if motion.translations is not None:  # bones whose offsets change
                    world_vec = motion.translations[:, k]  # in the baked parent frame
                    p = int(sk.parents[k])
                    t = quat.rotate(quat.conjugate(g[p]), world_vec) / w_scale[int(parent[node])]
            if k > 0:
                if np.abs(t - local[node][0]).max() > 1e-9:
                    channel(node, "translation", t, "VEC3")
                else:
                    channel(node, "translation", t[[0, -1]], "VEC3", ends)
            channel(node, "scale", np.tile(local[node][2], (2, 1)), "VEC3", ends)

        return {"name": name, "channels": channels, "samplers": samplers}

    for node in {int(j) for j in character.nodes}:  # keyed nodes: TRS (§5.25: no matrix)
        if "matrix" in js["nodes"][node]:
            t, r, s = local[node]
            del js["nodes"][node]["matrix"]
            js["nodes"][node].update(
                translation=t.tolist(), rotation=r[[1, 2, 3, 0]].tolist(), scale=s.tolist()
            )
    _normalised_weights(character.path, doc, js, add_accessor)
    _one_root(js)
    if not replace:
        js["animations"] = _playable(character.path, doc, js.get("animations", []))
    _finite_bounds(character.path, doc, js)
    anims = [] if replace else js.get("animations", [])
    anims += [animation(n, m) for n, m in ((name, motion), *also)]
    js["animations"] = anims
    return atomic_write(path, _glb(js, bytes(blob)), inputs=(character.path, *inputs))


def _decompressed(path: Path, doc: _Doc, js: dict, add_view) -> None:
    """Every ``EXT_meshopt_compression`` view of ``js`` (a copy of ``doc``'s document being
    written) rewritten as its decoded bytes in a view of its own (``add_view``), the
    extension dropped (with a warning naming it): what every reader loads, and no
    compressed stream pointing into a buffer that the one binary chunk replaced."""
    views = js.get("bufferViews", [])
    count = 0
    for k, view in enumerate(views):
        ext = (view.get("extensions") or {}).get("EXT_meshopt_compression")
        if ext is None:
            continue
        data, _, stride = doc.view(path, k)
        new = views[add_view(data)]
        views.pop()
        view.update(buffer=0, byteOffset=new["byteOffset"], byteLength=new["byteLength"])
        if view.get("byteStride") is not None or view.get("target") == 34962:
            view["byteStride"] = stride
        del view["extensions"]["EXT_meshopt_compression"]
        if not view["extensions"]:
            del view["extensions"]
        count += 1
    if count:
        for key in ("extensionsUsed", "extensionsRequired"):
            if "EXT_meshopt_compression" in js.get(key, []):
                js[key].remove("EXT_meshopt_compression")
                if not js[key]:
                    del js[key]
        warnings.warn(
            f"{path}: EXT_meshopt_compression: {count} buffer views written decompressed",
            RetargetWarning,
            stacklevel=3,
        )


def _normalised_weights(path: Path, doc: _Doc, js: dict, add_accessor) -> None:
    """Skin weights whose sets do not add up to 1 on a vertex (glTF 2.0 §3.7.3.1), which
    readers accept and the Khronos validator does not, written normalised (float) in
    accessors of their own (``add_accessor(values, kind)``), with a warning."""
    fixed = 0
    for mesh in js.get("meshes", []):
        for prim in mesh.get("primitives", []):
            attrs = prim.get("attributes", {})
            keys = [f"WEIGHTS_{k}" for k in range(8) if f"WEIGHTS_{k}" in attrs]
            if not keys:
                continue
            sets = [_accessor(path, doc, attrs[key]) for key in keys]
            if len({len(w) for w in sets}) != 1:
                continue
            total = np.sum([w.sum(axis=1) for w in sets], axis=0)
            if np.all(np.abs(total - 1.0) <= 2e-3) or not np.all(total > 0):
                continue
            for key, w in zip(keys, sets, strict=True):
                attrs[key] = add_accessor(w / total[:, None], "VEC4")
            fixed += 1
    if fixed:
        warnings.warn(
            f"{path}: skin weights not adding up to 1 in {fixed} primitives: written normalised",
            RetargetWarning,
            stacklevel=3,
        )


def _playable(path: Path, doc: _Doc, animations: list[dict]) -> list[dict]:
    """The file's animations that a player can play (every sampler's keys finite and in
    order, as many finite values as keys: :func:`_sample`'s checks); the others dropped,
    with a warning naming them, not written on into a file no reader takes."""
    keep, dropped = [], []
    for a, anim in enumerate(animations):
        turns = {
            c.get("sampler")
            for c in anim.get("channels", [])
            if c["target"].get("path") == "rotation"
        }
        try:
            for s, sampler in enumerate(anim.get("samplers", [])):
                _sample(path, doc, sampler, np.zeros(1), rotation=s in turns)
            keep.append(anim)
        except FormatError:
            dropped.append(anim.get("name") or f"animation{a}")
    if dropped:
        warnings.warn(
            f"{path}: animations not written, their keys broken: {', '.join(map(str, dropped))}",
            RetargetWarning,
            stacklevel=3,
        )
    return keep


def _finite_bounds(path: Path, doc: _Doc, js: dict) -> None:
    """Accessors' ``min``/``max`` of finite numbers: recomputed from the data where they
    are not (and it is), else left out (an accessor no animation or position reads)."""
    for k, acc in enumerate(js.get("accessors", [])):
        if k >= len(doc.json.get("accessors", [])):
            break  # (the accessors written here have theirs)
        bounds = [acc.get("min"), acc.get("max")]
        if all(b is None or np.isfinite(np.asarray(b, dtype=np.float64)).all() for b in bounds):
            continue
        try:
            data = _accessor(path, doc, k)
        except FormatError:
            data = np.full((1, 1), np.nan)
        acc.pop("min", None)
        acc.pop("max", None)
        if data.size and np.isfinite(data).all():
            acc["min"], acc["max"] = data.min(axis=0).tolist(), data.max(axis=0).tolist()


def _one_root(js: dict) -> None:
    """The skins' joints under one root node (the Khronos validator's SKIN_NO_COMMON_ROOT):
    where they hang from several scene roots, a node with no transform is put above
    those, in their place in the scene (and made the skin's ``skeleton`` if it names
    one); no node moves."""
    nodes = js.get("nodes", [])
    parent = {c: i for i, node in enumerate(nodes) for c in node.get("children", [])}

    def top(j: int) -> int:
        seen = set()
        while j in parent and j not in seen:
            seen.add(j)
            j = parent[j]
        return j

    for skin in js.get("skins", []):
        tops = sorted({top(j) for j in skin.get("joints", [])})
        if len(tops) < 2:
            continue
        nodes.append({"name": "retarget_root", "children": tops})
        root = len(nodes) - 1
        if "skeleton" in skin:  # (the skin's skeleton: the joints' common root)
            skin["skeleton"] = root
        for scene in js.get("scenes", []):
            listed = scene.get("nodes", [])
            if any(t in listed for t in tops):
                at = min(listed.index(t) for t in tops if t in listed)
                rest = [n for n in listed if n not in tops]
                scene["nodes"] = [*rest[:at], root, *rest[at:]]
        parent.update({t: root for t in tops})


def _glb(js: dict, body: bytes) -> bytes:
    """A GLB of the document ``js`` and its one buffer's bytes (glTF 2.0 §4.4)."""
    js["buffers"] = [{"byteLength": len(body)}]
    js.setdefault("asset", {"version": "2.0"})["generator"] = "retarget"
    try:
        text = _pad(json.dumps(js, separators=(",", ":"), allow_nan=False).encode("utf-8"), b" ")
    except ValueError:  # (a number that is not finite left in the file's own JSON)
        raise RetargetError(
            "the character's file has numbers that are not finite (NaN or infinity) "
            "outside what is read; a GLB cannot carry them"
        ) from None
    body = _pad(body)
    return (
        struct.pack("<III", 0x46546C67, 2, 12 + 8 + len(text) + 8 + len(body))
        + struct.pack("<II", len(text), 0x4E4F534A)
        + text
        + struct.pack("<II", len(body), 0x004E4942)
        + body
    )


#: A mannequin's limb radius, a share of its segment's length, and its bounds (shares of
#: the height); the torso's and the head's radius (shares of the height).
_LIMB, _THIN, _THICK, _TORSO, _HEAD = 0.16, 0.018, 0.05, 0.075, 0.055


def _capsule(
    a: Array, b: Array, radius: float, sides: int = 12, cap: int = 4
) -> tuple[Array, Array, NDArray[np.intp]]:
    """A capsule from ``a`` to ``b`` (3,) of ``radius``: its vertices (V, 3), normals
    (V, 3) and triangles (T, 3): rings of ``sides`` about the axis, ``cap`` rings on
    each hemisphere."""
    axis = b - a
    length = float(np.linalg.norm(axis))
    w = axis / length if length > 0 else np.array([0.0, 1.0, 0.0])
    u = np.cross(w, [1.0, 0.0, 0.0] if abs(w[0]) < 0.9 else [0.0, 0.0, 1.0])
    u /= np.linalg.norm(u)
    v = np.cross(w, u)
    # polar angles from the bottom pole to the top one, and which end each ring is at
    polar = np.concatenate(
        [np.linspace(-np.pi / 2, 0, cap + 1), np.linspace(0, np.pi / 2, cap + 1)]
    )
    ends = np.repeat([0.0, 1.0], cap + 1)
    turn = np.linspace(0.0, 2 * np.pi, sides, endpoint=False)
    ring = np.cos(turn)[:, None] * u + np.sin(turn)[:, None] * v  # (S, 3)
    normals = np.cos(polar)[:, None, None] * ring + np.sin(polar)[:, None, None] * w  # (R, S, 3)
    centres = a + ends[:, None] * axis  # (R, 3)
    points = centres[:, None, :] + radius * normals
    rings = len(polar)
    tris = []
    for r in range(rings - 1):
        for k in range(sides):
            p, q = r * sides + k, r * sides + (k + 1) % sides
            tris += [(p, q, p + sides), (q, q + sides, p + sides)]
    return points.reshape(-1, 3), normals.reshape(-1, 3), np.asarray(tris, np.intp)


def mannequin(
    skeleton: Skeleton, *, colour: tuple[float, float, float] = (0.55, 0.62, 0.72)
) -> bytes:
    """A rigged glTF character of ``skeleton`` (a GLB's bytes): one joint node a joint,
    standing (its rest pose turned so that the hips-to-head direction is +Y), in metres,
    and one skinned mesh, a capsule a bone (from each joint to each of its children and
    end sites, the torso's and the head's thicker) weighted wholly to the bone's joint.
    What the demo retargets onto where no artist's character is at hand; the library
    reads it back as any glTF character (:func:`read_character`)."""
    from ..humanoid.roles import find_roles, height
    from ..humanoid.world import metres_per_unit

    roles = find_roles(skeleton)
    scale = metres_per_unit(skeleton.unit or "cm")
    tall = height(skeleton, roles) * scale
    pos, _ = rest_pose(skeleton)
    turn = quat.quat_between(pos[roles["head"]] - pos[roles["hips"]], np.array([0.0, 1.0, 0.0]))
    world = quat.rotate(turn, pos * scale)
    world[:, 1] -= world.min(axis=0)[1]  # (its lowest point on the floor)
    torso = {int(j) for j in skeleton.chain(roles["head"])} - {int(roles["head"])}
    for side in ("left", "right"):  # (the hip and shoulder bones of a torso joint: its own)
        torso -= {
            j for j in range(skeleton.num_joints) if roles.get(f"{side}_hip") in skeleton.chain(j)
        }
    vertices: list[Array] = []
    normals: list[Array] = []
    triangles: list[NDArray[np.intp]] = []
    joints: list[NDArray[np.intp]] = []
    base = 0
    bones = [
        (int(skeleton.point_parents[p]), world[p])
        for p in range(1, skeleton.num_points)
        if np.linalg.norm(world[p] - world[skeleton.point_parents[p]]) > 1e-6 * tall
    ]
    ends = {j for j, _ in bones}
    for j in range(1, skeleton.num_joints):  # a leaf joint (no child, no end site away from
        if j not in ends:  # it): a bone on along its parent's, half as long (a head: its own)
            up = world[j] - world[int(skeleton.parents[j])]
            reach = 2.2 * _HEAD * tall if j == roles["head"] else 0.5 * float(np.linalg.norm(up))
            bones.append((j, world[j] + reach * up / max(float(np.linalg.norm(up)), 1e-12)))
    for j, end in bones:
        length = float(np.linalg.norm(end - world[j]))
        if j == roles["head"]:
            radius = _HEAD * tall
        elif j in torso:
            radius = _TORSO * tall
        else:
            radius = float(np.clip(_LIMB * length, _THIN * tall, _THICK * tall))
        v, n, t = _capsule(world[j], end, radius)
        triangles.append(t + base)
        base += len(v)
        vertices.append(v)
        normals.append(n)
        joints.append(np.full(len(v), j, dtype=np.intp))
    blob = bytearray()
    js: dict = {"asset": {"version": "2.0"}, "bufferViews": [], "accessors": []}

    def view(data: bytes, target: int | None = None) -> int:
        js["bufferViews"].append(
            {"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)}
            | ({"target": target} if target else {})
        )
        blob.extend(_pad(data))
        return len(js["bufferViews"]) - 1

    def accessor(values: ArrayLike, kind: str, component: int, target: int | None = None) -> int:
        dtype = {5126: np.float32, 5123: np.uint16, 5125: np.uint32}[component]
        data = np.ascontiguousarray(values, dtype=dtype)
        acc: dict[str, Any] = {"bufferView": view(data.tobytes(), target)}
        acc |= {"componentType": component, "count": len(data), "type": kind}
        if kind == "VEC3" and component == 5126:
            acc |= {"min": data.min(axis=0).tolist(), "max": data.max(axis=0).tolist()}
        js["accessors"].append(acc)
        return len(js["accessors"]) - 1

    n_j = skeleton.num_joints
    offsets = np.diff(
        np.concatenate([[np.zeros(3)], world[:n_j]]), axis=0
    )  # (the root's: its place)
    offsets[1:] = world[1:n_j] - world[skeleton.parents[1:]]
    nodes = [
        {"name": name, "translation": offsets[j].tolist()}
        | (
            {"children": kids}
            if (kids := [int(c) for c in np.flatnonzero(skeleton.parents == j)])
            else {}
        )
        for j, name in enumerate(skeleton.names)
    ]
    joint_of = np.concatenate(joints)
    weights = np.zeros((len(joint_of), 4))
    weights[:, 0] = 1.0
    attributes = {
        "POSITION": accessor(np.concatenate(vertices), "VEC3", 5126, 34962),
        "NORMAL": accessor(np.concatenate(normals), "VEC3", 5126, 34962),
        "JOINTS_0": accessor(
            np.column_stack([joint_of, np.zeros((len(joint_of), 3))]), "VEC4", 5123, 34962
        ),
        "WEIGHTS_0": accessor(weights, "VEC4", 5126, 34962),
    }
    indices = accessor(np.concatenate(triangles).reshape(-1), "SCALAR", 5125, 34963)
    binds = np.tile(np.eye(4), (n_j, 1, 1))
    binds[:, :3, 3] = -world[:n_j]  # (the inverse of each joint's rest: a translation)
    js["meshes"] = [
        {
            "name": "mannequin",
            "primitives": [{"attributes": attributes, "indices": indices, "material": 0}],
        }
    ]
    js["materials"] = [
        {
            "name": "mannequin",
            "pbrMetallicRoughness": {
                "baseColorFactor": [*colour, 1.0],
                "metallicFactor": 0.0,
                "roughnessFactor": 0.8,
            },
        }
    ]
    js["skins"] = [
        {
            "joints": list(range(n_j)),
            "skeleton": 0,
            "inverseBindMatrices": accessor(binds.transpose(0, 2, 1).reshape(-1, 16), "MAT4", 5126),
        }
    ]
    nodes.append({"name": "mannequin", "mesh": 0, "skin": 0})
    js["nodes"] = nodes
    js["scenes"] = [{"nodes": [0, n_j]}]
    js["scene"] = 0
    return _glb(js, bytes(blob))


def _rest_world(character: Character, node: int) -> tuple[Array, Array, float]:
    """A node's rest world position (3,), rotation (4,) and uniform scale."""
    assert character._gltf is not None
    parent, local = character._gltf[1], character._gltf[2]
    chain = _ancestors(node, parent)[::-1]
    pos, rot, scale = np.zeros(3), quat.identity(), 1.0
    for k in chain:
        t, r, s = local[k]
        pos = pos + scale * quat.rotate(rot, t)
        rot = quat.multiply(rot, r)
        scale *= float(np.mean(s))
    return pos, rot, scale


def _matrix(t: Array, r: Array, s: Array) -> Array:
    m = np.eye(4)
    m[:3, :3] = quat.matrix_from_quat(r) * np.asarray(s)[None, :]
    m[:3, 3] = t
    return m


@dataclass(frozen=True)
class SkinMesh:
    """A character's surface as triangles skinned to its skeleton (:func:`skin_mesh`).

    Attributes
    ----------
    vertices : (V, 3)
        At the rest pose, world, metres.
    joints, weights : (V, 4) int, (V, 4)
        The skeleton joints each vertex follows and how much (adding up to 1; a vertex
        of a rigid mesh follows the joint it hangs from alone; -1 with weight 0: none).
    triangles : (T, 3) int
    rigid : (V,) bool
        The vertex is a rigid mesh's, hung from a bone (a prop, armour, a robot's part).
    """

    vertices: Array
    joints: NDArray[np.intp]
    weights: Array
    triangles: NDArray[np.intp]
    rigid: NDArray[np.bool_] | None = None

    def posed(self, positions: Array, rotations: Array, rest: Array) -> Array:
        """The vertices (F, V, 3) at joint world positions (F, J, 3) and rotations (F, J, 4)
        of the baked skeleton (rest rotations identity), ``rest`` its rest positions (J, 3):
        linear blend skinning, ``Σ w_k (p_k + R_k (v − p̄_k))``."""
        j = np.maximum(self.joints, 0)
        out = np.zeros((positions.shape[0], len(self.vertices), 3))
        for k in range(self.joints.shape[1]):
            w = np.where(self.joints[:, k] >= 0, self.weights[:, k], 0.0)
            if not w.any():
                continue
            arm = self.vertices - rest[j[:, k]]
            moved = positions[:, j[:, k]] + quat.rotate(rotations[:, j[:, k]], arm)
            out += w[None, :, None] * moved
        return out


def skin_mesh(character: Character) -> SkinMesh:
    """Every triangle of the character's meshes (skinned, and rigid ones hung from a
    joint), its vertices at the rest pose following the skeleton's joints (a control
    bone's vertices its joint above), as :func:`skin_points` places them."""
    verts: list[Array] = []
    joints: list[NDArray[np.intp]] = []
    weights: list[Array] = []
    tris: list[NDArray[np.intp]] = []
    rigid: list[NDArray[np.bool_]] = []
    for out, idx, w, prim_tris in _skinned(character, rigid=True, triangles=True):
        tris.append(prim_tris + int(sum(len(v) for v in verts)))
        verts.append(out)
        joints.append(idx)
        weights.append(w)
        rigid.append(np.full(len(out), bool((idx[:, 1:] < 0).all() and (w[:, 0] == 1).all())))
    if not verts:
        raise _fail(character.path, "no mesh")
    return SkinMesh(
        np.concatenate(verts),
        np.concatenate(joints).astype(np.intp),
        np.concatenate(weights),
        np.concatenate(tris).astype(np.intp),
        np.concatenate(rigid),
    )


def _skinned(character: Character, *, rigid: bool, triangles: bool = False):
    """Per mesh primitive: its vertices at rest (V, 3), the skeleton joints (V, 4) and
    weights (V, 4) they follow, and (``triangles``) its triangles (T, 3) (none for a
    primitive that is not of triangles)."""
    assert character._gltf is not None
    doc: _Doc = character._gltf[0]
    parent = character._gltf[1]
    local = character._gltf[2]
    path = character.path
    n = len(doc.nodes)
    world: list[Array | None] = [None] * n

    def matrix(i: int) -> Array:
        if world[i] is None:
            m = _matrix(*local[i])
            world[i] = m if parent[i] < 0 else matrix(int(parent[i])) @ m
        return world[i]  # type: ignore[return-value]

    index = {int(j): k for k, j in enumerate(character.nodes)}

    def owner(node: int) -> int:  # the skeleton joint a node's vertices go to
        while node >= 0 and node not in index:
            node = int(parent[node])
        return index.get(node, -1)

    for i, node in enumerate(doc.nodes):
        if "mesh" not in node:
            continue
        for prim in doc.meshes[node["mesh"]].get("primitives", []):
            attrs = prim.get("attributes", {})
            if "POSITION" not in attrs:
                continue
            xyz = _accessor(path, doc, attrs["POSITION"])
            v = np.c_[xyz, np.ones(len(xyz))]
            if "skin" in node and "JOINTS_0" in attrs and "WEIGHTS_0" in attrs:
                skin = doc.skins[node["skin"]]
                joints = skin.get("joints", [])
                ibm = (
                    _accessor(path, doc, skin["inverseBindMatrices"]).reshape(-1, 4, 4)
                    if "inverseBindMatrices" in skin
                    else np.tile(np.eye(4), (len(joints), 1, 1))
                ).transpose(0, 2, 1)  # (column-major)
                if len(ibm) < len(joints):
                    raise _fail(path, f"skin {node['skin']}: fewer bind matrices than joints")
                mats = np.array([matrix(j) for j in joints]) @ ibm[: len(joints)]  # (J, 4, 4)
                idx = _accessor(path, doc, attrs["JOINTS_0"]).astype(np.intp)
                w = _accessor(path, doc, attrs["WEIGHTS_0"])
                if idx.shape != w.shape or len(idx) != len(v) or (idx >= len(joints)).any():
                    raise _fail(path, f"mesh {node['mesh']}: joints and weights do not fit")
                w = w / np.maximum(w.sum(axis=1, keepdims=True), 1e-12)
                out = np.einsum("vk,vkab,vb->va", w, mats[idx], v)[:, :3]
                mapped = np.array([owner(int(j)) for j in joints], np.intp)[idx]
            elif rigid and "skin" not in node:
                out = (v @ matrix(i).T)[:, :3]
                mapped = np.full((len(out), 4), -1, np.intp)
                mapped[:, 0] = owner(i)
                w = np.zeros((len(out), 4))
                w[:, 0] = 1.0
            else:
                continue
            tris = np.zeros((0, 3), np.intp)
            if triangles and prim.get("mode", 4) == 4:
                order = (
                    _accessor(path, doc, prim["indices"])[:, 0].astype(np.intp)
                    if "indices" in prim
                    else np.arange(len(out))
                )
                tris = order[: len(order) // 3 * 3].reshape(-1, 3)
                if len(tris) and (tris.max() >= len(out) or tris.min() < 0):
                    raise _fail(path, f"mesh {node['mesh']}: an index past its vertices")
            yield out, mapped, w, tris


def skin_points(character: Character, *, rigid: bool = True) -> dict[int, Array]:
    """The body's surface by joint: every skinned vertex at the rest pose, given to
    the skeleton joint it is weighted to most (a control bone's to the joint above
    it), and (``rigid``) every vertex of a mesh hanging from a joint (a robot's
    parts, a helmet, a sword) to that joint; each (V, 3) in
    the joint's (baked, world-aligned) frame, metres. Linear blend skinning of the
    rest nodes (their world matrices by the skin's inverse bind matrices), as glTF
    2.0 §3.7.3 defines it."""
    rest, _ = rest_pose(character.skeleton)
    found: dict[int, list[Array]] = {}
    for out, joints, w, _ in _skinned(character, rigid=rigid):
        best = joints[np.arange(len(joints)), w.argmax(axis=1)]
        for k in np.unique(best[best >= 0]):
            found.setdefault(int(k), []).append(out[best == k] - rest[int(k)])
    return {k: np.concatenate(v) for k, v in found.items()}
