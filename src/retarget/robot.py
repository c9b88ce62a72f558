"""Robots as targets: their hinges gathered into joints for the methods, the result carried back.

A robot's hip is three hinges (pitch, roll, yaw) a few centimetres apart, its
ankle two; the methods' limb IK (Lee & Shin's analytic limbs, Shin et al.'s
swivel) wants hip, knee and ankle each the parent of the next. So a method
runs on the **method skeleton** :func:`gather_hinges` makes of the robot's
(:func:`retarget.io.robot.read_robot`): each run of hinges that make one joint
(:func:`retarget.roles.one_joint`: one name but for the axis words, each axis
square to the next, up to three) becomes one ball joint, the bones between
its hinges folded into the bone after it, so every other joint and end site
stands where the robot's does at the zero configuration; single hinges (knees,
elbows) stay hinges with their ranges.

:func:`to_robot` carries a motion on the method skeleton back onto the robot:

1. each ball's rotation is split into its hinges' angles (Davenport angles:
   exact for three hinges each square to the next, least squares for two;
   :func:`_solve_hinges`); every other joint's local rotation is the method
   skeleton's (the frames agree: both are the world's axes at the zero
   configuration);
2. the folded bones and a two-hinge ankle's missing turn move the robot's
   limb ends (a hip roll 5 cm from the pitch hinge turning by 0.2 rad moves
   the knee 1 cm), so a pass of the numerical IK
   (:func:`retarget.ik.numeric.solve_ik`, Lee & Shin eqs. 5-6, in the robot's
   own tangent space and task contract, on its one-channel joints) puts each
   limb end (feet's and hands' end sites, their frames' orientations) where
   the method put it, with the joint limits as tasks: a six-hinge leg has just
   the freedom of a foot's pose;
3. any hinge still past its range is clamped, and counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import dofs, quat
from ._arrays import Array
from .ik.numeric import solve_ik
from .kinematics import forward_kinematics
from .motion import Motion
from .roles import find_roles, one_joint
from .skeleton import Skeleton
from .tasks import JointLimitTask, OrientationTask, PositionTask

__all__ = ["Gathered", "RobotFit", "gather_hinges", "hinge_angles", "to_robot"]

_LETTERS = ("Xrotation", "Yrotation", "Zrotation")


@dataclass(frozen=True, eq=False)
class Gathered:
    """The method skeleton of a robot skeleton and how its joints map back.

    Attributes
    ----------
    skeleton : Skeleton
        The method skeleton (same unit and up axis as the robot's).
    robot : Skeleton
        The robot's skeleton.
    members : tuple of tuple of int
        Per method-skeleton joint, the robot joints it gathers, top first: a ball
        where there are several.
    """

    skeleton: Skeleton
    robot: Skeleton
    members: tuple[tuple[int, ...], ...]

    @property
    def gathered(self) -> bool:
        """Whether any joint gathers several hinges."""
        return any(len(m) > 1 for m in self.members)


def _hinge_axis(skeleton: Skeleton, j: int) -> NDArray[np.float64]:
    """The axis of one-channel joint ``j`` in its frame (unit)."""
    axes = dofs.channel_axes(skeleton, quat.identity((skeleton.num_joints,)))[j]
    k = int(np.flatnonzero(np.abs(axes).sum(axis=0) > 0)[0])
    a = axes[:, k]
    return a / np.linalg.norm(a)


def _orthogonal(axes: list[NDArray[np.float64]], tol: float = 1e-6) -> bool:
    return all(abs(float(a @ b)) < tol for i, a in enumerate(axes) for b in axes[i + 1 :])


def gather_hinges(robot: Skeleton, names: tuple[str, ...] | None = None) -> Gathered:
    """The method skeleton of ``robot`` (module docstring).

    Parameters
    ----------
    robot : Skeleton
        A robot's (:func:`retarget.io.robot.read_robot`), or any skeleton: one
        without runs of one-channel joints of one name comes back unchanged.
    names : tuple of str, optional
        The names to compare (default the joints'): the hinges' own names.
    """
    sk = robot
    n = sk.num_joints
    kids: list[list[int]] = [[] for _ in range(n)]
    for j in range(1, n):
        kids[int(sk.parents[j])].append(j)
    head = list(range(n))  # the gathered joint each robot joint belongs to
    for j in range(1, n):
        p = int(sk.parents[j])
        group = [k for k in range(n) if head[k] == head[p]]
        if (
            len(group) < 3
            and len(kids[p]) == 1
            and one_joint(sk, p, j, names)
            and all(len(sk.euler_orders[k]) == 1 for k in group)
            and _orthogonal([_hinge_axis(sk, p), _hinge_axis(sk, j)])
        ):
            head[j] = head[p]
    heads = [j for j in range(n) if head[j] == j]
    index = {h: i for i, h in enumerate(heads)}
    members = tuple(tuple(k for k in range(n) if head[k] == h) for h in heads)
    # world rest positions: offsets re-hung from the gathered joints
    rest = np.zeros((n, 3))
    for j in range(1, n):
        rest[j] = rest[int(sk.parents[j])] + sk.offsets[j]
    joint_names: list[str] = []
    parents: list[int] = []
    offsets, channels, axes, limits = [], [], [], []
    for h, gathered in zip(heads, members, strict=True):
        joint_names.append(sk.names[h])
        up = int(sk.parents[h])
        parents.append(index[head[up]] if up >= 0 else -1)
        offsets.append(rest[h] - rest[head[up]] if up >= 0 else sk.offsets[h])
        if len(gathered) == 1:
            channels.append(sk.channels[h])
            axes.append(sk.axes[h])
            limits.append(sk.limits[h])
            continue
        channels.append(("Zrotation", "Yrotation", "Xrotation"))  # a ball
        axes.append(quat.identity())
        limits.append(np.tile([-np.inf, np.inf], (3, 1)))
    site_parents = [index[head[int(p)]] for p in sk.site_parents]
    site_offsets = [
        rest[int(p)] + o - rest[head[int(p)]]
        for p, o in zip(sk.site_parents, sk.site_offsets, strict=True)
    ]
    method = Skeleton(
        names=tuple(joint_names),
        parents=np.asarray(parents),
        offsets=np.asarray(offsets),
        channels=tuple(channels),
        site_names=sk.site_names,
        site_parents=np.asarray(site_parents, dtype=np.intp),
        site_offsets=np.asarray(site_offsets).reshape(-1, 3),
        unit=sk.unit,
        axes=np.asarray(axes),
        limits=np.asarray(limits),
        up=sk.up,
    )
    return Gathered(method, sk, members)


def _channel(skeleton: Skeleton, j: int) -> int:
    """The channel-frame axis (0, 1, 2) of one-channel joint ``j``."""
    return "XYZ".index(skeleton.euler_orders[j])


@dataclass(frozen=True)
class RobotFit:
    """What :func:`to_robot` did: the IK pass's residuals and the clamped hinges."""

    end_error: float
    """Largest distance of a limb end from where the method put it, robot's unit."""
    clamped: int
    """Hinge angles past their range after the IK pass, clamped (frames × hinges)."""


def _solve_hinges(
    skeleton: Skeleton, group: list[int], wanted: Array, lower: Array, upper: Array
) -> Array:
    """Hinge angles (F, n) of ``group`` (joints from the top down, one channel each) whose
    product of local rotations ``Π exp(θ_k a_k)`` comes closest to ``wanted`` (F, 4), the
    top joint's wanted local rotation: Gauss-Newton on the rotation vector
    ``log(wanted⁻¹ ⊗ Π …)`` with the body-frame Jacobian ``(R_{k+1}⋯R_n)ᵀ a_k``. Three
    hinges each square to the next (Davenport's condition) meet it exactly, two in
    least squares. Of the two solutions of three, from the zero angles and from
    ``(θ_1 + π, π − θ_2, θ_3 + π)``, the one nearer its ranges ``lower``, ``upper`` (n,)
    (then the smaller) is taken, angles wrapped into (−π, π]."""
    a = np.stack([_hinge_axis(skeleton, k) for k in group])
    back = quat.conjugate(wanted)

    def solve(theta: Array) -> Array:
        n_frames, n = theta.shape
        for _ in range(30):
            parts = quat.quat_from_rotvec(theta[..., None] * a)  # (F, n, 4)
            total = parts[:, 0]
            for k in range(1, n):
                total = quat.multiply(total, parts[:, k])
            r = quat.rotvec_from_quat(quat.multiply(back, total))  # (F, 3)
            jac = np.empty((n_frames, 3, n))
            after = quat.identity((n_frames,))  # R_{k+1} ⋯ R_n
            for k in range(n - 1, -1, -1):
                jac[:, :, k] = quat.rotate(
                    quat.conjugate(after), np.broadcast_to(a[k], (n_frames, 3))
                )
                after = quat.multiply(parts[:, k], after)
            jt = np.swapaxes(jac, 1, 2)
            step = np.linalg.solve(jt @ jac + 1e-9 * np.eye(n), jt @ r[..., None])[..., 0]
            theta = theta - step
            if np.abs(step).max() < 1e-12:
                break
        return np.angle(np.exp(1j * theta))

    n_frames, n = wanted.shape[0], len(group)
    best = solve(np.zeros((n_frames, n)))
    if n == 3:
        other = solve(np.stack([best[:, 0] + np.pi, np.pi - best[:, 1], best[:, 2] + np.pi], 1))
        cost = [
            np.maximum(lower - t, 0).sum(1) + np.maximum(t - upper, 0).sum(1) for t in (best, other)
        ]
        pick = (cost[1] < cost[0] - 1e-12) | (
            (np.abs(cost[1] - cost[0]) <= 1e-12) & (np.abs(other).sum(1) < np.abs(best).sum(1))
        )
        best = np.where(pick[:, None], other, best)
    return best


def to_robot(gathered: Gathered, motion: Motion) -> tuple[Motion, RobotFit]:
    """A motion on the method skeleton carried onto the robot (module docstring).

    Parameters
    ----------
    gathered : Gathered
    motion : Motion
        On ``gathered.skeleton``.

    Returns
    -------
    Motion
        On ``gathered.robot``.
    RobotFit
    """
    g, sk = gathered, gathered.robot
    f = motion.num_frames
    rot = np.tile(quat.identity(), (f, sk.num_joints, 1))
    for m, group in enumerate(g.members):
        if len(group) == 1:
            rot[:, group[0]] = motion.rotations[:, m]
        else:  # a ball: its hinges' angles by Gauss-Newton, then clamped into their ranges
            lo = np.array([sk.limits[k, _channel(sk, k), 0] for k in group])
            hi = np.array([sk.limits[k, _channel(sk, k), 1] for k in group])
            theta = np.clip(_solve_hinges(sk, list(group), motion.rotations[:, m], lo, hi), lo, hi)
            for i, k in enumerate(group):
                rot[:, k] = quat.quat_from_rotvec(theta[:, i, None] * _hinge_axis(sk, k))
    robot = Motion(sk, motion.root_position, dofs.clamp_to_limits(sk, rot), motion.fps)
    if not g.gathered:
        return robot, RobotFit(0.0, 0)
    # the limb ends where the method put them
    pm, wm = forward_kinematics(g.skeleton, motion.root_position, motion.rotations)
    roles = find_roles(g.skeleton)
    tasks: list = []
    ends: list[tuple[int, int]] = []  # (method point, robot point)
    for side in ("left", "right"):
        for role in ("ankle", "wrist"):
            top = roles.get(f"{side}_{role}")
            if top is None or top >= g.skeleton.num_joints:
                continue
            last = g.members[top][-1]
            tasks.append(OrientationTask(last, wm[:, top], weight=1.0))
            below = [
                s
                for s in range(g.skeleton.num_joints, g.skeleton.num_points)
                if top in g.skeleton.chain(s)
            ]
            for s in below:
                name = g.skeleton.point_names[s]
                ends.append((s, sk.index(name)))
                tasks.append(PositionTask(sk.index(name), pm[:, s], weight=1e4))
    tasks.append(JointLimitTask(sk))
    solved = solve_ik(sk, robot.root_position, robot.rotations, tasks, max_iterations=30)
    rot = dofs.project_to_dofs(sk, solved.rotations)
    clamped = int((dofs.limit_violation(sk, rot) > 1e-9).sum())
    if clamped:
        rot = dofs.clamp_to_limits(sk, rot)
    out = Motion(sk, solved.root_position, rot, motion.fps)
    pr, _ = forward_kinematics(sk, out.root_position, out.rotations)
    error = max((float(np.abs(pr[:, r] - pm[:, s]).max()) for s, r in ends), default=0.0)
    return out, RobotFit(error, clamped)


def hinge_angles(robot: Skeleton, rotations: Array) -> Array:
    """Each one-channel joint's angle about its axis, (F, J) (zero elsewhere)."""
    theta = dofs.channel_angles(robot, rotations)  # in each joint's channel order
    one = np.array([len(o) == 1 for o in robot.euler_orders])
    return np.where(one, theta[..., 0], 0.0)
