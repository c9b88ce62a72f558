"""Matplotlib figures (Agg backend: no screen needed)."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from ..core.kinematics import positions
from ..core.motion import Motion
from ..humanoid.contacts import UP, Contacts, detect_contacts
from ..humanoid.metrics import joint_angles
from ..humanoid.roles import find_roles, height
from ..io.files import atomic_write
from ..io.formats import format_of

__all__ = ["plot_error_map", "plot_feet", "plot_joint_angles", "plot_report"]


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
    fig.savefig(buffer, format=format_of(path, "figure"), dpi=110)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


def plot_joint_angles(
    source: Motion,
    results: Sequence[tuple[str, Motion]],
    path: str | os.PathLike,
    *,
    side: str = "left",
    start: float = 0.0,
    seconds: float = 8.0,
) -> Path:
    """One leg's joint angles about their main axes, source against results
    (Choi & Ko 2000, Figure 10: the hip swings wider on shorter legs, the other
    patterns keep their shape).

    One panel per joint of the leg (hip, knee, ankle, toe when it moves): the
    angle of each motion about the source's axis of that joint
    (:func:`retarget.humanoid.metrics.joint_angles`), over ``seconds`` from ``start``, with the
    amplitude (5th to 95th percentile over the whole clip) in the legend.

    Parameters
    ----------
    source : Motion
    results : sequence of (label, Motion)
        Motions with the source's joints (by name).
    path : path
        ``.png`` or ``.svg``; written atomically.
    side : {"left", "right"}
    start, seconds : float
        The time window plotted (the amplitudes are over the whole clip).
    """
    roles = find_roles(source.skeleton)
    sk = source.skeleton
    leg = [roles[f"{side}_{r}"] for r in ("hip", "knee", "ankle", "toe") if f"{side}_{r}" in roles]
    leg = [j for j in leg if j < sk.num_joints]
    src, _ = joint_angles(source.rotations)
    motions = [("source", source, np.degrees(src))]
    for label, m in results:
        cols = m.skeleton.indices(sk.names)
        angles, _ = joint_angles(m.rotations[:, cols], reference=source.rotations)
        motions.append((label, m, np.degrees(angles)))
    leg = [j for j in leg if np.ptp(motions[0][2][:, j]) > 0.5]  # joints that move (degrees)
    first = min(max(0, int(start * source.fps)), source.num_frames - 2)
    window = slice(first, min(source.num_frames, first + max(2, int(seconds * source.fps))))
    t = np.arange(window.start, window.stop) / source.fps
    colours = ["black", "tab:orange", "tab:blue", "tab:green", "tab:red"]
    fig, axes = plt.subplots(len(leg), 1, figsize=(10, 2.6 * len(leg)), constrained_layout=True)
    for ax, j in zip(np.atleast_1d(axes), leg, strict=True):
        for (label, _, angles), colour in zip(motions, colours, strict=False):
            a = angles[:, j]
            amplitude = np.percentile(a, 95) - np.percentile(a, 5)
            ax.plot(t, a[window], color=colour, lw=1, label=f"{label} (amplitude {amplitude:.1f}°)")
        ax.set_title(f"{sk.names[j]}: angle about its main axis")
        ax.set_ylabel("degrees")
        ax.legend(loc="best", fontsize=8)
    np.atleast_1d(axes)[-1].set_xlabel("seconds")
    buffer = io.BytesIO()
    fig.savefig(buffer, format=format_of(path, "figure"), dpi=110)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


def _save(fig, path: str | os.PathLike) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format=format_of(path, "figure"), dpi=110)
    plt.close(fig)
    return atomic_write(path, buffer.getvalue())


def _series(values: list) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _physics_panel(ax: Any, panel: str, report: dict, fps: float | None) -> None:
    """The physics filter's curves (Tak & Ko 2005): source against result."""
    src, res = report["curves"]["source"], report["curves"]["result"]
    n = len(src["flight"])
    t = np.arange(n) / fps if fps else np.arange(n)
    if panel == "zmp":
        for name, c, style in (("source", src, "--"), ("result", res, "-")):
            ax.plot(t, 100 * _series(c["zmp_outside"]), style, lw=1, label=name)
        ax.set_ylabel("ZMP outside support, cm")
        ax.set_title("balance (eqs. 6-8): distance of the ZMP outside the support polygon")
    elif panel == "torque":
        limits = report.get("torque_limits", {})
        for k, (name, values) in enumerate(res["torque"].items()):
            colour = f"C{k}"
            ax.plot(t, src["torque"][name], "--", lw=1, color=colour, label=f"{name} source")
            ax.plot(t, values, "-", lw=1, color=colour, label=f"{name} result")
            if name in limits:
                ax.axhline(limits[name], color=colour, lw=0.8, ls=":")
        ax.set_ylabel("|torque|, N m")
        ax.set_title("torque limits (eqs. 9-10): dotted lines")
    else:
        for name, c, style in (("source", src, "--"), ("result", res, "-")):
            ax.plot(t, _series(c["momentum_force"]), style, lw=1, label=f"|Ṗ − mg| {name}")
            ax.plot(t, _series(c["momentum_moment"]), style, lw=1, label=f"|L̇| {name}")
        ax.set_ylabel("N, N m")
        ax.set_title("momentum in flight (eq. 11)")
    ax.legend(fontsize=7, loc="upper right")
    ax.set_xlabel("seconds" if fps else "frame")


