"""The compiled recursion of Shin et al.'s sensor filter (numba; private): ``_filter_frames``
runs predict and correct over the frames of :class:`retarget.filters.kalman.SensorFilter`,
whose docstring gives the equations and why the recursion is compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ...core._kernels.quat import _product, _rotvec_from_wxyz, _wxyz_from_rotvec

__all__: list[str] = []


# -- the compiled recursion ---------------------------------------------------------------
# State order (eq. 1): x = (p, ṗ, r, ṙ). The measured components H x = (p, r) are
# x[a] for a = k + 3 (k // 3), k = 0..5 (indices 0, 1, 2, 6, 7, 8); their rates are
# x[a + 3]. A = I + Δt (a ← a + 3) (eq. 3), H picks the rows a (eq. 6).


@numba.njit(cache=True, nogil=True)
def _start(p, o, P0, x, P, q_e):  # pragma: no cover - jitted
    """The state of a sensor's first measured frame: ``p`` measured, ``r`` and rates zero."""
    for i in range(12):
        x[i] = p[i] if i < 3 else 0.0
        for j in range(12):
            P[i, j] = P0[i, j]
    norm = np.sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3])
    for c in range(4):
        q_e[c] = o[c] / norm


@numba.njit(cache=True, nogil=True)
def _predict_covariance(P, Q, dt):  # pragma: no cover - jitted
    """Eq. (4), in place: ``P ← A P Aᵀ + Q``."""
    for k in range(6):
        a = k + 3 * (k // 3)
        for j in range(12):
            P[a, j] += dt * P[a + 3, j]
    for k in range(6):
        a = k + 3 * (k // 3)
        for i in range(12):
            P[i, a] += dt * P[i, a + 3]
    for i in range(12):
        for j in range(12):
            P[i, j] += Q[i, j]


@numba.njit(cache=True, nogil=True)
def _gain_and_correct_covariance(P, R, K, T, Y, HP):  # pragma: no cover - jitted
    """Eqs. (7) and (9), in place: ``K = P⁻Hᵀ(HP⁻Hᵀ + R)⁻¹``, ``P ← (I − KH)P⁻``.

    ``K`` solves ``K S = P⁻Hᵀ``, i.e. ``Sᵀ Kᵀ = (P⁻Hᵀ)ᵀ``, by Gaussian elimination
    with partial pivoting on ``T = Sᵀ`` and the right-hand sides ``Y`` (half the
    work of forming ``S⁻¹``). ``T`` (6, 6), ``Y`` (6, 12) and ``HP`` (6, 12) are
    scratch. Small arrays are filled element by element (numba's slice
    assignment costs ~100 ns) and the innermost loops run along rows.
    """
    for k in range(6):
        a = k + 3 * (k // 3)
        for j in range(12):
            HP[k, j] = P[a, j]  # H P⁻
            Y[k, j] = P[j, a]  # (P⁻ Hᵀ)ᵀ
    for k in range(6):
        a = k + 3 * (k // 3)
        for m in range(6):
            T[k, m] = HP[m, a] + R[m, k]  # Sᵀ = (H P⁻ Hᵀ + R)ᵀ
    for c in range(6):
        pivot = c
        for r in range(c + 1, 6):
            if abs(T[r, c]) > abs(T[pivot, c]):
                pivot = r
        if pivot != c:
            for j in range(6):
                T[c, j], T[pivot, j] = T[pivot, j], T[c, j]
            for j in range(12):
                Y[c, j], Y[pivot, j] = Y[pivot, j], Y[c, j]
        for r in range(c + 1, 6):
            f = T[r, c] / T[c, c]
            for j in range(c + 1, 6):
                T[r, j] -= f * T[c, j]
            for j in range(12):
                Y[r, j] -= f * Y[c, j]
    for c in range(5, -1, -1):
        for m in range(c + 1, 6):
            t = T[c, m]
            for j in range(12):
                Y[c, j] -= t * Y[m, j]
        d = 1.0 / T[c, c]
        for j in range(12):
            Y[c, j] *= d
    for i in range(12):
        for k in range(6):
            K[i, k] = Y[k, i]
    for i in range(12):  # P = P⁻ − K (H P⁻)
        for k in range(6):
            kik = K[i, k]
            for j in range(12):
                P[i, j] -= kik * HP[k, j]


@numba.njit(cache=True, nogil=True)
def _filter_frames(
    positions, orientations, dt, Q, R, P0, x, P, K, q_e, started, steady, out
):  # pragma: no cover - jitted
    """Eqs. (2)-(10) for every frame and sensor, updating the state in place.

    Parameters
    ----------
    positions : (F, S, 3)
    orientations : (F, S, 4)
        Measurements; a row with a non-finite value is dropped (predicted only).
    dt : float
        ``Δt``, seconds.
    Q : (12, 12)
    R : (S, 6, 6)
    P0 : (S, 12, 12)
        The covariance of a sensor's first measured frame.
    x : (S, 12)
    P : (S, 12, 12)
    K : (S, 12, 6)
    q_e : (S, 4)
    started, steady : (S,) bool
        The filter state: ``x̂`` (with ``r̂ = 0``), ``P``, the last gain, ``q_e``,
        "measured at least once", "``P`` is a fixed point of eqs. (4), (7), (9)".
    out : (F, S, 13)
        Written: ``p̂``, ``q_e``, ``ṗ``, ``ṙ`` after each frame (NaN before a
        sensor's first measurement).

    Returns
    -------
    int
        -1, or ``f S + s`` of the first zero quaternion ``orientations[f, s]``:
        then nothing is filtered and the state is untouched.
    """
    for f in range(orientations.shape[0]):
        for s in range(orientations.shape[1]):
            o = orientations[f, s]
            if o[0] == 0.0 and o[1] == 0.0 and o[2] == 0.0 and o[3] == 0.0:
                return f * orientations.shape[1] + s
    T = np.empty((6, 6))
    Y = np.empty((6, 12))
    HP = np.empty((6, 12))
    previous = np.empty((12, 12))
    dz = np.empty(6)
    for f in range(positions.shape[0]):
        for s in range(positions.shape[1]):
            p = positions[f, s]
            o = orientations[f, s]
            measured = True
            for c in range(3):
                measured = measured and np.isfinite(p[c])
            for c in range(4):
                measured = measured and np.isfinite(o[c])
            xs, Ps, Ks, qs = x[s], P[s], K[s], q_e[s]
            if not started[s]:
                if measured:
                    _start(p, o, P0[s], xs, Ps, qs)
                    started[s] = True
                    steady[s] = False
                else:
                    for c in range(13):
                        out[f, s, c] = np.nan
                    continue
            else:
                # eq. (3): x⁻ = A x̂ (r̂ is 0 since the last frame, so r⁻ = Δt ṙ)
                for k in range(6):
                    a = k + 3 * (k // 3)
                    xs[a] += dt * xs[a + 3]
                if not (measured and steady[s]):
                    for i in range(12):
                        for j in range(12):
                            previous[i, j] = Ps[i, j]
                    _predict_covariance(Ps, Q, dt)  # eq. (4)
                    if measured:
                        _gain_and_correct_covariance(Ps, R[s], Ks, T, Y, HP)
                        changed = 0
                        for i in range(12):
                            for j in range(12):
                                changed += Ps[i, j] != previous[i, j]
                        steady[s] = changed == 0
                    else:
                        steady[s] = False
                if measured:
                    # eq. (2): r = log(q_e(t − Δt)⁻¹ q(t)); log takes the shortest arc,
                    # so q and −q give the same r (the sign whose dot with q_e is ≥ 0)
                    d = _product(qs[0], -qs[1], -qs[2], -qs[3], o[0], o[1], o[2], o[3])
                    r = _rotvec_from_wxyz(d[0], d[1], d[2], d[3])
                    for c in range(3):  # eq. (8): Δz = z − H x⁻
                        dz[c] = p[c] - xs[c]
                        dz[3 + c] = r[c] - xs[6 + c]
                    for i in range(12):  # eq. (9): x̂ = x⁻ + K Δz
                        acc = 0.0
                        for k in range(6):
                            acc += Ks[i, k] * dz[k]
                        xs[i] += acc
                # eq. (10): q_e(t) = q_e(t − Δt) exp(r̂(t)), renormalised; then r̂ = 0
                e = _wxyz_from_rotvec(xs[6], xs[7], xs[8])
                w, qx, qy, qz = _product(qs[0], qs[1], qs[2], qs[3], e[0], e[1], e[2], e[3])
                norm = np.sqrt(w * w + qx * qx + qy * qy + qz * qz)
                qs[0], qs[1], qs[2], qs[3] = w / norm, qx / norm, qy / norm, qz / norm
                xs[6] = xs[7] = xs[8] = 0.0
            for c in range(3):
                out[f, s, c] = xs[c]
                out[f, s, 7 + c] = xs[3 + c]
                out[f, s, 10 + c] = xs[9 + c]
            for c in range(4):
                out[f, s, 3 + c] = qs[c]
    return -1
