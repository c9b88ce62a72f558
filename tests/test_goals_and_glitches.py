"""Online goals scaled by the limb they belong to, and capture glitches held out of them
(issue 40, items 2 and 3): a kick behind bends the target's knee as the performer's;
a foot that turns 70° in a hundredth of a second and back is not followed."""

from __future__ import annotations

import math
import warnings

import made_clips
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget.core import quat
from retarget.core.kinematics import forward_kinematics, positions
from retarget.core.skeleton import Skeleton
from retarget.filters.glitch import MAX_SPEED, GlitchGate, through_gate
from retarget.humanoid.characters import make_character
from retarget.humanoid.metrics import evaluate
from retarget.humanoid.roles import find_roles, height
from retarget.methods.omr import omr_retarget
from retarget.online.omr import omr_plan

KICK = 200  # made_clips.kick's start; it lasts 36 frames


@pytest.fixture(scope="module")
def walk(lafan):
    return lafan[:600]


@pytest.fixture(scope="module")
def kicked(walk):
    return made_clips.kick(walk, KICK)


def _knee(motion, side="right"):
    """Interior knee angle (degrees, F) and the ankle's height above the hip per height."""
    r = find_roles(motion.skeleton)
    p = positions(motion)
    hip, knee, ankle = (p[:, r[f"{side}_{j}"]] for j in ("hip", "knee", "ankle"))
    a, b = hip - knee, ankle - knee
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return np.degrees(np.arccos(np.clip(cos, -1, 1))), (ankle - hip)[:, 1] / height(
        motion.skeleton, r
    )


def test_the_made_kick_kicks(walk, kicked):
    """The fixture: the knee closes to about 30° (from about 160°) with the foot high."""
    knee, lift = _knee(kicked)
    window = slice(KICK, KICK + 36)
    assert knee[window].min() < 35.0 and _knee(walk)[0][window].min() > 100.0
    assert lift[window].max() > -0.1  # the ankle nearly as high as the hip


def test_foot_goals_rise_by_the_leg(walk, kicked):
    """``"reach"``'s foot goals: near the floor at the foot's scale about the floor (the
    sole meets it where the source's does); their lift, as far above the target's hips
    as the source's ankle is above its own times the ratio of the legs (blubby's 0.65),
    the foot of the target's size from there."""
    target = make_character(walk.skeleton, preset="blubby")
    plan = omr_plan(walk.skeleton, target, walk.root_position[0], walk.rotations[0])
    root, rot, goals, _, _, lifts, near = plan.inputs_and_reach(
        kicked.root_position, kicked.rotations
    )
    p_t = forward_kinematics(target, root, rot)[0]
    p_s = positions(kicked)
    rs, rt = find_roles(walk.skeleton), find_roles(target)
    k = plan.names.index("right_toe_tip")
    r, f = plan.limb_ratios[k], plan.foot_ratios[1]
    assert r == pytest.approx(
        target.path_length(rt["right_hip"], rt["right_ankle"])
        / walk.skeleton.path_length(rs["right_hip"], rs["right_ankle"])
    )
    tip, ankle = p_s[:, rs["right_toe_tip"], 1], p_s[:, rs["right_ankle"], 1]
    np.testing.assert_allclose(goals[:, k, 1], plan.floor + f * (tip - plan.floor))
    hips_s = p_s[:, [rs["left_hip"], rs["right_hip"]], 1].mean(axis=1)
    hips_t = p_t[:, [rt["left_hip"], rt["right_hip"]], 1].mean(axis=1)
    leg = hips_t + r * (ankle - hips_s) + f * (tip - ankle)
    np.testing.assert_allclose(goals[:, k, 1] + lifts[:, k], leg)
    # near the floor on the walk's stance, not at the kick's top
    assert near[KICK + 18, k] == 0.0 and near[:, k].max() == 1.0


