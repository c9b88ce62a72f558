"""The task contract (DESIGN.md, idea 2): :class:`Task`, :func:`stack` and the penalties.

A task answers, at a batch of poses (a :class:`~retarget.core.kinematics.Pose`,
whose forward kinematics every task shares):

* ``residual(pose) -> (..., m)``: zero when an *equality* task is met, ``≥ 0``
  when an *inequality* task is met (``task.inequality``);
* ``jacobian(pose) -> (..., m, 3 + 3J)``: ``∂residual/∂x`` in the one tangent
  space (:mod:`retarget.core.motion`), i.e. for the increment ``pose ⊕ x`` at
  ``x = 0``: columns are the root translation, then one *local* rotation
  vector per joint applied on the right, ``q_j ⊗ exp(v_j)``;
* ``vjp(pose, c) -> (..., 3 + 3J)``: ``Jᵀ c`` without forming ``J`` (what
  gradient methods need; much cheaper than :meth:`Task.jacobian` for
  end-effector tasks);
* ``weight`` (penalty weight, importance, inverse noise) and ``size`` (m).

Goals are per batch element (``goal (..., 3)`` broadcasts against the pose's
batch axes) and may be NaN: a batch element whose goal has a NaN is *inactive*
for that task; its rows have residual 0 and zero Jacobian rows, so one task
instance serves a clip whose frames have different active sets.

Many tasks at once: Choi & Ko (2000) stack their Jacobians (:func:`stack`);
Lee & Shin (1999) penalise them (eq. 6: :func:`penalty`,
:func:`penalty_gradient`, :func:`penalty_and_gradient`, which folds the
end-effector tasks' gradients into one pass over the skeleton through
``_wrench_vjp``).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Generic, Self, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array, frozen
from ..core.kinematics import Pose
from ..core.skeleton import Skeleton
from ..core.so3 import cross

__all__ = ["Residual", "Task", "penalty", "penalty_and_gradient", "penalty_gradient", "stack"]

State = TypeVar("State")


def _frozen_array(a: ArrayLike, name: str, trailing: tuple[int, ...]) -> Array:
    arr: Array = frozen(a, trailing, name, trailing=True)  # NaN allowed: inactive
    if np.isinf(arr).any():
        raise ValueError(f"`{name}` contains infinite values (use NaN for inactive)")
    return arr


def _check_point(pose: Pose, point: int) -> int:
    n = pose.skeleton.num_points
    if not 0 <= point < n:
        raise ValueError(f"Point index {point} out of range for {n} points (joints + sites)")
    return point


@lru_cache(maxsize=256)
def _chains(skeleton: Skeleton, points: tuple[int, ...]) -> tuple[NDArray[np.intp], Array]:
    """Joints on the paths root → points (``used``) and ``A[u, k] = 1`` if ``used[u]``
    is an ancestor-or-self of ``points[k]``; shapes (U,), (U, K)."""
    n_joints = skeleton.num_joints
    member = np.zeros((n_joints, len(points)))
    for k, p in enumerate(points):
        chain = skeleton.chain(p)
        member[chain[chain < n_joints], k] = 1.0
    used = np.flatnonzero(member.any(axis=1))
    return used, member[used]


def _wrench_vjp(pose: Pose, points: Sequence[int], forces: Array, torques: Array | None) -> Array:
    """``Jᵀ [f; m]``: the tangent-space gradient of world forces/torques at points.

    ``forces`` and ``torques`` (..., K, 3) act at ``points`` (K,). With the
    position Jacobian ``∂p_e/∂v_j = [p_j − p_e]_× R_j`` and orientation rows
    ``R_j`` (:func:`retarget.core.kinematics.jacobian`), the product is the joint
    torque ``R_jᵀ Σ_e ((p_e − p_j) × f_e + m_e)`` over the effectors below
    joint ``j``, and ``Σ f_e`` for the root translation.
    """
    sk = pose.skeleton
    used, member = _chains(sk, tuple(int(p) for p in points))
    p_e = pose.positions[..., list(points), :]  # (..., K, 3)
    moment = cross(p_e, forces)
    if torques is not None:
        moment = moment + torques
    f_sum = member @ forces  # (..., U, 3) force below each used joint
    m_sum = member @ moment
    p_j = pose.positions[..., used, :]
    tau = m_sum - cross(p_j, f_sum)  # moments about p_j
    local = quat.rotate(quat.conjugate(pose.world_rotations[..., used, :]), tau)
    batch = local.shape[:-2]
    out = np.zeros((*batch, 3 + 3 * sk.num_joints))
    out[..., :3] = forces.sum(axis=-2)
    rot = out[..., 3:].reshape(*batch, sk.num_joints, 3)
    rot[..., used, :] = local
    return out


def _active_rows(goal: Array) -> NDArray[np.bool_]:
    return np.asarray(np.isfinite(goal).all(axis=-1))


def _unit_goals(goal: ArrayLike) -> Array:
    """Goal rotations ``(w, x, y, z)``, shape (..., 4), as read-only unit quaternions.

    A row with a NaN or infinite component is inactive and comes back all NaN;
    an active row of norm below 1e-12 is an error.
    """
    goal = np.array(goal, dtype=np.float64)
    if goal.shape[-1:] != (4,):
        raise ValueError(f"Expected `goal` to have shape (..., 4), got {goal.shape}")
    active = _active_rows(goal)
    goal = np.where(active[..., None], goal, np.nan)
    norm = np.linalg.norm(goal, axis=-1, keepdims=True)
    if np.any(norm[active] < 1e-12):
        raise ValueError("`goal` contains zero or infinite quaternions")
    return _frozen_array(goal / norm, "goal", (4,))


# --------------------------------------------------------------------------------------
# the contract
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, kw_only=True)
class Residual(ABC, Generic[State]):
    """What every constraint has: ``size`` rows, their residual at a batch of states, a weight.

    Kinematic tasks (:class:`Task`) are residuals of a :class:`~retarget.core.kinematics.Pose`
    with a Jacobian in the tangent space. The dynamic tasks of
    :mod:`retarget.physics.tasks` (ZMP, torque, momentum; Tak & Ko 2005, §4) are
    residuals of a pose *and its rates*, which the physics filter differentiates
    through its sigma points, so they need no Jacobian.

    Attributes
    ----------
    weight : float
        Penalty weight (``≥ 0``), in 1 / (residual unit)²; see :func:`penalty`.
    inequality : bool
        ``False``: the task wants ``residual == 0``; ``True``: ``residual ≥ 0``.
        Fixed by the task's class.
    """

    weight: float = 1.0
    inequality: bool = False

    def __post_init__(self) -> None:
        w = float(self.weight)
        if not (np.isfinite(w) and w >= 0.0):
            raise ValueError(f"Expected a finite weight >= 0, got {self.weight}")
        object.__setattr__(self, "weight", w)

    @property
    @abstractmethod
    def size(self) -> int:
        """m, the number of residual rows."""

    @abstractmethod
    def residual(self, state: State) -> Array:
        """Residuals at the states, shape (..., m); 0 on inactive rows."""


@dataclass(frozen=True, eq=False, kw_only=True)
class Task(Residual[Pose]):
    """A constraint on poses: residual, Jacobian in the tangent space, weight.

    A new kind of task subclasses this frozen dataclass and implements
    :attr:`size`, :meth:`residual` and :meth:`jacobian` (and :meth:`vjp` when
    ``Jᵀ c`` is cheaper than ``J``); it lists its per-batch arrays (goals) in
    :attr:`batched_fields`, so that solvers can select batch elements
    (:meth:`flatten_batch`, :meth:`take`). Two optional private hooks speed
    solvers up: ``_wrenches(pose, c)`` (end-effector tasks: world forces and
    torques at points, folded into one pass by :func:`penalty_and_gradient`)
    and ``_joint_rows(pose)`` (rows that touch one joint each: block-diagonal
    curvature for :func:`retarget.ik.numeric.solve_ik`).

    Attributes
    ----------
    weight, inequality
        As in :class:`Residual`.
    batched_fields : dict of str to int (class attribute)
        The per-batch fields and the number of trailing (non-batch) axes of each,
        e.g. ``{"goal": 1}``.
    """

    batched_fields: ClassVar[Mapping[str, int]] = {}

    # -- the contract ---------------------------------------------------------------------
    @abstractmethod
    def residual(self, pose: Pose) -> Array:
        """Residuals at the poses, shape (..., m); 0 on inactive rows."""

    @abstractmethod
    def jacobian(self, pose: Pose) -> Array:
        """``∂residual/∂x`` at ``x = 0`` of ``pose ⊕ x``, shape (..., m, 3 + 3J)."""

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        """``Jᵀ c`` (vector-Jacobian product), shape (..., 3 + 3J).

        Parameters
        ----------
        pose : Pose
        cotangent : array_like, shape (..., m)
        """
        c = np.asarray(cotangent, dtype=np.float64)
        return np.einsum("...m,...mn->...n", c, self.jacobian(pose))

    # -- batches --------------------------------------------------------------------------
    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Leading axes of the per-batch fields (goals); ``()`` for a constant task."""
        shapes = [
            getattr(self, name).shape[: getattr(self, name).ndim - nd]
            for name, nd in self.batched_fields.items()
        ]
        return np.broadcast_shapes(*shapes) if shapes else ()

    def flatten_batch(self, batch_shape: tuple[int, ...]) -> Self:
        """This task with its goals broadcast to ``batch_shape`` and flattened to one axis."""
        size = int(np.prod(batch_shape, dtype=np.int64))
        changes: dict[str, Any] = {}
        for name, nd in self.batched_fields.items():
            arr = getattr(self, name)
            trailing = arr.shape[arr.ndim - nd :]
            flat = np.broadcast_to(arr, (*batch_shape, *trailing)).reshape(size, *trailing)
            flat.setflags(write=False)
            changes[name] = flat
        return self._replace_unchecked(**changes) if changes else self

    def take(self, index: ArrayLike) -> Self:
        """The task for the batch elements ``index`` of a flat batch (see :meth:`flatten_batch`)."""
        idx = np.asarray(index)
        changes: dict[str, Any] = {}
        for name, nd in self.batched_fields.items():
            arr = getattr(self, name)
            if arr.ndim > nd:
                sub = arr[idx]
                sub.setflags(write=False)
                changes[name] = sub
        return self._replace_unchecked(**changes) if changes else self

    def _replace_unchecked(self, **changes: Any) -> Self:
        """A copy with some fields swapped in without validation (internal, trusted data)."""
        new = object.__new__(type(self))
        for f in dataclasses.fields(self):
            object.__setattr__(new, f.name, changes.get(f.name, getattr(self, f.name)))
        return new


