"""Robots as targets (issue 27): MJCF and URDF read through MuJoCo into the skeleton
model, their hinges gathered for the methods and carried back, trajectories written
and measured. MuJoCo's own kinematics is the reference."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import missing
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget.core import quat
from retarget.core.errors import FormatError, RetargetError, RetargetWarning
from retarget.core.kinematics import forward_kinematics
from retarget.core.motion import Motion
from retarget.core.skeleton import Skeleton
from retarget.humanoid.anatomy import hinge_axis
from retarget.humanoid.roles import find_roles
from retarget.ik.limb import limb_from_roles
from retarget.io.formats import read_motion, read_trajectories, write_trajectories
from retarget.io.trajectories import RobotTrajectory
from retarget.targets.robot.hinges import (
    _continuous,
    _hinge_path,
    _solve_hinges,
    gather_hinges,
    geom_capsules,
    to_robot,
)
from retarget.targets.robot.measures import standing_height
from retarget.targets.robot.model import Geom, read_robot
from retarget.targets.robot.trajectories import joint_trajectories, robot_motion

ALEXANDER = Path(__file__).parent / "data" / "robots" / "ihmc_alexander" / "ihmc_alexander.urdf"
ICUB = Path(__file__).parent / "data" / "robots" / "icub" / "icub.urdf"
ROMEO = Path(__file__).parent / "data" / "robots" / "romeo" / "romeo.urdf"
JVRC = Path(__file__).parent / "data" / "robots" / "jvrc" / "jvrc.urdf"


@pytest.fixture(scope="module")
def g1_path(data_dir) -> Path:
    path = data_dir.parent / "robots" / "unitree_g1" / "g1_29dof.xml"
    if not path.is_file():
        missing(f"{path} not found (../shared/robots beside RETARGET_DATA)")
    return path


@pytest.fixture(scope="module")
def g1(g1_path):
    return read_robot(g1_path)


@pytest.fixture(scope="module")
def alexander():
    return read_robot(ALEXANDER)


@pytest.fixture(scope="module")
def icub():
    with pytest.warns(RetargetWarning, match="inertia"):  # (14 links of zero inertia)
        return read_robot(ICUB)


@pytest.fixture(scope="module")
def romeo():
    with pytest.warns(RetargetWarning, match="inertia"):  # (two break A + B >= C)
        return read_robot(ROMEO)


@pytest.fixture(scope="module")
def jvrc():
    return read_robot(JVRC)


def _random_trajectory(robot, n: int, seed: int) -> RobotTrajectory:
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(robot.lower), robot.lower, -np.pi)
    hi = np.where(np.isfinite(robot.upper), robot.upper, np.pi)
    dof = rng.uniform(lo, hi, size=(n, robot.num_dofs))
    base = quat.normalize(rng.normal(size=(n, 4)))
    root = rng.normal(size=(n, 3))
    return RobotTrajectory(root, base, dof, 30.0, robot.joint_names)


@pytest.mark.parametrize("which", ["g1", "alexander", "icub", "romeo", "jvrc"])
def test_forward_kinematics_equals_mujoco(which, request):
    """Every hinge's world position and axis, by our FK on the skeleton read, equal
    MuJoCo's (``xanchor``, ``xaxis``) for random base poses and joint angles in range."""
    import mujoco

    robot = request.getfixturevalue(which)
    model = robot.model  # (MuJoCo's own, compiled once with the robot)
    data = mujoco.MjData(model)
    traj = _random_trajectory(robot, 20, seed=3)
    motion = robot_motion(robot, traj)
    pos, rot = forward_kinematics(robot.skeleton, motion.root_position, motion.rotations)
    axes = quat.rotate(robot.skeleton.axes, np.array([1.0, 0.0, 0.0]))
    for k in range(traj.num_frames):
        data.qpos[:7] = np.concatenate([traj.root_pos[k], traj.root_quat[k]])
        for d, name in enumerate(robot.joint_names):
            data.qpos[model.joint(name).qposadr[0]] = traj.dof_pos[k, d]
        mujoco.mj_kinematics(model, data)
        for d, name in enumerate(robot.joint_names):
            j = robot.dof_joint[d]
            jid = model.joint(name).id
            np.testing.assert_allclose(pos[k, j], data.xanchor[jid], atol=1e-9)
            np.testing.assert_allclose(quat.rotate(rot[k, j], axes[j]), data.xaxis[jid], atol=1e-9)


def test_g1_read_as_it_is(g1):
    assert g1.num_dofs == 29 and g1.skeleton.unit == "m" and g1.skeleton.up == "z"
    assert g1.joint_names[:4] == (
        "left_hip_pitch_joint",
        "left_hip_roll_joint",
        "left_hip_yaw_joint",
        "left_knee_joint",
    )
    assert 34.0 < g1.mass < 35.0  # the model's bodies, kg
    assert 1.25 < standing_height(g1) < 1.40  # the G1 is 1.32 m
    knee = g1.joint_names.index("left_knee_joint")
    assert (g1.lower[knee], g1.upper[knee]) == pytest.approx((-0.087267, 2.8798))
    assert g1.effort[knee] == pytest.approx(139.0)
    assert not g1.fixed_base


def test_urdf_root_floated_and_velocity_limits_read(alexander):
    """MuJoCo welds a URDF's root to the world; the reader floats it (and says so), and
    reads the ``<limit velocity>`` MuJoCo's importer drops."""
    assert alexander.fixed_base
    assert alexander.skeleton.names[0] == "PELVIS_LINK"
    assert alexander.num_dofs == 29
    assert np.isfinite(alexander.velocity).all() and (alexander.velocity > 0).all()
    assert 1.55 < standing_height(alexander) < 1.65


@pytest.mark.parametrize(
    ("which", "expected"),
    [
        (
            "g1",
            {
                "left_hip": "left_hip_pitch_joint",
                "left_knee": "left_knee_joint",
                "left_ankle": "left_ankle_pitch_joint",
                "right_elbow": "right_elbow_joint",
                "right_wrist": "right_wrist_roll_joint",
                "hips": "pelvis",
            },
        ),
        (
            "alexander",
            {
                "left_hip": "LEFT_HIP_X",
                "left_knee": "LEFT_KNEE_Y",
                "left_ankle": "LEFT_ANKLE_Y",
                "right_elbow": "RIGHT_ELBOW_Y",
                "hips": "PELVIS_LINK",
            },
        ),
        (
            "icub",
            {
                "left_hip": "l_hip_pitch",
                "left_knee": "l_knee",
                "left_ankle": "l_ankle_pitch",
                "right_elbow": "r_elbow",
                "right_wrist": "r_wrist_prosup",
                "hips": "base_link",
                "head": "neck_pitch",
            },
        ),
        (
            "romeo",
            {
                "left_hip": "LHipYaw",
                "left_knee": "LKneePitch",
                "left_ankle": "LAnklePitch",
                "right_elbow": "RElbowYaw",  # (its ElbowRoll twists the upper arm: shoulder)
                "right_wrist": "RWristRoll",
                "hips": "base_link",
                "neck": "NeckYaw",
            },
        ),
        (
            "jvrc",
            {
                "left_hip": "L_HIP_P",
                "left_knee": "L_KNEE",
                "left_ankle": "L_ANKLE_R",
                "right_elbow": "R_ELBOW_P",
                "right_wrist": "R_ELBOW_Y",
                "hips": "base_link",
                "head": "NECK_Y",
            },
        ),
    ],
)
def test_roles_of_robots_read_from_their_bodies(which, expected, request):
    """Hip pitch, roll and yaw (in either maker's order) make one hip; the knee (elbow)
    the hinge between, the bend, not a twist."""
    robot = request.getfixturevalue(which)
    method = gather_hinges(robot.skeleton).skeleton
    roles = find_roles(method)
    got = {r: method.point_names[roles[r]] for r in expected}
    assert got == expected
    hip = method.index(expected["left_hip"])
    assert len(method.euler_orders[hip]) == 3  # a ball for the method


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1.2, 1.2), min_size=3, max_size=3))
def test_davenport_split_recovers_the_hinge_angles(angles):
    """Three hinges each square to the next: their product split back into the angles
    (the branch within the ranges)."""
    robot = read_robot(ALEXANDER)
    sk = robot.skeleton
    group = [sk.index(n) for n in ("LEFT_HIP_X", "LEFT_HIP_Z", "LEFT_HIP_Y")]
    theta = np.asarray(angles)[None]
    parts = [quat.quat_from_rotvec(theta[0, i] * hinge_axis(sk, k)) for i, k in enumerate(group)]
    product = quat.multiply(quat.multiply(parts[0], parts[1]), parts[2])[None]
    lo, hi = np.full(3, -1.3), np.full(3, 1.3)
    got = _solve_hinges(sk, group, product, lo, hi)[0]  # (branches, 3)
    assert np.abs(got - theta).max(axis=1).min() < 1e-8  # one of the two is the angles


