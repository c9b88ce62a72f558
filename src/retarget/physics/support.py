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
from scipy.spatial import ConvexHull, QhullError

from ..contacts import Contacts
from ..roles import Roles

__all__ = ["Support", "project_to_support", "support_polygons"]

Array = NDArray[np.float64]

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
    ankle: Array, toe: Array, tip: Array | None, planted: Sequence[str], height: float
) -> Array:
    """Corners (8, 2) of the planted parts of one sole (module docstring)."""
    axis = toe - ankle
    length = float(np.linalg.norm(axis))
    u = axis / length if length > 1e-9 else np.array([1.0, 0.0])
    side = np.array([-u[1], u[0]]) * HALF_BREADTH * height
    front = float(np.linalg.norm(tip - ankle)) if tip is not None else length + FOREFOOT * height
    lo = -HEEL * height if "ankle" in planted else 0.5 * length
    hi = front if set(planted) & {"toe", "tip"} else 0.5 * length
    ends = [ankle + lo * u, ankle + hi * u]
    return np.array([e + s * side for e in ends for s in (1.0, -1.0)])


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
    parts: list[list[Array]] = [[] for _ in range(n)]
    centres = np.full((n, 2, 2), np.nan)
    feet = []
    for k, side in enumerate(("left", "right")):
        ankle = int(roles.points[f"{side}_ankle"])
        feet.append(ankle)
        toe = roles.points.get(f"{side}_toe")
        tip = roles.points.get(f"{side}_toe_tip")
        kinds = {ankle: "ankle"}
        if toe is not None:
            kinds[int(toe)] = "toe"
        if tip is not None:
            kinds[int(tip)] = "tip"
        cols = {kinds[int(p)]: c for c, p in enumerate(contacts.points) if int(p) in kinds}
        if not cols:
            continue
        mask = contacts.mask[:, list(cols.values())]
        names = list(cols)
        front_point = int(toe) if toe is not None else (int(tip) if tip is not None else None)
        for f in map(int, np.flatnonzero(mask.any(axis=1))):
            planted = [names[c] for c in np.flatnonzero(mask[f])]
            a = pos[f, ankle]
            t = pos[f, front_point] if front_point is not None else a + np.array([1e-3, 0.0])
            corners = _sole_parts(
                a, t, pos[f, int(tip)] if tip is not None and toe is not None else None, planted, h
            )
            parts[f].append(corners)
            centres[f, k] = corners.mean(axis=0)
    vmax = 16
    polygons = np.full((n, vmax, 2), np.nan)
    for f in range(n):
        if parts[f]:
            hull = _convex_hull(np.concatenate(parts[f]))
            polygons[f, : len(hull)] = hull[:vmax]
    return Support(polygons, centres, (feet[0], feet[1]))


def _convex_hull(points: Array) -> Array:
    """Counter-clockwise hull vertices; the extreme segment of collinear points."""
    pts = np.unique(points, axis=0)
    if len(pts) >= 3:
        try:
            return pts[ConvexHull(pts).vertices]
        except QhullError:
            pass
    if len(pts) <= 1:
        return pts
    d = pts - pts.mean(axis=0)
    axis = np.linalg.svd(d)[2][0]
    t = d @ axis
    return pts[[int(np.argmin(t)), int(np.argmax(t))]]


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
