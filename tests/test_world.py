"""Up axis and length unit found once, from the body (issue 24, deliverable 3).

The readers record both on the skeleton (:mod:`retarget.humanoid.world`); ``run``, ``eval``,
the mapping, ``view`` and physics read them from there; ``--up``/``--unit``
override. Every measure is defined Y up: a Z-up copy of a pair measures the same.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from retarget import Motion, evaluate
from retarget.cli import main
from retarget.core import quat
from retarget.humanoid import world
from retarget.humanoid.characters import make_character
from retarget.humanoid.roles import height
from retarget.io import read_asf_amc, read_bvh, read_motion, write_bvh
from retarget.io.formats import read_skeleton
from retarget.methods import get_method
from retarget.pipeline import retarget

#: The unit each real file's body says (README of RETARGET_DATA/real: metres, inches,
#: CMU's ASF unit in its BVH conversions); the ASF/AMC pairs declare theirs.
UNITS = {
    "lafan_walk.bvh": "cm",
    "mocapbank.bvh": "cm",
    "real/assimp_boxing_toes.bvh": "cm",
    "real/bvhio_example.bvh": "in",
    "real/bvhpython_freebvh.bvh": "cm",
    "real/bvhtoolbox_walk01.bvh": "cm",
    "real/dme_blender_example.bvh": "in/0.45",
    "real/dme_xia_neutral_01.bvh": "in/0.45",
    "real/fairmotion_cmu_01_01.bvh": "in/0.45",
    "real/fairmotion_pfnn_hierarchy.bvh": "m",
    "real/pybvh_test3.bvh": "in",
    "real/pymo_emilya_walk.bvh": "in",
    "real/tomochi_optitrack.bvh": "m",
    "real/fairmotion_sinusoidal.bvh": "cm",  # not a humanoid: BVH's usual cm
    "vicon.amc": "in",  # declared (ASF :units)
    "real/01_01.amc": "in",
}


@pytest.mark.filterwarnings("ignore::retarget.core.errors.RetargetWarning")
@pytest.mark.parametrize("name", list(UNITS))
def test_unit_found_from_the_body(data_dir, real_dir, name):
    """Every real file reads in the unit its body says, and `info` says why."""
    motion = read_motion(data_dir / name)
    assert motion.skeleton.unit == UNITS[name]
    if name.endswith(".bvh"):
        unit, reason = world.find_unit(motion.skeleton)
        assert unit == UNITS[name]
        assert "BVH's usual cm" in reason or f" m in {world.CANDIDATES[unit]}," in reason
        if "sinusoidal" not in name:  # a plausible adult: 1.3 to 1.75 m from head to ankle
            metres = height(motion.skeleton) * world.metres_per_unit(unit)
            assert 1.3 <= metres <= 1.75, (name, metres)


def test_info_reports_unit_up_and_why(data_dir, real_dir, capsys):
    path = str(real_dir / "dme_xia_neutral_01.bvh")
    assert main(["info", path, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["unit"] == "in/0.45" and info["up"] == "y"
    assert "24.8 units from head to ankle" in info["unit_reason"]
    assert (
        "CMU's ASF unit" in info["unit_reason"] and "cm would make it 0.25 m" in info["unit_reason"]
    )
    assert "+y" in info["up_reason"]
    assert main(["info", str(real_dir / "pybvh_test3.bvh")]) == 0
    out = capsys.readouterr().out
    assert "\nup                      z\n" in out and "along +z" in out
    assert main(["info", str(real_dir / "pybvh_test3.bvh"), "--up", "y", "--unit", "cm"]) == 0
    out = capsys.readouterr().out
    assert (
        "given with --up" in out
        and "given with --unit" in out
        and "unit                    cm" in out
    )
    for bad in (["--up", "w"], ["--unit", "furlong"]):
        with pytest.raises(SystemExit) as exit_:
            main(["info", str(real_dir / "pybvh_test3.bvh"), *bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and ("axes: x, y, z" in err or "units: mm, cm" in err)
    assert main(["info", str(data_dir / "vicon.amc")]) == 0
    assert "declared by the ASF" in capsys.readouterr().out


@pytest.mark.parametrize("unit", list(world.CANDIDATES))
def test_a_body_written_in_any_unit_reads_back_in_it(lafan, tmp_path, unit):
    """A general construction: lafan's walk (cm) rescaled into each candidate unit and
    written as BVH (no unit field) reads back in that unit."""
    k = 1.0 / world.UNITS[unit]
    sk = lafan.skeleton
    scaled = Motion(
        sk.replace(offsets=sk.offsets * k, site_offsets=sk.site_offsets * k, unit=unit),
        lafan.root_position[:30] * k,
        lafan.rotations[:30],
        lafan.fps,
    )
    path = tmp_path / "walk.bvh"
    write_bvh(path, scaled)
    assert read_bvh(path).skeleton.unit == unit
    assert read_bvh(path, unit="cm").skeleton.unit == "cm"  # the option overrides


def test_bvh_written_from_an_amc_in_inches_reads_back_in_inches(data_dir, tmp_path):
    vicon = read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")[:20]
    assert vicon.skeleton.unit == "in"
    write_bvh(tmp_path / "v.bvh", vicon)
    assert read_bvh(tmp_path / "v.bvh").skeleton.unit == "in"


def test_up_found_from_the_frames(data_dir, real_dir, lafan, tmp_path):
    """LAFAN1's rest pose lies along +X, its frames are Y up; pybvh_test3's rest pose
    stands along +Y, its frames are Z up; any Y-up walk turned to any axis and written
    reads back with that axis."""
    assert lafan.skeleton.up == "y"
    assert "the rest pose lies along +x" in world.find_up(lafan.skeleton)[1]
    z_up = read_bvh(real_dir / "pybvh_test3.bvh")
    assert z_up.skeleton.up == "z" and world.find_up(z_up.skeleton)[0] == "y"
    assert read_skeleton(data_dir / "lafan_walk.bvh").up == "y"  # a target too
    walk = lafan[:60]
    for up in world.UP_AXES:
        write_bvh(tmp_path / "w.bvh", world.reorient(walk, up))
        back = read_bvh(tmp_path / "w.bvh")
        assert back.skeleton.up == up
        assert read_bvh(tmp_path / "w.bvh", up="y").skeleton.up == "y"  # the option


def test_a_character_file_of_one_rest_frame(lafan, real_dir, tmp_path):
    """Frames that only hold the rest pose say what the rest pose says: along ±X it lies
    in a Y-up world (a LAFAN1 character, as `retarget character` writes it); standing
    along Z, it is Z up."""
    for sk, up in ((lafan.skeleton, "y"), (read_bvh(real_dir / "pybvh_test3.bvh").skeleton, "z")):
        if up == "z":  # pybvh_test3's rest pose stands along +Y: turn it to stand along +Z
            turn = world.axes_between("y", "z")
            sk = sk.replace(
                offsets=quat.rotate(turn, sk.offsets),
                site_offsets=quat.rotate(turn, sk.site_offsets),
            )
        rest = Motion(sk, sk.offsets[:1], quat.identity((1, sk.num_joints)), 30.0)
        write_bvh(tmp_path / "c.bvh", rest)
        assert read_skeleton(tmp_path / "c.bvh").up == up
        assert "hold the rest pose" in world.find_up(sk, rest)[1]


def test_up_when_the_frames_do_not_say(mocapbank):
    """A still T-pose stands like any clip; frames that do not stand along one axis (the
    body tumbling about x through every direction) leave the rest pose to decide; no
    frames: the rest pose."""
    sk = mocapbank.skeleton.replace(up=None)
    still = Motion(sk, np.zeros((10, 3)), quat.identity((10, sk.num_joints)), 30.0)
    assert world.find_up(sk, still)[0] == "y"
    angles = np.linspace(0.0, 2.0 * np.pi, 40, endpoint=False)
    tumble_rot = quat.identity((40, sk.num_joints))
    tumble_rot[:, 0] = quat.quat_from_rotvec(angles[:, None] * [1.0, 0.0, 0.0])
    tumbling = Motion(sk, np.zeros((40, 3)), tumble_rot, 30.0)
    up, reason = world.find_up(sk, tumbling)
    assert up == "y" and "do not stand along one axis" in reason
    lying = world.reorient(still, "x").replace(skeleton=sk)  # (the record forgotten)
    assert world.find_up(lying.skeleton, lying)[0] == "x"  # what --up is for
    assert world.find_up(sk, still[:0])[0] == "y" and "no frames" in world.find_up(sk)[1]


def test_eval_is_the_same_on_a_z_up_copy(lafan, tmp_path, capsys):
    """`eval` on Z-up (and every other axis) copies of a source and its result gives the
    measures of the Y-up pair within 1e-6: every measure is defined Y up."""
    src = lafan[:300]
    res = get_method("hierarchical").run(src, make_character(src.skeleton, preset="blubby"))
    base = evaluate(src, res.motion, goals=res.goals)
    for up in ("z", "-z", "x", "-y"):
        # forget the record: found again from the frames, as a reader does
        sz, rz = (
            m.replace(skeleton=m.skeleton.replace(up=None))
            for m in (world.reorient(src, up), world.reorient(res.motion, up))
        )
        turn = world.axes_between("y", up)
        goals = {n: quat.rotate(turn, g) for n, g in res.goals.items()}
        other = evaluate(sz, rz, goals=goals)
        for key, value in base.items():
            if isinstance(value, float):
                assert other[key] == pytest.approx(value, abs=1e-6), (up, key)
    # and through files, with `retarget eval`
    measures = []
    for up in ("y", "z"):
        write_bvh(tmp_path / f"s{up}.bvh", world.reorient(src, up))
        write_bvh(tmp_path / f"r{up}.bvh", world.reorient(res.motion, up))
        assert (
            main(["eval", str(tmp_path / f"s{up}.bvh"), str(tmp_path / f"r{up}.bvh"), "--json"])
            == 0
        )
        measures.append(json.loads(capsys.readouterr().out))
    for key, value in measures[0].items():
        if isinstance(value, float):
            assert measures[1][key] == pytest.approx(value, abs=1e-6), key


@pytest.mark.filterwarnings("ignore::retarget.core.errors.RetargetWarning")
def test_run_report_and_eval_agree_on_a_z_up_source(real_dir, tmp_path, capsys):
    """pybvh_test3.bvh is Z up: `eval` of the written result gives the measures of
    `run`'s own report (they once said skate 3.3x, float 204 %, pose 17 degrees against
    0.73x, 0.001 degrees)."""
    src = str(real_dir / "pybvh_test3.bvh")
    out, report = tmp_path / "out.bvh", tmp_path / "out.json"
    args = ["run", src, "--target-preset", "blubby", "--method", "copy", "-o", str(out)]
    assert main([*args, "--report", str(report)]) == 0
    ran = json.loads(report.read_text())["measures"]
    capsys.readouterr()
    assert main(["eval", src, str(out), "--json"]) == 0
    measured = json.loads(capsys.readouterr().out)
    for key in ("skate_ratio", "float_result", "pose_deviation_deg", "penetration_result"):
        assert measured[key] == pytest.approx(ran[key], abs=1e-6), key
    assert measured["pose_deviation_deg"] < 1e-6 and measured["float_result"] < 5.0
    assert read_bvh(out).skeleton.up == "z"


@pytest.mark.filterwarnings("ignore::retarget.core.errors.RetargetWarning")
def test_a_change_of_axes_turns_the_root_only(real_dir, tmp_path):
    """The same hierarchy in other world axes goes through no role mapping: copy turns
    the root and nothing else, exactly, both ways (Z-up source onto its Y-up twin and
    back)."""
    z_up = read_bvh(real_dir / "pybvh_test3.bvh")
    write_bvh(tmp_path / "y.bvh", world.reorient(z_up, "y"))
    y_up = read_bvh(tmp_path / "y.bvh")
    assert y_up.skeleton.up == "y" and z_up.skeleton.up == "z"
    for source, target in ((z_up, y_up), (y_up, z_up)):
        outcome = retarget(source, target.skeleton, "copy")
        report = outcome.report
        assert report["mapping"]["mapped"] is False
        assert report["mapping"]["bone_direction_error_mean_deg"] < 1e-5
        out = outcome.output
        assert out.skeleton is target.skeleton
        np.testing.assert_array_equal(out.rotations[:, 1:], source.rotations[:, 1:])
        turn = world.axes_between(source.skeleton.up, target.skeleton.up)
        np.testing.assert_allclose(
            quat.angle(out.rotations[:, 0], quat.multiply(turn, source.rotations[:, 0])),
            0.0,
            atol=1e-7,
        )
        assert world.find_up(out.skeleton, out)[0] == target.skeleton.up


def test_physics_body_in_si_from_the_unit(real_dir):
    """The mass model is in metres whatever the file's unit: a metre file and the same
    body in inches give one body."""
    from retarget.physics import body_model

    metres = read_bvh(real_dir / "tomochi_optitrack.bvh")[:2]
    assert metres.skeleton.unit == "m"
    k = 1.0 / 0.0254
    sk = metres.skeleton
    inches = sk.replace(offsets=sk.offsets * k, site_offsets=sk.site_offsets * k, unit="in")
    a, b = body_model(sk, 70.0), body_model(inches, 70.0)
    np.testing.assert_allclose(a.inertia, b.inertia, rtol=1e-9, atol=1e-12)
