"""Make this folder from example-robot-data's iCub (PyPI ``example-robot-data==6.0.0``,
``cmeel.prefix/share/example-robot-data/robots/icub_description``; CC BY-SA 4.0):

    python make_icub.py PATH/TO/icub_description .

``robots/icub.urdf`` with its visuals and Gazebo blocks dropped and each collision mesh
(Collada, which MuJoCo does not read) written as a binary STL of its convex hull (what
MuJoCo collides anyway), Collada's ``Y_UP`` turned to Z up (read as written, iCub's legs lie
sideways and its feet point out to the side), under
``meshes/``; everything else as published.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from stl_hull import write_hull, write_urdf

HEADER = """<!--
  iCub (robotology/icub-models, iCub Facility, Istituto Italiano di Tecnologia), as
  redistributed by example-robot-data 6.0.0 (robots/icub_description/robots/icub.urdf),
  CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/).
  MODIFIED by the retarget project (make_icub.py beside this file): visuals and Gazebo
  blocks dropped; the collision meshes are binary STL files of the convex hulls of the
  published Collada meshes (Y_UP turned to Z up). This file is CC BY-SA 4.0 too.
-->
"""


def collada_points(path: Path) -> np.ndarray:
    """The vertex positions (V, 3) of a one-geometry Collada file, in Z-up axes."""
    text = path.read_text()
    found = re.search(r'<float_array id="[^"]*positions-array"[^>]*>([^<]*)<', text)
    if found is None:
        raise SystemExit(f"{path}: no positions")
    p = np.array(found.group(1).split(), dtype=float).reshape(-1, 3)
    if "<up_axis>Y_UP" in text:  # Y up: (x, y, z) -> (x, -z, y)
        p = np.stack([p[:, 0], -p[:, 2], p[:, 1]], axis=1)
    return p


def main(source: Path, target: Path) -> None:
    (target / "meshes").mkdir(parents=True, exist_ok=True)
    urdf = (source / "robots" / "icub.urdf").read_text()
    urdf = re.sub(r"\s*<visual>.*?</visual>", "", urdf, flags=re.S)
    urdf = re.sub(r"\s*<gazebo.*?</gazebo>", "", urdf, flags=re.S)

    def mesh(m: re.Match) -> str:
        name = m.group(1)
        points = collada_points(source / "meshes" / "upmc" / "collision" / f"{name}.dae")
        write_hull(target / "meshes" / f"{name}.stl", points)
        return f'filename="meshes/{name}.stl"'

    pattern = r'filename="package://[^"]*/meshes/upmc/collision/([a-z0-9_]+)\.dae"'
    urdf = re.sub(pattern, mesh, urdf)
    write_urdf(target / "icub.urdf", urdf, HEADER)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
