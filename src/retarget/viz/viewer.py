"""One self-contained HTML page that plays motions side by side in 3-D (``retarget view``).

The page inlines three.js (a pinned npm release bundled by esbuild into one
script, ``_three/three.min.js``: ``make`` runs ``npm ci`` and ``npm run build``
in ``viz/js``, whose ``package-lock.json`` pins both), the viewer's own
script (``viewer.js``) and the motions' data, so it opens offline from a
file. Per motion it carries the world positions of every joint and end site
in the file's own unit and axes (float32, base64), the bones, the foot points
and their contact frames (:func:`retarget.humanoid.contacts.detect_contacts`, on the
motion turned Y up) and how to show it: turned Y up, in metres, side by side
along x (or overlaid). Goals and environment objects come from a run's report
(``goals``: per point a list of frames, null where free; ``scene``: boxes,
spheres, a floor, as ``retarget`` scene files write them).

The page reports what it shows through ``window.viewer`` (frame, play,
``setFrame``, ``points``: a motion's positions at the current frame in its
file's unit and axes; ``scene``: the three.js scene drawn, motion ``k`` as the
instanced meshes ``"points k"`` and ``"bones k"``, ``viewer.js``'s header).
The browser test reads the world positions of those meshes' instances and
compares them with a forward kinematics of its own.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import RetargetError
from ..core.kinematics import forward_kinematics
from ..core.motion import Motion
from ..core.quat import matrix_from_quat, quat_between
from ..core.strict_json import strict_json
from ..humanoid.contacts import detect_contacts
from ..humanoid.roles import find_roles, height
from ..humanoid.world import UNITS, up_axis, upright
from ..io.files import atomic_write

__all__ = ["COLOURS", "live_motion", "viewer_html", "write_viewer"]

#: Colours of the motions, in order (then repeated).
COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#9d755d")


def _three() -> str:
    path = resources.files("retarget.viz").joinpath("_three/three.min.js")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RetargetError(
            "the viewer's three.js bundle is missing: run `make` (it needs npm) to build "
            "retarget/viz/_three/three.min.js"
        ) from None


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _motion_data(
    motion: Motion,
    name: str,
    colour: str,
    slot: int,
    spacing: float,
    side: np.ndarray,
    capsules: Sequence[tuple[int, int, float]] = (),
) -> dict:
    sk = motion.skeleton
    pos, _ = forward_kinematics(sk, motion.root_position, motion.rotations)  # (F, P, 3)
    parents = sk.point_parents
    bones = [[int(parents[p]), p] for p in range(1, sk.num_points) if parents[p] >= 0]
    metres = UNITS.get(sk.unit, 1.0) / 100.0
    try:
        roles = find_roles(sk)
        up = up_axis(sk, motion, roles=roles)
        tall = height(sk, roles) * metres
    except (RetargetError, KeyError):
        roles, up, tall = None, np.array([0.0, 1.0, 0.0]), 1.0
    turn = matrix_from_quat(quat_between(up, [0.0, 1.0, 0.0]))
    contact_points: list[int] = []
    contact_mask = np.zeros((motion.num_frames, 0), dtype=np.uint8)
    if roles is not None:
        try:
            c = detect_contacts(upright(motion), roles=roles)
            contact_points = [int(p) for p in c.points]
            contact_mask = c.mask.astype(np.uint8)
        except (RetargetError, KeyError, ValueError):
            pass
    shown = (pos @ turn.T) * metres
    centre = shown[0, 0].copy()
    offset = slot * spacing * side - centre
    offset[1] = 0.0
    return {
        "name": name,
        "colour": colour,
        "frames": motion.num_frames,
        "fps": motion.fps,
        "points": sk.num_points,
        "joints": sk.num_joints,
        "names": list(sk.point_names),
        "bones": bones,
        "unit": sk.unit,
        "positions": _b64(pos.astype("<f4")),
        "scale": metres,
        "turn": turn.tolist(),
        "offset": offset.tolist(),
        "height": tall,
        "contactPoints": contact_points,
        "contacts": _b64(contact_mask),
        "capsules": [[int(a), int(b), float(r)] for a, b, r in capsules],
    }


def viewer_html(
    motions: Sequence[tuple[str, Motion]],
    *,
    report: Mapping[str, Any] | None = None,
    overlay: bool = False,
    title: str = "retarget",
    live: str | None = None,
    capsules: Mapping[int, Sequence[tuple[int, int, float]]] | None = None,
    meshes: Mapping[int, tuple[bytes, int]] | None = None,
) -> str:
    """The page (module docstring) for named motions, the first the reference.

    Parameters
    ----------
    motions : sequence of (name, Motion)
    report : mapping, optional
        A run's report: its ``goals`` (point name → frames of [x, y, z] or
        None, the last motion's unit and axes) and ``scene`` are drawn.
    overlay : bool
        All motions at their own places instead of side by side.
    live : str, optional
        A ``retarget serve`` WebSocket address (``ws://HOST:PORT``): the page
        connects to it and draws each pose that arrives on the first motion's
        skeleton (its ``positions``), counting them in ``window.viewer.received()``.
    capsules : mapping of int to sequence of (int, int, float), optional
        Per motion index, capsules drawn on it (a robot's collision geometry,
        :func:`retarget.targets.robot.measures.robot_view`): the two points (joint or site
        indices) its segment runs between and its radius (the motion's unit),
        the three.js meshes ``"capsules k"`` (cylinders) and ``"capsule ends k"``
        (spheres, two a capsule).
    meshes : mapping of int to (bytes, int), optional
        Per motion index, a character's self-contained glTF (GLB, or a .gltf with data
        URIs) and the animation of it the motion is: the skinned mesh is drawn (three.js's
        GLTFLoader; the group ``"mesh k"``), playing that animation in step.
    """
    if not motions:
        raise RetargetError("nothing to view: give at least one motion")
    heights = []
    for _, m in motions:
        try:
            heights.append(height(m.skeleton) * UNITS.get(m.skeleton.unit, 1.0) / 100.0)
        except (RetargetError, KeyError):
            heights.append(1.0)
    spacing = 0.0 if overlay else 0.7 * max(heights)
    side = _across(motions[0][1])
    data: dict[str, Any] = {
        "title": title,
        "motions": [
            _motion_data(
                m, name, COLOURS[k % len(COLOURS)], k, spacing, side, (capsules or {}).get(k, ())
            )
            for k, (name, m) in enumerate(motions)
        ],
        "goals": [],
        "scene": [],
        "live": live,
    }
    for k, (glb, clip) in (meshes or {}).items():
        data["motions"][k]["mesh"] = base64.b64encode(glb).decode("ascii")
        data["motions"][k]["clip"] = int(clip)
    if overlay:
        for d in data["motions"]:
            d["offset"] = [0.0, 0.0, 0.0]
    if report:
        data["goals"] = _goals(report.get("goals") or {}, motions[-1][1])
        data["scene"] = list(report.get("scene") or [])
    script = resources.files("retarget.viz").joinpath("viewer.js").read_text(encoding="utf-8")
    payload = strict_json(data).replace("</", "<\\/")  # JSON.parse takes no NaN
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'>"
        f"<title>{_escape(title)}</title>\n<style>{_CSS}</style></head>\n<body>\n"
        f"{_CONTROLS}\n"
        f"<script id='data' type='application/json'>{payload}</script>\n"
        f"<script>{_three()}</script>\n<script>{script}</script>\n</body></html>\n"
    )


def live_motion(address: str, timeout: float = 10.0) -> tuple[str, Motion]:
    """The character of a ``retarget serve`` WebSocket (its skeleton message), at rest,
    named for the page."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect

    from ..io.sensors import skeleton_from_message

    try:
        with connect(address, open_timeout=timeout, max_size=None) as ws:
            header = json.loads(ws.recv(timeout=timeout))
    except (OSError, TimeoutError, WebSocketException, json.JSONDecodeError) as exc:
        raise RetargetError(f"{address}: no retarget serve stream there ({exc})") from None
    skeleton = skeleton_from_message(header, where=(address, 1))
    rest = Motion(
        skeleton,
        np.zeros((1, 3)),
        np.tile([1.0, 0.0, 0.0, 0.0], (1, skeleton.num_joints, 1)),
        float(header.get("fps", 30.0)),
    )
    return f"live: {header.get('method', 'stream')}", rest


def _across(motion: Motion) -> np.ndarray:
    """The horizontal unit vector across the way the motion travels (shown axes, Y up):
    side by side, the motions walk abreast."""
    try:
        up = up_axis(motion.skeleton, motion)
    except (RetargetError, KeyError):
        up = np.array([0.0, 1.0, 0.0])
    path = motion.root_position @ matrix_from_quat(quat_between(up, [0.0, 1.0, 0.0])).T
    flat = path[:, [0, 2]] - path[:, [0, 2]].mean(axis=0)
    if len(flat) < 2 or not np.isfinite(flat).all() or np.abs(flat).max() == 0.0:
        return np.array([1.0, 0.0, 0.0])
    _, _, vt = np.linalg.svd(flat, full_matrices=False)
    ahead = vt[0]
    return np.array([-ahead[1], 0.0, ahead[0]])


def _goals(goals: Mapping[str, Any], motion: Motion) -> list[dict]:
    """Goals of the report as frames × 3 float32 (NaN where free), in ``motion``'s frame."""
    out = []
    for name, frames in goals.items():
        arr = np.array([[np.nan] * 3 if f is None else f for f in frames], dtype="<f4")
        if arr.ndim != 2 or arr.shape[1] != 3:
            raise RetargetError(f"report goal {name!r}: expected frames of [x, y, z] or null")
        out.append({"name": name, "frames": len(arr), "positions": _b64(arr)})
    return out


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_viewer(
    path: str | os.PathLike,
    motions: Sequence[tuple[str, Motion]],
    *,
    report: Mapping[str, Any] | None = None,
    overlay: bool = False,
    inputs: Sequence[str | os.PathLike] = (),
    live: str | None = None,
    capsules: Mapping[int, Sequence[tuple[int, int, float]]] | None = None,
    meshes: Mapping[int, tuple[bytes, int]] | None = None,
) -> Path:
    """Write :func:`viewer_html` to ``path`` atomically (never over ``inputs``)."""
    title = " | ".join(name for name, _ in motions)
    html = viewer_html(
        motions,
        report=report,
        overlay=overlay,
        title=title,
        live=live,
        capsules=capsules,
        meshes=meshes,
    )
    return atomic_write(path, html, inputs=inputs)


_CSS = """
html,body{margin:0;height:100%;background:#f4f4f2;font:13px system-ui,sans-serif;overflow:hidden}
canvas{display:block}
#bar{position:fixed;left:0;right:0;bottom:0;display:flex;gap:8px;align-items:center;
padding:6px 10px;background:rgba(255,255,255,.92);border-top:1px solid #ccc}
#scrub{flex:1}
#legend{position:fixed;top:8px;left:10px;background:rgba(255,255,255,.85);padding:4px 8px;
border-radius:4px}
#legend span{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
#frame{min-width:9em;font-variant-numeric:tabular-nums}
"""

_CONTROLS = """<div id='legend'></div>
<div id='bar'>
<button id='play' title='play / pause (space)'>play</button>
<label>speed <select id='speed'><option>0.25</option><option>0.5</option>
<option selected>1</option><option>2</option><option>4</option></select></label>
<input id='scrub' type='range' min='0' max='0' value='0' step='1'>
<span id='frame'>frame 0</span>
<label><input id='follow' type='checkbox' checked> follow</label>
</div>"""
