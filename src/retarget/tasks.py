"""Tasks (constraints): the library's single contract for "what a pose should satisfy".

DESIGN.md, idea 2. A task answers, at a batch of poses (a
:class:`~retarget.kinematics.Pose`, whose forward kinematics every task shares):

* ``residual(pose) -> (..., m)``: zero when an *equality* task is met, ``≥ 0``
  when an *inequality* task is met (``task.inequality``);
* ``jacobian(pose) -> (..., m, 3 + 3J)``: ``∂residual/∂x`` in the one tangent
  space (:mod:`retarget.motion`), i.e. for the increment ``pose ⊕ x`` at
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

Methods use tasks in four ways: Lee & Shin (1999) penalise them
(:func:`penalty`, :func:`penalty_gradient`), Choi & Ko (2000) stack their
Jacobians (:func:`stack`), Shin et al. (2001) weight them by importance, Tak &
Ko (2005) feed their residuals to a UKF.

Residual conventions (world frame: Y up, lengths in the skeleton's unit):

=================  ===============================================  =====
task               residual                                         rows
=================  ===============================================  =====
PositionTask       ``p_point − goal``                               3
OrientationTask    ``log(W_point ⊗ goal⁻¹)`` (world-frame rotvec)   3
JointTask          ``log(goal⁻¹ ⊗ q_joint)`` (local rotvec)         3
JointLimitTask     ``θ − lo ≥ 0``, ``hi − θ ≥ 0`` per finite limit  varies
GroundTask         ``y − h(x, z) − clearance ≥ 0`` per point        K
=================  ===============================================  =====

A root-position task is ``PositionTask(0, goal)``.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import dofs, quat
from ._arrays import Array
from ._so3 import apply_right_jacobian_inverse, cross, right_jacobian_inverse
from .kinematics import Pose
from .skeleton import Skeleton

__all__ = [
    "GroundTask",
    "JointLimitTask",
    "JointTask",
    "OrientationTask",
    "PositionTask",
    "Task",
    "penalty",
    "penalty_and_gradient",
    "penalty_gradient",
    "stack",
]


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _frozen_array(a: ArrayLike, name: str, trailing: tuple[int, ...]) -> Array:
    arr = np.array(a, dtype=np.float64)  # a copy the caller cannot reach
    if arr.shape[arr.ndim - len(trailing) :] != trailing or arr.ndim < len(trailing):
        want = ", ".join(str(t) for t in trailing)
        raise ValueError(f"Expected `{name}` to have shape (..., {want}), got {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"`{name}` contains infinite values (use NaN for inactive)")
    arr.setflags(write=False)
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
    ``R_j`` (:func:`retarget.kinematics.jacobian`), the product is the joint
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
class Task(ABC):
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
    weight : float
        Penalty weight (``≥ 0``), in 1 / (residual unit)²; see :func:`penalty`.
    inequality : bool
        ``False``: the task wants ``residual == 0``; ``True``: ``residual ≥ 0``.
        Fixed by the task's class.
    batched_fields : dict of str to int (class attribute)
        The per-batch fields and the number of trailing (non-batch) axes of each,
        e.g. ``{"goal": 1}``.
    """

    weight: float = 1.0
    inequality: bool = False

    batched_fields: ClassVar[Mapping[str, int]] = {}

    def __post_init__(self) -> None:
        w = float(self.weight)
        if not (np.isfinite(w) and w >= 0.0):
            raise ValueError(f"Expected a finite weight >= 0, got {self.weight}")
        object.__setattr__(self, "weight", w)

    # -- the contract ---------------------------------------------------------------------
    @property
    @abstractmethod
    def size(self) -> int:
        """m, the number of residual rows."""

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


# --------------------------------------------------------------------------------------
# end-effector tasks
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PositionTask(Task):
    """World position of a point (joint or end site).

    .. math:: r = p_{point} − goal

    Parameters
    ----------
    point : int
        Point index (``skeleton.index(name)``); 0 is the root.
    goal : array_like, shape (..., 3)
        Goal positions. A NaN component makes that row inactive for that batch
        element: ``(x, NaN, z)`` constrains the horizontal position only,
        all-NaN the whole element.
    weight : float, keyword-only
        In 1/unit².
    """

    point: int
    goal: Array
    inequality: bool = field(default=False, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {"goal": 1}

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "point", int(self.point))
        object.__setattr__(self, "goal", _frozen_array(self.goal, "goal", (3,)))

    @property
    def size(self) -> int:
        return 3

    def residual(self, pose: Pose) -> Array:
        p = pose.positions[..., _check_point(pose, self.point), :]
        r = p - self.goal
        return np.where(np.isnan(r), 0.0, r)

    def jacobian(self, pose: Pose) -> Array:
        jac = pose.jacobian([_check_point(pose, self.point)])
        return jac * np.isfinite(self.goal)[..., None]

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        points, f, _ = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, points, f, None)

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, Array | None]:
        f = np.where(np.isfinite(self.goal), c, 0.0)
        return [_check_point(pose, self.point)], f[..., None, :], None


