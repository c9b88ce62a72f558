"""The one contract of the online methods, and the frames they take and give.

DESIGN.md, "Two calling shapes": every online method is an object with

* ``reset()``: forget the past; the next frame is a first frame (a set-up the
  method measures on a first frame is kept or measured again: each method
  says which);
* ``step(frame) -> frame``: one input frame in, one output frame out, causal
  (the output at frame ``t`` never reads an input after ``t``). A new object
  needs no ``reset()``: its first step is a first frame.

The offline shape of a method is a loop over it (filterpy's ``KalmanFilter``
and ``batch_filter``), and a test says that the two give the same frames::

    method.reset()
    poses = [method.step(frame) for frame in frames]

One frame type per family of input; every method gives a :class:`PoseFrame`
of its character:

==============  ==================  ============================================
input           family              methods
==============  ==================  ============================================
SensorFrame     sensors             :class:`retarget.online.puppetry.Puppeteer`
                                    (Shin et al. 2001)
PoseFrame       a source's pose     :class:`retarget.online.omr.OMRRetargeter`
                                    (Choi & Ko 2000)
GoalFrame       pose and goals      :class:`retarget.online.omr.OnlineRetargeter`
                                    (Choi & Ko 2000's filter, eq. 21)
==============  ==================  ============================================

Frames are values: their arrays are float64 copies, read-only (STYLE.md,
"Truly immutable values"); a method's output frame owns arrays the method made
for it, so it costs no copy. Conventions of DESIGN.md: quaternions ``(w, x, y,
z)``, positions in the skeleton's unit, Y up, joints parents first (joint 0 the
root).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

from .arrays import Array, frozen

__all__ = ["GoalFrame", "OnlineMethod", "PoseFrame", "SensorFrame"]

InFrame = TypeVar("InFrame", contravariant=True)
OutFrame = TypeVar("OutFrame", covariant=True)

_set = object.__setattr__


@runtime_checkable
class OnlineMethod(Protocol[InFrame, OutFrame]):
    """An online method (module docstring): ``reset()`` and ``step(frame) -> frame``."""

    def reset(self) -> None:
        """Forget the past: the next :meth:`step` is a first frame."""

    def step(self, frame: InFrame) -> OutFrame:
        """The output frame of this input frame, from it and the past only."""


@dataclass(frozen=True, eq=False, slots=True)
class PoseFrame:
    """One pose of a skeleton: what every online method gives, and what a method that
    follows a source motion takes (the source's pose).

    Attributes
    ----------
    root_position : ndarray, shape (3,)
        The root joint's world position (the skeleton's unit).
    rotations : ndarray, shape (J, 4)
        Local joint rotations ``(w, x, y, z)``, joint 0 the root's world orientation.
    """

    root_position: Array
    rotations: Array

    def __post_init__(self) -> None:
        _set(self, "root_position", frozen(self.root_position, (3,), "root_position"))
        _set(self, "rotations", frozen(self.rotations, (None, 4), "rotations"))

    @classmethod
    def _owned(cls, root_position: Array, rotations: Array) -> PoseFrame:
        """A frame of float64 arrays of the right shapes that the caller made for it and
        hands over (a method's output): made read-only, not copied nor checked."""
        root_position.flags.writeable = False
        rotations.flags.writeable = False
        frame = object.__new__(cls)
        _set(frame, "root_position", root_position)
        _set(frame, "rotations", rotations)
        return frame


@dataclass(frozen=True, eq=False, slots=True)
class GoalFrame:
    """The inputs of Choi & Ko's filter for one frame (2000, eq. 21): the pose it imitates
    and the end-effectors' goals.

    Attributes
    ----------
    root_position : ndarray, shape (3,)
    rotations : ndarray, shape (J, 4)
        ``θ_src``: the source's pose on the target skeleton (root placed for the
        target's size; local rotations ``(w, x, y, z)``), the secondary task.
    goals : ndarray, shape (K, 3)
        ``x1``: a world position goal per end-effector (the filter's effector
        order); a row with a NaN is not tracked this frame (rows of
        orientation-only effectors are ignored).
    orientations : ndarray, shape (K, 4), or None
        World orientation goals ``(w, x, y, z)`` of the effectors that track one
        (NaN rows: not tracked); None when none does.
    """

    root_position: Array
    rotations: Array
    goals: Array
    orientations: Array | None = None

    def __post_init__(self) -> None:
        _set(self, "root_position", frozen(self.root_position, (3,), "root_position"))
        _set(self, "rotations", frozen(self.rotations, (None, 4), "rotations"))
        goals = frozen(self.goals, (None, 3), "goals")
        _set(self, "goals", goals)
        if self.orientations is not None:
            k = len(goals)
            _set(self, "orientations", frozen(self.orientations, (k, 4), "orientations"))


@dataclass(frozen=True, eq=False, slots=True)
class SensorFrame:
    """One frame of a performer's sensors (Shin et al. 2001, §3): a world position and
    orientation per sensor, as a magnetic or optical system reports them.

    Attributes
    ----------
    positions : ndarray, shape (S, 3)
        World positions (the performer's unit); a row with a NaN: that sensor was
        lost this frame (its filter predicts it).
    orientations : ndarray, shape (S, 4)
        World orientations ``(w, x, y, z)``, of any sign, need not be unit; NaN
        rows lost.
    """

    positions: Array
    orientations: Array

    def __post_init__(self) -> None:
        positions = frozen(self.positions, (None, 3), "positions")
        _set(self, "positions", positions)
        _set(
            self,
            "orientations",
            frozen(self.orientations, (len(positions), 4), "orientations"),
        )

    @classmethod
    def lost(cls, num_sensors: int) -> SensorFrame:
        """A frame in which every sensor was lost (a frame that never arrived)."""
        return cls(np.full((num_sensors, 3), np.nan), np.full((num_sensors, 4), np.nan))