@pytest.mark.parametrize(
    "names", [("LEFT_HIP_X", "LEFT_HIP_Z", "LEFT_HIP_Y"), ("LEFT_ANKLE_Y", "LEFT_ANKLE_X")]
)
def test_hinge_path_frame_by_frame_is_the_batched_one(names):
    """The compiled split, each frame from the last one's angles, against the numpy one
    (every frame from zero, then the branches and turns chosen along the path), on a
    wandering rotation that crosses the ranges' ends and the branches' seam: the same
    where the split is in the ranges; outside them the compiled one's faint pull into
    the ranges moves it no further out, and the rotation still within 0.15 rad."""
    sk = read_robot(ALEXANDER).skeleton
    group = [sk.index(n) for n in names]
    rng = np.random.default_rng(3)
    steps = rng.normal(size=(400, len(group))) * 0.08
    theta = np.cumsum(steps, axis=0) + 0.3
    parts = [
        quat.quat_from_rotvec(theta[:, i, None] * hinge_axis(sk, k)) for i, k in enumerate(group)
    ]
    wanted = parts[0]
    for p in parts[1:]:
        wanted = quat.multiply(wanted, p)
    lo, hi = np.full(len(group), -1.0), np.full(len(group), 1.5)
    ours = _hinge_path(sk, group, wanted, lo, hi)
    reference = _continuous(_solve_hinges(sk, group, wanted, lo, hi), lo, hi)
    inside = ((reference >= lo) & (reference <= hi)).all(axis=1)
    assert inside.mean() > 0.3 and (~inside).sum() > 20  # both kinds of frame
    np.testing.assert_allclose(ours[inside], reference[inside], atol=1e-8)

    def outside(t):
        return (np.maximum(lo - t, 0) + np.maximum(t - hi, 0)).sum(axis=1)

    assert (outside(ours) <= outside(reference) + 1e-9).all()
    got = [quat.quat_from_rotvec(ours[:, i, None] * hinge_axis(sk, k)) for i, k in enumerate(group)]
    product = got[0]
    for p in got[1:]:
        product = quat.multiply(product, p)
    assert quat.angle(product[~inside], wanted[~inside]).max() < 0.15
    if len(group) == 3:  # exact where in range: the angles themselves, up to whole turns
        err = np.abs(np.angle(np.exp(1j * (ours - theta))))[
            inside & ((theta >= lo) & (theta <= hi)).all(1)
        ]
        assert err.max() < 1e-8


def test_hinge_path_in_the_ranges_at_gimbal_lock():
    """Three hinges z, x, z (TALOS's shoulder) with the middle one at zero: the first and
    last turn the rotation alike, and the split takes the share inside the ranges."""
    sk = Skeleton(
        names=("base", "a", "b", "c"),
        parents=np.array([-1, 0, 1, 2]),
        offsets=np.zeros((4, 3)),
        channels=(
            ("Zrotation", "Yrotation", "Xrotation"),
            ("Xrotation",),
            ("Xrotation",),
            ("Xrotation",),
        ),
        axes=np.array(
            [
                [1.0, 0, 0, 0],
                quat.quat_between([1.0, 0, 0], [0, 0, 1.0]),
                [1.0, 0, 0, 0],
                quat.quat_between([1.0, 0, 0], [0, 0, 1.0]),
            ]
        ),
        limits=np.array(
            [np.tile([-np.inf, np.inf], (3, 1))]
            + [np.array([[-0.3, 0.3], [-np.inf, np.inf], [-np.inf, np.inf]])] * 3
        ),
    )
    twist = np.linspace(-1.0, 1.0, 50)  # about z: more than either hinge's range alone
    wanted = quat.quat_from_rotvec(twist[:, None] * [0.0, 0.0, 1.0])
    lo, hi = np.full(3, -0.3), np.full(3, 0.3)
    got = _hinge_path(sk, [1, 2, 3], wanted, lo, hi)
    total = got[:, 0] + got[:, 2]
    reach = np.abs(twist) <= 0.6
    np.testing.assert_allclose(total[reach], twist[reach], atol=1e-6)
    assert (np.abs(got[reach]) <= 0.3 + 1e-3).all()


def test_gathered_and_carried_back_is_the_robot(g1):
    """A robot pose put on the method skeleton (each ball the product of its hinges, at
    the hinges' centre) and carried back: the feet's ends where the method put them to
    a millimetre, every segment between the method's joints pointing as the method
    pointed it to a degree on average, every point to 1.5 cm (a ball stands for three
    hinges a few centimetres apart only nearly: the method's points are up to 2 cm
    from the pose's own), with hinge angles near the pose's."""
    g = gather_hinges(g1.skeleton)
    ends = _random_trajectory(g1, 2, seed=5)  # a motion between two poses (the IK pass
    t = np.linspace(0.0, 1.0, 12)[:, None]  # damps its corrections' changes in time)
    traj = RobotTrajectory(
        (1 - t) * ends.root_pos[0] + t * ends.root_pos[1],
        quat.slerp(ends.root_quat[0], ends.root_quat[1], t[:, 0]),
        0.5 * ((1 - t) * ends.dof_pos[0] + t * ends.dof_pos[1]),
        30.0,
    )
    motion = robot_motion(g1, traj)
    rot = np.empty((traj.num_frames, g.skeleton.num_joints, 4))
    for m, group in enumerate(g.members):
        q = motion.rotations[:, group[0]]
        for k in group[1:]:
            q = quat.multiply(q, motion.rotations[:, k])
        rot[:, m] = q
    planned = Motion(g.skeleton, motion.root_position, rot, 30.0)
    back, fit = to_robot(g, planned)
    assert fit.clamped == 0 and fit.end_error < 1e-2
    pm, _ = forward_kinematics(g.skeleton, planned.root_position, planned.rotations)
    pr, _ = forward_kinematics(g.rig, back.root_position, back.rotations)
    error = np.linalg.norm(pr[:, g.points] - pm, axis=-1).max(axis=0)  # per method point
    feet = [g.skeleton.index(f"{side}_ankle_roll_joint_end") for side in ("left", "right")]
    assert error[feet].max() < 1e-3
    assert error.max() < 1.5e-2
    parents = g.skeleton.parents[1:]
    ours = pr[:, g.points[1 : g.skeleton.num_joints]] - pr[:, g.points[parents]]
    theirs = pm[:, 1 : g.skeleton.num_joints] - pm[:, parents]
    cos = (ours * theirs).sum(-1) / np.linalg.norm(ours, axis=-1) / np.linalg.norm(theirs, axis=-1)
    assert np.degrees(np.arccos(np.clip(cos, -1, 1))).mean() < 1.0
    got = joint_trajectories(g1, back)
    assert np.abs(got.dof_pos - traj.dof_pos).max() < 0.35


