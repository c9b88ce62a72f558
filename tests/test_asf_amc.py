"""ASF/AMC reading: against pyacclaim, through BVH, hinge joints, and bad input."""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
from conftest import reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from retarget import Motion, Skeleton
from retarget.core import quat
from retarget.core.errors import FormatError, RetargetError
from retarget.core.kinematics import positions
from retarget.io import (
    AsfSkeleton,
    parse_amc,
    parse_asf,
    read_amc,
    read_asf,
    read_asf_amc,
    read_bvh,
    write_amc,
    write_bvh,
)

# A small skeleton: root -> hip -> knee (hinge), root -> spine (no dof).
SMALL_ASF = """\
:version 1.10
:name test
:units
  mass 1.0
  length 0.5
  angle deg
:root
   order TX TY TZ RX RY RZ
   axis XYZ
   position 0 0 0
   orientation 0 0 0
:bonedata
  begin
     id 1
     name hip
     direction 0 -1 0
     length 2
     axis 0 0 20 XYZ
    dof rx ry rz
    limits (-160.0 20.0)
           (-70.0 70.0)
           (-60.0 70.0)
  end
  begin
     id 2
     name knee
     direction 0 -1 0
     length 2
     axis 0 0 20 XYZ
    dof rx
    limits (-10.0 170.0)
  end
  begin
     id 3
     name spine
     direction 0 1 0
     length 1
     axis 0 0 0 XYZ
  end
:hierarchy
  begin
    root hip spine
    hip knee
  end
"""

# Frame 2 lists its bones in another order and gives the dof-less spine a line.
SMALL_AMC = """\
:FULLY-SPECIFIED
:DEGREES
1
root 1 2 3 10 20 30
hip 5 6 7
knee 40
2
root 1.5 2 3 11 21 31
knee 41
hip 5 6 8
spine
"""


def _edit(text: str, line: int, new: str | None) -> str:
    """``text`` with 1-based ``line`` replaced by ``new`` (deleted when None)."""
    lines = text.split("\n")
    if new is None:
        del lines[line - 1]
    else:
        lines[line - 1] = new
    return "\n".join(lines)


def _insert(text: str, after: int, new: str) -> str:
    lines = text.split("\n")
    lines.insert(after, new)
    return "\n".join(lines)


def _cut(text: str, keep_lines: int) -> str:
    return "\n".join(text.split("\n")[:keep_lines])


@pytest.fixture(scope="module")
def small() -> AsfSkeleton:
    return parse_asf(SMALL_ASF)


@pytest.fixture(scope="module")
def vicon(data_dir):
    return read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")


# -- the small skeleton, checked by hand --------------------------------------------------


def test_small_skeleton_layout(small):
    assert isinstance(small, AsfSkeleton)
    assert small.names == ("root", "hip", "knee", "spine")
    assert small.parents.tolist() == [-1, 0, 1, 0]
    # joint b sits at the end of its parent bone; lengths / (:units length 0.5)
    np.testing.assert_allclose(small.offsets, [[0, 0, 0], [0, 0, 0], [0, -4, 0], [0, 0, 0]])
    assert small.site_names == ("knee_end", "spine_end")
    np.testing.assert_allclose(small.site_offsets, [[0, -4, 0], [0, 2, 0]])
    assert small.channels == (
        ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation"),
        ("Zrotation", "Yrotation", "Xrotation"),
        ("Xrotation",),
        (),
    )
    assert small.unit == "in" and small.length_scale == 0.5 and small.angle_unit == "deg"
    np.testing.assert_allclose(
        small.axes[1], Rotation.from_euler("z", 20, degrees=True).as_quat(scalar_first=True)
    )
    np.testing.assert_allclose(small.limits[1], np.deg2rad([[-160, 20], [-70, 70], [-60, 70]]))
    np.testing.assert_allclose(small.limits[2, 0], np.deg2rad([-10, 170]))
    assert np.all(np.isinf(small.limits[2, 1:])) and np.all(np.isinf(small.limits[[0, 3]]))
    assert parse_asf(SMALL_ASF, unit="cm").unit == "cm"