@dataclass(frozen=True, eq=False)
class _PointTask(Task):
    """A task on one point with a per-batch ``goal`` (..., d): the fields and checks
    :class:`~retarget.tasks.position.PositionTask` and
    :class:`~retarget.tasks.orientation.OrientationTask` share (3 rows, equality).

    A subclass reads the goal through :meth:`_goal` (shape check, normalisation).
    """

    point: int
    goal: Array
    inequality: bool = dataclasses.field(default=False, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {"goal": 1}

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "point", int(self.point))
        object.__setattr__(self, "goal", self._goal(self.goal))

    @staticmethod
    @abstractmethod
    def _goal(goal: ArrayLike) -> Array:
        """The goal as the task keeps it (a frozen float array)."""

    @property
    def size(self) -> int:
        return 3


# --------------------------------------------------------------------------------------
# many tasks at once
# --------------------------------------------------------------------------------------
def _batch(pose: Pose, residuals: Sequence[Array]) -> tuple[int, ...]:
    return np.broadcast_shapes(pose.batch_shape, *(r.shape[:-1] for r in residuals))


def stack(tasks: Sequence[Task], pose: Pose) -> tuple[Array, Array, Array, NDArray[np.bool_]]:
    """All tasks' rows, one after the other (Choi & Ko's stacked Jacobian).

    Parameters
    ----------
    tasks : sequence of Task
    pose : Pose

    Returns
    -------
    residual : ndarray, shape (..., M)
    jacobian : ndarray, shape (..., M, 3 + 3J)
    weights : ndarray, shape (M,)
        Each row's task weight.
    inequality : ndarray of bool, shape (M,)
        Rows that want ``residual ≥ 0``.
    """
    res = [t.residual(pose) for t in tasks]
    jac = [t.jacobian(pose) for t in tasks]
    n = 3 + 3 * pose.skeleton.num_joints
    batch = _batch(pose, res)
    r = (
        np.concatenate([np.broadcast_to(x, (*batch, x.shape[-1])) for x in res], axis=-1)
        if res
        else np.zeros((*batch, 0))
    )
    j = (
        np.concatenate([np.broadcast_to(x, (*batch, *x.shape[-2:])) for x in jac], axis=-2)
        if jac
        else np.zeros((*batch, 0, n))
    )
    weights = np.concatenate([np.full(t.size, t.weight) for t in tasks]) if tasks else np.zeros(0)
    ineq = (
        np.concatenate([np.full(t.size, t.inequality) for t in tasks])
        if tasks
        else np.zeros(0, bool)
    )
    return r, j, weights, ineq


