"""A live stream: frames in as JSON messages, retargeted poses out (``retarget serve``).

Transport-free: :meth:`LiveStream.receive` takes one message (a UDP datagram,
a WebSocket message or a line of stdin) and returns the pose message to send,
or None; :mod:`retarget.online.server` moves the bytes.

**Schema** (JSON objects, UTF-8, one per datagram/message/line; the
formats of :mod:`retarget.io.sensors`):

* in, ``--method puppetry``: a sensor frame, one row per performer joint
  (``null``: sensor lost this frame)::

      {"frame": 17, "time": 1234.5678, "positions": [[x, y, z], ...],
       "orientations": [[w, x, y, z], ...]}

* in, ``--method omr``: a pose frame of the source skeleton::

      {"frame": 17, "time": 1234.5678, "root_position": [x, y, z],
       "rotations": [[w, x, y, z], ...]}

* out, once per connection (and first on stdout): :func:`~retarget.io.sensors.skeleton_message`
  of the character, with ``method`` and ``fps``;
* out, per frame::

      {"type": "pose", "frame": 17, "time": 1234.5678, "root_position": [x, y, z],
       "rotations": [[w, x, y, z], ...], "positions": [[x, y, z], ...],
       "predicted": 0, "importance": {...}, "iterations": 0}

  ``rotations`` are the character's local joint rotations, ``positions`` its
  joints' and end sites' world positions (the viewer draws them), ``time``
  the input's, echoed (the sender measures latency on its own clock),
  ``predicted`` the frames the filter predicted through just before this one.

**Frame numbers** order the stream. A frame numbered at or below the last
one is late or a duplicate and is ignored; a gap of up to ``max_gap`` frames
is predicted through, one filter step per missing frame (puppetry: the
sensors' Kalman filter with no measurement; omr, closed-loop, steps once to
the next frame); a longer gap restarts the filter from the next frame. A
frame without a number follows the last. A malformed message (not JSON,
wrong rows, a zero quaternion) is counted and skipped, and so is a frame the
retargeter cannot pose (the filter then restarts). :class:`StreamStats`
counts each case.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..core import quat
from ..core.arrays import Array
from ..core.errors import FormatError, RetargetError
from ..core.frames import PoseFrame, SensorFrame
from ..core.kinematics import forward_kinematics
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from ..core.strict_json import strict_json
from ..humanoid.roles import find_roles
from ..humanoid.travel import below_hips, root_above
from ..io.sensors import frame_time, pose_frame, sensor_frame, skeleton_message
from .omr import OMRRetargeter
from .puppetry import EFFECTORS, Puppeteer

__all__ = [
    "METHODS",
    "LiveStream",
    "OMRLive",
    "PuppetryLive",
    "StreamStats",
    "pose_arrays",
]


#: Methods a live stream runs (``physics``: :class:`retarget.methods.physics.PhysicsLive`).
METHODS = ("puppetry", "omr", "physics")


class LiveRetargeter(Protocol):
    """What :class:`LiveStream` drives: a causal retargeter of one kind of input frame.

    ``step`` gives the pose of the frame ``lag`` frames back (an attribute, 0 when
    absent), or None while it has none yet (a filter that trails its input, as
    Tak & Ko's least-squares window does)."""

    method: str
    character: Skeleton

    def parse(self, data: dict[str, Any], where: tuple[str, int]) -> tuple[int | None, Any]: ...

    def step(self, frame: Any) -> tuple[Array, Array, dict[str, Any]] | None: ...

    def predict(self) -> None: ...

    def reset(self) -> None: ...

    def warm_up(self) -> None: ...


class PuppetryLive:
    """Computer puppetry on a stream of sensor frames: parses a message into a
    :class:`~retarget.core.frames.SensorFrame` and steps
    :class:`~retarget.online.Puppeteer` with it (its :attr:`~Puppeteer.last`
    gives the pose message's importance and iterations)."""

    method = "puppetry"

    def __init__(self, puppeteer: Puppeteer) -> None:
        self.puppeteer = puppeteer
        self.character = puppeteer.character
        self._lost = SensorFrame.lost(puppeteer.performer.num_joints)

    def parse(self, data: dict[str, Any], where: tuple[str, int]) -> tuple[int | None, Any]:
        frame, p, q = sensor_frame(data, self.puppeteer.performer.num_joints, where=where)
        return frame, SensorFrame(p, q)

    def step(self, frame: SensorFrame) -> tuple[Array, Array, dict[str, Any]]:
        pose = self.puppeteer.step(frame)
        last = self.puppeteer.last
        assert last is not None
        weights = zip(EFFECTORS, last.importance[0], strict=True)
        extra = {
            "importance": {k: round(float(v), 5) for k, v in weights},
            "iterations": int(last.iterations[0]),
        }
        return pose.root_position, pose.rotations, extra

    def predict(self) -> None:
        """A frame with every sensor lost: the filter predicts (puppetry, section 3)."""
        if self.puppeteer.frames:
            self.puppeteer.step(self._lost)

    def reset(self) -> None:
        self.puppeteer.reset()

    def warm_up(self) -> None:
        """Step once on the performer's rest pose, then reset: the compiled kernels load
        (or compile) before the first frame of a stream arrives."""
        rest = Motion.at_rest(self.puppeteer.performer)
        positions, world = forward_kinematics(rest.skeleton, rest.root_position, rest.rotations)
        n = self.puppeteer.performer.num_joints
        self.puppeteer.step(SensorFrame(positions[0, :n], world[0, :n]))
        self.reset()


class OMRLive:
    """Online motion retargeting (Choi & Ko 2000) on a stream of source pose frames:
    parses a message into a :class:`~retarget.core.frames.PoseFrame` and steps
    :class:`~retarget.online.omr.OMRRetargeter` with it.

    The first frame fixes the floor and the origin of scaling
    (:func:`retarget.online.omr.omr_plan`); every frame then maps to the
    filter's inputs exactly as :func:`~retarget.methods.omr.omr_retarget`
    maps a whole clip (a loop over the same object), so a stream of a clip's
    frames gives the same motion. ``options``: :class:`OMRRetargeter`'s.

    A performer or character with joints above its hips (a static reference joint, a
    floor-level ``root``) is retargeted from the hips down, as ``retarget run`` does
    (:func:`retarget.humanoid.travel.from_hips`): each frame's hips are put on the
    root, and the character's joints above its hips come back at rest, its root
    placed under the hips.
    """

    method = "omr"

    def __init__(
        self, source: Skeleton, character: Skeleton, *, fps: float, **options: Any
    ) -> None:
        self._options = options
        self.source = source
        self.character = character
        self.fps = float(fps)
        hips_s, hips_c = find_roles(source)["hips"], find_roles(character)["hips"]
        self._cut = hips_s > 0 or hips_c > 0
        self._hips = hips_s
        self._below_s, self._keep_s = below_hips(source, hips_s)
        self._below_c, self._keep_c = below_hips(character, hips_c)
        body = (self._below_s, self._below_c) if self._cut else (source, character)
        self.retargeter = OMRRetargeter(*body, fps=fps, **options)

    def parse(self, data: dict[str, Any], where: tuple[str, int]) -> tuple[int | None, Any]:
        frame, root, rotations = pose_frame(data, self.source.num_joints, where=where)
        return frame, PoseFrame(root, rotations)

    def step(self, frame: PoseFrame) -> tuple[Array, Array, dict[str, Any]]:
        if not self._cut:
            pose = self.retargeter.step(frame)
            return pose.root_position, pose.rotations, {}
        pos, world = forward_kinematics(self.source, frame.root_position, frame.rotations)
        rotations = frame.rotations[self._keep_s].copy()
        rotations[0] = world[self._hips]
        pose = self.retargeter.step(PoseFrame(pos[self._hips], rotations))
        out = np.tile(quat.identity(), (self.character.num_joints, 1))
        out[self._keep_c] = pose.rotations
        root = root_above(self.character, self._below_c.names[0], pose.root_position)
        return root, out, {}

    def predict(self) -> None:
        """Closed-loop: the next frame's step catches up (nothing to do)."""

    def reset(self) -> None:
        self.retargeter.reset()

    def warm_up(self) -> None:
        """Step a retargeter of the same options once on the source's rest pose
        (:meth:`PuppetryLive.warm_up`): this one's plan is fixed by its first frame,
        which must be the stream's."""
        source, character = self.retargeter.source, self.retargeter.target
        rest = Motion.at_rest(source)
        spare = OMRRetargeter(source, character, fps=self.fps, **self._options)
        spare.step(PoseFrame(rest.root_position[0], rest.rotations[0]))


@dataclass
class StreamStats:
    """Counts of a stream and the server's time per frame (a ring of the last ``window``)."""

    received: int = 0
    poses: int = 0
    malformed: int = 0
    late: int = 0
    duplicate: int = 0
    gaps: int = 0
    predicted: int = 0
    restarts: int = 0
    failed: int = 0
    last_error: str | None = None
    window: int = 1 << 16
    _seconds: Array = field(default_factory=lambda: np.zeros(0))
    _count: int = 0

    def record(self, seconds: float) -> None:
        """One frame's time from arrival to sent (s)."""
        if len(self._seconds) == 0:
            self._seconds = np.zeros(self.window)
        self._seconds[self._count % self.window] = seconds
        self._count += 1

    def summary(self) -> dict[str, Any]:
        """The counts and the percentiles (ms) of the recorded times."""
        times = 1000.0 * self._seconds[: min(self._count, self.window)]
        pct = (
            {f"p{p}": float(np.percentile(times, p)) for p in (50, 90, 99, 99.9)}
            if len(times)
            else {}
        )
        counts = {
            k: getattr(self, k)
            for k in (
                "received",
                "poses",
                "malformed",
                "late",
                "duplicate",
                "gaps",
                "predicted",
                "restarts",
                "failed",
                "last_error",
            )
        }
        return {**counts, "server_ms": pct}


class LiveStream:
    """Messages in, pose messages out (module docstring).

    Parameters
    ----------
    live : PuppetryLive or OMRLive
    fps : float
        The stream's frame rate (Hz).
    max_gap : int, optional
        Longest gap (frames) predicted through; default half a second.
    name : str
        The input's name in error messages (``udp://…``, ``<stdin>``).
    """

    def __init__(
        self,
        live: LiveRetargeter,
        *,
        fps: float,
        max_gap: int | None = None,
        name: str = "<stream>",
    ) -> None:
        self.live = live
        self.fps = float(fps)
        self.max_gap = int(max_gap if max_gap is not None else max(1, round(fps / 2)))
        self.name = name
        self.stats = StreamStats()
        self.last_frame: int | None = None
        self.last_pose: dict[str, Any] | None = None
        self._character = live.character
        self._pending: deque[tuple[int, float | None, int]] = deque()  # (frame, time, predicted)

    def warm_up(self) -> None:
        """Let the retargeter load its compiled kernels before the first frame (a cold
        cache compiles for seconds): :meth:`LiveRetargeter.warm_up` when it has one."""
        warm = getattr(self.live, "warm_up", None)
        if warm is not None:
            warm()

    def header(self) -> str:
        """The skeleton message (sent once per connection)."""
        message = skeleton_message(self._character, method=self.live.method, fps=self.fps)
        return strict_json(message)

    def receive(self, message: str | bytes) -> str | None:
        """One input message → the pose message (JSON text), or None when it is skipped."""
        stats = self.stats
        stats.received += 1
        where = (self.name, stats.received)
        try:
            data = json.loads(message)
            if not isinstance(data, dict):
                raise FormatError(*where, "expected a JSON object")
            number, frame = self.live.parse(data, where)
            stamp = frame_time(data, where)
        except (FormatError, ValueError, UnicodeDecodeError) as exc:
            stats.malformed += 1
            stats.last_error = (
                str(exc)
                if isinstance(exc, FormatError)
                else f"{where[0]}, message {where[1]}: not JSON ({exc})"
            )
            return None
        last = self.last_frame
        if number is None:
            number = 0 if last is None else last + 1
        predicted = 0
        if last is not None:
            if number == last:
                stats.duplicate += 1
                return None
            if number < last:
                stats.late += 1
                return None
            missing = number - last - 1
            if missing > self.max_gap:
                stats.restarts += 1
                self.live.reset()
                self._pending.clear()
            elif missing > 0:
                stats.gaps += 1
                for _ in range(missing):
                    self.live.predict()
                predicted = missing
                stats.predicted += missing
        self.last_frame = number
        self._pending.append((number, stamp, predicted))
        reason = "the retargeter gave no finite pose"
        try:
            out = self.live.step(frame)
        except (RetargetError, np.linalg.LinAlgError) as exc:  # e.g. no calibration pose
            out = (np.array([np.nan]), np.array([np.nan]), {})
            reason = str(exc)
        if out is None:  # a trailing filter: nothing final yet
            return None
        root, rotations, extra = out
        number, stamp, predicted = self._pending.popleft()  # the frame ``lag`` back
        if not (np.isfinite(root).all() and np.isfinite(rotations).all()):
            stats.failed += 1
            stats.last_error = f"{where[0]}: frame {number}: {reason}"
            self.live.reset()
            self._pending.clear()
            return None
        positions = forward_kinematics(self._character, root[None], rotations[None])[0][0]
        pose = {
            "type": "pose",
            "frame": number,
            "time": stamp,
            "root_position": np.round(root, 6).tolist(),
            "rotations": np.round(rotations, 7).tolist(),
            "positions": np.round(positions, 5).tolist(),
            "predicted": predicted,
            **extra,
        }
        stats.poses += 1
        self.last_pose = pose
        return strict_json(pose)


def pose_arrays(message: str | Mapping[str, Any]) -> tuple[int, Array, Array, Array]:
    """(frame, root (3,), rotations (J, 4), positions (P, 3)) of a pose message."""
    data = json.loads(message) if isinstance(message, str) else message
    return (
        int(data["frame"]),
        np.asarray(data["root_position"], dtype=np.float64),
        np.asarray(data["rotations"], dtype=np.float64),
        np.asarray(data["positions"], dtype=np.float64),
    )
