"""Robots read from their bodies, not their names (issue 39).

Every robot of :mod:`robot_files` (the G1 and N1, Menagerie's six humanoids, the URDFs
of ``tests/data/robots``, the two made for the tests) with every body, link, joint,
geom and site renamed to meaningless names gives the same roles, the same hinges
gathered into the same joints and the same joint trajectories.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from robot_files import ROBOTS, renamed, robot_path

from retarget.core.errors import RetargetWarning
from retarget.humanoid.roles import find_roles
from retarget.io.formats import read_motion
from retarget.pipeline import retarget
from retarget.targets.robot import open_robot

#: Frames of the walk each renamed run retargets (the whole walk: benchmarks/robots.py).
FRAMES = 45


@pytest.fixture(scope="module")
def walk(data_dir):
    return read_motion(data_dir / "lafan_walk.bvh")[:FRAMES]


@pytest.mark.filterwarnings("ignore::retarget.core.errors.RetargetWarning")
@pytest.mark.parametrize("name", list(ROBOTS))
def test_renaming_every_part_changes_no_role(name, data_dir, tmp_path):
    path = robot_path(name, data_dir.parent)
    ours, theirs = open_robot(path), open_robot(renamed(path, tmp_path))
    assert set(ours.robot.skeleton.names).isdisjoint(theirs.robot.skeleton.names)
    for a, b in (
        (ours.robot.skeleton, theirs.robot.skeleton),
        (ours.gathered.skeleton, theirs.gathered.skeleton),
    ):
        ra, rb = find_roles(a), find_roles(b)
        assert dict(ra) == dict(rb) and ra.spine == rb.spine
        assert {"hips", "head", "left_knee", "right_ankle"} <= set(ra)
    assert ours.gathered.members == theirs.gathered.members


@pytest.mark.filterwarnings("ignore::retarget.core.errors.RetargetWarning")
@pytest.mark.parametrize("method", ["hierarchical", "omr"])
@pytest.mark.parametrize("name", list(ROBOTS))
def test_renaming_every_part_changes_no_trajectory(name, method, walk, data_dir, tmp_path):
    path = robot_path(name, data_dir.parent)
    ours = retarget(walk, open_robot(path), method, measure=False).output
    theirs = retarget(walk, open_robot(renamed(path, tmp_path)), method, measure=False).output
    for key in ("root_pos", "root_quat", "dof_pos"):
        np.testing.assert_allclose(getattr(theirs, key), getattr(ours, key), rtol=0, atol=1e-9)


@pytest.mark.filterwarnings("ignore::retarget.core.errors.RetargetWarning")
@pytest.mark.parametrize("name", ["op3", "h1", "berkeley"])
def test_a_knee_whose_anchor_is_off_the_leg_is_mapped_without_a_swing(name, walk, data_dir):
    """The OP3's, the H1's and Berkeley Humanoid's knee hinges are anchored off the leg's
    line along their axes (a motor out to the side): through the anchors, thigh and
    shin zig-zag 16-20° across the knee at rest, and a performer's straight leg, mapped
    bone by bone, swung the hips about the thighs by up to 0.85 rad in a frame. The
    mapping aims the limbs through the point of each hinge's axis nearest the line from
    its parent to its next point (humanoid.mapping._on_axes), where they are straight."""
    from retarget.core import quat
    from retarget.core.kinematics import rest_pose
    from retarget.humanoid.mapping import _children, _on_axes, map_for_method

    target = open_robot(robot_path(name, data_dir.parent))
    clip = read_motion(data_dir / "lafan_walk.bvh")[600:900]  # a knee straightening
    prepared = target.prepare(clip)
    sk = prepared.skeleton
    roles = find_roles(sk)
    pos, rest = rest_pose(sk)
    middles = [roles[f"{side}_knee"] for side in ("left", "right")]
    on_axis = _on_axes(sk, pos, rest, _children(sk), np.ones(sk.num_points, bool), middles)
    for side in ("left", "right"):
        hip, knee, ankle = (roles[f"{side}_{r}"] for r in ("hip", "knee", "ankle"))
        for points, within in ((pos, False), (on_axis, True)):
            thigh, shin = points[knee] - points[hip], points[ankle] - points[knee]
            cos = thigh @ shin / np.linalg.norm(thigh) / np.linalg.norm(shin)
            bend = np.degrees(np.arccos(np.clip(cos, -1, 1)))
            assert (bend < 8.0) == within, (side, bend)
    ready = map_for_method(clip, sk, None, level_feet=True)
    rot = ready.motion.rotations
    step = quat.multiply(quat.conjugate(rot[:-1]), rot[1:])
    angle = 2 * np.arccos(np.clip(np.abs(step[..., 0]), 0.0, 1.0))
    assert angle.max() < 0.4, ready.motion.skeleton.names[int(angle.max(axis=0).argmax())]


@pytest.mark.parametrize("method", ["hierarchical", "omr"])
def test_hinges_the_model_leaves_unlimited_turn_as_a_humans_do(method, data_dir):
    """Robotis OP3's servos have no range: its knees and elbows bend one way, every other
    hinge turns at most 135° from its zero (the reader says so), and on a walk every
    hinge keeps to that (free all the way round, its hips wound through turns: angles
    of 9 to 13 rad). (Its walk still jumps: issue 39's note.)"""
    path = robot_path("op3", data_dir.parent)
    with pytest.warns(RetargetWarning, match="at most 135 degrees"):
        target = open_robot(path)
    sk = target.robot.skeleton
    capped = [
        j
        for j, order in enumerate(sk.euler_orders)
        if len(order) == 1
        and np.allclose(sk.limits[j, "XYZ".index(order)], [-0.75 * np.pi, 0.75 * np.pi])
    ]
    assert len(capped) >= 12  # all but the knees and elbows
    clip = read_motion(data_dir / "lafan_walk.bvh")[:300]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetargetWarning)
        out = retarget(clip, target, method, measure=False).output
    joints = target.robot.dof_joint
    ranges = np.array([sk.limits[j, "XYZ".index(sk.euler_orders[j])] for j in joints])
    assert (out.dof_pos >= ranges[:, 0] - 1e-3).all() and (out.dof_pos <= ranges[:, 1] + 1e-3).all()


