"""The shapes of the environment: the contract (:class:`Shape`, :class:`Closest`),
:class:`Floor`, :class:`Slope`, :class:`Sphere`, :class:`Box` and :class:`Scene`, their
union; :func:`as_shape`, the one way a ground or terrain parameter becomes a shape.

World frame as everywhere (DESIGN.md, "Conventions"): right-handed, Y up; lengths in the
skeleton's unit. Values are immutable: frozen dataclasses holding read-only array copies.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array, frozen
from ._kinds import BOX, FLOOR, SPHERE

__all__ = [
    "Box",
    "Closest",
    "Floor",
    "Scene",
    "Shape",
    "ShapeArrays",
    "Slope",
    "Sphere",
    "arrays_of",
    "as_shape",
    "ground_height",
    "shape_arrays",
]

_UP = np.array([0.0, 1.0, 0.0])
_UP.setflags(write=False)


# -- argument checks ---------------------------------------------------------------------


def _as_points(points: ArrayLike, name: str = "points") -> Array:
    p = np.asarray(points, dtype=np.float64)
    if p.shape[-1:] != (3,):
        raise ValueError(f"Expected `{name}` to have shape (..., 3), got {p.shape}")
    return p


def _as_xz(xz: ArrayLike) -> Array:
    a = np.asarray(xz, dtype=np.float64)
    if a.shape[-1:] != (2,):
        raise ValueError(f"Expected `xz` to have shape (..., 2), got {a.shape}")
    return a


def _finite_float(value: Any, name: str, minimum: float | None = None) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"Expected `{name}` to be finite, got {value}")
    if minimum is not None and v < minimum:
        raise ValueError(f"Expected `{name}` >= {minimum}, got {value}")
    return v


def _below(below: ArrayLike | None, shape: tuple[int, ...]) -> Array | None:
    if below is None:
        return None
    return np.broadcast_to(np.asarray(below, dtype=np.float64), shape)


# -- the contract ------------------------------------------------------------------------


class Closest(NamedTuple):
    """What :meth:`Shape.closest` returns.

    Attributes
    ----------
    distance : ndarray, shape (...,)
        Signed distance, negative inside / below.
    point : ndarray, shape (..., 3)
        Closest point on the surface.
    normal : ndarray, shape (..., 3)
        Outward unit normal at ``point``; ``points = point + distance * normal``
        wherever the surface is smooth there.
    """

    distance: Array
    point: Array
    normal: Array


class Shape(abc.ABC):
    """A solid in the world that answers distance queries.

    Subclasses implement :meth:`closest` and :meth:`ground_height`; the other
    queries derive from :meth:`closest` (and may be overridden for speed).
    """

    @abc.abstractmethod
    def closest(self, points: ArrayLike) -> Closest:
        """Signed distance, closest surface point and outward normal, in one pass.

        Parameters
        ----------
        points : array_like, shape (..., 3)

        Returns
        -------
        Closest
            ``distance (...,)``, ``point (..., 3)``, ``normal (..., 3)``.
        """

    def distance(self, points: ArrayLike) -> Array:
        """Signed Euclidean distance to the surface, negative inside / below.

        ``points`` (..., 3) -> (...,).
        """
        return self.closest(points).distance

    def project(self, points: ArrayLike) -> Array:
        """The closest point on the surface (also for points inside).

        ``points`` (..., 3) -> (..., 3).
        """
        return self.closest(points).point

    def normal(self, points: ArrayLike) -> Array:
        """Outward unit normal at the projection of each point.

        Equal to the gradient of :meth:`distance` where that is differentiable;
        at an edge or corner of a box, the direction from the surface to the
        point.

        ``points`` (..., 3) -> (..., 3).
        """
        return self.closest(points).normal

    @abc.abstractmethod
    def ground_height(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        """Height of the top of the shape above each ``(x, z)``; ``-inf`` where none.

        Parameters
        ----------
        xz : array_like, shape (..., 2)
        below : array_like, shape (...,), optional
            Heights of the feet: a bounded object (box, sphere) whose lowest
            point in the vertical line lies above ``below`` is an overhang and
            is ignored. Floors and height fields are ground everywhere.

        Returns
        -------
        ndarray, shape (...,)
        """

    def ground_gradient(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        """``(∂h/∂x, ∂h/∂z)`` of :meth:`ground_height` ``h``: the ground's slope under
        each ``(x, z)``, for tasks that keep points above it (their Jacobian's normal
        ``(−h_x, 1, −h_z)``).

        By central differences of :meth:`ground_height` (step ``1e-6 max(1, |x|)``);
        planes and height fields answer exactly. Zero where the ground is flat, and
        where there is none (``-inf`` on both sides).

        ``xz`` (..., 2) -> (..., 2).
        """
        xz = _as_xz(xz)
        step = 1e-6 * np.maximum(1.0, np.abs(xz))
        out = np.empty(xz.shape)
        for c in range(2):
            delta = np.zeros(xz.shape)
            delta[..., c] = step[..., c]
            up = self.ground_height(xz + delta, below=below)
            down = self.ground_height(xz - delta, below=below)
            with np.errstate(invalid="ignore"):
                slope = (up - down) / (2.0 * step[..., c])
            out[..., c] = np.where(np.isfinite(slope), slope, 0.0)
        return out


def _compiled_rows(shape: Shape, points: ArrayLike) -> tuple[Array, Array, tuple[int, ...]]:
    p = _as_points(points)
    flat = np.ascontiguousarray(p.reshape(-1, 3), dtype=np.float64)
    return p, flat, p.shape[:-1]


def _compiled_closest(shape: Shape, points: ArrayLike) -> Closest:
    """``closest`` of a box or sphere by the compiled per-point kernel
    (:func:`retarget.environment._kernels.shapes.point_closest`); a point with a NaN gives NaN."""
    from ._kernels.shapes import closest_rows

    p, flat, lead = _compiled_rows(shape, points)
    n = flat.shape[0]
    dist, point, normal = np.empty(n), np.empty((n, 3)), np.empty((n, 3))
    closest_rows(*arrays_of(shape), 0, flat, dist, point, normal)
    return Closest(dist.reshape(lead), point.reshape(p.shape), normal.reshape(p.shape))


def _compiled_distance(shape: Shape, points: ArrayLike) -> Array:
    """``distance`` of a box or sphere by the compiled per-point kernel."""
    from ._kernels.shapes import distance_rows

    _, flat, lead = _compiled_rows(shape, points)
    dist = np.empty(flat.shape[0])
    distance_rows(*arrays_of(shape), 0, flat, dist)
    return dist.reshape(lead)


# -- floor -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Floor(Shape):
    """The plane ``y = height``; everything below it is inside.

    >>> Floor(1.0).distance([[0.0, 3.0, 0.0], [2.0, 0.5, 1.0]]).tolist()
    [2.0, -0.5]
    """

    height: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "height", _finite_float(self.height, "height"))

    def distance(self, points: ArrayLike) -> Array:
        return _as_points(points)[..., 1] - self.height

    def closest(self, points: ArrayLike) -> Closest:
        p = _as_points(points)
        point = p.copy()
        point[..., 1] = self.height
        normal = np.broadcast_to(_UP, p.shape).copy()
        return Closest(p[..., 1] - self.height, point, normal)

    def ground_height(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        return np.full(_as_xz(xz).shape[:-1], self.height)

    def ground_gradient(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        return np.zeros(_as_xz(xz).shape)


@dataclass(frozen=True, eq=False)
class Slope(Shape):
    """The plane ``y = height + slope · (x, z)``: a floor that rises ``slope[0]`` per unit
    along x and ``slope[1]`` along z (a ramp; a capture volume whose floor is not level).
    Everything below it is inside; ``slope = (0, 0)`` is :class:`Floor`.

    >>> ramp = Slope(0.0, [0.0, 0.5])
    >>> float(ramp.ground_height([3.0, 2.0])), round(float(ramp.distance([0.0, 1.0, 0.0])), 6)
    (1.0, 0.894427)
    """

    height: float = 0.0
    slope: Array = field(default_factory=lambda: np.zeros(2))

    def __post_init__(self) -> None:
        object.__setattr__(self, "height", _finite_float(self.height, "height"))
        object.__setattr__(self, "slope", frozen(self.slope, (2,), "slope", finite=True))

    @property
    def _unit_normal(self) -> Array:
        n = np.array([-self.slope[0], 1.0, -self.slope[1]])
        return n / np.linalg.norm(n)

    def closest(self, points: ArrayLike) -> Closest:
        p = _as_points(points)
        n = self._unit_normal
        d = (p[..., 1] - self.ground_height(p[..., [0, 2]])) * n[1]  # along the normal
        return Closest(d, p - d[..., None] * n, np.broadcast_to(n, p.shape).copy())

    def ground_height(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        return self.height + _as_xz(xz) @ self.slope

    def ground_gradient(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        return np.broadcast_to(self.slope, _as_xz(xz).shape).copy()


# -- sphere ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Sphere(Shape):
    """A ball of ``radius`` around ``center``.

    Parameters
    ----------
    center : array_like, shape (3,)
    radius : float
        ``>= 0``.

    >>> Sphere([0, 0, 0], 1.0).project([0.0, 0.0, 3.0]).tolist()
    [0.0, 0.0, 1.0]
    """

    center: Array
    radius: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", frozen(self.center, (3,), "center", finite=True))
        object.__setattr__(self, "radius", _finite_float(self.radius, "radius", 0.0))

    def distance(self, points: ArrayLike) -> Array:
        return _compiled_distance(self, points)

    def closest(self, points: ArrayLike) -> Closest:
        # at the centre every direction is closest: +Y
        return _compiled_closest(self, points)

    def ground_height(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        xz = _as_xz(xz)
        d2 = (xz[..., 0] - self.center[0]) ** 2 + (xz[..., 1] - self.center[2]) ** 2
        over = d2 <= self.radius**2
        half = np.sqrt(np.where(over, self.radius**2 - d2, 0.0))
        low = _below(below, d2.shape)
        if low is not None:
            over &= self.center[1] - half <= low
        return np.where(over, self.center[1] + half, -np.inf)


# -- box ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Box(Shape):
    """An oriented box.

    Parameters
    ----------
    center : array_like, shape (3,)
    half_extents : array_like, shape (3,)
        Half sizes along the box's own x, y, z axes, ``>= 0``.
    rotation : array_like, shape (4,), optional
        Orientation (w, x, y, z) of the box in the world; normalised on
        construction. Identity by default.

    >>> box = Box([0, 1, 0], [1, 1, 1])
    >>> box.distance([[0.0, 3.0, 0.0], [0.0, 1.5, 0.0]]).tolist()
    [1.0, -0.5]
    """

    center: Array
    half_extents: Array
    rotation: Array = field(default_factory=quat.identity)
    _R_world_box: Array = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "center", frozen(self.center, (3,), "center", finite=True))
        e = frozen(self.half_extents, (3,), "half_extents", finite=True)
        if (e < 0.0).any():
            raise ValueError(f"Expected `half_extents` >= 0, got {e.tolist()}")
        object.__setattr__(self, "half_extents", e)
        q = np.array(self.rotation, dtype=np.float64)
        if q.shape != (4,):
            raise ValueError(f"Expected `rotation` to have shape (4,), got {q.shape}")
        norm = float(np.linalg.norm(q))
        if not (math.isfinite(norm) and norm > 1e-12):
            raise ValueError(f"Expected `rotation` to be a non-zero quaternion, got {q.tolist()}")
        q = q / norm
        q.setflags(write=False)
        object.__setattr__(self, "rotation", q)
        R = quat.matrix_from_quat(q)
        R.setflags(write=False)
        object.__setattr__(self, "_R_world_box", R)

    @property
    def rotation_matrix(self) -> Array:
        """The box's world rotation matrix ``R`` (3, 3): ``p_world = c + R p_box``."""
        return self._R_world_box

    def distance(self, points: ArrayLike) -> Array:
        return _compiled_distance(self, points)

    def closest(self, points: ArrayLike) -> Closest:
        # outside: clamped into the box, the normal from there to the point; inside or
        # on the surface: the coordinate of the nearest face moved onto it
        return _compiled_closest(self, points)

    def ground_height(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        """Top of the box along the vertical line through each ``(x, z)``.

        The vertical line ``(x, t, z)`` is ``a + t b`` in box coordinates; the
        slabs ``|a_k + t b_k| <= e_k`` bound ``t``. For a tilted box this is
        its highest point above ``(x, z)``, whatever the slope there.
        """
        xz = _as_xz(xz)
        R = self._R_world_box
        rel = np.zeros((*xz.shape[:-1], 3))
        rel[..., 0] = xz[..., 0] - self.center[0]
        rel[..., 1] = -self.center[1]
        rel[..., 2] = xz[..., 1] - self.center[2]
        a = rel @ R  # (..., 3), the line's point at t = 0 in box coordinates
        b = R[1]  # the world's up direction in box coordinates
        t_lo = np.full(xz.shape[:-1], -np.inf)
        t_hi = np.full(xz.shape[:-1], np.inf)
        for k in range(3):
            e = self.half_extents[k]
            if abs(b[k]) > 1e-12:
                t1 = (-e - a[..., k]) / b[k]
                t2 = (e - a[..., k]) / b[k]
                t_lo = np.maximum(t_lo, np.minimum(t1, t2))
                t_hi = np.minimum(t_hi, np.maximum(t1, t2))
            else:  # the line runs parallel to this slab: inside it or never
                miss = np.abs(a[..., k]) > e
                t_lo = np.where(miss, np.inf, t_lo)
                t_hi = np.where(miss, -np.inf, t_hi)
        hit = t_lo <= t_hi
        low = _below(below, hit.shape)
        if low is not None:
            hit &= t_lo <= low
        return np.where(hit, t_hi, -np.inf)


# -- scene -------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Scene(Shape):
    """The union of shapes.

    Signed distance is the minimum over shapes (exact outside; inside where
    shapes overlap, the deepest single penetration); the closest point and
    normal are the :meth:`nearest` shape's.

    Parameters
    ----------
    shapes : sequence of Shape
        At least one; nested scenes are flattened (their units must agree).
    unit : str, optional
        The unit of every length, when known (files carry it); by default
        that of the nested scenes.

    >>> scene = Scene([Floor(0.0), Sphere([0, 1, 0], 0.5)])
    >>> scene.distances([0.0, 2.0, 0.0]).tolist(), int(scene.nearest([0.0, 2.0, 0.0]))
    ([2.0, 0.5], 1)
    """

    shapes: tuple[Shape, ...]
    unit: str | None = None

    def __post_init__(self) -> None:
        flat: list[Shape] = []
        unit = self.unit
        for s in self.shapes:
            if isinstance(s, Scene):
                if s.unit is not None and unit is not None and s.unit != unit:
                    raise ValueError(f"Cannot nest a scene in {s.unit!r} into one in {unit!r}")
                unit = unit if s.unit is None else s.unit
                flat.extend(s.shapes)
            elif isinstance(s, Shape):
                flat.append(s)
            else:
                raise TypeError(f"Expected Shape objects in `shapes`, got {type(s).__name__}")
        if not flat:
            raise ValueError("A scene needs at least one shape")
        object.__setattr__(self, "shapes", tuple(flat))
        object.__setattr__(self, "unit", unit)

    def __len__(self) -> int:
        return len(self.shapes)

    def distances(self, points: ArrayLike) -> Array:
        """Signed distance to each shape.

        ``points`` (..., 3) -> (..., n_shapes).
        """
        p = _as_points(points)
        return np.stack([s.distance(p) for s in self.shapes], axis=-1)

    def nearest(self, points: ArrayLike) -> NDArray[np.intp]:
        """Index of the shape of smallest signed distance (deepest inside first).

        Parameters
        ----------
        points : array_like, shape (..., 3)

        Returns
        -------
        ndarray of int, shape (...,)
        """
        return np.argmin(self.distances(points), axis=-1)

    def distance(self, points: ArrayLike) -> Array:
        return self.distances(points).min(axis=-1)

    def closest(self, points: ArrayLike) -> Closest:
        p = _as_points(points)
        each = [s.closest(p) for s in self.shapes]
        d = np.stack([c.distance for c in each], axis=-1)
        k = np.argmin(d, axis=-1)[..., None]
        point = np.stack([c.point for c in each], axis=-2)  # (..., n, 3)
        normal = np.stack([c.normal for c in each], axis=-2)
        pick = k[..., None]
        return Closest(
            np.take_along_axis(d, k, axis=-1)[..., 0],
            np.take_along_axis(point, pick, axis=-2)[..., 0, :],
            np.take_along_axis(normal, pick, axis=-2)[..., 0, :],
        )

    def ground_height(self, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
        xz = _as_xz(xz)
        return np.stack([s.ground_height(xz, below=below) for s in self.shapes], axis=-1).max(-1)


def ground_height(shape: Shape, xz: ArrayLike, *, below: ArrayLike | None = None) -> Array:
    """Height of the highest surface a foot could stand on above each ``(x, z)``.

    Floors and height fields give their surface; boxes and spheres their top
    where ``(x, z)`` lies over them, else ``-inf``; a scene the maximum.

    Parameters
    ----------
    shape : Shape
        A shape or a :class:`Scene`.
    xz : array_like, shape (..., 2)
    below : array_like, shape (...,), optional
        Heights of the feet: bounded objects lying wholly above them
        (overhangs, table tops over a foot) are ignored.

    Returns
    -------
    ndarray, shape (...,)

    >>> scene = Scene([Floor(0.0), Box([0, 0.5, 0], [1, 0.5, 1])])
    >>> ground_height(scene, [[0.0, 0.0], [3.0, 0.0]]).tolist()
    [1.0, 0.0]
    """
    return shape.ground_height(xz, below=below)


# -- as arrays (the compiled kernels' form) ---------------------------------------------


class ShapeArrays(NamedTuple):
    """Floors, boxes and spheres as arrays (module docstring)."""

    kind: NDArray[np.intp]
    center: NDArray[np.float64]
    half: NDArray[np.float64]
    frame: NDArray[np.float64]
    size: NDArray[np.float64]


def shape_arrays(objects: tuple[Shape, ...] | list[Shape]) -> ShapeArrays | None:
    """The arrays of ``objects``; None when one is not exactly a :class:`Floor`,
    :class:`Box` or :class:`Sphere` (a subclass may answer otherwise)."""
    if any(type(shape) not in (Floor, Box, Sphere) for shape in objects):
        return None
    return _arrays(objects)


def arrays_of(shape: Shape) -> ShapeArrays:
    """The arrays of one floor, box or sphere (or an instance of a subclass)."""
    if not isinstance(shape, (Floor, Box, Sphere)):
        raise TypeError(f"Expected a Floor, Box or Sphere, got {type(shape).__name__}")
    return _arrays((shape,))


def _arrays(objects: tuple[Shape, ...] | list[Shape]) -> ShapeArrays:
    m = len(objects)
    kind = np.zeros(m, np.intp)
    center = np.zeros((m, 3))
    half = np.zeros((m, 3))
    frame = np.broadcast_to(np.eye(3), (m, 3, 3)).copy()
    size = np.zeros(m)
    for j, shape in enumerate(objects):
        if isinstance(shape, Floor):
            kind[j], size[j] = FLOOR, shape.height
        elif isinstance(shape, Box):
            kind[j], center[j], half[j] = BOX, shape.center, shape.half_extents
            frame[j] = shape.rotation_matrix
        elif isinstance(shape, Sphere):
            kind[j], center[j], size[j] = SPHERE, shape.center, shape.radius
    return ShapeArrays(kind, center, half, frame, size)


def as_shape(ground: Shape | float | None, *, name: str = "ground") -> Shape:
    """The shape a ground or terrain parameter stands for: every such parameter of the
    library is a :class:`Shape` and passes through here.

    Parameters
    ----------
    ground : Shape or float or None
        A shape (itself); a number, the height of a level :class:`Floor`; None, the
        default ``Floor(0.0)``.
    name : str
        The parameter's name, for the error.

    Returns
    -------
    Shape

    Raises
    ------
    TypeError
        For anything else (a callable, an object with a ``height`` method): wrap a
        height function in a :class:`~retarget.environment.HeightField` sampled on a
        grid, or write a :class:`Shape`.

    >>> as_shape(None), as_shape(2)
    (Floor(height=0.0), Floor(height=2.0))
    """
    if ground is None:
        return Floor(0.0)
    if isinstance(ground, Shape):
        return ground
    if isinstance(ground, (int, float, np.integer, np.floating)) and not isinstance(ground, bool):
        return Floor(float(ground))
    raise TypeError(
        f"Expected `{name}` to be a Shape (retarget.environment) or a floor height, "
        f"got {type(ground).__name__}"
    )
