"""BVH (Biovision Hierarchy) reading and writing.

Accepted: any rotation order per joint (one to three rotation channels), 3- and
6-channel joints (position channels on any joint), End Sites, names with
spaces or colons, tabs, CRLF line ends, numbers in exponent form, frames
wrapped over several lines, and ``Frames: 0``. Every problem raises
:class:`retarget.core.errors.FormatError` naming the file, the line and what was
expected. One is recovered from, as the reference importers do: more motion
data than ``Frames:`` declares, in whole frames, reads the declared frames
and warns (:class:`retarget.core.errors.RetargetWarning`) naming the first line
left out; fewer values, or a surplus that is not whole frames (a partial
trailing line, on which Blender's importer fails too), stays an error.

Semantics (those of Blender's importer): position channels *replace* the
joint's OFFSET (the root's OFFSET is its rest position only); rotation
channels in file order compose left to right, ``Zrotation Yrotation
Xrotation`` → ``R = Rz Ry Rx``. Position channels of non-root joints that are
constant over the clip become the joint's offset; animated ones are kept in
:attr:`Motion.translations`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
from pathlib import Path

import numpy as np

from ..core import quat
from ..core.errors import FormatError, RetargetError, warn
from ..core.motion import Motion
from ..core.skeleton import CHANNEL_NAMES, Skeleton
from ..humanoid import world
from ._scan import TOKEN_SLOW, ChannelLayout, parse_floats, scan_channels
from .files import atomic_write

__all__ = ["format_bvh", "parse_bvh", "read_bvh", "write_bvh"]

_CHANNEL_LOOKUP = {c.lower(): c for c in CHANNEL_NAMES}
_MOTION_RE = re.compile(rb"^[ \t]*MOTION[ \t]*\r?$", re.MULTILINE)
# What the motion scanner accepts, for the few numbers of the header (Python's
# float would also take "1_0", "infinity" or non-ASCII digits).
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_COUNT_RE = re.compile(r"\+?[0-9]+")

Buffer = bytes | mmap.mmap  # a file's bytes, read or memory-mapped


def read_bvh(path: str | os.PathLike, *, unit: str | None = None, up: str | None = None) -> Motion:
    """Read a BVH file.

    Parameters
    ----------
    path : str or path-like
    unit : str, optional
        Length unit to record on the skeleton. BVH does not say: by default it is
        found from the body's size (:func:`retarget.humanoid.world.find_unit`).
    up : str, optional
        The world up axis to record (``"y"``, ``"z"``, ``"-x"``, ...); by default
        found from the body over the frames (:func:`retarget.humanoid.world.find_up`).

    Returns
    -------
    Motion

    Raises
    ------
    FormatError
        When the file is malformed (the message gives file, line and expectation).

    Warns
    -----
    RetargetWarning
        When the motion data holds whole frames beyond ``Frames:`` (read: the
        declared frames; the warning names the first line left out).
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            # A memory map costs far fewer page faults than a copy of a large file.
            try:
                data: Buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (ValueError, OSError):  # empty file, pipe, special file
                data = fh.read()
    except OSError as exc:
        raise FormatError(str(path), None, f"cannot read the file ({exc.strerror})") from None
    try:
        return parse_bvh(data, name=str(path), unit=unit, up=up)
    finally:
        if isinstance(data, mmap.mmap):
            with contextlib.suppress(BufferError):  # a view still alive: the GC closes it
                data.close()


def _lines(text: str) -> list[str]:
    """Lines split at "\n" only, as the data section counts them (``str.splitlines``
    also breaks at \x0b, \x0c, \x1c-\x1e, \x85, U+2028 and shifts line numbers)."""
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def _tokens(lines: list[str], first_line: int) -> list[tuple[str, int]]:
    out = []
    for k, line in enumerate(lines):
        for tok in line.replace("{", " { ").replace("}", " } ").split():
            out.append((tok, first_line + k))
    return out