def test_links_kept_apart_inside_hierarchicals_fit(data_dir):
    """With ``apart_in_methods`` the robot's capsules ride on the method skeleton
    (retarget.targets.robot.apart) and hierarchical's fit keeps them apart as it keeps the
    feet on the floor (Constraints.apart): on the Booster T1, whose hands the walk swings
    into its trunk, the method's own motion has no frame with a pair of capsules more
    than 0.5 cm past its margin (16 of 600 frames without, 1.6 cm deep)."""
    from retarget.core.kinematics import Pose
    from retarget.targets.robot.apart import apart_on

    path = robot_path("t1", data_dir.parent)
    clip = read_motion(data_dir / "lafan_walk.bvh")[:600]
    past = {}
    for on in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RetargetWarning)
            target = open_robot(path, apart_in_methods=on)
            out = retarget(clip, target, "hierarchical", measure=False)
        motion = out.result.motion
        apart = apart_on(target.gathered, target.robot.geoms, motion.skeleton)
        assert apart is not None and apart.size > 50
        gaps = apart.residual(Pose.of(motion.skeleton, motion.root_position, motion.rotations))
        past[on] = int((gaps < -0.005).any(axis=1).sum())
        assert out.report["apart_pairs"] == (apart.size if on else 0)
    assert past[True] == 0 and past[False] >= 5, past


@pytest.mark.filterwarnings("ignore::retarget.core.errors.RetargetWarning")
def test_omr_turns_no_pelvis_for_a_foot_its_leg_cannot_turn(walk, data_dir):
    """The H1's legs have five hinges (one at the ankle): the foot's roll is beyond
    them, so omr tracks no foot orientation there and keeps the pelvis as the performer
    turns it (as a copy of the joints does), where serving the feet's orientation turned
    it 20° on average, 51° at worst; the G1's legs (a ball at the ankle on the method
    skeleton) keep their feet's orientation rows."""
    from retarget.core import quat
    from retarget.online.omr import _leg_channels

    clip = read_motion(data_dir / "lafan_walk.bvh")[:300]
    h1 = open_robot(robot_path("h1", data_dir.parent))
    copy = retarget(clip, h1, "copy", measure=False).output
    omr = retarget(clip, h1, "omr", measure=False).output
    turned = np.degrees(quat.angle(copy.root_quat, omr.root_quat))
    assert turned.mean() < 5.0, (turned.mean(), turned.max())  # (the hips reach their
    # ranges on a turn, frames 286-320, where the pelvis turns up to 25°: the model's)
    # (on the method skeleton, where omr solves: the G1's ankle, two hinges, a ball)
    for robot, channels in (("h1", 5), ("g1", 7)):
        g = open_robot(robot_path(robot, data_dir.parent)).gathered.skeleton
        roles = find_roles(g)
        for side in ("left", "right"):
            hip, ankle = roles[f"{side}_hip"], roles[f"{side}_ankle"]
            assert _leg_channels(g, hip, ankle) == channels
