"""Retargeting by hierarchical motion fitting (Lee & Shin 1999, §6).

1. ``m_0``: the source's rotations on the target, its root path scaled by the
   height ratio, or by the leg-length ratio when the legs are too short for
   that stride, planted feet on the floor (:func:`retarget.methods.copy.transfer`);
2. footplants: each contact run of the source becomes a goal held fixed over
   the run, mapped to the target's scale (and onto the terrain, when one is
   given), with ground non-penetration for the foot points;
3. the hierarchy of displacement maps meets them (Algorithm 1, hybrid IK with
   analytic limbs), then an exact IK pass at the constrained frames, and joint
   limits clamped on every frame when the target has limits.

The target may change its proportions over the clip (character morphing,
Figure 5d of the paper): per-frame joint offsets, e.g. from
:func:`retarget.humanoid.characters.morph_translations`, flow through every step, so the
stride ratio, the
footprints, the forward kinematics and the analytic limbs of each frame use
that frame's bones, and the walk keeps its stride at every size.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..core.arrays import Array
from ..core.dofs import widen_limits
from ..core.errors import RetargetError
from ..core.kinematics import positions
from ..core.motion import Motion
from ..core.result import Result, speed
from ..core.skeleton import Skeleton
from ..editing.constraints import footplants
from ..editing.fitting import fit_motion
from ..humanoid.contacts import Contacts, detect_contacts, estimate_ground
from ..humanoid.cuts import find_cuts
from ..humanoid.roles import find_roles, height, leg_length, standing_heights
from ..ik.hybrid import HybridSolver
from ._base import APART, TERRAIN, Option

if TYPE_CHECKING:
    from ..environment import Shape
    from ..tasks import CollisionTask
from .copy import transfer

__all__ = ["hierarchical_retarget"]


#: A foot point's plant speed is at most this many times its median speed over the
#: source's contacts (:func:`plant_speeds`), and at least ``plant_speed``.
PLANT_SPEED_FACTOR = 3.0


def plant_speeds(source: Motion, contacts: Contacts, least: float) -> Array:
    """The 3-D speed (share of height per second) under which each foot point of the
    source is pinned, shape (K,): ``least`` (5 %: a clean capture's planted foot
    moves well under 1 %/s), raised to :data:`PLANT_SPEED_FACTOR` times the point's
    median speed over its contact frames where the capture's feet drift in
    contact (CMU and Emilya walks: 6 to 22 %/s; with 5 % no plant was found and
    the result skated as the source), at most the contacts' own 25 %/s.
    """
    pos = positions(source)[:, contacts.points]
    if len(pos) < 2:
        return np.full(len(contacts.points), least)
    speed = np.linalg.norm(np.gradient(pos, axis=0), axis=-1) * source.fps / contacts.height
    median = np.array(
        [
            np.median(speed[contacts.mask[:, k], k]) if contacts.mask[:, k].any() else 0.0
            for k in range(len(contacts.points))
        ]
    )
    return np.clip(PLANT_SPEED_FACTOR * median, least, 0.25)


def hierarchical_retarget(
    source: Motion,
    target: Skeleton,
    *,
    translations: ArrayLike | None = None,
    spacings: Sequence[float] = (16, 8, 4, 2),
    exact: bool = True,
    terrain: Shape | None = None,
    max_iterations: int = 30,
    plant_height: float = 0.02,
    plant_speed: float = 0.05,
    blend: float = 0.2,
    reach: float = 1.0,
    root_spacing: float = 8.0,
    stride: str = "auto",
    minimizer: str = "lm",
    limits: str = "strict",
    feather: float = 0.1,
    plant_heights: str = "source",
    apart: CollisionTask | None = None,
) -> Result:
    """Retarget with footplants enforced by hierarchical fitting.

    Parameters
    ----------
    source : Motion
    target : Skeleton
        Has the source's joints (by name).
    translations : array_like, shape (F, J, 3), optional
        Per-frame local offsets of the target's joints (its joint order; F the
        source's frames): a character whose proportions change over the clip
        (:func:`retarget.humanoid.characters.morph_translations`). Each frame then has its own
        stride ratio
        and height, each footprint the ratio of its frames, and the IK its
        bone lengths; end sites keep ``target``'s offsets. The result carries
        them (:attr:`retarget.core.motion.Motion.translations`).
    spacings : sequence of float
        Knot spacing per level, coarse to fine (frames).
    exact : bool
        Enforce every footplant exactly by IK after the last level.
    terrain : Shape, optional
        The ground (:mod:`retarget.environment`: a ``HeightField``, ``Floor``,
        ``Slope`` or ``Scene``, whose ``ground_height`` is the highest surface a
        foot could stand on): contacts move onto it. Default: the level floor or
        the slope the source's footprints lie on.
    max_iterations : int
        Iterations per IK solve.
    plant_height, plant_speed : float
        Plants pinned by the method: a foot point within ``plant_height`` ×
        height of its clearance, moving (in 3-D) slower than ``plant_speed`` ×
        height per second, with no hysteresis. The measures' contacts (DESIGN.md)
        are looser; pinning them would pin a heel that is already rising.
    blend : float
        Seconds over which a foot eases into and out of each plant.
    stride : {"auto", "height", "legs"}
        How the root path and the footprints scale: by the height ratio (the
        character moves like the source at its own size), by the leg-length
        ratio (stride follows the legs), or ``"auto"``: the height ratio unless
        the legs are too short for that stride, then the leg ratio. With
        ``translations`` the rule holds frame by frame: the root's velocity is
        the source's times the frame's ratio (:func:`retarget.methods.copy.scale_path`).
    minimizer : {"lm", "cg"}
        The hybrid IK's minimiser (:class:`retarget.ik.hybrid.HybridSolver`):
        Levenberg–Marquardt, or the paper's conjugate gradient.
    root_spacing : float
        Finest knot spacing of the root's displacement (frames); the joints go
        down to the finest level of ``spacings``.
    limits : {"strict", "source"}
        For a target with joint limits: they hold on every frame (``"strict"``),
        or each is widened to take in the source's own range first
        (``"source"``, :func:`retarget.core.dofs.widen_limits`): the choice for a
        source mapped from another performer's skeleton
        (:func:`retarget.humanoid.mapping.map_for_method`), whose clavicles or wrists sit
        outside limits measured on the target's subject; the method then never
        pulls a joint back to them, nor pushes one further out.
    feather : float
        Seconds over which the exact pass's corrections fade out beyond the
        constrained frames (:func:`retarget.editing.fitting.fit_motion`).
    plant_heights : {"source", "rest"}
        How high each planted foot point is held over the ground: the source's
        planted height scaled by the feet's length ratio (``"source"``), or the
        target's own, as its rest pose stands on flat feet
        (:func:`retarget.humanoid.roles.standing_heights`, over the source's lowest planted
        point; ``"rest"``): the choice for a foot of other proportions than the
        performer's whose rest stands (a robot's sole plate, JVRC-1's ankle 10.8 cm
        over it where the scaled performer's is 6.7: held there, its planted feet
        stood toes up 13°). Not with ``translations``.
    apart : CollisionTask, optional
        Pieces of the target kept apart (a robot's links, capsules on ``target``'s
        joints: :func:`retarget.targets.robot.apart.apart_on`): an inequality of the
        fit as the ground is (:class:`retarget.tasks.Constraints` ``apart``), so
        every level and the exact pass plan the feet and the clearance together.
    reach : float
        Scale of the mapped leg vectors (hip to foot) on top of the leg-length
        ratio; below 1 keeps a straight source leg from asking the target's leg
        for its full extension.

    Returns
    -------
    Result
        ``report["levels"]``: per level the knot spacing, frames solved, max and
        mean footplant error (% of height: of each frame's, with ``translations``),
        deepest penetration and seconds. ``report["ratio"]``: the stride ratio;
        with ``translations``, its ``first``, ``last``, ``min`` and ``max`` over
        the frames.
    """
    t0 = time.perf_counter()
    trans = None
    if translations is not None:
        trans = np.asarray(translations, dtype=np.float64)
        shape = (source.num_frames, target.num_joints, 3)
        if trans.shape != shape:
            raise ValueError(f"Expected `translations` of shape {shape}, got {trans.shape}")
    if not 0.0 < plant_speed <= 1.0:  # (NaN too)
        raise RetargetError(
            f"plant speed {plant_speed}: a share of the height per second, in (0, 1]"
        )
    roles_s, roles_t = find_roles(source.skeleton), find_roles(target)
    contacts = detect_contacts(source, roles=roles_s)
    cuts = find_cuts(source, roles=roles_s)  # no displacement reaches across a cut
    leg_ratio = leg_length(target, roles_t, trans) / leg_length(source.skeleton, roles_s)
    h = height(target, roles_t, trans)  # per frame with translations
    height_ratio = h / height(source.skeleton, roles_s)
    ratios = {
        "auto": np.minimum(leg_ratio, height_ratio),
        "legs": leg_ratio,
        "height": height_ratio,
    }
    if stride not in ratios:
        raise RetargetError(f"unknown stride {stride!r}; choose one of {', '.join(ratios)}")
    ratio = ratios[stride]
    moved = transfer(source, target, ratio, contacts, roles_s, roles_t, trans)
    # Plants to pin: stricter than the contacts of the measures (a heel rising in
    # place is not pinned; no hysteresis widening); the feet ease in and out.
    # the ground the source walks on: the terrain given, else the level floor or the
    # slope its footprints lie on (a ramp, a capture floor that is not level)
    ground = terrain if terrain is not None else estimate_ground(source, contacts)
    plants = detect_contacts(
        source,
        roles=roles_s,
        floor=contacts.floor,
        ground=ground if terrain is None else None,
        height_tol=plant_height,
        speed_tol=plant_speeds(source, contacts, plant_speed),
        release=1.0,
        vertical_speed=True,
    )
    clearance = np.multiply.outer(moved.foot_ratio, plants.clearance)
    if plant_heights not in ("source", "rest"):
        raise RetargetError(f"unknown plant_heights {plant_heights!r}; choose source or rest")
    if plant_heights == "rest" and trans is None:  # as high as the target's own foot holds it
        by_point = {p: role for role, p in roles_s.items()}
        mine = standing_heights(target, roles_t, [roles_t[by_point[int(p)]] for p in plants.points])
        for side in ("left", "right"):
            k = [i for i, sd in enumerate(plants.sides) if sd == side]
            clearance[..., k] = mine[k] + clearance[..., k].min(axis=-1, keepdims=True)
    constraints = footplants(
        source,
        moved.motion,
        plants,
        roles_s,
        roles_t,
        ratio=ratio * reach,
        clearance=clearance,
        surface=ground,
        blend=max(1, round(blend * source.fps)),
    )
    if apart is not None:
        constraints = constraints.with_goals(apart=apart)
    if limits not in ("strict", "source"):
        raise RetargetError(f"unknown limits {limits!r}; choose strict or source")
    limited = bool(np.isfinite(target.limits).any())
    start = moved.motion
    if limited:
        constraints = constraints.with_goals(joint_limits=True)
        if limits == "source":
            start = start.replace(skeleton=widen_limits(target, start.rotations))
    # the root moves in every level (the fitting keeps it smooth), not in the exact pass
    solver = HybridSolver.for_skeleton(
        start.skeleton,
        roles_t,
        motion=start,
        max_iterations=max_iterations,
        root_spacing=0.5,
        minimizer=minimizer,
    )
    fitted = fit_motion(
        start,
        constraints,
        solver,
        spacings=spacings,
        height=h,
        exact=exact,
        root_spacing=root_spacing,
        cuts=cuts.tolist(),
        feather=max(2, round(feather * source.fps)),
    )
    seconds = time.perf_counter() - t0
    names = target.point_names
    goals = {names[p]: g for p, g in constraints.positions.items()}
    r = np.asarray(ratio)
    summary = {"first": r[0], "last": r[-1], "min": r.min(), "max": r.max()} if r.ndim else None
    report = {
        "method": "hierarchical",
        "ratio": float(r) if summary is None else {k: float(v) for k, v in summary.items()},
        "stride": stride,
        "spacings": [float(s) for s in spacings],
        "exact": exact,
        "apart_pairs": 0 if apart is None else int(apart.size),
        "joint_limits": limited,
        "limits": limits,
        "levels": [lv.as_dict() for lv in fitted.levels],
        "ik_solves": int(sum(lv.frames_solved for lv in fitted.levels)),
        "cuts": cuts.tolist(),
        "seconds": seconds,
        **speed(source.num_frames, seconds),
    }
    return Result(fitted.motion.replace(skeleton=target), report, goals)


# -- options: what `retarget run --method hierarchical` and RunJob.method_options offer -------

OPTIONS = (
    TERRAIN,
    APART,
    Option(
        "translations",
        None,
        "per-frame joint offsets (F, J, 3) of a character morphing over the clip",
    ),
    Option(
        "limits",
        "--limits",
        "a target with joint limits: they hold on every frame (strict, the default) or are "
        "widened to the source's own range (source, the default for a target of another "
        "hierarchy)",
        choices=("strict", "source"),
    ),
    Option(
        "plant_heights",
        "--plant-heights",
        "planted foot points held as high as the source's, scaled (source, the default), or "
        "as the target's own rest pose stands on flat feet (rest, the default onto a robot)",
        choices=("source", "rest"),
    ),
    Option(
        "plant_speed",
        "--plant-speed",
        "a foot point slower than this share of the height per second is pinned (0.05, the "
        "default, raised by the source's own drift in contact; higher pins a foot that "
        "pivots in place, at the cost of following the source's feet less closely)",
        type=float,
        metavar="SHARE",
    ),
)