def test_small_motion_values(small):
    m = parse_amc(SMALL_AMC, small, fps=60)
    assert m.num_frames == 2 and m.fps == 60.0
    np.testing.assert_allclose(m.root_position, [[2, 4, 6], [3, 4, 6]])  # / 0.5
    # "RX RY RZ" about fixed axes, x first: scipy's extrinsic "xyz"
    root = Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_quat(scalar_first=True)
    np.testing.assert_allclose(quat.canonical(m.rotations[0, 0]), quat.canonical(root), atol=1e-15)
    c = Rotation.from_euler("z", 20, degrees=True)
    for f, hip in enumerate([[5, 6, 7], [5, 6, 8]]):
        want = (c * Rotation.from_euler("xyz", hip, degrees=True) * c.inv()).as_quat(
            scalar_first=True
        )
        assert quat.angle(m.rotations[f, 1], want) < 1e-14
    knee = (c * Rotation.from_euler("x", 41, degrees=True) * c.inv()).as_quat(scalar_first=True)
    assert quat.angle(m.rotations[1, 2], knee) < 1e-14
    np.testing.assert_array_equal(m.rotations[:, 3], [[1, 0, 0, 0]] * 2)  # spine: no dof
    assert not m.rotations.flags.writeable


def test_radians_comments_case_and_partial_dofs():
    asf = (
        SMALL_ASF.replace("angle deg", "angle rad")
        .replace("axis 0 0 20 XYZ", "axis 0 0 0.5 XYZ  # a comment")
        .replace("dof rx ry rz", "dof rx rz")
        .replace("(-70.0 70.0)\n", "")
    )
    sk = parse_asf(asf)
    assert sk.channels[1] == ("Zrotation", "Xrotation")
    np.testing.assert_array_equal(sk.dof_mask[1], [True, False, True])
    np.testing.assert_allclose(sk.limits[1, 2], [-60.0, 70.0])  # already radians
    amc = "# made by hand\n:RADIANS\n1\nROOT 0 0 0 0 0 0\nHip 0.1 0.2 # rx rz\nknee 0.3\n"
    m = parse_amc(amc, sk)
    c = Rotation.from_euler("z", 0.5)
    want = (c * Rotation.from_euler("xz", [0.1, 0.2]) * c.inv()).as_quat(scalar_first=True)
    assert quat.angle(m.rotations[0, 1], want) < 1e-14
    # the AMC header wins over the ASF's unit
    m_deg = parse_amc(amc.replace(":RADIANS", ":DEGREES"), sk)
    want = (c * Rotation.from_euler("xz", [0.1, 0.2], degrees=True) * c.inv()).as_quat(
        scalar_first=True
    )
    assert quat.angle(m_deg.rotations[0, 1], want) < 1e-14


def test_byte_order_mark_and_plain_skeleton(small):
    sk = parse_asf(("\ufeff" + SMALL_ASF).encode("utf-8"))
    assert sk.names == small.names
    m = parse_amc(b"\xef\xbb\xbf" + SMALL_AMC.encode(), sk)
    np.testing.assert_array_equal(m.rotations, parse_amc(SMALL_AMC, small).rotations)
    # a plain Skeleton: length unit 1, degrees, values in reversed channel order
    plain = Skeleton(small.names, small.parents, small.offsets, small.channels, axes=small.axes)
    m_plain = parse_amc(SMALL_AMC, plain)
    np.testing.assert_allclose(m_plain.root_position, m.root_position * 0.5)
    np.testing.assert_allclose(m_plain.rotations, m.rotations, atol=1e-15)


def test_replace_keeps_the_acclaim_fields(small):
    sk = small.replace(unit="m")
    assert isinstance(sk, AsfSkeleton) and sk.length_scale == 0.5 and sk.unit == "m"
    assert repr(sk) == "Skeleton(4 joints, 2 sites, unit='m', root='root')"
    with pytest.raises(ValueError, match="length_scale"):
        small.replace(length_scale=0.0)


# -- the real clip ---------------------------------------------------------------------------


def test_vicon_against_pyacclaim(data_dir, vicon):
    """World positions of every bone's end agree with pyacclaim on all its frames."""
    pyacclaim = reference("pyacclaim")
    with contextlib.redirect_stdout(io.StringIO()):  # it prints even when not verbose
        asf = pyacclaim.loadASF(str(data_dir / "vicon.asf"), verbose=False)
        frames = pyacclaim.loadAMC(asf, str(data_dir / "vicon.amc"))
    sk = vicon.skeleton
    assert vicon.num_frames == 2751 and len(frames) == 2750  # pyacclaim drops the last
    assert vicon.fps == 120.0 and sk.unit == "in"
    bones = asf["bones"]
    assert set(bones) == set(sk.names)
    names = list(bones)
    # bone b's end: the root's position, or any child joint of b, or b's end site
    ends = [0 if b == "root" else sk.children(b)[0] for b in names]
    for b, e in zip(names, ends, strict=True):
        if b != "root":
            assert sk.point_parents[e] == sk.index(b)
    theirs = np.empty((len(frames), len(names), 3))
    for f, pose in enumerate(frames):
        bones["root"].set_pose(pose)
        theirs[f] = [bones[b].global_coordinate for b in names]
    ours = positions(vicon)[: len(frames), ends]
    err = np.abs(ours - theirs).max()
    assert err < 1e-4, err
    # the bodies really move: a vacuous comparison would not catch a broken reader
    assert np.ptp(theirs[:, names.index("lfoot")], axis=0).max() > 5.0


