"""Batched forward kinematics, Jacobians in the tangent space, centre of mass.

Forward kinematics is the library's innermost loop (every solver, filter and
measure calls it, often on sigma points or whole clips), so it is a fused
numba kernel: one pass over frames and points that keeps each frame's chain in
registers. Done array-at-a-time in numpy (one tree level per step over all
frames, one temporary per arithmetic operation), the same work is ~12x slower
on lafan_walk.bvh: 19.5 ms against 1.6 ms (``benchmarks/io_kinematics.py``,
row "numpy (same algorithm)"). The kernels live in
:mod:`retarget.core._kernels.kinematics`, loaded on first use.

Jacobians follow DESIGN.md's single convention: columns are the entries of the
tangent vector ``x = (v_root, v_0, …, v_{J-1})`` of :mod:`retarget.core.motion`
(root translation, then one *local* rotation vector per joint applied on the
right, ``q_j ⊗ exp(v_j)``); rows are world-frame quantities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .arrays import Array
from .lazy import loader, numpy_twins
from .motion import Motion
from .skeleton import Skeleton

__all__ = [
    "Pose",
    "center_of_mass",
    "forward_kinematics",
    "jacobian",
    "positions",
    "rest_pose",
]

#: Most numbers in the positions of :func:`forward_kinematics` computed with numpy (the
#: kernel's operations in its order: the same bits) while numba is not loaded.
_NUMPY_POINTS = 1 << 18
_kernels = loader("retarget.core._kernels.kinematics")


def rest_pose(skeleton: Skeleton, root: ArrayLike | None = None) -> tuple[Array, Array]:
    """World positions (P, 3) and rotations (P, 4) of every point at rest: every local
    rotation the identity (the joints' frames the world's), the root at ``root``
    (default the origin). Each point is its parent's plus its offset (the same bits).

    Examples
    --------
    >>> from retarget.core.skeleton import Skeleton
    >>> sk = Skeleton(("a", "b"), np.array([-1, 0]), np.array([[0.0, 1, 0], [0, 2, 0]]))
    >>> rest_pose(sk)[0].tolist()
    [[0.0, 0.0, 0.0], [0.0, 2.0, 0.0]]
    """
    origin = np.zeros(3) if root is None else np.asarray(root, dtype=np.float64)
    identity = np.zeros((skeleton.num_joints, 4))
    identity[:, 0] = 1.0
    return forward_kinematics(skeleton, origin, identity)


def forward_kinematics(
    skeleton: Skeleton,
    root_position: ArrayLike,
    rotations: ArrayLike,
    translations: ArrayLike | None = None,
) -> tuple[Array, Array]:
    """World positions and rotations of every joint and end site.

    Parameters
    ----------
    skeleton : Skeleton
    root_position : array_like, shape (..., 3)
        World position of the root.
    rotations : array_like, shape (..., J, 4)
        Local rotations (unit quaternions, w x y z).
    translations : array_like, shape (..., J, 3), optional
        Per-pose local offsets replacing ``skeleton.offsets`` (animated joint
        translations; see :class:`retarget.core.motion.Motion`).

    Returns
    -------
    positions : ndarray, shape (..., J + S, 3)
        World positions of the points (joints, then sites), in ``skeleton.unit``.
    world_rotations : ndarray, shape (..., J + S, 4)
        World rotations of the points' frames (a site has its parent's).
    """
    rot = np.asarray(rotations, dtype=np.float64)
    n_joints = skeleton.num_joints
    if rot.shape[-2:] != (n_joints, 4):
        raise ValueError(f"Expected `rotations` of shape (..., {n_joints}, 4), got {rot.shape}")
    root = np.asarray(root_position, dtype=np.float64)
    batch = np.broadcast_shapes(rot.shape[:-2], root.shape[:-1])
    rot = np.ascontiguousarray(np.broadcast_to(rot, (*batch, n_joints, 4))).reshape(-1, n_joints, 4)
    root = np.ascontiguousarray(np.broadcast_to(root, (*batch, 3))).reshape(-1, 3)
    n = rot.shape[0]
    if translations is None:
        offsets = skeleton.point_offsets[None]
    else:
        t = np.broadcast_to(np.asarray(translations, np.float64), (*batch, n_joints, 3)).reshape(
            n, n_joints, 3
        )
        offsets = np.concatenate(
            [t, np.broadcast_to(skeleton.site_offsets, (n, skeleton.num_sites, 3))], axis=1
        )
    offsets = np.ascontiguousarray(offsets)
    n_points = skeleton.num_points
    pos = np.empty((n, n_points, 3))
    world = np.empty((n, n_points, 4))
    parents = np.ascontiguousarray(skeleton.point_parents)
    if numpy_twins() and n * n_points <= _NUMPY_POINTS:
        _fk_numpy(root, rot, parents, offsets, n_joints, pos, world)
    else:
        _kernels()._fk_kernel(root, rot, parents, offsets, n_joints, pos, world)
    return pos.reshape(*batch, n_points, 3), world.reshape(*batch, n_points, 4)


def _fk_numpy(
    root: Array,
    rot: Array,
    parents: NDArray[np.intp],
    offsets: Array,
    num_joints: int,
    pos: Array,
    world: Array,
) -> None:
    """``_kinematics_kernels._fk_kernel`` in numpy, point by point over all frames at
    once: its operations in its order, so the same bits (``tests/test_kinematics.py``)."""
    pos[:, 0] = root
    world[:, 0] = rot[:, 0]
    for p in range(1, parents.shape[0]):
        a = parents[p]
        w, x, y, z = world[:, a, 0], world[:, a, 1], world[:, a, 2], world[:, a, 3]
        vx, vy, vz = offsets[:, p, 0], offsets[:, p, 1], offsets[:, p, 2]
        tx = 2.0 * (y * vz - z * vy)
        ty = 2.0 * (z * vx - x * vz)
        tz = 2.0 * (x * vy - y * vx)
        pos[:, p, 0] = pos[:, a, 0] + vx + w * tx + (y * tz - z * ty)
        pos[:, p, 1] = pos[:, a, 1] + vy + w * ty + (z * tx - x * tz)
        pos[:, p, 2] = pos[:, a, 2] + vz + w * tz + (x * ty - y * tx)
        if p < num_joints:
            bw, bx, by, bz = rot[:, p, 0], rot[:, p, 1], rot[:, p, 2], rot[:, p, 3]
            world[:, p, 0] = w * bw - x * bx - y * by - z * bz
            world[:, p, 1] = w * bx + x * bw + y * bz - z * by
            world[:, p, 2] = w * by - x * bz + y * bw + z * bx
            world[:, p, 3] = w * bz + x * by - y * bx + z * bw
        else:
            world[:, p] = world[:, a]


@dataclass(frozen=True, eq=False)
class Pose:
    """A batch of poses with their forward kinematics, computed once and shared.

    Every task (constraint) of a solver reads the same FK of the same poses;
    build one with :meth:`Pose.of` and pass it around.

    Attributes
    ----------
    skeleton : Skeleton
    root_position : ndarray, shape (..., 3)
    rotations : ndarray, shape (..., J, 4)
        Local rotations.
    positions : ndarray, shape (..., J + S, 3)
        World positions of the points.
    world_rotations : ndarray, shape (..., J + S, 4)
        World rotations of the points' frames.
    """

    skeleton: Skeleton
    root_position: Array
    rotations: Array
    positions: Array
    world_rotations: Array

    @classmethod
    def of(
        cls,
        skeleton: Skeleton,
        root_position: ArrayLike,
        rotations: ArrayLike,
        translations: ArrayLike | None = None,
    ) -> Pose:
        """Poses and their FK (one call of the FK kernel).

        ``translations`` (..., J, 3): per-pose local offsets replacing
        ``skeleton.offsets`` (a character whose proportions change over a clip).
        """
        root = np.asarray(root_position, dtype=np.float64)
        rot = np.asarray(rotations, dtype=np.float64)
        pos, world = forward_kinematics(skeleton, root, rot, translations)
        batch = pos.shape[:-2]
        root = np.broadcast_to(root, (*batch, 3))
        rot = np.broadcast_to(rot, (*batch, *rot.shape[-2:]))
        return cls(skeleton, root, rot, pos, world)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The leading axes (frames, sigma points, …)."""
        return self.positions.shape[:-2]

    def jacobian(self, points: ArrayLike, *, orientation: bool = False) -> Array:
        """:func:`jacobian` at these poses, reusing their FK; shape (..., 3K or 6K, 3 + 3J)."""
        return _jacobian_from_fk(
            self.skeleton, self.positions, self.world_rotations, points, orientation
        )


