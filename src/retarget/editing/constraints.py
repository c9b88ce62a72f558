"""Making kinematic constraints (Lee & Shin 1999, §4.2): footplants and constraint files.

The constraint set itself (:class:`~retarget.tasks.constraints.Constraints`,
:class:`~retarget.tasks.constraints.Ground`) is part of the task vocabulary,
:mod:`retarget.tasks`; this module makes them from a motion's contacts
(:func:`footplants`) or from a user's file (:func:`parse_constraints`).

Footplants (:func:`footplants`) come from the source's contacts: each foot
point gets one goal per footprint — its mean position, mapped onto the target
(the foot as a rigid body hanging from its hip, the leg scaled by the
leg-length ratio; height = the ground under it plus the target's clearance) —
held fixed over its planted frames.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..core import quat
from ..core.arrays import Array, runs
from ..core.errors import FormatError, RetargetError
from ..core.motion import Motion
from ..environment.shapes import Shape, as_shape
from ..humanoid.contacts import UP, Contacts
from ..humanoid.roles import Roles
from ..tasks.constraints import Constraints, Ground

__all__ = ["footplants", "parse_constraints"]


def footplants(
    source: Motion,
    initial: Motion,
    contacts: Contacts,
    roles_source: Roles,
    roles_target: Roles,
    *,
    ratio: float | Array,
    clearance: Array,
    surface: Shape | float | None = None,
    blend: int = 6,
) -> Constraints:
    """Footplant goals on the target from the source's contacts.

    Each foot is mapped as a rigid body hanging from its hip: at every frame the
    target's ankle goes where the source's ankle is relative to the source's
    hip, scaled by ``ratio``, from the target's hip in ``initial``,

    .. math:: a_t = h_t + r_t (a_s − h_s),

    and the other points of the foot (toe, toe tip) keep their offset from the
    ankle in ``initial`` (the target's own foot, turned as the source's).
    Heights are replaced by the ground under the point plus its clearance.
    ``r_t`` and the clearance may change from frame to frame (a character whose
    proportions change over the clip): each footprint then takes the means over
    its frames, so successive footprints lie as far apart as the source's, scaled
    by the ratio of their time.

    A *footprint* is a stretch of frames where some point of the foot is
    planted; each footprint gets one rigid placement, held fixed over it: the
    ankle at its mean mapped position over the flat-foot frames (ankle and
    another point planted; its own planted frames otherwise), each other point
    exactly its distance from the ankle in ``initial`` over those frames away,
    in the flat-foot direction (or at its own mean when it is never planted
    together with the ankle). When ``initial`` has per-frame bones
    (:attr:`retarget.core.motion.Motion.translations`) that distance and the
    clearances are each frame's: as the foot grows, the ankle keeps its place on
    the ground and rises with its clearance, the toe slides forward. A rigid
    foot can then meet every goal, and a foot that lifts its heel and puts it
    down again within one footprint puts it down on the same spot. Mapping from
    the hips rather than from one origin keeps the target's hip width and foot
    size (a wide, short-legged character does not get narrow, small footprints).

    Parameters
    ----------
    source : Motion
    initial : Motion
        The target's starting motion (the source's rotations on the target
        skeleton with its root path scaled, :func:`retarget.methods.copy.transfer`).
    contacts : Contacts
        The source's (points are source point indices).
    roles_source, roles_target : Roles
        To map each source foot point to the target's point of the same role.
    ratio : float or ndarray, shape (F,)
        Scale target / source of the leg vectors and of the eased tracks (the
        stride ratio), or one per frame.
    clearance : ndarray, shape (K,) or (F, K)
        Target height of each contact point above the ground when planted (per frame).
    surface : Shape or float, optional
        The ground (:mod:`retarget.environment`; a number is a level floor's
        height); the source's floor when None.
    blend : int
        Frames on each side of a plant over which the foot eases in and out
        (:attr:`Constraints.transitions`): the track continues the plant with the
        source point's own motion scaled by ``ratio``, ``goal + σ r (p_s(f) −
        p_s(edge))``, σ a smootherstep from 0 at the edge to 1 halfway through
        the window, and its weight rises as a smootherstep (C²) from 0 outside
        the window to 1 at the plant. Without σ the track set off at the
        source's speed the frame after a plant whose source point was already
        moving (a heel rising, a drifting capture): the pinned foot's speed
        jumped from 0, and a stance knee near full extension with it. Where the
        windows of two plants overlap (a short step), the weights add (capped
        at 1) and the tracks average.
    Returns
    -------
    Constraints
        Position goals on target points (NaN where free), transitions around
        them; ``contact_points`` = those points; a :class:`Ground` keeping them
        at or above the surface.
    """
    from ..core.kinematics import positions as motion_positions

    by_point = {p: role for role, p in roles_source.items()}
    target_points = np.array([roles_target[by_point[p]] for p in contacts.points], dtype=np.intp)
    pos_s = motion_positions(source)
    pos_t = motion_positions(initial)
    horizontal = [a for a in range(3) if a != UP]
    ground = Ground(
        target_points,
        np.asarray(clearance, dtype=np.float64),
        as_shape(contacts.floor if surface is None else surface, name="surface"),
    )
    num_frames = source.num_frames
    r = np.broadcast_to(np.asarray(ratio, dtype=np.float64), (num_frames,))
    clear = ground.clearance_at(np.arange(num_frames))  # (F, K)
    mapped = np.empty((num_frames, len(target_points), 3))
    for k, (side, point) in enumerate(zip(contacts.sides, target_points, strict=True)):
        hip_s, hip_t = roles_source[f"{side}_hip"], roles_target[f"{side}_hip"]
        ankle_s, ankle_t = roles_source[f"{side}_ankle"], roles_target[f"{side}_ankle"]
        ankle = pos_t[:, hip_t] + r[:, None] * (pos_s[:, ankle_s] - pos_s[:, hip_s])
        mapped[:, k] = ankle + (pos_t[:, point] - pos_t[:, ankle_t])
    goals = {int(p): np.full((num_frames, 3), np.nan) for p in target_points}
    # bone path from the ankle to each foot point: a float, or (F,) with per-frame bones
    bone_path = [
        initial.skeleton.path_length(roles_target[f"{side}_ankle"], int(p), initial.translations)
        for side, p in zip(contacts.sides, target_points, strict=True)
    ]

    def on_ground(g: Array, k: int, frames: NDArray[np.intp]) -> Array:
        """``g`` (3,) at each of ``frames`` (N, 3), lifted onto the ground plus point k's
        clearance at that frame (the same rows unless the bones change)."""
        rows = np.tile(g, (len(frames), 1))
        rows[:, UP] = ground.height(g[horizontal][None])[0] + clear[frames, k]
        return rows

    for side in ("left", "right"):
        cols = [k for k, s in enumerate(contacts.sides) if s == side]
        ankle_t = roles_target[f"{side}_ankle"]
        anchor = next((k for k in cols if target_points[k] == ankle_t), None)
        for start, end in runs(np.asarray(contacts.mask[:, cols].any(axis=1))):  # one footprint
            window = slice(start, end)
            frames = np.arange(start, end)
            mask = {k: contacts.mask[window, k] for k in cols}
            a_goal = None
            if anchor is not None and mask[anchor].any():
                others = np.zeros(end - start, bool)
                for k in cols:
                    if k != anchor:
                        others |= mask[k]
                flat = mask[anchor] & others
                use = flat if flat.any() else mask[anchor]
                a_goal = on_ground(mapped[window][use, anchor].mean(axis=0), anchor, frames)
                goals[int(target_points[anchor])][window][mask[anchor]] = a_goal[mask[anchor]]
            for k in cols:
                if k == anchor or not mask[k].any():
                    continue
                point = int(target_points[k])
                both = mask[k] & mask[anchor] if anchor is not None else np.zeros_like(mask[k])
                if a_goal is not None and both.any():  # the frame's foot length from the ankle
                    # the foot's length per unit bone path over the flat-foot frames, times
                    # each frame's bone path: the frame's own foot when its bones change
                    bones = np.broadcast_to(bone_path[k], (num_frames,))[window]
                    dist = np.linalg.norm(
                        pos_t[window][both, point] - pos_t[window][both, ankle_t], axis=1
                    )
                    per_bone = np.divide(
                        dist, bones[both], out=np.zeros_like(dist), where=bones[both] > 0
                    )
                    length = bones[mask[k]] * per_bone.mean()  # (n,)
                    direction = (mapped[window][both, k] - mapped[window][both, anchor]).mean(
                        axis=0
                    )
                    direction[UP] = 0.0
                    direction /= max(np.linalg.norm(direction), 1e-12)
                    ankle = a_goal[mask[k]]
                    g = ankle.copy()
                    for _ in range(50):  # its height depends on the ground under it
                        y = ground.height(g[:, horizontal]) + clear[frames[mask[k]], k]
                        moved = np.abs(y - g[:, UP])
                        reach = np.sqrt(np.maximum(length**2 - (y - ankle[:, UP]) ** 2, 0.0))
                        g = ankle + reach[:, None] * direction
                        g[:, UP] = y
                        if (moved < 1e-12 * length).all():
                            break
                else:
                    g = on_ground(mapped[window][mask[k], k].mean(axis=0), k, frames[mask[k]])
                goals[point][window][mask[k]] = g

    # A toe tip (an end site beyond a toe joint) gets no goal: it follows the toe bone,
    # which no limb IK turns, and a tip placed on the ground a foot's length from the
    # toe could not be met with the toe on it too (a long-footed character's toe bone
    # tilts: the two goals fought frame by frame, and the tip's easing in and out of
    # its own plants switched the foot's goals between branches). A foot without a toe
    # joint is held by its tip.
    for side in ("left", "right"):
        toe, tip = (roles_target.get(f"{side}_{r}") for r in ("toe", "toe_tip"))
        if toe in goals and tip in goals and tip >= initial.skeleton.num_joints:
            goals[int(tip)][:] = np.nan

    def smootherstep(u: float) -> float:  # C2: zero slope and curvature at both ends
        return u**3 * (u * (6.0 * u - 15.0) + 10.0)

    transitions = {}
    for k, point in enumerate(target_points):
        goal = goals[int(point)]
        planted = np.isfinite(goal).all(axis=1)
        own = pos_s[:, contacts.points[k]]  # the source point's own path
        weight = np.zeros(num_frames)
        pull = np.zeros((num_frames, 3))  # Σ w · track
        for start, end in runs(planted):
            for edge, outward in (
                (start, range(start - 1, start - blend - 1, -1)),
                (end - 1, range(end, end + blend)),
            ):
                for step, f in enumerate(outward, start=1):
                    if not 0 <= f < num_frames or planted[f]:
                        break
                    w = smootherstep(1.0 - step / (blend + 1.0))
                    # the source point's motion from the edge, taken up over the first
                    # half of the blend: the track leaves (and reaches) the plant at rest
                    follow = smootherstep(min(1.0, 2.0 * step / (blend + 1.0)))
                    track = goal[edge] + follow * r[f] * (own[f] - own[edge])
                    track[UP] = max(
                        track[UP], ground.height(track[horizontal][None])[0] + clear[f, k]
                    )
                    weight[f] += w
                    pull[f] += w * track
        have = weight > 0
        if have.any():
            tr = np.full((num_frames, 4), np.nan)
            tr[have, :3] = pull[have] / weight[have, None]
            tr[have, 3] = np.minimum(weight[have], 1.0)
            transitions[int(point)] = tr
    return Constraints(
        num_frames=num_frames,
        positions=goals,
        transitions=transitions,
        contact_points=frozenset(int(p) for p in target_points),
        ground=ground,
    )


_EDIT_KEYS = {"joint", "frame", "frames", "position", "offset", "orientation"}


def parse_constraints(text: str, motion: Motion, *, name: str = "<string>") -> Constraints:
    """Constraints for ``retarget edit`` from JSON text.

    The document is a list (or ``{"constraints": [...]}``) of objects::

        {"joint": "LeftHand", "frame": 120, "position": [x, y, z]}
        {"joint": "Hips", "frame": 300, "offset": [0, -20, 0]}
        {"joint": "LeftFoot", "frames": [10, 40], "position": [x, y, z],
         "orientation": [w, x, y, z]}

    ``joint`` names a joint or end site; ``frame`` one frame or ``frames``
    ``[first, last]`` (inclusive) an interval; ``position`` a world position
    held over the interval, or ``offset`` a displacement from the point's
    position in ``motion`` at each frame; ``orientation`` a world rotation of
    the point's frame (w, x, y, z).

    Raises
    ------
    FormatError
        Naming the line of the offending entry and what was expected.
    """
    import json

    from ..core.kinematics import positions as motion_positions

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(name, exc.lineno, f"invalid JSON: {exc.msg}") from None
    entries = doc.get("constraints") if isinstance(doc, dict) else doc
    if not isinstance(entries, list) or not entries:
        raise FormatError(
            name, 1, 'expected a non-empty list of constraints (or {"constraints": [...]})'
        )
    lines = _entry_lines(text, len(entries))
    sk = motion.skeleton
    num_frames = motion.num_frames
    pos = motion_positions(motion)
    positions: dict[int, Array] = {}
    orientations: dict[int, Array] = {}
    for k, entry in enumerate(entries):
        line = lines[k]

        def bad(message: str, line: int | None = line, k: int = k) -> FormatError:
            return FormatError(name, line, f"constraint {k + 1}: {message}")

        if not isinstance(entry, dict):
            raise bad(
                "expected an object with 'joint', 'frame' or 'frames', "
                "and 'position', 'offset' or 'orientation'"
            )
        unknown = set(entry) - _EDIT_KEYS
        if unknown:
            raise bad(f"unknown keys {sorted(unknown)}; keys: {', '.join(sorted(_EDIT_KEYS))}")
        try:
            point = sk.index(entry.get("joint", ""))
        except RetargetError as exc:
            raise bad(str(exc)) from None
        if ("frame" in entry) == ("frames" in entry):
            raise bad("give exactly one of 'frame' or 'frames'")
        span = [entry["frame"]] * 2 if "frame" in entry else entry["frames"]
        if not (
            isinstance(span, list)
            and len(span) == 2
            and all(isinstance(f, int) for f in span)
            and 0 <= span[0] <= span[1] < num_frames
        ):
            raise bad(
                f"frames must be whole numbers with 0 <= first <= last < {num_frames}, got {span}"
            )
        frames = slice(span[0], span[1] + 1)
        if not {"position", "offset", "orientation"} & set(entry):
            raise bad("say what to change: 'position', 'offset' or 'orientation'")
        if "position" in entry and "offset" in entry:
            raise bad("give 'position' or 'offset', not both")
        for key, width in (("position", 3), ("offset", 3), ("orientation", 4)):
            if key in entry:
                value = np.asarray(entry[key], dtype=object)
                if value.shape != (width,) or not all(isinstance(v, (int, float)) for v in value):
                    raise bad(f"'{key}' must be {width} numbers, got {entry[key]!r}")
                if not np.all(np.isfinite(value.astype(float))):
                    raise bad(f"'{key}' must be finite")
        goal = positions.setdefault(point, np.full((num_frames, 3), np.nan))
        if "position" in entry:
            goal[frames] = np.asarray(entry["position"], dtype=float)
        elif "offset" in entry:
            goal[frames] = pos[frames, point] + np.asarray(entry["offset"], dtype=float)
        if "orientation" in entry:
            q = np.asarray(entry["orientation"], dtype=float)
            if np.linalg.norm(q) < 1e-9:
                raise bad("'orientation' must be a non-zero quaternion (w, x, y, z)")
            rot = orientations.setdefault(point, np.full((num_frames, 4), np.nan))
            rot[frames] = quat.normalize(q)
        if not np.isfinite(goal).any():
            positions.pop(point)
    return Constraints(num_frames=num_frames, positions=positions, orientations=orientations)


def _entry_lines(text: str, count: int) -> list[int | None]:
    """Best-effort line of each top-level entry: the lines holding a '"joint"' key, in order."""
    found = [k + 1 for k, line in enumerate(text.splitlines()) if '"joint"' in line]
    return [found[k] if k < len(found) else None for k in range(count)]
