"""Robots as targets: their hinges gathered into joints for the methods, the result carried back.

A robot's hip is three hinges (pitch, roll, yaw) a few centimetres apart, its
ankle two; the methods' limb IK (Lee & Shin's analytic limbs, Shin et al.'s
swivel) wants hip, knee and ankle each the parent of the next. So a method
runs on the **method skeleton** :func:`gather_hinges` makes of the robot's
(:func:`retarget.targets.robot.model.read_robot`): each run of hinges that make one joint
(:func:`retarget.humanoid.names.one_joint`: one name but for the axis words, each axis
square to the next, up to three) becomes one ball joint at the run's centre
(:func:`_pivot`: the point about which a ball best moves what the hinges move),
the bones between re-hung from the centres; single hinges (knees, elbows) stay
hinges with their ranges. The **rig** is the robot's skeleton with a site at
each centre.

:func:`to_robot` carries a motion on the method skeleton back onto the robot:

1. each ball's rotation is split into its hinges' angles (Davenport angles by
   Gauss-Newton: exact for three hinges each square to the next, least squares
   for two; :func:`_solve_hinges`), the branch and each angle's ``2πk`` kept
   continuous in time and brought into the ranges (:func:`_continuous`; both
   compiled, frame by frame from the last frame's angles: :func:`_hinge_path`),
   then clamped into them; every other joint's local rotation is the method
   skeleton's (the frames agree: both are the world's axes at the zero
   configuration);
2. the hinges' offsets from the centres, the clamps and a two-hinge ankle's
   missing turn move the robot away from the method's pose, so one pass of the
   numerical IK (Lee & Shin eqs. 5-6 frame by frame,
   :func:`retarget.ik.newton.solve_ik_newton`, in the robot's own tangent space
   and task contract) tracks it: every segment between gathered joints (their
   centre sites) pointing where the method pointed it
   (:class:`~retarget.tasks.SegmentTask`: the limbs' directions) and every
   gathered joint's frame turned as the method turned it (the twists); the feet's
   ends, the ankles' centres and frames firmly, the hands' ends softly; the soles'
   support points above the floor (:class:`~retarget.tasks.GroundTask`); the links
   apart (:class:`~retarget.tasks.CollisionTask`, :func:`geom_capsules`, each pair
   kept half of how far its shapes reach beyond their capsules further apart,
   :data:`_PROTRUSION`); the joint
   ranges (:class:`~retarget.tasks.JointLimitTask`), with the root stiff (the
   method's root path is smooth; free, it jumped by centimetres where a limb met a
   range); the weights are :data:`_GROUND` … :data:`_SEGMENT`;
3. any hinge still past its range is clamped, and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...core import dofs, quat
from ...core.arrays import Array
from ...core.kinematics import Pose, forward_kinematics, rest_pose
from ...core.lazy import loader
from ...core.motion import Motion
from ...core.skeleton import Skeleton
from ...environment import as_shape
from ...humanoid.anatomy import hinge_axis, hinge_runs
from ...humanoid.names import one_joint
from ...humanoid.roles import find_roles
from ...ik.newton import solve_ik_newton
from ...ik.numeric import default_rigidity
from ...tasks import (
    CollisionTask,
    GroundTask,
    JointLimitTask,
    OrientationTask,
    PositionTask,
    SegmentTask,
    fit_capsules,
)
from ...tasks.collision import Capsules, separate_pairs
from .model import Geom, Robot

_robot_kernels = loader("retarget.targets.robot._kernels.hinges")

__all__ = [
    "Gathered",
    "RobotFit",
    "gather_hinges",
    "geom_capsules",
    "hinge_angles",
    "inertia_on",
    "to_robot",
]


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
    rig : Skeleton
        The robot's skeleton with one more site per ball: its centre
        (:func:`_pivot`), on the link above the ball's hinges (``<top hinge>_centre``).
    points : ndarray of int, shape (P,)
        Per method-skeleton point (joints, then sites), the ``rig`` point standing
        where it stands at the zero configuration: a ball's centre site, a single
        hinge's joint, a site of the same name.
    """

    skeleton: Skeleton
    robot: Skeleton
    members: tuple[tuple[int, ...], ...]
    rig: Skeleton
    points: NDArray[np.intp]

    @property
    def gathered(self) -> bool:
        """Whether any joint gathers several hinges."""
        return any(len(m) > 1 for m in self.members)


#: A link between two hinges, each square to the next, shorter than this share of the
#: bone the second carries is part of one joint with them, unless one is a knee or an
#: elbow (TALOS's shoulder: its first hinge 14 cm in from the other two, which carry a
#: 27 cm upper arm; without it the shoulder had two hinges and the upper arms were
#: 11-13° off the human's).
_SHORT = 0.6


def _orthogonal(axes: list[NDArray[np.float64]], tol: float = 1e-6) -> bool:
    return all(abs(float(a @ b)) < tol for i, a in enumerate(axes) for b in axes[i + 1 :])


