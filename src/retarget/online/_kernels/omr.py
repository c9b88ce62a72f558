"""The compiled update of the online retargeter: one step of eq. (21) at one pose.

:class:`retarget.online.OnlineRetargeter` runs a recursion, each frame's pose
from the last one: the loop over frames is exactly what numpy cannot
vectorise, and its body works on arrays so small (a ~20 × 30 Jacobian, a few
quaternions) that numpy's overhead per call is nearly all of the time. Built
from task objects and numpy calls the update took ≈1.2 ms; compiled with numba
(``_update``) it takes ≈40 µs on the lower-body set-up (30 columns) and ≈80 µs
on the full body (69 columns).

Nothing here is new math. The kernel calls the library's compiled pieces:
forward kinematics and the tangent-space Jacobian
(:mod:`retarget.core._kernels.kinematics`), the quaternion
product, ``exp`` and ``log`` (:mod:`retarget.core.quat`), the left Jacobian of
SO(3) (:mod:`retarget.core.so3`) and the rate-control step
(:func:`retarget.ik._kernels.rate.rate_step_kernel`), and the quaternion steps shared with
the puppetry kernel (:mod:`retarget.core._kernels.quat4`). Its primary rows
(``_task_rows``) are those of :func:`retarget.tasks.stack` over
:class:`~retarget.tasks.PositionTask` (``p − goal``, a NaN component
inactive) and :class:`~retarget.tasks.OrientationTask`
(``log(W ⊗ goal⁻¹)``, ``J_l(r)⁻¹ J_ω``); ``tests/test_omr_kernel.py`` checks
them against ``stack`` on random poses, and the whole update against a numpy
evaluation.

The goals are compiled too (``_hold_weights``, ``_shape_goals``: the hold
weights of the feet and the goals tracked, beyond the paper, module
:mod:`retarget.online.omr`): done with numpy on arrays of seven rows they cost
≈0.3 ms a frame, more than the update; compiled, ≈5 µs.

Arrays (``K`` effectors, ``J`` joints, ``P`` points, ``A`` active joints):
the pose is held as batches of one, as the FK kernel writes it — ``root``
(1, 3), ``rot`` (1, J, 4), ``pos`` (1, P, 3), ``world`` (1, P, 4) — and
updated in place. Lengths are in the skeleton's unit on the way in and out,
in character heights inside (module :mod:`retarget.online.omr`).
"""

from __future__ import annotations

import numba
import numpy as np

from ...core._kernels.dofs import channel_basis, project
from ...core._kernels.kinematics import _fk_kernel, _jacobian_kernel
from ...core._kernels.quat import _product, _rotvec_from_wxyz, _wxyz_from_rotvec
from ...core._kernels.quat4 import ominus as _ominus
from ...core._kernels.quat4 import rotate as _rotate
from ...core._kernels.so3 import _coefficients_of, _matrix_entries
from ...ik._kernels.rate import rate_step_kernel

#: The core's compiled channel frames and forward kinematics that the retargeter's
#: Python side calls between updates (:class:`retarget.online.omr.OnlineRetargeter`).
__all__ = ["channel_basis", "project"]


