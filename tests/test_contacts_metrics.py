"""Footplants, floor, the measures, and the copy baseline on real data."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from retarget.core.errors import RetargetError
from retarget.core.kinematics import positions
from retarget.humanoid.characters import make_character
from retarget.humanoid.contacts import _clean, _hysteresis, detect_contacts, estimate_floor
from retarget.humanoid.metrics import (
    Matched,
    evaluate,
    floating,
    penetration,
    skate,
    sliding_ratio,
    smoothness,
    tracking_error,
)
from retarget.humanoid.roles import find_roles, height
from retarget.methods import METHODS, get_method


def test_hysteresis_enters_on_enter_and_leaves_when_stay_fails():
    enter = np.array([0, 1, 0, 0, 0, 0, 1, 0, 0], bool)
    stay = np.array([1, 1, 1, 1, 0, 1, 1, 1, 0], bool)
    # starts at 1, holds while stay, restarts only at the next enter (6)
    np.testing.assert_array_equal(_hysteresis(enter, stay), [0, 1, 1, 1, 0, 0, 1, 1, 0])


def test_clean_drops_short_contacts_and_closes_short_gaps():
    mask = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1], bool)
    out = _clean(mask, min_len=3, max_gap=1)
    np.testing.assert_array_equal(out, [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1])


def test_contacts_on_lafan_walk(lafan):
    c = detect_contacts(lafan)
    names = [lafan.skeleton.point_names[p] for p in c.points]
    assert names == ["LeftFoot", "LeftToe", "RightFoot", "RightToe"]  # zero-length toe ends dropped
    assert abs(c.floor) < 1.0  # cm: the floor of this clip is y = 0
    assert 5.0 < c.clearance[0] < 8.0 and c.clearance[1] < 1.0  # ankle above the sole, toe on it
    # a walk: both feet planted most of the time, well over a hundred steps each
    assert 0.5 < c.mask.mean() < 0.85
    steps = [(np.diff(c.mask[:, k].astype(int)) == 1).sum() for k in range(4)]
    assert min(steps) > 100
    # planted points barely move: a few cm/s at most on average
    pos = positions(lafan)[:, c.points]
    speed = np.linalg.norm(np.diff(pos[:, :, [0, 2]], axis=0), axis=-1) * lafan.fps
    pairs = c.mask[1:] & c.mask[:-1]
    assert speed[pairs].mean() < 0.05 * c.height
    assert speed[~c.mask[1:]].mean() > 5 * speed[pairs].mean()
    literal = detect_contacts(lafan, relative_to_clearance=False)
    assert literal.mask[:, 0].mean() < 0.1  # ankles rarely "within 4 % of the floor" itself


def test_floor_estimate_follows_a_raised_floor(lafan):
    raised = lafan.replace(root_position=lafan.root_position + np.array([0.0, 12.5, 0.0]))
    assert detect_contacts(raised).floor == pytest.approx(
        detect_contacts(lafan).floor + 12.5, abs=1e-9
    )
    c = detect_contacts(lafan)
    pos = positions(lafan)
    assert estimate_floor(pos, c.points, lafan.fps, c.height) == pytest.approx(c.floor)


def test_measures_on_synthetic_arrays():
    fps, h = 10.0, 100.0
    pos = np.zeros((5, 1, 3))
    pos[:, 0, 0] = [0, 1, 2, 2, 2]  # slides 1 unit per frame for two frames
    mask = np.ones((5, 1), bool)
    assert skate(pos, mask, fps, h) == pytest.approx(np.mean([1, 1, 0, 0]) * fps / h * 100)
    assert sliding_ratio(pos, mask, h) == pytest.approx(0.5)
    pos[:, 0, 1] = [-2, 0, 1, 0, 0]
    assert penetration(pos, ("left",), 0.0, h) == pytest.approx(2 / 5)
    d_max, d_mean = tracking_error(np.zeros((2, 1, 3)), np.array([[[3.0, 4, 0]], [[np.nan] * 3]]))
    assert (d_max, d_mean) == (5.0, 5.0)
    ramp = np.linspace(0, 1, 20)[:, None, None] * np.ones((1, 2, 3))
    assert (
        smoothness(
            Matched(
                ramp + 0.01 * np.random.default_rng(0).normal(size=ramp.shape), ramp + 1e-3, 1, 1
            )
        )
        > 1
    )


@pytest.mark.parametrize(
    ("frames", "missing"),
    [
        (
            np.full(30, 100),
            {
                "skate_ratio": "feet do not skate",
                "smoothness": "no jerk",
                "smoothness_literal": "no jerk",
                "travel_ratio": "do not move along the floor",
            },
        ),
        (
            np.array([100]),
            {
                "skate_ratio": "no foot planted over two consecutive frames",
                "travel_ratio": "do not move along the floor",
            },
        ),
    ],
    ids=["still", "one frame"],
)
def test_measures_that_do_not_exist_are_none_with_the_reason(lafan, frames, missing):
    """A still clip has no skate or jerk to compare with, one frame no contact over two
    frames: those measures are None and ``<key>_note`` says why; every other is finite."""
    clip = lafan[frames]
    m = evaluate(clip, clip)
    assert {k for k, v in m.items() if v is None} == set(missing)
    for key, phrase in missing.items():
        assert phrase in m[f"{key}_note"] and m[f"{key}_note"].endswith("no ratio")
    notes = {k for k in m if k.endswith("_note")}
    assert notes == {f"{k}_note" for k in missing}
    assert all(np.isfinite(v) for k, v in m.items() if k not in missing and k not in notes)


def test_pose_deviation_across_hierarchies_is_none_with_the_reason(lafan):
    clip = lafan[:120]
    renamed = clip.replace(
        skeleton=dataclasses.replace(
            clip.skeleton, names=tuple(f"mixamorig:{n}" for n in clip.skeleton.names)
        )
    )
    m = evaluate(clip, renamed)
    assert m["pose_deviation_deg"] is None
    assert m["pose_deviation_deg_note"] == (
        "the skeletons share no joint name: their local rotations do not compare"
    )
    assert m["skate_ratio"] == pytest.approx(1.0) and m["smoothness"] == pytest.approx(1.0)


def test_smoothness_of_a_source_without_jerk():
    still = np.zeros((10, 2, 3))
    assert np.isnan(smoothness(Matched(still, still, 1.0, 1.0)))
    moving = still.copy()
    moving[5, 0, 0] = 1.0
    assert smoothness(Matched(moving, still, 1.0, 1.0)) == np.inf


def test_source_against_itself(lafan):
    m = evaluate(lafan[:600], lafan[:600])
    assert m["skate_ratio"] == pytest.approx(1.0)
    assert m["pose_deviation_deg"] < 1e-12 and m["smoothness"] == pytest.approx(1.0)
    assert m["skate_source"] > 0 and m["penetration_result"] == m["penetration_source"]


def test_copy_onto_blubby_skates_several_times_the_source(lafan):
    target = make_character(lafan.skeleton, preset="blubby")
    result = get_method("copy").run(lafan, target)
    m = evaluate(lafan, result.motion)
    # the problem every method must beat: several times the source's skate
    assert m["skate_ratio"] > 4.0
    # rotations are copied exactly; the feet rest on the floor as the source's do
    np.testing.assert_array_equal(result.motion.rotations, lafan.rotations)
    assert m["pose_deviation_deg"] < 1e-12
    assert abs(m["float_result"] - m["float_source"]) < 0.2
    assert result.report["height_ratio"] == pytest.approx(148.86 / 166.49, rel=1e-3)
    c = detect_contacts(lafan)
    assert floating(positions(result.motion)[:, c.points], c, m["height_result"]) == pytest.approx(
        m["float_result"]
    )


def test_copy_needs_the_source_joints(lafan, mocapbank):
    with pytest.raises(RetargetError, match="lacks the source joints"):
        get_method("copy").run(lafan, mocapbank.skeleton)
    assert "copy" in METHODS
    with pytest.raises(RetargetError, match="methods: copy"):
        get_method("nope")


def test_pop_finds_a_one_frame_jump_of_a_knee(lafan):
    """The source against itself: 0. A knee pushed 3 % of height out at one frame: the
    step into that frame is 3 % beyond the source's (and the step out of it too)."""
    from retarget.humanoid.metrics import pop

    walk = lafan[200:320]
    h = height(walk.skeleton)
    knees = [find_roles(walk.skeleton)[f"{s}_knee"] for s in ("left", "right")]
    p = positions(walk)[:, knees]
    assert pop(Matched(p, p, h, h)) == 0.0
    glitch = p.copy()
    glitch[60, 0, 0] += 0.03 * h
    assert pop(Matched(glitch, p, h, h)) == pytest.approx(3.0, abs=0.3)
    # a cut of the source (its own jump) into frame 60 leaves the step into it out, not
    # the step out of it
    assert pop(Matched(glitch, p, h, h, cuts=[60])) == pytest.approx(3.0, abs=0.3)
    assert pop(Matched(glitch, p, h, h, cuts=[60, 61])) < 0.3


