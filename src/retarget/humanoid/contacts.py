"""Footplants and the floor.

DESIGN.md's definition: a foot point (ankle, toe) is in contact at frames
where it is within 4 % of the character's height of the floor and moves
horizontally slower than 25 % of height per second. Joints sit above the sole
(a planted ankle is ~7 cm up in lafan_walk.bvh, a toe joint ~0 cm), so "within
4 % of the floor" is measured from each point's **clearance**: its height above
the floor when planted, estimated as a low percentile of its heights.

Two refinements make the labels usable as constraints:

* **hysteresis**: a contact starts when both tests pass and ends only when
  one fails by a margin (``release`` × the thresholds), so noise near a
  threshold does not chatter;
* **minimum duration** and **gap filling**: contacts shorter than
  ``min_duration`` are dropped, gaps shorter than ``max_gap`` are closed.

Positions are in the skeleton's unit; the up axis is y (DESIGN.md conventions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import runs
from ..core.kinematics import positions as motion_positions
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from ..environment import Floor, Shape, Slope
from .roles import Roles, find_roles, height

__all__ = [
    "ContactTracker",
    "Contacts",
    "detect_contacts",
    "estimate_floor",
    "estimate_ground",
    "foot_points",
]

UP = 1  # y


def foot_points(skeleton: Skeleton, roles: Roles) -> tuple[tuple[str, int], ...]:
    """``(side, point)`` of the foot points used for contacts: ankles, toes, toe tips.

    A tip that coincides with its parent (a zero-length end site) is left out.
    """
    lengths = skeleton.bone_lengths()
    out = []
    for side, pts in roles.feet().items():
        for p in pts:
            if lengths[p] > 0 or skeleton.point_parents[p] not in pts:
                out.append((side, p))
    return tuple(out)


def estimate_floor(
    positions: NDArray[np.float64], points: NDArray[np.intp], fps: float, height: float
) -> float:
    """Floor height: where the lowest foot point rests.

    The median, over frames whose lowest foot point moves horizontally slower
    than 25 % of height per second, of that lowest point's height. Falls back
    to the 5th percentile of all lowest heights when no frame is that slow.

    Parameters
    ----------
    positions : ndarray, shape (F, P, 3)
    points : ndarray of int, shape (K,)
        Foot points.
    fps : float
    height : float
        Character height (same unit).
    """
    feet = positions[:, points]  # (F, K, 3)
    lowest = np.argmin(feet[..., UP], axis=1)
    y = feet[np.arange(len(feet)), lowest, UP]
    if len(feet) < 2:
        return float(y.min()) if len(y) else 0.0
    horiz = np.delete(feet, UP, axis=-1)
    speed = np.linalg.norm(np.gradient(horiz, axis=0), axis=-1) * fps  # (F, K)
    slow = speed[np.arange(len(feet)), lowest] < 0.25 * height
    return float(np.median(y[slow]) if slow.sum() >= 3 else np.percentile(y, 5))


#: A slope is taken for the ground only when the footprints' heights scatter by at
#: least this share of height about a level floor (:func:`estimate_ground`) ...
SLOPE_MIN_SCATTER = 0.003
#: ... the plane through them leaves at most this share of that scatter ...
SLOPE_MAX_RESIDUAL = 0.5
#: ... and they spread over at least this many heights along a direction (a foot's
#: width across the path is 0.1 of it), with 4 footprints or more.
SLOPE_MIN_SPAN = 0.3


def estimate_ground(motion: Motion, contacts: Contacts) -> Floor | Slope:
    """The ground the source's feet rest on: the level floor, or a slope.

    Each footprint (a run of frames where some point of one foot is planted)
    rests at the median over its frames of the foot's lowest planted point;
    those heights against the footprints' mean horizontal positions are fitted
    by a plane (least squares). The plane is the ground when it explains them
    (:data:`SLOPE_MIN_SCATTER`, :data:`SLOPE_MAX_RESIDUAL`, :data:`SLOPE_MIN_SPAN`):
    a walk up a ramp, or a capture volume whose floor is not level (the
    Emilya walk of ``real/`` sinks 1.6 % of height over 4 heights of travel, a
    CMU walk rises 1.3°). Otherwise it is the level floor at
    ``contacts.floor``. Few footprints or a short path tell no slope: a
    level floor; the slope is fitted only along the horizontal directions the
    footprints spread over (a straight walk: along its path).

    Returns
    -------
    Floor or Slope
    """
    level = Floor(contacts.floor)
    feet = motion_positions(motion)[:, contacts.points]  # (F, K, 3)
    samples = []
    for side in sorted(set(contacts.sides)):
        cols = [k for k, s in enumerate(contacts.sides) if s == side]
        for start, end in runs(np.asarray(contacts.mask[:, cols].any(axis=1))):
            planted = contacts.mask[start:end][:, cols]
            y = np.where(planted, feet[start:end][:, cols, UP], np.inf).min(axis=1)
            xz = np.delete(feet[start:end][:, cols], UP, axis=-1)[planted]
            samples.append((*xz.mean(axis=0), float(np.median(y[np.isfinite(y)]))))
    if len(samples) < 4:
        return level
    r = np.asarray(samples)
    h = contacts.height
    # the slope only along the horizontal directions the footprints spread over: a
    # straight walk tells the rise along its path, not across it (the feet's own
    # spread across is a foot's width, their height difference noise)
    centre = r[:, :2].mean(axis=0)
    _, _, axes = np.linalg.svd(r[:, :2] - centre, full_matrices=False)
    along = (r[:, :2] - centre) @ axes.T  # (n, 2) on the principal axes
    known = np.ptp(along, axis=0) >= SLOPE_MIN_SPAN * h
    flat = r[:, 2] - np.median(r[:, 2])
    scatter = float(np.sqrt(np.mean(flat**2)))
    if not known.any() or scatter < SLOPE_MIN_SCATTER * h:
        return level
    a = np.column_stack([np.ones(len(r)), along[:, known]])
    coef = np.linalg.lstsq(a, r[:, 2], rcond=None)[0]
    residual = float(np.sqrt(np.mean((r[:, 2] - a @ coef) ** 2)))
    if residual > SLOPE_MAX_RESIDUAL * scatter:
        return level
    gradient = coef[1:] @ axes[known]  # back to (d/dx, d/dz)
    return Slope(float(coef[0] - gradient @ centre), gradient)


@dataclass(frozen=True)
class Contacts:
    """Contact labels of the foot points of a motion.

    Attributes
    ----------
    points : ndarray of int, shape (K,)
        Point indices (ankles, toes, toe tips).
    sides : tuple of str, length K
        ``"left"`` or ``"right"``.
    mask : ndarray of bool, shape (F, K)
        True where the point is planted.
    floor : float
        Floor height (y).
    clearance : ndarray, shape (K,)
        Height of each point above the floor when planted.
    height : float
        Character height used for the thresholds.
    """

    points: NDArray[np.intp]
    sides: tuple[str, ...]
    mask: NDArray[np.bool_]
    floor: float
    clearance: NDArray[np.float64]
    height: float

    def __post_init__(self) -> None:
        for a in (self.points, self.mask, self.clearance):
            a.setflags(write=False)

    def foot(self, side: str) -> NDArray[np.bool_]:
        """Frames where any point of that foot is planted, shape (F,)."""
        cols = [k for k, s in enumerate(self.sides) if s == side]
        # (F, K) reduced over axis 1 is an array; numpy's stubs allow a scalar
        return cast(NDArray[np.bool_], self.mask[:, cols].any(axis=1))


def _clean(mask: NDArray[np.bool_], min_len: int, max_gap: int) -> NDArray[np.bool_]:
    out = mask.copy()
    for start, end in runs(~out):  # close short gaps between contacts
        if 0 < start and end < len(out) and end - start <= max_gap:
            out[start:end] = True
    for start, end in runs(out):  # drop short contacts
        if end - start < min_len:
            out[start:end] = False
    return out


def _hysteresis(enter: NDArray[np.bool_], stay: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """True from a frame where ``enter`` holds for as long as ``stay`` keeps holding.

    Vectorised over the first axis: within each run of ``stay``, on from the
    run's first ``enter`` frame to the run's end.
    """
    stay = stay | enter
    idx = np.arange(len(stay))
    run_start = np.maximum.accumulate(np.where(stay & ~np.roll(stay, 1) | (idx == 0), idx, 0))
    last_enter = np.maximum.accumulate(np.where(enter, idx, -1))
    return stay & (last_enter >= run_start)


def detect_contacts(
    motion: Motion,
    *,
    roles: Roles | None = None,
    floor: float | None = None,
    ground: Shape | None = None,
    height_tol: float = 0.04,
    speed_tol: float | ArrayLike = 0.25,
    release: float = 1.25,
    clearance_percentile: float = 5.0,
    min_duration: float = 0.1,
    max_gap: float = 0.05,
    relative_to_clearance: bool = True,
    vertical_speed: bool = False,
) -> Contacts:
    """Footplants of a motion (DESIGN.md, "contacts").

    Parameters
    ----------
    motion : Motion
    roles : Roles, optional
        Defaults to :func:`retarget.humanoid.roles.find_roles` of the skeleton.
    floor : float, optional
        Floor height; estimated by :func:`estimate_floor` when not given.
    ground : Shape, optional
        A ground other than the level floor (:func:`estimate_ground`'s slope, a
        terrain): heights are measured above it, under each point.
    height_tol : float
        Height above the point's clearance, as a share of character height (0.04).
    speed_tol : float or array_like, shape (K,)
        Horizontal speed, share of height per second (0.25); one per foot point
        (:func:`foot_points` order) allowed.
    release : float
        A contact ends when height or speed exceeds ``release`` × its threshold.
    clearance_percentile : float
        Percentile of a point's heights taken as its planted clearance.
    min_duration, max_gap : float
        Seconds: shorter contacts are dropped (at most the clip's length is asked
        for), shorter gaps closed.
    vertical_speed : bool
        Count vertical motion in the speed test too (a heel rising in place is
        then not planted): stricter plants, for constraints rather than measures.
    relative_to_clearance : bool
        Measure height from each point's planted clearance (default) or, the
        literal reading, from the floor itself (then an ankle, ~7 cm above the
        sole, is rarely "within 4 % of height of the floor").

    Returns
    -------
    Contacts
    """
    roles = roles or find_roles(motion.skeleton)
    h = height(motion.skeleton, roles)
    side_points = foot_points(motion.skeleton, roles)
    points = np.array([p for _, p in side_points], dtype=np.intp)
    pos = motion_positions(motion)
    if floor is None:
        floor = estimate_floor(pos, points, motion.fps, h)
    feet = pos[:, points]  # (F, K, 3)
    base = floor if ground is None else ground.ground_height(np.delete(feet, UP, axis=-1))
    above = feet[..., UP] - base
    clearance = np.zeros(len(points))
    if relative_to_clearance and len(feet):
        clearance = np.maximum(np.percentile(above, clearance_percentile, axis=0), 0.0)
    rel = above - clearance
    moving = feet if vertical_speed else np.delete(feet, UP, axis=-1)
    speed = (
        np.linalg.norm(np.gradient(moving, axis=0), axis=-1) * motion.fps
        if len(feet) > 1
        else np.zeros(rel.shape)
    )
    speed_tol = np.asarray(speed_tol, dtype=np.float64)
    enter = (rel < height_tol * h) & (speed < speed_tol * h)
    stay = (rel < release * height_tol * h) & (speed < release * speed_tol * h)
    # a clip shorter than the minimum duration is one still moment: its plants last
    # as long as it does (a one-frame clip is planted where 30 repeats of it are)
    min_len = min(max(1, round(min_duration * motion.fps)), max(1, len(feet)))
    gap = round(max_gap * motion.fps)
    mask = (
        np.stack(
            [
                _clean(_hysteresis(enter[:, k], stay[:, k]), min_len, gap)
                for k in range(len(points))
            ],
            axis=1,
        )
        if len(points)
        else np.zeros((len(feet), 0), bool)
    )
    return Contacts(points, tuple(s for s, _ in side_points), mask, float(floor), clearance, h)


class ContactTracker:
    """Footplants frame by frame, from the past only: :func:`detect_contacts` for a live
    stream (``retarget serve --method physics``).

    The first frame calibrates: the floor is its lowest foot point and each point's
    clearance its height above the floor then (a performer starts standing). A point
    is planted from a frame where it is within ``height_tol`` × height of its
    clearance and moves horizontally slower than ``speed_tol`` × height per second
    (the backward difference: a stream has no next frame), and stays planted until
    either exceeds ``release`` × its threshold. Unlike :func:`detect_contacts`, short
    contacts are not dropped nor short gaps closed (that needs the frames after).

    Parameters
    ----------
    skeleton : Skeleton
    fps : float
    height_tol, speed_tol, release : float
        As :func:`detect_contacts`.
    """

    def __init__(
        self,
        skeleton: Skeleton,
        *,
        fps: float,
        height_tol: float = 0.04,
        speed_tol: float = 0.25,
        release: float = 1.25,
    ) -> None:
        roles = find_roles(skeleton)
        side_points = foot_points(skeleton, roles)
        self.points = np.array([p for _, p in side_points], dtype=np.intp)
        self.sides = tuple(s for s, _ in side_points)
        self.height = float(height(skeleton, roles))
        self._fps = float(fps)
        self._tol = (height_tol * self.height, speed_tol * self.height)
        self._release = float(release)
        self.reset()

    def reset(self) -> None:
        """Forget the stream: the next frame calibrates again."""
        self.floor: float | None = None
        self.clearance = np.zeros(len(self.points))
        self._last: NDArray[np.float64] | None = None
        self._planted = np.zeros(len(self.points), dtype=bool)

    def step(self, positions: ArrayLike) -> NDArray[np.bool_]:
        """The planted foot points of one frame, shape (K,), from its point positions
        ``(P, 3)`` (the skeleton's unit)."""
        feet = np.asarray(positions, dtype=np.float64)[self.points]
        if self.floor is None:
            self.floor = float(feet[:, UP].min())
            self.clearance = feet[:, UP] - self.floor
        above = feet[:, UP] - self.floor - self.clearance
        if self._last is None:
            speed = np.zeros(len(self.points))
        else:
            step = np.delete(feet - self._last, UP, axis=-1)
            speed = np.linalg.norm(step, axis=-1) * self._fps
        self._last = feet
        h_tol, s_tol = self._tol
        enter = (above <= h_tol) & (speed <= s_tol)
        stay = (above <= self._release * h_tol) & (speed <= self._release * s_tol)
        self._planted = np.where(self._planted, stay, enter)
        return self._planted.copy()