def test_vicon_through_bvh(tmp_path, vicon):
    path = write_bvh(tmp_path / "vicon.bvh", vicon)
    text = path.read_text()
    assert "CHANNELS 0" in text  # lhipjoint, rhipjoint: no dof
    back = read_bvh(path, unit="in")
    assert back.skeleton.names == vicon.skeleton.names
    assert back.skeleton.site_names == vicon.skeleton.site_names
    assert back.skeleton.channels[vicon.skeleton.index("lhipjoint")] == ()
    assert back.num_frames == vicon.num_frames and back.fps == vicon.fps
    err = np.abs(positions(back) - positions(vicon)).max()
    assert err < 1e-4, err


def test_vicon_through_amc(tmp_path, data_dir, vicon):
    """Written as AMC, read back by our reader and by pyacclaim: the same bodies; the
    values match the captured file's to the printed precision."""
    clip = vicon[:240]
    path = write_amc(tmp_path / "out.amc", clip)
    back = read_amc(path, clip.skeleton)
    assert back.num_frames == clip.num_frames
    err = np.abs(positions(back) - positions(clip)).max()
    assert err < 1e-4, err

    def frame_two(lines):  # bone name -> values of frame 2
        start = lines.index("2")
        end = lines.index("3")
        return {ln.split()[0]: np.array(ln.split()[1:], float) for ln in lines[start + 1 : end]}

    ours = frame_two(path.read_text().splitlines())
    theirs = frame_two((data_dir / "vicon.amc").read_text().splitlines())
    assert ours.keys() == theirs.keys()
    for bone, values in theirs.items():
        np.testing.assert_allclose(ours[bone], values, atol=2e-5, err_msg=bone)
    pyacclaim = reference("pyacclaim")
    with contextlib.redirect_stdout(io.StringIO()):
        asf = pyacclaim.loadASF(str(data_dir / "vicon.asf"), verbose=False)
        frames = pyacclaim.loadAMC(asf, str(path))
    assert len(frames) == clip.num_frames - 1  # it drops the last, as with the original


def test_amc_output_refuses_what_it_cannot_hold(tmp_path, vicon):
    clip = vicon[:5]
    bad = clip.rotations.copy()
    j = clip.skeleton.index("ltibia")
    bad[:, j] = quat.multiply(bad[:, j], quat.exp([0.0, 0.3, 0.0]))  # off the hinge
    with pytest.raises(RetargetError, match=r"ltibia.*off its channels"):
        write_amc(tmp_path / "a.amc", clip.replace(rotations=bad))
    with pytest.raises(RetargetError, match="needs an ASF skeleton"):
        plain = Skeleton(("a", "b"), [-1, 0], [[0, 0, 0], [0, 1, 0]])
        write_amc(tmp_path / "b.amc", Motion(plain, np.zeros((2, 3)), quat.identity((2, 2)), 30))
    assert not any(tmp_path.iterdir())


def test_vicon_hinges(vicon):
    sk = vicon.skeleton
    j = sk.index("ltibia")
    np.testing.assert_array_equal(sk.dof_mask[j], [True, False, False])
    np.testing.assert_allclose(sk.limits[j, 0], np.deg2rad([-10.0, 170.0]))
    assert np.all(np.isinf(sk.limits[j, 1:]))
    # every knee rotation C Rx(θ) C⁻¹ turns about C·x
    axis = quat.rotate(sk.axes[j], [1.0, 0.0, 0.0])
    v = quat.log(vicon.rotations[:, j])
    assert np.abs(v).max() > 1.0  # the knee bends
    np.testing.assert_allclose(np.cross(v, axis), 0.0, atol=1e-12)
    # clavicles have dof ry rz and identity axes
    k = sk.index("lclavicle")
    assert sk.channels[k] == ("Zrotation", "Yrotation")


