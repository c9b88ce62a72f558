"""Root position estimation (Shin, Lee, Shin & Gleicher 2001, section 5.1 and Appendix).

Before any joint angle changes, the solver of *Computer puppetry* moves the
root so that every end-effector goal is (nearly) reachable by stretching its
limb alone:

1. **offset** (eq. 16): the weighted mean of the end-effector displacements,
   ``d = Σ w_i (p_i^g − p_i^e) / Σ w_i``: the offset root is ``p = root + d``
   (:func:`weighted_offset`);
2. **balls** (Figure 5, eq. 17): with the captured joint angles, the root can
   bring goal ``i`` within reach iff it lies in the ball centred at
   ``goal_i + d_s`` (``d_s`` the vector from the shoulder or hip to the root)
   of radius ``r_i = l_i / w_i`` (``l_i`` the limb length, ``w_i`` its
   importance: a less important limb gets a larger ball and moves the root
   less; ``w_i = 0`` gives ``r_i = +∞``, a ball that is all of space);
3. **closest point** (Appendix, eqs. 25-35): the root estimate is the point of
   the common intersection of the balls closest to ``p``
   (:func:`closest_in_balls`; the whole of section 5.1 is
   :func:`estimate_root`).

Closest point of an intersection of balls
-----------------------------------------
``p`` itself if it lies in every ball (case 0, *interior*). Otherwise the
answer is on the boundary, made of pieces of spheres, circles where two
spheres meet and vertices where three meet (Figure 6), tried in that order:

1. **spheres** (case 1): ``c_i + r_i (p − c_i) / |p − c_i|`` for every ball
   that ``p`` lies outside of;
2. **circles** (case 2, eqs. 25-31): the closest point to ``p`` on the circle
   of each pair of spheres;
3. **vertices** (case 3, eqs. 32-35): the (at most two) common points of each
   triple of spheres.

At each level the candidates that lie in every ball are kept and the one
nearest ``p`` is the answer; the next level is tried only when none is kept.

The paper computes "the closest point on each sphere" and "on each circle"
without saying from which side. We keep only the candidates of an element
that *faces* ``p``, those at which ``p − x`` is in the normal cone of the
element's balls (the Karush-Kuhn-Tucker condition). A sphere candidate counts
only when ``p`` is outside its ball; a circle candidate of balls ``i, j`` only
when the projection of ``p`` on ball ``i`` is not inside ball ``j`` (by more
than ``τ_j``, below) and vice versa (otherwise that projection, not a circle
point, is the closest point of the two balls). With this rule a kept
candidate is the projection of ``p`` on its own balls, hence on their
intersection, so stopping at the first level that keeps one is exact (the
vertices come last and need no rule). Without it the level order can return
a point that is not the closest: a sphere candidate from a ball that contains
``p`` may lie in the intersection while the answer is on a circle, and a
circle candidate while the answer is a vertex (both in the tests).

Tolerances
----------
A point ``x`` is *inside* ball ``i`` when

.. math::
    |x - c_i| \\le r_i + τ_i, \\qquad τ_i = 10^{-9}\\,(r_i + S),

``S`` the largest ``|c_j|`` over the frame's balls of finite radius (the
frame's coordinate scale; rounding in the constructions is ~1e-16 of it).
The same test decides whether two spheres touch (``|c_i − c_j| ≤ r_i + r_j +
τ_i + τ_j``: tangent spheres meet at a circle of radius 0) and, in
:func:`estimate_root`, whether a limb is reachable. Centres closer than
``1e-12 (S + r_i + r_j)`` are coincident: their spheres define no circle
(concentric spheres share no circle; two equal coincident spheres are one
sphere, whose candidates the sphere level already gives). Balls of infinite
radius are inside-everything: they give no candidate, and never fail a test.

Empty intersection
------------------
When no level keeps a candidate, the balls have no common point. As in the
paper, the balls that do not meet the ball of the most important end-effector
(largest ``w`` among the balls of finite radius; ties: lowest index) are
discarded and the search repeated. **Extension of the paper:** if the
remaining balls still have no common point (three balls may meet pairwise and
have none in common), the least important remaining ball of finite radius
other than the most important one (ties: highest index) is discarded, one at a
time, until they have one. The ball of the most important end-effector alone
always has a common point, so this ends. Balls of infinite radius are never
discarded, and never chosen as the most important: they do not change the
answer.
:attr:`BallEstimate.kept` tells which balls the answer satisfies.

Why numba
---------
Which level answers, and how many balls are dropped, differ from frame to
frame: a numpy version would evaluate every candidate of every level for every
frame and mask, and repeat that for every dropping round. The per-frame search
is instead a compiled scalar kernel (``closest_in_balls_frame``, on 3-tuples, no
allocation per frame) and ``_closest_kernel`` loops over the frames inside
numba (one thread): 0.3-0.6 µs per frame of four balls (1.7-3 million
frames/s, the lower figure when half the frames must drop balls), and about
8 µs per call for checks, broadcasting and copies, so a single frame costs
about 8 µs. The inputs are always copied into
fresh C arrays so that numba compiles the kernel once (read-only or broadcast
views would each be another compiled version).

Conventions (DESIGN.md, "Conventions"): positions in the skeleton's unit,
batched over leading axes (frames), ball axes trailing.

Reference: H. J. Shin, J. Lee, S. Y. Shin, M. Gleicher, *Computer puppetry: an
importance-based approach*, ACM Transactions on Graphics 20(2), 2001,
section 5.1, eqs. (16)-(17), and Appendix A, eqs. (25)-(35).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._arrays import Array, as_batch
from .._vec3 import add as _add
from .._vec3 import cross as _cross
from .._vec3 import dot as _dot
from .._vec3 import norm as _norm
from .._vec3 import scale as _mul
from .._vec3 import sub as _sub

__all__ = [
    "BallEstimate",
    "RootEstimate",
    "closest_in_balls",
    "closest_in_balls_frame",
    "estimate_root",
    "weighted_offset",
]


#: τ_i / (r_i + S): "inside a ball" tolerance (module docstring, "Tolerances")
_INSIDE_RTOL = 1e-9
#: centres closer than this times (S + r_i + r_j) are coincident
_COINCIDENT_RTOL = 1e-12
_MAX_BALLS = 8
# BallEstimate.case
_INTERIOR, _SPHERE, _CIRCLE, _VERTEX = 0, 1, 2, 3
# messages of the codes of _invalid_input
_INVALID = {
    1: "Expected a finite `point`",
    2: "Expected finite `centers`",
    3: "Expected `radii` >= 0 (inf allowed, NaN not)",
    4: "Expected finite `importance` >= 0",
}


@dataclass(frozen=True, eq=False)
class BallEstimate:
    """The result of :func:`closest_in_balls`; read-only arrays, batch shape ``(...)``.

    Attributes
    ----------
    position : ndarray, shape (..., 3)
        The point of the common intersection of the kept balls closest to ``point``.
    kept : ndarray of bool, shape (..., n)
        The balls the answer lies in: all of them, unless their intersection was
        empty and some were discarded (module docstring, "Empty intersection").
    case : ndarray of int8, shape (...)
        Where the answer lies: 0 ``point`` itself (interior), 1 on a sphere,
        2 on a circle of two spheres, 3 at a vertex of three spheres.
    moved : ndarray, shape (...)
        ``|position − point|``, in the unit of the input.
    """

    position: Array
    kept: NDArray[np.bool_]
    case: NDArray[np.int8]
    moved: Array


@dataclass(frozen=True, eq=False)
class RootEstimate:
    """The result of :func:`estimate_root`; read-only arrays, batch shape ``(...)``.

    Attributes
    ----------
    position : ndarray, shape (..., 3)
        The estimated root position (``balls.position``).
    offset : ndarray, shape (..., 3)
        The weighted offset ``d`` of eq. (16); ``root + offset`` is the offset root.
    balls : BallEstimate
        The closest-point search from the offset root, one ball per limb.
    reachable : ndarray of bool, shape (..., n)
        Limb ``i``'s upper joint at the estimate lies within ``l_i / w_i`` of its
        goal (within the tolerance of the module docstring); always true for
        ``w_i = 0``.
    """

    position: Array
    offset: Array
    balls: BallEstimate
    reachable: NDArray[np.bool_]


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
    frame at a time (:mod:`retarget.online._puppet_kernel`); unchecked.

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


# -- public functions -----------------------------------------------------------------------


def _as_points(x: ArrayLike, name: str) -> tuple[Array, int]:
    """``x`` as a float64 array of shape ``(..., n, 3)``, and ``n``."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim < 2 or arr.shape[-1] != 3:
        raise ValueError(f"Expected `{name}` to have shape (..., n, 3), got {arr.shape}")
    return arr, arr.shape[-2]