class _Parser:
    """Recursive-descent parser of the HIERARCHY section, one token at a time."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.lines = _lines(text)
        self.toks = _tokens(self.lines, 1)
        self.pos = 0
        self.names: list[str] = []
        self.parents: list[int] = []
        self.offsets: list[list[float] | None] = []
        self.channels: list[tuple[str, ...] | None] = []
        self.sites: list[tuple[str, int, list[float]]] = []

    def error(self, message: str, line: int | None = None) -> FormatError:
        if line is None:
            line = self.toks[self.pos][1] if self.pos < len(self.toks) else len(self.lines)
        return FormatError(self.name, line, message)

    def peek(self) -> str | None:
        return self.toks[self.pos][0] if self.pos < len(self.toks) else None

    def take(self, what: str) -> tuple[str, int]:
        if self.pos >= len(self.toks):
            raise self.error(f"unexpected end of the hierarchy; expected {what}")
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def expect(self, word: str) -> int:
        tok, line = self.take(repr(word))
        if tok.upper() != word.upper():
            raise self.error(f"expected {word!r}, found {tok!r}", line)
        return line

    def number(self, what: str) -> float:
        tok, line = self.take(what)
        if not _DECIMAL_RE.fullmatch(tok):
            raise self.error(f"expected {what} (a number), found {tok!r}", line)
        value = float(tok)
        if not np.isfinite(value):
            raise self.error(f"expected a finite {what}, found {tok!r}", line)
        return value

    def rest_of_line(self, line: int, what: str) -> str:
        """The name after ROOT/JOINT: every token left on that line but a brace."""
        parts = []
        while self.pos < len(self.toks) and self.toks[self.pos][1] == line and self.peek() != "{":
            parts.append(self.take(what)[0])
        if not parts:
            raise self.error(f"expected {what} after the keyword", line)
        # keep the original spacing of names with spaces
        raw = self.lines[line - 1].strip()
        head = raw.split(None, 1)[1] if len(raw.split(None, 1)) > 1 else ""
        head = head.split("{")[0].strip()
        return head if head.split() == parts else " ".join(parts)

    def parse(self) -> None:
        tok = self.peek()
        if tok is None or tok.upper() != "HIERARCHY":
            raise self.error(f"expected 'HIERARCHY' at the start of the file, found {tok!r}", 1)
        self.take("HIERARCHY")
        tok, line = self.take("'ROOT'")
        if tok.upper() != "ROOT":
            raise self.error(f"expected 'ROOT', found {tok!r}", line)
        self.joints(line)
        if self.peek() is not None:
            tok, line = self.take("end")
            if tok.upper() == "ROOT":
                raise self.error(
                    "a second ROOT: files with several skeletons are not supported", line
                )
            raise self.error(f"expected 'MOTION' after the hierarchy, found {tok!r}", line)

    def open_joint(self, parent: int, line: int) -> int:
        """The joint named on ``line`` up to its '{'; returns its index."""
        name = self.rest_of_line(line, "a joint name")
        if name in self.names:
            raise self.error(f"duplicate joint name {name!r}", line)
        index = len(self.names)
        self.names.append(name)
        self.parents.append(parent)
        self.offsets.append(None)
        self.channels.append(None)
        self.expect("{")
        return index

    def joints(self, line: int) -> None:
        """The root joint on ``line`` and everything nested in it.

        Iterative (a stack of open joints), so that no nesting depth can
        overflow Python's recursion limit.
        """
        stack = [self.open_joint(-1, line)]
        while stack:
            index = stack[-1]
            name = self.names[index]
            tok, tline = self.take("'}', OFFSET, CHANNELS, JOINT or End Site")
            word = tok.upper()
            if word == "}":
                if self.offsets[index] is None:
                    raise self.error(f"joint {name!r} has no OFFSET", tline)
                if self.channels[index] is None:
                    raise self.error(f"joint {name!r} has no CHANNELS line", tline)
                stack.pop()
            elif word == "OFFSET":
                if self.offsets[index] is not None:
                    raise self.error(f"joint {name!r} has a second OFFSET", tline)
                self.offsets[index] = self.vector()
            elif word == "CHANNELS":
                if self.channels[index] is not None:
                    raise self.error(f"joint {name!r} has a second CHANNELS line", tline)
                self.channels[index] = self.channel_list(tline)
            elif word == "JOINT":
                stack.append(self.open_joint(index, tline))
            elif word == "END":
                self.expect("Site")
                self.expect("{")
                self.expect("OFFSET")
                site_offset = self.vector()
                self.expect("}")
                self.sites.append((name, index, site_offset))
            else:
                raise self.error(
                    f"expected '}}', OFFSET, CHANNELS, JOINT or End Site in joint {name!r}, "
                    f"found {tok!r}",
                    tline,
                )

    def joint_channels(self) -> list[tuple[str, ...]]:
        """Every joint's channels, once :meth:`parse` has required a CHANNELS line of each."""
        channels = [c for c in self.channels if c is not None]
        if len(channels) != len(self.channels):
            raise RuntimeError("joint_channels() before a successful parse()")
        return channels

    def vector(self) -> list[float]:
        return [self.number("OFFSET x"), self.number("OFFSET y"), self.number("OFFSET z")]

    def channel_list(self, line: int) -> tuple[str, ...]:
        tok, tline = self.take("a channel count")
        if not _COUNT_RE.fullmatch(tok):
            raise self.error(f"expected a channel count after CHANNELS, found {tok!r}", tline)
        count = int(tok)
        if not 0 <= count <= 6:
            raise self.error(f"expected 0 to 6 channels, found {count}", tline)
        out = []
        for k in range(count):
            if self.pos >= len(self.toks) or self.toks[self.pos][1] != line:
                raise self.error(f"CHANNELS {count} lists only {k} channel names", line)
            tok, tline = self.take("a channel name")
            canon = _CHANNEL_LOOKUP.get(tok.lower())
            if canon is None:
                raise self.error(
                    f"expected a channel name ({', '.join(CHANNEL_NAMES)}), found {tok!r}", tline
                )
            if canon in out:
                raise self.error(f"channel {canon} listed twice", tline)
            out.append(canon)
        if self.pos < len(self.toks) and self.toks[self.pos][1] == line:
            raise self.error(
                f"CHANNELS {count} is followed by more than {count} channel names", line
            )
        return tuple(out)


