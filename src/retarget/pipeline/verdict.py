"""The verdict on a result: whether its measures say it is far from right.

A result can be wrong while every step succeeds (a body misread, a model whose
joints cannot take the performer's pose): the report says so (``report["verdict"]``)
and the run warns, so that no file is silently wrong (issue 39). Far off is
far beyond what the methods give on bodies they read right (the limits below, each
several times the acceptance figures):

* the feet skating more than three times the source's own skate (``skate_ratio``;
  a copy of the joints onto other proportions skates twice);
* the body's jerk more than three times the scaled source's (``jerk_ratio``);
* the limbs pointing more than 20 degrees from the performer's, the mean
  (``segment_direction_deg``, a robot's; the mapping's ``bone_direction_error_mean_deg``
  otherwise);
* links into each other on more than a quarter of the frames (``self_collision_share``);
* a sole more than 5 cm under the floor (``penetration_max_cm``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FAR_OFF", "verdict"]

#: measure → (the limit past which a result is far off, how to say it).
FAR_OFF: Mapping[str, tuple[float, str]] = {
    "skate_ratio": (3.0, "the feet skate {:.3g} times the source's"),
    "jerk_ratio": (3.0, "the body jerks {:.3g} times the scaled source's"),
    "segment_direction_deg": (20.0, "the limbs point {:.3g} degrees from the performer's"),
    "bone_direction_error_mean_deg": (20.0, "the bones point {:.3g} degrees from the source's"),
    "self_collision_share": (0.25, "links are into each other on {:.0%} of the frames"),
    "penetration_max_cm": (5.0, "a sole reaches {:.3g} cm under the floor"),
}


def verdict(report: Mapping[str, Any]) -> dict[str, Any]:
    """``{"far_off": bool, "because": [phrases]}`` from a run's report: its ``measures``
    and its ``mapping`` (module docstring)."""
    values = dict(report.get("measures") or {})
    if "segment_direction_deg" not in values and "mapping" in report:
        values["bone_direction_error_mean_deg"] = report["mapping"].get(
            "bone_direction_error_mean_deg"
        )
    because = [
        say.format(values[key])
        for key, (limit, say) in FAR_OFF.items()
        if isinstance(values.get(key), (int, float)) and values[key] > limit
    ]
    return {"far_off": bool(because), "because": because}
