"""A limb's hinges chosen to point its segments along given directions, every frame at once.

The least-squares problem behind the floor of a robot's limb directions
(:func:`retarget.targets.robot.floor.direction_floor`): for the segments ``s`` of a
limb, from point ``a_s`` to ``b_s`` of a skeleton, and hinges ``θ`` of it,

    min_θ  Σ_s |u_s(θ) − h_s|²,   u_s = (p_b − p_a) / |p_b − p_a|,   lower ≤ θ ≤ upper,

``|u − h|² = 2 (1 − cos angle)``. Projected Levenberg-Marquardt, frame by frame in one
batch (F small systems), the Jacobian by forward differences of the skeleton's own
kinematics, a hinge at a bound that its descent would cross held there (the active
set: clipped, its step would waste the others' progress; without it, 30 iterations
stopped 0.4° short of the least on a knee held still). Each start gives one solution
per frame; the callers choose among them.

Units: radians; the skeleton's own for positions (directions are unit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...core import quat
from ...core.arrays import Array
from ...core.kinematics import forward_kinematics
from ...core.skeleton import Skeleton

__all__ = ["Aimed", "aim_limb", "chord_degrees"]


@dataclass(frozen=True)
class Aimed:
    """One start's solution: the hinge angles (F, n), the residual ``u − h`` (F, 3k)
    and its squared norm (F,)."""

    theta: Array
    residual: Array
    cost: Array


def aim_limb(
    skeleton: Skeleton,
    root_position: Array,
    rotations: Array,
    joints: NDArray[np.intp],
    lower: Array,
    upper: Array,
    ends: NDArray[np.intp],
    targets: Array,
    starts: list[Array],
    *,
    iterations: int = 30,
) -> list[Aimed]:
    """The hinges ``joints`` (n,) of ``skeleton`` (one channel each: its x channel's
    axis) within ``lower``..``upper`` (n,) pointing the segments ``ends`` (k, 2: points
    from, to) along ``targets`` (k, F, 3, unit), the rest of the pose ``root_position``
    (F, 3), ``rotations`` (F, J, 4); one :class:`Aimed` per start (F, n) (module
    docstring)."""
    axes = quat.rotate(skeleton.axes[joints], np.array([1.0, 0.0, 0.0]))
    want = np.moveaxis(np.asarray(targets, dtype=float), 0, 1)  # (F, k, 3)

    def residual(theta: Array) -> Array:
        rot = rotations.copy()
        rot[:, joints] = quat.quat_from_rotvec(theta[..., None] * axes)
        pos, _ = forward_kinematics(skeleton, root_position, rot)
        d = pos[:, ends[:, 1]] - pos[:, ends[:, 0]]
        d = d / np.maximum(np.linalg.norm(d, axis=-1, keepdims=True), 1e-300)
        return (d - want).reshape(len(theta), -1)

    f, n = len(root_position), len(joints)
    out = []
    for start in starts:
        theta = np.clip(np.asarray(start, dtype=float), lower, upper)
        r = residual(theta)
        cost = (r**2).sum(-1)
        damping = np.full(f, 1e-3)
        for _ in range(iterations):
            jac = np.empty((f, r.shape[1], n))
            for c in range(n):  # forward differences
                step = np.zeros(n)
                step[c] = 1e-6
                jac[:, :, c] = (residual(theta + step) - r) / 1e-6
            grad = np.einsum("fri,fr->fi", jac, r)
            held = ((theta <= lower + 1e-12) & (grad > 0)) | ((theta >= upper - 1e-12) & (grad < 0))
            jac = np.where(held[:, None, :], 0.0, jac)
            jt = np.swapaxes(jac, 1, 2)
            normal = jt @ jac + damping[:, None, None] * np.eye(n)
            delta = np.linalg.solve(normal, -(jt @ r[..., None]))[..., 0]
            trial = np.clip(theta + delta, lower, upper)
            r_trial = residual(trial)
            c_trial = (r_trial**2).sum(-1)
            better = c_trial < cost
            theta = np.where(better[:, None], trial, theta)
            r = np.where(better[:, None], r_trial, r)
            cost = np.where(better, c_trial, cost)
            damping = np.where(better, damping / 3.0, damping * 5.0)
        out.append(Aimed(theta, r, cost))
    return out


def chord_degrees(residual: Array, k: int) -> Array:
    """Each segment's angle (k, F), degrees, from a residual (F, 3k): ``|u − h| = 2 sin
    (angle / 2)`` for unit ``u`` and ``h``."""
    chord = np.linalg.norm(residual.reshape(len(residual), k, 3), axis=-1).T
    return np.degrees(2.0 * np.arcsin(np.clip(chord / 2.0, 0.0, 1.0)))
