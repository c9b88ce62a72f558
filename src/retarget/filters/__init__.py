"""Filters: of captured sensor data (Shin et al. 2001, §3, :mod:`.kalman`), and the
unscented update that solves Tak & Ko's (2005) constraints (:mod:`.ukf`)."""

from .kalman import (
    KalmanParameters,
    SensorEstimate,
    SensorFilter,
    estimate_noise,
    filter_stream,
    process_noise,
    still_window,
)
from .ukf import UnscentedResult, sigma_points, unscented_update

__all__ = [
    "KalmanParameters",
    "SensorEstimate",
    "SensorFilter",
    "UnscentedResult",
    "estimate_noise",
    "filter_stream",
    "process_noise",
    "sigma_points",
    "still_window",
    "unscented_update",
]
