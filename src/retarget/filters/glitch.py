"""Capture glitches held out of a pose stream, causally (issue 40).

An optical capture swaps or loses a marker for a frame or a few: a foot turns
60° in a hundredth of a second and back, its toe tip jumps a tenth of the body's
height out and back while its ankle stays where it was. A method that tracks
that toe tip as an end-effector carries the whole leg out with it: a pop the
performer never made. Choi & Ko's filter (2000) tracks whatever its input
says; Shin et al. (2001) filter their sensors with a Kalman filter, whose
smoothing spreads a jump over a few frames rather than removing it.

:class:`GlitchGate` holds a joint's local rotation where it was when the input
turns it farther in one frame than a joint can turn (``max_speed``, radians per
second: 2,500°/s by default, above the knee's and elbow's fastest in sprinting
and kicking and below a marker swap's several thousand at 120 Hz), for at most
``hold`` seconds: a glitch comes back within that and is never seen; an input
that stays away was a real movement (or a cut the caller did not restart at),
and the gate then turns toward it at ``max_speed`` until it has caught up. Frame
by frame, from the past only: an online method steps it before its own step,
and an offline loop over the online one gives the same frames.

What turns too fast is a joint's *bones* in the world: the directions of the
offsets to its children, turned by the joint's world rotation (its chain's local
rotations, from the root down), against the last frame let through; the largest
angle between the two is the turn. A twist about a bone moves nothing the methods
track, and exporters flip a limb's twist between two equivalent solutions from one
frame to the next and turn the joint below back (an optical capture at 120 Hz
turning an upper arm 64° about itself in a frame and its forearm back, the hand
moving 2 cm): nothing points elsewhere, and that goes through. A joint without a
child is never held. A quaternion's sign does not matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core import quat
from ..core.arrays import Array
from ..core.kinematics import forward_kinematics
from ..core.skeleton import Skeleton

__all__ = ["MAX_SPEED", "GlitchGate", "SensorGate", "bones_of", "through_gate"]

#: Fastest turn of a joint, radians per second (module docstring).
MAX_SPEED = math.radians(2500.0)
#: Longest a glitch lasts, seconds: an input still away after it is followed.
HOLD = 0.1


@dataclass
class GlitchGate:
    """Holds joint rotations that turn faster than a joint can (module docstring).

    Parameters
    ----------
    skeleton : Skeleton
        The input's.
    fps : float
        Frames per second of the input.
    max_speed : float
        Radians per second; 0 or infinity: the gate lets everything through.
    hold : float
        Seconds a turn too fast is held before the gate follows it at ``max_speed``.

    Attributes
    ----------
    held : int
        Joint-frames held or slowed since the gate was made.
    frames : int
        Frames in which some joint was held or slowed.
    last_held : ndarray of bool, shape (J,)
        The joints held or slowed at the last :meth:`step`.
    """

    skeleton: Skeleton
    fps: float
    max_speed: float = MAX_SPEED
    hold: float = HOLD
    held: int = 0
    frames: int = 0
    _last: Array | None = field(default=None, repr=False)
    _last_world: Array = field(default_factory=lambda: np.zeros((0, 4)), repr=False)
    _count: Array = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    _bones: Array = field(init=False, repr=False)
    last_held: NDArray[np.bool_] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._bones = bones_of(self.skeleton)
        self.last_held = np.zeros(self.skeleton.num_joints, dtype=bool)

    def reset(self) -> None:
        """Forget the past (a new stream, or the source cut to another pose): the next
        frame is let through whole. The counts carry on."""
        self._last = None

    @property
    def limit(self) -> float:
        """Radians one frame may turn a joint."""
        return self.max_speed / self.fps if self.max_speed > 0 else math.inf

    def _world(self, rotations: Array) -> Array:
        """World rotations (J, 4) of local ``rotations`` (J, 4)."""
        n = self.skeleton.num_joints
        return forward_kinematics(self.skeleton, np.zeros(3), rotations)[1][:n]

    def _swing(self, a: Array, b: Array) -> Array:
        """Per joint, the largest angle (radians) between its bones turned by the world
        rotations ``a`` and by ``b`` (J, 4)."""
        da = quat.rotate(a[:, None], self._bones)
        db = quat.rotate(b[:, None], self._bones)
        cross = np.linalg.norm(np.cross(da, db), axis=-1)
        return np.arctan2(cross, (da * db).sum(-1)).max(axis=1, initial=0.0)

    def step(self, rotations: ArrayLike) -> Array:
        """The local rotations (J, 4) let through for this frame's input ``rotations``
        (J, 4)."""
        q = np.asarray(rotations, dtype=np.float64)
        n = self.skeleton.num_joints
        if q.shape != (n, 4):
            raise ValueError(f"Expected rotations of shape ({n}, 4), got {q.shape}")
        self.last_held = np.zeros(n, dtype=bool)
        if not math.isfinite(self.limit):
            return q.copy()
        world = self._world(q)
        if self._last is None:
            self._last, self._last_world = q.copy(), world
            self._count = np.zeros(n, dtype=np.int64)
            return q.copy()
        turn = self._swing(self._last_world, world)
        fast = turn > self.limit  # (NaN: not)
        if not fast.any():
            self._count[:] = 0
            self._last, self._last_world = q.copy(), world
            return q.copy()
        out = q.copy()
        waiting = fast & (self._count < round(self.hold * self.fps))
        out[waiting] = self._last[waiting]
        following = fast & ~waiting  # away longer than a glitch: turn toward it
        if following.any():
            share = self.limit / turn[following]
            out[following] = quat.slerp(self._last[following], q[following], share)
        self._count[fast] += 1
        self._count[~fast] = 0
        self.held += int(fast.sum())
        self.frames += 1
        self.last_held = fast
        self._last, self._last_world = out, self._world(out)
        return out.copy()


@dataclass
class SensorGate:
    """A :class:`GlitchGate` on a performer's sensors: world positions and orientations at
    every joint (Shin et al. 2001's input), ahead of their Kalman filter, which would
    spread a marker swap over a few frames rather than remove it.

    Each frame's sensors give the joints' local rotations; a joint the gate holds keeps
    its last local rotation, and it and every sensor below it are turned with it about
    its own sensor: each keeps its measured offset from its parent, in its parent's
    (corrected) frame. Sensors of joints nothing held are passed through as measured;
    a frame with a lost sensor (a NaN row) is passed through whole, and the frame after
    it is judged anew (the gate restarts).

    Parameters
    ----------
    skeleton : Skeleton
        The performer's (a sensor per joint, in its joint order).
    fps, max_speed, hold
        As :class:`GlitchGate`.
    """

    skeleton: Skeleton
    fps: float
    max_speed: float = MAX_SPEED
    hold: float = HOLD
    gate: GlitchGate = field(init=False)

    def __post_init__(self) -> None:
        self.gate = GlitchGate(self.skeleton, self.fps, self.max_speed, self.hold)

    def reset(self) -> None:
        """As :meth:`GlitchGate.reset`."""
        self.gate.reset()

    def step(self, positions: ArrayLike, orientations: ArrayLike) -> tuple[Array, Array]:
        """The sensors (S, 3), (S, 4) let through for this frame's."""
        p = np.array(positions, dtype=np.float64)
        q = np.array(orientations, dtype=np.float64)
        n = self.skeleton.num_joints
        if p.shape != (n, 3):
            raise ValueError(f"Expected `positions` of shape ({n}, 3), got {p.shape}")
        if q.shape != (n, 4):
            raise ValueError(f"Expected `orientations` of shape ({n}, 4), got {q.shape}")
        parents = self.skeleton.parents
        up = np.where(parents >= 0, parents, 0)
        local = quat.multiply(quat.conjugate(q[up]), q)
        local[0] = q[0]
        if not np.isfinite(local).all():  # a sensor lost: through as it is, judged anew after
            self.gate.reset()
            self.gate.last_held = np.zeros(len(parents), dtype=bool)
            return p, q
        out = self.gate.step(local)
        if not self.gate.last_held.any():
            return p, q
        moved = self.gate.last_held.copy()
        for j in range(1, len(parents)):
            moved[j] |= moved[int(parents[j])]
        p_out, q_out = p.copy(), q.copy()
        for j in np.flatnonzero(moved).tolist():
            par = int(parents[j])
            if par < 0:
                q_out[j] = out[j]
                continue
            q_out[j] = quat.multiply(q_out[par], out[j] if self.gate.last_held[j] else local[j])
            from_parent = quat.rotate(quat.conjugate(q[par]), p[j] - p[par])
            p_out[j] = p_out[par] + quat.rotate(q_out[par], from_parent)
        return p_out, q_out


def bones_of(skeleton: Skeleton) -> Array:
    """Per joint, the unit directions (J, B, 3) of the offsets to its children, joints
    and end sites (zero rows pad a joint with fewer than B, and stand for children at
    the joint itself)."""
    parents = skeleton.point_parents
    offsets = np.concatenate([skeleton.offsets, skeleton.site_offsets])
    kids: list[list[Array]] = [[] for _ in range(skeleton.num_joints)]
    for p in range(1, len(parents)):
        length = float(np.linalg.norm(offsets[p]))
        if int(parents[p]) >= 0 and length > 0.0:
            kids[int(parents[p])].append(offsets[p] / length)
    out = np.zeros((skeleton.num_joints, max(1, max(map(len, kids))), 3))
    for j, dirs in enumerate(kids):
        if dirs:
            out[j, : len(dirs)] = dirs
    return out


def through_gate(
    gate: GlitchGate | SensorGate, *streams: ArrayLike, cuts: ArrayLike = ()
) -> list[Array]:
    """A clip's frames through ``gate`` one at a time, what an online method stepping it
    sees: ``streams`` the arrays its :meth:`~GlitchGate.step` takes, a leading frame
    axis each (local rotations (F, J, 4) for a :class:`GlitchGate`; positions (F, S, 3)
    and orientations (F, S, 4) for a :class:`SensorGate`), the gate restarted at
    ``cuts`` (the frames where the source jumps to another pose). Returns the arrays
    let through, in the order of ``streams``; the gate keeps its counts."""
    arrays = [np.asarray(a, dtype=np.float64) for a in streams]
    outs = [np.empty_like(a) for a in arrays]
    restarts = set(np.asarray(cuts, dtype=np.intp).tolist())
    for f in range(len(arrays[0])):
        if f in restarts:
            gate.reset()
        got = gate.step(*(a[f] for a in arrays))
        for out, row in zip(outs, got if isinstance(got, tuple) else (got,), strict=True):
            out[f] = row
    return outs