def _site_names(parser: _Parser) -> list[str]:
    taken = set(parser.names)
    out = []
    for parent_name, _, _ in parser.sites:
        base = f"{parent_name}_end"
        name, k = base, 1
        while name in taken:
            k += 1
            name = f"{base}{k}"
        taken.add(name)
        out.append(name)
    return out


def _header_value(line: str, key: str, name: str, lineno: int) -> str:
    words = r"\s+".join(key.split())  # "Frame Time" also as "Frame\tTime"
    m = re.match(rf"\s*{words}\s*:\s*(\S+)\s*$", line, re.IGNORECASE)
    if not m:
        raise FormatError(name, lineno, f"expected '{key}: <number>', found {line.strip()!r}")
    return m.group(1)


def _find_motion(data: Buffer) -> re.Match[bytes] | None:
    """The line 'MOTION' (found with bytes.find, far faster than a regex over the data)."""
    start = 0
    while True:
        k = data.find(b"MOTION", start)
        if k < 0:
            return None
        line_start = data.rfind(b"\n", 0, k) + 1
        line_end = data.find(b"\n", k)
        line_end = len(data) if line_end < 0 else line_end
        match = _MOTION_RE.match(data, line_start, line_end)
        if match is not None:
            return match
        start = k + 6


def parse_bvh(
    data: Buffer | str, *, name: str = "<string>", unit: str | None = None, up: str | None = None
) -> Motion:
    """Parse BVH text (see :func:`read_bvh`)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    prefix = data[:4096].removeprefix(b"\xef\xbb\xbf")
    first = prefix.split(None, 1)[0] if prefix.strip() else b""
    if first.upper() != b"HIERARCHY":
        first_line = prefix[: prefix.find(first)].count(b"\n") + 1 if first else 1
        found = first[:40].decode("latin-1") if first else "an empty file"
        raise FormatError(
            name, first_line, f"expected 'HIERARCHY' at the start of the file, found {found!r}"
        )
    match = _find_motion(data)
    if match is None:
        raise FormatError(
            name,
            _last_line(data),
            "no MOTION section: expected a line 'MOTION' after the hierarchy",
        )
    head = data[: match.start()]
    try:
        head_text = head.decode("utf-8-sig")  # a byte-order mark is not part of 'HIERARCHY'
    except UnicodeDecodeError:
        head_text = head.decode("latin-1")
    parser = _Parser(name, head_text)
    parser.parse()
    line_motion = head.count(b"\n") + 1
    # "Frames:" and "Frame Time:" lines follow MOTION (blank lines allowed).
    pos = match.end() + 1
    header: list[tuple[str, int]] = []
    lineno = line_motion
    while len(header) < 2:
        if pos >= len(data):
            want = "'Frames: N'" if not header else "'Frame Time: seconds'"
            raise FormatError(name, lineno, f"file ends after MOTION; expected {want}")
        nl = data.find(b"\n", pos)
        nl = len(data) if nl < 0 else nl
        line = data[pos:nl].decode("latin-1")
        lineno += 1
        pos = nl + 1
        if line.strip():
            header.append((line, lineno))
    frames_txt = _header_value(header[0][0], "Frames", name, header[0][1])
    if frames_txt.startswith("-") and _COUNT_RE.fullmatch(frames_txt[1:]):
        raise FormatError(name, header[0][1], f"expected a frame count >= 0, found {frames_txt}")
    if not _COUNT_RE.fullmatch(frames_txt):
        raise FormatError(name, header[0][1], f"expected a whole frame count, found {frames_txt!r}")
    num_frames = int(frames_txt)
    dt_txt = _header_value(header[1][0], "Frame Time", name, header[1][1])
    if not _DECIMAL_RE.fullmatch(dt_txt):
        raise FormatError(name, header[1][1], f"expected a frame time in seconds, found {dt_txt!r}")
    frame_time = float(dt_txt)
    if not (np.isfinite(frame_time) and frame_time > 0):
        raise FormatError(name, header[1][1], f"expected a positive frame time, found {dt_txt!r}")
    channels = parser.joint_channels()
    n_chan = sum(len(c) for c in channels)
    expected = num_frames * n_chan
    start = min(pos, len(data))
    offsets = np.array(parser.offsets, dtype=np.float64)
    if n_chan == 0:  # nothing to scan: frames are empty lines (as format_bvh writes them)
        lines_left = data[start:].count(b"\n") + 1  # (an mmap has no .count)
        if num_frames > lines_left:  # also keeps 'Frames: 10**12' from allocating
            raise FormatError(
                name,
                _last_line(data),
                f"file ends early: 'Frames: {num_frames}' of 0 channels needs a line per frame, "
                f"found {lines_left}",
            )
    # n values take at least 2n - 1 bytes: a frame count the data cannot hold is
    # reported before anything is allocated for it (never a MemoryError)
    if n_chan == 0 or expected > (len(data) - start + 1) // 2:
        _, count, err = parse_floats(data, 0, start=start)
        if err >= 0:
            raise _bad_token(name, data, pos, lineno, err)
        if count != expected:  # always so when n_chan > 0 here
            raise _count_error(name, data[pos:], lineno, num_frames, n_chan, count)
        layout = ChannelLayout(channels, offsets, num_frames)
        rotations = np.tile(quat.identity(), (num_frames, len(parser.names), 1))
        return _build_motion(parser, layout, rotations, frame_time, unit, up)
    layout = ChannelLayout(channels, offsets, num_frames)
    rotations, count, kind, err = scan_channels(data, start, layout)
    if kind == TOKEN_SLOW:  # a value the fast path cannot take: parse all values generically
        values, count, err = parse_floats(data, expected, start=start)
        if err < 0 and count >= expected:  # (values holds the declared frames' only)
            rotations = layout.fill(values.reshape(num_frames, n_chan))
    if err >= 0:
        raise _bad_token(name, data, pos, lineno, err)
    if count != expected:
        _extra_frames(name, data, pos, lineno, num_frames, n_chan, count)
    return _build_motion(parser, layout, rotations, frame_time, unit, up)


def _last_line(data: Buffer) -> int:
    """Number of the file's last line (1 for an empty file)."""
    n = data[:].count(b"\n")  # (an mmap has no .count)
    return max(n if data[-1:] == b"\n" else n + 1, 1)


