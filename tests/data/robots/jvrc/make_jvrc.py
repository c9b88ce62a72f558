"""Make this folder from the JVRC-1 model (PyPI ``jvrc_description==1.1.1``; Apache 2.0):

    python make_jvrc.py PATH/TO/jvrc_description .

``urdf/jvrc1.urdf`` with its visuals dropped and each collision mesh (Collada, which
MuJoCo does not read) written as binary STL files, one per geometry of the file: the
convex hull of its vertices as the Collada scene places them, in metres and Z up. A
file of several geometries becomes as many ``<collision>`` elements. Everything else
as published.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from collada import make

SOURCE = """  JVRC-1 (the virtual humanoid of the Japan Virtual Robotics Challenge, AIST; this URDF
  CNRS-UM LIRMM, CNRS-AIST JRL and Stephane Caron), as published on PyPI in
  jvrc_description 1.1.1 (jvrc_description/urdf/jvrc1.urdf), Apache License 2.0
  (https://www.apache.org/licenses/LICENSE-2.0).
"""


def main(source: Path, target: Path) -> None:
    pattern = r'<collision>(?:(?!</collision>).)*?/meshes/([A-Za-z_]+)\.dae".*?</collision>'
    meshes = source / "meshes"
    urdf = source / "urdf" / "jvrc1.urdf"
    make(urdf, pattern, lambda n: meshes / f"{n}.dae", target / "jvrc.urdf", SOURCE)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
