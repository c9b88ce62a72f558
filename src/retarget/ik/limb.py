"""Analytic inverse kinematics of a two-bone limb (Lee & Shin 1999, section 5.3).

An arm or a leg is three joints: the **upper** joint (shoulder, hip; 3 DOF),
the **middle** joint (elbow, knee; a hinge) and the **lower** joint (wrist,
ankle). Given the upper joint's position (fixed by the rest of the body), a
goal for the lower joint and optionally a goal orientation, the limb posture
follows in closed form, as in Lee & Shin 1999, Figure 4:

1. **middle joint** (eq. 7): the distance ``L`` from the upper joint to the
   goal fixes the hinge angle; turn the middle joint about its hinge axis;
2. **upper joint**: the shortest world rotation bringing the lower joint onto
   the ray from the upper joint to the goal, then a turn by the *swivel* angle
   about that ray (the elbow circle, θ_i of section 5.2; Shin et al. 2001,
   eq. 21);
3. **lower joint**: the local rotation that gives the goal orientation,
   projected onto the joint's channels and limits.

Conventions (DESIGN.md, "Conventions"): quaternions ``(w, x, y, z)``; rotation
vectors axis × angle; every function is batched over leading axes (frames,
sigma points) and loops over none of them.

Geometry and symbols
--------------------
All in the upper joint's frame, where the hinge axis ``a`` (unit, fixed in
that frame) passes through the middle joint:

* ``d1`` = middle − upper (the middle joint's offset), ``l1 = |d1|``;
* ``d2`` = lower − middle = ``q_mid · offset_lower``, ``l2 = |d2|``;
* ``h1 = d1·a``, ``h2 = d2·a`` their components along the axis (signed:
  turning about ``a`` leaves both unchanged);
* ``r1 = |d1 − h1 a|``, ``r2 = |d2 − h2 a|``: the distances of the upper and
  lower joints from the axis line;
* ``φ`` the angle at the middle joint between the projections of the two
  bones on the plane perpendicular to ``a`` (π = straight), and
  ``β = π − φ`` taken with a sign: the angle about ``a`` from the upper bone's
  projected direction (continued through the middle joint) to the lower bone's
  projection. ``β = 0`` is the fully stretched limb; ``β > 0`` bends it one
  way, ``β < 0`` the other.

The appendix of Lee & Shin gives ``L² = (h1 + h2)² + r1² + r2² − 2 r1 r2 cos φ``;
with ``h_i² = l_i² − r_i²``:

.. math::
    \\cos φ = \\frac{l_1^2 + l_2^2 + 2 h_1 h_2 - L^2}{2 r_1 r_2}, \\qquad
    L^2 = K + 2 r_1 r_2 \\cos β,\\quad K = l_1^2 + l_2^2 + 2 h_1 h_2

The bone geometry (``d1``, ``off2``, hence ``l1, l2, h1, r1``) is the
skeleton's offsets, or each element's own when :func:`solve_limb` is given
per-pose offsets (``translations``: a character whose proportions change over
the clip, Lee & Shin 1999, Figure 5d); only ``a`` is the limb's.

Eq. 7 of the paper writes ``2 √(l1² − r1²) √(l2² − r2²)`` for ``2 h1 h2``,
which holds when the upper and lower joints lie on opposite sides of the
plane through the middle joint perpendicular to the axis (``h1 h2 ≥ 0``, the
usual case); the signed form above holds always. ``r1 = l1, r2 = l2`` gives the
law of cosines. When ``r1 r2 = 0`` the hinge does not change ``L`` at all: the
middle joint is then left alone (only clamped into its limits).

Hinge angle
-----------
The **hinge angle** of a middle joint is the twist of its local rotation about
the hinge axis, ``θ = 2 atan2(a · vec(q_mid), w(q_mid))`` wrapped to
``(−π, π]`` (swing-twist decomposition ``q_mid = exp(θ a) ⊗ s`` with the swing
``s`` about an axis perpendicular to ``a``). It is measured from the rest pose
(``q_mid = 1``). For a one-channel joint (ASF ``dof rx`` knee) it *is* the
channel angle of :func:`retarget.core.dofs.channel_angles` (or its negative, "Sign"
below), and :attr:`Limb.hinge_limits` are the skeleton's limits of that channel
(or their negatives). For a
3-DOF joint it is the rotation about the axis left after removing the swing:
the signed angle between the projected lower bone and its rest-pose
projection when the swing is zero. Turning the joint by
``q_mid ← exp(Δ a) ⊗ q_mid`` adds exactly Δ to θ and to β.

Sign: the axis is oriented so that **flexion is positive**: a one-channel joint
keeps its file's channel sign where its range reaches further that way (CMU knees
and elbows flex with positive ``rx``, limits ``[-10°, 170°]``) and is turned round
where it reaches further the negative way (iCub's knees, ``[-125°, 23°]``, IHMC
Alexander's elbows); an axis estimated from a motion is oriented so that
the mean hinge angle over the clip is positive; an axis estimated from a bent
rest pose so that the rest bend is positive.

Swivel angle
------------
The elbow (knee) can still turn about the line from the upper joint to the
goal. :func:`solve_limb` picks the turn by its ``swivel`` argument:

* ``swivel_mode="relative"`` (default): ``swivel`` is measured from the
  solution nearest the reference pose, the one whose upper-joint rotation
  differs from the reference's (after the hinge change) by the *shortest*
  world rotation that brings the lower joint onto the ray; that is Shin et
  al.'s reference point ``q0`` of eq. 21, and ``swivel = 0`` keeps the elbow
  as close to where it was as the new goal allows. The result is
  ``q_upper = exp(swivel · n) ⊗ q0`` with ``n`` the unit ray (parent frame).
* ``swivel_mode="absolute"``: ``swivel`` is the angle that :func:`swivel_angle`
  will report for the result.
* ``swivel_mode="nearest"``: the swivel is chosen in closed form so that the
  upper joint's rotation is as close as possible (geodesic distance, eq. 22 of
  Shin et al. 2001) to the *reference* pose's upper-joint rotation ``q*``
  (the captured shoulder or hip), then ``swivel`` is added. With
  ``q(θ) = exp(θ n) ⊗ q0`` (eq. 21, ``q0`` the relative-mode solution),
  ``q*·q(θ) = a cos θ/2 + b sin θ/2`` with ``a = q*·q0`` and
  ``b = q*·(n ⊗ q0)`` (``n`` as a pure quaternion; eq. 23 writes ``b`` out), so
  ``|q*·q(θ)|`` is largest at ``θ = 2 atan2(b, a)``; the antipodal choice of
  eq. 23 (``θ ± 2π``) is the same rotation.

:func:`swivel_angle` measures a pose's elbow-circle angle absolutely: in the
upper joint's parent frame, with ``ŵ`` the limb direction (upper → lower) in
the upper joint's frame, ``n = q_upper ŵ`` the limb axis and ``R0`` the limb's
:attr:`Limb.swivel_reference`, the pose is ``q_upper = exp(ψ n) ⊗
shortest(R0 ŵ → n) ⊗ R0`` and ``ψ ∈ (−π, π]`` is its swivel angle: the turn of
the elbow about the axis away from where ``R0`` would put it. It is undefined
only when the limb points exactly opposite to where ``R0`` points it
(``n = −R0 ŵ``); :func:`limb_from_roles` takes ``R0`` as the mean upper-joint
rotation of a motion, so that singular direction is far from the clip's poses.

The two modes agree up to the holonomy of shortest rotations: with the goal
at the reference's own lower-joint position, ``swivel_angle(result) −
swivel_angle(reference) = swivel`` exactly; for other goals the relative
zero is the minimal motion of the limb, which need not keep ψ.

Reach
-----
``L`` is clamped to the reachable range ``[L_min, L_max]``: ``L_max`` at the
straightest hinge angle the limits allow (``β = 0`` when allowed: full
extension given ``r1, r2``), ``L_min`` at the most bent one (the hinge limit,
or ``β = π`` when unlimited). The lower joint then lands on the ray from the
upper joint to the goal at distance ``L``, which is the nearest reachable point
(the reachable set is a spherical shell about the upper joint), and
``residual = |L_goal − L|``. Nothing is NaN; goals that are NaN leave their
element unchanged.

References
----------
J. Lee and S. Y. Shin, "A hierarchical approach to interactive motion editing
for human-like figures", SIGGRAPH 1999, section 5.3, eq. (7) and appendix.
H. J. Shin, J. Lee, S. Y. Shin and M. Gleicher, "Computer puppetry", ACM TOG
20(2), 2001, section 5.3, eq. (21).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array, as_batch, frozen
from ..core.dofs import clamp_to_limits
from ..core.errors import RetargetError
from ..core.kinematics import forward_kinematics
from ..core.lazy import loader
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from ._kernels.limb import ARC_TOL, DEGENERATE

__all__ = [
    "ARC_TOL",
    "DEGENERATE",
    "LIMB_ROLES",
    "Limb",
    "LimbGeometry",
    "LimbSolution",
    "estimate_hinge_axis",
    "free_joint",
    "hinge_angle",
    "limb_from_roles",
    "limb_geometry",
    "limb_reach",
    "soft_reach",
    "solve_limb",
    "swivel_angle",
]


#: Role names of the upper, middle and lower joint of each kind of limb
#: (:mod:`retarget.humanoid.roles`).
LIMB_ROLES: Mapping[str, tuple[str, str, str]] = {
    "leg": ("hip", "knee", "ankle"),
    "arm": ("shoulder", "elbow", "wrist"),
}
_SIDES = ("left", "right")
_SWIVEL_MODES = ("relative", "absolute", "nearest")
_TWO_PI = 2.0 * np.pi
_kernels = loader("retarget.ik._kernels.limb")
#: The compiled rows (:func:`retarget.ik._kernels.limb.solve_rows`) where they serve (a
#: relative swivel, a free lower joint); off, the numpy steps below (the tests' reference).
_COMPILED = True


@dataclass(frozen=True, eq=False)
class Limb:
    """An arm or a leg: three joints, the middle one a hinge.

    Parameters
    ----------
    upper, middle, lower : int
        Joint indices of the shoulder (hip), elbow (knee) and wrist (ankle);
        ``upper`` is the parent of ``middle``, ``middle`` the parent of ``lower``.
    hinge_axis : array_like, shape (3,)
        The middle joint's rotation axis in the **upper** joint's frame (the
        middle joint's parent frame); normalised on construction. Oriented so
        that flexion is positive (module docstring, "Hinge angle").
    hinge_limits : array_like, shape (2,)
        Lower and upper bound (radians) of the hinge angle; ``±inf`` for none.
    kind : str
        ``"leg"`` or ``"arm"`` (informative).
    side : str
        ``"left"`` or ``"right"`` (informative).
    swivel_reference : array_like, shape (4,), optional
        Local rotation of the upper joint at which :func:`swivel_angle` is zero
        (``R0`` in the module docstring); identity (the rest pose) by default.
    """

    upper: int
    middle: int
    lower: int
    hinge_axis: Array
    hinge_limits: Array = field(default_factory=lambda: np.array([-np.inf, np.inf]))
    kind: str = "leg"
    side: str = "left"
    # None asks for the identity; __post_init__ always stores an array
    swivel_reference: Array = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        for key in ("upper", "middle", "lower"):
            value = getattr(self, key)
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"Expected `{key}` to be a joint index >= 0, got {value!r}")
            object.__setattr__(self, key, int(value))
        axis = np.array(self.hinge_axis, dtype=np.float64)
        if axis.shape != (3,):
            raise ValueError(f"Expected `hinge_axis` to have shape (3,), got {axis.shape}")
        norm = float(np.linalg.norm(axis))
        if not (np.isfinite(norm) and norm > 0.0):
            raise ValueError(f"Expected a finite non-zero `hinge_axis`, got {axis.tolist()}")
        axis = axis / norm
        axis.setflags(write=False)
        limits = frozen(self.hinge_limits, (2,), "hinge_limits")
        if np.isnan(limits).any() or limits[0] > limits[1]:
            raise ValueError(f"Expected hinge_limits (lower, upper), lower <= upper, got {limits}")
        ref = self.swivel_reference
        ref = quat.identity() if ref is None else quat.normalize(np.array(ref, dtype=np.float64))
        ref = frozen(ref, (4,), "swivel_reference")
        object.__setattr__(self, "hinge_axis", axis)
        object.__setattr__(self, "hinge_limits", limits)
        object.__setattr__(self, "swivel_reference", ref)
        object.__setattr__(self, "kind", str(self.kind))
        object.__setattr__(self, "side", str(self.side))

    @property
    def joints(self) -> tuple[int, int, int]:
        """``(upper, middle, lower)``."""
        return (self.upper, self.middle, self.lower)

    def __repr__(self) -> str:
        lo, hi = np.degrees(self.hinge_limits)
        return (
            f"Limb({self.side} {self.kind}: joints {self.joints}, "
            f"hinge_axis={np.round(self.hinge_axis, 4).tolist()}, "
            f"hinge_limits=[{lo:.1f}°, {hi:.1f}°])"
        )


@dataclass(frozen=True, eq=False)
class LimbSolution:
    """The result of :func:`solve_limb`; arrays share the batch shape ``(...)``.

    Attributes
    ----------
    rotations : ndarray, shape (..., J, 4)
        Local rotations; only the limb's three joints differ from the input.
    reached : ndarray, shape (..., 3)
        World position of the lower joint.
    residual : ndarray, shape (...)
        Distance of the goal from the reachable range along the ray from the
        upper joint (0 when reachable, and for NaN goals).
    orientation_residual : ndarray, shape (...)
        Angle (radians) between the lower joint's world rotation and the goal
        orientation (0 when no orientation was asked).
    orientation_error : ndarray, shape (..., 3)
        The rotation vector from the goal orientation to the lower joint's
        world rotation, in the goal's frame (``log(goal⁻¹ ⊗ achieved)``; its
        norm is ``orientation_residual``): a lower joint of fewer DOFs than a
        ball joint misses the goal about the axes it cannot turn.
    clamped : ndarray of bool, shape (...)
        The goal was out of reach: too far, or too close for the hinge limits.
    extension : ndarray, shape (...)
        ``L_goal / L_max``: the share of the limb's full reach the goal asks for
        (above 1: out of reach; 0 for NaN goals).
    """

    rotations: Array
    reached: Array
    residual: Array
    orientation_residual: Array
    clamped: NDArray[np.bool_]
    extension: Array
    orientation_error: Array


# -- small helpers --------------------------------------------------------------------------


def _wrap(x: Array) -> Array:
    """Angles wrapped to (−π, π]."""
    return np.pi - np.mod(np.pi - x, _TWO_PI)


def _twist(q: Array, axis: Array) -> Array:
    """Twist angle of ``q`` about unit ``axis`` (broadcast), in (−π, π]."""
    return _wrap(2.0 * np.arctan2(np.sum(q[..., 1:] * axis, axis=-1), q[..., 0]))


def _norm(v: Array) -> Array:
    """Euclidean norm over the last axis (faster than ``np.linalg.norm`` on small rows)."""
    return np.sqrt(np.einsum("...i,...i->...", v, v))


def _unit(v: Array, fallback: Array) -> tuple[Array, Array]:
    """``v / |v|`` and ``|v|``, with ``fallback`` (unit) where ``v`` is (nearly) zero."""
    n = _norm(v)
    ok = n > 1e-300
    if ok.all():
        return v / n[..., None], n
    safe = np.where(ok, n, 1.0)[..., None]
    return np.where(ok[..., None], v / safe, fallback), n


def _axis_quat(axis: Array, angle: Array) -> Array:
    """``exp(angle · axis)`` for unit axes, shape (..., 4)."""
    half = 0.5 * angle
    return np.concatenate([np.cos(half)[..., None], np.sin(half)[..., None] * axis], axis=-1)


def _perpendicular(v: Array) -> Array:
    """A unit vector perpendicular to the (3,) vector ``v``."""
    basis = np.eye(3)[int(np.argmin(np.abs(v)))]
    p = np.cross(v, basis)
    return np.asarray(p / np.linalg.norm(p))


def _check_limb(skeleton: Skeleton, limb: Limb) -> None:
    n = skeleton.num_joints
    u, m, lo = limb.joints
    if not (max(u, m, lo) < n and skeleton.parents[m] == u and skeleton.parents[lo] == m):
        names = skeleton.names
        got = [names[j] if j < n else str(j) for j in limb.joints]
        raise RetargetError(
            f"limb joints {got} are not a chain upper -> middle -> lower of joints of this "
            f"skeleton (each the parent of the next)"
        )


@lru_cache(maxsize=64)
def _chain_skeleton(skeleton: Skeleton, upper: int) -> tuple[Skeleton, NDArray[np.intp]]:
    """The chain root → ``upper`` as a skeleton of its own, and its joint indices."""
    chain = skeleton.chain(upper)
    sub = Skeleton(
        tuple(skeleton.names[j] for j in chain),
        np.arange(len(chain)) - 1,
        skeleton.offsets[chain],
    )
    return sub, chain


def _upper_frame(
    skeleton: Skeleton,
    root_position: Array,
    rotations: Array,
    upper: int,
    translations: Array | None = None,
) -> tuple[Array, Array]:
    """World rotation of ``upper``'s parent frame and world position of ``upper``.

    One call of :func:`retarget.core.kinematics.forward_kinematics` on the chain from
    the root to ``upper`` (not the whole skeleton), with the rows' own offsets
    when ``translations`` (..., J, 3) are given.
    """
    if upper == 0:
        return quat.identity(root_position.shape[:-1]), root_position
    sub, chain = _chain_skeleton(skeleton, upper)
    chain_offsets = None if translations is None else np.take(translations, chain, axis=-2)
    pos, world = forward_kinematics(
        sub, root_position, np.take(rotations, chain, axis=-2), chain_offsets
    )
    return world[..., -2, :], pos[..., -1, :]


@dataclass(frozen=True)
class LimbGeometry:
    """Pose-independent quantities of a limb, in the upper joint's frame (the symbols of
    the module docstring, "Geometry and symbols"; lengths in the skeleton's unit).

    From the skeleton's offsets (fields of shape () and (3,)), or per row from
    per-frame offsets (a character whose proportions change over a clip: fields
    of shape (...) and (..., 3), one limb per row). Compiled solvers of the same
    limb (:mod:`retarget.online._kernels.puppetry`) take their constants from it.

    Attributes
    ----------
    a : ndarray, shape (3,)
        The unit hinge axis.
    d1 : ndarray, shape (..., 3)
        The middle joint's offset (upper → middle).
    off2 : ndarray, shape (..., 3)
        The lower joint's offset, in the middle joint's frame.
    h1, r1, l1, l2 : ndarray, shape (...)
        ``d1 · a``, the upper joint's distance from the axis line, ``|d1|``, ``|off2|``.
    s : ndarray, shape (..., 3)
        Unit, ⊥ ``a``: the direction ``β = 0`` of the lower bone's projection.
    t : ndarray, shape (..., 3)
        ``a × s``.
    a_cross : ndarray, shape (3, 3)
        ``v @ a_cross == a × v``.
    """

    a: Array  # (3,) hinge axis
    d1: Array  # (..., 3) middle joint offset (upper -> middle)
    off2: Array  # (..., 3) lower joint offset in the middle frame
    h1: Array  # (...)
    r1: Array  # (...)
    l1: Array  # (...)
    l2: Array  # (...)
    s: Array  # (..., 3) unit, ⊥ a: the direction β = 0 of the lower bone's projection
    t: Array  # (..., 3) a × s
    a_cross: Array  # (3, 3): v @ a_cross == a × v


def limb_geometry(
    skeleton: Skeleton, limb: Limb, translations: Array | None = None
) -> LimbGeometry:
    """The limb's :class:`LimbGeometry`: from ``skeleton.offsets``, or row by row from
    per-frame joint offsets ``translations`` of shape (..., J, 3)."""
    a = limb.hinge_axis
    offsets = skeleton.offsets if translations is None else translations
    d1 = offsets[..., limb.middle, :]
    off2 = offsets[..., limb.lower, :]
    h1 = _dot(d1, a)
    p1 = d1 - h1[..., None] * a
    r1, l1, l2 = _norm(p1), _norm(d1), _norm(off2)
    # β is measured from the upper bone's projection; when the upper joint lies on
    # the axis (r1 = 0) β cannot change L and any fixed direction ⊥ a will do.
    use_p1 = r1 > 1e-12 * np.maximum(l1, 1e-300)
    if use_p1.all():
        s = p1 / r1[..., None]
    else:
        p2_rest = off2 - _dot(off2, a)[..., None] * a
        n2 = _norm(p2_rest)
        use_p2 = n2 > 1e-12 * np.maximum(l2, 1e-300)
        s = np.where(
            use_p1[..., None],
            p1 / np.where(use_p1, r1, 1.0)[..., None],
            np.where(
                use_p2[..., None],
                p2_rest / np.where(use_p2, n2, 1.0)[..., None],
                _perpendicular(a),
            ),
        )
    return LimbGeometry(
        a=a,
        d1=d1,
        off2=off2,
        h1=h1,
        r1=r1,
        l1=l1,
        l2=l2,
        s=s,
        t=np.cross(a, s),
        a_cross=np.array([[0.0, a[2], -a[1]], [-a[2], 0.0, a[0]], [a[1], -a[0], 0.0]]),
    )


def _dot(u: Array, v: Array) -> Array:
    """``u · v`` over the last axis (length 3), broadcast, summed in a fixed order: the
    same rounding for a shared ``v`` (3,) and per-row ``v`` (..., 3), where ``@`` and
    ``einsum`` take different paths (and ``np.sum`` over a short axis is slow)."""
    return u[..., 0] * v[..., 0] + u[..., 1] * v[..., 1] + u[..., 2] * v[..., 2]


def hinge_angle(limb: Limb, rotations: ArrayLike) -> Array:
    """Hinge angle of the limb's middle joint (radians, in (−π, π]).

    The twist of the middle joint's local rotation about the hinge axis (module
    docstring, "Hinge angle"); for a one-channel joint, its channel angle (or its
    negative: module docstring, "Sign").

    Parameters
    ----------
    limb : Limb
    rotations : array_like, shape (..., J, 4)
        Local rotations.

    Returns
    -------
    ndarray, shape (...)
    """
    rotations = as_batch(rotations, (4,), "rotations")
    if rotations.ndim < 2 or rotations.shape[-2] <= limb.middle:
        raise ValueError(
            f"Expected `rotations` of shape (..., J, 4) with J > {limb.middle}, "
            f"got {rotations.shape}"
        )
    return _twist(rotations[..., limb.middle, :], limb.hinge_axis)


# -- building limbs -------------------------------------------------------------------------


def _rest_hinge_axis(skeleton: Skeleton, joints: tuple[int, int, int]) -> Array:
    """Normal of the rest pose's limb plane, oriented so that the rest bend is positive.

    ``d1 × d2`` (upper bone × lower bone in the upper frame, where the rest
    pose's middle frame coincides): turning about it bends the limb further
    the way it is bent at rest. Collinear bones (a straight rest pose) give no
    plane: then an arbitrary (deterministic) perpendicular of the upper bone.
    """
    _, m, lo = joints
    d1 = np.asarray(skeleton.offsets[m], dtype=np.float64)
    d2 = np.asarray(skeleton.offsets[lo], dtype=np.float64)
    n = np.cross(d1, d2)
    scale = float(np.linalg.norm(d1) * np.linalg.norm(d2))
    if scale > 0 and np.linalg.norm(n) > 1e-9 * scale:
        return np.asarray(n / np.linalg.norm(n))
    if np.linalg.norm(d1) > 0:
        return _perpendicular(d1)
    return np.array([1.0, 0.0, 0.0])


def estimate_hinge_axis(
    skeleton: Skeleton, limb_joints: tuple[int, int, int] | Limb, rotations: ArrayLike
) -> Array:
    """The principal rotation axis of a middle joint over a clip.

    The dominant eigenvector of the second-moment matrix ``Σ v vᵀ`` of the
    middle joint's local rotation vectors ``v = log(q_mid)``, oriented so that
    the mean bend is positive: the mean of ``v · a`` (≈ the hinge angle, from the
    rest pose) plus the rest pose's own bend about ``a`` (the signed angle from the
    upper bone to the lower one), flexion positive for a clip that mostly flexes, as
    :func:`solve_limb` bends (a character standing with its knees bent at rest, so
    that the clip's straight legs turn its knees back from rest, is not bent
    backwards). The share of
    the rotation-vector energy along it, ``Σ (v·a)² / Σ |v|²``, says how well
    the joint behaves as a hinge (0.97 for the knees of ``lafan_walk.bvh``,
    0.99 for its elbows). A joint that never turns gives the rest-pose estimate
    (normal of the limb plane).

    Parameters
    ----------
    skeleton : Skeleton
    limb_joints : (upper, middle, lower) or Limb
        Joint indices.
    rotations : array_like, shape (F, J, 4)
        Local rotations of a clip (any leading axes are pooled).

    Returns
    -------
    ndarray, shape (3,)
        Unit axis in the upper joint's frame.
    """
    joints = limb_joints.joints if isinstance(limb_joints, Limb) else tuple(limb_joints)
    if len(joints) != 3:
        raise ValueError(f"Expected three joints (upper, middle, lower), got {joints}")
    m = int(joints[1])
    rotations = as_batch(rotations, (skeleton.num_joints, 4), "rotations")
    v = quat.log(rotations[..., m, :]).reshape(-1, 3)
    moment = v.T @ v
    if not np.isfinite(moment).all() or np.trace(moment) <= 1e-24 * max(len(v), 1):
        return _rest_hinge_axis(skeleton, (int(joints[0]), m, int(joints[2])))
    _, vectors = np.linalg.eigh(moment)
    axis = vectors[:, -1]
    d1 = np.asarray(skeleton.offsets[m], dtype=np.float64)
    d2 = np.asarray(skeleton.offsets[int(joints[2])], dtype=np.float64)
    rest_bend = np.arctan2(axis @ np.cross(d1, d2), d1 @ d2)
    if np.mean(v @ axis) + rest_bend < 0:
        axis = -axis
    return np.asarray(axis / np.linalg.norm(axis))


def _mean_rotation(q: Array) -> Array:
    """The rotation nearest the quaternions ``q (N, 4)`` on average (Markley et al. 2007)."""
    _, vectors = np.linalg.eigh(q.T @ q)
    return np.asarray(quat.canonical(vectors[:, -1]))


def limb_from_roles(
    skeleton: Skeleton,
    roles: Mapping[str, int],
    side: str,
    kind: str,
    motion: Motion | None = None,
) -> Limb:
    """The limb ``side`` ``kind`` of a humanoid, from its roles
    (:func:`retarget.humanoid.roles.find_roles`).

    The joints are the roles ``{side}_hip, _knee, _ankle`` (legs) or
    ``{side}_shoulder, _elbow, _wrist`` (arms). The hinge axis:

    * a middle joint with exactly one rotation channel (ASF ``dof rx``): that
      channel's axis ``rotate(skeleton.axes[middle], e_channel)``, with the
      skeleton's limits for that channel; the hinge angle is then the channel
      angle, with the file's sign, or both turned round where the range reaches
      further below 0 than above (flexion positive, module docstring);
    * otherwise (3-DOF BVH knees): :func:`estimate_hinge_axis` over ``motion``
      when given; without a motion, the normal of the rest pose's limb plane
      (rest bend positive), or an arbitrary perpendicular of the upper bone
      when the rest limb is straight (lafan's is: pass a motion). No limits.

    The swivel reference (:attr:`Limb.swivel_reference`) is the mean upper-joint
    rotation over ``motion``, or the rest pose without one.

    Parameters
    ----------
    skeleton : Skeleton
    roles : Roles or mapping of role name to joint index
    side : {"left", "right"}
    kind : {"leg", "arm"}
    motion : Motion, optional
        A clip of this skeleton to estimate the axis and swivel reference from.

    Returns
    -------
    Limb
    """
    if side not in _SIDES:
        raise ValueError(f"Expected side in {_SIDES}, got {side!r}")
    if kind not in LIMB_ROLES:
        raise ValueError(f"Expected kind in {tuple(LIMB_ROLES)}, got {kind!r}")
    joints: list[int] = []
    for role in LIMB_ROLES[kind]:
        key = f"{side}_{role}"
        try:
            joints.append(int(roles[key]))
        except KeyError:
            raise RetargetError(
                f"role {key!r} not found; roles: {', '.join(map(str, roles))}"
            ) from None
    u, m, lo = joints
    if motion is not None and motion.skeleton.num_joints != skeleton.num_joints:
        raise ValueError(
            f"Expected a motion of this skeleton ({skeleton.num_joints} joints), "
            f"got {motion.skeleton.num_joints} joints"
        )
    probe = Limb(u, m, lo, hinge_axis=np.array([1.0, 0.0, 0.0]))
    _check_limb(skeleton, probe)
    mask = skeleton.dof_mask[m]
    if mask.sum() == 1:
        k = int(np.argmax(mask))
        axis = quat.rotate(skeleton.axes[m], np.eye(3)[k])
        limits = skeleton.limits[m, k]
        if -limits[0] > limits[1]:  # its range bends it the negative way: flexion negative
            axis, limits = -axis, -limits[::-1]
    else:
        if motion is not None:
            axis = estimate_hinge_axis(skeleton, (u, m, lo), motion.rotations)
        else:
            axis = _rest_hinge_axis(skeleton, (u, m, lo))
        limits = np.array([-np.inf, np.inf])
    reference = quat.identity() if motion is None else _mean_rotation(motion.rotations[:, u])
    return Limb(u, m, lo, axis, limits, kind=kind, side=side, swivel_reference=reference)


# -- the solver -----------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _joint_skeleton(skeleton: Skeleton, joint: int) -> Skeleton:
    """A one-joint skeleton with the channels, axis and limits of ``joint`` (for dofs)."""
    return Skeleton(
        (skeleton.names[joint],),
        np.array([-1]),
        np.zeros((1, 3)),
        (tuple(c for c in skeleton.channels[joint] if c.endswith("rotation")),),
        axes=skeleton.axes[joint : joint + 1],
        limits=skeleton.limits[joint : joint + 1],
    )


def free_joint(skeleton: Skeleton, joint: int) -> bool:
    """Whether ``joint`` turns freely: three rotation channels and no finite limit, so
    that any rotation is allowed (its orientation goal needs no projection onto
    channels or limits, :func:`retarget.core.dofs.clamp_to_limits`)."""
    return bool(skeleton.dof_mask[joint].all() and np.isinf(skeleton.limits[joint]).all())


def _on_arc(x: ArrayLike, lo: Array, width: float) -> tuple[Array, Array]:
    """Angles ``x`` moved by multiples of 2π into ``[lo, lo + 2π)``, and their distance
    (radians, ≥ 0) from the arc ``[lo, lo + width]``."""
    y = lo + np.mod(np.subtract(x, lo), _TWO_PI)
    over = y - lo - width
    return y, np.where(over <= 0.0, 0.0, np.minimum(over, _TWO_PI - (y - lo)))


def _clamp_to_arc(x: ArrayLike, lo: Array | float, width: float) -> Array:
    """Angles ``x`` on the arc ``[lo, lo + width]`` (mod 2π); outside it, its nearer end."""
    y = lo + np.mod(np.subtract(x, lo), _TWO_PI)
    over = y - lo - width
    nearer_hi = over < _TWO_PI - (y - lo)
    return np.asarray(np.where(over <= 0.0, y, np.where(nearer_hi, lo + width, lo)))


def soft_reach(distance: ArrayLike, reach: ArrayLike, softness: float) -> Array:
    """The distance a soft limb stretches to for a goal at ``distance`` (length unit).

    Near full extension the hinge angle of a two-bone limb changes without
    bound per unit of goal distance (``dφ/dL = 1 / (l sin(φ/2))`` for equal
    bones), so a goal crossing the limb's reach makes the knee or elbow snap.
    Within ``s · reach`` of the reach the distance is eased instead,
    ``L' = k + s·reach·(1 − exp(−(L − k) / (s·reach)))`` with
    ``k = (1 − s)·reach``: continuous with its first derivative at ``k``,
    increasing, and never reaching ``reach`` (the limb stays bent by at least
    a little; the shortfall at ``L = reach`` is ``s·reach/e``). Below ``k``
    ``L' = L``. Shapes broadcast; ``softness`` in [0, 1).
    """
    if not 0.0 <= softness < 1.0:
        raise ValueError(f"Expected softness in [0, 1), got {softness}")
    dist = np.asarray(distance, dtype=np.float64)
    zone = softness * np.asarray(reach, dtype=np.float64)
    knee = np.asarray(reach, dtype=np.float64) - zone
    over = np.maximum(dist - knee, 0.0) / np.where(zone > 0.0, zone, 1.0)
    return np.asarray(np.where(dist > knee, knee + zone * -np.expm1(-over), dist))


def _solve_hinge(
    g: LimbGeometry,
    limits: Array,
    h2: Array,
    r2: Array,
    beta_ref: Array,
    theta_ref: Array,
    length_goal: Array,
    softness: float = 0.0,
) -> tuple[Array, Array, NDArray[np.bool_], Array]:
    """Step 1: the hinge turn Δ, the reached distance L, the ``clamped`` flag and ``L_max``.

    Lee & Shin 1999, eq. (7) in the signed form of the module docstring:
    ``cos β = (L² − K) / (2 r1 r2)``, ``K = l1² + l2² + 2 h1 h2``. With
    ``softness`` s > 0 the goal distance is first passed through
    :func:`soft_reach`.
    """
    rr = g.r1 * r2
    k = g.l1 * g.l1 + g.l2 * g.l2 + 2.0 * g.h1 * h2  # not l**2: a scalar rounds otherwise
    lo, hi = float(limits[0]), float(limits[1])
    full = not (hi - lo < _TWO_PI)
    degenerate = rr <= DEGENERATE * g.l1 * g.l2
    if full:
        c_min: Array | float = -1.0
        c_max: Array | float = 1.0
        theta_keep = theta_ref
    else:
        width = hi - lo
        beta_lo = lo + (beta_ref - theta_ref)  # β = θ + (β_ref − θ_ref)
        # range of cos β over the allowed arc [β_lo, β_lo + width]
        _, d_zero = _on_arc(0.0, beta_lo, width)
        _, d_pi = _on_arc(np.pi, beta_lo, width)
        c_lo, c_hi = np.cos(beta_lo), np.cos(beta_lo + width)
        c_max = np.where(d_zero == 0.0, 1.0, np.maximum(c_lo, c_hi))
        c_min = np.where(d_pi == 0.0, -1.0, np.minimum(c_lo, c_hi))
        theta_keep = _clamp_to_arc(theta_ref, lo, width)
    if degenerate.any():
        # the hinge does not move the lower joint: keep it (within its limits)
        c_keep = np.cos(theta_keep + (beta_ref - theta_ref))
        c_min = np.where(degenerate, c_keep, c_min)
        c_max = np.where(degenerate, c_keep, c_max)
        rr_safe = np.where(degenerate, 1.0, rr)
    else:
        rr_safe = rr

    length_min = np.sqrt(np.maximum(k + 2.0 * rr * c_min, 0.0))
    length_max = np.sqrt(np.maximum(k + 2.0 * rr * c_max, 0.0))
    if softness > 0.0:
        length_goal = soft_reach(length_goal, length_max, softness)
    clamped = (length_goal < length_min) | (length_goal > length_max)
    length = np.clip(length_goal, length_min, length_max)

    # eq. (7): cos φ = (l1² + l2² + 2 h1 h2 − L²) / (2 r1 r2), and β = ±(π − φ)
    c = np.clip((length * length - k) / (2.0 * rr_safe), c_min, c_max)
    b = np.arccos(np.clip(c, -1.0, 1.0))
    # always the flexion side (the axis is oriented so that flexion is positive): the
    # side nearer the reference would flip the whole bend b wherever a reference passes
    # through straight (β_ref crossing 0), a one-frame pop of the knee (elbow)
    beta = b
    if not full:
        _, dist_keep = _on_arc(beta, beta_lo, width)
        _, dist_flip = _on_arc(-beta, beta_lo, width)
        beta = np.where(dist_keep > np.maximum(dist_flip, ARC_TOL), -beta, beta)
        beta = _clamp_to_arc(beta, beta_lo, width)  # rounding of arccos onto the arc
    delta = _wrap(beta - beta_ref)
    if degenerate.any():
        delta = np.where(degenerate, theta_keep - theta_ref, delta)
    return delta, length, clamped, length_max


def solve_limb(
    skeleton: Skeleton,
    limb: Limb,
    root_position: ArrayLike,
    rotations: ArrayLike,
    goal: ArrayLike,
    *,
    orientation: ArrayLike | None = None,
    swivel: ArrayLike = 0.0,
    swivel_mode: str = "relative",
    translations: ArrayLike | None = None,
    softness: float = 0.0,
) -> LimbSolution:
    """Place the lower joint of a limb at ``goal`` (Lee & Shin 1999, section 5.3).

    Starting from the reference pose ``(root_position, rotations)``:

    1. the middle joint turns about the hinge axis, ``q_mid ← exp(Δ a) ⊗ q_mid``,
       so that the upper–lower distance is ``L = |goal − p_upper|`` clamped to
       the reachable range (eq. 7; module docstring), keeping the bending
       direction of the reference and the hinge limits;
    2. the upper joint turns by the shortest world rotation bringing the lower
       joint onto the ray from the upper joint to the goal, then by ``swivel``
       about that ray (``swivel_mode``; module docstring, "Swivel angle");
    3. with ``orientation``, the lower joint's local rotation becomes
       ``(world rotation of the middle joint)⁻¹ ⊗ orientation``, projected on
       its channels and limits (:func:`retarget.core.dofs.clamp_to_limits`); without
       it, the reference local rotation is kept.

    Parameters
    ----------
    skeleton : Skeleton
    limb : Limb
    root_position : array_like, shape (..., 3)
    rotations : array_like, shape (..., J, 4)
        The reference poses (local rotations).
    goal : array_like, shape (..., 3)
        World position goals of the lower joint; NaN leaves the element unchanged.
    orientation : array_like, shape (..., 4), optional
        World rotation goals of the lower joint's frame; NaN ones are ignored.
    swivel : array_like, shape (...)
        Elbow-circle angle (radians), about the ray from the upper joint to the goal.
    swivel_mode : {"relative", "absolute", "nearest"}
        ``"relative"``: ``swivel`` is measured from the solution nearest the
        reference (0 = shortest rotation of the upper joint). ``"absolute"``:
        the result's :func:`swivel_angle` is ``swivel``. ``"nearest"``:
        measured from the swivel whose upper-joint rotation is geodesically
        closest to the reference's (Shin et al. 2001, eqs. 21-23).
    translations : array_like, shape (..., J, 3), optional
        Per-pose local joint offsets replacing ``skeleton.offsets`` (a character
        whose proportions change over a clip,
        :attr:`retarget.core.motion.Motion.translations`): each element is solved
        with its own bone lengths (``l1, l2, r1, h1`` of eq. 7 per element).
    softness : float
        Fraction of the reach over which a goal near full extension is eased
        (:func:`soft_reach`; 0, the default, reaches exactly). The lower joint
        then stops short of goals in that band and ``residual`` says by how
        much.

    Returns
    -------
    LimbSolution

    Examples
    --------
    >>> from retarget import Skeleton
    >>> sk = Skeleton(("pelvis", "hip", "knee", "ankle"), [-1, 0, 1, 2],
    ...               [[0, 0, 0], [10, 0, 0], [0, -40, 0], [0, -40, 0]])
    >>> leg = Limb(1, 2, 3, hinge_axis=[1, 0, 0], hinge_limits=[0, 2.8])
    >>> sol = solve_limb(sk, leg, [0, 100, 0], quat.identity(4), goal=[10, 40, 20])
    >>> np.round(sol.reached, 9).tolist(), float(sol.residual), bool(sol.clamped)
    ([10.0, 40.0, 20.0], 0.0, False)
    >>> far = solve_limb(sk, leg, [0, 100, 0], quat.identity(4), goal=[10, 0, 0])
    >>> np.round(far.reached, 9).tolist(), float(far.residual), bool(far.clamped)
    ([10.0, 20.0, 0.0], 20.0, True)
    """
    if swivel_mode not in _SWIVEL_MODES:
        raise ValueError(f"Expected swivel_mode in {_SWIVEL_MODES}, got {swivel_mode!r}")
    if not 0.0 <= softness < 1.0:
        raise ValueError(f"Expected softness in [0, 1), got {softness}")
    _check_limb(skeleton, limb)
    n_joints = skeleton.num_joints
    rotations = as_batch(rotations, (n_joints, 4), "rotations")
    root_position = as_batch(root_position, (3,), "root_position")
    goal = as_batch(goal, (3,), "goal")
    swivel = np.asarray(swivel, dtype=np.float64)
    if not np.isfinite(swivel).all():
        raise ValueError("`swivel` must be finite")
    shapes = [rotations.shape[:-2], root_position.shape[:-1], goal.shape[:-1], swivel.shape]
    if orientation is not None:
        orientation = as_batch(orientation, (4,), "orientation")
        shapes.append(orientation.shape[:-1])
    if translations is not None:
        translations = as_batch(translations, (n_joints, 3), "translations")
        shapes.append(translations.shape[:-2])
    try:
        batch = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"Batch shapes do not broadcast: {shapes}") from None
    rotations = np.broadcast_to(rotations, (*batch, n_joints, 4))
    root_position = np.broadcast_to(root_position, (*batch, 3))
    goal = np.broadcast_to(goal, (*batch, 3))
    if translations is not None:
        translations = np.broadcast_to(translations, (*batch, n_joints, 3))

    g = limb_geometry(skeleton, limb, translations)
    u, m, lo = limb.joints
    if (
        _COMPILED
        and swivel_mode == "relative"
        and (orientation is None or free_joint(skeleton, lo))
    ):
        return _solve_rows(skeleton, limb, g, root_position, rotations, goal, orientation,
                           swivel, translations, softness, batch)  # fmt: skip
    a = g.a
    q_up = np.ascontiguousarray(rotations[..., u, :])  # contiguous: faster algebra
    q_mid = np.ascontiguousarray(rotations[..., m, :])
    w_parent, p_upper = _upper_frame(skeleton, root_position, rotations, u, translations)

    # the goal in the upper joint's parent frame, from the upper joint
    valid = np.isfinite(goal).all(axis=-1)
    all_valid = bool(valid.all())
    goal_local = quat.rotate(quat.conjugate(w_parent), goal - p_upper)
    d2 = quat.rotate(q_mid, g.off2)  # middle -> lower, upper frame
    if not all_valid:  # NaN goal: aim at where the lower joint is (then keep the input)
        here = quat.rotate(q_up, g.d1 + d2)
        goal_local = np.where(valid[..., None], goal_local, here)
    length_goal = _norm(goal_local)

    # (1) middle joint: eq. (7)
    h2 = d2 @ a
    r2 = np.sqrt(np.maximum(g.l2 * g.l2 - h2 * h2, 0.0))
    beta_ref = np.arctan2(_dot(d2, g.t), _dot(d2, g.s))  # signed angle from the stretched direction
    theta_ref = _twist(q_mid, a)  # hinge angle
    delta, length, clamped, length_max = _solve_hinge(
        g, limb.hinge_limits, h2, r2, beta_ref, theta_ref, length_goal, softness
    )
    q_mid_new = quat.multiply(_axis_quat(a, delta), q_mid)
    # the lower bone turned by Δ about a (Rodrigues), and the limb upper -> lower
    cos_d, sin_d = np.cos(delta)[..., None], np.sin(delta)[..., None]
    along = h2[..., None] * a
    w_limb = g.d1 + along + cos_d * (d2 - along) + sin_d * (d2 @ g.a_cross)

    # (2) upper joint: shortest rotation onto the ray, then the swivel about it
    v_dir, _ = _unit(quat.rotate(q_up, w_limb), np.array([1.0, 0.0, 0.0]))
    n_dir, _ = _unit(goal_local, v_dir)  # goal at the upper joint: keep the direction
    if swivel_mode == "relative":
        q_up_new = quat.multiply(quat.quat_between(v_dir, n_dir), q_up)
    else:
        ref = limb.swivel_reference
        w_dir, _ = _unit(w_limb, v_dir)
        q_up_new = quat.multiply(quat.quat_between(quat.rotate(ref, w_dir), n_dir), ref)
    if swivel_mode == "nearest":  # Shin et al. 2001, eqs. (21)-(23)
        pure_n = np.concatenate([np.zeros((*n_dir.shape[:-1], 1)), n_dir], axis=-1)
        n_q0 = quat.multiply(pure_n, q_up_new)
        theta = 2.0 * np.arctan2((q_up * n_q0).sum(-1), (q_up * q_up_new).sum(-1))
        q_up_new = quat.multiply(_axis_quat(n_dir, theta), q_up_new)
    if swivel_mode == "absolute" or np.any(swivel != 0.0):
        q_up_new = quat.multiply(_axis_quat(n_dir, np.broadcast_to(swivel, batch)), q_up_new)

    out = np.array(rotations)  # a writable copy
    if all_valid:
        out[..., u, :] = q_up_new
        out[..., m, :] = q_mid_new
        residual = np.abs(length_goal - length)
    else:
        out[..., u, :] = np.where(valid[..., None], q_up_new, q_up)
        out[..., m, :] = np.where(valid[..., None], q_mid_new, q_mid)
        w_limb = np.where(valid[..., None], w_limb, g.d1 + d2)
        residual = np.where(valid, np.abs(length_goal - length), 0.0)
        clamped = clamped & valid
    w_upper = quat.multiply(w_parent, out[..., u, :])  # world rotation of the upper joint
    reached = p_upper + quat.rotate(w_upper, w_limb)

    # (3) lower joint: the goal orientation, on the joint's DOFs
    orientation_residual = np.zeros(batch)
    orientation_error = np.zeros((*batch, 3))
    if orientation is not None:
        orientation = np.broadcast_to(orientation, (*batch, 4))
        use = valid & np.isfinite(orientation).all(axis=-1)
        w_mid = quat.multiply(w_upper, out[..., m, :])
        q_low = rotations[..., lo, :]
        target = np.where(use[..., None], orientation, quat.multiply(w_mid, q_low))
        local = quat.multiply(quat.conjugate(w_mid), target)
        if not free_joint(skeleton, lo):
            local = clamp_to_limits(_joint_skeleton(skeleton, lo), local[..., None, :])[..., 0, :]
        out[..., lo, :] = np.where(use[..., None], local, q_low)
        achieved = quat.multiply(w_mid, out[..., lo, :])
        orientation_residual = np.where(use, quat.angle(achieved, target), 0.0)
        missed = quat.log(quat.multiply(quat.conjugate(target), achieved))
        orientation_error = np.where(use[..., None], missed, 0.0)

    return LimbSolution(
        rotations=out,
        reached=reached,
        residual=residual,
        orientation_residual=orientation_residual,
        clamped=np.asarray(clamped, dtype=bool),
        extension=np.where(valid, length_goal / np.maximum(length_max, 1e-300), 0.0),
        orientation_error=orientation_error,
    )


def _solve_rows(
    skeleton: Skeleton,
    limb: Limb,
    g: LimbGeometry,
    root_position: Array,
    rotations: Array,
    goal: Array,
    orientation: Array | None,
    swivel: Array,
    translations: Array | None,
    softness: float,
    batch: tuple[int, ...],
) -> LimbSolution:
    """:func:`solve_limb` by the compiled rows (:mod:`retarget.ik._kernels.limb`)."""
    u, m, lo = limb.joints
    n = int(np.prod(batch, dtype=np.int64))
    w_parent, p_upper = _upper_frame(skeleton, root_position, rotations, u, translations)
    flat = rotations.reshape(n, skeleton.num_joints, 4)

    def rows(x: Array, size: int) -> Array:  # a field shared or per row, as (G, size)
        return np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1, size))

    lo_limit, hi_limit = (float(v) for v in limb.hinge_limits)
    geometry = (
        np.ascontiguousarray(g.a, dtype=np.float64),
        rows(g.d1, 3), rows(g.off2, 3), rows(g.h1, 1)[:, 0], rows(g.r1, 1)[:, 0],
        rows(g.l1, 1)[:, 0], rows(g.l2, 1)[:, 0], rows(g.s, 3), rows(g.t, 3),
        lo_limit, hi_limit,
    )  # fmt: skip
    oriented = orientation is not None
    goals = (
        np.zeros((1, 4))
        if orientation is None
        else rows(np.broadcast_to(orientation, (*batch, 4)), 4)
    )
    out = np.empty((n, 3, 4))
    reached = np.empty((n, 3))
    info = np.empty((n, 4))
    error = np.empty((n, 3))
    _kernels().solve_rows(
        np.ascontiguousarray(flat[:, u]), np.ascontiguousarray(flat[:, m]),
        np.ascontiguousarray(flat[:, lo]), rows(w_parent, 4), rows(p_upper, 3),
        rows(goal, 3), goals, oriented,
        rows(np.broadcast_to(swivel, batch), 1)[:, 0], geometry, float(softness),
        out, reached, info, error,
    )  # fmt: skip
    new = np.array(rotations)  # a writable copy
    new[..., [u, m, lo], :] = out.reshape(*batch, 3, 4)
    return LimbSolution(
        rotations=new,
        reached=reached.reshape(*batch, 3),
        residual=info[:, 0].reshape(batch),
        orientation_residual=info[:, 1].reshape(batch),
        clamped=(info[:, 2] > 0.5).reshape(batch),
        extension=info[:, 3].reshape(batch),
        orientation_error=error.reshape(*batch, 3),
    )


def limb_reach(
    skeleton: Skeleton,
    limb: Limb,
    root_position: ArrayLike,
    rotations: ArrayLike,
    translations: ArrayLike | None = None,
) -> Array:
    """``L_max``: the farthest the lower joint gets from the upper one, per pose.

    Eq. (7) at the straightest hinge angle the limits allow (module docstring,
    "Reach"), with the middle joint's swing of each pose: ``√((h1 + h2)² + (r1 + r2)²)``
    when full extension is allowed, at most the bone-path length ``l1 + l2`` and
    below it when the hinge axis is not square to the bones.

    Parameters
    ----------
    skeleton, limb, root_position, rotations, translations
        The poses (..., J) and their optional offsets, as in :func:`solve_limb`.

    Returns
    -------
    ndarray, shape (...)
    """
    rotations = as_batch(rotations, (skeleton.num_joints, 4), "rotations")
    root_position = as_batch(root_position, (3,), "root_position")
    _, p_upper = _upper_frame(
        skeleton,
        root_position,
        rotations,
        limb.upper,
        None if translations is None else as_batch(translations, (skeleton.num_joints, 3), "t"),
    )
    far = p_upper + np.array([0.0, -1.0, 0.0]) * 1e3 * (1.0 + np.abs(p_upper).max(initial=0.0))
    sol = solve_limb(skeleton, limb, root_position, rotations, far, translations=translations)
    distance = np.linalg.norm(far - p_upper, axis=-1)
    return np.asarray(distance / np.maximum(sol.extension, 1e-300))


def swivel_angle(
    skeleton: Skeleton, limb: Limb, root_position: ArrayLike, rotations: ArrayLike
) -> Array:
    """The elbow-circle (swivel) angle of poses, in (−π, π].

    In the upper joint's parent frame, with ``ŵ`` the limb direction (upper →
    lower) in the upper joint's frame, ``n = q_upper ŵ`` and ``R0`` the limb's
    :attr:`Limb.swivel_reference`, the angle ψ with

    .. math:: q_{upper} = \\exp(ψ n) ⊗ \\mathrm{shortest}(R_0 ŵ → n) ⊗ R_0

    i.e. how far the elbow (knee) is turned about the upper–lower axis from
    where ``R0`` would put it. :func:`solve_limb` with ``swivel_mode="absolute"``
    and ``swivel=ψ`` gives a pose whose swivel angle is ψ; with the default
    relative mode and the reference's own lower-joint position as goal, the
    swivel angle grows by exactly ``swivel`` (module docstring, "Swivel angle").

    Parameters
    ----------
    skeleton : Skeleton
    limb : Limb
    root_position : array_like, shape (..., 3)
        Root positions (the angle does not depend on them; they broadcast).
    rotations : array_like, shape (..., J, 4)
        Local rotations.

    Returns
    -------
    ndarray, shape (...)
    """
    _check_limb(skeleton, limb)
    rotations = as_batch(rotations, (skeleton.num_joints, 4), "rotations")
    root_position = as_batch(root_position, (3,), "root_position")
    batch = np.broadcast_shapes(rotations.shape[:-2], root_position.shape[:-1])
    g = limb_geometry(skeleton, limb)
    q_up = rotations[..., limb.upper, :]
    w_limb = g.d1 + quat.rotate(rotations[..., limb.middle, :], g.off2)
    w_dir, _ = _unit(w_limb, np.array([1.0, 0.0, 0.0]))
    n_dir = quat.rotate(q_up, w_dir)
    ref = limb.swivel_reference
    base = quat.multiply(quat.quat_between(quat.rotate(ref, w_dir), n_dir), ref)
    turn = quat.multiply(q_up, quat.conjugate(base))  # a rotation about n
    return np.broadcast_to(_twist(turn, n_dir), batch).copy()
