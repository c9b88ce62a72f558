"""The compiled kernels of :mod:`retarget.targets.character.surface` (numba; private).

Per point, a pass over a body's triangles: the generalized winding number and the
nearest point (Ericson §5.1.5), the surface's smooth normals, the signed distances
frame by frame, and linear blend skinning. Our own: a library's mesh query builds a
tree for one surface, and here every frame is another surface.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ....core._kernels.quat4 import rotate

__all__: list[str] = []


@numba.njit(cache=True, nogil=True)
def _winding(points, tri, out_w):  # pragma: no cover - jitted
    """Per point (P, 3): the generalized winding number of the triangles (T, 3, 3)."""
    for p in range(points.shape[0]):
        px, py, pz = points[p, 0], points[p, 1], points[p, 2]
        total = 0.0
        for t in range(tri.shape[0]):
            ax, ay, az = tri[t, 0, 0] - px, tri[t, 0, 1] - py, tri[t, 0, 2] - pz
            bx, by, bz = tri[t, 1, 0] - px, tri[t, 1, 1] - py, tri[t, 1, 2] - pz
            cx, cy, cz = tri[t, 2, 0] - px, tri[t, 2, 1] - py, tri[t, 2, 2] - pz
            la = math.sqrt(ax * ax + ay * ay + az * az)
            lb = math.sqrt(bx * bx + by * by + bz * bz)
            lc = math.sqrt(cx * cx + cy * cy + cz * cz)
            det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
            den = (
                la * lb * lc
                + (ax * bx + ay * by + az * bz) * lc
                + (bx * cx + by * cy + bz * cz) * la
                + (cx * ax + cy * ay + cz * az) * lb
            )
            total += 2.0 * math.atan2(det, den)
        out_w[p] = total / (4.0 * math.pi)


@numba.njit(cache=True, nogil=True)
def _nearest(points, tri, centre, radius, cand, out_d, out_q, out_t):
    # pragma: no cover - jitted
    """Per point (P, 3): the distance to the nearest of the triangles ``cand`` of
    ``tri`` (T, 3, 3), that nearest point (P, 3) and triangle (P,); a triangle whose
    bounding sphere (``centre`` (T, 3), ``radius`` (T,)) lies farther than the best so
    far is passed over."""
    for p in range(points.shape[0]):
        px, py, pz = points[p, 0], points[p, 1], points[p, 2]
        best = np.inf
        bx_, by_, bz_ = 0.0, 0.0, 0.0
        bt = -1
        for t in cand:
            ox, oy, oz = centre[t, 0] - px, centre[t, 1] - py, centre[t, 2] - pz
            reach = best + radius[t]
            if ox * ox + oy * oy + oz * oz > reach * reach:
                continue
            ax, ay, az = tri[t, 0, 0] - px, tri[t, 0, 1] - py, tri[t, 0, 2] - pz
            bx, by, bz = tri[t, 1, 0] - px, tri[t, 1, 1] - py, tri[t, 1, 2] - pz
            cx, cy, cz = tri[t, 2, 0] - px, tri[t, 2, 1] - py, tri[t, 2, 2] - pz
            # the nearest point of the triangle (Ericson §5.1.5), relative to p: the
            # triangle a, b, c with the point at the origin
            abx, aby, abz = bx - ax, by - ay, bz - az
            acx, acy, acz = cx - ax, cy - ay, cz - az
            apx, apy, apz = -ax, -ay, -az
            d1 = abx * apx + aby * apy + abz * apz
            d2 = acx * apx + acy * apy + acz * apz
            if d1 <= 0.0 and d2 <= 0.0:
                qx, qy, qz = ax, ay, az
            else:
                bpx, bpy, bpz = -bx, -by, -bz
                d3 = abx * bpx + aby * bpy + abz * bpz
                d4 = acx * bpx + acy * bpy + acz * bpz
                cpx, cpy, cpz = -cx, -cy, -cz
                d5 = abx * cpx + aby * cpy + abz * cpz
                d6 = acx * cpx + acy * cpy + acz * cpz
                vc = d1 * d4 - d3 * d2
                vb = d5 * d2 - d1 * d6
                va = d3 * d6 - d5 * d4
                if d3 >= 0.0 and d4 <= d3:
                    qx, qy, qz = bx, by, bz
                elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
                    v = d1 / (d1 - d3) if d1 > d3 else 0.0  # (a == b: a degenerate edge)
                    qx, qy, qz = ax + v * abx, ay + v * aby, az + v * abz
                elif d6 >= 0.0 and d5 <= d6:
                    qx, qy, qz = cx, cy, cz
                elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
                    w = d2 / (d2 - d6) if d2 > d6 else 0.0
                    qx, qy, qz = ax + w * acx, ay + w * acy, az + w * acz
                elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
                    e = (d4 - d3) + (d5 - d6)
                    w = (d4 - d3) / e if e > 0.0 else 0.0
                    qx, qy, qz = bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz)
                else:
                    s = va + vb + vc
                    if s == 0.0:  # (a degenerate triangle: its first corner)
                        qx, qy, qz = ax, ay, az
                    else:
                        v = vb / s
                        w = vc / s
                        qx = ax + abx * v + acx * w
                        qy = ay + aby * v + acy * w
                        qz = az + abz * v + acz * w
            dist = math.sqrt(qx * qx + qy * qy + qz * qz)
            if dist < best:
                best = dist
                bx_, by_, bz_ = qx, qy, qz
                bt = t
        out_d[p] = best
        out_q[p, 0], out_q[p, 1], out_q[p, 2] = px + bx_, py + by_, pz + bz_
        out_t[p] = bt


@numba.njit(cache=True, nogil=True)
def _bounds(tri, centre, radius):  # pragma: no cover - jitted
    """Each triangle's (T, 3, 3) bounding sphere: its centroid and the farthest corner."""
    for t in range(tri.shape[0]):
        r2 = 0.0
        for c in range(3):
            centre[t, c] = (tri[t, 0, c] + tri[t, 1, c] + tri[t, 2, c]) / 3.0
        for k in range(3):
            dx = tri[t, k, 0] - centre[t, 0]
            dy = tri[t, k, 1] - centre[t, 1]
            dz = tri[t, k, 2] - centre[t, 2]
            r2 = max(r2, dx * dx + dy * dy + dz * dz)
        radius[t] = math.sqrt(r2)


