"""Kinematic constraints of a motion, frame by frame (Lee & Shin 1999, §4.2).

A constraint set says, for each frame, where end-effectors must be (position
and/or orientation goals; NaN rows where a point is free), whether joint
limits hold, and which points must stay above the ground (:class:`Ground`).
"A variational constraint that holds over an interval of frames can be
realised by a sequence of constraints" (§4.2): a goal array simply repeats over
the interval. :meth:`Constraints.tasks` gives the constraints of some frames
as the tasks every solver consumes; the IK solvers take a :class:`Constraints`
(:class:`retarget.tasks.solver.IKSolver`). Footplants and constraint files are
made in :mod:`retarget.editing.constraints`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.arrays import Array
from ..core.kinematics import Pose
from ..core.skeleton import Skeleton
from ..environment.shapes import Shape, as_shape
from ..humanoid.contacts import UP
from .base import Task
from .collision import CollisionTask
from .ground import GroundTask
from .limits import JointLimitTask
from .orientation import OrientationTask
from .position import PositionTask

__all__ = ["Constraints", "Ground"]


@dataclass(frozen=True)
class Ground:
    """Points that must stay at or above a surface.

    Attributes
    ----------
    points : ndarray of int, shape (K,)
    clearance : ndarray, shape (K,) or (F, K)
        Height each point keeps above the surface (a joint sits above the sole);
        per frame for a character whose proportions change over the clip.
    surface : Shape or float
        The ground (:mod:`retarget.environment`; a number is the height of a level
        :class:`~retarget.environment.Floor`).
    """

    points: NDArray[np.intp]
    clearance: Array
    surface: Shape = 0.0  # type: ignore[assignment]

    def __post_init__(self) -> None:
        object.__setattr__(self, "surface", as_shape(self.surface, name="surface"))

    def height(self, xz: Array) -> Array:
        """The ground's height under horizontal positions ``xz (..., 2)``: the
        surface's :meth:`~retarget.environment.Shape.ground_height` (the highest
        surface a foot could stand on)."""
        return self.surface.ground_height(xz)

    def clearance_at(self, frames: NDArray[np.intp]) -> Array:
        """The clearances at ``frames``, shape (N, K)."""
        if self.clearance.ndim == 1:
            return np.broadcast_to(self.clearance, (len(frames), len(self.points)))
        return self.clearance[frames]

    def lowest(self, positions: Array, frames: NDArray[np.intp] | None = None) -> Array:
        """Lowest allowed height of each ground point, shape (..., K).

        ``positions`` (F, P, 3) of every frame, or (N, P, 3) of ``frames``.
        """
        p = positions[..., self.points, :]
        clearance = self.clearance if frames is None else self.clearance_at(frames)
        return self.height(np.delete(p, UP, axis=-1)) + clearance


@dataclass(frozen=True)
class Constraints:
    """Goals for some points at some frames.

    Attributes
    ----------
    num_frames : int
    positions : mapping of point index to ndarray (F, 3)
        Position goals, NaN rows where the point is free.
    orientations : mapping of point index to ndarray (F, 4)
        World orientation goals of the point's frame, NaN rows where free.
    transitions : mapping of point index to ndarray (F, 4)
        Soft position goals ``(track_x, track_y, track_z, s)``, NaN where none:
        at such a frame the point is pulled from where the current motion has it
        (``ref``) to ``ref + s (track − ref)``, ``0 < s ≤ 1``. Footplants use them
        to ease a foot into and out of a plant (IK blending), so the correction
        ramps instead of snapping.
    contact_points : frozenset of int
        Points whose position goals are footplants (they drive the initial root
        guess of §4.5).
    joint_limits : bool
        Keep every channel angle within the skeleton's limits.
    ground : Ground or None
        Points kept above a surface at every frame.
    apart : CollisionTask or None
        Pieces of the body (capsules on its joints) kept apart at every frame: an
        inequality like the ground's, a frame whose pose brings a pair within its margin
        is constrained (:meth:`violated_apart`).
    """

    num_frames: int
    positions: Mapping[int, Array] = field(default_factory=dict)
    orientations: Mapping[int, Array] = field(default_factory=dict)
    transitions: Mapping[int, Array] = field(default_factory=dict)
    contact_points: frozenset[int] = frozenset()
    joint_limits: bool = False
    ground: Ground | None = None
    apart: CollisionTask | None = None

    def __post_init__(self) -> None:
        for name, goals, width in (
            ("positions", self.positions, 3),
            ("orientations", self.orientations, 4),
            ("transitions", self.transitions, 4),
        ):
            frozen = {}
            for point, goal in goals.items():
                arr = np.array(goal, dtype=np.float64)
                if arr.shape != (self.num_frames, width):
                    raise ValueError(
                        f"goal of point {point} must have shape ({self.num_frames}, {width})"
                    )
                arr.setflags(write=False)
                frozen[int(point)] = arr
            object.__setattr__(self, name, MappingProxyType(frozen))

    def active(self) -> NDArray[np.bool_]:
        """Frames with at least one goal (position, orientation, transition), shape (F,)."""
        mask = np.zeros(self.num_frames, bool)
        goals_all = (
            *self.positions.values(),
            *self.orientations.values(),
            *self.transitions.values(),
        )
        for goals in goals_all:
            mask |= np.isfinite(goals).all(axis=1)
        return mask

    def goal_at(self, point: int, frames: NDArray[np.intp], reference: Array) -> Array:
        """Position goals of ``point`` at ``frames`` (N, 3): hard goals where set, else
        transition goals relative to the point's ``reference`` positions (N, 3), else NaN."""
        goal = np.full((len(frames), 3), np.nan)
        if point in self.transitions:
            tr = self.transitions[point][frames]
            have = np.isfinite(tr).all(axis=1)
            goal[have] = reference[have] + tr[have, 3:] * (tr[have, :3] - reference[have])
        if point in self.positions:
            hard = self.positions[point][frames]
            have = np.isfinite(hard).all(axis=1)
            goal[have] = hard[have]
        return goal

    def firmness(self, point: int, frames: NDArray[np.intp]) -> Array:
        """How firmly ``point`` is held at ``frames``, shape (N,): 2 for a hard goal
        (above any eased one), the transition weight (0‥1, 1 at a blend's last
        frame) for an eased goal, 0 when free."""
        weight = np.zeros(len(frames))
        if point in self.transitions:
            tr = self.transitions[point][frames]
            have = np.isfinite(tr).all(axis=1)
            weight[have] = tr[have, 3]
        if point in self.positions:
            weight[np.isfinite(self.positions[point][frames]).all(axis=1)] = 2.0
        return weight

    def violated_ground(self, pose: Pose, tolerance: float = 0.0) -> NDArray[np.bool_]:
        """Frames where a ground point is below its lowest allowed height, shape (F,)."""
        if self.ground is None:
            return np.zeros(pose.batch_shape, bool)
        gap = pose.positions[..., self.ground.points, UP] - self.ground.lowest(pose.positions)
        return np.asarray((gap < -tolerance).any(axis=-1))

    def violated_apart(self, pose: Pose, tolerance: float = 0.0) -> NDArray[np.bool_]:
        """Frames where a pair of :attr:`apart` is nearer than its margin, shape (F,)."""
        if self.apart is None or not self.apart.size:
            return np.zeros(pose.batch_shape, bool)
        return np.asarray((self.apart.gaps_below(pose, -tolerance) < -tolerance).any(axis=-1))

    def position_errors(self, pose: Pose) -> Array:
        """Distance of each goal point from its goal, NaN where free, shape (F, K)."""
        if not self.positions:
            return np.zeros((self.num_frames, 0))
        points = list(self.positions)
        goals = np.stack([self.positions[p] for p in points], axis=1)
        return np.linalg.norm(pose.positions[:, points] - goals, axis=-1)

    def tasks(
        self,
        skeleton: Skeleton,
        frames: NDArray[np.intp],
        reference: Array,
        *,
        position_weight: float,
        orientation_weight: float,
        limit_weight: float,
    ) -> list[Task]:
        """The constraints of ``frames`` as tasks (Lee & Shin 1999, §5.1's penalty terms).

        One :class:`PositionTask` per point with a position or transition goal
        (:meth:`goal_at`, by point index), one :class:`OrientationTask` per
        orientation goal, a :class:`JointLimitTask` when limits hold, a
        :class:`GroundTask` for the ground points, the :attr:`apart` task; a point
        with no goal at any of the frames gets no task.

        Parameters
        ----------
        skeleton : Skeleton
        frames : ndarray of int, shape (N,)
        reference : ndarray, shape (N, P, 3)
            The points' positions in the reference poses (transition goals are
            relative to them), in ``skeleton.unit``.
        position_weight : float
            Of position and ground tasks, in 1/unit².
        orientation_weight : float
            In 1/rad².
        limit_weight : float
            In 1/rad².
        """
        tasks: list[Task] = []
        points = set(self.positions) | set(self.transitions)
        for p in sorted(points):
            goal = self.goal_at(p, frames, reference[:, p])
            if np.isfinite(goal).any():
                tasks.append(PositionTask(p, goal, weight=position_weight))
        for p, goal in self.orientations.items():
            if np.isfinite(goal[frames]).any():
                tasks.append(OrientationTask(p, goal[frames], weight=orientation_weight))
        if self.joint_limits:
            tasks.append(JointLimitTask(skeleton, weight=limit_weight))
        ground = self.ground
        if ground is not None:
            tasks.append(
                GroundTask(
                    ground.points,
                    ground.surface,
                    ground.clearance_at(frames),
                    weight=position_weight,
                )
            )
        if self.apart is not None:
            tasks.append(dataclasses.replace(self.apart, weight=position_weight))
        return tasks

    def with_goals(
        self, positions: Mapping[int, Array] | None = None, **changes: Any
    ) -> Constraints:
        """A copy with more position goals (merged point by point: a later goal wins where set)."""
        merged = {p: g.copy() for p, g in self.positions.items()}
        for p, goal in (positions or {}).items():
            goal = np.asarray(goal, dtype=np.float64)
            if p in merged:
                set_rows = np.isfinite(goal).all(axis=1)
                merged[p][set_rows] = goal[set_rows]
            else:
                merged[p] = goal
        return dataclasses.replace(self, positions=merged, **changes)