@dataclass(frozen=True, eq=False)
class OrientationTask(Task):
    """World orientation of a point's frame.

    .. math:: r = \\log(W_{point} ⊗ goal^{-1})

    a world-frame rotation vector (the rotation that takes the goal to the
    current frame), matching the orientation rows of
    :meth:`~retarget.kinematics.Pose.jacobian`: ``∂r/∂x = J_l(r)⁻¹ J_ω``.

    Parameters
    ----------
    point : int
    goal : array_like, shape (..., 4)
        Goal world rotations (w, x, y, z); a NaN makes that element inactive.
    weight : float, keyword-only
        In 1/rad².
    """

    point: int
    goal: Array
    inequality: bool = field(default=False, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {"goal": 1}

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "point", int(self.point))
        object.__setattr__(self, "goal", _unit_goals(self.goal))

    @property
    def size(self) -> int:
        return 3

    def _raw(self, pose: Pose) -> tuple[Array, NDArray[np.bool_]]:
        w = pose.world_rotations[..., _check_point(pose, self.point), :]
        active = _active_rows(self.goal)
        goal = np.where(active[..., None], self.goal, np.array([1.0, 0.0, 0.0, 0.0]))
        return quat.log(quat.multiply(w, quat.conjugate(goal))), active

    def residual(self, pose: Pose) -> Array:
        r, active = self._raw(pose)
        return np.where(active[..., None], r, 0.0)

    def jacobian(self, pose: Pose) -> Array:
        r, active = self._raw(pose)
        j_omega = pose.jacobian([_check_point(pose, self.point)], orientation=True)[..., 3:, :]
        jl_inv = np.swapaxes(right_jacobian_inverse(r), -1, -2)  # J_l(r)⁻¹ = J_r(r)⁻ᵀ
        return (jl_inv @ j_omega) * active[..., None, None]

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        point, f, m = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, point, f, m)

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, Array | None]:
        r, active = self._raw(pose)
        # (J_l⁻¹)ᵀ c = J_r⁻¹ c: a world torque at the point
        m = np.where(active[..., None], apply_right_jacobian_inverse(r, c), 0.0)
        return [_check_point(pose, self.point)], np.zeros_like(m)[..., None, :], m[..., None, :]


# --------------------------------------------------------------------------------------
# joint tasks
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class JointTask(Task):
    """Local rotation of one joint.

    .. math:: r = \\log(goal^{-1} ⊗ q_{joint}),\\qquad ∂r/∂v_{joint} = J_r(r)^{-1}

    Parameters
    ----------
    joint : int
        Joint index (not a site).
    goal : array_like, shape (..., 4)
        Goal local rotations; a NaN makes that element inactive.
    weight : float, keyword-only
        In 1/rad².
    """

    joint: int
    goal: Array
    inequality: bool = field(default=False, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {"goal": 1}

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "joint", int(self.joint))
        goal = _unit_goals(self.goal)
        if np.isinf(np.asarray(self.goal, dtype=np.float64)).any():  # an error, not inactive
            raise ValueError("`goal` contains zero or infinite quaternions")
        object.__setattr__(self, "goal", goal)

    @property
    def size(self) -> int:
        return 3

    def _joint(self, pose: Pose) -> int:
        n = pose.skeleton.num_joints
        if not 0 <= self.joint < n:
            raise ValueError(f"Joint index {self.joint} out of range for {n} joints")
        return self.joint

    def _raw(self, pose: Pose) -> tuple[Array, NDArray[np.bool_]]:
        q = pose.rotations[..., self._joint(pose), :]
        active = _active_rows(self.goal)
        goal = np.where(active[..., None], self.goal, np.array([1.0, 0.0, 0.0, 0.0]))
        return quat.log(quat.multiply(quat.conjugate(goal), q)), active

    def residual(self, pose: Pose) -> Array:
        r, active = self._raw(pose)
        return np.where(active[..., None], r, 0.0)

    def jacobian(self, pose: Pose) -> Array:
        r, active = self._raw(pose)
        n = 3 + 3 * pose.skeleton.num_joints
        jac = np.zeros((*r.shape[:-1], 3, n))
        j = 3 + 3 * self.joint
        jac[..., j : j + 3] = right_jacobian_inverse(r) * active[..., None, None]
        return jac

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        r, active = self._raw(pose)
        c = np.asarray(cotangent, dtype=np.float64)
        g = np.where(active[..., None], apply_right_jacobian_inverse(r, c, transpose=True), 0.0)
        out = np.zeros((*g.shape[:-1], 3 + 3 * pose.skeleton.num_joints))
        j = 3 + 3 * self.joint
        out[..., j : j + 3] = g
        return out

    def _joint_rows(self, pose: Pose) -> tuple[NDArray[np.intp], Array]:
        """Each row's joint (m,) and its gradient w.r.t. that joint's increment (..., m, 3)."""
        r, active = self._raw(pose)
        rows = right_jacobian_inverse(r) * active[..., None, None]
        return np.full(3, self._joint(pose), dtype=np.intp), rows