@numba.njit(cache=True, nogil=True)
def _signed(points, tri, band, out_s, out_q, out_n, which):  # pragma: no cover - jitted
    """:func:`signed_distances` of the points (P, 3) to the triangles (T, 3, 3), and
    each point's nearest triangle (``which``, (P,))."""
    n_pts, n_tri = points.shape[0], tri.shape[0]
    centre, radius = np.zeros((n_tri, 3)), np.zeros(n_tri)
    _bounds(tri, centre, radius)
    big = 0.0
    for t in range(n_tri):
        big = max(big, radius[t])
    # the points' bounding sphere: no point is farther from its nearest triangle than
    # ``reach``, so a triangle farther than that from every point cannot be it
    cx, cy, cz, r = 0.0, 0.0, 0.0, 0.0
    for p in range(n_pts):
        cx, cy, cz = cx + points[p, 0], cy + points[p, 1], cz + points[p, 2]
    cx, cy, cz = cx / max(n_pts, 1), cy / max(n_pts, 1), cz / max(n_pts, 1)
    for p in range(n_pts):
        dx, dy, dz = points[p, 0] - cx, points[p, 1] - cy, points[p, 2] - cz
        r = max(r, math.sqrt(dx * dx + dy * dy + dz * dz))
    gap = np.zeros(n_tri)
    reach = np.inf
    for t in range(n_tri):
        dx, dy, dz = centre[t, 0] - cx, centre[t, 1] - cy, centre[t, 2] - cz
        gap[t] = math.sqrt(dx * dx + dy * dy + dz * dz)
        reach = min(reach, gap[t] + r + radius[t])
    cand = np.flatnonzero(gap - r - radius <= reach)
    dist = np.zeros(n_pts)
    _nearest(points, tri, centre, radius, cand, dist, out_q, which)
    one = np.zeros((1, 3))
    w = np.zeros(1)
    for p in range(n_pts):
        inside = False
        if dist[p] < band:
            one[0, 0], one[0, 1], one[0, 2] = points[p, 0], points[p, 1], points[p, 2]
            _winding(one, tri, w)
            inside = w[0] > 0.5
        gx = points[p, 0] - out_q[p, 0]
        gy = points[p, 1] - out_q[p, 1]
        gz = points[p, 2] - out_q[p, 2]
        length = math.sqrt(gx * gx + gy * gy + gz * gz)
        if length <= 1e-9 * big:  # on the surface: the nearest face's own normal
            t = which[p]
            ax, ay, az = (
                tri[t, 1, 0] - tri[t, 0, 0],
                tri[t, 1, 1] - tri[t, 0, 1],
                tri[t, 1, 2] - tri[t, 0, 2],
            )
            bx, by, bz = (
                tri[t, 2, 0] - tri[t, 0, 0],
                tri[t, 2, 1] - tri[t, 0, 1],
                tri[t, 2, 2] - tri[t, 0, 2],
            )
            gx, gy, gz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
            length = math.sqrt(gx * gx + gy * gy + gz * gz)
            sign = 1.0
        else:
            sign = -1.0 if inside else 1.0
        scale = sign / length if length > 0.0 else 0.0
        out_n[p, 0], out_n[p, 1], out_n[p, 2] = gx * scale, gy * scale, gz * scale
        out_s[p] = -dist[p] if inside else dist[p]


