"""The compiled search of Shin et al.'s root estimation (numba; private to the library's
compiled code): :func:`closest_in_balls_frame`, the closest point of a common intersection
of balls for one frame on 3-tuples, and ``_closest_kernel``, over frames; the public
:mod:`retarget.ik.root` checks and batches, the puppetry kernel
(:mod:`retarget.online._kernels.puppetry`) calls the frame. Method, tolerances and why
compiled: the docstring of :mod:`retarget.ik.root`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...core._kernels.vec3 import add as _add
from ...core._kernels.vec3 import cross as _cross
from ...core._kernels.vec3 import dot as _dot
from ...core._kernels.vec3 import norm as _norm
from ...core._kernels.vec3 import scale as _mul
from ...core._kernels.vec3 import sub as _sub

__all__ = ["closest_in_balls_frame"]

#: τ_i / (r_i + S): "inside a ball" tolerance (:mod:`retarget.ik.root`, "Tolerances")
_INSIDE_RTOL = 1e-9
#: centres closer than this times (S + r_i + r_j) are coincident
_COINCIDENT_RTOL = 1e-12
# BallEstimate.case
_INTERIOR, _SPHERE, _CIRCLE, _VERTEX = 0, 1, 2, 3


# -- compiled geometry on 3-tuples ----------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _row(a, i):  # pragma: no cover - jitted
    return (a[i, 0], a[i, 1], a[i, 2])


@numba.njit(cache=True, nogil=True)
def _perpendicular(n):  # pragma: no cover - jitted
    """A unit vector perpendicular to the unit vector ``n``."""
    if abs(n[0]) <= abs(n[1]) and abs(n[0]) <= abs(n[2]):
        v = _cross(n, (1.0, 0.0, 0.0))
    elif abs(n[1]) <= abs(n[2]):
        v = _cross(n, (0.0, 1.0, 0.0))
    else:
        v = _cross(n, (0.0, 0.0, 1.0))
    return _mul(v, 1.0 / _norm(v))


@numba.njit(cache=True, nogil=True)
def _coordinate_scale(c, r):  # pragma: no cover - jitted
    """``S``: the largest ``|c_j|`` over the balls of finite radius."""
    s = 0.0
    for i in range(r.shape[0]):
        if r[i] < np.inf:
            s = max(s, _norm(_row(c, i)))
    return s


@numba.njit(cache=True, nogil=True)
def _inside_all(x, c, r, kept, scale):  # pragma: no cover - jitted
    """``x`` is inside every kept ball (within τ_i)."""
    for i in range(r.shape[0]):
        if kept[i] and _norm(_sub(x, _row(c, i))) > r[i] + _INSIDE_RTOL * (r[i] + scale):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _meet(ci, cj, ri, rj, scale, coincident):  # pragma: no cover - jitted
    """The circle where the spheres (ci, ri), (cj, rj) meet (Appendix, eqs. 25-30).

    Returns ``(exists, c_c, n, r_c)``: centre, unit normal (from ``ci`` to ``cj``)
    and radius; tangent spheres meet at a circle of radius 0. Also serves for
    two circles in one plane (eqs. 34-35), which meet in the same way.
    """
    d = _sub(cj, ci)
    dist = _norm(d)
    slack = _INSIDE_RTOL * (ri + rj + 2.0 * scale)
    if dist <= coincident or dist > ri + rj + slack or dist < abs(ri - rj) - slack:
        return False, ci, ci, 0.0
    x = ((ri - rj) * (ri + rj) + dist * dist) / (2.0 * dist)  # eq. (28)
    n = _mul(d, 1.0 / dist)  # eq. (30)
    c_c = _add(ci, _mul(n, x))  # eq. (29)
    r_c = math.sqrt(max((ri - x) * (ri + x), 0.0))  # eqs. (25), (27)
    return True, c_c, n, r_c


@numba.njit(cache=True, nogil=True)
def _bounded(kept, r, i):  # pragma: no cover - jitted
    """Ball ``i`` is kept and is a sphere (``r_i < ∞``)."""
    return kept[i] and r[i] < np.inf


@numba.njit(cache=True, nogil=True)
def _circle(c, r, scale, i, j):  # pragma: no cover - jitted
    """The circle where spheres ``i`` and ``j`` meet (:func:`_meet`, eqs. 25-30)."""
    coincident = _COINCIDENT_RTOL * (scale + r[i] + r[j])
    return _meet(_row(c, i), _row(c, j), r[i], r[j], scale, coincident)


@numba.njit(cache=True, nogil=True)
def _closer(q, dist, best, found, c, r, kept, scale):  # pragma: no cover - jitted
    """``(dist, q)`` when the candidate ``q`` at ``dist`` beats ``best`` and lies in
    every kept ball, else ``(best, found)``."""
    if dist < best and _inside_all(q, c, r, kept, scale):
        return dist, q
    return best, found


@numba.njit(cache=True, nogil=True)
def _project(p, c, r, kept, scale, proj, out):  # pragma: no cover - jitted
    """The closest point to ``p`` of the kept balls' intersection, level by level.

    Writes it to ``out`` and returns its case (0-3), or returns -1 when no level
    keeps a candidate (empty intersection). ``proj`` (n, 3) is scratch: the
    projection of ``p`` on each ball.
    """
    nb = r.shape[0]
    if _inside_all(p, c, r, kept, scale):
        out[0], out[1], out[2] = p
        return _INTERIOR
    best = np.inf
    found = p
    # 1. spheres: the closest point on sphere i, for the balls p lies outside of
    for i in range(nb):
        q = p
        if _bounded(kept, r, i):
            ci = _row(c, i)
            v = _sub(p, ci)
            dist = _norm(v)
            if dist > r[i]:
                q = _add(ci, _mul(v, r[i] / dist))
                best, found = _closer(q, dist - r[i], best, found, c, r, kept, scale)
        proj[i, 0], proj[i, 1], proj[i, 2] = q
    if best < np.inf:
        out[0], out[1], out[2] = found
        return _SPHERE
    # 2. circles: the closest point on the circle of spheres i, j (eqs. 25-31)
    for i in range(nb):
        for j in range(i + 1, nb):
            if not (_bounded(kept, r, i) and _bounded(kept, r, j)):
                continue
            # faces p: neither ball's projection of p lies (clearly) inside the other ball
            if _norm(_sub(_row(proj, i), _row(c, j))) < r[j] - _INSIDE_RTOL * (r[j] + scale):
                continue
            if _norm(_sub(_row(proj, j), _row(c, i))) < r[i] - _INSIDE_RTOL * (r[i] + scale):
                continue
            exists, c_c, n, r_c = _circle(c, r, scale, i, j)
            if not exists:
                continue
            w = _sub(p, c_c)
            radial = _sub(w, _mul(n, _dot(n, w)))  # p̂ − c_c, p̂ = p + h
            length = _norm(radial)
            # p on the circle's axis: every point of it is equally close
            u = _mul(radial, 1.0 / length) if length > 0.0 else _perpendicular(n)
            q = _add(c_c, _mul(u, r_c))  # eq. (31)
            best, found = _closer(q, _norm(_sub(q, p)), best, found, c, r, kept, scale)
    if best < np.inf:
        out[0], out[1], out[2] = found
        return _CIRCLE
    # 3. vertices of three spheres (eqs. 32-35)
    for i in range(nb):
        if not _bounded(kept, r, i):
            continue
        for j in range(i + 1, nb):
            if not _bounded(kept, r, j):
                continue
            exists, c_c1, n, r_c1 = _circle(c, r, scale, i, j)
            if not exists:
                continue
            for k in range(j + 1, nb):
                if not _bounded(kept, r, k):
                    continue
                ck = _row(c, k)
                h = _mul(n, _dot(n, _sub(c_c1, ck)))
                c_c2 = _add(ck, h)  # eq. (32)
                height = _norm(h)
                if height > r[k] + _INSIDE_RTOL * (r[k] + scale):
                    continue  # sphere k misses the plane of circle C1
                r_c2 = math.sqrt(max((r[k] - height) * (r[k] + height), 0.0))  # eq. (33)
                coincident = _COINCIDENT_RTOL * (scale + r[i] + r[j] + r[k])
                exists, c_v, d, r_v = _meet(c_c1, c_c2, r_c1, r_c2, scale, coincident)
                if not exists:
                    continue  # C2 misses C1, or the three centres are collinear
                u = _cross(n, d)
                u = _mul(u, 1.0 / _norm(u))
                for sign in (1.0, -1.0):
                    q = _add(c_v, _mul(u, sign * r_v))  # v_1, v_2 (eqs. 34-35)
                    best, found = _closer(q, _norm(_sub(q, p)), best, found, c, r, kept, scale)
    if best < np.inf:
        out[0], out[1], out[2] = found
        return _VERTEX
    return -1


@numba.njit(cache=True, nogil=True)
def closest_in_balls_frame(p, c, r, w, proj, out, kept):  # pragma: no cover - jitted
    """One frame of :func:`closest_in_balls`, compiled, for numba kernels that pose one
    frame at a time (:mod:`retarget.online._kernels.puppetry`); unchecked.

    Parameters
    ----------
    p : 3-tuple of float
        The point (the offset root).
    c : ndarray, shape (n, 3)
        The balls' centres.
    r : ndarray, shape (n,)
        Their radii (``inf``: all of space).
    w : ndarray, shape (n,)
        Their importance (which balls are dropped first).
    proj : ndarray, shape (n, 3)
        Scratch space.
    out : ndarray, shape (3,)
        Written: the closest point.
    kept : ndarray of bool, shape (n,)
        Written: the balls the answer satisfies (:attr:`BallEstimate.kept`).

    Returns
    -------
    int
        The case (:attr:`BallEstimate.case`).
    """
    nb = r.shape[0]
    scale = _coordinate_scale(c, r)
    kept[:] = True
    case = _project(p, c, r, kept, scale, proj, out)
    if case >= 0:
        return case
    m = -1  # the most important ball of finite radius (ties: lowest index)
    for i in range(nb):
        if r[i] < np.inf and (m < 0 or w[i] > w[m]):
            m = i
    # Shin et al.: discard the balls that do not meet the most important one
    cm = _row(c, m)
    for i in range(nb):
        slack = _INSIDE_RTOL * (r[i] + r[m] + 2.0 * scale)
        if _norm(_sub(_row(c, i), cm)) > r[i] + r[m] + slack:
            kept[i] = False
    case = _project(p, c, r, kept, scale, proj, out)
    # extension: then the least important other ball (ties: highest index), one at a time
    while case < 0:
        j = -1
        for i in range(nb):
            if kept[i] and i != m and r[i] < np.inf and (j < 0 or w[i] <= w[j]):
                j = i
        kept[j] = False
        case = _project(p, c, r, kept, scale, proj, out)
    return case


@numba.njit(cache=True, nogil=True)
def _invalid_input(p, c, r, w):  # pragma: no cover - jitted
    """0 if the (F, ...) inputs are valid, else the first bad one: 1 point, 2 centers,
    3 radii, 4 importance (messages in ``_INVALID``)."""
    for f in range(r.shape[0]):
        for k in range(3):
            if not math.isfinite(p[f, k]):
                return 1
        for i in range(r.shape[1]):
            for k in range(3):
                if not math.isfinite(c[f, i, k]):
                    return 2
            if not r[f, i] >= 0.0:  # also NaN; inf is allowed
                return 3
            if not (math.isfinite(w[f, i]) and w[f, i] >= 0.0):
                return 4
    return 0


@numba.njit(cache=True, nogil=True)
def _closest_kernel(p, c, r, w, position, kept, case, moved, inside):  # pragma: no cover - jitted
    """:func:`closest_in_balls_frame` over the frames of (F, ...) arrays, after checking them.

    Also writes ``inside`` (F, n): the answer lies in ball ``i`` (within τ_i),
    kept or not. Returns the code of :func:`_invalid_input` (the outputs are
    written only when it is 0).
    """
    invalid = _invalid_input(p, c, r, w)
    if invalid:
        return invalid
    proj = np.empty((r.shape[1], 3))
    for f in range(p.shape[0]):
        pf = _row(p, f)
        case[f] = closest_in_balls_frame(pf, c[f], r[f], w[f], proj, position[f], kept[f])
        x = _row(position, f)
        moved[f] = _norm(_sub(x, pf))
        scale = _coordinate_scale(c[f], r[f])
        for i in range(r.shape[1]):
            slack = _INSIDE_RTOL * (r[f, i] + scale)
            inside[f, i] = _norm(_sub(x, _row(c[f], i))) <= r[f, i] + slack
    return 0