def _inverse3(m: Array, damping: float) -> Array:
    """``(mᵀm + λ²I)⁻¹ mᵀ`` of 3×3 matrices in closed form: the inverse, damped by
    ``λ = damping`` only where ``|det m| < damping`` (near singular)."""
    det_m = np.linalg.det(m)
    lam2 = np.where(np.abs(det_m) < damping, damping**2, 0.0)[..., None, None]
    a = np.swapaxes(m, -1, -2) @ m + lam2 * np.eye(3)
    # adjugate of the symmetric matrix a
    c00 = a[..., 1, 1] * a[..., 2, 2] - a[..., 1, 2] * a[..., 2, 1]
    c01 = a[..., 0, 2] * a[..., 2, 1] - a[..., 0, 1] * a[..., 2, 2]
    c02 = a[..., 0, 1] * a[..., 1, 2] - a[..., 0, 2] * a[..., 1, 1]
    c11 = a[..., 0, 0] * a[..., 2, 2] - a[..., 0, 2] * a[..., 2, 0]
    c12 = a[..., 0, 2] * a[..., 1, 0] - a[..., 0, 0] * a[..., 1, 2]
    c22 = a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    adj = np.stack([c00, c01, c02, c01, c11, c12, c02, c12, c22], axis=-1)
    adj = adj.reshape(*a.shape[:-2], 3, 3)
    det = a[..., 0, 0] * c00 + a[..., 0, 1] * c01 + a[..., 0, 2] * c02
    return (adj / det[..., None, None]) @ np.swapaxes(m, -1, -2)


