"""Motion editing: multilevel B-spline displacement maps, hierarchical fitting (Lee & Shin 1999)."""

from .mba import BSpline, bspline_weights, fit_bspline, multilevel_fit, reach

__all__ = ["BSpline", "bspline_weights", "fit_bspline", "multilevel_fit", "reach"]
