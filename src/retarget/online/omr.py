"""Online motion retargeting (Choi & Ko 2000): a causal filter, one frame at a time.

Each frame, the source's pose mapped onto the target (``θ_src``: its joint
rotations by name, its root placed for the target's size) and the goals of
the end-effectors (``x1``) go in; the target's pose comes out, from the
previous output and these inputs only (:meth:`OnlineRetargeter.step`). The
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
point: a foot point whose goal comes to rest (speed under ``rest_speed``,
acceleration under ``rest_acceleration``, judged on this and the two
previous frames' goals: causally) is held where it is, and released when its
goal moves again. ``BaseSwitching(single=True)`` is the paper's rule, one
base foot at a time; the default holds every resting point, heels included,
so a foot in double support does not slide. A rigid foot of the target's size
cannot meet the source's toe and heel both: on one held point it follows the
source's foot orientation instead (:class:`Foot`). Whenever a row starts to
track its goal it keeps the offset between where its point is and the goal,
fading as the goal travels (``settle_distance``): nothing jumps at a switch.

**Priorities.** Rows carry a priority level (:class:`Effector`): toe tips and
the pelvis first, heels and foot orientations second, so a heel that cannot
stay put without moving a toe gives way (:func:`retarget.ik.rate.rate_step`).
A held heel also lets go when its leg is straight (``Effector.reach``).

Joints with fewer than three rotation channels (ASF hinges) move along their
channels only (:func:`retarget.dofs.channel_axes`); joints outside
``active_joints`` copy the source.

The update itself (rows of :mod:`retarget.tasks`, the step of
:func:`retarget.ik.rate.rate_step`, ``pose ⊕ Δθ`` and forward kinematics) is
one compiled call (:mod:`retarget.online._kernel`); this module keeps the
goals and the holds, in numpy on arrays of a few rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import quat
from ..dofs import channel_axes, project_to_dofs
from ..kinematics import _fk_kernel
from ..result import speed
from ..skeleton import Skeleton
from ._kernel import _update

__all__ = ["BaseSwitching", "Effector", "Foot", "OnlineRetargeter"]

Array = NDArray[np.float64]

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
        Never tracked, only held while it rests (a heel: see :class:`BaseSwitching`).
    anchor, reach : int, float
        A held point farther than ``reach`` from point ``anchor`` is released,
        and held again only within 0.98 ``reach`` (a heel lets go when its leg
        is straight, as a walker's heel rises at the end of stance).
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
    is the heel. Unless both are held, the foot also follows the source's foot
    orientation: in the swing, so the foot lands as the source's does; on one
    held point (the heel as the sole comes down, the toe as the heel rises)
    instead of the other point's position, as a rigid foot of the target's size
    cannot meet the source's toe and heel both.
    """

    toe: int
    heel: int = -1
    orientation: int = -1


@dataclass(frozen=True)
class BaseSwitching:
    """The stance foot as the kinematic base (§6.1): which points are held, and when.

    A foot point is held where it is while its goal rests (speed under
    ``rest_speed`` and acceleration under ``rest_acceleration``: a
    low-acceleration frame), and released when its goal moves faster than
    ``release_speed``. Whenever a row starts to track its goal (a point
    released, a toe back from following the foot's orientation), it keeps the
    offset between where it is and its goal, fading as the goal travels
    ``settle_distance`` (e⁻¹): nothing jumps when the base switches.

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
    rest_acceleration : float
        Heights per second².
    release_distance : float
        Heights: a held point is also released once its goal has moved this far
        from where it came to rest (a heel rising slowly).
    settle_distance : float
        Heights; orientation offsets fade with their foot's toe offset.
    """

    feet: tuple[Foot, ...]
    single: bool = False
    rest_speed: float = 0.15
    release_speed: float = 0.3
    rest_acceleration: float = 3.0
    release_distance: float = 0.01
    settle_distance: float = 0.05


