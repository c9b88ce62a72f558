"""Compiled kernels of the height field (numba): evaluation of the bicubic B-spline, the
damped Newton descent to a closest point and the branch and bound over cells.

Written here rather than taken from a library: they are the per-point core that every
contact and penetration query of :class:`~retarget.environment.HeightField` runs (about
0.3 µs a point), and no library of the field evaluates an interpolating B-spline surface
with certified closest points. Kept apart so that ``import retarget.environment`` does not
load numba: the first query of a height field does.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# -- height field: numba kernels ---------------------------------------------------------

_MAX_NEWTON = 50
_ARMIJO = 1e-4


@numba.njit(cache=True, nogil=True)
def _axis(s, n):  # pragma: no cover - jitted
    """Cell index, local parameter and derivative factor of grid coordinate ``s``.

    Outside ``[0, n - 1]`` (and for NaN) ``s`` is clamped and the factor is 0:
    the surface continues with the edge values.
    """
    f = 1.0
    if s >= 0.0:
        if s > n - 1.0:
            s = n - 1.0
            f = 0.0
    else:
        s = 0.0
        f = 0.0
    i = int(s)
    if i > n - 2:
        i = n - 2
    return i, s - i, f


@numba.njit(cache=True, nogil=True)
def _bspline(t):  # pragma: no cover - jitted
    """Uniform cubic B-spline basis at ``t`` in [0, 1] and its two derivatives."""
    u = 1.0 - t
    t2 = t * t
    t3 = t2 * t
    return (
        u * u * u / 6.0,
        (3.0 * t3 - 6.0 * t2 + 4.0) / 6.0,
        (-3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0) / 6.0,
        t3 / 6.0,
        -0.5 * u * u,
        1.5 * t2 - 2.0 * t,
        -1.5 * t2 + t + 0.5,
        0.5 * t2,
        u,
        3.0 * t - 2.0,
        1.0 - 3.0 * t,
        t,
    )


@numba.njit(cache=True, nogil=True)
def _hf_eval(C, x0, z0, dx, dz, x, z):  # pragma: no cover - jitted
    """h, h_x, h_z, h_xx, h_xz, h_zz at (x, z).

    ``C`` (nx + 2, nz + 2) are the control points padded by mirroring, so
    cell (i, j) reads ``C[i:i + 4, j:j + 4]``.
    """
    i, t, fx = _axis((x - x0) / dx, C.shape[0] - 2)
    j, w, fz = _axis((z - z0) / dz, C.shape[1] - 2)
    bx = _bspline(t)
    b0, b1, b2, b3, d0, d1, d2, d3, e0, e1, e2, e3 = _bspline(w)
    h = hx = hz = hxx = hxz = hzz = 0.0
    for a in range(4):
        c0 = C[i + a, j]
        c1 = C[i + a, j + 1]
        c2 = C[i + a, j + 2]
        c3 = C[i + a, j + 3]
        r = b0 * c0 + b1 * c1 + b2 * c2 + b3 * c3
        rz = d0 * c0 + d1 * c1 + d2 * c2 + d3 * c3
        rzz = e0 * c0 + e1 * c1 + e2 * c2 + e3 * c3
        h += bx[a] * r
        hx += bx[4 + a] * r
        hxx += bx[8 + a] * r
        hz += bx[a] * rz
        hxz += bx[4 + a] * rz
        hzz += bx[a] * rzz
    return (
        h,
        hx * fx / dx,
        hz * fz / dz,
        hxx * fx / (dx * dx),
        hxz * fx * fz / (dx * dz),
        hzz * fz / (dz * dz),
    )


@numba.njit(cache=True, nogil=True)
def _hf_descend(C, x0, z0, dx, dz, px, py, pz, ux, uz, tol):  # pragma: no cover - jitted
    """Damped Newton on f(u) = ½ |p - (u_x, h(u), u_z)|² from ``u``; returns (u_x, u_z, f).

    Gradient and Hessian of f, with r = p - S(u):

        g = u - p_xz - r_y ∇h,    H = I + ∇h ∇hᵀ - r_y ∇²h.

    Where H is not positive definite, the Gauss-Newton matrix I + ∇h ∇hᵀ
    (always positive definite) replaces it; an Armijo backtracking line
    search makes every step decrease f.
    """
    h, hx, hz, hxx, hxz, hzz = _hf_eval(C, x0, z0, dx, dz, ux, uz)
    rx = px - ux
    ry = py - h
    rz = pz - uz
    f = 0.5 * (rx * rx + ry * ry + rz * rz)
    for _ in range(_MAX_NEWTON):
        gx = -rx - ry * hx
        gz = -rz - ry * hz
        a = 1.0 + hx * hx
        b = hx * hz
        c = 1.0 + hz * hz
        na = a - ry * hxx
        nb = b - ry * hxz
        nc = c - ry * hzz
        det = na * nc - nb * nb
        if na > 0.0 and det > 1e-12 * na * nc:  # Newton
            a, b, c = na, nb, nc
        else:  # Gauss-Newton
            det = a * c - b * b
        sx = -(c * gx - b * gz) / det
        sz = -(a * gz - b * gx) / det
        slope = gx * sx + gz * sz
        if not slope < 0.0:  # stationary (or non-finite)
            break
        if sx * sx + sz * sz <= tol * tol or -slope <= 1e-14 * f:
            # converged: take the last (quadratically small) step without a line
            # search, whose decrease would be lost in round-off
            ux += sx
            uz += sz
            h = _hf_eval(C, x0, z0, dx, dz, ux, uz)[0]
            rx = px - ux
            ry = py - h
            rz = pz - uz
            f = 0.5 * (rx * rx + ry * ry + rz * rz)
            break
        alpha = 1.0
        accepted = False
        vx = ux
        vz = uz
        fn = f
        for _ in range(30):
            vx = ux + alpha * sx
            vz = uz + alpha * sz
            h, hx, hz, hxx, hxz, hzz = _hf_eval(C, x0, z0, dx, dz, vx, vz)
            rx = px - vx
            ry = py - h
            rz = pz - vz
            fn = 0.5 * (rx * rx + ry * ry + rz * rz)
            if fn <= f + _ARMIJO * alpha * slope:
                accepted = True
                break
            alpha *= 0.5
        if not accepted:  # no decrease left at round-off level: ux, uz is the minimum
            break
        ux = vx
        uz = vz
        f = fn
        if alpha < 1e-3:  # crawling: what is left of the decrease is round-off
            break
    return ux, uz, f


@numba.njit(cache=True, nogil=True)
def _cell_span(p, r, origin, spacing, n):  # pragma: no cover - jitted
    """First and last cell index whose interval meets [p - r, p + r] (clamped)."""
    lo = (p - r - origin) / spacing
    hi = (p + r - origin) / spacing
    lo = min(max(lo, 0.0), n - 2.0)
    hi = min(max(hi, 0.0), n - 2.0)
    return int(lo), int(hi)


@numba.njit(cache=True, nogil=True)
def _cell_interval(i, origin, spacing, n):  # pragma: no cover - jitted
    """The cell's interval; edge cells reach to infinity (the clamped outside)."""
    a = origin + i * spacing if i > 0 else -np.inf
    b = origin + (i + 1) * spacing if i < n - 2 else np.inf
    return a, b


