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
``s`` the secondary, which needs the SVD of ``J1`` and no ``n × n`` matrix.

``J1⁺ = J1ᵀ (J1 J1ᵀ + λ² I)⁻¹ = V S (S² + λ²)⁻¹ Uᵀ`` (``J1 = U S Vᵀ``) is the
damped least-squares inverse (the paper's footnote 1): exact away from
singularities, bounded near them. Near a
singularity the gains are lowered by the dexterity ``σmin/σmax`` of ``J1``
(§4), and an input to ``J1⁺`` longer than ``max_input`` is clamped to it (§4).

Beyond the paper, rows have priority levels (Nakamura; Siciliano & Slotine)
and an activation in [0, 1]: a row of activation ``a`` asks for ``a`` of its
input and ``1 − a`` of the motion that the levels above it and the secondary
task would give it (Mansard, Khatib & Kheddar's intermediate desired value),
so a constraint that comes and goes (a heel put down and lifted) enters and
leaves the step continuously instead of in one frame.

Arrays: ``jac (m, n)``, ``primary (m,)``, ``secondary (n,)``; every function
also broadcasts over leading batch axes. Units are the caller's: the online
retargeter (:mod:`retarget.online.omr`) measures lengths in character heights
so that a root translation and a joint rotation weigh alike in the minimum-norm
solution.

The step is compiled with numba (:func:`retarget.ik._kernels.rate.rate_step_kernel`,
one problem; the public functions loop over the batch): the online retargeter takes two steps per
frame, each on a ~20 × 30 Jacobian, and in numpy each step cost ≈0.23 ms,
mostly per-call overhead on arrays that small, which alone held the filter
near 2000 frames/s. Its compiled update (:mod:`retarget.online._kernels.omr`)
calls the same kernel, so the step exists once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array
from ..core.lazy import loader

_kernels = loader("retarget.ik._kernels.rate")

__all__ = [
    "RateStep",
    "damped_pseudo_inverse",
    "dexterity",
    "rate_settings",
    "rate_step",
]


def damped_pseudo_inverse(jac: ArrayLike, damping: float) -> Array:
    """``Jᵀ (J Jᵀ + λ² I)⁻¹``, shape (..., n, m), for ``jac`` of shape (..., m, n).

    ``damping = 0`` is the Moore–Penrose inverse of a full-row-rank ``J``
    (eq. 4).
    """
    j = np.asarray(jac, dtype=np.float64)
    flat = np.ascontiguousarray(j).reshape(-1, *j.shape[-2:])
    out = np.empty((flat.shape[0], j.shape[-1], j.shape[-2]))
    _kernels()._dls_rows(flat, float(damping), out)
    return out.reshape(*j.shape[:-2], j.shape[-1], j.shape[-2])


def dexterity(jac: ArrayLike) -> Array:
    """``σmin / σmax`` of each Jacobian (0 at a singularity, 1 when isotropic), shape (...)."""
    j = np.asarray(jac, dtype=np.float64)
    flat = np.ascontiguousarray(j).reshape(-1, *j.shape[-2:])
    out = np.empty(flat.shape[0])
    _kernels()._dexterity_rows(flat, out)
    return out.reshape(j.shape[:-2])


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


def rate_settings(
    damping: float, gains: tuple[float, float], min_dexterity: float, max_input: float
) -> tuple[float, float, float, float, float]:
    """The scalar settings of :func:`rate_step` as the compiled step takes them
    (:func:`retarget.ik._kernels.rate.rate_step_kernel`): ``(λ, K1, K2, min_dexterity,
    max_input)``, floats (parameters as :func:`rate_step`)."""
    return (
        float(damping),
        float(gains[0]),
        float(gains[1]),
        float(min_dexterity),
        float(max_input),
    )


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
    activation: ArrayLike | None = None,
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
        ``P_i = P_{i−1} − (J_i P_{i−1})⁺ (J_i P_{i−1})`` (exact, from the SVD;
        singular values under ``1e-9 σmax`` of the level count as zero in both),
        and the secondary task last, ``Δ = Δ_L + P_L s``. An infeasible lower
        level then gives way instead of the upper one. Default: one level.
        The dexterity and the gain rule read the first level's rows; every
        level's input is clamped to ``max_input``.
    activation : array_like, shape (..., m), optional
        Per primary row, in [0, 1] (default 1): a row of activation ``a`` asks for
        ``a`` of its input and ``1 − a`` of the motion the levels above it and the
        secondary task would give it without it (the intermediate desired value of
        Mansard, Khatib & Kheddar 2009, "A unified approach to integrate unilateral
        constraints in the stack of tasks"): at 0 it is as if it were not there (up to
        the damping of its singular directions), so a row fades in and out without a
        jump as its activation moves.

    Returns
    -------
    RateStep
        Its arrays have the broadcast batch shape of the inputs.
    """
    j = np.asarray(jac, dtype=np.float64)
    if j.ndim < 2:
        raise ValueError(f"Expected `jac` of shape (..., m, n), got {j.shape}")
    m, n = j.shape[-2:]
    vectors = {
        "primary_change": (primary_change, m),
        "primary_error": (primary_error, m),
        "secondary_change": (secondary_change, n),
        "secondary_error": (secondary_error, n),
    }
    arrays = {}
    for name, (value, size) in vectors.items():
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape[-1:] != (size,):
            raise ValueError(f"Expected `{name}` of shape (..., {size}), got {arr.shape}")
        arrays[name] = arr
    batch = np.broadcast_shapes(j.shape[:-2], *(a.shape[:-1] for a in arrays.values()))

    def flat(a: Array, trailing: tuple[int, ...]) -> Array:
        return np.ascontiguousarray(np.broadcast_to(a, (*batch, *trailing))).reshape(-1, *trailing)

    root_w = np.ones(n)
    if rigidity is not None:  # in the coordinates W^½ Δθ the weighted problem is the plain one
        w = np.asarray(rigidity, dtype=np.float64)
        if w.shape != (n,) or not (w > 0).all():
            raise ValueError(f"Expected {n} positive rigidities, got shape {w.shape}")
        root_w = np.sqrt(w)
    level = np.zeros(m, np.intp) if priority is None else np.asarray(priority, np.intp)
    if level.shape != (m,):
        raise ValueError(f"Expected `priority` of shape ({m},), got {level.shape}")
    act = np.ones(m) if activation is None else np.asarray(activation, dtype=np.float64)
    if act.shape[-1:] != (m,):
        raise ValueError(f"Expected `activation` of shape (..., {m}), got {act.shape}")
    batch = np.broadcast_shapes(batch, act.shape[:-1])
    size = int(np.prod(batch))
    delta = np.empty((size, n))
    dex, gain = np.empty(size), np.empty(size)
    clamped = np.empty(size, np.bool_)
    problems = (
        flat(j, (m, n)),
        flat(arrays["primary_change"], (m,)),
        flat(arrays["primary_error"], (m,)),
        flat(arrays["secondary_change"], (n,)),
        flat(arrays["secondary_error"], (n,)),
        root_w,
        np.ascontiguousarray(level),
        flat(act, (m,)),
    )
    settings = rate_settings(damping, gains, min_dexterity, max_input)
    _kernels()._rate_step_rows(problems, settings, delta, dex, gain, clamped)
    return RateStep(
        delta.reshape(*batch, n), dex.reshape(batch), gain.reshape(batch), clamped.reshape(batch)
    )
