"""The compiled Davenport split of :mod:`retarget.targets.robot.hinges` (numba; private).

Each frame's ball rotation is split into its hinges' angles by Gauss-Newton from the
last frame's angles: a recursion over frames, on 3 × 3 problems, which numpy can
only run as one batched solve from zero per frame and a Python loop choosing the
branch (0.16 ms a frame for the G1's nine runs of hinges); compiled, a few
microseconds. The formulas are :func:`retarget.targets.robot.hinges._solve_hinges`' and
:func:`retarget.targets.robot.hinges._continuous`' (a test checks the two agree).
"""

from __future__ import annotations

import numba
import numpy as np

from ....core._kernels.cholesky import cholesky_solve
from ....core._kernels.quat import _product, _rotvec_from_wxyz, _wxyz_from_rotvec

__all__: list[str] = []

#: The pull into the ranges of :func:`_newton`, per radian outside (a radian out weighs
#: as 0.05 rad of the rotation).
_PULL = 0.05


@numba.njit(cache=True, nogil=True)
def _newton(
    axes, back, theta, iterations, parts, jac, normal, right, factor, step, lower, upper
):  # pragma: no cover - jitted
    """Gauss-Newton on ``r = log(wanted⁻¹ ⊗ Π exp(θ_k a_k))`` from ``theta`` (n,), in
    place, with a faint pull into the ranges ``lower``, ``upper`` (n,): a row
    :data:`_PULL` ``× (lo − θ)`` or ``(θ − hi)`` per hinge outside its range. Where the
    hinges turn the rotation alike (a shoulder's first and last axes both along the
    hanging arm: gimbal lock at rest, as TALOS's), the rotation alone leaves their
    share free and the pull takes the one inside the ranges; elsewhere it moves an
    exact split only where the split leaves the ranges, by ``_PULL²`` of the way.
    ``back``: the conjugate of the wanted rotation (4-tuple); the rest scratch arrays
    (n, 4), (3, n), (n, n), (n,), (n, n), (n,)."""
    n = theta.shape[0]
    for _ in range(iterations):
        for k in range(n):
            q = _wxyz_from_rotvec(
                theta[k] * axes[k, 0], theta[k] * axes[k, 1], theta[k] * axes[k, 2]
            )
            for c in range(4):
                parts[k, c] = q[c]
        total = (parts[0, 0], parts[0, 1], parts[0, 2], parts[0, 3])
        for k in range(1, n):
            total = _product(
                total[0],
                total[1],
                total[2],
                total[3],
                parts[k, 0],
                parts[k, 1],
                parts[k, 2],
                parts[k, 3],
            )
        d = _product(back[0], back[1], back[2], back[3], total[0], total[1], total[2], total[3])
        r = _rotvec_from_wxyz(d[0], d[1], d[2], d[3])
        after = (1.0, 0.0, 0.0, 0.0)  # R_{k+1} ⋯ R_n
        for k in range(n - 1, -1, -1):
            # (R_{k+1} ⋯ R_n)ᵀ a_k
            w, x, y, z = after[0], -after[1], -after[2], -after[3]
            vx, vy, vz = axes[k, 0], axes[k, 1], axes[k, 2]
            tx = 2.0 * (y * vz - z * vy)
            ty = 2.0 * (z * vx - x * vz)
            tz = 2.0 * (x * vy - y * vx)
            jac[0, k] = vx + w * tx + (y * tz - z * ty)
            jac[1, k] = vy + w * ty + (z * tx - x * tz)
            jac[2, k] = vz + w * tz + (x * ty - y * tx)
            after = _product(
                parts[k, 0],
                parts[k, 1],
                parts[k, 2],
                parts[k, 3],
                after[0],
                after[1],
                after[2],
                after[3],
            )
        for a in range(n):
            right[a] = jac[0, a] * r[0] + jac[1, a] * r[1] + jac[2, a] * r[2]
            for b in range(n):
                normal[a, b] = jac[0, a] * jac[0, b] + jac[1, a] * jac[1, b] + jac[2, a] * jac[2, b]
            normal[a, a] += 1e-9
            out = min(theta[a] - lower[a], 0.0) + max(theta[a] - upper[a], 0.0)
            if out != 0.0:
                normal[a, a] += _PULL * _PULL
                right[a] += _PULL * _PULL * out
        if not cholesky_solve(normal, right, step, factor):  # (J^T J + 1e-9 I: never)
            break
        biggest = 0.0
        for a in range(n):
            theta[a] += step[a]
            biggest = max(biggest, abs(step[a]))
        if biggest < 1e-12:
            break


