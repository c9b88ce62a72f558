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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from collada import make

SOURCE = """  Romeo (Aldebaran Robotics / SoftBank Robotics), as redistributed by example-robot-data
  6.0.0 (robots/romeo_description/urdf/romeo_small.urdf; its README: "license: BSD",
  upstream https://github.com/laas/romeo and https://github.com/ros-aldebaran/romeo_robot).
"""


def main(source: Path, target: Path) -> None:
    pattern = r'<collision>(?:(?!</collision>).)*?/collision/([A-Za-z]+)\.dae".*?</collision>'
    meshes = source / "meshes" / "V1" / "collision"
    urdf = source / "urdf" / "romeo_small.urdf"
    make(urdf, pattern, lambda n: meshes / f"{n}.dae", target / "romeo.urdf", SOURCE)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
