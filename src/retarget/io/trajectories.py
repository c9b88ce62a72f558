"""Joint trajectories of a robot: the one type, and the files robotics users load.

A :class:`RobotTrajectory` is a robot's motion in its own coordinates: the floating
base's position and orientation and every hinge's angle, frame by frame, in the
model's joint order. Ours and other retargeters' (GMR's) are written and read the
same way:

* ``.npz``: ``root_pos`` (F, 3) m, ``root_quat`` (F, 4) w, x, y, z, ``dof_pos`` (F, D)
  rad, ``fps``, ``joint_names`` (D,): the keys GMR writes;
* ``.csv``: a header ``time,root_x,root_y,root_z,root_qw,root_qx,root_qy,root_qz,``
  then the joint names; one row a frame (seconds, metres, radians).

Which one a path is: :mod:`retarget.io.formats` (the registry of formats). The
conversions between a trajectory and a motion on the robot's skeleton belong to the
robot (:mod:`retarget.targets.robot.trajectories`).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.arrays import Array, frozen
from ..core.errors import FormatError
from .files import atomic_write

__all__ = ["RobotTrajectory", "read_csv", "read_npz", "write_csv", "write_npz"]

#: The CSV's first columns, before the joint names.
CSV_COLUMNS = ("time", "root_x", "root_y", "root_z", "root_qw", "root_qx", "root_qy", "root_qz")


@dataclass(frozen=True, eq=False)
class RobotTrajectory:
    """A robot's joint trajectories (read-only arrays).

    Attributes
    ----------
    root_pos : (F, 3)
        The floating base's position (m, the robot's world, z up).
    root_quat : (F, 4)
        Its orientation, w, x, y, z.
    dof_pos : (F, D)
        Hinge angles (rad), in ``joint_names`` order.
    fps : float
    joint_names : tuple of str, length D, optional
        The hinges' names (empty when a file gave none).
    """

    root_pos: Array
    root_quat: Array
    dof_pos: Array
    fps: float
    joint_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("root_pos", "root_quat", "dof_pos"):
            object.__setattr__(self, name, frozen(getattr(self, name)))
        object.__setattr__(self, "fps", float(self.fps))
        object.__setattr__(self, "joint_names", tuple(str(n) for n in self.joint_names))

    @property
    def num_frames(self) -> int:
        """F."""
        return len(self.dof_pos)

    def in_order(self, names: tuple[str, ...], *, path: str = "", line: int | None = None):
        """The trajectory with its columns in the order of ``names`` (by ``joint_names``
        where it has them; else as it is, checked for the count).

        Raises
        ------
        FormatError
            Joints of another robot, or another number of them; non-finite numbers.
        """
        dof = self.dof_pos
        if self.joint_names:
            unknown = [name for name in names if name not in self.joint_names]
            if unknown:
                raise FormatError(path, line and 1, f"not the robot's joints: no {unknown[:3]}")
            dof = dof[:, [self.joint_names.index(name) for name in names]]
        root, base = self.root_pos, self.root_quat
        if root.ndim != 2 or root.shape[1:] != (3,) or base.shape != (len(root), 4):
            raise FormatError(path, line, "expected root_pos (F, 3) and root_quat (F, 4)")
        if dof.shape != (len(root), len(names)):
            raise FormatError(
                path, line, f"expected dof_pos ({len(root)}, {len(names)}), got {dof.shape}"
            )
        if not (np.isfinite(root).all() and np.isfinite(base).all() and np.isfinite(dof).all()):
            raise FormatError(path, line, "expected finite numbers, found NaN or infinity")
        if not self.fps > 0:
            raise FormatError(path, line, f"expected a positive fps, got {self.fps}")
        return RobotTrajectory(root, base, dof, self.fps, names)


def write_npz(path: str | os.PathLike, trajectory: RobotTrajectory, *, inputs: tuple = ()) -> Path:
    """The ``.npz`` of the module docstring, written atomically, never over ``inputs``."""
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        root_pos=trajectory.root_pos,
        root_quat=trajectory.root_quat,
        dof_pos=trajectory.dof_pos,
        fps=np.float64(trajectory.fps),
        joint_names=np.array(trajectory.joint_names),
    )
    return atomic_write(Path(path), buffer.getvalue(), inputs=inputs)


def write_csv(path: str | os.PathLike, trajectory: RobotTrajectory, *, inputs: tuple = ()) -> Path:
    """The ``.csv`` of the module docstring, written atomically, never over ``inputs``."""
    t = trajectory
    rows = np.column_stack([np.arange(t.num_frames) / t.fps, t.root_pos, t.root_quat, t.dof_pos])
    text = io.StringIO()
    text.write(",".join([*CSV_COLUMNS, *t.joint_names]) + "\n")
    np.savetxt(text, rows, delimiter=",", fmt="%.9g")
    return atomic_write(Path(path), text.getvalue(), inputs=inputs)


def _missing(path: Path) -> None:
    if not path.is_file():
        raise FormatError(str(path), None, "no such file")


def read_npz(path: str | os.PathLike, names: tuple[str, ...] | None = None) -> RobotTrajectory:
    """An ``.npz`` of joint trajectories (ours or GMR's): the keys ``root_pos``,
    ``root_quat``, ``dof_pos``, ``fps`` and, when present, ``joint_names``; with
    ``names``, its columns in their order (:meth:`RobotTrajectory.in_order`)."""
    p = Path(path)
    _missing(p)
    try:
        with np.load(p, allow_pickle=False) as z:
            data = {k: np.asarray(z[k]) for k in z.files}
    except (OSError, ValueError) as exc:
        raise FormatError(str(p), None, f"not a readable .npz ({exc})") from None
    missing = [k for k in ("root_pos", "root_quat", "dof_pos", "fps") if k not in data]
    if missing:
        raise FormatError(
            str(p), None, f"expected the keys root_pos, root_quat, dof_pos, fps; no {missing}"
        )
    given = tuple(str(n) for n in data["joint_names"]) if "joint_names" in data else ()
    root, base, dof = (np.asarray(data[k], float) for k in ("root_pos", "root_quat", "dof_pos"))
    read = RobotTrajectory(root, base, dof, float(data["fps"]), given)
    return read if names is None else read.in_order(names, path=str(p))


def read_csv(path: str | os.PathLike, names: tuple[str, ...] | None = None) -> RobotTrajectory:
    """A ``.csv`` of joint trajectories with the header of the module docstring; the rate
    from the median step of its time column (30 frames/s for a single row); with
    ``names``, its columns in their order (:meth:`RobotTrajectory.in_order`)."""
    p = Path(path)
    _missing(p)
    lines = p.read_text().splitlines()
    head = lines[0].split(",") if lines else []
    if tuple(head[:8]) != CSV_COLUMNS:
        raise FormatError(str(p), 1, f"expected the header {','.join(CSV_COLUMNS)},<joints>")
    try:
        rows = np.loadtxt(lines[1:], delimiter=",", ndmin=2)
    except ValueError as exc:
        raise FormatError(str(p), None, f"expected {len(head)} numbers a row ({exc})") from None
    if rows.shape[1] != len(head):
        raise FormatError(str(p), 2, f"expected {len(head)} columns, found {rows.shape[1]}")
    step = np.diff(rows[:, 0])
    fps = float(1.0 / np.median(step)) if len(step) and np.median(step) > 0 else 30.0
    read = RobotTrajectory(rows[:, 1:4], rows[:, 4:8], rows[:, 8:], fps, tuple(head[8:]))
    return read if names is None else read.in_order(names, path=str(p), line=2)
