"""The compiled frame loop of :mod:`retarget.ik.newton` (numba; private).

One frame's problem is small (a robot: 35 unknowns, ~150 rows) and the frames
are a recursion (each starts from the last one's correction), which numpy can
neither batch nor run fast one frame at a time: its per-call overhead on arrays
this small is nearly all of the time (the batched CG of
:func:`retarget.ik.numeric.solve_ik` took 25 ms a frame on the G1). Compiled,
a frame takes a few tens of microseconds.

Nothing here is new math; the rows are those of :mod:`retarget.tasks`, in the
one tangent space (DESIGN.md idea 1), each with its chain of columns:

* position ``r = p − goal`` (a NaN component inactive), columns
  ``u_j × (p − p_j)`` for a hinge (``u_j = W_j c_j``, its world axis),
  ``[R_j]_k × (p − p_j)`` for a ball, ``I`` for the root translation (a segment
  with no start);
* orientation ``r = log(W ⊗ goal⁻¹)``, columns ``J_l(r)⁻¹ u_j``
  (:class:`~retarget.tasks.OrientationTask`);
* segment ``r = (p_end − p_start) − goal``, the end's position columns less the
  start's (:class:`~retarget.tasks.SegmentTask`);
* ground ``r = p_y − h − clearance ≥ 0`` on a level floor
  (:class:`~retarget.tasks.GroundTask`);
* collision ``r = |c_a − c_b| − r_a − r_b − margin ≥ 0``, columns
  ``nᵀ (J_{c_a} − J_{c_b})`` (:class:`~retarget.tasks.CollisionTask`; closest
  points of segments as :func:`retarget.tasks.collision.closest_points`);
* hinge limits ``θ − lo ≥ 0``, ``hi − θ ≥ 0`` (:class:`~retarget.tasks.JointLimitTask`);
* half-spaces ``r = n·Σ w_i (p_i + W_i o_i) − level ≥ 0``, columns ``Σ w_i nᵀ J_{c_i}``
  of the points ``c_i = p_i + W_i o_i`` (:class:`~retarget.tasks.HalfSpaceTask`).

``tests/test_ik_newton.py`` checks every kind of row against the task objects'
``residual`` and ``jacobian`` on random poses.

Unknowns (``n``): the root translation (3, if free), then per joint its
parameters: a hinge's angle increment ``δθ`` (``q = q_ref ⊗ exp(δθ c)``), a
ball's rotation vector ``v = log(q_ref⁻¹ ⊗ q)`` (moved by ``q ⊗ exp(δ)``).
"""

from __future__ import annotations

import numba
import numpy as np

from ...core._kernels.cholesky import cholesky_solve
from ...core._kernels.quat import _product, _rotvec_from_wxyz, _wxyz_from_rotvec
from ...core._kernels.quat4 import rotate
from ...core._kernels.so3 import _coefficients_of, _matrix_entries
from ...tasks._kernels.collision import closest as _closest

__all__: list[str] = []

# joint kinds
FIXED, HINGE, BALL = 0, 1, 3


@numba.njit(cache=True, nogil=True)
def _fk(root, rot, parents, offsets, num_joints, pos, world):  # pragma: no cover - jitted
    """Positions (P, 3) and world rotations (P, 4) of one pose (a site: its parent's)."""
    for c in range(3):
        pos[0, c] = root[c]
    for c in range(4):
        world[0, c] = rot[0, c]
    for p in range(1, parents.shape[0]):
        a = parents[p]
        w, x, y, z = world[a, 0], world[a, 1], world[a, 2], world[a, 3]
        vx, vy, vz = offsets[p, 0], offsets[p, 1], offsets[p, 2]
        tx = 2.0 * (y * vz - z * vy)
        ty = 2.0 * (z * vx - x * vz)
        tz = 2.0 * (x * vy - y * vx)
        pos[p, 0] = pos[a, 0] + vx + w * tx + (y * tz - z * ty)
        pos[p, 1] = pos[a, 1] + vy + w * ty + (z * tx - x * tz)
        pos[p, 2] = pos[a, 2] + vz + w * tz + (x * ty - y * tx)
        if p < num_joints:
            q = _product(w, x, y, z, rot[p, 0], rot[p, 1], rot[p, 2], rot[p, 3])
            for c in range(4):
                world[p, c] = q[c]
        else:
            for c in range(4):
                world[p, c] = world[a, c]


@numba.njit(cache=True, nogil=True)
def _axes(world, kind, axis, num_joints, u):  # pragma: no cover - jitted
    """World axes of the joints' columns: ``u[j, k]`` (J, 3, 3), k < 1 for a hinge."""
    for j in range(num_joints):
        w0, w1, w2, w3 = world[j, 0], world[j, 1], world[j, 2], world[j, 3]
        if kind[j] == HINGE:
            a = rotate((w0, w1, w2, w3), (axis[j, 0], axis[j, 1], axis[j, 2]))
            for c in range(3):
                u[j, 0, c] = a[c]
        elif kind[j] == BALL:
            for k in range(3):
                e = rotate(
                    (w0, w1, w2, w3),
                    (1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0),
                )
                for c in range(3):
                    u[j, k, c] = e[c]


@numba.njit(cache=True, nogil=True)
def _capsule_ends(pos, world, cap_joint, cap_a, cap_b, ends):  # pragma: no cover - jitted
    """World ends (N, 2, 3) of the capsules."""
    for i in range(cap_joint.shape[0]):
        j = cap_joint[i]
        w0, w1, w2, w3 = world[j, 0], world[j, 1], world[j, 2], world[j, 3]
        a = rotate((w0, w1, w2, w3), (cap_a[i, 0], cap_a[i, 1], cap_a[i, 2]))
        b = rotate((w0, w1, w2, w3), (cap_b[i, 0], cap_b[i, 1], cap_b[i, 2]))
        for c in range(3):
            ends[i, 0, c] = pos[j, c] + a[c]
            ends[i, 1, c] = pos[j, c] + b[c]


