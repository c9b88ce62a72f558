"""Numerical IK frame by frame: the penalty objective of Lee & Shin (1999, eq. 6) by Gauss-Newton.

:func:`solve_ik_newton` minimises, at every frame ``f``, the objective of
:func:`retarget.ik.numeric.solve_ik`,

.. math::
    g(x) = \\tfrac12 x^T M x + \\sum_{i ∈ N_e} w_i c_i(x)^2
           + \\sum_{i ∈ N_i} w_i \\min(c_i(x), 0)^2 ,

over the displacement ``x`` from the frame's reference pose (eq. 5), with the
same tasks (:mod:`retarget.tasks`) and the same rigidity ``M``. Where
:func:`~retarget.ik.numeric.solve_ik` runs a preconditioned conjugate gradient
over every frame at once, this takes Gauss-Newton steps
``(M + 2 Jᵀ W J) δ = −(M x + 2 Jᵀ W c)`` (inequality rows where violated)
with a backtracking line search on ``g``, one frame after another, each frame
started from the last one's displacement ``x_{f−1}`` (its correction of the
reference changes little from frame to frame: one to three steps a frame).
Being causal, it serves a clip and a live stream alike.

The frame loop is compiled (:mod:`retarget.ik._kernels.newton`): numpy's
per-call overhead on a robot's 35 unknowns and ~150 rows is most of the time,
and the frames are a recursion it cannot batch. So the kernel knows the kinds
of task it takes by their formulas (position, orientation, ground on a level
floor, body collision, joint limits of hinges, half-spaces), checked against the
task objects in ``tests/test_ik_newton.py``; a task of another kind is refused with a
one-line error (solve it with :func:`~retarget.ik.numeric.solve_ik`).

**Hard rows.** Penalties leave an inequality violated by ``~ force / w``: the
tasks listed in ``hard`` (a floor the soles must not go under) are checked after
a frame converges, and where one is violated by more than ``slack`` the frame
is solved again with their weights ``boosts[0]``, then ``boosts[1]`` times
firmer (:attr:`NewtonResult.boosted`).

Joints: the root translation and any three-channel joint (a rotation vector,
``q ⊗ exp(v)``), one-channel joints (hinges, ``q_ref ⊗ exp(δθ c)`` with ``c``
the channel's axis, :func:`retarget.core.dofs.channel_axes`) and joints without
channels or with infinite rigidity (fixed). Two-channel joints are refused. A
hinge's angle (for its limits) is its reference's twist about its axis plus ``δθ``:
:func:`retarget.core.dofs.channel_angles`' for a reference on its channel, as the
reference of a robot's hinges is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import dofs
from ..core.arrays import Array
from ..core.lazy import loader
from ..core.skeleton import Skeleton
from ..environment.shapes import Floor
from ..tasks import (
    CollisionTask,
    GroundTask,
    HalfSpaceTask,
    JointLimitTask,
    OrientationTask,
    PositionTask,
    SegmentTask,
    Task,
)
from .numeric import _check_rigidity, default_rigidity

__all__ = ["NewtonResult", "parameters", "solve_ik_newton"]

_kernel = loader("retarget.ik._kernels.newton")

_FIXED, _HINGE, _BALL = 0, 1, 3


@dataclass(frozen=True, eq=False)
class NewtonResult:
    """Outcome of :func:`solve_ik_newton`, per frame ``F``.

    Attributes
    ----------
    root_position : (F, 3)
    rotations : (F, J, 4)
    x : (F, n)
        The parameters at the result: root translation (if free), then per joint a
        hinge's angle increment or a ball's rotation vector from the reference.
    iterations : (F,) int
        Gauss-Newton steps taken (those of the hardened solves included).
    objective, penalty : (F,)
        ``g`` at the result and its penalty part (hard rows at their final weight).
    boosted : (F,) int
        How many times the hard rows were made firmer (0, 1 or 2).
    hard_violation : (F,)
        The largest violation of a hard row at the result (task units; 0: none).
    task_residuals : list of (F, m) arrays, or None
        Every task's residual at the result, in the order given (``residuals=True``).
    columns : (J,) int
        Each joint's first column of ``x`` (-1: none; a hinge has one, a ball three).
    """

    root_position: Array
    rotations: Array
    x: Array
    iterations: NDArray[np.int64]
    objective: Array
    penalty: Array
    boosted: NDArray[np.int64]
    hard_violation: Array
    task_residuals: list[Array] | None
    columns: NDArray[np.intp]


def _joints(skeleton: Skeleton, rigidity: Array, rot0: Array) -> tuple:
    """The kernel's skeleton: ``(parents, offsets, J, kind, col, axis, t_col, m_reg)``."""
    n_joints = skeleton.num_joints
    kind = np.zeros(n_joints, np.intp)
    col = np.full(n_joints, -1, np.intp)
    axis = np.zeros((n_joints, 3))
    t_col = 0 if np.isfinite(rigidity[0]) else -1
    m_reg = [rigidity[0]] * 3 if t_col == 0 else []
    axes = dofs.channel_axes(skeleton, rot0)  # (J, 3, 3)
    for j, order in enumerate(skeleton.euler_orders):
        m = float(rigidity[j + 1])
        if not order or not np.isfinite(m):
            continue
        if len(order) == 2:
            raise ValueError(
                f"solve_ik_newton: joint {skeleton.names[j]!r} has two rotation channels "
                "(use solve_ik)"
            )
        col[j] = len(m_reg)
        if len(order) == 1:
            kind[j] = _HINGE
            c = axes[j, :, 0]
            axis[j] = c / np.linalg.norm(c)
            m_reg.append(m)
        else:
            kind[j] = _BALL
            m_reg += [m] * 3
    return (
        np.ascontiguousarray(skeleton.point_parents, dtype=np.intp),
        np.ascontiguousarray(skeleton.point_offsets, dtype=np.float64),
        n_joints,
        kind,
        col,
        axis,
        t_col,
        np.asarray(m_reg, dtype=np.float64),
    )


