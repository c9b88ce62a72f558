"""The source's ground (level or a slope), plant speeds, and the smoothed exact pass of
the hierarchical method (issue 24)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from retarget.core import quat
from retarget.core.kinematics import positions
from retarget.editing.fitting import _smooth_corrections, _smooth_envelope
from retarget.environment import Floor, Slope
from retarget.humanoid.characters import make_character
from retarget.humanoid.contacts import detect_contacts, estimate_ground
from retarget.humanoid.metrics import evaluate
from retarget.humanoid.roles import height
from retarget.io.scene import read_environment, write_environment
from retarget.methods import get_method
from retarget.methods.hierarchical import plant_speeds

# -- the slope shape ----------------------------------------------------------------------


def test_slope_distance_closest_and_ground_agree():
    rng = np.random.default_rng(1)
    ramp = Slope(2.0, [0.3, -0.1])
    p = rng.normal(scale=5.0, size=(200, 3))
    c = ramp.closest(p)
    # the closest point lies on the plane, the normal is the plane's, distances signed
    np.testing.assert_allclose(c.point[:, 1], ramp.ground_height(c.point[:, [0, 2]]), atol=1e-12)
    np.testing.assert_allclose(p - c.point, c.distance[:, None] * c.normal, atol=1e-12)
    above = p[:, 1] > ramp.ground_height(p[:, [0, 2]])
    assert np.array_equal(c.distance > 0, above)
    flat = Slope(1.5, [0.0, 0.0])
    np.testing.assert_allclose(flat.distance(p), Floor(1.5).distance(p), atol=1e-12)


def test_slope_round_trips_through_a_scene_file(tmp_path):
    from retarget.environment import Scene

    path = tmp_path / "ramp.json"
    write_environment(path, Scene((Slope(0.5, [0.1, 0.2]),)))
    read = read_environment(path)
    (shape,) = read.shapes
    assert isinstance(shape, Slope)
    assert shape.height == 0.5 and shape.slope.tolist() == [0.1, 0.2]


# -- the source's ground ------------------------------------------------------------------


def _tilted(motion, degrees: float):
    """The motion turned about x by ``degrees``: its floor becomes a slope along z."""
    turn = quat.quat_from_rotvec(np.radians([degrees, 0.0, 0.0]))
    rot = motion.rotations.copy()
    rot[:, 0] = quat.multiply(turn, rot[:, 0])
    return dataclasses.replace(
        motion, root_position=quat.rotate(turn, motion.root_position), rotations=rot
    )


def test_a_level_capture_has_a_level_floor(lafan, mocapbank):
    for clip in (lafan[:1200], mocapbank):
        ground = estimate_ground(clip, detect_contacts(clip))
        assert isinstance(ground, Floor)


def test_a_tilted_capture_has_its_slope(lafan):
    """The walk turned 1.5° about x walks on a floor rising along z: found, to 0.1°."""
    walk = _tilted(lafan[:1200], 1.5)
    ground = estimate_ground(walk, detect_contacts(walk))
    assert isinstance(ground, Slope)
    rise = np.degrees(np.arctan(ground.slope[1]))
    assert abs(rise - (-1.5)) < 0.1 and abs(ground.slope[0]) < 0.005


def test_hierarchical_plants_feet_on_a_tilted_floor(lafan):
    """On the 1.5°-tilted walk the footplants lie on the slope: the result skates as
    on the level walk (within 3 %), its footplants are met, and each planted point
    keeps one clearance above the slope."""
    level_walk = lafan[200:500]
    walk = _tilted(level_walk, 1.5)
    target = make_character(walk.skeleton, preset="blubby")
    result = get_method("hierarchical").run(walk, target)
    m = evaluate(walk, result.motion, goals=result.goals)
    level = get_method("hierarchical").run(level_walk, target)
    m_level = evaluate(level_walk, level.motion, goals=level.goals)
    assert m["skate_ratio"] == pytest.approx(m_level["skate_ratio"], rel=0.03)
    assert m["tracking_error_max"] < 0.1
    ground = estimate_ground(walk, detect_contacts(walk))
    for name, goal in result.goals.items():
        have = np.isfinite(goal).all(axis=1)
        gap = goal[have, 1] - ground.ground_height(goal[have][:, [0, 2]])
        assert np.ptp(gap) < 0.02 * height(target), name  # one clearance along the slope


# -- plant speeds -------------------------------------------------------------------------


def test_plant_speeds_follow_a_capture_whose_feet_drift(lafan):
    """A clean capture's planted feet: the least speed (5 %/s). The same walk with every
    foot point drifting 10 %/s of height while planted: raised toward 3 times that."""
    walk = lafan[200:500]
    contacts = detect_contacts(walk)
    assert np.allclose(plant_speeds(walk, contacts, 0.05), 0.05)
    h = height(walk.skeleton)
    drift = np.cumsum(np.full(walk.num_frames, 0.10 * h / walk.fps))
    root = walk.root_position.copy()
    root[:, 0] += drift  # the whole body slides: every planted point too
    slid = dataclasses.replace(walk, root_position=root)
    raised = plant_speeds(slid, detect_contacts(slid), 0.05)
    assert (raised > 0.2).all() and (raised <= 0.25).all()


# -- smoothing the exact pass -------------------------------------------------------------


def test_smoothed_corrections_are_exact_where_hard_and_smooth_elsewhere():
    n = 60
    frames = np.arange(10, 50)
    d = np.zeros((n, 2))  # corrections at the solved frames, 0 elsewhere
    d[frames, 0] = np.where(frames < 30, 0.1, 0.4)  # a step: eased goals on either side
    d[frames, 1] = 0.2
    weight = np.ones_like(d)
    weight[10:20] = 1e8  # a footplant: exact
    out = _smooth_corrections(d, weight, 4, [slice(0, n)])
    np.testing.assert_allclose(out[10:20, 0], 0.1, atol=1e-6)
    np.testing.assert_allclose(out[10:20, 1], 0.2, atol=1e-6)
    assert np.abs(np.diff(out[:, 0], 3)).max() < 0.05  # the step is smoothed
    assert out[55, 0] < 0.4 and out[0, 1] < 0.2  # fading out past the solved frames
    # a constant everywhere stays that constant exactly (a held pose does not move)
    const = _smooth_corrections(np.full((n, 1), 0.3), np.ones((n, 1)), 4, [slice(0, n)])
    np.testing.assert_allclose(const, 0.3, atol=1e-12)


def test_smooth_envelope_stays_above_the_needs_and_is_smooth():
    rng = np.random.default_rng(3)
    n = 200
    frames = np.sort(rng.choice(n, 60, replace=False))
    need = np.where(rng.random(60) < 0.5, rng.random(60), 0.0)
    env = _smooth_envelope(frames, need, n, 8.0)
    assert (env[frames] >= need - 1e-12).all()
    assert np.abs(np.diff(env, 2)).max() < 0.1 * need.max()
    flat = _smooth_envelope(np.arange(n), np.full(n, 0.5), n, 8.0)
    np.testing.assert_allclose(flat, 0.5, atol=1e-12)


def test_a_swinging_foot_toes_up_over_the_ground(lafan):
    """A character with long feet and short legs (blubby from a walk whose swing toes
    skim the floor): where a free foot's toe would go under the ground, the foot turns
    up about its ankle, no foot point ends under it, and the knee is not bent more
    than the source's in the swing (the whole foot was lifted by the knee before)."""
    from retarget.humanoid.roles import find_roles
    from retarget.ik.limb import hinge_angle, limb_from_roles

    walk = lafan[200:500]
    target = make_character(walk.skeleton, preset="blubby")
    result = get_method("hierarchical").run(walk, target).motion
    roles = find_roles(target)
    contacts = detect_contacts(walk)
    pos = positions(result)
    points = [roles[f"{s}_{r}"] for s in ("left", "right") for r in ("ankle", "toe")]
    assert (pos[:, points, 1] - contacts.floor).min() > -0.002 * height(target)
    for side in ("left", "right"):
        limb = limb_from_roles(target, roles, side, "leg", motion=walk)
        swing = ~contacts.foot(side)
        diff = np.degrees(hinge_angle(limb, result.rotations) - hinge_angle(limb, walk.rotations))
        assert np.percentile(diff[swing], 95) < 25.0, side