def _violation(task: Task, r: Array) -> Array:
    """The part of the residual the penalty sees: all of it, or ``min(r, 0)``."""
    return np.minimum(r, 0.0) if task.inequality else r


def penalty(tasks: Sequence[Task], pose: Pose) -> Array:
    """Weighted squared violations, shape (...,) (Lee & Shin 1999, eq. 6 without ½xᵀMx).

    .. math:: \\sum_{i ∈ N_e} w_i c_i^2 + \\sum_{i ∈ N_i} w_i \\min(c_i, 0)^2
    """
    return penalty_and_gradient(tasks, pose, gradient=False)[0]


def penalty_gradient(tasks: Sequence[Task], pose: Pose) -> Array:
    """``∂ penalty / ∂x`` at ``x = 0`` of ``pose ⊕ x``, shape (..., 3 + 3J).

    .. math:: \\sum_i 2 w_i c_i ∂c_i/∂x \\quad (\\text{inequalities only where } c_i < 0)
    """
    return penalty_and_gradient(tasks, pose)[1]


def penalty_and_gradient(
    tasks: Sequence[Task], pose: Pose, *, gradient: bool = True
) -> tuple[Array, Array, list[Array]]:
    """:func:`penalty` and :func:`penalty_gradient` sharing one evaluation of the residuals.

    End-effector tasks (position, orientation, ground) are folded into one
    pass over the skeleton (their forces and torques are summed first).

    Returns
    -------
    value : ndarray, shape (...,)
    gradient : ndarray, shape (..., 3 + 3J)
        An empty array when ``gradient=False``.
    residuals : list of ndarray, shape (..., m) each
    """
    residuals = [t.residual(pose) for t in tasks]
    batch = _batch(pose, residuals)
    value = np.zeros(batch)
    cot: list[Array] = []
    for t, r in zip(tasks, residuals, strict=True):
        c = _violation(t, r)
        value = value + t.weight * np.einsum("...m,...m->...", c, c)
        cot.append(2.0 * t.weight * c)
    if not gradient:
        return value, np.zeros(0), residuals
    n = 3 + 3 * pose.skeleton.num_joints
    grad = np.zeros((*batch, n))
    points: list[int] = []
    forces: list[Array] = []
    torques: list[Array] = []
    for t, c in zip(tasks, cot, strict=True):
        if t.weight == 0.0:
            continue
        wrench = getattr(t, "_wrenches", None)
        if wrench is None:
            grad = grad + t.vjp(pose, c)
            continue
        p, f, m = wrench(pose, c)
        points += p
        forces.append(np.broadcast_to(f, (*batch, *f.shape[-2:])))
        torques.append(
            np.zeros((*batch, len(p), 3))
            if m is None
            else np.broadcast_to(m, (*batch, *m.shape[-2:]))
        )
    if points:
        grad = grad + _wrench_vjp(
            pose, points, np.concatenate(forces, axis=-2), np.concatenate(torques, axis=-2)
        )
    return value, grad, residuals
