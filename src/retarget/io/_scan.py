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

import io
import mmap
import threading
import warnings

import numpy as np
from numpy.typing import NDArray

from ..core.lazy import loader, numpy_twins

__all__ = [
    "TOKEN_BAD",
    "TOKEN_END",
    "TOKEN_SLOW",
    "ChannelLayout",
    "euler_deg_to_quat",
    "parse_floats",
    "scan_channels",
    "sincos_half_deg",
]

from ._scan_codes import TOKEN_BAD, TOKEN_END, TOKEN_SLOW

POW10 = np.array([10.0**k for k in range(23)])
SPLIT_BYTES = 1 << 20  # inputs larger than this are scanned in two threads

_kernels = loader("retarget.io._kernels.scan")


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
    if numpy_twins(exact=False):
        return _euler_deg_to_quat_numpy(values, columns, orders)
    cols, axes, counts = _plan(columns, orders)
    out = np.empty((values.shape[0], len(columns), 4))
    values = np.ascontiguousarray(values, dtype=np.float64)
    _kernels()._compose(values, cols, axes, counts, out)
    return out


def _euler_deg_to_quat_numpy(
    values: NDArray[np.float64], columns: list[list[int]], orders: list[str]
) -> NDArray[np.float64]:
    """:func:`euler_deg_to_quat` in numpy: ``sin``/``cos`` within an ulp or so of the
    kernel's (:func:`retarget.core.lazy.approximate`).

    The joints of one order at once, 512 frames at a time: temporaries that stay in
    the cache halve the time (lafan_walk.bvh: 18 ms whole, 9 ms in blocks).
    """
    groups: dict[str, list[int]] = {}
    for j, order in enumerate(orders):
        if columns[j]:
            groups.setdefault(order, []).append(j)
    plan = [
        (order, joints, np.array([columns[j] for j in joints])) for order, joints in groups.items()
    ]
    out = np.zeros((values.shape[0], len(columns), 4))
    out[..., 0] = 1.0
    for first in range(0, values.shape[0], 512):
        half = np.radians(values[first : first + 512]) * 0.5
        sin_half, cos_half = np.sin(half), np.cos(half)
        for order, joints, cols in plan:  # cols: (G, len(order))
            w, x, y, z = _first_two(order, sin_half, cos_half, cols)
            for k, axis in enumerate(order[2:], start=2):
                s, c = sin_half[:, cols[:, k]], cos_half[:, cols[:, k]]
                if axis == "X":
                    w, x, y, z = w * c - x * s, x * c + w * s, y * c + z * s, z * c - y * s
                elif axis == "Y":
                    w, x, y, z = w * c - y * s, x * c - z * s, y * c + w * s, z * c + x * s
                else:
                    w, x, y, z = w * c - z * s, x * c + y * s, y * c - x * s, z * c + w * s
            out[first : first + 512, joints] = np.stack([w, x, y, z], axis=-1)
    return out


def _first_two(
    order: str, sin_half: NDArray[np.float64], cos_half: NDArray[np.float64], cols: NDArray[np.intp]
) -> list[NDArray[np.float64]]:
    """``(w, x, y, z)`` of the product of the first one or two elementary rotations of
    ``order``, written out (each has two non-zero components: no products by zero)."""
    s1, c1 = sin_half[:, cols[:, 0]], cos_half[:, cols[:, 0]]
    zero = np.zeros_like(c1)
    a = "XYZ".index(order[0])
    if len(order) == 1:
        q = [c1, zero, zero, zero]
        q[1 + a] = s1
        return q
    s2, c2 = sin_half[:, cols[:, 1]], cos_half[:, cols[:, 1]]
    b = "XYZ".index(order[1])
    q = [c1 * c2, zero, zero, zero]
    if a == b:
        q[0] = q[0] - s1 * s2
        q[1 + a] = s1 * c2 + c1 * s2
        return q
    q[1 + a] = s1 * c2
    q[1 + b] = c1 * s2
    k = 3 - a - b  # e_a e_b = ±e_k: + when (a, b) runs X→Y→Z→X
    q[1 + k] = s1 * s2 if (b - a) % 3 == 1 else -(s1 * s2)
    return q


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


