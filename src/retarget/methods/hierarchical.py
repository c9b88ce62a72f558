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
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..contacts import detect_contacts
from ..editing.constraints import footplants
from ..editing.fitting import fit_motion
from ..errors import RetargetError
from ..ik.hybrid import HybridSolver
from ..motion import Motion
from ..result import Result
from ..roles import find_roles, height
from ..skeleton import Skeleton
from .copy import leg_length, transfer

__all__ = ["hierarchical_retarget"]


def hierarchical_retarget(
    source: Motion,
    target: Skeleton,
    *,
    spacings: Sequence[float] = (16, 8, 4, 2),
    exact: bool = True,
    terrain: Any = None,
    max_iterations: int = 30,
    plant_height: float = 0.02,
    plant_speed: float = 0.05,
    blend: float = 0.2,
    reach: float = 1.0,
    root_spacing: float = 8.0,
    stride: str = "auto",
    minimizer: str = "lm",
) -> Result:
    """Retarget with footplants enforced by hierarchical fitting.

    Parameters
    ----------
    source : Motion
    target : Skeleton
        Has the source's joints (by name).
    spacings : sequence of float
        Knot spacing per level, coarse to fine (frames).
    exact : bool
        Enforce every footplant exactly by IK after the last level.
    terrain : optional
        A surface with ``height(xz)`` (``environment.HeightField``, ``Floor``,
        a ``Scene`` wrapped by ``environment.ground_height``): contacts move
        onto it.
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
        the legs are too short for that stride, then the leg ratio.
    minimizer : {"lm", "cg"}
        The hybrid IK's minimiser (:class:`retarget.ik.hybrid.HybridSolver`):
        Levenberg–Marquardt, or the paper's conjugate gradient.
    root_spacing : float
        Finest knot spacing of the root's displacement (frames); the joints go
        down to the finest level of ``spacings``.
    reach : float
        Scale of the mapped leg vectors (hip to foot) on top of the leg-length
        ratio; below 1 keeps a straight source leg from asking the target's leg
        for its full extension.

    Returns
    -------
    Result
        ``report["levels"]``: per level the knot spacing, frames solved, max and
        mean footplant error (% of height), deepest penetration and seconds.
    """
    t0 = time.perf_counter()
    roles_s, roles_t = find_roles(source.skeleton), find_roles(target)
    contacts = detect_contacts(source, roles=roles_s)
    leg_ratio = leg_length(target, roles_t) / leg_length(source.skeleton, roles_s)
    height_ratio = height(target, roles_t) / height(source.skeleton, roles_s)
    ratios = {"auto": min(leg_ratio, height_ratio), "legs": leg_ratio, "height": height_ratio}
    if stride not in ratios:
        raise RetargetError(f"unknown stride {stride!r}; choose one of {', '.join(ratios)}")
    ratio = ratios[stride]
    moved = transfer(source, target, ratio, contacts, roles_s, roles_t)
    # Plants to pin: stricter than the contacts of the measures (a heel rising in
    # place is not pinned; no hysteresis widening); the feet ease in and out.
    plants = detect_contacts(
        source,
        roles=roles_s,
        floor=contacts.floor,
        height_tol=plant_height,
        speed_tol=plant_speed,
        release=1.0,
        vertical_speed=True,
    )
    constraints = footplants(
        source,
        moved.motion,
        plants,
        roles_s,
        roles_t,
        ratio=ratio * reach,
        clearance=plants.clearance * moved.foot_ratio,
        surface=terrain,
        blend=max(1, round(blend * source.fps)),
    )
    limits = bool(np.isfinite(target.limits).any())
    if limits:
        constraints = constraints.with_goals(joint_limits=True)
    # the root moves in every level (the fitting keeps it smooth), not in the exact pass
    solver = HybridSolver.for_skeleton(
        target,
        roles_t,
        motion=moved.motion,
        max_iterations=max_iterations,
        root_spacing=0.5,
        minimizer=minimizer,
    )
    h = height(target, roles_t)
    fitted = fit_motion(
        moved.motion,
        constraints,
        solver,
        spacings=spacings,
        height=h,
        exact=exact,
        root_spacing=root_spacing,
    )
    seconds = time.perf_counter() - t0
    names = target.point_names
    goals = {names[p]: g for p, g in constraints.positions.items()}
    report = {
        "method": "hierarchical",
        "ratio": ratio,
        "stride": stride,
        "spacings": [float(s) for s in spacings],
        "exact": exact,
        "joint_limits": limits,
        "levels": [lv.as_dict() for lv in fitted.levels],
        "ik_solves": int(sum(lv.frames_solved for lv in fitted.levels)),
        "seconds": seconds,
        "frames_per_second": source.num_frames / seconds if seconds > 0 else float("inf"),
    }
    return Result(fitted.motion, report, goals)
