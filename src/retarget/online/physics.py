"""Tak & Ko's filter online: it scans the motion frame by frame (2005, §6, Figure 5).

The paper presents its method as a filter that "sequentially scans the input
motion to produce a stream of output motion frames": the Kalman stage is per
frame, and the least-squares filter solves each control point from a window of
``W`` frames centred on its knot, so it trails the Kalman stage by half a window.
:class:`OnlinePhysicsFilter` is one application in that form (``form="paper"``,
:mod:`retarget.physics.filter`), an online method of the library's contract
(:mod:`retarget.core.frames`): ``reset()``, ``step(PoseFrame) -> PoseFrame | None`` and,
at the end of a stream, ``flush()``. Its output is the batch application's
(:func:`retarget.physics.filter.physics_filter`) to round-off, frame for frame,
because it computes the same numbers from the same frames:

* **Kalman stage** (§5): frame ``k``'s rows (the prior's ZMP, support polygon,
  torques) and its state's rates are central differences of the prior, so frame
  ``k`` is filtered when frame ``k + 1`` is in (frame 0 when frame 2 is: the
  batch repeats frame 1's second difference there). A kinematic application reads
  positions only: it filters frame ``k`` at once.
* **Least-squares filter** (§6): control point ``j`` peaks at knot ``j − 1``, frame
  ``(j − 1) s``, and is solved from the Kalman frames within ``W / 2`` of it
  (:func:`retarget.filters.lsq.window_control_point`, the batch's own function);
  frame ``t`` is the curve of control points ``⌊t / s⌋ … ⌊t / s⌋ + 3``.

**Lag** (:attr:`OnlinePhysicsFilter.lag`): a dynamic application gives frame ``t``
when frame ``t + ⌈2 s + W / 2⌉ + 1`` is in: 41 frames at the paper's ``s = 4``,
``W = 64`` (1.4 s at 30 fps; the paper reports "a delay of about one second"),
the window's half plus the two knots the curve at ``t`` reaches ahead plus the
central difference. A kinematic application has no lag. :class:`OnlineFilters`
chains applications (``"2D+1K"``): their lags add.

The goals are given for the whole stream (:class:`~retarget.physics.filter.PhysicsGoals`
arrays, as the batch takes them), and frame ``k``'s are read when frame ``k`` or
``k + 1`` is in, never later ones.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from ..core import quat
from ..core.arrays import Array
from ..core.errors import RetargetError
from ..core.frames import PoseFrame
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from ..filters.lsq import bspline_basis, window_control_point
from ..humanoid.roles import find_roles, height
from ..physics.body import Body
from ..physics.filter import (
    FilterSetting,
    FilterSettings,
    PhysicsGoals,
    dynamic_joints,
    goal_rows,
    joint_ancestors,
    kalman_stage,
    parse_passes,
)

__all__ = ["OnlineFilters", "OnlinePhysicsFilter"]


class OnlinePhysicsFilter:
    """One application of Tak & Ko's filter as printed, frame by frame (module docstring).

    Parameters
    ----------
    body : Body
    goals : PhysicsGoals
        Over the whole stream (frame ``k``'s read when frame ``k`` or ``k + 1`` is in).
    kind : {"D", "K"}
        A dynamic or a kinematic application.
    settings : FilterSettings, optional
        ``form`` must be ``"paper"`` and ``window`` set (the sliding least-squares
        filter).
    fps : float
        Frames per second of the stream.
    points : sequence of int, optional
        The points a kinematic application may be given goals for (its state is the
        joints they hang from); default: those with a goal somewhere in ``goals``.
        A live stream, whose goals come as it goes (:attr:`goals`), names them.
    block : int
        Frames filtered together by the Kalman stage (one batched call): ``block − 1``
        frames more lag for fewer, larger calls (the same numbers to round-off).
    """

    def __init__(
        self,
        body: Body,
        goals: PhysicsGoals,
        kind: str = "D",
        settings: FilterSettings | None = None,
        *,
        fps: float,
        points: Sequence[int] | None = None,
        block: int = 1,
    ) -> None:
        st = settings or FilterSettings(form="paper")
        if block < 1:
            raise RetargetError(f"block must be at least 1 frame, got {block}")
        self._block = int(block)
        if st.form != "paper" or st.window is None:
            raise RetargetError(
                "the online filter is the paper's form with a sliding window "
                "(FilterSettings(form='paper', window=64))"
            )
        if kind not in ("D", "K"):
            raise RetargetError(f"an application is 'D' or 'K', got {kind!r}")
        sk = body.skeleton
        roles = find_roles(sk)
        self._s = FilterSetting(body, goals, roles, height(sk))
        self._st = st
        self._window: int = st.window
        self._fps = float(fps)
        self.dynamic = kind == "D"
        if self.dynamic:
            chosen = st.joints if st.joints is not None else dynamic_joints(roles)
            self._joints = [0, *(j for j in chosen if j != 0)]
        else:
            if points is None:
                points = [p for p, g in goals.positions.items() if np.isfinite(g).any()]
            self._joints = sorted(joint_ancestors(sk, list(points)) | {0})
        #: Frames between an input and the output of the same frame.
        reach = math.ceil(2 * st.spacing + self._window / 2) + 1 if self.dynamic else 0
        self.lag = reach + self._block - 1
        self.reset()

    @property
    def goals(self) -> PhysicsGoals:
        """The goals (frame ``k``'s are read when frame ``k`` or ``k + 1`` is in): a live
        stream sets them anew as they grow."""
        return self._s.goals

    @goals.setter
    def goals(self, goals: PhysicsGoals) -> None:
        self._s = dataclasses.replace(self._s, goals=goals)

    # -- the contract ------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the stream: the next frame is frame 0."""
        # per absolute frame (or control point) index, dropped once no longer needed:
        # memory and time per frame stay bounded over a stream of any length
        self._root: dict[int, Array] = {}  # the input (prior)
        self._rot: dict[int, Array] = {}
        self._out: dict[int, tuple[Array, Array]] = {}  # the Kalman stage's (root, rotations)
        self._profile: dict[int, tuple[Array, Array, Array]] = {}  # LSQ data (q, q̇, q̈)
        self._controls: dict[int, Array] = {}
        self._n = 0  # frames in
        self._done = 0  # frames through the Kalman stage
        self._solved = 0  # control points solved
        self._flip = 0  # the quaternions' sign parity along time (quat.unroll)
        self._last_raw: Array | None = None
        self._given = 0  # frames given out

    def step(self, frame: PoseFrame) -> PoseFrame | None:
        """Take frame ``k``; give frame ``k − lag`` once it is final (None before)."""
        self._root[self._n] = np.asarray(frame.root_position, dtype=np.float64)
        self._rot[self._n] = np.asarray(frame.rotations, dtype=np.float64)
        self._n += 1
        n = self._n
        ready = n if not self.dynamic else (n - 1 if n >= 3 else 0)  # filterable frames
        if ready - self._done >= self._block:
            self._kalman(self._done, ready, n)
        if self.dynamic:
            self._solve_controls(self._done, final=False)
        out = self._give(n)
        self._forget()
        return out

    def flush(self) -> list[PoseFrame]:
        """The frames still held, at the end of the stream (the batch's last frames)."""
        n = self._n
        if n == 0:
            return []
        if self.dynamic and n < 3:
            raise RetargetError("a dynamic application needs at least 3 frames")
        if self._done < n:
            self._kalman(self._done, n, n)
        if self.dynamic:
            self._solve_controls(n, final=True)
        out = []
        while self._given < n:
            out.append(self._frame(self._given, n))
            self._given += 1
        return out

    def _forget(self) -> None:
        """Drop what no later step reads: prior frames behind the Kalman stage's
        neighbours, filtered frames behind both the frames still to give and the next
        control point's window, control points behind the next frame to give."""
        s = self._st.spacing
        for k in [k for k in self._root if k < self._done - 2]:
            del self._root[k], self._rot[k]
        keep = self._given
        if self.dynamic:  # the first frame the next control point reads (_solve_controls)
            keep = min(keep, self._origin(max(0.0, (self._solved - 1) * s - self._window / 2)))
        for k in [k for k in self._out if k < keep]:
            del self._out[k]
            self._profile.pop(k, None)
        for j in [j for j in self._controls if j < math.floor(self._given / s) - 2]:
            del self._controls[j]

    # -- the two stages ----------------------------------------------------------------
    def _kalman(self, first: int, stop: int, n: int) -> None:
        """The Kalman stage of frames ``first .. stop − 1`` from the prior frames around
        them (of the ``n`` in)."""
        if self.dynamic:  # the central differences at k: the batch's, from k − 1 .. k + 1
            a = 0 if first == 0 else max(0, min(first - 1, n - 3))
            b = max(min(n, stop + 1), a + 3)
        else:
            a, b = first, stop
        skeleton: Skeleton = self._s.body.skeleton
        root = np.array([self._root[k] for k in range(a, b)])
        prior = Motion(skeleton, root, np.array([self._rot[k] for k in range(a, b)]), self._fps)
        s = dataclasses.replace(self._s, goals=_goals_slice(self._s.goals, a, b))
        rows = goal_rows(s, prior, self.dynamic, self._st)
        only = slice(first - a, stop - a)
        motion, qd, qdd = kalman_stage(
            s, prior, rows, self._joints, self.dynamic, self._st, only=only
        )
        for i in range(only.start, only.stop):
            self._out[a + i] = (motion.root_position[i], motion.rotations[i])
            if self.dynamic:
                self._append_profile(motion, qd[i], qdd[i], i, a + i)
        self._done = stop

    def _append_profile(self, motion: Motion, qd: Array, qdd: Array, i: int, k: int) -> None:
        """Frame ``i`` of ``motion`` as the least-squares filter fits it: root translation
        in metres, the moved joints' quaternion components (one hemisphere along time)
        and their first two derivatives (``_least_squares``'s)."""
        metres = self._s.body.metres
        n_j = motion.skeleton.num_joints
        raw = motion.rotations[i, self._joints]
        if self._last_raw is not None:
            flips = np.sum(raw * self._last_raw, axis=-1) < 0.0
            self._flip = self._flip + flips.astype(int)
        self._last_raw = raw
        sign = np.where(np.asarray(self._flip) % 2 == 1, -1.0, 1.0)[..., None]
        q = raw * sign
        w = qd[3:].reshape(n_j, 3)[self._joints]
        wd = qdd[3:].reshape(n_j, 3)[self._joints]
        half = np.concatenate([np.zeros((len(w), 1)), 0.5 * w], axis=-1)
        half_d = np.concatenate([np.zeros((len(wd), 1)), 0.5 * wd], axis=-1)
        dq = quat.multiply(q, half)
        ddq = quat.multiply(q, quat.multiply(half, half) + half_d)
        root = motion.root_position[i] * metres
        self._profile[k] = (
            np.concatenate([root, q.ravel()]),
            np.concatenate([qd[:3], dq.ravel()]),
            np.concatenate([qdd[:3], ddq.ravel()]),
        )

    def _solve_controls(self, done: int, *, final: bool) -> None:
        """Every control point whose window the ``done`` filtered frames cover."""
        st = self._st
        s, half = st.spacing, self._window / 2
        if done == 0:
            return
        count = math.ceil((done - 1) / s) + 3 if final else None
        weights = (1.0, st.beta, st.beta**2)
        while True:
            j = self._solved
            if final:
                if j >= count:  # type: ignore[operator]
                    return
            elif (j - 1) * s + half > done - 1:  # its window reaches beyond the frames in
                return
            # frames from a knot at or before the window's first frame: the same basis
            # values as the whole stream's (module docstring), control point j − shift
            origin = self._origin(max(0.0, (j - 1) * s - half))
            bases = bspline_basis(done - origin, s, self._fps)
            q, qd, qdd = (
                np.array([self._profile[k][d] for k in range(origin, done)]) for d in range(3)
            )
            local = j - round(origin / s)
            root = window_control_point(
                local, bases, weights, (q[:, :3], qd[:, :3], qdd[:, :3]), s, self._window
            )
            quats = window_control_point(
                local, bases, weights, (q[:, 3:], qd[:, 3:], qdd[:, 3:]), s, self._window
            )
            self._controls[j] = np.concatenate([root, quats])
            self._solved = j + 1

    def _origin(self, frame: float) -> int:
        """A frame at or before ``frame`` on a knot (a multiple of the spacing), from which
        the B-spline basis has the whole stream's values: 0 for a spacing that is not a
        whole number of frames (then the basis of every frame so far is made)."""
        s = self._st.spacing
        if s != int(s):
            return 0
        return int(s) * max(0, math.floor(frame / s) - 1)

    def _give(self, n: int) -> PoseFrame | None:
        """The next frame out, if it is final."""
        t = self._given
        if t >= self._done or n - 1 - t < self.lag:  # (a constant lag: block)
            return None
        if self.dynamic:
            i = math.floor(t / self._st.spacing)
            if i + 3 >= self._solved:
                return None
        self._given += 1
        return self._frame(t, n)

    def _frame(self, t: int, n: int) -> PoseFrame:
        """Output frame ``t`` (the stream has ``n`` frames so far)."""
        root = np.array(self._out[t][0])
        rot = np.array(self._out[t][1])
        if self.dynamic:
            origin = self._origin(t)
            b0 = bspline_basis(n - origin, self._st.spacing, self._fps)[0][t - origin]
            shift = round(origin / self._st.spacing)
            cols = np.flatnonzero(b0[: self._solved - shift])
            fit = b0[cols] @ np.array([self._controls[int(j) + shift] for j in cols])
            root = fit[:3] / self._s.body.metres
            q = fit[3:].reshape(len(self._joints), 4)
            rot[self._joints] = quat.normalize(q)
        return PoseFrame(root, rot)


def _goals_slice(goals: PhysicsGoals, a: int, b: int) -> PhysicsGoals:
    """The goals of frames ``a .. b − 1``."""
    contacts = dataclasses.replace(goals.contacts, mask=np.array(goals.contacts.mask[a:b]))
    return dataclasses.replace(
        goals,
        contacts=contacts,
        positions={p: g[a:b] for p, g in goals.positions.items()},
    )


class OnlineFilters:
    """Applications in sequence (``"2D+1K"``), each an :class:`OnlinePhysicsFilter` fed
    the previous one's frames; the lags add (:attr:`lag`)."""

    def __init__(
        self,
        body: Body,
        goals: PhysicsGoals,
        passes: str | Sequence[str] = "2D+1K",
        settings: FilterSettings | None = None,
        *,
        fps: float,
        points: Sequence[int] | None = None,
        block: int = 1,
    ) -> None:
        sequence = parse_passes(passes) if isinstance(passes, str) else tuple(passes)
        self.stages = [
            OnlinePhysicsFilter(body, goals, kind, settings, fps=fps, points=points, block=block)
            for kind in sequence
        ]
        #: Frames between an input and the output of the same frame.
        self.lag = sum(stage.lag for stage in self.stages)

    @property
    def goals(self) -> PhysicsGoals:
        """The goals every application reads (set anew by a live stream as they grow)."""
        return self.stages[0].goals

    @goals.setter
    def goals(self, goals: PhysicsGoals) -> None:
        for stage in self.stages:
            stage.goals = goals

    def reset(self) -> None:
        for stage in self.stages:
            stage.reset()

    def step(self, frame: PoseFrame) -> PoseFrame | None:
        out: PoseFrame | None = frame
        for stage in self.stages:
            if out is None:
                return None
            out = stage.step(out)
        return out

    def flush(self) -> list[PoseFrame]:
        pending: list[PoseFrame] = []
        for stage in self.stages:
            out = []
            for frame in pending:
                got = stage.step(frame)
                if got is not None:
                    out.append(got)
            pending = out + stage.flush()
        return pending
