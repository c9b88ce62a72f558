"""Body collision: capsules on the joints kept apart, ``|c_a − c_b| − r_a − r_b − margin ≥ 0``.

A capsule is a segment ``[a, b]`` fixed in a joint's frame with a radius (a
link of a robot, a bone of a character). :func:`fit_capsules` fits one to the
points of each piece of a joint's geometry (a robot's collision meshes, a
character's skinned vertices): the segment along their principal axis, the
radius a quantile of their distances from it (the points of a convex hull lie on
its surface, so a quantile is the link's typical half-width, not its widest
corner's).

:class:`CollisionTask` has one inequality row per pair of capsules: the distance
between the closest points ``c_a``, ``c_b`` of the two segments, less the radii
and a margin. Its Jacobian is that of the two closest points as points rigidly
carried by their joints (``ċ = ṗ_j + ω_j × (c − p_j)``) along the unit normal
``n = (c_a − c_b) / |c_a − c_b|``: ``∂r/∂x = nᵀ (J_{c_a} − J_{c_b})``, exact where
the closest points are interior (a test checks it against finite differences).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array
from ..core.kinematics import Pose
from ..core.lazy import loader
from ..core.skeleton import Skeleton
from .base import Task, _wrench_vjp

_kernels = loader("retarget.tasks._kernels.collision")

__all__ = [
    "Capsules",
    "CollisionTask",
    "closest_points",
    "fit_capsules",
    "separate_pairs",
]


@dataclass(frozen=True, eq=False)
class Capsules:
    """Capsules fixed in joints' frames.

    Attributes
    ----------
    joints : (N,) int
    a, b : (N, 3)
        The segment's ends in the joint's frame (skeleton unit).
    radius : (N,)
    """

    joints: NDArray[np.intp]
    a: Array
    b: Array
    radius: Array

    def world(self, pose: Pose) -> tuple[Array, Array]:
        """The segments' ends in the world, each (..., N, 3)."""
        p = pose.positions[..., self.joints, :]
        w = pose.world_rotations[..., self.joints, :]
        return p + quat.rotate(w, self.a), p + quat.rotate(w, self.b)


def fit_capsules(points: Sequence[tuple[int, Array]], share: float = 0.65) -> Capsules:
    """One capsule per piece of geometry ``(joint, (V, 3) points in the joint's frame)``
    (a link may have several: a torso and the head fixed on it): the principal axis of
    the points, the segment spanning their projections less the radius at each end,
    the radius the ``share`` quantile of their distances from the axis (the points of
    a convex hull lie on its surface: a quantile is a typical half-width, not the
    widest corner's)."""
    joints, a, b, radius = [], [], [], []
    for j, pts in points:
        pts = np.asarray(pts, dtype=float)
        if len(pts) < 2:
            continue
        centre = pts.mean(axis=0)
        _, _, vt = np.linalg.svd(pts - centre, full_matrices=False)
        axis = vt[0]
        t = (pts - centre) @ axis
        off = pts - centre - t[:, None] * axis
        r = float(np.quantile(np.linalg.norm(off, axis=1), share))
        lo, hi = float(t.min()) + r, float(t.max()) - r
        if lo > hi:  # shorter than it is wide: a sphere
            lo = hi = 0.5 * (lo + hi)
        joints.append(int(j))
        a.append(centre + lo * axis)
        b.append(centre + hi * axis)
        radius.append(r)
    return Capsules(
        np.asarray(joints, dtype=np.intp),
        np.asarray(a).reshape(-1, 3),
        np.asarray(b).reshape(-1, 3),
        np.asarray(radius, dtype=float),
    )


