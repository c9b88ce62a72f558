"""A one-frame clip retargets to the pose that thirty repeats of that frame give (issue 24).

Every method on every humanoid rig of ``RETARGET_DATA`` and its ``real/``
folder, onto ``blubby``, and through ``retarget run`` onto a rig whose legs
are cut into segments (twist joints inside the thigh and the shin, as Unreal,
Daz and rigify rigs have them): each joint within 0.1° of the repeated clip's
frames, which are themselves all one pose (a still clip stays still).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from retarget.core import quat
from retarget.core.errors import RetargetError
from retarget.core.motion import Motion, concatenate
from retarget.core.skeleton import Skeleton
from retarget.humanoid.characters import make_character
from retarget.humanoid.roles import find_roles
from retarget.humanoid.world import upright
from retarget.io.formats import read_motion, write_motion
from retarget.methods import METHODS, get_method
from retarget.pipeline import RunJob, run_job

TOLERANCE = np.radians(0.1)
#: The kinematic methods. The physics filter (Tak & Ko 2005) moves a still pose that is
#: not statically balanced toward balance over the frames, so its still clip need not
#: stay still (``test_physics_on_one_frame`` asks it for a finite pose instead).
KINEMATIC = [m for m in METHODS if m != "physics"]


def _humanoid_files(data_dir):
    files = sorted(data_dir.glob("*.bvh")) + sorted((data_dir / "real").glob("*.bvh"))
    out = []
    for path in files:
        motion = read_motion(path)
        try:
            find_roles(motion.skeleton)
        except RetargetError:
            continue  # the non-humanoids: their one-line error is tested elsewhere
        out.append((path, upright(motion)))  # the methods work Y up (world.upright)
    return out


@pytest.fixture(scope="module")
def humanoids(data_dir):
    if not (data_dir / "real").is_dir():
        pytest.fail(f"{data_dir / 'real'} not found: the real files of ../shared/data/real")
    found = _humanoid_files(data_dir)
    assert len(found) >= 10
    return found


def _frame(motion: Motion) -> int:
    """A frame of the walk proper (past a leading T-pose frame)."""
    return min(motion.num_frames - 1, motion.num_frames // 2)


def _compare(one: Motion, many: Motion, where: str) -> None:
    assert one.num_frames == 1 and many.num_frames == 30
    spread = quat.angle(many.rotations, many.rotations[:1]).max()
    assert spread < TOLERANCE, f"{where}: the still clip does not stay still ({spread:.2e} rad)"
    worst = quat.angle(one.rotations[0], many.rotations[0])
    j = int(np.argmax(worst))
    assert worst[j] < TOLERANCE, (
        f"{where}: {one.skeleton.names[j]} is {np.degrees(worst[j]):.3f}° off the repeated clip's"
    )
    h = np.abs(many.root_position).max() + 1.0
    np.testing.assert_allclose(one.root_position[0], many.root_position[0], atol=1e-6 * h)
    assert np.isfinite(one.rotations).all() and np.isfinite(one.root_position).all()


@pytest.mark.parametrize("method", KINEMATIC)
def test_one_frame_equals_thirty_repeats(humanoids, method):
    for path, motion in humanoids:
        frame = motion[_frame(motion) :][:1]
        target = make_character(motion.skeleton, preset="blubby")
        one = get_method(method).run(frame, target).motion
        many = get_method(method).run(concatenate([frame] * 30), target).motion
        _compare(one, many, f"{path.name}, {method}")


def _segmented(skeleton: Skeleton) -> Skeleton:
    """``skeleton`` with a twist joint halfway along each thigh and shin (a rig whose leg
    bones are cut in two, named as Unreal's and Daz's twist bones are)."""
    roles = find_roles(skeleton)
    split = {roles[f"{s}_{r}"] for s in ("left", "right") for r in ("knee", "ankle")}
    names, parents, offsets, channels = [], [], [], []
    new_index: dict[int, int] = {}
    for j in range(skeleton.num_joints):
        parent = -1 if j == 0 else new_index[int(skeleton.parents[j])]
        offset = skeleton.offsets[j]
        if j in split:  # a segment joint in the middle of the bone ending here
            names.append(f"{skeleton.names[int(skeleton.parents[j])]}Twist")
            parents.append(parent)
            offsets.append(0.5 * offset)
            channels.append(("Zrotation", "Xrotation", "Yrotation"))
            parent, offset = len(names) - 1, 0.5 * offset
        new_index[j] = len(names)
        names.append(skeleton.names[j])
        parents.append(parent)
        offsets.append(offset)
        channels.append(skeleton.channels[j])
    sites = np.array([new_index[int(p)] for p in skeleton.site_parents], dtype=np.intp)
    return Skeleton(
        tuple(names),
        np.array(parents),
        np.array(offsets),
        tuple(channels),
        site_names=skeleton.site_names,
        site_parents=sites,
        site_offsets=skeleton.site_offsets,
        unit=skeleton.unit,
    )


@pytest.mark.parametrize("method", KINEMATIC)
def test_one_frame_onto_a_rig_with_leg_segments(data_dir, lafan, mocapbank, tmp_path, method):
    """``retarget run`` of one frame onto a rig with segmented legs (the mapping folds the
    segments away for the method) is the first frame of thirty repeats; the legs stand
    as the source's do (no leg turned away: the bone directions of the mapping)."""
    rig = _segmented(make_character(mocapbank.skeleton, preset="sally"))
    target = tmp_path / "segmented.bvh"
    rest = Motion(rig, rig.offsets[:1], quat.identity((1, rig.num_joints)), 30.0)
    write_motion(target, rest)
    frame = lafan[150:151]
    outputs = {}
    for name, clip in (("one", frame), ("many", concatenate([frame] * 30))):
        source = tmp_path / f"{name}.bvh"
        write_motion(source, clip)
        out = tmp_path / f"{name}_{method}.bvh"
        report = run_job(
            RunJob(source=str(source), output=str(out), method=method, target=str(target))
        ).report
        outputs[name] = read_motion(out)
        directions = report["mapping"]["bone_direction_error_deg"]
        legs = [v for k, v in directions.items() if k.split("_", 1)[-1] in ("thigh", "shin")]
        assert max(legs) < 20.0, directions  # the legs are where the source's are
    one, many = outputs["one"], outputs["many"]
    _compare(
        dataclasses.replace(one, skeleton=many.skeleton)
        if one.skeleton is not many.skeleton
        else one,
        many,
        f"segmented rig, {method}",
    )


def test_physics_on_one_frame(humanoids):
    path, motion = humanoids[0]
    frame = motion[_frame(motion) :][:1]
    target = make_character(motion.skeleton, preset="blubby")
    one = get_method("physics").run(frame, target).motion
    assert one.num_frames == 1, path.name
    assert np.isfinite(one.rotations).all() and np.isfinite(one.root_position).all()
