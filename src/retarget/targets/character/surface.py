"""How deep a character's hands go into its posed body surface (issue 41, item 3).

The capsules of :mod:`retarget.targets.character.skin` are the shapes the pass keeps
the hands out of; this is the measure of whether it did, on the surface itself: the
character's triangles (:func:`retarget.io.gltf.skin_mesh`) posed by linear blend
skinning on the motion's frames, the **body** the triangles all of whose vertices
follow the hips, a joint of the trunk below the head (the spine, the chest, the
neck) or a thigh most (a rigid part hung from one of those bones included: armour, a
robot's torso), the **hands** the skinned vertices following a wrist or a joint
below it most (not a rigid prop hung from a hand slot: a shield, a sword). A hand
vertex is inside the body where the body's generalized winding number about it
(Jacobson, Kavan & Sorkine-Hornung 2013, "Robust inside-outside segmentation using
generalized winding numbers": the triangles' solid angles by Van Oosterom &
Strackee's formula, over 4π) is above one half, which holds on a body surface with
holes (the neck, the arms and legs cut off); its depth is then its distance to the
nearest body triangle (Ericson, "Real-Time Collision Detection", §5.1.5). A frame
counts when a hand vertex is deeper than a share of the height.

The kernel is our own (compiled): one pass over the triangles per point gives both
the solid angle sum and the nearest distance; a library's mesh query builds a tree
for one surface, and here every frame is another surface.

Units: the skeleton's (metres for glTF).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from ...core.arrays import Array
from ...core.kinematics import forward_kinematics, rest_pose
from ...core.motion import Motion
from ...humanoid.roles import find_roles, height
from ...io.gltf import SkinMesh
from .skin import hand_and_body_joints


def _body_joints(motion: Motion) -> list[int]:
    """The hips, every joint from them up to the head (exclusive), and the thighs."""
    sk = motion.skeleton
    roles = find_roles(sk)
    trunk = [int(j) for j in sk.chain(roles["head"])]
    trunk = trunk[trunk.index(roles["hips"]) : -1]
    return trunk + [roles[f"{s}_hip"] for s in ("left", "right") if f"{s}_hip" in roles]


__all__ = ["SurfaceDepth", "depths_inside", "hands_in_surface"]


@numba.njit(cache=True, nogil=True)
def _depths(points, tri, out_w, out_d):  # pragma: no cover - jitted
    """Per point (P, 3): the generalized winding number of the triangles (T, 3, 3) and
    the distance to the nearest of them."""
    for p in range(points.shape[0]):
        px, py, pz = points[p, 0], points[p, 1], points[p, 2]
        total = 0.0
        best = np.inf
        for t in range(tri.shape[0]):
            ax, ay, az = tri[t, 0, 0] - px, tri[t, 0, 1] - py, tri[t, 0, 2] - pz
            bx, by, bz = tri[t, 1, 0] - px, tri[t, 1, 1] - py, tri[t, 1, 2] - pz
            cx, cy, cz = tri[t, 2, 0] - px, tri[t, 2, 1] - py, tri[t, 2, 2] - pz
            la = math.sqrt(ax * ax + ay * ay + az * az)
            lb = math.sqrt(bx * bx + by * by + bz * bz)
            lc = math.sqrt(cx * cx + cy * cy + cz * cz)
            det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
            den = (
                la * lb * lc
                + (ax * bx + ay * by + az * bz) * lc
                + (bx * cx + by * cy + bz * cz) * la
                + (cx * ax + cy * ay + cz * az) * lb
            )
            total += 2.0 * math.atan2(det, den)
            # the nearest point of the triangle (Ericson §5.1.5), relative to p: the
            # triangle a, b, c with the point at the origin
            abx, aby, abz = bx - ax, by - ay, bz - az
            acx, acy, acz = cx - ax, cy - ay, cz - az
            apx, apy, apz = -ax, -ay, -az
            d1 = abx * apx + aby * apy + abz * apz
            d2 = acx * apx + acy * apy + acz * apz
            if d1 <= 0.0 and d2 <= 0.0:
                qx, qy, qz = ax, ay, az
            else:
                bpx, bpy, bpz = -bx, -by, -bz
                d3 = abx * bpx + aby * bpy + abz * bpz
                d4 = acx * bpx + acy * bpy + acz * bpz
                cpx, cpy, cpz = -cx, -cy, -cz
                d5 = abx * cpx + aby * cpy + abz * cpz
                d6 = acx * cpx + acy * cpy + acz * cpz
                vc = d1 * d4 - d3 * d2
                vb = d5 * d2 - d1 * d6
                va = d3 * d6 - d5 * d4
                if d3 >= 0.0 and d4 <= d3:
                    qx, qy, qz = bx, by, bz
                elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
                    v = d1 / (d1 - d3) if d1 > d3 else 0.0  # (a == b: a degenerate edge)
                    qx, qy, qz = ax + v * abx, ay + v * aby, az + v * abz
                elif d6 >= 0.0 and d5 <= d6:
                    qx, qy, qz = cx, cy, cz
                elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
                    w = d2 / (d2 - d6) if d2 > d6 else 0.0
                    qx, qy, qz = ax + w * acx, ay + w * acy, az + w * acz
                elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
                    e = (d4 - d3) + (d5 - d6)
                    w = (d4 - d3) / e if e > 0.0 else 0.0
                    qx, qy, qz = bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz)
                else:
                    s = va + vb + vc
                    if s == 0.0:  # (a degenerate triangle: its first corner)
                        qx, qy, qz = ax, ay, az
                    else:
                        v = vb / s
                        w = vc / s
                        qx = ax + abx * v + acx * w
                        qy = ay + aby * v + acy * w
                        qz = az + abz * v + acz * w
            dist = math.sqrt(qx * qx + qy * qy + qz * qz)
            if dist < best:
                best = dist
        out_w[p] = total / (4.0 * math.pi)
        out_d[p] = best


def depths_inside(points: Array, triangles: Array) -> tuple[Array, Array]:
    """The generalized winding numbers (P,) of the triangles ``triangles`` (T, 3, 3)
    about ``points`` (P, 3) and each point's depth (P,): its distance to the nearest
    triangle where the winding number is above one half, else 0."""
    pts = np.ascontiguousarray(points, np.float64).reshape(-1, 3)
    tri = np.ascontiguousarray(triangles, np.float64).reshape(-1, 3, 3)
    w, d = np.zeros(len(pts)), np.full(len(pts), np.inf)
    if len(tri) and len(pts):
        _depths(pts, tri, w, d)
    return w, np.where(w > 0.5, d, 0.0)


@dataclass(frozen=True)
class SurfaceDepth:
    """How deep the hands' vertices go into the posed body surface.

    Attributes
    ----------
    frames : (K,) int
        The frames measured.
    depth : (K,)
        Per frame measured, the deepest hand vertex (length unit; 0: none inside).
    share : float
        Of the frames measured, those deeper than ``limit``.
    limit : float
        The depth that counts (a share of the height).
    """

    frames: NDArray[np.intp]
    depth: Array
    share: float
    limit: float


def hands_in_surface(
    motion: Motion,
    mesh: SkinMesh,
    *,
    fraction: float = 0.01,
    every: int = 5,
    stride: int = 2,
) -> SurfaceDepth:
    """The measure of the module docstring over every ``every``-th frame of ``motion``
    (on the character's skeleton, its rest rotations baked: :mod:`retarget.io.gltf`),
    every ``stride``-th hand vertex; the frames where no hand vertex comes within the
    body's bounding box are 0 without the kernel."""
    sk = motion.skeleton
    hands, _ = hand_and_body_joints(sk)
    body = _body_joints(motion)
    limit = fraction * height(sk, find_roles(sk))
    frames = np.arange(0, motion.num_frames, max(int(every), 1))
    main = mesh.joints[np.arange(len(mesh.joints)), mesh.weights.argmax(axis=1)]
    in_body = np.isin(main, body)
    body_tris = mesh.triangles[in_body[mesh.triangles].all(axis=1)]
    skinned = ~mesh.rigid if mesh.rigid is not None else np.ones(len(main), bool)
    hand_verts = np.flatnonzero(np.isin(main, hands) & skinned)[:: max(int(stride), 1)]
    depth = np.zeros(len(frames))
    if len(body_tris) and len(hand_verts):
        rest, _ = rest_pose(sk)
        pos, rot = forward_kinematics(
            sk, motion.root_position[frames], motion.rotations[frames],
            None if motion.translations is None else motion.translations[frames],
        )  # fmt: skip
        used = np.unique(np.r_[body_tris.reshape(-1), hand_verts])
        sub = SkinMesh(
            mesh.vertices[used], mesh.joints[used], mesh.weights[used], mesh.triangles, None
        )
        posed = sub.posed(pos, rot, rest)  # (K, U, 3)
        at = {int(v): k for k, v in enumerate(used)}
        tri_idx = np.vectorize(at.__getitem__)(body_tris)
        hand_idx = np.array([at[int(v)] for v in hand_verts])
        for k in range(len(frames)):
            tri = posed[k][tri_idx]  # (T, 3, 3)
            pts = posed[k][hand_idx]
            lo, hi = tri.reshape(-1, 3).min(axis=0), tri.reshape(-1, 3).max(axis=0)
            near = np.all((pts >= lo) & (pts <= hi), axis=1)
            if near.any():
                depth[k] = depths_inside(pts[near], tri)[1].max()
    return SurfaceDepth(frames, depth, float((depth > limit).mean()) if len(depth) else 0.0, limit)