@numba.njit(cache=True, nogil=True)
def _add_point_columns(joint, at, normal, sign, chain, jrow, mark, nz_list, count):
    # pragma: no cover - jitted
    """Add ``sign · nᵀ J_c`` of the point ``c = at`` carried rigidly by ``joint`` (the
    columns of its chain), ``n = normal`` (3-tuples), to the row ``jrow``; new columns
    go to ``nz_list``. Returns the count. ``chain``: ``(pos, parents, kind, col, u,
    t_col, num_joints)``."""
    pos, parents, kind, col, u, t_col, _ = chain
    x, y, z = at
    nx, ny, nz = normal
    j = joint
    while j >= 0:
        k = kind[j]
        if k != FIXED and col[j] >= 0:
            dx, dy, dz = x - pos[j, 0], y - pos[j, 1], z - pos[j, 2]
            # nᵀ (u × d) = u · (d × n)
            cx = dy * nz - dz * ny
            cy = dz * nx - dx * nz
            cz = dx * ny - dy * nx
            for m in range(k):
                c = col[j] + m
                v = sign * (u[j, m, 0] * cx + u[j, m, 1] * cy + u[j, m, 2] * cz)
                if not mark[c]:
                    mark[c] = True
                    nz_list[count] = c
                    count += 1
                jrow[c] += v
        j = parents[j]
    if t_col >= 0:
        for m in range(3):
            c = t_col + m
            v = sign * (nx if m == 0 else (ny if m == 1 else nz))
            if not mark[c]:
                mark[c] = True
                nz_list[count] = c
                count += 1
            jrow[c] += v
    return count


@numba.njit(cache=True, nogil=True)
def _accumulate(w, r, jrow, mark, nz_list, count, hess, grad):  # pragma: no cover - jitted
    """``H += 2 w j jᵀ`` (its lower triangle), ``g += 2 w r j`` over the row's columns;
    clears the row."""
    for a in range(count):
        ca = nz_list[a]
        va = 2.0 * w * jrow[ca]
        grad[ca] += va * r
        for b in range(count):
            cb = nz_list[b]
            if cb <= ca:
                hess[ca, cb] += va * jrow[cb]
    for a in range(count):
        ca = nz_list[a]
        jrow[ca] = 0.0
        mark[ca] = False


@numba.njit(cache=True, nogil=True)
def _chain3_add(point, sign, chain, jac3, mark, nz_list, count, moment=True):
    # pragma: no cover - jitted
    """Add ``sign`` times the Jacobian of ``point``'s position (``moment``: columns
    ``u × (p − p_j)``, ``I`` for the root translation) or of its frame's rotation
    (columns ``u``) into ``jac3`` (3, n; zero where not marked), new columns marked and
    listed in ``nz_list`` after ``count``; returns the new count. ``chain``: ``(pos,
    parents, kind, col, u, t_col, num_joints)``."""
    pos, parents, kind, col, u, t_col, num_joints = chain
    x, y, z = pos[point, 0], pos[point, 1], pos[point, 2]
    j = _joint_of(point, parents, num_joints)
    while j >= 0:
        k = kind[j]
        if k != FIXED and col[j] >= 0:
            dx, dy, dz = x - pos[j, 0], y - pos[j, 1], z - pos[j, 2]
            for m in range(k):
                c = col[j] + m
                ux, uy, uz = u[j, m, 0], u[j, m, 1], u[j, m, 2]
                if not mark[c]:
                    mark[c] = True
                    nz_list[count] = c
                    count += 1
                if moment:
                    ux, uy, uz = uy * dz - uz * dy, uz * dx - ux * dz, ux * dy - uy * dx
                jac3[0, c] += sign * ux
                jac3[1, c] += sign * uy
                jac3[2, c] += sign * uz
        j = parents[j]
    if moment and t_col >= 0:
        for m in range(3):
            c = t_col + m
            if not mark[c]:
                mark[c] = True
                nz_list[count] = c
                count += 1
            jac3[m, c] += sign
    return count


@numba.njit(cache=True, nogil=True)
def _accumulate3(w, r0, r1, r2, jac3, nz_list, count, hess, grad):  # pragma: no cover
    """``H += 2 w J₃ᵀ J₃`` (lower triangle), ``g += 2 w J₃ᵀ r`` for three rows sharing
    their columns (a row with ``r = 0`` and zero columns counts for nothing); clears
    the columns of ``jac3`` after."""
    w2 = 2.0 * w
    for a in range(count):
        ca = nz_list[a]
        j0, j1, j2 = jac3[0, ca], jac3[1, ca], jac3[2, ca]
        grad[ca] += w2 * (j0 * r0 + j1 * r1 + j2 * r2)
        for b in range(count):
            cb = nz_list[b]
            if cb <= ca:
                hess[ca, cb] += w2 * (j0 * jac3[0, cb] + j1 * jac3[1, cb] + j2 * jac3[2, cb])
    for a in range(count):  # cleared for the next rows
        ca = nz_list[a]
        jac3[0, ca] = 0.0
        jac3[1, ca] = 0.0
        jac3[2, ca] = 0.0


@numba.njit(cache=True, nogil=True)
def _store(w, r, jrow, mark, nz_list, count, ineq_j, ineq_r, ineq_w, ineq_n):
    # pragma: no cover - jitted
    """An inequality row for :func:`_model_step`: its Jacobian ``jrow`` (cleared after)."""
    m = ineq_n[0]
    ineq_j[m, :] = 0.0
    for a in range(count):
        c = nz_list[a]
        ineq_j[m, c] = jrow[c]
        jrow[c] = 0.0
        mark[c] = False
    ineq_r[m] = r
    ineq_w[m] = w
    ineq_n[0] = m + 1