def _bad_token(name: str, data: Buffer, pos: int, lineno: int, err: int) -> FormatError:
    """The error for the token at byte ``err`` of the motion data (which starts at
    byte ``pos``, the line after line ``lineno``)."""
    bad_line = lineno + 1 + data[pos:err].count(b"\n")
    token = data[err : err + 64].split(None, 1)[0].decode("latin-1")
    return FormatError(
        name, bad_line, f"expected a finite number in the motion data, found {token!r}"
    )


def _extra_frames(
    name: str, data: Buffer, pos: int, header_line: int, frames: int, n_chan: int, count: int
) -> None:
    """Accept whole frames beyond ``Frames:`` with a warning; raise for any other count.

    ``count`` values were found where the header declares ``frames`` × ``n_chan``.
    More values that make whole frames and begin on a line of their own (an
    exporter that wrote one frame more than it counted) leave the declared
    frames read, and a :class:`~retarget.core.errors.RetargetWarning` names the first
    line left out: assimp reads the declared frames, Blender every line. Fewer
    values, or a surplus that is not whole frames (a partial trailing line, a
    line longer than the channel count), is a :class:`~retarget.core.errors.FormatError`
    naming the line: Blender's importer, which reads each line as one frame,
    also fails on a line shorter than the hierarchy's channel count.

    Only here (off the normal path) are the data's tokens located, with numpy
    over the bytes from ``pos`` (the line after line ``header_line``).
    """
    expected = frames * n_chan
    surplus = count - expected
    if n_chan == 0 or surplus <= 0 or surplus % n_chan:
        raise _count_error(name, data[pos:], header_line, frames, n_chan, count)
    buf = np.frombuffer(data, dtype=np.uint8, offset=min(pos, len(data)))
    space = (buf == 32) | ((buf >= 9) & (buf <= 13))
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    first = int(starts[expected])  # byte of the first value beyond the declared frames
    before = int(starts[expected - 1]) if expected else -1
    if expected and not np.any(buf[before:first] == 10):  # the surplus starts mid-line
        raise _count_error(name, data[pos:], header_line, frames, n_chan, count)
    line = header_line + 1 + int(np.count_nonzero(buf[:first] == 10))
    extra = surplus // n_chan
    del buf  # (no view of a memory-mapped file outlives the read)
    warn(
        f"more motion data than 'Frames: {frames}': {extra} more "
        f"{'frame' if extra == 1 else 'frames'} from this line on, ignored "
        f"(the {frames} declared are read)",
        path=name,
        line=line,
    )


