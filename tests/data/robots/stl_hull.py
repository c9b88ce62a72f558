"""The steps the test robots' makers (``icub/make_icub.py``, ``romeo/make_romeo.py``,
``jvrc/make_jvrc.py``) share: a collision mesh written as the binary STL of its convex
hull, the URDF with its licence header."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
from scipy.spatial import ConvexHull


def write_hull(path: Path, points: np.ndarray) -> None:
    """A binary STL of the convex hull of ``points`` (V, 3), faces wound outward."""
    hull = ConvexHull(points)
    middle = points[hull.vertices].mean(axis=0)
    out = bytearray(b"convex hull".ljust(80, b" ")) + struct.pack("<I", len(hull.simplices))
    for tri in hull.simplices:
        a, b, c = points[tri]
        n = np.cross(b - a, c - a)
        if n @ (a - middle) < 0:
            b, c, n = c, b, -n
        n = n / (np.linalg.norm(n) or 1.0)
        out += struct.pack("<12fH", *n, *a, *b, *c, 0)
    path.write_bytes(bytes(out))


def write_urdf(path: Path, urdf: str, header: str) -> None:
    """``urdf`` with ``header`` (the licence and what was changed) after its XML
    declaration, written to ``path``; refused where a ``package://`` mesh is left."""
    if "package://" in urdf:
        raise SystemExit("a mesh left unconverted")
    declaration = re.match(r"<\?xml[^>]*\?>\n", urdf)
    end = declaration.end() if declaration else 0
    path.write_text(urdf[:end] + header + urdf[end:])
