"""Cuts: frames where a clip jumps, the whole body at once, to another pose.

Real files often hold more than one continuous motion: a leading T-pose or
rest frame (CMU's BVH conversions, some Mixamo and MotionBuilder exports),
takes joined end to end, a capture restarted. Between two such pieces the
body moves, in one frame, farther than it moves in the frames around it.
Every method that fits, filters or integrates over time (Lee & Shin's
B-splines, Choi & Ko's closed loop, Shin et al.'s Kalman filter) would
smear that jump over the frames beside it: the first steps of the walk after
a T-pose frame then carry a pop of several % of height in one frame. The
methods run on each piece alone instead (:func:`segments`,
:meth:`retarget.methods.Method.retarget`) and the pieces join where the
source joins them.

A **cut** falls between frames ``f − 1`` and ``f`` where, over every point of
the body (joints and end sites), the mean step of that frame is

- at least ``ratio`` (8) times the mean of the larger of each point's steps
  just before and just after it (a frame missing at a clip's end counts as no
  step), and
- at least ``step`` (2 %) of the character's height:

a whole-body jump that neither the motion before nor the motion after
explains. A fast kick or a turn at 30 frames/s gives ratios under 2 (its
neighbouring steps are as long); a leading T-pose frame of a CMU conversion
gives 16 to 540 (``real/`` in ``../shared/data``). The thresholds are per
frame, hence independent of the frame rate for a real jump (one frame at any
rate) and conservative for fast motion at low rates.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from ..core.errors import RetargetError
from ..core.kinematics import positions as motion_positions
from ..core.kinematics import rest_pose
from ..core.motion import Motion
from .roles import Roles, find_roles, height

__all__ = ["find_cuts", "segments"]

#: Least ratio of a cut's mean step to its neighbours' (module docstring).
CUT_RATIO = 8.0
#: Least mean step of a cut, share of the character's height.
CUT_STEP = 0.02


def _size(motion: Motion, roles: Roles | None) -> float:
    """The character's height, or for a body without the humanoid roles the largest
    extent of its rest pose (file unit; > 0)."""
    try:
        return float(height(motion.skeleton, roles or find_roles(motion.skeleton)))
    except (RetargetError, KeyError):
        pos = rest_pose(motion.skeleton)[0]
        extent = float(np.ptp(pos, axis=0).max()) if len(pos) > 1 else 0.0
        return extent if extent > 0 else 1.0


def find_cuts(
    motion: Motion,
    *,
    roles: Roles | None = None,
    ratio: float = CUT_RATIO,
    step: float = CUT_STEP,
) -> NDArray[np.intp]:
    """The frames where a new piece of the clip starts (a cut between ``f − 1`` and ``f``).

    Parameters
    ----------
    motion : Motion
    roles : Roles, optional
        For the character's height (:func:`retarget.humanoid.roles.height`); a body without
        humanoid roles is measured by its rest pose's extent.
    ratio : float
        Least ratio of the frame's mean step to the mean of its points' larger
        neighbouring steps.
    step : float
        Least mean step, share of the height.

    Returns
    -------
    ndarray of int, shape (C,)
        Increasing frame indices in ``1 .. F − 1``.
    """
    if motion.num_frames < 2:
        return np.zeros(0, dtype=np.intp)
    size = _size(motion, roles)
    pos = motion_positions(motion) / size  # (F, P, 3) in heights
    steps = np.linalg.norm(np.diff(pos, axis=0), axis=-1)  # (F-1, P)
    none = np.zeros((1, steps.shape[1]))
    around = np.maximum(np.concatenate([none, steps[:-1]]), np.concatenate([steps[1:], none])).mean(
        axis=1
    )
    mean = steps.mean(axis=1)
    cut = (mean >= step) & (mean >= ratio * around)
    return np.flatnonzero(cut).astype(np.intp) + 1


def segments(num_frames: int, cuts: NDArray[np.intp] | list[int]) -> list[slice]:
    """The pieces of a clip of ``num_frames`` frames between its ``cuts``, in order.

    >>> segments(10, [1, 6])
    [slice(0, 1, None), slice(1, 6, None), slice(6, 10, None)]
    """
    bounds = [0, *(int(c) for c in cuts if 0 < int(c) < num_frames), num_frames]
    return [slice(a, b) for a, b in pairwise(bounds) if b > a]
