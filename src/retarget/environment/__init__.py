"""The environment a character meets: floor, boxes, spheres and height fields.

This is the library's one environment (DESIGN.md, "Three ideas", idea 3).
Contacts, end-effector importance (Shin et al. 2001, eqs. 11-15: distances
between end-effectors and objects), terrain adaptation (Lee & Shin 1999,
§4.5: contact positions moved onto a rough terrain), penetration fixes and
support polygons (Tak & Ko 2005) all ask the same questions of a
:class:`Shape`, batched over any leading axes:

* ``distance(points)`` -- signed Euclidean distance to the surface, negative
  inside (below, for ground shapes);
* ``project(points)`` -- the closest point on the surface;
* ``normal(points)`` -- the outward unit normal there, which is also the
  gradient of the signed distance at the point;
* ``closest(points)`` -- all three at once (one pass);
* ``ground_height(xz)`` -- the top of the shape above ``(x, z)``: where a
  foot can stand, ``-inf`` where there is nothing.

Shapes are :class:`Floor`, :class:`Slope` (a tilted floor: a ramp, or a
capture volume whose floor is not level, :func:`retarget.humanoid.contacts.estimate_ground`),
:class:`HeightField`, :class:`Box`, :class:`Sphere`, and :class:`Scene`, their union.
World frame as everywhere (DESIGN.md, "Conventions"): right-handed, Y up; lengths in
the skeleton's unit. Values are immutable: frozen dataclasses holding read-only array copies.

Modules: :mod:`.shapes` (the contract and the solids, :func:`as_shape`),
:mod:`.heightfield` (terrain; its compiled kernels load on the first query). The file
format of a scene is :mod:`retarget.io.scene` (``--terrain FILE``).
"""

from . import shapes
from .heightfield import HeightField, random_height_field
from .shapes import *  # noqa: F403 -- the solids, re-exported under their __all__

__all__ = ["HeightField", "random_height_field"]
__all__ += shapes.__all__