class ChannelLayout:
    """Where each channel of a BVH frame goes, and the position arrays it fills.

    Parameters
    ----------
    channels : list of J tuples of str
        Each joint's channel names in file order (``"Xposition"``, ``"Zrotation"``).
    offsets : ndarray, shape (J, 3)
        The joints' OFFSETs.
    num_frames : int

    Attributes
    ----------
    targets : ndarray of int, shape (C,)
        Per channel: -1 a rotation, 0-2 the root position's axis, ``3 + 3j + axis``
        joint j's translation.
    columns, orders : lists of length J
        Per joint, its rotation channels' columns and axes (``"ZYX"``).
    root : ndarray, shape (F, 3)
        Starts at the root's OFFSET; filled from the root position channels.
    trans : ndarray, shape (F, J, 3) or (1, 1, 3)
        Starts at the joints' offsets; filled from other position channels (a
        (1, 1, 3) dummy when no non-root joint has any).
    """

    def __init__(
        self, channels: list[tuple[str, ...]], offsets: NDArray[np.float64], num_frames: int
    ) -> None:
        self.offsets = offsets
        self.num_frames = num_frames
        self.columns: list[list[int]] = []
        self.orders: list[str] = []
        targets: list[int] = []
        for j, chans in enumerate(channels):
            self.columns.append([])
            order = ""
            for c in chans:
                if c.endswith("position"):
                    axis = "XYZ".index(c[0])
                    targets.append(axis if j == 0 else 3 + 3 * j + axis)
                else:
                    self.columns[j].append(len(targets))
                    order += c[0]
                    targets.append(-1)
            self.orders.append(order)
        self.targets = np.array(targets, dtype=np.intp)
        self.root = np.broadcast_to(offsets[0], (num_frames, 3)).copy()
        self.has_trans = bool(np.any(self.targets >= 3))
        shape = (num_frames, len(channels), 3) if self.has_trans else (1, 1, 3)
        self.trans = np.broadcast_to(offsets if self.has_trans else 0.0, shape).copy()

    def fill(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Fill the positions from a (F, C) table of values; return the rotations (F, J, 4)."""
        for c, t in enumerate(self.targets):
            if t >= 3:
                self.trans[:, (t - 3) // 3, (t - 3) % 3] = values[:, c]
            elif t >= 0:
                self.root[:, t] = values[:, c]
        return euler_deg_to_quat(values, self.columns, self.orders)


def scan_channels(
    data: bytes | memoryview | mmap.mmap, start: int, layout: ChannelLayout
) -> tuple[NDArray[np.float64], int, int, int]:
    """Parse frames of BVH channel values straight into poses.

    Parameters
    ----------
    data : bytes, memoryview or mmap
    start : int
        Byte offset of the first value.
    layout : ChannelLayout
        Of ``layout.num_frames`` frames of C > 0 channels; its ``root`` and
        ``trans`` are filled in place.

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
    num_frames, n_chan = layout.num_frames, len(layout.targets)
    if numpy_twins(exact=False):
        values = _read_values_numpy(data, start, num_frames * n_chan)
        if values is not None:
            return layout.fill(values.reshape(num_frames, n_chan)), values.size, TOKEN_END, -1
    cols, axes, counts = _plan(layout.columns, layout.orders)
    rot = np.empty((num_frames, len(layout.columns), 4))
    dummy = np.empty(0)
    dummy_slow = np.empty((0, 2), dtype=np.int64)

    def scan(buf: NDArray[np.uint8], first: int):
        count, kind, off, _ = _kernels()._scan_kernel(
            buf,
            dummy,
            dummy_slow,
            first // n_chan,
            layout.targets,
            cols,
            axes,
            counts,
            layout.root,
            layout.trans,
            rot,
            POW10,
        )
        return count, kind, off

    count, kind, off = _in_halves(memoryview(data).cast("B"), start, n_chan, scan)
    return rot, int(count), int(kind), int(off)


def _read_values_numpy(
    data: bytes | memoryview | mmap.mmap, start: int, size: int
) -> NDArray[np.float64] | None:
    """The ``size`` decimals of ``data[start:]`` read by numpy, or None when the text is
    not exactly that many finite decimals (the kernels then say what is wrong).

    numpy's readers round correctly, as the scanner does, so the values are the
    same; a text of anything but digits, signs, points, exponents and whitespace is
    left to the kernels. ``loadtxt`` (a table, a frame a line) reads lafan_walk.bvh
    in 23 ms where ``fromstring`` takes 36; ``fromstring`` reads frames wrapped over
    several lines.
    """
    text = memoryview(data).cast("B")[start:].tobytes()
    if text.translate(None, b"0123456789eE+-. \t\r\n"):  # (not only decimals)
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a token numpy cannot read, or no data)
        try:
            values = np.loadtxt(io.BytesIO(text), dtype=np.float64, ndmin=2).reshape(-1)
        except (ValueError, UserWarning):
            try:
                values = np.fromstring(text.decode("ascii"), sep=" ")
            except (DeprecationWarning, ValueError):
                return None
    if values.size != size or not np.isfinite(values).all():
        return None
    return values
