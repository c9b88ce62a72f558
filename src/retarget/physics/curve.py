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
  dynamics.zmp`, :func:`~retarget.physics.dynamics.motion_rates`):
  **balance** (eqs. 6–7) as a hinge on the support polygon shrunk by
  ``margin`` (:meth:`~retarget.physics.support.Support.inset`): on support
  frames whose ZMP is less than ``margin`` inside, the ground's moment about
  the inset target is driven to zero — eq. (6) multiplied by its vertical
  force, so that frames where that force nears zero (the ZMP far away and
  changing fast) do not dominate the step — and the vertical force itself is
  held at 5 % of the weight at least (the ground can only push); rows are
  switched on inside the margin, not only outside the polygon, because a
  hinge switched on at the edge let frames just inside cross it unseen by the
  linearisation (the wide steps kept 0.8 % of the frames outside after
  2D+1K; 0 % now, and after 1D alone); torque magnitudes at their limits
  where above (eqs. 9–10); the environment's wrench zero in flight (eq. 11);
  the legs' reach residual, and the turn each held foot misses times its
  length (an ankle with fewer DOFs than a ball joint, as an ASF's ``rx rz``,
  cannot hold the foot's orientation when the leg turns: without the row the
  toes of a planted foot of the CMU skeleton strayed up to 2 % of the height
  in one dynamic application, 0.02 % with it);
* **update**: Gauss–Newton on the stacked rows with a Levenberg–Marquardt
  ridge (the Kalman update of the control points with prior covariance
  ``V I`` and a vanishing ``N_z``, eqs. 14–16, in information form, the ridge
  the ratio ``N_z / V``), relinearised ``iterations`` times. A frame's
  displacement moves its own pose and, through the central differences, the
  rows of its two neighbours only, so the Jacobian is found per frame —
  ``F n`` perturbed poses in one batched call, chained to the control points
  through the B-spline — and the normal equations are banded: the rows of a
  frame meet a few consecutive control points, so each knot interval adds one
  dense block (LAPACK's banded Cholesky).

The result stays a per-frame process in the paper's sense only as far as
the B-spline's window (Figure 5) reaches: a dynamic application needs the
frames of its knots, as the paper's least-squares filter does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..core import quat
from ..core.arrays import Array
from ..core.kinematics import forward_kinematics
from ..core.motion import Motion, oplus_joints
from ..core.optimize import banded_levenberg_marquardt
from ..filters.lsq import bspline_basis
from ..humanoid.roles import height
from ..ik.limb import Limb, solve_limb
from .body import Body
from .dynamics import zmp_of
from .support import Support
from .tasks import DynamicState, MomentumTask, TorqueTask

__all__ = ["CurveGoals", "curve_update"]

_Frame = tuple[Array, Array, Array]  # root (..., 3), rotations (..., J, 4), centres (..., J, 3)
_GRAVITY = 9.81
_SOFTNESS = 0.01  # legs eased over the last 1 % of their reach (soft_reach)
_LIFT = 0.05  # on support frames the ground pushes up with at least 5 % of the weight


@dataclass(frozen=True, eq=False)
class CurveGoals:
    """What one dynamic application enforces (arrays over the clip's F frames).

    Attributes
    ----------
    legs : sequence of (Limb, goal (F, 3), orientation (F, 4))
        Ankle position goals (skeleton unit, NaN where free) and the ankle's
        world orientation there.
    support : Support
        Support polygons (flight where none); the feet share the ground's
        wrench by Ko & Badler's split at each trial's own ZMP
        (:meth:`~retarget.physics.support.Support.shares`), as the report
        measures it.
    balance : bool
    torque_limits : mapping of joint index to N m
    momentum : bool
    margin : float
        Metres inside the support polygon for balance goals.
    """

    legs: Sequence[tuple[Limb, Array, Array]]
    support: Support
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
    first: NDArray[np.intp]  # (F,): the first control point the rows of each frame meet
    local: Array  # (F, 3, K): basis of frames t − 1, t, t + 1 at control points first[t] + k
    height: float  # metres
    reach_weight: float
    feet: tuple[float, ...] = ()  # each leg's foot length (skeleton unit)

    @property
    def n(self) -> int:
        return 3 + 3 * len(self.moved)

    @property
    def legged(self) -> NDArray[np.bool_]:
        """Which of the ``n`` DOFs move a leg's solution (n,): the root translation and
        the rotations of the legs' joints and their ancestors."""
        sk = self.body.skeleton
        chains = {int(j) for limb, _, _ in self.goals.legs for j in sk.chain(limb.lower)}
        joints = [int(j) in chains for j in self.moved]
        return np.concatenate([np.ones(3, bool), np.repeat(joints, 3)])

    def pose(self, d: Array, frames: NDArray[np.intp]) -> tuple[Array, Array, Array]:
        """Prior frames ⊕ displacement ``d`` (..., L, n), legs solved: root, rotations,
        and the legs' reach residual (..., L, 4 × legs) as shares of height: each
        leg's ankle miss (3), then each leg's foot turn miss times its length (1)."""
        b = self.body
        root = self.prior.root_position[frames] + d[..., :3] / b.metres
        root = np.array(np.broadcast_to(root, (*d.shape[:-1], 3)))
        turn = d[..., 3:].reshape(*d.shape[:-1], len(self.moved), 3)
        rot = oplus_joints(self.prior.rotations[frames], turn, self.moved)
        reach = []
        turns = []
        for limb, goal, orientation in self.goals.legs:
            g = np.broadcast_to(goal[frames], root.shape)
            o = np.broadcast_to(orientation[frames], (*root.shape[:-1], 4))
            sol = solve_limb(b.skeleton, limb, root, rot, g, orientation=o, softness=_SOFTNESS)
            rot = sol.rotations
            turns.append(sol.orientation_residual)
            reach.append(np.where(np.isfinite(g), g - sol.reached, 0.0))
        # a foot held in its orientation: the turn it misses (an ankle of fewer DOFs
        # than a ball, as an ASF's rx rz) times its length, the toe's displacement
        for foot, missed in zip(self.feet, turns, strict=True):
            reach.append(foot * missed[..., None])
        unit = self.height / b.metres
        residual = (
            np.concatenate(reach, axis=-1) / unit if reach else np.zeros((*root.shape[:-1], 0))
        )
        return root, rot, residual

    def centres(self, root: Array, rot: Array) -> Array:
        """Segment centres of mass (..., J, 3), metres, of poses ``root`` (..., 3) and
        ``rot`` (..., J, 4)."""
        b = self.body
        n_j = b.skeleton.num_joints
        pos, world = forward_kinematics(b.skeleton.scaled(b.metres), root * b.metres, rot)
        return pos[..., :n_j, :] + quat.rotate(world[..., :n_j, :], b.com)

    def values(self, prev: _Frame, mid: _Frame, nxt: _Frame, frames: NDArray[np.intp]) -> Array:
        """The rows' values (..., V) at frames ``frames`` (...) from the poses of those
        frames and of their neighbours (central differences, as the report's
        measures): each of ``prev``, ``mid``, ``nxt`` is (root (..., 3), rotations
        (..., J, 4), :meth:`centres` (..., J, 3)), all broadcast together.

        Columns: the ground's moment about the origin that puts the ZMP where it is,
        ``P f`` (x, z) / (weight × height), and its vertical force ``f = Σ m (ÿ + g)``
        / weight (eq. 6 without its division, :meth:`linear`); torque norms / limits
        (eqs. 9–10); the environment's wrench / (weight, weight × height) (eq. 11)."""
        b = self.body
        fps = self.prior.fps
        n_j = b.skeleton.num_joints
        weight = b.total_mass * _GRAVITY
        acc = (prev[2] - 2.0 * mid[2] + nxt[2]) * fps**2
        point, up = zmp_of(b.mass, mid[2], acc)
        moment = np.where(np.isfinite(point), point, 0.0) * up[..., None]
        parts = [moment / (weight * self.height), up[..., None] / weight]
        limits = self.goals.torque_limits or {}
        if limits or self.goals.momentum:
            half_v = [(mid[0] - prev[0]) * b.metres * fps, (nxt[0] - mid[0]) * b.metres * fps]
            half_w = [
                quat.log(quat.multiply(quat.conjugate(x[1]), y[1])) * fps
                for x, y in ((prev, mid), (mid, nxt))
            ]
            v, a = 0.5 * (half_v[0] + half_v[1]), (half_v[1] - half_v[0]) * fps
            w, wd = 0.5 * (half_w[0] + half_w[1]), (half_w[1] - half_w[0]) * fps
            batch = np.broadcast_shapes(w.shape[:-2], mid[1].shape[:-2], frames.shape)
            rot = np.broadcast_to(mid[1], (*batch, n_j, 4))
            root = np.broadcast_to(mid[0], (*batch, 3))
            v, a = np.broadcast_to(v, (*batch, 3)), np.broadcast_to(a, (*batch, 3))
            w, wd = np.broadcast_to(w, (*batch, n_j, 3)), np.broadcast_to(wd, (*batch, n_j, 3))
            shares = self.goals.support.shares(point, n_j, frames) if limits else None
            state = DynamicState(b, root, rot, v, w, a, wd, shares=shares)
            if limits:
                parts.append(TorqueTask(limits=limits).residual(state))
            if self.goals.momentum:
                parts.append(MomentumTask(scale=self.height).residual(state))
        shape = np.broadcast_shapes(*(x.shape[:-1] for x in parts))
        return np.concatenate([np.broadcast_to(x, (*shape, x.shape[-1])) for x in parts], -1)

    def frame_values(self, root: Array, rot: Array, centres: Array | None = None) -> Array:
        """:meth:`values` of the whole clip (F, V), NaN on its first and last frames."""
        c = self.centres(root, rot) if centres is None else centres
        f = len(self.prior)
        inner = self.values(
            (root[:-2], rot[:-2], c[:-2]),
            (root[1:-1], rot[1:-1], c[1:-1]),
            (root[2:], rot[2:], c[2:]),
            np.arange(1, f - 1),
        )
        full = np.full((f, inner.shape[1]), np.nan)
        full[1:-1] = inner
        return full

    @staticmethod
    def linear(values: Array, target: Array) -> Array:
        """Rows (..., V) from :meth:`values` (..., V) for balance targets ``target``
        (..., 2) / height: the ground's moment about the target, ``(P − T) f``, zero
        exactly when the ZMP is on it — eq. (6)'s constraint without its division, so
        that frames whose vertical force nears zero (the ZMP far away and changing
        fast) do not dominate the step; the other rows as they are. Linear in
        ``values``."""
        balance = values[..., :2] - np.nan_to_num(target) * values[..., 2:3]
        return np.concatenate([balance, values[..., 2:]], axis=-1)

    def rows(self, values: Array, reach: Array) -> tuple[Array, Array, Array]:
        """Goals (F, R) of the stacked rows at the current ``values`` (F, V) and
        ``reach`` (F, 4 × legs) (NaN: row off), the rows' values (F, R), and the balance
        targets (F, 2) / height, NaN where balance is off."""
        g = self.goals
        f = len(self.prior)
        goal = np.full((f, values.shape[1]), np.nan)
        target = np.full((f, 2), np.nan)
        flight = g.support.flight
        if g.balance:
            with np.errstate(divide="ignore", invalid="ignore"):
                point = np.where(
                    values[:, 2:3] > 1e-9, values[:, :2] / values[:, 2:3] * self.height, np.nan
                )
            projected = g.support.inset(point, g.margin)
            moved = np.linalg.norm(projected - point, axis=1) > 1e-12
            on = ~flight & moved & np.isfinite(projected).all(axis=1)
            on[[0, -1]] = False
            goal[on, :2] = 0.0
            target[on] = projected[on] / self.height
            weak = ~flight & (values[:, 2] < _LIFT)
            weak[[0, -1]] = False
            goal[weak, 2] = _LIFT
        k = 3
        limits = g.torque_limits or {}
        if limits:
            over = values[:, k : k + len(limits)] > 1.0
            goal[:, k : k + len(limits)] = np.where(over, 1.0, np.nan)
            k += len(limits)
        if g.momentum:
            on = flight.copy()
            on[[0, -1]] = False
            goal[on, k : k + 6] = 0.0
        reach_goal = np.where(np.isfinite(reach), 0.0, np.nan)
        rows = np.concatenate([goal, reach_goal], axis=1)
        return rows, np.concatenate([self.linear(values, target), reach], axis=1), target

    def evaluate(self, c: Array) -> _Evaluation:
        """Everything a Gauss–Newton step needs at control points ``c`` (M, n)."""
        d = self.basis @ c
        root, rot, reach = self.pose(d, np.arange(len(self.prior)))
        centres = self.centres(root, rot)
        values = self.frame_values(root, rot, centres)
        goal, value, target = self.rows(values, reach)
        scale = np.ones(goal.shape[1])
        scale[goal.shape[1] - reach.shape[1] :] = self.reach_weight
        r = np.where(np.isfinite(goal), goal - value, 0.0) * scale
        return _Evaluation(d, root, rot, reach, centres, values, goal, target, r, scale)


@dataclass(frozen=True, eq=False)
class _Evaluation:
    """The rows at one set of control points: the displacements ``d`` (F, n), the
    poses (``root``, ``rot``, ``reach`` of :meth:`_Problem.pose`), their ``centres``
    and ``values`` (:meth:`_Problem.frame_values`), the rows' ``goal`` (F, W) (NaN:
    off) and balance ``target`` (:meth:`_Problem.rows`), and the weighted residual
    (F, W), zero on rows that are off, with the rows' weights ``scale`` (W,)."""

    d: Array
    root: Array
    rot: Array
    reach: Array
    centres: Array
    values: Array
    goal: Array
    target: Array
    residual: Array
    scale: Array

    @property
    def merit(self) -> float:
        """The sum of squared weighted residuals."""
        return float(np.sum(self.residual**2))


def _problem(
    body: Body,
    prior: Motion,
    goals: CurveGoals,
    joints: Sequence[int],
    spacing: float,
    reach_weight: float,
) -> _Problem:
    basis = bspline_basis(len(prior), spacing, prior.fps)[0]
    f, m = basis.shape
    nonzero = basis != 0.0
    low = nonzero.argmax(axis=1)
    high = m - 1 - nonzero[:, ::-1].argmax(axis=1)
    frames = np.arange(f)
    first = low[np.maximum(frames - 1, 0)]
    k = int((high[np.minimum(frames + 1, f - 1)] - first).max()) + 1
    first = np.minimum(first, m - k)
    near = frames[:, None] + np.arange(-1, 2)  # (F, 3)
    local = basis[np.clip(near, 0, f - 1)[..., None], first[:, None, None] + np.arange(k)]
    local[(near < 0) | (near >= f)] = 0.0
    moved = np.asarray(list(joints), dtype=np.intp)
    tall = height(body.skeleton) * body.metres
    feet = tuple(_foot_length(body.skeleton, limb) for limb, _, _ in goals.legs)
    return _Problem(body, prior, goals, moved, basis, first, local, tall, reach_weight, feet)


def _foot_length(skeleton, limb: Limb) -> float:
    """The farthest a point below the limb's lower joint lies from it (rest pose,
    skeleton unit): the foot's length."""
    below = [p for p in range(skeleton.num_points) if limb.lower in skeleton.chain(p)[:-1]]
    if not below:
        return 0.0
    return float(max(skeleton.path_length(limb.lower, p) for p in below))


def _jacobian(p: _Problem, e: _Evaluation, step: float) -> Array:
    """∂rows/∂d as dense blocks (F, W, 3, n): the rows of frame t (:meth:`_Problem.rows`,
    ``W`` of them) by the displacement (F, n) of frames t − 1, t, t + 1 — zero where
    a neighbour is off the clip — by forward differences about the evaluation ``e``,
    its balance targets held. Frame s moves its own reach rows and the values of
    frames s − 1, s, s + 1 (central differences), so each perturbed frame is posed
    once and its three values are found with its neighbours as they are — and only
    where a value row that is on can feel it. A DOF no leg hangs from is turned
    alone, the legs' solution kept."""
    d, root, rot, reach, centres, values = e.d, e.root, e.rot, e.reach, e.centres, e.values
    target, active = e.target, np.isfinite(e.goal)
    f, n = d.shape
    v = values.shape[1]
    out = np.zeros((f, active.shape[1], 3, n))
    trial = np.repeat(d[:, None], n, axis=1)  # (F, n, n)
    trial[:, np.arange(n), np.arange(n)] += step
    legged = p.legged
    t_root = np.repeat(root[:, None], n, axis=1)
    t_rot = np.repeat(rot[:, None], n, axis=1)
    t_reach = np.repeat(reach[:, None], n, axis=1)
    k = np.flatnonzero(legged)
    t_root[:, k], t_rot[:, k], t_reach[:, k] = p.pose(trial[:, k], np.arange(f)[:, None])
    k = np.flatnonzero(~legged)
    joint = (k - 3) // 3
    turn = trial[:, k][:, np.arange(len(k))[:, None], 3 + 3 * joint[:, None] + np.arange(3)]
    t_rot[:, k, p.moved[joint]] = quat.multiply(
        p.prior.rotations[:, p.moved[joint]], quat.exp(turn)
    )
    out[:, v:, 1] = ((t_reach - reach[:, None]) / step).transpose(0, 2, 1)
    felt = np.flatnonzero(
        np.convolve(active[:, :v].any(axis=1).astype(float), np.ones(3), "same") > 0
    )
    if len(felt):
        moved = (t_root[felt], t_rot[felt], p.centres(t_root[felt], t_rot[felt]))

        def kept(i: NDArray[np.intp]) -> _Frame:
            j = np.clip(i, 0, f - 1)
            return root[j][:, None], rot[j][:, None], centres[j][:, None]

        t = felt[:, None] + np.arange(-1, 2)  # (S, 3): the frames whose values moved
        inside = (t >= 1) & (t <= f - 2)
        t = np.clip(t, 0, f - 1)
        t_values = np.stack(
            [
                p.values(kept(felt - 2), kept(felt - 1), moved, t[:, :1]),
                p.values(kept(felt - 1), moved, kept(felt + 1), t[:, 1:2]),
                p.values(moved, kept(felt + 1), kept(felt + 2), t[:, 2:]),
            ],
            axis=2,
        )  # (S, n, 3, v)
        slope = p.linear((t_values - values[t][:, None]) / step, target[t][:, None])
        for o in range(3):  # rows of frame felt − 1 + o, moved by its neighbour 2 − o
            i = inside[:, o]
            out[t[i, o], :v, 2 - o] = slope[i, :, o].transpose(0, 2, 1)
    return np.where(np.isfinite(out), out, 0.0)


def _normal(
    p: _Problem, jd: Array, residual: Array, active: NDArray[np.bool_]
) -> tuple[Array, Array]:
    """The normal equations of the control points from the rows' blocks ``jd``
    (F, W, 3, n) (:func:`_jacobian`, weighted) and ``residual`` (F, W) on the
    ``active`` rows (F, W): ``JᵀJ`` in LAPACK's lower band storage (K n, M n) and
    ``Jᵀ r`` (M n). A row of frame t meets the K control points from
    ``p.first[t]`` (:attr:`_Problem.local`), so each knot interval's rows give one
    dense (K n)² block of ``JᵀJ`` — no sparse product: the blocks' sum is banded."""
    n = jd.shape[3]
    kn = p.local.shape[2] * n
    size = p.basis.shape[1] * n
    t, w = np.nonzero(active)
    felt = jd[t, w]
    kept = felt.any(axis=(1, 2))  # a row no DOF moves adds nothing to JᵀJ or Jᵀr
    t, w = t[kept], w[kept]
    g = np.einsum("rjn,rjk->rkn", felt[kept], p.local[t]).reshape(len(t), kn)
    start = p.first[t]
    group = np.searchsorted(np.unique(start), start)  # rows sorted by frame, so by start
    count = np.bincount(group)
    slot = np.arange(len(t)) - np.concatenate([[0], np.cumsum(count)[:-1]])[group]
    stacked = np.zeros((len(count), int(count.max(initial=0)), kn))
    stacked[group, slot] = g
    r = np.zeros(stacked.shape[:2])
    r[group, slot] = residual[t, w]
    # each block's lower band storage is a strided view of it over a zero block below:
    # entry (b + d, b) of a row-major (K n)² block is element d K n + b (K n + 1)
    blocks = np.zeros((len(count), 2 * kn, kn))
    blocks[:, :kn] = np.matmul(stacked.transpose(0, 2, 1), stacked)
    item = blocks.itemsize
    skewed = np.lib.stride_tricks.as_strided(
        blocks,
        (len(count), kn, kn),
        (blocks.strides[0], kn * item, (kn + 1) * item),
        writeable=False,
    )
    gradient = np.einsum("gra,gr->ga", stacked, r)
    band = np.zeros((kn, size))
    total = np.zeros(size)
    for o, block, grad in zip(np.unique(start) * n, skewed, gradient, strict=True):
        band[:, o : o + kn] += block
        total[o : o + kn] += grad
    return band, total


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
        ``merit_before`` and ``merit_after`` (sum of squared weighted rows) and
        ``iterations`` (linearisations).
    """
    p = _problem(body, prior, goals, joints, spacing, reach_weight)
    m, n = p.basis.shape[1], p.n
    step = 1e-6

    def linearise(c: Array, now: _Evaluation) -> tuple[Array, Array] | None:
        active = np.isfinite(now.goal)
        if not active.any():
            return None
        jd = _jacobian(p, now, step) * now.scale[:, None, None]
        return _normal(p, jd, now.residual, active)

    c = np.zeros((m, n))
    start = p.evaluate(c)
    _, now, done = banded_levenberg_marquardt(
        p.evaluate, linearise, c, iterations=iterations, ridge=1e-4, trials=12, evaluation=start
    )
    out = prior.replace(root_position=now.root, rotations=quat.normalize(now.rot))
    return out, {"merit_before": start.merit, "merit_after": now.merit, "iterations": done}
