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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from collada import hull_collisions
from stl_hull import write_urdf

HEADER = """<!--
  Romeo (Aldebaran Robotics / SoftBank Robotics), as redistributed by example-robot-data
  6.0.0 (robots/romeo_description/urdf/romeo_small.urdf; its README: "license: BSD",
  upstream https://github.com/laas/romeo and https://github.com/ros-aldebaran/romeo_robot).
  MODIFIED by the retarget project (make_romeo.py beside this file): visuals dropped;
  each collision mesh is binary STL files of the convex hulls of the published Collada
  file's geometries, one per geometry.
-->
"""


def main(source: Path, target: Path) -> None:
    (target / "meshes").mkdir(parents=True, exist_ok=True)
    urdf = (source / "urdf" / "romeo_small.urdf").read_text()
    urdf = re.sub(r"\s*<visual>.*?</visual>", "", urdf, flags=re.S)
    pattern = r'<collision>(?:(?!</collision>).)*?/collision/([A-Za-z]+)\.dae".*?</collision>'
    meshes = source / "meshes" / "V1" / "collision"
    urdf = hull_collisions(urdf, pattern, lambda name: meshes / f"{name}.dae", target)
    write_urdf(target / "romeo.urdf", urdf, HEADER)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