@numba.njit(cache=True, nogil=True)
def _hf_search(
    C, lo, hi, x0, z0, dx, dz, px, py, pz, ux, uz, f, i0, i1, j0, j1, tol
):  # pragma: no cover - jitted
    """Branch and bound over the cells that might hold a point closer than √(2f).

    A cell's surface lies in the box [cell] × [lo, hi] (convex hull of its
    control points); cells whose box is farther than the best distance so far
    are skipped, the others are visited nearest first with a Newton descent
    from their point nearest to p.
    """
    nx = C.shape[0] - 2
    nz = C.shape[1] - 2
    m = (i1 - i0 + 1) * (j1 - j0 + 1)
    bound = np.empty(m)
    cell = np.empty(m, np.int64)
    k = 0
    for i in range(i0, i1 + 1):
        xa, xb = _cell_interval(i, x0, dx, nx)
        ex = max(xa - px, 0.0, px - xb)
        for j in range(j0, j1 + 1):
            za, zb = _cell_interval(j, z0, dz, nz)
            ez = max(za - pz, 0.0, pz - zb)
            ey = max(lo[i, j] - py, 0.0, py - hi[i, j])
            lb = 0.5 * (ex * ex + ey * ey + ez * ez)
            if lb < f:
                bound[k] = lb
                cell[k] = i * nz + j
                k += 1
    order = np.argsort(bound[:k])
    for n in range(k):
        idx = order[n]
        if bound[idx] >= f:
            break
        i = cell[idx] // nz
        j = cell[idx] - i * nz
        xa, xb = _cell_interval(i, x0, dx, nx)
        za, zb = _cell_interval(j, z0, dz, nz)
        sx = min(max(px, xa), xb)
        sz = min(max(pz, za), zb)
        if sx == px and sz == pz:  # the vertical start: already descended from there
            continue
        vx, vz, fn = _hf_descend(C, x0, z0, dx, dz, px, py, pz, sx, sz, tol)
        if fn < f:
            ux, uz, f = vx, vz, fn
    return ux, uz, f


