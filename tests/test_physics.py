"""Mass model and dynamics (Tak & Ko 2005, §4): against pinocchio, and the ZMP's basics."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import reference
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget import Motion
from retarget.core import quat
from retarget.physics import body_model
from retarget.physics.dynamics import (
    body_motion,
    center_of_mass,
    environment_wrench,
    inverse_dynamics,
    motion_rates,
    zmp,
)
from retarget.physics.support import Support, _convex_hull, convex_hulls, project_to_support


@pytest.fixture(scope="module")
def body(lafan):
    return body_model(lafan.skeleton, 70.0, loads={"RightHand": 8.0})


def test_mass_model_is_de_leva_scaled(body, lafan):
    sk = lafan.skeleton
    assert body.total_mass == pytest.approx(78.0)
    left, right = sk.index("LeftUpLeg"), sk.index("RightUpLeg")
    assert body.mass[left] == pytest.approx(0.1416 * 70.0)
    assert body.mass[left] == pytest.approx(body.mass[right])
    assert body.mass[sk.index("RightHand")] == pytest.approx(body.mass[sk.index("LeftHand")] + 8)
    # the thigh's CM 40.95 % down the bone from the hip, in the hip's frame
    knee = sk.offsets[sk.index("LeftLeg")] * body.metres
    np.testing.assert_allclose(body.com[left], 0.4095 * knee, atol=1e-12)
    for j in np.flatnonzero(body.mass > 0):
        eig = np.linalg.eigvalsh(body.inertia[j])
        assert (eig > 0).all() and np.allclose(body.inertia[j], body.inertia[j].T)


def _pinocchio_model(body):
    pin = reference("pinocchio")
    sk = body.skeleton
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, -9.81, 0.0]), np.zeros(3))
    ids = []
    for j in range(sk.num_joints):
        parent = 0 if j == 0 else ids[int(sk.parents[j])]
        placement = pin.SE3(np.eye(3), np.zeros(3) if j == 0 else sk.offsets[j] * body.metres)
        joint = pin.JointModelFreeFlyer() if j == 0 else pin.JointModelSpherical()
        jid = model.addJoint(parent, joint, placement, sk.names[j])
        model.appendBodyToJoint(
            jid, pin.Inertia(body.mass[j], body.com[j], body.inertia[j]), pin.SE3.Identity()
        )
        ids.append(jid)
    return pin, model


def test_inverse_dynamics_equals_pinocchio_rnea(body):
    """Random floating-base states: our torques and root wrench are pinocchio's ``rnea``
    (relative error at most 1e-8)."""
    pin, model = _pinocchio_model(body)
    data = model.createData()
    rng = np.random.default_rng(8)
    n = body.skeleton.num_joints
    frames = 20
    root = rng.normal(scale=0.5, size=(frames, 3))
    rot = quat.normalize(rng.normal(size=(frames, n, 4)))
    v_local = rng.normal(size=(frames, 3))
    omega = rng.normal(scale=2.0, size=(frames, n, 3))
    a_local = rng.normal(size=(frames, 3))
    omega_dot = rng.normal(scale=5.0, size=(frames, n, 3))
    # our root velocity and acceleration are the origin's, in the world
    r0 = quat.matrix_from_quat(rot[:, 0])
    velocity = np.einsum("fab,fb->fa", r0, v_local)
    acceleration = np.einsum("fab,fb->fa", r0, a_local + np.cross(omega[:, 0], v_local))
    force, moment, torques = inverse_dynamics(
        body, root, rot, velocity, omega, acceleration, omega_dot
    )
    for f in range(frames):
        xyzw = rot[f][:, [1, 2, 3, 0]]
        q = np.concatenate([root[f], xyzw[0], xyzw[1:].ravel()])
        v = np.concatenate([v_local[f], omega[f].ravel()])
        a = np.concatenate([a_local[f], omega_dot[f].ravel()])
        tau = pin.rnea(model, data, q, v, a)
        ours = np.concatenate([force[f], moment[f], torques[f, 1:].ravel()])
        err = np.abs(ours - tau).max() / np.abs(tau).max()
        assert err <= 1e-8, (f, err)


def test_zmp_of_a_still_pose_is_the_centre_of_mass(body, lafan):
    """Eq. (6) on a held pose reduces to the ground projection of the centre of mass."""
    pose = lafan[100:101]
    held = Motion(
        lafan.skeleton,
        np.repeat(pose.root_position, 10, axis=0),
        np.repeat(pose.rotations, 10, axis=0),
        lafan.fps,
    )
    point, vertical = zmp(body, held)
    com = center_of_mass(body, held)
    np.testing.assert_allclose(point, com[:, [0, 2]], atol=1e-12)
    np.testing.assert_allclose(vertical, body.total_mass * 9.81)


def test_free_fall_has_no_zmp(body, lafan):
    """A body falling with g has no vertical support: the ZMP is undefined (flight)."""
    pose = lafan[100:101]
    t = np.arange(12) / lafan.fps
    root = np.repeat(pose.root_position, 12, axis=0)
    root[:, 1] -= 0.5 * 9.81 * t**2 / body.metres
    fall = Motion(lafan.skeleton, root, np.repeat(pose.rotations, 12, axis=0), lafan.fps)
    point, vertical = zmp(body, fall)
    inner = slice(2, -2)  # the one-sided differences at the ends are not exact
    assert np.abs(vertical[inner]).max() < 1e-6 * body.total_mass
    assert np.isnan(point[inner]).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_convex_hulls_match_qhull(seed):
    """All rows' hulls at once equal scipy's ConvexHull (Qhull) row by row: the same
    vertices, counter-clockwise; duplicates and points on an edge are not vertices;
    collinear points give their two ends, coincident ones one point; absent (NaN)
    points are ignored."""
    from scipy.spatial import ConvexHull, QhullError

    rng = np.random.default_rng(seed)
    f, k = 40, 9
    points = rng.normal(size=(f, k, 2))
    points[rng.random((f, k)) < 0.25] = np.nan
    points[:5, 1] = points[:5, 0]  # duplicates
    points[5:10, 2] = 0.3 * points[5:10, 0] + 0.7 * points[5:10, 1]  # on a segment
    line = rng.normal(size=2)
    points[10:13] = rng.normal(size=(3, k, 1)) * line  # collinear
    points[13] = points[13, 0]  # one point, repeated
    hulls = convex_hulls(points)
    for row, hull in zip(points, hulls, strict=True):
        pts = np.unique(row[np.isfinite(row).all(axis=1)], axis=0)
        got = hull[np.isfinite(hull).all(axis=1)]
        try:
            expected = pts[ConvexHull(pts).vertices]
        except (QhullError, ValueError):  # fewer than three points, or all on a line
            if len(pts) == 0:
                assert len(got) == 0
                continue
            axis = pts[-1] - pts[0] if len(pts) > 1 else np.ones(2)
            t = pts @ axis
            expected = np.unique(pts[[np.argmin(t), np.argmax(t)]], axis=0)
        assert len(got) == len(expected)
        for vertex in expected:
            assert np.isclose(np.linalg.norm(got - vertex, axis=1), 0.0).any()
        if len(got) >= 3:
            x, z = got.T
            assert np.sum(x * np.roll(z, -1) - np.roll(x, -1) * z) > 0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_support_queries_over_frames_match_one_frame_at_a_time(seed):
    """Support.project / distance (all frames at once) equal eq. (7) frame by frame
    (:func:`project_to_support`), flight frames NaN; ``inset`` keeps points deeper
    than the margin, brings the others to the margin (or the centroid) and agrees
    with ``project`` outside the polygon."""
    rng = np.random.default_rng(seed)
    f, margin = 30, 0.1
    polygons = np.full((f, 16, 2), np.nan)
    for k in range(f):
        if rng.random() > 0.15:  # else flight
            hull = _convex_hull(rng.normal(size=(int(rng.integers(1, 9)), 2)))
            polygons[k, : len(hull)] = hull
    support = Support(polygons, np.full((f, 2, 2), np.nan), (0, 1))
    points = rng.normal(scale=1.5, size=(f, 2))
    projected, distance = support.project(points, margin), support.distance(points)
    inset = support.inset(points, margin)
    for k in range(f):
        hull = polygons[k][np.isfinite(polygons[k]).all(axis=1)]
        if not len(hull):
            assert np.isnan(projected[k]).all() and np.isnan(distance[k])
            continue
        q, inside = project_to_support(points[k], hull, margin)
        np.testing.assert_allclose(projected[k], q, atol=1e-12)
        assert distance[k] == pytest.approx(
            np.linalg.norm(project_to_support(points[k], hull)[0] - points[k]), abs=1e-12
        )
        if not inside:
            np.testing.assert_allclose(inset[k], q, atol=1e-12)
        elif len(hull) >= 3:
            edges = np.roll(hull, -1, axis=0) - hull
            cross = edges[:, 0] * (points[k, 1] - hull[:, 1]) - edges[:, 1] * (
                points[k, 0] - hull[:, 0]
            )
            depth = (cross / np.linalg.norm(edges, axis=1)).min()
            moved = np.linalg.norm(inset[k] - points[k])
            if depth >= margin:
                assert moved == 0.0
            else:
                centre = hull.mean(axis=0)
                expected = min(margin - depth, np.linalg.norm(centre - points[k]))
                assert moved == pytest.approx(expected, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 7))
def test_projection_onto_the_support_polygon(seed, count):
    """Eq. (7): inside points stay; outside ones land on the hull, no farther than any
    hull point (sampled densely)."""
    rng = np.random.default_rng(seed)
    contacts = rng.normal(size=(count, 2))
    p = rng.normal(scale=2.0, size=2)
    q, inside = project_to_support(p, contacts)
    # dense samples of the hull: convex combinations of the contacts
    w = rng.dirichlet(np.ones(count), size=4000) if count > 1 else np.ones((1, 1))
    samples = np.vstack([w @ contacts, contacts])
    best = np.linalg.norm(samples - p, axis=1).min()
    if inside:
        np.testing.assert_allclose(q, p)
    else:
        assert np.linalg.norm(q - p) <= best + 1e-9
        if count >= 3:  # and q is on the hull: it projects onto itself
            again, _ = project_to_support(q, contacts)
            np.testing.assert_allclose(again, q, atol=1e-9)


def test_contact_shares_equal_pinocchio_rnea_with_external_forces(body):
    """The environment's wrench split between two feet (Ko & Badler's approximation of
    double support) is pinocchio's ``rnea`` with those forces as ``fext``; the root
    then needs nothing from outside."""
    pin, model = _pinocchio_model(body)
    data = model.createData()
    sk = body.skeleton
    rng = np.random.default_rng(11)
    n = sk.num_joints
    frames = 10
    root = rng.normal(scale=0.5, size=(frames, 3))
    rot = quat.normalize(rng.normal(size=(frames, n, 4)))
    velocity, acceleration = rng.normal(size=(2, frames, 3))
    omega = rng.normal(scale=2.0, size=(frames, n, 3))
    omega_dot = rng.normal(scale=5.0, size=(frames, n, 3))
    feet = [sk.index("LeftFoot"), sk.index("RightFoot")]
    shares = np.zeros((frames, n))
    t = rng.uniform(size=frames)
    shares[:, feet[0]], shares[:, feet[1]] = 1 - t, t
    force, moment, torques = inverse_dynamics(
        body, root, rot, velocity, omega, acceleration, omega_dot, shares=shares
    )
    np.testing.assert_allclose(force, 0.0, atol=1e-9)
    np.testing.assert_allclose(moment, 0.0, atol=1e-9)
    bm = body_motion(body, root / body.metres, rot, velocity, omega, acceleration, omega_dot)
    total_f, total_mc, c = environment_wrench(body, bm)
    total_m = total_mc + np.cross(c, total_f)  # about the world origin
    r0 = quat.matrix_from_quat(rot[:, 0])
    for f in range(frames):
        xyzw = rot[f][:, [1, 2, 3, 0]]
        q = np.concatenate([root[f], xyzw[0], xyzw[1:].ravel()])
        v_local = r0[f].T @ velocity[f]
        v = np.concatenate([v_local, omega[f].ravel()])
        a_local = r0[f].T @ acceleration[f] - np.cross(omega[f, 0], v_local)
        a = np.concatenate([a_local, omega_dot[f].ravel()])
        fext = [pin.Force.Zero() for _ in range(model.njoints)]
        for j in feet:
            rj, pj = bm.frames[f, j], bm.origins[f, j]
            lin = shares[f, j] * total_f[f]
            ang = shares[f, j] * (total_m[f] - np.cross(pj, total_f[f]))
            fext[j + 1] = pin.Force(rj.T @ lin, rj.T @ ang)
        tau = pin.rnea(model, data, q, v, a, fext)
        ours = np.concatenate([force[f], moment[f], torques[f, 1:].ravel()])
        err = np.abs(ours - tau).max() / np.abs(tau).max()
        assert err <= 1e-8, (f, err)


def test_motion_rates_are_exact_on_a_uniform_spin(lafan):
    """A joint turning at constant ω about a fixed axis and a root on a parabola: the
    finite-difference rates are the exact ones."""
    fps = 30.0
    t = np.arange(20) / fps
    motion = lafan[:20]
    axis = np.array([0.3, -0.5, 0.81])
    axis /= np.linalg.norm(axis)
    rot = np.array(motion.rotations)
    rot[:, 3] = quat.multiply(rot[0, 3], quat.exp(2.0 * t[:, None] * axis))
    root = np.zeros((20, 3))
    root[:, 1] = 100.0 + 50.0 * t**2
    spun = Motion(motion.skeleton, root, rot, fps)
    v, a, w, wd = motion_rates(spun, 0.01)
    np.testing.assert_allclose(a[:, 1], 1.0, atol=1e-9)
    np.testing.assert_allclose(v[1:-1, 1], t[1:-1], atol=1e-9)
    np.testing.assert_allclose(w[:, 3], np.tile(2.0 * axis, (20, 1)), atol=1e-9)
    np.testing.assert_allclose(wd[:, 3], 0.0, atol=1e-6)


def test_dynamic_tasks_are_the_filters_rows(body, lafan):
    """ZMP, torque and momentum tasks (Tak & Ko 2005, eqs. 6, 9–11) on a batch of states."""
    from retarget.physics.dynamics import zmp_of
    from retarget.physics.tasks import DynamicState, MomentumTask, TorqueTask, ZMPTask

    clip = lafan[100:106]
    v, a, w, wd = motion_rates(clip, body.metres)
    n_j = lafan.skeleton.num_joints
    shares = np.full((len(clip), n_j), 0.5)
    state = DynamicState(body, clip.root_position, clip.rotations, v, w, a, wd, shares=shares)
    bm = body_motion(body, clip.root_position, clip.rotations, v, w, a, wd)
    height = 1.7
    zmp_rows = ZMPTask(scale=height).residual(state)
    assert zmp_rows.shape == (len(clip), 2)
    np.testing.assert_array_equal(
        zmp_rows, zmp_of(body.mass, bm.centres, bm.accelerations)[0] / height
    )
    limits = {lafan.skeleton.index("LeftUpLeg"): 100.0, lafan.skeleton.index("Spine"): 50.0}
    torque = TorqueTask(limits=limits)
    _, _, tau = inverse_dynamics(
        body, clip.root_position * body.metres, clip.rotations, v, w, a, wd, shares=shares
    )
    expected = np.linalg.norm(tau[:, list(limits)], axis=-1) / [100.0, 50.0]
    assert torque.size == 2
    np.testing.assert_array_equal(torque.residual(state), expected)
    force, moment, _ = environment_wrench(body, bm)
    weight = body.total_mass * 9.81
    momentum = MomentumTask(scale=height).residual(state)
    np.testing.assert_array_equal(momentum[:, :3], force / weight)
    np.testing.assert_array_equal(momentum[:, 3:], moment / (weight * height))
    with pytest.raises(ValueError, match="weight"):
        ZMPTask(weight=-1.0)


def test_compiled_forward_pass_is_the_numpy_one(lafan):
    """body_motion's kernel (physics/_dynamics_kernels.py) against its numpy twin, on
    random states of the walk's body: the same formulas, to round-off."""
    from retarget.physics import dynamics

    sk = lafan.skeleton
    body = body_model(sk, 70.0, loads={"RightHand": 5.0})
    rng = np.random.default_rng(4)
    frames, n = 40, sk.num_joints
    rot = quat.normalize(rng.normal(size=(frames, n, 4)))
    root = rng.normal(scale=50.0, size=(frames, 3))
    omega, omega_dot = rng.normal(size=(2, frames, n, 3))
    acc = rng.normal(size=(frames, 3))
    bm = dynamics.body_motion(body, root, rot, np.zeros(3), omega, acc, omega_dot)
    pos, mats = bm.origins, bm.frames
    w, alpha, centres, acc_c = dynamics._forward_pass_numpy(body, pos, mats, omega, omega_dot, acc)
    for got, want in ((bm.omega, w), (bm.alpha, alpha), (bm.centres, centres)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bm.accelerations, acc_c, rtol=0, atol=1e-9)
    assert np.abs(acc_c).max() > 1.0
