"""An independent reading of a robot's joint trajectories against their human source.

Nothing here imports the library: the judge reads the BVH with its own parser and
scipy's rotations, the robot with MuJoCo alone (its own compiled joint ranges, its own
kinematics, its own pairwise distances :func:`mujoco.mj_geomDistance` of the collision
geometry with the model's own bit masks), and the trajectory ``.npz`` with numpy. It
measures what DESIGN.md and the robots issue define, so that the library's report
(:func:`retarget.targets.robot.measures.measure_robot`) can be checked against it
(``tests/test_robot_judge.py``; ``benchmarks/robots.py --judge``):

* **contacts** of the source (DESIGN.md, with the release and cleaning the library
  documents for :func:`retarget.humanoid.contacts.detect_contacts`): per foot joint (the
  ankle, ``*Foot``, and the toe, ``*Toe*``), a contact starts on a frame where the joint
  is within 4 % of height of its own planted clearance (the 5th percentile of its
  heights) and moves horizontally (central differences) slower than 25 % of height per
  second, and lasts while both stay under 1.25 times those; gaps of at most 0.05 s
  between contacts are closed, then contacts shorter than 0.1 s dropped;
* **skate**: mean horizontal speed over pairs of consecutive contact frames of the
  robot's point of the same kind (its ankle: the point nearest the axes of the foot's
  last two hinges where they are square to each other, where they cross, else the last
  hinge's anchor; its toe: the front of the sole, the support
  point of the foot's geometry forward and a little down, moved across onto the foot's
  midline) in % of its standing
  height per second, over the source's own in % of its height per second;
* **float** and **penetration**: the lowest point of the collision geometry of the
  ankle and all below it (the bodies of the ankle's hinges and their children; exact
  for every MuJoCo shape: the support point straight down) above the floor while the
  source's foot is planted; frames with it deeper than 0.5 cm;
* **limits**: angles outside the ranges MuJoCo compiled for limited joints;
* **links into each other**: frames where two geoms of bodies that are neither parent
  and child nor in contact at the zero configuration, and that MuJoCo's own bit masks
  let collide (the file's ``contype``/``conaffinity`` and ``<exclude>``; when no geom
  collides, those of the highest group), are more than 0.5 cm into each other;
* **jerk**: mean squared third difference of every body's position over that of the
  source's points (its joints and end sites: the body's every point, as the robot's
  bodies are) scaled by the height ratio.

Heights: the source's is the path of bones from its head joint to each ankle (the
mean of both); the robot's the vertical extent of its collision geometry at the zero
configuration. The robot's sides: left is +y of the floating base at rest; its feet
are, per side, the body whose collision geometry reaches lowest; a foot's front is the
end of its long axis further from the ankle or, with the ankle over its middle, the
end the base's x axis points to (REP 103's forward).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = ["Bvh", "judge", "read_bvh"]

_UP_SHARE = 0.04  # contact: within 4 % of height of the clearance
_SPEED_SHARE = 0.25  # and slower than 25 % of height per second
_DEEP = 0.005  # m: a sole deeper, links further into each other, count


@dataclass(frozen=True)
class Bvh:
    """A BVH file as written: point names (J,) (joints and end sites), parents (J,)
    (-1 the root), offsets (J, 3), channels per point (none for an end site), the
    motion (F, C) and frames per second."""

    names: list[str]
    parents: list[int]
    offsets: np.ndarray
    channels: list[list[str]]
    motion: np.ndarray
    fps: float

    def positions(self) -> np.ndarray:
        """World positions (F, J, 3) of the joints, file unit and axes: each joint's
        local rotation the product of its rotation channels in the order written
        (intrinsic), its translation its offset or, where it has position channels,
        those."""
        f = len(self.motion)
        pos = np.zeros((f, len(self.names), 3))
        rot: list[Rotation] = []
        col = 0
        for j, chans in enumerate(self.channels):
            values = self.motion[:, col : col + len(chans)]
            col += len(chans)
            local_t = np.tile(self.offsets[j], (f, 1))
            axes = "".join(c[0].upper() for c in chans if c.lower().endswith("rotation"))
            angles = (
                np.stack(
                    [values[:, k] for k, c in enumerate(chans) if c.lower().endswith("rotation")],
                    axis=1,
                )
                if axes
                else np.zeros((f, 0))
            )
            for k, c in enumerate(chans):
                if c.lower().endswith("position"):
                    local_t[:, "xyz".index(c[0].lower())] = values[:, k]
            local_r = (
                Rotation.from_euler(axes, angles, degrees=True) if axes else Rotation.identity(f)
            )
            p = self.parents[j]
            if p < 0:
                pos[:, j] = local_t
                rot.append(local_r)
            else:
                pos[:, j] = pos[:, p] + rot[p].apply(local_t)
                rot.append(rot[p] * local_r)
        return pos


def read_bvh(path: str | Path) -> Bvh:
    """The points (``ROOT``, ``JOINT`` and each ``End Site``, named ``<parent>_end``,
    with no channels) and the motion of a BVH."""
    tokens = Path(path).read_text().split()
    names: list[str] = []
    parents: list[int] = []
    offsets: list[list[float]] = []
    channels: list[list[str]] = []
    stack: list[int] = []
    i = 0
    while tokens[i] != "MOTION":
        t = tokens[i]
        if t in ("ROOT", "JOINT", "End"):
            names.append(tokens[i + 1] if t != "End" else f"{names[stack[-1]]}_end")
            parents.append(stack[-1] if stack else -1)
            channels.append([])
            i += 2
        elif t == "{":
            stack.append(len(names) - 1)
            i += 1
        elif t == "}":
            stack.pop()
            i += 1
        elif t == "OFFSET":
            offsets.append([float(v) for v in tokens[i + 1 : i + 4]])
            i += 4
        elif t == "CHANNELS":
            n = int(tokens[i + 1])
            channels[-1] = tokens[i + 2 : i + 2 + n]
            i += 2 + n
        else:
            i += 1
    frames = int(tokens[tokens.index("Frames:", i) + 1])
    at = tokens.index("Time:", i) + 1
    dt = float(tokens[at])
    width = sum(len(c) for c in channels)
    values = np.array(tokens[at + 1 : at + 1 + frames * width], dtype=float)
    return Bvh(names, parents, np.array(offsets), channels, values.reshape(frames, width), 1.0 / dt)


def _named(bvh: Bvh, pattern: str) -> int:
    found = [j for j, n in enumerate(bvh.names) if re.fullmatch(pattern, n, re.IGNORECASE)]
    if len(found) != 1:
        raise ValueError(f"the judge needs one joint named like {pattern!r}: {found}")
    return found[0]


def _path_length(bvh: Bvh, a: int, b: int) -> float:
    def chain(j: int) -> list[int]:
        out = [j]
        while bvh.parents[out[-1]] >= 0:
            out.append(bvh.parents[out[-1]])
        return out

    ca, cb = chain(a), chain(b)
    common = next(j for j in ca if j in cb)
    bones = [j for j in ca[: ca.index(common)]] + [j for j in cb[: cb.index(common)]]
    return float(sum(np.linalg.norm(bvh.offsets[j]) for j in bones))


def _contacts(rel: np.ndarray, speed: np.ndarray, fps: float) -> np.ndarray:
    """The module docstring's contacts from heights over the clearance and horizontal
    speeds (F,), both in heights (per second)."""
    on = np.zeros(len(rel), dtype=bool)
    for k in range(len(rel)):
        if rel[k] < _UP_SHARE and speed[k] < _SPEED_SHARE:
            on[k] = True
        elif k and on[k - 1]:
            on[k] = rel[k] < 1.25 * _UP_SHARE and speed[k] < 1.25 * _SPEED_SHARE
    gap, shortest = round(0.05 * fps), max(1, round(0.1 * fps))
    edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(int), [0]])))
    starts, ends = edges[::2], edges[1::2]  # runs of contact [start, end)
    for end, start in zip(ends[:-1], starts[1:], strict=True):
        if start - end <= gap:
            on[end:start] = True
    edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(int), [0]])))
    for start, end in zip(edges[::2], edges[1::2], strict=True):
        if end - start < shortest:
            on[start:end] = False
    return on


# ----------------------------------------------------------------------- the robot


def _crossing(model, data, hinges: list[int]) -> np.ndarray:
    """The point (3,) nearest the world axes of ``hinges`` (least squares over the
    lines; the one hinge's anchor, or axes all parallel: the anchors' mean)."""
    anchors = np.array([data.xanchor[j] for j in hinges])
    axes = np.array([data.xaxis[j] / np.linalg.norm(data.xaxis[j]) for j in hinges])
    if len(hinges) < 2:
        return anchors.mean(axis=0)
    a = sum(np.eye(3) - np.outer(u, u) for u in axes)
    b = sum((np.eye(3) - np.outer(u, u)) @ p for u, p in zip(axes, anchors, strict=True))
    if np.linalg.matrix_rank(a, tol=1e-9) < 3:  # parallel: no one crossing
        return anchors.mean(axis=0)
    return np.linalg.solve(a, b)


def _support(model, data, g: int, d: np.ndarray) -> np.ndarray:
    """The point of geom ``g`` furthest along the unit direction ``d`` (world), exact
    for MuJoCo's sphere, capsule, ellipsoid, cylinder, box and mesh."""
    kind = int(model.geom_type[g])
    c = data.geom_xpos[g]
    r = data.geom_xmat[g].reshape(3, 3)
    s = model.geom_size[g]
    dl = r.T @ d  # the direction in the geom's frame
    if kind == 2:  # sphere
        local = s[0] * dl
    elif kind == 3:  # capsule: along z, half-length s[1], radius s[0]
        local = np.array([0.0, 0.0, np.sign(dl[2]) * s[1]]) + s[0] * dl
    elif kind == 4:  # ellipsoid
        e = s[:3] * dl
        local = s[:3] * e / max(np.linalg.norm(e), 1e-300)
    elif kind == 5:  # cylinder
        side = np.array([dl[0], dl[1], 0.0])
        n = np.linalg.norm(side)
        local = np.array([0.0, 0.0, np.sign(dl[2]) * s[1]]) + (s[0] * side / n if n > 0 else 0)
    elif kind == 6:  # box
        local = np.sign(dl) * s[:3]
    elif kind == 7:  # mesh: its vertices, in the geom's frame
        m = int(model.geom_dataid[g])
        a, n = int(model.mesh_vertadr[m]), int(model.mesh_vertnum[m])
        verts = np.asarray(model.mesh_vert[a : a + n], dtype=float)
        local = verts[int(np.argmax(verts @ dl))]
    else:
        raise ValueError(f"geom {g}: a shape the judge does not know ({kind})")
    return c + r @ local


