"""Robots read from their bodies, not their names (issue 39).

Every robot of :mod:`robot_files` (the G1 and N1, Menagerie's six humanoids, the URDFs
of ``tests/data/robots``, the two made for the tests) with every body, link, joint,
geom and site renamed to meaningless names gives the same roles, the same hinges
gathered into the same joints and the same joint trajectories.
"""

from __future__ import annotations

import numpy as np
import pytest
from robot_files import ROBOTS, renamed, robot_path

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
