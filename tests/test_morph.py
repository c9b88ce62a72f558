"""Character morphing (Lee & Shin 1999, §6, Figure 5d): a target whose proportions change
over the clip, the stride kept and every footplant met.

The per-frame skeleton is ``offsets(t) = A + s(t) (B − A)``, ``s`` linear in time
(:func:`retarget.humanoid.characters.morph_translations`); every bone length the
hierarchical method reads (stride ratio, footprints, clearances, FK, the analytic limbs,
the limbs' reach) is the frame's own.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retarget import Skeleton
from retarget.cli import main
from retarget.core import quat
from retarget.core.arrays import runs
from retarget.core.errors import RetargetError
from retarget.core.kinematics import forward_kinematics, positions
from retarget.core.motion import Motion
from retarget.humanoid.characters import make_character, morph_translations
from retarget.humanoid.contacts import detect_contacts
from retarget.humanoid.metrics import evaluate
from retarget.humanoid.roles import find_roles, height, leg_length
from retarget.ik import Limb, solve_limb
from retarget.ik.numeric import solve_ik
from retarget.io import read_bvh, write_bvh
from retarget.methods.copy import scale_path
from retarget.methods.hierarchical import hierarchical_retarget
from retarget.tasks import PositionTask

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- the root path scaled frame by frame -------------------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), frames=st.integers(1, 60), ratio=st.floats(0.2, 3.0))
def test_scale_path_with_a_constant_ratio_is_the_plain_scaling(seed, frames, ratio):
    rng = np.random.default_rng(seed)
    path = rng.normal(scale=100.0, size=(frames, 2)) + rng.normal(scale=500.0, size=2)
    expected = ratio * (path - path[0])
    np.testing.assert_array_equal(scale_path(path, ratio), expected)
    np.testing.assert_array_equal(scale_path(path, np.full(frames, ratio)), expected)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), frames=st.integers(2, 60))
def test_scale_path_steps_are_the_source_steps_times_their_ratio(seed, frames):
    # finite differences of the result: each step is the source's, scaled by the mean
    # ratio of its two frames (the trapezoid rule of y' = r x')
    rng = np.random.default_rng(seed)
    path = np.cumsum(rng.normal(scale=30.0, size=(frames, 3)), axis=0)
    ratio = rng.uniform(0.3, 2.0, frames)
    y = scale_path(path, ratio)
    np.testing.assert_array_equal(y[0], 0.0)
    steps = 0.5 * (ratio[1:] + ratio[:-1])[:, None] * np.diff(path, axis=0)
    scale = np.abs(path - path[0]).max() * ratio.max() * frames
    np.testing.assert_allclose(np.diff(y, axis=0), steps, rtol=0, atol=1e-13 * scale)


# -- per-frame bone lengths ----------------------------------------------------------------------


def _chain(rng: np.random.Generator) -> Skeleton:
    """pelvis -> hip -> knee -> ankle, with a site below the ankle; random bones."""
    offsets = rng.normal(size=(4, 3)) * [[10.0], [8.0], [40.0], [40.0]]
    return Skeleton(
        ("pelvis", "hip", "knee", "ankle"),
        np.array([-1, 0, 1, 2]),
        offsets,
        site_names=("toe_tip",),
        site_parents=np.array([3]),
        site_offsets=rng.normal(scale=10.0, size=(1, 3)),
    )


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_path_lengths_per_frame_are_each_frames_skeletons(seed):
    rng = np.random.default_rng(seed)
    sk = _chain(rng)
    trans = sk.offsets * rng.uniform(0.5, 1.5, size=(7, sk.num_joints, 1))
    per_frame = sk.path_length("hip", "toe_tip", trans)
    assert per_frame.shape == (7,)
    for f in range(7):
        own = sk.replace(offsets=trans[f])
        assert per_frame[f] == pytest.approx(own.path_length("hip", "toe_tip"), rel=1e-14)
        np.testing.assert_allclose(sk.bone_lengths(trans)[f], own.bone_lengths(), rtol=1e-14)
    same = np.broadcast_to(sk.offsets, trans.shape)
    np.testing.assert_array_equal(sk.path_length(1, 4, same), sk.path_length(1, 4))


# -- analytic limbs with a skeleton per row ----------------------------------------------------


def _limb_problem(seed: int, n: int):
    rng = np.random.default_rng(seed)
    sk = _chain(rng)
    axis = rng.normal(size=3)
    limits = [-np.inf, np.inf] if rng.random() < 0.5 else [0.05, 2.6]
    limb = Limb(1, 2, 3, hinge_axis=axis, hinge_limits=limits)
    root = rng.normal(scale=20.0, size=(n, 3))
    rot = quat.exp(rng.normal(scale=0.6, size=(n, sk.num_joints, 3)))
    pos, _ = forward_kinematics(sk, root, rot)
    goal = pos[:, 3] + rng.normal(scale=25.0, size=(n, 3))
    goal[rng.random(n) < 0.1] = np.nan  # free rows keep their pose
    orientation = quat.exp(rng.normal(size=(n, 3)))
    orientation[rng.random(n) < 0.3] = np.nan
    swivel = rng.normal(scale=0.5, size=n)
    return rng, sk, limb, root, rot, goal, orientation, swivel


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_solve_limb_with_one_skeleton_per_row_equals_the_constant_path(seed):
    _, sk, limb, root, rot, goal, orientation, swivel = _limb_problem(seed, 40)
    same = np.broadcast_to(sk.offsets, (40, sk.num_joints, 3))
    a = solve_limb(sk, limb, root, rot, goal, orientation=orientation, swivel=swivel)
    b = solve_limb(
        sk, limb, root, rot, goal, orientation=orientation, swivel=swivel, translations=same
    )
    for field in ("rotations", "reached", "residual", "orientation_residual", "extension"):
        np.testing.assert_array_equal(getattr(b, field), getattr(a, field), err_msg=field)
    np.testing.assert_array_equal(b.clamped, a.clamped)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_solve_limb_per_row_skeletons_are_each_rows_own(seed):
    # Row i of a batch with per-row bones equals row i of the same batch solved on the
    # constant skeleton with row i's bones (same batch: numpy's vector loops round alike).
    rng, sk, limb, root, rot, goal, orientation, swivel = _limb_problem(seed, 12)
    trans = sk.offsets * rng.uniform(0.5, 1.6, size=(12, sk.num_joints, 1))
    batch = solve_limb(
        sk, limb, root, rot, goal, orientation=orientation, swivel=swivel, translations=trans
    )
    for i in range(12):
        own = sk.replace(offsets=trans[i])
        alone = solve_limb(own, limb, root, rot, goal, orientation=orientation, swivel=swivel)
        for field in ("rotations", "reached", "residual", "orientation_residual", "extension"):
            np.testing.assert_array_equal(getattr(batch, field)[i], getattr(alone, field)[i])
        # and the lower joint is where FK with that row's bones puts it
        pos, _ = forward_kinematics(sk, root[i], batch.rotations[i], trans[i])
        np.testing.assert_allclose(pos[3], batch.reached[i], rtol=0, atol=1e-11)


def test_numeric_ik_solves_on_each_poses_own_bones():
    # the any-tree solver of the fitting (NumericSolver -> solve_ik) takes them too
    rng = np.random.default_rng(7)
    sk = _chain(rng)
    n = 6
    trans = sk.offsets * rng.uniform(0.6, 1.4, size=(n, sk.num_joints, 1))
    root, rot = np.zeros((n, 3)), quat.exp(rng.normal(scale=0.3, size=(n, sk.num_joints, 3)))
    pos, _ = forward_kinematics(sk, root, rot, trans)
    goal = pos[:, 3] + rng.normal(scale=3.0, size=(n, 3))  # near: reachable
    result = solve_ik(sk, root, rot, [PositionTask(3, goal, weight=1e6)], translations=trans)
    reached, _ = forward_kinematics(sk, result.root_position, result.rotations, trans)
    np.testing.assert_allclose(reached[:, 3], goal, atol=1e-3)
    rigid, _ = forward_kinematics(sk, result.root_position, result.rotations)
    assert np.abs(rigid[:, 3] - goal).max() > 0.1  # on the skeleton's own bones it misses


# -- the morph's offsets -------------------------------------------------------------------------


def test_morph_translations_are_linear_from_start_to_end():
    rng = np.random.default_rng(3)
    a, b = _chain(rng), _chain(rng)
    trans = morph_translations(a, b, 11)
    assert trans.shape == (11, 4, 3)
    np.testing.assert_array_equal(trans[0], a.offsets)
    np.testing.assert_allclose(trans[-1], b.offsets, rtol=1e-14, atol=1e-12)
    np.testing.assert_allclose(trans[5], 0.5 * (a.offsets + b.offsets), rtol=1e-14, atol=1e-12)
    np.testing.assert_allclose(np.diff(trans, 2, axis=0), 0.0, atol=1e-12)
    np.testing.assert_array_equal(morph_translations(a, b, 1), a.offsets[None])
    same = np.broadcast_to(a.offsets, (9, 4, 3))
    np.testing.assert_array_equal(morph_translations(a, a, 9), same)


def test_morph_translations_match_joints_by_name():
    # the end lists the legs the other way round: joints pair up by name
    offsets = np.random.default_rng(4).normal(size=(5, 3))
    a = Skeleton(("hips", "l_hip", "l_knee", "r_hip", "r_knee"), [-1, 0, 1, 0, 3], offsets)
    order = [0, 3, 4, 1, 2]
    b = Skeleton(
        ("hips", "r_hip", "r_knee", "l_hip", "l_knee"), [-1, 0, 1, 0, 3], 2.0 * offsets[order]
    )
    trans = morph_translations(a, b, 3)
    np.testing.assert_allclose(trans[-1], 2.0 * offsets, rtol=1e-15)
    np.testing.assert_allclose(trans[1], 1.5 * offsets, rtol=1e-15)


@pytest.mark.parametrize(
    "names, parents, phrase",
    [
        (("pelvis", "hip", "knee", "foot"), [-1, 0, 1, 2], "different joints"),
        (("pelvis", "hip", "knee", "ankle"), [-1, 0, 1, 1], "different hierarchies"),
    ],
)
def test_morph_translations_refuse_other_characters(names, parents, phrase):
    a = _chain(np.random.default_rng(5))
    other = Skeleton(names, np.array(parents), a.offsets)
    with pytest.raises(RetargetError, match=phrase):
        morph_translations(a, other, 10)


# -- the method on real data ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def morph_walk(lafan):
    """The whole walk, morphing from the source's own skeleton to blubby."""
    start = lafan.skeleton
    end = make_character(start, preset="blubby")
    trans = morph_translations(start, end, lafan.num_frames)
    return trans, hierarchical_retarget(lafan, start, translations=trans)