@numba.njit(cache=True, nogil=True)
def _store_one(c, sign, r, w, ineq_j, ineq_r, ineq_w, ineq_n):  # pragma: no cover - jitted
    """An inequality row of one column (``sign`` at column ``c``): a hinge's limit or
    speed, for :func:`_model_step`."""
    m = ineq_n[0]
    ineq_j[m, :] = 0.0
    ineq_j[m, c] = sign
    ineq_r[m] = r
    ineq_w[m] = w
    ineq_n[0] = m + 1


@numba.njit(cache=True, nogil=True)
def _model_step(
    hess, grad, ineq_j, ineq_r, ineq_w, ineq_n, scale, mu, delta, lower, h, g, active
):  # pragma: no cover - jitted
    """The Gauss-Newton step ``δ`` that minimises the model of the objective with its
    inequality rows as they are, one-sided:

    .. math:: ½ δᵀ H δ + gᵀ δ + Σ_k w_k \\min(r_k + j_k δ, 0)^2

    (``H``, ``g``: the equality rows' and the regulariser's, lower triangle), a convex
    piecewise quadratic, by its active set: the rows predicted violated are added, the
    step solved again, until the set holds (a few solves); ``μ diag(H)`` is added to
    ``H`` (Levenberg-Marquardt's damping). Returns ``(solved, slope, decrease)``:
    ``slope`` the objective's own derivative along ``δ`` (negative: a descent),
    ``decrease`` the model's (positive)."""
    n = grad.shape[0]
    m = ineq_n[0]
    for k in range(m):
        active[k] = ineq_r[k] < 0.0
    solved = False
    for _ in range(8):
        for a in range(n):
            g[a] = grad[a]
            for b in range(a + 1):
                h[a, b] = hess[a, b]
            h[a, a] += mu * hess[a, a] + 1e-9 * scale[a] * scale[a]
        for k in range(m):
            if not active[k]:
                continue
            w2 = 2.0 * ineq_w[k]
            for a in range(n):
                ja = ineq_j[k, a]
                if ja == 0.0:
                    continue
                g[a] += w2 * ineq_r[k] * ja
                for b in range(a + 1):
                    h[a, b] += w2 * ja * ineq_j[k, b]
        solved = cholesky_solve(h, g, delta, lower)
        if not solved:
            break
        changed = False
        for k in range(m):
            predicted = ineq_r[k]
            for a in range(n):
                predicted += ineq_j[k, a] * delta[a]
            now = predicted < 0.0
            if now != active[k]:
                active[k] = now
                changed = True
        if not changed:
            break
    slope = 0.0
    model = 0.0  # m(δ) − m(0)
    for a in range(n):
        slope += grad[a] * delta[a]
        model += delta[a] * (grad[a] + 0.5 * hess[a, a] * delta[a])
        for b in range(a):
            model += hess[a, b] * delta[a] * delta[b]
    for k in range(m):
        jd = 0.0
        for a in range(n):
            jd += ineq_j[k, a] * delta[a]
        if ineq_r[k] < 0.0:
            slope += 2.0 * ineq_w[k] * ineq_r[k] * jd
            model -= ineq_w[k] * ineq_r[k] * ineq_r[k]
        after = min(ineq_r[k] + jd, 0.0)
        model += ineq_w[k] * after * after
    return solved, slope, -model


@numba.njit(cache=True, nogil=True)
def _one_sided(r, k, w, hard, boost, near, record, flags):  # pragma: no cover - jitted
    """An inequality row ``r ≥ 0`` (flag ``k``): ``(in the model, its weight, its
    penalty, its violation if hard, newly flagged)`` (:func:`_evaluate`)."""
    added = 0
    if record and r < 0.0 and not flags[k]:
        flags[k] = True
        added = 1
    if r >= near and not flags[k]:
        return False, 0.0, 0.0, 0.0, added
    w = w * (boost if hard else 1.0)
    if r >= 0.0:
        return True, w, 0.0, 0.0, added
    return True, w, w * r * r, -r if hard else 0.0, added


@numba.njit(cache=True, nogil=True)
def _joint_of(point, parents, num_joints):  # pragma: no cover - jitted
    return point if point < num_joints else parents[point]


