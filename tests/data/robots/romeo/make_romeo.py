"""Make this folder from example-robot-data's Romeo (PyPI ``example-robot-data==6.0.0``,
``cmeel.prefix/share/example-robot-data/robots/romeo_description``; BSD):

    python make_romeo.py PATH/TO/romeo_description .

``urdf/romeo_small.urdf`` (Romeo without its fingers, as its package gives it) with
its visuals dropped and each collision mesh (Collada, which MuJoCo does not read)
written as binary STL files, one per geometry of the file: the convex hull of its
vertices placed by the Collada scene's node transforms (translate, rotate, scale,
matrix, nested), in the file's unit and up axis turned to metres and Z up. A file
of several geometries becomes as many ``<collision>`` elements (one hull round all
of them would swell a link into the space between its parts). Everything else as
published.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stl_hull import write_hull, write_urdf

HEADER = """<!--
  Romeo (Aldebaran Robotics / SoftBank Robotics), as redistributed by example-robot-data
  6.0.0 (robots/romeo_description/urdf/romeo_small.urdf; its README: "license: BSD",
  upstream https://github.com/laas/romeo and https://github.com/ros-aldebaran/romeo_robot).
  MODIFIED by the retarget project (make_romeo.py beside this file): visuals dropped;
  each collision mesh is binary STL files of the convex hulls of the published Collada
  file's geometries, one per geometry.
-->
"""
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


def main(source: Path, target: Path) -> None:
    (target / "meshes").mkdir(parents=True, exist_ok=True)
    urdf = (source / "urdf" / "romeo_small.urdf").read_text()
    urdf = re.sub(r"\s*<visual>.*?</visual>", "", urdf, flags=re.S)

    def collision(m: re.Match) -> str:
        whole, name = m.group(0), m.group(1)
        pieces = collada_pieces(source / "meshes" / "V1" / "collision" / f"{name}.dae")
        kept = []
        for k, points in enumerate(pieces):
            if len(points) < 4 or np.linalg.matrix_rank(points - points.mean(0)) < 3:
                continue
            file = f"{name}_{k}.stl"
            write_hull(target / "meshes" / file, points)
            kept.append(re.sub(r'filename="[^"]*"', f'filename="meshes/{file}"', whole))
        if not kept:
            raise SystemExit(f"{name}: no geometry")
        return "\n    ".join(kept)

    pattern = r'<collision>(?:(?!</collision>).)*?/collision/([A-Za-z]+)\.dae".*?</collision>'
    urdf = re.sub(pattern, collision, urdf, flags=re.S)
    write_urdf(target / "romeo.urdf", urdf, HEADER)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