@pytest.mark.parametrize("method", ["omr", "puppetry"])
@pytest.mark.parametrize("preset", ["blubby", "sally"])
def test_a_kick_behind_bends_the_knee_as_the_performer(walk, kicked, preset, method):
    """The issue's kick: the knee's least angle within 12° of the performer's, the knee
    opening no faster than the performer's by more than 30 %, and (blubby, legs 65 % of
    the performer's) no knee or ankle stepping more than 1.5 % of height beyond the
    source's in a frame. omr with the feet's heights scaled by the feet's ratio (before
    issue 40): blubby's knee closed to 2.6° and snapped open; puppetry with the
    performer's heights: blubby's thigh swung back to reach them (a knee step of 1.57 %
    of height beyond the source's; the lift at the legs' scale, ``leg_lift``: 0.70)."""
    from retarget.methods.puppetry import puppetry_retarget

    target = make_character(walk.skeleton, preset=preset)
    run = omr_retarget if method == "omr" else puppetry_retarget
    result = run(kicked, target).motion
    window = slice(KICK, KICK + 36)
    k_src, k_res = _knee(kicked)[0][window], _knee(result)[0][window]
    assert abs(k_res.min() - k_src.min()) < 12.0
    assert np.abs(np.diff(k_res)).max() <= 1.3 * np.abs(np.diff(k_src)).max()
    m = evaluate(kicked, result)
    if preset == "blubby":
        assert m["pop_literal"] <= 1.5


@settings(max_examples=200, deadline=None)
@given(
    toe=st.floats(0.0, 1.0),
    ankle=st.floats(0.0, 1.0),
    dt=st.floats(-0.01, 0.01),
    da=st.floats(-0.01, 0.01),
)
def test_the_toe_share_fades_with_the_foot(toe, ankle, dt, da):
    """A foot's goal moves toward the toe's ankle position by ``w_toe / max(w_toe +
    w_ankle, 1)``: the toe's share of the foot where the two weigh 1 or more, the toe's
    own importance below, in [0, 1], and never faster than the importances move
    (Lipschitz 1 in each: no 0/0 as a foot leaves the floor)."""
    from retarget.online.puppetry import toe_share

    s = float(toe_share(toe, ankle))
    assert 0.0 <= s <= 1.0
    if toe + ankle >= 1.0:
        assert s == pytest.approx(toe / (toe + ankle), abs=1e-12)
    else:
        assert s == toe
    t2, a2 = min(max(toe + dt, 0.0), 1.0), min(max(ankle + da, 0.0), 1.0)
    assert abs(float(toe_share(t2, a2)) - s) <= abs(t2 - toe) + abs(a2 - ankle) + 1e-12


@settings(max_examples=200, deadline=None)
@given(
    y=st.floats(-0.2, 0.6),
    k=st.floats(0.3, 2.0),
    low=st.floats(0.0, 0.1),
    width=st.floats(0.01, 0.2),
)
def test_the_lift_at_the_legs_scale(y, k, low, width):
    """Puppetry's foot goals rise at the legs' scale (``leg_lift``): the performer's
    height up to ``low``, ``k`` times each rise beyond ``low + width``, in between a
    slope between 1 and ``k`` (numerical), continuous with it at both ends."""
    from retarget.online._kernels.puppetry import leg_lift

    high = low + width
    f = leg_lift(y, k, low, high)
    if y <= low:
        assert f == y
    if y > high:
        above = leg_lift(high, k, low, high)
        assert f == pytest.approx(above + k * (y - high), abs=1e-12)
    h = 1e-6
    slope = (leg_lift(y + h, k, low, high) - leg_lift(y - h, k, low, high)) / (2 * h)
    assert min(1.0, k) - 1e-6 <= slope <= max(1.0, k) + 1e-6
    assert leg_lift(y, 1.0, low, high) == y
    for edge in (low, high):  # C1 at the band's ends
        left = (leg_lift(edge, k, low, high) - leg_lift(edge - h, k, low, high)) / h
        right = (leg_lift(edge + h, k, low, high) - leg_lift(edge, k, low, high)) / h
        assert abs(left - right) < 1e-3 * (1 + abs(k))


def test_puppetry_carries_a_kick_without_a_jerk(walk, kicked):
    """The kick onto blubby (legs 65 % of the performer's) by puppetry: jerk at most 1.5
    times the source's (issue 40). With the toe's share ``w_toe / (w_toe + w_ankle)`` the
    kicking foot's goal jumped 4.5 % of height sideways the frame the toe's importance
    fell to 0 after the ankle's (jerk 1.85)."""
    from retarget.methods.puppetry import puppetry_retarget

    target = make_character(walk.skeleton, preset="blubby")
    result = puppetry_retarget(kicked, target).motion
    assert evaluate(kicked, result)["smoothness_literal"] <= 1.5


