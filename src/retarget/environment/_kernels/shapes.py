"""The floors, boxes and spheres of the environment as arrays, and their per-point
queries compiled (numba): what the shapes' own queries and the compiled frame of computer
puppetry (:mod:`retarget.online._kernels.puppetry`) both call.

Written here rather than taken from a library: a compiled per-frame solver asks these
distances point by point (3-tuples held in registers, no array allocated per call), and
the shapes answer batches through the same code, so both round alike.

Arrays of :func:`retarget.environment.shape_arrays` (m shapes): ``kind`` (m,) one of :data:`FLOOR`,
:data:`BOX`, :data:`SPHERE`; ``center`` (m, 3); ``half`` (m, 3) a box's half extents;
``frame`` (m, 3, 3) a box's world rotation matrix; ``size`` (m,) a floor's height or a
sphere's radius. World frame Y up, lengths in the skeleton's unit.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...core._kernels.vec3 import add, norm, row, scale, sub
from .._kinds import BOX, FLOOR, SPHERE

__all__ = [
    "BOX",
    "FLOOR",
    "SPHERE",
    "closest_rows",
    "distance_rows",
    "point_closest",
    "point_distance",
]


@numba.njit(cache=True, nogil=True)
def _times(d, m):  # pragma: no cover - jitted
    """``d @ m``: the 3-tuple ``d`` times the (3, 3) matrix ``m`` (a view), term by term."""
    return (
        d[0] * m[0, 0] + d[1] * m[1, 0] + d[2] * m[2, 0],
        d[0] * m[0, 1] + d[1] * m[1, 1] + d[2] * m[2, 1],
        d[0] * m[0, 2] + d[1] * m[1, 2] + d[2] * m[2, 2],
    )


@numba.njit(cache=True, nogil=True)
def _to_box(frame, j, d):  # pragma: no cover - jitted
    """``d @ R`` for the box's world rotation matrix ``R = frame[j]`` (3, 3)."""
    return _times(d, frame[j])


@numba.njit(cache=True, nogil=True)
def _from_box(frame, j, v):  # pragma: no cover - jitted
    """``v @ R.T``: a box-frame vector in the world."""
    return _times(v, frame[j].T)


@numba.njit(cache=True, nogil=True)
def point_distance(kind, center, half, frame, size, j, p):  # pragma: no cover - jitted
    """Signed distance of point ``p`` (3-tuple) to shape ``j`` (``Shape.distance``).

    ``kind[j]``: floor (``size[j]`` its height), box (``center``, ``half``
    extents, world rotation matrix ``frame[j]``) or sphere (``size[j]`` its radius).
    """
    if kind[j] == FLOOR:
        return p[1] - size[j]
    c = row(center, j)
    if kind[j] == SPHERE:
        return norm(sub(p, c)) - size[j]
    q = _to_box(frame, j, sub(p, c))
    ex = (abs(q[0]) - half[j, 0], abs(q[1]) - half[j, 1], abs(q[2]) - half[j, 2])
    worst = max(ex[0], max(ex[1], ex[2]))
    if worst > 0.0:
        return norm((max(ex[0], 0.0), max(ex[1], 0.0), max(ex[2], 0.0)))
    return worst


@numba.njit(cache=True, nogil=True)
def point_closest(kind, center, half, frame, size, j, p):  # pragma: no cover - jitted
    """``Shape.closest`` of point ``p``: signed distance, closest point and outward
    normal (3-tuples) on shape ``j`` (arrays as :func:`point_distance`)."""
    if kind[j] == FLOOR:
        return p[1] - size[j], (p[0], size[j], p[2]), (0.0, 1.0, 0.0)
    c = row(center, j)
    if kind[j] == SPHERE:
        v = sub(p, c)
        r = norm(v)
        n = (v[0] / r, v[1] / r, v[2] / r) if r > 0.0 else (0.0, 1.0, 0.0)
        return r - size[j], add(c, scale(n, size[j])), n
    q = _to_box(frame, j, sub(p, c))
    e = (half[j, 0], half[j, 1], half[j, 2])
    ex = (abs(q[0]) - e[0], abs(q[1]) - e[1], abs(q[2]) - e[2])
    worst = max(ex[0], max(ex[1], ex[2]))
    inner = (min(max(q[0], -e[0]), e[0]), min(max(q[1], -e[1]), e[1]), min(max(q[2], -e[2]), e[2]))
    v = sub(q, inner)
    d_out = norm(v)
    # inside or on the surface: the coordinate of the nearest face moves onto it
    k = 0
    for a in (1, 2):
        if ex[a] > ex[k]:
            k = a
    side = -1.0 if q[k] < 0.0 else 1.0
    point = (
        side * e[0] if k == 0 else q[0],
        side * e[1] if k == 1 else q[1],
        side * e[2] if k == 2 else q[2],
    )
    normal = (side if k == 0 else 0.0, side if k == 1 else 0.0, side if k == 2 else 0.0)
    distance = worst
    if worst > 0.0:  # outside: clamped into the box, the normal from there to the point
        point = inner
        distance = d_out
        if d_out > 0.0:
            normal = (v[0] / d_out, v[1] / d_out, v[2] / d_out)
    return distance, add(c, _from_box(frame, j, point)), _from_box(frame, j, normal)


@numba.njit(cache=True, nogil=True)
def closest_rows(
    kind, center, half, frame, size, j, points, dist, point, normal
):  # pragma: no cover - jitted
    """:func:`point_closest` of every row of ``points`` (n, 3) into ``dist`` (n,),
    ``point`` (n, 3) and ``normal`` (n, 3)."""
    for i in range(points.shape[0]):
        p = row(points, i)
        if not (math.isfinite(p[0]) and math.isfinite(p[1]) and math.isfinite(p[2])):
            dist[i] = np.nan
            point[i] = np.nan
            normal[i] = np.nan
            continue
        d, c, n = point_closest(kind, center, half, frame, size, j, p)
        dist[i] = d
        for a in range(3):
            point[i, a] = c[a]
            normal[i, a] = n[a]


@numba.njit(cache=True, nogil=True)
def distance_rows(kind, center, half, frame, size, j, points, dist):  # pragma: no cover - jitted
    """:func:`point_distance` of every row of ``points`` (n, 3) into ``dist`` (n,); NaN
    for a point with a NaN."""
    for i in range(points.shape[0]):
        p = row(points, i)
        if math.isfinite(p[0]) and math.isfinite(p[1]) and math.isfinite(p[2]):
            dist[i] = point_distance(kind, center, half, frame, size, j, p)
        else:
            dist[i] = np.nan
