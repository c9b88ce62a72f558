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
targets are the weights at another point ``p′``. As the paper prescribes,
"once a radius is established for an example or pseudo-example it remains
fixed", the hyperplanes stay those of the examples, and "we only solve for
the radial basis function weights needed to maintain interpolating cardinal
bases": the new centre takes the examples' radius rule (``α`` the distance
to its nearest other centre), and ``Q r = q`` is solved again over all
centres, each keeping its own targets (``δ_ij`` at the examples, the earlier
pseudo-examples' weights at theirs). The change to the space stays near the
new centre (its support, and the few centres it overlaps), but it is not
confined to a ball. ``local=True`` keeps the earlier closed form instead:
``α = d_nearest / 2``, zero at every other centre, nothing else re-solved, the
change confined to that ball — a bump too narrow to correct the space between
centres (``tests/test_verbs.py``: the reach verb after 200 such insertions is
4.5 % of its reach off on average, 12.7 % at worst, on goals between the grid
points; 0.45 % and 1.7 % with the paper's radius).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from ..core.arrays import Array
from ..core.lazy import loader

__all__ = ["CardinalBasis", "cardinal_basis", "insert_centre", "radial_bspline"]

_kernels = loader("retarget.ik._kernels.rbf")


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
            a = np.array(getattr(self, name), dtype=np.float64, order="C")
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

    def targets(self) -> Array:
        """The weights at every centre (C, N): ``δ_ij`` at the examples, a
        pseudo-example's targets at its own (what :func:`insert_centre` keeps)."""
        n = self.examples
        return np.vstack([np.eye(n), self.weights(self.centres[n:])])

    def weights(self, points: ArrayLike) -> Array:
        """Eq. (2): the examples' weights (..., N) at ``points`` (..., D); they sum to one
        wherever the hyperplanes do (the fit of the constant is exact). Compiled
        (:mod:`retarget.ik._kernels.rbf`): each point meets only the centres whose
        support holds it."""
        p = np.asarray(points, dtype=np.float64)
        if p.shape[-1:] != (self.dimension,):
            raise ValueError(f"Expected points of shape (..., {self.dimension}), got {p.shape}")
        flat = np.ascontiguousarray(p.reshape(-1, self.dimension))
        out = np.empty((len(flat), self.examples))
        kernel = _kernels().weights_kernel
        kernel(flat, self.centres, self._inverse_radii, self.radial, self.linear, out)
        return out.reshape(*p.shape[:-1], self.examples)

    @cached_property
    def _inverse_radii(self) -> Array:
        return 1.0 / self.radii

    def weights_numpy(self, points: ArrayLike) -> Array:
        """:meth:`weights` in numpy (dense: every centre at every point), the reference
        the kernel is tested against."""
        p = np.asarray(points, dtype=np.float64)
        linear = p @ self.linear[:-1] + self.linear[-1]
        return np.asarray(self.radial_values(p) @ self.radial + linear)


def _solve_radial(centres: Array, radii: Array, targets: Array, linear: Array) -> Array:
    """``Q r = q`` (section 3.1.2): ``Q_{c,k} = R_k(p_c)`` over all centres, ``q`` the
    targets (C, N) less the hyperplanes at the centres.

    Raises
    ------
    ValueError
        When ``Q`` is singular.
    """
    gap = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
    q_matrix = radial_bspline(gap / radii[None, :])  # Q[c, k] = R_k(p_c)
    residual = targets - (centres @ linear[:-1] + linear[-1])  # q
    try:
        return np.asarray(np.linalg.solve(q_matrix, residual), np.float64)
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"the radial system Q r = q is singular: {exc}") from None


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
    linear = np.vstack([fit[:-1], fit[-1] - mean @ fit[:-1]])
    gap = np.linalg.norm(p[:, None] - p[None], axis=-1)
    np.fill_diagonal(gap, np.inf)
    radii = gap.min(axis=1)
    if not (radii > 0).all():
        i = int(np.argmin(radii))
        raise ValueError(f"example {i} shares its point with another example")
    return CardinalBasis(p, radii, _solve_radial(p, radii, np.eye(n), linear), linear)


def insert_centre(
    basis: CardinalBasis, point: ArrayLike, values: ArrayLike, *, local: bool = False
) -> CardinalBasis:
    """A pseudo-example (section 4.3): a centre at ``point`` (D,) where the weights take
    ``values`` (N,) (the weights of the examples at ``p′``); radii and hyperplanes kept.

    Its radius ``α`` is the distance to the nearest centre (the examples' rule: its
    support reaches twice as far), and the radial weights of every centre are solved
    again (``Q r = q``) so that each centre keeps its own targets
    (:meth:`CardinalBasis.targets`) and the new one takes ``values``. With
    ``local``, ``α`` is half that distance instead: the new radial function is zero
    at every other centre, its weights follow in closed form and nothing else moves.

    Raises
    ------
    ValueError
        When ``point`` is a centre already, the shapes are wrong or ``Q`` is singular.
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
    centres = np.vstack([basis.centres, p])
    if local:
        row = (target - basis.weights(p)) / (2.0 / 3.0)
        radial = np.vstack([basis.radial, row])
        return CardinalBasis(centres, np.append(basis.radii, 0.5 * nearest), radial, basis.linear)
    radii = np.append(basis.radii, nearest)
    targets = np.vstack([basis.targets(), target])
    radial = _solve_radial(centres, radii, targets, basis.linear)
    return CardinalBasis(centres, radii, radial, basis.linear)