def test_hand_goals_about_the_shoulder_by_the_arm(walk):
    """``setup="full"``: a hand goal is the target's shoulder plus the source's hand from
    its shoulder times the ratio of the arms."""
    target = make_character(walk.skeleton, preset="blubby")
    plan = omr_plan(walk.skeleton, target, walk.root_position[0], walk.rotations[0], setup="full")
    clip = walk[:50]
    root, rot, goals, _ = plan.inputs(clip.root_position, clip.rotations)
    p_t = forward_kinematics(target, root, rot)[0]
    p_s = positions(clip)
    rs, rt = find_roles(walk.skeleton), find_roles(target)
    k = plan.names.index("left_hand_tip")
    r = target.path_length(rt["left_shoulder"], rt["left_hand_tip"]) / walk.skeleton.path_length(
        rs["left_shoulder"], rs["left_hand_tip"]
    )
    assert plan.limb_ratios[k] == pytest.approx(r)
    expected = p_t[:, rt["left_shoulder"]] + r * (
        p_s[:, rs["left_hand_tip"]] - p_s[:, rs["left_shoulder"]]
    )
    np.testing.assert_allclose(goals[:, k], expected, atol=1e-9)


# -- the gate ------------------------------------------------------------------------------


def test_the_gate_lets_a_real_clip_through(lafan):
    """Nothing of a real walk is held: every frame as it is."""
    gate = GlitchGate(lafan.skeleton, lafan.fps)
    (out,) = through_gate(gate, lafan.rotations)
    np.testing.assert_array_equal(out, lafan.rotations)
    assert gate.held == 0


@settings(max_examples=40, deadline=None)
@given(
    start=st.integers(5, 40),
    length=st.integers(1, 6),
    degrees=st.floats(40.0, 170.0),
    flip=st.booleans(),
)
def test_a_glitch_is_held_and_a_real_jump_followed(start, length, degrees, flip):
    """At 120 Hz (20.8° a frame at most): a joint turned ``degrees`` for ``length``
    frames (at most the hold, 12 frames) and back is held where it was, exactly; the
    same turn kept is followed after the hold, never faster than the limit, and
    reached. A quaternion's sign is no turn; a twist about the joint's bone is none."""
    fps, n = 120.0, 80
    chain = Skeleton(
        ("a", "b"),
        np.array([-1, 0]),
        np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
        site_names=("tip",),
        site_parents=np.array([1]),
        site_offsets=np.array([[1.0, 0.0, 0.0]]),
    )
    rng = np.random.default_rng(start)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    base = np.tile(quat.quat_from_rotvec(0.3 * axis), (n, 2, 1))
    kick = quat.quat_from_rotvec(math.radians(degrees) * np.array([0.0, 0.0, 1.0]))
    glitched = base.copy()
    glitched[start : start + length, 1] = quat.multiply(base[0, 1], kick)
    if flip:
        glitched[:, 0] *= -1.0
    gate = GlitchGate(chain, fps)
    (out,) = through_gate(gate, glitched)
    np.testing.assert_allclose(out[:, 1], base[:, 1], atol=1e-12)
    assert gate.held == length
    twisted = base.copy()  # about the tip's bone, (1, 0, 0): nothing moves
    twisted[start:, 1] = quat.multiply(
        base[0, 1], quat.quat_from_rotvec(math.radians(degrees) * np.array([1.0, 0.0, 0.0]))
    )
    (out,) = through_gate(GlitchGate(chain, fps), twisted)
    np.testing.assert_array_equal(out, twisted)
    kept = base.copy()
    kept[start:, 1] = quat.multiply(base[0, 1], kick)
    (out,) = through_gate(GlitchGate(chain, fps), kept)
    limit = MAX_SPEED / fps
    tip = quat.rotate(out[:, 1], np.array([1.0, 0.0, 0.0]))
    turns = np.arccos(np.clip((tip[1:] * tip[:-1]).sum(-1), -1.0, 1.0))
    assert (turns <= limit + 1e-9).all()
    hold = round(0.1 * fps)
    np.testing.assert_allclose(out[start : start + hold, 1], base[start : start + hold, 1])
    catch_up = hold + math.ceil(math.radians(degrees) / limit)
    if start + catch_up < n:
        assert quat.angle(out[start + catch_up, 1], kept[start + catch_up, 1]) < 1e-9


