"""Fast, exact reading of the numbers of a motion file, straight into poses.

Reading is dominated by the motion section: hundreds of thousands of decimals
(lafan_walk.bvh: 496k) to parse, then as many Euler angles to turn into
quaternions. Done with numpy that costs ~60 ms for parsing and ~10 ms for
``sin``/``cos`` (libm, one value at a time), so this module is the library's
own, in numba, for three reasons measured on lafan_walk.bvh:

* **one loop**: the token parser must sit inside the loop that consumes its
  values (the same code behind a function returning a tuple ran 2.5x slower);
  :func:`_scan_kernel` either stores the values (generic mode) or, for BVH,
  turns each completed frame into root position, translations and quaternions
  at once (fused mode), so no (F, C) table of values is ever allocated: in
  this virtual machine every fresh 4 MB array costs ~2 ms of page faults;
* **exact numbers**: a token whose digits form an integer ``m ≤ 2^53`` (at
  most 18 digits read) with a decimal exponent within ±22 is ``m · 10^k`` or
  ``m / 10^-k`` with both factors exact doubles, one correctly rounded IEEE
  operation (Clinger 1990, "How to read
  floating point numbers accurately"); others are left to Python's ``float``
  (generic mode) or make the caller fall back to it (fused mode);
* **vectorised half-angle sincos in degrees**: reduce by quarter turns *in
  degrees* (exact), multiply once by π/180, evaluate Taylor polynomials on
  |x| ≤ π/4 (truncation < 1e-17); with fastmath LLVM vectorises it, 12x faster
  than libm, and it is as accurate (tested to ~1 ulp).

Anything that is not a finite decimal (``nan``, ``inf``, ``1.#QNAN``, ``3,5``,
``--1``) is reported by byte offset so the reader can name the line. Inputs
over 1 MB are split at a newline and scanned in two threads (the kernels
release the GIL).
"""

from __future__ import annotations

import mmap
import threading
import warnings

import numpy as np
from numpy.typing import NDArray

from .._lazy import loader, numpy_twins

__all__ = [
    "TOKEN_BAD",
    "TOKEN_END",
    "TOKEN_SLOW",
    "euler_deg_to_quat",
    "parse_floats",
    "scan_channels",
    "sincos_half_deg",
]

from ._scan_codes import TOKEN_BAD, TOKEN_END, TOKEN_SLOW

POW10 = np.array([10.0**k for k in range(23)])
SPLIT_BYTES = 1 << 20  # inputs larger than this are scanned in two threads

_kernels = loader("retarget.io._scan_kernels")



# -- half-angle sincos and Euler composition ------------------------------------------------


