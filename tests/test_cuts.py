"""Cuts (retarget.humanoid.cuts): whole-body jumps found, pieces kept apart by the methods."""

from __future__ import annotations

import numpy as np
import pytest

from retarget.core import quat
from retarget.core.motion import concatenate
from retarget.editing.fitting import _fit_pieces
from retarget.humanoid.characters import make_character
from retarget.humanoid.cuts import find_cuts, segments
from retarget.io import read_bvh
from retarget.methods import get_method


@pytest.fixture(scope="module")
def real(data_dir):
    folder = data_dir / "real"
    if not folder.is_dir():
        pytest.fail(f"{folder} not found: the real files of ../shared/data/real")
    return folder


def test_segments():
    assert segments(10, [1, 6]) == [slice(0, 1), slice(1, 6), slice(6, 10)]
    assert segments(5, []) == [slice(0, 5)]
    assert segments(1, []) == [slice(0, 1)]
    assert segments(4, [0, 4, 9]) == [slice(0, 4)]  # cuts at the ends cut nothing


@pytest.mark.parametrize("name", ["dme_blender_example.bvh", "fairmotion_cmu_01_01.bvh"])
def test_leading_t_pose_frame_is_a_cut(real, name):
    """CMU's BVH conversions begin with a T-pose frame: a cut before frame 1, no other."""
    assert find_cuts(read_bvh(real / name)).tolist() == [1]


def test_continuous_clips_have_no_cut(lafan, mocapbank, real):
    """Walks at 30 frames/s (fast steps), a boxing clip at 100, an OptiTrack take at 120."""
    for motion in (lafan, mocapbank, read_bvh(real / "tomochi_optitrack.bvh")):
        assert find_cuts(motion).size == 0


def test_joined_takes_are_cut_where_they_join(lafan):
    """Two stretches of one walk, 3 s apart, joined: one cut, at the join."""
    joined = concatenate([lafan[100:200], lafan[400:520]])
    assert find_cuts(joined).tolist() == [100]


def test_piecewise_fit_does_not_reach_across_a_cut():
    """Samples of the second piece only: the first piece's displacement is exactly 0
    (one spline over the clip would carry them 3 knots back), and each piece's fit is
    the fit of that piece alone."""
    times = np.arange(40, 60, dtype=float)
    values = np.sin(times / 5.0)[:, None] * [1.0, 2.0]
    weights = np.ones_like(values)
    out = _fit_pieces(times, values, 8.0, 60, weights, segments(60, [40]))
    assert np.all(out[:40] == 0.0)
    alone = _fit_pieces(times - 40, values, 8.0, 20, weights, [slice(0, 20)])
    np.testing.assert_allclose(out[40:], alone, atol=1e-12)
    one = _fit_pieces(times, values, 8.0, 60, weights, [slice(0, 60)])
    assert np.abs(one[30:40]).max() > 0.01  # without the cut it would reach back


def test_held_samples_are_reproduced_exactly():
    """A piece whose samples are one value at every frame is that value (eq. 2 alone
    would leave a residual that wobbles along the piece); a dimension of weight 0 is 0."""
    values = np.tile([0.3, -0.2, 5.0], (30, 1))
    weights = np.tile([1.0, 1.0, 0.0], (30, 1))
    out = _fit_pieces(np.arange(30.0), values, 16.0, 30, weights, [slice(0, 30)])
    np.testing.assert_array_equal(out, np.tile([0.3, -0.2, 0.0], (30, 1)))


@pytest.mark.parametrize("method", ["hierarchical", "omr", "puppetry"])
def test_no_pop_at_a_leading_t_pose_frame(real, method):
    """dme_blender_example.bvh onto blubby: the first frames after the T-pose frame move
    as the source's do. Before the cut was honoured, the B-spline (hierarchical) and the
    Kalman filter (puppetry) smeared the jump over the next frames (a pop of 13 % and
    5 % of height at frame 1)."""
    from retarget.core.kinematics import positions
    from retarget.humanoid.roles import find_roles, height

    source = read_bvh(real / "dme_blender_example.bvh")[:120]
    target = make_character(source.skeleton, preset="blubby")
    result = get_method(method).run(source, target).motion
    roles = find_roles(target)
    legs = [roles[f"{s}_{r}"] for s in ("left", "right") for r in ("knee", "ankle")]
    ps, pr = positions(source)[:, legs], positions(result)[:, legs]
    step_s = np.linalg.norm(np.diff(ps, axis=0), axis=-1)[1:12] / height(source.skeleton)
    step_r = np.linalg.norm(np.diff(pr, axis=0), axis=-1)[1:12] / height(target)
    assert (step_r - step_s).max() < 0.01  # 1 % of height in the frames after the cut
    # the T-pose frame itself keeps its arms out (its feet, below the walk's floor,
    # are lifted onto it): not smeared into the walk's first pose
    arms = [roles[f"{s}_{r}"] for s in ("left", "right") for r in ("shoulder", "elbow")]
    assert quat.angle(result.rotations[0, arms], source.rotations[0, arms]).max() < 0.05