def test_the_gate_is_causal(lafan):
    made = made_clips.glitch(lafan[:200], 100, length=2, degrees=120.0)
    (a,) = through_gate(GlitchGate(made.skeleton, made.fps), made.rotations[:120])
    (b,) = through_gate(GlitchGate(made.skeleton, made.fps), made.rotations)
    np.testing.assert_array_equal(a, b[:120])


def test_omr_does_not_follow_a_glitch(data_dir):
    """CMU at 120 Hz, the left foot turned 70° on three frames (its toe tip jumps 16 %
    of height): omr's ankle steps no farther than the source's ankle (0.9 % of height
    in the issue's capture, 4.1 % for omr then); its report counts the held joint-frames."""
    from retarget.io import read_bvh

    cmu = read_bvh(data_dir / "real" / "fairmotion_cmu_01_01.bvh")[:600]
    glitched = made_clips.glitch(cmu, 300)
    assert made_clips.toe_tip_jump(glitched, 300) > 0.1
    target = make_character(cmu.skeleton, preset="blubby")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = omr_retarget(glitched, target)
        off = omr_retarget(glitched, target, glitch_speed=0.0)
    assert result.report["glitches"]["frames"] == 3  # (the foot, and the toe it carries)
    r = find_roles(target)
    rs = find_roles(cmu.skeleton)

    def ankle_step(m, roles):
        p = positions(m)[298:305, roles["left_ankle"]]
        return np.linalg.norm(np.diff(p, axis=0), axis=1).max() / height(m.skeleton, roles)

    src = ankle_step(glitched, rs)
    assert ankle_step(result.motion, r) <= src + 0.005
    assert ankle_step(off.motion, r) > src + 0.02  # without the gate: the pop


