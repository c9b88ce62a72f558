"""Dynamics of a motion on a mass model (Tak & Ko 2005, §4): inverse dynamics, centre of
mass, zero moment point and the support polygon.

* :func:`inverse_dynamics`: the recursive Newton–Euler algorithm for the
  floating-base tree of :class:`~retarget.physics.body.Body` (one spherical
  joint per joint, a free root), vectorised over frames (the joints go in
  turn, parents first). The joint torques are the moments each joint passes
  to its child body, in the child's frame — the generalised forces of a
  spherical joint in the library's tangent space (``q ⊗ exp(v)``, DESIGN.md);
  the root's entry is the wrench the environment must supply (zero in free
  flight for a physical motion), in the root's frame about its origin, as
  pinocchio's ``rnea`` gives them for a free-flyer (``tests/test_physics.py``
  compares the two to 1e-8). The closed loop of double support is not solved
  here: the root wrench is what the feet together must supply.
* :func:`zmp`: eq. (6) from the bodies' centres of mass and their
  accelerations (central differences over frames).

World axes are Y up (DESIGN.md); lengths in metres, time in seconds, mass in
kg: motions in other units are converted with :attr:`Body.metres`.

Why our own: the filter of Tak & Ko evaluates these functions on every sigma
point of every frame, batched; pinocchio works one configuration per call
(about 4.7 µs each from Python), and is kept as the test reference.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array
from ..core.kinematics import forward_kinematics
from ..core.lazy import loader, numpy_twins
from ..core.motion import Motion
from ..core.so3 import cross
from .body import Body

__all__ = [
    "GRAVITY",
    "BodyMotion",
    "body_centres",
    "body_motion",
    "center_of_mass",
    "environment_wrench",
    "inverse_dynamics",
    "motion_rates",
    "second_difference",
    "support_shares",
    "zmp",
    "zmp_of",
]


#: m/s², Y up.
GRAVITY = np.array([0.0, -9.81, 0.0])
GRAVITY.setflags(write=False)


_kernels = loader("retarget.physics._kernels.dynamics")


@functools.lru_cache(maxsize=64)
def _depth_levels(parents: tuple[int, ...]) -> tuple[NDArray[np.intp], ...]:
    """The joints below the root by depth (1, 2, ...): a level's parents are all in the
    levels before it, so the recursion over joints runs a level at a time."""
    depth = [0] * len(parents)
    for j in range(1, len(parents)):
        depth[j] = depth[parents[j]] + 1
    top = max(depth, default=0)
    return tuple(
        np.array([j for j in range(1, len(parents)) if depth[j] == d], dtype=np.intp)
        for d in range(1, top + 1)
    )


def _cross(a: Array, b: Array) -> Array:
    return cross(a, b)  # (np.cross spends most of its time moving axes on small batches)


@dataclass(frozen=True, eq=False)
class BodyMotion:
    """The bodies' world kinematics at a batch of states (the forward pass of RNEA).

    Leading axes ``(...)`` are those of the states (frames, sigma points).

    Attributes
    ----------
    origins : ndarray, shape (..., J, 3)
        Joint origins, metres.
    frames : ndarray, shape (..., J, 3, 3)
        World rotation matrices of the joints.
    omega, alpha : ndarray, shape (..., J, 3)
        World angular velocities (rad/s) and accelerations (rad/s²) of the bodies.
    centres : ndarray, shape (..., J, 3)
        World centres of mass ``r_i``, metres.
    accelerations : ndarray, shape (..., J, 3)
        ``r̈_i``, m/s² (gravity not included).
    """

    origins: Array
    frames: Array
    omega: Array
    alpha: Array
    centres: Array
    accelerations: Array


def body_motion(
    body: Body,
    root_position: ArrayLike,
    rotations: ArrayLike,
    velocity: ArrayLike,
    angular_velocity: ArrayLike,
    acceleration: ArrayLike,
    angular_acceleration: ArrayLike,
) -> BodyMotion:
    """World motion of every body from a state (q, q̇, q̈), batched over leading axes.

    Parameters
    ----------
    body : Body
    root_position : array_like, shape (..., 3)
        In the skeleton's unit (converted with :attr:`Body.metres`).
    rotations : array_like, shape (..., J, 4)
        Local joint rotations.
    velocity, acceleration : array_like, shape (..., 3)
        The root origin's world velocity (m/s) and acceleration (m/s²).
    angular_velocity, angular_acceleration : array_like, shape (..., J, 3)
        Each joint's angular velocity (rad/s) and its rate (rad/s²) relative to
        its parent, in the joint's own frame: ``q̇ = q ⊗ (0, ω/2)`` (the
        library's tangent space, DESIGN.md).
    """
    sk = body.skeleton
    n = sk.num_joints
    rot = np.asarray(rotations, dtype=np.float64)
    batch = rot.shape[:-2]
    root = np.broadcast_to(np.asarray(root_position, dtype=np.float64), (*batch, 3))
    pos, world = forward_kinematics(body.metric_skeleton, root * body.metres, rot)
    pos = pos[..., :n, :].reshape(-1, n, 3)
    mats = quat.matrix_from_quat(world[..., :n, :]).reshape(-1, n, 3, 3)
    count = len(pos)

    def flat(a: ArrayLike, tail: tuple[int, ...]) -> Array:
        return np.broadcast_to(np.asarray(a, dtype=np.float64), (*batch, *tail)).reshape(
            count, *tail
        )

    omega_local = flat(angular_velocity, (n, 3))
    alpha_local = flat(angular_acceleration, (n, 3))
    root_acc = flat(acceleration, (3,))
    if numpy_twins():  # numba not loaded: the same formulas in numpy
        w, alpha, centres, acc_c = _forward_pass_numpy(
            body, pos, mats, omega_local, alpha_local, root_acc
        )
    else:
        w, alpha, centres, acc_c = (np.empty_like(pos) for _ in range(4))
        pos = np.ascontiguousarray(pos)
        _kernels()._body_motion_kernel(
            pos,
            np.ascontiguousarray(mats),
            np.ascontiguousarray(omega_local),
            np.ascontiguousarray(alpha_local),
            np.ascontiguousarray(root_acc),
            np.ascontiguousarray(sk.parents[:n], dtype=np.intp),
            np.ascontiguousarray(body.com, dtype=np.float64),
            w,
            alpha,
            centres,
            acc_c,
        )

    def shaped(a: Array) -> Array:
        return a.reshape(*batch, *a.shape[1:])

    return BodyMotion(
        shaped(pos), shaped(mats), shaped(w), shaped(alpha), shaped(centres), shaped(acc_c)
    )


def _forward_pass_numpy(
    body: Body, pos: Array, mats: Array, omega_local: Array, alpha_local: Array, root_acc: Array
) -> tuple[Array, Array, Array, Array]:
    """:func:`body_motion`'s forward pass in numpy (``_dynamics_kernels`` compiles it):
    world angular velocities and accelerations, centres and their accelerations,
    (N, J, 3) each, a depth level of joints at a time."""
    rel_w = np.einsum("fjab,fjb->fja", mats, omega_local)
    rel_a = np.einsum("fjab,fjb->fja", mats, alpha_local)
    w = np.empty_like(rel_w)
    alpha = np.empty_like(rel_w)
    acc = np.empty_like(rel_w)  # joint origins' accelerations
    w[:, 0] = rel_w[:, 0]
    alpha[:, 0] = rel_a[:, 0]
    acc[:, 0] = root_acc
    parents = body.skeleton.parents[: pos.shape[1]]
    for j in _depth_levels(tuple(int(p) for p in parents)):  # a level's joints at once
        p = parents[j]
        r = pos[:, j] - pos[:, p]
        acc[:, j] = acc[:, p] + _cross(alpha[:, p], r) + _cross(w[:, p], _cross(w[:, p], r))
        w[:, j] = w[:, p] + rel_w[:, j]
        alpha[:, j] = alpha[:, p] + _cross(w[:, p], rel_w[:, j]) + rel_a[:, j]
    s = np.einsum("fjab,jb->fja", mats, body.com)  # joint origin → body CM, world
    acc_c = acc + _cross(alpha, s) + _cross(w, _cross(w, s))
    return w, alpha, pos + s, acc_c


def _body_wrenches(body: Body, bm: BodyMotion, gravity: Array) -> tuple[Array, Array]:
    """Each body's inertial force ``m (r̈ − g)`` and moment about its centre, world."""
    f = body.mass[:, None] * (bm.accelerations - gravity)
    inertia = np.einsum("...jab,jbc,...jdc->...jad", bm.frames, body.inertia, bm.frames)
    moment = np.einsum("...jab,...jb->...ja", inertia, bm.alpha) + _cross(
        bm.omega, np.einsum("...jab,...jb->...ja", inertia, bm.omega)
    )
    return f, moment


