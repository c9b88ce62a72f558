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

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array, as_batch
from ..core.lazy import loader

_kernels = loader("retarget.ik._kernels.root")

__all__ = [
    "BallEstimate",
    "RootEstimate",
    "closest_in_balls",
    "estimate_root",
    "weighted_offset",
]


_MAX_BALLS = 8
# messages of the codes of the kernel's _invalid_input
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
    invalid = _kernels()._closest_kernel(
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