def _pivot(
    skeleton: Skeleton, group: Sequence[int], rest: Array, children: Array, samples: int = 64
) -> Array:
    """The centre (3,) of the ball that best stands for the hinges ``group`` (top
    first; world rest positions ``rest`` (J, 3), frames world-aligned at rest).

    A maker's hinges of one joint seldom meet in a point (a hip's roll axis a few
    centimetres above its pitch axis, its anchors anywhere on the axes), so a ball
    at the top hinge's anchor swings the limb about the wrong point (on IHMC's
    Alexander, the thigh from a hip-roll anchor 16 cm behind the hip leans 20°).
    The centre ``c`` is the pivot calibration of the group: for hinge angles
    drawn within the ranges (within ±0.5 rad of zero), the rigid motion
    ``T(x) = T_1 ∘ … ∘ T_n (x)`` of the points below (``children`` (K, 3), rest
    positions), each ``T_k`` the turn about hinge ``k``'s axis through its
    anchor, against the ball's ``c + R (x − c)`` with ``R = R_1 ⋯ R_n``: linear
    least squares, ``Σ (I − R)ᵀ (I − R) c = Σ (I − R)ᵀ (T(x) − R x)``. With no point
    below (a hand without geometry), the point nearest every hinge's axis.
    """
    top = rest[group[0]]
    if not len(children):  # nothing below to calibrate with: where the axes meet
        lines = [(rest[k], hinge_axis(skeleton, k)) for k in group]
        normal = sum(np.eye(3) - np.outer(a, a) for _, a in lines) + 1e-9 * np.eye(3)
        right = sum((np.eye(3) - np.outer(a, a)) @ p for p, a in lines) + 1e-9 * top
        return np.linalg.solve(normal, right)
    rng = np.random.default_rng(0)
    lo = np.array([skeleton.limits[k, _channel(skeleton, k), 0] for k in group])
    hi = np.array([skeleton.limits[k, _channel(skeleton, k), 1] for k in group])
    a, b = np.clip(-0.5, lo, hi), np.clip(0.5, lo, hi)
    narrow = b - a < 1e-3
    b = np.where(narrow, np.minimum(hi, lo + 1.0), b)
    a = np.where(narrow, lo, a)
    theta = a + (b - a) * rng.random((samples, len(group)))
    axes = np.stack([hinge_axis(skeleton, k) for k in group])
    turns = quat.quat_from_rotvec(theta[..., None] * axes)  # (S, n, 4)
    moved = np.broadcast_to(children, (samples, *children.shape)).copy()
    total = quat.identity((samples,))
    for i in range(len(group) - 1, -1, -1):
        r = rest[group[i]]
        moved = r + quat.rotate(turns[:, i, None], moved - r)
        total = quat.multiply(turns[:, i], total)
    rot = quat.matrix_from_quat(total)  # (S, 3, 3)
    lhs = np.eye(3) - rot
    rhs = moved - np.einsum("sij,kj->ski", rot, children)  # (S, K, 3)
    normal = len(children) * np.einsum("sji,sjk->ik", lhs, lhs) + 1e-9 * np.eye(3)
    right = np.einsum("sji,skj->i", lhs, rhs) + 1e-9 * top
    return np.linalg.solve(normal, right)


def gather_hinges(robot: Skeleton, names: tuple[str, ...] | None = None) -> Gathered:
    """The method skeleton of ``robot`` (module docstring).

    Parameters
    ----------
    robot : Skeleton
        A robot's (:func:`retarget.targets.robot.model.read_robot`), or any skeleton: one
        without runs of one-channel joints comes back unchanged. A run: hinges each
        the only child of the last, each axis square to the next, up to three, of
        one name but for the axis words (:func:`retarget.humanoid.names.one_joint`) or at one
        place, or a short link apart (:data:`_SHORT`); a knee or an elbow is never
        part of one.
    names : tuple of str, optional
        The names to compare (default the joints'): the hinges' own names.
    """
    sk = robot
    n = sk.num_joints
    kids: list[list[int]] = [[] for _ in range(n)]
    for j in range(1, n):
        kids[int(sk.parents[j])].append(j)
    head = list(range(n))  # the gathered joint each robot joint belongs to
    # hinges at one place: within a hundredth of the robot's extent at rest (TALOS's
    # leg_left_1/2/3_joint, numbered, not named by axis, meet at the hip's centre)
    at = rest_pose(sk)[0][:n]
    near = 0.01 * float(np.ptp(at, axis=0).max()) if n > 1 else 0.0

    def carried(j: int) -> float:
        """The bone below ``j``: to the first joint down its chain not at its place."""
        k = j
        while len(kids[k]) == 1 and np.linalg.norm(sk.offsets[kids[k][0]]) <= near:
            k = kids[k][0]
        return max((float(np.linalg.norm(sk.offsets[c])) for c in kids[k]), default=0.0)

    def bends(j: int) -> bool:
        """A knee or an elbow, never part of a ball: a hinge whose range bends one way
        only (about 0 to a radian or more) between two long bones (the one above it
        not short against the one below; TALOS's shoulder roll bends one way too, but
        14 cm from the shoulder's first hinge, against a 27 cm upper arm)."""
        lo, hi = sk.limits[j, _channel(sk, j)]
        one_way = (lo >= -0.2 and hi >= 1.0) or (hi <= 0.2 and lo <= -1.0)
        return bool(one_way and np.linalg.norm(sk.offsets[j]) >= _SHORT * carried(j))

    def twist(p: int, j: int) -> bool:
        """Hinge ``p`` turns the bone to ``j`` about itself: ``j`` lies on its axis (a
        hinge's anchor may be anywhere on its axis; iCub's forearm twist stands
        1.5 cm from the elbow, its axis through the wrist 14 cm below)."""
        a = hinge_axis(sk, p)
        off = at[j] - at[p]
        return bool(np.linalg.norm(off - (off @ a) * a) <= near)

    runs = hinge_runs(sk)
    if runs is not None:  # the body read from its shape: its runs of hinges
        for run in runs:
            for j in run:
                head[j] = run[0]
    else:  # a body not read: hinges gathered where they meet, or by their names
        for j in range(1, n):
            p = int(sk.parents[j])
            group = [k for k in range(n) if head[k] == head[p]]
            link = float(np.linalg.norm(sk.offsets[j]))
            if (
                len(group) < 3
                and len(kids[p]) == 1
                and all(len(sk.euler_orders[k]) == 1 for k in (*group, j))
                and _orthogonal([hinge_axis(sk, p), hinge_axis(sk, j)])
                and (
                    one_joint(sk, p, j, names)
                    or ((link <= near or link < _SHORT * carried(j)) and not (bends(p) or bends(j)))
                    or (
                        twist(p, j)
                        and not bends(p)
                        and not (bends(j) and carried(j) >= _SHORT * link)
                    )
                )
            ):
                head[j] = head[p]
    heads = [j for j in range(n) if head[j] == j]
    index = {h: i for i, h in enumerate(heads)}
    members = tuple(tuple(k for k in range(n) if head[k] == h) for h in heads)
    # world rest positions: offsets re-hung from the gathered joints, a ball's at its centre
    rest = at
    site_rest = rest[sk.site_parents] + sk.site_offsets
    centre = rest.copy()
    for gathered in members:
        if len(gathered) > 1:
            last = gathered[-1]
            below = np.concatenate([rest[sk.parents == last], site_rest[sk.site_parents == last]])
            centre[gathered[0]] = _pivot(sk, gathered, rest, below)
    joint_names: list[str] = []
    parents: list[int] = []
    offsets, channels, axes, limits = [], [], [], []
    for h, gathered in zip(heads, members, strict=True):
        joint_names.append(sk.names[h])
        up = int(sk.parents[h])
        parents.append(index[head[up]] if up >= 0 else -1)
        offsets.append(centre[h] - centre[head[up]] if up >= 0 else sk.offsets[h])
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
        r - centre[head[int(p)]] for p, r in zip(sk.site_parents, site_rest, strict=True)
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
    balls = [m for m in members if len(m) > 1]
    rig = sk.replace(
        site_names=sk.site_names + tuple(f"{sk.names[m[0]]}_centre" for m in balls),
        site_parents=np.concatenate(
            [sk.site_parents, [int(sk.parents[m[0]]) for m in balls]]
        ).astype(np.intp),
        site_offsets=np.concatenate(
            [
                sk.site_offsets,
                np.reshape([centre[m[0]] - rest[int(sk.parents[m[0]])] for m in balls], (-1, 3)),
            ]
        ),
    )
    points = [rig.index(f"{sk.names[m[0]]}_centre") if len(m) > 1 else m[0] for m in members] + [
        rig.index(name) for name in sk.site_names
    ]
    return Gathered(method, sk, members, rig, np.asarray(points, dtype=np.intp))