def environment_wrench(
    body: Body, bm: BodyMotion, gravity: ArrayLike = GRAVITY
) -> tuple[Array, Array, Array]:
    """The wrench the environment must supply for a motion: the rates of momentum
    minus gravity (Newton–Euler for the whole body).

    Returns
    -------
    force : ndarray, shape (..., 3)
        ``Σ m_i (r̈_i − g) = Ṗ − m g`` (N, world).
    moment : ndarray, shape (..., 3)
        ``L̇_c = Σ I_i α_i + ω_i × I_i ω_i + (r_i − c) × m_i (r̈_i − g)``, about the
        centre of mass ``c`` (N m, world).
    centre : ndarray, shape (..., 3)
        ``c`` (metres).

    In flight gravity is the only external force, so both are zero for a
    physical motion: eq. (11)'s momentum constraints (the paper prints the
    momentum for its rate; ``Ṗ = m g`` and ``L̇ = 0`` is what Newton's law
    asks, and rigid bodies add their spin to the point masses).
    """
    g = np.asarray(gravity, dtype=np.float64)
    f, n_c = _body_wrenches(body, bm, g)
    c = np.einsum("j,...ja->...a", body.mass, bm.centres) / body.total_mass
    arm = bm.centres - c[..., None, :]
    return f.sum(axis=-2), (n_c + _cross(arm, f)).sum(axis=-2), c


