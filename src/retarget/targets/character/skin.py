"""A rigged character's body as capsules, and how deep its hands go into it (issue 28).

Each joint's share of the character's surface (:func:`retarget.io.gltf.skin_points`)
becomes a capsule in the joint's frame (:func:`retarget.tasks.fit_capsules`: the
principal axis, the :data:`SHARE` quantile of the vertices' distances from it as the
radius; a hand one, on its wrist, round its fingers: :func:`character_capsules`), the
same capsules the robots' self-collision keeps apart
(:class:`retarget.tasks.CollisionTask`). The measure the issue names: a hand's
skinned vertices (the wrist's and every joint's below it) deeper than a share of the
height inside the capsules of the torso (the joints between the hips and the head),
the hips or the thighs.

Units: the skeleton's (metres for glTF); depths in that unit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...core import quat
from ...core.arrays import Array
from ...core.kinematics import forward_kinematics, rest_pose
from ...core.motion import Motion
from ...core.skeleton import Skeleton
from ...humanoid.roles import find_roles, hand_joints, height
from ...tasks.collision import Capsules, fit_capsules

__all__ = ["SHARE", "HandsInBody", "body_capsules", "hand_and_body_joints", "hands_in_body"]

#: The quantile of a joint's vertices' distances from its capsule's axis that is the
#: radius: a skin's vertices spread over its surface (not a hull's corners).
SHARE = 0.8


def body_capsules(points: Mapping[int, Array], share: float = SHARE) -> Capsules:
    """One capsule per joint with vertices (:func:`fit_capsules`)."""
    return fit_capsules(sorted(points.items()), share=share)


def hand_and_body_joints(skeleton: Skeleton) -> tuple[list[int], list[int]]:
    """The hands' joints (:func:`retarget.humanoid.roles.hand_joints`) and the body's (the hips,
    every joint from them up to the head: the spine, the chest, the neck; the thighs:
    each hip joint). (Up to the neck only, the KayKit knight's chest joint, which
    carries its chest armour, had no capsule: its hands went into it on 60 % of the
    frames of the walk that the pass had kept out of its capsules.)"""
    roles = find_roles(skeleton)
    hands = [j for side in ("left", "right") for j in hand_joints(skeleton, side, roles)]
    trunk = [int(j) for j in skeleton.chain(roles["head"])]
    body = trunk[trunk.index(roles["hips"]) : -1]  # the hips, the spine, the neck
    body += [roles[f"{s}_hip"] for s in ("left", "right") if f"{s}_hip" in roles]
    return hands, body


def arm_joints(skeleton: Skeleton) -> set[int]:
    """The arms' joints: each clavicle (the shoulder without one) and every joint below
    it."""
    roles = find_roles(skeleton)
    arms: set[int] = set()
    for side in ("left", "right"):
        top = roles.get(f"{side}_clavicle", roles.get(f"{side}_shoulder"))
        if top is not None and top < skeleton.num_joints:
            arms |= {j for j in range(skeleton.num_joints) if top in skeleton.chain(j)}
    return arms


@dataclass(frozen=True)
class HandsInBody:
    """How deep the hands' vertices go into the body's capsules.

    Attributes
    ----------
    depth : (F,)
        Per frame, the deepest (skeleton unit; 0: none inside).
    share : float
        Frames deeper than ``limit``, as a share of the frames.
    limit : float
        The depth that counts (``fraction`` of the height).
    """

    depth: Array
    share: float
    limit: float


def hands_in_body(
    motion: Motion,
    skinned: Mapping[int, Array],
    capsules: Capsules | None = None,
    *,
    fraction: float = 0.01,
    stride: int = 4,
) -> HandsInBody:
    """The measure of the module docstring over ``motion``'s frames: ``skinned`` the
    skinned vertices by joint (:func:`retarget.io.gltf.skin_points` with
    ``rigid=False``), ``capsules`` the body's (default: :func:`body_capsules` of
    ``skinned``); every ``stride``-th vertex of a hand is tested."""
    sk = motion.skeleton
    hands, body = hand_and_body_joints(sk)
    caps = capsules if capsules is not None else body_capsules(skinned)
    keep = np.isin(caps.joints, body)
    joints: NDArray[np.intp] = caps.joints[keep]
    pos, rot = forward_kinematics(sk, motion.root_position, motion.rotations, motion.translations)
    a = pos[:, joints] + quat.rotate(rot[:, joints], caps.a[keep])  # (F, C, 3)
    b = pos[:, joints] + quat.rotate(rot[:, joints], caps.b[keep])
    depth = np.zeros(motion.num_frames)
    ab = b - a  # (F, C, 3)
    long = np.maximum((ab * ab).sum(-1), 1e-300)
    for j in hands:
        if j not in skinned or not keep.any():
            continue
        v = skinned[j][::stride]
        # frames where the joint is near enough a body capsule for a vertex to be inside
        reach = float(np.linalg.norm(v, axis=1).max(initial=0.0))
        aj = pos[:, j, None] - a
        tj = np.clip((aj * ab).sum(-1) / long, 0.0, 1.0)
        near = np.linalg.norm(aj - tj[..., None] * ab, axis=-1) < caps.radius[keep] + reach
        frames = np.flatnonzero(near.any(axis=1))
        for f0 in range(0, len(frames), 512):  # (in chunks: (f, V, C, 3) floats)
            f = frames[f0 : f0 + 512]
            world = pos[f, j, None] + quat.rotate(rot[f, j, None], v)  # (f, V, 3)
            ax = world[:, :, None] - a[f, None]  # (f, V, C, 3): a point from each segment
            t = np.clip((ax * ab[f, None]).sum(-1) / long[f, None], 0.0, 1.0)
            gap = np.linalg.norm(ax - t[..., None] * ab[f, None], axis=-1)
            depth[f] = np.maximum(depth[f], (caps.radius[keep] - gap).max(axis=(1, 2)))
    limit = fraction * height(sk, find_roles(sk))
    return HandsInBody(np.maximum(depth, 0.0), float((depth > limit).mean()), limit)


#: The hands' clearance from the body (a share of the height) and the weight of the
#: rows that keep it, per (height)²: as firm as a robot's links are kept apart.
MARGIN, _APART = 0.01, 1e5


def keep_hands_out(motion: Motion, capsules: Capsules, *, margin: float = MARGIN) -> Motion:
    """The motion with its arms moved, frame by frame, so that the hands' capsules keep
    ``margin`` × the height from the body's (the module's collision task, the robots'
    self-collision one), every arm joint's world orientation otherwise as it was (soft
    rows) and every other joint, the root and so the feet exactly as they were
    (:func:`retarget.ik.newton.solve_ik_newton`, the arms its only columns)."""
    from ...ik.newton import solve_ik_newton
    from ...ik.numeric import default_rigidity
    from ...tasks import CollisionTask, OrientationTask

    sk = motion.skeleton
    roles = find_roles(sk)
    tall = height(sk, roles)
    hands, body = hand_and_body_joints(sk)
    arms = arm_joints(sk)
    hand_caps = np.flatnonzero(np.isin(capsules.joints, hands))
    body_caps = np.flatnonzero(np.isin(capsules.joints, body))
    if not len(hand_caps) or not len(body_caps) or not arms:
        return motion
    pairs = np.array([(h, b) for h in hand_caps for b in body_caps], np.intp)
    _, rot = forward_kinematics(sk, motion.root_position, motion.rotations, motion.translations)
    tasks: list = [
        OrientationTask(j, rot[:, j], weight=1.0) for j in sorted(arms) if sk.euler_orders[j]
    ]
    tasks.append(CollisionTask(capsules, pairs, margin=margin * tall, weight=_APART / tall**2))
    rigidity = default_rigidity(sk)
    frozen = [j for j in range(sk.num_joints) if j not in arms]
    rigidity[0] = np.inf
    rigidity[1 + np.asarray(frozen, np.intp)] = np.inf
    solved = solve_ik_newton(
        sk,
        motion.root_position,
        motion.rotations,
        tasks,
        rigidity=rigidity,
        tolerance=1e-4,
        pair_buffer=0.1 * tall,
        damping=np.where(np.isfinite(rigidity[1:]), 100.0 * rigidity[1:], 0.0),
    )
    return Motion(sk, motion.root_position, solved.rotations, motion.fps, motion.translations)


def character_capsules(character, *, share: float = SHARE) -> tuple[Capsules, dict[int, Array]]:
    """A glTF character's capsules (:class:`retarget.io.gltf.Character`): each hand one,
    on its wrist, round the skinned vertices of its joints (:func:`hand_joints`: its
    fingers as they rest; not the sword or shield hanging there); every other joint's
    from all its vertices (a robot's rigid parts); and the skinned vertices by joint
    (what :func:`hands_in_body` tests). (A capsule a finger joint, the UAL mannequin's
    32 against its body's 6, made the pass 16 times slower.)"""
    from ...io.gltf import skin_points

    sk = character.skeleton
    skinned = skin_points(character, rigid=False)
    every = skin_points(character, rigid=True)
    hands, _ = hand_and_body_joints(sk)
    rest, _ = rest_pose(sk)
    points: dict[int, Array] = {j: v for j, v in every.items() if j not in hands and len(v) >= 2}
    roles = find_roles(sk)
    for side in ("left", "right"):
        hand = hand_joints(sk, side, roles)
        if not hand:
            continue
        wrist = roles[f"{side}_wrist"]
        mine = [skinned[j] + rest[j] - rest[wrist] for j in hand if j in skinned]
        if mine and sum(len(v) for v in mine) >= 2:
            points[wrist] = np.concatenate(mine)
    return body_capsules(points, share), skinned