@numba.njit(cache=True, nogil=True)
def _evaluate(
    f,
    skel,
    tasks,
    boost,
    near,
    near_angle,
    state,
    work,
    with_jac,
    residuals,
    record=False,
):  # pragma: no cover - jitted
    """The objective ``½ pᵀ M p + Σ w r²`` (inequality rows where violated) at the
    current pose of ``state``. With ``with_jac``, also ``H = M + 2 Jᵀ W J`` (its lower
    triangle) and ``g = M p + 2 Jᵀ W r`` of the equality rows into ``work[0:2]``, and
    the inequality rows the step may meet into ``work[10:14]`` (their Jacobian rows,
    residuals, weights and count), for :func:`_model_step` to decide which of them
    the step violates: those violated here, those satisfied by less than ``near``
    (``near_angle`` for a limit), and those flagged in ``work[9]`` (with ``record``,
    every row violated here is flagged: a rejected step's violations, for the next
    model). Returns ``(objective, penalty, worst hard violation, rows newly
    flagged)``. With ``residuals`` (non-empty), every row's residual is written into
    it (``residuals[f]``)."""
    parents, offsets, num_joints, kind, col, axis, t_col, m_reg = skel
    (
        vec_end,
        vec_goal,
        vec_w,
        ori_pt,
        ori_goal,
        ori_w,
        gr_pt,
        gr_clear,
        gr_h,
        gr_w,
        gr_hard,
        cap_joint,
        cap_a,
        cap_b,
        cap_r,
        cap_reach,
        pairs,
        margin,
        col_w,
        col_hard,
        lim_joint,
        lim_side,
        lim_bound,
        lim_w,
        lim_hard,
        vec_start,
        rate,
        rate_w,
        damp,
        hs_joint,
        hs_off,
        hs_w,
        hs_n,
        hs_level,
        hs_weight,
        hs_hard,
    ) = tasks
    root, rot, p, theta_ref, pos, world = state
    hess, grad, jrow, mark, nz_list, u, ends, jac3, cand, flags = work[:10]
    chain = (pos, parents, kind, col, u, t_col, num_joints)
    ineq_j, ineq_r, ineq_w, ineq_n = work[10], work[11], work[12], work[13]
    ineq_n[0] = 0
    n_ground = gr_pt.shape[0]
    n_pairs = pairs.shape[0]
    added = 0
    n = p.shape[0]
    _fk(root, rot, parents, offsets, num_joints, pos, world)
    if with_jac:
        _axes(world, kind, axis, num_joints, u)
        for a in range(n):
            grad[a] = 0.0
            for b in range(n):
                hess[a, b] = 0.0
    keep = residuals.shape[0] > 0
    row = 0
    quad = 0.0
    for a in range(n):
        quad += 0.5 * m_reg[a] * p[a] * p[a]
        if with_jac:
            hess[a, a] += m_reg[a]
            grad[a] += m_reg[a] * p[a]
    pen = 0.0
    worst = 0.0
    # -- positions and segments: p_end − p_start − goal (a position: no start) ---------
    for i in range(vec_end.shape[0]):
        ea, eb = vec_start[i], vec_end[i]
        r0, r1, r2 = 0.0, 0.0, 0.0
        on0, on1, on2 = (
            np.isfinite(vec_goal[f, i, 0]),
            np.isfinite(vec_goal[f, i, 1]),
            np.isfinite(vec_goal[f, i, 2]),
        )
        s0 = pos[ea, 0] if ea >= 0 else 0.0
        s1 = pos[ea, 1] if ea >= 0 else 0.0
        s2 = pos[ea, 2] if ea >= 0 else 0.0
        if on0:
            r0 = pos[eb, 0] - s0 - vec_goal[f, i, 0]
        if on1:
            r1 = pos[eb, 1] - s1 - vec_goal[f, i, 1]
        if on2:
            r2 = pos[eb, 2] - s2 - vec_goal[f, i, 2]
        if keep:
            residuals[f, row], residuals[f, row + 1], residuals[f, row + 2] = r0, r1, r2
        row += 3
        if not (on0 or on1 or on2):
            continue
        pen += vec_w[i] * (r0 * r0 + r1 * r1 + r2 * r2)
        if with_jac:
            count = _chain3_add(eb, 1.0, chain, jac3, mark, nz_list, 0)
            if ea >= 0:
                count = _chain3_add(ea, -1.0, chain, jac3, mark, nz_list, count)
            for a in range(count):
                cc = nz_list[a]
                mark[cc] = False
                jac3[0, cc] *= on0
                jac3[1, cc] *= on1
                jac3[2, cc] *= on2
            _accumulate3(vec_w[i], r0, r1, r2, jac3, nz_list, count, hess, grad)
    # -- orientations -----------------------------------------------------------------
    for i in range(ori_pt.shape[0]):
        e = ori_pt[i]
        gw, gx, gy, gz = ori_goal[f, i, 0], ori_goal[f, i, 1], ori_goal[f, i, 2], ori_goal[f, i, 3]
        if not (np.isfinite(gw) and np.isfinite(gx) and np.isfinite(gy) and np.isfinite(gz)):
            if keep:
                for c in range(3):
                    residuals[f, row + c] = 0.0
            row += 3
            continue
        q = _product(world[e, 0], world[e, 1], world[e, 2], world[e, 3], gw, -gx, -gy, -gz)
        rv = _rotvec_from_wxyz(q[0], q[1], q[2], q[3])
        if keep:
            for c in range(3):
                residuals[f, row + c] = rv[c]
        row += 3
        pen += ori_w[i] * (rv[0] * rv[0] + rv[1] * rv[1] + rv[2] * rv[2])
        if not with_jac:
            continue
        coef = _coefficients_of(np.sqrt(rv[0] * rv[0] + rv[1] * rv[1] + rv[2] * rv[2]))
        jl = _matrix_entries(rv[0], rv[1], rv[2], -0.5, coef[2])  # J_l(r)⁻¹, row by row
        count = _chain3_add(e, 1.0, chain, jac3, mark, nz_list, 0, False)
        for a in range(count):  # J_l(r)⁻¹ u
            c = nz_list[a]
            mark[c] = False
            ux, uy, uz = jac3[0, c], jac3[1, c], jac3[2, c]
            jac3[0, c] = jl[0] * ux + jl[1] * uy + jl[2] * uz
            jac3[1, c] = jl[3] * ux + jl[4] * uy + jl[5] * uz
            jac3[2, c] = jl[6] * ux + jl[7] * uy + jl[8] * uz
        _accumulate3(ori_w[i], rv[0], rv[1], rv[2], jac3, nz_list, count, hess, grad)
    # -- ground -----------------------------------------------------------------------
    for i in range(gr_pt.shape[0]):
        e = gr_pt[i]
        clear = gr_clear[f, i]
        r = pos[e, 1] - gr_h - clear if np.isfinite(clear) else 0.0
        if keep:
            residuals[f, row] = r
        row += 1
        take, w, more, violation, new = _one_sided(
            r, i, gr_w[i], gr_hard[i], boost, near, record, flags
        )
        added, pen, worst = added + new, pen + more, max(worst, violation)
        if not take:
            continue
        if with_jac:
            at = (pos[e, 0], pos[e, 1], pos[e, 2])
            j = _joint_of(e, parents, num_joints)
            count = _add_point_columns(j, at, (0.0, 1.0, 0.0), 1.0, chain, jrow, mark, nz_list, 0)
            _store(w, r, jrow, mark, nz_list, count, ineq_j, ineq_r, ineq_w, ineq_n)
    # -- collision --------------------------------------------------------------------
    if pairs.shape[0] > 0:
        _capsule_ends(pos, world, cap_joint, cap_a, cap_b, ends)
    n_cand = cand[0] if not keep else pairs.shape[0]
    for ci in range(n_cand):
        i = cand[ci + 1] if not keep else ci
        ia, ib = pairs[i, 0], pairs[i, 1]
        # bounding spheres first: most pairs are far apart
        dx = 0.5 * (ends[ia, 0, 0] + ends[ia, 1, 0] - ends[ib, 0, 0] - ends[ib, 1, 0])
        dy = 0.5 * (ends[ia, 0, 1] + ends[ia, 1, 1] - ends[ib, 0, 1] - ends[ib, 1, 1])
        dz = 0.5 * (ends[ia, 0, 2] + ends[ia, 1, 2] - ends[ib, 0, 2] - ends[ib, 1, 2])
        far = np.sqrt(dx * dx + dy * dy + dz * dz) - cap_reach[ia] - cap_reach[ib] - margin[i]
        if far >= near and not keep:
            continue
        p0 = (ends[ia, 0, 0], ends[ia, 0, 1], ends[ia, 0, 2])
        p1 = (ends[ia, 1, 0], ends[ia, 1, 1], ends[ia, 1, 2])
        q0 = (ends[ib, 0, 0], ends[ib, 0, 1], ends[ib, 0, 2])
        q1 = (ends[ib, 1, 0], ends[ib, 1, 1], ends[ib, 1, 2])
        s, t = _closest(p0, p1, q0, q1)
        ax = p0[0] + s * (p1[0] - p0[0])
        ay = p0[1] + s * (p1[1] - p0[1])
        az = p0[2] + s * (p1[2] - p0[2])
        bx = q0[0] + t * (q1[0] - q0[0])
        by = q0[1] + t * (q1[1] - q0[1])
        bz = q0[2] + t * (q1[2] - q0[2])
        gx, gy, gz = ax - bx, ay - by, az - bz
        dist = np.sqrt(gx * gx + gy * gy + gz * gz)
        r = dist - cap_r[ia] - cap_r[ib] - margin[i]
        if keep:
            residuals[f, row + i] = r
        take, w, more, violation, new = _one_sided(
            r, n_ground + i, col_w[i], col_hard[i], boost, near, record, flags
        )
        added, pen, worst = added + new, pen + more, max(worst, violation)
        if not take:
            continue
        if with_jac:
            scale = 1.0 / max(dist, 1e-12)
            n = (gx * scale, gy * scale, gz * scale)
            count = _add_point_columns(
                cap_joint[ia], (ax, ay, az), n, 1.0, chain, jrow, mark, nz_list, 0
            )
            count = _add_point_columns(
                cap_joint[ib], (bx, by, bz), n, -1.0, chain, jrow, mark, nz_list, count
            )
            _store(w, r, jrow, mark, nz_list, count, ineq_j, ineq_r, ineq_w, ineq_n)
    row += pairs.shape[0]
    # -- hinge limits -----------------------------------------------------------------
    for i in range(lim_joint.shape[0]):
        j = lim_joint[i]
        th = theta_ref[f, j] + p[col[j]]
        sign = 1.0 if lim_side[i] == 0 else -1.0
        r = sign * (th - lim_bound[i])
        if keep:
            residuals[f, row] = r
        row += 1
        take, w, more, violation, new = _one_sided(
            r, n_ground + n_pairs + i, lim_w[i], lim_hard[i], boost, near_angle, record, flags
        )
        added, pen, worst = added + new, pen + more, max(worst, violation)
        if not take:
            continue
        if with_jac:
            _store_one(col[j], sign, r, w, ineq_j, ineq_r, ineq_w, ineq_n)
    # -- half-spaces: n·Σ w_i (p_i + W_i o_i) − level ≥ 0 -----------------------------
    hs_base = n_ground + n_pairs + lim_joint.shape[0] + 2 * num_joints
    for i in range(hs_level.shape[1]):
        nx, ny, nz, lv = hs_n[f, i, 0], hs_n[f, i, 1], hs_n[f, i, 2], hs_level[f, i]
        if not (np.isfinite(nx) and np.isfinite(ny) and np.isfinite(nz) and np.isfinite(lv)):
            if keep:
                residuals[f, row + i] = 0.0
            continue
        r = -lv
        for m in range(hs_joint.shape[0]):
            wm = hs_w[f, i, m]
            if wm == 0.0:
                continue
            j = hs_joint[m]
            arm = rotate(
                (world[j, 0], world[j, 1], world[j, 2], world[j, 3]),
                (hs_off[f, i, m, 0], hs_off[f, i, m, 1], hs_off[f, i, m, 2]),
            )
            r += wm * (
                nx * (pos[j, 0] + arm[0]) + ny * (pos[j, 1] + arm[1]) + nz * (pos[j, 2] + arm[2])
            )
        if keep:
            residuals[f, row + i] = r
        take, w, more, violation, new = _one_sided(
            r, hs_base + i, hs_weight[i], hs_hard[i], boost, near, record, flags
        )
        added, pen, worst = added + new, pen + more, max(worst, violation)
        if not take or not with_jac:
            continue
        count = 0
        for m in range(hs_joint.shape[0]):
            wm = hs_w[f, i, m]
            if wm == 0.0:
                continue
            j = hs_joint[m]
            arm = rotate(
                (world[j, 0], world[j, 1], world[j, 2], world[j, 3]),
                (hs_off[f, i, m, 0], hs_off[f, i, m, 1], hs_off[f, i, m, 2]),
            )
            at = (pos[j, 0] + arm[0], pos[j, 1] + arm[1], pos[j, 2] + arm[2])
            count = _add_point_columns(j, at, (nx, ny, nz), wm, chain, jrow, mark, nz_list, count)
        _store(w, r, jrow, mark, nz_list, count, ineq_j, ineq_r, ineq_w, ineq_n)
    row += hs_level.shape[1]
    # -- hinge speeds: at most rate[j] from the last frame's angle (the solver's, causal),
    # and the change of its correction from the last frame's damped by ½ damp[j] (Δp)²
    prev, has_prev = work[17], work[18][0] > 0
    if has_prev and f > 0:
        n_lim = lim_joint.shape[0]
        for j in range(num_joints):
            if kind[j] != HINGE or col[j] < 0:
                continue
            c = col[j]
            turn = theta_ref[f, j] - theta_ref[f - 1, j]  # the references' change, unwrapped
            turn = np.arctan2(np.sin(turn), np.cos(turn))
            moved = turn + p[c] - prev[c]
            if damp[j] > 0.0:  # (the correction's change: the reference moves freely)
                step = p[c] - prev[c]
                quad += 0.5 * damp[j] * step * step
                if with_jac:
                    hess[c, c] += damp[j]
                    grad[c] += damp[j] * step
            if not np.isfinite(rate[j]):
                continue
            for side in range(2):
                sign = 1.0 if side == 0 else -1.0
                r = rate[j] + sign * moved  # moved ≥ −rate, moved ≤ rate
                k = n_ground + n_pairs + n_lim + 2 * j + side
                take, _, more, _, new = _one_sided(
                    r, k, rate_w, False, boost, near_angle, record, flags
                )
                added, pen = added + new, pen + more
                if not take:
                    continue
                if with_jac:
                    _store_one(c, sign, r, rate_w, ineq_j, ineq_r, ineq_w, ineq_n)
    return quad + pen, pen, worst, added


