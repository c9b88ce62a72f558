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

The kernels are our own (compiled, :mod:`retarget.targets.character._kernels.surface`):
passes over the triangles per point give the solid angle sum and the nearest point;
a library's mesh query builds a tree for one surface, and here every frame is another
surface. The same queries serve the pass that keeps the hands off the surface
(:mod:`retarget.targets.character.clearance`): :func:`signed_distances_posed`, every
frame at once, with the surface's smooth normals, and :func:`posed_vertices`
(linear blend skinning, compiled).

Units: the skeleton's (metres for glTF).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...core.arrays import Array
from ...core.kinematics import forward_kinematics, rest_pose
from ...core.lazy import loader
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


_kernels = loader("retarget.targets.character._kernels.surface")

__all__ = [
    "SurfaceDepth",
    "depths_inside",
    "hands_in_surface",
    "signed_distances",
    "signed_distances_posed",
]


#: Faces meeting at more than this angle (radians) keep their own normals at the edge
#: between them (a hard edge); below it the normals are averaged. By default none: on
#: the knight's low-poly armour a hard edge's normal jump turned its arms by up to 11°
#: from one frame to the next (8° with none); averaged across a right-angled rim, a
#: hand departs up to 0.3 % of the height more than it must there.
CREASE = math.pi


def _rings(corners: NDArray[np.intp], weld: NDArray[np.intp]) -> tuple[NDArray[np.intp], ...]:
    """The triangles about each welded vertex of the corners (T, 3): ``(ring_ptr (W + 1,),
    ring_face (3T,), ring_corner (3T + 3T,))``, the last the vertex of each corner
    (T * 3) then the corner each ring entry is of its triangle (the compiled
    ``_corner_normals``'s)."""
    vertex = weld[corners].reshape(-1)  # (3T,)
    order = np.argsort(vertex, kind="stable")
    ptr = np.zeros(int(vertex.max(initial=-1)) + 2, np.intp)
    np.add.at(ptr, vertex + 1, 1)
    ptr = np.cumsum(ptr)
    return (
        ptr.astype(np.intp),
        (order // 3).astype(np.intp),
        np.concatenate([vertex, order % 3]).astype(np.intp),
    )


def posed_vertices(mesh: SkinMesh, positions: Array, rotations: Array, rest: Array) -> Array:
    """:meth:`retarget.io.gltf.SkinMesh.posed` compiled (its per-influence arrays of
    every frame were most of a pass's time): (F, V, 3)."""
    out = np.zeros((positions.shape[0], len(mesh.vertices), 3))
    _kernels()._blend(
        np.ascontiguousarray(positions, np.float64),
        np.ascontiguousarray(rotations, np.float64),
        np.ascontiguousarray(rest, np.float64),
        np.ascontiguousarray(mesh.vertices, np.float64),
        np.ascontiguousarray(mesh.joints, np.intp),
        np.ascontiguousarray(mesh.weights, np.float64),
        out,
    )
    return out


def signed_distances(
    points: Array, triangles: Array, band: float = np.inf
) -> tuple[Array, Array, Array]:
    """Each point's signed distance (P,) to the surface of the triangles (T, 3, 3):
    its distance to the nearest triangle, negative inside (the generalized winding
    number above one half), the nearest point (P, 3) and the unit normal there (P, 3)
    pointing outward (from the nearest point toward the point, away from it inside;
    the triangle's own, counter-clockwise, where the two coincide). A point farther
    than ``band`` from every triangle is not tested for inside (its distance counted
    positive): the winding number costs a pass over every triangle."""
    pts = np.ascontiguousarray(points, np.float64).reshape(-1, 3)
    tri = np.ascontiguousarray(triangles, np.float64).reshape(-1, 3, 3)
    out_s, out_q, out_n = (
        np.full(len(pts), np.inf),
        np.zeros((len(pts), 3)),
        np.zeros((len(pts), 3)),
    )
    if not (len(tri) and len(pts)):
        return out_s, out_q + np.nan, out_n + np.nan
    _kernels()._signed(pts, tri, float(band), out_s, out_q, out_n, np.zeros(len(pts), np.intp))
    return out_s, out_q, out_n


def signed_distances_posed(
    posed: Array,
    triangles: NDArray[np.intp],
    points: NDArray[np.intp],
    grow: float,
    band: float = np.inf,
    rest: Array | None = None,
    crease: float = CREASE,
    groups: NDArray[np.intp] | None = None,
) -> tuple[Array, Array, Array]:
    """:func:`signed_distances` (inside tested within ``band``) on every frame of posed
    vertices ``posed`` (F, U, 3): the triangles (T, 3) and the points (P,) as indices
    into them; a point outside the triangles' bounding box grown by ``grow`` is +inf
    with NaN nearest point and normal. The normals are the surface's smooth ones (the
    angle-weighted vertex normals interpolated at the nearest point, as Phong shades:
    they turn gradually from face to face where a face's own would jump; faces that
    meet at more than ``crease`` (radians) keep theirs), the vertices at one place in
    ``rest`` (U, 3) (default the first frame) one vertex across a mesh's seams. The
    points in one of ``groups`` (P,) (default one) are near one another (a hand's):
    their nearest triangles are looked for among those near them together. Shapes
    (F, P), (F, P, 3), (F, P, 3)."""
    f, p = posed.shape[0], len(points)
    out_s, out_q, out_n = (
        np.full((f, p), np.inf),
        np.full((f, p, 3), np.nan),
        np.full((f, p, 3), np.nan),
    )
    if len(triangles) and p and f:
        where = posed[0] if rest is None else np.asarray(rest)
        _, weld = np.unique(
            np.round(where / max(float(np.ptp(where)), 1e-300), 9), axis=0, return_inverse=True
        )
        _kernels()._signed_frames(
            np.ascontiguousarray(posed, np.float64),
            np.ascontiguousarray(triangles, np.intp),
            np.ascontiguousarray(points, np.intp),
            np.zeros(p, np.intp) if groups is None else np.ascontiguousarray(groups, np.intp),
            _rings(np.asarray(triangles, np.intp), weld.reshape(-1).astype(np.intp)),
            float(crease), float(grow), float(band), out_s, out_q, out_n,
        )  # fmt: skip
    return out_s, out_q, out_n


def depths_inside(points: Array, triangles: Array) -> tuple[Array, Array]:
    """The generalized winding numbers (P,) of the triangles ``triangles`` (T, 3, 3)
    about ``points`` (P, 3) and each point's depth (P,): its distance to the nearest
    triangle where the winding number is above one half, else 0."""
    pts = np.ascontiguousarray(points, np.float64).reshape(-1, 3)
    tri = np.ascontiguousarray(triangles, np.float64).reshape(-1, 3, 3)
    w, d = np.zeros(len(pts)), np.full(len(pts), np.inf)
    if len(tri) and len(pts):
        _kernels()._winding(pts, tri, w)
        centre, radius = np.zeros((len(tri), 3)), np.zeros(len(tri))
        _kernels()._bounds(tri, centre, radius)
        cand = np.arange(len(tri))
        _kernels()._nearest(
            pts, tri, centre, radius, cand, d, np.zeros((len(pts), 3)), np.zeros(len(pts), np.intp)
        )
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


#: The hand vertices the measure tests at most (:func:`hands_in_surface`).
MEASURED = 4000


def hands_in_surface(
    motion: Motion,
    mesh: SkinMesh,
    *,
    fraction: float = 0.01,
    every: int = 5,
    stride: int | None = None,
) -> SurfaceDepth:
    """The measure of the module docstring over every ``every``-th frame of ``motion``
    (on the character's skeleton, its rest rotations baked: :mod:`retarget.io.gltf`),
    every ``stride``-th hand vertex (default every 2nd, fewer where the hands have more
    than :data:`MEASURED` vertices: a mannequin's 6,000 finger vertices are a few
    millimetres apart); a vertex outside the body's bounding box is not inside."""
    sk = motion.skeleton
    hands, _ = hand_and_body_joints(sk)
    body = _body_joints(motion)
    limit = fraction * height(sk, find_roles(sk))
    frames = np.arange(0, motion.num_frames, max(int(every), 1))
    main = mesh.joints[np.arange(len(mesh.joints)), mesh.weights.argmax(axis=1)]
    in_body = np.isin(main, body)
    body_tris = mesh.triangles[in_body[mesh.triangles].all(axis=1)]
    skinned = ~mesh.rigid if mesh.rigid is not None else np.ones(len(main), bool)
    hand_verts = np.flatnonzero(np.isin(main, hands) & skinned)
    step = max(2, -(-len(hand_verts) // MEASURED)) if stride is None else max(int(stride), 1)
    hand_verts = hand_verts[::step]
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
        posed = posed_vertices(sub, pos, rot, rest)  # (K, U, 3)
        tri_idx = np.searchsorted(used, body_tris)
        hand_idx = np.searchsorted(used, hand_verts)
        signed, _, _ = signed_distances_posed(posed, tri_idx, hand_idx, 0.0, np.inf, sub.vertices)
        depth = np.maximum(-signed, 0.0).max(axis=1)
    return SurfaceDepth(frames, depth, float((depth > limit).mean()) if len(depth) else 0.0, limit)