def _channel(skeleton: Skeleton, j: int) -> int:
    """The channel-frame axis (0, 1, 2) of one-channel joint ``j``."""
    return "XYZ".index(skeleton.euler_orders[j])


def _twist(rotations: Array, axis: Array) -> Array:
    """The angle (F,) of rotations (F, 4) about a unit ``axis`` (3,): ``2 atan2(q⃗·a, w)``
    in (−π, π] (a hinge's angle, for a rotation on its axis)."""
    along = rotations[..., 1:] @ axis
    return np.angle(np.exp(2j * np.arctan2(along, rotations[..., 0])))


def _turns(theta: Array, axes: Array) -> Array:
    """Hinge rotations ``exp(θ a)`` (F, H, 4) of angles (F, H) about axes (H, 3)."""
    return quat.quat_from_rotvec(theta[..., None] * axes)


#: The IK pass's position weights, per (robot height)²: the soles above the floor,
#: firmest; the feet (their ends, the ankles' centres) and the links apart, firm; every
#: other joint and the hands' ends, soft. (Measured on the LAFAN walk onto the G1: with
#: the joints' positions out, the hands' ends pulled the arms 6.9° off the human's
#: directions; with everything soft, soles sank 0.5 cm where a joint's place met the
#: floor; with the soles only as firm as the feet, a pitched toe sank 0.54 cm; with the
#: ankles' centres soft, the feet skated 0.997 times the source's on 1,200 frames, 0.93
#: now (the method's own feet, 0.88); the feet three times firmer skated 0.91 there, but
#: on the whole walk by ``omr`` put soles under the floor on 12 frames and legs into
#: each other on 8.) The segments between joints, softer still: the joints' *places*
#: as soft goals (the earlier pass) left the robot's thighs 3° off the method's, the
#: knee 1.2 cm from where the method put it, since a robot's hinges a few centimetres
#: apart move a knee only nearly as a ball at their centre does; pointing the
#: segments instead, on the first 2,400 frames: directions from the human's 2.76° ->
#: 1.84° (``hierarchical``), 4.57° -> 3.85° (``omr``), skate 0.89 -> 0.91 and 0.67 ->
#: 0.68 of the source's; as firm as the joints were (1e4), 1.58° and 3.72° but skate
#: 0.97; 3e4, skate 1.16.
_GROUND, _FEET, _APART, _SOFT, _SEGMENT = 1e6, 1e5, 1e5, 1e4, 5e3

#: The quantile of a mesh's hull vertices' distances from its axis that is its
#: capsule's radius. (On the whole walk onto the G1, the soles hardened: the 65th
#: percentile left the hip links up to 1.25 cm into each other on 6 frames by ``omr``,
#: the 80th 0.94 cm on 4 by either method; the 90th none, the directions unchanged by
#: ``hierarchical`` (3.05°), 0.01° further by ``omr``; the 95th none, but ``omr``'s
#: 0.15° further.)
_HULL_SHARE = 0.9

#: A sole under the floor by more than this share of the height after the IK pass: the
#: frame is solved again with the floor firmer.
_SLACK = 1e-3

#: A lift of a foot (:func:`_lift`) is held this long (s) either side of each frame
#: that needs it and eased in and out over half of it (:func:`_held`). (The first
#: 1,200 frames onto TALOS, a sole 11 cm behind its ankle: without a lift, soles up to
#: 10 cm under the plan, body jerk 5.7 times the source's; the lift beyond 0.5 % of
#: the height, frame by frame, 1.42. The whole walk: frame by frame, from 0.5 %, the
#: G1's 0.74 (``hierarchical``) and 1.00 (``omr``), IHMC's Alexander, whose plan
#: sinks a flat sole 1.3 cm (its ankle stands higher over its sole than a human's
#: over theirs, a foot's length for a foot's length) and whose lowest corner
#: switches from heel to toe and back, 2.05 and 2.14; held 0.2 s, from no sink: 0.70,
#: 0.94, 1.70, 1.89; held 0.1 s, Alexander without its links apart, 1.41; 0.33 s,
#: 1.40; the floors of the contacts 0.02 to 0.07 cm higher on the G1.)
_HOLD = 0.2