def inverse_dynamics(
    body: Body,
    root_position: ArrayLike,
    rotations: ArrayLike,
    velocity: ArrayLike,
    angular_velocity: ArrayLike,
    acceleration: ArrayLike,
    angular_acceleration: ArrayLike,
    gravity: ArrayLike = GRAVITY,
    *,
    shares: ArrayLike | None = None,
) -> tuple[Array, Array, Array]:
    """Joint torques and the root wrench of a state (recursive Newton–Euler).

    Parameters
    ----------
    body : Body
    root_position : array_like, shape (F, 3)
        Metres, world.
    rotations : array_like, shape (F, J, 4)
        Local joint rotations (the root's is its world rotation).
    velocity, acceleration : array_like, shape (F, 3)
        The root origin's world velocity (m/s) and acceleration (m/s²).
    angular_velocity, angular_acceleration : array_like, shape (F, J, 3)
        Each joint's angular velocity (rad/s) and its rate (rad/s²) relative to
        its parent, in the joint's own frame: ``q̇ = q ⊗ (0, ω/2)``.
    gravity : array_like, shape (3,)
    shares : array_like, shape (F, J), optional
        The share of the environment's wrench (:func:`environment_wrench`)
        each body receives at its joint's origin: the feet in contact, summing
        to 1 in support, 0 in flight. Ko and Badler's (1996) approximation of
        the closed loop of double support splits it between the feet
        (:func:`support_shares`). The root wrench is then what the contacts
        could not give (zero in support).

    Returns
    -------
    force, moment : ndarray, shape (F, 3)
        The wrench on the root from outside (N; N m about the root's origin),
        in the root's frame.
    torques : ndarray, shape (F, J, 3)
        N m, each joint's moment on its child body in the joint's frame (row
        0 is the root's moment again).
    """
    sk = body.skeleton
    root = np.asarray(root_position, dtype=np.float64) / body.metres
    bm = body_motion(
        body, root, rotations, velocity, angular_velocity, acceleration, angular_acceleration
    )
    g = np.asarray(gravity, dtype=np.float64)
    f, n_c = _body_wrenches(body, bm, g)
    pos, mats = bm.origins, bm.frames
    force = f.copy()
    moment = n_c + _cross(bm.centres - pos, f)  # about each joint's origin
    if shares is not None:
        share = np.asarray(shares, dtype=np.float64)
        total_f = f.sum(axis=-2)
        total_m = (n_c + _cross(bm.centres, f)).sum(axis=-2)  # about the world origin
        force -= share[..., None] * total_f[..., None, :]
        moment -= share[..., None] * (total_m[..., None, :] - _cross(pos, total_f[..., None, :]))
    for j in range(sk.num_joints - 1, 0, -1):
        p = int(sk.parents[j])
        force[:, p] += force[:, j]
        moment[:, p] += moment[:, j] + _cross(pos[:, j] - pos[:, p], force[:, j])
    torques = np.einsum("...jba,...jb->...ja", mats, moment)
    root_force = np.einsum("...ba,...b->...a", mats[..., 0, :, :], force[..., 0, :])
    return root_force, torques[..., 0, :].copy(), torques


