"""The compiled analytic limb (Lee & Shin 1999, §5.3) of one row (numba; private).

:func:`retarget.ik.limb.solve_limb` places a two-bone limb's lower joint at a goal
in closed form; the hybrid IK (:mod:`retarget.ik.hybrid`) calls it on every frame
of a clip, ``n + 1`` times per Levenberg-Marquardt Jacobian, and in numpy, on
arrays of 65,000 rows, its hundred small steps were half the hierarchical method's
time. Here the steps of one row are compiled (:func:`solve_rows` over the rows),
and so are the pieces the computer puppetry kernel (:mod:`retarget.online._kernels.puppetry`)
solves its limbs with. The formulas are :mod:`retarget.ik.limb`'s;
``tests/test_limb.py`` checks :func:`solve_rows` against its numpy path.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...core._kernels.quat import _rotvec_from_wxyz
from ...core._kernels.quat4 import conj, multiply, rotate
from ...core._kernels.vec3 import add, cross, dot, norm, scale, sub

__all__: list[str] = []

_TWO_PI = 2.0 * np.pi
#: Below this ``r1 r2 / (l1 l2)`` the hinge does not change the limb's length ``L`` (the
#: upper or the lower joint lies on the hinge axis): any hinge angle reaches as far.
DEGENERATE = 1e-12
#: Tolerance (radians) for "on the hinge-limit arc", against the rounding of ``arccos``.
ARC_TOL = 1e-9


@numba.njit(cache=True, nogil=True)
def axis_quat(axis, angle):  # pragma: no cover - jitted
    """``exp(angle · axis)`` for a unit 3-tuple ``axis``."""
    half = 0.5 * angle
    s = math.sin(half)
    return (math.cos(half), s * axis[0], s * axis[1], s * axis[2])


@numba.njit(cache=True, nogil=True)
def unit(v, fallback):  # pragma: no cover - jitted
    """``v / |v|``, or ``fallback`` when ``|v| <= 1e-300`` (``ik.limb._unit``)."""
    n = norm(v)
    if n > 1e-300:
        return (v[0] / n, v[1] / n, v[2] / n)
    return fallback


@numba.njit(cache=True, nogil=True)
def between(u, v):  # pragma: no cover - jitted
    """The shortest-arc rotation taking direction ``u`` to ``v`` (3-tuples, not unit),
    as :func:`retarget.core.quat.quat_between` computes it: ``cos(θ/2) = |u + v| / 2``, the
    axis ``u × v`` scaled by ``1 / (2 cos(θ/2))`` (exact as θ → 0) or, past a right
    angle, by ``|u − v| / (2 |u × v|)`` (exact as θ → π)."""
    nu, nv = norm(u), norm(v)
    un = (u[0] / nu, u[1] / nu, u[2] / nu)
    vn = (v[0] / nv, v[1] / nv, v[2] / nv)
    w = 0.5 * norm(add(un, vn))
    c = cross(un, vn)
    sin_norm = norm(c)
    if w > 0.5:
        f = 1.0 / (2.0 * max(w, 0.5))
    else:
        f = 0.5 * norm(sub(un, vn)) / max(sin_norm, 1e-300)
    x, y, z = c[0] * f, c[1] * f, c[2] * f
    if sin_norm < 1e-300 and w < 0.5:  # opposite: a half turn about a perpendicular
        k = 0
        for i in (1, 2):
            if abs(un[i]) < abs(un[k]):
                k = i
        basis = (1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0)
        x, y, z = cross(un, basis)
        w = 0.0
    n = math.sqrt(w * w + x * x + y * y + z * z)
    return (w / n, x / n, y / n, z / n)


@numba.njit(cache=True, nogil=True)
def wrap(x):  # pragma: no cover - jitted
    """Angle wrapped to (−π, π]."""
    return np.pi - (np.pi - x) % _TWO_PI


@numba.njit(cache=True, nogil=True)
def soft_reach(distance, reach, softness):  # pragma: no cover - jitted
    """:func:`retarget.ik.limb.soft_reach` of one distance (length unit)."""
    zone = softness * reach
    knee = reach - zone
    if not distance > knee:
        return distance
    over = max(distance - knee, 0.0) / (zone if zone > 0.0 else 1.0)
    return knee + zone * -math.expm1(-over)


@numba.njit(cache=True, nogil=True)
def arc_distance(x, lo, width):  # pragma: no cover - jitted
    """Distance (radians, ≥ 0) of angle ``x`` from the arc ``[lo, lo + width]`` (mod 2π)."""
    y = lo + (x - lo) % _TWO_PI
    over = y - lo - width
    return 0.0 if over <= 0.0 else min(over, _TWO_PI - (y - lo))


@numba.njit(cache=True, nogil=True)
def clamp_to_arc(x, lo, width):  # pragma: no cover - jitted
    """Angle ``x`` on the arc ``[lo, lo + width]`` (mod 2π); outside it, its nearer end."""
    y = lo + (x - lo) % _TWO_PI
    over = y - lo - width
    if over <= 0.0:
        return y
    return lo + width if over < _TWO_PI - (y - lo) else lo


@numba.njit(cache=True, nogil=True)
def solve_hinge(
    h1, r1, l1, l2, h2, r2, lo, hi, beta_ref, theta_ref, length_goal, softness
):  # pragma: no cover - jitted
    """Step 1 of the limb (``ik.limb._solve_hinge``): Lee & Shin 1999, eq. 7 in the
    signed form ``cos β = (L² − K) / (2 r1 r2)``, ``K = l1² + l2² + 2 h1 h2``, within
    the hinge limits ``[lo, hi]`` (radians; infinite: none) and the soft reach.

    Returns the hinge turn Δ (radians), the reached distance ``L``, whether the goal
    was out of reach, and ``L_max``.
    """
    rr = r1 * r2
    k = l1 * l1 + l2 * l2 + 2.0 * h1 * h2
    full = not (hi - lo < _TWO_PI)
    degenerate = rr <= DEGENERATE * l1 * l2
    width = hi - lo
    beta_lo = lo + (beta_ref - theta_ref)  # β = θ + (β_ref − θ_ref)
    if full:
        c_min, c_max = -1.0, 1.0
        theta_keep = theta_ref
    else:  # the range of cos β over the allowed arc
        c_lo, c_hi = math.cos(beta_lo), math.cos(beta_lo + width)
        c_max = 1.0 if arc_distance(0.0, beta_lo, width) == 0.0 else max(c_lo, c_hi)
        c_min = -1.0 if arc_distance(np.pi, beta_lo, width) == 0.0 else min(c_lo, c_hi)
        theta_keep = clamp_to_arc(theta_ref, lo, width)
    rr_safe = rr
    if degenerate:  # the hinge does not move the lower joint: keep it (within its limits)
        c_min = c_max = math.cos(theta_keep + (beta_ref - theta_ref))
        rr_safe = 1.0
    length_min = math.sqrt(max(k + 2.0 * rr * c_min, 0.0))
    length_max = math.sqrt(max(k + 2.0 * rr * c_max, 0.0))
    if softness > 0.0:
        length_goal = soft_reach(length_goal, length_max, softness)
    clamped = length_goal < length_min or length_goal > length_max
    length = min(max(length_goal, length_min), length_max)
    c = min(max((length * length - k) / (2.0 * rr_safe), c_min), c_max)
    b = math.acos(min(max(c, -1.0), 1.0))
    beta = b  # the flexion side, always (ik.limb._solve_hinge: no flip at a straight limb)
    if not full:
        if arc_distance(beta, beta_lo, width) > max(arc_distance(-beta, beta_lo, width), ARC_TOL):
            beta = -beta
        beta = clamp_to_arc(beta, beta_lo, width)
    delta = wrap(beta - beta_ref)
    if degenerate:
        delta = theta_keep - theta_ref
    return delta, length, clamped, length_max


@numba.njit(cache=True, nogil=True)
def solve_rows(
    q_up, q_mid, q_low, w_parent, p_upper, goal, orientation, oriented, swivel, geometry,
    softness, out, reached, info, error,
):  # pragma: no cover - jitted  # fmt: skip
    """:func:`retarget.ik.limb.solve_limb` row by row (``swivel_mode="relative"``, a free
    lower joint): each row's hinge turned by eq. (7), the upper joint by the shortest
    rotation onto the goal's ray, then ``swivel`` about it, and with ``oriented`` the
    lower joint's world frame onto the row's ``orientation`` goal (a NaN goal or
    orientation leaves the row's joints as they are).

    Arrays (B rows): ``q_up``, ``q_mid``, ``q_low``, ``w_parent`` (B, 4) the limb's local
    rotations and the upper joint's parent's world rotation; ``p_upper``, ``goal``
    (B, 3); ``orientation`` (B, 4); ``swivel`` (B,). ``geometry``: ``(a, d1, off2, h1,
    r1, l1, l2, s, t, lo, hi)``, ``a`` (3,), the others with G = 1 or B rows
    (:class:`retarget.ik.limb.LimbGeometry`; ``lo``, ``hi`` the hinge's limits).
    Writes ``out`` (B, 3, 4) the new upper, middle and lower local rotations,
    ``reached`` (B, 3), ``info`` (B, 4) (residual, orientation residual, clamped,
    extension) and ``error`` (B, 3) (``log(goal⁻¹ ⊗ achieved)``).
    """
    a_arr, d1s, off2s, h1s, r1s, l1s, l2s, ss, ts, lo, hi = geometry
    a = (a_arr[0], a_arr[1], a_arr[2])
    per_row = d1s.shape[0] > 1
    for b in range(q_up.shape[0]):
        g = b if per_row else 0
        qu = (q_up[b, 0], q_up[b, 1], q_up[b, 2], q_up[b, 3])
        qm = (q_mid[b, 0], q_mid[b, 1], q_mid[b, 2], q_mid[b, 3])
        wp = (w_parent[b, 0], w_parent[b, 1], w_parent[b, 2], w_parent[b, 3])
        pu = (p_upper[b, 0], p_upper[b, 1], p_upper[b, 2])
        d1 = (d1s[g, 0], d1s[g, 1], d1s[g, 2])
        gl = (goal[b, 0], goal[b, 1], goal[b, 2])
        valid = math.isfinite(gl[0]) and math.isfinite(gl[1]) and math.isfinite(gl[2])
        d2 = rotate(qm, (off2s[g, 0], off2s[g, 1], off2s[g, 2]))  # middle -> lower
        if valid:
            goal_local = rotate(conj(wp), sub(gl, pu))
        else:  # aim at where the lower joint is (then keep the input)
            goal_local = rotate(qu, add(d1, d2))
        length_goal = norm(goal_local)
        # (1) middle joint: eq. (7)
        h2 = dot(d2, a)
        r2 = math.sqrt(max(l2s[g] * l2s[g] - h2 * h2, 0.0))
        beta_ref = math.atan2(
            dot(d2, (ts[g, 0], ts[g, 1], ts[g, 2])), dot(d2, (ss[g, 0], ss[g, 1], ss[g, 2]))
        )
        theta_ref = wrap(2.0 * math.atan2(qm[1] * a[0] + qm[2] * a[1] + qm[3] * a[2], qm[0]))
        delta, length, clamped, length_max = solve_hinge(
            h1s[g], r1s[g], l1s[g], l2s[g], h2, r2, lo, hi, beta_ref, theta_ref, length_goal,
            softness,
        )  # fmt: skip
        # the lower bone turned by Δ about a (Rodrigues), and the limb upper -> lower
        along = scale(a, h2)
        w_limb = add(
            add(add(d1, along), scale(sub(d2, along), math.cos(delta))),
            scale(cross(a, d2), math.sin(delta)),
        )
        if valid:
            qm_new = multiply(axis_quat(a, delta), qm)
            # (2) upper joint: the shortest rotation onto the ray, then the swivel
            v_dir = unit(rotate(qu, w_limb), (1.0, 0.0, 0.0))
            n_dir = unit(goal_local, v_dir)  # goal at the upper joint: keep the direction
            qu_new = multiply(between(v_dir, n_dir), qu)
            if swivel[b] != 0.0:
                qu_new = multiply(axis_quat(n_dir, swivel[b]), qu_new)
        else:
            qm_new, qu_new, w_limb = qm, qu, add(d1, d2)
            clamped = False
        w_upper = multiply(wp, qu_new)
        at = add(pu, rotate(w_upper, w_limb))
        ql = (q_low[b, 0], q_low[b, 1], q_low[b, 2], q_low[b, 3])
        o = (orientation[b, 0], orientation[b, 1], orientation[b, 2], orientation[b, 3])
        use = oriented and valid and math.isfinite(o[0] + o[1] + o[2] + o[3])
        turn, miss = 0.0, (0.0, 0.0, 0.0)
        if use:  # (3) lower joint: the goal orientation (free: no limits to project on)
            w_mid = multiply(w_upper, qm_new)
            ql = multiply(conj(w_mid), o)
            achieved = multiply(w_mid, ql)
            rel = multiply(conj(o), achieved)
            miss = _rotvec_from_wxyz(rel[0], rel[1], rel[2], rel[3])
            turn = 2.0 * math.atan2(norm((rel[1], rel[2], rel[3])), abs(rel[0]))
        for k in range(4):
            out[b, 0, k] = qu_new[k]
            out[b, 1, k] = qm_new[k]
            out[b, 2, k] = ql[k]
        for k in range(3):
            reached[b, k] = at[k]
            error[b, k] = miss[k]
        info[b, 0] = abs(length_goal - length) if valid else 0.0
        info[b, 1] = turn
        info[b, 2] = 1.0 if clamped else 0.0
        info[b, 3] = length_goal / max(length_max, 1e-300) if valid else 0.0