#: The IK pass stops a frame when its last step moved no hinge by more than this (rad).
_TOLERANCE = 1e-3

#: The change of a hinge's correction from the last frame is damped this many times
#: its rigidity (:func:`retarget.ik.newton.solve_ik_newton`'s ``damping``; the
#: reference's own change is free): where the tasks leave a hinge free between two
#: near-equal poses, the frame-by-frame solve, started from the last frame's change
#: extrapolated, alternated between them (iCub's upper-arm yaw against its forearm
#: twist, 0.4 rad from frame to frame). The whole walk, body jerk ÷ the source's,
#: ``hierarchical`` / ``omr``: undamped, iCub 4.19 / 3.26, the G1 0.70 / 0.94,
#: Alexander 2.78 / 3.31; damped, 1.13 / 1.65, 0.66 / 0.86 (its directions 2.46° /
#: 4.51° -> 2.48° / 4.52°), 2.08 / 2.17. (The angles' own change damped instead, 300
#: times: iCub 0.83 / 1.30, but the G1's directions 2.85° / 4.76°.)
_DAMPING = 100.0


@dataclass(frozen=True)
class RobotFit:
    """What :func:`to_robot` did: the IK pass's residuals and the clamped hinges."""

    end_error: float
    """Largest distance of a limb end from where the method put it, robot's unit."""
    clamped: int
    """Hinge angles past their range after the IK pass, clamped (frames × hinges)."""
    clamped_rad: float = 0.0
    """The largest of those clamps, rad (the limits are a penalty in the IK pass: a
    hinge pressed against its range ends a fraction of a milliradian past it)."""
    slowed: int = 0
    """Hinge angles the velocity limits moved (frames × hinges)."""
    hardened: int = 0
    """Frames solved again with the floor firmer (:data:`_SLACK`)."""


def _solve_hinges(
    skeleton: Skeleton, group: list[int], wanted: Array, lower: Array, upper: Array
) -> Array:
    """Hinge angles of ``group`` (joints from the top down, one channel each) whose
    product of local rotations ``Π exp(θ_k a_k)`` comes closest to ``wanted`` (F, 4), the
    top joint's wanted local rotation: Gauss-Newton on the rotation vector
    ``log(wanted⁻¹ ⊗ Π …)`` with the body-frame Jacobian ``(R_{k+1}⋯R_n)ᵀ a_k``. Three
    hinges each square to the next (Davenport's condition) meet it exactly, two in
    least squares. Returns the solutions (F, B, n), angles wrapped into (−π, π]: for
    three hinges the two branches, from the zero angles and from ``(θ_1 + π, π − θ_2,
    θ_3 + π)`` (B = 2), one otherwise; :func:`_continuous` chooses with the ranges
    ``lower``, ``upper`` (n,)."""
    a = np.stack([hinge_axis(skeleton, k) for k in group])
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
    first = solve(np.zeros((n_frames, n)))
    if n != 3:
        return first[:, None]
    other = solve(np.stack([first[:, 0] + np.pi, np.pi - first[:, 1], first[:, 2] + np.pi], 1))
    return np.stack([first, other], axis=1)


def _continuous(branches: Array, lower: Array, upper: Array) -> Array:
    """One hinge-angle path (F, n) through per-frame solutions ``branches`` (F, B, n):
    at the first frame the branch nearest the ranges ``lower``, ``upper`` (n,), then at
    each frame the branch, and each angle's ``2πk``, nearest the previous frame's (a
    wrist roll wanted near ±π would otherwise flip from one end of its range to the
    other, a Davenport split from one branch to the other); then the whole path
    shifted by ``2πk`` per hinge where that brings its middle into the range."""
    n_frames, n_branch, _ = branches.shape
    outside = np.maximum(lower - branches[0], 0).sum(-1) + np.maximum(branches[0] - upper, 0).sum(
        -1
    )
    prev = branches[0, int(np.argmin(outside))].copy()
    out = np.empty((n_frames, branches.shape[2]))
    out[0] = prev
    two_pi = 2 * np.pi
    for f in range(1, n_frames):
        best, cost = prev, np.inf
        for b in range(n_branch):
            c = branches[f, b]
            c = c + two_pi * np.round((prev - c) / two_pi)
            d = float(np.abs(c - prev).sum())
            if d < cost:
                best, cost = c, d
        out[f] = prev = best
    return _into_ranges(out, lower, upper)


def _into_ranges(path: Array, lower: Array, upper: Array) -> Array:
    """A hinge-angle path (F, n) shifted by ``2πk`` per hinge where that brings its
    middle into the range."""
    middle = np.median(path, axis=0)
    turns = np.arange(-2, 3)[:, None] * 2 * np.pi  # the whole path 2πk over, k = -2..2
    shifted = middle + turns
    off = np.maximum(lower - shifted, 0) + np.maximum(shifted - upper, 0)
    return path + turns[np.argmin(off + 1e-9 * np.abs(turns), axis=0), 0]


def _hinge_path(
    skeleton: Skeleton, group: list[int], wanted: Array, lower: Array, upper: Array
) -> Array:
    """:func:`_continuous` of :func:`_solve_hinges`, frame by frame from the last frame's
    angles (compiled: :mod:`retarget.targets.robot._kernels.hinges`), shape (F, n)."""
    axes = np.stack([hinge_axis(skeleton, k) for k in group])
    out = np.empty((len(wanted), len(group)))
    if len(wanted):
        _robot_kernels().split_path(
            axes, np.ascontiguousarray(wanted, dtype=np.float64), lower, upper, out
        )
    return _into_ranges(out, lower, upper)


