"""``EXT_meshopt_compression``: a glTF buffer view's bytes from its compressed stream.

A view carrying the extension keeps its data compressed in another buffer (the
extension's ``buffer``, ``byteOffset``, ``byteLength``), ``count`` elements of
``byteStride`` bytes in one of three modes, ``ATTRIBUTES`` (vertex attributes and
animation keys), ``TRIANGLES`` (triangle indices) or ``INDICES`` (other index
sequences), and, for attributes, a ``filter`` applied after decoding
(``OCTAHEDRAL`` normals and tangents, ``QUATERNION`` rotations, ``EXPONENTIAL``
floats). The decoding is meshoptimizer's own (Arseny Kapoulkine's C library, the
reference the extension was written from, through the ``meshoptimizer`` package):
the format is a bit stream of byte-group codecs whose exact rules live in that code,
and a decoder of our own would be a second copy to keep in step.

A stream the decoder refuses (cut short, not of the mode declared) raises
:class:`~retarget.core.errors.FormatError` naming the view.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from ..core.errors import FormatError

__all__ = ["FILTERS", "MODES", "decode_view"]

MODES = ("ATTRIBUTES", "TRIANGLES", "INDICES")
FILTERS = ("NONE", "OCTAHEDRAL", "QUATERNION", "EXPONENTIAL")


def _library():
    """meshoptimizer's C library, its decoders' argument types declared."""
    from meshoptimizer._loader import lib

    u8 = ctypes.POINTER(ctypes.c_ubyte)
    size = ctypes.c_size_t
    for name in ("meshopt_decodeVertexBuffer", "meshopt_decodeIndexBuffer"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, size, size, u8, size]
        fn.restype = ctypes.c_int
    lib.meshopt_decodeIndexSequence.argtypes = [ctypes.c_void_p, size, size, u8, size]
    lib.meshopt_decodeIndexSequence.restype = ctypes.c_int
    for name in ("meshopt_decodeFilterOct", "meshopt_decodeFilterQuat", "meshopt_decodeFilterExp"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, size, size]
        fn.restype = None
    return lib


def decode_view(path: Path, index: int, ext: dict, source: bytes) -> bytes:
    """The bytes (``count × byteStride``) of buffer view ``index`` of the file ``path``,
    whose ``EXT_meshopt_compression`` object is ``ext`` and whose compressed buffer's
    bytes are ``source``."""
    where = f"buffer view {index} (EXT_meshopt_compression)"
    try:
        count, stride = int(ext["count"]), int(ext["byteStride"])
        start, length = int(ext.get("byteOffset", 0)), int(ext["byteLength"])
        mode, filt = ext["mode"], ext.get("filter", "NONE")
    except (KeyError, TypeError, ValueError):
        raise FormatError(
            str(path), None, f"{where}: count, byteStride, byteLength, mode needed"
        ) from None
    if mode not in MODES or filt not in FILTERS:
        raise FormatError(str(path), None, f"{where}: mode {mode!r}, filter {filt!r} unknown")
    if count < 0 or not 0 < stride <= 256 or start < 0 or start + length > len(source):
        raise FormatError(
            str(path), None, f"{where}: {length} bytes at {start} of a {len(source)}-byte buffer"
        )
    if (mode == "ATTRIBUTES" and stride % 4) or (mode != "ATTRIBUTES" and stride not in (2, 4)):
        raise FormatError(str(path), None, f"{where}: byteStride {stride} for {mode}")
    if mode == "TRIANGLES" and count % 3:
        raise FormatError(str(path), None, f"{where}: {count} indices are not triangles")
    lib = _library()
    out = np.zeros(count * stride + 16, np.uint8)  # (room for the decoders' tail writes)
    data = np.frombuffer(source, np.uint8, count=length, offset=start).copy()
    src = data.ctypes.data_as(ctypes.POINTER(ctypes.c_ubyte))
    decode = {
        "ATTRIBUTES": lib.meshopt_decodeVertexBuffer,
        "TRIANGLES": lib.meshopt_decodeIndexBuffer,
        "INDICES": lib.meshopt_decodeIndexSequence,
    }[mode]
    if decode(out.ctypes.data, count, stride, src, length) != 0:
        raise FormatError(str(path), None, f"{where}: the compressed stream does not decode")
    if (filt == "OCTAHEDRAL" and stride not in (4, 8)) or (filt == "QUATERNION" and stride != 8):
        raise FormatError(str(path), None, f"{where}: byteStride {stride} for filter {filt}")
    if filt == "EXPONENTIAL" and stride % 4:
        raise FormatError(str(path), None, f"{where}: byteStride {stride} for filter {filt}")
    if filt != "NONE":
        fn = {
            "OCTAHEDRAL": lib.meshopt_decodeFilterOct,
            "QUATERNION": lib.meshopt_decodeFilterQuat,
            "EXPONENTIAL": lib.meshopt_decodeFilterExp,
        }[filt]
        fn(out.ctypes.data, count, stride)
    return out[: count * stride].tobytes()