def _colliding(model) -> list[int]:
    """The geoms MuJoCo would collide (bit masks set; module docstring otherwise)."""
    solid = [g for g in range(model.ngeom) if 2 <= int(model.geom_type[g]) <= 7]
    solid = [g for g in solid if int(model.geom_bodyid[g]) > 0]
    own = [g for g in solid if model.geom_contype[g] or model.geom_conaffinity[g]]
    if own:
        return own
    top = max(int(model.geom_group[g]) for g in solid)
    return [g for g in solid if int(model.geom_group[g]) == top]


def _may_collide(model, g1: int, g2: int, forced: bool) -> bool:
    if forced:
        return True
    return bool(
        (model.geom_contype[g1] & model.geom_conaffinity[g2])
        or (model.geom_contype[g2] & model.geom_conaffinity[g1])
    )


def _qpos(model, npz) -> np.ndarray:
    import mujoco

    dof = np.asarray(npz["dof_pos"], dtype=float)
    hinges = [j for j in range(model.njnt) if int(model.jnt_type[j]) in (2, 3)]
    names = (
        [str(n) for n in npz["joint_names"]]
        if "joint_names" in npz.files and len(npz["joint_names"])
        else [model.joint(j).name for j in hinges]  # (GMR's: the model's order)
    )
    q = np.tile(np.asarray(model.qpos0, dtype=float), (len(dof), 1))
    for k, name in enumerate(names):
        q[:, int(model.joint(name).qposadr[0])] = dof[:, k]
    free = [j for j in range(model.njnt) if int(model.jnt_type[j]) == mujoco.mjtJoint.mjJNT_FREE]
    a = int(model.jnt_qposadr[free[0]])
    q[:, a : a + 3] = npz["root_pos"]
    q[:, a + 3 : a + 7] = npz["root_quat"]
    return q