@numba.njit(cache=True, nogil=True)
def _task_rows(
    pos, world, parents, num_joints, goals, orientations, layout, residual, jac, active
):  # pragma: no cover - jitted
    """The primary task's rows at one pose, as :func:`retarget.tasks.stack` gives them.

    ``layout`` is the tuple ``(pos_points, pos_effectors, pos_axes, ori_points,
    ori_effectors)`` of the rows (``OnlineRetargeter._layout``). Rows ``3i : 3i + 3``
    are ``PositionTask(pos_points[i], goal)`` with ``goal`` the effector's goal
    (``goals[pos_effectors[i]]``) on the axes of ``pos_axes[i]`` (bool, 3) and NaN off
    them; rows ``3 n_pos + 3i`` on are
    ``OrientationTask(ori_points[i], orientations[ori_effectors[i]])``.

    Writes ``residual`` (M,), ``jac`` (M, 3 + 3J) and ``active`` (M,), a row
    whose goal is NaN being inactive (residual 0, Jacobian row 0).
    """
    pos_points, pos_effectors, pos_axes, ori_points, ori_effectors = layout
    n_pos = pos_points.shape[0]
    n_ori = ori_points.shape[0]
    k_all = n_pos + n_ori
    n = jac.shape[1]
    points = np.empty(k_all, np.intp)
    for i in range(n_pos):
        points[i] = pos_points[i]
    for i in range(n_ori):
        points[n_pos + i] = ori_points[i]
    full = np.zeros((1, 6 * k_all, n))  # position rows of every point, then orientation rows
    _jacobian_kernel(pos, world, parents, points, num_joints, True, full)
    jac[:] = 0.0
    for i in range(n_pos):
        k, p = pos_effectors[i], pos_points[i]
        for c in range(3):
            row = 3 * i + c
            goal = goals[k, c] if pos_axes[i, c] else np.nan
            on = np.isfinite(goal)
            active[row] = on
            residual[row] = pos[0, p, c] - goal if on else 0.0
            if on:
                for col in range(n):
                    jac[row, col] = full[0, row, col]
    for i in range(n_ori):
        k, p = ori_effectors[i], ori_points[i]
        row = 3 * (n_pos + i)
        qw, qx, qy, qz = (
            orientations[k, 0],
            orientations[k, 1],
            orientations[k, 2],
            orientations[k, 3],
        )
        on = np.isfinite(qw) and np.isfinite(qx) and np.isfinite(qy) and np.isfinite(qz)
        active[row : row + 3] = on
        residual[row : row + 3] = 0.0
        if not on:
            continue
        norm = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)  # the task's unit goal
        qw, qx, qy, qz = qw / norm, qx / norm, qy / norm, qz / norm
        # r = log(W ⊗ goal⁻¹), a world-frame rotation vector
        rw, rx, ry, rz = _product(
            world[0, p, 0], world[0, p, 1], world[0, p, 2], world[0, p, 3], qw, -qx, -qy, -qz
        )
        r = _rotvec_from_wxyz(rw, rx, ry, rz)
        for c in range(3):
            residual[row + c] = r[c]
        # ∂r/∂x = J_l(r)⁻¹ J_ω with J_l(r)⁻¹ = J_r(r)⁻ᵀ = I − ½[r]× + c [r]×²
        coef = _coefficients_of(np.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]))
        e = _matrix_entries(r[0], r[1], r[2], -0.5, coef[2])
        omega = 3 * k_all + 3 * (n_pos + i)
        for c in range(3):
            for col in range(n):
                jac[row + c, col] = (
                    e[3 * c] * full[0, omega, col]
                    + e[3 * c + 1] * full[0, omega + 1, col]
                    + e[3 * c + 2] * full[0, omega + 2, col]
                )


