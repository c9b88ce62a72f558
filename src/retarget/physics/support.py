"""The support polygon and flight (Tak & Ko 2005, §4.2, eq. 7, and §4.4).

A foot in contact stands on a sole, not on its joints: each contact of a
foot point covers part of a rectangle along the foot's ground axis (ankle
to toe), as wide as a foot and reaching behind the ankle and past the toe
joint (anthropometric proportions of the body's height: foot breadth 5.5 %,
heel 4 % behind the ankle joint, forefoot 3 % past the toe joint, or to the
toe's tip when the file has one). A planted ankle covers the rear half of
the sole, a planted toe or toe tip the front half. The support polygon of a
frame is the convex hull of the sole parts of both feet (eq. 7's ``S``); a
frame with no foot point in contact is in **flight** (balance is off there,
the momentum constraints on, §4.4).

:func:`project_to_support` is eq. (7)'s ``proj_S``: the ZMP itself when inside,
else the closest point of the polygon (moved ``margin`` inside, when asked).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array
from ..humanoid.contacts import Contacts
from ..humanoid.roles import Roles
from .dynamics import support_shares

__all__ = ["Support", "convex_hulls", "project_to_support", "support_polygons"]


#: Sole geometry as shares of the body's height: half breadth, heel behind the
#: ankle joint, forefoot past the toe joint.
HALF_BREADTH, HEEL, FOREFOOT = 0.0275, 0.04, 0.03


@dataclass(frozen=True, eq=False)
class Support:
    """Support polygons of a clip.

    Attributes
    ----------
    polygons : ndarray, shape (F, V, 2)
        Counter-clockwise hull vertices ``(x, z)`` in metres, NaN-padded; all
        NaN in flight.
    centres : ndarray, shape (F, 2, 2)
        Centre ``(x, z)`` of the left and right soles' contact parts, NaN where
        that foot is off the ground.
    feet : tuple of int
        The left and right ankle joints (the bodies the ground pushes).
    """

    polygons: Array
    centres: Array
    feet: tuple[int, int]

    @property
    def flight(self) -> NDArray[np.bool_]:
        """Frames with no foot on the ground, shape (F,)."""
        return np.asarray(~np.isfinite(self.centres).all(axis=-1).any(axis=-1))

    def shares(self, points: ArrayLike, num_joints: int, frames: ArrayLike | None = None) -> Array:
        """Each joint's body's share of the ground's wrench, shape (..., J): the feet's
        by Ko & Badler's split at the ZMPs ``points`` (..., 2), metres
        (:func:`~retarget.physics.dynamics.support_shares`), zero for the other
        bodies; ``frames`` (...) say which frame each point belongs to (default:
        every frame, ``points`` (F, 2))."""
        c = self.centres if frames is None else self.centres[np.asarray(frames)]
        two = support_shares(points, c[..., 0, :], c[..., 1, :])
        out = np.zeros((*two.shape[:-1], num_joints))
        out[..., self.feet[0]] += two[..., 0]
        out[..., self.feet[1]] += two[..., 1]
        return out

    def inside(self, points: ArrayLike, tolerance: float = 1e-9) -> NDArray[np.bool_]:
        """Whether each frame's point ``(x, z)`` (F, 2) lies in its polygon (False in flight
        and where the point is NaN); ``tolerance`` in metres."""
        return np.asarray(self.distance(points) <= tolerance)

    def distance(self, points: ArrayLike) -> Array:
        """Metres from each frame's polygon (0 inside, NaN in flight), shape (F,)."""
        return _closest_on_polygons(np.asarray(points, dtype=np.float64), self.polygons)[1]

    def project(self, points: ArrayLike, margin: float = 0.0) -> Array:
        """Eq. (7) on every frame, shape (F, 2); NaN in flight (:func:`project_to_support`,
        all frames at once)."""
        p = np.asarray(points, dtype=np.float64)
        q, d, _ = _closest_on_polygons(p, self.polygons)
        return q if margin <= 0 else self._inward(q, np.where(d > 1e-12, margin, 0.0))

    def inset(self, points: ArrayLike, margin: float) -> Array:
        """Eq. (7) for a polygon ``margin`` smaller, shape (F, 2); NaN in flight: a point
        deeper inside than ``margin`` stays, any other moves towards the centroid from
        its closest point of the polygon (itself when inside) until it is ``margin`` in
        — continuous in the point, so that a hinge on it has no jump at the edge."""
        p = np.asarray(points, dtype=np.float64)
        q, d, depth = _closest_on_polygons(p, self.polygons)
        need = np.where(d > 1e-12, margin, np.clip(margin - depth, 0.0, None))
        return self._inward(q, need)

    def _inward(self, q: Array, need: Array) -> Array:
        """``q`` (F, 2) moved ``need`` (F,) towards its polygon's centroid (at most to it)."""
        valid = np.isfinite(self.polygons).all(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            centre = np.where(valid, self.polygons, 0.0).sum(axis=1) / valid.sum(axis=1)
            toward = centre - q
            span = np.linalg.norm(toward, axis=-1)
            share = np.where(span > 0, np.minimum(need / np.where(span > 0, span, 1.0), 1.0), 0)
        return q + toward * share[:, None]


def _closest_on_polygons(points: Array, polygons: Array) -> tuple[Array, Array, Array]:
    """:func:`_closest_on_hull` of every frame: points (F, 2), polygons (F, V, 2)
    NaN-padded → closest points (F, 2), distances (F,) and depths inside (F,: distance
    to the nearest edge inside, 0 outside), NaN where the frame has no polygon or the
    point is NaN."""
    f, v = polygons.shape[:2]
    valid = np.isfinite(polygons).all(axis=-1)  # (F, V)
    count = valid.sum(axis=1)
    index = np.arange(v)
    following = np.where(index + 1 < count[:, None], index + 1, 0)
    a = polygons
    b = np.take_along_axis(polygons, following[..., None], axis=1)
    ab = b - a
    to_p = points[:, None, :] - a
    cross = ab[..., 0] * to_p[..., 1] - ab[..., 1] * to_p[..., 0]
    inside = (count >= 3) & np.where(valid, cross >= -1e-12, True).all(axis=1)
    denom = np.einsum("fka,fka->fk", ab, ab)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.clip(np.einsum("fka,fka->fk", to_p, ab) / denom, 0.0, 1.0)
    t = np.where(denom > 0, t, 0.0)
    q = a + t[..., None] * ab
    d = np.where(valid, np.linalg.norm(points[:, None, :] - q, axis=-1), np.inf)
    k = np.argmin(d, axis=1)
    rows = np.arange(f)
    closest = np.where(inside[:, None], points, q[rows, k])
    dist = np.where(inside, 0.0, d[rows, k])
    length = np.sqrt(denom)
    with np.errstate(invalid="ignore", divide="ignore"):
        lines = np.where(valid & (length > 0), cross / length, np.inf)
    depth = np.where(inside, lines.min(axis=1), 0.0)
    missing = (count == 0) | ~np.isfinite(points).all(axis=-1)
    for x in (closest, dist, depth):
        x[missing] = np.nan
    return closest, dist, depth


def _sole_parts(
    ankle: Array,
    front: Array | None,
    tip: Array | None,
    rear_planted: NDArray[np.bool_],
    front_planted: NDArray[np.bool_],
    height: float,
) -> Array:
    """Corners (F, 4, 2) of the planted parts of one sole on each frame (module
    docstring), NaN where neither part is planted: ``ankle``, ``front`` (the toe joint,
    or the tip when there is none) and ``tip`` (F, 2) on the ground, in metres;
    ``rear_planted`` (the ankle) and ``front_planted`` (a toe point) (F,)."""
    axis = front - ankle if front is not None else np.broadcast_to([1e-3, 0.0], ankle.shape)
    length = np.linalg.norm(axis, axis=1)
    long = length > 1e-9
    u = np.where(long[:, None], axis / np.where(long, length, 1.0)[:, None], [1.0, 0.0])
    side = np.stack([-u[:, 1], u[:, 0]], axis=1) * HALF_BREADTH * height
    reach = np.linalg.norm(tip - ankle, axis=1) if tip is not None else length + FOREFOOT * height
    lo = np.where(rear_planted, -HEEL * height, 0.5 * length)
    hi = np.where(front_planted, reach, 0.5 * length)
    along = np.stack([lo, lo, hi, hi], axis=1)[..., None] * u[:, None]
    corners = ankle[:, None] + along + np.array([1.0, -1.0, 1.0, -1.0])[:, None] * side[:, None]
    return np.where((rear_planted | front_planted)[:, None, None], corners, np.nan)


def support_polygons(
    positions: ArrayLike,
    contacts: Contacts,
    roles: Roles,
    height: float,
    metres: float,
) -> Support:
    """Support polygons from the foot points' positions and their contact labels.

    Parameters
    ----------
    positions : array_like, shape (F, P, 3)
        World positions of the points in the skeleton's unit: where the feet
        are (or where the kinematic constraints will put them).
    contacts : Contacts
        Which foot points are planted at each frame.
    roles : Roles
    height : float
        The character's height in the skeleton's unit.
    metres : float
        Metres per unit.
    """
    pos = np.asarray(positions, dtype=np.float64)[..., [0, 2]] * metres
    h = height * metres
    n = len(pos)
    centres = np.full((n, 2, 2), np.nan)
    soles = []
    feet = []
    for k, side in enumerate(("left", "right")):
        ankle = int(roles.points[f"{side}_ankle"])
        feet.append(ankle)
        toe = roles.points.get(f"{side}_toe")
        tip = roles.points.get(f"{side}_toe_tip")
        planted = {int(p): contacts.mask[:, c] for c, p in enumerate(contacts.points)}
        rear = planted.get(ankle, np.zeros(n, bool))
        front = np.zeros(n, bool)
        for p in (toe, tip):
            if p is not None:
                front = front | planted.get(int(p), np.zeros(n, bool))
        front_point = toe if toe is not None else tip
        corners = _sole_parts(
            pos[:, ankle],
            pos[:, int(front_point)] if front_point is not None else None,
            pos[:, int(tip)] if tip is not None and toe is not None else None,
            rear,
            front,
            h,
        )
        centres[:, k] = corners.mean(axis=1)
        soles.append(corners)
    return Support(convex_hulls(np.concatenate(soles, axis=1)), centres, (feet[0], feet[1]))


def convex_hulls(points: ArrayLike, tolerance: float = 1e-12) -> Array:
    """The convex hull of each row of points, all rows at once.

    Parameters
    ----------
    points : array_like, shape (F, K, 2)
        NaN rows are absent points.
    tolerance : float
        Cross products (the points' unit squared) this small count as collinear;
        points closer than its square root as one.

    Returns
    -------
    ndarray, shape (F, K, 2)
        Each row's hull vertices counter-clockwise from the lowest ``(x, z)``, NaN-padded:
        the two extreme points of collinear points, one point for coincident ones.

    An ordered pair ``(i, j)`` is a hull edge when no point lies right of ``i → j``
    and the points on its line lie between ``i`` and ``j``; each vertex then has one
    successor, and the hull is the walk along them — ``K³`` tests per row, cheap for
    the eight corners of two soles, with no loop over rows.
    """
    p = np.asarray(points, dtype=np.float64)
    f, k = p.shape[:2]
    valid = np.asarray(np.isfinite(p).all(axis=-1))
    gap = np.linalg.norm(p[:, :, None] - p[:, None], axis=-1)  # (F, K, K)
    earlier = np.tril(np.ones((k, k), bool), -1)
    valid &= ~(valid[:, None, :] & earlier & (gap <= np.sqrt(tolerance))).any(axis=2)
    q = np.where(valid[..., None], p, 0.0)
    e = q[:, None, :] - q[:, :, None]  # (F, i, j, 2): j − i
    r = q[:, None, None, :] - q[:, :, None, None]  # (F, i, 1, k, 2): k − i
    cross = e[..., None, 0] * r[..., 1] - e[..., None, 1] * r[..., 0]  # (F, i, j, k)
    along = e[..., None, 0] * r[..., 0] + e[..., None, 1] * r[..., 1]
    length = np.einsum("fija,fija->fij", e, e)[..., None]
    others = valid[:, None, None, :]
    left = cross > tolerance
    between = (np.abs(cross) <= tolerance) & (along >= -tolerance) & (along <= length + tolerance)
    edge = (left | between | ~others).all(axis=3)
    edge &= valid[:, :, None] & valid[:, None, :] & ~np.eye(k, dtype=bool)
    successor = np.where(edge.any(axis=2), np.argmax(edge, axis=2), -1)  # (F, K)
    count = np.where(valid.any(axis=1), np.maximum((successor >= 0).sum(axis=1), 1), 0)
    order = np.lexsort((np.where(valid, p[..., 1], np.inf), np.where(valid, p[..., 0], np.inf)))
    start = order[:, 0] if k else np.zeros(f, np.intp)
    walk = np.empty((f, k), np.intp)
    at = start
    rows = np.arange(f)
    for step in range(k):
        walk[:, step] = at
        at = np.where(successor[rows, at] >= 0, successor[rows, at], at)
    hull = np.take_along_axis(p, walk[..., None], axis=1)
    return np.where((np.arange(k) < count[:, None])[..., None], hull, np.nan)


def _convex_hull(points: Array) -> Array:
    """:func:`convex_hulls` of one set of points (K, 2) → vertices (V, 2)."""
    hull = convex_hulls(np.asarray(points, dtype=np.float64)[None])[0]
    return hull[np.isfinite(hull).all(axis=1)]


def _closest_on_hull(p: Array, hull: Array) -> tuple[Array, float]:
    """The closest point of a convex polygon (or segment, or point) and its distance."""
    n = len(hull)
    if n >= 3:
        edges = np.roll(hull, -1, axis=0) - hull
        to_p = p - hull
        if (edges[:, 0] * to_p[:, 1] - edges[:, 1] * to_p[:, 0] >= -1e-12).all():
            return p.copy(), 0.0
    a = hull
    b = np.roll(hull, -1, axis=0) if n > 1 else hull
    if n == 2:
        a, b = hull[:1], hull[1:]
    ab = b - a
    denom = np.einsum("ka,ka->k", ab, ab)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.clip(np.einsum("ka,ka->k", p - a, ab) / denom, 0.0, 1.0)
    t = np.where(denom > 0, t, 0.0)
    q = a + t[:, None] * ab
    d = np.linalg.norm(p - q, axis=1)
    k = int(np.argmin(d))
    return q[k], float(d[k])


def project_to_support(
    point: ArrayLike, contacts: Sequence[ArrayLike] | ArrayLike, margin: float = 0.0
) -> tuple[Array, bool]:
    """Eq. (7): the point itself when inside the support polygon, else its projection.

    Parameters
    ----------
    point : array_like, shape (2,)
        ``(x, z)``.
    contacts : array_like, shape (K, 2)
        Ground points whose convex hull is the support polygon (a segment for
        two points, a point for one).
    margin : float
        Project this far inside the polygon instead of onto its edge (towards
        its centroid, at most to the centroid), in the points' unit.

    Returns
    -------
    projected : ndarray, shape (2,)
    inside : bool
    """
    p = np.asarray(point, dtype=np.float64)
    pts = np.asarray(contacts, dtype=np.float64).reshape(-1, 2)
    if len(pts) == 0:
        raise ValueError("no contact point: the support polygon is empty")
    hull = _convex_hull(pts)
    q, d = _closest_on_hull(p, hull)
    inside = d <= 1e-12
    if inside or margin <= 0:
        return q, bool(inside)
    centre = hull.mean(axis=0)
    toward = centre - q
    span = float(np.linalg.norm(toward))
    return (q + toward * min(margin / span, 1.0) if span > 0 else q), False