def sincos_half_deg(
    theta_deg: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``sin(θ/2)`` and ``cos(θ/2)`` of finite angles in degrees, same shape as the input."""
    theta = np.ascontiguousarray(theta_deg, dtype=np.float64)
    s = np.empty_like(theta)
    c = np.empty_like(theta)
    _kernels()._sincos_half(theta.reshape(-1), s.reshape(-1), c.reshape(-1))
    return s, c


def _plan(columns: list[list[int]], orders: list[str]) -> tuple[NDArray[np.intp], ...]:
    n_joints = len(columns)
    cols = np.zeros((n_joints, 3), dtype=np.intp)
    axes = np.zeros((n_joints, 3), dtype=np.intp)
    counts = np.zeros(n_joints, dtype=np.intp)
    for j, (cs, order) in enumerate(zip(columns, orders, strict=True)):
        counts[j] = len(cs)
        cols[j, : len(cs)] = cs
        axes[j, : len(cs)] = ["XYZ".index(a) for a in order]
    return cols, axes, counts


def euler_deg_to_quat(
    values: NDArray[np.float64], columns: list[list[int]], orders: list[str]
) -> NDArray[np.float64]:
    """Quaternions of per-joint Euler angles taken from channel columns.

    Parameters
    ----------
    values : ndarray, shape (F, C)
        Channel values; angles in degrees, finite.
    columns : list of J lists of int
        For each joint, the columns of its rotation channels (0 to 3).
    orders : list of J str
        For each joint, the axes of those columns (``"ZYX"`` means
        ``R = Rz Ry Rx``, BVH's convention).

    Returns
    -------
    ndarray, shape (F, J, 4)
        Unit quaternions; identity for joints without rotation channels.
    """
    cols, axes, counts = _plan(columns, orders)
    out = np.empty((values.shape[0], len(columns), 4))
    values = np.ascontiguousarray(values, dtype=np.float64)
    _kernels()._compose(values, cols, axes, counts, out)
    return out


# -- the scanner ------------------------------------------------------------------------------


def _split_point(view: memoryview, start: int) -> int:
    """A newline offset near the middle of ``view[start:]`` to split work at,
    or -1 when the input is too small to be worth two threads."""
    if len(view) - start <= SPLIT_BYTES:
        return -1
    buf = np.frombuffer(view, dtype=np.uint8)
    mid = start + (len(view) - start) // 2
    newlines = np.flatnonzero(buf[mid : mid + 65536] == 10)
    return int(mid + newlines[0]) if len(newlines) else -1


def _in_halves(view: memoryview, start: int, frame_size: int, scan):
    """Run ``scan(bytes, first_token) -> (count, kind, offset)`` over
    ``view[start:]``, in two threads when it is large; the offset returned is
    absolute.

    The second half starts at a newline and is assumed to begin at token
    ``lines_before · frame_size`` (one frame or value per line, as files are
    written); when the first half's count shows otherwise (wrapped frames,
    blank lines), the whole range is scanned again in one thread.
    """
    cut = _split_point(view, start)
    if cut >= 0:
        # lines ending at or before the newline at `cut`
        head = np.frombuffer(view[start : cut + 1], dtype=np.uint8)
        first_token = _kernels().count_lines(head) * frame_size
        result: list = []
        second = np.frombuffer(view[cut:], dtype=np.uint8)
        worker = threading.Thread(target=lambda: result.append(scan(second, first_token)))
        worker.start()
        count1, kind1, off1 = scan(np.frombuffer(view[start:cut], dtype=np.uint8), 0)
        worker.join()
        if kind1 != TOKEN_END:
            return count1, kind1, start + off1
        if count1 == first_token:
            count2, kind2, off2 = result[0]
            return count1 + count2, kind2, (cut + off2 if off2 >= 0 else -1)
    count, kind, off = scan(np.frombuffer(view[start:], dtype=np.uint8), 0)
    return count, kind, (start + off if off >= 0 else -1)


_NO_TARGETS = np.zeros(0, dtype=np.intp)
_NO_PLAN = np.zeros((0, 3), dtype=np.intp)
_NO_POSES = (np.zeros((0, 3)), np.zeros((1, 1, 3)), np.zeros((0, 0, 4)))


def parse_floats(
    data: bytes | memoryview | mmap.mmap, capacity: int, start: int = 0
) -> tuple[NDArray[np.float64], int, int]:
    """Parse decimal numbers separated by whitespace, from byte ``start`` to the end.

    Parameters
    ----------
    data : bytes, memoryview or mmap
        The text.
    capacity : int
        Maximum number of values to store (the expected count).
    start : int
        Byte offset where the numbers begin (no copy of the data is made).

    Returns
    -------
    values : ndarray, shape (min(count, capacity),)
    count : int
        Number of tokens found (may exceed ``capacity``); when a bad token
        stops the scan, the number of good tokens before it.
    error_offset : int
        Offset in ``data`` of the first token that is not a finite decimal, or -1.

    Examples
    --------
    >>> parse_floats(b"1.5 -2e3\\n0.1", 3)[0].tolist()
    [1.5, -2000.0, 0.1]
    >>> parse_floats(b"1 nan 3", 3)[1:]
    (1, 2)
    """
    view = memoryview(data).cast("B")
    out = np.empty(capacity)

    def scan(buf: NDArray[np.uint8], first: int):
        dest = out[min(first, capacity) :]
        generic = (_NO_TARGETS, _NO_PLAN, _NO_PLAN, _NO_TARGETS, *_NO_POSES, POW10)
        slow = np.empty((1024, 2), dtype=np.int64)
        res = _kernels()._scan_kernel(buf, dest, slow, 0, *generic)
        if res[3] > len(slow):  # more slow tokens than recorded: again with room for all
            slow = np.empty((res[3], 2), dtype=np.int64)
            res = _kernels()._scan_kernel(buf, dest, slow, 0, *generic)
        count, kind, off, n_slow = res
        for offset, index in slow[:n_slow]:
            if index >= len(dest):
                break
            end = offset
            while end < len(buf) and int(buf[end]) not in b" \t\n\r\x0b\x0c":
                end += 1
            value = float(buf[offset:end].tobytes())
            if not np.isfinite(value):  # overflow of a huge exponent
                if kind == TOKEN_END or offset < off:
                    count, kind, off = int(index), TOKEN_BAD, int(offset)
                break
            dest[index] = value
        return count, kind, off

    count, kind, off = _in_halves(view, start, 1, scan)
    return out[: min(count, capacity)], int(count), int(off) if kind == TOKEN_BAD else -1


def scan_channels(
    data: bytes | memoryview | mmap.mmap,
    start: int,
    num_frames: int,
    targets: NDArray[np.intp],
    columns: list[list[int]],
    orders: list[str],
    root: NDArray[np.float64],
    trans: NDArray[np.float64],
) -> tuple[NDArray[np.float64], int, int, int]:
    """Parse frames of BVH channel values straight into poses.

    Parameters
    ----------
    data : bytes, memoryview or mmap
    start : int
        Byte offset of the first value.
    num_frames : int
    targets : ndarray of int, shape (C,), C > 0
        Where each channel goes: -1 a rotation, 0-2 the root position axis,
        ``3 + 3j + axis`` joint j's translation.
    columns, orders : lists of length J
        Per joint, its rotation channels' columns and axes (``"ZYX"``).
    root : ndarray, shape (F, 3)
        Filled in place from the root position channels.
    trans : ndarray, shape (F, J, 3) or (1, 1, 3)
        Filled in place from other position channels (a dummy when there are none).

    Returns
    -------
    rotations : ndarray, shape (F, J, 4)
    count : int
        Values read (up to the token that stopped the scan).
    kind : int
        TOKEN_END when every token was read, else TOKEN_SLOW (a value for
        Python's float: parse generically instead) or TOKEN_BAD.
    offset : int
        Byte offset in ``data`` of that token, or -1.
    """
    if numpy_twins(exact=False):
        quick = _scan_channels_numpy(data, start, num_frames, targets, columns, orders, root, trans)
        if quick is not None:
            return quick
    cols, axes, counts = _plan(columns, orders)
    rot = np.empty((num_frames, len(columns), 4))
    n_chan = len(targets)
    dummy = np.empty(0)
    dummy_slow = np.empty((0, 2), dtype=np.int64)

    def scan(buf: NDArray[np.uint8], first: int):
        count, kind, off, _ = _kernels()._scan_kernel(
            buf,
            dummy,
            dummy_slow,
            first // n_chan,
            targets,
            cols,
            axes,
            counts,
            root,
            trans,
            rot,
            POW10,
        )
        return count, kind, off

    count, kind, off = _in_halves(memoryview(data).cast("B"), start, n_chan, scan)
    return rot, int(count), int(kind), int(off)


def _scan_channels_numpy(
    data: bytes | memoryview | mmap.mmap,
    start: int,
    num_frames: int,
    targets: NDArray[np.intp],
    columns: list[list[int]],
    orders: list[str],
    root: NDArray[np.float64],
    trans: NDArray[np.float64],
) -> tuple[NDArray[np.float64], int, int, int] | None:
    """:func:`scan_channels` in numpy, or None when the values are not exactly
    ``num_frames`` frames of finite decimals (the kernels then say what is wrong).

    The values are the same (numpy's parsing rounds correctly, as the scanner
    does; a text of anything but digits, signs, points, exponents and whitespace
    is left to the kernels); the quaternions come from numpy's ``sin``/``cos``, within an ulp or so
    of the kernel's (:func:`retarget._lazy.approximate`).
    """
    n_chan = len(targets)
    text = memoryview(data).cast("B")[start:].tobytes()
    if text.translate(None, b"0123456789eE+-. \t\r\n"):  # (not only decimals)
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # (a token it cannot read)
        try:
            values = np.fromstring(text.decode("ascii"), sep=" ")
        except (DeprecationWarning, ValueError):
            return None
    if values.size != num_frames * n_chan or not np.isfinite(values).all():
        return None
    values = values.reshape(num_frames, n_chan)
    for column, t in enumerate(targets):
        if t >= 3:
            trans[:, (t - 3) // 3, (t - 3) % 3] = values[:, column]
        elif t >= 0:
            root[:, t] = values[:, column]
    half = np.radians(values) * 0.5
    sin_half, cos_half = np.sin(half), np.cos(half)
    rot = np.zeros((num_frames, len(columns), 4))
    rot[..., 0] = 1.0
    for j, (cs, order) in enumerate(zip(columns, orders, strict=True)):
        if not cs:
            continue
        a = "XYZ".index(order[0])
        w = cos_half[:, cs[0]]
        v = [np.zeros(num_frames) for _ in range(3)]
        v[a] = sin_half[:, cs[0]]
        x, y, z = v
        for col, axis in zip(cs[1:], order[1:], strict=True):
            s, c = sin_half[:, col], cos_half[:, col]
            if axis == "X":
                w, x, y, z = w * c - x * s, x * c + w * s, y * c + z * s, z * c - y * s
            elif axis == "Y":
                w, x, y, z = w * c - y * s, x * c - z * s, y * c + w * s, z * c + x * s
            else:
                w, x, y, z = w * c - z * s, x * c + y * s, y * c - x * s, z * c + w * s
        rot[:, j] = np.stack([w, x, y, z], axis=-1)
    return rot, num_frames * n_chan, TOKEN_END, -1