def parameters(
    skeleton: Skeleton,
    rigidity: ArrayLike,
    root_position: ArrayLike,
    rotations: ArrayLike,
    root_ref: ArrayLike,
    rot_ref: ArrayLike,
) -> Array:
    """The parameters (F, n) of :func:`solve_ik_newton` (its ``start``, its result's
    ``x``) that put the references ``root_ref`` (F, 3), ``rot_ref`` (F, J, 4) at the
    poses ``root_position``, ``rotations``: the root's offset (if free), a ball's
    ``log(q_ref⁻¹ ⊗ q)``, a hinge's turn about its axis (the poses' other turns, and
    the joints without columns, are left out)."""
    from ..core import quat

    m = _check_rigidity(skeleton, rigidity)
    ref = np.asarray(rot_ref, dtype=np.float64)
    rot = np.asarray(rotations, dtype=np.float64)
    skel = _joints(skeleton, m, ref[0] if len(ref) else quat.identity((skeleton.num_joints,)))
    kind, col, axis, t_col = skel[3], skel[4], skel[5], skel[6]
    out = np.zeros((len(ref), len(skel[7])))
    if t_col >= 0:
        out[:, t_col : t_col + 3] = np.asarray(root_position) - np.asarray(root_ref)
    turn = quat.log(quat.multiply(quat.conjugate(ref), rot))  # (F, J, 3)
    for j in np.flatnonzero(col >= 0):
        if kind[j] == _BALL:
            out[:, col[j] : col[j] + 3] = turn[:, j]
        else:
            out[:, col[j]] = turn[:, j] @ axis[j]
    return out