#: The share of two shapes' reach beyond their capsules (:func:`capsule_protrusions`)
#: added to the gap the IK pass keeps between them. Whole LAFAN walk, hierarchical,
#: links more than 0.5 cm into each other by MuJoCo, at shares 0 / 0.5 / 0.75 / 1: the N1
#: 0.28 / 0.01 / 0 / 0 % of frames (its body jerk 0.91 / - / 0.94 / 0.94, its limbs
#: 4.47 / - / 4.55 / 4.79° from the performer's), the Booster T1 17 / 1.4 / 0 / 0 % (jerk
#: 1.30 / 1.52 / 1.74 / 2.33, directions 3.05 / 4.44 / 6.71 / 9.76°: its arms held out
#: round its boxy trunk), the H1 22 / 12.9 / - / 7.5 %; by omr the N1 0.54 / 0.10 / 0 % (jerk
#: 1.11 / 1.23 / 1.31), the T1 19 / 1.7 % (jerk 2.92 / 4.39), the H1 19 / 7.5 % (jerk 1.12 /
#: 1.08). Half: most of the links kept apart, at a price in jerk where the arms are held
#: out round a boxy trunk or the legs apart (whole walk at 0.5 against 0: the N1's omr
#: 1.11 -> 1.23, the T1's 2.92 -> 4.39, iCub's hierarchical 0.95 -> 1.39, Alexander's
#: 1.17 -> 1.23; benchmarks/results/2026-12-07-robots.md, the tables at 3e64ed8 and
#: 3a1b751).
_PROTRUSION = 0.5


def geom_capsules(geoms: Sequence[Geom]) -> Capsules:
    """:func:`_geom_capsules`'s capsules."""
    return _geom_capsules(geoms)[0]


def capsule_protrusions(geoms: Sequence[Geom]) -> Array:
    """Per capsule of :func:`geom_capsules` (C,), how far its geometry reaches beyond
    the capsules made of it at most (skeleton unit): over the geometry's surface points
    (a cylinder's rims, a box's corners, a mesh's hull vertices), the largest distance
    from the nearest of them less its radius. A cylinder's rim stands 0.41 of its radius
    out of the capsule inside it (the N1's hands, cylinders, reached 1.5 cm into its
    thighs, cylinders, while their capsules were kept a centimetre apart)."""
    caps, owner = _geom_capsules(geoms)
    out = np.zeros(len(caps.joints))
    for k, g in enumerate(geoms):
        mine = np.flatnonzero(owner == k)
        if not len(mine) or not len(g.points):
            continue
        a, b = caps.a[mine], caps.b[mine]  # (n, 3) each, in the joint's frame
        ab = b - a
        t = np.einsum("pnd,nd->pn", g.points[:, None] - a, ab) / np.maximum(
            (ab * ab).sum(-1), 1e-300
        )
        near = a + np.clip(t, 0.0, 1.0)[..., None] * ab  # (P, n, 3)
        beyond = np.linalg.norm(g.points[:, None] - near, axis=-1) - caps.radius[mine]
        out[mine] = max(float(beyond.min(axis=1).max()), 0.0)
    return out


def _geom_capsules(geoms: Sequence[Geom]) -> tuple[Capsules, NDArray[np.intp]]:
    """Capsules of each collision geometry (and, per capsule, the geometry's number), in its
    joint's frame: a sphere or capsule as it is; a cylinder its radius, its segment the
    cylinder's length less the caps; a box a row of capsules along its longest axis,
    their radius its smallest half-extent, as many as cover its middle one (one capsule
    round a box's corners made IHMC's 0.27 × 0.33 × 0.42 m torso a ball of 0.22 m that
    every arm overlapped at rest, so nothing was kept apart; one along its long axis,
    the radius the mean of the others, left its edges out, the hip links 7.5 cm into the
    torso box's lower edges on the whole walk, 3.7 cm with the row; the row still rounds
    the box's edges off by 0.41 of its radius: Alexander's shoulder boxes reach 2.5 cm
    into the torso's corners, measured on its boxes); an ellipsoid along its longest
    axis, the radius the mean of the other two half-extents; a mesh
    :func:`~retarget.tasks.fit_capsules` to its convex hull's vertices, the radius their
    :data:`_HULL_SHARE` quantile."""
    joints: list[int] = []
    owner: list[int] = []
    a, b, radius = [], [], []
    for k, g in enumerate(geoms):
        owner += [k - 1] * (len(joints) - len(owner))  # (the geom before: its capsules)
        if g.kind == "mesh":
            c = fit_capsules([(g.joint, g.points)], share=_HULL_SHARE)
            if len(c.joints):
                joints.append(g.joint)
                a.append(c.a[0])
                b.append(c.b[0])
                radius.append(float(c.radius[0]))
            continue
        size = np.asarray(g.size, dtype=np.float64)
        if g.kind == "box":  # a row of capsules across its middle extent
            long, mid, short = np.argsort(size[:3])[::-1]
            r = float(size[short])
            half = max(float(size[long]) - r, 0.0)
            count = max(int(np.ceil(size[mid] / r - 1e-9)), 1)
            along = np.linspace(-1.0, 1.0, count) * max(float(size[mid]) - r, 0.0)
            axis, across = quat.rotate(g.rotation, np.eye(3)[[long, mid]])
            for t in along if count > 1 else [0.0]:
                joints.append(g.joint)
                a.append(g.position + t * across - half * axis)
                b.append(g.position + t * across + half * axis)
                radius.append(r)
            continue
        if g.kind == "sphere":
            r, axis, half = float(size[0]), np.array([0.0, 0.0, 1.0]), 0.0
        elif g.kind in ("capsule", "cylinder"):
            r, axis = float(size[0]), np.array([0.0, 0.0, 1.0])
            half = float(size[1]) if g.kind == "capsule" else max(float(size[1]) - r, 0.0)
        else:  # an ellipsoid: half-extents
            k = int(np.argmax(size[:3]))
            r = float(np.delete(size[:3], k).mean())
            axis = np.eye(3)[k]
            half = max(float(size[k]) - r, 0.0)
        direction = quat.rotate(g.rotation, axis)
        joints.append(g.joint)
        a.append(g.position - half * direction)
        b.append(g.position + half * direction)
        radius.append(r)
    owner += [len(geoms) - 1] * (len(joints) - len(owner))
    return Capsules(
        np.asarray(joints, dtype=np.intp),
        np.asarray(a, dtype=np.float64).reshape(-1, 3),
        np.asarray(b, dtype=np.float64).reshape(-1, 3),
        np.asarray(radius, dtype=np.float64),
    ), np.asarray(owner, dtype=np.intp)


