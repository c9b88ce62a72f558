"""Hybrid inverse kinematics for humanoids (Lee & Shin 1999, §5.2).

Reduced coordinates: the root translation and rotation, the torso joints that
carry an active arm, and one elbow-circle (swivel) angle per constrained limb
are the parameters; every evaluation places each constrained limb in closed
form (:func:`retarget.ik.limb.solve_limb`). The objective is eq. (4) + (6):

.. math::
    g = \\tfrac12 \\sum_j α_j |v_j|^2 + w_g \\sum_{limbs} (ρ_l / h)^2
        + w_g\\,\\mathrm{penalty}(\\text{other tasks}) + w_{lim} \\sum \\mathrm{violation}^2

with ``v_j = log(q_ref,j⁻¹ q_j)`` for every joint (limb joints included, as
the analytic solver set them), ``v_root`` the root translation divided by the
height ``h``, ``ρ_l`` the distance a limb's goal lies out of reach. While the
root may move, a stretch term keeps each leg from extending beyond
``max(0.97, its reference extension)`` (see ``extension``). Every constrained
frame is solved at once, by Levenberg–Marquardt on the residual form of ``g``
(default) or by the paper's nonlinear conjugate gradient
(:func:`retarget.core.optimize.least_squares_cg`) preconditioned by the Gauss–Newton Hessian; both
use forward-difference Jacobians, as the analytic limb solver has no
closed-form derivative with respect to the swivel and root parameters that is
cheaper than ``n + 1`` batched evaluations. LM is the default because it needs
far fewer evaluations for the same minimum (``benchmarks/hierarchical.py``).

Limb goals come from the frame's constraints (:mod:`retarget.tasks.constraints`),
each point held firmly (a footplant), eased (a transition into or out of one),
or free:

* a goal on the lower joint (ankle, wrist) is the limb goal;
* a goal on a point below it (toe, toe tip, hand tip) alone moves the lower
  joint so the point lands on its goal with the foot turned as the reference
  (pivoted about the point onto the ground when that would sink the heel, and
  toward the hip when the ankle would be out of the leg's reach);
* with goals on both, the more firmly held one leads and the other sits a
  foot's length from it toward its own goal (a rigid foot cannot meet two goals
  that do not fit it); the foot turns so its ankle→toe vector points at the
  toe, pivoted onto the ground when the toe would end under it;
* a ground point below the surface gets the goal of its position lifted onto it.

A foot's orientation goal that its ankle cannot take (fewer DOFs than a ball
joint, as the CMU skeleton's ``rx rz``) is asked of the leg by how far the
missed turn moves the foot's farthest point, in heights, as a position goal is:
a roll about the foot moves no toe and costs nothing. Asked as an angle (one
radian per height), the swivel swung the knee 2.2 % of the height in a frame to
roll a foot whose heel let go between two plants of its toe.

Other goals (pelvis, head, a knee) are penalised through one FK of the pose.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..core import dofs, quat
from ..core.arrays import Array
from ..core.kinematics import Pose
from ..core.motion import ominus_joints, oplus_joints
from ..core.optimize import least_squares_cg, levenberg_marquardt
from ..core.skeleton import Skeleton
from ..humanoid.contacts import UP
from ..humanoid.roles import Roles, height
from ..tasks import (
    Capsules,
    CollisionTask,
    Constraints,
    IKFrames,
    IKSolver,
    OrientationTask,
    PositionTask,
    Task,
)
from .limb import Limb, limb_from_roles, limb_reach, soft_reach, solve_limb

__all__ = ["HybridSolver"]


@dataclass(frozen=True)
class _LimbGoals:
    limb: Limb
    goal: Array  # (N, 3), NaN where the limb is free
    orientation: Array  # (N, 4), NaN where not asked
    extension_ref: Array  # (N,) the limb's allowed extension (``HybridSolver.extensions``)
    reach: Array  # (N,) the limb's reach L_max in the reference pose (``limb_reach``)
    # (N, 3) a leg's foot, lower joint to its farthest point, in the lower joint's frame
    # (zero for an arm, or a leg ending at its lower joint)
    foot: Array


@dataclass(frozen=True, eq=False)
class HybridSolver(IKSolver):
    """Reduced-coordinate IK with analytic limbs, for :func:`retarget.editing.fitting.fit_motion`.

    Parameters
    ----------
    limbs : tuple of Limb
        Legs and arms (:meth:`for_skeleton` builds them from roles).
    tips : tuple of tuple of int
        For each limb, the points below its lower joint that goals may name
        (toe, toe tip; hand tip).
    height : float
        Character height: the length scale of the objective (a fixed unit, also
        when the frames carry their own bone lengths).
    root_rigidity : float
        ``α`` of the root translation (per height²) and ``root_turn_rigidity`` of
        its rotation; torso and limb joints have rigidity 1.
    goal_weight : float
        ``w_g``: weight of the goal and task penalties (per height²).
    limit_weight : float
        Weight of joint-limit violations (radians²) when the constraints ask for limits.
    max_iterations : int
        Iterations per solve.
    tolerance : float
        Levenberg–Marquardt stops a frame when a step changes its objective by
        less than this fraction: 1e-6 gives the same measures as 1e-8 on the
        lafan walk (skate, smoothness, footplant error to three digits) in 20 %
        fewer evaluations.
    root_spacing : float
        The root moves only in levels whose knot spacing is at least this many
        frames (``spacing`` argument of a call); finer levels and the exact pass
        (spacing 0) bend the limbs alone. Per-frame optima of the root jump
        where a contact starts or ends; coarse levels spread the root's share
        over many frames and keep it smooth.
    extension, extension_cap, extension_weight : float
        While the root may move, a limb asked for more of its full reach than
        ``min(max(extension, its extension in the source), extension_cap)`` is
        penalised (``extension_weight (e − threshold)²``; the source's extension is
        that of ``motion`` given to :meth:`for_skeleton`, the source's angles on
        the character's bones): the root is placed so a leg is not stretched
        further than the source's is (beyond a 0.97 floor, about 28° of knee
        flexion for equal bones), which keeps slack for the levels where the
        root stays put. ``extension_cap`` (1: off, the default) keeps slack even
        where the source's leg is straight: near full extension the knee's angle
        goes as the square root of the slack, and at 0.98 a short-legged
        character's push-off at 120 frames/s turns its knee more smoothly (jerk
        ratio 2.6 → 1.2 on a CMU walk onto ``blubby``), but stance knees bend 5°
        more than the source's on rough terrain (Lee & Shin's §4.5 asks for the
        root to move, not the knees).
    apart_buffer : float
        The pairs of ``Constraints.apart`` a solve takes: those nearer than their margin
        plus this share of the height at some of its frames; negative, past it (-0.002:
        by over 0.2 % of the height, the shallower left to a robot's IK pass after the
        method; within the buffer, nearly every frame of a walk was solved for pairs
        side by side, at twice the time). A limb with no goal at a frame where one of its
        pieces is nearer than its margin (an arm into the trunk, a swinging knee into
        the other) has its joints among the parameters, as the torso's are (their
        turns cost as the torso's do), and they are solved there.
    softness : float
        The legs are soft over this share of their reach (:func:`retarget.ik.limb.soft_reach`):
        at full extension a knee's angle has no bounded derivative in the goal's
        distance, so a footplant whose goal crosses the reach (a short-legged
        character's heel strike or push-off) clamped the leg straight for a few
        frames and the knee kinked back (jerk ratio 13 on a CMU walk at 120
        frames/s onto ``blubby``; about 2 at 0.005). A goal in that band is eased:
        the ankle stops short of it by at most ``softness · L_max / e`` (0.18 %
        of the leg at 0.005); :meth:`reach_drop` lowers the root so that the
        footplants lie below the band, where they are met exactly. Arms are exact.
    minimizer : {"lm", "cg"}
        ``"lm"``: Levenberg–Marquardt on the least-squares form of the objective
        (one Jacobian and one trial per iteration); ``"cg"``: the paper's
        nonlinear conjugate gradient, preconditioned by the Gauss–Newton
        Hessian. Both minimise the same function; LM needs far fewer
        evaluations (``benchmarks/hierarchical.py``).
    """

    limbs: tuple[Limb, ...]
    tips: tuple[tuple[int, ...], ...]
    height: float
    root_rigidity: float = 1000.0
    root_turn_rigidity: float = 1000.0
    goal_weight: float = 1e4
    limit_weight: float = 1e3
    max_iterations: int = 30
    tolerance: float = 1e-6
    root_spacing: float = 8.0
    minimizer: str = "lm"
    extension: float = 0.97
    extension_cap: float = 1.0
    extension_weight: float = 1e3
    softness: float = 0.005
    extensions: tuple[Array, ...] = ()
    end_turns: tuple[Array, ...] = ()
    apart_buffer: float = -0.002

    @classmethod
    def for_skeleton(cls, skeleton: Skeleton, roles: Roles, motion=None, **options) -> HybridSolver:
        """Legs and arms of a humanoid (its legs alone when it has no arms: a robot that is
        a pair of legs and a trunk), hinge axes estimated from ``motion`` when given."""
        limbs, tips = [], []
        for kind in ("leg", "arm"):
            for side in ("left", "right"):
                if kind == "arm" and f"{side}_shoulder" not in roles.points:
                    continue
                limb = limb_from_roles(skeleton, roles, side, kind, motion=motion)
                limbs.append(limb)
                below = [
                    p for p in range(skeleton.num_points) if limb.lower in skeleton.chain(p)[:-1]
                ]
                tips.append(tuple(below))
        extensions: tuple[Array, ...] = ()
        turns: tuple[Array, ...] = ()
        if motion is not None:  # each limb's extension and end's turn in ``motion``
            pose = Pose.of(skeleton, motion.root_position, motion.rotations, motion.translations)
            extensions = tuple(
                np.linalg.norm(pose.positions[:, lb.lower] - pose.positions[:, lb.upper], axis=1)
                / limb_reach(
                    skeleton, lb, motion.root_position, motion.rotations, motion.translations
                )
                for lb in limbs
            )
            turns = tuple(np.ascontiguousarray(pose.world_rotations[:, lb.lower]) for lb in limbs)
        options.setdefault("extensions", extensions)
        options.setdefault("end_turns", turns)
        return cls(tuple(limbs), tuple(tips), height(skeleton, roles), **options)

    # -- goals ---------------------------------------------------------------------------------
    def _limb_goals(
        self,
        ref: Pose,
        frames: NDArray[np.intp],
        constraints: Constraints,
        translations: Array | None = None,
        *,
        hang: bool = False,
    ) -> list[_LimbGoals]:
        """The limb goals of ``frames`` (module docstring). ``hang``: an ankle that hangs
        from a planted toe keeps the reference foot's turn even beyond the leg's reach
        (what :meth:`reach_drop` must make reachable), instead of turning about the
        toe toward the hip."""
        n = len(frames)
        lowest = {}  # lowest allowed height of the ground points
        if constraints.ground is not None:
            low = constraints.ground.lowest(ref.positions, frames)  # (N, K)
            lowest = {int(p): low[:, k] for k, p in enumerate(constraints.ground.points)}

        ground_index = (
            {int(p): k for k, p in enumerate(constraints.ground.points)}
            if constraints.ground is not None
            else {}
        )

        def explicit(point: int, reference: Array | None = None) -> Array:
            """Goals of the frame (hard, else eased transitions from ``reference``, by
            default the reference pose's point), never under the ground."""
            if reference is None:
                reference = ref.positions[:, point]
            goal = constraints.goal_at(point, frames, reference)
            if point in ground_index and constraints.ground is not None:
                have = np.isfinite(goal).all(axis=1)
                if have.any():
                    k = ground_index[point]
                    floor = (
                        constraints.ground.height(goal[have][:, [0, 2]])
                        + constraints.ground.clearance_at(frames)[have, k]
                    )
                    goal[have, UP] = np.maximum(goal[have, UP], floor)
            return goal

        def below(point: int, position: Array) -> NDArray[np.bool_]:
            """Rows where a point at ``position`` would be under the ground."""
            if point not in lowest:
                return np.zeros(n, bool)
            return np.asarray(position[:, UP] < lowest[point] - 1e-9)

        def lifted(point: int) -> Array:
            goal = np.full((n, 3), np.nan)
            under = below(point, ref.positions[:, point])
            goal[under] = ref.positions[under, point]
            goal[under, UP] = lowest[point][under] if point in lowest else 0.0
            return goal

        out: list[_LimbGoals] = []
        for limb, tips in zip(self.limbs, self.tips, strict=True):
            # L_max of eq. 7 in each reference pose (not l1 + l2: ``limb_reach``)
            full_reach = np.broadcast_to(
                limb_reach(ref.skeleton, limb, ref.root_position, ref.rotations, translations),
                (n,),
            )
            lower = limb.lower
            g_low = explicit(lower)
            o_low = np.full((n, 4), np.nan)
            if lower in constraints.orientations:
                o_low = constraints.orientations[lower][frames].copy()
            w_ref = ref.world_rotations[:, lower]
            # a foot turned by a goal keeps the source's turn about the new direction
            # (the world rotation of ``end_turns``: the source's angles on these bones),
            # not the reference's, which the legs' corrections of earlier levels rolled:
            # a held ankle and toe left a toe tip circling about the line between them
            k = len(out)
            if self.end_turns and len(self.end_turns[k]) > int(frames.max(initial=-1)):
                w_base = self.end_turns[k][frames]
            else:
                w_base = w_ref
            w_low = constraints.firmness(lower, frames)
            # a foot whose points dip under the ground while its ankle does not turns up
            # about the ankle, where the reference has it, by the least angle that lifts
            # every point of it onto the ground: the reference foot of this frame. A free
            # foot (no goal on it) takes it (a swinging foot toes up): lifting it whole
            # bent the knee 25° more than the source's for a long-footed, short-legged
            # character, and one tip at a time switched the foot's turn between the tips
            # from frame to frame. A foot easing out of a plant eases toward it: easing
            # toward the sunk reference, then lifted whole onto the ground, and toes up
            # the frame after, turned the foot 20° in one frame at each toe-off
            ankle = ref.positions[:, lower]
            turn_up = np.zeros(n)
            axis = _lift_axis(ankle, ref.positions[:, tips[-1]]) if tips else None
            for tip in tips:
                if tip in lowest and axis is not None:
                    turn_up = np.maximum(
                        turn_up, _lift_angle(ankle, ref.positions[:, tip], lowest[tip], axis)
                    )
            up = (turn_up > 0.0) & ~below(lower, ankle)
            w_up = w_ref.copy()
            tip_ref = {tip: ref.positions[:, tip] for tip in tips}
            if up.any() and axis is not None:
                spin = quat.exp(turn_up[up, None] * axis[up])
                w_up[up] = quat.multiply(spin, w_ref[up])
                for tip in tips:
                    tip_ref[tip] = tip_ref[tip].copy()
                    tip_ref[tip][up] = ankle[up] + quat.rotate(
                        spin, ref.positions[up, tip] - ankle[up]
                    )
            free_foot = ~np.isfinite(g_low).all(axis=1) & ~below(lower, ankle)
            for tip in tips:
                free_foot &= ~np.isfinite(explicit(tip, tip_ref[tip])).all(axis=1)
            toes_up = free_foot & up
            g_low[toes_up] = ankle[toes_up]
            o_low[toes_up] = w_up[toes_up]
            for tip in tips:
                g_tip = explicit(tip, tip_ref[tip])
                w_tip = constraints.firmness(tip, frames)
                # A rigid foot cannot meet two goals that do not fit it: the more firmly
                # held point leads (a planted toe over an easing heel; between two eased
                # goals the stronger) and the other sits a foot's length from it, toward
                # its own goal. A hard ankle over an eased tip is the ``both`` case below.
                lever = tip_ref[tip] - ankle  # world, reference (toes up)
                length = np.linalg.norm(lever, axis=1)
                have_both = np.isfinite(g_low).all(axis=1) & np.isfinite(g_tip).all(axis=1)
                lead_tip = have_both & (w_tip >= w_low) & (w_low < 2.0)
                g_low[lead_tip] = _toward(g_tip, g_low, length, lead_tip)
                if not hang:  # an ankle so led toward the leg's reach turns about the tip
                    hip = ref.positions[:, limb.upper]
                    far, reach = self._toward_reach(g_low, hip, full_reach, lead_tip)
                    if far.any():
                        g_low[far] = _within_reach(g_tip[far], g_low[far], hip[far], reach[far])
                sunk = lead_tip & below(lower, np.where(lead_tip[:, None], g_low, np.inf))
                if sunk.any():
                    g_low[sunk] = _pivot(g_tip, g_low - g_tip, lowest[lower], sunk)
                have_low = np.isfinite(g_low).all(axis=1)
                # a free foot whose tip dips under an ankle on the ground itself: lifted
                lift = lifted(tip)
                use = ~have_low & ~np.isfinite(g_tip).all(axis=1) & np.isfinite(lift).all(axis=1)
                g_tip[use] = lift[use]
                have_tip = np.isfinite(g_tip).all(axis=1)
                free_turn = ~np.isfinite(o_low).all(axis=1)
                # a planted ankle whose tip would go under the ground: tip on the ground
                tip_under = have_low & ~have_tip & free_turn & below(tip, g_low + lever)
                if tip_under.any():
                    g_tip[tip_under] = _pivot(g_low, lever, lowest[tip], tip_under)
                    have_tip = have_tip | tip_under
                # a planted tip without an ankle goal: the ankle hangs from it, turned as the
                # reference foot unless that puts it under the ground, then pivoted onto it
                only_tip = have_tip & ~have_low
                if only_tip.any():
                    hanging = g_tip - lever
                    pivot = only_tip & free_turn & below(lower, hanging)
                    keep = only_tip & ~pivot
                    o = np.where(free_turn[:, None], w_up, o_low)
                    local = quat.rotate(quat.conjugate(w_up), lever)
                    g_low[keep] = g_tip[keep] - quat.rotate(o[keep], local[keep])
                    o_low[keep] = o[keep]
                    if pivot.any():
                        g_low[pivot] = _pivot(g_tip, -lever, lowest[lower], pivot)
                        have_low = have_low | pivot
                    # an ankle toward the leg's reach turns about the planted tip toward the hip
                    hip = ref.positions[:, limb.upper]
                    far, reach = self._toward_reach(g_low, hip, full_reach, only_tip & free_turn)
                    far &= not hang
                    if far.any():
                        g_low[far] = _within_reach(g_tip[far], g_low[far], hip[far], reach[far])
                        turn = quat.quat_between(lever[far], g_tip[far] - g_low[far])
                        o_low[far] = quat.multiply(turn, w_up[far])
                both = (
                    have_tip & np.isfinite(g_low).all(axis=1) & free_turn & ~(only_tip & ~have_low)
                )
                if both.any():  # turn the foot so its ankle→tip vector points at the tip goal,
                    # pivoted onto the ground when the tip would end under it
                    reached = np.full((n, 3), np.inf)
                    reached[both] = _toward(g_low, g_tip, length, both)
                    under = below(tip, reached)
                    if under.any():
                        g_tip[under] = _pivot(g_low, reached - g_low, lowest[tip], under)
                    base = quat.rotate(w_base, quat.rotate(quat.conjugate(w_up), lever))
                    turn = quat.quat_between(base[both], g_tip[both] - g_low[both])
                    o_low[both] = quat.multiply(turn, w_base[both])
            free = ~np.isfinite(g_low).all(axis=1)
            lift = lifted(lower)
            use = free & np.isfinite(lift).all(axis=1)
            g_low[use] = lift[use]
            k = len(out)
            if self.extensions and len(self.extensions[k]) > int(frames.max(initial=-1)):
                extension = self.extensions[k][frames]  # the source's bend, on the target
            else:
                extension = (
                    np.linalg.norm(ref.positions[:, lower] - ref.positions[:, limb.upper], axis=1)
                    / full_reach
                )
            foot = np.zeros((n, 3))
            if limb.kind == "leg" and tips:
                spans = [float(np.linalg.norm(ref.positions[0, t] - ankle[0])) for t in tips]
                farthest = tips[int(np.argmax(spans))]
                foot = quat.rotate(quat.conjugate(w_ref), ref.positions[:, farthest] - ankle)
            out.append(_LimbGoals(limb, g_low, o_low, extension, full_reach, foot))
        return out

    def _toward_reach(
        self, ankle: Array, hip: Array, full_reach: Array, rows: NDArray[np.bool_]
    ) -> tuple[NDArray[np.bool_], Array]:
        """Rows whose ankle (hanging from a planted tip) lies in the leg's soft band or
        beyond, and the distance from the hip each of them is given: the soft reach of
        its distance (:func:`retarget.ik.limb.soft_reach`; 0.999 of the reach without
        soft legs). A smooth function of the distance, so a heel rising off a planted
        toe turns the foot smoothly as the leg nears its reach, instead of a clamp
        that held the knee still and let it go (a kink of the knee at push-off)."""
        distance = np.linalg.norm(ankle - hip, axis=1)
        if self.softness > 0:
            knee = (1.0 - self.softness) * full_reach
            reach = soft_reach(distance, full_reach, self.softness)
        else:
            knee = reach = 0.999 * full_reach
        return rows & (distance > knee), np.asarray(reach)

    def _other_goals(
        self, frames, constraints
    ) -> list[tuple[type[PositionTask] | type[OrientationTask], int, Array, float]]:
        """Goals not on a limb's lower joint or below it: (task class, point, goals, weight)."""
        limb_points = {
            p for limb, tips in zip(self.limbs, self.tips, strict=True) for p in (limb.lower, *tips)
        }
        limb_lowers = {limb.lower for limb in self.limbs}
        out: list[tuple[type[PositionTask] | type[OrientationTask], int, Array, float]] = []
        for p, goal in constraints.positions.items():
            if p not in limb_points and np.isfinite(goal[frames]).all(axis=1).any():
                out.append((PositionTask, p, goal[frames], 1.0 / self.height**2))
        for p, goal in constraints.orientations.items():
            if p not in limb_lowers and np.isfinite(goal[frames]).all(axis=1).any():
                out.append((OrientationTask, p, goal[frames], 1.0))
        return out

    def reach_drop(self, q: IKFrames) -> Array:
        """How far the root must come down at each frame for every limb to reach its goal.

        For a limb whose goal lies ``horiz`` away from the hip horizontally and
        below it, the hip must be at most ``√(L² − horiz²)`` above the goal,
        ``L`` = ``(1 − softness)`` × the limb's reach ``L_max`` (0.999 without
        soft legs: where a soft leg still meets its goal exactly; eq. 7 at the straightest
        hinge angle, with the frame's own offsets ``translations`` (N, J, 3)):
        not the bone-path length ``l1 + l2``, which a limb whose hinge axis is
        not square to its bones (``h1, h2 ≠ 0``: a femur slanting in, as CMU's)
        never reaches; asking for it left such legs clamped straight and their
        knees kinked. The drop is what exceeds that (0 when every goal is in
        reach), the most any limb of the frame needs. Shape (N,).
        """
        skeleton, root_position, rotations = q.skeleton, q.root_position, q.rotations
        frames, constraints, translations = q.frames, q.constraints, q.translations
        ref = q.reference()
        drop = np.zeros(len(frames))
        for lg in self._limb_goals(ref, frames, constraints, translations, hang=True):
            have = np.isfinite(lg.goal).all(axis=1)
            if not have.any():
                continue
            hip = ref.positions[have, lg.limb.upper]
            d = lg.goal[have] - hip
            horiz = np.linalg.norm(np.delete(d, UP, axis=1), axis=1)
            reach = limb_reach(
                skeleton,
                lg.limb,
                root_position[have],
                rotations[have],
                None if translations is None else translations[have],
            )
            length = (1.0 - self.softness if self.softness > 0 else 0.999) * reach
            allowed = np.sqrt(np.maximum(length**2 - horiz**2, 0.0))
            drop[have] = np.maximum(drop[have], -d[:, UP] - allowed)
        return np.maximum(drop, 0.0)

    # -- the solve -------------------------------------------------------------------------------
    def solve(self, q: IKFrames) -> tuple[Array, Array, NDArray[np.bool_]]:
        """Poses meeting the constraints at ``q.frames`` (:meth:`_solve`); the frames where
        a pair of ``Constraints.apart`` is near (:attr:`apart_buffer`) are solved apart from
        the others, which do not take the pairs nor a free limb's joints as parameters
        (each frame is a problem of its own; solved together, every frame paid for the
        parameters of a few)."""
        apart, near = _near_pairs(
            q.constraints.apart, q.reference(), self.apart_buffer * self.height
        )
        if apart is None or near.all():
            return self._solve(q, apart, near)
        root, rot, determined = self._solve(q.take(~near), None, np.zeros((~near).sum(), bool))
        near_root, near_rot, near_determined = self._solve(q.take(near), apart, near[near])
        out_root = np.empty_like(q.root_position)
        out_rot = np.empty_like(q.rotations)
        out_det = np.empty((len(near), determined.shape[1]), bool)
        out_root[~near], out_rot[~near], out_det[~near] = root, rot, determined
        out_root[near], out_rot[near], out_det[near] = near_root, near_rot, near_determined
        return out_root, out_rot, out_det

    def _solve(
        self, q: IKFrames, apart: CollisionTask | None, near: NDArray[np.bool_]
    ) -> tuple[Array, Array, NDArray[np.bool_]]:
        """Poses meeting the constraints at ``q.frames``, minimally displaced (eq. 4), and which
        joints were solved (``determined``: the joints of limbs without a goal at a frame
        are not; see :class:`retarget.tasks.solver.IKSolver`).

        ``q.spacing``: knot spacing of the fitting level calling (None: a lone solve);
        the root is a parameter only when it is None or at least ``root_spacing``.
        ``q.translations`` (N, J, 3): the frames' own joint offsets (a character whose
        proportions change over the clip); then every bone length the solve reads
        (FK, the analytic limbs' eq. 7, the limbs' reach) is the frame's.
        """
        skeleton, root_position, rotations = q.skeleton, q.root_position, q.rotations
        frames, constraints, translations = q.frames, q.constraints, q.translations
        ref = q.reference()
        root_free = q.spacing is None or q.spacing >= self.root_spacing
        n = len(frames)
        all_goals = self._limb_goals(ref, frames, constraints, translations)
        loose: list[tuple[_LimbGoals, NDArray[np.bool_]]] = []
        if apart is not None:  # a free limb in a pair too near: its joints turn it away
            loose = [
                (lg, rows)
                for lg in all_goals
                if (rows := _too_near(lg, apart, ref, self.apart_buffer * self.height)).any()
            ]
        limb_goals = [lg for lg in all_goals if np.isfinite(lg.goal).all(axis=1).any()]
        others = self._other_goals(frames, constraints)
        arms_active = any(lg.limb.kind == "arm" for lg in limb_goals) or bool(others)
        torso = self._torso(skeleton, [lg.limb for lg in limb_goals]) if arms_active else []
        torso += [j for lg, _ in loose for j in lg.limb.joints if skeleton.euler_orders[j]]
        determined = np.ones((n, skeleton.num_joints + 1), dtype=bool)
        for lg in all_goals:
            free = np.flatnonzero(~np.isfinite(lg.goal).all(axis=1))
            determined[np.ix_(free, 1 + np.array(lg.limb.joints))] = False
        for lg, rows in loose:
            determined[np.ix_(np.flatnonzero(rows), 1 + np.array(lg.limb.joints))] = True
        # Solve on the joints that matter: the chains to the constrained limbs and task
        # points (a walk's legs are 7 of lafan's 22 joints); the rest is copied back.
        full_skeleton, full_rotations = skeleton, rotations
        points = [lg.limb.lower for lg in limb_goals] + [p for _, p, _, _ in others] + list(torso)
        if apart is not None:
            points += [int(j) for j in np.unique(apart.capsules.joints[apart.pairs])]
        skeleton, keep, remap = _reduce(full_skeleton, points)
        rotations = full_rotations[:, keep]
        offsets = None if translations is None else translations[:, keep]
        limb_goals = [
            dataclasses.replace(lg, limb=_remap_limb(lg.limb, remap)) for lg in limb_goals
        ]
        tasks: list[Task] = [cls(remap[p], goal, weight=w) for cls, p, goal, w in others]
        kept_apart = None
        if apart is not None:  # the links apart, as firm as a goal (per height²)
            kept_apart = _remapped(apart, remap, apart.weight / self.height**2)
        torso = [remap[j] for j in torso]
        all_axes = dofs.channel_axes(skeleton, rotations) if torso else None
        torso_axes = [all_axes[:, j] for j in torso] if all_axes is not None else []
        torso_dofs = [len(skeleton.euler_orders[j]) for j in torso]
        n_root = 6 if root_free else 0
        n_params = n_root + sum(torso_dofs) + len(limb_goals)
        limited = (
            np.flatnonzero(np.isfinite(skeleton.limits).any(axis=(1, 2)))
            if constraints.joint_limits
            else np.zeros(0, dtype=np.intp)
        )
        h = self.height
        goal_scale = np.sqrt(2.0 * self.goal_weight)

        def build(x: Array, index: NDArray[np.intp]) -> tuple[Array, Array, list[Array]]:
            """Root, rotations and the residual blocks of parameters x (B, n)."""
            rot_ref = rotations[index]
            root = root_position[index].copy()
            rot = rot_ref.copy()
            blocks: list[Array] = []
            if root_free:
                root += x[:, :3] * h
                rot = oplus_joints(rot, x[:, 3:6], 0)
                blocks.append(np.sqrt(self.root_rigidity) * x[:, :3])
                blocks.append(np.sqrt(self.root_turn_rigidity) * x[:, 3:6])
            col = n_root
            for j, axes, d in zip(torso, torso_axes, torso_dofs, strict=True):
                v = np.einsum("bij,bj->bi", axes[index][:, :, :d], x[:, col : col + d])
                rot = oplus_joints(rot, v, j)
                blocks.append(v)
                col += d
            for lg in limb_goals:
                sol = solve_limb(
                    skeleton,
                    lg.limb,
                    root,
                    rot,
                    lg.goal[index],
                    orientation=lg.orientation[index],
                    swivel=x[:, col],
                    translations=None if offsets is None else offsets[index],
                    softness=self.softness if lg.limb.kind == "leg" else 0.0,
                )
                rot = sol.rotations
                blocks.append(goal_scale * sol.residual[:, None] / h)
                if lg.limb.kind == "leg":  # how far the foot's turn moves its tip
                    foot = lg.foot[index]
                    missed = quat.rotate(quat.exp(sol.orientation_error), foot) - foot
                    blocks.append(goal_scale * np.linalg.norm(missed, axis=1)[:, None] / h)
                else:
                    blocks.append(goal_scale * sol.orientation_residual[:, None])
                if root_free:
                    threshold = np.minimum(
                        np.maximum(lg.extension_ref[index], self.extension), self.extension_cap
                    )
                    stretch = np.maximum(sol.extension - threshold, 0.0)
                    blocks.append(np.sqrt(2.0 * self.extension_weight) * stretch[:, None])
                col += 1
            for lg in limb_goals:
                joints = list(lg.limb.joints)
                v = ominus_joints(rot, rot_ref, joints)
                blocks.append(v.reshape(len(index), -1))
            return root, rot, blocks

        def residuals(x: Array, index: NDArray[np.intp]) -> Array:
            root, rot, blocks = build(x, index)
            if tasks or limited.size:
                pose = Pose.of(skeleton, root, rot, None if offsets is None else offsets[index])
                for t in tasks:
                    r = _take(t, index).residual(pose)
                    if t.inequality:
                        r = np.minimum(r, 0.0)
                    blocks.append(goal_scale * h * np.sqrt(t.weight) * r)
                if limited.size:
                    viol = dofs.limit_violation(skeleton, rot, limited)
                    blocks.append(np.sqrt(2.0 * self.limit_weight) * viol.reshape(len(index), -1))
            if kept_apart is not None:  # (only the rows where a pair is near)
                r = np.zeros((len(index), kept_apart.size))
                rows = near[index]
                if rows.any():
                    sub = Pose.of(
                        skeleton,
                        root[rows],
                        rot[rows],
                        None if offsets is None else offsets[index][rows],
                    )
                    r[rows] = np.minimum(kept_apart.residual(sub), 0.0)
                blocks.append(goal_scale * h * np.sqrt(kept_apart.weight) * r)
            return np.concatenate(blocks, axis=1)

        if n_params == 0:
            return root_position.copy(), full_rotations.copy(), determined
        if self.minimizer == "lm":
            x = levenberg_marquardt(
                residuals,
                np.zeros((n, n_params)),
                max_iterations=self.max_iterations,
                tolerance=self.tolerance,
            )
        else:
            x = least_squares_cg(
                residuals, np.zeros((n, n_params)), max_iterations=self.max_iterations
            )
        root, rot, _ = build(x, np.arange(n))
        out = full_rotations.copy()
        out[:, keep] = rot
        return root, out, determined

    def _torso(self, skeleton: Skeleton, limbs: Sequence[Limb]) -> list[int]:
        """Joints between the root and the upper joints of the given arms (root excluded)."""
        joints: list[int] = []
        for limb in limbs:
            if limb.kind != "arm":
                continue
            for j in skeleton.chain(limb.upper)[1:-1]:
                if int(j) not in joints and skeleton.euler_orders[int(j)]:
                    joints.append(int(j))
        return joints


def _reduce(
    skeleton: Skeleton, points: Sequence[int]
) -> tuple[Skeleton, NDArray[np.intp], dict[int, int]]:
    """The sub-skeleton of the root and the chains to ``points`` (joints or sites).

    Returns it, the kept joints' indices in ``skeleton`` (parents first) and the
    map from kept points of ``skeleton`` to points of the sub-skeleton.
    """
    needed: set[int] = {0}
    sites: list[int] = []
    for p in points:
        chain = [int(j) for j in skeleton.chain(p)]
        if chain[-1] >= skeleton.num_joints:
            sites.append(chain.pop())
        needed.update(chain)
    keep = np.array(sorted(needed), dtype=np.intp)
    remap = {int(j): k for k, j in enumerate(keep)}
    site_list = sorted(set(sites))
    for k, site in enumerate(site_list):
        remap[site] = len(keep) + k
    sub = Skeleton(
        names=tuple(skeleton.names[j] for j in keep),
        parents=np.array([-1] + [remap[int(skeleton.parents[j])] for j in keep[1:]]),
        offsets=skeleton.offsets[keep],
        channels=tuple(skeleton.channels[j] for j in keep),
        site_names=tuple(skeleton.point_names[s] for s in site_list),
        site_parents=np.array(
            [remap[int(skeleton.point_parents[s])] for s in site_list], dtype=np.intp
        ),
        site_offsets=skeleton.point_offsets[site_list].reshape(-1, 3),
        unit=skeleton.unit,
        axes=skeleton.axes[keep],
        limits=skeleton.limits[keep],
    )
    return sub, keep, remap


def _remap_limb(limb: Limb, remap: dict[int, int]) -> Limb:
    return dataclasses.replace(
        limb, upper=remap[limb.upper], middle=remap[limb.middle], lower=remap[limb.lower]
    )


def _toward(anchor: Array, goal: Array, length: Array, rows: NDArray[np.bool_]) -> Array:
    """Points ``length`` from ``anchor`` toward ``goal`` (rows of ``rows``; shape (R, 3)): a
    rigid foot's other end as near its own goal as the leading end allows."""
    a, d = anchor[rows], goal[rows] - anchor[rows]
    norm = np.linalg.norm(d, axis=1, keepdims=True)
    d = np.where(norm > 1e-12, d / np.maximum(norm, 1e-12), [[0.0, 1.0, 0.0]])
    return a + d * length[rows, None]


def _within_reach(tip: Array, ankle: Array, hip: Array, reach: Array) -> Array:
    """The ankle on the sphere about ``tip`` (radius ``|ankle − tip|``) that lies within
    ``reach`` (n,) of ``hip`` and nearest to ``ankle``: the foot turned about its planted
    tip as little as lets the leg reach. Rows (n, 3); when no such point exists, the
    one nearest the hip."""
    foot = np.linalg.norm(ankle - tip, axis=1)
    axis = tip - hip
    dist = np.maximum(np.linalg.norm(axis, axis=1), 1e-12)
    u = axis / dist[:, None]
    # the circle where the two spheres meet: centre hip + a u, radius rho
    a = (dist**2 + reach**2 - foot**2) / (2.0 * dist)
    rho = np.sqrt(np.maximum(reach**2 - a**2, 0.0))
    centre = hip + a[:, None] * u
    off = ankle - centre
    off -= np.sum(off * u, axis=1, keepdims=True) * u
    norm = np.linalg.norm(off, axis=1, keepdims=True)
    side = np.where(norm > 1e-12, off / np.maximum(norm, 1e-12), _any_perpendicular(u))
    meet = centre + rho[:, None] * side
    apart = dist > reach + foot  # the tip itself is out of reach: stretch toward it
    return np.where(apart[:, None], hip + u * reach[:, None], meet)


def _lift_axis(ankle: Array, point: Array) -> Array:
    """The horizontal axis (N, 3) about which a positive turn lifts ``point`` about
    ``ankle`` (across the foot: ``lever × up``, normalised; x for a vertical lever)."""
    lever = point - ankle
    across = np.cross(lever, np.eye(3)[UP])
    norm = np.linalg.norm(across, axis=1, keepdims=True)
    return np.where(norm > 1e-12, across / np.maximum(norm, 1e-300), np.eye(3)[0])


def _lift_angle(ankle: Array, point: Array, lowest: Array, axis: Array) -> Array:
    """The least turn (radians, in [0, π/2], shape (N,)) of ``point`` about ``axis``
    (N, 3, horizontal) through ``ankle`` that puts it at height ``lowest`` or above.

    With ``v`` the lever and the turn by Rodrigues' formula, the point's height above
    the ankle is ``v_y cos φ + (k × v)_y sin φ = r sin(φ + α)``."""
    v = point - ankle
    v = v - np.sum(v * axis, axis=1, keepdims=True) * axis  # the part the turn moves
    a, b = v[:, UP], np.cross(axis, v)[:, UP]
    r = np.maximum(np.hypot(a, b), 1e-12)
    alpha = np.arctan2(a, b)
    need = lowest - ankle[:, UP]
    phi = np.arcsin(np.clip(need / r, -1.0, 1.0)) - alpha
    return np.where(a >= need, 0.0, np.clip(phi, 0.0, 0.5 * np.pi))


def _any_perpendicular(u: Array) -> Array:
    basis = np.eye(3)[np.argmin(np.abs(u), axis=1)]
    v = np.cross(u, basis)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _pivot(anchor: Array, lever: Array, height: Array, rows: NDArray[np.bool_]) -> Array:
    """Where a point ``|lever|`` from ``anchor`` sits at ``height``, in the horizontal direction
    of ``lever`` (a rigid foot turned about the anchor until the point meets the ground)."""
    a, v, y = anchor[rows], lever[rows], height[rows]
    length = np.linalg.norm(v, axis=1)
    dy = np.clip(y - a[:, UP], -length, length)
    flat = v.copy()
    flat[:, UP] = 0.0
    norm = np.linalg.norm(flat, axis=1, keepdims=True)
    flat = np.where(norm > 1e-12, flat / np.maximum(norm, 1e-12), [[1.0, 0.0, 0.0]])
    out = a + flat * np.sqrt(np.maximum(length**2 - dy**2, 0.0))[:, None]
    out[:, UP] = a[:, UP] + dy
    return out


def _near_pairs(
    apart: CollisionTask | None, ref: Pose, buffer: float
) -> tuple[CollisionTask | None, NDArray[np.bool_]]:
    """``apart`` with only the pairs within ``buffer`` of their margin at some frame of
    ``ref`` (None when none is), and the frames (N,) where one is."""
    rows = np.zeros(ref.batch_shape[0], bool)
    if apart is None or not apart.size:
        return None, rows
    close = apart.gaps_below(ref, buffer) < buffer
    near = close.any(axis=0)
    if not near.any():
        return None, rows
    margin = np.broadcast_to(apart.margin, (apart.size,))
    pairs = dataclasses.replace(apart, pairs=apart.pairs[near], margin=margin[near])
    return pairs, np.asarray(close.any(axis=1))


def _remapped(apart: CollisionTask, remap: dict[int, int], weight: float) -> CollisionTask:
    """``apart`` on the sub-skeleton of :func:`_reduce` (``remap``): its pairs' capsules
    only, on the kept joints."""
    used, pairs = np.unique(apart.pairs, return_inverse=True)
    c = apart.capsules
    capsules = Capsules(
        np.array([remap[int(j)] for j in c.joints[used]], np.intp),
        c.a[used],
        c.b[used],
        c.radius[used],
    )
    return dataclasses.replace(apart, capsules=capsules, pairs=pairs.reshape(-1, 2), weight=weight)


def _too_near(lg: _LimbGoals, apart: CollisionTask, ref: Pose, buffer: float) -> NDArray[np.bool_]:
    """Rows (N,) where the limb has no goal and a piece of it (its joints and those below)
    is in a pair of ``apart`` nearer than its margin by more than ``-buffer``."""
    sk = ref.skeleton
    joints = {j for j in range(sk.num_joints) if lg.limb.upper in sk.chain(j)}
    mine = np.array(
        [int(a) in joints or int(b) in joints for a, b in apart.capsules.joints[apart.pairs]]
    )
    if not mine.any():
        return np.zeros(len(lg.goal), bool)
    close = (apart.residual(ref)[:, mine] < buffer).any(axis=1)
    return np.asarray(close & ~np.isfinite(lg.goal).all(axis=1))


def _take(task: Task, index: NDArray[np.intp]) -> Task:
    """The task restricted to batch rows ``index`` (goals indexed)."""
    return task.take(index)
