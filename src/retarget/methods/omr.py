"""Online motion retargeting over a whole clip (Choi & Ko 2000), ``--method omr``.

Feeds the clip frame by frame to :class:`retarget.online.OnlineRetargeter`;
nothing reads ahead, so frames ``0..t`` of the output are the same whether
the clip ends at ``t`` or goes on. Every input of frame ``n`` comes from
source frame ``n`` and, for the floor and the origin of scaling, frame 0:

* ``θ_src``: the source's joint rotations (by name), its root's horizontal
  path (below) and its height: where the target in the first frame's pose
  stands on the floor, plus the source's rise and fall from there scaled by
  the ratio of leg lengths (§6.1: "the pelvis motion along y should be adapted
  to the height difference"; the legs are what hold it up). The leg ratio
  alone put ``blubby``'s pelvis too low for its legs (its hips hang farther
  below its root and its ankles stand higher, bones of another ratio): the
  toe goals lifted it 6 % of height above ``θ_src`` for good, and the
  imitation task, pulling it back through a projector that changes with the
  pose, shook it;
* goals: the source's toe tips (and, for ``setup="full"``, hand tips) and the
  pelvis's horizontal position, made in one of three ways (``goals``):

  - ``"reach"`` (the default, beyond the paper): the source's stride where the
    target's legs can take it, shortened by the ratio of leg lengths where
    they are shorter (``stride = min(1, leg ratio)``: the root's horizontal
    path and the ankles' scaled by it about the first frame's root on the
    floor), and feet of the target's size: a toe tip's goal is its ankle's
    goal plus the source's ankle-to-toe-tip vector times the ratio of foot
    lengths, the feet's heights above the floor scaled by that ratio; hand
    goals keep the source's offset from the pelvis. With the paper's goals a
    character with legs 65 % of the source's (``blubby``) must take strides
    1.5 times as long for its legs: they stay near full extension, the root
    drops and tilts to reach, and the toe tip of a foot 1.15 times the
    source's cannot meet the source's toe tip while its heel is down. On the
    real walks of issue 24 onto ``blubby``, the same filter with the paper's
    goals steps a knee up to 3.2 % of height beyond the source's in a frame
    (a 24 Hz walk), skates up to 1.9 times the source's and jerks up to 2.6
    times; with these, at most 0.8 %, 1.1 and 1.45 times;
  - ``"source"``: the source's own positions, unscaled, as in the paper;
  - ``"height"`` (``scaled=True``): every goal and the root's path scaled by
    the height ratio about the first frame's root on the floor.

The root's translation is 100 times as rigid as a joint in the step's
minimum norm, its rotation 10 times (``root_rigidity``): with a pelvis height
that fits the legs, the root need not rise and fall to meet the feet, and the
upper body, which the lower set-up carries on the root, stays as smooth as
the source's (on the real walks of issue 24: jerk ratio at most 1.45 and skate
1.09 times the source's, against 1.50 and 1.18 with a translation as rigid as
the rotation).

Set-ups: ``"lower"`` is the paper's walking experiment (the legs and the root
move: 30 DOF for a 3-DOF-joint lower body; the toe tips and the pelvis x, z
are the end-effectors; the stance toe is the base). ``"full"`` moves every
joint and adds both hands.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..contacts import UP
from ..cuts import find_cuts
from ..errors import RetargetError
from ..kinematics import Pose, forward_kinematics, positions
from ..motion import Motion
from ..online.omr import BaseSwitching, Effector, Foot, OnlineRetargeter
from ..result import Result
from ..roles import find_roles, height
from ..skeleton import Skeleton
from ._base import Option, check_same_hierarchy
from .copy import leg_length

__all__ = ["OMRPlan", "enhance_motion", "omr_plan", "omr_retarget", "run_filter"]

Array = NDArray[np.float64]

SETUPS = ("lower", "full")
GOALS = ("reach", "source", "height")


def omr_retarget(
    source: Motion,
    target: Skeleton,
    *,
    setup: str = "lower",
    goals: str = "reach",
    scaled: bool = False,
    iterations: int = 2,
    gains: tuple[float, float] = (1.0, 0.3),
    damping: float = 0.01,
    min_dexterity: float = 0.0,
    max_input: float = 0.1,
    root_rigidity: tuple[float, float] = (100.0, 10.0),
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
    goals : {"reach", "source", "height"}
        How the goals and the root's path are made (module docstring).
    scaled : bool
        ``goals="height"`` (the command line's ``--scaled-goals``).
    iterations, gains, damping, min_dexterity, max_input
        See :class:`retarget.online.OnlineRetargeter`.
    hold_heels, single_base : bool
        Hold a resting heel (ankle) as well as a resting toe tip; at most one
        foot held at a time, as in the paper (:class:`~retarget.online.BaseSwitching`).
    root_rigidity : (float, float)
        Rigidity of the root's translation (per height) and rotation (per
        radian) against the joints' 1 (module docstring).

    Returns
    -------
    Result
        ``goals``: the positions each end-effector tracked (the base foot's
        held position while it is the base); ``report``: tracking error per
        end-effector, frames/s, frames with lowered gains or clamped inputs,
        base switches.
    """
    t0 = time.perf_counter()
    check_same_hierarchy(source.skeleton, target)
    plan = omr_plan(
        source.skeleton,
        target,
        source.root_position[0],
        source.rotations[0],
        setup=setup,
        goals=goals,
        scaled=scaled,
        hold_heels=hold_heels,
        pelvis_priority=pelvis_priority,
        heel_priority=heel_priority,
        heel_reach=heel_reach,
    )
    root, rotations, inputs, orientations = plan.inputs(source.root_position, source.rotations)
    filt = plan.retargeter(
        source.fps,
        single_base=single_base,
        rest_speed=rest_speed,
        release_speed=release_speed,
        damping=damping,
        gains=gains,
        min_dexterity=min_dexterity,
        max_input=max_input,
        iterations=iterations,
        root_rigidity=root_rigidity,
    )
    effectors, active, ratio, leg_ratio = plan.effectors, plan.active, plan.ratio, plan.leg_ratio
    names = plan.names
    cuts = find_cuts(source)  # the filter restarts where the source jumps to another pose
    out_root, out_rot, tracked = run_filter(filt, root, rotations, inputs, orientations, cuts)
    motion = Motion(target, out_root, out_rot, source.fps)
    report: dict[str, Any] = {
        "method": "omr",
        "setup": setup,
        "goal_mapping": plan.goals,
        "scaled": plan.goals == "height",
        "ratio": ratio,
        "leg_ratio": leg_ratio,
        "stride": plan.stride,
        "foot_ratio": list(plan.foot_ratios),
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


def run_filter(
    filt: OnlineRetargeter,
    root: Array,
    rotations: Array,
    goals: Array,
    orientations: Array | None = None,
    cuts: ArrayLike = (),
) -> tuple[Array, Array, Array]:
    """Feed a clip to the filter frame by frame: output root (F, 3), rotations (F, J, 4)
    and the goals it tracked (F, K, 3). At the frames ``cuts`` (:func:`retarget.cuts.find_cuts`:
    the source jumps to another pose) the filter is reset instead of stepped, as at the
    first frame: its closed loop would otherwise chase the jump over the next frames."""
    n = len(root)
    out_root = np.empty_like(root)
    out_rot = np.empty((n, filt.skeleton.num_joints, 4))
    tracked = np.empty_like(goals)
    o = (lambda f: None) if orientations is None else (lambda f: orientations[f])
    restarts = set(np.asarray(cuts, dtype=np.intp).tolist())
    for f in range(n):
        if f == 0 or f in restarts:
            out_root[f], out_rot[f] = filt.reset(
                root[f], rotations[f], goals[f], o(f), restart=f > 0
            )
        else:
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


# -- options: what `retarget run --method omr` and RunJob.method_options offer ----------------

OPTIONS = (
    Option(
        "setup",
        "--setup",
        "end-effectors toe tips + pelvis x,z (lower, the paper's walk) or + hands",
        choices=("lower", "full"),
    ),
    Option(
        "scaled",
        "--scaled-goals",
        "goals scaled to the target's height (default: strides its legs can take)",
        const=True,
    ),
)