def support_shares(zmp_point: ArrayLike, left: ArrayLike, right: ArrayLike) -> Array:
    """Ko and Badler's (1996) split of the ground's wrench between two feet.

    In double support the share of each foot falls linearly with the ZMP's
    distance from it along the line between the feet (1 at its own foot, 0
    at the other's); a single foot in contact takes everything, flight
    nothing.

    Parameters
    ----------
    zmp_point : array_like, shape (..., 2)
        ``(x, z)``, metres (NaN in flight is fine).
    left, right : array_like, shape (..., 2)
        Each foot's contact centre ``(x, z)``, NaN where that foot is off the
        ground; broadcast with ``zmp_point``.

    Returns
    -------
    ndarray, shape (..., 2)
        Left and right shares.
    """
    p, a, b = np.broadcast_arrays(
        np.asarray(zmp_point, dtype=np.float64),
        np.asarray(left, dtype=np.float64),
        np.asarray(right, dtype=np.float64),
    )
    on_a = np.isfinite(a).all(axis=-1)
    on_b = np.isfinite(b).all(axis=-1)
    both = on_a & on_b
    ab = np.where(both[..., None], b - a, 0.0)
    length2 = np.einsum("...a,...a->...", ab, ab)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.einsum("...a,...a->...", np.where(np.isfinite(p), p, a) - a, ab) / length2
    t = np.clip(np.where(np.isfinite(t), t, 0.5), 0.0, 1.0)
    return np.stack(
        [np.where(both, 1.0 - t, on_a.astype(np.float64)), np.where(both, t, on_b * 1.0)],
        axis=-1,
    )