def test_measures_against_the_source_on_the_result_body(lafan):
    """copy changes nothing but the proportions: measured against the source carried onto
    the result's body, it adds no pop and no jerk (0 and 1 to rounding), while the
    literal measures move with the proportions."""
    from retarget.humanoid.metrics import source_on_result

    walk = lafan[200:500]
    for preset in ("blubby", "sally"):
        target = make_character(walk.skeleton, preset=preset)
        result = get_method("copy").run(walk, target).motion
        carried = source_on_result(walk, result)
        assert carried is not None and carried.skeleton is result.skeleton
        m = evaluate(walk, result)
        assert m["pop"] < 1e-9 and m["smoothness"] == pytest.approx(1.0, abs=1e-9)
        assert abs(m["smoothness_literal"] - 1.0) > 0.01


def test_evaluate_pop_of_copy_is_small_and_of_a_flipped_knee_large(lafan):
    """copy onto sally (longer legs): no pop against the source on sally's body.
    The same result with a knee bent the other way for one frame: a pop of several %."""
    from retarget.core import quat

    walk = lafan[200:500]
    target = make_character(walk.skeleton, preset="sally")
    result = get_method("copy").run(walk, target).motion
    m = evaluate(walk, result)
    assert m["pop"] < 1e-9 and m["pop_literal"] >= m["pop"]
    knee = find_roles(target)["left_knee"]
    rot = result.rotations.copy()
    rot[150, knee] = quat.conjugate(rot[150, knee])  # the knee bent backward at one frame
    flipped = dataclasses.replace(result, rotations=rot)
    assert evaluate(walk, flipped)["pop"] > 3.0


def test_smoothness_leaves_the_source_cuts_out(lafan):
    """Two stretches of the walk joined (a cut): the source's jump would fill the
    denominator and hide the result's jerk; left out, a result with its own jitter shows it."""
    from retarget.core.motion import concatenate

    joined = concatenate([lafan[100:200], lafan[400:500]])
    rng = np.random.default_rng(4)
    noisy = dataclasses.replace(
        joined, root_position=joined.root_position + rng.normal(0.0, 0.3, (200, 3))
    )
    m = evaluate(joined, noisy)
    pos_s, pos_r = positions(joined), positions(noisy)
    h = height(joined.skeleton)
    cuts_in = smoothness(Matched(pos_r, pos_s, h, h))
    assert m["smoothness"] > 5.0 * cuts_in
    assert m["smoothness_literal"] == pytest.approx(m["smoothness"])  # (the same body)