def test_a_foot_easing_out_of_a_plant_eases_toward_its_toes_up_pose(lafan):
    """At the end of a toe's ease-out the limb goal is the free foot's: the toes turned up
    about the ankle onto the ground, not the sunk reference foot lifted whole (the foot
    turned some 20° in the one frame between them, at every toe-off)."""
    from retarget.core.kinematics import Pose
    from retarget.humanoid.roles import find_roles
    from retarget.ik.hybrid import HybridSolver
    from retarget.tasks import Constraints, Ground

    sk = lafan.skeleton
    roles = find_roles(sk)
    solver = HybridSolver.for_skeleton(sk, roles, motion=lafan)
    frame = lafan[100:101]
    ankle, toe = roles["left_ankle"], roles["left_toe"]
    ref = Pose.of(sk, frame.root_position, frame.rotations)
    # the ankle a little above the floor, the toes pitched down under it
    rot = frame.rotations.copy()
    lever = ref.positions[0, toe] - ref.positions[0, ankle]
    axis = np.cross(lever, [0.0, 1.0, 0.0])
    axis /= np.linalg.norm(axis)
    w = ref.world_rotations[0, ankle]
    down = quat.exp(-0.5 * axis)  # 29° toes down
    local = quat.multiply(quat.conjugate(ref.world_rotations[0, sk.parents[ankle]]), down)
    rot[0, ankle] = quat.multiply(local, w)
    root = frame.root_position.copy()
    pitched = Pose.of(sk, root, rot)
    root[0, 1] += 0.02 * height(sk) - pitched.positions[0, ankle, 1]
    ref = Pose.of(sk, root, rot)
    assert ref.positions[0, toe, 1] < 0.0 < ref.positions[0, ankle, 1]
    points = np.array([ankle, toe], dtype=np.intp)
    ground = Ground(points, np.zeros(2), 0.0)
    free = Constraints(1, ground=ground)
    track = ref.positions[:, toe] + [[0.05 * height(sk), 0.0, 0.0]]  # the plant, elsewhere
    easing = np.concatenate([track, [[1e-9]]], axis=1)  # its blend's last frame
    eased = Constraints(1, transitions={toe: easing}, ground=ground)
    frames = np.array([0])
    leg_free = solver._limb_goals(ref, frames, free)[0]
    leg_eased = solver._limb_goals(ref, frames, eased)[0]
    assert leg_free.limb.lower == ankle
    # the free foot turns up about its ankle, where the reference has it
    np.testing.assert_allclose(leg_free.goal, ref.positions[:, ankle], atol=1e-9)
    assert quat.angle(leg_free.orientation, ref.world_rotations[:, ankle])[0] > np.radians(10)
    # the easing foot, all but free, is that same pose
    np.testing.assert_allclose(leg_eased.goal, leg_free.goal, atol=1e-6 * height(sk))
    assert quat.angle(leg_eased.orientation, leg_free.orientation)[0] < 1e-6


