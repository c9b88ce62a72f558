"""Transitions (Lee & Shin 1999, §6): alignment, time warping, blending, footplants, CLI."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from retarget.cli import main
from retarget.core import quat
from retarget.core.errors import RetargetError
from retarget.core.kinematics import positions
from retarget.editing.transition import (
    _close_gaps,
    _combine,
    _smoothstep,
    _warp_times,
    transition,
    warp_path,
)
from retarget.humanoid.contacts import Contacts
from retarget.humanoid.roles import find_roles
from retarget.io import read_bvh, write_bvh

# -- time warping ---------------------------------------------------------------------------------


def _is_warp_path(path: np.ndarray, n: int, m: int) -> bool:
    steps = np.diff(path, axis=0)
    if path[0].tolist() != [0, 0] or path[-1].tolist() != [n - 1, m - 1]:
        return False
    allowed = {(1, 1), (1, 0), (0, 1)}
    if not all(tuple(s) in allowed for s in steps):
        return False
    # the slope constraint: never two (1, 0) or two (0, 1) steps in a row
    return all(
        not (tuple(s) == tuple(t) and tuple(s) != (1, 1)) for s, t in itertools.pairwise(steps)
    )


def test_warp_path_recovers_a_known_time_warp():
    # the second signal is the first played 1.5x faster in its middle
    t = np.linspace(0.0, 1.0, 40)
    warped = t + 0.12 * np.sin(np.pi * t)
    x, y = np.sin(6 * t), np.sin(6 * warped)
    path, total = warp_path(np.subtract.outer(x, y) ** 2)
    assert _is_warp_path(path, 40, 40)
    # y[j] = x(warped[j]): the path pairs frame j of y with the frame of x nearest warped[j]
    truth = np.interp(warped, t, np.arange(40.0))
    paired = np.array([path[path[:, 1] == j, 0].mean() for j in range(40)])
    assert np.abs(paired - truth).max() <= 1.5
    # the identity path costs more than the warped one
    assert total < 2 * np.sum((x - y) ** 2)


def test_warp_path_keeps_the_slope_constraint_on_random_costs():
    rng = np.random.default_rng(3)
    for n, m in [(1, 1), (2, 2), (5, 5), (17, 17), (12, 20), (20, 11)]:
        path, total = warp_path(rng.random((n, m)))
        assert _is_warp_path(path, n, m) and np.isfinite(total)


def test_warp_path_errors():
    with pytest.raises(ValueError, match="slope"):
        warp_path(np.ones((3, 7)))
    with pytest.raises(ValueError, match="non-empty"):
        warp_path(np.ones((0, 3)))


def test_warp_times_play_each_clip_at_its_speed_at_its_seam():
    rng = np.random.default_rng(7)
    for length in (5, 20, 60):
        path, _ = warp_path(rng.random((length, length)) + np.eye(length)[::-1])
        t_a, t_b = _warp_times(path, length)
        for times in (t_a, t_b):
            assert times[0] == pytest.approx(0.0) and times[-1] == pytest.approx(length - 1)
            assert np.all(np.diff(times) >= -1e-12)
        # a plays at its own speed where it stops, b at its own where it goes on (to the
        # discretisation of the Hermite curve; the path's own slopes there are 1/2 to 3/2)
        assert t_a[1] - t_a[0] == pytest.approx(1.0, abs=0.15)
        assert t_b[-1] - t_b[-2] == pytest.approx(1.0, abs=0.15)
    assert _warp_times(np.zeros((1, 2), np.intp), 1)[0].tolist() == [0.0]


def test_smoothstep_is_hermite():
    x = np.linspace(0, 1, 11)
    w = _smoothstep(x)
    assert w[0] == 0 and w[-1] == 1 and np.all(np.diff(w) > 0)
    np.testing.assert_allclose(w + w[::-1], 1.0)
    eps = 1e-6
    assert _smoothstep(eps) / eps < 1e-5  # zero slope at both ends (C1)


# -- contacts across the window -------------------------------------------------------------------


def _contacts(mask) -> Contacts:
    mask = np.asarray(mask, bool)
    k = mask.shape[1]
    return Contacts(np.arange(k), ("left",) * k, mask, 0.0, np.zeros(k), 100.0)


def test_combined_contacts_follow_the_heavier_clip_at_its_warped_time():
    fa = np.zeros((10, 1), bool)
    fa[[6, 7], 0] = True  # a planted at its frames 6, 7 (window frames 1, 2)
    fb = np.ones((8, 1), bool)
    fb[[3, 4], 0] = False  # b lifted at its frames 3, 4
    t_a = np.array([0.0, 1.0, 2.2, 3.0, 4.0])
    t_b = np.array([0.0, 0.6, 2.0, 3.4, 4.0])
    weight = np.array([0.1, 0.3, 0.45, 0.6, 0.9])
    mask = _combine(_contacts(fa), _contacts(fb), 5, t_a, t_b, weight)[:, 0]
    # a before the window (frames 0-4); inside it a at 5 + round(t_a) while w < 1/2
    # (frames 5, 6, 7), then b at round(t_b) (frames 3, 4); then b's own frames from 5 on
    assert mask.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1]


def test_short_gaps_touching_the_window_close():
    mask = np.array([[1, 0, 1, 1, 0, 0, 0, 1, 0, 1]], bool).T
    closed = _close_gaps(mask, slice(1, 3), 2)[:, 0]
    assert closed.tolist() == [1, 1, 1, 1, 0, 0, 0, 1, 0, 1]  # only the gap at the window
    closed = _close_gaps(mask, slice(0, 10), 2)[:, 0]
    assert closed.tolist() == [1, 1, 1, 1, 0, 0, 0, 1, 1, 1]  # a 3-frame gap stays


# -- the transition on real clips ---------------------------------------------------------------


def _facing(pos: np.ndarray, roles) -> np.ndarray:
    """Heading angle (radians) of the body: perpendicular to the hip line, on the floor."""
    across = pos[..., roles["left_hip"], :] - pos[..., roles["right_hip"], :]
    f = np.cross(across, [0.0, 1.0, 0.0])
    return np.arctan2(f[..., 0], f[..., 2])


def _max_step(pos: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(pos, axis=0), axis=-1).max())


PAIRS = {
    # turning walk into a near stand-still (the brief's example), and walk into walk
    "turn-to-stand": ((0, 300), (1000, 1400)),
    "walk-to-walk": ((1500, 1800), (2450, 2750)),
}


@pytest.fixture(scope="module", params=list(PAIRS))
def joined(request, lafan):
    (a0, a1), (b0, b1) = PAIRS[request.param]
    a, b = lafan[a0:a1], lafan[b0:b1]
    return a, b, transition(a, b, 20), transition(a, b, 20, fit=False)


def test_transition_layout_and_report(joined):
    a, b, result, _ = joined
    out, rep = result.motion, result.report
    assert out.num_frames == a.num_frames + b.num_frames - 20
    assert out.fps == a.fps and out.skeleton is a.skeleton
    assert rep["blend"] == 20 and rep["window"] == [a.num_frames - 20, a.num_frames]
    assert 20 <= rep["warp"]["path_length"] <= 39 and rep["warp"]["enabled"]
    assert len(rep["warp"]["a_times"]) == len(rep["warp"]["b_times"]) == 20
    levels = rep["fit"]["levels"]
    assert [lv["spacing"] for lv in levels] == [16.0, 8.0, 4.0, 2.0, 0.0]
    # % of height: the exact pass meets every footplant (Lee & Shin's Table 1: about 1 %)
    assert levels[-1]["max_error"] < 0.1 and levels[-1]["mean_error"] < 0.01
    json.dumps(rep)  # plain JSON
    start, stop = rep["fit"]["frames"]
    assert start < rep["window"][0] and stop > rep["window"][1]
    for name, goal in result.goals.items():
        assert goal.shape == (out.num_frames, 3), name
        assert not np.isfinite(goal[:start]).any() and not np.isfinite(goal[stop:]).any()


def test_transition_equals_a_then_aligned_b_outside_the_fitted_stretch(joined):
    a, b, result, unfitted = joined
    out, rep = result.motion, result.report
    w0, w1 = rep["window"]
    start, stop = rep["fit"]["frames"]
    # a, untouched, before the fitted stretch (before the window without fitting)
    np.testing.assert_array_equal(out.rotations[:start], a.rotations[:start])
    np.testing.assert_array_equal(out.root_position[:start], a.root_position[:start])
    np.testing.assert_array_equal(unfitted.motion.rotations[:w0], a.rotations[:w0])
    # b after it: same joint rotations, root turned by one rotation about y, heights kept
    for motion, first in ((out, stop), (unfitted.motion, w1)):
        after = slice(first, None)
        frames_b = slice(first - w0, None)
        np.testing.assert_allclose(
            motion.rotations[after, 1:], b.rotations[frames_b, 1:], atol=1e-12
        )
        turn = quat.multiply(motion.rotations[after, 0], quat.conjugate(b.rotations[frames_b, 0]))
        turn *= np.sign(turn[:, :1])
        np.testing.assert_allclose(turn, turn[:1].repeat(len(turn), 0), atol=1e-9)
        assert np.abs(turn[0, [1, 3]]).max() < 1e-9  # about y only
        np.testing.assert_allclose(
            motion.root_position[after, 1], b.root_position[frames_b, 1], atol=1e-9
        )
        # b's first frame, moved the same way, stands on a's first window frame
        r = turn[0]
        start_b = quat.rotate(r, b.root_position[0] - b.root_position[first - w0])
        start_b += motion.root_position[first]
        np.testing.assert_allclose(start_b[[0, 2]], a.root_position[w0, [0, 2]], atol=1e-6)
        yaw = np.degrees(2 * np.arctan2(r[2], r[0]))
        assert (yaw - rep["alignment"]["yaw_deg"] + 180) % 360 - 180 == pytest.approx(0, abs=1e-6)


def test_transition_heading_is_aligned(joined, lafan):
    a, b, result, _ = joined
    roles = find_roles(a.skeleton)
    w0 = result.report["window"][0]
    before = _facing(positions(a[w0 : w0 + 1])[0], roles)
    r = quat.exp(np.radians(result.report["alignment"]["yaw_deg"]) * np.array([0.0, 1, 0]))
    turned = quat.rotate(r, positions(b[:1])[0])
    after = _facing(turned, roles)
    assert abs((np.degrees(after - before) + 180) % 360 - 180) < 5.0
    # the clips themselves did face different ways
    assert abs(result.report["alignment"]["yaw_deg"]) > 20


def test_transition_is_continuous_at_the_seams(joined):
    a, b, result, _ = joined
    pos = positions(result.motion)
    own = max(_max_step(positions(a)), _max_step(positions(b)))
    w0, w1 = result.report["window"]
    start, stop = result.report["fit"]["frames"]
    held = result.report["fit"]["held_frames"]
    seams = {w0, w1, start, stop, held[3] + 1, held[-4]}
    for f in sorted(seams):
        step = np.linalg.norm(pos[f] - pos[f - 1], axis=-1).max()
        # the fitting bends the frames next to a seam too: within 10 % of the clips' own
        # fastest motion (a jump would be a multiple of it)
        assert step <= 1.1 * own, (f, step, own)


def test_transition_keeps_the_feet_planted_in_the_window(joined):
    _, _, result, unfitted = joined
    skate = result.report["skate"]
    assert skate["window_before"] == pytest.approx(unfitted.report["skate"]["window_before"])
    assert skate["window_before"] > 5 * max(skate["a"], skate["b"])  # blending slides
    assert skate["window_after"] <= min(skate["a"], skate["b"])
    assert skate["fitted_after"] <= 1.5 * max(skate["a"], skate["b"])
    assert skate["fitted_after"] < skate["fitted_before"]


def test_a_clip_joined_to_its_own_continuation_is_the_clip(lafan):
    # b starts with a's last 20 frames: aligned, they coincide; the warp is the diagonal
    a, b = lafan[1500:1800], lafan[1780:2100]
    result = transition(a, b, 20, fit=False)
    assert result.report["warp"]["path"] == [[i, i] for i in range(20)]
    np.testing.assert_allclose(result.report["alignment"]["yaw_deg"], 0.0, atol=1e-9)
    whole = lafan[1500:2100]
    np.testing.assert_allclose(result.motion.root_position, whole.root_position, atol=1e-9)
    np.testing.assert_allclose(quat.angle(result.motion.rotations, whole.rotations), 0.0, atol=1e-6)


def test_transition_without_warp_blends_frame_by_frame(lafan):
    a, b = lafan[1500:1800], lafan[2450:2750]
    result = transition(a, b, 12, warp=False, fit=False)
    rep = result.report
    assert not rep["warp"]["enabled"] and rep["warp"]["path_length"] == 12
    assert rep["warp"]["a_times"] == list(range(12)) == rep["warp"]["b_times"]
    assert "window_after" not in rep["skate"] and rep["fit"] == {"enabled": False}


def test_transition_on_another_skeleton_and_extreme_blends(mocapbank):
    a, b = mocapbank[:200], mocapbank[240:]
    result = transition(a, b, 15)
    assert result.motion.num_frames == 200 + 215 - 15
    assert result.report["skate"]["window_after"] <= result.report["skate"]["window_before"]
    # the whole of the shorter clip as the window; one frame
    whole = transition(a, b, 200, fit=False)
    assert whole.motion.num_frames == 215 and whole.report["window"] == [0, 200]
    one = transition(a, b, 1)
    assert one.motion.num_frames == 414 and one.report["warp"]["path_length"] == 1


def test_transition_resamples_b_to_a_frame_rate(lafan):
    a, b = lafan[1500:1800], lafan[2450:2750].resample(15.0)
    result = transition(a, b, 10, fit=False)
    again = b.resample(30.0)
    assert result.motion.fps == 30.0
    assert result.motion.num_frames == 300 + again.num_frames - 10
    assert result.report["resampled_b"] == {
        "from_fps": 15.0,
        "to_fps": 30.0,
        "frames_before": b.num_frames,
    }


def test_transition_errors(lafan, mocapbank):
    a, b = lafan[:300], lafan[1000:1400]
    with pytest.raises(RetargetError, match=r"joints only in a: .*LeftToe"):
        transition(a, mocapbank, 10)
    longer = a.skeleton.replace(offsets=a.skeleton.offsets * [1, 1.1, 1])
    with pytest.raises(RetargetError, match=r"offsets differ at .*LeftUpLeg"):
        transition(a, b.replace(skeleton=longer), 10)
    for blend in (0, -3, 301, 2.5, True):
        with pytest.raises(RetargetError, match="blend"):
            transition(a, b, blend)
    with pytest.raises(RetargetError, match="spacings"):
        transition(a, b, 10, spacings=())


# -- the command line -----------------------------------------------------------------------------


def test_cli_transition(capsys, lafan, tmp_path):
    first, second = tmp_path / "a.bvh", tmp_path / "b.bvh"
    write_bvh(first, lafan[1500:1800])
    write_bvh(second, lafan[2450:2750])
    out, report = tmp_path / "ab.bvh", tmp_path / "r.json"
    code = main(
        ["transition", str(first), str(second), "--blend", "20", "-o", str(out),
         "--report", str(report)]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "580 frames" in captured.out and "skate in the window" in captured.out
    motion = read_bvh(out)
    assert motion.num_frames == 580 and motion.skeleton.names == lafan.skeleton.names
    rep = json.loads(report.read_text())
    assert rep["blend"] == 20 and rep["output"] == str(out) and rep["fit"]["enabled"]


def _exit_code(argv: list[str]) -> int:
    """``main``'s return code, or the code argparse exits with."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--blend", "abc"], "invalid int value"),
        (["--blend", "0"], "blend must be between 1 and"),
        (["--blend", "5000"], "blend must be between 1 and"),
        ([], "--blend"),
    ],
)
def test_cli_transition_bad_arguments_exit_2_with_one_line(capsys, lafan, tmp_path, args, message):
    first, second = tmp_path / "a.bvh", tmp_path / "b.bvh"
    write_bvh(first, lafan[:60])
    write_bvh(second, lafan[100:160])
    out = tmp_path / "o.bvh"
    code = _exit_code(["transition", str(first), str(second), *args, "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1
    assert not out.exists()