def test_a_limb_whose_goals_are_out_of_reach_is_given_up(walk):
    """The paper's goals (the source's own toe tips, unscaled) onto a body a third of
    the source's size: beyond the legs' reach on nearly every frame. After a second
    omr gives the legs up (the report says so, with the share of frames) and they take
    the performer's joint angles, the secondary task; nothing is NaN."""
    import dataclasses

    small = make_character(walk.skeleton, preset="blubby")
    small = dataclasses.replace(
        small, offsets=small.offsets / 3.0, site_offsets=small.site_offsets / 3.0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = omr_retarget(walk[:300], small, goals="source")
    rep = result.report
    assert set(rep["given_up"]) == {"left_toe_tip", "right_toe_tip"}
    assert min(rep["beyond_reach_share"].values()) > 0.8
    assert np.isfinite(result.motion.rotations).all()
    legs = [small.index(n) for n in ("LeftLeg", "RightLeg", "LeftUpLeg", "RightUpLeg")]
    late = slice(150, 300)
    turn = quat.angle(result.motion.rotations[late][:, legs], walk.rotations[late][:, legs])
    assert np.degrees(turn).mean() < 5.0


def test_puppetry_does_not_follow_a_glitch(data_dir):
    """The same glitch through the sensors (Shin et al.'s input): held ahead of the
    Kalman filter (which spread it over a few frames), the ankle steps no farther than
    the source's."""
    from retarget.io import read_bvh
    from retarget.methods.puppetry import puppetry_retarget

    cmu = read_bvh(data_dir / "real" / "fairmotion_cmu_01_01.bvh")[:600]
    glitched = made_clips.glitch(cmu, 300)
    target = make_character(cmu.skeleton, preset="blubby")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = puppetry_retarget(glitched, target)
        off = puppetry_retarget(glitched, target, glitch_speed=0.0)
    assert result.report["glitches"]["frames"] == 3
    r, rs = find_roles(target), find_roles(cmu.skeleton)

    def ankle_step(m, roles):
        p = positions(m)[298:310, roles["left_ankle"]]
        return np.linalg.norm(np.diff(p, axis=0), axis=1).max() / height(m.skeleton, roles)

    src = ankle_step(glitched, rs)
    assert ankle_step(result.motion, r) <= src + 0.005
    assert ankle_step(off.motion, r) > src + 0.01


def test_the_sensor_gate_turns_the_held_subtree_rigidly(lafan):
    """A foot glitched in the sensors: the foot's and the toe's sensors come back where
    the last frame's foot puts them, each at its measured offset from its parent; every
    other sensor is as measured, exactly; a frame with a lost sensor goes through."""
    from retarget.filters.glitch import SensorGate

    clip = lafan[:40]
    glitched = made_clips.glitch(clip, 20, length=2, degrees=150.0)
    pos, world = forward_kinematics(clip.skeleton, glitched.root_position, glitched.rotations)
    j = clip.skeleton.num_joints
    gate = SensorGate(clip.skeleton, clip.fps)
    roles = find_roles(clip.skeleton)
    foot = roles["left_ankle"]
    below = [k for k in range(j) if foot in clip.skeleton.chain(k)]
    for f in range(25):
        p, q = gate.step(pos[f, :j], world[f, :j])
        others = [k for k in range(j) if k not in below]
        np.testing.assert_array_equal(p[others], pos[f, others])
        if f in (20, 21):
            # held: the foot's local rotation of frame 19 on this frame's leg
            assert gate.gate.last_held[foot]
            rot = clip.rotations[f].copy()
            rot[foot] = clip.rotations[19, foot]
            expected = forward_kinematics(clip.skeleton, clip.root_position[f], rot)[0]
            np.testing.assert_allclose(p[below], expected[below], atol=1e-9)
    lost = world[24, :j].copy()
    lost[3] = np.nan
    p, q = gate.step(pos[24, :j], lost)
    assert np.isnan(q[3]).all() and not gate.gate.last_held.any()


@settings(max_examples=60, deadline=None)
@given(y=st.floats(-1.0, 1.0), band=st.floats(0.001, 0.1))
def test_the_soft_floor_of_stage_9(y, band):
    """Stage 9's soft floor for the feet: the gap given is never less than the foot's
    own, never deeper than ``band`` under the clearance, the foot's own from the
    clearance up, and continuous with its slope there (no step where a foot crosses
    it); ``band`` 0, a hand's: exactly on the clearance."""
    from retarget.online._kernels.puppetry import penetration_gap

    g = penetration_gap(y, band)
    assert g >= y - 1e-15 and g >= -band
    if y >= 0:
        assert g == y
    h = 1e-7 * band
    slope = (penetration_gap(h, band) - penetration_gap(-h, band)) / (2 * h)
    assert abs(slope - 1.0) < 1e-4
    assert penetration_gap(min(y, -1e-12), 0.0) == 0.0


def _bends(motion):
    """Interior angle of each knee (degrees, (F, 2))."""
    r = find_roles(motion.skeleton)
    p = positions(motion)
    out = []
    for side in ("left", "right"):
        hip, knee, ankle = (p[:, r[f"{side}_{j}"]] for j in ("hip", "knee", "ankle"))
        u, v = knee - hip, ankle - knee
        cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
        out.append(np.degrees(np.arccos(np.clip(cos, -1, 1))))
    return np.stack(out, axis=1)


def test_the_floor_fix_leaves_a_reached_foot_where_it_is(data_dir):
    """Stage 9 re-solves a foot's limb for a point on the segment to where the foot
    already is: exactly (no soft reach a second time), so a foot crossing its
    clearance keeps its knee. With the soft reach there too, the re-solve bent a
    near-straight knee some 4° more than the blended pose on the frames the foot was
    under its clearance, and it sprang back the frame it was not (the Emilya walk at
    120 Hz onto blubby: a knee's bend stepped 3.2° beyond the performer's in a frame,
    jerk 1.73 times the source's; 1.1° and 1.34 without)."""
    from retarget.io import read_bvh
    from retarget.methods.puppetry import puppetry_retarget

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        walk = read_bvh(data_dir / "real" / "pymo_emilya_walk.bvh")[:600]
    target = make_character(walk.skeleton, preset="blubby")
    result = puppetry_retarget(walk, target).motion
    excess = np.abs(np.diff(_bends(result), axis=0)) - np.abs(np.diff(_bends(walk), axis=0))
    assert excess.max() < 1.5