def plot_report(report: dict, path: str | os.PathLike, *, fps: float | None = None) -> Path:
    """The figures a method's report carries, one panel each (``retarget plot R.json``).

    * ``levels`` (hierarchical fitting, Lee & Shin 1999): the largest and mean
      footplant error after each level of the hierarchy, knot spacing on the
      axis (the exact IK pass last), % of height on a log scale;
    * ``importance`` (puppetry, Shin et al. 2001, eqs. 11-15): each
      end-effector's importance over the frames, with ``iterations.per_frame``
      (the body posture's conjugate-gradient iterations) beneath;
    * ``curves`` (physics, Tak & Ko 2005): the ZMP's distance outside the
      support polygon, torques against their limits and the momentum
      residual in flight, source against result.

    Parameters
    ----------
    report : dict
        A run's ``--report`` (or a demo report's method entry).
    path : path
        ``.png``, ``.svg`` or ``.pdf``; written atomically.
    fps : float, optional
        Frames per second: the time axis in seconds instead of frames.

    Raises
    ------
    ValueError
        When the report holds none of these.
    """
    panels = []
    if report.get("levels"):
        panels.append("levels")
    if report.get("importance"):
        panels.append("importance")
        if (report.get("iterations") or {}).get("per_frame"):
            panels.append("iterations")
    curves = report.get("curves") or {}
    if curves.get("source") and curves.get("result"):
        panels.append("zmp")
        if curves["result"].get("torque"):
            panels.append("torque")
        if any(curves["result"].get("flight", [])):
            panels.append("momentum")
    if not panels:
        raise ValueError(
            "the report holds no figure: expected 'levels' (hierarchical), "
            "'importance' (puppetry) or 'curves' (physics)"
        )
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 3.0 * len(panels)), squeeze=False)
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        if panel == "levels":
            levels = report["levels"]
            names = [
                "exact IK" if lv["spacing"] == 0 else f"{lv['spacing']:g} frames" for lv in levels
            ]
            x = np.arange(len(levels))
            for key, style in (("max_error", "o-"), ("mean_error", "s--")):
                values = np.maximum([lv[key] for lv in levels], 1e-16)
                ax.semilogy(x, values, style, label=key.replace("_", " "))
            ax.set_xticks(x, names)
            ax.set_ylabel("footplant error, % of height")
            ax.set_title("hierarchical fitting: error after each level (knot spacing)")
            ax.legend(fontsize=8)
        elif panel == "importance":
            for name, w in report["importance"].items():
                w = np.asarray(w, dtype=float)
                t = np.arange(len(w)) / fps if fps else np.arange(len(w))
                ax.plot(t, w, lw=1, label=name)
            ax.set_ylim(-0.05, 1.05)
            ax.set_ylabel("importance")
            ax.set_title("puppetry: end-effector importance (eqs. 11-15)")
            ax.legend(fontsize=8, loc="upper right")
            ax.set_xlabel("seconds" if fps else "frame")
        elif panel in ("zmp", "torque", "momentum"):
            _physics_panel(ax, panel, report, fps)
        else:
            it = np.asarray(report["iterations"]["per_frame"], dtype=float)
            t = np.arange(len(it)) / fps if fps else np.arange(len(it))
            ax.plot(t, it, lw=1, color="black")
            ax.set_ylabel("CG iterations")
            ax.set_title(
                f"body posture (eqs. 18-20): {int(it.sum())} iterations on "
                f"{int((it > 0).sum())} of {len(it)} frames"
            )
            ax.set_xlabel("seconds" if fps else "frame")
    fig.tight_layout()
    return _save(fig, path)


def plot_error_map(verb: Any, search: int, path: str | os.PathLike) -> Path:
    """A verb's warped grid (Rose et al. 2001, Figures 6 and 8): a regular grid of
    adverbs (grey) and where the blends put the end-effector (blue), examples
    (black dots) and pseudo-examples (green); in 3-D the grid is the middle plane of
    the last adverb, drawn in 3-D (a plane of adverbs need not stay a plane). The
    title gives the mean and maximum error over the working volume
    (:func:`retarget.ik.verbs.error_map`)."""
    from ..ik.verbs import error_map, search_adverb

    emap = error_map(verb, search=search)
    d = verb.basis.dimension
    lo, hi = verb.adverbs.min(axis=0), verb.adverbs.max(axis=0)
    count = 21
    axes = [np.linspace(a, b, count) for a, b in zip(lo, hi, strict=True)]
    if d == 3:
        axes[2] = np.array([0.5 * (lo[2] + hi[2])])
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(count, count, d)
    p = search_adverb(verb, mesh, search) if search else mesh
    warped = verb.achieved(p)
    fig = plt.figure(figsize=(7, 6))
    ax = fig.add_subplot(projection="3d" if d == 3 else None)
    for grid, colour, width in ((mesh, "0.75", 0.6), (warped, "tab:blue", 0.9)):
        for line in (*grid, *np.swapaxes(grid, 0, 1)):
            ax.plot(*line.T, color=colour, lw=width)
    centres = verb.basis.centres
    n = verb.basis.examples
    ax.plot(*centres[:n].T, "o", color="black", ms=4, label=f"{n} examples")
    if len(centres) > n:
        ax.plot(*centres[n:].T, "+", color="tab:green", ms=5, label=f"{len(centres) - n} pseudo")
    ax.set_title(
        f"error over the working volume: mean {emap.mean:.3f} %, max {emap.max:.3f} % "
        f"of {verb.scale:.3g} {verb.skeleton.unit}"
        + (f"\n(p′ search, {search} iterations)" if search else "")
    )
    ax.legend(loc="upper left", fontsize=8)
    if d == 2:
        ax.set_aspect("equal")
    return _save(fig, path)