def test_vicon_whole_file_checks(data_dir, vicon):
    sk = read_asf(data_dir / "vicon.asf")
    assert sk.num_joints == 31 and sk.num_sites == 7
    assert all(sk.parents[j] < j for j in range(1, sk.num_joints))
    m = read_amc(data_dir / "vicon.amc", sk, fps=30)
    assert m.fps == 30.0
    np.testing.assert_array_equal(m.rotations, vicon.rotations)
    # first frame's root: "root 9.37216 17.8693 -17.3198 ..." divided by 0.45
    np.testing.assert_allclose(m.root_position[0], np.array([9.37216, 17.8693, -17.3198]) / 0.45)


# -- malformed input -------------------------------------------------------------------------

ASF_CASES = {
    "no hierarchy section": (_cut(SMALL_ASF, 39), 39, "no :hierarchy"),
    "bonedata keyword lost": (_edit(SMALL_ASF, 12, ""), 44, "no :bonedata section"),
    "unknown bone in hierarchy": (
        _edit(SMALL_ASF, 43, "    hip kneee"),
        43,
        "unknown bone 'kneee'",
    ),
    "duplicate bone name": (_edit(SMALL_ASF, 35, "     name hip"), 35, "duplicate bone name"),
    "limits count": (_edit(SMALL_ASF, 22, None), 20, "expected 3 limit pairs"),
    "non-numeric direction": (_edit(SMALL_ASF, 27, "direction 0 -1 x"), 27, "found 'x'"),
    "nan length": (_edit(SMALL_ASF, 17, "length nan"), 17, "finite number"),
    "truncated in hierarchy": (_cut(SMALL_ASF, 42), 42, "no 'end'"),
    "truncated in a bone": (_cut(SMALL_ASF, 30), 30, "no :hierarchy"),
    "bone left unclosed": (_edit(SMALL_ASF, 32, ""), 33, "'begin' inside"),
    "bad dof": (_edit(SMALL_ASF, 19, "dof rx rw"), 19, "rx, ry, rz"),
    "translating dof": (_edit(SMALL_ASF, 30, "dof tx"), 30, "not supported"),
    "bad axis order": (_edit(SMALL_ASF, 18, "axis 0 0 20 XYY"), 18, "permutation of XYZ"),
    "bone outside the hierarchy": (_edit(SMALL_ASF, 42, "root hip"), 35, "not attached"),
    "two parents": (_insert(SMALL_ASF, 43, "spine knee"), 44, "already has a parent"),
    "zero length unit": (_edit(SMALL_ASF, 5, "length 0"), 5, "length unit > 0"),
    "lower limit above upper": (_edit(SMALL_ASF, 31, "limits (20 10)"), 31, "lower 20 > upper 10"),
    "garbage before sections": ("hello\n" + SMALL_ASF, 1, "':keyword'"),
    "duplicate section": (SMALL_ASF + ":units\n", 45, "second :units"),
}

AMC_CASES = {
    "unknown bone": (_edit(SMALL_AMC, 5, "hips 5 6 7"), 5, "'hips'"),
    "too many values": (_edit(SMALL_AMC, 6, "knee 40 1"), 6, "expected 1 values, found 2"),
    "too few root values": (
        _edit(SMALL_AMC, 4, "root 1 2 3 10 20"),
        4,
        "expected 6 values, found 5",
    ),
    "non-numeric": (_edit(SMALL_AMC, 9, "knee 4x1"), 9, "'4x1'"),
    "nan": (_edit(SMALL_AMC, 4, "root 1 2 nan 10 20 30"), 4, "'nan'"),
    "inf": (_edit(SMALL_AMC, 10, "hip 5 6 1e999"), 10, "'1e999'"),
    "frame number repeats": (
        _edit(SMALL_AMC, 7, "1"),
        7,
        "expected frame 2 after frame 1, found 1",
    ),
    "frame number skips": (_edit(SMALL_AMC, 7, "3"), 7, "expected frame 2 after frame 1, found 3"),
    "bone missing from a frame": (_edit(SMALL_AMC, 9, None), 10, "no line for bone 'knee'"),
    "truncated mid-line": (_cut(SMALL_AMC, 9) + "\nhip 5", 10, "expected 3 values, found 1"),
    "truncated after a frame number": (_cut(SMALL_AMC, 7), 7, "no line for bone 'root'"),
    "bone twice in a frame": (_insert(SMALL_AMC, 5, "hip 5 6 7"), 6, "appears twice"),
    "no frame number": (_edit(SMALL_AMC, 3, None), 3, "frame number before"),
    "no frames": (":FULLY-SPECIFIED\n:DEGREES\n", 2, "no frames"),
    "frame number with a value": (_edit(SMALL_AMC, 7, "2 0"), 7, "alone on its line"),
    "header inside the data": (_insert(SMALL_AMC, 11, ":RADIANS"), 12, "':RADIANS'"),
    "contradicting headers": (_insert(SMALL_AMC, 2, ":RADIANS"), 3, "contradicts"),
    "spine given a value": (_edit(SMALL_AMC, 11, "spine 1"), 11, "expected 0 values, found 1"),
}