def _lower(
    tasks: Sequence[Task],
    frames: int,
    kind: NDArray[np.intp],
    hard: set[int],
    rate: Array | None = None,
    rate_weight: float = 0.0,
    damping: Array | None = None,
) -> tuple[tuple, list[tuple[str, int, int]]]:
    """The tasks as the kernel's arrays (and the hinges' speeds, ``rate``), and per task
    ``(kind, first row, rows)`` in the kernel's row order (positions, segments,
    orientations, ground, collision, limits, half-spaces)."""
    pos: list = []
    ori: list = []
    ground: list = []
    coll: list = []
    lim: list = []
    seg: list = []
    half: list = []
    floor = None
    for i, t in enumerate(tasks):
        if t.weight == 0.0 or t.size == 0:
            continue
        if isinstance(t, PositionTask):
            pos.append((i, (-1, t.point), np.broadcast_to(t.goal, (frames, 3)), t.weight))
        elif isinstance(t, OrientationTask):
            ori.append((i, t.point, np.broadcast_to(t.goal, (frames, 4)), t.weight))
        elif isinstance(t, SegmentTask):
            seg.append((i, (t.start, t.end), np.broadcast_to(t.goal, (frames, 3)), t.weight))
        elif isinstance(t, GroundTask):
            if not isinstance(t.ground, Floor):
                raise ValueError(
                    f"solve_ik_newton: a GroundTask on {type(t.ground).__name__} (a level "
                    "floor only; use solve_ik)"
                )
            if floor is not None and t.ground.height != floor:
                raise ValueError("solve_ik_newton: ground tasks on floors of two heights")
            floor = t.ground.height
            clear = np.broadcast_to(t.clearance, (frames, t.size))
            ground.append((i, t.points, clear, t.weight))
        elif isinstance(t, CollisionTask):
            coll.append((i, t))
        elif isinstance(t, HalfSpaceTask):
            half.append((i, t))
        elif isinstance(t, JointLimitTask):
            for j, _, _ in t.rows:
                if kind[j] not in (_HINGE, _FIXED):
                    raise ValueError(
                        f"solve_ik_newton: limits on joint {t.skeleton.names[j]!r} of "
                        "three channels (hinges only; use solve_ik)"
                    )
            lim.append((i, t))
        else:
            raise ValueError(
                f"solve_ik_newton takes position, orientation, segment, ground, collision, "
                f"joint-limit and half-space tasks; got {type(t).__name__} (use solve_ik)"
            )
    layout: list[tuple[int, str, int, int]] = []
    row = 0
    vec = pos + seg  # a position: a segment from nowhere
    for i, *_ in vec:
        layout.append((i, "vector", row, 3))
        row += 3
    for i, *_ in ori:
        layout.append((i, "orientation", row, 3))
        row += 3
    for i, pts, _, _ in ground:
        layout.append((i, "ground", row, len(pts)))
        row += len(pts)
    # capsules: one list for every collision task, pairs re-indexed into it
    cap_joint: list[int] = []
    cap_a: list[Array] = []
    cap_b: list[Array] = []
    cap_r: list[float] = []
    pairs: list[tuple[int, int]] = []
    margin: list[float] = []
    col_w: list[float] = []
    col_hard: list[bool] = []
    for i, t in coll:
        base = len(cap_joint)
        c = t.capsules
        cap_joint += list(c.joints)
        cap_a += list(c.a)
        cap_b += list(c.b)
        cap_r += list(c.radius)
        pairs += [(base + a, base + b) for a, b in t.pairs]
        margin += list(np.broadcast_to(t.margin, (t.size,)))
        col_w += [t.weight] * t.size
        col_hard += [i in hard] * t.size
        layout.append((i, "collision", row, t.size))
        row += t.size
    lim_joint: list[int] = []
    lim_side: list[int] = []
    lim_bound: list[float] = []
    lim_w: list[float] = []
    lim_hard: list[bool] = []
    for i, t in lim:
        layout.append((i, "limits", row, t.size))
        row += t.size
        lim_joint += list(t.rows[:, 0])
        lim_side += list(t.rows[:, 2])
        lim_bound += list(t._bounds)
        lim_w += [t.weight] * t.size
        lim_hard += [i in hard] * t.size
    # half-spaces: one list of carrying joints for every task, each task's points'
    # weights and offsets spread over it (zero where a joint does not carry them)
    hs_joint = np.unique(np.concatenate([t.joints for _, t in half] or [np.zeros(0, np.intp)]))
    width = sum(t.size for _, t in half)
    hs_off = np.zeros((frames, width, len(hs_joint), 3))
    hs_w = np.zeros((frames, width, len(hs_joint)))
    hs_n = np.zeros((frames, width, 3))
    hs_level = np.zeros((frames, width))
    hs_weight = np.zeros(width)
    hs_hard = np.zeros(width, np.bool_)
    at = 0
    for i, t in half:
        k, slots = t.size, np.searchsorted(hs_joint, t.joints)
        hs_off[:, at : at + k, slots] = np.broadcast_to(t.offsets, (frames, k, len(slots), 3))
        hs_w[:, at : at + k, slots] = np.broadcast_to(t.weights, (frames, k, len(slots)))
        hs_n[:, at : at + k] = np.broadcast_to(t.normal, (frames, k, 3))
        hs_level[:, at : at + k] = np.broadcast_to(t.level, (frames, k))
        hs_weight[at : at + k] = t.weight
        hs_hard[at : at + k] = i in hard
        layout.append((i, "halfspace", row, k))
        row += k
        at += k
    a = np.asarray(cap_a, dtype=np.float64).reshape(-1, 3)
    b = np.asarray(cap_b, dtype=np.float64).reshape(-1, 3)
    r = np.asarray(cap_r, dtype=np.float64)
    reach = 0.5 * np.linalg.norm(b - a, axis=-1) + r
    lowered = (
        np.asarray([b for _, (_, b), _, _ in vec], dtype=np.intp),
        np.ascontiguousarray(
            np.stack([g for _, _, g, _ in vec], axis=1) if vec else np.zeros((frames, 0, 3))
        ),
        np.asarray([w for *_, w in vec], dtype=np.float64),
        np.asarray([p for _, p, _, _ in ori], dtype=np.intp),
        np.ascontiguousarray(
            np.stack([g for _, _, g, _ in ori], axis=1) if ori else np.zeros((frames, 0, 4))
        ),
        np.asarray([w for *_, w in ori], dtype=np.float64),
        np.concatenate([p for _, p, _, _ in ground] or [np.zeros(0)]).astype(np.intp),
        np.ascontiguousarray(
            np.concatenate([c for _, _, c, _ in ground], axis=1)
            if ground
            else np.zeros((frames, 0))
        ),
        float(floor or 0.0),
        np.concatenate([np.full(len(p), w) for _, p, _, w in ground] or [np.zeros(0)]),
        np.concatenate(
            [np.full(len(p), i in hard) for i, p, _, _ in ground] or [np.zeros(0)]
        ).astype(np.bool_),
        np.asarray(cap_joint, dtype=np.intp),
        a,
        b,
        r,
        reach,
        np.asarray(pairs, dtype=np.intp).reshape(-1, 2),
        np.asarray(margin, dtype=np.float64),
        np.asarray(col_w, dtype=np.float64),
        np.asarray(col_hard, dtype=np.bool_),
        np.asarray(lim_joint, dtype=np.intp),
        np.asarray(lim_side, dtype=np.intp),
        np.asarray(lim_bound, dtype=np.float64),
        np.asarray(lim_w, dtype=np.float64),
        np.asarray(lim_hard, dtype=np.bool_),
        np.asarray([a for _, (a, _), _, _ in vec], dtype=np.intp),
        np.ascontiguousarray(np.full(len(kind), np.inf) if rate is None else rate, np.float64),
        float(rate_weight),
        np.ascontiguousarray(np.zeros(len(kind)) if damping is None else damping, np.float64),
        hs_joint.astype(np.intp),
        hs_off,
        hs_w,
        hs_n,
        hs_level,
        hs_weight,
        hs_hard,
    )
    order = sorted(layout)  # by task index
    return lowered, [(k, start, size) for _, k, start, size in order]