@numba.njit(cache=True, nogil=True)
def _wrap(theta):  # pragma: no cover - jitted
    """Angles into (−π, π], in place."""
    for a in range(theta.shape[0]):
        theta[a] = np.angle(np.exp(1j * theta[a]))


@numba.njit(cache=True, nogil=True)
def _other_branch(theta, out):  # pragma: no cover - jitted
    """Davenport's other solution of three hinges: ``(θ_1 + π, π − θ_2, θ_3 + π)``."""
    out[0] = theta[0] + np.pi
    out[1] = np.pi - theta[1]
    out[2] = theta[2] + np.pi


@numba.njit(cache=True, nogil=True)
def split_path(axes, wanted, lower, upper, out):  # pragma: no cover - jitted
    """Hinge angles (F, n) of the rotations ``wanted`` (F, 4) about the hinges ``axes``
    (n, 3), one path through the frames: at the first frame the branch nearest the
    ranges ``lower``, ``upper`` (n,) among the solutions from zero (and for three
    hinges the other branch), then at each frame the solution from the last frame's
    angles and (three hinges) its other branch, the one nearer the last frame's
    angles with each angle's ``2πk`` — as :func:`retarget.targets.robot.hinges._continuous` chooses
    among :func:`retarget.targets.robot.hinges._solve_hinges`' branches."""
    n_frames, n = wanted.shape[0], axes.shape[0]
    two_pi = 2.0 * np.pi
    first = np.zeros(n)
    other = np.zeros(n)
    prev = np.zeros(n)
    best = np.zeros(n)
    scratch = (np.empty((n, 4)), np.empty((3, n)), np.empty((n, n)), np.empty(n))
    scratch = (*scratch, np.empty((n, n)), np.empty(n))
    for f in range(n_frames):
        back = (wanted[f, 0], -wanted[f, 1], -wanted[f, 2], -wanted[f, 3])
        if f == 0:
            first[:] = 0.0
            _newton(axes, back, first, 30, *scratch, lower, upper)
            _wrap(first)
            best_cost = np.inf
            for b in range(2 if n == 3 else 1):
                if b == 1:
                    _other_branch(first, other)
                    _newton(axes, back, other, 30, *scratch, lower, upper)
                    _wrap(other)
                cand = first if b == 0 else other
                cost = 0.0
                for a in range(n):
                    cost += max(lower[a] - cand[a], 0.0) + max(cand[a] - upper[a], 0.0)
                if cost < best_cost:
                    best_cost = cost
                    prev[:] = cand
        else:
            first[:] = prev
            _newton(axes, back, first, 30, *scratch, lower, upper)
            best_cost = np.inf
            best[:] = prev
            for b in range(2 if n == 3 else 1):
                if b == 1:
                    _other_branch(first, other)
                    _newton(axes, back, other, 30, *scratch, lower, upper)
                cand = first if b == 0 else other
                cost = 0.0
                for a in range(n):
                    cand[a] += two_pi * np.round((prev[a] - cand[a]) / two_pi)
                    cost += abs(cand[a] - prev[a])
                if cost < best_cost:
                    best_cost = cost
                    best[:] = cand
            prev[:] = best
        for a in range(n):
            out[f, a] = prev[a]
