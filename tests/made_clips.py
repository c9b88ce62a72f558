"""Clips made from a real one for what the shared files lack (issue 40): a high kick
behind, a capture glitch of a foot.

- :func:`kick`: over a window, the swing leg's thigh swings back and its knee closes
  (a smooth bump, ``sin²`` in time): the foot rises high behind the body, the knee
  nearly closed, as a performer's kick behind does;
- :func:`glitch`: on a few frames the foot's joint turns far and back at once, so
  its toe tip jumps out and back while the ankle stays where it was: a marker
  swapped for a frame or two in an optical capture.

Rotations by scipy (its ``x y z w`` turned to the library's ``w x y z``); where a
joint is found, by the body's roles. Written as BVH by the library's writer, whose
round trip its own tests check.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from retarget.core.kinematics import forward_kinematics
from retarget.core.motion import Motion
from retarget.humanoid.roles import find_roles, height
from retarget.io import write_bvh

UP = 1  # the clips these are made from are Y up


def _sp(q: np.ndarray) -> Rotation:
    return Rotation.from_quat(np.asarray(q)[..., [1, 2, 3, 0]])


def _wxyz(r: Rotation) -> np.ndarray:
    return r.as_quat()[..., [3, 0, 1, 2]]


def _turned(motion: Motion, joint: int, frames: np.ndarray, angles: np.ndarray, axis: np.ndarray):
    """``motion`` with ``joint`` turned, at each of ``frames``, by ``angles`` (radians)
    about the world ``axis`` (F, 3) of that frame, taken into the joint's frame."""
    rot = motion.rotations.copy()
    _, world = forward_kinematics(motion.skeleton, motion.root_position, rot)
    local_axis = _sp(world[frames, joint]).inv().apply(axis[frames])
    turn = Rotation.from_rotvec(local_axis * angles[:, None])
    rot[frames, joint] = _wxyz(_sp(rot[frames, joint]) * turn)
    return Motion(motion.skeleton, motion.root_position, rot, motion.fps)


def _lateral(motion: Motion) -> np.ndarray:
    roles = find_roles(motion.skeleton)
    pos, _ = forward_kinematics(motion.skeleton, motion.root_position, motion.rotations)
    d = pos[:, roles["left_hip"]] - pos[:, roles["right_hip"]]
    d[:, UP] = 0.0
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def kick(
    motion: Motion,
    start: int,
    *,
    side: str = "right",
    length: int = 36,
    hip_degrees: float = 5.0,
    knee_degrees: float = 135.0,
) -> Motion:
    """``motion`` with a kick behind of the ``side`` leg over ``length`` frames from
    ``start`` (module docstring): the thigh back by ``hip_degrees``, the knee closed by
    ``knee_degrees`` at the window's middle."""
    roles = find_roles(motion.skeleton)
    hip, knee, ankle = (roles[f"{side}_{r}"] for r in ("hip", "knee", "ankle"))
    frames = np.arange(start, start + length)
    bump = np.sin(np.pi * (np.arange(length) + 0.5) / length) ** 2
    lateral = _lateral(motion)

    def best(m: Motion, joint: int, degrees: float, point: int) -> Motion:
        # the sign that lifts ``point`` the most (thigh back, knee closing behind)
        tries = [
            _turned(m, joint, frames, s * np.radians(degrees) * bump, lateral) for s in (1, -1)
        ]
        mid = start + length // 2

        def lift(t: Motion) -> float:
            return float(
                forward_kinematics(t.skeleton, t.root_position, t.rotations)[0][mid, point, UP]
            )

        return max(tries, key=lift)

    out = best(motion, hip, hip_degrees, ankle)
    return best(out, knee, knee_degrees, ankle)


def glitch(
    motion: Motion,
    start: int,
    *,
    side: str = "left",
    length: int = 3,
    degrees: float = 70.0,
) -> Motion:
    """``motion`` with the ``side`` foot turned ``degrees`` about the body's lateral axis
    on ``length`` frames from ``start``, and back at once: the toe tip jumps, the
    ankle does not move."""
    roles = find_roles(motion.skeleton)
    frames = np.arange(start, start + length)
    return _turned(
        motion,
        roles[f"{side}_ankle"],
        frames,
        np.full(length, np.radians(degrees)),
        _lateral(motion),
    )


def toe_tip_jump(motion: Motion, start: int, side: str = "left") -> float:
    """How far the toe tip moves into frame ``start`` against the ankle, per height."""
    roles = find_roles(motion.skeleton)
    pos, _ = forward_kinematics(motion.skeleton, motion.root_position, motion.rotations)
    tip = np.linalg.norm(
        pos[start, roles[f"{side}_toe_tip"]] - pos[start - 1, roles[f"{side}_toe_tip"]]
    )
    return float(tip / height(motion.skeleton, roles))


def made(data: Path, folder: Path) -> dict[str, Path]:
    """The made clips, written into ``folder``, from the clips of the data folder
    ``data``: ``kick.bvh`` (``lafan_walk.bvh``'s first 600 frames at 30 Hz, the right
    leg kicking behind from frame 200), ``glitch_30.bvh`` (the same, the left foot
    turned 120° on frames 300-301) and ``glitch_120.bvh`` (``real/fairmotion_cmu_01_01.bvh``,
    CMU at 120 Hz, its first 600 frames, the left foot turned 70° on frames 300-302:
    its toe tip jumps about a tenth of the body's height out and back)."""
    from retarget.io import read_bvh

    walk = read_bvh(data / "lafan_walk.bvh")[:600]
    cmu = read_bvh(data / "real" / "fairmotion_cmu_01_01.bvh")[:600]
    clips = {
        "kick": kick(walk, 200),
        "glitch_30": glitch(walk, 300, length=2, degrees=120.0),
        "glitch_120": glitch(cmu, 300),
    }
    return {name: write_bvh(folder / f"{name}.bvh", m) for name, m in clips.items()}