@numba.njit(cache=True, nogil=True)
def _set_pose(f, skel, root_ref, rot_ref, p, root, rot):  # pragma: no cover - jitted
    """The pose ``reference_f ⊕ p`` into ``root`` (3,), ``rot`` (J, 4)."""
    num_joints, kind, col, axis, t_col = skel[2], skel[3], skel[4], skel[5], skel[6]
    for c in range(3):
        root[c] = root_ref[f, c] + (p[t_col + c] if t_col >= 0 else 0.0)
    for j in range(num_joints):
        q0, q1, q2, q3 = rot_ref[f, j, 0], rot_ref[f, j, 1], rot_ref[f, j, 2], rot_ref[f, j, 3]
        k = kind[j]
        if k == FIXED or col[j] < 0:
            rot[j, 0], rot[j, 1], rot[j, 2], rot[j, 3] = q0, q1, q2, q3
            continue
        c0 = col[j]
        if k == HINGE:
            d = p[c0]
            e = _wxyz_from_rotvec(d * axis[j, 0], d * axis[j, 1], d * axis[j, 2])
        else:
            e = _wxyz_from_rotvec(p[c0], p[c0 + 1], p[c0 + 2])
        q = _product(q0, q1, q2, q3, e[0], e[1], e[2], e[3])
        rot[j, 0], rot[j, 1], rot[j, 2], rot[j, 3] = q[0], q[1], q[2], q[3]