def solve_ik_newton(
    skeleton: Skeleton,
    root_position: ArrayLike,
    rotations: ArrayLike,
    tasks: Sequence[Task],
    *,
    rigidity: ArrayLike | None = None,
    max_iterations: int = 20,
    first_iterations: int = 100,
    tolerance: float = 1e-9,
    hard: Sequence[int] = (),
    slack: float = np.inf,
    boosts: tuple[float, float] = (1e2, 1e4),
    start: ArrayLike | None = None,
    carry: bool = True,
    residuals: bool = False,
    predict: float = 0.0,
    pair_buffer: float = np.inf,
    near: float | None = None,
    near_angle: float = 1e-2,
    rate: ArrayLike | None = None,
    rate_weight: float = 1e5,
    damping: ArrayLike | None = None,
) -> NewtonResult:
    """Poses near the reference poses that meet the tasks, frame by frame (module docstring).

    Parameters
    ----------
    skeleton : Skeleton
    root_position : array_like, shape (F, 3)
        Reference root positions, one per frame (``x = 0``).
    rotations : array_like, shape (F, J, 4)
        Reference local rotations.
    tasks : sequence of Task
        Position, orientation, segment, ground (level floor), collision, joint-limit and
        half-space tasks,
        their goals per frame (F, ...) or constant; NaN: inactive.
    rigidity : array_like, shape (J + 1,), optional
        Diagonal of ``M`` (:func:`retarget.ik.numeric.default_rigidity`).
    max_iterations, first_iterations : int
        Gauss-Newton steps per frame at most; at the first frame (started from
        ``start``, not from a last frame).
    tolerance : float
        A frame stops when its last step moved no parameter by more than this
        (in ``√m_k`` units: radians for rigidity 1).
    hard : sequence of int
        Indices into ``tasks`` of inequality tasks made firmer where violated by
        more than ``slack`` (module docstring).
    start : array_like, shape (F, n) or (n,), optional
        The parameters each frame (or the first) starts from (default 0).
    carry : bool
        Start each frame from the last frame's parameters (else from ``start``).
    residuals : bool
        Return every task's residual at the result.
    predict : float
        With ``carry``: start each frame from the last one's parameters plus this share
        of the last frame's change (1: extrapolated linearly).
    pair_buffer : float
        The pairs of a collision task looked at in a frame: those within this distance
        of touching at its start (skeleton unit; default all).
    near, near_angle : float
        Inequality rows satisfied by less than this (skeleton unit; radians for joint
        limits) shape the Gauss-Newton steps (:mod:`retarget.ik._kernels.newton`,
        ``_evaluate``); default a hundredth of the mean bone length.
    rate : array_like, shape (J,), optional
        Per joint, the most a hinge may turn from one frame to the next (rad/frame;
        ``inf``: free): two inequality rows a hinge from the last frame's result, at
        ``rate_weight`` (1/rad²). Causal, as the solve: a velocity limit the other
        joints work around, where clipping the angles afterwards would only slow the
        hinge.
    damping : array_like, shape (J,), optional
        Per joint, ``½ damping_j (x_f − x_{f−1})²`` added to the objective for the
        change of a hinge's correction from the last frame's result (1/rad²; 0: none;
        the reference's own change is left free, a cut passes): where the tasks leave
        a hinge free to swing between two near-equal poses (an upper-arm yaw against a
        forearm twist), it keeps the last frame's rather than alternating.
    """
    rot = np.ascontiguousarray(np.asarray(rotations, dtype=np.float64))
    root = np.ascontiguousarray(np.asarray(root_position, dtype=np.float64))
    n_joints = skeleton.num_joints
    if rot.ndim != 3 or rot.shape[1:] != (n_joints, 4):
        raise ValueError(f"Expected `rotations` of shape (F, {n_joints}, 4), got {rot.shape}")
    frames = rot.shape[0]
    if root.shape != (frames, 3):
        raise ValueError(f"Expected `root_position` of shape ({frames}, 3), got {root.shape}")
    if not (np.isfinite(rot).all() and np.isfinite(root).all()):
        raise ValueError("The reference pose contains NaN or infinite values")
    rot = rot / np.linalg.norm(rot, axis=-1, keepdims=True)
    m = _check_rigidity(skeleton, rigidity)
    if near is None:  # a hundredth of the mean bone (default_rigidity's length scale)
        near = 1e-2 / np.sqrt(default_rigidity(skeleton)[0])
    skel = _joints(skeleton, m, rot[0] if frames else np.tile([1.0, 0, 0, 0], (n_joints, 1)))
    flat = [t.flatten_batch((frames,)) if t.batch_shape else t for t in tasks]
    speed = np.full(n_joints, np.inf) if rate is None else np.asarray(rate, dtype=np.float64)
    if speed.shape != (n_joints,) or (speed < 0).any():
        raise ValueError(f"Expected `rate` of {n_joints} values >= 0, got {speed.shape}")
    damp = np.zeros(n_joints) if damping is None else np.asarray(damping, dtype=np.float64)
    if damp.shape != (n_joints,) or (damp < 0).any() or not np.isfinite(damp).all():
        raise ValueError(f"Expected `damping` of {n_joints} finite values >= 0, got {damp.shape}")
    lowered, layout = _lower(flat, frames, skel[3], set(hard), speed, rate_weight, damp)
    n = len(skel[7])
    theta_ref = np.zeros((frames, n_joints))
    hinges = np.flatnonzero(skel[3] == _HINGE)
    if len(hinges) and (len(lowered[20]) or np.isfinite(speed).any() or damp.any()):
        q = rot[:, hinges]
        along = np.einsum("fhc,hc->fh", q[..., 1:], skel[5][hinges])
        theta_ref[:, hinges] = np.angle(np.exp(2j * np.arctan2(along, q[..., 0])))
    p0 = np.zeros((frames, n)) if start is None else np.asarray(start, dtype=np.float64)
    p0 = np.ascontiguousarray(np.broadcast_to(p0, (frames, n)))
    settings = np.array(
        [
            max_iterations,
            first_iterations,
            tolerance,
            slack,
            *boosts,
            float(carry),
            predict,
            pair_buffer,
            near,
            near_angle,
        ],
        dtype=float,
    )
    root_out = np.empty((frames, 3))
    rot_out = np.empty((frames, n_joints, 4))
    p_out = np.empty((frames, n))
    info = np.zeros((frames, 5))
    total_rows = sum(size for _, _, size in layout)
    res = np.zeros((frames, total_rows) if residuals else (0, 0))
    if frames:
        _kernel().solve_frames(
            skel, lowered, root, rot, theta_ref, p0, settings, root_out, rot_out, p_out, info, res
        )
    task_residuals = None
    if residuals:
        task_residuals = []
        spans = iter(layout)
        for t in flat:
            if t.weight == 0.0 or t.size == 0:
                task_residuals.append(np.zeros((frames, t.size)))
                continue
            _, first, size = next(spans)
            task_residuals.append(res[:, first : first + size].copy())
    return NewtonResult(
        root_position=root_out,
        rotations=rot_out,
        x=p_out,
        iterations=info[:, 0].astype(np.int64),
        objective=info[:, 1],
        penalty=info[:, 2],
        boosted=info[:, 3].astype(np.int64),
        hard_violation=info[:, 4],
        task_residuals=task_residuals,
        columns=skel[4],
    )
