"""A video of motions side by side (``retarget render``): GIF or MP4, no screen needed.

Each frame is drawn by matplotlib (Agg) as 2-D lines: the skeletons' bones and
a floor grid projected by a perspective camera that orbits at a fixed angle
and follows the motions' centre, as the HTML viewer's (:mod:`retarget.viz.viewer`)
shows them: Y up, metres, side by side across the way the first one walks.
Projecting ourselves keeps a frame at a few milliseconds, where matplotlib's
3-D axes take tens. GIFs are written by Pillow, MP4 (H.264) by the ffmpeg
binary that the ``imageio-ffmpeg`` wheel carries.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.animation import FFMpegWriter, PillowWriter
from matplotlib.collections import LineCollection

from ..core.errors import RetargetError
from ..core.kinematics import forward_kinematics
from ..core.motion import Motion
from ..core.quat import matrix_from_quat, quat_between
from ..humanoid.roles import height
from ..humanoid.world import UNITS, up_axis
from ..io.files import check_not_input
from ..io.formats import format_of
from .viewer import COLOURS, _across

__all__ = ["render_video"]

Array = np.ndarray


def _shown(motion: Motion) -> tuple[Array, float]:
    """World positions (F, P, 3) turned Y up, in metres, and the height in metres."""
    sk = motion.skeleton
    pos, _ = forward_kinematics(sk, motion.root_position, motion.rotations)
    metres = UNITS.get(sk.unit, 1.0) / 100.0
    try:
        up = up_axis(sk, motion)
        tall = height(sk) * metres
    except (RetargetError, KeyError):
        up, tall = np.array([0.0, 1.0, 0.0]), 1.0
    turn = matrix_from_quat(quat_between(up, [0.0, 1.0, 0.0]))
    return (pos @ turn.T) * metres, tall


def _camera(target: Array, azimuth: float, elevation: float, distance: float) -> Array:
    """World → camera rotation rows (right, up, back) and the eye, shape (4, 3)."""
    back = np.array(
        [
            np.cos(elevation) * np.sin(azimuth),
            np.sin(elevation),
            np.cos(elevation) * np.cos(azimuth),
        ]
    )
    eye = target + distance * back
    right = np.cross([0.0, 1.0, 0.0], back)
    right /= np.linalg.norm(right)
    up = np.cross(back, right)
    return np.stack([right, up, back, eye])


def _project(points: Array, cam: Array, focal: float) -> Array:
    """Perspective projection of (..., 3) points to (..., 2); NaN behind the camera."""
    rel = points - cam[3]
    x, y, z = rel @ cam[0], rel @ cam[1], rel @ cam[2]
    depth = -z
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.stack([focal * x / depth, focal * y / depth], axis=-1)
    out[depth <= 0.05] = np.nan
    return out


def render_video(
    path: str | os.PathLike,
    motions: Sequence[tuple[str, Motion]],
    *,
    fps: float | None = None,
    size: tuple[int, int] = (640, 360),
    azimuth: float = 0.6,
    elevation: float = 0.3,
    inputs: Sequence[str | os.PathLike] = (),
) -> Path:
    """Write a video of named motions side by side (module docstring).

    Parameters
    ----------
    path : str or path-like
        ``.gif`` or ``.mp4``; written atomically, never over ``inputs``.
    motions : sequence of (name, Motion)
        Played together from their first frames, at the first one's rate.
    fps : float, optional
        Frames per second of the video (default the first motion's, at most
        30), rounded to a whole number: frames are taken at that rate.
    size : (int, int)
        Width and height in pixels.
    azimuth, elevation : float
        The camera's orbit angles (radians).

    Returns
    -------
    Path
    """
    path = Path(path)
    kind = format_of(path, "video")
    if not motions:
        raise RetargetError("nothing to render: give at least one motion")
    check_not_input(path, inputs)
    source_fps = motions[0][1].fps
    wanted = min(source_fps, 30.0) if fps is None else float(fps)
    if not wanted >= 0.5:
        raise RetargetError(f"expected a video frame rate >= 1, got {fps}")
    rate = round(wanted)  # whole frames per second, as the video writers take them
    n_frames = max(m.num_frames for _, m in motions)
    picks = np.arange(0.0, n_frames, source_fps / rate).astype(np.intp)
    shown, heights = zip(*(_shown(m) for _, m in motions), strict=True)
    tall = max(heights)
    side = _across(motions[0][1])
    placed = []
    for k, pos in enumerate(shown):
        offset = 0.7 * tall * k * side - pos[0, 0]
        offset[1] = 0.0
        placed.append(pos + offset)
    bones = [
        [(int(m.skeleton.point_parents[p]), p) for p in range(1, m.skeleton.num_points)]
        for _, m in motions
    ]
    width, high = size
    dpi = 100
    fig = plt.figure(figsize=(width / dpi, high / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set_facecolor("#f4f4f2")
    fig.patch.set_facecolor("#f4f4f2")
    half = width / high
    ax.set_xlim(-half, half)
    ax.set_ylim(-1.0, 1.0)
    floor = LineCollection([], colors="#c8c8c8", linewidths=0.6)
    ax.add_collection(floor)
    sticks = [
        LineCollection([], colors=COLOURS[k % len(COLOURS)], linewidths=2.2)
        for k in range(len(motions))
    ]
    for s in sticks:
        ax.add_collection(s)
    label = ax.text(0.02, 0.03, "", transform=ax.transAxes, fontsize=9, color="#333")
    for k, (name, _) in enumerate(motions):
        ax.text(
            0.02,
            0.95 - 0.05 * k,
            name,
            transform=ax.transAxes,
            fontsize=9,
            color=COLOURS[k % len(COLOURS)],
        )
    distance = 2.6 * tall + 0.7 * len(motions)
    focal = 1.0 / np.tan(np.radians(20.0))
    lines_at = np.arange(-5.0, 5.01, 0.5)  # floor lines every 0.5 m, 5 m around the target,
    pieces = np.arange(-5.0, 5.0, 1.0)  # in 1 m pieces (none passes behind the camera)
    floor_local = np.array(
        [[[g, 0.0, a], [g, 0.0, a + 1.0]] for g in lines_at for a in pieces]
        + [[[a, 0.0, g], [a + 1.0, 0.0, g]] for g in lines_at for a in pieces]
    )
    writer = PillowWriter(fps=rate) if kind == "gif" else _ffmpeg(rate)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".{kind}", dir=path.parent or ".")
    os.close(fd)
    try:
        with writer.saving(fig, tmp, dpi):
            for f in picks:
                frames = [np.minimum(f, len(p) - 1) for p in placed]
                roots = np.array([p[i, 0] for p, i in zip(placed, frames, strict=True)])
                target = roots.mean(axis=0)
                target[1] = 0.5 * tall
                cam = _camera(target, azimuth, elevation, distance)
                centre = np.array([np.round(target[0]), 0.0, np.round(target[2])])
                floor.set_segments(list(_project(floor_local + centre, cam, focal)))
                for s, pos, i, pairs in zip(sticks, placed, frames, bones, strict=True):
                    seg = np.array([[pos[i, a], pos[i, b]] for a, b in pairs if a >= 0])
                    s.set_segments(list(_project(seg, cam, focal)))
                label.set_text(f"frame {int(frames[0])}")
                writer.grab_frame(facecolor=fig.get_facecolor())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _ffmpeg(rate: int) -> FFMpegWriter:
    try:
        import imageio_ffmpeg
    except ImportError:
        raise RetargetError("MP4 needs the imageio-ffmpeg package; write a .gif") from None
    matplotlib.rcParams["animation.ffmpeg_path"] = imageio_ffmpeg.get_ffmpeg_exe()
    return FFMpegWriter(fps=rate, codec="libx264", extra_args=["-pix_fmt", "yuv420p"])
