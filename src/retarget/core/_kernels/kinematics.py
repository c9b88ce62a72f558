"""The compiled kernels of :mod:`retarget.core.kinematics` (numba; private).

Loaded on first use, as :mod:`retarget.core._kernels.quat` is (numba's import is most
of a short command's start-up); ``kinematics._fk_kernel`` and
``kinematics._jacobian_kernel`` stay importable by name for other compiled
kernels (:mod:`retarget.online._kernels.omr`, :mod:`retarget.online.omr`).
"""

from __future__ import annotations

import numba

__all__: list[str] = []


@numba.njit(cache=True, nogil=True)
def _fk_kernel(root, rot, parents, offsets, num_joints, pos, world):  # pragma: no cover - jitted
    """pos[f, p] and world[f, p] for every frame f and point p (joints, then sites).

    ``offsets`` has shape (1, P, 3) (the skeleton's) or (F, P, 3) (per frame).
    """
    n_frames = rot.shape[0]
    n_points = parents.shape[0]
    per_frame = offsets.shape[0] > 1
    for f in range(n_frames):
        fo = f if per_frame else 0
        for c in range(3):
            pos[f, 0, c] = root[f, c]
        for c in range(4):
            world[f, 0, c] = rot[f, 0, c]
        for p in range(1, n_points):
            a = parents[p]
            w = world[f, a, 0]
            x = world[f, a, 1]
            y = world[f, a, 2]
            z = world[f, a, 3]
            vx = offsets[fo, p, 0]
            vy = offsets[fo, p, 1]
            vz = offsets[fo, p, 2]
            # R(q) v = v + w t + u × t with t = 2 u × v
            tx = 2.0 * (y * vz - z * vy)
            ty = 2.0 * (z * vx - x * vz)
            tz = 2.0 * (x * vy - y * vx)
            pos[f, p, 0] = pos[f, a, 0] + vx + w * tx + (y * tz - z * ty)
            pos[f, p, 1] = pos[f, a, 1] + vy + w * ty + (z * tx - x * tz)
            pos[f, p, 2] = pos[f, a, 2] + vz + w * tz + (x * ty - y * tx)
            if p < num_joints:
                bw = rot[f, p, 0]
                bx = rot[f, p, 1]
                by = rot[f, p, 2]
                bz = rot[f, p, 3]
                world[f, p, 0] = w * bw - x * bx - y * by - z * bz
                world[f, p, 1] = w * bx + x * bw + y * bz - z * by
                world[f, p, 2] = w * by - x * bz + y * bw + z * bx
                world[f, p, 3] = w * bz + x * by - y * bx + z * bw
            else:
                world[f, p, 0] = w
                world[f, p, 1] = x
                world[f, p, 2] = y
                world[f, p, 3] = z


@numba.njit(cache=True, nogil=True)
def _jacobian_kernel(
    pos, world, parents, effectors, num_joints, orientation, jac
):  # pragma: no cover - jitted
    """Fill ``jac`` (B, 3K or 6K, 3 + 3J), zero on entry: for each effector ``e`` and
    each joint ``j`` on its path to the root, ``[p_j − p_e]× R_j`` (positions) and
    ``R_j`` (orientations, rows 3K on), and ``I`` for the root translation."""
    n_batch = pos.shape[0]
    k_total = effectors.shape[0]
    for b in range(n_batch):
        for k in range(k_total):
            e = effectors[k]
            row = 3 * k
            for c in range(3):
                jac[b, row + c, c] = 1.0
            ex = pos[b, e, 0]
            ey = pos[b, e, 1]
            ez = pos[b, e, 2]
            j = e
            while j >= 0:
                if j < num_joints:
                    w = world[b, j, 0]
                    x = world[b, j, 1]
                    y = world[b, j, 2]
                    z = world[b, j, 3]
                    # rotation matrix columns of the unit quaternion (w, x, y, z)
                    r00 = 1.0 - 2.0 * (y * y + z * z)
                    r10 = 2.0 * (x * y + w * z)
                    r20 = 2.0 * (x * z - w * y)
                    r01 = 2.0 * (x * y - w * z)
                    r11 = 1.0 - 2.0 * (x * x + z * z)
                    r21 = 2.0 * (y * z + w * x)
                    r02 = 2.0 * (x * z + w * y)
                    r12 = 2.0 * (y * z - w * x)
                    r22 = 1.0 - 2.0 * (x * x + y * y)
                    dx = pos[b, j, 0] - ex
                    dy = pos[b, j, 1] - ey
                    dz = pos[b, j, 2] - ez
                    col = 3 + 3 * j
                    # column c of [d]× R is d × (column c of R)
                    jac[b, row, col] = dy * r20 - dz * r10
                    jac[b, row + 1, col] = dz * r00 - dx * r20
                    jac[b, row + 2, col] = dx * r10 - dy * r00
                    jac[b, row, col + 1] = dy * r21 - dz * r11
                    jac[b, row + 1, col + 1] = dz * r01 - dx * r21
                    jac[b, row + 2, col + 1] = dx * r11 - dy * r01
                    jac[b, row, col + 2] = dy * r22 - dz * r12
                    jac[b, row + 1, col + 2] = dz * r02 - dx * r22
                    jac[b, row + 2, col + 2] = dx * r12 - dy * r02
                    if orientation:
                        o = 3 * k_total + row
                        jac[b, o, col] = r00
                        jac[b, o + 1, col] = r10
                        jac[b, o + 2, col] = r20
                        jac[b, o, col + 1] = r01
                        jac[b, o + 1, col + 1] = r11
                        jac[b, o + 2, col + 1] = r21
                        jac[b, o, col + 2] = r02
                        jac[b, o + 1, col + 2] = r12
                        jac[b, o + 2, col + 2] = r22
                j = parents[j]
