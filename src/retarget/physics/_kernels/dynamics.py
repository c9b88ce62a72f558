"""The compiled kernel of :func:`retarget.physics.dynamics.body_motion` (numba; private).

The forward pass of the recursive Newton–Euler algorithm runs once per sigma point
of every frame the filter measures (163 points a frame for 27 DOFs, three times an
application): in numpy it is a hundred array operations over (poses, joints, 3)
whose temporaries cost more than the arithmetic (a 48-frame chunk of the paper's
form: 137 ms a call). Here each pose's joints are visited once, parents first, with
the same formulas in scalars.
"""

from __future__ import annotations

import numba
import numpy as np

__all__: list[str] = []


@numba.njit(cache=True, nogil=True, inline="always")
def _cross_into(ax, ay, az, bx, by, bz):  # pragma: no cover - jitted
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@numba.njit(cache=True, nogil=True)
def _body_motion_kernel(
    pos, mats, omega_local, alpha_local, root_acc, parents, com, w, alpha, centres, acc_c
):  # pragma: no cover - jitted
    """Per pose f and joint j (parents first): the world angular velocity ``w`` and
    acceleration ``alpha`` of body j, its centre ``centres`` and the centre's
    acceleration ``acc_c``, from the joint origins ``pos``, frames ``mats``, the
    joints' relative rates in their own frames and the root origin's acceleration."""
    n_poses, n = pos.shape[0], pos.shape[1]
    acc = np.empty((n, 3))
    rw = np.empty(3)
    ra = np.empty(3)
    for f in range(n_poses):
        for j in range(n):
            for a in range(3):
                sw = 0.0
                sa = 0.0
                for b in range(3):
                    sw += mats[f, j, a, b] * omega_local[f, j, b]
                    sa += mats[f, j, a, b] * alpha_local[f, j, b]
                rw[a] = sw
                ra[a] = sa
            if j == 0:
                for a in range(3):
                    w[f, 0, a] = rw[a]
                    alpha[f, 0, a] = ra[a]
                    acc[0, a] = root_acc[f, a]
            else:
                p = parents[j]
                rx = pos[f, j, 0] - pos[f, p, 0]
                ry = pos[f, j, 1] - pos[f, p, 1]
                rz = pos[f, j, 2] - pos[f, p, 2]
                wx, wy, wz = w[f, p, 0], w[f, p, 1], w[f, p, 2]
                c1 = _cross_into(alpha[f, p, 0], alpha[f, p, 1], alpha[f, p, 2], rx, ry, rz)
                t = _cross_into(wx, wy, wz, rx, ry, rz)
                c2 = _cross_into(wx, wy, wz, t[0], t[1], t[2])
                c3 = _cross_into(wx, wy, wz, rw[0], rw[1], rw[2])
                for a in range(3):
                    acc[j, a] = acc[p, a] + c1[a] + c2[a]
                    w[f, j, a] = w[f, p, a] + rw[a]
                    alpha[f, j, a] = alpha[f, p, a] + c3[a] + ra[a]
            m = mats[f, j]
            sx = m[0, 0] * com[j, 0] + m[0, 1] * com[j, 1] + m[0, 2] * com[j, 2]
            sy = m[1, 0] * com[j, 0] + m[1, 1] * com[j, 1] + m[1, 2] * com[j, 2]
            sz = m[2, 0] * com[j, 0] + m[2, 1] * com[j, 1] + m[2, 2] * com[j, 2]
            wx, wy, wz = w[f, j, 0], w[f, j, 1], w[f, j, 2]
            c1 = _cross_into(alpha[f, j, 0], alpha[f, j, 1], alpha[f, j, 2], sx, sy, sz)
            t = _cross_into(wx, wy, wz, sx, sy, sz)
            c2 = _cross_into(wx, wy, wz, t[0], t[1], t[2])
            centres[f, j, 0] = pos[f, j, 0] + sx
            centres[f, j, 1] = pos[f, j, 1] + sy
            centres[f, j, 2] = pos[f, j, 2] + sz
            for a in range(3):
                acc_c[f, j, a] = acc[j, a] + c1[a] + c2[a]
