"""Online filters of captured sensor data: Shin et al. 2001, §3 (:mod:`.kalman`)."""

from .kalman import (
    KalmanParameters,
    SensorEstimate,
    SensorFilter,
    estimate_noise,
    filter_stream,
    process_noise,
    still_window,
)

__all__ = [
    "KalmanParameters",
    "SensorEstimate",
    "SensorFilter",
    "estimate_noise",
    "filter_stream",
    "process_noise",
    "still_window",
]