def _frame_ratio(source, target, trans):
    """The "auto" stride ratio of every frame: min(height ratio, leg ratio)."""
    rs, rt = find_roles(source.skeleton), find_roles(target)
    legs = leg_length(target, rt, trans) / leg_length(source.skeleton, rs)
    tall = height(target, rt, trans) / height(source.skeleton, rs)
    return np.minimum(legs, tall)


def test_morph_ratio_runs_from_the_source_to_blubby(lafan, morph_walk):
    trans, result = morph_walk
    blubby = make_character(lafan.skeleton, preset="blubby")
    plain_ratio = _frame_ratio(lafan, blubby, None)
    ratio = result.report["ratio"]
    assert ratio["first"] == pytest.approx(1.0, abs=1e-12)
    assert ratio["last"] == pytest.approx(plain_ratio, rel=1e-12)
    assert ratio["min"] == ratio["last"] and ratio["max"] == ratio["first"]
    np.testing.assert_array_equal(result.motion.translations, trans)
    assert [lv["level"] for lv in result.report["levels"]] == [1, 2, 3, 4, -1]


def test_morph_meets_every_footplant_within_0_1_percent_of_the_frames_height(lafan, morph_walk):
    trans, result = morph_walk
    sk = result.motion.skeleton
    h = height(sk, find_roles(sk), trans)  # (F,): the frame's own height
    pos = positions(result.motion)
    assert result.goals
    for name, goal in result.goals.items():
        err = np.linalg.norm(pos[:, sk.index(name)] - goal, axis=1) / h * 100.0
        have = np.isfinite(err)
        assert have.sum() > 1000
        assert err[have].max() <= 0.1, name
    assert result.report["levels"][-1]["max_error"] <= 0.1