def test_the_exact_pass_holds_the_ground_only_as_firmly_as_it_needs(real_dir):
    """An Emilya walk at 120 frames/s onto a long-footed, short-legged character: the
    exact pass's per-frame switches near the ground (toes turned up from one frame, a
    heel let go the frame after) stay out of the motion (jerk ratio 3.8 when every
    frame with a point on the ground was held exactly; 1.3 now), and no foot point
    ends more than 0.01 % of the height under its footprints' plane where the pass
    put it on the ground."""
    from retarget.io import read_bvh

    walk = read_bvh(real_dir / "pymo_emilya_walk.bvh")[:600]
    target = make_character(walk.skeleton, preset="blubby")
    result = get_method("hierarchical").run(walk, target)
    measures = evaluate(walk, result.motion)
    assert measures["smoothness"] < 2.0
    assert measures["skate_ratio"] < 1.0
    pos = positions(result.motion)
    h = height(target)
    held = np.zeros(len(pos), bool)  # frames where a foot point of that foot is planted
    for side in ("left", "right"):
        held[:] = False
        points = [n for n in result.goals if n.startswith(side.capitalize())]
        assert points, side
        for name in points:
            held |= np.isfinite(result.goals[name]).all(axis=1)
        for name in points:
            # the lowest the point may go: the plane of its planted goals (the ground,
            # level or sloped, plus the point's clearance)
            goal = result.goals[name]
            g = goal[np.isfinite(goal).all(axis=1)]
            if len(g) < 3:  # (a toe tip never planted alone)
                continue
            design = np.c_[np.ones(len(g)), g[:, 0], g[:, 2]]
            coef = np.linalg.lstsq(design, g[:, 1], rcond=None)[0]
            assert np.abs(design @ coef - g[:, 1]).max() < 1e-6 * h  # one plane
            p = pos[~held, target.point_names.index(name)]
            low = coef[0] + coef[1] * p[:, 0] + coef[2] * p[:, 2]
            assert (p[:, 1] - low).min() > -1e-4 * h, name
