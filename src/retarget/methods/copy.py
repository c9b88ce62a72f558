"""The baseline: copy joint angles onto the target.

Local rotations are copied joint by joint (by name); the root's horizontal
path is scaled by the height ratio ``r = height(target) / height(source)``
about its first position, its height above the floor by ``r``; then the whole
body is shifted vertically so the feet rest on the floor as the source's do
(over the source's contact frames, the median height of each planted foot's
lowest point matches the source's, scaled by the ratio of foot lengths).
Nothing else is done: on characters of other proportions the feet skate.
Every other method is measured against this; :func:`transfer` is also the
starting point (``m_0``) of the hierarchical method, with another ratio.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..contacts import UP, Contacts, detect_contacts
from ..kinematics import positions
from ..motion import Motion
from ..result import Result
from ..roles import Roles, find_roles, height
from ..skeleton import Skeleton
from ._base import check_same_hierarchy

__all__ = ["Transfer", "copy_retarget", "foot_length", "leg_length", "transfer"]


def foot_length(skeleton: Skeleton, roles: Roles) -> float:
    """Mean bone path from ankle to toe tip, file unit."""
    return float(
        np.mean(
            [
                skeleton.path_length(roles[f"{s}_ankle"], roles[f"{s}_toe_tip"])
                for s in ("left", "right")
            ]
        )
    )


def leg_length(skeleton: Skeleton, roles: Roles) -> float:
    """Mean thigh + shin length (hip joint to ankle bone path), file unit."""
    return float(
        np.mean(
            [
                skeleton.path_length(roles[f"{s}_hip"], roles[f"{s}_ankle"])
                for s in ("left", "right")
            ]
        )
    )


@dataclass(frozen=True)
class Transfer:
    """A motion carried onto a target by copying rotations, and how it was placed."""

    motion: Motion
    ratio: float
    foot_ratio: float
    floor: float
    vertical_shift: float


def transfer(
    source: Motion,
    target: Skeleton,
    ratio: float,
    contacts: Contacts,
    roles_source: Roles,
    roles_target: Roles,
) -> Transfer:
    """Copy rotations by name, scale the root path by ``ratio``, rest the feet on the floor.

    Parameters
    ----------
    source : Motion
    target : Skeleton
        Has every source joint (by name); others keep identity rotations.
    ratio : float
        Scale of the root's horizontal path (about its first position) and of
        its height above the floor.
    contacts : Contacts
        The source's; planted feet of the result rest as high above the floor
        as the source's (scaled by the foot-length ratio).
    roles_source, roles_target : Roles
    """
    check_same_hierarchy(source.skeleton, target)
    floor = contacts.floor
    rotations = np.tile([1.0, 0.0, 0.0, 0.0], (source.num_frames, target.num_joints, 1))
    rotations[:, target.indices(source.skeleton.names)] = source.rotations
    root = source.root_position.copy()
    horizontal = [a for a in range(3) if a != UP]
    if len(root):
        root[:, horizontal] = root[0, horizontal] + ratio * (
            root[:, horizontal] - root[0, horizontal]
        )
    root[:, UP] = floor + ratio * (root[:, UP] - floor)
    moved = Motion(target, root, rotations, source.fps)
    by_point = {p: role for role, p in roles_source.items()}
    feet_s = positions(source)[:, contacts.points, UP] - floor
    feet_t = positions(moved)[:, [roles_target[by_point[p]] for p in contacts.points], UP] - floor
    foot_ratio = foot_length(target, roles_target) / foot_length(source.skeleton, roles_source)
    per_side_s, per_side_t = [], []
    for side in ("left", "right"):
        cols = [k for k, s in enumerate(contacts.sides) if s == side]
        frames = contacts.foot(side)
        per_side_s.append(feet_s[frames][:, cols].min(axis=1))
        per_side_t.append(feet_t[frames][:, cols].min(axis=1))
    planted_s, planted_t = np.concatenate(per_side_s), np.concatenate(per_side_t)
    shift = (
        float(np.median(planted_s) * foot_ratio - np.median(planted_t)) if planted_s.size else 0.0
    )
    root[:, UP] += shift
    return Transfer(Motion(target, root, rotations, source.fps), ratio, foot_ratio, floor, shift)


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
        "frames_per_second": source.num_frames / seconds if seconds > 0 else float("inf"),
    }
    return Result(moved.motion, report)
