"""Filters: of captured sensor data (Shin et al. 2001, §3, :mod:`.kalman`), and the
unscented update that solves Tak & Ko's (2005) constraints (:mod:`.ukf`) and their
least-squares B-spline filter (:mod:`.lsq`)."""

from .kalman import (
    KalmanParameters,
    SensorEstimate,
    SensorFilter,
    estimate_noise,
    filter_stream,
    process_noise,
    still_window,
)
from .lsq import bspline_basis, lsq_filter
from .ukf import UnscentedResult, sigma_points, unscented_update

__all__ = [
    "KalmanParameters",
    "SensorEstimate",
    "SensorFilter",
    "UnscentedResult",
    "bspline_basis",
    "estimate_noise",
    "filter_stream",
    "lsq_filter",
    "process_noise",
    "sigma_points",
    "still_window",
    "unscented_update",
]
