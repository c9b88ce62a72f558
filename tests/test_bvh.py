"""BVH reading and writing.

Real clips round-trip through the writer and agree with a straightforward
reference reader (``str.split``, scipy's Euler angles, FK with matrices);
every accepted feature is checked on a small hand-made file; malformed input
raises FormatError naming the exact line; the two-thread scan of large inputs
agrees with one thread; fuzzed files never raise anything else; the writer
never overwrites an input, replaces its target whole and widens channels that
cannot hold the motion.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import missing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from retarget import Motion, Skeleton
from retarget.core import quat
from retarget.core.errors import FormatError, RetargetError, RetargetWarning
from retarget.core.kinematics import positions
from retarget.io import _scan, files
from retarget.io.bvh import format_bvh, parse_bvh, read_bvh, write_bvh

ORDERS = ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"]
CLIPS = ["lafan_walk.bvh", "mocapbank.bvh"]


# -- an independent reference reader ---------------------------------------------------------


def reference_parse(text: str) -> dict:
    """Read BVH text line by line with ``str.split``: the skeleton as lists and
    the motion as an (F, C) table of floats. Knows nothing of the library."""
    lines = text.splitlines()
    joints: list[dict] = []
    sites: list[list] = []
    stack: list = []
    k = 0
    while True:
        raw = lines[k]
        words = raw.split()
        k += 1
        if not words:
            continue
        key = words[0].upper()
        if key == "MOTION":
            break
        if key in ("ROOT", "JOINT"):
            name = raw.strip().split(None, 1)[1].split("{")[0].strip()
            parent = stack[-1] if stack else -1
            joints.append({"name": name, "parent": parent, "offset": None, "channels": []})
            stack.append(len(joints) - 1)
        elif key == "END":
            sites.append([stack[-1], None])
            stack.append("site")
        elif key == "OFFSET":
            offset = [float(w) for w in words[1:4]]
            if stack[-1] == "site":
                sites[-1][1] = offset
            else:
                joints[stack[-1]]["offset"] = offset
        elif key == "CHANNELS":
            joints[stack[-1]]["channels"] = words[2 : 2 + int(words[1])]
        elif key == "}":
            stack.pop()
    header = [ln for ln in lines[k:] if ln.strip()][:2]
    num_frames = int(header[0].split(":")[1])
    frame_time = float(header[1].split(":")[1])
    first = k + [i for i, ln in enumerate(lines[k:]) if ln.strip()][1] + 1
    values = [float(w) for ln in lines[first:] for w in ln.split()]
    n_chan = sum(len(j["channels"]) for j in joints)
    return {
        "joints": joints,
        "sites": sites,
        "frame_time": frame_time,
        "values": np.array(values, dtype=np.float64).reshape(num_frames, n_chan),
    }


def reference_positions(ref: dict, frames) -> np.ndarray:
    """World positions (joints then sites) of some frames: Euler angles by scipy
    (upper case: intrinsic, "ZYX" is Rz Ry Rx) and FK with 3x3 matrices. Position
    channels replace the OFFSET (Blender's convention)."""
    out = []
    for f in frames:
        row = ref["values"][f]
        pos, mats = [], []
        c = 0
        for joint in ref["joints"]:
            t = np.array(joint["offset"], dtype=np.float64)
            order, angles = "", []
            for ch in joint["channels"]:
                axis = ch[0].upper()
                if ch.lower().endswith("position"):
                    t["XYZ".index(axis)] = row[c]
                else:
                    order += axis
                    angles.append(row[c])
                c += 1
            r = Rotation.from_euler(order, angles, degrees=True).as_matrix() if order else np.eye(3)
            a = joint["parent"]
            if a < 0:
                pos.append(t)
                mats.append(r)
            else:
                pos.append(pos[a] + mats[a] @ t)
                mats.append(mats[a] @ r)
        for a, offset in ref["sites"]:
            pos.append(pos[a] + mats[a] @ np.array(offset))
        out.append(pos)
    return np.array(out)


def scipy_quat_wxyz(order: str, angles_deg) -> np.ndarray:
    q = Rotation.from_euler(order, angles_deg, degrees=True).as_quat()  # x y z w
    return np.concatenate([q[..., 3:], q[..., :3]], axis=-1)


def assert_same_rotations(a, b, atol=1e-12):
    """Equal rotations: unit quaternions equal up to sign."""
    dot = np.abs(np.sum(np.asarray(a) * np.asarray(b), axis=-1))
    np.testing.assert_allclose(dot, 1.0, atol=atol)


def assert_matches_reference(text: str, motion: Motion | None = None, atol=1e-9) -> Motion:
    """Read ``text`` with the library and with the reference; positions agree."""
    motion = parse_bvh(text) if motion is None else motion
    ref = reference_parse(text)
    sk = motion.skeleton
    assert sk.names == tuple(j["name"] for j in ref["joints"])
    assert list(sk.parents) == [j["parent"] for j in ref["joints"]]
    assert list(sk.site_parents) == [s[0] for s in ref["sites"]]
    assert motion.num_frames == len(ref["values"])
    frames = np.arange(motion.num_frames)
    np.testing.assert_allclose(
        positions(motion), reference_positions(ref, frames), rtol=0, atol=atol
    )
    return motion


# -- small hand-made files ---------------------------------------------------------------------


def chain_bvh(
    channels,
    values,
    *,
    names=None,
    offsets=None,
    site=(0.0, 4.0, 0.0),
    frame_time="0.04",
    frames_line=None,
) -> str:
    """A chain of joints root -> j1 -> ... with the given CHANNELS lists and one End
    Site at the tip; ``values`` (F, C) are written one frame per line."""
    n = len(channels)
    names = names or [f"j{k}" for k in range(n)]
    offsets = offsets or [(0.0, 0.0, 0.0)] + [(1.0 + k, 2.0, -0.5 * k) for k in range(1, n)]
    out = ["HIERARCHY"]
    for k in range(n):
        ind = "  " * min(k, 12)
        out.append(f"{ind}{'ROOT' if k == 0 else 'JOINT'} {names[k]}")
        out.append(f"{ind}{{")
        out.append(f"{ind}  OFFSET {' '.join(repr(float(v)) for v in offsets[k])}")
        out.append(f"{ind}  CHANNELS {len(channels[k])}{''.join(' ' + c for c in channels[k])}")
    ind = "  " * min(n, 12)
    out += [f"{ind}End Site", f"{ind}{{", f"{ind}  OFFSET {' '.join(map(str, site))}", f"{ind}}}"]
    out += ["  " * min(k, 12) + "}" for k in reversed(range(n))]
    values = np.asarray(values, dtype=np.float64)
    out += ["MOTION", frames_line or f"Frames: {len(values)}", f"Frame Time: {frame_time}"]
    out += [" ".join(repr(float(v)) for v in row) for row in values]
    return "\n".join(out) + "\n"


ROOT6 = ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation")
ZYX = ("Zrotation", "Yrotation", "Xrotation")


def random_values(rng, num_frames, channels, scale=170.0):
    """Channel values with 6 decimals: their shortest repr has at most 15 significant
    digits, so the reader takes its fast path (asserted by ``test_hand_made_files_are_fast``)."""
    n = sum(len(c) for c in channels)
    return rng.uniform(-scale, scale, size=(num_frames, n)).round(6)


def as_slow(text: str) -> str:
    """The same file with every motion value given 18 significant digits (trailing
    zeros): the same numbers, read by the generic slow path."""
    head, body = text.split("\nMOTION\n")
    lines = body.split("\n")
    lines[2:] = [
        " ".join(w + "0" * 18 if "." in w and "e" not in w.lower() else w for w in ln.split())
        for ln in lines[2:]
    ]
    return head + "\nMOTION\n" + "\n".join(lines)


# -- 1. real clips -----------------------------------------------------------------------------


@pytest.mark.parametrize("clip", CLIPS)
def test_real_clip_round_trip(data_dir, tmp_path, clip):
    src = data_dir / clip
    first = read_bvh(src)
    out = write_bvh(tmp_path / clip, first, inputs=(src,))
    second = read_bvh(out)
    a, b = first.skeleton, second.skeleton
    assert b.names == a.names
    assert b.channels == a.channels
    assert b.site_names == a.site_names
    np.testing.assert_array_equal(b.parents, a.parents)
    np.testing.assert_array_equal(b.site_parents, a.site_parents)
    np.testing.assert_array_equal(b.offsets, a.offsets)  # written with repr: exact
    np.testing.assert_array_equal(b.site_offsets, a.site_offsets)
    assert second.num_frames == first.num_frames > 100
    assert second.fps == first.fps == 30.0
    assert (first.translations is None) and (second.translations is None)
    np.testing.assert_allclose(positions(second), positions(first), rtol=0, atol=1e-6)
    assert_same_rotations(second.rotations, first.rotations, atol=1e-12)


@pytest.mark.parametrize("clip", CLIPS)
def test_real_clip_matches_reference_reader(data_dir, clip):
    src = data_dir / clip
    text = src.read_text()
    motion = read_bvh(src)
    ref = reference_parse(text)
    sk = motion.skeleton
    assert sk.names == tuple(j["name"] for j in ref["joints"])
    assert sk.channels == tuple(tuple(j["channels"]) for j in ref["joints"])
    np.testing.assert_array_equal(sk.offsets, [j["offset"] for j in ref["joints"]])
    np.testing.assert_array_equal(sk.site_offsets, [s[1] for s in ref["sites"]])
    assert sk.site_names == tuple(f"{ref['joints'][p]['name']}_end" for p, _ in ref["sites"])
    assert motion.num_frames == len(ref["values"])
    # the root's position channels are the first three columns of both clips: exact
    np.testing.assert_array_equal(motion.root_position, ref["values"][:, :3])
    rng = np.random.default_rng(0)
    frames = np.unique(np.r_[0, motion.num_frames - 1, rng.choice(motion.num_frames, 60)])
    np.testing.assert_allclose(
        positions(motion)[frames], reference_positions(ref, frames), rtol=0, atol=1e-9
    )
    # parsing the text (bytes, str) and the memory-mapped file give the same motion
    again = parse_bvh(text)
    np.testing.assert_array_equal(again.rotations, motion.rotations)
    np.testing.assert_array_equal(again.root_position, motion.root_position)


# -- 2. accepted features ----------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_every_euler_order_against_scipy(order):
    rng = np.random.default_rng(ORDERS.index(order))
    rot = tuple(f"{a}rotation" for a in order)
    channels = [("Xposition", "Yposition", "Zposition", *rot), rot, rot]
    values = random_values(rng, 12, channels)
    values[0, 3:] = [720.0, -540.0, 90.0, 0.0, 45.0, -180.0, 359.999, 1e-3, -89.9999]  # large, edge
    motion = assert_matches_reference(chain_bvh(channels, values))
    assert motion.skeleton.euler_orders == (order,) * 3
    for j, cols in enumerate([slice(3, 6), slice(6, 9), slice(9, 12)]):
        assert_same_rotations(motion.rotations[:, j], scipy_quat_wxyz(order, values[:, cols]))


@pytest.mark.parametrize(
    "rot",
    [
        ("Xrotation",),
        ("Yrotation",),
        ("Zrotation",),
        ("Xrotation", "Zrotation"),
        ("Zrotation", "Yrotation"),
        ("Yrotation", "Xrotation"),
    ],
)
def test_one_and_two_rotation_channels(rot):
    rng = np.random.default_rng(len(rot))
    channels = [ROOT6, rot, ZYX]
    values = random_values(rng, 9, channels)
    motion = assert_matches_reference(chain_bvh(channels, values))
    order = "".join(c[0] for c in rot)
    assert motion.skeleton.euler_orders[1] == order
    expected = scipy_quat_wxyz(order, values[:, 6 : 6 + len(rot)])
    assert_same_rotations(motion.rotations[:, 1], expected)


def test_position_channels_on_non_root_joints():
    rng = np.random.default_rng(3)
    six = ("Xposition", "Yposition", "Zposition", *ZYX)
    channels = [ROOT6, six, six, ("Yposition", "Xrotation"), ZYX]
    values = random_values(rng, 7, channels)
    values[:, 6:9] = [3.5, -2.25, 7.0]  # joint 1: constant position channels
    motion = assert_matches_reference(chain_bvh(channels, values))
    sk = motion.skeleton
    np.testing.assert_array_equal(sk.offsets[1], [3.5, -2.25, 7.0])  # folded into the offset
    assert sk.channels[1] == six and sk.channels[3] == ("Yposition", "Xrotation")
    trans = motion.translations
    assert trans is not None and trans.shape == (7, 5, 3)
    np.testing.assert_array_equal(trans[:, 2], values[:, 12:15])  # joint 2: animated
    np.testing.assert_array_equal(trans[:, 3, 1], values[:, 18])  # joint 3: Y animated
    np.testing.assert_array_equal(trans[:, 3, [0, 2]], np.tile(sk.offsets[3, [0, 2]], (7, 1)))
    np.testing.assert_array_equal(trans[:, 4], np.broadcast_to(sk.offsets[4], (7, 3)))


def test_constant_position_channels_leave_no_translations():
    rng = np.random.default_rng(4)
    six = ("Xposition", "Yposition", "Zposition", *ZYX)
    channels = [ROOT6, six, ZYX]
    values = random_values(rng, 5, channels)
    values[:, 6:9] = [0.0, 12.5, -1e-3]
    motion = assert_matches_reference(chain_bvh(channels, values))
    assert motion.translations is None
    np.testing.assert_array_equal(motion.skeleton.offsets[1], [0.0, 12.5, -1e-3])


def test_names_with_spaces_and_colons_and_braces_on_the_keyword_line():
    names = ["mixamorig:Hips", "Left Arm", "mixamorig:LeftArm", "Left  Fore Arm"]
    rng = np.random.default_rng(5)
    channels = [ROOT6, ZYX, ZYX, ZYX]
    text = chain_bvh(channels, random_values(rng, 3, channels), names=names)
    motion = assert_matches_reference(text)
    assert motion.skeleton.names == tuple(names)
    assert motion.skeleton.site_names == ("Left  Fore Arm_end",)
    # braces on the ROOT / JOINT / End Site lines, and a closing brace after OFFSET
    braced = re.sub(r"((?:ROOT|JOINT|End Site)[^\n]*)\n\s*\{", r"\1 {", text)
    braced = re.sub(r"(OFFSET 0\.0 4\.0 0\.0)\n\s*\}", r"\1 }", braced)
    assert "Left Arm {" in braced and "End Site {" in braced and "4.0 0.0 }" in braced
    again = parse_bvh(braced)
    assert again.skeleton.names == tuple(names)
    np.testing.assert_array_equal(positions(again), positions(motion))


def test_tabs_crlf_exponents_and_wrapped_frames_read_the_same():
    rng = np.random.default_rng(6)
    channels = [ROOT6, ZYX, ("Xrotation", "Yrotation")]
    values = random_values(rng, 6, channels).round(4)
    text = chain_bvh(channels, values)
    plain = parse_bvh(text)

    def tabify(s):
        return s.replace("  ", "\t").replace(" ", "\t").replace("\n", "\r\n")

    head, body = text.split("Frame Time: 0.04\n")
    head = tabify(head + "Frame Time: 0.04\n")
    assert "Frame\tTime:\t0.04\r\n" in head and "CHANNELS\t6\tXposition" in head
    # wrap frames over lines at odd places, with blank lines between
    flat = body.split()
    wrapped = "\r\n".join(
        " ".join(flat[k : k + 5]) + ("\r\n\t \r\n" if k % 3 else "") for k in range(0, len(flat), 5)
    )
    spaced = head.replace("MOTION\r\n", "MOTION\r\n\r\n \r\n").replace("Frames", "\r\nFrames")
    for variant in (head + tabify(body), head + wrapped + "\r\n", spaced + tabify(body)):
        other = parse_bvh(variant)
        assert other.skeleton.names == plain.skeleton.names
        assert other.skeleton.channels == plain.skeleton.channels
        np.testing.assert_array_equal(other.rotations, plain.rotations)
        np.testing.assert_array_equal(other.root_position, plain.root_position)
        np.testing.assert_array_equal(other.skeleton.offsets, plain.skeleton.offsets)
    assert_matches_reference(head + wrapped + "\r\n")


def test_numbers_in_exponent_form_are_exact():
    tokens = [
        "1e-3",
        "2.5E+01",
        "-3.0e+2",
        "4E1",
        ".5e1",
        "-7.25e-00",
        "1.e2",
        "+6",
        "-0",
        "0.000000000000001e15",
        "12345678901234.5e-10",
        "5e-22",
        "9e22",
        "1.5E-7",
    ]
    while len(tokens) % 3:
        tokens.append("0")
    channels = [ROOT6, ZYX]
    rows = [f"{' '.join(tokens[k : k + 3])} 10 20 30 1e1 2e1 3e1" for k in range(0, len(tokens), 3)]
    text = chain_bvh(channels, np.zeros((0, 9)), frames_line=f"Frames: {len(rows)}")
    motion = parse_bvh(text + "\n".join(rows) + "\n")
    np.testing.assert_array_equal(motion.root_position.ravel(), [float(t) for t in tokens])
    assert np.signbit(motion.root_position.ravel()[tokens.index("-0")])
    # joint 1 turns by "1e1 2e1 3e1", the root by "10 20 30": the same rotation
    np.testing.assert_array_equal(motion.rotations[:, 1], np.tile(motion.rotations[0, 0], (5, 1)))


def test_fast_path_numbers_equal_python_float():
    rng = np.random.default_rng(7)
    n = 3000
    mant = rng.integers(0, 10**15, size=n, dtype=np.int64)
    digits = rng.integers(1, 16, size=n)
    tokens = []
    for m, d in zip(mant, digits, strict=True):
        s = str(m)[:d]
        point = rng.integers(0, len(s) + 1)
        t = ("-" if rng.random() < 0.5 else "") + s[:point] + "." + s[point:]
        if rng.random() < 0.3:
            t += f"e{rng.integers(-7, 8)}"  # |decimal exponent| <= 22: the fast path
        tokens.append(t if t.strip("-.") else "0")
    rows = [" ".join(tokens[k : k + 3]) for k in range(0, n, 3)]
    text = chain_bvh(
        [("Xposition", "Yposition", "Zposition")],
        np.zeros((0, 3)),
        frames_line=f"Frames: {len(rows)}",
    )
    motion = parse_bvh(text + "\n".join(rows) + "\n")
    np.testing.assert_array_equal(motion.root_position.ravel(), [float(t) for t in tokens])


def test_more_than_15_significant_digits_take_the_slow_path_exactly():
    rng = np.random.default_rng(8)
    channels = [ROOT6, ZYX]
    values = random_values(rng, 4, channels).round(3)
    short = chain_bvh(channels, values)
    long_tokens = [
        "1.2345678901234567890",
        "0.10000000000000000555",
        "123456789012345678",
        "-9.87654321098765432e-5",
        "1e-400",
        "2.5e-30",
    ]
    lines = short.splitlines()
    first = lines.index("Frame Time: 0.04") + 1
    row = lines[first].split()
    row[:3] = long_tokens[:3]
    row[3] = long_tokens[3]  # a slow angle
    lines[first] = " ".join(row)
    row = lines[first + 2].split()
    row[:2] = long_tokens[4:]
    lines[first + 2] = " ".join(row)
    motion = parse_bvh("\n".join(lines) + "\n")
    fast = parse_bvh(short)
    np.testing.assert_array_equal(motion.root_position[0], [float(t) for t in long_tokens[:3]])
    np.testing.assert_array_equal(motion.root_position[2, :2], [0.0, 2.5e-30])
    expected = scipy_quat_wxyz("ZYX", [float(long_tokens[3]), *values[0, 4:6]])
    assert_same_rotations(motion.rotations[0, 0], expected)
    # the other values are untouched by the slower route: bit for bit the fast path's
    np.testing.assert_array_equal(motion.rotations[1:], fast.rotations[1:])
    np.testing.assert_array_equal(motion.rotations[0, 1], fast.rotations[0, 1])
    np.testing.assert_array_equal(motion.root_position[[1, 3]], fast.root_position[[1, 3]])


def test_zero_frames():
    channels = [ROOT6, ZYX]
    text = chain_bvh(channels, np.zeros((0, 9)))
    for variant in (text, text + "\n\n  \n", text.rstrip("\n")):
        motion = parse_bvh(variant)
        assert motion.num_frames == 0
        assert motion.rotations.shape == (0, 2, 4) and motion.root_position.shape == (0, 3)
        assert motion.skeleton.names == ("j0", "j1") and motion.fps == 25.0
    six = ("Xposition", "Yposition", "Zposition", *ZYX)
    motion = parse_bvh(chain_bvh([ROOT6, six], np.zeros((0, 12))))
    assert motion.num_frames == 0
    np.testing.assert_array_equal(motion.skeleton.offsets[1], [2.0, 2.0, -0.5])


def test_joints_with_zero_channels():
    rng = np.random.default_rng(9)
    channels = [ROOT6, (), ZYX, ()]
    values = random_values(rng, 5, channels)
    motion = assert_matches_reference(chain_bvh(channels, values))
    assert motion.skeleton.channels[1] == () and motion.skeleton.euler_orders[1] == ""
    np.testing.assert_array_equal(motion.rotations[:, [1, 3]], np.tile([1.0, 0, 0, 0], (5, 2, 1)))


def test_no_channels_at_all():
    """A skeleton without any channel: frames are empty lines (as format_bvh writes
    them). Used to raise ZeroDivisionError."""
    text = chain_bvh([(), ()], np.zeros((3, 0)))
    motion = parse_bvh(text)
    assert motion.num_frames == 3
    np.testing.assert_array_equal(motion.rotations, np.tile([1.0, 0, 0, 0], (3, 2, 1)))
    np.testing.assert_array_equal(motion.root_position, np.zeros((3, 3)))
    assert parse_bvh(format_bvh(motion)).num_frames == 3
    assert parse_bvh(chain_bvh([(), ()], np.zeros((0, 0)))).num_frames == 0
    with pytest.raises(FormatError, match="more motion data") as info:
        parse_bvh(text + "0.5\n")
    assert info.value.line == text.count("\n") + 1


def test_lower_case_channel_names_and_keywords():
    rng = np.random.default_rng(10)
    channels = [ROOT6, ZYX]
    text = chain_bvh(channels, random_values(rng, 3, channels))
    lower = text.replace("Xposition Yposition Zposition", "xposition yPosition ZPOSITION")
    lower = lower.replace("Zrotation Yrotation Xrotation", "zrotation YROTATION xRotation")
    for word in ("OFFSET", "End Site", "JOINT"):
        lower = lower.replace(word, word.lower())
    assert lower != text
    a, b = parse_bvh(text), parse_bvh(lower)
    assert b.skeleton.channels == a.skeleton.channels == (ROOT6, ZYX)
    np.testing.assert_array_equal(b.rotations, a.rotations)


def test_names_encodings_and_byte_order_mark():
    text = chain_bvh([ROOT6, ZYX], np.zeros((1, 9)), names=["Hüfte", "Épaule"])
    assert parse_bvh(text.encode("utf-8")).skeleton.names == ("Hüfte", "Épaule")
    assert parse_bvh(text.encode("latin-1")).skeleton.names == ("Hüfte", "Épaule")
    assert parse_bvh(b"\xef\xbb\xbf" + text.encode("utf-8")).skeleton.names == ("Hüfte", "Épaule")


def test_deeply_nested_joints_do_not_overflow_the_stack():
    """A recursive parser raised RecursionError past ~1000 levels."""
    depth = 3000
    channels = [ROOT6] + [("Zrotation",)] * depth
    values = np.zeros((2, 6 + depth))
    values[:, 6:] = 0.01
    motion = parse_bvh(chain_bvh(channels, values))
    assert motion.skeleton.num_joints == depth + 1
    np.testing.assert_array_equal(motion.skeleton.parents, np.arange(-1, depth))


def test_read_bvh_from_a_file_matches_parse(tmp_path):
    rng = np.random.default_rng(11)
    channels = [ROOT6, ZYX]
    text = chain_bvh(channels, random_values(rng, 4, channels))
    path = tmp_path / "clip.bvh"
    path.write_text(text)
    a, b = read_bvh(path), parse_bvh(text)
    np.testing.assert_array_equal(a.rotations, b.rotations)
    assert read_bvh(path, unit="mm").skeleton.unit == "mm"
    for bad in (tmp_path / "missing.bvh", tmp_path):
        with pytest.raises(FormatError, match="cannot read the file") as info:
            read_bvh(bad)
        assert info.value.path == str(bad)
    (tmp_path / "empty.bvh").write_bytes(b"")
    with pytest.raises(FormatError, match=r"expected 'HIERARCHY'.*an empty file") as info:
        read_bvh(tmp_path / "empty.bvh")
    assert info.value.line == 1


def test_frame_time_to_fps():
    channels = [ROOT6]
    for frame_time, fps in [
        ("0.033333", 30.0),
        ("0.0083333", 120.0),
        ("0.04", 25.0),
        ("1.25e-2", 80.0),
        ("0.0123", 1 / 0.0123),
    ]:
        motion = parse_bvh(chain_bvh(channels, np.zeros((1, 6)), frame_time=frame_time))
        assert motion.fps == pytest.approx(fps, rel=1e-15)


def test_hand_made_files_are_fast(monkeypatch):
    """The feature tests above exercise the fused fast path: the generic parse runs
    only for the slow variant of a file."""
    calls = []
    original = _scan.parse_floats

    def spy(*args, **kwargs):
        calls.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr("retarget.io.bvh.parse_floats", spy)
    channels = [ROOT6, ZYX, ("Yrotation",)]
    text = chain_bvh(channels, random_values(np.random.default_rng(22), 5, channels))
    parse_bvh(text)
    assert calls == []
    parse_bvh(as_slow(text))
    assert calls == [5 * 10]


@pytest.mark.parametrize(
    "channels",
    [
        [ROOT6, ZYX, ("Xrotation", "Zrotation"), ()],
        [
            ("Zrotation", "Xposition", "Yrotation", "Yposition", "Xrotation", "Zposition"),
            ("Yposition", "Xrotation"),
            ("Xposition", "Yposition", "Zposition", "Yrotation", "Zrotation"),
            ("Zposition",),
            ZYX,
        ],
        [("Yrotation",), ("Xposition",)],
    ],
)
def test_fast_and_slow_paths_agree(channels):
    """The fused scan (values straight into poses) and the generic one (a table of
    values, then the layout) give bit-identical motions."""
    values = random_values(np.random.default_rng(len(channels)), 7, channels)
    text = chain_bvh(channels, values)
    slow_text = as_slow(text)
    assert slow_text != text
    fast, slow = parse_bvh(text), parse_bvh(slow_text)
    np.testing.assert_array_equal(slow.root_position, fast.root_position)
    np.testing.assert_array_equal(slow.rotations, fast.rotations)
    np.testing.assert_array_equal(slow.skeleton.offsets, fast.skeleton.offsets)
    assert (slow.translations is None) == (fast.translations is None)
    if fast.translations is not None:
        np.testing.assert_array_equal(slow.translations, fast.translations)
    assert_matches_reference(text, fast)


# -- 3. malformed input ------------------------------------------------------------------------

BASE = """HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation
  JOINT Spine
  {
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Yrotation Xrotation
    End Site
    {
      OFFSET 0 5 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.04
1 2 3 4 5 6 7 8 9
10 11 12 13 14 15 16 17 18
"""
BASE_LINES = BASE.splitlines()


def edit(*changes) -> str:
    """BASE with lines changed: (line number, new text or None to delete), applied
    from the last line up so the numbers refer to BASE."""
    lines = list(BASE_LINES)
    for number, new in sorted(changes, key=lambda c: -c[0]):
        if new is None:
            del lines[number - 1]
        else:
            lines[number - 1] = new
    return "\n".join(lines) + "\n"


MALFORMED = {
    "empty file": ("", 1, "found 'an empty file'"),
    "not a BVH file": (
        "\n\n<html>\n",
        3,
        "expected 'HIERARCHY' at the start of the file, found '<html>'",
    ),
    "truncated in the hierarchy": ("\n".join(BASE_LINES[:9]) + "\n", 9, "no MOTION section"),
    "truncated mid-line in the data": (
        BASE[: BASE.index("13 14")],
        20,
        "expected 9 values per frame",
    ),
    "truncated after a frame": ("\n".join(BASE_LINES[:19]) + "\n", 19, "file ends early"),
    "truncated after Frame Time": ("\n".join(BASE_LINES[:18]), 18, "file ends early"),
    "truncated after MOTION": ("\n".join(BASE_LINES[:16]) + "\n", 16, "file ends after MOTION"),
    "missing MOTION": (edit((16, None)), 19, "no MOTION section"),
    "missing HIERARCHY": (edit((1, None)), 1, "expected 'HIERARCHY'"),
    "too few channel names": (edit((9, "CHANNELS 3 Zrotation Yrotation")), 9, "lists only 2"),
    "too many channel names": (
        edit((9, "CHANNELS 2 Zrotation Yrotation Xrotation")),
        9,
        "more than 2 channel names",
    ),
    "channel count over 6": (edit((9, "CHANNELS 7 Zrotation")), 9, "expected 0 to 6 channels"),
    "channel count not a number": (edit((9, "CHANNELS three Zrotation")), 9, "channel count"),
    "unknown channel name": (
        edit((9, "CHANNELS 3 Zrotation Wrotation Xrotation")),
        9,
        "expected a channel name",
    ),
    "channel listed twice": (
        edit((9, "CHANNELS 3 Zrotation Zrotation Xrotation")),
        9,
        "listed twice",
    ),
    "missing OFFSET": (edit((8, None)), 13, "joint 'Spine' has no OFFSET"),
    "missing CHANNELS": (edit((9, None)), 13, "joint 'Spine' has no CHANNELS"),
    "second OFFSET": (edit((9, "OFFSET 1 1 1")), 9, "second OFFSET"),
    "OFFSET not a number": (edit((8, "OFFSET 0 ten 0")), 8, "found 'ten'"),
    "OFFSET nan": (edit((8, "OFFSET 0 nan 0")), 8, "found 'nan'"),
    "OFFSET with an underscore": (edit((8, "OFFSET 0 1_0 0")), 8, "found '1_0'"),
    "OFFSET overflows": (edit((4, "OFFSET 0 1e999 0")), 4, "expected a finite OFFSET y"),
    "OFFSET cut short": (edit((12, "OFFSET 0 5")), 13, "found '}'"),
    "End Site without OFFSET": (edit((12, None)), 12, "expected 'OFFSET', found '}'"),
    "duplicate joint names": (edit((6, "JOINT Hips")), 6, "duplicate joint name 'Hips'"),
    "joint without a name": (edit((6, "JOINT")), 6, "expected a joint name"),
    "unknown keyword": (edit((8, "OFFSETS 0 10 0")), 8, "found 'OFFSETS'"),
    "missing closing brace": (edit((15, None)), 14, "unexpected end of the hierarchy"),
    "extra closing brace": (edit((15, "}}")), 15, "expected 'MOTION' after the hierarchy"),
    "second ROOT": (edit((15, "} ROOT Other")), 15, "a second ROOT"),
    "non-numeric value": (edit((19, "1 2 3 4 x 6 7 8 9")), 19, "found 'x'"),
    "decimal comma": (edit((20, "10 11 12 13,5 14 15 16 17 18")), 20, "found '13,5'"),
    "NaN value": (edit((20, "10 11 12 13 NaN 15 16 17 18")), 20, "found 'NaN'"),
    "inf value": (edit((19, "1 2 3 4 5 6 7 8 inf")), 19, "found 'inf'"),
    "overflowing value": (edit((20, "10 11 12 13 14 15 1e999 17 18")), 20, "found '1e999'"),
    "value with trailing garbage": (edit((19, "1 2 3 4 5 6 7 8 9x")), 19, "found '9x'"),
    "frame count too high": (edit((17, "Frames: 3")), 20, "file ends early"),
    "frame count too low, a partial frame beyond": (
        edit((17, "Frames: 1"), (20, "10 11 12 13")),
        20,
        "expected 9 values per frame (the hierarchy's channel count), found 4: a partial frame "
        "after the 1 of 'Frames: 1'",
    ),
    "a partial last line": (
        edit((20, "10 11 12 13 14 15 16 17 18\n1 2 3")),
        21,
        "found 3: a partial frame after the 2 of 'Frames: 2'",
    ),
    "a whole frame more, but within a line": (
        edit((20, "10 11 12 13 14 15 16 17 18 1 2 3 4 5 6 7 8 9")),
        20,
        "expected 9 values per frame (the hierarchy's channel count), found 18",
    ),
    "frame count absurd": (edit((17, "Frames: 99999999999999")), 20, "file ends early"),
    "frame count negative": (edit((17, "Frames: -2")), 17, "frame count >= 0"),
    "frame count not whole": (edit((17, "Frames: 2.0")), 17, "whole frame count"),
    "Frames line missing": (edit((17, None)), 17, "expected 'Frames: <number>'"),
    "Frame Time missing": (edit((18, None)), 18, "expected 'Frame Time: <number>'"),
    "Frame Time zero": (edit((18, "Frame Time: 0")), 18, "positive frame time"),
    "Frame Time negative": (edit((18, "Frame Time: -0.04")), 18, "positive frame time"),
    "Frame Time nan": (edit((18, "Frame Time: nan")), 18, "found 'nan'"),
    "Frame Time not a number": (edit((18, "Frame Time: fast")), 18, "frame time in seconds"),
    "short line among full ones": (
        edit((17, "Frames: 3"), (20, "10 11 12 13 14 15 16 17\n1 2 3 4 5 6 7 8 9")),
        20,
        "expected 9 values per frame (the hierarchy's channel count), found 8",
    ),
}

# More motion data than 'Frames:' declares, in whole frames on their own lines: read
# (the declared frames) with a warning naming the first line left out.
RECOVERED = {
    "frame count too low": (edit((17, "Frames: 1")), 20, 1, 1),
    "extra frame lines": (edit((20, "10 11 12 13 14 15 16 17 18\n" * 3)), 21, 2, 2),
    "extra frames wrapped over lines": (
        edit((20, "10 11 12 13 14 15 16 17 18\n1 2 3 4\n5 6 7 8 9")),
        21,
        2,
        1,
    ),
    "Frames: 0": (edit((17, "Frames: 0")), 19, 0, 2),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_input_names_the_line(case, tmp_path):
    text, line, phrase = MALFORMED[case]
    with pytest.raises(FormatError) as info:
        parse_bvh(text, name="case.bvh")
    err = info.value
    assert type(err) is FormatError
    assert (err.path, err.line) == ("case.bvh", line), err
    assert phrase in err.message
    assert str(err).startswith(f"case.bvh:{line}: ")
    # the same through a file (memory-mapped), and with CRLF line ends
    path = tmp_path / "case.bvh"
    for variant in (text, text.replace("\n", "\r\n")):
        path.write_bytes(variant.encode())
        with pytest.raises(FormatError) as info:
            read_bvh(path)
        assert (info.value.path, info.value.line) == (str(path), line), info.value
        assert phrase in info.value.message


@pytest.mark.parametrize("case", list(RECOVERED))
def test_more_frames_than_declared_read_the_declared_ones_and_warn(case, tmp_path):
    text, line, frames, extra = RECOVERED[case]
    lines = text.splitlines()
    exact = "\n".join(lines[: line - 1]) + "\n"  # the same file without the extra lines
    reference = parse_bvh(exact)
    assert reference.num_frames == frames
    path = tmp_path / "case.bvh"
    for variant in (text, text.replace("\n", "\r\n"), as_slow(text)):
        path.write_bytes(variant.encode())
        with pytest.warns(RetargetWarning) as caught:
            motion = read_bvh(path)
        assert len(caught) == 1
        warning = caught[0].message
        assert isinstance(warning, RetargetWarning)
        assert (warning.path, warning.line) == (str(path), line)
        plural = "frame" if extra == 1 else "frames"
        assert f"'Frames: {frames}': {extra} more {plural} from this line on" in warning.message
        assert str(warning).startswith(f"{path}:{line}: ")
        assert caught[0].filename == __file__  # attributed to the caller, not the library
        again = pickle.loads(pickle.dumps(warning))  # crosses process pools whole
        assert (str(again), again.path, again.line) == (str(warning), warning.path, line)
        np.testing.assert_array_equal(motion.root_position, reference.root_position)
        np.testing.assert_array_equal(motion.rotations, reference.rotations)


@settings(max_examples=40, deadline=None)
@given(
    frames=st.integers(0, 6),
    extra=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    slow=st.booleans(),
)
def test_any_whole_surplus_reads_the_declared_frames(frames, extra, seed, slow):
    """Whatever the layout of channels, a file with ``extra`` whole frames beyond its
    ``Frames:`` reads exactly as the file cut to the declared frames, and warns naming
    the first line cut; a surplus of part of a frame is an error naming that line."""
    rng = np.random.default_rng(seed)
    channels = [ROOT6, ZYX, ("Xrotation", "Zrotation"), ("Yposition", "Yrotation")]
    values = random_values(rng, frames + extra, channels)
    text = chain_bvh(channels, values, frames_line=f"Frames: {frames}")
    exact = chain_bvh(channels, values[:frames])
    if slow:
        text, exact = as_slow(text), as_slow(exact)
    first_extra = exact.count("\n") + 1
    with pytest.warns(RetargetWarning, match=f"{extra} more frame") as caught:
        motion = parse_bvh(text, name="s.bvh")
    assert [(w.message.path, w.message.line) for w in caught] == [("s.bvh", first_extra)]
    reference = parse_bvh(exact)
    np.testing.assert_array_equal(motion.root_position, reference.root_position)
    np.testing.assert_array_equal(motion.rotations, reference.rotations)
    if reference.translations is not None:
        np.testing.assert_array_equal(motion.translations, reference.translations)
    partial = text + " ".join(["1.5"] * int(rng.integers(1, 13))) + "\n"
    with pytest.raises(FormatError, match="a partial frame after") as info:
        parse_bvh(partial, name="s.bvh")
    assert info.value.line == partial.count("\n")


def test_real_file_with_a_frame_more_than_declared(data_dir):
    """assimp's Boxing_Toes.bvh: 3070 data lines under 'Frames: 3069' (Blender and
    assimp read it): the 3069 frames are read, the last line named."""
    path = data_dir / "real" / "assimp_boxing_toes.bvh"
    if not path.is_file():
        missing(f"{path} not found")
    with pytest.warns(RetargetWarning) as caught:
        motion = read_bvh(path)
    assert motion.num_frames == 3069
    assert [(w.message.path, w.message.line) for w in caught] == [(str(path), 3199)]
    # the data read is the first 3069 frames of the file's lines
    lines = path.read_text().splitlines()
    last = np.array(lines[-2].split(), dtype=np.float64)  # frame 3069, the last one read
    np.testing.assert_allclose(motion.root_position[-1], last[:3], rtol=0, atol=1e-12)
    first = np.array(lines[129].split(), dtype=np.float64)
    np.testing.assert_allclose(motion.root_position[0], first[:3], rtol=0, atol=1e-12)


def test_malformed_cases_are_small_edits_of_a_valid_file():
    motion = parse_bvh(BASE)
    assert motion.num_frames == 2 and motion.skeleton.names == ("Hips", "Spine")
    np.testing.assert_array_equal(motion.root_position, [[1, 2, 3], [10, 11, 12]])


# -- 4. the two-thread scan --------------------------------------------------------------------

BIG_CHANNELS = [
    ROOT6,
    ZYX,
    ("Xrotation", "Yrotation"),
    ("Xposition", "Yposition", "Zposition", *ZYX),
]


@pytest.fixture(scope="module")
def big():
    """A file of ~1.6 MB of motion data, one frame per line, and its values."""
    rng = np.random.default_rng(12)
    n_chan = sum(len(c) for c in BIG_CHANNELS)
    num_frames = 1 + (_scan.SPLIT_BYTES * 3 // 2) // (n_chan * 9)
    raw = rng.uniform(-179, 179, size=(num_frames, n_chan))
    rows = [" ".join(["%.4f"] * n_chan) % tuple(r) for r in raw.tolist()]
    values = np.array(" ".join(rows).split(), dtype=np.float64).reshape(num_frames, n_chan)
    head = chain_bvh(BIG_CHANNELS, np.zeros((0, n_chan)), frames_line=f"Frames: {num_frames}")
    first_line = head.count("\n") + 1
    return {"head": head, "rows": rows, "values": values, "first_line": first_line}


def big_text(big, rows=None, frames=None) -> str:
    head = big["head"]
    if frames is not None:
        head = re.sub(r"Frames: \d+", f"Frames: {frames}", head)
    return head + "\n".join(big["rows"] if rows is None else rows) + "\n"


@pytest.fixture
def split_spy(monkeypatch):
    """Record where the scanner cut its input in two (-1: one thread)."""
    cuts: list[int] = []
    original = _scan._split_point

    def spy(view, start):
        cut = original(view, start)
        cuts.append(cut)
        return cut

    monkeypatch.setattr(_scan, "_split_point", spy)
    return cuts


def single_thread_scan(data: bytes, start: int, num_frames: int, motion: Motion):
    """Fused scan of the whole buffer by the kernel itself, in one call."""
    sk = motion.skeleton
    layout = _scan.ChannelLayout(list(sk.channels), np.array(sk.offsets), num_frames)
    cols, axes, counts = _scan._plan(layout.columns, layout.orders)
    rot = np.empty((num_frames, sk.num_joints, 4))
    buf = np.frombuffer(data, dtype=np.uint8)[start:]
    count, kind, off, _ = _scan._kernels()._scan_kernel(
        buf,
        np.empty(0),
        np.empty((0, 2), np.int64),
        0,
        layout.targets,
        cols,
        axes,
        counts,
        layout.root,
        layout.trans,
        rot,
        _scan.POW10,
    )
    assert (count, kind, off) == (num_frames * len(layout.targets), _scan.TOKEN_END, -1)
    return layout.root, layout.trans, rot


def assert_big_motion(motion, big, frames=None):
    values = big["values"] if frames is None else big["values"][frames]
    np.testing.assert_array_equal(motion.root_position, values[:, :3])
    np.testing.assert_array_equal(motion.translations[:, 3], values[:, 11:14])
    channels = [list(range(3, 6)), list(range(6, 9)), list(range(9, 11)), list(range(14, 17))]
    expected = _scan.euler_deg_to_quat(values, channels, ["ZYX", "ZYX", "XY", "ZYX"])
    np.testing.assert_array_equal(motion.rotations, expected)


def test_two_threads_one_frame_per_line(big, split_spy):
    text = big_text(big)
    data = text.encode()
    start = len(big["head"].encode())
    assert len(data) - start > _scan.SPLIT_BYTES
    motion = parse_bvh(data)
    assert split_spy and split_spy[0] > start  # really cut in two
    assert_big_motion(motion, big)
    root, trans, rot = single_thread_scan(data, start, len(big["rows"]), motion)
    np.testing.assert_array_equal(motion.root_position, root)
    np.testing.assert_array_equal(motion.translations, trans)
    np.testing.assert_array_equal(motion.rotations, rot)


def test_two_threads_wrapped_frames_and_blank_lines(big, split_spy):
    tokens = " ".join(big["rows"]).split()
    wrapped = [" ".join(tokens[k : k + 7]) for k in range(0, len(tokens), 7)]
    assert_big_motion(parse_bvh(big_text(big, wrapped)), big)
    rows = list(big["rows"])
    n = len(rows)
    for k in (n - 10, 2 * n // 3, n // 3, 5):  # blank lines in both halves
        rows.insert(k, "" if k % 2 else " \t ")
    assert_big_motion(parse_bvh(big_text(big, rows)), big)
    crlf = big_text(big).replace("\n", "\r\n")
    assert_big_motion(parse_bvh(crlf), big)
    assert len(split_spy) >= 3 and all(cut > 0 for cut in split_spy)


@pytest.mark.parametrize("where", [0.25, 0.75, 0.999])
def test_two_threads_bad_token_names_the_line(big, where):
    rows = list(big["rows"])
    k = int(where * len(rows))
    tokens = rows[k].split()
    tokens[5] = "4.2.1"
    rows[k] = " ".join(tokens)
    with pytest.raises(FormatError, match=re.escape("found '4.2.1'")) as info:
        parse_bvh(big_text(big, rows))
    assert info.value.line == big["first_line"] + k


@pytest.mark.parametrize("where", [0.25, 0.75])
@pytest.mark.parametrize("change", [-1, 1])
def test_two_threads_wrong_value_count_names_the_line(big, where, change):
    rows = list(big["rows"])
    k = int(where * len(rows))
    rows[k] = " ".join(rows[k].split()[:change] if change < 0 else [*rows[k].split(), "1.5"])
    with pytest.raises(FormatError, match="values per frame") as info:
        parse_bvh(big_text(big, rows))
    assert info.value.line == big["first_line"] + k
    assert f"found {17 + change}" in info.value.message


def test_two_threads_frame_count_disagrees(big):
    n = len(big["rows"])
    with pytest.warns(RetargetWarning, match="3 more frames") as caught:
        motion = parse_bvh(big_text(big, frames=n - 3))
    assert [w.message.line for w in caught] == [big["first_line"] + n - 3]
    assert_big_motion(motion, big, frames=slice(0, n - 3))
    with pytest.raises(FormatError, match="file ends early") as info:
        parse_bvh(big_text(big, frames=n + 1))
    assert info.value.line == big["first_line"] + n - 1
    motion = parse_bvh(big_text(big, big["rows"][:-1], frames=n - 1))
    assert_big_motion(motion, big, frames=slice(0, n - 1))


def test_two_threads_slow_token_in_the_second_half(big):
    rows = list(big["rows"])
    k = int(0.8 * len(rows))
    tokens = rows[k].split()
    tokens[1] = "12.3456789012345678901"
    rows[k] = " ".join(tokens)
    motion = parse_bvh(big_text(big, rows))
    assert motion.root_position[k, 1] == 12.3456789012345678901
    others = np.ones(len(rows), bool)
    others[k] = False
    np.testing.assert_array_equal(motion.root_position[others], big["values"][others, :3])
    assert_big_motion(motion[np.flatnonzero(others)], big, frames=others)


@pytest.mark.parametrize("per_line", [1, 3])
def test_parse_floats_two_threads_agree_with_numpy(per_line, split_spy):
    rng = np.random.default_rng(13)
    values = rng.normal(scale=1e3, size=150_000).round(6)
    words = [f"{v:.6f}" for v in values]
    words[100_000] = "0.12345678901234567890123"  # a slow token in the second half
    text = "\n".join(" ".join(words[k : k + per_line]) for k in range(0, len(words), per_line))
    data = text.encode()
    assert len(data) > _scan.SPLIT_BYTES
    got, count, err = _scan.parse_floats(data, len(words))
    assert (count, err) == (len(words), -1)
    np.testing.assert_array_equal(got, np.array([float(w) for w in words]))
    assert split_spy[-1] > 0
    bad = data.replace(b"0.12345678901234567890123", b"1e999")
    got, count, err = _scan.parse_floats(bad, len(words))
    assert (count, err) == (100_000, bad.index(b"1e999"))


# -- 5. fuzzing ----------------------------------------------------------------------------------

POOL = [
    b"nan",
    b"inf",
    b"{",
    b"}",
    b"JOINT",
    b"End",
    b"Site",
    b"OFFSET",
    b"CHANNELS",
    b"6",
    b"MOTION",
    b"Frames:",
    b"Frame Time:",
    b"-",
    b".",
    b"1e999",
    b"1e-999",
    b"0",
    b"-0.0",
    b"99999999999",
    b"1.23456789012345678",
    b"\xff\xfe",
    b"\x00",
    b"\t",
    b"\r\n",
    b"\n",
    b"ROOT",
    b"Xrotation",
    b"Yposition",
    b"3",
    b"0.0333",
]

HAND_MADE = chain_bvh(
    [ROOT6, ("Xrotation",), ("Xposition", "Yposition", "Zposition", "Yrotation", "Xrotation"), ()],
    np.random.default_rng(14).uniform(-90, 90, size=(6, 12)).round(3),
    names=["Hips", "Left Leg", "mixamorig:Foot", "Toe"],
).encode()


@functools.cache
def mocapbank_head(data_dir, frames=30) -> bytes:
    lines = (data_dir / "mocapbank.bvh").read_bytes().split(b"\n")
    motion = next(k for k, ln in enumerate(lines) if ln.strip() == b"MOTION")
    lines[motion + 1] = b"Frames:\t%d\r" % frames
    return b"\n".join(lines[: motion + 3 + frames]) + b"\n"


def test_fuzz_bases_are_valid(data_dir):
    assert parse_bvh(mocapbank_head(data_dir)).num_frames == 30
    assert parse_bvh(BASE).num_frames == 2
    assert parse_bvh(HAND_MADE).translations is not None


@st.composite
def mutations(draw, base: bytes) -> bytes:
    data = base
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "duplicate", "replace", "truncate", "insert", "swap"]))
        spans = [m.span() for m in re.finditer(rb"\S+", data)]
        if op in ("delete", "duplicate", "replace") and spans:
            # mostly the hierarchy and header, where one token changes the structure
            header_end = data.find(b"Frame Time") + 30
            structure = [s for s in spans if s[0] < header_end] or spans
            pick_from = draw(st.sampled_from([structure, structure, spans]))
            a, b = pick_from[draw(st.integers(0, len(pick_from) - 1))]
            if op == "delete":
                data = data[:a] + data[b:]
            elif op == "duplicate":
                data = data[:b] + b" " + data[a:b] + data[b:]
            else:
                new = draw(st.sampled_from(POOL) | st.binary(min_size=1, max_size=6))
                data = data[:a] + new + data[b:]
        elif op == "truncate":
            data = data[: draw(st.integers(0, len(data)))]
        elif op == "insert":
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
        elif op == "swap":
            lines = data.split(b"\n")
            i, j = (draw(st.integers(0, len(lines) - 1)) for _ in range(2))
            lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
    return data


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_reader_raises_only_format_errors(data_dir, data):
    bases = [mocapbank_head(data_dir), HAND_MADE, BASE.encode()]
    base = data.draw(st.sampled_from(bases), label="base")
    text = data.draw(mutations(base), label="text")
    try:
        motion = parse_bvh(text, name="fuzz.bvh")
    except FormatError as err:
        assert err.path == "fuzz.bvh"
        last = max(text.count(b"\n") + (not text.endswith(b"\n")), 1)
        assert err.line is not None and 1 <= err.line <= last, (err, last)
        return
    for arr in (
        motion.root_position,
        motion.rotations,
        motion.skeleton.offsets,
        motion.skeleton.site_offsets,
    ):
        assert np.isfinite(arr).all()
    if motion.translations is not None:
        assert np.isfinite(motion.translations).all()
    np.testing.assert_allclose(np.linalg.norm(motion.rotations, axis=-1), 1.0, atol=1e-12)


# -- 6. the writer -------------------------------------------------------------------------------


def small_motion(rng, num_frames=5) -> Motion:
    channels = [ROOT6, ZYX, ("Xrotation",), ("Zrotation", "Xrotation")]
    names = ["Hips", "Left Up Leg", "mixamorig:Knee", "Foot"]
    values = random_values(rng, num_frames, channels, 80.0)
    return parse_bvh(chain_bvh(channels, values, names=names))


def test_writer_never_overwrites_an_input(tmp_path):
    motion = small_motion(np.random.default_rng(15))
    src = tmp_path / "in.bvh"
    src.write_text(format_bvh(motion))
    before = src.read_bytes()
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.bvh"
    link.symlink_to(src)
    hard = tmp_path / "hard.bvh"
    os.link(src, hard)
    for target in (src, tmp_path / "sub" / ".." / "in.bvh", link, hard, str(src)):
        with pytest.raises(RetargetError, match="refusing to write over the input"):
            write_bvh(target, motion, inputs=(src,))
    with pytest.raises(RetargetError, match="refusing"):
        write_bvh(tmp_path / "out.bvh", motion, inputs=(tmp_path / "x.bvh", tmp_path / "out.bvh"))
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.bvh", "in.bvh", "link.bvh", "sub"]
    out = write_bvh(tmp_path / "out.bvh", motion, inputs=(src,))
    assert out == tmp_path / "out.bvh" and out.read_text() == format_bvh(motion)


def test_writer_is_atomic(tmp_path, monkeypatch):
    rng = np.random.default_rng(16)
    long, short = small_motion(rng, 40), small_motion(rng, 2)
    target = tmp_path / "clip.bvh"
    write_bvh(target, long)
    with open(target, "rb") as reader:  # a reader holding the old file keeps it whole
        write_bvh(target, short)
        assert reader.read() == format_bvh(long).encode()
    assert target.read_text() == format_bvh(short)  # replaced whole, no tail of the longer file
    assert [p.name for p in tmp_path.iterdir()] == ["clip.bvh"]  # no temporary left

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_bvh(target, long)
    assert target.read_text() == format_bvh(short)  # untouched
    assert [p.name for p in tmp_path.iterdir()] == ["clip.bvh"]
    monkeypatch.undo()
    with pytest.raises(RetargetError, match="does not exist"):
        write_bvh(tmp_path / "nowhere" / "clip.bvh", short)


def written_channels(text: str) -> list[tuple[str, ...]]:
    return [tuple(ln.split()[2:]) for ln in text.splitlines() if ln.strip().startswith("CHANNELS")]


def test_writer_keeps_channels_that_hold_the_motion(tmp_path):
    motion = small_motion(np.random.default_rng(17))
    text = format_bvh(motion)
    # one or two rotation channels are completed to three (Blender reads only three);
    # the added angles are zero and the motion is unchanged
    completed = [
        ROOT6,
        ZYX,
        ("Xrotation", "Yrotation", "Zrotation"),
        ("Zrotation", "Xrotation", "Yrotation"),
    ]
    assert written_channels(text) == completed
    again = parse_bvh(text)
    assert again.skeleton.channels == tuple(completed)
    # 10 significant digits by default (~1e-9 of the unit here); 17 keep every bit of the angles
    np.testing.assert_allclose(positions(again), positions(motion), rtol=0, atol=1e-7)
    exact = parse_bvh(format_bvh(motion, precision=17))
    np.testing.assert_allclose(positions(exact), positions(motion), rtol=0, atol=1e-12)


def test_writer_widens_hinge_channels_turned_about_other_axes():
    rng = np.random.default_rng(18)
    motion = small_motion(rng)
    twist = quat.quat_from_euler(rng.uniform(-1, 1, size=(5, 3)), "ZYX")
    rotations = motion.rotations.copy()
    rotations[:, 2] = quat.multiply(rotations[:, 2], twist)  # the "Xrotation" knee
    rotations[:, 3] = quat.multiply(rotations[:, 3], twist)  # the "Zrotation Xrotation" foot
    turned = motion.replace(rotations=rotations)
    text = format_bvh(turned)
    assert written_channels(text) == [ROOT6, ZYX, ZYX, ZYX]
    again = parse_bvh(text)
    assert_same_rotations(again.rotations, turned.rotations, atol=1e-12)
    np.testing.assert_allclose(positions(again), positions(turned), rtol=0, atol=1e-7)
    # naive writing in the hinge's own channel would have lost the turn
    lost = quat.quat_from_euler(quat.euler_from_quat(rotations[:, 2], "X"), "X")
    assert quat.angle(lost, rotations[:, 2]).max() > 0.1


def test_writer_widens_channels_for_root_motion_and_translations():
    """A root without position channels that moves, and a joint whose translation
    changes along an axis without a channel, get position channels (they were
    silently written as the OFFSET)."""
    rng = np.random.default_rng(19)
    sk = Skeleton(
        ("root", "a", "b"),
        [-1, 0, 1],
        [[0, 0, 0], [1, 0, 0], [0, 1, 0]],
        channels=(ZYX, ("Xposition", "Xrotation"), ()),
        site_names=("tip",),
        site_parents=[2],
        site_offsets=[[0, 0, 1]],
    )
    rotations = quat.normalize(rng.normal(size=(4, 3, 4)))
    trans = np.broadcast_to(sk.offsets, (4, 3, 3)).copy()
    trans[:, 1, 1] += rng.normal(size=4)  # along Y: no channel
    motion = Motion(sk, rng.normal(size=(4, 3)), rotations, 30.0, trans)
    text = format_bvh(motion)
    pos3 = ("Xposition", "Yposition", "Zposition")
    assert written_channels(text) == [pos3 + ZYX, pos3 + ZYX, ZYX]
    again = parse_bvh(text)
    np.testing.assert_allclose(positions(again), positions(motion), rtol=0, atol=1e-8)
    # a root that stays at its OFFSET needs no position channel
    still = Motion(sk, np.zeros((4, 3)), rotations, 30.0)
    assert written_channels(format_bvh(still))[:2] == [
        ZYX,
        ("Xposition", "Zrotation", "Yrotation", "Xrotation"),
    ]


def test_writer_unwraps_angles_over_frames():
    """A joint spinning twice about Z is written as a continuous angle curve, not
    with jumps of 360 degrees."""
    sk = Skeleton(("root", "a"), [-1, 0], [[0, 0, 0], [0, 1, 0]])
    spin = np.linspace(0, 4 * np.pi, 73)
    rotations = np.stack(
        [
            quat.quat_from_euler(np.stack([spin, 0 * spin, 0 * spin], -1), "ZYX"),
            quat.quat_from_euler(np.stack([-spin, 0.3 + 0 * spin, 0 * spin], -1), "ZYX"),
        ],
        axis=1,
    )
    motion = Motion(sk, np.zeros((73, 3)), rotations, 30.0)
    text = format_bvh(motion)
    table = np.array([ln.split() for ln in text.splitlines()[-73:]], dtype=np.float64)
    np.testing.assert_allclose(table[:, 3], np.rad2deg(spin), atol=1e-7)  # root Zrotation
    np.testing.assert_allclose(table[:, 6], -np.rad2deg(spin), atol=1e-7)  # joint a
    assert np.abs(np.diff(table, axis=0)).max() < 11.0
    np.testing.assert_allclose(positions(parse_bvh(text)), positions(motion), atol=1e-9)


def test_writer_round_trips_translations_zero_frames_and_fps():
    rng = np.random.default_rng(20)
    six = ("Xposition", "Yposition", "Zposition", *ZYX)
    channels = [ROOT6, six, ("Yrotation",)]
    values = random_values(rng, 6, channels, 60.0)
    motion = parse_bvh(chain_bvh(channels, values, frame_time="0.0123"))
    assert motion.translations is not None
    again = parse_bvh(format_bvh(motion, precision=17))
    np.testing.assert_array_equal(again.translations, motion.translations)
    np.testing.assert_allclose(positions(again), positions(motion), rtol=0, atol=1e-12)
    assert again.fps == pytest.approx(motion.fps, rel=1e-9)
    empty = parse_bvh(format_bvh(motion[:0]))
    assert empty.num_frames == 0
    # the one-channel joint is completed to three rotation channels (see the writer)
    assert empty.skeleton.channels == (ROOT6, six, ("Yrotation", "Xrotation", "Zrotation"))


@pytest.mark.parametrize("bad", ["a{b", "c}", "two\nlines", " padded", "", "   "])
def test_writer_refuses_names_bvh_cannot_hold(bad, tmp_path):
    sk = Skeleton(("root", bad), [-1, 0], [[0, 0, 0], [1, 0, 0]])
    motion = Motion(sk, np.zeros((1, 3)), np.tile([1.0, 0, 0, 0], (1, 2, 1)), 30.0)
    with pytest.raises(RetargetError, match="cannot write joint name"):
        write_bvh(tmp_path / "x.bvh", motion)
    assert not list(tmp_path.iterdir())


def test_written_file_is_plain_bvh_for_the_reference_reader(tmp_path):
    motion = small_motion(np.random.default_rng(21))
    path = write_bvh(tmp_path / "w.bvh", motion)
    text = Path(path).read_text()
    assert text.startswith("HIERARCHY\nROOT Hips\n") and "\r" not in text
    assert_matches_reference(text, parse_bvh(text))
    np.testing.assert_allclose(
        positions(motion), reference_positions(reference_parse(text), range(5)), rtol=0, atol=1e-7
    )


def test_the_numpy_reader_of_a_summary_gives_the_kernels_values(data_dir, monkeypatch):
    """``retarget info`` reads without numba (``_lazy.approximate``): numpy's decimals are
    the scanner's bits, its quaternions within a few ulps; wrapped frames, CRLF and
    anything numpy cannot read fall back as documented."""
    import sys

    from retarget.core import lazy as _lazy

    data = (data_dir / "lafan_walk.bvh").read_bytes()
    kernel = parse_bvh(data)
    monkeypatch.delitem(sys.modules, "numba")  # "not loaded" (put back after the test)
    with _lazy.approximate():
        assert _lazy.numpy_twins(exact=False)
        twin = parse_bvh(data)
    np.testing.assert_array_equal(twin.root_position, kernel.root_position)
    np.testing.assert_allclose(twin.rotations, kernel.rotations, rtol=0, atol=4e-16)
    assert np.abs(twin.rotations - kernel.rotations).max() > 0  # really the other path

    start = data.index(b"\n", data.index(b"Frame Time")) + 1
    sk = kernel.skeleton
    n_chan, frames = sk.num_channels, 50
    body = data[start:].split(b"\n")[:frames]
    values = np.array(b" ".join(body).split(), dtype=np.float64)
    tokens = b" ".join(body).split()
    wrapped = b"\r\n".join(b" ".join(tokens[k : k + 7]) for k in range(0, len(tokens), 7))
    for text in (b"\n".join(body) + b"\n", wrapped, b"  " + b"\r\n".join(body) + b"\n\n"):
        got = _scan._read_values_numpy(text, 0, frames * n_chan)
        np.testing.assert_array_equal(got, values)
    assert _scan._read_values_numpy(b"\n".join(body), 0, frames * n_chan + 1) is None
    for bad in (b"1 2 nan\n", b"1 2 3,5\n", b"1 2 1e5.3\n", b"1 2 1e999\n", b""):
        assert _scan._read_values_numpy(bad, 0, 3) is None, bad
    layout = _scan.ChannelLayout(list(sk.channels), np.array(sk.offsets), frames)
    table = values.reshape(frames, n_chan)
    twin_quats = _scan._euler_deg_to_quat_numpy(table, layout.columns, layout.orders)
    np.testing.assert_allclose(twin_quats, kernel.rotations[:frames], rtol=0, atol=4e-16)


def test_the_numpy_euler_twin_of_every_order_is_the_kernel_to_an_ulp():
    """One, two and three rotation channels in every order, repeated axes too, angles
    beyond a turn, more frames than one block of the twin."""
    import itertools

    orders = ["".join(p) for n in (1, 2, 3) for p in itertools.product("XYZ", repeat=n)]
    columns, c = [], 0
    for order in orders:
        columns.append(list(range(c, c + len(order))))
        c += len(order)
    columns.append([])  # a joint without rotation channels
    orders.append("")
    values = np.random.default_rng(0).uniform(-400.0, 400.0, (1100, c))
    twin = _scan._euler_deg_to_quat_numpy(values, columns, orders)
    kernel = _scan.euler_deg_to_quat(values, columns, orders)
    np.testing.assert_allclose(twin, kernel, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(twin[:, -1], np.tile([1.0, 0.0, 0.0, 0.0], (1100, 1)))