def test_trajectories_written_as_users_load_them(g1, tmp_path):
    traj = _random_trajectory(g1, 5, seed=1)
    write_trajectories(tmp_path / "a.npz", traj)
    with np.load(tmp_path / "a.npz") as z:
        assert list(z["joint_names"]) == list(g1.joint_names)
        np.testing.assert_array_equal(z["dof_pos"], traj.dof_pos)
        assert float(z["fps"]) == 30.0
    write_trajectories(tmp_path / "a.csv", traj)
    header, *rows = (tmp_path / "a.csv").read_text().splitlines()
    assert header.split(",")[:8] == [
        "time",
        "root_x",
        "root_y",
        "root_z",
        "root_qw",
        "root_qx",
        "root_qy",
        "root_qz",
    ]
    assert header.split(",")[8:] == list(g1.joint_names) and len(rows) == 5
    with pytest.raises(RetargetError, match=r"npz or \.csv"):
        write_trajectories(tmp_path / "a.bvh", traj)
    for name in ("a.npz", "a.csv"):  # read back, columns by name
        back = read_trajectories(tmp_path / name, g1.joint_names)
        np.testing.assert_allclose(back.dof_pos, traj.dof_pos, atol=1e-8)
        np.testing.assert_allclose(back.root_quat, traj.root_quat, atol=1e-8)
        assert back.fps == pytest.approx(30.0)
    order = np.arange(g1.num_dofs)[::-1]  # another tool's column order
    np.savez(
        tmp_path / "b.npz",
        root_pos=traj.root_pos,
        root_quat=traj.root_quat,
        dof_pos=traj.dof_pos[:, order],
        fps=30.0,
        joint_names=np.array(g1.joint_names)[order],
    )
    np.testing.assert_array_equal(
        read_trajectories(tmp_path / "b.npz", g1.joint_names).dof_pos, traj.dof_pos
    )


def test_trajectories_that_cannot_be_read(g1, tmp_path):
    """One clear error each: a key missing, another robot's joints, a short row, NaN."""
    names = g1.joint_names
    traj = _random_trajectory(g1, 4, seed=2)
    np.savez(tmp_path / "nokey.npz", root_pos=traj.root_pos, dof_pos=traj.dof_pos, fps=30.0)
    with pytest.raises(FormatError, match="root_quat"):
        read_trajectories(tmp_path / "nokey.npz", names)
    other = np.array([f"j{k}" for k in range(g1.num_dofs)])
    np.savez(
        tmp_path / "other.npz",
        root_pos=traj.root_pos,
        root_quat=traj.root_quat,
        dof_pos=traj.dof_pos,
        fps=30.0,
        joint_names=other,
    )
    with pytest.raises(FormatError, match="joints"):
        read_trajectories(tmp_path / "other.npz", names)
    write_trajectories(tmp_path / "a.csv", traj)
    lines = (tmp_path / "a.csv").read_text().splitlines()
    (tmp_path / "short.csv").write_text("\n".join([lines[0], lines[1].rsplit(",", 1)[0]]))
    with pytest.raises(FormatError, match=r"short\.csv"):
        read_trajectories(tmp_path / "short.csv", names)
    data = {"root_pos": traj.root_pos, "root_quat": traj.root_quat}
    dof = np.where(np.arange(g1.num_dofs) == 3, np.nan, traj.dof_pos)
    np.savez(tmp_path / "nan.npz", **data, dof_pos=dof, fps=30.0)
    with pytest.raises(FormatError, match="finite"):
        read_trajectories(tmp_path / "nan.npz", names)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "retarget.cli", *args], capture_output=True, text=True, check=False
    )


def test_run_onto_robots_with_no_configuration(data_dir, g1_path, tmp_path):
    """``retarget run SRC --target robot`` onto the G1 (MJCF) and Alexander (URDF): the
    joint trajectories, inside the joint ranges, and the robot measures in the report."""
    walk = str(data_dir / "lafan_walk.bvh")
    for robot_path in (g1_path, ALEXANDER):
        out, report = tmp_path / f"{robot_path.stem}.npz", tmp_path / f"{robot_path.stem}.json"
        done = _cli(
            "run",
            walk,
            "--target",
            str(robot_path),
            "--frames",
            "0:60",
            "-o",
            str(out),
            "--report",
            str(report),
        )
        assert done.returncode == 0, done.stderr
        robot = read_robot(robot_path)
        with np.load(out) as z:
            dof = z["dof_pos"]
            assert dof.shape == (60, robot.num_dofs) and np.isfinite(dof).all()
            assert (dof >= robot.lower - 1e-9).all() and (dof <= robot.upper + 1e-9).all()
        measures = json.loads(report.read_text())["measures"]
        assert measures["limit_violations"] == 0 and measures["frames"] == 60
        # the same measures from `eval --robot`, on the file written
        done = _cli(
            "eval", walk, str(out), "--robot", str(robot_path), "--frames", "0:60", "--json"
        )
        assert done.returncode == 0, done.stderr
        again = json.loads(done.stdout)
        for key in ("skate_ratio", "float_cm", "self_collision_share", "segment_direction_deg"):
            assert again[key] == pytest.approx(measures[key], rel=1e-6, abs=1e-9)
    g1_out = tmp_path / f"{g1_path.stem}.npz"
    done = _cli("eval", walk, str(g1_out), "--robot", str(g1_path))  # 60 frames, not 7,184
    assert done.returncode == 2 and "--frames" in done.stderr
    done = _cli("eval", walk, str(out), "--robot", str(g1_path), "--frames", "0:60")
    assert done.returncode == 2 and "joints" in done.stderr  # Alexander's, not the G1's


def test_map_onto_a_robot(data_dir, g1_path):
    """``retarget map SRC robot.xml``: the roles found on the robot's gathered joints."""
    done = _cli("map", str(data_dir / "lafan_walk.bvh"), str(g1_path))
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line}
    assert rows["left_hip"] == ["LeftUpLeg", "left_hip_pitch_joint"]
    assert rows["right_ankle"] == ["RightFoot", "right_ankle_pitch_joint"]
    assert "aligned at source frame" in done.stdout  # LAFAN1's rest pose lies down