def _sole_points(joint: int, geoms: Sequence[Geom], tilt: float = 0.7) -> Array:
    """The points of a foot's collision geometry that can be its lowest (K, 3), in the
    frame of ``joint``: the support points of its geometry along every direction
    within ``tilt`` rad of straight down (the robot stands z up at the zero
    configuration), i.e. the corners and the rounded edges a foot rolled or pitched
    that far stands on; empty when it has no geometry. (The sole's four corners
    alone let a pitched foot's toe sink 0.56 cm.)"""
    pts = [g.points for g in geoms if g.joint == joint]
    if not pts:
        return np.zeros((0, 3))
    p = np.concatenate(pts)
    polar = np.linspace(0.0, tilt, 4)
    around = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    t, a = np.meshgrid(polar, around)
    down = np.stack([np.sin(t) * np.cos(a), np.sin(t) * np.sin(a), -np.cos(t)], -1).reshape(-1, 3)
    return p[np.unique(np.argmax(down @ p.T, axis=1))]


def _lift(
    gathered: Gathered,
    ankle: int,
    centre: Array,
    frame: Array,
    geoms: Sequence[Geom],
    ramp: float = 1e-9,
) -> Array:
    """How far (F,) the method's plan of a foot (its ankle's centre (F, 3) and world
    frame (F, 4), in the methods' Y-up world) sinks the robot's sole under the floor
    (y = 0), less half of ``ramp``: the method skeleton knows the foot's ankle and tip,
    not the sole reaching behind the ankle, which a heel strike's pitch sinks (TALOS's,
    11 cm behind: up to 10 cm under; pushed out by the IK pass's floor, the legs
    jerked 5 times the source's), nor how high its ankle stands over its sole. The IK
    pass places the foot that much higher, held over time (:func:`_held`); the lift
    grows in over the first ``ramp`` of a sink (C¹), the floor task taking the rest
    (lifted by the whole sink, held, the G1's planted soles floated 0.18 cm, not 0.07)."""
    foot = gathered.members[ankle][-1]
    sole = _sole_points(foot, geoms)
    if not len(sole):
        return np.zeros(len(centre))
    at, _ = rest_pose(gathered.rig)
    lever = at[foot] + sole - at[int(gathered.points[ankle])]  # from the centre, at rest
    low = (centre[:, None, :] + quat.rotate(frame[:, None, :], lever))[..., 1].min(axis=1)
    depth = np.maximum(-low, 0.0)
    return np.where(depth < ramp, depth**2 / (2 * ramp), depth - 0.5 * ramp)


def _held(lift: Array, width: int) -> Array:
    """A lift (F,) held ``width`` frames either side of each frame (the largest within
    them), then eased by a Gaussian of ``width / 2`` frames: the sink of a sole is the
    lowest of its points, whose kinks (a heel, then a toe, the lowest) and quick rises
    at a heel strike, followed frame by frame, jerked the legs (module constants,
    :data:`_HOLD`); held and eased, the foot rises before the sink and comes down after
    it, smooth, and the floor task takes what easing leaves."""
    if width < 1 or len(lift) < 2:
        return lift
    from scipy.ndimage import gaussian_filter1d, maximum_filter1d

    return gaussian_filter1d(
        maximum_filter1d(lift, 2 * width + 1, mode="nearest"), width / 2, mode="nearest"
    )


def _rate_limit(theta: Array, step: Array) -> Array:
    """Hinge angles (F, J) whose change from frame to frame is at most ``step`` (J,)
    (``inf``: free): a forward pass that follows the angles as fast as allowed, then
    a backward pass that does the same from the end, so that the result keeps the
    bound everywhere and lags neither way (a slew-rate limiter run both ways)."""
    out = theta.copy()

    def follow(f: int, near: Array) -> None:  # (within the bound: left exactly as it is)
        d = out[f] - near
        out[f] = np.where(np.abs(d) > step, near + np.clip(d, -step, step), out[f])

    for f in range(1, len(out)):
        follow(f, out[f - 1])
    for f in range(len(out) - 2, -1, -1):
        follow(f, out[f + 1])
    return out


