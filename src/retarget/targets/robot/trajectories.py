"""A robot's motion both ways: a motion on its skeleton as its joint trajectories, and back.

The trajectory type and its files: :mod:`retarget.io.trajectories`. Here, what needs
the robot: its hinges' axes and order, its base body's rotation.

Units: metres, radians, the robot's world (z up); quaternions w, x, y, z.
"""

from __future__ import annotations

import numpy as np

from ...core import quat
from ...core.dofs import channel_angles
from ...core.motion import Motion
from ...io.trajectories import RobotTrajectory
from .model import Robot

__all__ = ["joint_trajectories", "robot_motion"]


def joint_trajectories(robot: Robot, motion: Motion) -> RobotTrajectory:
    """A motion on ``robot.skeleton`` (metres, z up) as the robot's own trajectories.

    Returns
    -------
    RobotTrajectory
        ``root_pos`` (F, 3) the skeleton root's positions; ``root_quat`` (F, 4) the
        base body's world orientation (the root's rotation times
        :attr:`Robot.base_rotation`); ``dof_pos`` (F, D) radians in
        :attr:`Robot.joint_names` order (each hinge's angle about its axis, within its
        range by whole turns where the range goes past ±π; a hinge without a range
        unwrapped over time).
    """
    rot = np.asarray(motion.rotations, dtype=float)
    angles = channel_angles(robot.skeleton, rot)  # (F, J, 3): about x, y, z of the channel frame
    dof = _each_into_range(angles[:, robot.dof_joint, 0], robot.lower, robot.upper)
    endless = ~(np.isfinite(robot.lower) & np.isfinite(robot.upper))
    if len(dof) > 1 and endless.any():  # a continuous joint turns on past ±π
        dof[:, endless] = np.unwrap(dof[:, endless], axis=0)
    base = quat.multiply(rot[:, 0], robot.base_rotation)
    return RobotTrajectory(
        np.asarray(motion.root_position, dtype=float).copy(),
        quat.canonical(base),
        dof,
        motion.fps,
        robot.joint_names,
    )


def _each_into_range(dof: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Angles (F, D) read in (-π, π] turned by whole turns into their ranges (D,) where
    they are not in them and a turn takes them there (else the turn that leaves them
    nearest; an angle in its range, or of a hinge with none, as read): a hinge whose range goes past
    π (Romeo's wrist roll, -0.52 to 3.67 rad) at 3.2 rad is read as -3.08, 2.6 rad
    outside it, until turned back."""
    turns = np.stack([dof, dof - 2 * np.pi, dof + 2 * np.pi])  # (3, F, D): as read first
    outside = np.maximum(np.maximum(lower - turns, turns - upper), 0.0)
    return np.take_along_axis(turns, np.argmin(outside, axis=0)[None], axis=0)[0]


def robot_motion(robot: Robot, trajectory: RobotTrajectory) -> Motion:
    """The trajectory as a motion on ``robot.skeleton`` (the inverse of
    :func:`joint_trajectories`)."""
    sk = robot.skeleton
    rot = np.tile(quat.identity(), (trajectory.num_frames, sk.num_joints, 1))
    axes = quat.rotate(sk.axes, np.array([1.0, 0.0, 0.0]))  # each hinge's axis (channel x)
    for d, j in enumerate(robot.dof_joint):
        rot[:, j] = quat.quat_from_rotvec(trajectory.dof_pos[:, d, None] * axes[j])
    rot[:, 0] = quat.multiply(
        np.asarray(trajectory.root_quat, float), quat.conjugate(robot.base_rotation)
    )
    return Motion(sk, np.asarray(trajectory.root_pos, float), rot, trajectory.fps)
