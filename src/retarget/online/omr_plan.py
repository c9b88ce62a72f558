"""Choi & Ko 2000 on a source's frames: how each source pose becomes the filter's
inputs (:class:`OMRPlan`), and the online method that does it frame by frame
(:class:`OMRRetargeter`: a source :class:`~retarget.frames.PoseFrame` in,
the target's out).

Every input of frame ``n`` comes from source frame ``n`` and, for the floor and
the origin of scaling, the first frame (:func:`omr_plan`; the mapping itself:
:mod:`retarget.methods.omr`'s docstring):

* ``θ_src``: the source's joint rotations (by name), its root's horizontal
  path (scaled by ``stride`` about the first frame's root on the floor, goals
  ``"reach"``) and its height (where the target in the first frame's pose
  stands on the floor, plus the source's rise and fall scaled by the ratio of
  leg lengths);
* goals ``x1``: the toe tips (and hand tips, set-up ``"full"``), the heels
  (held only) and the pelvis's horizontal position, per the mapping
  ``goals`` (``"reach"``, ``"source"``, ``"height"``); world orientation
  goals of the feet where the heels are held.

The filter (:class:`~retarget.online.omr.OnlineRetargeter`) takes them as a
:class:`~retarget.frames.GoalFrame`, so ``OMRRetargeter.step`` is
``filter.step(GoalFrame(*plan.inputs(pose)))``; the offline
:func:`retarget.methods.omr.omr_retarget` is a loop over it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._arrays import Array
from ..contacts import UP
from ..errors import RetargetError
from ..frames import GoalFrame, PoseFrame
from ..kinematics import Pose, forward_kinematics
from ..roles import find_roles, height, leg_length
from ..skeleton import Skeleton
from .omr import BaseSwitching, Effector, Foot, OnlineRetargeter

__all__ = ["GOALS", "SETUPS", "OMRPlan", "OMRRetargeter", "omr_plan"]


#: End-effector set-ups (:func:`omr_plan`).
SETUPS = ("lower", "full")
#: Goal mappings (:func:`omr_plan`).
GOALS = ("reach", "source", "height")


@dataclass(frozen=True)
class OMRPlan:
    """How each source frame becomes the filter's inputs (module docstring): fixed by the
    skeletons and the first frame (the floor and the origin of scaling), so a live stream
    maps its frames one at a time exactly as a whole clip maps them all at once.

    ``effectors`` (:class:`~retarget.online.Effector`) are the primary task's rows,
    ``names`` the end-effector roles, ``active`` the joints the filter may turn
    (None: all).
    """

    source: Skeleton
    target: Skeleton
    effectors: tuple[Effector, ...]
    feet: tuple[Foot, ...]
    active: tuple[int, ...] | None
    names: tuple[str, ...]
    joints: NDArray[np.intp]  # (J_src,) target joint of each source joint
    goal_points: NDArray[
        np.intp
    ]  # (K,) source point per goal row; -1: no goal (orientation), -2: the root
    goal_ankles: NDArray[np.intp]  # (K,) a foot row's source ankle (-1: not a foot row)
    goal_feet: NDArray[np.intp]  # (K,) a foot row's side, index into foot_ratios (-1: none)
    floor: float
    origin: Array  # (3,)
    ratio: float
    leg_ratio: float
    stand: float  # the root's height: floor + stand + leg_ratio (the source's above the floor)
    goals: str
    stride: float  # "reach": the scale of the horizontal paths
    foot_ratios: tuple[float, ...]  # per side: target's foot length over the source's
    height: float  # the target's

    def _mapped(self, p: Array) -> Array:
        """Source positions as goals: as they are, or scaled about the origin ("height")."""
        return self.origin + self.ratio * (p - self.origin) if self.goals == "height" else p.copy()

    def _strode(self, p: Array) -> Array:
        """Source positions with their horizontal offsets from the origin times the stride."""
        out = np.array(p, dtype=np.float64)
        for c in (0, 2):
            out[..., c] = self.origin[c] + self.stride * (out[..., c] - self.origin[c])
        return out

    def inputs(self, root: ArrayLike, rotations: ArrayLike) -> tuple[Array, Array, Array, Array]:
        """The filter's inputs of source frames.

        Parameters
        ----------
        root : array_like, shape (F, 3)
        rotations : array_like, shape (F, J_src, 4)

        Returns
        -------
        root : (F, 3), rotations : (F, J, 4)
            ``θ_src``: the rotations by name, the root placed for the target's size.
        goals : (F, K, 3)
            Position goals per effector row (NaN for orientation rows).
        orientations : (F, K, 4)
            World orientation goals (NaN for position rows).
        """
        root = np.asarray(root, dtype=np.float64)
        rotations = np.asarray(rotations, dtype=np.float64)
        pos_s = forward_kinematics(self.source, root, rotations)[0]
        n = len(root)
        target = self.target
        out_rot = np.tile([1.0, 0.0, 0.0, 0.0], (n, target.num_joints, 1))
        out_rot[:, self.joints] = rotations
        reach = self.goals == "reach"
        out_root = self._strode(root) if reach else self._mapped(root)
        # the pelvis stands as high as the target's legs reach: its height above where it
        # stands in the first frame's pose scales by their length
        out_root[:, UP] = self.floor + self.stand + self.leg_ratio * (root[:, UP] - self.floor)
        goals = np.full((n, len(self.effectors), 3), np.nan)
        for k, p in enumerate(self.goal_points):
            if p == -2:
                goals[:, k] = out_root
            elif p < 0:
                continue
            elif not reach:
                goals[:, k] = self._mapped(pos_s[:, p])
            elif self.goal_feet[k] >= 0:  # a foot of the target's size at the stride's ankle
                f = self.foot_ratios[self.goal_feet[k]]
                ankle = pos_s[:, self.goal_ankles[k]]
                goal = self._strode(ankle) + f * (pos_s[:, p] - ankle)
                goal[:, UP] = self.floor + f * (pos_s[:, p, UP] - self.floor)
                goals[:, k] = goal
            else:  # a hand: where the source's is from its pelvis
                goals[:, k] = out_root + (pos_s[:, p] - root)
        orientations = np.full((n, len(self.effectors), 4), np.nan)
        # the feet's world orientations as the source pose would give them on the target
        turning = [f.orientation for f in self.feet if f.orientation >= 0]
        if turning:
            world = Pose.of(target, out_root, out_rot).world_rotations
            for k in turning:
                orientations[:, k] = world[:, self.effectors[k].point]
        return out_root, out_rot, goals, orientations

    def retargeter(
        self,
        fps: float,
        *,
        single_base: bool = False,
        rest_speed: float = 0.15,
        release_speed: float = 0.3,
        root_rigidity: tuple[float, float] = (100.0, 10.0),
        iterations: int = 2,
        gains: tuple[float, float] = (1.0, 0.3),
        damping: float = 0.01,
        min_dexterity: float = 0.0,
        max_input: float = 0.1,
    ) -> OnlineRetargeter:
        """The filter, with :func:`omr_retarget`'s defaults (parameters: there and
        :class:`~retarget.online.OnlineRetargeter`)."""
        return OnlineRetargeter(
            self.target,
            self.effectors,
            height=self.height,
            fps=fps,
            active_joints=self.active,
            base=BaseSwitching(
                feet=self.feet,
                single=single_base,
                rest_speed=rest_speed,
                release_speed=release_speed,
            ),
            rigidity=np.concatenate([root_rigidity, np.ones(self.target.num_joints - 1)]),
            iterations=iterations,
            gains=gains,
            damping=damping,
            min_dexterity=min_dexterity,
            max_input=max_input,
        )


def omr_plan(
    source: Skeleton,
    target: Skeleton,
    first_root: ArrayLike,
    first_rotations: ArrayLike,
    *,
    setup: str = "lower",
    goals: str = "reach",
    scaled: bool = False,
    hold_heels: bool = True,
    pelvis_priority: int = 0,
    heel_priority: int = 1,
    heel_reach: float = 0.97,
) -> OMRPlan:
    """The :class:`OMRPlan` of a source skeleton, its first frame and a target
    (parameters as :func:`omr_retarget`)."""
    if setup not in SETUPS:
        raise RetargetError(f"unknown set-up {setup!r}; choose one of {', '.join(SETUPS)}")
    if scaled:
        goals = "height"
    if goals not in GOALS:
        raise RetargetError(f"unknown goals {goals!r}; choose one of {', '.join(GOALS)}")
    roles_s, roles_t = find_roles(source), find_roles(target)
    h_s, h_t = height(source, roles_s), height(target, roles_t)
    first_root = np.asarray(first_root, dtype=np.float64)
    pos_0 = forward_kinematics(source, first_root, first_rotations)[0]
    feet_s = [
        roles_s[f"{s}_{r}"]
        for s in ("left", "right")
        for r in ("ankle", "toe", "toe_tip")
        if f"{s}_{r}" in roles_s.points
    ]
    floor = float(pos_0[feet_s, UP].min())
    origin = first_root.copy()
    origin[UP] = floor
    leg_ratio = float(leg_length(target, roles_t) / leg_length(source, roles_s))
    # the target in the first frame's pose stands on the floor: its root that high above
    # its lowest foot point (what the leg ratio alone leaves out: the drop from the root to
    # the hips and the height of the ankles, bones of other ratios)
    joints = target.indices(source.names)
    rotations_0 = np.tile([1.0, 0.0, 0.0, 0.0], (target.num_joints, 1))
    rotations_0[joints] = np.asarray(first_rotations, dtype=np.float64)
    feet_t = [
        roles_t[f"{s}_{r}"]
        for s in ("left", "right")
        for r in ("ankle", "toe", "toe_tip")
        if f"{s}_{r}" in roles_t.points
    ]
    pos_t = forward_kinematics(target, np.zeros(3), rotations_0)[0]
    stand = float(-pos_t[feet_t, UP].min() - leg_ratio * (first_root[UP] - floor))
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
    goal_points = [roles_s[n] for n in names]
    sides = ("left", "right")
    foot_ratios = tuple(
        _ratio(
            target.path_length(roles_t[f"{s}_ankle"], roles_t[f"{s}_toe_tip"]),
            source.path_length(roles_s[f"{s}_ankle"], roles_s[f"{s}_toe_tip"]),
            h_t / h_s,
        )
        for s in sides
    )
    # the foot rows: the toe tips (and, below, the heels), by side
    goal_feet = [sides.index(n.split("_")[0]) if n.endswith("toe_tip") else -1 for n in names]
    goal_ankles = [
        roles_s[f"{n.split('_')[0]}_ankle"] if n.endswith("toe_tip") else -1 for n in names
    ]
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
            goal_points.append(roles_s[f"{side}_ankle"])
            goal_ankles.append(roles_s[f"{side}_ankle"])
            goal_feet.append(k)
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
            goal_points.append(-1)
            goal_ankles.append(-1)
            goal_feet.append(-1)
        feet.append(Foot(k, heel, orient))
    effectors.append(Effector(0, axes=(0, 2), priority=pelvis_priority, name="pelvis_xz"))
    goal_points.append(-2)
    goal_ankles.append(-1)
    goal_feet.append(-1)
    active = None
    if setup == "lower":
        leg_roles = ("hip", "knee", "ankle", "toe")
        active = tuple(
            roles_t[f"{s}_{r}"]
            for s in ("left", "right")
            for r in leg_roles
            if f"{s}_{r}" in roles_t.points and roles_t[f"{s}_{r}"] < target.num_joints
        )
    return OMRPlan(
        source=source,
        target=target,
        effectors=tuple(effectors),
        feet=tuple(feet),
        active=active,
        names=tuple(names),
        joints=joints,
        goal_points=np.array(goal_points, dtype=np.intp),
        goal_ankles=np.array(goal_ankles, dtype=np.intp),
        goal_feet=np.array(goal_feet, dtype=np.intp),
        floor=floor,
        origin=origin,
        ratio=h_t / h_s,
        leg_ratio=leg_ratio,
        stand=stand,
        goals=goals,
        stride=min(1.0, leg_ratio),
        foot_ratios=foot_ratios,
        height=h_t,
    )


def _ratio(target: float, source: float, otherwise: float) -> float:
    """``target / source``, or ``otherwise`` for a source length of zero."""
    return target / source if source > 0.0 else otherwise


def _keywords(function: Any) -> frozenset[str]:
    """The keyword-only parameters of ``function``."""
    kinds = inspect.signature(function).parameters.values()
    return frozenset(p.name for p in kinds if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """:class:`OMRRetargeter`'s keywords split into :func:`omr_plan`'s and
    :meth:`OMRPlan.retargeter`'s; TypeError for one that is neither's."""
    plan, filt = _keywords(omr_plan), _keywords(OMRPlan.retargeter)
    unknown = sorted(set(options) - plan - filt)
    if unknown:
        raise TypeError(f"OMRRetargeter got unexpected keyword arguments {unknown}")
    return (
        {k: v for k, v in options.items() if k in plan},
        {k: v for k, v in options.items() if k in filt},
    )


class OMRRetargeter:
    """Online motion retargeting (Choi & Ko 2000) of a source's frames: a
    :class:`~retarget.frames.OnlineMethod` of
    :class:`~retarget.frames.PoseFrame` (the source's pose) in and
    :class:`~retarget.frames.PoseFrame` (the target's) out.

    The first frame fixes the :class:`OMRPlan` (the floor and the origin of
    scaling, :func:`omr_plan`), kept for good: :meth:`reset` restarts the filter
    only, so the frames after a gap or a cut map as the first ones did. Each
    :meth:`step` is ``filter.step(GoalFrame(*plan.inputs(frame)))``.

    Parameters
    ----------
    source, target : Skeleton
        ``target`` has the source's joints (by name; else
        :class:`~retarget.errors.UnknownJointError`).
    fps : float
        The source's frame rate (Hz).
    **options
        Keywords, each with its default where it is defined: the plan's
        (:func:`omr_plan`: setup, goals, scaled, hold_heels, pelvis_priority,
        heel_priority, heel_reach) and the filter's (:meth:`OMRPlan.retargeter`:
        single_base, rest_speed, release_speed, root_rigidity, iterations, gains,
        damping, min_dexterity, max_input); another raises TypeError.

    Attributes
    ----------
    plan : OMRPlan or None
        Fixed by the first frame (None before it).
    filter : OnlineRetargeter or None
        The filter (None before the first frame); its :attr:`~OnlineRetargeter.goals`
        are the goals the last step tracked, its ``report()`` the stream's.
    """

    def __init__(self, source: Skeleton, target: Skeleton, *, fps: float, **options: Any) -> None:
        target.indices(source.names)  # the target has the source's joints
        self.source = source
        self.target = target
        self.fps = float(fps)
        self._plan_options, self._filter_options = _split_options(options)
        self.plan: OMRPlan | None = None
        self.filter: OnlineRetargeter | None = None
        self._restart = False

    def reset(self, *, restart: bool = False) -> None:
        """Forget the past: the next :meth:`step` is the filter's first frame (the plan
        is kept).

        Parameters
        ----------
        restart : bool
            The same stream goes on after a cut: the filter's report carries on
            (:meth:`OnlineRetargeter.reset`).
        """
        if self.filter is not None:
            self.filter.reset(restart=restart)

    def step(self, frame: PoseFrame) -> PoseFrame:
        """The target's pose for the source's next pose.

        Parameters
        ----------
        frame : PoseFrame
            The source's pose: root position (3,), rotations (J_src, 4).

        Returns
        -------
        PoseFrame
            The target's pose: root position (3,), rotations (J, 4).
        """
        root, rotations = frame.root_position, frame.rotations
        if rotations.shape != (self.source.num_joints, 4):
            raise ValueError(
                f"Expected `rotations` of shape ({self.source.num_joints}, 4), "
                f"got {rotations.shape}"
            )
        if self.plan is None or self.filter is None:
            self.plan = omr_plan(self.source, self.target, root, rotations, **self._plan_options)
            self.filter = self.plan.retargeter(self.fps, **self._filter_options)
        r, q, goals, turns = self.plan.inputs(root[None], rotations[None])
        return self.filter.step(GoalFrame(r[0], q[0], goals[0], turns[0]))