@numba.njit(cache=True, nogil=True)
def _corner_normals(tri, ring_ptr, ring_face, ring_corner, crease, out):
    # pragma: no cover - jitted
    """Each triangle corner's (T, 3, 3) vertex normal: the angle-weighted sum of the
    normals of the triangles about its vertex (Thürmer & Wüthrich 1998) that turn from
    the corner's own triangle by less than ``crease``. The triangles about vertex ``v``
    are ``ring_face[ring_ptr[v]:ring_ptr[v + 1]]``; ``ring_corner`` holds the vertex of
    each corner ``t * 3 + k``, then which corner of its triangle each ring entry is
    (:func:`_rings`)."""
    n_tri = tri.shape[0]
    normal = np.zeros((n_tri, 3))
    angle = np.zeros((n_tri, 3))
    for t in range(n_tri):
        ux, uy, uz = (
            tri[t, 1, 0] - tri[t, 0, 0],
            tri[t, 1, 1] - tri[t, 0, 1],
            tri[t, 1, 2] - tri[t, 0, 2],
        )
        vx, vy, vz = (
            tri[t, 2, 0] - tri[t, 0, 0],
            tri[t, 2, 1] - tri[t, 0, 1],
            tri[t, 2, 2] - tri[t, 0, 2],
        )
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        length = math.sqrt(nx * nx + ny * ny + nz * nz)
        if length == 0.0:
            continue
        normal[t, 0], normal[t, 1], normal[t, 2] = nx / length, ny / length, nz / length
        for k in range(3):
            a, b = (k + 1) % 3, (k + 2) % 3
            ex, ey, ez = (
                tri[t, a, 0] - tri[t, k, 0],
                tri[t, a, 1] - tri[t, k, 1],
                tri[t, a, 2] - tri[t, k, 2],
            )
            fx, fy, fz = (
                tri[t, b, 0] - tri[t, k, 0],
                tri[t, b, 1] - tri[t, k, 1],
                tri[t, b, 2] - tri[t, k, 2],
            )
            le = math.sqrt(ex * ex + ey * ey + ez * ez)
            lf = math.sqrt(fx * fx + fy * fy + fz * fz)
            if le > 0.0 and lf > 0.0:
                cos = (ex * fx + ey * fy + ez * fz) / (le * lf)
                angle[t, k] = math.acos(max(-1.0, min(1.0, cos)))
    limit = math.cos(crease)
    for t in range(n_tri):
        for k in range(3):
            v = ring_corner[t * 3 + k]  # (the corner's vertex, in ring order)
            sx, sy, sz = 0.0, 0.0, 0.0
            for e in range(ring_ptr[v], ring_ptr[v + 1]):
                g = ring_face[e]
                dot = (
                    normal[g, 0] * normal[t, 0]
                    + normal[g, 1] * normal[t, 1]
                    + normal[g, 2] * normal[t, 2]
                )
                if dot < limit:
                    continue
                w = angle[g, ring_corner[n_tri * 3 + e]]
                sx += w * normal[g, 0]
                sy += w * normal[g, 1]
                sz += w * normal[g, 2]
            length = math.sqrt(sx * sx + sy * sy + sz * sz)
            if length > 0.0:
                out[t, k, 0], out[t, k, 1], out[t, k, 2] = sx / length, sy / length, sz / length
            else:
                out[t, k, 0], out[t, k, 1], out[t, k, 2] = normal[t, 0], normal[t, 1], normal[t, 2]