@dataclass(frozen=True, eq=False)
class JointLimitTask(Task):
    """Channel-angle limits of a skeleton, as inequality rows.

    For every *present* rotation channel ``k`` of joint ``j`` with a finite
    bound (:func:`retarget.dofs.channel_limits`), one row

    .. math:: θ_{jk} − lo_{jk} ≥ 0 \\quad\\text{and/or}\\quad hi_{jk} − θ_{jk} ≥ 0,

    with ``θ`` from :func:`retarget.dofs.channel_angles`. The angle rates per
    tangent increment are the inverse of the joint's Euler-rate matrix (the
    columns of :func:`retarget.dofs.channel_axes` of its channel order
    completed to three axes). Near gimbal lock (middle angle within 0.06° of
    ±90°, ``|det C| < 1e-3``) it is a damped inverse ``(CᵀC + λ²I)⁻¹Cᵀ`` with
    ``λ = 1e-3``, so that gimbal lock itself gives large (≤ ~500) but
    finite rows. Angles wrap at ±π (first and last axis) and ±π/2 (middle).

    Parameters
    ----------
    skeleton : Skeleton
    weight : float, keyword-only
        In 1/rad².

    Attributes
    ----------
    rows : ndarray of int, shape (m, 3)
        ``(joint, channel, side)`` per row: channel in the completed order of
        :func:`~retarget.dofs.channel_angles`, side 0 = lower, 1 = upper bound.
    """

    skeleton: Skeleton
    inequality: bool = field(default=True, init=False)
    rows: NDArray[np.intp] = field(init=False, repr=False)
    _bounds: Array = field(init=False, repr=False)
    _full: Skeleton = field(init=False, repr=False)

    _DAMPING: ClassVar[float] = 1e-3

    def __post_init__(self) -> None:
        super().__post_init__()
        sk = self.skeleton
        limits = dofs.channel_limits(sk)  # (J, 3, 2), completed order
        rows = [
            (j, k, side)
            for j, order in enumerate(sk.euler_orders)
            for k in range(len(order))
            for side in (0, 1)
            if np.isfinite(limits[j, k, side])
        ]
        rows_arr = np.array(rows, dtype=np.intp).reshape(-1, 3)
        bounds = limits[rows_arr[:, 0], rows_arr[:, 1], rows_arr[:, 2]]
        rows_arr.setflags(write=False)
        bounds.setflags(write=False)
        # The same skeleton with every joint's order completed to three channels:
        # its channel_axes are the full Euler-rate matrices (the same angles).
        channels = []
        for j, chans in enumerate(sk.channels):
            order = sk.euler_orders[j]
            missing = tuple(f"{a}rotation" for a in "XYZ" if a not in order)
            channels.append(tuple(chans) + missing)
        full = sk.replace(channels=tuple(channels))
        object.__setattr__(self, "rows", rows_arr)
        object.__setattr__(self, "_bounds", bounds)
        object.__setattr__(self, "_full", full)

    @property
    def size(self) -> int:
        return len(self.rows)

    @property
    def _sign(self) -> Array:
        return np.where(self.rows[:, 2] == 0, 1.0, -1.0)

    def _check(self, pose: Pose) -> None:
        if pose.skeleton.num_joints != self.skeleton.num_joints:
            raise ValueError(
                f"JointLimitTask for {self.skeleton.num_joints} joints used on a pose of "
                f"{pose.skeleton.num_joints}"
            )

    def _joints(self) -> NDArray[np.intp]:
        return np.unique(self.rows[:, 0])

    def residual(self, pose: Pose) -> Array:
        self._check(pose)
        theta = dofs.channel_angles(self._full, pose.rotations)
        return self._sign * (theta[..., self.rows[:, 0], self.rows[:, 1]] - self._bounds)

    def _rates(self, pose: Pose) -> tuple[NDArray[np.intp], Array]:
        """Used joints (U,) and ``∂θ/∂v`` per used joint, shape (..., U, 3, 3)."""
        joints = self._joints()
        axes = dofs.channel_axes(self._full, pose.rotations)[..., joints, :, :]
        return joints, _inverse3(axes, self._DAMPING)

    def _joint_rows(self, pose: Pose) -> tuple[NDArray[np.intp], Array]:
        """Each row's joint (m,) and its gradient w.r.t. that joint's increment (..., m, 3)."""
        self._check(pose)
        joints, rates = self._rates(pose)
        pos = np.searchsorted(joints, self.rows[:, 0])
        return self.rows[:, 0], rates[..., pos, self.rows[:, 1], :] * self._sign[:, None]

    def jacobian(self, pose: Pose) -> Array:
        _, block = self._joint_rows(pose)  # (..., m, 3)
        n_joints = self.skeleton.num_joints
        jac = np.zeros((*block.shape[:-2], self.size, 3 + 3 * n_joints))
        cols = 3 + 3 * self.rows[:, 0][:, None] + np.arange(3)  # (m, 3)
        jac[..., np.arange(self.size)[:, None], cols] = block
        return jac

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        c = np.asarray(cotangent, dtype=np.float64)
        _, block = self._joint_rows(pose)  # (..., m, 3)
        contrib = block * c[..., None]
        batch = np.broadcast_shapes(contrib.shape[:-2])
        out = np.zeros((*batch, 3 + 3 * self.skeleton.num_joints))
        rot = out[..., 3:].reshape(*batch, self.skeleton.num_joints, 3)
        np.add.at(np.moveaxis(rot, -2, 0), self.rows[:, 0], np.moveaxis(contrib, -2, 0))
        return out


# --------------------------------------------------------------------------------------
# ground contact
# --------------------------------------------------------------------------------------
HeightFn = Callable[[Array], Array]


