"""The compiled step of closed-loop inverse rate control (numba; private to the library's
compiled code): :func:`rate_step_kernel`, one problem of :func:`retarget.ik.rate.rate_step`,
which the public functions of :mod:`retarget.ik.rate` loop over a batch and the online
retargeter's compiled update (:mod:`retarget.online._kernels.omr`) calls frame by frame,
so the step exists once. The equations and the reasons for compiling it: the docstring
of :mod:`retarget.ik.rate`.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["rate_step_kernel"]


# -- the compiled core: one problem ---------------------------------------------------------------
# Plain loops around one LAPACK call (the SVD): numba compiles array expressions, BLAS
# products and np.linalg.solve slowly (seconds each, once per machine), and loops on
# matrices this small are as fast.
@numba.njit(cache=True, nogil=True)
def _svd(a):  # pragma: no cover - jitted
    """``U, S, Vᵀ`` of ``a`` (m, n), thin."""
    return np.linalg.svd(a, full_matrices=False)


@numba.njit(cache=True, nogil=True)
def _damped_solve(u_svd, sv, vt, r, damping, cut, out):  # pragma: no cover - jitted
    """``out += V S (S² + λ²)⁻¹ Uᵀ r`` over the singular values above ``cut``: the damped
    least-squares solution of ``J x = r`` for ``J = U S Vᵀ``, ``Jᵀ (J Jᵀ + λ² I)⁻¹ r``."""
    for k in range(sv.shape[0]):
        if sv[k] > cut:
            ur = 0.0
            for i in range(r.shape[0]):
                ur += u_svd[i, k] * r[i]
            coef = sv[k] / (sv[k] * sv[k] + damping * damping) * ur
            for c in range(out.shape[0]):
                out[c] += coef * vt[k, c]


@numba.njit(cache=True, nogil=True)
def _dls_of(j, damping):  # pragma: no cover - jitted
    """``Jᵀ (J Jᵀ + λ² I)⁻¹`` of one ``j`` (m, n), shape (n, m), column by column."""
    m, n = j.shape
    u_svd, sv, vt = _svd(j)
    out = np.zeros((n, m))
    unit = np.zeros(m)
    column = np.empty(n)
    for i in range(m):
        unit[i] = 1.0
        column[:] = 0.0
        _damped_solve(u_svd, sv, vt, unit, damping, 0.0, column)
        for c in range(n):
            out[c, i] = column[c]
        unit[i] = 0.0
    return out


@numba.njit(cache=True, nogil=True)
def _dexterity_of(j):  # pragma: no cover - jitted
    """``σmin / σmax`` of one ``j`` (m, n)."""
    return _dexterity_from(_svd(j)[1], j.shape[0], j.shape[1])


@numba.njit(cache=True, nogil=True)
def _dexterity_from(sv, m, n):  # pragma: no cover - jitted
    """``σmin / σmax`` from the singular values of an m × n matrix: 0 when m > n (the
    ``σ`` are the roots of the eigenvalues of ``J Jᵀ``, ``m − n`` of them zero)."""
    if m > n:
        return 0.0
    return sv[-1] / max(sv[0], 1e-300)


@numba.njit(cache=True, nogil=True)
def _levels(level):  # pragma: no cover - jitted
    """The distinct values of ``level``, ascending."""
    out = np.empty(level.shape[0], np.intp)
    count = 0
    for x in level:
        at = count
        for i in range(count):
            if out[i] >= x:
                at = i
                break
        if at < count and out[at] == x:
            continue
        for i in range(count, at, -1):
            out[i] = out[i - 1]
        out[at] = x
        count += 1
    return out[:count]


@numba.njit(cache=True, nogil=True)
def _rows_of(level, lv):  # pragma: no cover - jitted
    """Indices of the rows of level ``lv``."""
    count = 0
    for x in level:
        count += x == lv
    rows = np.empty(count, np.intp)
    k = 0
    for i in range(level.shape[0]):
        if level[i] == lv:
            rows[k] = i
            k += 1
    return rows


@numba.njit(cache=True, nogil=True)
def _take_rows(a, rows):  # pragma: no cover - jitted
    """``a[rows]``, a new C-ordered array."""
    out = np.empty((rows.shape[0], a.shape[1]))
    for i in range(rows.shape[0]):
        for c in range(a.shape[1]):
            out[i, c] = a[rows[i], c]
    return out


@numba.njit(cache=True, nogil=True)
def rate_step_kernel(
    jac, change, error, s_change, s_error, root_w, level, activation, settings, delta
):  # pragma: no cover - jitted
    """:func:`retarget.ik.rate.rate_step` of one problem, compiled: callable from numba kernels
    (the online retargeter's update, :mod:`retarget.online._kernels.omr`) and from Python.

    Parameters
    ----------
    jac : ndarray, shape (m, n)
        ``J1``.
    change, error : ndarray, shape (m,)
        ``Δx1`` and ``ẽ1``.
    s_change, s_error : ndarray, shape (n,)
        ``Δθ_src`` and ``ẽ2``.
    root_w : ndarray, shape (n,)
        ``√w`` of the rigidities.
    level : ndarray of int, shape (m,)
        Priority levels; ``activation`` (m,) the rows' activations.
    settings : tuple of 5 floats
        ``(damping, K1, K2, min_dexterity, max_input)`` (:func:`rate_step`).
    delta : ndarray, shape (n,)
        Written: ``Δθ``.

    Returns
    -------
    (dexterity, gain, clamped) : (float, float, bool)
    """
    damping, k1, k2, min_dex, max_input = settings
    m, n = jac.shape
    j = np.empty((m, n))  # in the coordinates W^½ Δθ the weighted problem is the plain one
    for i in range(m):
        for c in range(n):
            j[i, c] = jac[i, c] / root_w[c]
    levels = _levels(level)
    dex = 1.0
    if m > 0:  # J_1 = U S Vᵀ of the first level: its dexterity, and its step below
        j_top = _take_rows(j, _rows_of(level, levels[0]))
        u_top, sv_top, vt_top = _svd(j_top)
        dex = _dexterity_from(sv_top, j_top.shape[0], n)
    gain = 1.0
    if min_dex > 0.0:
        gain = min(1.0, dex / min_dex)
    g1, g2 = k1 * gain, k2 * gain
    u = np.empty(m)  # u = Δx1 + K1 ẽ1
    for i in range(m):
        u[i] = change[i] + g1 * error[i]
    clamped = False
    for lv in levels:  # each level's input at most max_input long
        rows = _rows_of(level, lv)
        length = 0.0
        for i in rows:
            length += u[i] * u[i]
        length = np.sqrt(length)
        if length > max_input:
            factor = max_input / max(length, 1e-300)
            for i in rows:
                u[i] *= factor
            clamped = True
    s = np.empty(n)  # s = Δθ_src + K2 ẽ2
    for c in range(n):
        s[c] = (s_change[c] + g2 * s_error[c]) * root_w[c]
    step = np.zeros(n)
    if levels.size <= 1:  # Δθ = J⁺u + (I − J⁺J)s = s + J⁺(u − J s)
        for c in range(n):
            step[c] = s[c]
        if m > 0:
            r = u.copy()  # a row of activation a asks a (u − J s): (1 − a) of it as s goes
            for i in range(m):
                for c in range(n):
                    r[i] -= j[i, c] * s[c]
                r[i] *= activation[i]
            _damped_solve(u_top, sv_top, vt_top, r, damping, 0.0, step)
    else:
        # P = I − Bᵀ B: the rows of B span what the levels above have taken
        basis = np.empty((n, n))
        taken = 0
        for q in range(levels.size):
            rows = _rows_of(level, levels[q])
            # J_i P = U S Vᵀ: the step damped (S / (S² + λ²)), the projector exact (the
            # rows of Vᵀ with S above round-off leave P), so a lower level's step,
            # however large near its singularity, never leaks into the levels above.
            # S at round-off is a zero of J_i P (a level with more rows than freedoms
            # left): its row of Vᵀ is arbitrary, may point into the levels above, and
            # takes no part in the step either
            r = np.empty(rows.shape[0])
            for a in range(rows.shape[0]):
                r[a] = u[rows[a]]
                for c in range(n):
                    r[a] -= j[rows[a], c] * step[c]
            jp = _take_rows(j, rows)  # J_i P
            if q == 0:  # P = I
                u_svd, sv, vt = u_top, sv_top, vt_top
            else:
                for a in range(rows.shape[0]):
                    for b in range(taken):
                        dot = 0.0
                        for c in range(n):
                            dot += jp[a, c] * basis[b, c]
                        for c in range(n):
                            jp[a, c] -= dot * basis[b, c]
                u_svd, sv, vt = _svd(jp)
            # a row of activation a asks for a of its input and (1 − a) of the motion the
            # levels above and the secondary task would give it, J_i (Δ_{i−1} + P_{i−1} s):
            # r = a (u_i − J_i Δ_{i−1}) + (1 − a) J_i P_{i−1} s
            for a in range(rows.shape[0]):
                act = activation[rows[a]]
                if act < 1.0:
                    free = 0.0
                    for c in range(n):
                        free += jp[a, c] * s[c]
                    r[a] = act * r[a] + (1.0 - act) * free
            cut = 1e-9 * max(sv[0], 1e-300)
            _damped_solve(u_svd, sv, vt, r, damping, cut, step)
            for k in range(sv.shape[0]):
                if sv[k] > cut and taken < n:
                    for c in range(n):
                        basis[taken, c] = vt[k, c]
                    taken += 1
        step += s  # Δ_L + P_L s
        for b in range(taken):
            dot = 0.0
            for c in range(n):
                dot += basis[b, c] * s[c]
            for c in range(n):
                step[c] -= dot * basis[b, c]
    for c in range(n):
        delta[c] = step[c] / root_w[c]
    return dex, gain, clamped


@numba.njit(cache=True, nogil=True)
def _rate_step_rows(problems, settings, delta, dex, gain, clamped):  # pragma: no cover - jitted
    """:func:`rate_step_kernel` over a batch: ``problems`` its first eight arguments,
    each with a leading batch axis (B, ·) but ``root_w`` and ``level``; writes
    ``delta`` (B, n), ``dex``, ``gain``, ``clamped`` (B,)."""
    jac, change, error, s_change, s_error, root_w, level, activation = problems
    for b in range(jac.shape[0]):
        dex[b], gain[b], clamped[b] = rate_step_kernel(
            jac[b], change[b], error[b], s_change[b], s_error[b], root_w, level,
            activation[b], settings, delta[b],
        )  # fmt: skip


@numba.njit(cache=True, nogil=True)
def _dls_rows(jac, damping, out):  # pragma: no cover - jitted
    for b in range(jac.shape[0]):
        out[b] = _dls_of(jac[b], damping)


@numba.njit(cache=True, nogil=True)
def _dexterity_rows(jac, out):  # pragma: no cover - jitted
    for b in range(jac.shape[0]):
        out[b] = _dexterity_of(jac[b])
