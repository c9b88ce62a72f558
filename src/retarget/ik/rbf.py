"""The cardinal basis of Rose, Sloan & Cohen 2001, section 3 (after Sloan et al. 2001).

One weight function per example ``i``, one at its own point of the abstract
(adverb) space and zero at every other example's:

.. math::
    w_i(\\mathbf p) = \\sum_k r_{k,i} R_k(\\mathbf p)
                     + \\sum_{l=0}^{D} a_{i,l} A_l(\\mathbf p)          \\qquad (2)

* **linear part** (eq. 4): per example the least-squares hyperplane through
  1 at its point and 0 at the others', ``p_h a = I`` with ``p_h`` the points
  in homogeneous form (``A_l(p) = p_l``, ``A_D = 1``): it carries the basis
  outside the examples' hull (extrapolation);
* **radial part**: ``R_k(p) = B(|p − c_k| / α_k)``, the cubic B-spline's
  cross-section (``B(0) = 2/3``, zero from ``|t| = 2`` on) with ``α_k`` the
  distance from centre ``k`` to its nearest other centre, so that a centre's
  support reaches twice as far; the weights ``r`` solve ``Q r = q`` with
  ``Q_{c,k} = R_k(c_c)`` and ``q`` what the linear part leaves at the centres.

A blend of example values ``x_i`` is then ``x(p) = Σ_i w_i(p) x_i`` (eq. 3).

**Pseudo-examples** (section 4.3, :func:`insert_centre`): a new centre whose
targets are the weights at another point ``p′``; the hyperplanes, the old
centres, their radii and their radial weights are kept. The paper keeps each
insertion's effect local and solves "only for the radial basis function
weights needed to maintain interpolating cardinal bases"; here the new
centre's support reaches its nearest other centre and no farther
(``α = d_nearest / 2``): it is then zero at every other centre, no other
interpolation condition moves, its own radial weights follow in closed form,
and the change to the space is confined to that ball (a test). The
original examples' radii keep the paper's rule (support twice the nearest
distance), so the first basis is the paper's exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._arrays import Array

__all__ = ["CardinalBasis", "cardinal_basis", "insert_centre", "radial_bspline"]


def radial_bspline(t: ArrayLike) -> Array:
    """The uniform cubic B-spline's cross-section at ``|t|`` (any shape): ``2/3`` at 0,
    ``1/6`` at 1, zero from 2 on; ``C²`` everywhere."""
    a = np.minimum(np.abs(np.asarray(t, dtype=np.float64)), 2.0)
    near = 2.0 / 3.0 - a * a + 0.5 * a * a * a
    far = np.clip(2.0 - a, 0.0, None) ** 3 / 6.0
    return np.asarray(np.where(a < 1.0, near, far))


@dataclass(frozen=True, eq=False)
class CardinalBasis:
    """Cardinal weight functions over a D-dimensional abstract space (eq. 2).

    Attributes
    ----------
    centres : ndarray, shape (C, D)
        The examples' points, then the pseudo-examples'.
    radii : ndarray, shape (C,)
        ``α_k``: the radial function of centre ``k`` is ``B(|p − c_k| / α_k)``.
    radial : ndarray, shape (C, N)
        ``r_{k,i}``: weight of centre ``k``'s radial function in example ``i``'s basis.
    linear : ndarray, shape (D + 1, N)
        ``a_{i,l}`` transposed: the hyperplane of example ``i`` is
        ``[p, 1] @ linear[:, i]``.
    """

    centres: Array
    radii: Array
    radial: Array
    linear: Array

    def __post_init__(self) -> None:
        for name in ("centres", "radii", "radial", "linear"):
            a = np.array(getattr(self, name), dtype=np.float64)
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    @property
    def examples(self) -> int:
        """N: the number of real examples (columns of the weights)."""
        return int(self.linear.shape[1])

    @property
    def dimension(self) -> int:
        """D: the number of adverbs."""
        return int(self.centres.shape[1])

    def radial_values(self, points: ArrayLike) -> Array:
        """``R_k(p)`` for every centre (..., C) at ``points`` (..., D)."""
        p = np.asarray(points, dtype=np.float64)
        gap = p[..., None, :] - self.centres
        distance = np.sqrt(np.einsum("...cd,...cd->...c", gap, gap))
        return radial_bspline(distance / self.radii)

    def weights(self, points: ArrayLike) -> Array:
        """Eq. (2): the examples' weights (..., N) at ``points`` (..., D); they sum to one
        wherever the hyperplanes do (the fit of the constant is exact)."""
        p = np.asarray(points, dtype=np.float64)
        if p.shape[-1:] != (self.dimension,):
            raise ValueError(f"Expected points of shape (..., {self.dimension}), got {p.shape}")
        linear = p @ self.linear[:-1] + self.linear[-1]
        return np.asarray(self.radial_values(p) @ self.radial + linear)


def cardinal_basis(points: ArrayLike) -> CardinalBasis:
    """The cardinal basis of N examples at ``points`` (N, D) (section 3.1).

    Raises
    ------
    ValueError
        When two examples share a point (no function can be one at one and zero at
        the other) or the radial system is singular.
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or len(p) < 2 or not np.isfinite(p).all():
        raise ValueError(f"Expected finite example points of shape (N >= 2, D), got {p.shape}")
    n = len(p)
    # eq. (4), p_h a = I, about the points' mean: where fewer than D + 1 examples leave
    # the hyperplanes undetermined, the least-norm fit then still sums to one
    mean = p.mean(axis=0)
    homogeneous = np.hstack([p - mean, np.ones((n, 1))])
    fit = np.asarray(np.linalg.lstsq(homogeneous, np.eye(n), rcond=None)[0], np.float64)
    residual = np.eye(n) - homogeneous @ fit  # q
    linear = np.vstack([fit[:-1], fit[-1] - mean @ fit[:-1]])
    gap = np.linalg.norm(p[:, None] - p[None], axis=-1)
    np.fill_diagonal(gap, np.inf)
    radii = gap.min(axis=1)
    if not (radii > 0).all():
        i = int(np.argmin(radii))
        raise ValueError(f"example {i} shares its point with another example")
    q_matrix = radial_bspline(gap / radii[None, :])  # Q[c, k] = R_k(p_c)
    np.fill_diagonal(q_matrix, 2.0 / 3.0)
    try:
        radial = np.asarray(np.linalg.solve(q_matrix, residual), np.float64)
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"the radial system Q r = q is singular: {exc}") from None
    return CardinalBasis(p, radii, radial, linear)


def insert_centre(basis: CardinalBasis, point: ArrayLike, values: ArrayLike) -> CardinalBasis:
    """A pseudo-example (section 4.3): a centre at ``point`` (D,) where the weights take
    ``values`` (N,) (the weights at the better point ``p′``); everything else kept.

    Its radius ``α`` is half the distance to the nearest centre, so its radial
    function vanishes at every other centre (module docstring) and the weights
    change only within that distance of ``point``.
    """
    p = np.asarray(point, dtype=np.float64)
    target = np.asarray(values, dtype=np.float64)
    if p.shape != (basis.dimension,) or target.shape != (basis.examples,):
        raise ValueError(
            f"Expected a point of shape ({basis.dimension},) and values of shape "
            f"({basis.examples},), got {p.shape} and {target.shape}"
        )
    nearest = float(np.linalg.norm(basis.centres - p, axis=1).min())
    if not nearest > 0:
        raise ValueError("a pseudo-example cannot sit on an existing centre")
    row = (target - basis.weights(p)) / (2.0 / 3.0)
    return CardinalBasis(
        np.vstack([basis.centres, p]),
        np.append(basis.radii, 0.5 * nearest),
        np.vstack([basis.radial, row]),
        basis.linear,
    )
