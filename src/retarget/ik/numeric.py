"""Numerical inverse kinematics: penalties + nonlinear conjugate gradient (Lee & Shin 1999, §5.1).

The pose is a displacement ``x`` from a reference pose (eq. 5, DESIGN.md idea
1): ``p = p_ref + x_0``, ``q_j = q_ref,j ⊗ exp(x_j)``. The constrained problem
"minimise ½ xᵀ M x subject to the tasks" becomes, with penalties (eq. 6),

.. math::
    g(x) = \\tfrac12 x^T M x + \\sum_{i ∈ N_e} w_i c_i(x)^2
           + \\sum_{i ∈ N_i} w_i \\min(c_i(x), 0)^2 ,

minimised by nonlinear conjugate gradient (:func:`retarget.core.optimize.conjugate_gradient`), every
frame of a clip at once. ``M`` is diagonal: the *rigidity* of the root
translation and of each joint (:func:`default_rigidity`). The tasks
(:mod:`retarget.tasks`) give the gradient of the penalty for an increment at
the current pose; the chain rule through ``exp`` adds the right Jacobian
``J_r(x_j)`` of each joint (:func:`right_jacobian`):
``∂g/∂x_j = M_j x_j + J_r(x_j)ᵀ ∂penalty/∂(increment)_j``.

Penalties with large weights make ``g`` badly conditioned (curvature ``~ w ℓ²``
along the task rows, ``~ M`` across them): plain CG then needs 40-200
iterations per frame and stops short of the minimum. :func:`solve_ik`
therefore preconditions CG with the Gauss-Newton Hessian ``M + 2 Jᵀ W J`` of
the end-effector tasks, applied in O(k n) per frame through the Woodbury
identity and re-linearised after every step (:class:`_GaussNewton`); the
penalty weights then hardly matter, and a frame takes 5-10 iterations.

Joints with partial DOFs (ASF hinge knees, two-channel wrists) move along
their rotation channels only. They are parameterised by channel-angle
increments ``δθ`` about the reference, exactly: with ``c_k`` the columns of
:func:`retarget.core.dofs.channel_axes` at the reference, ``q = q_ref ⊗ exp(c_0 δθ_0)
⊗ exp(c_1 δθ_1)`` equals ``A E(θ_ref + δθ) A⁻¹`` (the rates of later channels
do not move earlier ones' axes), so the pose stays on the joint's DOFs. Their
regulariser is ``½ m_j |Σ_k c_k δθ_k|²`` (``= ½ m_j |x_j|²`` for a hinge, to
fourth order for two channels). Joints with no rotation channel, or with
infinite rigidity, do not move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import dofs, quat
from ..core.arrays import Array
from ..core.kinematics import Pose
from ..core.motion import ominus, oplus
from ..core.optimize import Index, conjugate_gradient
from ..core.skeleton import Skeleton
from ..core.so3 import apply_right_jacobian, right_jacobian
from ..tasks import IKFrames, IKSolver, Task, penalty_and_gradient

__all__ = ["IKResult", "NumericSolver", "default_rigidity", "right_jacobian", "solve_ik"]


# --------------------------------------------------------------------------------------
# IK
# --------------------------------------------------------------------------------------
def default_rigidity(skeleton: Skeleton) -> Array:
    """Default diagonal of ``M``: ``(1/ℓ², 1, …, 1)``, shape (J + 1,).

    Joint rotations are in radians, so ``½ |x_j|²`` is unit-free with
    rigidity 1. The root translation is a length; weighting it by ``1/ℓ²``
    with ``ℓ`` the skeleton's mean bone length (in ``skeleton.unit``) keeps
    the objective unit-consistent (the same character in cm or m moves alike)
    and says: *moving the whole body by one bone length costs as much as
    turning one joint by one radian*. For lafan_walk.bvh ``ℓ ≈ 22.8 cm``.
    """
    lengths = skeleton.bone_lengths()
    lengths = lengths[lengths > 0.0]
    ell = float(lengths.mean()) if lengths.size else 1.0
    out = np.ones(skeleton.num_joints + 1)
    out[0] = 1.0 / ell**2
    return out


@dataclass(frozen=True, eq=False)
class IKResult:
    """Outcome of :func:`solve_ik`; leading axes (...) are those of the input poses.

    Attributes
    ----------
    root_position : ndarray, shape (..., 3)
    rotations : ndarray, shape (..., J, 4)
    x : ndarray, shape (..., 3 + 3J)
        The displacement from the reference, ``result ⊖ reference``.
    objective : ndarray, shape (...,)
        ``½ xᵀ M x + penalty`` at the result.
    penalty : ndarray, shape (...,)
    task_residuals : list of ndarray, shape (..., m) each
        Every task's residual at the result, in the order given.
    iterations : ndarray of int, shape (...,)
        Conjugate-gradient iterations.
    converged : ndarray of bool, shape (...,)
    """

    root_position: Array
    rotations: Array
    x: Array
    objective: Array
    penalty: Array
    task_residuals: list[Array]
    iterations: NDArray[np.int64]
    converged: NDArray[np.bool_]


class _Parameters:
    """The map between CG parameters ``p`` and the tangent space, for one skeleton and batch.

    Parameters, in order: root translation (3, unless locked), then a rotation
    vector per free 3-channel joint, then the channel-angle increment of each
    one-channel joint, then the two increments of each two-channel joint.
    """

    def __init__(self, skeleton: Skeleton, rigidity: Array, rotations_ref: Array) -> None:
        n_channels = np.array([len(o) for o in skeleton.euler_orders])
        free = np.isfinite(rigidity[1:]) & (n_channels > 0)
        self.num_joints = skeleton.num_joints
        self.root = bool(np.isfinite(rigidity[0]))
        self.m_root = float(rigidity[0]) if self.root else 0.0
        self.full = np.flatnonzero(free & (n_channels == 3))
        self.hinge = np.flatnonzero(free & (n_channels == 1))
        self.pair = np.flatnonzero(free & (n_channels == 2))
        self.m_full = rigidity[1:][self.full]
        self.m_hinge = rigidity[1:][self.hinge]
        self.m_pair = rigidity[1:][self.pair]
        nr, nf, nh, npair = 3 * self.root, 3 * len(self.full), len(self.hinge), 2 * len(self.pair)
        self.s_full = slice(nr, nr + nf)
        self.s_hinge = slice(nr + nf, nr + nf + nh)
        self.s_pair = slice(nr + nf + nh, nr + nf + nh + npair)
        self.size = nr + nf + nh + npair
        partial = np.concatenate([self.hinge, self.pair])
        b = rotations_ref.shape[0]
        if partial.size:
            axes = dofs.channel_axes(skeleton, rotations_ref)[:, partial]  # (B, P, 3, 3)
            self.c_hinge = np.ascontiguousarray(axes[:, : len(self.hinge), :, 0])  # (B, H, 3)
            self.c_pair = np.ascontiguousarray(axes[:, len(self.hinge) :, :, :2])  # (B, P2, 3, 2)
        else:
            self.c_hinge = np.zeros((b, 0, 3))
            self.c_pair = np.zeros((b, 0, 3, 2))
        # diagonal of M over the parameters (a hinge axis has unit length; a pair's two
        # axes need not be orthogonal, so its diagonal is only the leading term)
        self.diagonal = np.concatenate(
            [
                np.full(nr, self.m_root),
                np.repeat(self.m_full, 3),
                self.m_hinge,
                np.repeat(self.m_pair, 2),
            ]
        )

    def tangent(self, p: Array, index: Index) -> tuple[Array, Array]:
        """The tangent vector ``x`` (B', 3 + 3J) of ``q_ref ⊗ exp(x)`` before the second
        channel of two-channel joints, and that channel's rotation vectors (B', P2, 3)."""
        b = p.shape[0]
        x = np.zeros((b, 3 + 3 * self.num_joints))
        if self.root:
            x[:, :3] = p[:, :3]
        rot = x[:, 3:].reshape(b, self.num_joints, 3)
        rot[:, self.full] = p[:, self.s_full].reshape(b, len(self.full), 3)
        rot[:, self.hinge] = self.c_hinge[index] * p[:, self.s_hinge, None]
        pair = p[:, self.s_pair].reshape(b, len(self.pair), 2)
        c = self.c_pair[index]
        rot[:, self.pair] = c[..., 0] * pair[..., 0:1]
        return x, c[..., 1] * pair[..., 1:2]

    def pose(
        self, root_ref: Array, rot_ref: Array, p: Array, index: Index
    ) -> tuple[Array, Array, Array]:
        """``(root_position, rotations, second-channel quaternions)`` of parameters ``p``."""
        x, second = self.tangent(p, index)
        root, rot = oplus(root_ref[index], rot_ref[index], x)
        e1 = quat.exp(second)
        if self.pair.size:
            rot[:, self.pair] = quat.multiply(rot[:, self.pair], e1)
        return root, rot, e1

    def pullback(self, g_inc: Array, p: Array | None, index: Index, e1: Array | None) -> Array:
        """``(∂ increment/∂p)ᵀ g``: a gradient for increments at the pose of ``p`` (..., 3 + 3J)
        as a gradient w.r.t. ``p`` (..., n_p). ``p = None``: at ``p = 0`` (then the map
        is linear and ``g_inc`` may have extra leading axes before the batch axis)."""
        batch = g_inc.shape[:-1]
        out = np.empty((*batch, self.size))
        g_rot = g_inc[..., 3:].reshape(*batch, self.num_joints, 3)
        if self.root:
            out[..., :3] = g_inc[..., :3]
        if self.full.size:
            g = g_rot[..., self.full, :]
            if p is not None:  # J_r(x_j)ᵀ g; J_r = I at p = 0
                v = p[:, self.s_full].reshape(p.shape[0], len(self.full), 3)
                if g.ndim == v.ndim:
                    g = apply_right_jacobian(v, g, transpose=True)
                else:  # many rows at once: form J_r once, for the joints the rows touch
                    axes = (*range(g.ndim - 3), g.ndim - 3, g.ndim - 1)
                    touched = np.flatnonzero(np.any(g != 0.0, axis=axes))
                    jr = right_jacobian(v[:, touched])
                    g_touched = np.einsum(
                        "...bjc,bjcd->...bjd", g[..., touched, :], jr, optimize=True
                    )
                    g = np.zeros_like(g)
                    g[..., touched, :] = g_touched
            out[..., self.s_full] = g.reshape(*batch, 3 * len(self.full))
        if self.hinge.size:
            out[..., self.s_hinge] = np.sum(
                self.c_hinge[index] * g_rot[..., self.hinge, :], axis=-1
            )
        if self.pair.size:
            c = self.c_pair[index]
            g = g_rot[..., self.pair, :]
            # q = q_ref exp(c0 δ0) exp(c1 δ1): δ0 acts as the increment R(E1)ᵀ c0
            g_first = g if e1 is None else quat.rotate(e1, g)
            g0 = np.sum(c[..., 0] * g_first, axis=-1)
            g1 = np.sum(c[..., 1] * g, axis=-1)
            out[..., self.s_pair] = np.stack([g0, g1], axis=-1).reshape(*batch, 2 * len(self.pair))
        return out

    def regulariser(self, p: Array, index: Index) -> tuple[Array, Array]:
        """``½ xᵀ M x`` (B',) and its gradient ``M p``-like term (B', n_p)."""
        b = p.shape[0]
        quad = np.zeros(b)
        grad = np.empty_like(p)
        if self.root:
            t = p[:, :3]
            quad += 0.5 * self.m_root * np.einsum("ij,ij->i", t, t)
            grad[:, :3] = self.m_root * t
        if self.full.size:
            v = p[:, self.s_full].reshape(b, len(self.full), 3)
            quad += 0.5 * np.einsum("j,bjc,bjc->b", self.m_full, v, v)
            grad[:, self.s_full] = (self.m_full[:, None] * v).reshape(b, 3 * len(self.full))
        if self.hinge.size:
            c = self.c_hinge[index]  # (B', H, 3)
            delta = p[:, self.s_hinge]
            cc = np.einsum("bhc,bhc->bh", c, c)
            quad += 0.5 * np.einsum("h,bh->b", self.m_hinge, cc * delta * delta)
            grad[:, self.s_hinge] = self.m_hinge * cc * delta
        if self.pair.size:
            c = self.c_pair[index]  # (B', P2, 3, 2)
            delta = p[:, self.s_pair].reshape(b, len(self.pair), 2)
            v = np.einsum("bpck,bpk->bpc", c, delta)
            quad += 0.5 * np.einsum("p,bpc,bpc->b", self.m_pair, v, v)
            reg = self.m_pair[:, None] * np.einsum("bpck,bpc->bpk", c, v)
            grad[:, self.s_pair] = reg.reshape(b, 2 * len(self.pair))
        return quad, grad


def _check_rigidity(skeleton: Skeleton, rigidity: ArrayLike | None) -> Array:
    if rigidity is None:
        return default_rigidity(skeleton)
    r = np.array(rigidity, dtype=np.float64)
    if r.shape != (skeleton.num_joints + 1,):
        raise ValueError(
            f"Expected `rigidity` of shape ({skeleton.num_joints + 1},) (root translation, "
            f"then one per joint), got {r.shape}"
        )
    if np.isnan(r).any() or (r < 0).any():
        raise ValueError("Expected rigidity >= 0 (np.inf locks a joint)")
    return r


class _Objective:
    """``g`` and its gradient w.r.t. the parameters (the ``value_and_gradient`` of CG).

    Keeps the last pose evaluated for every problem, so that the preconditioner,
    re-linearised at the point the line search accepted (almost always the
    last one evaluated), need not redo its forward kinematics.
    """

    def __init__(
        self,
        skeleton: Skeleton,
        params: _Parameters,
        tasks: Sequence[Task],
        root_ref: Array,
        rot_ref: Array,
        translations: Array | None = None,
    ) -> None:
        self.skeleton, self.params, self.tasks = skeleton, params, list(tasks)
        self.root_ref, self.rot_ref, self.translations = root_ref, rot_ref, translations
        b, n_points = root_ref.shape[0], skeleton.num_points
        self.size = b
        self._p = np.full((b, params.size), np.nan)
        self._root = np.zeros((b, 3))
        self._rot = np.zeros((b, skeleton.num_joints, 4))
        self._pos = np.zeros((b, n_points, 3))
        self._world = np.zeros((b, n_points, 4))
        self._e1 = np.zeros((b, len(params.pair), 4))

    def tasks_for(self, index: Index) -> list[Task]:
        return self.tasks if index.size == self.size else [t.take(index) for t in self.tasks]

    def pose(self, p: Array, index: Index) -> tuple[Pose, Array]:
        """The poses of parameters ``p`` (and the second-channel quaternions), cached."""
        hit = np.all(self._p[index] == p, axis=1)
        if hit.all():
            return (
                Pose(
                    self.skeleton,
                    self._root[index],
                    self._rot[index],
                    self._pos[index],
                    self._world[index],
                ),
                self._e1[index],
            )
        root, rot, e1 = self.params.pose(self.root_ref, self.rot_ref, p, index)
        offsets = None if self.translations is None else self.translations[index]
        pose = Pose.of(self.skeleton, root, rot, offsets)
        self._p[index] = p
        self._root[index], self._rot[index], self._e1[index] = root, rot, e1
        self._pos[index], self._world[index] = pose.positions, pose.world_rotations
        return pose, e1

    def __call__(self, p: Array, index: Index) -> tuple[Array, Array]:
        pose, e1 = self.pose(p, index)
        pen, g_inc, _ = penalty_and_gradient(self.tasks_for(index), pose)
        quad, g_quad = self.params.regulariser(p, index)
        return quad + pen, self.params.pullback(g_inc, p, index, e1) + g_quad


class _GaussNewton:
    """Preconditioner ``P = H⁻¹`` with ``H = M + 2 Jᵀ W J``, the Gauss-Newton Hessian of ``g``.

    :func:`conjugate_gradient` re-linearises it (:meth:`update`) at the
    current point of every problem after each accepted step (``refresh=1``).
    Rows enter where the penalty sees them: equality rows always, inequality
    rows where they are violated. Two kinds of rows:

    * rows that touch one joint only (joint limits, joint goals: tasks with a
      ``_joint_rows`` method) add 3×3 blocks to ``M``: ``D = M + Σ 2 w r rᵀ``,
      block-diagonal per joint (1×1 for hinges, 2×2 for two-channel joints);
    * the rows of the other tasks with at most ``max_rows`` rows (end
      effectors, ground contacts) stack into ``J`` (B, k, n_p), and the
      Woodbury identity gives, with ``A = J D⁻¹`` and ``S = (2W)⁻¹ + A Jᵀ``
      (k × k per pose),

      .. math:: P g = D^{-1} g - A^T S^{-1} A g ;

      with at least as many rows as unknowns (a robot's IK pass: every joint's
      place and frame, the soles' points) ``H`` itself is the smaller system
      and ``P = H⁻¹`` is formed directly (``H = D + 2 Jᵀ W J``, ``n_p × n_p``
      per pose; 40 times less work than Woodbury's ``k × k`` for 120 rows
      and 35 unknowns).

    Larger tasks of other kinds are left to CG. With ``P`` the steps are
    nearly Gauss-Newton steps and the penalty weights no longer set the
    conditioning. Zero entries of ``M`` are floored at 1e-6 of its smallest
    positive entry, to keep ``P`` definite.
    """

    def __init__(self, objective: _Objective, max_rows: int = 32) -> None:
        params = objective.params
        self.objective, self.params = objective, params
        diag = params.diagonal
        positive = diag[diag > 0.0]
        floor = 1e-6 * (positive.min() if positive.size else 1.0)
        self.m = np.maximum(diag, floor)  # (n_p,)
        tasks = objective.tasks
        live = [i for i, t in enumerate(tasks) if t.weight > 0.0 and t.size > 0]
        self.local = [i for i in live if hasattr(tasks[i], "_joint_rows")]
        self.low = [i for i in live if i not in self.local and tasks[i].size <= max_rows]
        weights = np.concatenate(
            [np.full(tasks[i].size, tasks[i].weight) for i in self.low] or [np.zeros(0)]
        )
        self.half_inv_w = np.diag(0.5 / weights) if weights.size else np.zeros((0, 0))
        b, k, n = objective.size, weights.size, params.size
        nf, nh, n2 = len(params.full), len(params.hinge), len(params.pair)
        self.d_full = np.zeros((b, nf, 3, 3))  # D⁻¹ blocks
        self.d_hinge = np.zeros((b, nh))
        self.d_pair = np.zeros((b, n2, 2, 2))
        self.a = np.zeros((b, k, n)) if k < n else np.zeros((b, 0, n))
        self.s_inv = np.zeros((b, k, k)) if k < n else np.zeros((b, 0, 0))
        self.h_inv: Array | None = None  # (B, n_p, n_p) where k ≥ n_p: H⁻¹ itself
        self.dense = np.zeros(b, dtype=bool)

    def _d_inv(self, g: Array, index: Index) -> Array:
        """``D⁻¹ g`` for ``g`` (..., B', n_p)."""
        prm = self.params
        if not self.local:  # D = M, diagonal
            return g / self.m
        out = np.empty_like(g)
        if prm.root:
            out[..., :3] = g[..., :3] / self.m[:3]
        lead = g.shape[:-1]
        if prm.full.size:
            gf = g[..., prm.s_full].reshape(*lead, len(prm.full), 3)
            df = np.einsum("bjcd,...bjd->...bjc", self.d_full[index], gf)
            out[..., prm.s_full] = df.reshape(*lead, 3 * len(prm.full))
        if prm.hinge.size:
            out[..., prm.s_hinge] = self.d_hinge[index] * g[..., prm.s_hinge]
        if prm.pair.size:
            gp = g[..., prm.s_pair].reshape(*lead, len(prm.pair), 2)
            dp = np.einsum("bjcd,...bjd->...bjc", self.d_pair[index], gp)
            out[..., prm.s_pair] = dp.reshape(*lead, 2 * len(prm.pair))
        return out

    def _update_blocks(
        self, p: Array, index: Index, pose: Pose, e1: Array, tasks: list[Task]
    ) -> None:
        prm = self.params
        b = len(index)
        blocks = np.zeros((b, self.objective.skeleton.num_joints, 3, 3))
        for i in self.local:
            task = tasks[i]
            joints, rows = task._joint_rows(pose)  # type: ignore[attr-defined]
            rows = np.broadcast_to(rows, (b, task.size, 3))
            w = np.full((b, task.size), 2.0 * task.weight)
            if task.inequality:
                w = w * (np.broadcast_to(task.residual(pose), (b, task.size)) < 0.0)
            contrib = w[..., None, None] * rows[..., :, None] * rows[..., None, :]
            np.add.at(np.moveaxis(blocks, 1, 0), joints, np.moveaxis(contrib, 1, 0))
        eye = np.eye(3)
        if prm.full.size:
            jr = right_jacobian(p[:, prm.s_full].reshape(b, len(prm.full), 3))  # (B', F, 3, 3)
            m_full = self.m[prm.s_full].reshape(-1, 3)[:, 0]
            d = m_full[:, None, None] * eye + np.swapaxes(jr, -1, -2) @ blocks[:, prm.full] @ jr
            self.d_full[index] = np.linalg.inv(d)
        if prm.hinge.size:
            c = prm.c_hinge[index]  # (B', H, 3)
            d = self.m[prm.s_hinge] * np.einsum("bhc,bhc->bh", c, c) + np.einsum(
                "bhc,bhcd,bhd->bh", c, blocks[:, prm.hinge], c
            )
            self.d_hinge[index] = 1.0 / d
        if prm.pair.size:
            c = prm.c_pair[index]  # (B', P, 3, 2)
            u = np.stack([quat.rotate(quat.conjugate(e1), c[..., 0]), c[..., 1]], axis=-1)
            m_pair = self.m[prm.s_pair].reshape(-1, 2)[:, 0]
            d = (
                m_pair[:, None, None] * (np.swapaxes(c, -1, -2) @ c)
                + np.swapaxes(u, -1, -2) @ blocks[:, prm.pair] @ u
            )
            self.d_pair[index] = np.linalg.inv(d)

    def update(self, p: Array, index: Index) -> None:
        prm, objective = self.params, self.objective
        pose, e1 = objective.pose(p, index)
        tasks = objective.tasks_for(index)
        b = len(index)
        n_joints = objective.skeleton.num_joints
        # -- block-diagonal part: D = M + Σ 2 w r rᵀ over one-joint rows ----------------------
        if self.local:
            self._update_blocks(p, index, pose, e1, tasks)
        if not self.low:
            return
        # -- low-rank part: the end-effector rows, through Woodbury --------------------------
        n = 3 + 3 * n_joints
        rows_list = []
        for i in self.low:
            task = tasks[i]
            unit = np.eye(task.size)[:, None, :]  # (m, 1, m): the rows, as Jᵀ e_i
            jac = np.broadcast_to(task.vjp(pose, unit), (task.size, b, n))
            if task.inequality:
                violated = np.broadcast_to(task.residual(pose) < 0.0, (b, task.size))
                jac = jac * violated.T[..., None]
            rows_list.append(jac)
        jp = prm.pullback(np.concatenate(rows_list, axis=0), p, index, e1)  # (k, B', n_p)
        k, n_p = jp.shape[0], jp.shape[2]
        if k >= n_p:  # more rows than unknowns: H itself is the smaller system
            if self.h_inv is None:
                self.h_inv = np.zeros((self.objective.size, n_p, n_p))
            eye = np.broadcast_to(np.eye(n_p)[:, None, :], (n_p, b, n_p))
            d = np.linalg.inv(np.moveaxis(self._d_inv(eye, index), 0, 1))  # (B', n_p, n_p)
            two_w = 0.5 / np.diag(self.half_inv_w)
            h = d + np.einsum("kbn,k,kbm->bnm", jp, two_w, jp)
            self.h_inv[index] = np.linalg.inv(h)
            self.dense[index] = True
            return
        self.dense[index] = False
        a = np.moveaxis(self._d_inv(jp, index), 0, 1)  # (B', k, n_p): rows of J D⁻¹
        s = a @ np.moveaxis(jp, 0, 2) + self.half_inv_w
        self.a[index] = a
        self.s_inv[index] = np.linalg.inv(s)

    def __call__(self, g: Array, index: Index) -> Array:
        if self.h_inv is not None and self.dense[index].all():
            return np.einsum("bnm,bm->bn", self.h_inv[index], g)
        out = self._d_inv(g, index)
        if self.low:
            a = self.a[index]
            ag = np.einsum("bkn,bn->bk", a, g)
            out -= np.einsum("bkn,bk->bn", a, np.einsum("bkl,bl->bk", self.s_inv[index], ag))
        return out


def solve_ik(
    skeleton: Skeleton,
    root_position: ArrayLike,
    rotations: ArrayLike,
    tasks: Sequence[Task],
    *,
    rigidity: ArrayLike | None = None,
    max_iterations: int = 200,
    tolerance: float = 1e-10,
    translations: ArrayLike | None = None,
) -> IKResult:
    """Pose(s) near the reference that meet the tasks (Lee & Shin 1999, eqs. 5-6).

    Minimises ``g(x) = ½ xᵀ M x + penalty(tasks, reference ⊕ x)`` over the
    displacement ``x`` by :func:`conjugate_gradient`, all poses of the batch
    at once (each with its own step and stopping test), preconditioned by the
    Gauss-Newton Hessian re-linearised at every step (:class:`_GaussNewton`).
    See the module docstring for the parameterisation and partial-DOF joints.

    Parameters
    ----------
    skeleton : Skeleton
    root_position : array_like, shape (..., 3)
        Reference root positions (the starting point, ``x = 0``).
    rotations : array_like, shape (..., J, 4)
        Reference local rotations.
    tasks : sequence of Task
        Goals broadcast against the batch axes (...); NaN = inactive.
    rigidity : array_like, shape (J + 1,), optional
        Diagonal of ``M``: root translation (1/unit²) then one per joint
        (1/rad²), each expanded to its 3 coordinates. Large = stiff; ``np.inf``
        locks; 0 = free. Default :func:`default_rigidity`.
    max_iterations : int
    tolerance : float
        Relative decrease of ``g`` below which a pose stops.
    translations : array_like, shape (..., J, 3), optional
        Per-pose local joint offsets replacing ``skeleton.offsets`` (a character
        whose proportions change over a clip).

    Returns
    -------
    IKResult
        The result is on every joint's DOFs (:func:`retarget.core.dofs.project_to_dofs`)
        and never NaN.
    """
    rot_in = np.asarray(rotations, dtype=np.float64)
    root_in = np.asarray(root_position, dtype=np.float64)
    n_joints = skeleton.num_joints
    if rot_in.shape[-2:] != (n_joints, 4):
        raise ValueError(f"Expected `rotations` of shape (..., {n_joints}, 4), got {rot_in.shape}")
    if root_in.shape[-1:] != (3,):
        raise ValueError(f"Expected `root_position` of shape (..., 3), got {root_in.shape}")
    if not (np.isfinite(rot_in).all() and np.isfinite(root_in).all()):
        raise ValueError("The reference pose contains NaN or infinite values")
    tasks = list(tasks)
    batch = np.broadcast_shapes(
        root_in.shape[:-1], rot_in.shape[:-2], *(t.batch_shape for t in tasks)
    )
    size = int(np.prod(batch, dtype=np.int64))
    root_ref = np.ascontiguousarray(np.broadcast_to(root_in, (*batch, 3))).reshape(size, 3)
    rot_ref = np.broadcast_to(rot_in, (*batch, n_joints, 4)).reshape(size, n_joints, 4)
    norm2 = np.einsum("bji,bji->bj", rot_ref, rot_ref)
    if np.any(norm2 < 1e-12):
        raise ValueError("`rotations` contains zero quaternions")
    # rescale only what is off unit length, so that unmoved joints stay bit-identical
    rot_ref = rot_ref * np.where(np.abs(norm2 - 1.0) > 1e-14, 1.0 / np.sqrt(norm2), 1.0)[..., None]
    flat_tasks = [t.flatten_batch(batch) for t in tasks]
    m = _check_rigidity(skeleton, rigidity)
    params = _Parameters(skeleton, m, rot_ref)
    offsets = None
    if translations is not None:
        offsets = np.broadcast_to(np.asarray(translations, dtype=np.float64), (*batch, n_joints, 3))
        offsets = offsets.reshape(size, n_joints, 3)

    objective = _Objective(skeleton, params, flat_tasks, root_ref, rot_ref, offsets)

    index = np.arange(size)
    if params.size:
        cg = conjugate_gradient(
            objective,
            np.zeros((size, params.size)),
            max_iterations=max_iterations,
            tolerance=tolerance,
            gradient_tolerance=0.0,
            preconditioner=_GaussNewton(objective),
            refresh=1,
            curvature=0.4,
        )
        p_final = np.where(np.isfinite(cg.x).all(axis=1, keepdims=True), cg.x, 0.0)
        iterations, converged = cg.iterations, cg.converged
    else:
        p_final = np.zeros((size, 0))
        iterations = np.zeros(size, dtype=np.int64)
        converged = np.ones(size, dtype=bool)
    root, rot, _ = params.pose(root_ref, rot_ref, p_final, index)
    # exact for partial DOFs already; this only mends joints the reference had off them
    projected = dofs.project_to_dofs(skeleton, rot)
    rot = np.where((quat.angle(projected, rot) > 1e-12)[..., None], projected, rot)
    pose = Pose.of(skeleton, root, rot, offsets)
    pen, _, residuals = penalty_and_gradient(flat_tasks, pose, gradient=False)
    quad, _ = params.regulariser(p_final, index)
    x = ominus(root, rot, root_ref, rot_ref)
    same = np.all(rot == rot_ref, axis=-1)  # unmoved joints: exactly 0, not log's rounding
    x[:, 3:] = np.where(np.repeat(same, 3, axis=-1), 0.0, x[:, 3:])

    def shaped(a: NDArray[Any]) -> NDArray[Any]:
        return a.reshape(batch + a.shape[1:])

    return IKResult(
        root_position=shaped(root),
        rotations=shaped(rot),
        x=shaped(x),
        objective=shaped(quad + pen),
        penalty=shaped(pen),
        task_residuals=[shaped(np.broadcast_to(r, (size, r.shape[-1])).copy()) for r in residuals],
        iterations=shaped(iterations),
        converged=shaped(converged),
    )


@dataclass(frozen=True, eq=False)
class NumericSolver(IKSolver):
    """Lee & Shin §5.1 as an IK solver of :func:`retarget.editing.fitting.fit_motion`.

    Any tree: every joint moves (within its DOFs), penalties for the frame's
    position and orientation goals (transitions included), joint limits and
    ground points. Use it for skeletons that are not humanoid; humanoids are
    faster with :class:`retarget.ik.hybrid.HybridSolver`.

    Parameters
    ----------
    height : float
        Length scale of the penalties: a goal missed by ``height`` costs
        ``goal_weight``.
    goal_weight, limit_weight : float
        Penalty weights of goals (per height²) and of joint limits (per rad²).
    rigidity : array_like, shape (J + 1,), optional
        Diagonal of ``M`` (:func:`default_rigidity` when None).
    max_iterations : int
    """

    height: float
    goal_weight: float = 1e6
    limit_weight: float = 1e4
    rigidity: Array | None = None
    max_iterations: int = 200

    def solve(self, q: IKFrames) -> tuple[Array, Array, NDArray[np.bool_]]:
        """Poses meeting ``q.constraints`` at ``q.frames``; every joint is determined."""
        skeleton, frames, translations = q.skeleton, q.frames, q.translations
        ref = q.reference()
        tasks = q.constraints.tasks(
            skeleton,
            frames,
            ref.positions,
            position_weight=self.goal_weight / self.height**2,
            orientation_weight=self.goal_weight,
            limit_weight=self.limit_weight,
        )
        result = solve_ik(
            skeleton,
            q.root_position,
            q.rotations,
            tasks,
            rigidity=self.rigidity,
            max_iterations=self.max_iterations,
            translations=translations,
        )
        determined = np.ones((len(frames), skeleton.num_joints + 1), dtype=bool)
        return result.root_position, result.rotations, determined