def motion_rates(motion: Motion, metres: float) -> tuple[Array, Array, Array, Array]:
    """Velocities and accelerations of a motion in the tangent space, by finite differences.

    Central differences on the compact stencil (``(x_{k+1} − 2x_k + x_{k−1}) /
    Δt²``), the rotations' through the right increments ``log(q_k⁻¹ q_{k+1})``;
    the end frames repeat their neighbours' second differences.

    Returns
    -------
    velocity, acceleration : ndarray, shape (F, 3)
        Root origin, world, m/s and m/s².
    angular_velocity, angular_acceleration : ndarray, shape (F, J, 3)
        Local, rad/s and rad/s² (``q̇ = q ⊗ (0, ω/2)``).
    """
    fps = motion.fps
    root = motion.root_position * metres
    rot = motion.rotations
    n = len(root)
    if n < 3:
        zeros = np.zeros_like(root)
        zero_w = np.zeros((*rot.shape[:-1], 3))
        return zeros, zeros.copy(), zero_w, zero_w.copy()
    half_v = np.diff(root, axis=0) * fps  # at k + 1/2
    half_w = quat.log(quat.multiply(quat.conjugate(rot[:-1]), rot[1:])) * fps

    def centre(h: Array) -> Array:
        return np.concatenate([h[:1], 0.5 * (h[:-1] + h[1:]), h[-1:]])

    def rate(h: Array) -> Array:
        inner = np.diff(h, axis=0) * fps
        return np.concatenate([inner[:1], inner, inner[-1:]])

    return centre(half_v), rate(half_v), centre(half_w), rate(half_w)


def body_centres(body: Body, motion: Motion) -> Array:
    """World centre of mass of every body, shape (F, J, 3), metres."""
    sk = body.skeleton
    pos, world = forward_kinematics(
        body.metric_skeleton, motion.root_position * body.metres, motion.rotations
    )
    n = sk.num_joints
    return pos[:, :n] + quat.rotate(world[:, :n], body.com)


def center_of_mass(body: Body, motion: Motion) -> Array:
    """The whole body's centre of mass, shape (F, 3), metres."""
    c = body_centres(body, motion)
    return np.einsum("j,fja->fa", body.mass, c) / body.total_mass


def second_difference(x: Array, fps: float) -> Array:
    """d²x/dt² on the compact stencil over axis 0 (the ends repeat their neighbours')."""
    if len(x) < 3:
        return np.zeros_like(x)
    inner = (x[2:] - 2.0 * x[1:-1] + x[:-2]) * fps**2
    return np.concatenate([inner[:1], inner, inner[-1:]])


def zmp_of(
    mass: Array, centres: ArrayLike, accelerations: ArrayLike, gravity: float = 9.81
) -> tuple[Array, Array]:
    """Eq. (6): the ZMP of point masses ``m_i`` at ``r_i`` accelerating with ``r̈_i``.

    ``P = (Σ m_i (ÿ_i + g) x_i − Σ m_i ẍ_i y_i) / Σ m_i (ÿ_i + g)`` and likewise
    for z.

    Parameters
    ----------
    mass : ndarray, shape (J,)
    centres, accelerations : array_like, shape (..., J, 3)
        Metres, m/s².

    Returns
    -------
    point : ndarray, shape (..., 2)
        ``(x, z)``; NaN where the vertical force ``Σ m_i (ÿ_i + g)`` is not
        positive (nothing could hold the body up: flight or a fall).
    vertical : ndarray, shape (...)
        ``Σ m_i (ÿ_i + g)`` (N).
    """
    r = np.asarray(centres, dtype=np.float64)
    a = np.asarray(accelerations, dtype=np.float64)
    lift = a[..., 1] + gravity
    up = lift @ mass
    num = np.stack([(lift * r[..., k] - a[..., k] * r[..., 1]) @ mass for k in (0, 2)], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        point = np.where((up > 1e-9)[..., None], num / up[..., None], np.nan)
    return point, up


def zmp(body: Body, motion: Motion, gravity: float = 9.81) -> tuple[Array, Array]:
    """Eq. (6) on a motion: the bodies' centres by forward kinematics, their
    accelerations by second differences (:func:`second_difference`).

    Returns ``(point (F, 2), vertical (F,))`` as :func:`zmp_of`.
    """
    r = body_centres(body, motion)
    return zmp_of(body.mass, r, second_difference(r, motion.fps), gravity)
