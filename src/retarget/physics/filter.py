"""The physically based motion retargeting filter (Tak & Ko 2005, §§3–6).

One *filter application* is a per-frame unscented Kalman stage (§5, eqs.
12–16, :func:`retarget.filters.ukf.unscented_update`) followed, for dynamic
applications, by the least-squares B-spline filter (§6, eqs. 17–19,
:func:`retarget.filters.lsq.lsq_filter`). Applications run in any sequence:
``"2D+1K"`` is two dynamic applications then a kinematic one (Table I).

* **State** (§5.2): the displacement of ``(q, q̇, q̈)`` from the frame's prior,
  in the library's tangent space (DESIGN.md): root translation in metres,
  one rotation vector per joint applied on the right, ``q ⊗ exp(v)``, and the
  rates of both (``q̇ = q ⊗ (0, ω/2)``). The prior is the motion being
  filtered — the source, a kinematic hint, or the previous application's
  result — with its rates by finite differences
  (:func:`retarget.physics.dynamics.motion_rates`); the prior covariance is
  ``diag(V_pos, α V_pos, α² V_pos)`` (eq. 12) with §7's guidelines
  (``V_pos = 1e-9``, ``α = 10``). A kinematic application's state holds
  positions only (footnote 3).
* **Degrees of freedom**: kinematic applications move every joint, dynamic
  ones the root and the joints of :func:`dynamic_joints` (the paper leaves
  out wrists, elbows, ankles and neck: 27 DOF on lafan_walk.bvh). Joints no
  active constraint depends on are left out of the state: with the paper's
  ``κ = 3 − n`` their sigma points would reproduce the mean and change
  neither the predicted measurement nor the gain (§5.3), so the result is
  the same, faster.
* **Constraints** (§4), each switchable, rows normalised (height, limit,
  weight) so that one ridge fits all:

  - kinematic (eq. 4): points at position goals (footplants, user goals) —
    :class:`~retarget.tasks.PositionTask` residuals (the one task contract);
  - balance (eqs. 6–8): the ZMP of the state, analytic in ``(q, q̇, q̈)``, at
    the prior's ZMP projected onto the support polygon
    (:mod:`retarget.physics.support`), on support frames;
  - torque limits (eqs. 9–10): the magnitude of a joint's torque (a ball
    joint's three components as one, by the recursive Newton–Euler algorithm
    with Ko & Badler's split of the ground's wrench between the feet) at the
    limit, on frames where the prior exceeds it — elsewhere the row is off
    (the paper's goal there is the torque itself, which would freeze it);
  - momentum (eq. 11, read as ``Ṗ = m g``, ``L̇_c = 0``): the environment's
    wrench zero, in flight.

* **Form of dynamic applications**: by default (``FilterSettings.form =
  "curve"``) a dynamic application is :func:`retarget.physics.curve.curve_update`:
  the same constraints and Kalman update with the B-spline's control points as
  the state, legs by analytic IK (a departure, see that module and
  ``docs/architecture.md``); ``form="paper"`` runs §§5–6 as printed, below.
* **Least-squares filter** after each dynamic Kalman stage (``form="paper"``) on the moved
  DOFs: root translation, and the four components of each moved quaternion
  with their first two derivatives, renormalised (§6); ``β = 0.1`` and a
  knot every 4 frames (§7, Table I).

* **One BLAS thread**: the filter's linear algebra is many small dense
  products and one banded Cholesky (~4000 × 135) per Gauss–Newton step;
  OpenBLAS's threads cost more to wake and join than they save at that size
  (a 600-frame dynamic application on two cores: 1.8 s threaded, 0.9 s on
  one), so :func:`physics_filter` runs with BLAS limited to one thread
  (``threadpoolctl``; restored on return). Parallelism is across clips
  (:mod:`retarget.pipeline.batch`), not inside one.

The report gives, for the source and after each application, the share of
support frames whose ZMP (of the positions, by finite differences) leaves
the support polygon, the torque-limit violations, the momentum residual in
flight, the kinematic error and the centre-of-mass shift from the source.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from ..core import quat
from ..core.arrays import Array, runs
from ..core.errors import RetargetError
from ..core.kinematics import Pose, forward_kinematics, positions
from ..core.motion import Motion, oplus, oplus_joints
from ..core.result import Result
from ..filters.lsq import lsq_filter
from ..filters.ukf import unscented_update
from ..humanoid.contacts import Contacts
from ..humanoid.roles import Roles, find_roles, height
from ..ik.limb import limb_from_roles
from ..tasks import PositionTask
from .body import Body
from .curve import CurveGoals, curve_update
from .dynamics import (
    body_motion,
    center_of_mass,
    environment_wrench,
    inverse_dynamics,
    motion_rates,
    zmp,
)
from .support import Support, support_polygons
from .tasks import DynamicState, DynamicTask, MomentumTask, TorqueTask, ZMPTask

__all__ = [
    "FilterSetting",
    "FilterSettings",
    "GoalRows",
    "PhysicsGoals",
    "dynamic_joints",
    "footplant_goals",
    "goal_rows",
    "joint_ancestors",
    "kalman_stage",
    "parse_passes",
    "physics_curves",
    "physics_filter",
    "physics_measures",
]


_PASS = re.compile(r"^(\d*)([KD])$")


def parse_passes(text: str) -> tuple[str, ...]:
    """``"1K+3D+1K"`` → ``("K", "D", "D", "D", "K")`` (Table I's notation)."""
    out: list[str] = []
    for part in str(text).replace(" ", "").upper().split("+"):
        m = _PASS.match(part)
        if not m:
            raise RetargetError(
                f"expected filter passes like 1K+3D+1K (a count, then K or D), got {text!r}"
            )
        out += [m.group(2)] * int(m.group(1) or 1)
    return tuple(out)


@dataclass(frozen=True)
class PhysicsGoals:
    """What the filter enforces.

    Attributes
    ----------
    contacts : Contacts
        Foot contacts: the support polygons, and flight where none.
    positions : mapping of point index to ndarray (F, 3)
        Kinematic goals in the skeleton's unit, NaN rows where free.
    balance : bool
        ZMP inside the support polygon on support frames.
    torque_limits : mapping of joint index to float
        N m, on the magnitude of the joint's torque.
    momentum : bool
        ``Ṗ = m g`` and ``L̇ = 0`` in flight.
    """

    contacts: Contacts
    positions: Mapping[int, Array] = field(default_factory=dict)
    balance: bool = True
    torque_limits: Mapping[int, float] = field(default_factory=dict)
    momentum: bool = True


@dataclass(frozen=True)
class FilterSettings:
    """Filter parameters (§7's guidelines by default).

    Attributes
    ----------
    position_variance : float
        ``V_x,pos`` (eq. 12); ``V_x,vel = α V_x,pos``, ``V_x,acc = α² V_x,pos``.
    alpha : float
    kappa : float or None
        Sigma-point spread (default ``3 − n``).
    spacing : float
        Frames per knot of the least-squares filter.
    beta : float
        ``W = diag(I, β I, β² I)`` (eq. 18).
    window : int or None
        Sliding window of the least-squares filter (frames; None: global).
    joints : tuple of int or None
        The joints dynamic applications move (default :func:`dynamic_joints`).
    margin : float
        Balance goals this far inside the support polygon (share of height;
        2 %, 3.4 cm on a 1.7 m body: the ZMP of a frame depends on its
        neighbours, and next to a change of support some room keeps it inside
        the polygon on both sides; wide steps after 2D: 0.8 % of support
        frames outside, 4.2 % with 1.5 %, 14.6 % with 0.8 %).
    iterations : int
        Kalman updates per frame and application, each linearised about the
        last (the iterated UKF; 1 is the paper's single update).
    noise : float
        ``N_z`` of the first of several iterations (constraint rows normalised
        by height, limit or weight), divided by 10 at each next one and zero
        at the last: §7's soft start for goals far from the prior.
    chunk : int
        Frames per batch of the Kalman stage (memory: chunk × sigma points ×
        joints). Larger is not faster: past ~50 frames the batch's temporaries
        are returned to the system and faulted back in on every call (1K on
        600 frames: 7,600 frames/s at 48, 3,600 at 96).
    form : {"curve", "paper"}
        How dynamic applications run: ``"curve"`` (default) updates the control
        points of one B-spline displacement with the legs solved analytically
        (:mod:`retarget.physics.curve`, a departure: the paper's form does not
        converge on captured motion); ``"paper"`` is §§5–6 as printed (per-frame
        Kalman stage on independent ``q, q̇, q̈``, then the least-squares filter).
    curve_iterations : int
        Gauss–Newton relinearisations per curve application.
    reach_weight : float
        Weight of the legs' reach residual against the dynamic rows in curve
        applications (a share of height against a share of the body's weight).
    tolerance : float
        Kinematic applications leave a goal alone on frames where its point is
        already this close (share of height): re-solving a met goal per frame
        only adds frame-to-frame noise, which the ZMP amplifies.
    """

    position_variance: float = 1e-9
    alpha: float = 10.0
    kappa: float | None = None
    spacing: float = 4.0
    beta: float = 0.1
    window: int | None = 64
    joints: tuple[int, ...] | None = None
    margin: float = 0.02
    chunk: int = 48
    iterations: int = 3
    noise: float = 0.0
    form: str = "curve"
    curve_iterations: int = 12
    reach_weight: float = 10.0
    tolerance: float = 1e-3


def dynamic_joints(roles: Roles) -> tuple[int, ...]:
    """The joints of dynamic filtering: hips, knees, the middle spine joint and
    shoulders (the paper's 27 DOF with the root: wrists, elbows, ankles, neck out)."""
    names = ("left_hip", "right_hip", "left_knee", "right_knee", "left_shoulder", "right_shoulder")
    out = [int(roles.points[n]) for n in names if n in roles.points]
    if roles.spine:
        out.append(int(roles.spine[len(roles.spine) // 2]))
    return tuple(sorted(set(out)))


# --------------------------------------------------------------------------------------
# measures
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class FilterSetting:
    """Everything about the clip that does not change within an application."""

    body: Body
    goals: PhysicsGoals
    roles: Roles
    height: float  # skeleton unit


def _support(s: FilterSetting, motion: Motion) -> Support:
    """The support polygons where the goals put the feet: a foot point with a goal on
    it, the foot's other points moved with it (by the mean offset of its points with
    goals), the others where ``motion`` has them."""
    pos = np.array(positions(motion))
    for side in ("left", "right"):
        foot = [
            int(p)
            for p in (s.roles.points.get(f"{side}_{r}") for r in ("ankle", "toe", "toe_tip"))
            if p is not None
        ]
        offsets = np.array(
            [s.goals.positions.get(p, np.full((len(pos), 3), np.nan)) - pos[:, p] for p in foot]
        )
        have = np.isfinite(offsets).all(axis=2)  # (P, F)
        count = have.sum(axis=0)
        shift = np.where(have[..., None], offsets, 0.0).sum(axis=0) / np.maximum(count, 1)[:, None]
        for k, p in enumerate(foot):
            pos[:, p] = np.where(have[k][:, None], pos[:, p] + offsets[k], pos[:, p] + shift)
    return support_polygons(pos, s.goals.contacts, s.roles, s.height, s.body.metres)


def _torque_norms(s: FilterSetting, motion: Motion, shares: Array) -> Array:
    """(F, L): torque magnitudes of the limited joints, N m."""
    joints = list(s.goals.torque_limits)
    if not joints:
        return np.zeros((len(motion), 0))
    v, a, w, wd = motion_rates(motion, s.body.metres)
    _, _, tau = inverse_dynamics(
        s.body, motion.root_position * s.body.metres, motion.rotations, v, w, a, wd, shares=shares
    )
    return np.asarray(np.linalg.norm(tau[:, joints], axis=-1))


def physics_measures(
    body: Body, goals: PhysicsGoals, motion: Motion, reference: Motion | None = None
) -> dict[str, Any]:
    """The report's measures of a motion (module docstring); JSON-serialisable.

    Keys: ``support_frames``, ``zmp_outside`` (share of support frames),
    ``zmp_distance_max`` (metres outside at worst), ``flight_frames``,
    ``momentum_force`` and ``momentum_moment`` (mean in flight of ``|Ṗ − m g|``
    in N and ``|L̇_c|`` in N m), ``torque`` (per limited joint: limit, peak,
    frames over the limit, worst ratio and, with ``reference``, ``change_max``,
    the largest turn of the joint from the reference's, degrees),
    ``kinematic_error_max`` and
    ``kinematic_error_mean`` (% of height), ``com_shift_max`` (% of height,
    horizontal, from ``reference``).
    """
    s = FilterSetting(body, goals, find_roles(body.skeleton), height(body.skeleton))
    support = _support(s, motion)
    point, _ = zmp(body, motion)
    flight = support.flight
    on = ~flight
    dist = support.distance(point)
    outside = on & ~(dist <= 1e-6)
    out: dict[str, Any] = {
        "support_frames": int(on.sum()),
        "zmp_outside": float(outside.sum() / max(on.sum(), 1)),
        "zmp_distance_max": float(np.nanmax(np.where(on, dist, np.nan))) if on.any() else 0.0,
        "flight_frames": int(flight.sum()),
    }
    if flight.any():
        v, a, w, wd = motion_rates(motion, body.metres)
        bm = body_motion(body, motion.root_position, motion.rotations, v, w, a, wd)
        force, moment, _ = environment_wrench(body, bm)
        out["momentum_force"] = float(np.linalg.norm(force[flight], axis=-1).mean())
        out["momentum_moment"] = float(np.linalg.norm(moment[flight], axis=-1).mean())
    if goals.torque_limits:
        norms = _torque_norms(s, motion, support.shares(point, s.body.skeleton.num_joints))
        torque = {}
        for k, (j, limit) in enumerate(goals.torque_limits.items()):
            torque[body.skeleton.names[j]] = {
                "limit": float(limit),
                "peak": float(norms[:, k].max()),
                "frames_over": int((norms[:, k] > limit).sum()),
                "worst_ratio": float(norms[:, k].max() / limit),
            }
            if reference is not None:  # how the joint's motion changed to respect it
                turn = quat.angle(reference.rotations[:, j], motion.rotations[:, j])
                torque[body.skeleton.names[j]]["change_max"] = float(np.degrees(turn.max()))
        out["torque"] = torque
    if goals.positions:
        pos = positions(motion)
        errs = [
            np.linalg.norm(
                pos[np.isfinite(g).all(axis=1), p] - g[np.isfinite(g).all(axis=1)], axis=1
            )
            for p, g in goals.positions.items()
        ]
        e = np.concatenate(errs) * 100.0 / s.height if errs else np.zeros(0)
        out["kinematic_error_max"] = float(e.max()) if len(e) else 0.0
        out["kinematic_error_mean"] = float(e.mean()) if len(e) else 0.0
    if reference is not None:
        shift = center_of_mass(body, motion) - center_of_mass(body, reference)
        out["com_shift_max"] = float(
            np.linalg.norm(shift[:, [0, 2]], axis=1).max() * 100.0 / (s.height * body.metres)
        )
    return out


def physics_curves(body: Body, goals: PhysicsGoals, motion: Motion) -> dict[str, Any]:
    """Per-frame series for plots (JSON lists; None where undefined).

    Keys: ``zmp_outside`` (metres outside the support polygon, 0 inside, None
    in flight), ``flight`` (bools), ``momentum_force`` (N, in flight),
    ``momentum_moment`` (N m, in flight), ``torque`` (joint name → N m).
    """
    s = FilterSetting(body, goals, find_roles(body.skeleton), height(body.skeleton))
    support = _support(s, motion)
    point, _ = zmp(body, motion)
    flight = support.flight
    v, a, w, wd = motion_rates(motion, body.metres)
    bm = body_motion(body, motion.root_position, motion.rotations, v, w, a, wd)
    force, moment, _ = environment_wrench(body, bm)

    def listed(x: Array, on: NDArray[np.bool_]) -> list[float | None]:
        return [float(v) if o and np.isfinite(v) else None for v, o in zip(x, on, strict=True)]

    out: dict[str, Any] = {
        "zmp_outside": listed(support.distance(point), ~flight),
        "flight": [bool(f) for f in flight],
        "momentum_force": listed(np.linalg.norm(force, axis=-1), flight),
        "momentum_moment": listed(np.linalg.norm(moment, axis=-1), flight),
    }
    if goals.torque_limits:
        norms = _torque_norms(s, motion, support.shares(point, s.body.skeleton.num_joints))
        out["torque"] = {
            body.skeleton.names[j]: [float(x) for x in norms[:, k]]
            for k, j in enumerate(goals.torque_limits)
        }
    return out


# --------------------------------------------------------------------------------------
# one application
# --------------------------------------------------------------------------------------
def joint_ancestors(skeleton: Any, points: Sequence[int]) -> set[int]:
    """The joints that move ``points`` (joints or end sites): each one's joint and every
    joint above it."""
    out: set[int] = set()
    for p in points:
        j = int(skeleton.point_parents[p]) if p >= skeleton.num_joints else int(p)
        while j >= 0 and j not in out:
            out.add(j)
            j = int(skeleton.parents[j])
    return out


@dataclass(frozen=True, eq=False)
class GoalRows:
    """The constraint goals of one application, per frame, normalised."""

    kinematic: list[tuple[int, Array]]  # (point, goal (F, 3)) skeleton units
    balance: Array | None  # (F, 2) metres, NaN off
    torque: Array | None  # (F, L) N m, NaN off
    flight: NDArray[np.bool_] | None  # (F,) momentum rows on
    shares: Array  # (F, J)
    support: Support | None = None  # dynamic applications


def _measurement(
    s: FilterSetting,
    rows: GoalRows,
    root0: Array,
    rot0: Array,
    qd0: Array,
    qdd0: Array,
    fr: slice,
    moved: NDArray[np.intp],
    dynamic: bool,
) -> Callable[[Array], Array]:
    """The constraint function of frames ``fr`` (eqs. 4, 6, 9, 11), normalised rows.

    ``root0, rot0, qd0, qdd0``: the frames' prior pose and rates; the state
    ``x`` (B, m, n or 3n) displaces the root and the ``moved`` joints (and, for
    dynamic applications, their rates). Returns z (B, m, rows).
    """
    sk = s.body.skeleton
    n_j = sk.num_joints
    metres = s.body.metres
    cols = np.concatenate(
        [np.arange(3), 3 + 3 * np.repeat(moved, 3) + np.tile(np.arange(3), len(moved))]
    )
    n = len(cols)
    h_m = s.height * metres
    # the dynamic tasks, in the order of the goals' columns (see kalman_stage)
    physical: list[DynamicTask] = []
    if rows.balance is not None:
        physical.append(ZMPTask(scale=h_m))
    if rows.torque is not None:
        physical.append(TorqueTask(limits=s.goals.torque_limits))
    if rows.flight is not None:
        physical.append(MomentumTask(scale=h_m))
    # a kinematic application reads the goals' points only: FK of their chains
    # (the state's joints are theirs, see kalman_stage), not of the whole body
    points = [p for p, _ in rows.kinematic]
    frame, kept = (sk, np.arange(n_j)) if dynamic or not points else sk.restricted(points)
    tasks = [(frame.index(sk.point_names[p]), g[fr][:, None]) for p, g in rows.kinematic]
    # the state's joints on the goals' chains turn (the others cannot move a goal point:
    # a frame where a foot has no goal, in an application whose state has its joints)
    inside = np.isin(moved, kept)
    turned = np.searchsorted(kept, moved[inside])
    rest = rot0[:, kept]

    def measure(x: Array) -> Array:
        b, m = x.shape[:2]
        root = root0[:, None] + x[..., :3] / metres
        turns = x[..., 3:n].reshape(b, m, len(moved), 3)
        rot = oplus_joints(rest[:, None], turns if inside.all() else turns[:, :, inside], turned)
        pose = Pose.of(frame, root, rot)
        parts = [PositionTask(p, g).residual(pose) / s.height for p, g in tasks]
        if dynamic and physical:
            qd = np.broadcast_to(qd0[:, None], (b, m, 3 + 3 * n_j)).copy()
            qdd = np.broadcast_to(qdd0[:, None], (b, m, 3 + 3 * n_j)).copy()
            qd[..., cols] += x[..., n : 2 * n]
            qdd[..., cols] += x[..., 2 * n :]
            state = DynamicState(
                s.body,
                root,
                rot,
                qd[..., :3],
                qd[..., 3:].reshape(b, m, n_j, 3),
                qdd[..., :3],
                qdd[..., 3:].reshape(b, m, n_j, 3),
                shares=rows.shares[fr][:, None],
            )
            parts += [task.residual(state) for task in physical]
        return np.concatenate(parts, axis=-1)

    return measure


def kalman_stage(
    s: FilterSetting,
    prior: Motion,
    rows: GoalRows,
    joints: Sequence[int],
    dynamic: bool,
    st: FilterSettings,
    only: slice | None = None,
) -> tuple[Motion, Array, Array]:
    """The Kalman stage over every frame (or the frames ``only``, the others left as
    the prior has them); returns the motion and its posterior rates ``q̇, q̈``
    (F, 3 + 3J) (the prior's where the state does not reach)."""
    sk = s.body.skeleton
    n_j = sk.num_joints
    metres = s.body.metres
    moved = np.asarray(joints, dtype=np.intp)
    cols = np.concatenate(
        [np.arange(3), 3 + 3 * np.repeat(joints, 3) + np.tile(np.arange(3), len(joints))]
    )
    n = len(cols)
    width = 3 * n if dynamic else n
    var = np.full(width, st.position_variance)
    if dynamic:
        var[n : 2 * n] *= st.alpha
        var[2 * n :] *= st.alpha**2
    cov = np.diag(var)
    v0, a0, w0, wd0 = motion_rates(prior, metres)
    qd0 = np.concatenate([v0, w0.reshape(len(prior), -1)], axis=1)
    qdd0 = np.concatenate([a0, wd0.reshape(len(prior), -1)], axis=1)
    limited = list(s.goals.torque_limits)
    limits = np.array([s.goals.torque_limits[j] for j in limited])
    h_m = s.height * metres

    goal_parts: list[Array] = []
    for _, g in rows.kinematic:
        goal_parts.append(np.where(np.isfinite(g), 0.0, np.nan))
    if rows.balance is not None:
        goal_parts.append(rows.balance / h_m)
    if rows.torque is not None:
        goal_parts.append(rows.torque / limits)
    if rows.flight is not None:
        goal_parts.append(np.where(rows.flight[:, None], 0.0, np.nan) * np.ones((1, 6)))
    if not goal_parts:  # nothing to enforce
        return prior, qd0, qdd0
    goal_all = np.concatenate(goal_parts, axis=1)

    num = len(prior)
    out_root = np.array(prior.root_position)
    out_rot = np.array(prior.rotations)
    out_qd, out_qdd = qd0.copy(), qdd0.copy()
    first, stop = (0, num) if only is None else (only.start, only.stop)
    for start in range(first, stop, st.chunk):
        fr = slice(start, min(start + st.chunk, stop))
        root0, rot0 = prior.root_position[fr], prior.rotations[fr]
        measure = _measurement(s, rows, root0, rot0, qd0[fr], qdd0[fr], fr, moved, dynamic)
        goal = goal_all[fr]
        active = np.asarray(np.isfinite(goal).any(axis=1))
        if not active.any():
            continue
        x = np.zeros((fr.stop - fr.start, width))
        m_rows = goal.shape[1]
        for it in range(st.iterations):
            last = it == st.iterations - 1
            noise = None if last or not st.noise else st.noise * 0.1**it * np.eye(m_rows)
            x = unscented_update(
                np.zeros_like(x), cov, measure, goal, noise, kappa=st.kappa, at=x
            ).mean
        x = np.where(active[:, None], x, 0.0)
        dq = np.zeros((len(x), 3 + 3 * n_j))
        dq[:, cols] = x[:, :n]
        dq[:, :3] /= metres
        out_root[fr], out_rot[fr] = oplus(root0, rot0, dq)
        if dynamic:
            out_qd[fr][:, cols] += x[:, n : 2 * n]
            out_qdd[fr][:, cols] += x[:, 2 * n :]
    motion = prior.replace(root_position=out_root, rotations=quat.normalize(out_rot))
    return motion, out_qd, out_qdd


def _least_squares(
    motion: Motion, qd: Array, qdd: Array, joints: Sequence[int], st: FilterSettings, metres: float
) -> Motion:
    """§6 on the moved DOFs: root translation and quaternion components, renormalised."""
    fps = motion.fps
    n_j = motion.skeleton.num_joints
    root = motion.root_position * metres
    fit_root = lsq_filter(
        root, qd[:, :3], qdd[:, :3], fps, spacing=st.spacing, beta=st.beta, window=st.window
    )
    rot = np.array(motion.rotations)
    moved = [0, *[j for j in joints if j != 0]]
    q = quat.unroll(rot[:, moved])  # one hemisphere along time: components fit as curves
    w = qd[:, 3:].reshape(-1, n_j, 3)[:, moved]
    wd = qdd[:, 3:].reshape(-1, n_j, 3)[:, moved]
    half = np.concatenate([np.zeros((*w.shape[:-1], 1)), 0.5 * w], axis=-1)
    half_d = np.concatenate([np.zeros((*wd.shape[:-1], 1)), 0.5 * wd], axis=-1)
    dq = quat.multiply(q, half)
    ddq = quat.multiply(q, quat.multiply(half, half) + half_d)
    f = len(q)
    fitted, _, _ = lsq_filter(
        q.reshape(f, -1),
        dq.reshape(f, -1),
        ddq.reshape(f, -1),
        fps,
        spacing=st.spacing,
        beta=st.beta,
        window=st.window,
    )
    rot[:, moved] = quat.normalize(fitted.reshape(q.shape))
    return motion.replace(root_position=fit_root[0] / metres, rotations=rot)


def goal_rows(s: FilterSetting, prior: Motion, dynamic: bool, st: FilterSettings) -> GoalRows:
    """The goals of one application from its prior (eqs. 4, 7, 9, 11)."""
    g = s.goals
    kinematic = [(p, goal) for p, goal in g.positions.items() if np.isfinite(goal).any()]
    if not dynamic:  # goals already met within the tolerance are left alone
        pos = positions(prior)
        met = [
            np.linalg.norm(pos[:, p] - goal, axis=1) <= st.tolerance * s.height
            for p, goal in kinematic
        ]
        kinematic = [
            (p, np.where(m[:, None], np.nan, goal))
            for (p, goal), m in zip(kinematic, met, strict=True)
        ]
        return GoalRows(kinematic, None, None, None, np.zeros((len(prior), 0)))
    support = _support(s, prior)
    point, _ = zmp(s.body, prior)
    shares = support.shares(point, s.body.skeleton.num_joints)
    balance = torque = flight = None
    if g.balance:
        balance = support.project(point, st.margin * s.height * s.body.metres)
    if g.torque_limits:
        norms = _torque_norms(s, prior, shares)
        limits = np.array(list(g.torque_limits.values()))
        torque = np.where(norms > limits, limits, np.nan)
        if not np.isfinite(torque).any():
            torque = None
    if g.momentum and support.flight.any():
        flight = support.flight
    return GoalRows(kinematic, balance, torque, flight, shares, support)


def _curve_goals(s: FilterSetting, prior: Motion, rows: GoalRows, st: FilterSettings) -> CurveGoals:
    """The goals of a dynamic application on one curve (:mod:`retarget.physics.curve`)."""
    sk = s.body.skeleton
    _, world = forward_kinematics(sk, prior.root_position, prior.rotations)
    pos = positions(prior)
    legs = []
    for side in ("left", "right"):
        key = f"{side}_ankle"
        if key not in s.roles.points:
            continue
        ankle = int(s.roles.points[key])
        implied = [  # the ankle where each planted foot point puts it, the foot held
            s.goals.positions[p] - (pos[:, p] - pos[:, ankle])
            for p in (s.roles.points.get(f"{side}_{r}") for r in ("ankle", "toe", "toe_tip"))
            if p is not None and p in s.goals.positions
        ]
        if not implied or not np.isfinite(implied).any():
            continue
        stacked = np.array(implied)  # (P, F, 3)
        planted = np.isfinite(stacked).all(axis=2, keepdims=True)
        count = planted.sum(axis=0)  # (F, 1)
        total = np.where(planted, stacked, 0.0).sum(axis=0)
        goal = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        limb = limb_from_roles(sk, s.roles.points, side, "leg", prior)
        held = np.isfinite(goal).all(axis=1, keepdims=True)
        legs.append((limb, goal, np.where(held, world[:, ankle], np.nan)))
    g = s.goals
    return CurveGoals(
        legs,
        rows.support if rows.support is not None else _support(s, prior),
        balance=g.balance,
        torque_limits=dict(g.torque_limits),
        momentum=g.momentum and rows.flight is not None,
        margin=st.margin * s.height * s.body.metres,
    )


@threadpool_limits.wrap(limits=1, user_api="blas")
def physics_filter(
    source: Motion,
    body: Body,
    goals: PhysicsGoals,
    passes: str | Sequence[str] = "2D+1K",
    settings: FilterSettings | None = None,
    *,
    hint: Motion | None = None,
) -> Result:
    """Tak & Ko's retargeting filter: ``passes`` applications of it to ``source``.

    Parameters
    ----------
    source : Motion
        On ``body.skeleton``.
    body : Body
        The mass model (:func:`retarget.physics.body_model`), loads included.
    goals : PhysicsGoals
    passes : str or sequence of "K"/"D"
        ``"1K+3D+1K"`` (:func:`parse_passes`).
    settings : FilterSettings, optional
    hint : Motion, optional
        A kinematic hint (§7): a rough edit that replaces the source as the
        first application's prior; the report still measures from ``source``.

    Returns
    -------
    Result
        ``report["stages"]``: ``[{"stage": "source", ...}, {"stage": "1D", ...}, …]``
        with :func:`physics_measures` of each, and per application its time,
        DOF count and active constraint rows.
    """
    st = settings or FilterSettings()
    sequence = parse_passes(passes) if isinstance(passes, str) else tuple(passes)
    if source.skeleton is not body.skeleton and source.skeleton.names != body.skeleton.names:
        raise RetargetError("the mass model was built for another skeleton")
    for p, goal in goals.positions.items():
        if np.shape(goal) != (len(source), 3):
            raise RetargetError(f"position goals of point {p} must have shape ({len(source)}, 3)")
    roles = find_roles(body.skeleton)
    s = FilterSetting(body, goals, roles, height(body.skeleton))
    joints_d = st.joints if st.joints is not None else dynamic_joints(roles)
    all_joints = tuple(range(body.skeleton.num_joints))
    stages: list[dict[str, Any]] = [{"stage": "source", **physics_measures(body, goals, source)}]
    motion = hint if hint is not None else source
    counts = {"K": 0, "D": 0}
    total = 0.0
    for kind in sequence:
        t0 = time.perf_counter()
        dynamic = kind == "D"
        rows = goal_rows(s, motion, dynamic, st)
        reach = [p for p, _ in rows.kinematic]
        if dynamic:
            chosen = [0, *(j for j in joints_d if j != 0)]
        else:  # only the joints some goal hangs from (the same result, see module docstring)
            chosen = sorted(joint_ancestors(body.skeleton, reach) | {0})
        if dynamic and st.form == "curve":
            filtered, _ = curve_update(
                body,
                motion,
                _curve_goals(s, motion, rows, st),
                chosen,
                spacing=st.spacing,
                iterations=st.curve_iterations,
                reach_weight=st.reach_weight,
            )
        else:
            filtered, qd, qdd = kalman_stage(
                s, motion, rows, [j for j in chosen if j in all_joints], dynamic, st
            )
            if dynamic:
                filtered = _least_squares(filtered, qd, qdd, chosen, st, body.metres)
        elapsed = time.perf_counter() - t0
        total += elapsed
        motion = filtered
        counts[kind] += 1
        label = f"{len(stages)}{kind}"
        stages.append(
            {
                "stage": label,
                "seconds": elapsed,
                "frames_per_second": len(motion) / max(elapsed, 1e-12),
                "dofs": 3 + 3 * len(chosen),
                "balance_frames": int(np.isfinite(rows.balance).all(axis=1).sum())
                if rows.balance is not None
                else 0,
                "torque_frames": int(np.isfinite(rows.torque).any(axis=1).sum())
                if rows.torque is not None
                else 0,
                "momentum_frames": int(rows.flight.sum()) if rows.flight is not None else 0,
                **physics_measures(body, goals, motion, source),
            }
        )
    report = {
        "method": "physics",
        "passes": "+".join(sequence),
        "total_mass": body.total_mass,
        "settings": {
            "position_variance": st.position_variance,
            "alpha": st.alpha,
            "spacing": st.spacing,
            "beta": st.beta,
            "window": st.window,
            "form": st.form,
            "dynamic_joints": [body.skeleton.names[j] for j in joints_d],
        },
        "seconds": total,
        "stages": stages,
        "torque_limits": {body.skeleton.names[j]: float(v) for j, v in goals.torque_limits.items()},
        "curves": {
            "source": physics_curves(body, goals, source),
            "result": physics_curves(body, goals, motion),
        },
    }
    names = body.skeleton.point_names
    goal_map = {names[p]: np.asarray(g) for p, g in goals.positions.items()}
    return Result(motion, report, goal_map)


def footplant_goals(
    source: Motion, contacts: Contacts, outward: float = 0.0, *, footprints: bool = False
) -> dict[int, Array]:
    """Position goals of the foot points.

    Without ``outward``: on each run of contact a foot point is held where
    the source has it (Tak & Ko's kinematic constraints come from the
    source: a rolling foot keeps rolling, heel to toe), swing frames free
    (NaN); with ``footprints`` each run holds the point at its mean position
    over the run instead (a fixed footprint: removes sliding, but asks a
    rolling foot to stay flat, and the ankle of a heel-off to stay down — on
    lafan_walk.bvh the source is 4.9 % of height off such goals). With
    ``outward`` (share of height), the paper's *wide steps* (§8): each foot's
    whole path is moved that far away from the body's midline, along the
    hips' left–right axis, so the foot keeps its shape; the shift is held
    over each stance of the foot (the axis at the stance's middle frame: a
    planted foot does not slide when the walker turns) and interpolated
    across each swing.

    Returns
    -------
    dict of point index to ndarray (F, 3)
        In the skeleton's unit.
    """
    roles = find_roles(source.skeleton)
    h = height(source.skeleton, roles)
    pos = positions(source)
    n = len(source)
    lateral = pos[:, roles.points["left_hip"]] - pos[:, roles.points["right_hip"]]
    lateral[:, 1] = 0.0
    lateral /= np.maximum(np.linalg.norm(lateral, axis=1, keepdims=True), 1e-12)
    goals: dict[int, Array] = {}
    for side in ("left", "right"):
        cols = [k for k, sd in enumerate(contacts.sides) if sd == side]
        if not outward:
            for k in cols:
                p = int(contacts.points[k])
                goal = np.full((n, 3), np.nan)
                for a, b in runs(contacts.mask[:, k]):
                    goal[a:b] = pos[a:b, p].mean(axis=0) if footprints else pos[a:b, p]
                goals[p] = goal
            continue
        sign = 1.0 if side == "left" else -1.0
        stances = runs(np.asarray(contacts.mask[:, cols].any(axis=1)))
        keys: list[float] = []
        held: list[Array] = []
        for a, b in stances:  # the axis at mid-stance, held from its first frame to its last
            keys += [float(a), float(b - 1)]
            held += [lateral[(a + b - 1) // 2]] * 2
        if not stances:
            keys, held = [0.0], [lateral[n // 2]]
        values = np.array(held)
        shift = np.stack([np.interp(np.arange(n), keys, values[:, d]) for d in range(3)], axis=1)
        shift /= np.maximum(np.linalg.norm(shift, axis=1, keepdims=True), 1e-12)
        shift *= sign * outward * h
        for k in cols:
            p = int(contacts.points[k])
            goals[p] = pos[:, p] + shift
    return goals