def _check_count(n: int) -> None:
    if not 1 <= n <= _MAX_BALLS:
        raise ValueError(f"Expected 1 to {_MAX_BALLS} balls (end-effectors), got {n}")


def _check_importance(w: Array) -> None:
    if not (np.isfinite(w).all() and (w >= 0.0).all()):
        raise ValueError(_INVALID[4])


def _frames(x: Array, batch: tuple[int, ...], count: int, tail: tuple[int, ...]) -> Array:
    """``x`` broadcast to ``batch + tail``, copied into a new (count, *tail) C array.

    Always a fresh writable array, so the kernel sees one array type (numba
    compiles one version per type: read-only, broadcast views would be another).
    """
    out = np.empty((count, *tail))
    out.reshape(batch + tail)[...] = x
    return out


def _batch_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    if all(s == shapes[0] for s in shapes):
        return shapes[0]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"Batch shapes do not broadcast: {shapes}") from None


def _offset(e: Array, g: Array, w: Array) -> Array:
    """Eq. (16) on checked arrays (:func:`weighted_offset`); 0 where all ``w_i`` are 0."""
    numerator = (w[..., None, :] @ (g - e))[..., 0, :]  # Σ w_i d_i; exactly 0 if all w_i = 0
    total = np.sum(w, axis=-1)
    return numerator / np.where(total > 0.0, total, 1.0)[..., None]


