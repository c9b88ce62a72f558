"""The verdict on a result (issue 39): far-off measures are said in the report and warned."""

from __future__ import annotations

import warnings

import pytest

from retarget.core.errors import RetargetWarning
from retarget.io.formats import read_motion
from retarget.pipeline import retarget
from retarget.pipeline.verdict import FAR_OFF, verdict


def test_each_far_off_measure_is_said():
    for key, (limit, _) in FAR_OFF.items():
        far = verdict({"measures": {key: 1.5 * limit}})
        near = verdict({"measures": {key: 0.5 * limit}})
        assert far["far_off"] and len(far["because"]) == 1 and not near["far_off"], key
    mapped = verdict(
        {"measures": {"skate_ratio": 1.0}, "mapping": {"bone_direction_error_mean_deg": 35.0}}
    )
    assert mapped["because"] == ["the bones point 35 degrees from the source's"]
    assert verdict({"measures": {"skate_ratio": None}})["far_off"] is False  # (a still clip)


def test_a_run_far_from_right_warns_and_says_why(data_dir):
    walk = read_motion(data_dir / "lafan_walk.bvh")[:60]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RetargetWarning)
        good = retarget(walk, "blubby", "hierarchical")
    assert good.report["verdict"] == {"far_off": False, "because": []}
    # the performer's arms swapped side for side by a map: plausible roles, a robot
    # whose arms cross its body, the limbs far from the performer's
    swap = {
        f"{a}_{r}": f"{b}{j}"
        for a, b in (("left", "Right"), ("right", "Left"))
        for r, j in (("shoulder", "Arm"), ("elbow", "ForeArm"), ("wrist", "Hand"))
    }
    g1 = data_dir.parent / "robots" / "unitree_g1" / "g1_29dof.xml"
    with pytest.warns(RetargetWarning, match="far from right onto .*g1_29dof.xml: the limbs"):
        bad = retarget(walk, g1, "hierarchical", overrides={"source": swap})
    assert bad.report["verdict"]["far_off"]
