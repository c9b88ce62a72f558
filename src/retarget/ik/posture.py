"""Body posture by conjugate gradient (Shin et al. 2001, section 5.2, eqs. 18-20).

When the root position estimate (:mod:`retarget.ik.root`) still leaves a limb
unable to reach its goal, the root position, the root orientation and the
orientations of the torso joints (the *body*: every joint on the paths from
the root to the limbs' upper joints) move, as little as possible, until the
upper joints (shoulders, hips) are within reach:

.. math::
    E = E_g + α E_p, \\qquad
    E_g = \\sum_i \\max(\\lVert p^s_i - p^g_i \\rVert - r_i, 0)^2, \\qquad
    E_p = \\sum_j β_j \\lVert \\ln(q_j^{-1} q_j^*) \\rVert^2 + γ \\lVert p_0 - p_0^* \\rVert^2

(eqs. 18-20; ``r_i = l_i / w_i``, the limb length over its importance, eq. 17
as in section 5.2). The unknowns are the displacement ``x = (Δp, v_0, v_1, …)``
from the captured pose ``q_j = q_j^* ⊗ exp(v_j)``, ``p_0 = p_0^* + Δp``
(the library's tangent space, :func:`retarget.core.motion.oplus`), so
``‖ln(q_j^{-1} q_j^*)‖ = ‖v_j‖`` exactly. Lengths are measured in character
heights so that ``α``, ``β`` and ``γ`` do not depend on the unit. The
gradient is exact (position Jacobian of :func:`retarget.core.kinematics.jacobian`
times the right Jacobian of ``exp``); the minimiser is nonlinear conjugate
gradient (Polak-Ribière with backtracking,
:func:`retarget.core.optimize.backtracking_conjugate_gradient`), started from the
captured posture as the paper does, and its iteration count is what Table I of
the paper counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import so3 as _so3
from ..core.arrays import Array
from ..core.kinematics import Pose
from ..core.motion import oplus_joints
from ..core.optimize import backtracking_conjugate_gradient
from ..core.skeleton import Skeleton

__all__ = ["BodyPosture", "BodyProblem", "body_energy", "body_joints", "solve_body_posture"]


@dataclass(frozen=True, eq=False)
class BodyPosture:
    """The result of :func:`solve_body_posture` for one frame.

    Attributes
    ----------
    root_position : ndarray, shape (3,)
    rotations : ndarray, shape (J, 4)
        Only the body joints differ from the input.
    iterations : int
        Conjugate-gradient iterations (Table I of the paper).
    energy : float
        ``E`` at the result (heights²).
    shortfall : ndarray, shape (n,)
        ``max(‖p^s_i − p^g_i‖ − r_i, 0)`` at the result (length unit): how far
        each upper joint still is from reaching its goal.
    """

    root_position: Array
    rotations: Array
    iterations: int
    energy: float
    shortfall: Array


def body_joints(skeleton: Skeleton, uppers: ArrayLike) -> NDArray[np.intp]:
    """The joints moved by :func:`solve_body_posture`: the root and every proper
    ancestor of the limbs' upper joints, parents first, shape (k,)."""
    parents = skeleton.parents
    found: set[int] = {0}
    for u in np.atleast_1d(np.asarray(uppers, dtype=np.intp)):
        j = int(parents[int(u)])
        while j >= 0:
            found.add(j)
            j = int(parents[j])
    return np.array(sorted(found), dtype=np.intp)


@dataclass(frozen=True, eq=False)
class BodyProblem:
    """Eq. 18 for one captured posture: the arguments of :func:`solve_body_posture`
    (documented there) but its solver's, as :func:`body_energy` reads them."""

    skeleton: Skeleton
    root_position: ArrayLike
    rotations: ArrayLike
    uppers: ArrayLike
    goals: ArrayLike
    radii: ArrayLike
    height: float
    alpha: float = 0.01
    beta: ArrayLike = 1.0
    gamma: float = 1.0