def _closest(p: Array, c: Array, r: Array, w: Array) -> tuple[BallEstimate, NDArray[np.bool_]]:
    """:func:`closest_in_balls` on arrays of checked shapes, and ``inside`` (..., n)."""
    n = c.shape[-2]
    batch = _batch_shape(p.shape[:-1], c.shape[:-2], r.shape[:-1], w.shape[:-1])
    count = math.prod(batch)
    position = np.empty((count, 3))
    kept = np.empty((count, n), dtype=np.bool_)
    case = np.empty(count, dtype=np.int8)
    moved = np.empty(count)
    inside = np.empty((count, n), dtype=np.bool_)
    invalid = _closest_kernel(
        _frames(p, batch, count, (3,)),
        _frames(c, batch, count, (n, 3)),
        _frames(r, batch, count, (n,)),
        _frames(w, batch, count, (n,)),
        position,
        kept,
        case,
        moved,
        inside,
    )
    if invalid:
        raise ValueError(_INVALID[invalid])
    out = (
        position.reshape((*batch, 3)),
        kept.reshape((*batch, n)),
        case.reshape(batch),
        moved.reshape(batch),
        inside.reshape((*batch, n)),
    )
    for a in out:
        a.setflags(write=False)
    return BallEstimate(*out[:4]), out[4]


def weighted_offset(effectors: ArrayLike, goals: ArrayLike, importance: ArrayLike) -> Array:
    """The initial root offset: importance-weighted mean displacement (Shin et al. 2001, eq. 16).

    .. math::
        \\mathbf d = \\frac{\\sum_i w_i (\\mathbf p_i^g - \\mathbf p_i^e)}{\\sum_i w_i}

    Parameters
    ----------
    effectors : array_like, shape (..., n, 3)
        End-effector positions ``p_i^e`` of the character posed with the captured
        joint angles.
    goals : array_like, shape (..., n, 3)
        Their goal positions ``p_i^g``, in the same unit.
    importance : array_like, shape (..., n)
        Importance values ``w_i >= 0``.

    Returns
    -------
    ndarray, shape (..., 3)
        The offset ``d`` (the input's unit); zero where every ``w_i`` is zero.

    Examples
    --------
    >>> weighted_offset([[0, 0, 0], [0, 0, 0]], [[4, 0, 0], [0, 8, 0]], [1, 3])
    array([1., 6., 0.])
    """
    e, n = _as_points(effectors, "effectors")
    g = as_batch(goals, (n, 3), "goals")
    w = as_batch(importance, (n,), "importance")
    _check_importance(w)
    return _offset(e, g, w)


def closest_in_balls(
    point: ArrayLike, centers: ArrayLike, radii: ArrayLike, importance: ArrayLike
) -> BallEstimate:
    """The closest point to ``point`` in the common intersection of balls (Shin et al. 2001).

    Section 5.1 and Appendix A, eqs. (25)-(35): ``point`` itself if it lies in
    every ball, else the nearest candidate in every ball among the closest
    points on the spheres, then on the circles of pairs of spheres, then the
    vertices of triples; when the balls have no common point, balls are
    discarded by importance (module docstring, "Empty intersection"), and
    "inside" has a tolerance of ``1e-9 (r_i + S)`` (module docstring,
    "Tolerances").

    Parameters
    ----------
    point : array_like, shape (..., 3)
        The point ``p`` (in the section, the offset root position).
    centers : array_like, shape (..., n, 3)
        Ball centres ``c_i``, finite, 1 <= n <= 8.
    radii : array_like, shape (..., n)
        Ball radii ``r_i >= 0``, same unit; ``inf`` is a ball that is all of space.
    importance : array_like, shape (..., n)
        Importance ``w_i >= 0`` of each ball's end-effector: decides only which
        balls are discarded when the intersection is empty.

    Returns
    -------
    BallEstimate
        ``position`` (..., 3), ``kept`` (..., n), ``case`` (...) and ``moved`` (...),
        over the broadcast batch shape of the inputs.

    Examples
    --------
    Two unit balls 1.5 apart; the closest point of their lens to a point above
    it lies on their circle (case 2):

    >>> est = closest_in_balls([0.75, 2, 0], [[0, 0, 0], [1.5, 0, 0]], [1, 1], [1, 1])
    >>> est.position.round(4), int(est.case)
    (array([0.75  , 0.6614, 0.    ]), 2)
    """
    c, n = _as_points(centers, "centers")
    _check_count(n)
    p = as_batch(point, (3,), "point")
    r = as_batch(radii, (n,), "radii")
    w = as_batch(importance, (n,), "importance")
    return _closest(p, c, r, w)[0]


