"""The closest points of pairs of segments, compiled: the inner loop of
:class:`retarget.tasks.CollisionTask`.

A robot's links kept apart are a few hundred pairs of capsules, checked at every frame
of a clip (which frames a fit must constrain) and at every evaluation of a solver's
residual; :func:`retarget.tasks.collision.closest_points` in numpy builds some thirty
temporary arrays of that size per call, and on the LAFAN walk onto JVRC-1 it took
three quarters of ``hierarchical``'s time. The same computation, pair by pair in one
compiled loop, is what numpy cannot vectorise without those temporaries; the IK pass's
compiled frame loop (:mod:`retarget.ik._kernels.newton`) calls :func:`closest` too.
``tests/test_collision.py`` checks it against the numpy function.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["closest", "closest_pairs", "gaps_below"]


@numba.njit(cache=True, nogil=True)
def closest(p0, p1, q0, q1):  # pragma: no cover - jitted
    """Parameters ``s``, ``t`` of the closest points of segments ``[p0, p1]``,
    ``[q0, q1]`` (3-tuples): :func:`retarget.tasks.collision.closest_points`."""
    d1 = (p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2])
    d2 = (q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2])
    r = (p0[0] - q0[0], p0[1] - q0[1], p0[2] - q0[2])
    a = d1[0] * d1[0] + d1[1] * d1[1] + d1[2] * d1[2]
    e = d2[0] * d2[0] + d2[1] * d2[1] + d2[2] * d2[2]
    f = d2[0] * r[0] + d2[1] * r[1] + d2[2] * r[2]
    c = d1[0] * r[0] + d1[1] * r[1] + d1[2] * r[2]
    bb = d1[0] * d2[0] + d1[1] * d2[1] + d1[2] * d2[2]
    pa, pe = a > 0.0, e > 0.0
    a_ = a if pa else 1.0
    e_ = e if pe else 1.0
    denom = a * e - bb * bb
    s = (bb * f - c * e) / denom if denom > 1e-12 * a * e else 0.0
    s = min(max(s, 0.0), 1.0)
    t = (bb * s + f) / e_
    if t < 0.0:
        s = min(max(-c / a_, 0.0), 1.0)
    elif t > 1.0:
        s = min(max((bb - c) / a_, 0.0), 1.0)
    t = min(max(t, 0.0), 1.0)
    if not pe:
        s = min(max(-c / a_, 0.0), 1.0)
        t = 0.0
    if not pa:
        t = min(max(f / e_, 0.0), 1.0)
        s = 0.0
    best_s, best_t, best = s, t, np.inf
    for k in range(5):
        if k == 0:
            cs, ct = s, t
        elif k == 1:
            cs, ct = 0.0, min(max(f / e_, 0.0), 1.0)
        elif k == 2:
            cs, ct = 1.0, min(max((f + bb) / e_, 0.0), 1.0)
        elif k == 3:
            cs, ct = min(max(-c / a_, 0.0), 1.0), 0.0
        else:
            cs, ct = min(max((bb - c) / a_, 0.0), 1.0), 1.0
        gx = r[0] + cs * d1[0] - ct * d2[0]
        gy = r[1] + cs * d1[1] - ct * d2[1]
        gz = r[2] + cs * d1[2] - ct * d2[2]
        dist = gx * gx + gy * gy + gz * gz
        if dist < best:
            best_s, best_t, best = cs, ct, dist
    return best_s, best_t


@numba.njit(cache=True, nogil=True)
def closest_pairs(a, b, pairs, ca, cb):  # pragma: no cover - jitted
    """Closest points of segments ``[a_i, b_i]`` and ``[a_k, b_k]`` for each pair ``(i, k)``
    (:func:`closest`): ``a``, ``b`` (N, C, 3) each batch row's segment ends, ``pairs``
    (P, 2); writes ``ca``, ``cb`` (N, P, 3)."""
    for n in range(a.shape[0]):
        for p in range(pairs.shape[0]):
            i, k = pairs[p, 0], pairs[p, 1]
            p0 = (a[n, i, 0], a[n, i, 1], a[n, i, 2])
            p1 = (b[n, i, 0], b[n, i, 1], b[n, i, 2])
            q0 = (a[n, k, 0], a[n, k, 1], a[n, k, 2])
            q1 = (b[n, k, 0], b[n, k, 1], b[n, k, 2])
            s, t = closest(p0, p1, q0, q1)
            for c in range(3):
                ca[n, p, c] = p0[c] + s * (p1[c] - p0[c])
                cb[n, p, c] = q0[c] + t * (q1[c] - q0[c])


@numba.njit(cache=True, nogil=True)
def gaps_below(a, b, radius, pairs, margin, below, out):  # pragma: no cover - jitted
    """Each pair's ``|c_a − c_b| − r_a − r_b − margin`` (N, P) into ``out``, exact where it
    is under ``below``; elsewhere a lower bound over ``below`` (the capsules' bounding
    spheres, ``|m_a − m_b| − reach_a − reach_b − margin`` with ``m`` the segment's
    middle and ``reach`` half its length plus its radius): which pairs are near, without
    the closest points of the many that are far."""
    reach = np.empty(a.shape[1])
    for n in range(a.shape[0]):
        for i in range(a.shape[1]):
            x = b[n, i, 0] - a[n, i, 0]
            y = b[n, i, 1] - a[n, i, 1]
            z = b[n, i, 2] - a[n, i, 2]
            reach[i] = 0.5 * np.sqrt(x * x + y * y + z * z) + radius[i]
        for p in range(pairs.shape[0]):
            i, k = pairs[p, 0], pairs[p, 1]
            x = 0.5 * (a[n, i, 0] + b[n, i, 0] - a[n, k, 0] - b[n, k, 0])
            y = 0.5 * (a[n, i, 1] + b[n, i, 1] - a[n, k, 1] - b[n, k, 1])
            z = 0.5 * (a[n, i, 2] + b[n, i, 2] - a[n, k, 2] - b[n, k, 2])
            far = np.sqrt(x * x + y * y + z * z) - reach[i] - reach[k] - margin[p]
            if far >= below:
                out[n, p] = far
                continue
            p0 = (a[n, i, 0], a[n, i, 1], a[n, i, 2])
            p1 = (b[n, i, 0], b[n, i, 1], b[n, i, 2])
            q0 = (a[n, k, 0], a[n, k, 1], a[n, k, 2])
            q1 = (b[n, k, 0], b[n, k, 1], b[n, k, 2])
            s, t = closest(p0, p1, q0, q1)
            d = 0.0
            for c in range(3):
                g = p0[c] + s * (p1[c] - p0[c]) - q0[c] - t * (q1[c] - q0[c])
                d += g * g
            out[n, p] = np.sqrt(d) - radius[i] - radius[k] - margin[p]