def to_robot(
    gathered: Gathered,
    motion: Motion,
    geoms: Sequence[Geom] = (),
    *,
    margin: float = 0.01,
    velocity: Array | None = None,
) -> tuple[Motion, RobotFit]:
    """A motion on the method skeleton carried onto the robot (module docstring).

    Parameters
    ----------
    gathered : Gathered
    motion : Motion
        On ``gathered.skeleton``.
    geoms : sequence of Geom
        The robot's collision geometry (:attr:`retarget.targets.robot.model.Robot.geoms`): the
        corners of the feet's soles are kept on or above the floor, and capsules
        fitted to the links apart by ``margin`` (skeleton unit; no deeper than at the
        zero configuration where they overlap there; :class:`retarget.tasks.CollisionTask`),
        but for a link and its parent.
    velocity : (J,) array, optional
        Per robot joint, the hinge's speed limit (rad/s; ``inf`` or absent: none):
        after the IK pass the angles are slew-rate limited (:func:`_rate_limit`) and
        the hinge angles it moved counted (:attr:`RobotFit.slowed`).

    Returns
    -------
    Motion
        On ``gathered.robot``.
    RobotFit
    """
    from ...humanoid import world
    from ...humanoid.roles import height as role_height

    g, sk = gathered, gathered.robot
    f = motion.num_frames
    # the robot's hinges as angles throughout (H: every one-channel joint)
    hinges = np.array([j for j in range(sk.num_joints) if len(sk.euler_orders[j]) == 1], np.intp)
    slot = {int(j): i for i, j in enumerate(hinges)}
    axes = np.array([hinge_axis(sk, int(j)) for j in hinges]).reshape(-1, 3)
    lower = np.array([sk.limits[j, _channel(sk, j), 0] for j in hinges])
    upper = np.array([sk.limits[j, _channel(sk, j), 1] for j in hinges])
    theta = np.zeros((f, len(hinges)))
    rot = np.tile(quat.identity(), (f, sk.num_joints, 1))
    for m, group in enumerate(g.members):
        if len(group) == 1 and group[0] in slot:  # a hinge of its own: its twist
            theta[:, slot[group[0]]] = _twist(motion.rotations[:, m], axes[slot[group[0]]])
        elif len(group) == 1:  # the root, a ball joint, a fixed link
            rot[:, group[0]] = motion.rotations[:, m]
        else:  # a ball: its hinges' angles by Gauss-Newton, continuous in time, in range
            at = [slot[k] for k in group]
            theta[:, at] = _hinge_path(
                sk, list(group), motion.rotations[:, m], lower[at], upper[at]
            )
    theta = np.clip(theta, lower, upper)
    rot[:, hinges] = _turns(theta, axes)
    robot = Motion(sk, motion.root_position, rot, motion.fps)
    if not g.gathered:
        return robot, RobotFit(0.0, 0)
    # where the method put each joint frame and limb end, in the methods' Y-up world
    upright, planned = world.reorient(robot, "y"), world.reorient(motion, "y")
    pm, wm = forward_kinematics(g.skeleton, planned.root_position, planned.rotations)
    roles = find_roles(g.skeleton)
    tall = role_height(g.skeleton, roles)
    ground, feet_w, apart, soft, segment = (
        w / tall**2 for w in (_GROUND, _FEET, _APART, _SOFT, _SEGMENT)
    )
    tasks: list = []
    ends: list[tuple[int, int]] = []  # (method point, robot point): the limb ends
    feet: list[int] = []  # the robot's foot joints (an ankle's last hinge)
    placed = pm.copy()  # where the feet go: the method's, lifted where it sinks a sole
    for side in ("left", "right"):
        top = roles.get(f"{side}_ankle")
        if top is not None and top < g.skeleton.num_joints:
            below = [p for p in range(g.skeleton.num_points) if top in g.skeleton.chain(p)]
            lift = _lift(g, top, pm[:, top], wm[:, top], geoms, 4e-3 * tall)
            lift = _held(lift, round(_HOLD * motion.fps))
            placed[:, below, 1] += lift[:, None]
    for side in ("left", "right"):
        for role in ("ankle", "wrist"):
            top = roles.get(f"{side}_{role}")
            if top is None or top >= g.skeleton.num_joints:
                continue
            if role == "ankle":
                feet.append(g.members[top][-1])
                tasks.append(OrientationTask(feet[-1], wm[:, top], weight=10.0))
            for s in range(g.skeleton.num_joints, g.skeleton.num_points):
                if top in g.skeleton.chain(s):
                    r = int(g.points[s])
                    ends.append((s, r))
                    tasks.append(
                        PositionTask(r, placed[:, s], weight=feet_w if role == "ankle" else soft)
                    )
    # every segment between gathered joints pointing where the method pointed it (the
    # limbs' directions), the ankles' centres where it put them, and every gathered
    # joint's frame turned as the method turned it (the twists, which directions leave)
    for m, group in enumerate(g.members):
        if m == 0:
            continue
        if any(k in feet for k in group):  # an ankle's centre: as firm as its ends
            tasks.append(PositionTask(int(g.points[m]), placed[:, m], weight=feet_w))
        up = int(g.skeleton.parents[m])
        bone = pm[:, m] - pm[:, up]
        tasks.append(SegmentTask(int(g.points[up]), int(g.points[m]), bone, weight=segment))
        if len(g.skeleton.euler_orders[m]) > 0:
            tasks.append(OrientationTask(group[-1], wm[:, m], weight=1.0))
    tasks.append(JointLimitTask(sk, weight=1e5))
    ik = g.rig
    corners = [(j, c) for j in feet for c in _sole_points(j, geoms)]
    if corners:  # the soles' corners never under the floor (the methods' y = 0)
        ik = ik.replace(
            site_names=ik.site_names + tuple(f"_sole{k}" for k in range(len(corners))),
            site_parents=np.concatenate([ik.site_parents, [j for j, _ in corners]]),
            site_offsets=np.concatenate([ik.site_offsets, [c for _, c in corners]]),
        )
        points = g.rig.num_points + np.arange(len(corners))
        floor = as_shape(0.0)
        tasks.append(GroundTask(points, floor, np.zeros(len(corners)), weight=ground))
    # a hand's fingers, which no performer's joint drives, stay as the method left them:
    # not columns of the IK (JVRC-1's twelve finger hinges curled to place the hand's
    # end, its little finger's tip)
    fingers = set()
    for side in ("left", "right"):
        top = roles.get(f"{side}_wrist")
        if top is not None and top < g.skeleton.num_joints:
            last = g.members[top][-1]
            fingers |= {j for j in range(sk.num_joints) if j != last and last in sk.chain(j)}
    if geoms:  # links kept apart (the ones apart at the zero configuration)
        capsules = geom_capsules(geoms)
        rest = Pose.of(ik, np.zeros(3), np.tile(quat.identity(), (ik.num_joints, 1)))
        # each pair kept the margin apart plus a share of how far the two shapes reach
        # out of their capsules (no further than at rest, where that is less)
        pairs, rest_gaps = separate_pairs(ik, capsules, rest, np.inf)
        reach = _PROTRUSION * capsule_protrusions(geoms)
        gaps = np.minimum(margin + reach[pairs[:, 0]] + reach[pairs[:, 1]], rest_gaps)
        moves = [j not in fingers and len(sk.euler_orders[j]) > 0 for j in range(sk.num_joints)]
        keep = [
            any(moves[k] for k in set(sk.chain(a)) ^ set(sk.chain(b)))
            for a, b in capsules.joints[pairs]
        ]  # (two links with no hinge of the IK between them are one body)
        pairs, gaps = pairs[keep], gaps[keep]
        if len(pairs):
            tasks.append(CollisionTask(capsules, pairs, margin=gaps, weight=apart))
    # the method's root path is smooth and right: the limbs, not the root, take the change
    rigidity = default_rigidity(ik)
    rigidity[:2] *= 100.0  # (left free, the root jumped where a limb met a limit: 4.5 cm)
    rigidity[1 + np.asarray(sorted(fingers), np.intp)] = np.inf
    # the floor is a hard constraint: a frame the penalty leaves with a sole under it
    # (where the method puts a foot there) is solved again with it a hundred, then ten
    # thousand times firmer (not the links: capsules only approximate them, and held
    # that firmly they twisted IHMC's Alexander round its box-shaped torso, body jerk 100x)
    hard = [i for i, t in enumerate(tasks) if isinstance(t, GroundTask)]
    solved = solve_ik_newton(
        ik,
        upright.root_position,
        upright.rotations,
        tasks,
        rigidity=rigidity,
        hard=hard,
        slack=_SLACK * tall,
        tolerance=_TOLERANCE,
        predict=1.0,
        pair_buffer=0.05 * tall,
        rate=None if velocity is None else np.asarray(velocity, float) / motion.fps,
        damping=_DAMPING * np.where(np.isfinite(rigidity[1:]), rigidity[1:], 0.0),
    )
    root_position, rot = solved.root_position, solved.rotations.copy()
    hardened = int((solved.boosted > 0).sum())
    cols = solved.columns[hinges]  # the hinges: θ_ref + δθ (none for a finger)
    theta = theta + np.where(cols >= 0, solved.x[:, np.maximum(cols, 0)], 0.0)
    past = np.maximum(np.maximum(lower - theta, theta - upper), 0.0)
    clamped = int((past > 1e-9).sum())
    theta = np.clip(theta, lower, upper)
    slowed = 0
    if velocity is not None and np.isfinite(velocity).any() and f > 1:
        theta = np.unwrap(theta, axis=0)  # (a hinge without a range turns on)
        limited = _rate_limit(theta, np.asarray(velocity, float)[hinges] / motion.fps)
        slowed = int((np.abs(limited - theta) > 1e-9).sum())
        theta = limited
    rot[:, hinges] = _turns(theta, axes)
    out = world.reorient(Motion(sk.replace(up="y"), root_position, rot, motion.fps), sk.up or "z")
    out = out.replace(skeleton=sk)
    pr, _ = forward_kinematics(g.rig, out.root_position, out.rotations)
    pz, _ = forward_kinematics(g.skeleton, motion.root_position, motion.rotations)
    error = max((float(np.abs(pr[:, r] - pz[:, s]).max()) for s, r in ends), default=0.0)
    return out, RobotFit(error, clamped, float(past.max(initial=0.0)), slowed, hardened)