@numba.njit(cache=True, nogil=True)
def _step(skel, p, delta, alpha, out):  # pragma: no cover - jitted
    """Parameters after the step ``alpha δ``: hinges and the root translation add, a
    ball's rotation vector composes (``exp(v) exp(α δ)``)."""
    num_joints, kind, col = skel[2], skel[3], skel[4]
    for a in range(p.shape[0]):
        out[a] = p[a] + alpha * delta[a]
    for j in range(num_joints):
        if kind[j] == BALL and col[j] >= 0:
            c0 = col[j]
            e1 = _wxyz_from_rotvec(p[c0], p[c0 + 1], p[c0 + 2])
            e2 = _wxyz_from_rotvec(alpha * delta[c0], alpha * delta[c0 + 1], alpha * delta[c0 + 2])
            q = _product(e1[0], e1[1], e1[2], e1[3], e2[0], e2[1], e2[2], e2[3])
            v = _rotvec_from_wxyz(q[0], q[1], q[2], q[3])
            out[c0], out[c0 + 1], out[c0 + 2] = v[0], v[1], v[2]


@numba.njit(cache=True, nogil=True)
def _select_pairs(skel, tasks, root, rot, pos, world, ends, buffer, cand):
    # pragma: no cover - jitted
    """The pairs of capsules within ``buffer`` of touching (bounding spheres) at the pose
    ``root, rot``: ``cand[0]`` of them, indices in ``cand[1:]``."""
    parents, offsets, num_joints = skel[0], skel[1], skel[2]
    cap_joint, cap_a, cap_b, cap_reach, pairs, margin = (
        tasks[11],
        tasks[12],
        tasks[13],
        tasks[15],
        tasks[16],
        tasks[17],
    )
    count = 0
    if pairs.shape[0] > 0:
        _fk(root, rot, parents, offsets, num_joints, pos, world)
        _capsule_ends(pos, world, cap_joint, cap_a, cap_b, ends)
    for i in range(pairs.shape[0]):
        ia, ib = pairs[i, 0], pairs[i, 1]
        dx = 0.5 * (ends[ia, 0, 0] + ends[ia, 1, 0] - ends[ib, 0, 0] - ends[ib, 1, 0])
        dy = 0.5 * (ends[ia, 0, 1] + ends[ia, 1, 1] - ends[ib, 0, 1] - ends[ib, 1, 1])
        dz = 0.5 * (ends[ia, 0, 2] + ends[ia, 1, 2] - ends[ib, 0, 2] - ends[ib, 1, 2])
        far = np.sqrt(dx * dx + dy * dy + dz * dz) - cap_reach[ia] - cap_reach[ib] - margin[i]
        if far < buffer:
            cand[count + 1] = i
            count += 1
    cand[0] = count


