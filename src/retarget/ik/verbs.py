"""Verbs and adverbs: inverse kinematics by blending examples (Rose, Sloan & Cohen 2001).

A **verb** is a set of examples — poses, or motions with keytimes — each at a
point ``p_i`` of an abstract space of D **adverbs**. At any ``p`` the verb
blends them with the cardinal basis (:mod:`retarget.ik.rbf`, eqs. 2–3), so the
result keeps the examples' style and costs a few small matrix products.

* **DOFs** (the library's one tangent space, DESIGN.md): an example frame is
  ``ref ⊖ frame`` restricted to the verb's joints, ``(root translation, one
  rotation vector per blended joint)`` about a reference pose whose blended
  joints take the examples' mean rotation; a blend is ``ref ⊕ Σ w_i x_i``, a
  valid pose for any weights (rotation vectors exponentiate to unit
  quaternions), clamped into the skeleton's joint limits where it has any.
* **keytimes** (section 3): each motion example is time-warped to a
  canonical time by its keytimes (key ``m`` at canonical ``m``, linear in
  between); the keytimes are blended too and undo the warp
  (:meth:`Verb.motion`). A pose example is a motion of one frame with one key.
  An example's curves are piecewise linear through its own frames, so every
  example is reproduced exactly at its own point, poses and motions alike.
* **IK adverbs** (section 4): the adverb of an example is its end-effector's
  position at the key ``key``, relative to the ``base`` joint, in a fixed
  ``frame`` (:class:`EndEffector`), measured on the example (``adverbs=None``
  in :func:`build_verb`).
* **measuring** (section 4.1, :func:`error_map`): a regular grid over the
  examples' bounding box, points outside their convex hull dropped (the verb's
  working volume), ``|x_e(p) − p|`` as % of the verb's ``scale`` (its limb's
  reach);
* **search for p′** (section 4.2, :func:`search_adverb`): a line search from
  ``p`` against the error vector, iterated, all goals at once;
* **pseudo-examples** (section 4.3, :func:`refine`): at the worst grid point
  ``p`` insert ``x(p′)``, the blend of the verb's initial space (its examples
  alone, "the initial interpolation space designed by the artist") at the
  ``p′`` that puts the effector on ``p``; ``p′`` is found once for every grid
  point and kept continuous from point to point; the new centre's radius
  follows the examples' rule and the radial weights are solved again, old
  hyperplanes and radii kept (:func:`retarget.ik.rbf.insert_centre`). The
  refined blend is then accurate across the working volume, between the grid
  points too, with no search at run time; **hybrid**: the same
  pseudo-examples, then the search at every query from the refined blend; an
  optional exact IK **polish** (:func:`polish`, Levenberg–Marquardt on the
  blended joints from the blend).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits

from ..core import quat
from ..core.arrays import Array
from ..core.dofs import clamp_to_limits
from ..core.kinematics import forward_kinematics
from ..core.motion import Motion, oplus_joints
from ..core.optimize import levenberg_marquardt
from ..core.skeleton import Skeleton
from .rbf import CardinalBasis, cardinal_basis, insert_centre

__all__ = [
    "EndEffector",
    "ErrorMap",
    "Verb",
    "VerbExample",
    "VerbSolution",
    "build_verb",
    "convex_goals",
    "error_map",
    "polish",
    "pprime_field",
    "refine",
    "search_adverb",
    "verb_arrays",
    "verb_from_arrays",
]


@dataclass(frozen=True)
class VerbExample:
    """One example: a motion (or one pose) and its keytimes.

    Attributes
    ----------
    root_position : ndarray, shape (F, 3)
    rotations : ndarray, shape (F, J, 4)
    keytimes : tuple of float
        Frames (0-based, increasing) of the verb's keys in this example; ``(0,)``
        for a pose.
    adverb : tuple of float, optional
        The example's point in the abstract space; measured when absent.
    """

    root_position: Array
    rotations: Array
    keytimes: tuple[float, ...] = (0.0,)
    adverb: tuple[float, ...] | None = None


@dataclass(frozen=True, eq=False)
class EndEffector:
    """What an IK adverb measures: ``axes`` of ``R_frameᵀ (x_end − x_base)``.

    Attributes
    ----------
    point : int
        The end-effector (joint or site).
    base : int
        The joint the position is taken from (not moved by the blended joints).
    frame : ndarray, shape (4,)
        World-from-adverb rotation (w, x, y, z).
    axes : tuple of int
        Which coordinates of the position are the adverbs, e.g. ``(0, 1)``.
    """

    point: int
    base: int
    frame: Array
    axes: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Verb:
    """A verb: examples blended by a cardinal basis (module docstring).

    Attributes
    ----------
    skeleton : Skeleton
    reference_root : ndarray, shape (3,)
    reference_rotations : ndarray, shape (J, 4)
        The pose the blends are displacements of; the joints not blended stay here.
    joints : ndarray of int, shape (B,)
        The blended joints.
    curves : tuple of ndarray, shape (F_i, 3 + 3B)
        Each example's frames in the tangent space about the reference.
    keytimes : ndarray, shape (N, K)
    basis : CardinalBasis
        Over the adverbs; its first N centres are the examples' points.
    fps : float
    effector : EndEffector, optional
        For IK verbs.
    key : int
        The key at which the effector is measured.
    scale : float
        The length the errors are shares of (the limb's reach), skeleton unit.
    search : int
        Iterations of the p′ search at every query (:meth:`solve`): 0, or the
        hybrid verb's runtime search (:func:`refine` with ``hybrid``).
    """

    skeleton: Skeleton
    reference_root: Array
    reference_rotations: Array
    joints: NDArray[np.intp]
    curves: tuple[Array, ...]
    keytimes: Array
    basis: CardinalBasis
    fps: float = 30.0
    effector: EndEffector | None = None
    key: int = 0
    scale: float = 1.0
    search: int = 0

    @property
    def adverbs(self) -> Array:
        """The examples' points (N, D)."""
        return self.basis.centres[: self.basis.examples]

    @property
    def pseudo_examples(self) -> int:
        return len(self.basis.centres) - self.basis.examples

    @cached_property
    def unrefined(self) -> Verb:
        """The verb of its examples alone (its initial space: the cardinal basis of the
        examples' points, no pseudo-examples)."""
        if not self.pseudo_examples:
            return self
        return replace(self, basis=cardinal_basis(self.adverbs), search=0)

    @cached_property
    def limited(self) -> bool:
        """Whether a blend can leave the blended joints' valid poses: finite limits on
        their channels, or two rotation channels (a blend of rotation vectors of
        such joints need not be a rotation about those two axes; one channel, a
        hinge, and three stay valid)."""
        return _limited(self.skeleton, self.joints)

    @cached_property
    def _at_key(self) -> Array:
        return self.at_key(self.key)

    def at_key(self, key: int | None = None) -> Array:
        """Every example's DOFs at a key (N, 3 + 3B)."""
        if key is None:
            return self._at_key
        m = key
        return np.stack(
            [
                _sample(c, np.array([k[m]]))[0]
                for c, k in zip(self.curves, self.keytimes, strict=True)
            ]
        )

    def dofs(self, points: ArrayLike, key: int | None = None) -> Array:
        """Eq. (3) at a key: the blended DOFs (..., 3 + 3B) at adverbs (..., D)."""
        return np.asarray(self.basis.weights(points) @ self.at_key(key))

    def pose(self, dofs: ArrayLike) -> tuple[Array, Array]:
        """``ref ⊕ dofs``: root (..., 3) and every joint's rotation (..., J, 4), limits
        enforced."""
        ref = self.reference_rotations
        return _posed(self.skeleton, self.reference_root, ref, self.joints, dofs, self.limited)

    def measure(self, root: ArrayLike, rotations: ArrayLike) -> Array:
        """The effector's adverbs (..., D) of poses."""
        if self.effector is None:
            raise ValueError("this verb has no end-effector: its adverbs are not IK goals")
        return _measured(self.skeleton, self.effector, root, rotations)

    def achieved(self, points: ArrayLike) -> Array:
        """``x_e(p)`` (..., D): where the blend at ``points`` puts the effector."""
        return self.measure(*self.pose(self.dofs(points)))

    def solve(
        self, goals: ArrayLike, *, search: int | None = None, exact: bool = False
    ) -> VerbSolution:
        """IK by the verb: the pose (at the key) whose effector is at ``goals`` (..., D).

        ``search`` iterations of the p′ search (section 4.2; default the verb's
        own, :attr:`search`), then, with ``exact``, the IK polish."""
        g = np.asarray(goals, dtype=np.float64)
        count = self.search if search is None else search
        p = search_adverb(self, g, count) if count else g
        root, rot = self.pose(self.dofs(p))
        if exact:
            root, rot = polish(self, root, rot, g)
        return VerbSolution(root, rot, p, self.measure(root, rot))

    def motion(self, point: ArrayLike) -> Motion:
        """The blended motion at one adverb point (D,): DOF curves and keytimes blended,
        the keytimes' warp undone (section 3)."""
        w = self.basis.weights(np.asarray(point, dtype=np.float64))
        keys = np.maximum.accumulate(w @ self.keytimes)  # a blend of increasing keys
        count = max(round(float(keys[-1] - keys[0])) + 1, 1)
        t = keys[0] + np.arange(count, dtype=np.float64)
        if len(keys) > 1:
            span = np.maximum(np.diff(keys), 1e-9)
            m = np.clip(np.searchsorted(keys, t, side="right") - 1, 0, len(keys) - 2)
            fraction = np.clip((t - keys[m]) / span[m], 0.0, 1.0)
        else:
            m, fraction = np.zeros(count, np.intp), np.zeros(count)
        x = sum(
            wi * _sample(c, k[m] + fraction * (k[np.minimum(m + 1, len(k) - 1)] - k[m]))
            for wi, c, k in zip(w, self.curves, self.keytimes, strict=True)
        )
        root, rot = self.pose(np.asarray(x))
        return Motion(self.skeleton, root, quat.normalize(rot), self.fps)


@dataclass(frozen=True, eq=False)
class VerbSolution:
    """A verb's answer to IK goals (:meth:`Verb.solve`).

    Attributes
    ----------
    root_position : ndarray, shape (..., 3)
    rotations : ndarray, shape (..., J, 4)
    adverbs : ndarray, shape (..., D)
        The point blended (``p′``; the goal itself without search).
    achieved : ndarray, shape (..., D)
        Where the effector is, in the adverbs' frame.
    """

    root_position: Array
    rotations: Array
    adverbs: Array
    achieved: Array


def _posed(
    skeleton: Skeleton,
    root: Array,
    rotations: Array,
    joints: NDArray[np.intp],
    dofs: ArrayLike,
    limited: bool,
) -> tuple[Array, Array]:
    """``(root, rotations) ⊕ dofs`` on the ``joints`` (the tangent space's convention),
    clamped into the skeleton's limits where it has any."""
    x = np.asarray(dofs, dtype=np.float64)
    turn = x[..., 3:].reshape(*x.shape[:-1], len(joints), 3)
    rot = oplus_joints(rotations, turn, joints)
    if limited:
        rot = clamp_to_limits(skeleton, rot)
    return root + x[..., :3], rot


def _limited(skeleton: Skeleton, joints: NDArray[np.intp]) -> bool:
    """:attr:`Verb.limited`."""
    channels = [len(skeleton.euler_orders[j]) for j in joints]
    return bool(np.isfinite(skeleton.limits[joints]).any() or 2 in channels)


def _measured(
    skeleton: Skeleton, effector: EndEffector, root: ArrayLike, rotations: ArrayLike
) -> Array:
    """``axes`` of ``R_frameᵀ (x_end − x_base)`` (..., D) of poses."""
    pos, _ = forward_kinematics(skeleton, root, rotations)
    offset = pos[..., effector.point, :] - pos[..., effector.base, :]
    local = quat.rotate(quat.conjugate(effector.frame), offset)
    return np.asarray(local[..., list(effector.axes)])


def _sample(curve: Array, times: Array) -> Array:
    """A piecewise linear curve (F, M) through frames 0..F−1 at ``times`` (T,) → (T, M)."""
    f = len(curve)
    if f == 1:
        return np.repeat(curve, len(times), axis=0)
    t = np.clip(times, 0.0, f - 1.0)
    i = np.minimum(np.floor(t).astype(np.intp), f - 2)
    u = (t - i)[:, None]
    return np.asarray((1.0 - u) * curve[i] + u * curve[i + 1])


def _mean_rotations(rotations: Array) -> Array:
    """Per joint, the normalised mean of quaternions (N, B, 4) aligned to the first."""
    sign = np.where(np.sum(rotations * rotations[:1], axis=-1, keepdims=True) < 0, -1.0, 1.0)
    return quat.normalize((rotations * sign).sum(axis=0))


def build_verb(
    skeleton: Skeleton,
    examples: Sequence[VerbExample],
    joints: Sequence[int],
    *,
    effector: EndEffector | None = None,
    key: int = 0,
    reference: tuple[ArrayLike, ArrayLike] | None = None,
    scale: float | None = None,
    fps: float = 30.0,
) -> Verb:
    """A verb from examples (section 3.1).

    Parameters
    ----------
    skeleton : Skeleton
    examples : sequence of VerbExample
        All with the same number of keytimes; adverbs given for all or none
        (none: measured by ``effector`` at ``key``).
    joints : sequence of int
        The joints blended; the others stay at the reference pose.
    effector : EndEffector, optional
    key : int
    reference : (root (3,), rotations (J, 4)), optional
        The pose of the joints not blended (default: the first example at ``key``).
    scale : float, optional
        Errors are shares of it (default: the path from ``base`` to the effector).
    fps : float
    """
    if len(examples) < 2:
        raise ValueError("a verb needs at least two examples")
    n_keys = {len(e.keytimes) for e in examples}
    if len(n_keys) != 1:
        raise ValueError(f"every example needs the same number of keytimes, got {sorted(n_keys)}")
    if not 0 <= key < n_keys.pop():
        raise ValueError(f"key {key} is not one of the examples' keys")
    j = np.asarray(list(joints), dtype=np.intp)
    if len(j) == 0 or len(set(j.tolist())) != len(j):
        raise ValueError("give the blended joints once each")
    keytimes = np.array([e.keytimes for e in examples], dtype=np.float64)
    for e, k in zip(examples, keytimes, strict=True):
        frames = len(e.root_position)
        if np.shape(e.rotations) != (frames, skeleton.num_joints, 4):
            raise ValueError(f"an example's rotations must be (F, {skeleton.num_joints}, 4)")
        if (np.diff(k) <= 0).any() or k[0] < 0 or k[-1] > frames - 1:
            raise ValueError(f"keytimes {k.tolist()} must increase within 0..{frames - 1}")
    at_key = [
        (
            _sample(np.asarray(e.root_position, float), k[key : key + 1])[0],
            quat.normalize(
                _sample(
                    np.asarray(e.rotations, float).reshape(len(e.rotations), -1), k[key : key + 1]
                )[0].reshape(-1, 4)
            ),
        )
        for e, k in zip(examples, keytimes, strict=True)
    ]
    if reference is None:
        ref_root, ref_rot = at_key[0]
    else:
        ref_root, ref_rot = (np.asarray(a, dtype=np.float64) for a in reference)
    ref_rot = np.array(ref_rot)
    ref_rot[j] = _mean_rotations(np.stack([r[j] for _, r in at_key]))
    curves = []
    for e in examples:
        rot = quat.normalize(np.asarray(e.rotations, dtype=np.float64)[:, j])
        turn = quat.log(quat.multiply(quat.conjugate(ref_rot[j]), rot))
        root = np.asarray(e.root_position, dtype=np.float64) - ref_root
        curves.append(np.concatenate([root, turn.reshape(len(rot), -1)], axis=1))
    given = [e.adverb is not None for e in examples]
    if all(given):
        points = np.array([e.adverb for e in examples], dtype=np.float64)
    elif any(given):
        raise ValueError("give every example an adverb, or none (measured by the effector)")
    elif effector is None:
        raise ValueError("without adverbs the verb needs an end-effector to measure them")
    else:
        dofs = np.stack(
            [_sample(c, k[key : key + 1])[0] for c, k in zip(curves, keytimes, strict=True)]
        )
        posed = _posed(skeleton, ref_root, ref_rot, j, dofs, _limited(skeleton, j))
        points = _measured(skeleton, effector, *posed)
    if scale is None and effector is not None:
        scale = skeleton.path_length(effector.base, effector.point)
    verb = Verb(
        skeleton,
        np.asarray(ref_root, dtype=np.float64),
        ref_rot,
        j,
        tuple(curves),
        keytimes,
        cardinal_basis(points),
        fps,
        effector,
        key,
        float(scale or 1.0),
    )
    for a in (
        verb.reference_root,
        verb.reference_rotations,
        verb.joints,
        verb.keytimes,
        *verb.curves,
    ):
        a.setflags(write=False)
    return verb


# --------------------------------------------------------------------------------------
# section 4: measuring, searching, refining
# --------------------------------------------------------------------------------------
_STEPS = np.array([1.0, 0.5, 1.5, 0.25])
_ATTEMPTS = 64  # worst grid points tried per refinement round before giving up
_GROWTH = 0.1  # an insertion may raise the map's maximum by this share at most
_FIELD_ITERATIONS = 20  # p′ search iterations at design time
_NEIGHBOURS = 24  # grid points whose p′ a point's p′ is compared with
_BRANCH = 0.1  # a p′ this far (share of scale) from its neighbours' is another branch
_SOLVED = 1e-6  # residual (share of scale) of a p′ that puts the effector on p


def search_adverb(
    verb: Verb, goals: ArrayLike, iterations: int = 6, start: ArrayLike | None = None
) -> Array:
    """Section 4.2: ``p′`` (..., D) with ``x_e(p′)`` nearest ``goals`` (..., D).

    From ``p′ = start`` (default: the goals), each iteration tries steps along
    the paper's direction, against the error vector ``e = x_e(p′) − p``, and
    along the Gauss–Newton direction ``−J⁻¹ e`` (``J = ∂x_e/∂p`` by forward
    differences), a few lengths of each, all goals and trials in one batch,
    and keeps the best when it is better. Where the verb's map is near the
    identity the two agree; where it folds or shrinks the space (blends of
    poses far apart) the paper's direction stalls and Newton's does not."""
    g = np.asarray(goals, dtype=np.float64)
    goal = g.reshape(-1, g.shape[-1])
    p = goal.copy() if start is None else np.array(start, dtype=np.float64).reshape(goal.shape)
    n, d = p.shape
    err = verb.achieved(p) - goal
    size = np.linalg.norm(err, axis=-1)
    h = 1e-4 * verb.scale
    for _ in range(iterations):
        probe = p[:, None] + h * np.eye(d)  # (P, D, D)
        jac = (verb.achieved(probe) - (err + goal)[:, None]) / h  # (P, D: column, D: coord)
        jac = np.swapaxes(jac, 1, 2)
        ok = np.abs(np.linalg.det(jac)) > 1e-12
        safe = np.where(ok[:, None, None], jac, np.eye(d))
        newton = np.where(ok[:, None], np.linalg.solve(safe, err[..., None])[..., 0], err)
        trial = p[:, None] - np.concatenate(
            [_STEPS[:, None] * err[:, None], _STEPS[:3, None] * newton[:, None]], axis=1
        )  # (P, S, D)
        e = verb.achieved(trial) - goal[:, None]
        norms = np.linalg.norm(e, axis=-1)
        best = np.argmin(norms, axis=1)
        rows = np.arange(n)
        better = norms[rows, best] < size
        p = np.where(better[:, None], trial[rows, best], p)
        err = np.where(better[:, None], e[rows, best], err)
        size = np.where(better, norms[rows, best], size)
    return p.reshape(g.shape)


@dataclass(frozen=True, eq=False)
class ErrorMap:
    """A verb's accuracy over its working volume (section 4.1).

    Attributes
    ----------
    grid : ndarray, shape (G, D)
        The regular grid's points inside the examples' convex hull.
    achieved : ndarray, shape (G, D)
        ``x_e(p)`` (with the runtime search when measured so).
    errors : ndarray, shape (G,)
        ``|x_e(p) − p|`` as % of the verb's scale.
    shape : tuple of int
        The full grid's shape (per axis counts) and ``inside`` (its mask, flat).
    inside : ndarray of bool
    """

    grid: Array
    achieved: Array
    errors: Array
    shape: tuple[int, ...]
    inside: NDArray[np.bool_]

    @property
    def mean(self) -> float:
        return float(self.errors.mean())

    @property
    def max(self) -> float:
        return float(self.errors.max())


def _resolution(dimension: int, search: int = 0) -> int:
    """Grid points per axis of the error map: 41 in 1-D and 2-D, 25 in 3-D (about
    2,600 points in the reach verb's hull), 13 beyond, and 13 in 3-D too when every
    point runs the p′ search."""
    return 41 if dimension <= 2 else 25 if dimension == 3 and not search else 13


def convex_goals(verb: Verb, count: int, seed: int = 0) -> Array:
    """Random goals (count, D) anywhere in the verb's working volume: convex
    combinations of its examples' adverbs, drawn apart from any grid.

    The first half are uniform over the hull's volume (a simplex of its Delaunay
    triangulation drawn in proportion to its volume, then Dirichlet(1) weights on
    its corners); the others combine 2 to D + 1 examples drawn at random
    (Dirichlet(1) weights), which reaches the hull's faces, edges and chords.
    """
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(seed)
    points = verb.adverbs
    n, d = points.shape
    uniform = count // 2
    if d == 1:
        lo, hi = points.min(), points.max()
        first = lo + rng.random((uniform, 1)) * (hi - lo)
    else:
        corners = points[Delaunay(points).simplices]  # (S, D + 1, D)
        volume = np.abs(np.linalg.det(corners[:, 1:] - corners[:, :1]))
        pick = rng.choice(len(corners), uniform, p=volume / volume.sum())
        first = np.einsum("gk,gkd->gd", rng.dirichlet(np.ones(d + 1), uniform), corners[pick])
    rest = np.empty((count - uniform, d))
    for row in range(len(rest)):
        chosen = rng.choice(n, int(rng.integers(2, min(d + 1, n) + 1)), replace=False)
        rest[row] = rng.dirichlet(np.ones(len(chosen))) @ points[chosen]
    return np.vstack([first, rest])


def _grid(verb: Verb, resolution: int) -> tuple[Array, NDArray[np.bool_], tuple[int, ...]]:
    from scipy.spatial import Delaunay

    points = verb.adverbs
    lo, hi = points.min(axis=0), points.max(axis=0)
    axes = [np.linspace(a, b, resolution) for a, b in zip(lo, hi, strict=True)]
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
    if len(axes) == 1:
        inside = np.ones(len(mesh), bool)
    else:
        hull = Delaunay(points)
        inside = hull.find_simplex(mesh, tol=1e-9) >= 0
    return mesh, inside, (resolution,) * len(axes)


def _errors(verb: Verb, grid: Array, search: int) -> tuple[Array, Array]:
    """``x_e(p)`` (G, D) at ``grid`` (G, D) (after ``search`` iterations of the p′
    search) and ``|x_e(p) − p|`` (G,) as % of the verb's scale."""
    p = search_adverb(verb, grid, search) if search else grid
    achieved = verb.achieved(p)
    return achieved, np.linalg.norm(achieved - grid, axis=-1) * 100.0 / verb.scale


def error_map(verb: Verb, resolution: int | None = None, *, search: int = 0) -> ErrorMap:
    """Section 4.1: ``|x_e(p) − p|`` over a grid of the examples' range (``resolution``
    points per axis: 41 in 2-D, 25 in 3-D by default), with ``search`` iterations of
    the p′ search at each point (a hybrid verb's runtime; then 13 per axis in 3-D)."""
    mesh, inside, shape = _grid(verb, resolution or _resolution(verb.basis.dimension, search))
    grid = mesh[inside]
    achieved, errors = _errors(verb, grid, search)
    return ErrorMap(grid, achieved, errors, shape, inside)


def _median_offsets(offsets: Array, solved: NDArray[np.bool_], near: NDArray[np.intp]) -> Array:
    """Per point, the median (P, D) of ``offsets`` over its neighbours ``near`` (P, K)
    whose p′ is solved (its own offset when none is)."""
    hits = np.asarray(solved[near], dtype=bool)  # (P, K)
    votes = np.where(hits[..., None], offsets[near], np.nan)
    counted = np.asarray(hits.any(axis=1), dtype=bool)
    safe = np.where(counted[:, None, None], votes, 0.0)
    return np.where(counted[:, None], np.nanmedian(safe, axis=1), offsets)


def pprime_field(
    verb: Verb, points: ArrayLike, *, passes: int = 3
) -> tuple[Array, Array, NDArray[np.bool_]]:
    """Section 4.2 at many points at once, one continuous branch: ``p′`` (P, D) with
    ``x_e(p′) = p`` for each of ``points`` (P, D), at design time.

    The search (:func:`search_adverb`, 20 iterations) starts from each point; then,
    ``passes`` times, a point whose search failed or whose offset ``p′ − p`` lies more
    than 10 % of the verb's scale from the median offset of its 24 nearest points
    (another branch of a folded map, or a runaway step) searches again from its
    neighbours' offsets and keeps the solution nearest that median. Where the map
    folds, one ``p`` has several ``p′``; a pseudo-example built on a branch its
    neighbours do not share bends the space between them.

    Parameters
    ----------
    verb : Verb
        An IK verb (:func:`refine` passes its initial space, :attr:`Verb.unrefined`).
    points : array_like, shape (P, D)
        Goals in the adverbs' frame, skeleton unit (the error map's grid).
    passes : int
        Rounds of searching again from the neighbours' offsets.

    Returns
    -------
    pprime : ndarray, shape (P, D)
    residual : ndarray, shape (P,)
        ``|x_e(p′) − p|`` as a share of the verb's scale.
    usable : ndarray of bool, shape (P,)
        Solved (residual below 1e-6) and on its neighbours' branch.
    """
    from scipy.spatial import cKDTree

    p = np.asarray(points, dtype=np.float64)
    s = verb.scale
    found = search_adverb(verb, p, _FIELD_ITERATIONS)
    residual = np.linalg.norm(verb.achieved(found) - p, axis=-1) / s
    k = min(_NEIGHBOURS, len(p) - 1)
    if k < 1:
        return found, residual, residual < _SOLVED
    near = cKDTree(p).query(p, k + 1)[1][:, 1:]
    for attempt in range(passes + 1):
        offsets = (found - p) / s
        solved = residual < _SOLVED
        median = _median_offsets(offsets, solved, near)
        gap = np.linalg.norm(offsets - median, axis=-1)
        bad = np.flatnonzero(~solved | (gap > _BRANCH))
        if attempt == passes or not len(bad):
            break
        # starts: the offsets of the eight nearest points and their median
        starts = np.concatenate(
            [p[bad, None] + s * offsets[near[bad, :8]], (p[bad] + s * median[bad])[:, None]],
            axis=1,
        )
        b, count, d = starts.shape
        goals = np.repeat(p[bad], count, axis=0)
        trial = search_adverb(verb, goals, _FIELD_ITERATIONS, starts.reshape(-1, d))
        trial = trial.reshape(b, count, d)
        miss = np.linalg.norm(verb.achieved(trial) - p[bad, None], axis=-1) / s
        apart = np.linalg.norm((trial - p[bad, None]) / s - median[bad, None], axis=-1)
        best = np.argmin(np.where(miss < _SOLVED, apart, 1e6 + miss), axis=1)
        rows = np.arange(b)
        hit, near_median = miss[rows, best], apart[rows, best]
        take = (hit < _SOLVED) & (near_median < gap[bad]) | (hit < residual[bad])
        found[bad[take]] = trial[rows, best][take]
        residual[bad[take]] = hit[take]
    return found, residual, (residual < _SOLVED) & (gap <= _BRANCH)


@threadpool_limits.wrap(limits=1, user_api="blas")
def refine(
    verb: Verb,
    max_pseudo: int,
    *,
    hybrid: bool = False,
    resolution: int | None = None,
    search: int = 6,
    tolerance: float = 0.0,
    local: bool = False,
) -> tuple[Verb, list[tuple[float, float]]]:
    """Section 4.3: insert pseudo-examples at the worst grid points.

    Once, for every point ``p`` of the error map's grid, ``p′`` with
    ``x_e(p′) = p`` in the verb's initial space (:attr:`Verb.unrefined`, its
    examples alone), one continuous branch (:func:`pprime_field`). Each round
    takes the grid's points worst first and inserts a pseudo-example at ``p`` with
    the initial weights at ``p′`` (:func:`retarget.ik.rbf.insert_centre`: the
    examples' radius rule, the radial weights solved again; ``local``: the
    closed-form bump of half that radius). The insertion is kept when it lowers
    the map's mean error and raises its maximum by less than 10 %; otherwise the
    next point is tried (at most 64 per round). Stops after ``max_pseudo``
    insertions, when the worst error is below ``tolerance`` (% of scale) or when
    no point helps. BLAS runs on one thread meanwhile (its systems are small:
    waking threads costs more than they save, and far more on a busy machine).

    Parameters
    ----------
    verb : Verb
        An IK verb; pseudo-examples it has already are kept.
    max_pseudo : int
    hybrid : bool
        The paper's hybrid, "pseudo-examples + optimal p′": the same
        pseudo-examples, and the returned verb runs ``search`` iterations of the p′
        search at every query (:attr:`Verb.search`), from its refined blend.
    resolution : int, optional
        Grid points per axis (:func:`error_map`; 25 in 3-D).
    search : int
        The hybrid verb's runtime iterations.
    tolerance : float
        % of the verb's scale.
    local : bool
        Pseudo-examples confined to half the distance to their nearest centre.

    Returns
    -------
    verb : Verb
    history : list of (mean, max)
        The blend's errors over the grid (% of scale, no search) at the start and
        after each insertion.
    """
    mesh, inside, _ = _grid(verb, resolution or _resolution(verb.basis.dimension))
    grid = mesh[inside]
    initial = verb.unrefined
    pprime, residual, usable = pprime_field(initial, grid)
    targets = initial.basis.weights(pprime)
    current = verb
    errors = _errors(current, grid, 0)[1]
    history = [(float(errors.mean()), float(errors.max()))]
    tried = ~usable
    while current.pseudo_examples - verb.pseudo_examples < max_pseudo and errors.max() > tolerance:
        order = np.argsort(-errors)
        worst = order[~tried[order] & (100.0 * residual[order] < errors[order])][:_ATTEMPTS]
        for k in worst:
            tried[k] = True
            try:
                basis = insert_centre(current.basis, grid[k], targets[k], local=local)
            except ValueError:  # p is a centre already, or Q is singular
                continue
            trial = replace(current, basis=basis)
            after = _errors(trial, grid, 0)[1]
            if after.mean() < errors.mean() and after.max() <= (1.0 + _GROWTH) * errors.max():
                current, errors = trial, after
                history.append((float(errors.mean()), float(errors.max())))
                tried = ~usable
                break
        else:
            break
    return (replace(current, search=search) if hybrid else current), history


def polish(
    verb: Verb, root: ArrayLike, rotations: ArrayLike, goals: ArrayLike
) -> tuple[Array, Array]:
    """Exact IK from the verb's pose (section 4.3, "traditional IK can be employed"):
    Levenberg–Marquardt on the blended joints' channel axes (a hinge turns about its
    one axis only), started at the blend (the damping keeps the step small, so the
    style stays); limits enforced."""
    r0 = np.asarray(root, dtype=np.float64)
    rot0 = np.asarray(rotations, dtype=np.float64)
    g = np.asarray(goals, dtype=np.float64)
    batch = g.shape[:-1]
    r0 = np.broadcast_to(r0, (*batch, 3)).reshape(-1, 3)
    rot0 = np.broadcast_to(rot0, (*batch, *rot0.shape[-2:])).reshape(-1, *rot0.shape[-2:])
    flat = g.reshape(-1, g.shape[-1])
    j = verb.joints
    sk = verb.skeleton
    # the free axes of each blended joint (its channels; a hinge has one), in its frame
    free = np.zeros((3 * len(j), sum(len(sk.euler_orders[k]) for k in j)))
    col = 0
    for row, k in enumerate(j):
        for a in sk.euler_orders[k]:
            free[3 * row : 3 * row + 3, col] = quat.rotate(sk.axes[k], np.eye(3)["XYZ".index(a)])
            col += 1

    def posed(theta: Array, index: NDArray[np.intp]) -> Array:
        turn = (theta @ free.T).reshape(len(theta), len(j), 3)
        rot = oplus_joints(rot0[index], turn, j)
        return clamp_to_limits(sk, rot) if verb.limited else rot

    def residuals(theta: Array, index: NDArray[np.intp]) -> Array:
        return (verb.measure(r0[index], posed(theta, index)) - flat[index]) / verb.scale

    theta = levenberg_marquardt(residuals, np.zeros((len(flat), col)), tolerance=1e-14)
    rot = posed(theta, np.arange(len(flat)))
    return r0.reshape(*batch, 3), quat.normalize(rot).reshape(*batch, *rot.shape[-2:])


# --------------------------------------------------------------------------------------
# storage
# --------------------------------------------------------------------------------------
def verb_arrays(verb: Verb) -> tuple[Motion, dict[str, Array]]:
    """The verb as its reference pose (a one-frame motion: skeleton, root, rotations,
    fps) and arrays under ``verb_*`` keys, for an npz archive
    (:func:`retarget.io.write_npz` with ``extra``)."""
    reference = Motion(
        verb.skeleton, verb.reference_root[None], verb.reference_rotations[None], verb.fps
    )
    arrays = {
        "verb_joints": verb.joints,
        "verb_curves": np.concatenate(verb.curves),
        "verb_lengths": np.array([len(c) for c in verb.curves]),
        "verb_keytimes": verb.keytimes,
        "verb_centres": verb.basis.centres,
        "verb_radii": verb.basis.radii,
        "verb_radial": verb.basis.radial,
        "verb_linear": verb.basis.linear,
        "verb_key": np.array(verb.key),
        "verb_scale": np.array(verb.scale),
        "verb_search": np.array(verb.search),
    }
    if verb.effector is not None:
        e = verb.effector
        arrays["verb_effector"] = np.array([e.point, e.base])
        arrays["verb_frame"] = e.frame
        arrays["verb_axes"] = np.array(e.axes)
    return reference, arrays


def verb_from_arrays(reference: Motion, arrays: dict[str, Array]) -> Verb:
    """Inverse of :func:`verb_arrays`.

    Raises
    ------
    KeyError, ValueError
        When a ``verb_*`` array is missing or inconsistent.
    """
    lengths = np.asarray(arrays["verb_lengths"], dtype=np.intp)
    curves = tuple(np.split(np.asarray(arrays["verb_curves"], float), np.cumsum(lengths)[:-1]))
    effector = None
    if "verb_effector" in arrays:
        point, base = (int(v) for v in arrays["verb_effector"])
        axes = tuple(int(a) for a in arrays["verb_axes"])
        effector = EndEffector(point, base, np.asarray(arrays["verb_frame"], float), axes)
    basis = CardinalBasis(
        arrays["verb_centres"], arrays["verb_radii"], arrays["verb_radial"], arrays["verb_linear"]
    )
    joints = np.asarray(arrays["verb_joints"], dtype=np.intp)
    if len(curves) != basis.examples or any(c.shape[1] != 3 + 3 * len(joints) for c in curves):
        raise ValueError("the verb's curves do not match its joints and examples")
    return Verb(
        reference.skeleton,
        reference.root_position[0],
        reference.rotations[0],
        joints,
        curves,
        np.asarray(arrays["verb_keytimes"], float),
        basis,
        reference.fps,
        effector,
        int(arrays["verb_key"]),
        float(arrays["verb_scale"]),
        int(arrays.get("verb_search", 0)),
    )
