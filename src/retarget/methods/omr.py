"""Online motion retargeting over a whole clip (Choi & Ko 2000), ``--method omr``.

Feeds the clip frame by frame to :class:`retarget.online.OnlineRetargeter`;
nothing reads ahead, so frames ``0..t`` of the output are the same whether
the clip ends at ``t`` or goes on. Every input of frame ``n`` comes from
source frame ``n`` and, for the floor and the origin of scaling, frame 0:

* ``θ_src``: the source's joint rotations (by name), its root horizontally
  where the source's is (``scaled=False``, the paper) or scaled by the
  height ratio about the first frame's root, and its height above the floor
  scaled by the ratio of leg lengths (§6.1: "the pelvis motion along y should
  be adapted to the height difference"; the legs are what hold it up);
* goals: the source's toe tips (and, for ``setup="full"``, hand tips) and the
  pelvis's horizontal position, unscaled as in the paper, or scaled about the
  first frame's root on the floor by the height ratio.

Set-ups: ``"lower"`` is the paper's walking experiment (the legs and the root
move: 30 DOF for a 3-DOF-joint lower body; the toe tips and the pelvis x, z
are the end-effectors; the stance toe is the base). ``"full"`` moves every
joint and adds both hands.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import UP
from ..errors import RetargetError
from ..kinematics import Pose, positions
from ..motion import Motion
from ..online.omr import BaseSwitching, Effector, Foot, OnlineRetargeter
from ..result import Result
from ..roles import find_roles, height
from ..skeleton import Skeleton
from ._base import check_same_hierarchy
from .copy import leg_length

__all__ = ["enhance_motion", "omr_retarget", "run_filter"]

Array = NDArray[np.float64]

SETUPS = ("lower", "full")


def omr_retarget(
    source: Motion,
    target: Skeleton,
    *,
    setup: str = "lower",
    scaled: bool = False,
    iterations: int = 2,
    gains: tuple[float, float] = (1.0, 0.3),
    damping: float = 0.01,
    min_dexterity: float = 0.0,
    max_input: float = 0.1,
    root_rigidity: tuple[float, float] = (10.0, 10.0),
    hold_heels: bool = True,
    pelvis_priority: int = 0,
    heel_priority: int = 1,
    heel_reach: float = 0.97,
    single_base: bool = False,
    rest_speed: float = 0.15,
    release_speed: float = 0.3,
) -> Result:
    """Retarget frame by frame by closed-loop inverse rate control.

    Parameters
    ----------
    source : Motion
    target : Skeleton
        Has the source's joints (by name).
    setup : {"lower", "full"}
        End-effectors and moving joints (module docstring).
    scaled : bool
        Scale the goals and the root path by the height ratio (default: the
        source's own trajectories, as in the paper).
    iterations, gains, damping, min_dexterity, max_input
        See :class:`retarget.online.OnlineRetargeter`.
    hold_heels, single_base : bool
        Hold a resting heel (ankle) as well as a resting toe tip; at most one
        foot held at a time, as in the paper (:class:`~retarget.online.BaseSwitching`).
    root_rigidity : (float, float)
        Rigidity of the root's translation (per height) and rotation (per
        radian) against the joints' 1.

    Returns
    -------
    Result
        ``goals``: the positions each end-effector tracked (the base foot's
        held position while it is the base); ``report``: tracking error per
        end-effector, frames/s, frames with lowered gains or clamped inputs,
        base switches.
    """
    if setup not in SETUPS:
        raise RetargetError(f"unknown set-up {setup!r}; choose one of {', '.join(SETUPS)}")
    t0 = time.perf_counter()
    check_same_hierarchy(source.skeleton, target)
    roles_s, roles_t = find_roles(source.skeleton), find_roles(target)
    h_s, h_t = height(source.skeleton, roles_s), height(target, roles_t)
    ratio = h_t / h_s
    pos_s = positions(source)
    feet_s = [
        roles_s[f"{s}_{r}"]
        for s in ("left", "right")
        for r in ("ankle", "toe", "toe_tip")
        if f"{s}_{r}" in roles_s.points
    ]
    floor = float(pos_s[0, feet_s, UP].min())
    origin = source.root_position[0].copy()
    origin[UP] = floor

    def mapped(p: Array) -> Array:
        """Source positions as goals: as they are, or scaled about the origin."""
        return origin + ratio * (p - origin) if scaled else p.copy()

    # θ_src: rotations by name, root placed for the target's size
    rotations = np.tile([1.0, 0.0, 0.0, 0.0], (source.num_frames, target.num_joints, 1))
    rotations[:, target.indices(source.skeleton.names)] = source.rotations
    root = mapped(source.root_position)
    # the pelvis stands as high as the target's legs reach: its height scales by their length
    leg_ratio = leg_length(target, roles_t) / leg_length(source.skeleton, roles_s)
    root[:, UP] = floor + leg_ratio * (source.root_position[:, UP] - floor)

    names = ["left_toe_tip", "right_toe_tip"]
    if setup == "full":
        names += ["left_hand_tip", "right_hand_tip"]
    missing = [
        n
        for n in [*names, "left_ankle", "right_ankle", "left_hip", "right_hip"]
        if n not in roles_s.points or n not in roles_t.points
    ]
    if missing:
        raise RetargetError(f"omr needs the roles {missing} on both skeletons")
    effectors = [Effector(roles_t[n], name=n) for n in names]
    goal_list = [mapped(pos_s[:, roles_s[n]]) for n in names]
    # the feet's world orientations as the source pose would give them on the target
    world = Pose.of(target, root, rotations).world_rotations
    feet = []
    for k, side in enumerate(("left", "right")):
        ankle, hip = roles_t[f"{side}_ankle"], roles_t[f"{side}_hip"]
        heel = orient = -1
        if hold_heels:
            heel = len(effectors)
            effectors.append(
                Effector(
                    ankle,
                    hold_only=True,
                    anchor=hip,
                    reach=heel_reach * target.path_length(hip, ankle),
                    priority=heel_priority,
                    name=f"{side}_ankle",
                )
            )
            goal_list.append(mapped(pos_s[:, roles_s[f"{side}_ankle"]]))
            orient = len(effectors)
            effectors.append(
                Effector(
                    ankle,
                    axes=(),
                    orientation=True,
                    lever=target.path_length(ankle, roles_t[f"{side}_toe_tip"]),
                    priority=heel_priority,
                    name=f"{side}_foot_orientation",
                )
            )
            goal_list.append(np.full((source.num_frames, 3), np.nan))
        feet.append(Foot(k, heel, orient))
    effectors.append(Effector(0, axes=(0, 2), priority=pelvis_priority, name="pelvis_xz"))
    goal_list.append(root)
    goals = np.stack(goal_list, axis=1)
    orientations = np.full((*goals.shape[:2], 4), np.nan)
    for foot in feet:
        if foot.orientation >= 0:
            orientations[:, foot.orientation] = world[:, effectors[foot.orientation].point]

    active = None
    if setup == "lower":
        leg_roles = ("hip", "knee", "ankle", "toe")
        active = [
            roles_t[f"{s}_{r}"]
            for s in ("left", "right")
            for r in leg_roles
            if f"{s}_{r}" in roles_t.points and roles_t[f"{s}_{r}"] < target.num_joints
        ]
    filt = OnlineRetargeter(
        target,
        effectors,
        height=h_t,
        fps=source.fps,
        active_joints=active,
        base=BaseSwitching(
            feet=tuple(feet),
            single=single_base,
            rest_speed=rest_speed,
            release_speed=release_speed,
        ),
        damping=damping,
        gains=gains,
        min_dexterity=min_dexterity,
        max_input=max_input,
        iterations=iterations,
        rigidity=np.concatenate([root_rigidity, np.ones(target.num_joints - 1)]),
    )
    out_root, out_rot, tracked = run_filter(filt, root, rotations, goals, orientations)
    motion = Motion(target, out_root, out_rot, source.fps)
    report: dict[str, Any] = {
        "method": "omr",
        "setup": setup,
        "scaled": scaled,
        "ratio": ratio,
        "leg_ratio": leg_ratio,
        "degrees_of_freedom": int(
            3 + 3 * (target.num_joints if active is None else len(active) + 1)
        ),
        "constraint_rows": 2 + 3 * len(names),  # plus 3 per held heel
        **filt.report(),
        "seconds": time.perf_counter() - t0,
    }
    goals_out = {
        target.point_names[e.point]: tracked[:, k] for k, e in enumerate(effectors[:-1]) if e.axes
    }
    return Result(motion, report, goals_out)


def run_filter(
    filt: OnlineRetargeter,
    root: Array,
    rotations: Array,
    goals: Array,
    orientations: Array | None = None,
) -> tuple[Array, Array, Array]:
    """Feed a clip to the filter frame by frame: output root (F, 3), rotations (F, J, 4)
    and the goals it tracked (F, K, 3)."""
    n = len(root)
    out_root = np.empty_like(root)
    out_rot = np.empty((n, filt.skeleton.num_joints, 4))
    tracked = np.empty_like(goals)
    o = (lambda f: None) if orientations is None else (lambda f: orientations[f])
    out_root[0], out_rot[0] = filt.reset(root[0], rotations[0], goals[0], o(0))
    tracked[0] = filt.goals
    for f in range(1, n):
        out_root[f], out_rot[f] = filt.step(root[f], rotations[f], goals[f], o(f))
        tracked[f] = filt.goals
    return out_root, out_rot, tracked


def enhance_motion(
    motion: Motion,
    measured: Mapping[str, ArrayLike],
    *,
    iterations: int = 2,
    damping: float = 0.001,
) -> Result:
    """Correct measured joint angles so that measured end-effector positions are met (§5).

    The motion's own angles are the secondary task (``θ_src``), the measured
    positions the primary one, on the same character: each frame's error at
    the end-effectors is removed by the smallest change of the joints, spread
    over every joint of the chain (the minimum-norm step), so the angles move
    toward the truth by the part of their error the positions reveal.

    Parameters
    ----------
    motion : Motion
        The measured (noisy) motion.
    measured : mapping of str to array_like, shape (F, 3)
        Measured world positions of points (joints or end sites), by name, in
        the motion's unit; NaN rows are frames without a measurement.
    iterations, damping
        See :class:`retarget.online.OnlineRetargeter` (gains ``I``, plain
        minimum norm: the paper's filter).

    Returns
    -------
    Result
        ``report``: the end-effector error before (forward kinematics of the
        measured angles) and after, per point.
    """
    sk = motion.skeleton
    names = list(measured)
    if not names:
        raise RetargetError("enhance needs measured positions of at least one point")
    unknown = [n for n in names if n not in sk.point_names]
    if unknown:
        raise RetargetError(f"unknown points {unknown}; the skeleton has {list(sk.point_names)}")
    goals = np.stack([np.asarray(measured[n], dtype=np.float64) for n in names], axis=1)
    if goals.shape != (motion.num_frames, len(names), 3):
        raise RetargetError(
            f"expected measured positions of shape ({motion.num_frames}, 3) per point, "
            f"got {goals.shape[0]} frames"
        )
    t0 = time.perf_counter()
    h = height(sk)
    filt = OnlineRetargeter(
        sk,
        [Effector(sk.index(n), name=n) for n in names],
        height=h,
        fps=motion.fps,
        damping=damping,
        iterations=iterations,
    )
    root, rot, _ = run_filter(filt, motion.root_position, motion.rotations, goals)
    out = Motion(sk, root, rot, motion.fps, motion.translations)
    points = [sk.index(n) for n in names]

    def errors(m: Motion) -> dict[str, float]:
        d = np.linalg.norm(positions(m)[:, points] - goals, axis=-1)
        return {n: float(np.nanmean(d[:, k])) for k, n in enumerate(names)}

    report = {
        "method": "enhance",
        "points": names,
        "mean_error_before": errors(motion),
        "mean_error_after": errors(out),
        **filt.report(),
        "seconds": time.perf_counter() - t0,
    }
    return Result(out, report, {n: goals[:, k] for k, n in enumerate(names)})