@numba.njit(cache=True, nogil=True)
def _smooth(tri, corner_n, t, q, n):  # pragma: no cover - jitted
    """The vertex normals of triangle ``t`` interpolated at its point ``q`` (barycentric,
    Phong's), unit: the surface's outward normal there, as its counter-clockwise faces
    say. Where it turns a right angle or more from the face's own normal, that normal;
    a degenerate triangle: ``n``."""
    ax, ay, az = tri[t, 0, 0], tri[t, 0, 1], tri[t, 0, 2]
    v0 = (tri[t, 1, 0] - ax, tri[t, 1, 1] - ay, tri[t, 1, 2] - az)
    v1 = (tri[t, 2, 0] - ax, tri[t, 2, 1] - ay, tri[t, 2, 2] - az)
    v2 = (q[0] - ax, q[1] - ay, q[2] - az)
    fx = v0[1] * v1[2] - v0[2] * v1[1]
    fy = v0[2] * v1[0] - v0[0] * v1[2]
    fz = v0[0] * v1[1] - v0[1] * v1[0]
    face = math.sqrt(fx * fx + fy * fy + fz * fz)
    d00 = v0[0] * v0[0] + v0[1] * v0[1] + v0[2] * v0[2]
    d01 = v0[0] * v1[0] + v0[1] * v1[1] + v0[2] * v1[2]
    d11 = v1[0] * v1[0] + v1[1] * v1[1] + v1[2] * v1[2]
    d20 = v2[0] * v0[0] + v2[1] * v0[1] + v2[2] * v0[2]
    d21 = v2[0] * v1[0] + v2[1] * v1[1] + v2[2] * v1[2]
    den = d00 * d11 - d01 * d01
    if den <= 0.0 or face == 0.0:
        return n[0], n[1], n[2]
    b = (d11 * d20 - d01 * d21) / den
    c = (d00 * d21 - d01 * d20) / den
    a = 1.0 - b - c
    mx = a * corner_n[t, 0, 0] + b * corner_n[t, 1, 0] + c * corner_n[t, 2, 0]
    my = a * corner_n[t, 0, 1] + b * corner_n[t, 1, 1] + c * corner_n[t, 2, 1]
    mz = a * corner_n[t, 0, 2] + b * corner_n[t, 1, 2] + c * corner_n[t, 2, 2]
    length = math.sqrt(mx * mx + my * my + mz * mz)
    if length == 0.0 or mx * fx + my * fy + mz * fz <= 0.0:
        return fx / face, fy / face, fz / face
    return mx / length, my / length, mz / length