class OnlineRetargeter:
    """Closed-loop inverse rate control, frame by frame (Choi & Ko 2000, eq. 21).

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
        self._ori_scale = np.array(
            [
                self.effectors[k].lever / self.height if self.effectors[k].lever > 0 else 1.0
                for k in ori_rows
            ],
            dtype=np.float64,
        )
        self.names = [e.name or skeleton.point_names[e.point] for e in self.effectors]
        self._hold_only = np.array([e.hold_only for e in self.effectors])
        self._priority = np.repeat(
            [self.effectors[k].priority for k in pos_rows + ori_rows], 3
        ).astype(np.intp)
        self._parents = np.ascontiguousarray(skeleton.point_parents, dtype=np.intp)
        self._offsets_of_points = np.ascontiguousarray(skeleton.point_offsets[None], np.float64)
        self._no_basis = np.zeros((0, 3, 3))
        feet = base.feet if base is not None else ()
        # feet whose turn fades with their toe's offset
        self._turning = np.array([f.orientation for f in feet if f.orientation >= 0], np.intp)
        self._turning_toe = np.array([f.toe for f in feet if f.orientation >= 0], np.intp)
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
        self._root: Array | None = None  # the pose (1, 3), (1, J, 4) and its FK: see _kernel
        self._frames = 0  # frames stepped since the first reset

    # -- state ---------------------------------------------------------------------------------
    def reset(
        self,
        source_root: ArrayLike,
        source_rotations: ArrayLike,
        goals: ArrayLike,
        orientations: ArrayLike | None = None,
        *,
        settle: int = 1000,
        restart: bool = False,
    ) -> tuple[Array, Array]:
        """Start from the first frame: the source pose, then steps toward its goals until
        the pose stops changing (the update's fixed point, at most ``settle`` steps).

        Parameters
        ----------
        source_root : array_like, shape (3,)
        source_rotations : array_like, shape (J, 4)
        goals : array_like, shape (K, 3)
            Position goals per effector (rows of orientation-only effectors ignored).
        orientations : array_like, shape (K, 4), optional
            World orientation goals of the effectors that track one.
        restart : bool
            The same stream goes on after a cut (its source jumped to another pose):
            the report's sums and the frame count carry on.

        Returns
        -------
        root_position (3,), rotations (J, 4): the first output frame.
        """
        root = np.array(source_root, dtype=np.float64)
        rot = np.array(source_rotations, dtype=np.float64)
        n_joints = self.skeleton.num_joints
        if root.shape != (3,) or rot.shape != (n_joints, 4):
            raise ValueError(
                f"Expected a root position (3,) and rotations ({n_joints}, 4), "
                f"got {root.shape} and {rot.shape}"
            )
        g = np.array(goals, dtype=np.float64)
        o = self._orientations(orientations, len(g))
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
        self._held = np.zeros(k, bool)
        self._held_at = np.full_like(g, np.nan)
        self._rest_goal = g.copy()  # each point's goal when it was last held
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
        if self.base is not None:  # at first, the points on the ground are held
            feet = self.base.feet
            if self.base.single:  # the foot with the lowest toe is the base
                self._base_foot = int(np.argmin([g[foot.toe, 1] for foot in feet]))
                feet = (feet[self._base_foot],)
            points = [p for foot in self.base.feet for p in (foot.toe, foot.heel) if p >= 0]
            low = min(g[p, 1] for p in points)
            for foot in feet:
                for p in (foot.toe, foot.heel):
                    if p >= 0 and g[p, 1] < low + 0.03 * self.height:
                        self._hold(p, g[p])
        source = self._source = (root, rot)
        # settle to the filter's own steady state for this frame: the update's fixed
        # point, with the holds that the next frame's rules (_switch_base) keep on a
        # still input, so a still input gives a still output from the first frame on
        # (a clip of one frame is the first frame of thirty repeats); at most
        # ``settle`` steps in all
        steps = 0
        for _ in range(_HOLD_ROUNDS):
            goal, turn = self._effective(g, o)
            self._tracking = self._tracked(goal, turn)
            while steps < settle:
                steps += 1
                before_root, before_rot = self._root.copy(), self._rot.copy()
                self._update(goal, goal, turn, turn, source, source, moving=False)
                moved = max(
                    float(np.abs(self._root - before_root).max()) / self.height,
                    float(np.abs(self._rot - before_rot).max()),
                )
                if moved < _SETTLED:
                    break
            held = self._held.copy()
            self._switch_base(g)
            if np.array_equal(held, self._held):
                break
        self._last = (goal, turn)
        self._record(goal)
        return self.pose

    @property
    def pose(self) -> tuple[Array, Array]:
        """The current output: root position (3,), rotations (J, 4)."""
        if self._root is None:
            raise RuntimeError("call reset() with the first frame before step()")
        return self._root[0].copy(), self._rot[0].copy()

    @property
    def goals(self) -> Array:
        """The position goals tracked at the last frame, shape (K, 3): the inputs plus
        the fading offsets, held points where held, NaN for rows not tracked."""
        return self._last[0].copy()

    def step(
        self,
        source_root: ArrayLike,
        source_rotations: ArrayLike,
        goals: ArrayLike,
        orientations: ArrayLike | None = None,
    ) -> tuple[Array, Array]:
        """The next output frame from the previous one and this frame's inputs only.

        Parameters as :meth:`reset`; NaN goal rows are not tracked this frame.
        """
        if self._root is None:
            raise RuntimeError("call reset() with the first frame before step()")
        t0 = time.perf_counter()
        src = (
            np.ascontiguousarray(source_root, np.float64),
            np.ascontiguousarray(source_rotations, np.float64),
        )
        g = np.asarray(goals, dtype=np.float64)
        o = self._orientations(orientations, len(g))
        self._fade_offsets(g)
        self._switch_base(g)  # holds and releases, judged on this frame's goals
        goal, turn = self._settle_new_rows(g, o)
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
        return np.ascontiguousarray(orientations, dtype=np.float64)

    def _effective(self, goals: Array, orientations: Array) -> tuple[Array, Array]:
        """The goals tracked this frame: inputs plus offsets (turns), held points where
        held; NaN rows are not tracked (a free heel, a toe or an orientation a foot's
        state does not ask for)."""
        g = goals + self._offsets
        g[self._hold_only] = np.nan
        g[self._held] = self._held_at[self._held]
        o = quat.multiply(self._turns, orientations)
        o[self._hold_only] = np.nan
        if self.base is not None:
            held = self._held.tolist()
            for foot in self.base.feet:
                toe_held = held[foot.toe]
                heel_held = foot.heel >= 0 and held[foot.heel]
                if heel_held and not toe_held:  # the sole comes down on the heel
                    g[foot.toe] = np.nan
                if foot.orientation >= 0 and toe_held and heel_held:
                    o[foot.orientation] = np.nan  # flat: the held points place the foot
        return g, o

    def _tracked(
        self, goals: Array, orientations: Array
    ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Which position rows track their input (not held), which orientation rows are on."""
        pos = np.isfinite(goals).all(axis=1) & ~self._held
        return np.asarray(pos), np.asarray(np.isfinite(orientations).all(axis=1))

    def _settle_new_rows(self, goals: Array, orientations: Array) -> tuple[Array, Array]:
        """A row that starts tracking its input keeps its offset from it (no jump).

        Returns the goals tracked this frame (:meth:`_effective`), with those offsets.
        """
        goal, turn = self._effective(goals, orientations)
        pos, ori = self._tracked(goal, turn)
        was_pos, was_ori = self._tracking
        self._tracking = (pos, ori)
        new_pos, new_ori = pos & ~was_pos, ori & ~was_ori
        if not (new_pos.any() or new_ori.any()):
            return goal, turn
        last_goals, last_orientations = self._input
        for k in np.flatnonzero(new_pos):
            here = self._pos[0, self.effectors[k].point]
            self._offsets[k] = here - last_goals[k]
        for k in np.flatnonzero(new_ori):
            here = self._world[0, self.effectors[k].point]
            self._turns[k] = quat.multiply(here, quat.conjugate(last_orientations[k]))
        return self._effective(goals, orientations)

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
        (:func:`retarget.online._kernel._update`): ``moving``, the goals and the
        source moved since the last frame; ``correction``, the primary task's Newton
        correction alone, no secondary. Returns the gain factor and whether the
        input was clamped."""
        basis: Array = self._no_basis
        basis_inverse: Array = self._no_basis
        if self._partial:  # joints move along their channels: columns v = C δθ
            basis = channel_axes(self.skeleton, self._rot[0])[self._joints]  # (A, 3, 3)
            basis_inverse = np.asarray(np.linalg.pinv(basis), dtype=np.float64)
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
            self._pos_points,
            self._pos_effectors,
            self._pos_axes,
            self._ori_points,
            self._ori_effectors,
            self._ori_scale,
            self._priority,
            self._joints,
            self._root_w,
            basis,
            basis_inverse,
            self.height,
            self.damping,
            self.gains[0],
            self.gains[1],
            self.min_dexterity,
            self.max_input,
            moving,
            correction,
            self._partial,
            not self._partial,
        )
        if self._partial:  # back onto the channels exactly, then the FK
            self._rot[0] = project_to_dofs(self.skeleton, self._rot[0])
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
    def _fade_offsets(self, goals: Array) -> None:
        """Offsets fade as their goals travel (and a foot's turn with its toe's)."""
        if self.base is None:
            return
        step = goals - self._goal_history[1]
        step = np.where(np.isfinite(step), step, 0.0)
        moved = np.sqrt(np.add.reduce(step * step, axis=1))
        fade = np.exp(-moved / (self.base.settle_distance * self.height))
        self._offsets *= fade[:, None]
        if len(self._turning):  # a foot's turn fades with its toe's offset
            turn = quat.log(self._turns[self._turning]) * fade[self._turning_toe, None]
            self._turns[self._turning] = quat.exp(turn)

    def _switch_base(self, goals: Array) -> None:
        """Hold the points whose goals came to rest, release those whose goals move
        (at the start of a frame: ``goals`` are this frame's, the pose the last one's)."""
        if self.base is None:
            return
        b = self.base
        g0, g1 = self._goal_history
        pts = self._foot_points
        g = goals[pts]
        d1, d2, rest = g - g1[pts], g - 2.0 * g1[pts] + g0[pts], g - self._rest_goal[pts]
        here = self._pos[0, self._foot_skeleton_points]
        lever = here - self._pos[0, self._anchors]
        speed_v = np.sqrt(np.add.reduce(d1 * d1, axis=1)) * self.fps / self.height
        accel_v = np.sqrt(np.add.reduce(d2 * d2, axis=1)) * self.fps**2 / self.height
        stretch_v = np.sqrt(np.add.reduce(lever * lever, axis=1)) / self._reach
        drift_v = np.sqrt(np.add.reduce(rest * rest, axis=1)) / self.height
        resting = ((speed_v < b.rest_speed) & (accel_v < b.rest_acceleration)).tolist()
        speed, drift = speed_v.tolist(), drift_v.tolist()
        stretch = np.where(self._anchored, stretch_v, 0.0).tolist()
        index, held = self._foot_index, self._held
        for f, foot in enumerate(b.feet):
            toe = index[foot.toe]
            self._swung[foot.toe] |= speed[toe] > b.release_speed
            if b.single and f != self._base_foot:
                if self._swung[foot.toe] and resting[toe]:  # the new base
                    for other in b.feet:
                        for p in (other.toe, other.heel):
                            if other is not foot and p >= 0 and held[p]:
                                self._release(p)
                    self._base_foot = f
                    self._swung[foot.toe] = False
                else:
                    continue
            for p in (foot.toe, foot.heel):
                if p < 0:
                    continue
                i = index[p]
                moving = speed[i] > b.release_speed or drift[i] > b.release_distance
                if held[p] and (moving or stretch[i] > 1.0):
                    self._release(p)
                elif not held[p] and resting[i] and stretch[i] < 0.98:
                    self._hold(p, here[i])
                    self._rest_goal[p] = goals[p]

    def _hold(self, k: int, here: Array) -> None:
        self._held[k], self._held_at[k] = True, here.copy()
        self._offsets[k] = 0.0
        self._event(2, self._holds, (self._frames + 1, self.names[k], "hold"))

    def _release(self, k: int) -> None:
        self._held[k] = False
        self._event(2, self._holds, (self._frames + 1, self.names[k], "release"))

    # -- report --------------------------------------------------------------------------------
    def _record(self, goals: Array) -> None:
        err = np.full(len(self.effectors), np.nan)
        d = self._pos[0, self._pos_points] - goals[self._pos_effectors]
        d = np.where(self._pos_axes, d, 0.0)  # NaN goals stay NaN
        err[self._pos_effectors] = np.sqrt(np.add.reduce(d * d, axis=1))
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
