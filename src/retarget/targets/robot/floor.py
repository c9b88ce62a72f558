"""The least a robot's limbs can depart from the performer's directions: the floor its
joints allow.

A robot whose arms are built otherwise than a human's (the OP3's elbows turn about the
arm's own forward axis at rest) or whose ranges stop short of the performer's pose
cannot point its limbs as the performer does, whatever a method does. The segment
directions measure (:func:`retarget.targets.robot.measures.measure_robot`: the mean
angle between each limb segment of the robot, from the joint of one role to the next,
and the human's) is then judged against that floor (issue 39: "within 1 degree of the
least its ranges allow").

Where a segment meets the next at a single hinge (a knee, an elbow), the meeting point
is the point of the hinge's axis nearest the line from the limb's first point to its
last at the zero configuration (moved at most half the shorter segment), not the anchor
the file gives the hinge: a maker places an anchor anywhere on the axis (Berkeley
Humanoid's knees at their motors, out to the side, 16-20° of zig-zag across the knee
at rest read through them), and the methods aim the limbs through the same point
(:func:`retarget.humanoid.mapping._on_axes`).

How it is computed (:func:`direction_floor`): per frame and limb (a leg: thigh and
shin; an arm: upper arm and forearm), the hinges that turn its two segments (the ones
gathered into the hip or shoulder, and into the knee or elbow) are chosen within their
ranges to bring both segments' unit directions ``u(θ)`` nearest the human's ``h``,

    min_θ  Σ_segments |u(θ) − h|²  (= 2 Σ (1 − cos angle)),  lower ≤ θ ≤ upper,

everything else of the body (its base, its trunk) as the trajectory has it, so the
floor is the limb's own (:func:`retarget.targets.robot.aim.aim_limb`: projected
Levenberg-Marquardt, every frame at once) from three starts (the trajectory's angles,
the zero configuration, the middle of the ranges), each frame keeping the best (its two
segments' angles are the floor: the limb's sum is never above the trajectory's, one
segment's may be, where the optimum trades it for the other). A segment with no hinge
to turn it (none found) has the floor 0. Units: degrees out; the
robot's radians in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...core import quat
from ...core.arrays import Array
from ...core.kinematics import forward_kinematics, rest_pose
from ...core.motion import Motion
from ...core.skeleton import Skeleton
from ...humanoid import world
from ...humanoid.roles import find_roles
from ...io.trajectories import RobotTrajectory
from .aim import aim_limb, chord_degrees
from .hinges import Gathered
from .model import Robot
from .trajectories import robot_motion

__all__ = ["LIMBS", "SEGMENTS", "Segments", "direction_floor", "limb_segments", "segment_angles"]

#: The limb segments compared by direction: (name, role from, role to) per side.
SEGMENTS = (
    ("thigh", "hip", "knee"),
    ("shin", "knee", "ankle"),
    ("upper_arm", "shoulder", "elbow"),
    ("forearm", "elbow", "wrist"),
)
#: The limbs whose segments are turned together: (first segment, second).
LIMBS = (("thigh", "shin"), ("upper_arm", "forearm"))


@dataclass(frozen=True)
class Segments:
    """A robot's limb segments and the human's, frame by frame.

    Attributes
    ----------
    rig : Skeleton
        The gathered skeleton's ``rig`` with a site at each knee's and elbow's point on
        its axis (module docstring).
    names : tuple of str, length S
        ``left_thigh``, ``right_thigh``, ... (those both bodies have).
    ends : (S, 2) int
        Each segment's first and last point on ``rig``.
    human : (S, F, 3)
        The human's segment directions, unit, in the robot's world (z up).
    dofs : tuple of tuple of int
        Per segment, the robot's hinges (columns of ``dof_pos``) gathered into the
        joint it starts at: the ones that turn it.
    """

    rig: Skeleton
    names: tuple[str, ...]
    ends: NDArray[np.intp]
    human: Array
    dofs: tuple[tuple[int, ...], ...]


def limb_segments(robot: Robot, gathered: Gathered, source: Motion) -> Segments:
    """The :class:`Segments` of ``robot`` against ``source`` (any unit and axes; roles by
    :func:`retarget.humanoid.roles.find_roles` on both)."""
    s_roles = find_roles(source.skeleton)
    g_roles = find_roles(gathered.skeleton)
    s_pos, _ = forward_kinematics(source.skeleton, source.root_position, source.rotations)
    turn = world.axes_between(world.up_name(world.up_axis(source.skeleton, source)), "z")
    rig, meeting = _meeting_points(gathered, g_roles)
    names, ends, human, dofs = [], [], [], []
    for name, a, b in SEGMENTS:
        for side in ("left", "right"):
            ga, gb = g_roles.get(f"{side}_{a}"), g_roles.get(f"{side}_{b}")
            sa, sb = s_roles.get(f"{side}_{a}"), s_roles.get(f"{side}_{b}")
            if ga is None or gb is None or sa is None or sb is None:
                continue
            names.append(f"{side}_{name}")
            ends.append(
                (
                    meeting.get(f"{side}_{a}", int(gathered.points[ga])),
                    meeting.get(f"{side}_{b}", int(gathered.points[gb])),
                )
            )
            h = quat.rotate(turn, s_pos[:, sb] - s_pos[:, sa])
            human.append(h / np.maximum(np.linalg.norm(h, axis=-1, keepdims=True), 1e-300))
            turned = set(gathered.members[ga]) if ga < len(gathered.members) else set()
            dofs.append(tuple(d for d, j in enumerate(robot.dof_joint) if int(j) in turned))
    return Segments(
        rig,
        tuple(names),
        np.asarray(ends, dtype=np.intp).reshape(-1, 2),
        np.asarray(human, dtype=float).reshape(len(names), len(source), 3),
        tuple(dofs),
    )


def _meeting_points(gathered: Gathered, roles) -> tuple[Skeleton, dict[str, int]]:
    """The rig with a site at each knee's and elbow's point on its axis (module
    docstring), and those sites' numbers by role, where it moves."""
    rig = gathered.rig
    pos, rot = rest_pose(rig, rig.offsets[0])
    names: list[str] = []
    parents: list[int] = []
    offsets: list[Array] = []
    found: dict[str, int] = {}
    for side in ("left", "right"):
        for first, middle, last in (("hip", "knee", "ankle"), ("shoulder", "elbow", "wrist")):
            g = [roles.get(f"{side}_{r}") for r in (first, middle, last)]
            if None in g or g[1] >= len(gathered.members) or len(gathered.members[g[1]]) != 1:
                continue
            j = gathered.members[g[1]][0]  # the hinge, a joint of the rig
            if len(rig.euler_orders[j]) != 1:
                continue
            a, c, b = (pos[int(gathered.points[k])] for k in g)
            h = quat.rotate(rot[j], quat.rotate(rig.axes[j], np.array([1.0, 0.0, 0.0])))
            line, w0 = b - a, c - a
            hh, hl, ll = float(h @ h), float(h @ line), float(line @ line)
            den = hh * ll - hl * hl
            if den <= 1e-12 * hh * ll:
                continue
            s = (hl * float(line @ w0) - ll * float(h @ w0)) / den
            if abs(s) > 0.5 * min(np.linalg.norm(c - a), np.linalg.norm(b - c)):
                continue
            found[f"{side}_{middle}"] = rig.num_points + len(names)
            names.append(f"_{side}_{middle}_on_axis")
            parents.append(j)
            offsets.append(quat.rotate(quat.conjugate(rot[j]), s * h))
    if not names:
        return rig, {}
    return (
        rig.replace(
            site_names=rig.site_names + tuple(names),
            site_parents=np.concatenate([rig.site_parents, parents]).astype(np.intp),
            site_offsets=np.concatenate([rig.site_offsets, offsets]),
        ),
        found,
    )


