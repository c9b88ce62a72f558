"""Where a file puts the body's travel: one BVH clip rewritten in the layouts other
exporters use (issue 40, item 1), for the tests.

Each layout is the same motion: every joint at and below the hips is where the
original puts it, on every frame. Only the joints above the hips and the channels
that carry the travel differ:

- ``reference``: a static top joint at the floor (6 channels, all zero) above the
  hips, which carry the travel on their own 6 channels; every other joint has 6
  channels too (positions equal to its offset), as one large studio's files do;
- ``floor_root``: a top joint on the floor under the hips (Unreal's and Mixamo's
  ``root``) carries the travel along the floor and the heading (a turn about the
  up axis); the hips carry the rest (their height, their sway, their rotation
  against the heading) on 6 channels; the root has a second child (an IK bone),
  as Unreal's skeletons do;
- ``floor_root_all``: the same floor root carrying everything (the hips' whole
  position and heading), the hips 3 rotation channels at a fixed offset.

Made here by text and scipy alone (the file's own channel values where they are
unchanged; scipy's rotations where a rotation is split), never with the library's
writer, so that a defect of the library cannot make its own fixture agree with it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

LAYOUTS = ("reference", "floor_root", "floor_root_all")


def _parse(text: str) -> tuple[list[str], list[str], np.ndarray, float]:
    """Header lines, channels per joint in order, the frames (F, C), frame time."""
    head, _, motion = text.partition("MOTION")
    lines = motion.strip().splitlines()
    frame_time = float(lines[1].split(":")[1])
    data = np.array([[float(v) for v in ln.split()] for ln in lines[2:] if ln.strip()])
    channels = re.findall(r"CHANNELS\s+(\d+)((?:\s+\w+)+?)\s*$", head, flags=re.M)
    return head.splitlines(), [c[1].split() for c in channels], data, frame_time


def rewrite(source: Path, layout: str, out: Path, *, frames: int | None = None) -> Path:
    """``source`` (a BVH whose top joint is the hips, 6 channels, Y up) rewritten in
    ``layout`` (module docstring) to ``out``; its first ``frames`` frames."""
    text = source.read_text()
    head, chans, data, frame_time = _parse(text)
    if frames is not None:
        data = data[:frames]
    hips_ch = chans[0]
    if hips_ch[:3] != ["Xposition", "Yposition", "Zposition"]:
        raise ValueError("the hips must carry Xposition Yposition Zposition first")
    order = "".join(c[0] for c in hips_ch[3:])  # intrinsic, e.g. "ZYX"
    hips_pos = data[:, :3]
    hips_rot = Rotation.from_euler(order.upper(), data[:, 3:6], degrees=True)
    rest = data[:, 6:]
    # the joints' offsets, in header order, to give them position channels
    offsets = [
        [float(v) for v in m.split()]
        for m in re.findall(r"^\s*OFFSET\s+(.+)$", "\n".join(head), flags=re.M)
    ]
    root_line = next(i for i, ln in enumerate(head) if ln.strip().startswith("ROOT"))
    body = head[root_line:]
    body[0] = body[0].replace("ROOT", "JOINT")
    if layout == "reference":
        # every joint 6 channels: positions first, then its rotations
        new_body, k = [], 0
        for ln in body:
            if ln.strip().startswith("CHANNELS"):
                names = chans[k]
                if len(names) == 3:
                    ln = ln.replace("CHANNELS 3", "CHANNELS 6 Xposition Yposition Zposition", 1)
                k += 1
            new_body.append("\t" + ln)
        cols = [np.zeros((len(data), 6)), data[:, :6]]
        col = 6
        joint = 1
        ends = _end_site_offsets(head)
        for names in chans[1:]:
            off = np.array(offsets[_joint_offset_index(head, joint, ends)])
            cols.append(np.tile(off, (len(data), 1)))
            cols.append(data[:, col : col + len(names)])
            col += len(names)
            joint += 1
        lines = ["HIERARCHY", "ROOT Reference", "{", "\tOFFSET 0.000000 0.000000 0.000000"]
        lines.append("\tCHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation")
        lines += [*new_body, "}"]
        table = np.concatenate(cols, axis=1)
        return _write(out, lines, table, frame_time)
    if layout not in ("floor_root", "floor_root_all"):
        raise ValueError(f"layout {layout!r} not one of {LAYOUTS}")
    # the heading: the hips' own forward axis (rest frame's z) along the floor
    fwd = hips_rot.apply(_rest_forward(hips_rot[0]))
    yaw = np.unwrap(np.arctan2(fwd[:, 0], fwd[:, 2]))
    yaw -= yaw[0]
    heading = Rotation.from_euler("Y", yaw[:, None])
    root_pos = hips_pos.copy()
    root_pos[:, 1] = 0.0
    local_rot = heading.inv() * hips_rot
    local_pos = heading.inv().apply(hips_pos - root_pos)
    root_cols = np.column_stack(
        [root_pos, np.zeros(len(data)), np.degrees(yaw), np.zeros(len(data))]
    )
    # root channels: positions, then Z, Y, X rotation (only the yaw moves)
    if layout == "floor_root":
        hips_cols = np.column_stack([local_pos, local_rot.as_euler(order.upper(), degrees=True)])
        hips_channels = "CHANNELS 6 " + " ".join(hips_ch)
    else:
        mean_off = local_pos.mean(axis=0)
        # the hips at a fixed offset: their position's changes go to the root
        root_cols[:, :3] = hips_pos - heading.apply(np.tile(mean_off, (len(data), 1)))
        hips_cols = local_rot.as_euler(order.upper(), degrees=True)
        hips_channels = "CHANNELS 3 " + " ".join(hips_ch[3:])
    new_body = []
    for i, ln in enumerate(body):
        s = ln.strip()
        if i < 4 and s.startswith("CHANNELS 6"):
            ln = ln.replace(s, hips_channels)
        elif i < 4 and s.startswith("OFFSET") and layout == "floor_root_all":
            ln = ln.replace(s, "OFFSET " + " ".join(f"{v:.6f}" for v in mean_off))
        elif i < 4 and s.startswith("OFFSET"):
            ln = ln.replace(s, "OFFSET 0.000000 0.000000 0.000000")
        new_body.append("\t" + ln)
    lines = ["HIERARCHY", "ROOT root", "{", "\tOFFSET 0.000000 0.000000 0.000000"]
    lines.append("\tCHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation")
    lines += new_body
    lines += [
        "\tJOINT ik_foot_root",
        "\t{",
        "\t\tOFFSET 0.000000 0.000000 0.000000",
        "\t\tCHANNELS 3 Zrotation Yrotation Xrotation",
        "\t\tEnd Site",
        "\t\t{",
        "\t\t\tOFFSET 0.000000 0.000000 0.000000",
        "\t\t}",
        "\t}",
        "}",
    ]
    ik_bone = np.zeros((len(data), 3))
    table = np.concatenate([root_cols, hips_cols, rest, ik_bone], axis=1)
    return _write(out, lines, table, frame_time)


def _rest_forward(hips0: Rotation) -> np.ndarray:
    """A horizontal axis of the hips' frame on the first frame (its local axis most
    nearly horizontal), so the heading is read along the floor."""
    axes = hips0.apply(np.eye(3))
    k = int(np.argmin(np.abs(axes[:, 1])))
    return np.eye(3)[k]


def _end_site_offsets(head: list[str]) -> set[int]:
    """Indices (among OFFSET lines) of the End Sites' offsets."""
    out, k, pending = set(), 0, False
    for ln in head:
        s = ln.strip()
        if s.startswith("End Site"):
            pending = True
        elif s.startswith("OFFSET"):
            if pending:
                out.add(k)
                pending = False
            k += 1
    return out


def _joint_offset_index(head: list[str], joint: int, ends: set[int]) -> int:
    """The index among OFFSET lines of the ``joint``-th joint (0 the top one)."""
    joints = [k for k in range(10_000) if k not in ends]
    return joints[joint]


def _write(out: Path, lines: list[str], table: np.ndarray, frame_time: float) -> Path:
    rows = "\n".join(" ".join(f"{v:.6f}" for v in r) for r in table)
    out.write_text(
        "\n".join(lines)
        + f"\nMOTION\nFrames: {len(table)}\nFrame Time: {frame_time:.6f}\n"
        + rows
        + "\n"
    )
    return out