@dataclass(frozen=True, eq=False)
class GroundTask(Task):
    """Points above the ground: ``y − h(x, z) − clearance ≥ 0`` per point.

    Parameters
    ----------
    points : array_like of int, shape (K,)
        Point indices (toes, heels, ankles...).
    ground : float, callable or object, default 0.0
        A floor height (flat floor, Y up); or ``height(xz (..., 2)) -> (...)``;
        or any object with a ``height(xz)`` method and optionally
        ``gradient(xz) -> (..., 2)`` (``retarget.environment`` height fields).
    clearance : array_like, shape (..., K), default 0
        Distance each point must keep above the ground; per batch element,
        NaN = inactive for that point and element.
    gradient : callable, optional
        ``∂h/∂(x, z)``, ``(..., 2) -> (..., 2)``; without one (and without a
        ``ground.gradient``), central differences of ``height``.
    weight : float, keyword-only
    """

    points: NDArray[np.intp]
    ground: Any = 0.0
    clearance: Array = 0.0  # type: ignore[assignment]
    gradient: HeightFn | None = None
    inequality: bool = field(default=True, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {"clearance": 1}

    def __post_init__(self) -> None:
        super().__post_init__()
        points = np.array(self.points, dtype=np.intp).reshape(-1)
        points.setflags(write=False)
        object.__setattr__(self, "points", points)
        clearance = np.array(self.clearance, dtype=np.float64)
        clearance = np.broadcast_to(clearance, (*clearance.shape[:-1], len(points)))
        if clearance.ndim == 0 or clearance.shape[-1] != len(points):
            clearance = np.broadcast_to(clearance, (len(points),))
        object.__setattr__(self, "clearance", _frozen_array(clearance, "clearance", (len(points),)))
        g = self.ground
        if not (isinstance(g, (int, float, np.floating, np.integer)) or callable(g)):
            if not callable(getattr(g, "height", None)):
                raise ValueError(
                    "Expected `ground` to be a floor height, a height function h(xz), or an "
                    f"object with a height(xz) method; got {type(g).__name__}"
                )
        if isinstance(g, (int, float, np.floating, np.integer)):
            object.__setattr__(self, "ground", float(g))

    @property
    def size(self) -> int:
        return len(self.points)

    def _height(self, xz: Array) -> Array:
        g = self.ground
        if isinstance(g, float):
            return np.full(xz.shape[:-1], g)
        fn = g if callable(g) and not hasattr(g, "height") else g.height
        return np.asarray(fn(xz), dtype=np.float64)

    def _slope(self, xz: Array) -> Array:
        g = self.ground
        if isinstance(g, float):
            return np.zeros(xz.shape)
        fn = self.gradient or getattr(g, "gradient", None)
        if fn is not None:
            return np.asarray(fn(xz), dtype=np.float64)
        h = 1e-6 * np.maximum(1.0, np.abs(xz))
        out = np.empty(xz.shape)
        for c in range(2):
            step = np.zeros(xz.shape)
            step[..., c] = h[..., c]
            out[..., c] = (self._height(xz + step) - self._height(xz - step)) / (2 * h[..., c])
        return out

    def _raw(self, pose: Pose) -> tuple[Array, Array, NDArray[np.bool_]]:
        p = pose.positions[..., self.points, :]
        xz = p[..., [0, 2]]
        r = p[..., 1] - self._height(xz) - self.clearance
        active = np.isfinite(r)
        return r, xz, active

    def residual(self, pose: Pose) -> Array:
        r, _, active = self._raw(pose)
        return np.where(active, r, 0.0)

    def _normals(self, pose: Pose) -> tuple[Array, NDArray[np.bool_]]:
        """``∂r/∂p`` per point, ``(−h_x, 1, −h_z)``, shape (..., K, 3)."""
        r, xz, active = self._raw(pose)
        slope = self._slope(xz)
        n = np.stack([-slope[..., 0], np.ones(r.shape), -slope[..., 1]], axis=-1)
        return np.where(active[..., None], n, 0.0), active

    def jacobian(self, pose: Pose) -> Array:
        normals, _ = self._normals(pose)  # (..., K, 3)
        jac = pose.jacobian(self.points)  # (..., 3K, n)
        jac = jac.reshape(*jac.shape[:-2], len(self.points), 3, jac.shape[-1])
        return np.einsum("...kc,...kcn->...kn", normals, jac)

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        points, f, _ = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, points, f, None)

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, Array | None]:
        normals, _ = self._normals(pose)
        return [int(p) for p in self.points], normals * c[..., None], None


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