def positions(motion: Motion) -> Array:
    """World positions of every joint and end site of a motion, shape (F, J + S, 3)."""
    return forward_kinematics(
        motion.skeleton, motion.root_position, motion.rotations, motion.translations
    )[0]


def jacobian(
    skeleton: Skeleton,
    root_position: ArrayLike,
    rotations: ArrayLike,
    effectors: ArrayLike,
    *,
    orientation: bool = False,
    translations: ArrayLike | None = None,
) -> Array:
    """Jacobian of end-effector positions (and orientations) in the tangent space.

    For joint ``j`` with world rotation ``R_j`` at ``p_j`` and effector ``e``,
    a local increment ``v_j`` turns the world frame by ``ω = R_j v_j`` about
    ``p_j``, so

    .. math:: ∂p_e/∂v_j = [p_j - p_e]_× R_j,\\quad ∂ω_e/∂v_j = R_j,\\quad ∂p_e/∂v_{root} = I

    for every joint ``j`` on the path from the root to ``e`` (zero elsewhere).
    The orientation rows are the world-frame rotation vector of the effector's
    frame (``W_e(x) ≈ exp(ω) W_e``).

    Parameters
    ----------
    skeleton : Skeleton
    root_position : array_like, shape (..., 3)
    rotations : array_like, shape (..., J, 4)
    effectors : array_like of int, shape (K,)
        Point indices (joints or sites), e.g. from ``skeleton.indices([...])``.
    orientation : bool
        Also return orientation rows.
    translations : array_like, shape (..., J, 3), optional

    Returns
    -------
    ndarray, shape (..., 3K, 3 + 3J) or (..., 6K, 3 + 3J)
        Rows ``3k:3k+3`` are effector ``k``'s position; with ``orientation``,
        rows ``3K + 3k : 3K + 3k + 3`` its orientation.
    """
    pos, world = forward_kinematics(skeleton, root_position, rotations, translations)
    return _jacobian_from_fk(skeleton, pos, world, effectors, orientation)


