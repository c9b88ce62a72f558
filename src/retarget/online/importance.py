"""End-effector importance (Shin, Lee, Shin & Gleicher 2001, section 4, eqs. 11-15).

How much an end-effector's *position* matters, from its distance to the
objects of the environment (:mod:`retarget.environment`): 1 when it touches an
object (keep where it is), 0 when it is far from all of them (keep the joint
angles of its limb), continuous in between.

For end-effector ``e_i`` and object ``o_j``:

* ``d_ij`` the signed distance from the end-effector to the object's surface,
  less the end-effector's **clearance** ``c_i`` (how far its joint sits above a
  surface it rests on: an ankle is ~7 cm above the floor it stands on, a
  wrist ~0 above the table under the palm), so ``d_ij = 0`` is contact;
* ``ḋ_ij = ∇d_ij · ṗ_i``: the rate of change along the end-effector's
  velocity; the gradient of the signed distance is the object's outward
  normal at the closest point (:meth:`retarget.environment.Shape.closest`), so
  this is exact for a filtered velocity ``ṗ`` (the Kalman filter's, eq. 1) and
  needs no look-ahead;
* eq. 12: ``d⁺ = d + λ ḋ`` (the average of the distance now and predicted
  ``κΔt`` later, ``λ = κΔt/2`` in seconds);
* eq. 13: ``d̄ = d⁺ / D_ij`` with ``D_ij`` the pair's influence range;
* eq. 14: ``p(d̄) = 2 d̄³ − 3 d̄² + 1`` on ``[0, 1)``, 0 beyond. The paper
  defines ``p`` for ``d̄ < 1``; below 0 (touching, or approaching fast enough
  that ``d⁺`` is negative) the cubic would fall again, so ``d̄`` is clamped to
  0 there: importance 1;
* eq. 15: ``w_i = max_j p(d̄_ij)``.

A pair with ``D_ij = 0`` does not interact (the paper: objects hardly touched
by an end-effector are left out of its importance).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array
from ..environment import Shape

__all__ = ["Importance", "end_effector_importance", "importance_curve"]


def importance_curve(normalized_distance: ArrayLike) -> Array:
    """``p(d̄)`` of eq. 14: ``2 d̄³ − 3 d̄² + 1`` on ``[0, 1)``, 1 below 0, 0 from 1 on.

    Parameters
    ----------
    normalized_distance : array_like, shape (...)

    Returns
    -------
    ndarray, shape (...)
        In ``[0, 1]``; ``p(0) = 1``, ``p(1) = 0``, ``p'(0) = p'(1) = 0``.
    """
    d = np.clip(np.asarray(normalized_distance, dtype=np.float64), 0.0, 1.0)
    return (2.0 * d - 3.0) * d * d + 1.0


@dataclass(frozen=True, eq=False)
class Importance:
    """Importance of ``n`` end-effectors against ``m`` objects, batch shape ``(...)``.

    Attributes
    ----------
    weights : ndarray, shape (..., n)
        ``w_i`` of eq. 15, in ``[0, 1]``.
    pairs : ndarray, shape (..., n, m)
        ``p(d̄_ij)`` of eq. 14.
    distance : ndarray, shape (..., n, m)
        ``d_ij``: signed distance less the clearance (length unit).
    predicted : ndarray, shape (..., n, m)
        ``d⁺_ij`` of eq. 12.
    nearest : ndarray of int, shape (..., n)
        The object giving ``w_i`` (the arg max of eq. 15; 0 when all are 0).
    """

    weights: Array
    pairs: Array
    distance: Array
    predicted: Array
    nearest: NDArray[np.intp]


def end_effector_importance(
    points: ArrayLike,
    velocities: ArrayLike,
    objects: Sequence[Shape],
    influence: ArrayLike,
    *,
    clearance: ArrayLike = 0.0,
    lookahead: float = 0.15,
) -> Importance:
    """Importance of end-effectors from their distances to objects (eqs. 11-15).

    Parameters
    ----------
    points : array_like, shape (..., n, 3)
        End-effector positions (the performer's, in the real space).
    velocities : array_like, shape (..., n, 3)
        Their velocities (length unit per second), e.g. the Kalman filter's ``ṗ``.
    objects : sequence of Shape, length m
    influence : array_like, shape (n, m) or broadcastable
        ``D_ij`` (length unit); 0 for pairs that do not interact.
    clearance : array_like, shape (n,) or broadcastable
        Height of each end-effector's joint above a surface it rests on.
    lookahead : float
        ``λ`` of eq. 12, in seconds (the paper: 0.15 for its jump).

    Returns
    -------
    Importance
    """
    p = np.asarray(points, dtype=np.float64)
    v = np.asarray(velocities, dtype=np.float64)
    if p.shape[-1:] != (3,) or p.ndim < 2:
        raise ValueError(f"Expected `points` of shape (..., n, 3), got {p.shape}")
    if v.shape != p.shape:
        raise ValueError(f"Expected `velocities` of shape {p.shape}, got {v.shape}")
    if not np.isfinite(lookahead) or lookahead < 0:
        raise ValueError(f"Expected a finite `lookahead` >= 0, got {lookahead}")
    n, m = p.shape[-2], len(objects)
    big_d = np.broadcast_to(np.asarray(influence, dtype=np.float64), (n, m))
    if (big_d < 0).any() or not np.isfinite(big_d).all():
        raise ValueError("Expected finite influence ranges D_ij >= 0")
    c = np.broadcast_to(np.asarray(clearance, dtype=np.float64), (n,))
    distance = np.empty((*p.shape[:-1], m))
    predicted = np.empty_like(distance)
    for j, shape in enumerate(objects):
        closest = shape.closest(p)
        distance[..., j] = closest.distance - c
        rate = np.einsum("...k,...k->...", closest.normal, v)  # ∇d · ṗ
        predicted[..., j] = distance[..., j] + lookahead * rate  # eq. (12)
    interacts = big_d > 0
    normalized = np.where(interacts, predicted / np.where(interacts, big_d, 1.0), 1.0)  # (13)
    pairs = importance_curve(normalized)  # (14)
    if m == 0:
        weights = np.zeros(p.shape[:-1])
        nearest = np.zeros(p.shape[:-1], dtype=np.intp)
    else:
        nearest = np.argmax(pairs, axis=-1)
        weights = np.take_along_axis(pairs, nearest[..., None], axis=-1)[..., 0]  # (15)
    return Importance(weights, pairs, distance, predicted, nearest)
