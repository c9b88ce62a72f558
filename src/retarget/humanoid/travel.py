"""Where a file puts the body's travel, and the motion with it on the root.

Exporters put the body's travel in different joints (issue 40):

- on the top joint, the hips (BVH's usual, CMU's, LAFAN1's): the root's position;
- below a static top joint: a reference joint at the floor that never moves, the
  travel on the hips' own position channels (one large studio's files give every
  joint 6 channels);
- on a floor-level top joint under the hips (Unreal's and Mixamo's ``root``),
  carrying the travel along the floor and the heading, while the hips' own
  channels carry their height and sway.

The methods and the mapping read the body's travel from the root's position
(:attr:`Motion.root_position`) and the joints' offsets (:class:`Skeleton`): the
per-frame offsets of :attr:`Motion.translations` on the joints between the top
joint and the hips would be lost, and the body would walk in place.
:func:`travel_on_root` gives the same motion with those joints' offsets back at the
skeleton's and the root moved instead, so that every joint at and below the hips
stays exactly where the file puts it, on every frame. The root's rotation is
unchanged (the fold moves positions only), so a root that carries the heading
keeps it.

:func:`mover` names the joint that moves the body: the hips, or the joint above
them that carries the travel when the hips' own position is fixed.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..core.arrays import Array
from ..core.kinematics import forward_kinematics, rest_pose
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from .roles import find_roles

__all__ = ["mover", "moving_joints", "travel_on_root"]


def _path_to(skeleton: Skeleton, joint: int) -> list[int]:
    """The joints from the root's child down to ``joint`` (empty when it is the root)."""
    path = []
    while joint > 0 and int(skeleton.parents[joint]) >= 0:
        path.append(joint)
        joint = int(skeleton.parents[joint])
    return path[::-1]


def _hips(skeleton: Skeleton, hips: int | None) -> int:
    return int(find_roles(skeleton)["hips"]) if hips is None else int(hips)


def moving_joints(motion: Motion, hips: int | None = None) -> list[int]:
    """The joints between the top joint and the hips (the hips included) whose
    per-frame offsets (:attr:`Motion.translations`) change over the clip: those that
    carry the body's travel below the root. Empty when the root carries it.
    ``hips``: their joint (found from the body when not given)."""
    if motion.translations is None:
        return []
    hips = _hips(motion.skeleton, hips)
    t = motion.translations
    return [j for j in _path_to(motion.skeleton, hips) if np.ptp(t[:, j], axis=0).any()]


def mover(motion: Motion, hips: int | None = None) -> int:
    """The joint that moves the body: the lowest of the joints down to the hips whose
    position changes in its parent's frame (the root when none below it does)."""
    moving = moving_joints(motion, hips)
    return moving[-1] if moving else 0


def travel_on_root(motion: Motion, hips: int | None = None) -> Motion:
    """``motion`` with the body's travel on its root's position (module docstring).

    Parameters
    ----------
    motion : Motion
        Any layout: travel on the root, on the hips below a static root, split
        between a floor-level root and the hips.
    hips : int, optional
        The hips' joint (found from the body, :func:`retarget.humanoid.roles.find_roles`,
        when not given).

    Returns
    -------
    Motion
        ``motion`` itself when nothing below the root carries travel; else the same
        skeleton and rotations, the offsets of the joints from the root's child to
        the hips at the skeleton's (:attr:`Skeleton.offsets`) and the root's position
        moved by what they carried, so that the hips and every joint below them are
        where ``motion`` puts them, exactly; ``translations`` dropped when none is
        left that differs from the skeleton's offsets.
    """
    hips = _hips(motion.skeleton, hips)
    if not moving_joints(motion, hips):
        return motion
    sk = motion.skeleton
    path = _path_to(sk, hips)
    t = motion.translations
    assert t is not None
    fixed = t.copy()
    fixed[:, path] = sk.offsets[path]
    here = forward_kinematics(sk, motion.root_position, motion.rotations, t)[0][:, hips]
    there = forward_kinematics(sk, motion.root_position, motion.rotations, fixed)[0][:, hips]
    root = motion.root_position + (here - there)
    rest = np.broadcast_to(sk.offsets, fixed.shape)
    keep = None if np.array_equal(fixed[:, 1:], rest[:, 1:]) else fixed
    return Motion(sk, root, motion.rotations, motion.fps, keep)


def below_hips(sk: Skeleton, hips: int) -> tuple[Skeleton, NDArray[np.intp]]:
    """The skeleton from the hips down (their subtree; the hips its root, their offset
    their rest position) and its joints' indices in ``sk``."""
    inside = np.zeros(sk.num_joints, dtype=bool)
    inside[hips] = True
    for j in range(hips + 1, sk.num_joints):
        inside[j] = inside[int(sk.parents[j])]
    keep = np.flatnonzero(inside)
    new = np.full(sk.num_joints, -1, dtype=np.intp)
    new[keep] = np.arange(len(keep))
    sites = np.flatnonzero(inside[sk.site_parents])
    offsets = sk.offsets[keep].copy()
    offsets[0] = rest_pose(sk)[0][hips]
    below = Skeleton(
        tuple(sk.names[j] for j in keep),
        np.array([new[int(sk.parents[j])] if j != hips else -1 for j in keep], dtype=np.intp),
        offsets,
        tuple(sk.channels[j] for j in keep),
        site_names=tuple(sk.site_names[k] for k in sites),
        site_parents=new[sk.site_parents[sites]],
        site_offsets=sk.site_offsets[sites].reshape(-1, 3),
        unit=sk.unit,
        axes=sk.axes[keep],
        limits=sk.limits[keep],
        up=sk.up,
    )
    return below, keep


def from_hips(motion: Motion, hips: int) -> Motion:
    """``motion`` on :func:`below_hips` of its skeleton: the hips' world position and
    rotation on the root, every joint below them where ``motion`` puts it. A method
    moves the body by its root: a joint above the hips (a static reference, a
    floor-level root) would turn and carry the whole body about a point outside it.
    :func:`root_above` puts the joints above back, at rest
    (:meth:`retarget.humanoid.mapping.ForMethod.unfold`)."""
    sk = motion.skeleton
    below, keep = below_hips(sk, hips)
    pos, rot = forward_kinematics(sk, motion.root_position, motion.rotations, motion.translations)
    rotations = motion.rotations[:, keep].copy()
    rotations[:, 0] = rot[:, hips]
    trans = None if motion.translations is None else motion.translations[:, keep]
    return Motion(below, pos[:, hips], rotations, motion.fps, trans)


def root_above(whole: Skeleton, top: str, position: ArrayLike) -> Array:
    """Where ``whole``'s root goes (..., 3) for its joint ``top`` (the hips a method's
    body starts at, :func:`from_hips`) to be at ``position`` (..., 3), the joints above
    ``top`` at rest (their local rotations the identity)."""
    return np.asarray(position, dtype=np.float64) - rest_pose(whole)[0][whole.index(top)]