@numba.njit(cache=True, nogil=True)
def _hf_closest(
    C, lo, hi, slope, curv, x0, z0, dx, dz, P, dist, point, normal
):  # pragma: no cover - jitted
    """Signed distance, closest point and normal of every row of ``P`` (N, 3).

    1. Newton from the point's own (x, z) gives u* at distance d* (<= the
       vertical distance).
    2. Certificate: the global minimiser lies within d* of p (horizontally),
       where |r_y| <= d* (1 + 2G) with G the largest slope; f's Hessian there
       is >= (1 - d* (1 + 2G) K) I with K the largest curvature (both bounds
       over the cells within d*). If d* (1 + 2G) K < 1, f is strictly convex
       on that disc and u* is the global minimum.
    3. Otherwise (far from a curved surface) a branch and bound over cells.
    """
    nx = C.shape[0] - 2
    nz = C.shape[1] - 2
    tol = 1e-7 * min(dx, dz)
    for k in range(P.shape[0]):
        px = P[k, 0]
        py = P[k, 1]
        pz = P[k, 2]
        if not (np.isfinite(px) and np.isfinite(py) and np.isfinite(pz)):
            dist[k] = np.nan
            for c in range(3):
                point[k, c] = np.nan
                normal[k, c] = np.nan
            continue
        h0 = _hf_eval(C, x0, z0, dx, dz, px, pz)[0]
        ux, uz, f = _hf_descend(C, x0, z0, dx, dz, px, py, pz, px, pz, tol)
        d = math.sqrt(2.0 * f)
        if d > 0.0:
            i0, i1 = _cell_span(px, d, x0, dx, nx)
            j0, j1 = _cell_span(pz, d, z0, dz, nz)
            G = 0.0
            K = 0.0
            for i in range(i0, i1 + 1):
                for j in range(j0, j1 + 1):
                    G = max(G, slope[i, j])
                    K = max(K, curv[i, j])
            if not d * (1.0 + 2.0 * G) * K < 1.0:
                ux, uz, f = _hf_search(
                    C, lo, hi, x0, z0, dx, dz, px, py, pz, ux, uz, f, i0, i1, j0, j1, tol
                )
        h, hx, hz, _, _, _ = _hf_eval(C, x0, z0, dx, dz, ux, uz)
        d = math.sqrt(2.0 * f)
        dist[k] = d if py >= h0 else -d
        point[k, 0] = ux
        point[k, 1] = h
        point[k, 2] = uz
        s = 1.0 / math.sqrt(1.0 + hx * hx + hz * hz)
        normal[k, 0] = -hx * s
        normal[k, 1] = s
        normal[k, 2] = -hz * s


@numba.njit(cache=True, nogil=True)
def _hf_height(C, x0, z0, dx, dz, XZ, height, gradient):  # pragma: no cover - jitted
    for k in range(XZ.shape[0]):
        x = XZ[k, 0]
        z = XZ[k, 1]
        if not (np.isfinite(x) and np.isfinite(z)):
            height[k] = np.nan
            gradient[k, 0] = np.nan
            gradient[k, 1] = np.nan
            continue
        h, hx, hz, _, _, _ = _hf_eval(C, x0, z0, dx, dz, x, z)
        height[k] = h
        gradient[k, 0] = hx
        gradient[k, 1] = hz
