"""A robot's links kept apart inside the methods: its collision capsules on the skeleton
a method runs on.

The IK pass after a method (:func:`retarget.targets.robot.hinges.to_robot`) keeps the
robot's links apart, but it can only trade clearance against the feet the method
planned. So the methods plan with the robot's geometry too: :func:`apart_on` gives a
:class:`~retarget.tasks.CollisionTask` on the method skeleton (the gathered one,
:func:`~retarget.targets.robot.hinges.gather_hinges`, or one a mapping made of it,
joints named as its joints), which hierarchical's fit takes
(:class:`retarget.tasks.Constraints` ``apart``; omr's step does not yet). A robot
target gives it with ``apart_in_methods``
(:class:`retarget.targets.robot.target.RobotTarget`).

Each capsule of the robot's collision geometry
(:func:`~retarget.targets.robot.hinges.geom_capsules`) rides on the method joint that
moves its link: a ball's last hinge's link and a single hinge's on the joint itself;
a link between two hinges of one ball (a hip's yaw link between its pitch and its
roll) turns by only part of the ball's rotation and rides on the joint above the
ball, which it follows more nearly (a hip's first hinges turn by a fraction of a
walk's swing). The frames agree: both skeletons' joint frames are the world's axes at
the zero configuration. The pairs kept apart are the pairs MuJoCo's contacts check
(every two links but a link and its parent, which at a ball of hinges are not the
method skeleton's: a thigh against the pelvis is checked, as MuJoCo checks JVRC-1's
hip-yaw link against its waist), less the pairs on one rigid piece of the method
skeleton (no joint with a channel between them) and a hand's own pieces; each
``margin`` apart, or, a pair nearer than two margins at the zero configuration (two
pieces side by side, or capsules that overlap where the links do not: capsules only
approximate a link), at most a margin nearer than there. (Held no nearer than at the
zero configuration, those pairs were near on nearly every frame of a walk, and the
fit solved them everywhere.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ...core import quat
from ...core.kinematics import Pose, rest_pose
from ...core.skeleton import Skeleton
from ...tasks import Capsules, CollisionTask
from .hinges import Gathered, geom_capsules
from .model import Geom

__all__ = ["apart_on"]


def apart_on(
    gathered: Gathered,
    geoms: Sequence[Geom],
    skeleton: Skeleton,
    *,
    margin: float = 0.01,
    weight: float = 1.0,
) -> CollisionTask | None:
    """The robot's capsules kept ``margin`` apart (skeleton unit, metres) on ``skeleton``
    (module docstring); None when it has no collision geometry or no pair to keep.

    Parameters
    ----------
    gathered : Gathered
    geoms : sequence of Geom
        The robot's collision geometry (:attr:`retarget.targets.robot.model.Robot.geoms`).
    skeleton : Skeleton
        The skeleton the method runs on: ``gathered.skeleton`` or one whose joints carry
        its joints' names (a joint it lacks carries no capsule).
    weight : float
        The task's weight, per (robot height)² (the method scales it).
    """
    if not geoms:
        return None
    robot = gathered.robot
    capsules = geom_capsules(geoms)
    if not len(capsules.joints):
        return None
    robot_rest = rest_pose(robot)[0]
    method_rest = rest_pose(gathered.skeleton)[0]
    # the method joint each robot joint's link rides on
    rides = np.full(robot.num_joints, -1, np.intp)
    for m, group in enumerate(gathered.members):
        for k in group[:-1]:  # inside a ball: the joint above it
            rides[k] = int(gathered.skeleton.parents[m]) if m > 0 else 0
        rides[group[-1]] = m
    for k in range(robot.num_joints):  # a fixed link: its parent's
        if rides[k] < 0:
            rides[k] = rides[int(robot.parents[k])]
    index = {name: j for j, name in enumerate(skeleton.names)}
    joints, links, a, b, radius = [], [], [], [], []
    for k, ca, cb, r in zip(capsules.joints, capsules.a, capsules.b, capsules.radius, strict=True):
        m = int(rides[int(k)])
        j = index.get(gathered.skeleton.names[m])
        if j is None:
            continue
        shift = robot_rest[int(k)] - method_rest[m]  # (world-aligned frames at rest)
        joints.append(j)
        links.append(int(k))
        a.append(ca + shift)
        b.append(cb + shift)
        radius.append(float(r))
    if not joints:
        return None
    on = Capsules(np.asarray(joints, np.intp), np.asarray(a), np.asarray(b), np.asarray(radius))
    wrist_of = _hands(gathered.skeleton)
    hand = {
        index[gathered.skeleton.names[j]]: w
        for j, w in wrist_of.items()
        if gathered.skeleton.names[j] in index
    }
    moves = [len(skeleton.euler_orders[j]) > 0 for j in range(skeleton.num_joints)]
    above = [_moving_parent(robot, k) for k in range(robot.num_joints)]
    pairs = []
    for first, second in zip(*np.triu_indices(len(joints), 1), strict=True):
        i, other = int(first), int(second)
        ja, jb, la, lb = joints[i], joints[other], links[i], links[other]
        between = set(skeleton.chain(ja)) ^ set(skeleton.chain(jb))
        if (
            ja == jb
            or skeleton.parents[ja] == jb  # a joint and its parent: their capsules meet
            or skeleton.parents[jb] == ja  # about its centre
            or above[la] == lb  # a link and its parent, as MuJoCo passes them over
            or above[lb] == la
            or not any(moves[j] for j in between)  # one rigid piece
            or hand.get(ja, -1) == hand.get(jb, -2)  # a hand's own pieces
        ):
            continue
        pairs.append((i, other))
    if not pairs:
        return None
    rest = Pose.of(skeleton, np.zeros(3), np.tile(quat.identity(), (skeleton.num_joints, 1)))
    task = CollisionTask(on, np.asarray(pairs, np.intp), weight=weight)
    gaps = task.residual(rest)  # nearer at the zero configuration: a margin nearer still
    return dataclasses.replace(task, margin=np.where(gaps >= 2 * margin, margin, gaps - margin))


def _moving_parent(robot: Skeleton, k: int) -> int:
    """The robot joint above ``k`` with a channel (a fixed link is part of its parent):
    the parent link MuJoCo's contacts pass over."""
    p = int(robot.parents[k])
    while p > 0 and not robot.euler_orders[p]:
        p = int(robot.parents[p])
    return p


def _hands(skeleton: Skeleton) -> dict[int, int]:
    """A hand's joints (:func:`retarget.humanoid.roles.hand_joints`), each mapped to its
    wrist."""
    from ...humanoid.roles import find_roles, hand_joints

    roles = find_roles(skeleton)
    return {
        j: roles[f"{side}_wrist"]
        for side in ("left", "right")
        for j in hand_joints(skeleton, side, roles)
    }