def test_robot_info_and_errors(g1_path, tmp_path):
    done = _cli("info", str(g1_path), "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["dofs"] == 29 and info["roles"]["left_knee"] == "left_knee_joint"
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link\n")
    done = _cli("info", str(bad))
    assert done.returncode == 2
    assert (
        done.stderr.count("\n") == 1
        and "bad.urdf" in done.stderr
        and "Traceback" not in done.stderr
    )


def test_capsules_of_the_primitives():
    """A sphere and a capsule as they are; a cylinder within its length; a box as a row
    of capsules along its longest axis, turned with it, their radius its smallest
    half-extent, across its middle one (not the ball round its corners), every point of
    them inside the box and its faces' middles reached."""
    turn = quat.quat_from_rotvec(np.array([0.0, 0.5 * np.pi, 0.0]))  # z onto x
    at = np.array([0.1, 0.2, 0.3])

    def geom(kind, size):
        return Geom(3, kind, np.asarray(size, float), at, turn, np.zeros((8, 3)))

    caps = geom_capsules(
        [
            geom("sphere", [0.05, 0, 0]),
            geom("capsule", [0.02, 0.1, 0]),
            geom("cylinder", [0.02, 0.1, 0]),
            geom("box", [0.03, 0.05, 0.2]),
        ]
    )
    assert list(caps.joints) == [3] * 5  # the box: two capsules
    np.testing.assert_allclose(caps.radius, [0.05, 0.02, 0.02, 0.03, 0.03])
    np.testing.assert_allclose(caps.a[0], at)
    np.testing.assert_allclose(caps.b[0], at)
    half = np.linalg.norm(caps.b - caps.a, axis=1) / 2
    np.testing.assert_allclose(half, [0.0, 0.1, 0.08, 0.17, 0.17], atol=1e-12)
    direction = (caps.b - caps.a)[1:] / (2 * half[1:, None])
    np.testing.assert_allclose(np.abs(direction[:, 0]), 1.0, atol=1e-12)  # along the turned z
    np.testing.assert_allclose((caps.a + caps.b)[:3] / 2, np.tile(at, (3, 1)), atol=1e-12)
    # the box's capsules in its frame: along z, at y = ±(0.05 − 0.03), inside the box
    box = quat.rotate(quat.conjugate(turn), np.stack([caps.a[3:], caps.b[3:]]) - at)
    np.testing.assert_allclose(np.sort(box[..., 1], axis=None), [-0.02, -0.02, 0.02, 0.02])
    extent = np.abs(box).max(axis=(0, 1)) + np.full(3, 0.03)
    np.testing.assert_allclose(extent, [0.03, 0.05, 0.2], atol=1e-12)


def test_batch_onto_a_robot(data_dir, g1_path, tmp_path):
    """``retarget batch`` onto a robot: joint trajectories per clip (npz by default, csv
    on request) and the robot measures in the manifest; a character's format refused."""
    from retarget.io.bvh import read_bvh, write_bvh

    walk = read_bvh(data_dir / "lafan_walk.bvh")
    clips = tmp_path / "clips"
    clips.mkdir()
    for k in range(2):
        write_bvh(clips / f"c{k}.bvh", walk[300 * k : 300 * k + 40])
    for fmt in ("", "csv"):
        out = tmp_path / f"out{fmt}"
        extra = ["--format", fmt] if fmt else []
        done = _cli(
            "batch", str(clips / "*.bvh"), "--target", str(g1_path), "--out", str(out), *extra
        )
        assert done.returncode == 0, done.stderr
        records = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
        assert [r["status"] for r in records] == ["ok", "ok"]
        assert all(r["measures"]["limit_violations"] == 0 for r in records)
        suffix = f".{fmt or 'npz'}"
        for k in range(2):
            back = read_trajectories(out / f"c{k}{suffix}", read_robot(g1_path).joint_names)
            assert back.dof_pos.shape == (40, 29)
    done = _cli(
        "batch", str(clips / "*.bvh"), "--target", str(g1_path), "--out", str(tmp_path / "x"),
        "--format", "bvh",
    )  # fmt: skip
    assert done.returncode == 2 and "batch writes .npz or .csv onto" in done.stderr


def test_physics_onto_a_robot_with_its_own_mass_model(data_dir, g1_path, g1, tmp_path):
    """``--method physics`` onto a robot: Tak & Ko's filter with the robot's own masses
    (the model's total, every link somewhere) and its actuators' torque limits."""
    from retarget.targets.robot.hinges import inertia_on

    g = gather_hinges(g1.skeleton)
    mass, com, inertia, limits = inertia_on(g, g1, g.skeleton)
    assert mass.sum() == pytest.approx(g1.masses.sum(), rel=1e-12)
    assert (np.linalg.eigvalsh(inertia[mass > 0]) > -1e-12).all()
    # the whole body's centre of mass at rest, from the folded model and from MuJoCo
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(g1_path))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    pos, _ = forward_kinematics(g.skeleton, np.zeros(3), quat.identity((g.skeleton.num_joints,)))
    ours = ((pos[: len(mass)] + com) * mass[:, None]).sum(0) / mass.sum()
    theirs = data.subtree_com[1] - data.xpos[1]  # about the pelvis, z up, rest = qpos0
    np.testing.assert_allclose(ours, theirs, atol=1e-9)
    assert limits["left_knee_joint"] == 139.0  # the knee's actuator
    out, report = tmp_path / "p.npz", tmp_path / "p.json"
    args = ["run", str(data_dir / "lafan_walk.bvh"), "--target", str(g1_path)]
    done = _cli(
        *args, "--method", "physics", "--frames", "0:60", "-o", str(out), "--report", str(report)
    )
    assert done.returncode == 0, done.stderr
    rep = json.loads(report.read_text())
    assert rep["total_mass"] == pytest.approx(g1.masses.sum())
    assert rep["torque_limits"]["left_knee_joint"] == 139.0


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(-3.0, 3.0), min_size=2, max_size=40),
    st.floats(0.01, 1.0),
)
def test_rate_limit_keeps_the_bound_and_what_is_within_it(path, step):
    """Every frame-to-frame change at most ``step``; a path already within it is left
    exactly as it is; a constant path stays."""
    from retarget.targets.robot.hinges import _rate_limit

    theta = np.asarray(path)[:, None]
    out = _rate_limit(theta, np.array([step]))
    assert (np.abs(np.diff(out, axis=0)) <= step + 1e-12).all()
    if (np.abs(np.diff(theta, axis=0)) <= step).all():
        np.testing.assert_array_equal(out, theta)
    free = _rate_limit(theta, np.array([np.inf]))
    np.testing.assert_array_equal(free, theta)


def test_velocity_limit_onto_a_robot(data_dir, g1_path, tmp_path):
    """``--velocity-limit`` where the model gives none: the hinges slowed are counted,
    and the robot measures (with the same limit) find none over it."""
    out, report = tmp_path / "v.npz", tmp_path / "v.json"
    args = ["run", str(data_dir / "lafan_walk.bvh"), "--target", str(g1_path), "--frames"]
    done = _cli(*args, "0:90", "--velocity-limit", "1", "-o", str(out), "--report", str(report))
    assert done.returncode == 0, done.stderr
    ran = json.loads(report.read_text())
    assert ran["robot"]["slowed"] > 0 and ran["measures"]["velocity_violations"] == 0
    with np.load(out) as z:
        speed = np.abs(np.diff(z["dof_pos"], axis=0)) * float(z["fps"])
    assert speed.max() <= 1.0 + 1e-6


