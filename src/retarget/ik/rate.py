"""Closed-loop inverse rate control with a secondary task (Choi & Ko 2000, §3–4).

One step of eq. (21) in discrete form (NOTES.md): with the primary task
``x1 = f1(θ)`` (stacked end-effector rows), its Jacobian ``J1`` and the
secondary task "imitate the source's joints" (``x2 = θ_src``, ``J2 = I``),

.. math::
    Δθ_n = J_1^+ (Δx_{1,n} + K_1 ẽ_{1,n}) + (I − J_1^+ J_1)(Δθ_{src,n} + K_2 ẽ_{2,n})

where ``ẽ1 = x1 − f1(θ)`` and ``ẽ2 = θ_src ⊖ θ`` are the current errors. With
``K1 = K2 = I`` (the paper's choice: any other fixed gain leaves a lag, eqs.
11–13) the step is ``J1⁺ (x1_n − f1(θ_{n−1})) + (I − J1⁺J1)(θ_src,n ⊖ θ_{n−1})``.
It is computed as ``Δθ = s + J1⁺ (u − J1 s)`` with ``u`` the primary input and
``s`` the secondary, which needs one ``m × m`` solve and no ``n × n`` matrix.

``J1⁺ = J1ᵀ (J1 J1ᵀ + λ² I)⁻¹`` is the damped least-squares inverse (the
paper's footnote 1): exact away from singularities, bounded near them. Near a
singularity the gains are lowered by the dexterity ``σmin/σmax`` of ``J1``
(§4), and an input to ``J1⁺`` longer than ``max_input`` is clamped to it (§4).

Arrays: ``jac (m, n)``, ``primary (m,)``, ``secondary (n,)``; every function
also broadcasts over leading batch axes. Units are the caller's: the online
retargeter (:mod:`retarget.online.omr`) measures lengths in character heights
so that a root translation and a joint rotation weigh alike in the minimum-norm
solution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["RateStep", "damped_pseudo_inverse", "dexterity", "rate_step"]

Array = NDArray[np.float64]


def damped_pseudo_inverse(jac: ArrayLike, damping: float) -> Array:
    """``Jᵀ (J Jᵀ + λ² I)⁻¹``, shape (..., n, m), for ``jac`` of shape (..., m, n).

    ``damping = 0`` is the Moore–Penrose inverse of a full-row-rank ``J``
    (eq. 4).
    """
    return _dls(np.asarray(jac, dtype=np.float64), damping)


def dexterity(jac: ArrayLike) -> Array:
    """``σmin / σmax`` of each Jacobian (0 at a singularity, 1 when isotropic), shape (...)."""
    j = np.asarray(jac, dtype=np.float64)
    gram = j @ np.swapaxes(j, -1, -2)  # σ² are its eigenvalues (m ≤ n)
    ev = np.linalg.eigvalsh(gram)
    top = np.maximum(ev[..., -1], 1e-300)
    return np.sqrt(np.maximum(ev[..., 0], 0.0) / top)


@dataclass(frozen=True)
class RateStep:
    """The outcome of :func:`rate_step`.

    Attributes
    ----------
    delta : ndarray, shape (..., n)
        ``Δθ``, in the tangent space of the current pose.
    dexterity : ndarray, shape (...)
        ``σmin/σmax`` of ``J1``.
    gain : ndarray, shape (...)
        The gain factor applied to ``K1`` and ``K2`` (1 unless lowered).
    clamped : ndarray of bool, shape (...)
        The input to ``J1⁺`` was longer than ``max_input`` and was shortened.
    """

    delta: Array
    dexterity: Array
    gain: Array
    clamped: NDArray[np.bool_]


def rate_step(
    jac: ArrayLike,
    primary_change: ArrayLike,
    primary_error: ArrayLike,
    secondary_change: ArrayLike,
    secondary_error: ArrayLike,
    *,
    damping: float = 1e-3,
    gains: tuple[float, float] = (1.0, 1.0),
    min_dexterity: float = 0.0,
    max_input: float = np.inf,
    rigidity: ArrayLike | None = None,
    priority: ArrayLike | None = None,
) -> RateStep:
    """One discrete step of closed-loop inverse rate control with a secondary task (eq. 21).

    Parameters
    ----------
    jac : array_like, shape (..., m, n)
        ``J1`` at the current pose.
    primary_change, primary_error : array_like, shape (..., m)
        ``Δx1_n = x1_n − x1_{n−1}`` and the estimate ``ẽ1_n`` of the tracking error
        (``x1_{n−1} − f1(θ_{n−1})`` is the paper's plain estimate).
    secondary_change, secondary_error : array_like, shape (..., n)
        ``Δθ_src,n`` and ``θ_src,n−1 ⊖ θ_{n−1}``.
    damping : float
        ``λ`` of the damped least-squares inverse.
    gains : (float, float)
        ``K1``, ``K2`` (scalars times I).
    min_dexterity : float
        Where ``σmin/σmax < min_dexterity`` both gains are scaled by
        ``dexterity / min_dexterity`` (0 disables the rule).
    max_input : float
        Longest input ``Δx1 + K1 ẽ1`` fed to ``J1⁺``; longer ones are scaled to it.
    rigidity : array_like, shape (n,), optional
        ``W = diag(w)``: the step minimises ``Δθᵀ W Δθ`` among those that meet the
        primary task (``J1⁺ = W⁻¹J1ᵀ(J1W⁻¹J1ᵀ + λ²I)⁻¹``, the secondary task
        projected W-orthogonally). Default ``I``, the paper's minimum norm.
    priority : array_like of int, shape (m,), optional
        Priority level of each primary row, 0 first. Rows of a lower level act
        only in the null space of the levels above (the recursive task-priority
        scheme of Nakamura, and Siciliano & Slotine, behind the paper's §4):
        ``Δ_i = Δ_{i−1} + (J_i P_{i−1})⁺ (u_i − J_i Δ_{i−1})`` (damped),
        ``P_i = P_{i−1} − (J_i P_{i−1})⁺ (J_i P_{i−1})`` (exact, from the SVD),
        and the secondary task last, ``Δ = Δ_L + P_L s``. An infeasible lower
        level then gives way instead of the upper one. Default: one level.
        The dexterity and the gain rule read the first level's rows; every
        level's input is clamped to ``max_input``.

    Returns
    -------
    RateStep
    """
    j = np.asarray(jac, dtype=np.float64)
    root_w = None
    if rigidity is not None:  # in the coordinates W^½ Δθ the weighted problem is the plain one
        root_w = np.sqrt(np.asarray(rigidity, dtype=np.float64))
        j = j / root_w
    m = j.shape[-2]
    level = np.zeros(m, np.intp) if priority is None else np.asarray(priority, np.intp)
    levels = np.unique(level)
    top = level == (levels[0] if levels.size else 0)
    dex = dexterity(j[..., top, :]) if top.any() else np.ones(j.shape[:-2])
    gain = np.ones_like(dex)
    if min_dexterity > 0.0:
        gain = np.minimum(1.0, dex / min_dexterity)
    k1, k2 = gains
    u = np.asarray(primary_change, np.float64) + (k1 * gain)[..., None] * np.asarray(
        primary_error, np.float64
    )
    clamped = np.zeros(j.shape[:-2], bool)
    for lv in levels:  # each level's input at most max_input long
        rows = level == lv
        length = np.linalg.norm(u[..., rows], axis=-1)
        over = length > max_input
        if np.any(over):
            factor = np.where(over, max_input / np.maximum(length, 1e-300), 1.0)
            u[..., rows] = u[..., rows] * factor[..., None]
            clamped |= over
    s = np.asarray(secondary_change, np.float64) + (k2 * gain)[..., None] * np.asarray(
        secondary_error, np.float64
    )
    if root_w is not None:
        s = s * root_w
    if levels.size <= 1:  # Δθ = J⁺u + (I − J⁺J)s = s + J⁺(u − J s)
        r = u - (j @ s[..., None])[..., 0]
        delta = s + (_dls(j, damping) @ r[..., None])[..., 0]
    else:
        n = j.shape[-1]
        delta = np.zeros(s.shape)
        proj = np.broadcast_to(np.eye(n), (*j.shape[:-2], n, n))
        for lv in levels:
            rows = level == lv
            j_i = j[..., rows, :]
            # J_i P = U S Vᵀ: the step damped (S / (S² + λ²)), the projector exact (the
            # rows of Vᵀ with S above round-off leave P), so a lower level's step,
            # however large near its singularity, never leaks into the levels above
            u_svd, sv, vt = np.linalg.svd(j_i @ proj, full_matrices=False)
            r = u[..., rows] - (j_i @ delta[..., None])[..., 0]
            coef = sv / (sv**2 + damping**2) * (np.swapaxes(u_svd, -1, -2) @ r[..., None])[..., 0]
            delta = delta + (np.swapaxes(vt, -1, -2) @ coef[..., None])[..., 0]
            live = sv > 1e-9 * np.maximum(sv[..., :1], 1e-300)
            v_live = np.swapaxes(vt, -1, -2) * live[..., None, :]
            proj = proj - v_live @ np.swapaxes(v_live, -1, -2)
        delta = delta + (proj @ s[..., None])[..., 0]
    if root_w is not None:
        delta = delta / root_w
    return RateStep(delta, dex, gain, np.asarray(clamped))


def _dls(j: Array, damping: float) -> Array:
    """``Jᵀ (J Jᵀ + λ² I)⁻¹``, shape (..., n, m)."""
    m = j.shape[-2]
    gram = j @ np.swapaxes(j, -1, -2) + (damping**2) * np.eye(m)
    return np.swapaxes(np.linalg.solve(gram, j), -1, -2)
