"""The baseline: copy joint angles onto the target.

Local rotations are copied joint by joint (by name); the root's horizontal
path is scaled by the height ratio ``r = height(target) / height(source)``
about its first position, its height above the floor by ``r``; then the whole
body is shifted vertically so the feet rest on the floor as the source's do
(over the source's contact frames, the median height of each planted foot's
lowest point matches the source's, scaled by the ratio of foot lengths).
Nothing else is done: on characters of other proportions the feet skate.
Every other method is measured against this; :func:`transfer` is also the
starting point (``m_0``) of the hierarchical method, with another ratio, and
carries a character whose proportions change over the clip (per-frame joint
offsets, a ratio per frame: Lee & Shin 1999, Figure 5d).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..core.arrays import Array
from ..core.kinematics import positions
from ..core.motion import Motion
from ..core.result import Result, speed
from ..core.skeleton import Skeleton
from ..humanoid.contacts import UP, Contacts, detect_contacts
from ..humanoid.roles import Roles, find_roles, foot_length, height
from ._base import Option, check_same_hierarchy

__all__ = ["Transfer", "copy_retarget", "scale_path", "transfer"]


def scale_path(path: Array, ratio: float | Array) -> Array:
    """A path whose velocity is ``ratio`` times the given one, from the same start.

    ``y(f) = Σ_{k ≤ f} r̄_k Δx_k`` (trapezoid, ``r̄_k`` the mean ratio of frames
    ``k − 1, k``), written by summation by parts as

    .. math:: y(f) = r_f (x_f − x_0) − \\sum_{k=1}^{f} \\bar{x}_k (r_k − r_{k−1})

    (``x̄_k`` the mean of ``x_{k−1} − x_0`` and ``x_k − x_0``): for a constant
    ratio the sum is exactly 0 and ``y = r (x − x_0)``. Each step of the result is
    the source's step scaled by the ratio of its time, so a character whose size
    changes keeps its stride (Lee & Shin 1999, Figure 5d).

    Parameters
    ----------
    path : ndarray, shape (F, C)
    ratio : float or ndarray, shape (F,)

    Returns
    -------
    ndarray, shape (F, C)
        Displacements from ``path[0]`` (0 at the first frame).
    """
    x = path - path[0]
    r = np.broadcast_to(np.asarray(ratio, dtype=np.float64), (len(path),))[:, None]
    out = r * x
    if len(path) > 1:
        out[1:] -= np.cumsum(0.5 * (x[1:] + x[:-1]) * np.diff(r, axis=0), axis=0)
    return out


@dataclass(frozen=True)
class Transfer:
    """A motion carried onto a target by copying rotations, and how it was placed.

    ``ratio`` and ``foot_ratio`` are floats, or one per frame (F,) for a
    character whose proportions change over the clip.
    """

    motion: Motion
    ratio: float | Array
    foot_ratio: float | Array
    floor: float
    vertical_shift: float


def transfer(
    source: Motion,
    target: Skeleton,
    ratio: float | Array,
    contacts: Contacts,
    roles_source: Roles,
    roles_target: Roles,
    translations: Array | None = None,
) -> Transfer:
    """Copy rotations by name, scale the root path by ``ratio``, rest the feet on the floor.

    Parameters
    ----------
    source : Motion
    target : Skeleton
        Has every source joint (by name); others keep identity rotations.
    ratio : float or ndarray, shape (F,)
        Scale of the root's horizontal path (its velocity, frame by frame:
        :func:`scale_path`) and of its height above the floor.
    contacts : Contacts
        The source's; planted feet of the result rest as high above the floor
        as the source's (scaled by the foot-length ratio, of each frame).
    roles_source, roles_target : Roles
    translations : ndarray, shape (F, J, 3), optional
        Per-frame joint offsets of the target (a character whose proportions
        change over the clip); the motion carries them.
    """
    check_same_hierarchy(source.skeleton, target)
    floor = contacts.floor
    rotations = np.tile([1.0, 0.0, 0.0, 0.0], (source.num_frames, target.num_joints, 1))
    rotations[:, target.indices(source.skeleton.names)] = source.rotations
    root = source.root_position.copy()
    horizontal = [a for a in range(3) if a != UP]
    if len(root):
        root[:, horizontal] = root[0, horizontal] + scale_path(root[:, horizontal], ratio)
    root[:, UP] = floor + ratio * (root[:, UP] - floor)
    moved = Motion(target, root, rotations, source.fps, translations)
    by_point = {p: role for role, p in roles_source.items()}
    feet_s = positions(source)[:, contacts.points, UP] - floor
    feet_t = positions(moved)[:, [roles_target[by_point[p]] for p in contacts.points], UP] - floor
    foot_ratio = foot_length(target, roles_target, translations) / foot_length(
        source.skeleton, roles_source
    )
    scaled_s = feet_s * np.reshape(foot_ratio, (-1, 1))  # the source's feet at the target's size
    per_side_s, per_side_t = [], []
    for side in ("left", "right"):
        cols = [k for k, s in enumerate(contacts.sides) if s == side]
        frames = contacts.foot(side)
        per_side_s.append(scaled_s[frames][:, cols].min(axis=1))
        per_side_t.append(feet_t[frames][:, cols].min(axis=1))
    planted_s, planted_t = np.concatenate(per_side_s), np.concatenate(per_side_t)
    shift = float(np.median(planted_s) - np.median(planted_t)) if planted_s.size else 0.0
    root[:, UP] += shift
    return Transfer(
        Motion(target, root, rotations, source.fps, translations), ratio, foot_ratio, floor, shift
    )


def copy_retarget(source: Motion, target: Skeleton) -> Result:
    """Copy rotations, scale the root by the height ratio, put the feet on the floor.

    Parameters
    ----------
    source : Motion
    target : Skeleton
        Has every joint of the source (by name); other target joints keep
        their rest (identity) rotation.

    Returns
    -------
    Result
        Report keys: ``method``, ``height_ratio``, ``floor``, ``vertical_shift``
        (file unit), ``seconds``, ``frames_per_second``.
    """
    t0 = time.perf_counter()
    roles_s, roles_t = find_roles(source.skeleton), find_roles(target)
    ratio = height(target, roles_t) / height(source.skeleton, roles_s)
    contacts = detect_contacts(source, roles=roles_s)
    moved = transfer(source, target, ratio, contacts, roles_s, roles_t)
    seconds = time.perf_counter() - t0
    report = {
        "method": "copy",
        "height_ratio": ratio,
        "floor": moved.floor,
        "vertical_shift": moved.vertical_shift,
        "seconds": seconds,
        **speed(source.num_frames, seconds),
    }
    return Result(moved.motion, report)


# -- options (none: the baseline has no knobs) -----------------------------------------------

OPTIONS: tuple[Option, ...] = ()