def test_soles_held_over_the_floor_where_the_method_puts_them_under(g1):
    """A method pose 3 cm too low (its feet's ends under the floor, which the IK pass
    follows firmly): the feet are placed higher by the sink of their soles
    (``robot._lift``), and no sole ends deeper than the slack (0.1 % of the height)."""
    from retarget.humanoid.roles import height as role_height
    from retarget.targets.robot.hinges import _SLACK, _sole_points

    g = gather_hinges(g1.skeleton)
    sk = g.skeleton
    rest = quat.identity((4, sk.num_joints))
    pos, _ = forward_kinematics(g1.skeleton, np.zeros(3), quat.identity((g1.skeleton.num_joints,)))
    feet = [g1.skeleton.index(f"{s}_ankle_roll_joint") for s in ("left", "right")]
    lowest = min(float((pos[j] + _sole_points(j, g1.geoms))[:, 2].min()) for j in feet)
    root = np.tile([0.0, 0.0, -lowest - 0.03], (4, 1))
    back, fit = to_robot(g, Motion(sk, root, rest, 30.0), g1.geoms)
    assert fit.hardened == 0  # placed higher, not pushed up by a firmer floor
    p, w = forward_kinematics(g1.skeleton, back.root_position, back.rotations)
    soles = np.concatenate(
        [p[:, j, None] + quat.rotate(w[:, j, None], _sole_points(j, g1.geoms)) for j in feet], 1
    )
    tall = role_height(sk, find_roles(sk))
    assert soles[..., 2].min() > -_SLACK * tall


def test_a_lift_is_held_and_eased():
    """``robot._held``: a sink followed frame by frame has the kinks of its lowest point
    (heel, then toe) and a heel strike's quick rise; held and eased, the foot is never
    lowered by more than a few per cent of a sink, and its third differences (the
    jerk it adds to the legs) are a fraction of the raw lift's."""
    from retarget.targets.robot.hinges import _held

    t = np.arange(120)
    heel = np.maximum(0.0, 0.01 * np.sin(t / 6.0))  # rises and falls, with kinks at 0
    strike = np.where((t > 60) & (t < 64), 0.02, 0.0)  # a three-frame heel strike
    raw = np.maximum(heel, strike)
    held = _held(raw, 6)
    assert np.all(held >= 0.95 * raw - 1e-12)
    assert np.abs(np.diff(held, 3)).max() < 0.25 * np.abs(np.diff(raw, 3)).max()
    assert np.array_equal(_held(raw, 0), raw)
    np.testing.assert_allclose(_held(np.full(10, 0.03), 6), 0.03)


# -- a robot of numbered hinges, meshes under package:// ---------------------------------------
def _stl_box(path: Path, lo, hi) -> None:
    """A box mesh (binary STL) from corner ``lo`` to ``hi``."""
    import struct

    c = np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
             (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]  # fmt: skip
    out = bytearray(b"box".ljust(80, b" ")) + struct.pack("<I", len(faces))
    for f in faces:
        out += struct.pack("<12fH", 0, 0, 0, *c[f[0]], *c[f[1]], *c[f[2]], 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))


def _numbered_robot(folder: Path) -> Path:
    """A small humanoid as ROS packages write them: joints numbered, not named by axis
    (leg_left_1..6, arm_left_1..5), hinges of a hip and an ankle at one place, a
    shoulder's first hinge 10 cm in from the other two, feet meshes under
    ``package://toy_description/meshes`` whose soles reach further behind the ankle
    than ahead of it."""
    pkg = folder / "toy_description"
    _stl_box(pkg / "meshes" / "foot.stl", (-0.14, -0.05, -0.08), (0.10, 0.05, 0.0))
    _stl_box(pkg / "meshes" / "body.stl", (-0.08, -0.12, -0.05), (0.08, 0.12, 0.45))
    links = ['<link name="base_link"><inertial><mass value="10"/><inertia ixx="0.1" ixy="0" '
             'ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial><collision><geometry><mesh '
             'filename="package://toy_description/meshes/body.stl"/></geometry></collision>'
             "</link>"]  # fmt: skip
    joints = []

    def chain(prefix, specs, parent):
        for k, (xyz, axis, lo, hi, foot) in enumerate(specs, start=1):
            name = f"{prefix}_{k}"
            geom = (
                '<collision><geometry><mesh filename="package://toy_description/meshes/'
                'foot.stl"/></geometry></collision>'
                if foot
                else ""
            )
            links.append(
                f'<link name="{name}_link"><inertial><mass value="1"/><inertia ixx="0.01" '
                f'ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>{geom}</link>'
            )
            joints.append(
                f'<joint name="{name}_joint" type="revolute"><parent link="{parent}"/>'
                f'<child link="{name}_link"/><origin xyz="{xyz}"/><axis xyz="{axis}"/>'
                f'<limit lower="{lo}" upper="{hi}" effort="50" velocity="8"/></joint>'
            )
            parent = f"{name}_link"

    for side, y in (("left", 1), ("right", -1)):
        chain(
            f"leg_{side}",
            [
                (f"0 {0.09 * y} -0.1", "0 0 1", -0.5, 0.5, False),
                ("0 0 0", "1 0 0", -0.5, 0.5, False),
                ("0 0 0", "0 1 0", -2.0, 0.8, False),
                ("0 0 -0.40", "0 1 0", 0.0, 2.6, False),  # the knee
                ("0 0 -0.38", "0 1 0", -1.0, 0.8, False),
                ("0 0 0", "1 0 0", -0.5, 0.5, True),
            ],
            "base_link",
        )
        chain(
            f"arm_{side}",
            [
                (f"0 {0.12 * y} 0.40", "0 0 1", -1.6, 1.6, False),
                (f"0 {0.10 * y} 0", "1 0 0", -2.8, 2.8, False),  # 10 cm out
                ("0 0 0", "0 0 1", -2.4, 2.4, False),
                ("0 0 -0.27", "0 1 0", -2.2, 0.0, False),  # the elbow
                ("0 0 -0.25", "0 0 1", -2.5, 2.5, False),
            ],
            "base_link",
        )
    urdf = pkg / "urdf" / "toy.urdf"
    urdf.parent.mkdir(parents=True, exist_ok=True)
    urdf.write_text('<robot name="toy">' + "".join(links + joints) + "</robot>")
    return urdf


def test_a_robot_of_numbered_hinges_from_a_ros_package(tmp_path):
    """No axis words in the names, meshes by package:// paths: the reader finds the
    meshes, the hinges at one place (and a shoulder's short link) make one joint each,
    the knees and elbows stay hinges, the roles come out, and the feet's ends are in
    front of the ankles, where the knees bend from."""
    robot = read_robot(_numbered_robot(tmp_path))
    g = gather_hinges(robot.skeleton)
    names = robot.skeleton.names
    balls = {tuple(names[k] for k in m) for m in g.members if len(m) > 1}
    for side in ("left", "right"):
        assert (f"leg_{side}_1_joint", f"leg_{side}_2_joint", f"leg_{side}_3_joint") in balls
        assert (f"leg_{side}_5_joint", f"leg_{side}_6_joint") in balls
        assert (f"arm_{side}_1_joint", f"arm_{side}_2_joint", f"arm_{side}_3_joint") in balls
    roles = find_roles(g.skeleton)
    point = g.skeleton.point_names
    assert point[roles["left_knee"]] == "leg_left_4_joint"
    assert point[roles["left_elbow"]] == "arm_left_4_joint"
    assert point[roles["left_hip"]] == "leg_left_1_joint"
    assert point[roles["left_shoulder"]] == "arm_left_1_joint"
    sk = robot.skeleton
    tip = sk.site_offsets[sk.site_names.index("leg_left_6_joint_end")]
    assert tip[0] > 0.05 and abs(tip[2] + 0.08) < 1e-6  # ahead, on the sole (float32 STL)


def test_a_mesh_missing_from_its_package_is_one_line(tmp_path):
    urdf = _numbered_robot(tmp_path)
    (tmp_path / "toy_description" / "meshes" / "foot.stl").unlink()
    with pytest.raises(FormatError, match=r"foot\.stl.*not found"):
        read_robot(urdf)


