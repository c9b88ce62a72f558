"""Broken robot files through ``retarget info`` and ``retarget run``: exit 0, or exit 2 with
one line saying what is wrong; never a traceback (issue 39).

Each mutation changes one thing of a real model (the G1's MJCF, JVRC-1's URDF, a made
robot's primitives): a NaN or infinite position, a zero axis, a range upside down, no
mass, a joint removed, a name twice, the file cut short, a mesh that is not there, a
geometry of zero size, a slide or ball joint, garbage.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from robot_files import robot_path

from retarget.cli import main


def _first(root: ET.Element, tag: str, k: int = 1) -> ET.Element:
    """The ``k``-th element ``tag`` (1: the first) that has a name, in document order."""
    found = [e for e in root.iter(tag) if e.get("name")]
    return found[min(k, len(found)) - 1]


def _set(tag: str, key: str, value: str, k: int = 3) -> Callable[[ET.Element], None]:
    def change(root: ET.Element) -> None:
        _first(root, tag, k).set(key, value)

    return change


def _zero_size(root: ET.Element) -> None:
    """A link's geometry (not the world's floor) of size zero."""
    body = _first(root, "body", 3)
    geoms = list(body.iter("geom")) or [ET.SubElement(body, "geom", {"type": "sphere"})]
    geoms[0].set("type", "sphere")
    geoms[0].attrib.pop("mesh", None)
    geoms[0].set("size", "0")


def _remove(tag: str, k: int = 3) -> Callable[[ET.Element], None]:
    def change(root: ET.Element) -> None:
        victim = _first(root, tag, k)
        for parent in root.iter():
            if victim in list(parent):
                parent.remove(victim)
                return

    return change


def _rename_like(tag: str) -> Callable[[ET.Element], None]:
    def change(root: ET.Element) -> None:
        _first(root, tag, 4).set("name", _first(root, tag, 3).get("name", ""))

    return change


def _mjcf_inertial(key: str, value: str) -> Callable[[ET.Element], None]:
    def change(root: ET.Element) -> None:
        body = _first(root, "body", 3)
        inertial = body.find("inertial")
        if inertial is None:
            inertial = ET.SubElement(
                body, "inertial", {"pos": "0 0 0", "diaginertia": "1e-3 1e-3 1e-3"}
            )
        inertial.set(key, value)

    return change


def _urdf_link(tag: str, key: str, value: str) -> Callable[[ET.Element], None]:
    def change(root: ET.Element) -> None:
        for element in list(root.iter("link"))[3].iter(tag):
            element.set(key, value)
            return

    return change


def _urdf_joint(tag: str, key: str, value: str) -> Callable[[ET.Element], None]:
    def change(root: ET.Element) -> None:
        joint = [j for j in root.iter("joint") if j.get("type") == "revolute"][2]
        part = joint.find(tag)
        if part is None:
            part = ET.SubElement(joint, tag)
        part.set(key, value)

    return change


def _slide(root: ET.Element) -> None:
    _first(root, "joint", 3).set("type", "slide")


def _ball(root: ET.Element) -> None:
    joint = _first(root, "joint", 3)
    joint.set("type", "ball")
    joint.attrib.pop("axis", None)
    joint.attrib.pop("range", None)


def _no_hinges(root: ET.Element) -> None:
    for parent in root.iter():
        for child in list(parent):
            if child.tag == "joint" and child.get("type", "hinge") == "hinge":
                parent.remove(child)


def _missing_mesh(root: ET.Element) -> None:
    for mesh in root.iter("mesh"):
        if mesh.get("file"):
            mesh.set("file", "not_there.stl")
            return
        if mesh.get("filename"):
            mesh.set("filename", "meshes/not_there.stl")
            return


def _urdf_cycle(root: ET.Element) -> None:
    joints = [j for j in root.iter("joint") if j.get("type") == "revolute"]
    joints[0].find("parent").set("link", joints[1].find("child").get("link"))


#: name → (which model, the change; None: a text mutation below)
MJCF = {
    "nan_position": _set("body", "pos", "nan 0 0"),
    "infinite_position": _set("body", "pos", "0 inf 0"),
    "huge_position": _set("body", "pos", "0 0 1e300"),
    "zero_axis": _set("joint", "axis", "0 0 0"),
    "nan_axis": _set("joint", "axis", "nan 1 0"),
    "range_upside_down": _set("joint", "range", "1 -1"),
    "nan_range": _set("joint", "range", "nan 1"),
    "nan_quaternion": _set("body", "quat", "nan 0 0 0"),
    "zero_mass": _mjcf_inertial("mass", "0"),
    "negative_mass": _mjcf_inertial("mass", "-2"),
    "joint_removed": _remove("joint", 4),
    "body_removed": _remove("body", 3),
    "name_twice_bodies": _rename_like("body"),
    "name_twice_joints": _rename_like("joint"),
    "zero_size_geom": _zero_size,
    "zero_size_floor": _set("geom", "size", "0 0 0"),
    "slide_joint": _slide,
    "ball_joint": _ball,
    "no_hinges": _no_hinges,
    "missing_mesh": _missing_mesh,
}
URDF = {
    "urdf_nan_origin": _urdf_joint("origin", "xyz", "nan 0 0"),
    "urdf_zero_axis": _urdf_joint("axis", "xyz", "0 0 0"),
    "urdf_limits_upside_down": _urdf_joint("limit", "lower", "2"),
    "urdf_zero_mass": _urdf_link("mass", "value", "0"),
    "urdf_nan_inertia": _urdf_link("inertia", "ixx", "nan"),
    "urdf_cycle": _urdf_cycle,
    "urdf_missing_mesh": _missing_mesh,
}
TEXT = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "garbage": lambda text: "\x00\x01binary\xff" * 20,
    "not_a_robot": lambda text: "<scene><thing/></scene>",
    "unknown_element": lambda text: text.replace("<worldbody>", "<worldbody><bogus/>", 1),
}


def _write(source: Path, out: Path, change) -> Path:
    target = out / ("mutated" + source.suffix)
    if change in TEXT.values():
        target.write_text(change(source.read_text()))
        return target
    tree = ET.parse(source)
    root = tree.getroot()
    for key in ("meshdir",):  # keep the meshes found from the copy's folder
        compiler = root.find("compiler")
        if compiler is not None and compiler.get(key):
            compiler.set(key, str((source.parent / compiler.get(key, "")).resolve()))
    for mesh in root.iter("mesh"):
        name = mesh.get("filename")
        if name and not name.startswith(("package://", "file://", "/")):
            mesh.set("filename", str((source.parent / name).resolve()))
    change(root)
    tree.write(target, encoding="unicode")
    return target


CASES = [("g1", n, c) for n, c in MJCF.items()]
CASES += [("jvrc", n, c) for n, c in URDF.items()]
CASES += [("g1", n, c) for n, c in TEXT.items()]
CASES += [("suffix_servo", n, c) for n, c in list(MJCF.items())[:8]]


@pytest.mark.filterwarnings("ignore::retarget.core.errors.RetargetWarning")
@pytest.mark.parametrize(("robot", "name", "change"), CASES, ids=[f"{r}-{n}" for r, n, _ in CASES])
def test_a_broken_robot_file_gives_one_line(robot, name, change, data_dir, tmp_path, capsys):
    path = _write(robot_path(robot, data_dir.parent), tmp_path, change)
    for argv in (
        ["info", str(path)],
        [
            "run",
            str(data_dir / "lafan_walk.bvh"),
            "--target",
            str(path),
            "--frames",
            "0:12",
            "-o",
            str(tmp_path / "out.npz"),
        ],
    ):
        capsys.readouterr()
        status = main(argv)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if not line.startswith("retarget: warning")]
        assert status in (0, 2), (name, argv[0], status, err)
        if status == 2:
            assert len(lines) == 1 and lines[0].startswith("retarget: error: "), err
            assert re.search(r"mutated\.(xml|urdf)", lines[0]), lines[0]
        else:
            assert not lines, err