@pytest.mark.parametrize("case", sorted(ASF_CASES))
def test_bad_asf(case):
    text, line, message = ASF_CASES[case]
    with pytest.raises(FormatError) as exc:
        parse_asf(text, name="bad.asf")
    assert exc.value.line == line, str(exc.value)
    assert exc.value.path == "bad.asf"
    assert message in exc.value.message, str(exc.value)


@pytest.mark.parametrize("case", sorted(AMC_CASES))
def test_bad_amc(case, small):
    text, line, message = AMC_CASES[case]
    with pytest.raises(FormatError) as exc:
        parse_amc(text, small, name="bad.amc")
    assert exc.value.line == line, str(exc.value)
    assert message in exc.value.message, str(exc.value)


def test_bad_files(tmp_path, small):
    with pytest.raises(FormatError, match="cannot read"):
        read_asf(tmp_path / "missing.asf")
    path = tmp_path / "x.amc"
    path.write_text(_edit(SMALL_AMC, 5, "hips 5 6 7"))
    with pytest.raises(FormatError) as exc:
        read_amc(path, small)
    assert exc.value.path == str(path) and exc.value.line == 5
    with pytest.raises(ValueError, match="fps"):
        parse_amc(SMALL_AMC, small, fps=0)


# -- fuzzing: any damage gives a FormatError or a sound motion ---------------------------------

_WORDS = [
    "",
    "nan",
    "-inf",
    "1e999",
    "0",
    "-",
    "(",
    ")",
    "#",
    ":DEGREES",
    ":hierarchy",
    "begin",
    "end",
    "root",
    "lfemur",
    "dof",
    "rx",
    "limits",
    "12345678901234567890",
    "é",
    "\x00",
    "\t",
    "1.5.2",
    "ltibia",
    "XYZ",
]


@st.composite
def _mutations(draw, text: str):
    parts = re.split(r"(\s+)", text)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "duplicate", "replace", "truncate", "insert", "swap"]))
        tokens = [k for k, p in enumerate(parts) if p and not p.isspace()]
        if op in ("delete", "duplicate", "replace") and tokens:
            k = draw(st.sampled_from(tokens))
            if op == "delete":
                parts[k] = ""
            elif op == "duplicate":
                parts[k] = parts[k] + " " + parts[k]
            else:
                parts[k] = draw(st.sampled_from(_WORDS) | st.text(max_size=6))
        elif op == "truncate":
            joined = "".join(parts)
            parts = [joined[: draw(st.integers(0, len(joined)))]]
        elif op == "insert":
            joined = "".join(parts)
            at = draw(st.integers(0, len(joined)))
            junk = draw(st.text(max_size=8) | st.sampled_from(_WORDS))
            parts = re.split(r"(\s+)", joined[:at] + junk + joined[at:])
        else:
            lines = "".join(parts).split("\n")
            a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            parts = re.split(r"(\s+)", "\n".join(lines))
    return "".join(parts)


def _check_motion(motion) -> None:
    assert np.isfinite(motion.root_position).all()
    np.testing.assert_allclose(np.linalg.norm(motion.rotations, axis=-1), 1.0, atol=1e-12)


@pytest.fixture(scope="module")
def vicon_texts(data_dir):
    asf = (data_dir / "vicon.asf").read_text()
    amc_lines = (data_dir / "vicon.amc").read_text().split("\n")
    frame_lines = [k for k, line in enumerate(amc_lines) if line.strip() == "41"]
    amc = "\n".join(amc_lines[: frame_lines[0]]) + "\n"  # header + 40 frames
    return asf, amc, parse_asf(asf)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), target=st.sampled_from(["asf", "amc"]))
def test_mutated_files_fail_cleanly(vicon_texts, data, target):
    asf, amc, skeleton = vicon_texts
    if target == "amc":
        text = data.draw(_mutations(amc))
        try:
            motion = parse_amc(text, skeleton)
        except FormatError:
            return
        _check_motion(motion)
    else:
        text = data.draw(_mutations(asf))
        try:
            sk = parse_asf(text)
        except FormatError:
            return
        try:
            motion = parse_amc(amc, sk)
        except FormatError:
            return
        _check_motion(motion)
