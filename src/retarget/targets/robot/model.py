"""Robots: MJCF and URDF models read into the one skeleton model.

A robot is a target like any other (DESIGN.md, "Kinds of target"): this reader
turns the model into a :class:`~retarget.core.skeleton.Skeleton` whose joints carry
the robot's own degrees of freedom, and keeps beside it what only a robot has
(:class:`Robot`: the joint order of the file, masses, actuator limits,
collision geometry), so every method runs on it unchanged and the writer puts
the result back in the robot's own joint order (:func:`joint_trajectories`).

The reader is MuJoCo's compiler (the ``mujoco`` package): it reads both MJCF
and URDF, resolves MJCF's defaults, classes and includes, fills inertias that
a file leaves out, and is what robotics users check their models with; a
hand-written parser would re-implement all of that and disagree with it at the
edges. URDF velocity limits, which MuJoCo's importer drops, are read from the
file's own ``<limit velocity>``.

From model to skeleton
----------------------
* **Frames**: every body's frame is turned to the world's axes at the zero
  configuration (``qpos = 0``): with ``W_b`` the world rotation of body ``b``
  there, the skeleton joint's frame is ``R_b W_b⁻¹``, so the rest pose (all
  rotations identity) is the zero configuration, offsets are ``W_p p_b`` (``p_b``
  the body's position in its parent) and a hinge of axis ``a`` (body frame)
  turns about ``W_b a``: its local rotation is ``exp(θ W_b a)``.
* **Hinges**: each hinge is one skeleton joint with one channel
  (``Xrotation``), named as the file names the hinge, whose axis rotation ``A``
  turns x onto ``W_b a``, so its channel angle is the hinge angle ``θ`` and its
  limits the hinge's range. A body with several hinges is a chain of joints at
  one place (the last one carries the body's mass and geometry); a ball joint
  is three channels (ZYX).
* **Fixed bodies**: a body without joints that carries jointed bodies is a
  joint without channels; one that does not (a toe, a hand, a head, an IMU
  mount) is an end site at its origin, its mass and geometry going to the
  joint it hangs from.
* **The floating base**: the robot's first body is the root (position and
  rotation channels) whether the file gives it a free joint or not (MuJoCo
  welds a URDF's root to the world): :attr:`Robot.fixed_base` records which.
* **Ends**: each leaf joint with collision geometry gets an end site at the point
  of its geometry farthest from it (a hand's fingertips, a foot's toe at the
  sole), so limbs without end bodies still have ends for the roles, and a
  foot's end is on its sole (a marker body such as the G1's ``left_toe_link``
  sits 1.5 cm above it: planted at the floor, it put the sole 2.5 cm under). An end body with
  geometry of its own (a head, a hand) stands at the middle of its geometry's
  bounding box (a head's origin is often at the neck), and its end where the
  geometry reaches farthest from the joint it hangs from (the top of the head).

Lengths are metres and the world is z-up, as in MJCF and URDF; the skeleton
records both (``unit="m"``, ``up="z"``).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...core import quat
from ...core.arrays import frozen
from ...core.errors import FormatError, warn
from ...core.kinematics import rest_pose
from ...core.skeleton import Skeleton

__all__ = [
    "Geom",
    "Robot",
    "model_format",
    "not_a_model",
    "read_robot",
]


_FREE, _BALL, _SLIDE, _HINGE = 0, 1, 2, 3
#: MuJoCo's geom types (mjtGeom) by number.
_GEOM_KINDS = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")


@dataclass(frozen=True)
class Geom:
    """One collision geometry, in its skeleton joint's frame (metres).

    ``kind`` is ``"sphere"``, ``"capsule"``, ``"cylinder"``, ``"box"``,
    ``"ellipsoid"`` or ``"mesh"``; ``size`` MuJoCo's (radius; radius and
    half-length; half-extents, ...); ``points`` (V, 3) the vertices of a mesh (its
    convex hull's, as MuJoCo compiled it) or the corners of the shape's bounding
    box otherwise, in the joint's frame."""

    joint: int
    kind: str
    size: NDArray[np.float64]
    position: NDArray[np.float64]
    rotation: NDArray[np.float64]
    points: NDArray[np.float64]

    def __post_init__(self) -> None:
        for name in ("size", "position", "rotation", "points"):
            object.__setattr__(self, name, frozen(getattr(self, name)))


@dataclass(frozen=True, eq=False)
class Robot:
    """A robot model as the library sees it.

    Attributes
    ----------
    skeleton : Skeleton
        Joints with the robot's degrees of freedom (module docstring), metres, z up.
    path : str
        The file read.
    joint_names : tuple of str, length D
        The hinge joints in the file's order (MuJoCo's ``qpos`` order after the
        floating base): the columns of :func:`joint_trajectories`.
    dof_joint : (D,) int
        The skeleton joint of each.
    lower, upper : (D,) float
        Joint ranges (radians; ``±inf`` where unlimited).
    velocity : (D,) float
        Velocity limits (rad/s; ``inf`` where the file gives none).
    effort : (D,) float
        Torque limits (N m) from the actuators or the joints' force ranges
        (``inf`` where none).
    masses : (J,) float
        kg per skeleton joint (fixed bodies folded in).
    centres : (J, 3) float
        Each joint's centre of mass in its frame (m).
    inertias : (J, 3, 3) float
        Each joint's inertia about its centre of mass, in its frame (kg m²).
    geoms : tuple of Geom
        Collision geometry.
    base_rotation : (4,) float
        ``W_root``: the root body's world rotation at the zero configuration; the
        robot's base quaternion is the skeleton root's rotation times it.
    fixed_base : bool
        Whether the file welds the root to the world (a URDF, an MJCF without a
        free joint): the skeleton floats it anyway.
    model : mujoco.MjModel, optional
        MuJoCo's compiled model of the file (its first body floated), compiled once by
        :func:`read_robot`: the measures' kinematics and collision detection use it.

    Arrays are read-only copies.
    """

    skeleton: Skeleton
    path: str
    joint_names: tuple[str, ...]
    dof_joint: NDArray[np.intp]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    velocity: NDArray[np.float64]
    effort: NDArray[np.float64]
    masses: NDArray[np.float64]
    centres: NDArray[np.float64]
    inertias: NDArray[np.float64]
    geoms: tuple[Geom, ...] = field(default=())
    base_rotation: NDArray[np.float64] = field(default_factory=lambda: np.array([1.0, 0, 0, 0]))
    fixed_base: bool = False
    model: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dof_joint", frozen(self.dof_joint, dtype=np.intp))
        for name in (
            "lower",
            "upper",
            "velocity",
            "effort",
            "masses",
            "centres",
            "inertias",
            "base_rotation",
        ):
            object.__setattr__(self, name, frozen(getattr(self, name)))
        object.__setattr__(self, "geoms", tuple(self.geoms))

    @property
    def num_dofs(self) -> int:
        """D, the number of hinge joints."""
        return len(self.joint_names)

    @property
    def mass(self) -> float:
        """Total mass, kg."""
        return float(self.masses.sum())


def not_a_model(path: str | Path) -> str:
    """Why ``path`` is read as no robot: it is missing, empty, not XML, or its first
    element is not ``<mujoco>`` (MJCF) or ``<robot>`` (URDF)."""
    p = Path(path)
    if not p.is_file():
        return "no such file"
    if p.stat().st_size == 0:
        return "the file is empty; expected an MJCF (<mujoco>) or URDF (<robot>) model"
    try:
        for _, element in ET.iterparse(p, events=("start",)):
            return (
                f"its first element is <{element.tag}>; expected an MJCF (<mujoco>) or "
                "URDF (<robot>) model"
            )
    except ET.ParseError as exc:
        return f"it is not XML ({exc}); expected an MJCF (<mujoco>) or URDF (<robot>) model"
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    return "it holds no element; expected an MJCF (<mujoco>) or URDF (<robot>) model"


def model_format(path: str | Path) -> str | None:
    """``"mjcf"`` or ``"urdf"``: what an XML file holds, by its root element
    (``<mujoco>``, ``<robot>``; the file read only as far as that element's start tag);
    None for neither, or for a file that is not XML."""
    try:
        for _, element in ET.iterparse(path, events=("start",)):
            return {"mujoco": "mjcf", "robot": "urdf"}.get(element.tag)
    except (ET.ParseError, OSError):
        return None
    return None


def _load(path: Path) -> tuple[Any, bool]:
    """MuJoCo's compiled model of ``path`` (MJCF or URDF), its first body floated by a
    free joint when the file welds it to the world (MuJoCo's URDF importer does), and
    whether it did; a one-line error otherwise (the line MuJoCo names, if any)."""
    try:
        import mujoco
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        raise FormatError(str(path), None, f"reading robots needs mujoco ({exc})") from None
    if not path.is_file():
        raise FormatError(str(path), None, "no such file")
    _numbers_finite(path)
    text = _resolved_urdf(path) if model_format(path) == "urdf" else None
    said: list[str] = []  # MuJoCo's own warnings, printed by it unless caught
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(said.append)
    try:
        model, fixed = _compile(path, text)
    finally:
        mujoco.set_mju_user_warning(previous)
    for message in said:  # (a NaN is an error of its own: _check_finite)
        if "NaN" not in message:
            warn(f"MuJoCo: {' '.join(message.split())}", path=str(path))
    return model, fixed


_ATTRIBUTE = re.compile(r'([\w:-]+)\s*=\s*("([^"]*)"|\'([^\']*)\')')


def _numbers_finite(path: Path) -> None:
    """A one-line error (file, line) for the first attribute of the file whose value is
    numbers one of which is not finite (``pos="nan 0 0"``, ``ixx="inf"``): MuJoCo
    compiles them as given (a URDF's NaN inertia balanced into a made-up one)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return
    for k, line in enumerate(lines, start=1):
        for match in _ATTRIBUTE.finditer(line):
            value = match.group(3) if match.group(3) is not None else match.group(4)
            words = value.split()
            try:
                numbers = [float(w) for w in words]
            except ValueError:
                continue
            if words and not np.all(np.isfinite(numbers)):
                raise FormatError(
                    str(path), k, f'{match.group(1)}="{value}": expected finite numbers'
                )


def _compile(path: Path, text: str | None) -> tuple[Any, bool]:
    """:func:`_load`'s compilation of ``path`` (or of ``text``, a URDF made readable),
    repaired where a tolerant reading is safe (:func:`_repair`, each with a warning)."""
    import mujoco

    try:
        if text is None:
            spec = mujoco.MjSpec.from_file(str(path))
        else:
            spec = mujoco.MjSpec.from_string(text)
        root = spec.worldbody.first_body()
        fixed = root is not None and not any(
            j.type == mujoco.mjtJoint.mjJNT_FREE for j in root.joints
        )
        if fixed and not root.joints:  # welded (a URDF's root): float it
            root.add_freejoint()
        notes: list[str] = []
        for _ in range(len(_REPAIRS) + 1):
            try:
                model = spec.compile()
                break
            except ValueError as exc:
                note = _repair(spec, str(exc), path)
                if note is None:
                    raise
                notes.append(note)
        else:  # pragma: no cover - each repair is made once
            raise ValueError("the model could not be repaired")
    except FormatError:
        raise
    except ValueError as exc:
        message = " ".join(str(exc).split())
        found = re.search(r"line(?: number)?[ =](\d+)", message, re.IGNORECASE)
        line = int(found.group(1)) if found else None
        raise FormatError(str(path), line, f"MuJoCo cannot compile it: {message}") from None
    for note in notes:
        warn(note, path=str(path))
    return model, fixed


#: What :func:`_repair` mends, once each: a part of the MuJoCo message it answers.
_REPAIRS = {
    "mass": "mass and inertia of moving bodies",
    "inertia": "inertia",
    "size": "must be positive",
}


def _repair(spec, message: str, path: Path) -> str | None:
    """Mend ``spec`` for the compiler's ``message`` where a tolerant reading is safe
    (what the URDF readers of the field, pinocchio and ROS, take as written), and say
    what was done; None when it cannot be (the error stands):

    * a moving body without mass (a link that only carries others): 1 mg and the
      least inertia MuJoCo takes (``boundmass``, ``boundinertia``; the kinematics the
      methods use are untouched, the physics filter gets a link of no weight);
      a negative mass is an error;
    * an inertia no body can have (iCub's ankles, Alexander's hand mounts): balanced
      (MuJoCo's ``balanceinertia``, which changes only the masses' spread), a mass
      without inertia given a 1 cm ball's (:func:`_fill_inertias`);
    * a geometry of zero size (ARMAR-4's): dropped, its body kept, since it has no
      volume to collide with.
    """
    bodies = list(spec.bodies)[1:]  # (the world's first)
    negative = [b.name for b in bodies if b.mass < 0]
    if negative:
        raise _at(
            path,
            negative[0],
            f"body {negative[0]!r} has a negative mass; expected a mass of 0 or more",
        )
    light = [b.name for b in bodies if b.mass <= 0 and b.first_joint() is not None]
    if _REPAIRS["mass"] in message and light and spec.compiler.boundmass <= 0:
        spec.compiler.boundmass = 1e-6
        spec.compiler.boundinertia = 1e-12
        return (
            f"{len(light)} moving bodies without mass ({', '.join(light[:3])}"
            f"{', ...' if len(light) > 3 else ''}) read as 1 mg"
        )
    if _REPAIRS["inertia"] in message and not spec.compiler.balanceinertia:
        spec.compiler.balanceinertia = True
        flat = _fill_inertias(spec, path)
        what = f"{len(flat)} without (as a 1 cm ball: {', '.join(flat[:3])}" + (
            ", ...)" if len(flat) > 3 else ")"
        )
        return (
            "inertias MuJoCo cannot take, read as near ones: those breaking A + B >= C "
            f"balanced (MuJoCo's balanceinertia){'; ' + what if flat else ''}"
        )
    if _REPAIRS["size"] in message:
        needed = {0: [2], 2: [0], 3: [0, 1], 4: [0, 1, 2], 5: [0, 1], 6: [0, 1, 2]}  # (a plane's
        # sides of 0 are infinite; its third number, the grid's spacing, must be positive)
        empty = [
            g
            for g in spec.geoms
            if int(g.type) in needed
            and np.any(np.asarray(g.size, dtype=float)[needed[int(g.type)]] <= 0)
            and not (int(g.type) in (3, 5) and np.isfinite(g.fromto).all() and g.size[0] > 0)
        ]
        if not empty:
            return None
        names = [g.name or f"a {_GEOM_KINDS[int(g.type)]}" for g in empty]
        for g in empty:
            spec.delete(g)
        listed = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return f"{len(empty)} geometries of zero size dropped ({listed})"
    return None


def _fill_inertias(spec, path: Path) -> list[str]:
    """Give every body of ``spec`` with a mass but an inertia no body can have (zero or
    not positive definite: iCub's ankles, 0.27 kg of zero inertia) the least inertia
    that makes it positive definite, and no less than a ball of its mass 1 cm across;
    the names of the bodies given one."""
    names = []
    for body in spec.bodies[1:]:  # (the world's first)
        if body.mass <= 0:
            continue
        floor = 0.4 * body.mass * 0.005**2
        full = np.asarray(body.fullinertia, dtype=float)
        if np.all(np.isfinite(full)):  # a full tensor, in the body's frame
            xx, yy, zz, xy, xz, yz = full
            tensor = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            least = float(np.linalg.eigvalsh(tensor)[0])
            if least >= floor * 1e-3:
                continue
            tensor += (floor - min(least, 0.0)) * np.eye(3)
            body.fullinertia = [*np.diag(tensor), tensor[0, 1], tensor[0, 2], tensor[1, 2]]
        else:  # principal moments (about ``iquat``'s axes)
            moments = np.asarray(body.inertia, dtype=float)
            if moments.min() >= floor * 1e-3:
                continue
            body.inertia = moments + (floor - min(float(moments.min()), 0.0))
        names.append(body.name)
    return names


def _package_file(urdf: Path, uri: str) -> Path | None:
    """Where ``package://PKG/REST`` (a ROS package path) is: ``REST`` (or its tail, the
    longest that exists) under the URDF's folder or one above it, nearest first, or
    under a folder of ``ROS_PACKAGE_PATH``; None when none exists. (A robot's
    description package holds ``urdf/`` and ``meshes/`` side by side, and packages
    are copied under other names: the tails find them wherever the copy lies.)"""
    rest = uri[len("package://") :].lstrip("/")
    parts = Path(rest).parts
    roots = list(urdf.resolve().parents)
    roots += [Path(d) for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d]
    for top in roots:
        if parts and (top / parts[0]).is_dir() and (top / rest).is_file():
            return top / rest
        for k in range(1, len(parts)):
            candidate = top.joinpath(*parts[k:])
            if candidate.is_file():
                return candidate
    return None


def _resolved_urdf(path: Path) -> str | None:
    """The URDF's text with its ``package://`` and ``file://`` mesh filenames resolved to
    files (:func:`_package_file`) and every mesh path absolute, for MuJoCo (which reads
    neither); None when it has none of them. A mesh not found is a one-line error."""
    try:
        tree = ET.parse(path)
    except (ET.ParseError, OSError):
        return None  # MuJoCo's own error says what is wrong
    meshes = [m for m in tree.getroot().iter("mesh") if m.get("filename")]
    if not any(str(m.get("filename")).startswith(("package://", "file://")) for m in meshes):
        return None
    for mesh in meshes:
        name = str(mesh.get("filename"))
        if name.startswith("package://"):
            found = _package_file(path, name)
            if found is None:
                raise FormatError(
                    str(path),
                    None,
                    f"mesh {name!r} not found in the folders above the file or in ROS_PACKAGE_PATH",
                )
        elif name.startswith("file://"):
            found = Path(name[len("file://") :])
        else:
            found = path.parent / name
        mesh.set("filename", str(found.resolve()))
    root = tree.getroot()
    extra = root.find("mujoco")
    if extra is None:
        extra = ET.SubElement(root, "mujoco")
    compiler = extra.find("compiler")
    if compiler is None:
        compiler = ET.SubElement(extra, "compiler")
    compiler.set("strippath", "false")  # the paths just made absolute
    return ET.tostring(root, encoding="unicode")


def _urdf_velocities(path: Path) -> dict[str, float]:
    """``<limit velocity>`` of each joint of a URDF (MuJoCo's importer drops them)."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return {}
    out: dict[str, float] = {}
    for joint in root.iter("joint"):
        limit = joint.find("limit")
        if limit is not None and limit.get("velocity") is not None:
            try:
                v = float(limit.get("velocity", "inf"))
            except ValueError:
                continue
            if v > 0:
                out[str(joint.get("name"))] = v
    return out


def _name(model, kind: str, i: int, fallback: str) -> str:
    name = getattr(model, kind)(i).name
    return name if name else fallback


def _matrix(q: NDArray[np.float64]) -> NDArray[np.float64]:
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


#: Unit directions to the 26 neighbours of a cube's centre: a round shape's surface
#: points (its top, its sides, between them), not its bounding box's corners (which
#: stand out of a sphere by 73 % of its radius: a head's end 4.5 cm to the side).
_DIRECTIONS = np.array(
    [(x, y, z) for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0, 1) if x or y or z],
    dtype=float,
)
_DIRECTIONS /= np.linalg.norm(_DIRECTIONS, axis=1, keepdims=True)


def _farthest(points: NDArray[np.float64], reach: NDArray[np.float64]) -> NDArray[np.float64]:
    """The point (3,) of ``points`` (N, 3) reaching farthest by ``reach`` (N,); the middle of
    those that tie (a rod's end: its rim's centre, not one point of the rim)."""
    top = float(reach.max())
    return points[reach >= top - 1e-6 * max(abs(top), 1.0)].mean(axis=0)


def _geom_points(model, g: int) -> NDArray[np.float64]:
    """Points of geom ``g``'s surface in its own frame: a mesh's vertices (its convex
    hull's, as MuJoCo compiled it), a box's corners, points of a round shape's surface
    along :data:`_DIRECTIONS` (a capsule's caps, a cylinder's rims)."""
    kind = int(model.geom_type[g])
    size = np.asarray(model.geom_size[g], dtype=float)
    if kind == 7 and model.geom_dataid[g] >= 0:
        m = int(model.geom_dataid[g])
        a, n = int(model.mesh_vertadr[m]), int(model.mesh_vertnum[m])
        return np.asarray(model.mesh_vert[a : a + n], dtype=float)
    if kind == 2:  # sphere
        return size[0] * _DIRECTIONS
    if kind == 3:  # capsule: half-spheres on the ends of its segment (z)
        caps = size[0] * _DIRECTIONS
        ends = np.where(caps[:, 2:] >= 0.0, size[1], -size[1]) * np.array([0.0, 0.0, 1.0])
        sides = size[0] * _DIRECTIONS[np.abs(_DIRECTIONS[:, 2]) < 1e-12]
        return np.concatenate([caps + ends, sides - [0.0, 0.0, size[1]]])
    if kind == 4:  # ellipsoid
        return size[:3] * _DIRECTIONS
    if kind == 5:  # cylinder: its rims
        turn = np.linspace(0.0, 2 * np.pi, 8, endpoint=False)
        rim = np.stack([size[0] * np.cos(turn), size[0] * np.sin(turn), np.ones(8)], axis=1)
        return np.concatenate([rim * [1.0, 1.0, size[1]], rim * [1.0, 1.0, -size[1]]])
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    return corners * size[:3]


def _collision_geoms(model, bodies: list[int], path: Path) -> set[int]:
    """The geoms of ``bodies`` read as the robot's collision geometry: those that collide
    (``contype`` or ``conaffinity`` set); when none does (a model made for a simulator
    that adds its own contacts: Apptronik's Apollo in MuJoCo Playground), the geoms of
    the highest-numbered group, where MuJoCo's models keep their collision shapes (group
    3; visual meshes in 0-2), with a warning. Every geom read is made to collide with the
    others in ``model`` (its bit masks set; the file's ``<exclude>`` pairs kept), so that
    MuJoCo's own detection sees the links that the methods keep apart."""
    own = [
        g
        for b in bodies
        for g in range(
            int(model.body_geomadr[b]), int(model.body_geomadr[b] + model.body_geomnum[b])
        )
        if 2 <= int(model.geom_type[g]) < len(_GEOM_KINDS)  # (planes, height fields: the world's)
    ]
    chosen = {g for g in own if int(model.geom_contype[g]) or int(model.geom_conaffinity[g])}
    if not chosen and own:
        top = max(int(model.geom_group[g]) for g in own)
        chosen = {g for g in own if int(model.geom_group[g]) == top}
        warn(
            f"no geometry collides (contype and conaffinity 0): the {len(chosen)} geoms of "
            f"group {top} read as the collision geometry",
            path=str(path),
        )
    for g in chosen:  # (and its body's masks, which MuJoCo's broad phase reads first:
        model.geom_contype[g] = 1  # set on the geoms alone, Apollo's links went through
        model.geom_conaffinity[g] = 1  # each other 1.6 cm deep while MuJoCo saw none)
        b = int(model.geom_bodyid[g])
        model.body_contype[b] |= 1
        model.body_conaffinity[b] |= 1
    return chosen


#: (MuJoCo's array, the kind of element it belongs to, what it holds): the numbers a
#: model must have finite (MuJoCo compiles a NaN or an infinity as given).
_FINITE = (
    ("body_pos", "body", "position"),
    ("body_quat", "body", "orientation"),
    ("body_mass", "body", "mass"),
    ("body_inertia", "body", "inertia"),
    ("body_ipos", "body", "centre of mass"),
    ("jnt_pos", "jnt", "anchor"),
    ("jnt_axis", "jnt", "axis"),
    ("jnt_range", "jnt", "range"),
    ("geom_pos", "geom", "position"),
    ("geom_quat", "geom", "orientation"),
    ("geom_size", "geom", "size"),
)


#: A body farther than this from the origin at the zero configuration (m) is an error.
_FAR = 1e3


def _line_of(path: Path, name: str) -> int | None:
    """The first line of ``path`` giving ``name="..."`` (a body's, a joint's), or None."""
    try:
        for k, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            if f'name="{name}"' in line or f"name='{name}'" in line:
                return k
    except OSError:
        return None
    return None


def _check_finite(path: Path, model, data) -> None:
    """A one-line error for the first element of ``model`` whose numbers are not finite
    (MuJoCo compiles ``nan``, ``inf`` and overflowing values as they are), or whose
    placement at the zero configuration is not (a position of 1e300 squared)."""
    kinds = {"body": ("body", "body"), "jnt": ("joint", "joint"), "geom": ("geom", "geom")}
    checks = [(getattr(model, a), k, what) for a, k, what in _FINITE]
    checks.append((data.xpos, "body", "place at the zero configuration"))
    checks.append((data.xquat, "body", "orientation at the zero configuration"))
    for values, kind, what in checks:
        bad = ~np.isfinite(np.asarray(values, dtype=float)).reshape(len(values), -1).all(axis=1)
        if not bad.any():
            continue
        i = int(np.flatnonzero(bad)[0])
        word, lookup = kinds[kind]
        name = getattr(model, lookup)(i).name or f"#{i}"
        shown = " ".join(f"{v:g}" for v in np.ravel(values[i]))
        raise _at(
            path, name, f"{word} {name!r}: its {what} is not finite ({shown}); expected numbers"
        )
    lo, hi = np.asarray(model.jnt_range, dtype=float).T
    upside = lo > hi  # (MuJoCo then takes the joint as unlimited)
    if upside.any():  # (MuJoCo compiles a range upside down as given)
        j = int(np.flatnonzero(upside)[0])
        name = model.joint(j).name or f"#{j}"
        raise _at(
            path,
            name,
            f"joint {name!r} has its range upside down ({lo[j]:g} above {hi[j]:g}); "
            "expected the lower limit first",
        )
    far = np.linalg.norm(np.asarray(data.xpos, dtype=float), axis=1) > _FAR
    if far.any():  # (a body placed a kilometre away: a typo's 1e300, not a humanoid)
        i = int(np.flatnonzero(far)[0])
        name = model.body(i).name or f"#{i}"
        raise _at(
            path,
            name,
            f"body {name!r} stands {np.linalg.norm(data.xpos[i]):.3g} m from the origin at "
            f"the zero configuration; expected a robot within {_FAR:g} m",
        )


def _at(path: Path, name: str, message: str) -> FormatError:
    """The one-line error of ``message`` at the line of ``path`` that names ``name``."""
    return FormatError(str(path), _line_of(path, name), message)


def _root_body(model) -> int:
    """The robot's first body: the child of the world with the most bodies below it."""
    below = np.zeros(model.nbody, dtype=int)
    for b in range(model.nbody - 1, 0, -1):
        below[b] += 1
        below[model.body_parentid[b]] += below[b]
    tops = [b for b in range(1, model.nbody) if model.body_parentid[b] == 0]
    if not tops:
        raise ValueError("the model has no bodies")
    return max(tops, key=lambda b: below[b])


def _forward(
    foot: int,
    parents: list[int],
    channels: list[tuple[str, ...]],
    axes: list[NDArray[np.float64]],
    limits: list[NDArray[np.float64]],
    rest: NDArray[np.float64],
    point: NDArray[np.float64],
) -> NDArray[np.float64] | None:
    """Which way the robot faces (a horizontal unit vector), from a leg: its knee, the
    first hinge up from ``foot``, a fifth of the leg or more above the foot's ``point``
    (not an ankle's: Apollo's ankle pitch bends 1.57 rad one way, 0.44 the other),
    whose range bends one way (a radian or more that way,
    half a radian at most the other: iCub's knees reach 23° past straight) and whose
    turn moves the foot's ``point`` (in the foot joint's frame) sideways of the bone
    (a quarter of its distance or more, for half a radian), bends the shin back; None
    when the leg has no such hinge. (A foot's sole is not a guide: TALOS's reaches
    11 cm behind its ankle and 10 cm ahead; the first hinge, not the one that moves
    the foot most: iCub's hip roll bends one way too, and swings the whole leg.)"""
    at = rest[foot] + point
    chain = [foot]
    while chain[-1] > 0:
        chain.append(parents[chain[-1]])
    leg = float(np.linalg.norm(rest[chain[-2]] - at))  # from the leg's top
    k = foot
    while k > 0:
        lo, hi = limits[k][0] if len(channels[k]) == 1 else (-np.inf, np.inf)
        high = float(np.linalg.norm(rest[k] - at)) >= 0.2 * leg
        if high and len(channels[k]) == 1 and max(-lo, hi) >= 1.0 and min(-lo, hi) <= 0.5:
            theta = 0.5 if hi >= 1.0 else -0.5
            a = quat.rotate(axes[k], np.array([1.0, 0.0, 0.0]))
            v = at - rest[k]
            moved = quat.rotate(quat.quat_from_rotvec(theta * a), v) - v
            flat = np.array([moved[0], moved[1], 0.0])
            size = float(np.linalg.norm(flat))
            if size >= 0.25 * float(np.linalg.norm(v)) > 0.0:
                return -flat / size
        k = parents[k]
    return None


def _sole_tip(
    points: NDArray[np.float64], forward: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """The tip (3,) of a foot's geometry ``points`` (N, 3), in its joint's frame: on
    its sole (the points within 2 mm of the lowest), along the foot's long axis
    (its principal axis in the floor's plane, turned the way the robot faces,
    ``forward``, :func:`_forward`; without it, away from the joint), as far as the
    sole reaches, on the foot's midline (its long axis and the halfway between its
    farthest points either side of it, from the whole geometry: a hull's few sole
    points can be lopsided), at the sole's lowest point's height (a rounded or tilted
    sole's points within 2 mm of the lowest are up to 2 mm above it) or, where the front
    of the foot stands higher (a sole pitched toe up at rest, Berkeley Humanoid's 2.8 cm;
    a row of capsules' rounded front), at the lowest of the points within 8 % of the
    foot's length of its front: a point of the foot itself, so that the toe the methods
    plant and the measures read is the one that touches the floor, not a point under
    it in the air. (The farthest
    point itself is a corner of the sole, 3.5 cm to the side on the G1: aimed at, it
    turned the foot 15° for the methods; the middle of the front edge's points is a
    corner too where a hull leaves one front corner out, JVRC-1's 4.2 cm to the side:
    its feet turned out 17°, its hip yaws at their limits.)"""
    sole = points[points[:, 2] <= points[:, 2].min() + 0.002]
    centre = points.mean(axis=0)
    spread = (points - centre) * np.array([1.0, 1.0, 0.0])
    _, _, vt = np.linalg.svd(spread, full_matrices=False)
    way = centre if forward is None else forward
    axis = vt[0] if float(vt[0] @ way) >= 0.0 else -vt[0]
    across = np.cross([0.0, 0.0, 1.0], axis)
    side = points @ across
    reach = sole @ axis
    if np.ptp(reach) < 0.5 * np.ptp(points @ axis):  # a foot pitched at rest: its edge
        reach = points @ axis  # alone within 2 mm (Berkeley's toe up: the tip its heel)
    tip = reach.max() * axis + 0.5 * (side.min() + side.max()) * across
    front = points[points @ axis >= reach.max() - 0.08 * np.ptp(points @ axis)]
    tip[2] = front[:, 2].min() if len(front) else points[:, 2].min()
    return tip


def read_robot(path: str | Path) -> Robot:
    """Read an MJCF or URDF robot (module docstring).

    Raises
    ------
    FormatError
        A file MuJoCo cannot compile (its message, one line), a model without
        bodies or hinges, or slide joints (not supported).
    """
    import mujoco

    p = Path(path)
    model, fixed_base = _load(p)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)  # qpos0: the zero configuration
    _check_finite(p, model, data)
    try:
        root = _root_body(model)
    except ValueError as exc:
        raise FormatError(str(p), None, f"{exc}") from None
    parent_of = np.asarray(model.body_parentid)
    bodies = [b for b in range(model.nbody) if b == root or _descends(parent_of, b, root)]
    world_rot = {b: np.asarray(data.xquat[b], dtype=float) for b in bodies}
    world_pos = {b: np.asarray(data.xpos[b], dtype=float) for b in bodies}
    jointed = {b: int(model.body_jntnum[b]) > 0 for b in bodies}
    carries = dict.fromkeys(bodies, False)  # a jointed body below (or itself)
    for b in reversed(bodies):
        if jointed[b] or carries[b]:
            carries[b] = True
            if b != root:
                carries[int(parent_of[b])] = True
    velocity_of = _urdf_velocities(p) if model_format(p) == "urdf" else {}

    names: list[str] = []
    parents: list[int] = []
    offsets: list[NDArray[np.float64]] = []
    channels: list[tuple[str, ...]] = []
    axes: list[NDArray[np.float64]] = []
    limits: list[NDArray[np.float64]] = []
    site_names: list[str] = []
    site_parents: list[int] = []
    site_offsets: list[NDArray[np.float64]] = []
    site_body: dict[int, int] = {}  # site → the end body it stands for
    body_joint: dict[int, int] = {}  # body → the skeleton joint carrying its frame
    anchor: dict[int, NDArray[np.float64]] = {}  # body → its joint's world position at rest
    dofs: list[tuple[int, str, int, float, float, float]] = []  # qposadr, name, joint, lo, hi, v
    unbounded = np.tile([-np.inf, np.inf], (3, 1))
    for b in bodies:
        bname = _name(model, "body", b, f"body{b}")
        if b == root:
            kinds = [int(model.jnt_type[j]) for j in _joints(model, b)]
            if any(k != _FREE for k in kinds):
                raise FormatError(
                    str(p),
                    None,
                    f"the root body {bname!r} has joints other than a free joint; "
                    "give the robot a floating base (or a fixed one) at its root",
                )
            names.append(bname)
            parents.append(-1)
            offsets.append(world_pos[b].copy())
            channels.append(
                ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation")
            )
            axes.append(np.array([1.0, 0.0, 0.0, 0.0]))
            limits.append(unbounded)
            body_joint[b] = 0
            anchor[b] = world_pos[b].copy()
            continue
        up = body_joint[int(parent_of[b])]
        up_pos = anchor[int(parent_of[b])]
        if not carries[b] and not jointed[b]:  # an end body: a site
            site_body[len(site_names)] = b
            site_names.append(bname)
            site_parents.append(up)
            site_offsets.append(world_pos[b] - up_pos)
            body_joint[b] = up
            anchor[b] = up_pos
            continue
        here = up_pos
        joint_ids = list(_joints(model, b))
        for k, j in enumerate(joint_ids):
            kind = int(model.jnt_type[j])
            jname = _name(model, "joint", j, f"{bname}_joint{k}")
            if kind == _SLIDE:
                raise FormatError(
                    str(p), None, f"joint {jname!r} slides; slide joints are not supported"
                )
            if kind == _FREE:
                raise FormatError(str(p), None, f"body {bname!r} has a second free joint")
            centre = world_pos[b] + _matrix(world_rot[b]) @ np.asarray(model.jnt_pos[j], float)
            names.append(jname)
            parents.append(len(names) - 2 if k > 0 else up)
            offsets.append(centre - here)
            here = centre
            if kind == _BALL:
                channels.append(("Zrotation", "Yrotation", "Xrotation"))
                axes.append(np.array([1.0, 0.0, 0.0, 0.0]))
                limits.append(unbounded)
                continue
            axis = _matrix(world_rot[b]) @ np.asarray(model.jnt_axis[j], float)
            axis /= np.linalg.norm(axis)
            channels.append(("Xrotation",))
            axes.append(quat.quat_between(np.array([1.0, 0.0, 0.0]), axis))
            lo, hi = -np.inf, np.inf
            if bool(model.jnt_limited[j]):
                lo, hi = (float(v) for v in model.jnt_range[j])
            lim = unbounded.copy()
            lim[0] = (lo, hi)
            limits.append(lim)
            dofs.append(
                (
                    int(model.jnt_qposadr[j]),
                    jname,
                    len(names) - 1,
                    lo,
                    hi,
                    velocity_of.get(jname, np.inf),
                )
            )
        if not joint_ids:  # fixed, carrying jointed bodies: a joint without channels
            names.append(bname)
            parents.append(up)
            offsets.append(world_pos[b] - here)
            here = world_pos[b]
            channels.append(())
            axes.append(np.array([1.0, 0.0, 0.0, 0.0]))
            limits.append(unbounded)
        body_joint[b] = len(names) - 1
        anchor[b] = here
    if not dofs:
        raise FormatError(str(p), None, "the robot has no hinge joints")
    dofs.sort()
    n_j = len(names)
    colliding = _collision_geoms(model, bodies, p)
    # mass model and geometry, folded onto skeleton joints, in their (world-aligned) frames
    masses = np.zeros(n_j)
    first = np.zeros((n_j, 3))
    second = np.zeros((n_j, 3, 3))
    geoms: list[Geom] = []
    geom_body: list[int] = []
    for b in bodies:
        j = body_joint[b]
        rot = _matrix(world_rot[b])
        m = float(model.body_mass[b])
        if m > 0:
            c = world_pos[b] + rot @ np.asarray(model.body_ipos[b], float) - anchor[b]
            ri = rot @ _matrix(np.asarray(model.body_iquat[b], float))
            inertia = ri @ np.diag(np.asarray(model.body_inertia[b], float)) @ ri.T
            masses[j] += m
            first[j] += m * c
            second[j] += inertia + m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        for g in range(
            int(model.body_geomadr[b]), int(model.body_geomadr[b] + model.body_geomnum[b])
        ):
            if g not in colliding:
                continue
            shape = _GEOM_KINDS[int(model.geom_type[g])]
            grot = rot @ _matrix(np.asarray(model.geom_quat[g], float))
            gpos = world_pos[b] + rot @ np.asarray(model.geom_pos[g], float) - anchor[b]
            pts = _geom_points(model, g) @ grot.T + gpos
            geom_body.append(b)
            geoms.append(
                Geom(
                    joint=j,
                    kind=shape,
                    size=np.asarray(model.geom_size[g], float).copy(),
                    position=gpos,
                    rotation=quat.quat_from_matrix(grot),
                    points=pts,
                )
            )
    centres = np.divide(first, masses[:, None], out=np.zeros_like(first), where=masses[:, None] > 0)
    inertias = second - masses[:, None, None] * (
        np.einsum("jk,jk->j", centres, centres)[:, None, None] * np.eye(3)
        - np.einsum("ja,jb->jab", centres, centres)
    )
    # an end body with geometry (a head, a hand) stands at its geometry's middle, and
    # its end where that geometry reaches farthest from the joint it hangs from
    for k, b in site_body.items():
        pts = [g.points for g, gb in zip(geoms, geom_body, strict=True) if gb == b]
        if not pts:
            continue
        box = np.concatenate(pts)
        centre = 0.5 * (box.min(axis=0) + box.max(axis=0))
        site_offsets[k] = centre
        direction = centre / max(float(np.linalg.norm(centre)), 1e-12)
        site_names.append(_unique(f"{site_names[k]}_end", names, site_names))
        site_parents.append(site_parents[k])
        site_offsets.append(_farthest(box, box @ direction))
    # ends: the tip of each leaf joint's geometry (a sole's front edge, a hand's fingertips)
    has_child = np.zeros(n_j, dtype=bool)
    has_child[[q for q in parents if q >= 0]] = True
    rest = np.zeros((n_j, 3))
    for j in range(1, n_j):
        rest[j] = rest[parents[j]] + offsets[j]
    lowest = min((float((g.points[:, 2] + rest[g.joint, 2]).min()) for g in geoms), default=0.0)
    for j in range(1, n_j):
        if has_child[j]:
            continue
        pts = np.concatenate([g.points for g in geoms if g.joint == j] or [np.zeros((0, 3))])
        if not len(pts):
            continue
        site_names.append(_unique(f"{names[j]}_end", names, site_names))
        site_parents.append(j)
        if pts[:, 2].min() + rest[j, 2] <= lowest + 0.02:  # a foot: its sole's tip
            forward = _forward(j, parents, channels, axes, limits, rest, pts.mean(axis=0))
            site_offsets.append(_sole_tip(pts, forward))
        else:
            site_offsets.append(_farthest(pts, np.linalg.norm(pts, axis=1)))
    # the top of the body, where the geometry reaches above every joint and end by a
    # tenth of the height (a head that is part of its torso's link, the H1's; a
    # trunk without a head): a site there, on the link the geometry belongs to
    if geoms:
        heights = [float((g.points[:, 2] + rest[g.joint, 2]).max()) for g in geoms]
        k = int(np.argmax(heights))
        marks = [rest[:, 2].max()] + [
            float(rest[q, 2] + o[2]) for q, o in zip(site_parents, site_offsets, strict=True)
        ]
        tall = heights[k] - lowest
        if heights[k] - max(marks) > 0.1 * tall:  # (at the middle of its top 2 %)
            crown = geoms[k]
            cap = crown.points[crown.points[:, 2] >= crown.points[:, 2].max() - 0.02 * tall]
            top = cap.mean(axis=0)
            top[2] = crown.points[:, 2].max()
            site_names.append(_unique(f"{names[crown.joint]}_top", names, site_names))
            site_parents.append(crown.joint)
            site_offsets.append(top)

    effort = _efforts(model, [d[0] for d in dofs])
    skeleton = Skeleton(
        names=tuple(names),
        parents=np.asarray(parents),
        offsets=np.asarray(offsets),
        channels=tuple(channels),
        site_names=tuple(site_names),
        site_parents=np.asarray(site_parents, dtype=np.intp),
        site_offsets=np.asarray(site_offsets).reshape(-1, 3),
        unit="m",
        axes=np.asarray(axes),
        limits=np.asarray(limits),
        up="z",
    )
    skeleton, bent, capped = _humanlike_ranges(skeleton)
    if bent:
        warn(
            f"no range on {', '.join(bent)}: bent one way only, as a human's knees and elbows bend",
            path=str(p),
        )
    if capped:
        warn(
            f"no range on {', '.join(capped)}: each turns at most "
            f"{np.degrees(_UNLIMITED):.0f} degrees from its zero, as a human's joints do",
            path=str(p),
        )
    return Robot(
        skeleton=skeleton,
        path=str(p),
        joint_names=tuple(d[1] for d in dofs),
        dof_joint=np.asarray([d[2] for d in dofs], dtype=np.intp),
        lower=np.asarray([d[3] for d in dofs]),
        upper=np.asarray([d[4] for d in dofs]),
        velocity=np.asarray([d[5] for d in dofs]),
        effort=effort,
        masses=masses,
        centres=centres,
        inertias=inertias,
        geoms=tuple(geoms),
        base_rotation=world_rot[root],
        fixed_base=fixed_base,
        model=model,
    )


def _humanlike_ranges(
    skeleton: Skeleton,
) -> tuple[Skeleton, tuple[str, ...], tuple[str, ...]]:
    """``skeleton`` with each knee and elbow hinge the model leaves unlimited (Robotis
    OP3's: servos turning all the way round) given the half-turn a human's bends in:
    the knee the way that moves the ankle back, the elbow the way that moves the wrist
    forward (up, for an arm held out sideways at rest), and every other unlimited hinge
    :data:`_UNLIMITED` either way; the names of the hinges bent one way and of the
    others. (Free both ways, the methods bent the OP3's knees backward on one step in
    three.)"""
    from ...humanoid.anatomy import hinge_axis, read_anatomy

    body = read_anatomy(skeleton)
    limits = np.array(skeleton.limits, dtype=float)
    bent: list[str] = []
    if body is None:
        return _capped(skeleton, limits, bent)
    pos = rest_pose(skeleton)[0]
    forward = np.cross(body.left, body.up)
    for side in ("left", "right"):
        for middle, end, back in (("knee", "ankle", True), ("elbow", "wrist", False)):
            j, k = body.points.get(f"{side}_{middle}"), body.points.get(f"{side}_{end}")
            if j is None or k is None or len(skeleton.euler_orders[j]) != 1:
                continue
            c = "XYZ".index(skeleton.euler_orders[j])
            if np.isfinite(limits[j, c]).any():
                continue
            moves = np.cross(hinge_axis(skeleton, j), pos[k] - pos[j])  # for a turn of +θ
            way = float(moves @ forward)
            if not back and abs(way) < 0.3 * float(np.linalg.norm(moves)):
                way = float(moves @ body.up)  # (an arm held out sideways)
            positive = way < 0.0 if back else way > 0.0
            limits[j, c] = (0.0, np.pi) if positive else (-np.pi, 0.0)
            bent.append(skeleton.names[j])
    return _capped(skeleton, limits, bent)


def _capped(
    skeleton: Skeleton, limits: NDArray[np.float64], bent: list[str]
) -> tuple[Skeleton, tuple[str, ...], tuple[str, ...]]:
    """``skeleton`` with ``limits``, every hinge still unlimited capped at
    :data:`_UNLIMITED` (:func:`_humanlike_ranges`)."""
    capped = []
    for j, order in enumerate(skeleton.euler_orders):  # any other: _UNLIMITED either way
        if len(order) == 1 and not np.isfinite(limits[j, "XYZ".index(order)]).any():
            limits[j, "XYZ".index(order)] = (-_UNLIMITED, _UNLIMITED)
            capped.append(skeleton.names[j])
    if not bent and not capped:
        return skeleton, (), ()
    return skeleton.replace(limits=limits), tuple(bent), tuple(capped)


#: A hinge the model leaves unlimited that is not a knee or an elbow turns at most this
#: far (rad) from its zero either way, as a human's joints do: a ball's hinges then
#: have one decomposition near the pose (three-quarters of a half turn excludes the
#: other, ``(a + π, π − b, c + π)``, while the middle hinge turns under 45°). (Robotis
#: OP3's servos have no range: free all the way round, its hips' hinges took the other
#: decomposition and wound through whole turns; on the first 2,400 frames of the LAFAN
#: walk by ``hierarchical``, ±π: body jerk 584 times the source's; ±3π/4: 271 (3,140
#: unlimited), links into each other on 1.4 % of frames (36 %).)
_UNLIMITED = 0.75 * np.pi


def _descends(parent_of: NDArray[np.intp], b: int, top: int) -> bool:
    while b > 0:
        if b == top:
            return True
        b = int(parent_of[b])
    return False


def _joints(model, b: int) -> range:
    a = int(model.body_jntadr[b])
    return range(a, a + int(model.body_jntnum[b])) if a >= 0 else range(0)


def _unique(name: str, *taken: list[str]) -> str:
    used = {n for names in taken for n in names}
    out, k = name, 1
    while out in used:
        k += 1
        out = f"{name}{k}"
    return out


def _efforts(model, qpos_addresses: list[int]) -> NDArray[np.float64]:
    """Torque limit per hinge (its qpos address): the actuators' force range times gear
    where an actuator drives it, else the joint's own ``actuatorfrcrange``; ``inf``."""
    out = np.full(len(qpos_addresses), np.inf)
    by_qpos = {int(model.jnt_qposadr[j]): j for j in range(model.njnt)}
    for k, a in enumerate(qpos_addresses):
        j = by_qpos[a]
        if model.jnt_actfrclimited[j]:
            lo, hi = model.jnt_actfrcrange[j]
            out[k] = float(max(abs(lo), abs(hi)))
    for act in range(model.nu):
        if int(model.actuator_trntype[act]) != 0:  # not a joint transmission
            continue
        j = int(model.actuator_trnid[act, 0])
        a = int(model.jnt_qposadr[j])
        if a not in qpos_addresses or not model.actuator_forcelimited[act]:
            continue
        lo, hi = model.actuator_forcerange[act]
        gear = abs(float(model.actuator_gear[act, 0])) or 1.0
        k = qpos_addresses.index(a)
        out[k] = min(out[k], float(max(abs(lo), abs(hi))) * gear)
    return out