def closest_points(p0: Array, p1: Array, q0: Array, q1: Array) -> tuple[Array, Array]:
    """Closest points of segments ``[p0, p1]`` and ``[q0, q1]`` (broadcast, (..., 3)):
    the parameters ``s``, ``t`` of the infinite lines' closest points clamped to the
    segments, the other recomputed where one is clamped (Ericson, *Real-Time
    Collision Detection*, §5.1.9); a segment of no length is its point."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a = (d1 * d1).sum(-1)
    e = (d2 * d2).sum(-1)
    f = (d2 * r).sum(-1)
    c = (d1 * r).sum(-1)
    bb = (d1 * d2).sum(-1)
    pa, pe = a > 0.0, e > 0.0
    a_ = np.where(pa, a, 1.0)
    e_ = np.where(pe, e, 1.0)
    denom = a * e - bb * bb
    skew = denom > 1e-12 * a * e  # (parallel lines otherwise: any s, here 0)
    s = np.where(skew, (bb * f - c * e) / np.where(skew, denom, 1.0), 0.0)
    s = np.clip(s, 0.0, 1.0)
    t = (bb * s + f) / e_
    s = np.where(
        t < 0.0, np.clip(-c / a_, 0.0, 1.0), np.where(t > 1.0, np.clip((bb - c) / a_, 0.0, 1.0), s)
    )
    t = np.clip(t, 0.0, 1.0)
    # a point for a segment
    s = np.where(pe, s, np.clip(-c / a_, 0.0, 1.0))
    t = np.where(pe, t, 0.0)
    t = np.where(pa, t, np.clip(f / e_, 0.0, 1.0))
    s = np.where(pa, s, 0.0)
    # nearly parallel segments lose the lines' solution to round-off: each segment's
    # ends against the other are candidates too, the nearest pair wins
    cands_s = [s, np.zeros_like(s), np.ones_like(s)]
    cands_t = [t, np.clip(f / e_, 0.0, 1.0), np.clip((f + bb) / e_, 0.0, 1.0)]
    cands_s += [np.clip(-c / a_, 0.0, 1.0), np.clip((bb - c) / a_, 0.0, 1.0)]
    cands_t += [np.zeros_like(t), np.ones_like(t)]
    best_s, best_t, best = s, t, np.full(np.shape(s), np.inf)
    for cs, ct in zip(cands_s, cands_t, strict=True):
        gap = r + cs[..., None] * d1 - ct[..., None] * d2
        dist = (gap * gap).sum(-1)
        better = dist < best
        best_s, best_t, best = (
            np.where(better, cs, best_s),
            np.where(better, ct, best_t),
            np.where(better, dist, best),
        )
    return p0 + best_s[..., None] * d1, q0 + best_t[..., None] * d2


def separate_pairs(
    skeleton: Skeleton, capsules: Capsules, pose: Pose, margin: float = 0.0
) -> tuple[NDArray[np.intp], Array]:
    """Pairs (P, 2) of capsules to keep apart and the gap (P,) each must keep: every pair
    on joints neither of which is the other's parent (a joint without channels passed
    over: a fixed link is part of its parent), each kept ``margin`` apart, or as far as
    in ``pose`` (a rest pose) where that is less: capsules only approximate a link, and
    two that overlap at rest (an arm hanging by a torso) may not go deeper."""
    parents = skeleton.parents
    orders = skeleton.euler_orders

    def up(j: int) -> int:
        k = int(parents[j])
        while k > 0 and not orders[k]:
            k = int(parents[k])
        return k

    near = {(j, j) for j in range(skeleton.num_joints)}
    near |= {(min(j, up(j)), max(j, up(j))) for j in range(1, skeleton.num_joints)}
    n = len(capsules.joints)
    i, k = np.triu_indices(n, 1)
    ji, jk = capsules.joints[i], capsules.joints[k]
    keep = np.array([(min(a, b), max(a, b)) not in near for a, b in zip(ji, jk, strict=True)], bool)
    pairs = np.stack([i[keep], k[keep]], axis=1).reshape(-1, 2).astype(np.intp)
    a, b = capsules.world(pose)
    ca, cb = closest_points(
        a[..., pairs[:, 0], :],
        b[..., pairs[:, 0], :],
        a[..., pairs[:, 1], :],
        b[..., pairs[:, 1], :],
    )
    gap = (
        np.linalg.norm(ca - cb, axis=-1)
        - capsules.radius[pairs[:, 0]]
        - capsules.radius[pairs[:, 1]]
    )
    return pairs, np.minimum(margin, gap.reshape(len(pairs), -1).min(axis=-1))


@dataclass(frozen=True, eq=False)
class CollisionTask(Task):
    """Pairs of capsules kept apart by ``margin`` (module docstring).

    Parameters
    ----------
    capsules : Capsules
    pairs : array_like of int, shape (P, 2)
        Indices into ``capsules``.
    margin : float or array_like, shape (P,)
        The gap each pair keeps (skeleton unit; :func:`separate_pairs` gives them).
    weight : float, keyword-only
        In 1/unit².
    """

    capsules: Capsules
    pairs: NDArray[np.intp]
    margin: Array | float = 0.0
    inequality: bool = field(default=True, init=False)
    batched_fields: ClassVar[Mapping[str, int]] = {}

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "pairs", np.asarray(self.pairs, dtype=np.intp).reshape(-1, 2))
        margin = np.broadcast_to(np.asarray(self.margin, dtype=np.float64), (len(self.pairs),))
        object.__setattr__(self, "margin", margin)

    @property
    def size(self) -> int:
        return len(self.pairs)

    def _closest(self, pose: Pose) -> tuple[Array, Array, Array]:
        a, b = self.capsules.world(pose)
        i, k = self.pairs[:, 0], self.pairs[:, 1]
        batch = a.shape[:-2]
        rows = int(np.prod(batch, dtype=np.intp))
        ca = np.empty((rows, len(self.pairs), 3))
        cb = np.empty((rows, len(self.pairs), 3))
        _kernels().closest_pairs(  # closest_points, compiled (tasks._kernels.collision)
            np.ascontiguousarray(a.reshape(rows, -1, 3)),
            np.ascontiguousarray(b.reshape(rows, -1, 3)),
            self.pairs,
            ca,
            cb,
        )
        shape = (*batch, len(self.pairs), 3)
        return (
            ca.reshape(shape),
            cb.reshape(shape),
            self.capsules.radius[i] + self.capsules.radius[k],
        )

    def gaps_below(self, pose: Pose, below: float = 0.0) -> Array:
        """The residual (..., P) where it is under ``below``; elsewhere a value at least
        ``below`` that does not exceed it (the bounding spheres'): which pairs are near,
        at the cost of the closest points of those only."""
        a, b = self.capsules.world(pose)
        batch = a.shape[:-2]
        rows = int(np.prod(batch, dtype=np.intp))
        out = np.empty((rows, len(self.pairs)))
        _kernels().gaps_below(
            np.ascontiguousarray(a.reshape(rows, -1, 3)),
            np.ascontiguousarray(b.reshape(rows, -1, 3)),
            np.ascontiguousarray(self.capsules.radius, dtype=np.float64),
            self.pairs,
            np.ascontiguousarray(self.margin, dtype=np.float64),
            float(below),
            out,
        )
        return out.reshape(*batch, len(self.pairs))

    def residual(self, pose: Pose) -> Array:
        ca, cb, radii = self._closest(pose)
        return np.linalg.norm(ca - cb, axis=-1) - radii - self.margin

    def jacobian(self, pose: Pose) -> Array:
        ca, cb, _ = self._closest(pose)
        diff = ca - cb
        n = diff / np.maximum(np.linalg.norm(diff, axis=-1, keepdims=True), 1e-12)
        joints = self.capsules.joints
        jac = pose.jacobian(joints, orientation=True)  # (..., 6N, 3 + 3J): p rows, then ω
        batch, k = jac.shape[:-2], len(joints)
        jac_p = jac[..., : 3 * k, :].reshape(*batch, k, 3, -1)
        jac_w = jac[..., 3 * k :, :].reshape(*batch, k, 3, -1)
        out = np.zeros((*batch, self.size, jac.shape[-1]))
        for side, c, sign in ((0, ca, 1.0), (1, cb, -1.0)):
            which = self.pairs[:, side]
            j_p = jac_p[..., which, :, :]  # (..., P, 3, n)
            j_w = jac_w[..., which, :, :]
            arm = c - pose.positions[..., joints[which], :]  # c − p_j
            # ċ = ṗ_j + ω × arm: n·ċ = n·ṗ_j + (arm × n)·ω
            lever = np.cross(arm, n)
            out += sign * (
                np.einsum("...pk,...pkn->...pn", n, j_p)
                + np.einsum("...pk,...pkn->...pn", lever, j_w)
            )
        return out

    def _wrenches(self, pose: Pose, c: Array) -> tuple[list[int], Array, Array]:
        """``Jᵀ c`` as world forces ``± c n`` at the two closest points, moved to their
        joints with the torques ``(c_x − p_j) × f`` (:func:`penalty_and_gradient`)."""
        ca, cb, _ = self._closest(pose)
        diff = ca - cb
        n = diff / np.maximum(np.linalg.norm(diff, axis=-1, keepdims=True), 1e-12)
        f = np.asarray(c, dtype=np.float64)[..., None] * n  # (..., P, 3)
        ja = self.capsules.joints[self.pairs[:, 0]]
        jb = self.capsules.joints[self.pairs[:, 1]]
        ta = np.cross(ca - pose.positions[..., ja, :], f)
        tb = np.cross(cb - pose.positions[..., jb, :], -f)
        points = [int(j) for j in ja] + [int(j) for j in jb]
        return points, np.concatenate([f, -f], axis=-2), np.concatenate([ta, tb], axis=-2)

    def vjp(self, pose: Pose, cotangent: ArrayLike) -> Array:
        points, forces, torques = self._wrenches(pose, np.asarray(cotangent, dtype=np.float64))
        return _wrench_vjp(pose, points, forces, torques)
