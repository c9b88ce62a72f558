"""Motion editing: multilevel B-spline displacement maps, hierarchical fitting (Lee & Shin 1999)."""

from ..tasks import Constraints
from .constraints import footplants, parse_constraints
from .edit import edit_motion, knot_spacings
from .fitting import fit_motion
from .mba import BSpline, bspline_weights, fit_bspline, multilevel_fit, reach
from .transition import transition, warp_path

__all__ = [
    "BSpline",
    "Constraints",
    "bspline_weights",
    "edit_motion",
    "fit_bspline",
    "fit_motion",
    "footplants",
    "knot_spacings",
    "multilevel_fit",
    "parse_constraints",
    "reach",
    "transition",
    "warp_path",
]
