"""Figures of motions and of what methods did to them."""

from .plots import plot_feet, plot_joint_angles

__all__ = ["plot_feet", "plot_joint_angles"]
