"""Collada meshes as the test robots' makers (``romeo/make_romeo.py``,
``jvrc/make_jvrc.py``) read them: each geometry's vertices placed by the file's scene,
in metres and Z up. MuJoCo does not read Collada; the makers write hulls of these
(:func:`hull_collisions`, the whole job: :func:`make`)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import numpy as np
from stl_hull import write_hull, write_urdf

C = "{http://www.collada.org/2005/11/COLLADASchema}"


def _node_matrix(node: ET.Element) -> np.ndarray:
    """A Collada node's local transform (4, 4): its transform elements in order."""
    m = np.eye(4)
    for el in node:
        tag = el.tag.replace(C, "")
        v = np.array((el.text or "").split(), dtype=float)
        t = np.eye(4)
        if tag == "translate":
            t[:3, 3] = v
        elif tag == "rotate":
            axis, angle = v[:3] / (np.linalg.norm(v[:3]) or 1.0), np.radians(v[3])
            k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
            t[:3, :3] = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
        elif tag == "scale":
            t[:3, :3] = np.diag(v)
        elif tag == "matrix":
            t = v.reshape(4, 4)
        else:
            continue
        m = m @ t
    return m


def collada_pieces(path: Path) -> list[np.ndarray]:
    """Each geometry's vertex positions (V, 3) as the scene places it, metres, Z up."""
    root = ET.parse(path).getroot()
    unit = root.find(f"{C}asset/{C}unit")
    metre = float(unit.get("meter", "1")) if unit is not None else 1.0
    up = root.find(f"{C}asset/{C}up_axis")
    positions = {}
    for geom in root.iter(f"{C}geometry"):
        mesh = geom.find(f"{C}mesh")
        vertices = mesh.find(f"{C}vertices") if mesh is not None else None
        if vertices is None:
            continue
        source_id = vertices.find(f"{C}input[@semantic='POSITION']").get("source")[1:]
        for src in mesh.iter(f"{C}source"):
            if src.get("id") == source_id:
                values = src.find(f"{C}float_array").text.split()
                positions[geom.get("id")] = np.array(values, dtype=float).reshape(-1, 3)
    out: list[np.ndarray] = []

    def walk(node: ET.Element, above: np.ndarray) -> None:
        here = above @ _node_matrix(node)
        for inst in node.findall(f"{C}instance_geometry"):
            p = positions.get(inst.get("url")[1:])
            if p is not None:
                out.append((np.c_[p, np.ones(len(p))] @ here.T)[:, :3])
        for child in node.findall(f"{C}node"):
            walk(child, here)

    for scene in root.iter(f"{C}visual_scene"):
        for node in scene.findall(f"{C}node"):
            walk(node, np.eye(4))
    turn = np.eye(3)
    if up is not None and up.text.strip() == "Y_UP":  # (x, y, z) -> (x, -z, y)
        turn = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    return [metre * p @ turn.T for p in out]


def hull_collisions(urdf: str, pattern: str, mesh: Callable[[str], Path], target: Path) -> str:
    """``urdf`` with each ``<collision>`` that ``pattern`` matches (its mesh's name as
    group 1, found at ``mesh(name)``) made one ``<collision>`` per geometry of the
    Collada file: the binary STL of its convex hull under ``target/meshes`` (a file of
    several geometries, one hull round all of them, would swell a link into the space
    between its parts)."""

    def collision(m: re.Match) -> str:
        whole, name = m.group(0), m.group(1)
        kept = []
        for k, points in enumerate(collada_pieces(mesh(name))):
            if len(points) < 4 or np.linalg.matrix_rank(points - points.mean(0)) < 3:
                continue
            file = f"{name}_{k}.stl"
            write_hull(target / "meshes" / file, points)
            kept.append(re.sub(r'filename="[^"]*"', f'filename="meshes/{file}"', whole))
        if not kept:
            raise SystemExit(f"{name}: no geometry")
        return "\n    ".join(kept)

    return re.sub(pattern, collision, urdf, flags=re.S)


#: What every maker changed, said in the URDF it writes (after its source's licence).
CHANGED = """  MODIFIED by the retarget project ({maker} beside this file): visuals dropped;
  each collision mesh is binary STL files of the convex hulls of the published Collada
  file's geometries, one per geometry.
"""


def make(urdf: Path, pattern: str, mesh: Callable[[str], Path], out: Path, source: str) -> None:
    """A maker's whole job: ``urdf`` with its visuals dropped and the collisions that
    ``pattern`` matches made hulls (:func:`hull_collisions`, under ``out``'s folder),
    written to ``out`` under a comment of ``source`` (where it came from, its licence)
    and :data:`CHANGED`."""
    header = "<!--\n" + source + CHANGED.format(maker=f"make_{out.stem}.py") + "-->\n"
    (out.parent / "meshes").mkdir(parents=True, exist_ok=True)
    text = re.sub(r"\s*<visual>.*?</visual>", "", urdf.read_text(), flags=re.S)
    write_urdf(out, hull_collisions(text, pattern, mesh, out.parent), header)
