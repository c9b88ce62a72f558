"""Matplotlib figures (Agg backend: no screen needed)."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from ..contacts import UP, Contacts, detect_contacts
from ..io._files import atomic_write
from ..kinematics import positions
from ..motion import Motion
from ..roles import find_roles, height

__all__ = ["plot_feet"]


def plot_feet(
    source: Motion,
    results: Sequence[tuple[str, Motion]],
    path: str | os.PathLike,
    *,
    contacts: Contacts | None = None,
    seconds: float = 8.0,
) -> Path:
    """Foot trajectories of a source and its results, contact frames marked.

    Three rows per foot (left, right toe; the ankle when there is no toe):
    the top view of the whole clip (contacts as dots), the height above the
    floor and the horizontal speed over the first ``seconds`` (contact spans
    shaded). Heights and speeds are in % of each character's height, so
    characters of other sizes share the axes.

    Parameters
    ----------
    source : Motion
    results : sequence of (label, Motion)
    path : path
        ``.png`` or ``.svg``; written atomically.
    contacts : Contacts, optional
        The source's (detected when not given).
    seconds : float
        Length of the time window plotted.
    """
    contacts = contacts or detect_contacts(source)
    roles = find_roles(source.skeleton)
    feet = []
    for side in ("left", "right"):
        role = f"{side}_toe" if f"{side}_toe" in roles else f"{side}_ankle"
        k = (
            int(np.flatnonzero(contacts.points == roles[role])[0])
            if roles[role] in contacts.points
            else 0
        )
        feet.append((side, role, k))
    n = min(source.num_frames, max(2, int(seconds * source.fps)))
    t = np.arange(n) / source.fps
    motions = [("source", source), *results]
    colours = ["black", "tab:orange", "tab:blue", "tab:green", "tab:red"]
    fig, axes = plt.subplots(3, 2, figsize=(12, 10), constrained_layout=True)
    per_motion = [(find_roles(m.skeleton), positions(m)) for _, m in motions]
    for col, (side, role, k) in enumerate(feet):
        planted = contacts.mask[:, k]
        for (label, m), (rr, pos), colour in zip(motions, per_motion, colours, strict=False):
            p = pos[:, rr[role] if role in rr else rr[f"{side}_ankle"]]
            h = height(m.skeleton, rr)
            horiz = np.delete(p, UP, axis=-1)
            ax = axes[0, col]
            ax.plot(horiz[:, 0], horiz[:, 1], color=colour, lw=0.6, label=label)
            ax.plot(horiz[planted, 0], horiz[planted, 1], ".", color=colour, ms=1.5)
            axes[1, col].plot(
                t, (p[:n, UP] - contacts.floor) / h * 100, color=colour, lw=1, label=label
            )
            speed = np.linalg.norm(np.gradient(horiz[:n], axis=0), axis=-1) * m.fps / h * 100
            axes[2, col].plot(t, speed, color=colour, lw=1, label=label)
        for row in (1, 2):
            ax = axes[row, col]
            starts = np.flatnonzero(np.diff(np.concatenate([[0], planted[:n].astype(int)])) == 1)
            ends = np.flatnonzero(np.diff(np.concatenate([planted[:n].astype(int), [0]])) == -1)
            for a, b in zip(starts, ends, strict=True):
                ax.axvspan(t[a], t[min(int(b), n - 1)], color="tab:gray", alpha=0.15, lw=0)
        axes[0, col].set_title(f"{side} {role.split('_', 1)[1]}: top view (dots = source contacts)")
        axes[0, col].set_aspect("equal", adjustable="datalim")
        axes[1, col].set_title("height above the floor (shaded = source contact)")
        axes[1, col].set_ylabel("% of height")
        axes[2, col].set_title("horizontal speed: skating where shaded")
        axes[2, col].set_ylabel("% of height per second")
        axes[2, col].set_xlabel("seconds")
        axes[0, col].legend(loc="best", fontsize=8)
    buffer = io.BytesIO()
    fmt = Path(path).suffix.lower().lstrip(".") or "png"
    fig.savefig(buffer, format=fmt, dpi=110)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())