def inertia_on(
    gathered: Gathered, robot: Robot, skeleton: Skeleton
) -> tuple[Array, Array, Array, dict[str, float]]:
    """The robot's own mass model on ``skeleton`` (the method skeleton, or one a
    mapping made of it: joints named as its joints), for the physics filter.

    Each robot joint's link (mass, centre, inertia about it; the model's, with fixed
    bodies folded in, :attr:`retarget.targets.robot.model.Robot.masses`) goes to the method
    joint that gathers it, centres moved from the hinge's anchor to the ball's
    centre and inertias by the parallel-axis theorem; joints of ``skeleton`` the
    robot does not have carry nothing.

    Returns
    -------
    mass : (J,) kg
    com : (J, 3) m, in each joint's frame (the world's axes at rest)
    inertia : (J, 3, 3) kg m², about the centre of mass
    torque_limits : dict of joint name to N m
        Per gathered joint with actuator limits on all its hinges, the least of them.
    """
    sk = gathered.robot
    rest = rest_pose(sk)[0]
    at, _ = rest_pose(gathered.rig)
    n = skeleton.num_joints
    mass, first = np.zeros(n), np.zeros((n, 3))
    second = np.zeros((n, 3, 3))
    limits: dict[str, float] = {}
    effort = dict(zip(robot.dof_joint.tolist(), robot.effort.tolist(), strict=True))
    head = {k: m for m, group in enumerate(gathered.members) for k in group}
    for k in range(sk.num_joints):
        m = head.get(k)
        name = gathered.skeleton.names[m] if m is not None else None
        if name is None or name not in skeleton.names or robot.masses[k] <= 0:
            continue
        j = skeleton.index(name)
        c = robot.centres[k] + rest[k] - at[int(gathered.points[m])]
        mk = float(robot.masses[k])
        mass[j] += mk
        first[j] += mk * c
        second[j] += robot.inertias[k] + mk * (float(c @ c) * np.eye(3) - np.outer(c, c))
    com = np.divide(first, mass[:, None], out=np.zeros_like(first), where=mass[:, None] > 0)
    inertia = second - mass[:, None, None] * (
        np.einsum("jk,jk->j", com, com)[:, None, None] * np.eye(3)
        - np.einsum("ja,jb->jab", com, com)
    )
    for m, group in enumerate(gathered.members):
        tau = [effort.get(k, np.inf) for k in group]
        name = gathered.skeleton.names[m]
        if name in skeleton.names and tau and all(np.isfinite(tau)) and min(tau) > 0:
            limits[name] = float(min(tau))
    return mass, com, inertia, limits


def hinge_angles(robot: Skeleton, rotations: Array) -> Array:
    """Each one-channel joint's angle about its axis, (F, J) (zero elsewhere)."""
    theta = dofs.channel_angles(robot, rotations)  # in each joint's channel order
    one = np.array([len(o) == 1 for o in robot.euler_orders])
    return np.where(one, theta[..., 0], 0.0)