def _work(n, num_joints, n_caps, n_pairs, n_flags):
    """Scratch arrays of one problem: ``(H, g, row, marks, columns, axes, capsule ends,
    three rows, candidate pairs, flagged inequality rows, the inequality rows'
    Jacobians, residuals, weights and count, their active set, the model's H and g,
    the last frame's parameters and whether there is one)``."""
    return (
        np.zeros((n, n)),
        np.zeros(n),
        np.zeros(n),
        np.zeros(n, np.bool_),
        np.zeros(2 * n, np.intp),
        np.zeros((num_joints, 3, 3)),
        np.zeros((n_caps, 2, 3)),
        np.zeros((3, n)),
        np.zeros(n_pairs + 1, np.intp),
        np.zeros(n_flags, np.bool_),
        np.zeros((n_flags, n)),
        np.zeros(n_flags),
        np.zeros(n_flags),
        np.zeros(1, np.intp),
        np.zeros(n_flags, np.bool_),
        np.zeros((n, n)),
        np.zeros(n),
        np.zeros(n),
        np.zeros(1, np.intp),
    )


_work_jit = numba.njit(cache=True, nogil=True)(_work)


@numba.njit(cache=True, nogil=True)
def _at(f, ctx, boost, p, with_jac, record=False):  # pragma: no cover - jitted
    """:func:`_evaluate` at the parameters ``p`` of frame ``f`` (with ``record``, the
    Jacobian too and the inequality rows violated flagged); ``ctx`` is ``(skel, tasks,
    near, near_angle, root_ref, rot_ref, theta_ref, root, rot, pos, world, work)``."""
    skel, tasks, near, near_angle, root_ref, rot_ref, theta_ref, root, rot, pos, world, work = ctx
    _set_pose(f, skel, root_ref, rot_ref, p, root, rot)
    state = (root, rot, p, theta_ref, pos, world)
    return _evaluate(
        f,
        skel,
        tasks,
        boost,
        near,
        near_angle,
        state,
        work,
        with_jac or record,
        np.zeros((0, 0)),
        record,
    )