def test_morph_skates_no_more_than_the_source_and_stays_smooth(lafan, morph_walk):
    _, result = morph_walk
    m = evaluate(lafan, result.motion, goals=result.goals)
    assert m["skate_result"] <= m["skate_source"]
    assert m["smoothness"] <= 1.2


def _stride_deviation(source, result, ratio):
    """Per same-foot stride between successive footprints (the source's contact runs of
    each ankle; a footprint is the mean horizontal ankle position over its run):
    ``(result stride / source stride) / ratio at the stride's time − 1``, and the
    stride's middle frame. Strides shorter than half the median (shuffles) are left out."""
    rs, rt = find_roles(source.skeleton), find_roles(result.skeleton)
    pos_s, pos_t = positions(source), positions(result)
    contacts = detect_contacts(source, roles=rs)
    frames, deviation = [], []
    for side in ("left", "right"):
        a_s, a_t = rs[f"{side}_ankle"], rt[f"{side}_ankle"]
        steps = runs(contacts.mask[:, list(contacts.points).index(a_s)])
        prints_s = np.array([pos_s[a:b, a_s][:, [0, 2]].mean(axis=0) for a, b in steps])
        prints_t = np.array([pos_t[a:b, a_t][:, [0, 2]].mean(axis=0) for a, b in steps])
        d_s = np.linalg.norm(np.diff(prints_s, axis=0), axis=1)
        d_t = np.linalg.norm(np.diff(prints_t, axis=0), axis=1)
        middle = np.array([0.5 * (steps[k][0] + steps[k + 1][1] - 1) for k in range(len(d_s))])
        r = np.interp(middle, np.arange(source.num_frames), ratio)
        keep = d_s > 0.5 * np.median(d_s)
        frames.append(middle[keep])
        deviation.append((d_t / d_s / r - 1.0)[keep])
    return np.concatenate(frames), np.concatenate(deviation)