def _count_error(
    name: str, body: bytes, header_line: int, frames: int, n_chan: int, count: int
) -> FormatError:
    """Explain a value count that disagrees with Frames × channels, naming a line.

    ``body`` is the motion data, whose first line follows line ``header_line``
    (Frame Time). When most lines hold one frame each, the first line that
    does not is named; otherwise the line where the data runs out (too few
    values) or where the first value beyond the last frame sits (too many).
    """
    counts = np.array([len(ln.split()) for ln in body.split(b"\n")], dtype=np.int64)
    data_lines = np.flatnonzero(counts)
    if n_chan and len(data_lines) and 2 * np.count_nonzero(counts == n_chan) >= len(data_lines):
        # one frame per line, as files are written: point at the line that breaks it
        odd = data_lines[counts[data_lines] != n_chan]
        if len(odd):
            after = int(counts[: odd[0]].sum()) >= frames * n_chan  # past the declared frames
            return FormatError(
                name,
                header_line + 1 + int(odd[0]),
                f"expected {n_chan} values per frame (the hierarchy's channel count), "
                f"found {counts[odd[0]]}"
                + (f": a partial frame after the {frames} of 'Frames: {frames}'" if after else ""),
            )
    expected = frames * n_chan
    if count < expected:
        last = header_line + 1 + int(data_lines[-1]) if len(data_lines) else header_line
        return FormatError(
            name,
            last,
            f"file ends early: 'Frames: {frames}' × {n_chan} channels needs {expected} values, "
            f"found {count} ({count / n_chan:.6g} frames)",
        )
    # the line holding value number `expected` (0-based), the first one too many
    extra = int(np.searchsorted(np.cumsum(counts), expected, side="right"))
    return FormatError(
        name,
        header_line + 1 + extra,
        f"more motion data than 'Frames: {frames}' × {n_chan} channels = {expected} values: "
        f"found {count}",
    )