# -- a robot as iCub is written: facing -x, l_/r_ names, knees flexing negative --------------
def _icub_like_robot(folder: Path) -> Path:
    """A small humanoid written as iCub's URDF is: facing -x (its left at -y), joints
    ``l_``/``r_`` named, knees that flex negative and reach 23° past straight, a forearm
    twist 1.5 cm below the elbow whose axis runs through the wrist 14 cm lower, and a
    link of mass but no inertia (MuJoCo refuses it as written)."""
    _stl_box(folder / "meshes" / "foot.stl", (-0.10, -0.03, -0.05), (0.04, 0.03, 0.0))
    _stl_box(folder / "meshes" / "body.stl", (-0.06, -0.09, -0.04), (0.06, 0.09, 0.30))
    inertia = 'ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"'
    links = [
        f'<link name="base_link"><inertial><mass value="5"/><inertia {inertia}/></inertial>'
        '<collision><geometry><mesh filename="meshes/body.stl"/></geometry></collision></link>'
    ]
    joints = []

    def chain(side, specs, parent):
        for name, xyz, axis, lo, hi, extra in specs:
            full = f"{side}_{name}"
            inert = (
                'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"'
                if name == "ankle_pitch"
                else inertia
            )
            geom = (
                '<collision><geometry><mesh filename="meshes/foot.stl"/></geometry></collision>'
                if extra == "foot"
                else ""
            )
            links.append(
                f'<link name="{full}_link"><inertial><mass value="0.5"/><inertia {inert}/>'
                f"</inertial>{geom}</link>"
            )
            joints.append(
                f'<joint name="{full}" type="revolute"><parent link="{parent}"/>'
                f'<child link="{full}_link"/><origin xyz="{xyz}"/><axis xyz="{axis}"/>'
                f'<limit lower="{lo}" upper="{hi}" effort="20" velocity="8"/></joint>'
            )
            parent = f"{full}_link"

    for side, y in (("l", -1), ("r", 1)):
        chain(
            side,
            [
                ("hip_pitch", f"0 {0.07 * y} -0.1", "0 1 0", -0.77, 2.3, ""),
                ("hip_roll", "0 0 0", "1 0 0", -0.3, 2.0, ""),
                ("hip_yaw", "0 0 0", "0 0 1", -1.3, 1.3, ""),
                ("knee", "0 0 -0.22", "0 1 0", -2.18, 0.40, ""),
                ("ankle_pitch", "0 0 -0.21", "0 1 0", -0.7, 0.4, ""),
                ("ankle_roll", "0 0 0", "1 0 0", -0.4, 0.4, "foot"),
            ],
            "base_link",
        )
        chain(
            side,
            [
                ("shoulder_pitch", f"0 {0.11 * y} 0.25", "0 1 0", -1.6, 0.1, ""),
                ("shoulder_roll", "0 0 0", "1 0 0", 0.0, 2.8, ""),
                ("shoulder_yaw", "0 0 0", "0 0 1", -0.6, 1.7, ""),
                ("elbow", "0.015 0 -0.15", "0 1 0", 0.1, 1.85, ""),
                ("wrist_prosup", "-0.015 0 0", "0 0 1", -0.87, 0.87, ""),  # beside the elbow
                ("wrist_pitch", "0 0 -0.14", "0 1 0", -1.1, 0.17, ""),  # on its axis
                ("wrist_yaw", "0 0 0", "1 0 0", -0.4, 0.4, ""),
            ],
            "base_link",
        )
    urdf = folder / "icub_like.urdf"
    urdf.write_text('<robot name="icub_like">' + "".join(links + joints) + "</robot>")
    return urdf


def test_a_robot_written_as_icub_is(tmp_path):
    """Read with a warning for the inertia MuJoCo refuses; l_/r_ names give the sides;
    the forearm twist beside the elbow, its axis through the wrist, is part of the
    wrist (the forearm runs elbow to wrist, not 1.5 cm sideways); the torso-less trunk
    has no neck; the knees bend the way their ranges reach; the feet's ends are in
    front of the ankles (-x)."""
    with pytest.warns(RetargetWarning, match="inertia"):
        robot = read_robot(_icub_like_robot(tmp_path))
    g = gather_hinges(robot.skeleton)
    names = robot.skeleton.names
    balls = {tuple(names[k] for k in m) for m in g.members if len(m) > 1}
    assert ("l_wrist_prosup", "l_wrist_pitch", "l_wrist_yaw") in balls
    roles = find_roles(g.skeleton)
    point = g.skeleton.point_names
    assert point[roles["left_wrist"]] == "l_wrist_prosup"
    assert point[roles["left_knee"]] == "l_knee" and point[roles["right_elbow"]] == "r_elbow"
    rest, _ = forward_kinematics(g.rig, np.zeros(3), quat.identity((g.rig.num_joints,)))
    wrist = rest[g.points[roles["left_wrist"]]]
    elbow = rest[g.points[roles["left_elbow"]]]
    np.testing.assert_allclose(wrist - elbow, [-0.015, 0.0, -0.14], atol=1e-3)  # the forearm
    assert rest[g.points[roles["left_hip"]]][1] < 0  # its left at -y
    sk = robot.skeleton
    tip = sk.site_offsets[sk.site_names.index("l_ankle_roll_end")]
    assert tip[0] < -0.05  # ahead of the ankle: the robot faces -x
    knee = limb_from_roles(g.skeleton, roles, "left", "leg")
    np.testing.assert_allclose(knee.hinge_limits, [-0.40, 2.18])  # flexion positive


@pytest.mark.parametrize("which", ["g1", "alexander", "icub", "romeo", "jvrc"])
def test_the_pelvis_stands_as_the_performers_trunk_stands(which, request, data_dir):
    """A robot's first spine point is a waist hinge a few centimetres above its pelvis:
    the pelvis is not leaned as the performer's lumbar bone leans (iCub's had been, by
    39° on the walk, and its thighs went into its pelvis) but stands as the trunk
    stands, head over hips, frame by frame within 10° on average."""
    from retarget.humanoid import world
    from retarget.io.bvh import read_bvh
    from retarget.pipeline import retarget

    robot = request.getfixturevalue(which)
    walk = read_bvh(data_dir / "lafan_walk.bvh")[:300]
    g = gather_hinges(robot.skeleton)
    outcome = retarget(walk, g.skeleton, "hierarchical")  # (the gathered skeleton alone)
    up = world.reorient(outcome.output, "y")
    _, w = forward_kinematics(up.skeleton, up.root_position, up.rotations)
    pelvis_up = quat.rotate(w[:, 0], np.array([0.0, 0.0, 1.0]))  # (the robot's z, now y)
    pelvis = np.degrees(np.arccos(np.clip(pelvis_up[:, 1], -1.0, 1.0)))
    src = world.reorient(walk, "y")
    roles = find_roles(src.skeleton)
    p, _ = forward_kinematics(src.skeleton, src.root_position, src.rotations)
    trunk = p[:, roles["head"]] - p[:, roles["hips"]]
    trunk_tilt = np.degrees(np.arccos(trunk[:, 1] / np.linalg.norm(trunk, axis=1)))
    assert np.abs(pelvis - trunk_tilt).mean() < 10.0


