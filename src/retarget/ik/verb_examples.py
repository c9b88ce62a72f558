"""The two verbs shipped as examples (Rose, Sloan & Cohen 2001, section 4.1).

* :func:`arm3_verb` — the **planar 3-link arm** of section 4.1: links 1.0,
  0.8 and 0.6 m, hinges about z, the tip's ``(x, y)`` the adverbs. The paper
  does not list its example poses; ours are nine, drawn as an animator would
  with one rule — the three hinges curled alike — for tips on a 3 × 3 grid
  over ``x ∈ [0.9, 1.9]``, ``y ∈ [−0.6, 1.0]`` (all within reach).
* :func:`reach_verb` — a **reach verb from captured data**: right-arm poses
  (shoulder, elbow and wrist joints) taken from frames of a clip, the rest of
  the body held in one reference frame of it, set at the origin facing +Z.
  The adverbs are the wrist joint's position relative to the shoulder joint
  (``right_shoulder`` and ``right_wrist`` roles: LAFAN1's ``RightArm`` and
  ``RightHand``) in the reference pose's world axes: x to the character's
  left, y up, z forward, in the skeleton's unit. The frames are chosen by
  farthest-point sampling of that position over the clip, so that the
  examples span the arm's captured range.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..core import quat
from ..core.arrays import Array
from ..core.kinematics import forward_kinematics
from ..core.motion import Motion
from ..core.skeleton import Skeleton
from ..humanoid.roles import find_roles
from .verbs import EndEffector, Verb, VerbExample, build_verb

__all__ = ["ARM3_LINKS", "arm3_skeleton", "arm3_verb", "reach_verb"]


ARM3_LINKS = (1.0, 0.8, 0.6)


def arm3_skeleton(links: tuple[float, float, float] = ARM3_LINKS) -> Skeleton:
    """Three hinges about z at the origin, then along x; the tip is the site ``Tip``."""
    a, b, c = links
    return Skeleton(
        ("Link1", "Link2", "Link3"),
        np.array([-1, 0, 1]),
        np.array([[0.0, 0.0, 0.0], [a, 0.0, 0.0], [b, 0.0, 0.0]]),
        channels=(
            ("Xposition", "Yposition", "Zposition", "Zrotation"),
            ("Zrotation",),
            ("Zrotation",),
        ),
        site_names=("Tip",),
        site_parents=np.array([2]),
        site_offsets=np.array([[c, 0.0, 0.0]]),
        unit="m",
    )


def _curled(target: Array, links: tuple[float, float, float]) -> Array:
    """Hinge angles (3,) putting the tip at ``target`` (2,) with the two outer hinges
    bent alike (the examples' style)."""
    a, b, c = links
    r = float(np.hypot(*target))

    def tip(phi: float) -> complex:
        return a + b * np.exp(1j * phi) + c * np.exp(2j * phi)

    lo, hi = 0.0, 2.0  # |tip| falls from a + b + c as the curl grows over this range
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if abs(tip(mid)) > r else (lo, mid)
    phi = 0.5 * (lo + hi)
    return np.array([np.arctan2(target[1], target[0]) - np.angle(tip(phi)), phi, phi])


def arm3_verb(links: tuple[float, float, float] = ARM3_LINKS) -> Verb:
    """The planar 3-link arm verb (module docstring): nine pose examples, adverbs
    ``(x, y)`` of the tip measured on them, errors as shares of the reach."""
    sk = arm3_skeleton(links)
    targets = [(x, y) for x in (0.9, 1.4, 1.9) for y in (-0.6, 0.2, 1.0)]
    examples = []
    for t in targets:
        angles = _curled(np.array(t), links)
        rot = quat.quat_from_rotvec(np.outer(angles, [0.0, 0.0, 1.0]))
        examples.append(VerbExample(np.zeros((1, 3)), rot[None]))
    tip = sk.index("Tip")
    effector = EndEffector(tip, 0, np.array([1.0, 0.0, 0.0, 0.0]), (0, 1))
    return build_verb(sk, examples, [0, 1, 2], effector=effector, scale=float(sum(links)))


def _facing_origin(motion: Motion, frame: int) -> tuple[Array, Array]:
    """The pose of ``frame`` moved over the origin and turned about y to face +Z (its
    hips' left-right axis along +X)."""
    sk = motion.skeleton
    roles = find_roles(sk)
    root, rot = motion.root_position[frame], motion.rotations[frame]
    pos, _ = forward_kinematics(sk, root, rot)
    left = pos[roles["left_hip"]] - pos[roles["right_hip"]]
    yaw = -np.arctan2(-left[2], left[0])
    turn = quat.quat_from_rotvec([0.0, yaw, 0.0])
    rot = np.array(rot)
    rot[0] = quat.multiply(turn, rot[0])
    return np.array([0.0, root[1], 0.0]), rot


def _farthest_points(points: Array, count: int) -> NDArray[np.intp]:
    """Indices of ``count`` points, each the farthest from those already chosen
    (starting from the one farthest from the mean)."""
    chosen = [int(np.argmax(np.linalg.norm(points - points.mean(axis=0), axis=1)))]
    gap = np.linalg.norm(points - points[chosen[0]], axis=1)
    while len(chosen) < min(count, len(points)):
        k = int(np.argmax(gap))
        chosen.append(k)
        gap = np.minimum(gap, np.linalg.norm(points - points[k], axis=1))
    return np.asarray(chosen, dtype=np.intp)


def reach_verb(motion: Motion, examples: int = 24, reference_frame: int = 0) -> Verb:
    """The reach verb from a captured clip (module docstring).

    Parameters
    ----------
    motion : Motion
        A clip with a right arm (roles ``right_shoulder``, ``right_elbow``,
        ``right_wrist``), e.g. ``lafan_walk.bvh``.
    examples : int
        How many frames become examples.
    reference_frame : int
        The frame the rest of the body is held in.
    """
    sk = motion.skeleton
    roles = find_roles(sk)
    shoulder, elbow, wrist = (roles[f"right_{r}"] for r in ("shoulder", "elbow", "wrist"))
    joints = np.array([shoulder, elbow, wrist], dtype=np.intp)
    root, rot = _facing_origin(motion, reference_frame)
    effector = EndEffector(wrist, shoulder, np.array([1.0, 0.0, 0.0, 0.0]), (0, 1, 2))
    posed = np.broadcast_to(rot, motion.rotations.shape).copy()
    posed[:, joints] = motion.rotations[:, joints]
    pos, _ = forward_kinematics(sk, root, posed)
    chosen = _farthest_points(pos[:, wrist] - pos[:, shoulder], examples)
    shots = [VerbExample(root[None], posed[k][None]) for k in chosen]
    return build_verb(
        sk, shots, joints.tolist(), effector=effector, reference=(root, rot), fps=motion.fps
    )