@numba.njit(cache=True, nogil=True)
def solve_frames(
    skel,
    tasks,
    root_ref,
    rot_ref,
    theta_ref,
    p_start,
    settings,
    root_out,
    rot_out,
    p_out,
    info,
    residuals,
):  # pragma: no cover - jitted
    """Every frame in turn: Gauss-Newton from the last frame's parameters (the first
    frame from ``p_start``), with a backtracking line search on the objective.

    ``settings``: ``(max_iterations, first_iterations, tolerance, slack, boost_1,
    boost_2, carry, predict, buffer, near, near_angle)``. ``tolerance`` bounds
    ``√m_k |δ_k|`` of the last step; ``slack`` the hard rows' violation before the
    frame is solved again with their weights ``boost_1``, then ``boost_2`` times
    firmer; ``carry`` (0 or 1): start each frame from the last one's parameters (else
    from ``p_start[f]``), plus ``predict`` times the last frame's change; ``buffer``:
    the collision pairs looked at in a frame are those within it at the frame's start;
    ``near``, ``near_angle``: see :func:`_evaluate`.

    Writes ``root_out`` (F, 3), ``rot_out`` (F, J, 4), ``p_out`` (F, n) and ``info``
    (F, 5): iterations, objective, penalty, boosts applied, worst hard violation.
    """
    parents, num_joints, m_reg = skel[0], skel[2], skel[7]
    max_it = int(settings[0])
    first_it = int(settings[1])
    tol, slack, boost_1, boost_2 = settings[2], settings[3], settings[4], settings[5]
    carry = settings[6] > 0.5
    predict = settings[7]
    buffer = settings[8]
    near, near_angle = settings[9], settings[10]
    n_frames = root_ref.shape[0]
    n = m_reg.shape[0]
    n_points = parents.shape[0]
    root = np.zeros(3)
    rot = np.zeros((num_joints, 4))
    pos = np.zeros((n_points, 3))
    world = np.zeros((n_points, 4))
    p = np.zeros(n)
    trial = np.zeros(n)
    delta = np.zeros(n)
    lower = np.zeros((n, n))
    work = _work_jit(
        n,
        num_joints,
        tasks[11].shape[0],
        tasks[16].shape[0],
        tasks[6].shape[0]
        + tasks[16].shape[0]
        + tasks[20].shape[0]
        + 2 * num_joints
        + tasks[33].shape[1],
    )
    hess, grad, ends, cand, flags = work[0], work[1], work[6], work[8], work[9]
    ctx = (skel, tasks, near, near_angle, root_ref, rot_ref, theta_ref, root, rot, pos, world, work)
    scale = np.sqrt(np.maximum(m_reg, 1e-12))
    for f in range(n_frames):
        if f == 0 or not carry:
            for a in range(n):
                p[a] = p_start[f, a]
        elif f >= 2 and predict > 0.0:  # the last frame's change, once more
            for a in range(n):
                p[a] = p_out[f - 1, a] + predict * (p_out[f - 1, a] - p_out[f - 2, a])
        budget = first_it if f == 0 else max_it
        boost = 1.0
        boosts = 0
        total = 0
        flags[:] = False
        mu = 0.0  # Levenberg-Marquardt's damping, from the steps' gain ratios
        _set_pose(f, skel, root_ref, rot_ref, p, root, rot)
        _select_pairs(skel, tasks, root, rot, pos, world, ends, buffer, cand)
        while True:
            obj, pen, worst = _at(f, ctx, boost, p, True)[:3]
            it = 0
            while it < budget:
                it += 1
                total += 1
                solved, slope, predicted = _model_step(
                    hess,
                    grad,
                    work[10],
                    work[11],
                    work[12],
                    work[13],
                    scale,
                    mu,
                    delta,
                    lower,
                    work[15],
                    work[16],
                    work[14],
                )
                if not solved or slope >= 0.0:
                    break
                # the full step, with its Jacobian (the next step's, if taken) and the
                # inequality rows it violates flagged
                alpha = 1.0
                _step(skel, p, delta, alpha, trial)
                o2, pen2, worst2, added = _at(f, ctx, boost, trial, True, True)
                fresh = True
                accepted = o2 <= obj + 1e-4 * slope
                if not accepted and added > 0:
                    # the model lacked rows the step ran into: again with them
                    obj, pen, worst = _at(f, ctx, boost, p, True)[:3]
                    continue
                while not accepted and alpha > 1e-3:
                    alpha *= 0.5
                    _step(skel, p, delta, alpha, trial)
                    o2, pen2, worst2 = _at(f, ctx, boost, trial, False)[:3]
                    fresh = False
                    accepted = o2 <= obj + 1e-4 * alpha * slope
                size = 0.0
                for a in range(n):
                    size = max(size, scale[a] * abs(alpha * delta[a]))
                if accepted:
                    # the gain ratio: the objective's decrease over the model's (a GN
                    # model far off, as where residuals stay large, zigzags: damp it)
                    ratio = (obj - o2) / max(predicted, 1e-300) if alpha == 1.0 else 0.0
                    if ratio < 0.25:
                        mu = max(4.0 * mu, 1e-3)
                    elif ratio > 0.75:
                        mu = mu / 3.0 if mu > 1e-6 else 0.0
                    for a in range(n):
                        p[a] = trial[a]
                    obj, pen, worst = o2, pen2, worst2
                if not accepted or size * (1.0 + mu) < tol:  # (the undamped step's size)
                    break
                if not fresh:  # H and g at the point taken
                    obj, pen, worst = _at(f, ctx, boost, p, True)[:3]
            if worst <= slack or boosts == 2:
                break
            boosts += 1
            boost = boost_1 if boosts == 1 else boost_2
            budget = max_it
        _set_pose(f, skel, root_ref, rot_ref, p, root, rot)
        for c in range(3):
            root_out[f, c] = root[c]
        for j in range(num_joints):
            for c in range(4):
                rot_out[f, j, c] = rot[j, c]
        for a in range(n):
            p_out[f, a] = p[a]
            work[17][a] = p[a]
        work[18][0] = 1
        info[f, 0] = total
        info[f, 1] = obj
        info[f, 2] = pen
        info[f, 3] = boosts
        info[f, 4] = worst
        if residuals.shape[0] > 0:
            state = (root, rot, p, theta_ref, pos, world)
            _evaluate(f, skel, tasks, 1.0, near, near_angle, state, work, False, residuals)


@numba.njit(cache=True, nogil=True)
def evaluate_frame(skel, tasks, root_ref, rot_ref, theta_ref, f, p, boost, near, near_angle):
    # pragma: no cover - jitted
    """``(objective, penalty, g, H)`` of frame ``f`` at the parameters ``p`` (n,), every
    pair of capsules looked at: the objective's gradient and Gauss-Newton Hessian
    there, inequality rows where violated (for the tests)."""
    parents, num_joints, m_reg = skel[0], skel[2], skel[7]
    n = m_reg.shape[0]
    n_points = parents.shape[0]
    root = np.zeros(3)
    rot = np.zeros((num_joints, 4))
    pos = np.zeros((n_points, 3))
    world = np.zeros((n_points, 4))
    work = _work_jit(
        n,
        num_joints,
        tasks[11].shape[0],
        tasks[16].shape[0],
        tasks[6].shape[0]
        + tasks[16].shape[0]
        + tasks[20].shape[0]
        + 2 * num_joints
        + tasks[33].shape[1],
    )
    _set_pose(f, skel, root_ref, rot_ref, p, root, rot)
    _select_pairs(skel, tasks, root, rot, pos, world, work[6], np.inf, work[8])
    state = (root, rot, p, theta_ref, pos, world)
    obj, pen, _, _ = _evaluate(
        f, skel, tasks, boost, near, near_angle, state, work, True, np.zeros((0, 0))
    )
    hess, grad = work[0], work[1]
    ineq_j, ineq_r, ineq_w = work[10], work[11], work[12]
    for k in range(work[13][0]):  # the inequality rows violated here
        if ineq_r[k] < 0.0:
            for a in range(n):
                grad[a] += 2.0 * ineq_w[k] * ineq_r[k] * ineq_j[k, a]
                for b in range(a + 1):
                    hess[a, b] += 2.0 * ineq_w[k] * ineq_j[k, a] * ineq_j[k, b]
    for a in range(n):
        for b in range(a):
            hess[b, a] = hess[a, b]
    return obj, pen, grad, hess
