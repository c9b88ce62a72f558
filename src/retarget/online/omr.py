"""Online motion retargeting (Choi & Ko 2000): a causal filter, one frame at a time.

Each frame, the source's pose mapped onto the target (``θ_src``: its joint
rotations by name, its root placed for the target's size) and the goals of
the end-effectors (``x1``) go in, a :class:`~retarget.core.frames.GoalFrame`;
the target's pose comes out, a :class:`~retarget.core.frames.PoseFrame`,
from the previous output and these inputs only (:meth:`OnlineRetargeter.step`,
the contract of :mod:`retarget.core.frames`; how a source's frames become
these inputs: :mod:`retarget.online.omr_plan`). The
update is closed-loop inverse rate control with the secondary task "imitate
the source's joints" (eq. 21; :func:`retarget.ik.rate.rate_step`): the
end-effectors track their goals and the redundant degrees of freedom follow
the source. Memory does not grow with time.

The primary task is a stack of :mod:`retarget.tasks` rows (position tasks,
with NaN components for rows not tracked — the pelvis's ``(x, NaN, z)`` —
and orientation tasks), §3.2. Lengths are measured in character heights and
the root translation in heights, so that the minimum-norm step weighs a root
shift of one height like a joint turn of one radian.

**Base switching** (§6.1). The paper's walking set-up makes the stance toe
tip the kinematic base and the swing toe tip the end-effector, switching at
low-acceleration frames between steps. With a floating root a base is a held
point: a foot point whose goal comes to rest is held where it is, and let go
when its goal moves again. ``BaseSwitching(single=True)`` is the paper's rule,
one base foot at a time; the default holds every resting point, heels
included, so a foot in double support does not slide.

A switch in one frame is a step of velocity (beyond the paper): a goal that
freezes when its input's speed falls under a threshold and follows it again
when the speed passes another jumps by that speed (0.15-0.3 heights/s), and
the root and the upper body, moved to meet it, jerk with it (on the walks of
issue 24 the holds and releases made most of the result's jerk: 2-7 times
the source's). So a hold has a weight ``w`` in [0, 1] (:meth:`_weigh`), a
product of smooth (C2) steps of its goal's speed, of how far the hold has
kept it from its goal and of its leg's stretch, followed in time with a time
constant (``BaseSwitching.engage``, ``ramp``); the held goal moves by
``1 − w`` of its input's motion (:meth:`_shape`), and the offset it gathers
fades as the goal travels once it is let go (``settle_distance``). A heel's
rows are always in the stack with the activation ``w``
(:func:`retarget.ik.rate.rate_step`): they ask for ``w`` of "stay" and
``1 − w`` of the motion the rest of the step would give the heel, so a heel
fades in and out instead of switching a row on and off. A rigid foot of the
target's size cannot meet the source's toe and heel both: while the heel is
held and the toe is not, the toe's goal rolls about the heel (by the share
``w_heel (1 − w_toe)`` it goes where the foot's orientation goal puts it),
and while both are held the foot's orientation goal is held with them
(:class:`Foot`). A row that starts tracking (a NaN input becoming finite)
keeps the offset between where its point is and its goal, fading likewise.

**Priorities.** Rows carry a priority level (:class:`Effector`): toe tips and
the pelvis first, heels and foot orientations second, so a heel that cannot
stay put without moving a toe gives way (:func:`retarget.ik.rate.rate_step`).
A held heel also lets go as its leg straightens (``Effector.reach``).

**The first frame** (the first :meth:`~OnlineRetargeter.step` of a new
object or after :meth:`~OnlineRetargeter.reset`) settles to the fixed point
of a step on a still input: the same update and §3.1 correction, the hold
weights the rules give there and the heels held where they are, so a still
input gives a still output from the first frame on and a clip that starts
mid-stride starts without a jolt (settled with the update alone, the first
frame sat where the correction then moved it in one step: a quarter of the
jerk of a 120 Hz walk onto ``blubby`` was in its first four frames).

Joints with fewer than three rotation channels (ASF hinges) move along their
channels only (:func:`retarget.core.dofs.channel_axes`); joints outside
``active_joints`` copy the source.

The update itself (rows of :mod:`retarget.tasks`, the step of
:func:`retarget.ik.rate.rate_step`, ``pose ⊕ Δθ`` and forward kinematics) is
one compiled call (:mod:`retarget.online._kernels.omr`), and so are the hold
weights and the goals (``_hold_weights``, ``_shape_goals``); this module keeps
their state and the report.

**From a source's frames** (:class:`OMRPlan`, :func:`omr_plan`): every input of frame
``n`` comes from source frame ``n`` and, for the floor and the origin of scaling, the
first frame: ``θ_src``, the source's joint rotations (by name), its root's horizontal
path (scaled by ``stride`` about the first frame's root on the floor, goals
``"reach"``) and its height (where the target in the first frame's pose stands on the
floor, plus the source's rise and fall scaled by the ratio of leg lengths); goals
``x1``, the toe tips (and hand tips, set-up ``"full"``), the heels (held only) and the
pelvis's horizontal position, per the mapping ``goals`` (``"reach"``, ``"source"``,
``"height"``); world orientation goals of the feet where the heels are held.
:class:`OMRRetargeter` is the online method a source's poses go into
(``filter.step(GoalFrame(*plan.inputs(pose)))``); :func:`run_method` and
:func:`run_filter` the offline shape as loops over the online one (the method
``--method omr``: :func:`retarget.methods.omr.omr_retarget`); :func:`enhance_motion`
the paper's data enhancement (§5).
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array
from ..core.errors import RetargetError
from ..core.frames import GoalFrame, PoseFrame
from ..core.kinematics import Pose, forward_kinematics, positions
from ..core.motion import Motion
from ..core.result import Result, speed
from ..core.skeleton import Skeleton
from ..filters.glitch import MAX_SPEED, GlitchGate, through_gate
from ..humanoid.contacts import UP
from ..humanoid.roles import find_roles, height, leg_length
from ..ik.rate import rate_settings
from ._kernels.omr import _fk_kernel, _hold_weights, _shape_goals, _update, channel_basis, project

__all__ = [
    "GOALS",
    "SETUPS",
    "BaseSwitching",
    "Effector",
    "Foot",
    "OMRPlan",
    "OMRRetargeter",
    "OnlineRetargeter",
    "enhance_motion",
    "omr_plan",
    "run_filter",
    "run_method",
]


#: Frames of each kind of event (gains lowered, input clamped, hold or release) the report
#: lists; all are counted (``events``).
EVENTS_LISTED = 10_000
#: The first frame has settled when a step moves no rotation component and no root
#: coordinate (in heights) by more than this.
_SETTLED = 1e-10
#: Rounds of settling and judging the holds at the first frame.
_HOLD_ROUNDS = 4


@dataclass(frozen=True)
class Effector:
    """An end-effector of the primary task.

    Attributes
    ----------
    point : int
        Point index (joint or end site) of the target skeleton.
    axes : tuple of int
        World position components tracked (``(0, 2)``: horizontal only, the
        pelvis of the walking set-up; ``()``: orientation only).
    orientation : bool
        Track the point's world orientation (a foot's, while it rolls on one
        held point: see :class:`Foot`).
    lever : float
        Orientation rows are measured as the displacement a turn makes at this
        distance (file unit; a foot's length): one radian weighs as much as
        moving a point ``lever`` away, in the minimum norm and in the clamping.
        0: radians as they are, against lengths in heights.
    hold_only : bool
        Never tracked, only held while it rests (a heel: see :class:`BaseSwitching`):
        its rows ask for its hold weight's share of staying where it is held.
    anchor, reach : int, float
        A point's hold weight falls from 1 at 0.97 ``reach`` from point ``anchor``
        to 0 at ``reach`` (a heel lets go as its leg straightens, as a walker's
        heel rises at the end of stance).
    priority : int
        Task-priority level, 0 first (:func:`retarget.ik.rate.rate_step`): a
        lower level acts in the null space of the higher ones and gives way
        when they cannot all be met.
    name : str
        For the report (defaults to the point's name).
    """

    point: int
    axes: tuple[int, ...] = (0, 1, 2)
    orientation: bool = False
    lever: float = 0.0
    hold_only: bool = False
    anchor: int = -1
    reach: float = np.inf
    priority: int = 0
    name: str = ""


@dataclass(frozen=True)
class Foot:
    """A foot's effectors, by index into the effector list (-1: absent).

    The toe tip is tracked while the foot swings; at rest it is held, and so
    is the heel. Where its leg has six degrees of freedom from the hip down (else
    its orientation is left out: :func:`omr_plan`), the foot also follows the
    source's foot orientation: in the
    swing, so the foot lands as the source's does; on one held point (the heel
    as the sole comes down, the toe as the heel rises) instead of the other
    point's position, as a rigid foot of the target's size cannot meet the
    source's toe and heel both (on a held heel the toe's goal rolls about it);
    with both held, its orientation goal is held too.
    """

    toe: int
    heel: int = -1
    orientation: int = -1


@dataclass(frozen=True)
class BaseSwitching:
    """The stance foot as the kinematic base (§6.1): which points are held, and when.

    A foot point is held by its hold weight ``w`` (module docstring): the
    product of quintic smooth steps (C2) of its goal's speed (1 under
    ``rest_speed``, 0 over ``release_speed``), of how far its hold has kept it
    from its goal (1 under half ``release_distance``, 0 over it: a heel rising
    slowly is let go) and, for an anchored point, of its leg's stretch
    (:class:`Effector`), followed in time with the time constants ``engage``
    (rising) and ``ramp`` (falling): a weight that follows the speed alone still
    swings from 0 to 1 in two or three frames where a 120 Hz foot lands. The
    point's goal moves by ``1 − w`` of its input's motion, so its velocity,
    acceleration and jerk stay bounded through a hold and a release; the offset
    it gathers from its input fades as the goal travels ``settle_distance``
    (e⁻¹) once let go: nothing jumps when the base switches.

    Attributes
    ----------
    feet : tuple of Foot
    single : bool
        At most one foot is the base, the paper's set-up: a foot whose toe has
        swung becomes the base when its toe comes to rest, and the other foot is
        released. Default: every resting foot point is held (double support
        holds both feet).
    rest_speed, release_speed : float
        Heights per second.
    release_distance : float
        Heights: a point is let go once its hold has kept it this far from its goal.
    settle_distance : float
        Heights; orientation offsets fade with their foot's toe offset.
    engage, ramp : float
        Seconds: time constants of the hold weight rising and falling (0: it is
        its rules' value at once).
    """

    feet: tuple[Foot, ...]
    single: bool = False
    rest_speed: float = 0.15
    release_speed: float = 0.3
    release_distance: float = 0.02
    settle_distance: float = 0.05
    ramp: float = 0.08
    engage: float = 0.08


class OnlineRetargeter:
    """Closed-loop inverse rate control, frame by frame (Choi & Ko 2000, eq. 21).

    An :class:`~retarget.core.frames.OnlineMethod` of
    :class:`~retarget.core.frames.GoalFrame` in and
    :class:`~retarget.core.frames.PoseFrame` out: :meth:`reset`, :meth:`step`.

    Parameters
    ----------
    skeleton : Skeleton
        The target character.
    effectors : sequence of Effector
        The primary task's end-effectors, in the order of the goals.
    height : float
        The character's height (file unit): lengths are measured in it.
    fps : float
        Frames per second of the input (for the base-switching speeds).
    active_joints : sequence of int, optional
        Joints the filter may turn (default all); the others copy the source.
        The root's translation and rotation are always active.
    base : BaseSwitching, optional
        Hold the stance foot as the kinematic base (§6.1).
    damping : float
        ``λ`` of the damped least-squares inverse (heights).
    gains : (float, float)
        ``K1``, ``K2`` (the paper: ``I``).
    min_dexterity : float
        Gains are lowered where ``σmin/σmax`` of ``J1`` falls under it (§4).
    max_input : float
        Longest input to ``J1⁺``, heights per frame (§4: clamping).
    iterations : int
        Rate-control steps per frame: 1 is the paper's update with ``ẽ1_n``
        estimated by ``e1_{n−1}``; 2 adds the correction of §3.1 (steps 1–3:
        evaluate the error at the predicted pose, step again from there).
    rigidity : array_like, shape (J + 1,), optional
        Weight of the root translation (per height) and of each joint's
        rotation (per radian) in the norm the step minimises (default all 1,
        the paper's plain pseudo-inverse).
    """

    def __init__(
        self,
        skeleton: Skeleton,
        effectors: Sequence[Effector],
        *,
        height: float,
        fps: float,
        active_joints: Sequence[int] | None = None,
        base: BaseSwitching | None = None,
        damping: float = 0.01,
        gains: tuple[float, float] = (1.0, 1.0),
        min_dexterity: float = 0.0,
        max_input: float = 0.1,
        iterations: int = 1,
        rigidity: ArrayLike | None = None,
    ) -> None:
        if not effectors:
            raise ValueError("Expected at least one end-effector")
        if iterations < 1:
            raise ValueError(f"Expected iterations >= 1, got {iterations}")
        self.skeleton = skeleton
        self.effectors = tuple(effectors)
        self.height = float(height)
        self.fps = float(fps)
        self.base = base
        self.damping = float(damping)
        self.gains = (float(gains[0]), float(gains[1]))
        self.min_dexterity = float(min_dexterity)
        self.max_input = float(max_input)
        self.iterations = int(iterations)
        n_joints = skeleton.num_joints
        joints = np.arange(n_joints) if active_joints is None else np.asarray(active_joints)
        active = np.zeros(n_joints, bool)
        active[joints] = True
        active[0] = True
        self._joints = np.flatnonzero(active)  # tangent columns: root translation, 3 per joint
        self._partial = not bool(skeleton.dof_mask.all())
        weights = np.ones(n_joints + 1) if rigidity is None else np.asarray(rigidity, np.float64)
        if weights.shape != (n_joints + 1,) or not (weights > 0).all():
            raise ValueError(f"Expected {n_joints + 1} positive rigidities, got {weights.shape}")
        # √W of the columns (the step's rigidity: see retarget.ik.rate.rate_step)
        self._root_w = np.sqrt(np.repeat(weights[np.concatenate([[0], 1 + self._joints])], 3))
        pos_rows = [k for k, e in enumerate(self.effectors) if e.axes]
        ori_rows = [k for k, e in enumerate(self.effectors) if e.orientation]
        self._pos_effectors = np.array(pos_rows, dtype=np.intp)
        self._pos_points = np.array([self.effectors[k].point for k in pos_rows], dtype=np.intp)
        self._pos_axes = np.zeros((len(pos_rows), 3), bool)
        for i, k in enumerate(pos_rows):
            self._pos_axes[i, list(self.effectors[k].axes)] = True
        self._ori_effectors = np.array(ori_rows, dtype=np.intp)
        self._ori_points = np.array([self.effectors[k].point for k in ori_rows], dtype=np.intp)
        self._layout = (  # the rows as the kernel takes them (_kernel._task_rows)
            self._pos_points,
            self._pos_effectors,
            self._pos_axes,
            self._ori_points,
            self._ori_effectors,
        )
        self._ori_scale = np.array(
            [
                self.effectors[k].lever / self.height if self.effectors[k].lever > 0 else 1.0
                for k in ori_rows
            ],
            dtype=np.float64,
        )
        self.names = [e.name or skeleton.point_names[e.point] for e in self.effectors]
        self._hold_only = np.array([e.hold_only for e in self.effectors])
        self._points = np.array([e.point for e in self.effectors], np.intp)
        self._priority = np.repeat(
            [self.effectors[k].priority for k in pos_rows + ori_rows], 3
        ).astype(np.intp)
        self._parents = np.ascontiguousarray(skeleton.point_parents, dtype=np.intp)
        self._offsets_of_points = np.ascontiguousarray(skeleton.point_offsets[None], np.float64)
        self._no_basis = np.zeros((0, 3, 3))
        # the channels as the compiled kernels take them (retarget.core._kernels.dofs)
        self._axes_q = np.ascontiguousarray(skeleton.axes, dtype=np.float64)
        self._order = np.array(
            [
                ["XYZ".index(a) for a in o + "".join(c for c in "XYZ" if c not in o)]
                for o in skeleton.euler_orders
            ],
            dtype=np.intp,
        ).reshape(-1, 3)
        self._count = np.array([len(o) for o in skeleton.euler_orders], dtype=np.intp)
        self._basis = np.zeros((len(self._joints), 3, 3))
        self._basis_inverse = np.zeros((len(self._joints), 3, 3))
        feet = base.feet if base is not None else ()
        # feet whose turn fades with their toe's offset
        self._turning = np.array([f.orientation for f in feet if f.orientation >= 0], np.intp)
        self._turning_toe = np.array([f.toe for f in feet if f.orientation >= 0], np.intp)
        self._turning_heel = np.array([f.heel for f in feet if f.orientation >= 0], np.intp)
        # the foot points (effector indices of toes and heels): their points, anchors, reaches
        foot_points = [p for f in feet for p in (f.toe, f.heel) if p >= 0]
        self._foot_points = np.array(foot_points, np.intp)
        self._foot_index = {p: i for i, p in enumerate(foot_points)}
        self._foot_skeleton_points = np.array(
            [self.effectors[p].point for p in foot_points], np.intp
        )
        self._anchors = np.array([max(self.effectors[p].anchor, 0) for p in foot_points], np.intp)
        self._anchored = np.array([self.effectors[p].anchor >= 0 for p in foot_points], bool)
        self._reach = np.array([self.effectors[p].reach for p in foot_points], np.float64)
        # rows whose offsets fade as their goals travel (a held heel's stays: the feet's sizes)
        self._fading = ~self._hold_only
        # feet with a toe, a heel and an orientation: the toe's goal rolls about a held heel
        self._rolling = np.array(
            [
                (
                    f.toe,
                    f.heel,
                    f.orientation,
                    self.effectors[f.toe].point,
                    self.effectors[f.heel].point,
                )
                for f in feet
                if f.heel >= 0 and f.orientation >= 0
            ],
            np.intp,
        ).reshape(-1, 5)
        foot_of = np.full(len(self.effectors), -1, np.intp)
        for f, foot in enumerate(feet):
            foot_of[[p for p in (foot.toe, foot.heel) if p >= 0]] = f
        self._foot_of_point = foot_of[self._foot_points]
        self._allowed = np.ones(len(foot_points), np.bool_)
        self._settling = False  # the first frame: the heels are held where they are at each step
        self._root: Array | None = None  # the pose (1, 3), (1, J, 4) and its FK: see _kernel
        self._frames = 0  # frames stepped since the first reset
        self._first = True  # the next step is a first frame (reset)
        self._restart = False
        self._settle = 1000

    # -- the contract (retarget.core.frames) -----------------------------------------------
    def reset(self, *, restart: bool = False, settle: int = 1000) -> None:
        """Forget the past: the next :meth:`step` is a first frame. It starts from that
        frame's source pose and steps toward its goals until the pose stops changing
        (the update's fixed point, module docstring), at most ``settle`` steps.

        Parameters
        ----------
        restart : bool
            The same stream goes on after a cut (its source jumped to another pose):
            the report's sums and the frame count carry on.
        settle : int
            Most steps of the first frame.
        """
        self._first = True
        self._restart = bool(restart)
        self._settle = int(settle)

    def step(self, frame: GoalFrame) -> PoseFrame:
        """The next output frame, from the previous one and this frame's inputs only (a
        first frame, after :meth:`reset` or on a new object: from its own inputs).

        Parameters
        ----------
        frame : GoalFrame
            ``θ_src`` on the character (its joint count) and a goal row per effector
            (NaN rows not tracked this frame); ``orientations`` when an effector tracks
            one.

        Returns
        -------
        PoseFrame
            The character's pose; :attr:`goals` the goals it tracked.
        """
        if self._first:
            self._first = False
            return self._start(frame, self._settle, self._restart)
        return self._next(frame)

    # -- state ---------------------------------------------------------------------------------
    def _start(self, frame: GoalFrame, settle: int, restart: bool) -> PoseFrame:
        """The first frame: the source pose, then steps toward its goals until the pose stops
        changing (the update's fixed point, at most ``settle`` steps)."""
        root = np.array(frame.root_position, dtype=np.float64)
        rot = np.array(frame.rotations, dtype=np.float64)
        n_joints = self.skeleton.num_joints
        if root.shape != (3,) or rot.shape != (n_joints, 4):
            raise ValueError(
                f"Expected a root position (3,) and rotations ({n_joints}, 4), "
                f"got {root.shape} and {rot.shape}"
            )
        g = np.array(frame.goals, dtype=np.float64)
        o = self._orientations(frame.orientations, len(g))
        k = len(g)
        n_points = self.skeleton.num_points
        restart = restart and self._root is not None
        self._root = root.reshape(1, 3).copy()
        self._rot = rot.reshape(1, n_joints, 4).copy()
        self._pos = np.empty((1, n_points, 3))
        self._world = np.empty((1, n_points, 4))
        self._forward_kinematics()
        self._offsets = np.zeros_like(g)
        self._turns = np.tile([1.0, 0.0, 0.0, 0.0], (k, 1))
        self._input = (g, o)
        self._goal_history = (g, g)
        self._weight = np.zeros(k)  # each point's hold weight (_weigh)
        self._drift = np.zeros_like(g)  # how far its hold has kept each point from its goal
        self._activation = np.ones(k)  # each effector's rows' activation (rate_step)
        self._heel_goals = np.full_like(g, np.nan)  # where each heel is held
        self._full = np.zeros(k, bool)  # fully held (the report's holds and releases)
        self._base_foot = -1
        self._swung = np.zeros(k, bool)
        if restart:
            self._frames += 1
        else:
            self._frames = 0
            # the report's running sums (memory does not grow with the stream)
            self._error_max = np.full(k, -np.inf)
            self._error_frame = np.zeros(k, np.intp)
            self._error_sum = np.zeros(k)
            self._error_count = np.zeros(k, np.intp)
            self._lowered: list[int] = []
            self._clamped: list[int] = []
            self._holds: list[tuple[int, str, str]] = []
            self._events = [0, 0, 0]  # gains lowered, inputs clamped, holds/releases: counted
            self._seconds = 0.0
        if self.base is not None:
            if self.base.single:  # the foot with the lowest toe is the base
                self._base_foot = int(np.argmin([g[foot.toe, 1] for foot in self.base.feet]))
            self._weigh(g, at_once=True)
        # every row starts at its goal; a heel, where its point is
        self._tracking = (np.isfinite(g).all(axis=1), np.isfinite(o).all(axis=1))
        source = self._source = (root, rot)
        # settle to the filter's own steady state for this frame: the fixed point of
        # step() on a still input, with the hold weights its rules (_weigh) give there and
        # the heels held where they are at each step, so a still input gives a still output
        # from the first frame on (a clip of one frame is the first frame of thirty
        # repeats); at most ``settle`` steps in all
        steps = 0
        self._settling = True
        for _ in range(_HOLD_ROUNDS):
            while steps < settle:
                steps += 1
                goal, turn = self._shape(g, o)
                before_root, before_rot = self._root.copy(), self._rot.copy()
                self._update(goal, goal, turn, turn, source, source, moving=False)
                for _ in range(1, self.iterations):  # as step() does: its fixed point
                    self._update(
                        goal, goal, turn, turn, source, source, moving=False, correction=True
                    )
                moved = max(
                    float(np.abs(self._root - before_root).max()) / self.height,
                    float(np.abs(self._rot - before_rot).max()),
                )
                if moved < _SETTLED:
                    break
            weight = self._weight.copy()
            self._weigh(g, at_once=True)
            if np.abs(weight - self._weight).max(initial=0.0) < _SETTLED:
                break
        # the heels are held where the settled pose puts them
        goal, turn = self._shape(g, o)
        self._settling = False
        self._last = (goal, turn)
        self._record(goal)
        return self.pose

    @property
    def pose(self) -> PoseFrame:
        """The current output frame."""
        if self._root is None:
            raise RuntimeError("no frame yet: step() a first frame")
        return PoseFrame._owned(self._root[0].copy(), self._rot[0].copy())

    @property
    def goals(self) -> Array:
        """The position goals tracked at the last frame, shape (K, 3): the inputs plus
        their offsets, held points where held; NaN for rows not tracked and for heels not
        fully held."""
        return self._shown(self._last[0])

    def _shown(self, goals: Array) -> Array:
        """``goals`` with the rows of heels not fully held NaN (copied)."""
        out = goals.copy()
        out[self._hold_only & ~self._full] = np.nan
        return out

    def _next(self, frame: GoalFrame) -> PoseFrame:
        """A frame after the first: one step of eq. (21) (and the §3.1 correction)."""
        t0 = time.perf_counter()
        # writable copies of the frame's read-only arrays: the compiled kernels take them
        # as they took the arrays of the first frame (one compiled version)
        src = (
            np.array(frame.root_position, dtype=np.float64),
            np.array(frame.rotations, dtype=np.float64),
        )
        g = np.array(frame.goals, dtype=np.float64)
        o = self._orientations(frame.orientations, len(g))
        self._weigh(g)  # holds and releases, judged on this frame's goals
        goal, turn = self._shape(g, o)
        last_goal, last_turn = self._last
        gain, clamped = self._update(last_goal, goal, last_turn, turn, self._source, src)
        if gain < 1.0:
            self._event(0, self._lowered, self._frames + 1)
        if clamped:
            self._event(1, self._clamped, self._frames + 1)
        for _ in range(1, self.iterations):  # §3.1 steps 1-3: step again from the prediction
            self._update(goal, goal, turn, turn, src, src, moving=False, correction=True)
        self._frames += 1
        self._goal_history = (self._goal_history[1], g)
        self._input = (g, o)
        self._source = src
        self._last = (goal, turn)
        self._seconds += time.perf_counter() - t0
        self._record(goal)
        return self.pose

    # -- goals ---------------------------------------------------------------------------------
    def _orientations(self, orientations: ArrayLike | None, k: int) -> Array:
        if orientations is None:
            if len(self._ori_effectors):
                raise ValueError("some effectors track an orientation: give `orientations`")
            return np.full((k, 4), np.nan)
        return np.array(orientations, dtype=np.float64)  # a writable C copy

    def _tracked(
        self, goals: Array, orientations: Array
    ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Which position rows track a goal this frame (a finite input), which orientation
        rows are on."""
        pos = np.isfinite(goals).all(axis=1)
        return np.asarray(pos), np.asarray(np.isfinite(orientations).all(axis=1))

    def _shape(self, goals: Array, orientations: Array) -> tuple[Array, Array]:
        """The goals tracked this frame, from this frame's inputs (the last frame's are
        ``self._input``): each row's input plus its offset, NaN for rows not tracked.

        A row's offset takes back the hold weight's share of its input's motion (a held
        point stays, one engaging or letting go moves by ``1 − w`` of it) and fades as
        the input travels while the point is free; a held heel's offset does not fade
        (it is the difference of the feet's sizes). A row that starts tracking starts
        from where its point is. A foot's orientation goal is held likewise while both
        its toe and its heel are, and its turn fades with the toe's offset. On a heel
        held before its toe, the toe's goal rolls about the heel: it goes, by the share
        ``w_heel (1 − w_toe)``, where a rigid foot of the target's size with the foot's
        orientation goal puts it (the source's toe and heel are not both within reach
        of a foot of another size).
        """
        last_goals, last_orientations = self._input
        k = len(goals)
        goal, turn = np.empty((k, 3)), np.empty((k, 4))
        pos, ori = np.empty(k, np.bool_), np.empty(k, np.bool_)
        was_pos, was_ori = self._tracking
        _shape_goals(
            goals,
            last_goals,
            orientations,
            last_orientations,
            self._offsets,
            self._turns,
            self._drift,
            self._weight,
            self._heel_goals,
            self._activation,
            was_pos,
            was_ori,
            self._pos,
            self._world,
            self._points,
            self._hold_only,
            self._fading,
            self._turning,
            self._turning_toe,
            self._turning_heel,
            self._rolling,
            self.base is not None,
            (self.base.settle_distance if self.base is not None else 1.0) * self.height,
            self._settling,
            goal,
            turn,
            pos,
            ori,
        )
        self._tracking = (pos, ori)
        return goal, turn

    # -- the update ----------------------------------------------------------------------------
    def _update(
        self,
        last_goals: Array,
        goals: Array,
        last_orientations: Array,
        orientations: Array,
        last_source: tuple[Array, Array],
        source: tuple[Array, Array],
        *,
        moving: bool = True,
        correction: bool = False,
    ) -> tuple[float, bool]:
        """One step of eq. (21) from the current pose toward this frame's goals
        (:func:`retarget.online._kernels.omr._update`): ``moving``, the goals and the
        source moved since the last frame; ``correction``, the primary task's Newton
        correction alone, no secondary. Returns the gain factor and whether the
        input was clamped."""
        basis: Array = self._no_basis
        basis_inverse: Array = self._no_basis
        if self._partial:  # joints move along their channels: columns v = C δθ
            basis, basis_inverse = self._basis, self._basis_inverse
            channel_basis(
                self._rot[0],
                self._joints,
                self._axes_q,
                self._order,
                self._count,
                basis,
                basis_inverse,
            )
        gain, clamped = _update(
            self._root,
            self._rot,
            self._pos,
            self._world,
            self._parents,
            self._offsets_of_points,
            self.skeleton.num_joints,
            goals,
            last_goals,
            orientations,
            last_orientations,
            source[0],
            source[1],
            last_source[0],
            last_source[1],
            self._layout,
            self._ori_scale,
            self._priority,
            self._activation,
            self._joints,
            self._root_w,
            basis,
            basis_inverse,
            self.height,
            rate_settings(self.damping, self.gains, self.min_dexterity, self.max_input),
            moving,
            correction,
            self._partial,
            not self._partial,
        )
        if self._partial:  # back onto the channels exactly, then the FK
            project(self._rot[0], self._axes_q, self._order, self._count)
            self._forward_kinematics()
        return gain, clamped

    def _forward_kinematics(self) -> None:
        _fk_kernel(
            self._root,
            self._rot,
            self._parents,
            self._offsets_of_points,
            self.skeleton.num_joints,
            self._pos,
            self._world,
        )

    # -- base switching ------------------------------------------------------------------------
    def _weigh(self, goals: Array, *, at_once: bool = False) -> None:
        """Each foot point's hold weight from this frame's goals (the pose is the last
        frame's; :func:`retarget.online._kernels.omr._hold_weights`): the product of smooth
        steps of the goal's speed (1 under ``rest_speed``, 0 over ``release_speed``), of
        the distance its hold has kept it from its goal (1 under half
        ``release_distance``, 0 over it: a heel rising slowly is let go) and, for a point
        with an anchor, of its leg's stretch (1 under 0.97 of ``reach``, 0 at it),
        followed with the time constants ``engage`` and ``ramp`` (``at_once``: taken as
        it is, the first frame). With ``single``, the points of feet other than the
        base weigh 0. The report lists a hold when a weight reaches 1 and a release when
        it leaves 1."""
        if self.base is None:
            return
        b = self.base
        allowed = self._allowed
        if b.single:  # one base foot: the one whose toe swung and came to rest last
            pts = self._foot_points
            d = goals[pts] - self._goal_history[1][pts]
            speed = (np.sqrt(np.add.reduce(d * d, axis=1)) * (self.fps / self.height)).tolist()
            for f, foot in enumerate(b.feet):
                toe = self._foot_index[foot.toe]
                self._swung[foot.toe] |= speed[toe] > b.release_speed
                if f != self._base_foot and self._swung[foot.toe] and speed[toe] < b.rest_speed:
                    self._base_foot = f
                    self._swung[foot.toe] = False
            allowed = self._foot_of_point == self._base_foot
        _hold_weights(
            goals,
            self._goal_history[1],
            self._drift,
            self._pos,
            self._foot_points,
            self._foot_skeleton_points,
            self._anchors,
            self._anchored,
            self._reach,
            allowed,
            self.fps,
            self.height,
            b.rest_speed,
            b.release_speed,
            b.release_distance,
            b.engage,
            b.ramp,
            at_once,
            self._weight,
        )
        full = self._weight >= 1.0
        if (full != self._full).any():
            for k in np.flatnonzero(full != self._full):
                what = "hold" if full[k] else "release"
                self._event(2, self._holds, (self._frames + 1, self.names[k], what))
        self._full = full

    # -- report --------------------------------------------------------------------------------
    def _record(self, goals: Array) -> None:
        err = np.full(len(self.effectors), np.nan)
        d = self._pos[0, self._pos_points] - goals[self._pos_effectors]
        d = np.where(self._pos_axes, d, 0.0)  # NaN goals stay NaN
        err[self._pos_effectors] = np.sqrt(np.add.reduce(d * d, axis=1))
        err[self._hold_only & ~self._full] = np.nan  # a heel counts while fully held
        seen = np.isfinite(err)
        worse = seen & (err > self._error_max)
        self._error_max[worse] = err[worse]
        self._error_frame[worse] = self._frames
        self._error_sum[seen] += err[seen]
        self._error_count[seen] += 1

    def _event(self, kind: int, events: list, event: Any) -> None:
        """Count an event; list it while fewer than :data:`EVENTS_LISTED` are."""
        self._events[kind] += 1
        if len(events) < EVENTS_LISTED:
            events.append(event)

    def report(self) -> dict[str, Any]:
        """Tracking error per end-effector (file unit: max, mean, frame of the max; also %
        of height), frames per second of :meth:`step`, frames where the gains were lowered
        or the input clamped, and the holds and releases of the feet."""
        per: dict[str, Any] = {}
        for k, name in enumerate(self.names):
            if self._error_count[k] == 0:
                continue
            worst, mean = (
                float(self._error_max[k]),
                float(self._error_sum[k] / self._error_count[k]),
            )
            per[name] = {
                "max": worst,
                "mean": mean,
                "frame_of_max": int(self._error_frame[k]),
                "max_pct_height": float(100.0 * worst / self.height),
                "mean_pct_height": float(100.0 * mean / self.height),
            }
        return {
            "frames": self._frames + 1,
            "tracking_error": per,
            **speed(
                self._frames,
                self._seconds,
                why="one frame: the filter was reset on it, no step was timed: no rate"
                if self._frames == 0
                else None,
            ),
            "gains_lowered_frames": list(self._lowered),
            "clamped_frames": list(self._clamped),
            "holds": [list(h) for h in self._holds],
            "events": dict(zip(("gains_lowered", "clamped", "holds"), self._events, strict=True)),
        }


# -- from a source's frames (the plan and the online method) ------------------------------


#: End-effector set-ups (:func:`omr_plan`).
SETUPS = ("lower", "full")
#: Goal mappings (:func:`omr_plan`).
GOALS = ("reach", "source", "height")
#: A foot is near the floor while its toe tip is under the first (share of the source's
#: height), not from the second on (:meth:`OMRPlan._reach`).
NEAR = (0.05, 0.12)
#: Time constant (s) of a foot's lift offset while it is near the floor
#: (:meth:`OMRRetargeter._lifted`).
LIFT_LAG = 0.05
_UP = np.eye(3)[UP]
#: A goal farther from its limb's root than this times the limb's length is beyond reach.
REACH_MARGIN = 1.02
#: A limb whose goals have been beyond reach on more than this share of the frames so far
#: (once a second has gone by) is given up: its rows are not tracked and the limb takes
#: the performer's joint angles (Choi & Ko's secondary task), until the share falls
#: under half of it.
GIVE_UP = 0.5


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
    goal_roots: NDArray[np.intp]  # (K,) the source point at the row's limb's root (-1: none)
    goal_root_targets: NDArray[np.intp]  # (K,) the target's point there
    limb_ratios: NDArray[np.float64]  # (K,) the row's limb: target's length over the source's
    reaches: NDArray[np.float64]  # (K,) the target's length from the row's limb root to it
    hip_points: NDArray[np.intp]  # (2,) the source's hips, left and right
    hip_targets: NDArray[np.intp]  # (2,) the target's
    toe_tips: NDArray[np.intp]  # (2,) the source's toe tips, left and right
    source_height: float
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

    def _reach(self, k: int, pos_s: Array, pos_t: Array) -> tuple[Array, Array, Array]:
        """Row ``k``'s goals (F, 3) of ``"reach"`` (module docstring) from the source's
        points ``pos_s`` and the target's ``pos_t`` in the source's pose; for a foot's row,
        its lift and how near the floor the foot is (:meth:`inputs_and_reach`), else 0.

        A foot's: its ankle on the stride's path along the floor, the foot of the
        target's size from there, its height the foot's scale about the floor (the sole
        meets the floor where the source's does). Its lift: how much higher the leg
        puts it, as far above the target's hips as the source's is above its own times
        the ratio of the legs' lengths (the knee bends as the performer's: a kick behind
        lifts the foot as far up the leg, not as far up the foot's scale). A hand's:
        from the target's shoulder, the source's hand from its shoulder times the ratio
        of the arms' lengths."""
        p, r = self.goal_points[k], float(self.limb_ratios[k])
        top_s = pos_s[:, self.goal_roots[k]]
        top_t = pos_t[:, self.goal_root_targets[k]]
        zero = np.zeros(len(pos_s))
        if self.goal_feet[k] < 0:
            return top_t + r * (pos_s[:, p] - top_s), zero, zero
        side = self.goal_feet[k]
        f = self.foot_ratios[side]
        ankle = pos_s[:, self.goal_ankles[k]]
        goal = self._strode(ankle) + f * (pos_s[:, p] - ankle)
        goal[:, UP] = self.floor + f * (pos_s[:, p, UP] - self.floor)
        hips_s = pos_s[:, self.hip_points, UP].mean(axis=1)
        hips_t = pos_t[:, self.hip_targets, UP].mean(axis=1)
        leg = hips_t + r * (ankle[:, UP] - hips_s) + f * (pos_s[:, p, UP] - ankle[:, UP])
        toe = (pos_s[:, self.toe_tips[side], UP] - self.floor) / self.source_height
        near = _ramp((NEAR[1] - toe) / (NEAR[1] - NEAR[0]))
        return goal, leg - goal[:, UP], near

    def _beyond(self, pos_t: Array, goals: Array) -> NDArray[np.bool_]:
        """Which position goals (F, K) lie beyond their limb's reach: farther from the
        limb's root in the target's points ``pos_t`` (F, P, 3) than :data:`REACH_MARGIN`
        times the limb's length (NaN goals: not)."""
        rows = np.flatnonzero(self.goal_root_targets >= 0)
        out = np.zeros(goals.shape[:2], dtype=bool)
        if len(rows):
            far = np.linalg.norm(goals[:, rows] - pos_t[:, self.goal_root_targets[rows]], axis=-1)
            out[:, rows] = far > REACH_MARGIN * self.reaches[rows]
        return out

    def inputs(self, root: ArrayLike, rotations: ArrayLike) -> tuple[Array, Array, Array, Array]:
        """The filter's inputs of source frames, the feet at their height near the floor
        (:meth:`inputs_and_reach`'s first four: :class:`OMRRetargeter` adds a lifted
        foot's lift)."""
        return self.inputs_and_reach(root, rotations)[:4]

    def inputs_and_reach(
        self, root: ArrayLike, rotations: ArrayLike
    ) -> tuple[Array, Array, Array, Array, NDArray[np.bool_], Array, Array]:
        """The filter's inputs of source frames, which goals are beyond reach, and the
        feet's lifts.

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
        beyond : (F, K) bool
            Goals beyond their limb's reach in the target's pose ``root``, ``rotations``
            (:data:`REACH_MARGIN`), the feet lifted by all their lift.
        lifts : (F, K)
            Per foot row (0 for others), how much higher than ``goals`` the leg puts it
            (:meth:`_reach`): :class:`OMRRetargeter` adds it less the part it had while
            the foot was near the floor (:meth:`OMRRetargeter._lifted`).
        near : (F, K)
            Per foot row, 1 while its foot's toe tip is within :data:`NEAR` of the
            floor, falling to 0 above (0 for other rows).
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
        lifts, near = np.zeros((n, len(self.effectors))), np.zeros((n, len(self.effectors)))
        # the limbs' roots (hips, shoulders) of the target in the source's pose, where the
        # root is placed for it: the goals of "reach" are taken about them
        pos_t = forward_kinematics(target, out_root, out_rot)[0]
        for k, p in enumerate(self.goal_points):
            if p == -2:
                goals[:, k] = out_root
            elif p < 0:
                continue
            elif not reach:
                goals[:, k] = self._mapped(pos_s[:, p])
            else:
                goals[:, k], lifts[:, k], near[:, k] = self._reach(k, pos_s, pos_t)
        orientations = np.full((n, len(self.effectors), 4), np.nan)
        # the feet's world orientations as the source pose would give them on the target
        turning = [f.orientation for f in self.feet if f.orientation >= 0]
        if turning:
            world = Pose.of(target, out_root, out_rot).world_rotations
            for k in turning:
                orientations[:, k] = world[:, self.effectors[k].point]
        beyond = self._beyond(pos_t, goals + lifts[..., None] * _UP)
        return out_root, out_rot, goals, orientations, beyond, lifts, near

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
    limbs = ["left_ankle", "right_ankle", "left_hip", "right_hip"]
    if setup == "full":
        limbs += ["left_shoulder", "right_shoulder"]
    missing = [n for n in [*names, *limbs] if n not in roles_s.points or n not in roles_t.points]
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
        # the foot's orientation, where its leg can turn it anyhow with the ankle in place
        # (six channels from the hip down): a leg of five (the H1's, one hinge at the
        # ankle) met the ankle, the toe and the foot's roll only by turning the pelvis,
        # 20° on average from the performer's, and the trunk and arms with it (LAFAN
        # walk: body jerk 48 times the source's, limbs 13° from the performer's; without
        # that row 1.1 times and 2.3°)
        if hold_heels and _leg_channels(target, hip, ankle) >= 6:
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
    # each position row's limb: its root (a hip, a shoulder), its length's ratio, its reach
    goal_roots, goal_root_targets, limb_ratios, reaches = [], [], [], []
    for e, p in zip(effectors, goal_points, strict=True):
        side, hand = e.name.split("_")[0], e.name.endswith("hand_tip")
        if p < 0:
            goal_roots.append(-1)
            goal_root_targets.append(-1)
            limb_ratios.append(1.0)
            reaches.append(np.inf)
            continue
        top, end = (
            (f"{side}_shoulder", f"{side}_hand_tip") if hand else (f"{side}_hip", f"{side}_ankle")
        )
        goal_roots.append(roles_s[top])
        goal_root_targets.append(roles_t[top])
        reaches.append(target.path_length(roles_t[top], e.point))
        limb_ratios.append(
            _ratio(
                target.path_length(roles_t[top], roles_t[end]),
                source.path_length(roles_s[top], roles_s[end]),
                h_t / h_s,
            )
        )
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
        goal_roots=np.array(goal_roots, dtype=np.intp),
        goal_root_targets=np.array(goal_root_targets, dtype=np.intp),
        limb_ratios=np.array(limb_ratios),
        reaches=np.array(reaches),
        hip_points=np.array([roles_s[f"{s}_hip"] for s in sides], dtype=np.intp),
        hip_targets=np.array([roles_t[f"{s}_hip"] for s in sides], dtype=np.intp),
        toe_tips=np.array([roles_s[f"{s}_toe_tip"] for s in sides], dtype=np.intp),
        source_height=h_s,
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


def _ramp(t: Array) -> Array:
    """0 below 0, 1 above 1, ``t³ (10 − 15 t + 6 t²)`` between (C2)."""
    t = np.clip(t, 0.0, 1.0)
    return t**3 * (10.0 - 15.0 * t + 6.0 * t * t)


def _leg_channels(target: Skeleton, hip: int, ankle: int) -> int:
    """Channels (degrees of freedom) from ``hip`` down to ``ankle``, both included."""
    chain = [int(j) for j in target.chain(ankle)]  # from the root down
    return sum(len(target.euler_orders[j]) for j in chain[chain.index(hip) :])


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
    :class:`~retarget.core.frames.OnlineMethod` of
    :class:`~retarget.core.frames.PoseFrame` (the source's pose) in and
    :class:`~retarget.core.frames.PoseFrame` (the target's) out.

    The first frame fixes the :class:`OMRPlan` (the floor and the origin of
    scaling, :func:`omr_plan`), kept for good: :meth:`reset` restarts the filter
    only, so the frames after a gap or a cut map as the first ones did. Each
    :meth:`step` is ``filter.step(GoalFrame(*plan.inputs(frame)))``.

    Parameters
    ----------
    source, target : Skeleton
        ``target`` has the source's joints (by name; else
        :class:`~retarget.core.errors.UnknownJointError`).
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

    def __init__(
        self,
        source: Skeleton,
        target: Skeleton,
        *,
        fps: float,
        glitch_speed: float = math.degrees(MAX_SPEED),
        **options: Any,
    ) -> None:
        target.indices(source.names)  # the target has the source's joints
        self.source = source
        self.target = target
        self.fps = float(fps)
        self.gate = GlitchGate(source, self.fps, math.radians(glitch_speed))
        self._plan_options, self._filter_options = _split_options(options)
        self.plan: OMRPlan | None = None
        self.filter: OnlineRetargeter | None = None
        self._restart = False
        self._frames = 0
        self._beyond: Array = np.zeros(0)  # per row: frames its limb's goal was beyond reach
        self.given_up: NDArray[np.bool_] = np.zeros(0, dtype=bool)  # per row, now
        self._ever: NDArray[np.bool_] = np.zeros(0, dtype=bool)  # per row, at some frame
        self._offsets: Array | None = None  # per row: the lift a foot had near the floor

    def reset(self, *, restart: bool = False) -> None:
        """Forget the past: the next :meth:`step` is the filter's first frame (the plan
        is kept).

        Parameters
        ----------
        restart : bool
            The same stream goes on after a cut: the filter's report carries on
            (:meth:`OnlineRetargeter.reset`).
        """
        self.gate.reset()
        self._offsets = None
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
        return self._gated(root, self.gate.step(rotations))

    def _gated(self, root: Array, rotations: Array) -> PoseFrame:
        """:meth:`step` on a source pose the gate has let through."""
        if self.plan is None or self.filter is None:
            self.plan = omr_plan(self.source, self.target, root, rotations, **self._plan_options)
            self.filter = self.plan.retargeter(self.fps, **self._filter_options)
            k = len(self.plan.effectors)
            self._beyond = np.zeros(k)
            self.given_up = self._ever = np.zeros(k, dtype=bool)
        r, q, goals, turns, beyond, lifts, near = (
            a[0] for a in self.plan.inputs_and_reach(root[None], rotations[None])
        )
        goals = self._reachable(self._lifted(goals, lifts, near), beyond)
        return self.filter.step(GoalFrame(r, q, goals, turns))

    def _lifted(self, goals: Array, lifts: Array, near: Array) -> Array:
        """This frame's goals (K, 3) with each foot's lift (:meth:`OMRPlan.inputs_and_reach`)
        less its offset: the lift it had while near the floor, followed there with the
        time constant :data:`LIFT_LAG` and held while the foot is up. On the floor a foot
        stands at its own scale (its leg would put it a little higher or lower: bones of
        other ratios); lifted, it rises and falls as its leg puts it, from where it left
        the floor, with no step at the change (the offset is continuous)."""
        if self._offsets is None:
            self._offsets = lifts.copy()
        rate = 1.0 - math.exp(-1.0 / (LIFT_LAG * self.fps))
        self._offsets += near * rate * (lifts - self._offsets)
        out = goals.copy()
        out[:, UP] += lifts - self._offsets
        return out

    def _reachable(self, goals: Array, beyond: NDArray[np.bool_]) -> Array:
        """This frame's goals (K, 3), the rows of limbs given up NaN (not tracked: the
        filter fades them out and the limb takes the performer's angles).

        A limb (the rows that share its root) is given up when its goals have been
        beyond reach (``beyond``, this frame's) on more than :data:`GIVE_UP` of the
        frames so far, once a second has gone by; taken back when that share falls
        under half of it. Chasing goals it cannot reach, the filter clamps its input
        frame after frame and the limb chatters at full stretch (a source whose body
        the mapping misread, a target far smaller than its goals)."""
        assert self.plan is not None
        roots = self.plan.goal_root_targets
        self._frames += 1
        for top in np.unique(roots[roots >= 0]):
            limb = roots == top
            self._beyond[limb] += float(beyond[limb].any())
        share = self._beyond / self._frames
        if self._frames >= self.fps:
            self.given_up = np.where(self.given_up, share > 0.5 * GIVE_UP, share > GIVE_UP)
            self._ever = self._ever | self.given_up
        if not self.given_up.any():
            return goals
        out = goals.copy()
        out[self.given_up] = np.nan
        return out

    def reach_report(self) -> dict[str, Any]:
        """Per limb (named by its first row), the share of frames whose goal was beyond
        reach, and the limbs given up (now, and at some frame)."""
        if self.plan is None:
            return {}
        roots = self.plan.goal_root_targets
        names = [e.name for e in self.plan.effectors]
        share = self._beyond / max(self._frames, 1)
        firsts = {
            int(top): int(np.flatnonzero(roots == top)[0]) for top in np.unique(roots[roots >= 0])
        }
        return {
            "beyond_reach_share": {names[k]: float(share[k]) for k in firsts.values()},
            "given_up": [names[k] for k in firsts.values() if self._ever[k]],
        }


# -- the offline shape: loops over the online one; data enhancement (§5) ------------------


def run_method(
    method: OMRRetargeter, source: Motion, cuts: ArrayLike = ()
) -> tuple[Array, Array, Array]:
    """A clip through :class:`~retarget.online.omr_plan.OMRRetargeter`, the offline shape
    as a loop over the online one (:mod:`retarget.core.frames`): ``reset()``, then
    ``step(PoseFrame)`` for every source frame, ``reset(restart=True)`` at the ``cuts``
    (:func:`run_filter`).

    Parameters
    ----------
    method : OMRRetargeter
    source : Motion
        The source clip (``method``'s source skeleton).
    cuts : array_like of int
        Frames where the filter restarts.

    Returns
    -------
    root (F, 3), rotations (F, J, 4)
        The target's frames.
    tracked : ndarray, shape (F, K, 3)
        The goals the filter tracked (:attr:`~retarget.online.OnlineRetargeter.goals`).
    """
    n = source.num_frames
    out_root = np.empty((n, 3))
    out_rot = np.empty((n, method.target.num_joints, 4))
    tracked: list[Array] = []
    restarts = set(np.asarray(cuts, dtype=np.intp).tolist())
    method.reset()
    # what the method's gate lets through (it restarts at the cuts, as the filter does)
    (rotations,) = through_gate(method.gate, source.rotations, cuts=sorted(restarts))
    inputs: list[Any] = []
    for f in range(n):
        if f in restarts and f > 0:
            method.reset(restart=True)
        if method.plan is None or method.filter is None:  # the first frame fixes the plan
            pose = method._gated(source.root_position[f], rotations[f])
            assert method.plan is not None
            # each frame's inputs are the plan's of that frame alone (what ``step``
            # computes frame by frame): all at once
            inputs = list(method.plan.inputs_and_reach(source.root_position, rotations))
        else:
            r, q, goals, turns, beyond, lifts, near = (a[f] for a in inputs)
            goals = method._reachable(method._lifted(goals, lifts, near), beyond)
            pose = method.filter.step(GoalFrame(r, q, goals, turns))
        out_root[f], out_rot[f] = pose.root_position, pose.rotations
        assert method.filter is not None
        tracked.append(method.filter.goals)
    return out_root, out_rot, np.array(tracked)


def run_filter(
    filt: OnlineRetargeter,
    root: Array,
    rotations: Array,
    goals: Array,
    orientations: Array | None = None,
    cuts: ArrayLike = (),
) -> tuple[Array, Array, Array]:
    """Feed a clip to the filter frame by frame, the offline shape as a loop over the
    online one (:mod:`retarget.core.frames`): ``reset()``, then ``step(frame)`` for
    every :class:`~retarget.online.GoalFrame`.

    At the frames ``cuts`` (:func:`retarget.humanoid.cuts.find_cuts`: the source jumps to another
    pose) the filter is reset again (``restart=True``: its report goes on), so the frame
    is a first frame: its closed loop would otherwise chase the jump over the next frames.

    Parameters
    ----------
    filt : OnlineRetargeter
    root : ndarray, shape (F, 3)
    rotations : ndarray, shape (F, J, 4)
        ``θ_src`` per frame.
    goals : ndarray, shape (F, K, 3)
    orientations : ndarray, shape (F, K, 4), optional
    cuts : array_like of int
        Frames where the filter restarts.

    Returns
    -------
    root (F, 3), rotations (F, J, 4)
        The output frames.
    tracked : ndarray, shape (F, K, 3)
        The goals the filter tracked (:attr:`~retarget.online.OnlineRetargeter.goals`).
    """
    n = len(root)
    out_root = np.empty_like(root)
    out_rot = np.empty((n, filt.skeleton.num_joints, 4))
    tracked = np.empty_like(goals)
    restarts = set(np.asarray(cuts, dtype=np.intp).tolist())
    filt.reset()
    for f in range(n):
        if f in restarts and f > 0:
            filt.reset(restart=True)
        o = None if orientations is None else orientations[f]
        pose = filt.step(GoalFrame(root[f], rotations[f], goals[f], o))
        out_root[f], out_rot[f] = pose.root_position, pose.rotations
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