def test_morph_keeps_the_stride_at_each_frames_ratio(lafan, morph_walk):
    # The character shrinks to 65 % of the source's stride over the clip. In each sixth
    # of it, the footprints of the result lie as far apart as the source's times the
    # ratio of their time: the median over its strides within 2 %. (Single strides
    # scatter more, on the plain retarget too: blubby's hips are wider than the stride
    # ratio says, and lafan's walk turns and sways.)
    trans, result = morph_walk
    ratio = _frame_ratio(lafan, result.motion.skeleton, trans)
    assert ratio[0] == pytest.approx(1.0) and ratio[-1] < 0.66
    frames, deviation = _stride_deviation(lafan, result.motion, ratio)
    assert len(deviation) > 150
    edges = np.linspace(0, lafan.num_frames, 7)
    for lo, hi in itertools.pairwise(edges):
        window = deviation[(frames >= lo) & (frames < hi)]
        assert len(window) > 10
        assert abs(np.median(window)) <= 0.02, (lo, hi, np.median(window))


def test_morph_bvh_reads_back_with_the_same_positions(morph_walk, tmp_path):
    _, result = morph_walk
    path = write_bvh(tmp_path / "morph.bvh", result.motion)
    back = read_bvh(path)
    assert back.translations is not None
    np.testing.assert_allclose(positions(back), positions(result.motion), rtol=0, atol=1e-6)


