"""Constraint editing of one motion (Lee & Shin 1999, §4.4 and Figure 2).

Pin end-effectors ("the left hand here at frame 120", "the pelvis 20 cm lower
at frame 300") and the motion bends smoothly around the pinned frames. The
knot spacing of the coarsest level sets how far a change reaches: a
constraint at frame ``t`` changes only frames within about four knot intervals
(:func:`retarget.editing.mba.reach`), as the paper's Figure 2 shows with 4, 6
and 12 frames per knot. By default the motion's own footplants are kept
(detected on the input, held where they are), so the feet stay planted while
the body moves.
"""

from __future__ import annotations

import time

import numpy as np

from ..core.errors import RetargetError
from ..core.motion import Motion
from ..core.result import Result
from ..humanoid.contacts import detect_contacts
from ..humanoid.roles import find_roles, height
from ..ik.hybrid import HybridSolver
from ..ik.numeric import NumericSolver
from ..tasks import Constraints
from .constraints import footplants
from .fitting import fit_motion
from .mba import reach

__all__ = ["edit_motion", "knot_spacings"]


def knot_spacings(coarsest: float, levels: int) -> tuple[float, ...]:
    """Spacings halving from ``coarsest`` for ``levels`` levels, never below one frame.

    >>> knot_spacings(16, 4)
    (16.0, 8.0, 4.0, 2.0)
    >>> knot_spacings(6, 4)
    (6.0, 3.0, 1.5, 1.0)
    """
    if not coarsest > 0 or levels < 1:
        raise RetargetError(
            f"expected a positive knot spacing and >= 1 level, got {coarsest} and {levels}"
        )
    return tuple(max(float(coarsest) / 2**k, 1.0) for k in range(levels))


def edit_motion(
    motion: Motion,
    constraints: Constraints,
    *,
    knot_spacing: float = 16.0,
    levels: int = 4,
    keep_feet: bool = True,
    exact: bool = True,
) -> Result:
    """The motion bent smoothly to meet ``constraints``.

    Parameters
    ----------
    motion : Motion
    constraints : Constraints
        On ``motion.skeleton`` (e.g. from :func:`retarget.editing.constraints.parse_constraints`).
    knot_spacing : float
        Frames per knot of the coarsest level: how far the change spreads.
    levels : int
        Levels, the spacing halving each time.
    keep_feet : bool
        Also hold the motion's own footplants where they are.
    exact : bool
        Enforce every constraint exactly at its frame after the last level.

    Returns
    -------
    Result
        ``report["levels"]``: per level the spacing, frames solved, max and mean
        constraint error (% of height) and seconds; ``report["reach"]``: the
        frames each constrained frame's change can touch at the coarsest level.
    """
    t0 = time.perf_counter()
    sk = motion.skeleton
    pinned = np.flatnonzero(constraints.active())
    spacings = knot_spacings(knot_spacing, levels)
    try:
        roles = find_roles(sk)
    except RetargetError:
        roles = None
    h = (
        height(sk, roles)
        if roles is not None
        else float(np.ptp(np.linalg.norm(sk.point_offsets, axis=1)) or 1.0)
    )
    if keep_feet and roles is not None:
        contacts = detect_contacts(motion, roles=roles)
        plants = detect_contacts(
            motion,
            roles=roles,
            floor=contacts.floor,
            height_tol=0.02,
            speed_tol=0.05,
            release=1.0,
            vertical_speed=True,
        )
        feet = footplants(
            motion, motion, plants, roles, roles, ratio=1.0, clearance=plants.clearance
        )
        user = set(constraints.positions)
        kept = {p: g for p, g in feet.positions.items() if p not in user}
        constraints = constraints.with_goals(
            kept,
            transitions={p: t for p, t in feet.transitions.items() if p not in user},
            contact_points=feet.contact_points,
            ground=feet.ground,
        )
    if np.isfinite(sk.limits).any():
        constraints = constraints.with_goals(joint_limits=True)
    solver = (
        HybridSolver.for_skeleton(sk, roles, motion=motion, root_spacing=0.0)
        if roles is not None
        else NumericSolver(height=h)
    )
    fitted = fit_motion(motion, constraints, solver, spacings=spacings, height=h, exact=exact)
    seconds = time.perf_counter() - t0
    report = {
        "method": "edit",
        "spacings": list(spacings),
        "keep_feet": keep_feet and roles is not None,
        "solver": type(solver).__name__,
        "levels": [lv.as_dict() for lv in fitted.levels],
        "reach": {int(f): reach(float(f), spacings[0], motion.num_frames) for f in pinned},
        "seconds": seconds,
    }
    goals = {sk.point_names[p]: g for p, g in constraints.positions.items()}
    return Result(fitted.motion, report, goals)