def _fps_from_frame_time(frame_time: float) -> float:
    """1 / frame_time, snapped to a whole rate when the file rounded it (0.033333 -> 30)."""
    fps = 1.0 / frame_time
    whole = round(fps)
    return float(whole) if whole > 0 and abs(fps - whole) <= 2e-4 * fps else fps


def _build_motion(
    parser: _Parser,
    layout: ChannelLayout,
    rotations: np.ndarray,
    frame_time: float,
    unit: str | None,
    up: str | None,
) -> Motion:
    offsets = layout.offsets
    translations = layout.trans if layout.has_trans else None
    if translations is not None and len(translations) > 0:
        constant = np.all(translations == translations[:1], axis=(0, 2))
        offsets[constant] = translations[0, constant]
        if np.all(constant):
            translations = None
    sites = parser.sites
    skeleton = Skeleton(
        names=tuple(parser.names),
        parents=np.array(parser.parents),
        offsets=offsets,
        channels=tuple(parser.joint_channels()),
        site_names=tuple(_site_names(parser)),
        site_parents=np.array([s[1] for s in sites], dtype=np.intp),
        site_offsets=np.array([s[2] for s in sites], dtype=np.float64).reshape(-1, 3),
        unit=unit or "cm",
    )
    fps = _fps_from_frame_time(frame_time)
    motion = Motion._adopt(skeleton, layout.root, rotations, fps, translations)
    # BVH says neither unit nor up axis: both from the body (retarget.humanoid.world)
    unit = unit if unit is not None else world.find_unit(skeleton)[0]
    skeleton = world.settle_skeleton(skeleton, motion, unit=unit, up=up)
    return Motion._adopt(skeleton, layout.root, rotations, fps, translations)


# -- writing ------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return repr(float(x)) if x != 0 else "0"


def _written_channels(motion: Motion) -> tuple[tuple[str, ...], ...]:
    """Channel layout to write: the skeleton's, widened where its own channels
    cannot express the motion: three rotation channels ``Zrotation Yrotation
    Xrotation`` for ASF axes or partial channels that the motion turns about
    other axes; one or two rotation channels completed to three (zero angles)
    for importers that read only three; three position channels where the root
    moves, or a joint's translation changes, along an axis without a position
    channel (the reader would put the OFFSET there)."""
    sk = motion.skeleton
    axes = sk.axes
    out = []
    for j, chans in enumerate(sk.channels):
        positions = tuple(c for c in chans if c.endswith("position"))
        rotations = tuple(c for c in chans if c.endswith("rotation"))
        if len(positions) < 3:
            moving = (
                motion.root_position
                if j == 0
                else (None if motion.translations is None else motion.translations[:, j])
            )
            free = [axis for axis in range(3) if "XYZ"[axis] + "position" not in positions]
            if moving is not None and np.any(moving[:, free] != sk.offsets[j, free]):
                positions = ("Xposition", "Yposition", "Zposition")
        order = sk.euler_orders[j]
        identity_axis = np.allclose(axes[j], (1, 0, 0, 0), atol=1e-12)
        if not (identity_axis and len(order) == 3):
            rot = motion.rotations[:, j]
            if not identity_axis:
                err = None
            elif order:
                err = quat.angle(quat.quat_from_euler(quat.euler_from_quat(rot, order), order), rot)
            else:
                err = quat.angle(rot)
            if err is None or (err.size and err.max() >= 1e-9):
                rotations = ("Zrotation", "Yrotation", "Xrotation")
            elif order:
                # One or two rotation channels are valid BVH, but common importers
                # (Blender's among them) read only three: complete the order with the
                # missing axes, whose angles are then 0.
                rotations = tuple(
                    f"{a}rotation" for a in order + "".join(sorted(set("XYZ") - set(order)))
                )
        widened = positions + rotations
        out.append(chans if sorted(widened) == sorted(chans) else widened)
    return tuple(out)