@pytest.mark.parametrize("which", ["g1", "jvrc"])
def test_a_robots_feet_lie_flat_where_the_performers_stand_flat(which, request, data_dir):
    """A robot's foot is a plate of its own proportions: JVRC-1's ankle stands 10.8 cm
    over a sole reaching 13.7 cm ahead (its tip 38° below the ankle), the performer's
    tip is 24° below theirs. Aligned along that bone, the robot's planted feet stood
    toes up 14°; aligned level (``level_feet``), they lie flat where the performer's
    do: within 3° at the median over the source's contact frames."""
    from retarget.humanoid.contacts import detect_contacts
    from retarget.humanoid.mapping import map_for_method
    from retarget.io.bvh import read_bvh

    robot = request.getfixturevalue(which)
    walk = read_bvh(data_dir / "lafan_walk.bvh")[:600]
    contacts = detect_contacts(walk, roles=find_roles(walk.skeleton))
    g = gather_hinges(robot.skeleton)

    def pitch(level: bool) -> float:
        mapped = map_for_method(walk, g.skeleton, level_feet=level).motion
        sk = mapped.skeleton
        roles = find_roles(sk)
        _, w = forward_kinematics(sk, mapped.root_position, mapped.rotations)
        _, w0 = forward_kinematics(sk, np.zeros(3), quat.identity((sk.num_joints,)))
        worst = 0.0
        for side in ("left", "right"):
            a = roles[f"{side}_ankle"]
            ahead = quat.rotate(quat.conjugate(w0[a]), np.array([1.0, 0.0, 0.0]))
            fw = quat.rotate(w[:, a], ahead)  # the sole's forward axis, the methods' Y up
            tilt = np.degrees(np.arcsin(np.clip(fw[contacts.foot(side), 1], -1.0, 1.0)))
            worst = max(worst, abs(float(np.median(tilt))))
        return worst

    assert pitch(True) < 3.0
    if which == "jvrc":
        assert pitch(False) > 8.0


def test_a_foots_end_is_on_its_midline(jvrc, g1):
    """A foot's end is at the front of its sole on the foot's midline: JVRC-1's hull
    keeps one front corner of its sole and not the other, and the middle of the front
    edge's points was that corner, 4.2 cm to the side (its feet turned out 17°)."""
    for robot in (jvrc, g1):
        sk = robot.skeleton
        ends = [sk.site_offsets[k] for k, n in enumerate(sk.site_names) if n.endswith("_end")]
        feet = [e for e in ends if e[2] < -0.02 and abs(e[0]) > 0.1]
        assert len(feet) == 2
        for end in feet:
            assert abs(end[1]) < 0.006  # (JVRC-1's foot mesh is 4 mm off its ankle's line)


def test_standing_heights_are_the_robots_own(jvrc):
    """How high a robot's own foot holds its ankle when it stands: JVRC-1's 10.8 cm,
    its sole's tip on the floor."""
    from retarget.humanoid.roles import standing_heights

    g = gather_hinges(jvrc.skeleton)
    roles = find_roles(g.skeleton)
    points = [roles["left_ankle"], roles["left_toe_tip"], roles["right_ankle"], roles["hips"]]
    np.testing.assert_allclose(
        standing_heights(g.skeleton, roles, points), [0.108, 0.0, 0.108, 0.0], atol=1e-3
    )


def test_hierarchical_plants_a_robots_feet_flat(jvrc, data_dir):
    """JVRC-1's ankle stands 10.8 cm over its sole, the performer's scaled 6.7 cm over
    theirs: held at the performer's height (``plant_heights="source"``) its planted
    feet stood toes up 13°; at its own (``"rest"``, the default onto a robot) they lie
    flat, within 2° at the median over the source's contact frames."""
    from retarget.humanoid.contacts import detect_contacts
    from retarget.io.bvh import read_bvh
    from retarget.pipeline import retarget
    from retarget.targets.robot import RobotTarget

    walk = read_bvh(data_dir / "lafan_walk.bvh")[:450]
    contacts = detect_contacts(walk, roles=find_roles(walk.skeleton))

    def pitch(heights: str) -> float:
        target = RobotTarget(jvrc)
        out = retarget(walk, target, "hierarchical", plant_heights=heights, measure=False)
        motion = robot_motion(jvrc, out.output)
        sk = motion.skeleton
        _, w = forward_kinematics(sk, motion.root_position, motion.rotations)
        worst = 0.0
        for side, name in (("left", "L_ANKLE_P"), ("right", "R_ANKLE_P")):
            fw = quat.rotate(w[:, sk.index(name)], np.array([1.0, 0.0, 0.0]))  # (z up)
            tilt = np.degrees(np.arcsin(np.clip(fw[contacts.foot(side), 2], -1.0, 1.0)))
            worst = max(worst, abs(float(np.median(tilt))))
        return worst

    assert pitch("rest") < 2.0
    assert pitch("source") > 8.0


def test_a_robots_fingers_are_left_as_the_method_left_them(jvrc, data_dir):
    """No performer's joint drives JVRC-1's twelve finger hinges: the IK pass does not
    curl them to place the hand's end (its little finger's tip); they stay at rest."""
    from retarget.io.bvh import read_bvh
    from retarget.pipeline import retarget
    from retarget.targets.robot import RobotTarget

    walk = read_bvh(data_dir / "lafan_walk.bvh")[:120]
    dof_pos = retarget(walk, RobotTarget(jvrc), "omr", measure=False).output.dof_pos
    fingers = [
        d
        for d, n in enumerate(jvrc.joint_names)
        if any(f in n for f in ("THUMB", "INDEX", "LITTLE"))
    ]
    assert len(fingers) == 12
    np.testing.assert_allclose(dof_pos[:, fingers], 0.0, atol=1e-12)
    wrists = [jvrc.joint_names.index(n) for n in ("L_WRIST_Y", "R_WRIST_Y", "L_ELBOW_Y")]
    assert np.ptp(dof_pos[:, wrists], axis=0).max() > 1e-3  # (the wrists do move)


def test_where_the_model_cannot_take_the_pose_is_reported_with_what_held_it(g1):
    """A segment far from the human's over frames 10-29 while one of its hinges sits at
    its upper bound is one run held by the range, with its links' contact; a second run
    over 40-44 with a dip to 10 degrees at 42 (a gap of one frame closed) and a hinge
    turning at its speed limit is held by the speed; a third, alone, by nothing."""
    from retarget.targets.robot.measures import FAR_DEG, departures

    f, d = 60, g1.num_dofs
    theta = np.zeros((f, d))
    theta[10:30, 3] = g1.upper[3]
    vmax = np.full(d, np.inf)
    vmax[5] = 1.0
    theta[:, 5] = np.cumsum(np.where(np.arange(f) >= 41, 1.0 / 30.0, 0.0))  # 1 rad/s
    theta[45:, 5] = theta[44, 5]
    traj = RobotTrajectory(np.zeros((f, 3)), np.tile([1.0, 0, 0, 0], (f, 1)), theta, 30.0)
    angle = np.zeros(f)
    angle[10:30] = FAR_DEG + 5.0
    angle[40:45] = FAR_DEG + 3.0
    angle[42] = 10.0
    angle[52:55] = FAR_DEG + 1.0
    found = departures(
        {"left_thigh": angle, "left_shin": np.zeros(f)},
        {"left_thigh": [3, 5], "left_shin": [6]},
        g1,
        traj,
        vmax,
        {"left_thigh": [(12, "pelvis", 0.004), (35, "pelvis", 0.02)]},
    )
    assert set(found) == {"left_thigh"}
    thigh = found["left_thigh"]
    assert thigh["frames"] == 20 + 5 + 3
    first, second, third = thigh["runs"]  # the worst first
    assert first["frames"] == [10, 29] and first["worst_deg"] == FAR_DEG + 5.0
    assert first["held_by"]["range"] == [
        {"joint": g1.joint_names[3], "bound": "upper", "share": 1.0}
    ]
    assert first["held_by"]["links"] == [{"body": "pelvis", "depth_cm": pytest.approx(0.4)}]
    assert second["frames"] == [40, 44] and second["mean_deg"] == pytest.approx(
        (4 * (FAR_DEG + 3.0) + 10.0) / 5
    )
    assert second["held_by"] == {"speed": [g1.joint_names[5]]}
    assert third["frames"] == [52, 54] and third["held_by"] == {}


