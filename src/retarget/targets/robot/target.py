"""Humanoid robots as targets: an MJCF or URDF model read through MuJoCo once, its hinges
gathered into the joints the methods run on, the result carried back onto the hinges
and written as the joint trajectories robotics users load.

Opened once (:func:`open_robot`: MuJoCo compiles the model once, the hinges are
gathered once); for each clip the methods run on the gathered skeleton
(:func:`retarget.targets.robot.hinges.gather_hinges`) with the robot's own mass model
and torque limits for the physics filter, its zero configuration's feet
(``plant_heights="rest"``) and its joint ranges (``limits="strict"``); the result is
carried onto the hinges by one IK pass (:func:`retarget.targets.robot.hinges.to_robot`)
and measured as robotics users measure, through MuJoCo's kinematics and collision
(:func:`retarget.targets.robot.measures.measure_robot`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.motion import Motion
from ...core.skeleton import Skeleton
from ...humanoid.world import metres_per_unit
from ...io.formats import trajectory_suffixes, write_trajectories
from ...io.trajectories import RobotTrajectory
from ...physics.body import Body
from ..base import Carried, Finished, Prepared
from .apart import apart_on
from .hinges import Gathered, gather_hinges, inertia_on, to_robot
from .measures import measure_robot
from .model import Robot, read_robot
from .trajectories import joint_trajectories

if TYPE_CHECKING:
    from ...humanoid.mapping import ForMethod

__all__ = ["RobotTarget", "open_robot"]


@dataclass(frozen=True, eq=False)
class RobotTarget:
    """A robot (``robot``, read from ``path``) as a target.

    Parameters
    ----------
    robot : Robot
    velocity_limit : float, optional
        The hinges' speed limit (rad/s) where the model gives none: the result is
        slew-rate limited to it and measured against it.
    apart_in_methods : bool
        The robot's links kept apart inside the method too (:func:`apart_on`: an
        inequality of hierarchical's fit), not only in the IK pass after it. Off by
        default: with the capsules the IK pass keeps apart, on the whole LAFAN walk it
        moved the links MuJoCo finds into each other by under two points of the share of
        frames (the Booster T1 17.2 % -> 15.7 %, the H1 22 % -> 20 %) at two to four times
        the time (the G1 2,000 -> 1,200 frames/s), the capsules being what limits it
        (issue 39's note).
    """

    robot: Robot
    velocity_limit: float | None = None
    apart_in_methods: bool = False
    kind: str = "robot"
    from_source: bool = False

    @property
    def name(self) -> str:
        return self.robot.path

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.robot.path,)

    @property
    def writes(self) -> tuple[str, ...]:
        """Joint trajectories (``.npz`` first, ``.csv``)."""
        return trajectory_suffixes()

    @cached_property
    def gathered(self) -> Gathered:
        """The robot's hinges gathered into the joints the methods run on."""
        return gather_hinges(self.robot.skeleton, self.robot.skeleton.names)

    def prepare(self, source: Motion) -> Prepared:
        """The gathered skeleton; the robot's ranges held (``limits="strict"``) and its
        feet as high as its own zero configuration stands them (``plant_heights="rest"``)
        where the user says nothing; its mass model and torque limits for a method that
        takes them (the physics filter); its links kept apart for a method that takes them
        (``apart``: hierarchical) with :attr:`apart_in_methods`."""
        return Prepared(
            self.gathered.skeleton,
            level_feet=True,
            defaults={"limits": "strict", "plant_heights": "rest"},
            supplies=self._own,
            whole_time=True,
        )

    def _own(self, skeleton: Skeleton) -> Mapping[str, Any]:
        """The robot's mass model and torque limits on the skeleton a method runs on, and
        its links kept apart there (:func:`apart_on`) with :attr:`apart_in_methods`."""
        mass, com, inertia, limits = inertia_on(self.gathered, self.robot, skeleton)
        body = Body(skeleton, mass, com, inertia, metres_per_unit(skeleton.unit), {})
        own: dict[str, Any] = {"body": body, "torque_limits": limits}
        apart = (
            apart_on(self.gathered, self.robot.geoms, skeleton) if self.apart_in_methods else None
        )
        if apart is not None:
            own["apart"] = apart
        return own

    def finish(self, motion: Motion, mapping: ForMethod) -> Carried:
        """Onto the hinges (:func:`to_robot`), within the speed limits (the model's, else
        ``velocity_limit``), as the robot's joint trajectories."""
        robot = self.robot
        velocity = np.full(robot.skeleton.num_joints, np.inf)
        velocity[robot.dof_joint] = np.where(
            np.isfinite(robot.velocity), robot.velocity, self.velocity_limit or np.inf
        )
        moved, fit = to_robot(self.gathered, mapping.finish(motion), robot.geoms, velocity=velocity)
        report = {
            "robot": {
                "model": robot.path,
                "joints": list(robot.joint_names),
                "ik_end_error_m": fit.end_error,
                "clamped": fit.clamped,
                "clamped_rad": fit.clamped_rad,
                "slowed": fit.slowed,
                "hardened": fit.hardened,
            }
        }
        return Carried(joint_trajectories(robot, moved), motion, report)

    def measure(self, run: Finished) -> dict[str, Any]:
        """The robot measures (:func:`measure_robot`) of the trajectories against the
        source as given."""
        return measure_robot(
            self.robot,
            run.output,
            run.source,
            velocity=self.velocity_limit,
            gathered=self.gathered,
        )

    def write(
        self,
        path: str | os.PathLike,
        output: RobotTrajectory,
        *,
        name: str,
        inputs: Sequence[str | os.PathLike] = (),
    ) -> Path:
        return write_trajectories(path, output, inputs=inputs)

    def describe(self, measures: Mapping[str, Any]) -> str:
        return (
            f"skate {measures['skate_ratio']:.3g}x the source's, floating "
            f"{measures['float_cm']:.2g} cm, links into each other on "
            f"{100 * measures['self_collision_share']:.2g} % of frames, "
            f"{measures['limit_violations']} joint-limit violations"
        )


def open_robot(
    path: str | os.PathLike,
    *,
    velocity_limit: float | None = None,
    apart_in_methods: bool = False,
) -> RobotTarget:
    """An MJCF or URDF robot (:func:`read_robot`: MuJoCo compiles it once)."""
    return RobotTarget(
        read_robot(Path(path)), velocity_limit=velocity_limit, apart_in_methods=apart_in_methods
    )
