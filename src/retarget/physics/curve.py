"""Dynamic filter applications on one curve: the constraints measured on positions.

Tak & Ko's dynamic application (§§5–6) updates each frame's ``(q, q̇, q̈)``
as three independent unknowns and then fits one B-spline through them; on
captured motion the fit cancels most of what the Kalman stage did (the paper
says so, §7, "Convergence problem": measured here, the ZMP stays outside
the support polygon on 40 % of the wide-step frames after any number of
applications, ``docs/architecture.md``). This module keeps the paper's
pieces — its B-spline (eq. 17, a knot every ``spacing`` frames), its
constraint functions (eqs. 4, 6–11) and its Kalman measurement update with a
constant prior covariance and exact constraints — but gives the update the
spline's control points as its state, so that position, velocity and
acceleration are one curve by construction and nothing is cancelled:

* **state**: the control points ``c`` (M, n) of a cubic B-spline
  displacement ``d(t) = Σ c_i B_i(t)`` of the DOFs of the application (root
  translation in metres, one rotation vector per joint, the library's tangent
  space): the pose of frame k is ``q_k ⊕ d(t_k)``;
* **legs**: where a foot has a position goal, the analytic limb solver
  (:func:`retarget.ik.limb.solve_limb`, Lee & Shin 1999 §5.3) puts the ankle
  on it and the foot in its prior orientation, so footplants hold on every
  frame of every trial and the constraint rows that remain are the ones the
  legs cannot reach (out of reach: the root has to come down). The legs are
  soft over the last 1 % of their reach (:func:`retarget.ik.limb.soft_reach`):
  at full extension the knee angle changes without bound per unit of goal
  distance, the rows' Jacobian is meaningless there, and on the wide steps
  the solver stalled with the ZMP outside on 15 % of the frames (7 % soft);
* **constraint rows**, all from the positions of the frames by the same
  central differences as the report's measures (:func:`retarget.physics.
  dynamics.zmp`, :func:`~retarget.physics.dynamics.motion_rates`): the ZMP
  (eq. 6) at its projection into the support polygon shrunk by ``margin``
  (eq. 7) on support frames where it is outside; torque magnitudes at their
  limits where above (eqs. 9–10); the environment's wrench zero in flight
  (eq. 11); the legs' reach residual;
* **update**: Gauss–Newton on the stacked rows with a Levenberg–Marquardt
  ridge (the Kalman update of the control points with prior covariance
  ``V I`` and a vanishing ``N_z``, eqs. 14–16, in information form, the ridge
  the ratio ``N_z / V``), relinearised ``iterations`` times. Each control
  point moves at most ``4 spacing + 4`` frames, so the Jacobian is found by
  perturbing each control point's DOFs on those frames only — one batched
  evaluation of ``M n`` short windows — and the normal equations are banded
  (sparse solve).

The result stays a per-frame process in the paper's sense only as far as
the B-spline's window (Figure 5) reaches: a dynamic application needs the
frames of its knots, as the paper's least-squares filter does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sparse
import scipy.sparse.linalg as sparse_linalg
from numpy.typing import NDArray

from .. import quat
from ..filters.lsq import bspline_basis
from ..ik.limb import Limb, solve_limb
from ..kinematics import forward_kinematics
from ..motion import Motion
from ..roles import height
from .body import Body
from .dynamics import body_motion, environment_wrench, inverse_dynamics, zmp_of
from .support import Support

__all__ = ["CurveGoals", "curve_update"]

Array = NDArray[np.float64]
_GRAVITY = 9.81
_SOFTNESS = 0.01  # legs eased over the last 1 % of their reach (soft_reach)


@dataclass(frozen=True, eq=False)
class CurveGoals:
    """What one dynamic application enforces (arrays over the clip's F frames).

    Attributes
    ----------
    legs : sequence of (Limb, goal (F, 3), orientation (F, 4))
        Ankle position goals (skeleton unit, NaN where free) and the ankle's
        world orientation there.
    support : Support
        Support polygons (flight where none).
    shares : ndarray, shape (F, J)
        Each body's share of the ground's wrench (Ko & Badler).
    balance : bool
    torque_limits : mapping of joint index to N m
    momentum : bool
    margin : float
        Metres inside the support polygon for balance goals.
    """

    legs: Sequence[tuple[Limb, Array, Array]]
    support: Support
    shares: Array
    balance: bool = True
    torque_limits: Mapping[int, float] | None = None
    momentum: bool = True
    margin: float = 0.0


@dataclass(frozen=True, eq=False)
class _Problem:
    body: Body
    prior: Motion
    goals: CurveGoals
    moved: NDArray[np.intp]
    basis: Array  # (F, M)
    height: float  # metres
    reach_weight: float

    @property
    def n(self) -> int:
        return 3 + 3 * len(self.moved)

    def pose(self, d: Array, frames: NDArray[np.intp]) -> tuple[Array, Array, Array]:
        """Prior frames ⊕ displacement ``d`` (..., L, n), legs solved: root, rotations,
        and the legs' reach residual (..., L, 3 × legs) as shares of height."""
        b = self.body
        root = self.prior.root_position[frames] + d[..., :3] / b.metres
        rot = np.array(
            np.broadcast_to(
                self.prior.rotations[frames], (*d.shape[:-1], *self.prior.rotations.shape[1:])
            )
        )
        root = np.array(np.broadcast_to(root, (*d.shape[:-1], 3)))
        turn = d[..., 3:].reshape(*d.shape[:-1], len(self.moved), 3)
        rot[..., self.moved, :] = quat.multiply(rot[..., self.moved, :], quat.exp(turn))
        reach = []
        for limb, goal, orientation in self.goals.legs:
            g = np.broadcast_to(goal[frames], root.shape)
            o = np.broadcast_to(orientation[frames], (*root.shape[:-1], 4))
            sol = solve_limb(b.skeleton, limb, root, rot, g, orientation=o, softness=_SOFTNESS)
            rot = sol.rotations
            reach.append(np.where(np.isfinite(g), g - sol.reached, 0.0))
        unit = self.height / b.metres
        residual = (
            np.concatenate(reach, axis=-1) / unit if reach else np.zeros((*root.shape[:-1], 0))
        )
        return root, rot, residual

    def values(self, root: Array, rot: Array, frames: NDArray[np.intp]) -> Array:
        """Per interior frame of each window (..., L − 2, R): ZMP (x, z) / height,
        torque norms / limits, wrench / (weight, weight × height)."""
        b = self.body
        fps = self.prior.fps
        n_j = b.skeleton.num_joints
        pos, world = forward_kinematics(b.skeleton.scaled(b.metres), root * b.metres, rot)
        centres = pos[..., :n_j, :] + quat.rotate(world[..., :n_j, :], b.com)
        acc = (
            centres[..., 2:, :, :] - 2 * centres[..., 1:-1, :, :] + centres[..., :-2, :, :]
        ) * fps**2
        parts = [zmp_of(b.mass, centres[..., 1:-1, :, :], acc)[0] / self.height]
        limits = self.goals.torque_limits or {}
        if limits or self.goals.momentum:
            half_v = np.diff(root * b.metres, axis=-2) * fps
            half_w = (
                quat.log(quat.multiply(quat.conjugate(rot[..., :-1, :, :]), rot[..., 1:, :, :]))
                * fps
            )
            v = 0.5 * (half_v[..., :-1, :] + half_v[..., 1:, :])
            a = np.diff(half_v, axis=-2) * fps
            w = 0.5 * (half_w[..., :-1, :, :] + half_w[..., 1:, :, :])
            wd = np.diff(half_w, axis=-3) * fps
            inner = root[..., 1:-1, :]
            inner_rot = rot[..., 1:-1, :, :]
            if limits:
                joints = list(limits)
                batch = inner.shape[:-1]
                flat = int(np.prod(batch))
                shares = np.broadcast_to(self.goals.shares[frames[..., 1:-1]], (*batch, n_j))
                _, _, tau = inverse_dynamics(
                    b,
                    inner.reshape(flat, 3) * b.metres,
                    inner_rot.reshape(flat, n_j, 4),
                    v.reshape(flat, 3),
                    w.reshape(flat, n_j, 3),
                    a.reshape(flat, 3),
                    wd.reshape(flat, n_j, 3),
                    shares=shares.reshape(flat, n_j),
                )
                norms = np.linalg.norm(tau[:, joints], axis=-1).reshape(*batch, len(joints))
                parts.append(norms / np.array([limits[j] for j in joints]))
            if self.goals.momentum:
                bm = body_motion(b, inner, inner_rot, v, w, a, wd)
                force, moment, _ = environment_wrench(b, bm)
                weight = b.total_mass * _GRAVITY
                parts += [force / weight, moment / (weight * self.height)]
        return np.concatenate(parts, axis=-1)

    def rows(self, values: Array, reach: Array) -> tuple[Array, Array]:
        """Goals (F, R) of the stacked rows at the current values (NaN: row off) and the
        values themselves (F, R); ``values`` (F − 2, V) of the interior frames."""
        f = len(self.prior)
        g = self.goals
        full = np.full((f, values.shape[1]), np.nan)
        full[1:-1] = values
        goal = np.full_like(full, np.nan)
        flight = g.support.flight
        if g.balance:
            point = full[:, :2] * self.height
            projected = g.support.project(point, g.margin)
            moved = np.linalg.norm(projected - point, axis=1) > 1e-12
            on = ~flight & moved & np.isfinite(projected).all(axis=1)
            on[[0, -1]] = False
            goal[on, :2] = projected[on] / self.height
        k = 2
        limits = g.torque_limits or {}
        if limits:
            over = full[:, k : k + len(limits)] > 1.0
            goal[:, k : k + len(limits)] = np.where(over, 1.0, np.nan)
            k += len(limits)
        if g.momentum:
            on = flight.copy()
            on[[0, -1]] = False
            goal[on, k : k + 6] = 0.0
        reach_goal = np.where(np.isfinite(reach), 0.0, np.nan)
        return np.concatenate([goal, reach_goal], axis=1), np.concatenate([full, reach], axis=1)

    def merit(self, c: Array) -> float:
        everything = np.arange(len(self.prior))
        root, rot, reach = self.pose(self.basis @ c, everything)
        goal, value = self.rows(self.values(root, rot, everything), reach)
        r = np.where(np.isfinite(goal), goal - value, 0.0)
        if reach.shape[1]:
            r[:, -reach.shape[1] :] *= self.reach_weight
        return float(np.sum(r**2))


def curve_update(
    body: Body,
    prior: Motion,
    goals: CurveGoals,
    joints: Sequence[int],
    *,
    spacing: float = 4.0,
    iterations: int = 6,
    reach_weight: float = 10.0,
) -> tuple[Motion, dict[str, float]]:
    """One dynamic application (module docstring): the displacement curve of the root
    and ``joints`` that meets ``goals``.

    Returns
    -------
    motion : Motion
    info : dict
        ``merit`` before and after (sum of squared normalised rows), ``iterations``.
    """
    f = len(prior)
    basis = bspline_basis(f, spacing, prior.fps)[0]
    m = basis.shape[1]
    moved = np.asarray(list(joints), dtype=np.intp)
    p = _Problem(
        body, prior, goals, moved, basis, height(body.skeleton) * body.metres, reach_weight
    )
    n = p.n
    c = np.zeros((m, n))
    everything = np.arange(f)
    length = min(int(np.ceil(4 * spacing)) + 5, f)
    first = np.array([np.flatnonzero(basis[:, j])[0] for j in range(m)])
    windows = np.clip(first - 2, 0, f - length)[:, None] + np.arange(length)  # (M, L)
    weights = basis[windows, np.arange(m)[:, None]]  # (M, L)
    columns = np.arange(m)[:, None] * n + np.arange(n)  # (M, n)
    step = 1e-6
    ridge = 1e-4
    start = merit = p.merit(c)
    for _ in range(iterations):
        d = basis @ c
        root, rot, reach = p.pose(d, everything)
        goal, value = p.rows(p.values(root, rot, everything), reach)
        active = np.isfinite(goal)
        if not active.any():
            break
        trial = np.repeat(d[windows][:, None], n, axis=1)  # (M, n, L, n)
        trial[:, np.arange(n), :, np.arange(n)] += step * weights
        t_root, t_rot, t_reach = p.pose(trial, windows[:, None])
        t_values = p.values(t_root, t_rot, windows[:, None])  # (M, n, L - 2, V)
        t_value = np.full((m, n, length, value.shape[1]), np.nan)
        t_value[:, :, 1:-1, : t_values.shape[-1]] = t_values
        t_value[..., t_values.shape[-1] :] = t_reach
        slope = (t_value - value[windows][:, None]) / step  # (M, n, L, R)
        row_of = np.full(goal.shape, -1)
        row_of[active] = np.arange(active.sum())
        scale = np.ones(goal.shape[1])
        if reach.shape[1]:
            scale[-reach.shape[1] :] = reach_weight
        rows = np.broadcast_to(row_of[windows][:, None], slope.shape)
        cols = np.broadcast_to(columns[:, :, None, None], slope.shape)
        keep = (rows >= 0) & np.isfinite(slope)
        jac = sparse.csr_matrix(
            ((slope * scale)[keep], (rows[keep], cols[keep])), shape=(int(active.sum()), m * n)
        )
        residual = ((goal - value) * scale)[active]
        normal = (jac.T @ jac).tocsc()
        gradient = jac.T @ residual
        level = float(normal.diagonal().mean()) or 1.0
        for _ in range(12):
            dc = sparse_linalg.spsolve(
                normal + ridge * level * sparse.identity(m * n, format="csc"), gradient
            )
            candidate = c + np.asarray(dc).reshape(m, n)
            new = p.merit(candidate)
            if new < merit:
                c, merit = candidate, new
                ridge = max(ridge / 3.0, 1e-9)
                break
            ridge *= 10.0
        else:
            break
    root, rot, _ = p.pose(basis @ c, everything)
    out = prior.replace(root_position=root, rotations=quat.normalize(rot))
    return out, {"merit_before": start, "merit_after": merit}