def test_the_direction_floor_is_the_least_scipy_finds(g1, data_dir):
    """With the G1's left knee held at zero (its range [0, 0]) the left leg cannot bend
    as the performer does: on walking frames its thigh and shin depart by degrees at
    best. Each frame's floor agrees within 0.05° with scipy's L-BFGS-B over the same
    hinges and ranges from the zero configuration and twenty random starts (the least
    of them)."""
    import dataclasses

    from scipy.optimize import minimize

    from retarget.core import quat
    from retarget.targets.robot.floor import direction_floor, limb_segments, segment_angles
    from retarget.targets.robot.hinges import gather_hinges

    walk = read_motion(data_dir / "lafan_walk.bvh")[200:290]  # (walking)
    knee = g1.joint_names.index("left_knee_joint")
    lower, upper = g1.lower.copy(), g1.upper.copy()
    lower[knee] = upper[knee] = 0.0
    stiff = dataclasses.replace(g1, lower=lower, upper=upper)
    gathered = gather_hinges(stiff.skeleton, stiff.skeleton.names)
    f = walk.num_frames
    traj = RobotTrajectory(
        np.tile([0.0, 0.0, 0.8], (f, 1)), np.tile([1.0, 0, 0, 0], (f, 1)), np.zeros((f, 29)), 30.0
    )
    segments = limb_segments(stiff, gathered, walk)
    floor = direction_floor(stiff, gathered, traj, segments)
    at = {n: k for k, n in enumerate(segments.names)}
    legs = [at["left_thigh"], at["left_shin"]]
    dofs = sorted({d for s in legs for d in segments.dofs[s]})
    axes = quat.rotate(stiff.skeleton.axes, np.array([1.0, 0.0, 0.0]))
    joints = stiff.dof_joint[dofs]
    motion = robot_motion(stiff, traj)
    rng = np.random.default_rng(7)

    def cost(theta, k):  # Σ |u − h|² over the two segments, frame k
        rot = motion.rotations[k : k + 1].copy()
        rot[:, joints] = quat.quat_from_rotvec(theta[None, :, None] * axes[joints])
        pos, _ = forward_kinematics(segments.rig, motion.root_position[k : k + 1], rot)
        one = dataclasses.replace(segments, human=segments.human[:, k : k + 1])
        return float(np.sum(2.0 * (1.0 - np.cos(np.radians(segment_angles(one, pos)[legs])))))

    bounds = list(zip(lower[dofs], upper[dofs], strict=True))
    for k in range(0, f, 15):
        starts = [np.zeros(len(dofs))] + [rng.uniform(lower[dofs], upper[dofs]) for _ in range(20)]
        best = min(
            minimize(cost, x, args=(k,), method="L-BFGS-B", bounds=bounds).fun for x in starts
        )
        ours = float(np.sum(2.0 * (1.0 - np.cos(np.radians(floor[legs, k])))))
        assert abs(np.degrees(np.sqrt(ours)) - np.degrees(np.sqrt(best))) < 0.05, (k, ours, best)
    assert floor[legs].mean() > 1.0  # (the knee held still costs the leg its bend)


def test_the_g1s_limbs_can_point_as_the_performers_do(g1_path, data_dir):
    """On the G1 retargeted, every limb's floor is 0 (its hips and shoulders turn three
    ways, its knees and elbows bend as far as a performer's), and the report's
    directions are above it."""
    from retarget.pipeline import retarget
    from retarget.targets.robot import open_robot
    from retarget.targets.robot.measures import measure_robot

    walk = read_motion(data_dir / "lafan_walk.bvh")[200:260]
    target = open_robot(g1_path)
    run = retarget(walk, target, "hierarchical", measure=False)
    got = measure_robot(target.robot, run.output, walk, gathered=target.gathered, floor=True)
    assert set(got["segment_direction_floors_deg"]) == set(got["segment_directions_deg"])
    assert len(got["segment_directions_deg"]) == 8
    assert max(got["segment_direction_floors_deg"].values()) < 0.05
    assert got["segment_direction_deg"] > got["segment_direction_floor_deg"]


def test_angles_in_a_range_past_half_a_turn_come_back_in_it(romeo):
    """Romeo's wrist roll turns from -0.52 to 3.67 rad, past π: every angle in its
    range (and every other hinge's) read back from the robot's motion is the angle
    given, not the same turn less 2π outside the range."""
    wide = np.flatnonzero(np.maximum(np.abs(romeo.lower), np.abs(romeo.upper)) > np.pi)
    assert len(wide) >= 2
    traj = _random_trajectory(romeo, 400, seed=3)
    dof = traj.dof_pos.copy()
    dof[:, wide] = np.linspace(romeo.lower[wide], romeo.upper[wide], 400)  # through ±π
    traj = RobotTrajectory(traj.root_pos, traj.root_quat, dof, 30.0, romeo.joint_names)
    got = joint_trajectories(romeo, robot_motion(romeo, traj))
    np.testing.assert_allclose(got.dof_pos, dof, atol=1e-9)


def test_how_far_a_shape_reaches_beyond_its_capsules():
    """A sphere and a capsule are their capsules (0); a cylinder of radius r and
    half-length h ≥ r, the capsule of radius r inside it, its rim (√2 − 1) r out; a box,
    its row of capsules of its smallest half-extent s (the outer ones s in from its
    sides and ends), its corners (√3 − 1) s out."""
    from retarget.targets.robot.hinges import capsule_protrusions, geom_capsules

    def geom(kind, size, points):
        return Geom(0, kind, np.array(size, float), np.zeros(3), quat.identity(), points)

    r, h = 0.04, 0.1
    turn = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    rim = np.stack([r * np.cos(turn), r * np.sin(turn), np.full(8, h)], axis=1)
    box = np.array([[x, y, z] for x in (-0.2, 0.2) for y in (-0.05, 0.05) for z in (-0.02, 0.02)])
    shapes = [
        geom("sphere", [0.05], 0.05 * np.eye(3)),
        geom("capsule", [0.03, 0.1], np.array([[0, 0, 0.13], [0.03, 0, 0.0]])),
        geom("cylinder", [r, h], np.concatenate([rim, rim * [1, 1, -1]])),
        geom("box", [0.2, 0.05, 0.02], box),
    ]
    caps = geom_capsules(shapes)
    out = capsule_protrusions(shapes)
    assert len(out) == len(caps.joints) == 1 + 1 + 1 + 3  # (the box: a row of three)
    np.testing.assert_allclose(out[:2], 0.0, atol=1e-12)
    np.testing.assert_allclose(out[2], (np.sqrt(2) - 1) * r, atol=1e-12)
    np.testing.assert_allclose(out[3:], (np.sqrt(3) - 1) * 0.02, atol=1e-12)