def body_energy(problem: BodyProblem) -> Callable[[Array], tuple[float, Array]]:
    """``x ↦ (E(x), ∇E(x))`` of eq. 18 for the displacement ``x`` (3 + 3k,) of the
    body joints (:func:`body_joints`) from the captured posture."""
    skeleton, height = problem.skeleton, problem.height
    alpha, beta, gamma = problem.alpha, problem.beta, problem.gamma
    p_star = np.asarray(problem.root_position, dtype=np.float64)
    q_star = np.asarray(problem.rotations, dtype=np.float64)
    uppers = np.asarray(problem.uppers, dtype=np.intp)
    g = np.asarray(problem.goals, dtype=np.float64)
    r = np.asarray(problem.radii, dtype=np.float64)
    if height <= 0 or not np.isfinite(height):
        raise ValueError(f"Expected a finite height > 0, got {height}")
    body = body_joints(skeleton, uppers)
    k = len(body)
    b = np.broadcast_to(np.asarray(beta, dtype=np.float64), (k,))
    active = np.isfinite(r)
    r_active = np.where(active, r, 0.0)
    cols = np.concatenate([np.arange(3), (3 + 3 * body[:, None] + np.arange(3)).ravel()])

    def energy(x: Array) -> tuple[float, Array]:
        root, rot = _pose_of(p_star, q_star, body, height, x)
        v = x[3:].reshape(k, 3)
        pose = Pose.of(skeleton, root, rot)
        delta = pose.positions[uppers] - g
        dist = np.linalg.norm(delta, axis=-1)
        excess = np.where(active, np.maximum(dist - r_active, 0.0), 0.0) / height
        e_g = float(excess @ excess)
        e_p = float(b @ (v * v).sum(-1) + gamma * x[:3] @ x[:3])
        # ∂E_g/∂p^s_i = 2 excess_i u_i / h (lengths in heights)
        unit = delta / np.maximum(dist, 1e-300)[:, None]
        cot = (2.0 * excess / height)[:, None] * unit
        jac = pose.jacobian(uppers)[:, cols]  # (3n, 3 + 3k): tangent at the current pose
        grad = cot.ravel() @ jac
        grad[:3] *= height
        grad[3:] = _so3.apply_right_jacobian(v, grad[3:].reshape(k, 3), transpose=True).ravel()
        grad += alpha * 2.0 * np.concatenate([gamma * x[:3], (b[:, None] * v).ravel()])
        return e_g + alpha * e_p, grad

    return energy


def _pose_of(
    p_star: Array, q_star: Array, body: NDArray[np.intp], height: float, x: Array
) -> tuple[Array, Array]:
    """``(p_0^* + h Δp, q^* ⊗ exp(v))`` on the body joints."""
    return p_star + height * x[:3], oplus_joints(q_star, x[3:].reshape(len(body), 3), body)


def solve_body_posture(
    skeleton: Skeleton,
    root_position: ArrayLike,
    rotations: ArrayLike,
    uppers: ArrayLike,
    goals: ArrayLike,
    radii: ArrayLike,
    *,
    height: float,
    alpha: float = 0.01,
    beta: ArrayLike = 1.0,
    gamma: float = 1.0,
    tolerance: float = 1e-6,
    max_iterations: int = 200,
) -> BodyPosture:
    """Move the root and torso so the upper joints can reach their goals (eqs. 18-20).

    Parameters
    ----------
    skeleton : Skeleton
    root_position : array_like, shape (3,)
        ``p_0^*``: the estimated root position (section 5.1).
    rotations : array_like, shape (J, 4)
        The captured posture ``q^*`` (local rotations).
    uppers : array_like of int, shape (n,)
        Upper joints (shoulders, hips) of the limbs.
    goals : array_like, shape (n, 3)
        Goal positions of the limbs' end-effectors (wrists, ankles).
    radii : array_like, shape (n,)
        ``r_i = l_i / w_i`` (``inf`` for importance 0: the term vanishes).
    height : float
        The character's height (length unit): lengths are measured in it.
    alpha, beta, gamma : float
        Weights of eqs. 18 and 20; ``beta`` per body joint (:func:`body_joints`)
        or one value for all.
    tolerance : float
        Gradient norm at which conjugate gradient stops (heights² per unit of x).
    max_iterations : int

    Returns
    -------
    BodyPosture
    """
    problem = BodyProblem(
        skeleton, root_position, rotations, uppers, goals, radii, height, alpha, beta, gamma
    )
    energy = body_energy(problem)
    body = body_joints(skeleton, uppers)
    x, value, iterations = backtracking_conjugate_gradient(
        energy, np.zeros(3 + 3 * len(body)), tolerance=tolerance, max_iterations=max_iterations
    )
    p_star = np.asarray(root_position, dtype=np.float64)
    q_star = np.asarray(rotations, dtype=np.float64)
    root, rot = _pose_of(p_star, q_star, body, height, x)
    uppers = np.asarray(uppers, dtype=np.intp)
    r = np.asarray(radii, dtype=np.float64)
    dist = np.linalg.norm(Pose.of(skeleton, root, rot).positions[uppers] - goals, axis=-1)
    shortfall = np.where(
        np.isfinite(r), np.maximum(dist - np.where(np.isfinite(r), r, 0.0), 0.0), 0.0
    )
    return BodyPosture(root, rot, iterations, value, shortfall)