def estimate_root(
    root: ArrayLike,
    effectors: ArrayLike,
    goals: ArrayLike,
    uppers: ArrayLike,
    lengths: ArrayLike,
    importance: ArrayLike,
) -> RootEstimate:
    """Root position estimation of Shin et al. 2001, section 5.1 (eqs. 16-17, Appendix A).

    The offset root ``p = root + d`` (eq. 16, :func:`weighted_offset`) is moved
    to the closest point of the common intersection of one ball per limb
    (:func:`closest_in_balls`). With the captured joint angles fixed, the upper
    joint (shoulder, hip) of limb ``i`` is at ``x − d_s`` when the root is at
    ``x``, ``d_s = root − upper_i`` (the same at any root position), so the
    goal is within ``r_i`` of it iff ``x`` lies in the ball

    .. math::
        |x - (\\mathbf p_i^g + \\mathbf d_s)| \\le r_i = l_i / w_i
        \\quad \\text{(eq. 17; } w_i = 0 \\text{ gives } r_i = \\infty).

    Parameters
    ----------
    root : array_like, shape (..., 3)
        Root position of the character with the captured joint angles.
    effectors : array_like, shape (..., n, 3)
        End-effector (wrist, ankle) positions in that pose.
    goals : array_like, shape (..., n, 3)
        Goal positions of the end-effectors.
    uppers : array_like, shape (..., n, 3)
        Upper joint (shoulder, hip) positions in that pose.
    lengths : array_like, shape (n,) or (..., n)
        Maximal limb lengths ``l_i >= 0`` (upper joint to end-effector, fully
        stretched), in the same unit as the positions.
    importance : array_like, shape (..., n)
        Importance values ``w_i >= 0`` of the end-effectors.

    Returns
    -------
    RootEstimate
        ``position`` (..., 3), ``offset`` (..., 3), ``balls`` (a
        :class:`BallEstimate`: ``kept``, ``case``, ``moved`` from the offset
        root) and ``reachable`` (..., n).

    Examples
    --------
    One arm of length 1 whose goal is 3 away from the shoulder, the other
    (importance 0) unconstrained: the offset puts the hand on its goal.

    >>> est = estimate_root(
    ...     root=[0, 0, 0],
    ...     effectors=[[1, 0, 0], [-1, 0, 0]],
    ...     goals=[[3, 0, 0], [-5, 0, 0]],
    ...     uppers=[[0, 0, 0], [0, 0, 0]],
    ...     lengths=[1, 1],
    ...     importance=[1, 0],
    ... )
    >>> est.position, int(est.balls.case), est.reachable
    (array([2., 0., 0.]), 0, array([ True,  True]))
    """
    e, n = _as_points(effectors, "effectors")
    _check_count(n)
    root_ = as_batch(root, (3,), "root")
    g = as_batch(goals, (n, 3), "goals")
    u = as_batch(uppers, (n, 3), "uppers")
    lengths_ = as_batch(lengths, (n,), "lengths")
    w = as_batch(importance, (n,), "importance")
    _check_importance(w)
    if not (np.isfinite(lengths_).all() and (lengths_ >= 0.0).all()):
        raise ValueError("Expected finite `lengths` >= 0")
    offset = _offset(e, g, w)  # eq. (16)
    centers = g + (root_[..., None, :] - u)  # the goal translated by d_s = root − upper
    radii = np.full(np.broadcast_shapes(lengths_.shape, w.shape), np.inf)
    np.divide(lengths_, w, out=radii, where=w > 0.0)  # eq. (17)
    balls, reachable = _closest(root_ + offset, centers, radii, w)
    if offset.shape != balls.position.shape:
        offset = np.broadcast_to(offset, balls.position.shape).copy()
    offset.setflags(write=False)
    return RootEstimate(balls.position, offset, balls, reachable)