def segment_angles(segments: Segments, rig_positions: Array) -> Array:
    """Each segment's angle from the human's (S, F), degrees, the points of
    ``segments.rig`` at ``rig_positions`` (F, P, 3)."""
    d = rig_positions[:, segments.ends[:, 1]] - rig_positions[:, segments.ends[:, 0]]
    d = np.moveaxis(d, 1, 0)  # (S, F, 3)
    cos = (d * segments.human).sum(-1) / np.maximum(np.linalg.norm(d, axis=-1), 1e-300)
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def direction_floor(
    robot: Robot,
    gathered: Gathered,
    traj: RobotTrajectory,
    segments: Segments,
    *,
    iterations: int = 30,
) -> Array:
    """The least angle (S, F), degrees, each segment can point from the human's with its
    limb's hinges within their ranges (module docstring)."""
    motion = robot_motion(robot, traj)
    floor = np.zeros((len(segments.names), traj.num_frames))
    for first, second in LIMBS:
        for side in ("left", "right"):
            which = [
                segments.names.index(f"{side}_{n}")
                for n in (first, second)
                if f"{side}_{n}" in segments.names
            ]
            dofs = sorted({d for s in which for d in segments.dofs[s]})
            if not which or not dofs:
                continue
            floor[which] = _limb_floor(robot, motion, traj, segments, which, dofs, iterations)
    return floor


def _limb_floor(
    robot: Robot,
    motion: Motion,
    traj: RobotTrajectory,
    segments: Segments,
    which: list[int],
    dofs: list[int],
    iterations: int,
) -> Array:
    """The floor (len(which), F) of one limb's segments: :func:`aim_limb` over its
    hinges ``dofs`` from three starts, each frame its best."""
    lower, upper = robot.lower[dofs], robot.upper[dofs]
    f = traj.num_frames
    bounded = np.isfinite(lower) & np.isfinite(upper)
    middle = np.zeros(len(dofs))  # (0 for a hinge with no range)
    middle[bounded] = 0.5 * (lower[bounded] + upper[bounded])
    starts = [
        traj.dof_pos[:, dofs],
        np.tile(np.clip(0.0, lower, upper), (f, 1)),
        np.tile(middle, (f, 1)),
    ]
    found = aim_limb(
        segments.rig,
        motion.root_position,
        motion.rotations,
        robot.dof_joint[dofs],
        lower,
        upper,
        segments.ends[which],
        segments.human[which],
        starts,
        iterations=iterations,
    )
    best = np.argmin(np.stack([a.cost for a in found]), axis=0)
    residual = np.stack([a.residual for a in found])[best, np.arange(f)]
    return chord_degrees(residual, len(which))
