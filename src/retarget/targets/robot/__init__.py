"""Humanoid robots (MJCF, URDF) as targets: the model through MuJoCo (:mod:`.model`), the
hinges gathered into joints for the methods and the result carried back (:mod:`.hinges`,
compiled in :mod:`._kernels`), MuJoCo's collision (:mod:`.contacts`), the robot measures
(:mod:`.measures`), the joint trajectories robotics users load (:mod:`.trajectories`),
and the kind itself (:mod:`.target`)."""

from __future__ import annotations

from .target import RobotTarget, open_robot

__all__ = ["RobotTarget", "open_robot"]
