"""Figures of motions and of what methods did to them."""

from .plots import plot_feet

__all__ = ["plot_feet"]