def _jacobian_from_fk(
    skeleton: Skeleton, pos: Array, world: Array, effectors: ArrayLike, orientation: bool
) -> Array:
    eff = np.atleast_1d(np.asarray(effectors, dtype=np.intp))
    batch = pos.shape[:-2]
    rows = (6 if orientation else 3) * len(eff)
    n = 3 + 3 * skeleton.num_joints
    p = np.ascontiguousarray(pos, dtype=np.float64).reshape(-1, *pos.shape[-2:])
    w = np.ascontiguousarray(world, dtype=np.float64).reshape(-1, *world.shape[-2:])
    jac = np.zeros((p.shape[0], rows, n))
    _kernels()._jacobian_kernel(
        p, w, skeleton.point_parents, eff, skeleton.num_joints, bool(orientation), jac
    )
    return jac.reshape(*batch, rows, n)


def center_of_mass(
    positions: ArrayLike,
    masses: ArrayLike,
    starts: ArrayLike,
    ends: ArrayLike,
    fractions: ArrayLike,
) -> Array:
    """Centre of mass of segments lying along bones.

    Segment ``k`` has mass ``masses[k]`` concentrated at
    ``p[starts[k]] + fractions[k] · (p[ends[k]] - p[starts[k]])``.

    Parameters
    ----------
    positions : array_like, shape (..., P, 3)
        World positions of the points (from :func:`forward_kinematics`).
    masses : array_like, shape (K,)
        Segment masses (any unit; only ratios matter).
    starts, ends : array_like of int, shape (K,)
        Point indices of each segment's proximal and distal ends.
    fractions : array_like, shape (K,)
        Position of each segment's centre along it, 0 at the start, 1 at the end.

    Returns
    -------
    ndarray, shape (..., 3)
    """
    p = np.asarray(positions, dtype=np.float64)
    m = np.asarray(masses, dtype=np.float64)
    f = np.asarray(fractions, dtype=np.float64)[:, None]
    starts = np.asarray(starts, dtype=np.intp)
    ends = np.asarray(ends, dtype=np.intp)
    if not (m.shape == f.shape[:1] == starts.shape == ends.shape):
        raise ValueError("masses, starts, ends and fractions must have one length K")
    if m.sum() <= 0:
        raise ValueError("Expected a positive total mass")
    centres = (1.0 - f) * p[..., starts, :] + f * p[..., ends, :]  # (..., K, 3)
    return np.einsum("k,...kc->...c", m, centres) / m.sum()