def _lowest_body(model, data, geoms: list[int], side: float, root: np.ndarray) -> int:
    """The body on one side (sign of y about the base) whose geometry reaches lowest."""
    down = np.array([0.0, 0.0, -1.0])
    best, body = np.inf, -1
    for g in geoms:
        b = int(model.geom_bodyid[g])
        if np.sign(data.xpos[b, 1] - root[1]) != side:
            continue
        z = _support(model, data, g, down)[2]
        if z < best - 2e-3 or (z < best + 2e-3 and _depth(model, b) < _depth(model, body)):
            best, body = min(z, best), b
    return body


def _depth(model, b: int) -> int:
    if b < 0:
        return 10**9
    n = 0
    while b > 0:
        b, n = int(model.body_parentid[b]), n + 1
    return n


def _subtree(model, top: int) -> list[int]:
    out = []
    for b in range(model.nbody):
        c = b
        while c > 0 and c != top:
            c = int(model.body_parentid[c])
        if c == top:
            out.append(b)
    return out


def judge(
    bvh_path: str | Path,
    model_path: str | Path,
    npz_path: str | Path,
    frames: slice = slice(None),
) -> dict:
    """The module docstring's measures of the trajectories in ``npz_path`` (this
    library's or GMR's keys) of the robot in ``model_path`` (MJCF) made from
    ``bvh_path`` (a Y-up BVH whose feet are ``*Foot`` and ``*Toe*`` and head
    ``Head``), frame for frame: the source's ``frames``."""
    import mujoco

    # the source
    bvh = read_bvh(bvh_path)
    s_pos = bvh.positions()[frames]
    head = _named(bvh, "head")
    s_height = float(
        np.mean([_path_length(bvh, head, _named(bvh, f"{s}foot")) for s in ("left", "right")])
    )
    points = {
        (side, kind): _named(bvh, f"{side}{pat}")
        for side in ("left", "right")
        for kind, pat in (("ankle", "foot"), ("toe", "toe(base)?"))
    }
    contact = {}
    for key, j in points.items():
        rel = s_pos[:, j, 1] - np.percentile(s_pos[:, j, 1], 5.0)
        speed = np.linalg.norm(np.gradient(s_pos[:, j][:, [0, 2]], axis=0), axis=-1) * bvh.fps
        contact[key] = _contacts(rel / s_height, speed / s_height, bvh.fps)
    # the robot at rest
    model = mujoco.MjModel.from_xml_path(str(model_path))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    geoms = _colliding(model)
    forced = not any(model.geom_contype[g] or model.geom_conaffinity[g] for g in geoms)
    up, down = np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, -1.0])
    tall = max(_support(model, data, g, up)[2] for g in geoms) - min(
        _support(model, data, g, down)[2] for g in geoms
    )
    root = data.xpos[1].copy()
    feet, anchors, toes = {}, {}, {}
    for side, sign in (("left", 1.0), ("right", -1.0)):
        b = _lowest_body(model, data, geoms, sign, root)
        mine = [g for g in geoms if int(model.geom_bodyid[g]) in _subtree(model, b)]
        hinges, jb = [], b  # the last hinge from the foot up, and the one above it
        while len(hinges) < 2 and jb > 0:  # when square to it (a two-hinge ankle)
            first = int(model.body_jntadr[jb])
            own = range(first, first + int(model.body_jntnum[jb]))
            hinges += [j for j in reversed(own) if int(model.jnt_type[j]) == 3]
            jb = int(model.body_parentid[jb])
        square = len(hinges) > 1 and abs(data.xaxis[hinges[0]] @ data.xaxis[hinges[1]]) < 0.5
        anchors[side] = hinges[:2] if square else hinges[:1]
        top = int(model.jnt_bodyid[anchors[side][-1]])  # the ankle and all below it
        feet[side] = [g for g in geoms if int(model.geom_bodyid[g]) in _subtree(model, top)]
        # the front of the sole: the foot's long horizontal axis, pointing away from the
        # ankle; the support point forward and a little down, in the foot body's frame
        pts = np.array(
            [
                _support(model, data, g, np.array(v, float))
                for g in mine
                for v in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0))
            ]
        )
        span = pts[:, :2].max(0) - pts[:, :2].min(0)
        fwd = np.zeros(3)
        fwd[int(np.argmax(span))] = 1.0
        centre = 0.5 * (pts.max(0) + pts.min(0))
        ahead = (centre - _crossing(model, data, anchors[side])) @ fwd
        if abs(ahead) < 0.05 * span.max():  # the ankle over the foot's middle: the way
            ahead = data.xmat[1].reshape(3, 3)[:, 0] @ fwd  # the base faces (x, REP 103)
        if ahead < 0:
            fwd = -fwd
        d = fwd - 0.3 * up
        d /= np.linalg.norm(d)
        front = max((_support(model, data, g, d) for g in mine), key=lambda p: p @ d)
        across = np.cross(up, fwd)  # on the foot's midline
        front += ((centre - front) @ across) * across
        rb = data.xmat[b].reshape(3, 3)
        toes[side] = (b, rb.T @ (front - data.xpos[b]))
    # pairs that may collide: not one body, not parent and child, apart at rest
    parent = np.asarray(model.body_parentid)
    excluded = {
        (min(int(a), int(b)), max(int(a), int(b)))
        for a, b in zip(
            (int(p) >> 16 for p in model.exclude_signature),
            (int(p) & 0xFFFF for p in model.exclude_signature),
            strict=True,
        )
    }
    pairs = []
    for i, g1 in enumerate(geoms):
        for g2 in geoms[i + 1 :]:
            b1, b2 = int(model.geom_bodyid[g1]), int(model.geom_bodyid[g2])
            if b1 == b2 or parent[b1] == b2 or parent[b2] == b1:
                continue
            if (min(b1, b2), max(b1, b2)) in excluded or not _may_collide(model, g1, g2, forced):
                continue
            pairs.append((g1, g2))
    fromto = np.zeros(6)
    touching = {
        (int(model.geom_bodyid[a]), int(model.geom_bodyid[b]))
        for a, b in pairs
        if mujoco.mj_geomDistance(model, data, a, b, 0.0, fromto) < 0.0
    }
    pairs = [
        (a, b)
        for a, b in pairs
        if (int(model.geom_bodyid[a]), int(model.geom_bodyid[b])) not in touching
    ]
    # the trajectory, frame by frame
    npz = np.load(npz_path)
    qpos = _qpos(model, npz)
    fps = float(npz["fps"])
    f = len(qpos)
    if f != len(s_pos):
        raise ValueError(f"{f} frames of the robot for {len(s_pos)} of the source")
    limited = [j for j in range(model.njnt) if model.jnt_limited[j] and model.jnt_type[j] == 3]
    adr = np.array([int(model.jnt_qposadr[j]) for j in limited], dtype=int)
    lo, hi = model.jnt_range[limited, 0], model.jnt_range[limited, 1]
    past = np.maximum(lo - qpos[:, adr], qpos[:, adr] - hi)
    xpos = np.empty((f, model.nbody, 3))
    sole = np.empty((f, 2))
    ankle = np.empty((f, 2, 3))
    toe = np.empty((f, 2, 3))
    depth = np.zeros(f)
    for k in range(f):
        data.qpos[:] = qpos[k]
        mujoco.mj_kinematics(model, data)
        xpos[k] = data.xpos
        for s, side in enumerate(("left", "right")):
            sole[k, s] = min(_support(model, data, g, down)[2] for g in feet[side])
            ankle[k, s] = _crossing(model, data, anchors[side])
            b, local = toes[side]
            toe[k, s] = data.xpos[b] + data.xmat[b].reshape(3, 3) @ local
        for a, b in pairs:
            d = mujoco.mj_geomDistance(model, data, a, b, 0.0, fromto)
            if d < -depth[k]:
                depth[k] = -d
    # skate over the source's contacts
    ours, theirs, by_point = [], [], {}
    for (side, kind), j in points.items():
        both = contact[(side, kind)][1:] & contact[(side, kind)][:-1]
        s = 0 if side == "left" else 1
        mine = ankle[:, s] if kind == "ankle" else toe[:, s]
        step = np.linalg.norm(np.diff(mine[:, :2], axis=0), axis=-1) * fps / tall * 100.0
        ours.append(step[both])
        src = np.linalg.norm(np.diff(s_pos[:, j][:, [0, 2]], axis=0), axis=-1)
        theirs.append(src[both] * bvh.fps / s_height * 100.0)
        by_point[f"{side}_{kind}"] = (float(ours[-1].mean()), float(theirs[-1].mean()))
    skate, s_skate = float(np.concatenate(ours).mean()), float(np.concatenate(theirs).mean())
    planted = np.stack(
        [contact[(s, "ankle")] | contact[(s, "toe")] for s in ("left", "right")], axis=1
    )
    above = np.maximum(sole, 0.0)[planted] * 100.0
    jerk = np.diff(xpos[:, 1:], n=3, axis=0) * fps**3
    s_jerk = np.diff(s_pos * (tall / s_height), n=3, axis=0) * bvh.fps**3
    return {
        "frames": f,
        "robot_height_m": float(tall),
        "source_height": s_height,
        "skate_ratio": skate / s_skate,
        "skate_points": by_point,
        "float_cm": float(above.mean()) if above.size else 0.0,
        "penetration_frames": int((sole.min(axis=1) < -_DEEP).sum()),
        "penetration_max_cm": float(max(-sole.min(), 0.0) * 100.0),
        "limit_violations": int((past > 1e-6).sum()),
        "limit_worst_rad": float(np.maximum(past, 0.0).max(initial=0.0)),
        "self_collision_share": float((depth > _DEEP).mean()),
        "self_collision_max_cm": float(depth.max() * 100.0),
        "jerk_ratio": float((jerk**2).sum(-1).mean() / (s_jerk**2).sum(-1).mean()),
        "feet": {side: model.body(int(toes[side][0])).name for side in ("left", "right")},
    }