@numba.njit(cache=True, nogil=True, parallel=True)
def _signed_frames(posed, tri_idx, pts_idx, groups, rings, crease, grow, band, out_s, out_q, out_n):
    # pragma: no cover - jitted
    """:func:`_signed` frame by frame: ``posed`` (F, U, 3) vertices, the triangles'
    (T, 3) and the points' (P,) indices into them, in ``groups`` (P,) (points near one
    another: a hand's, whose nearest triangles are looked for together); the normals
    the surface's smooth ones (:func:`_corner_normals` about the vertices of
    ``rings``, :func:`_smooth`); a point
    outside the triangles' bounding box grown by ``grow`` is left as it is in the
    outputs (F, P), (F, P, 3)."""
    n_tri, n_pts = tri_idx.shape[0], pts_idx.shape[0]
    for f in numba.prange(posed.shape[0]):  # (the frames are independent: in parallel)
        tri = np.zeros((n_tri, 3, 3))
        corner_n = np.zeros((n_tri, 3, 3))
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for t in range(n_tri):
            for k in range(3):
                for c in range(3):
                    v = posed[f, tri_idx[t, k], c]
                    tri[t, k, c] = v
                    lo[c] = min(lo[c], v)
                    hi[c] = max(hi[c], v)
        count = 0
        close = np.zeros(n_pts, np.intp)
        for p in range(n_pts):
            ok = True
            for c in range(3):
                v = posed[f, pts_idx[p], c]
                if v < lo[c] - grow or v > hi[c] + grow:
                    ok = False
            if ok:
                close[count] = p
                count += 1
        if count > 0:
            out = (out_s, out_q, out_n)
            _corner_normals(tri, rings[0], rings[1], rings[2], crease, corner_n)
            for g in range(groups.max() + 1):
                mine = np.zeros(count, np.intp)
                k = 0
                for a in range(count):
                    if groups[close[a]] == g:
                        mine[k] = close[a]
                        k += 1
                if k > 0:
                    _frame_normals(f, posed, pts_idx, mine[:k], tri, corner_n, band, out)


@numba.njit(cache=True, nogil=True)
def _frame_normals(f, posed, pts_idx, close, tri, corner_n, band, out):
    # pragma: no cover - jitted
    """One frame of :func:`_signed_frames`: its points ``close`` near the body."""
    out_s, out_q, out_n = out
    count = close.shape[0]
    pts = np.zeros((count, 3))
    for a in range(count):
        for c in range(3):
            pts[a, c] = posed[f, pts_idx[close[a]], c]
    s, q, nn = np.zeros(count), np.zeros((count, 3)), np.zeros((count, 3))
    which = np.zeros(count, np.intp)
    _signed(pts, tri, band, s, q, nn, which)
    for a in range(count):
        m = _smooth(tri, corner_n, which[a], q[a], nn[a])
        out_s[f, close[a]] = s[a]
        for c in range(3):
            out_q[f, close[a], c] = q[a, c]
            out_n[f, close[a], c] = m[c]


@numba.njit(cache=True, nogil=True, parallel=True)
def _blend(positions, rotations, rest, vertices, joints, weights, out):  # pragma: no cover
    """Linear blend skinning (:meth:`retarget.io.gltf.SkinMesh.posed`), compiled: the
    vertices (V, 3) at every frame's joint positions (F, J, 3) and rotations (F, J, 4)
    into ``out`` (F, V, 3)."""
    for f in numba.prange(positions.shape[0]):
        for v in range(vertices.shape[0]):
            x, y, z = 0.0, 0.0, 0.0
            for k in range(joints.shape[1]):
                j, w = joints[v, k], weights[v, k]
                if j < 0 or w == 0.0:
                    continue
                ax = vertices[v, 0] - rest[j, 0]
                ay = vertices[v, 1] - rest[j, 1]
                az = vertices[v, 2] - rest[j, 2]
                a = rotate(
                    (
                        rotations[f, j, 0],
                        rotations[f, j, 1],
                        rotations[f, j, 2],
                        rotations[f, j, 3],
                    ),
                    (ax, ay, az),
                )
                x += w * (positions[f, j, 0] + a[0])
                y += w * (positions[f, j, 1] + a[1])
                z += w * (positions[f, j, 2] + a[2])
            out[f, v, 0], out[f, v, 1], out[f, v, 2] = x, y, z