def _check_names(names: tuple[str, ...]) -> None:
    """Refuse names that BVH text cannot hold as they are (the reader would read
    another name or a broken hierarchy)."""
    for name in names:
        if not name.strip() or name != name.strip() or any(c in name for c in "{}\n\r"):
            raise RetargetError(
                f"cannot write joint name {name!r} to BVH: names must be non-empty, without "
                "leading or trailing whitespace, braces or line breaks"
            )


def format_bvh(motion: Motion, *, precision: int = 10) -> str:
    """BVH text of a motion (see :func:`write_bvh`)."""
    sk = motion.skeleton
    _check_names(sk.names)
    channels = _written_channels(motion)
    offsets = sk.offsets if motion.translations is None else sk.offsets.copy()
    lines = ["HIERARCHY"]
    order: list[int] = []
    children: list[list[int]] = [[] for _ in range(sk.num_joints)]
    for j in range(1, sk.num_joints):
        children[sk.parents[j]].append(j)
    sites: list[list[int]] = [[] for _ in range(sk.num_joints)]
    for s, p in enumerate(sk.site_parents):
        sites[p].append(s)

    def emit(j: int, depth: int) -> None:
        ind = "\t" * depth
        lines.append(f"{ind}{'ROOT' if j == 0 else 'JOINT'} {sk.names[j]}")
        lines.append(f"{ind}{{")
        lines.append(f"{ind}\tOFFSET {' '.join(_fmt(v) for v in offsets[j])}")
        lines.append(f"{ind}\tCHANNELS {len(channels[j])}{''.join(' ' + c for c in channels[j])}")
        order.append(j)
        for c in children[j]:
            emit(c, depth + 1)
        for s in sites[j]:
            lines.append(f"{ind}\tEnd Site")
            lines.append(f"{ind}\t{{")
            lines.append(f"{ind}\t\tOFFSET {' '.join(_fmt(v) for v in sk.site_offsets[s])}")
            lines.append(f"{ind}\t}}")
        lines.append(f"{ind}}}")

    emit(0, 0)
    lines.append("MOTION")
    lines.append(f"Frames: {motion.num_frames}")
    lines.append(f"Frame Time: {1.0 / motion.fps:.10g}")
    columns = []
    trans = motion.translations
    for j in order:
        chans = channels[j]
        rot_order = "".join(c[0] for c in chans if c.endswith("rotation"))
        angles = None
        if rot_order:
            angles = np.rad2deg(quat.euler_from_quat(motion.rotations[:, j], rot_order))
            angles = np.unwrap(angles, period=360.0, axis=0) if motion.num_frames else angles
            angles = np.where(np.abs(angles) < 1e-12, 0.0, angles)
        k = 0
        for c in chans:
            axis = "XYZ".index(c[0])
            if c.endswith("position"):
                if j == 0:
                    columns.append(motion.root_position[:, axis])
                elif trans is not None:
                    columns.append(trans[:, j, axis])
                else:
                    columns.append(np.full(motion.num_frames, offsets[j, axis]))
            else:
                assert angles is not None  # a rotation channel makes rot_order non-empty
                columns.append(angles[:, k])
                k += 1
    if motion.num_frames and columns:
        table = np.stack(columns, axis=1)
        row = " ".join([f"%.{precision}g"] * table.shape[1])
        lines.extend(row % tuple(r) for r in table.tolist())
    elif motion.num_frames:
        lines.extend([""] * motion.num_frames)
    return "\n".join(lines) + "\n"


def write_bvh(
    path: str | os.PathLike,
    motion: Motion,
    *,
    precision: int = 10,
    inputs: tuple[str | os.PathLike, ...] = (),
) -> Path:
    """Write a motion as BVH, atomically.

    Joints are written depth first (children in index order, then End Sites);
    rotations as Euler angles in degrees in each joint's channel order,
    unwrapped over frames so curves stay continuous. Joints whose channels
    cannot hold their rotations (ASF axes, hinge channels turned about other
    axes) are written with three rotation channels ``Zrotation Yrotation
    Xrotation`` instead.

    Parameters
    ----------
    path : str or path-like
        Output file; never one of ``inputs``.
    motion : Motion
    precision : int
        Significant digits of motion values.
    inputs : tuple of paths
        Files this output must not overwrite.
    """
    return atomic_write(path, format_bvh(motion, precision=precision), inputs=inputs)
