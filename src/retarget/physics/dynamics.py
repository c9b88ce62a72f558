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
* :func:`project_to_support`: eq. (7), the ZMP moved onto the convex hull of
  the contact points when outside.

World axes are Y up (DESIGN.md); lengths in metres, time in seconds, mass in
kg: motions in other units are converted with :attr:`Body.metres`.

Why our own: the filter of Tak & Ko evaluates these functions on every sigma
point of every frame, batched; pinocchio works one configuration per call
(about 4.7 µs each from Python), and is kept as the test reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.spatial import ConvexHull, QhullError

from .. import quat
from ..kinematics import forward_kinematics
from ..motion import Motion
from .body import Body

__all__ = [
    "GRAVITY",
    "body_centres",
    "center_of_mass",
    "inverse_dynamics",
    "project_to_support",
    "zmp",
]

Array = NDArray[np.float64]

#: m/s², Y up.
GRAVITY = np.array([0.0, -9.81, 0.0])
GRAVITY.setflags(write=False)


def _cross(a: Array, b: Array) -> Array:
    return np.cross(a, b)


def inverse_dynamics(
    body: Body,
    root_position: ArrayLike,
    rotations: ArrayLike,
    velocity: ArrayLike,
    angular_velocity: ArrayLike,
    acceleration: ArrayLike,
    angular_acceleration: ArrayLike,
    gravity: ArrayLike = GRAVITY,
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
    n = sk.num_joints
    root = np.asarray(root_position, dtype=np.float64)
    rot = np.asarray(rotations, dtype=np.float64)
    pos, world = forward_kinematics(sk.scaled(body.metres), root, rot)
    pos, world = pos[:, :n], world[:, :n]
    mats = quat.matrix_from_quat(world)  # (F, J, 3, 3)
    omega = np.asarray(angular_velocity, dtype=np.float64)
    omega_dot = np.asarray(angular_acceleration, dtype=np.float64)
    rel_w = np.einsum("fjab,fjb->fja", mats, omega)  # relative angular velocity, world
    rel_a = np.einsum("fjab,fjb->fja", mats, omega_dot)
    w = np.empty_like(rel_w)
    alpha = np.empty_like(rel_w)
    acc = np.empty_like(rel_w)  # joint origins' accelerations, gravity taken into them
    w[:, 0] = rel_w[:, 0]
    alpha[:, 0] = rel_a[:, 0]
    acc[:, 0] = np.asarray(acceleration, dtype=np.float64) - np.asarray(gravity, np.float64)
    parents = sk.parents
    for j in range(1, n):
        p = int(parents[j])
        r = pos[:, j] - pos[:, p]
        acc[:, j] = acc[:, p] + _cross(alpha[:, p], r) + _cross(w[:, p], _cross(w[:, p], r))
        w[:, j] = w[:, p] + rel_w[:, j]
        alpha[:, j] = alpha[:, p] + _cross(w[:, p], rel_w[:, j]) + rel_a[:, j]
    s = np.einsum("fjab,jb->fja", mats, body.com)  # joint origin → body CM, world
    acc_c = acc + _cross(alpha, s) + _cross(w, _cross(w, s))
    f = body.mass[:, None] * acc_c
    inertia = np.einsum("fjab,jbc,fjdc->fjad", mats, body.inertia, mats)
    n_c = np.einsum("fjab,fjb->fja", inertia, alpha) + _cross(
        w, np.einsum("fjab,fjb->fja", inertia, w)
    )
    force = f.copy()
    moment = n_c + _cross(s, f)  # about each joint's origin
    for j in range(n - 1, 0, -1):
        p = int(parents[j])
        force[:, p] += force[:, j]
        moment[:, p] += moment[:, j] + _cross(pos[:, j] - pos[:, p], force[:, j])
    torques = np.einsum("fjba,fjb->fja", mats, moment)
    root_force = np.einsum("fba,fb->fa", mats[:, 0], force[:, 0])
    return root_force, torques[:, 0].copy(), torques


def body_centres(body: Body, motion: Motion) -> Array:
    """World centre of mass of every body, shape (F, J, 3), metres."""
    sk = body.skeleton
    pos, world = forward_kinematics(
        sk.scaled(body.metres), motion.root_position * body.metres, motion.rotations
    )
    n = sk.num_joints
    return pos[:, :n] + quat.rotate(world[:, :n], body.com)


def center_of_mass(body: Body, motion: Motion) -> Array:
    """The whole body's centre of mass, shape (F, 3), metres."""
    c = body_centres(body, motion)
    return np.einsum("j,fja->fa", body.mass, c) / body.total_mass


def _second_difference(x: Array, fps: float) -> Array:
    """d²x/dt² by central differences (one-sided at the ends), over axis 0."""
    if len(x) < 3:
        return np.zeros_like(x)
    return np.gradient(np.gradient(x, axis=0), axis=0) * fps**2


def zmp(body: Body, motion: Motion, gravity: float = 9.81) -> tuple[Array, Array]:
    """Zero moment point of eq. (6), on the ground plane (x, z), metres.

    ``P = (Σ m_i (ÿ_i + g) x_i − Σ m_i ẍ_i y_i) / Σ m_i (ÿ_i + g)`` and likewise
    for z, with the bodies' centres of mass ``r_i`` and their accelerations
    (central differences).

    Returns
    -------
    point : ndarray, shape (F, 2)
        ``(x, z)``; NaN where the vertical force ``Σ m_i (ÿ_i + g)`` is not
        positive (nothing could hold the body up: flight or a fall).
    vertical : ndarray, shape (F,)
        ``Σ m_i (ÿ_i + g)`` (N).
    """
    r = body_centres(body, motion)
    a = _second_difference(r, motion.fps)
    m = body.mass
    up = np.einsum("j,fj->f", m, a[..., 1] + gravity)
    point = np.empty((len(r), 2))
    for k, axis in enumerate((0, 2)):
        num = np.einsum("j,fj->f", m, (a[..., 1] + gravity) * r[..., axis]) - np.einsum(
            "j,fj->f", m, a[..., axis] * r[..., 1]
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            point[:, k] = np.where(up > 1e-9, num / up, np.nan)
    return point, up


def project_to_support(point: ArrayLike, contacts: Sequence[ArrayLike]) -> tuple[Array, bool]:
    """Eq. (7): the point itself when inside the support polygon, else its projection.

    Parameters
    ----------
    point : array_like, shape (2,)
        ``(x, z)``.
    contacts : sequence of array_like, shape (2,)
        The ground positions of the points in contact; their convex hull is
        the support polygon (a segment for two points, a point for one).

    Returns
    -------
    projected : ndarray, shape (2,)
    inside : bool
    """
    p = np.asarray(point, dtype=np.float64)
    pts = np.unique(np.asarray(contacts, dtype=np.float64).reshape(-1, 2), axis=0)
    if len(pts) == 0:
        raise ValueError("no contact point: the support polygon is empty")
    hull = pts
    if len(pts) >= 3:
        try:
            hull = pts[ConvexHull(pts).vertices]  # counter-clockwise
        except QhullError:  # collinear points: the segment between the extremes
            d = pts - pts.mean(axis=0)
            axis = np.linalg.svd(d)[2][0]
            t = d @ axis
            hull = pts[[int(np.argmin(t)), int(np.argmax(t))]]
    if len(hull) >= 3:
        edges = np.roll(hull, -1, axis=0) - hull
        to_p = p - hull
        cross = edges[:, 0] * to_p[:, 1] - edges[:, 1] * to_p[:, 0]
        if (cross >= -1e-12).all():
            return p.copy(), True
    best, best_d = hull[0], np.inf
    n = len(hull)
    for k in range(n if n >= 3 else max(n - 1, 1)):
        a, b = hull[k], hull[(k + 1) % n] if n > 1 else hull[k]
        ab = b - a
        t = 0.0 if ab @ ab == 0 else float(np.clip((p - a) @ ab / (ab @ ab), 0.0, 1.0))
        q = a + t * ab
        d = float(np.linalg.norm(p - q))
        if d < best_d:
            best, best_d = q, d
    return np.asarray(best, dtype=np.float64), bool(best_d <= 1e-12)
