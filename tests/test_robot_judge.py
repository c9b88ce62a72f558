"""The run report's robot measures against an independent reading (issue 39).

:mod:`robot_judge` reads the BVH with its own parser and scipy's rotations and the robot
with MuJoCo alone (the ranges MuJoCo compiled, its kinematics, pairwise distances of the
collision geometry under the model's own bit masks, exact lowest points of every shape),
and detects the source's contacts itself. The report (:func:`retarget.retarget` onto
the robot, ``report["measures"]``) must agree within 10 %: skate over the source's
contacts, floating, the deepest sole, joint ranges, links into each other, body jerk.

The robots cover what made the two readings part before: a sole pitched toe up at rest
(Berkeley Humanoid: the toe planted and measured under its sole, in the air), a
two-hinge ankle whose anchors are apart (the OP3), capsule feet (the H1: round shapes'
lowest points sampled), collision geometry in a class that does not collide (Apollo).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from robot_files import robot_path
from robot_judge import judge, read_bvh

from retarget.core.errors import RetargetWarning
from retarget.core.kinematics import forward_kinematics
from retarget.io.formats import read_motion
from retarget.io.trajectories import write_npz
from retarget.pipeline import retarget
from retarget.targets.robot import open_robot

FRAMES = 300
ROBOTS = ("g1", "n1", "apollo", "berkeley", "op3", "h1")


@pytest.fixture(scope="module")
def walk(data_dir):
    return read_motion(data_dir / "lafan_walk.bvh")[:FRAMES]


def test_the_judges_bvh_reading_is_the_librarys(data_dir):
    """The judge's own BVH reader and scipy's rotations give the joints and end sites
    where the library's reader and kinematics put them."""
    path = data_dir / "lafan_walk.bvh"
    ours = read_motion(path)
    pos, _ = forward_kinematics(ours.skeleton, ours.root_position, ours.rotations)
    theirs = read_bvh(path)
    sk = ours.skeleton
    # joints by name, end sites by their joint's
    at = {name: k for k, name in enumerate(sk.names)}
    at |= {f"{sk.names[p]}_end": sk.num_joints + k for k, p in enumerate(sk.site_parents)}
    assert len(theirs.names) == sk.num_points == len(at)
    np.testing.assert_allclose(theirs.positions(), pos[:, [at[n] for n in theirs.names]], atol=1e-9)


def _close(ours: float, theirs: float, floor: float) -> bool:
    """Within 10 % of the judge's, or both under ``floor`` apart (a measure near 0)."""
    return abs(ours - theirs) <= max(0.1 * abs(theirs), floor)


@pytest.mark.parametrize("method", ["hierarchical", "omr"])
@pytest.mark.parametrize("name", ROBOTS)
def test_the_report_agrees_with_an_independent_reading(name, method, walk, data_dir, tmp_path):
    path = robot_path(name, data_dir.parent)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RetargetWarning)
        run = retarget(walk, open_robot(path), method)
    out = write_npz(tmp_path / "out.npz", run.output)
    ours = run.report["measures"]
    theirs = judge(data_dir / "lafan_walk.bvh", path, out, slice(0, FRAMES))
    assert ours["robot_height_m"] == pytest.approx(theirs["robot_height_m"], rel=1e-6)
    assert _close(ours["skate_ratio"], theirs["skate_ratio"], 0.0), (ours, theirs)
    assert _close(ours["jerk_ratio"], theirs["jerk_ratio"], 0.0)
    for key in ("float_cm", "penetration_max_cm"):
        assert _close(ours[key], theirs[key], 0.01), key  # (a tenth of a millimetre)
    assert ours["penetration_frames"] == theirs["penetration_frames"]
    assert ours["limit_violations"] == theirs["limit_violations"]
    assert _close(ours["self_collision_share"], theirs["self_collision_share"], 1.0 / FRAMES)
    if theirs["self_collision_max_cm"] > 0.5:  # (shallower: not counted, either reading)
        assert _close(ours["self_collision_max_cm"], theirs["self_collision_max_cm"], 0.0)