def test_a_morph_between_identical_characters_is_the_plain_retarget(lafan):
    walk = lafan[:600]
    blubby = make_character(walk.skeleton, preset="blubby")
    plain = hierarchical_retarget(walk, blubby)
    morph = hierarchical_retarget(
        walk, blubby, translations=morph_translations(blubby, blubby, walk.num_frames)
    )
    np.testing.assert_array_equal(morph.motion.root_position, plain.motion.root_position)
    np.testing.assert_array_equal(morph.motion.rotations, plain.motion.rotations)
    keys = ("max_error", "max_penetration", "frames_solved")
    for a, b in zip(morph.report["levels"], plain.report["levels"], strict=True):
        assert {k: a[k] for k in keys} == pytest.approx({k: b[k] for k in keys}, rel=1e-9)


# -- the command line ------------------------------------------------------------------------


def _character_file(path, skeleton: Skeleton) -> str:
    rest = np.tile([1.0, 0.0, 0.0, 0.0], (1, skeleton.num_joints, 1))
    write_bvh(path, Motion(skeleton, skeleton.offsets[:1], rest, 30.0))
    return str(path)


def test_cli_runs_a_morph_from_one_file_to_another(capsys, data_dir, tmp_path, lafan):
    start = _character_file(tmp_path / "sally.bvh", make_character(lafan.skeleton, preset="sally"))
    end = _character_file(tmp_path / "blubby.bvh", make_character(lafan.skeleton, preset="blubby"))
    out, report = tmp_path / "out.bvh", tmp_path / "report.json"
    code = main(
        [
            "run",
            str(data_dir / "lafan_walk.bvh"),
            "--method",
            "hierarchical",
            "--target-from",
            start,
            "--target-to",
            end,
            "--frames",
            "0:300",
            "-o",
            str(out),
            "--report",
            str(report),
        ]
    )
    assert code == 0
    assert "hierarchical: 300 frames" in capsys.readouterr().out
    result = read_bvh(out)
    a, b = read_bvh(start).skeleton, read_bvh(end).skeleton
    assert result.translations is not None and result.num_frames == 300
    lengths = np.linalg.norm(result.translations[:, 1:], axis=-1)
    np.testing.assert_allclose(lengths[0], np.linalg.norm(a.offsets[1:], axis=-1), atol=1e-6)
    np.testing.assert_allclose(lengths[-1], np.linalg.norm(b.offsets[1:], axis=-1), atol=1e-6)
    # the same as the library call on the same files
    walk = lafan[:300]
    direct = hierarchical_retarget(walk, a, translations=morph_translations(a, b, walk.num_frames))
    np.testing.assert_allclose(positions(result), positions(direct.motion), atol=1e-6)
    written = json.loads(report.read_text())
    assert written["target"] == f"morph:{start}->{end}"
    assert len(written["levels"]) == 5
    assert written["levels"][-1]["max_error"] <= 0.1


@pytest.mark.parametrize(
    "extra, phrase",
    [
        (["--target-from", "{a}", "--target-to", "{other}"], "different joints"),
        (["--target-from", "{a}"], "needs both --target-from"),
        (["--target", "{a}", "--target-from", "{a}", "--target-to", "{b}"], "give one character"),
        (
            ["--method", "copy", "--target-from", "{a}", "--target-to", "{b}"],
            "does not take --target-from/--target-to",
        ),
    ],
)
def test_cli_morph_errors_are_one_line_with_exit_code_2(
    capsys, data_dir, tmp_path, lafan, extra, phrase
):
    blubby = make_character(lafan.skeleton, preset="blubby")
    names = tuple("LeftKnee" if n == "LeftLeg" else n for n in blubby.names)
    files = {
        "{a}": _character_file(tmp_path / "a.bvh", lafan.skeleton),
        "{b}": _character_file(tmp_path / "b.bvh", blubby),
        "{other}": _character_file(tmp_path / "other.bvh", blubby.replace(names=names)),
    }
    args = ["run", str(data_dir / "lafan_walk.bvh"), "--frames", "0:60", "-o"]
    args += [str(tmp_path / "out.bvh"), *[files.get(x, x) for x in extra]]
    if "--method" not in extra:
        args += ["--method", "hierarchical"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert phrase in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out.bvh").exists()