@numba.njit(cache=True, nogil=True)
def _update(
    root,
    rot,
    pos,
    world,
    parents,
    offsets,
    num_joints,
    goals,
    last_goals,
    orientations,
    last_orientations,
    source_root,
    source_rot,
    last_source_root,
    last_source_rot,
    layout,
    ori_scale,
    priority,
    activation,
    joints,
    root_w,
    basis,
    basis_inverse,
    height,
    settings,
    moving,
    correction,
    partial,
    fk,
):  # pragma: no cover - jitted
    """One step of eq. (21) from the pose ``root, rot`` (and its FK ``pos, world``).

    With ``r = f1(θ) − x1_n`` the residual now and ``Δx1`` the goals' motion since
    the last frame (``moving``; zero for a row not tracked then), the paper's
    error estimate is ``ẽ1 = x1_{n−1} − f1(θ) = −r − Δx1``; the secondary task is
    ``θ_src,n−1 ⊖ θ`` with the change ``θ_src,n ⊖ θ_src,n−1`` (none with
    ``correction``: the primary task's Newton correction alone, §3.1).

    Parameters
    ----------
    root, rot, pos, world
        The pose (1, 3), (1, J, 4) and its FK (1, P, 3), (1, P, 4), updated in
        place (the FK only with ``fk``).
    parents, offsets, num_joints
        The skeleton's point parents (P,), point offsets (1, P, 3), J.
    goals, last_goals : (K, 3)
        Position goals now and at the last frame (file unit; NaN: not tracked).
    orientations, last_orientations : (K, 4)
    source_root, source_rot, last_source_root, last_source_rot : (3,), (J, 4)
        ``θ_src`` now and at the last frame.
    layout : tuple
        The rows: ``(pos_points, pos_effectors, pos_axes, ori_points, ori_effectors)``
        (:func:`_task_rows`).
    ori_scale : (n_ori,)
        Per orientation effector: the lever in heights (or 1).
    priority : (M,) int
        Each row's priority level.
    activation : (K,)
        Each effector's activation in [0, 1] (:func:`retarget.ik.rate.rate_step`): how
        much of its rows' input is asked for, the rest being the motion the levels above
        and the secondary task would give them.
    joints : (A,) int
        The active joints, ascending (0 among them); the others copy ``source_rot``.
    root_w : (3 + 3A,)
        ``√rigidity`` of the columns (root translation, then the active joints).
    basis, basis_inverse : (A, 3, 3)
        With ``partial``: each active joint's channel axes (columns ``v = C δθ``)
        and their pseudo-inverse; ignored otherwise.
    height : float
        As :class:`retarget.online.OnlineRetargeter`.
    settings : tuple of 5 floats
        ``(damping, K1, K2, min_dexterity, max_input)`` of the rate step
        (:func:`retarget.ik.rate.rate_settings`).

    Returns
    -------
    gain : float
        The gain factor of the step (1 unless lowered).
    clamped : bool
        The input to ``J1⁺`` was shortened.
    """
    pos_points, pos_effectors, _, ori_points, ori_effectors = layout
    n_pos = pos_points.shape[0]
    n_ori = ori_points.shape[0]
    n_rows = 3 * (n_pos + n_ori)
    n_joints = joints.shape[0]
    n = 3 + 3 * n_joints
    residual = np.empty(n_rows)
    jac = np.empty((n_rows, 3 + 3 * num_joints))
    active = np.empty(n_rows, np.bool_)
    _task_rows(pos, world, parents, num_joints, goals, orientations, layout, residual, jac, active)
    turns = np.zeros((n_ori, 3))  # Δx1 of the orientation rows: log(o_n ⊗ o_{n−1}⁻¹)
    if moving:
        for i in range(n_ori):
            k = ori_effectors[i]
            t = _product(
                orientations[k, 0],
                orientations[k, 1],
                orientations[k, 2],
                orientations[k, 3],
                last_orientations[k, 0],
                -last_orientations[k, 1],
                -last_orientations[k, 2],
                -last_orientations[k, 3],
            )
            turns[i, 0], turns[i, 1], turns[i, 2] = _rotvec_from_wxyz(t[0], t[1], t[2], t[3])
    # the tracked rows, lengths in heights, orientation rows times their lever
    m = 0
    for i in range(n_rows):
        m += active[i]
    j1 = np.empty((m, n))
    change = np.empty(m)
    error = np.empty(m)
    level = np.empty(m, np.intp)
    act = np.empty(m)
    row = 0
    for i in range(n_rows):
        if not active[i]:
            continue
        if i < 3 * n_pos:
            scale = 1.0 / height
            k = pos_effectors[i // 3]
            d = goals[k, i % 3] - last_goals[k, i % 3] if moving else 0.0
        else:
            scale = ori_scale[(i - 3 * n_pos) // 3]
            k = ori_effectors[(i - 3 * n_pos) // 3]
            d = turns[(i - 3 * n_pos) // 3, i % 3]
        act[row] = activation[k]
        d = d * scale if np.isfinite(d) else 0.0
        change[row] = d
        error[row] = -residual[i] * scale - d  # ẽ1 = −r − Δx1
        level[row] = priority[i]
        for c in range(3):  # the root translation, in heights
            j1[row, c] = jac[i, c] * scale * height
        for t in range(n_joints):
            col = 3 + 3 * joints[t]
            v0, v1, v2 = jac[i, col] * scale, jac[i, col + 1] * scale, jac[i, col + 2] * scale
            if partial:  # joints move along their channels: columns v = C δθ
                for c in range(3):
                    j1[row, 3 + 3 * t + c] = (
                        v0 * basis[t, 0, c] + v1 * basis[t, 1, c] + v2 * basis[t, 2, c]
                    )
            else:
                j1[row, 3 + 3 * t], j1[row, 4 + 3 * t], j1[row, 5 + 3 * t] = v0, v1, v2
        row += 1
    # secondary task: the source's pose (root in heights), θ_src ⊖ θ
    s_error = np.zeros(n)
    s_change = np.zeros(n)
    if not correction:
        for c in range(3):
            s_error[c] = (last_source_root[c] - root[0, c]) / height
            if moving:
                s_change[c] = (source_root[c] - last_source_root[c]) / height
        for t in range(n_joints):
            a = joints[t]
            e = _ominus(last_source_rot[a], rot[0, a])
            d = (0.0, 0.0, 0.0)
            if moving:
                d = _ominus(source_rot[a], last_source_rot[a])
            for c in range(3):
                if partial:  # in channel rates: C⁺ v
                    b = basis_inverse[t, c]
                    s_error[3 + 3 * t + c] = b[0] * e[0] + b[1] * e[1] + b[2] * e[2]
                    s_change[3 + 3 * t + c] = b[0] * d[0] + b[1] * d[1] + b[2] * d[2]
                else:
                    s_error[3 + 3 * t + c] = e[c]
                    s_change[3 + 3 * t + c] = d[c]
    delta = np.empty(n)
    _, gain, clamped = rate_step_kernel(
        j1, change, error, s_change, s_error, root_w, level, act, settings, delta
    )
    # pose ⊕ Δθ: root + Δp (file unit), q_j ⊗ exp(v_j); inactive joints copy the source
    for c in range(3):
        root[0, c] = root[0, c] + delta[c] * height
    moved = np.zeros(num_joints, np.bool_)
    for t in range(n_joints):
        a = joints[t]
        moved[a] = True
        v0, v1, v2 = delta[3 + 3 * t], delta[4 + 3 * t], delta[5 + 3 * t]
        if partial:
            b = basis[t]
            v0, v1, v2 = (
                b[0, 0] * v0 + b[0, 1] * v1 + b[0, 2] * v2,
                b[1, 0] * v0 + b[1, 1] * v1 + b[1, 2] * v2,
                b[2, 0] * v0 + b[2, 1] * v1 + b[2, 2] * v2,
            )
        ew, ex, ey, ez = _wxyz_from_rotvec(v0, v1, v2)
        rot[0, a, 0], rot[0, a, 1], rot[0, a, 2], rot[0, a, 3] = _product(
            rot[0, a, 0], rot[0, a, 1], rot[0, a, 2], rot[0, a, 3], ew, ex, ey, ez
        )
    for a in range(num_joints):
        if not moved[a]:
            for c in range(4):
                rot[0, a, c] = source_rot[a, c]
    if fk:
        _fk_kernel(root, rot, parents, offsets, num_joints, pos, world)
    return gain, clamped


# -- the goals: hold weights and goal shaping (module retarget.online.omr) -------------------------
#: A hold weight this close to where it is going is there.
WEIGHT_SNAP = 1e-3
#: A point with an anchor is fully held up to this share of its reach.
STRETCH_HOLD = 0.97


@numba.njit(cache=True, nogil=True)
def _smooth_off(x, start, stop):  # pragma: no cover - jitted
    """1 up to ``start``, 0 from ``stop`` on, a quintic smoothstep between (C2); NaN stays."""
    t = (x - start) / (stop - start)
    t = min(max(t, 0.0), 1.0)
    return 1.0 - t * t * t * (t * (6.0 * t - 15.0) + 10.0)


@numba.njit(cache=True, nogil=True)
def _norm3(a0, a1, a2):  # pragma: no cover - jitted
    return np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)


@numba.njit(cache=True, nogil=True)
def _hold_weights(
    goals,
    last_goals,
    drift,
    pos,
    foot_effectors,
    foot_points,
    anchors,
    anchored,
    reach,
    allowed,
    fps,
    height,
    rest_speed,
    release_speed,
    release_distance,
    engage,
    ramp,
    at_once,
    weight,
):  # pragma: no cover - jitted
    """Each foot point's hold weight (:meth:`retarget.online.omr.OnlineRetargeter._weigh`).

    The target is the product of smooth steps of the goal's speed (heights/s, 1 under
    ``rest_speed``, 0 over ``release_speed``), of its hold's drift (``drift``: 1 under
    half ``release_distance``, 0 over it) and, for an anchored point, of its stretch (1
    under :data:`STRETCH_HOLD` of ``reach``, 0 at it); 0 where not ``allowed`` or not
    finite. ``weight`` (K,) moves toward it, at once or with the time constants
    ``engage`` (up) and ``ramp`` (down), seconds.
    """
    for i in range(foot_effectors.shape[0]):
        k = foot_effectors[i]
        speed = (
            _norm3(
                goals[k, 0] - last_goals[k, 0],
                goals[k, 1] - last_goals[k, 1],
                goals[k, 2] - last_goals[k, 2],
            )
            * fps
            / height
        )
        moved = _norm3(drift[k, 0], drift[k, 1], drift[k, 2]) / height
        stretch = 0.0
        if anchored[i]:
            p, a = foot_points[i], anchors[i]
            stretch = (
                _norm3(
                    pos[0, p, 0] - pos[0, a, 0],
                    pos[0, p, 1] - pos[0, a, 1],
                    pos[0, p, 2] - pos[0, a, 2],
                )
                / reach[i]
            )
        target = (
            _smooth_off(speed, rest_speed, release_speed)
            * _smooth_off(moved, 0.5 * release_distance, release_distance)
            * _smooth_off(stretch, STRETCH_HOLD, 1.0)
        )
        if not (np.isfinite(target) and allowed[i]):
            target = 0.0
        w = weight[k]
        if at_once:
            w = target
        else:
            tau = (engage if target > w else ramp) * fps
            w += (-np.expm1(-1.0 / tau) if tau > 0.0 else 1.0) * (target - w)
            if abs(w - target) < WEIGHT_SNAP:
                w = target
        weight[k] = w


@numba.njit(cache=True, nogil=True)
def _shape_goals(
    goals,
    last_goals,
    orientations,
    last_orientations,
    offsets,
    turns,
    drift,
    weight,
    heel_goals,
    activation,
    was_pos,
    was_ori,
    pos,
    world,
    points,
    hold_only,
    fading,
    turning,
    turning_toe,
    turning_heel,
    rolling,
    has_base,
    settle,
    settling,
    goal,
    turn,
    tracked_pos,
    tracked_ori,
):  # pragma: no cover - jitted
    """The goals tracked this frame (:meth:`retarget.online.omr.OnlineRetargeter._shape`).

    Inputs ``goals`` (K, 3), ``orientations`` (K, 4) and the last frame's; the state
    ``offsets``, ``turns``, ``drift``, ``heel_goals`` and ``activation`` is updated in
    place from the weights ``weight`` (K,); ``was_pos``/``was_ori`` are the rows tracked
    at the last frame; ``pos``/``world`` the pose's FK (1, P, ·). ``turning``,
    ``turning_toe``, ``turning_heel`` (T,) are the feet's orientation rows and their toe
    and heel rows (-1: none); ``rolling`` (R, 5) a foot's toe, heel and orientation rows
    and its toe tip and ankle points. ``settle`` is the fading distance (file unit).
    Writes ``goal`` (K, 3), ``turn`` (K, 4) (NaN rows not tracked) and the masks
    ``tracked_pos``, ``tracked_ori``.
    """
    k_all = goals.shape[0]
    step = np.zeros((k_all, 3))
    for k in range(k_all):
        on = True
        for c in range(3):
            on = on and np.isfinite(goals[k, c])
            d = goals[k, c] - last_goals[k, c]
            step[k, c] = d if np.isfinite(d) else 0.0
        tracked_pos[k] = on
        on = True
        for c in range(4):
            on = on and np.isfinite(orientations[k, c])
        tracked_ori[k] = on
    # a hold takes back its weight's share of the input's motion; offsets fade as it travels
    for k in range(k_all):
        w = weight[k]
        moved = _norm3(step[k, 0], step[k, 1], step[k, 2])
        fade = np.exp(-(1.0 - w) * moved / settle) if has_base else 1.0
        for c in range(3):
            offsets[k, c] -= w * step[k, c]
            drift[k, c] += w * step[k, c]
            if has_base:
                drift[k, c] *= fade
                if fading[k]:
                    offsets[k, c] *= fade
    if has_base:  # a foot's orientation: held with both its points, its turn fades with the toe
        for i in range(turning.shape[0]):
            t, toe, heel = turning[i], turning_toe[i], turning_heel[i]
            held = weight[toe] * (weight[heel] if heel >= 0 else 0.0)
            if held > 0.0 and tracked_ori[t]:
                ok = True
                for c in range(4):
                    ok = ok and np.isfinite(last_orientations[t, c])
                if ok:
                    o, last = orientations[t], last_orientations[t]
                    d = _product(o[0], o[1], o[2], o[3], last[0], -last[1], -last[2], -last[3])
                    r = _rotvec_from_wxyz(d[0], d[1], d[2], d[3])
                    e = _wxyz_from_rotvec(-held * r[0], -held * r[1], -held * r[2])
                    q = _product(
                        turns[t, 0], turns[t, 1], turns[t, 2], turns[t, 3], e[0], e[1], e[2], e[3]
                    )
                    for c in range(4):
                        turns[t, c] = q[c]
            moved = _norm3(step[toe, 0], step[toe, 1], step[toe, 2])
            fade = np.exp(-(1.0 - held) * moved / settle)
            r = _rotvec_from_wxyz(turns[t, 0], turns[t, 1], turns[t, 2], turns[t, 3])
            q = _wxyz_from_rotvec(fade * r[0], fade * r[1], fade * r[2])
            for c in range(4):
                turns[t, c] = q[c]
    for k in range(k_all):  # a row that starts tracking starts from where its point is
        p = points[k]
        if tracked_pos[k] and not was_pos[k]:
            ok = True
            for c in range(3):
                ok = ok and np.isfinite(last_goals[k, c])
            for c in range(3):
                start = last_goals[k, c] if ok else goals[k, c]
                offsets[k, c] = pos[0, p, c] - start - weight[k] * step[k, c]
        if tracked_ori[k] and not was_ori[k]:
            ok = True
            for c in range(4):
                ok = ok and np.isfinite(last_orientations[k, c])
            s = last_orientations[k] if ok else orientations[k]
            q = _product(
                world[0, p, 0], world[0, p, 1], world[0, p, 2], world[0, p, 3],
                s[0], -s[1], -s[2], -s[3],
            )  # fmt: skip
            for c in range(4):
                turns[k, c] = q[c]
    for k in range(k_all):  # a heel: where it is held, drawn toward its point by 1 − w
        if not (hold_only[k] and tracked_pos[k]):
            continue
        p = points[k]
        w = weight[k]
        ok = not settling
        for c in range(3):
            ok = ok and np.isfinite(heel_goals[k, c])
        for c in range(3):
            here = pos[0, p, c]
            last = heel_goals[k, c] if ok else here
            at = last + (1.0 - w) * (here - last)
            heel_goals[k, c] = at
            offsets[k, c] = at - goals[k, c]
        activation[k] = w
    for k in range(k_all):
        for c in range(3):
            goal[k, c] = goals[k, c] + offsets[k, c] if tracked_pos[k] else np.nan
        if tracked_ori[k]:
            q = _product(
                turns[k, 0], turns[k, 1], turns[k, 2], turns[k, 3],
                orientations[k, 0], orientations[k, 1], orientations[k, 2], orientations[k, 3],
            )  # fmt: skip
            for c in range(4):
                turn[k, c] = q[c]
        else:
            for c in range(4):
                turn[k, c] = np.nan
    for i in range(rolling.shape[0]):  # a toe rolls about its held heel
        toe, heel, orient, toe_point, ankle_point = (
            rolling[i, 0],
            rolling[i, 1],
            rolling[i, 2],
            rolling[i, 3],
            rolling[i, 4],
        )
        share = weight[heel] * (1.0 - weight[toe])
        if share <= 0.0 or not (tracked_pos[toe] and tracked_pos[heel] and tracked_ori[orient]):
            continue
        a = world[0, ankle_point]
        local = _rotate(
            (a[0], -a[1], -a[2], -a[3]),
            (
                pos[0, toe_point, 0] - pos[0, ankle_point, 0],
                pos[0, toe_point, 1] - pos[0, ankle_point, 1],
                pos[0, toe_point, 2] - pos[0, ankle_point, 2],
            ),
        )
        o = turn[orient]
        lever = _rotate((o[0], o[1], o[2], o[3]), local)
        for c in range(3):
            rolled = goal[heel, c] + lever[c]
            goal[toe, c] += share * (rolled - goal[toe, c])
            offsets[toe, c] = goal[toe, c] - goals[toe, c]
