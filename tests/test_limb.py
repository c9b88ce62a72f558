"""Analytic limb IK (Lee & Shin 1999, section 5.3): reach, eq. 7, limits, swivel, orientation."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget import Skeleton, find_roles
from retarget.core import quat
from retarget.core.dofs import channel_angles, limit_violation, rotations_from_channel_angles
from retarget.core.errors import RetargetError
from retarget.core.kinematics import forward_kinematics
from retarget.ik import (
    Limb,
    estimate_hinge_axis,
    hinge_angle,
    limb_from_roles,
    soft_reach,
    solve_limb,
    swivel_angle,
)
from retarget.io import read_asf_amc

LIMBS = [(side, kind) for side in ("left", "right") for kind in ("leg", "arm")]
TOL = 1e-9  # of the skeleton's unit (cm for lafan, inches for vicon)


@pytest.fixture(scope="module")
def vicon(data_dir):
    return read_asf_amc(data_dir / "vicon.asf", data_dir / "vicon.amc")


def wrap(x):
    return np.angle(np.exp(1j * np.asarray(x)))


def limb_lengths(sk, limb):
    return float(np.linalg.norm(sk.offsets[limb.middle])), float(
        np.linalg.norm(sk.offsets[limb.lower])
    )


def random_directions(rng, n):
    d = rng.normal(size=(n, 3))
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def reachable_goals(sk, limb, pos0, rng, scatter=8.0):
    """Goals near the lower joints of poses ``pos0``, at 50-90 % of the limb's length."""
    n = len(pos0)
    l1, l2 = limb_lengths(sk, limb)
    aim = pos0[:, limb.lower] - pos0[:, limb.upper] + rng.normal(scale=scatter, size=(n, 3))
    aim /= np.linalg.norm(aim, axis=-1, keepdims=True)
    return pos0[:, limb.upper] + rng.uniform(0.5, 0.9, (n, 1)) * (l1 + l2) * aim


def fk(sk, root, rot):
    return forward_kinematics(sk, root, rot)


def lafan_limb_frames(lafan, side, kind, seed, n):
    """The (side, kind) limb of the lafan walk at n distinct random frames.

    Returns ``(sk, limb, rng, root (n, 3), rot (n, J, 4), pos0 (n, P, 3))``: ``rng``
    (seeded with ``seed``) drew the frames and goes on for the test's own draws,
    ``pos0`` the frames' FK positions (cm).
    """
    sk = lafan.skeleton
    limb = limb_from_roles(sk, find_roles(sk), side, kind, lafan)
    rng = np.random.default_rng(seed)
    frames = rng.choice(lafan.num_frames, n, replace=False)
    root, rot = lafan.root_position[frames], lafan.rotations[frames]
    pos0, _ = fk(sk, root, rot)
    return sk, limb, rng, root, rot, pos0


def hinge_sweep_lengths(sk, limb, root, rot, thetas):
    """|lower − upper| by FK when the middle joint of pose ``rot`` turns by each of ``thetas``."""
    rots = np.repeat(rot[None], len(thetas), axis=0)
    rots[:, limb.middle] = quat.multiply(
        quat.exp(thetas[:, None] * limb.hinge_axis), rot[limb.middle]
    )
    pos, _ = fk(sk, root, rots)
    return np.linalg.norm(pos[:, limb.lower] - pos[:, limb.upper], axis=-1)


def test_public_names():
    module = importlib.import_module("retarget.ik")
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert len(module.__all__) == len(set(module.__all__))


# -- 1. reachable goals on real poses ---------------------------------------------------------


@pytest.mark.parametrize(("side", "kind"), LIMBS)
def test_reachable_goals_lafan(lafan, side, kind):
    sk, limb, rng, root, rot, pos0 = lafan_limb_frames(lafan, side, kind, 11, 300)
    l1, l2 = limb_lengths(sk, limb)
    goal = pos0[:, limb.upper] + rng.uniform(0.3, 0.95, (300, 1)) * (l1 + l2) * random_directions(
        rng, 300
    )
    sol = solve_limb(sk, limb, root, rot, goal)

    pos, _ = fk(sk, root, sol.rotations)
    assert np.abs(pos[:, limb.lower] - goal).max() < TOL
    assert np.abs(sol.reached - pos[:, limb.lower]).max() < TOL
    assert not sol.clamped.any() and np.all(sol.residual == 0.0)
    assert np.all(sol.orientation_residual == 0.0)
    # only the upper and middle joints change (no orientation goal: the lower keeps its own)
    others = np.setdiff1d(np.arange(sk.num_joints), [limb.upper, limb.middle])
    assert np.array_equal(sol.rotations[:, others], rot[:, others])
    assert quat.angle(sol.rotations[:, limb.upper], rot[:, limb.upper]).max() > 0.1
    # the upper joint stays; bone lengths are kept
    assert np.abs(pos[:, limb.upper] - pos0[:, limb.upper]).max() < TOL
    assert np.allclose(np.linalg.norm(pos[:, limb.middle] - pos[:, limb.upper], axis=-1), l1)
    assert np.allclose(np.linalg.norm(pos[:, limb.lower] - pos[:, limb.middle], axis=-1), l2)
    # the hinge turns about its axis only: q_new ⊗ q_ref⁻¹ = exp(Δ a)
    turn = quat.log(
        quat.multiply(sol.rotations[:, limb.middle], quat.conjugate(rot[:, limb.middle]))
    )
    assert np.abs(np.cross(turn, limb.hinge_axis)).max() < 1e-9
    assert np.abs(turn).max() > 0.1


@pytest.mark.parametrize(("side", "kind"), LIMBS)
def test_own_goal_keeps_the_pose(lafan, side, kind):
    """The goal where the lower joint already is: the reference comes back (swivel 0 = nearest)."""
    sk = lafan.skeleton
    limb = limb_from_roles(sk, find_roles(sk), side, kind, lafan)
    m = lafan[::50]
    pos, _ = fk(sk, m.root_position, m.rotations)
    sol = solve_limb(sk, limb, m.root_position, m.rotations, pos[:, limb.lower])
    assert quat.angle(sol.rotations, m.rotations).max() < 1e-9


# -- 2. eq. 7 against brute force -------------------------------------------------------------


def hinge_skeleton(h1, r1, h2, r2, beta_rest=0.0):
    """pelvis → hip → knee (one channel, tilted ASF-like axis) → ankle, with chosen h, r.

    The knee turns about ``a = A e_x``; ``d1 = h1 a + r1 e``, ``d2 = h2 a + r2 R_a(β_rest) e``.
    """
    axis_rot = quat.exp([0.0, 0.0, 0.35])
    a = quat.rotate(axis_rot, [1.0, 0.0, 0.0])
    e = np.cross(a, [0.0, 0.0, 1.0])
    e2 = quat.rotate(quat.exp(beta_rest * a), e)
    offsets = np.array([[0, 90, 0], [9, -4, 2], h1 * a + r1 * e, h2 * a + r2 * e2])
    axes = quat.identity(4)
    axes[2] = axis_rot
    channels = (
        ("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation"),
        ("Zrotation", "Yrotation", "Xrotation"),
        ("Xrotation",),
        ("Zrotation", "Yrotation", "Xrotation"),
    )
    sk = Skeleton(("pelvis", "hip", "knee", "ankle"), [-1, 0, 1, 2], offsets, channels, axes=axes)
    return sk, Limb(1, 2, 3, hinge_axis=a, kind="leg", side="left")


GEOMETRIES = {
    "same side (h1 h2 > 0)": (6.0, 40.0, 8.0, 38.0),
    "opposite sides (h1 h2 < 0)": (6.0, 40.0, -9.0, 38.0),
    "perpendicular bones (r = l)": (0.0, 40.0, 0.0, 38.0),
    "steep bones": (25.0, 20.0, 18.0, 30.0),
}


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_eq7_against_brute_force(name):
    h1, r1, h2, r2 = GEOMETRIES[name]
    sk, limb = hinge_skeleton(h1, r1, h2, r2)
    l1, l2 = np.hypot(h1, r1), np.hypot(h2, r2)
    rng = np.random.default_rng(3)
    theta = np.concatenate([np.linspace(-3.0, -0.1, 15), np.linspace(0.1, 3.0, 15)])
    n = len(theta)
    root = rng.normal(size=(n, 3))
    # targets: knee at θ (channel angle), random pelvis and hip: L by FK
    target = quat.normalize(rng.normal(size=(n, 4, 4)))
    target[:, 2] = quat.exp(theta[:, None] * limb.hinge_axis)
    pos_t, _ = fk(sk, root, target)
    goal = pos_t[:, 3]
    big_l = np.linalg.norm(goal - pos_t[:, 1], axis=-1)
    # references: the same pelvis, another hip and ankle, the knee bent the target's way;
    # the solution bends the flexion way (positive), whichever way the reference does:
    # the same goal distance, the mirror angle when the target was bent backward
    ref = quat.normalize(rng.normal(size=(n, 4, 4)))
    ref[:, 0] = target[:, 0]
    ref[:, 2] = quat.exp(0.4 * np.sign(theta)[:, None] * limb.hinge_axis)
    sol = solve_limb(sk, limb, root, ref, goal)

    pos, world = fk(sk, root, sol.rotations)
    assert np.abs(pos[:, 3] - goal).max() < TOL and not sol.clamped.any()
    flexion = np.abs(theta)
    np.testing.assert_allclose(channel_angles(sk, sol.rotations)[:, 2, 0], flexion, atol=1e-9)
    np.testing.assert_allclose(hinge_angle(limb, sol.rotations), flexion, atol=1e-9)
    # φ measured on the solved pose: projections of the bones on the plane ⊥ axis (world)
    a_world = quat.rotate(world[:, 1], limb.hinge_axis)

    def project(v):
        return v - np.sum(v * a_world, -1, keepdims=True) * a_world

    u1, u2 = project(pos[:, 1] - pos[:, 2]), project(pos[:, 3] - pos[:, 2])
    phi = np.arccos(np.sum(u1 * u2, -1) / np.linalg.norm(u1, axis=-1) / np.linalg.norm(u2, axis=-1))
    np.testing.assert_allclose(phi, np.pi - np.abs(theta), atol=1e-9)
    # the general relation of the appendix, with signed h1, h2
    np.testing.assert_allclose(
        big_l**2, (h1 + h2) ** 2 + r1**2 + r2**2 - 2 * r1 * r2 * np.cos(phi), rtol=1e-12
    )
    # eq. (7) as printed holds when h1 h2 >= 0, and is the law of cosines when r = l
    eq7 = np.arccos(
        np.clip(
            (l1**2 + l2**2 + 2 * np.sqrt(l1**2 - r1**2) * np.sqrt(l2**2 - r2**2) - big_l**2)
            / (2 * r1 * r2),
            -1,
            1,
        )
    )
    if h1 * h2 >= 0:
        np.testing.assert_allclose(eq7, phi, atol=1e-9)
    else:
        assert np.abs(eq7 - phi).max() > 0.05  # the sign of h1 h2 matters
    if h1 == h2 == 0:
        np.testing.assert_allclose(big_l**2, l1**2 + l2**2 - 2 * l1 * l2 * np.cos(phi))


def test_bent_rest_pose_and_limits_on_the_arc():
    """Rest pose bent by β_rest: limits apply to the hinge angle from rest, L to β."""
    sk, free = hinge_skeleton(5.0, 35.0, 7.0, 33.0, beta_rest=0.5)
    limb = Limb(1, 2, 3, free.hinge_axis, hinge_limits=[-0.3, 1.5])
    rng = np.random.default_rng(8)
    n = 400
    root = np.zeros((n, 3))
    ref = quat.normalize(rng.normal(size=(n, 4, 4)))
    ref[:, 2] = quat.exp(rng.uniform(-0.3, 1.5, (n, 1)) * limb.hinge_axis)
    pos0, _ = fk(sk, root, ref)
    goal = pos0[:, 1] + rng.uniform(0, 90, (n, 1)) * random_directions(rng, n)
    sol = solve_limb(sk, limb, root, ref, goal)
    theta = hinge_angle(limb, sol.rotations)
    assert theta.min() >= -0.3 - 1e-12 and theta.max() <= 1.5 + 1e-12
    # brute force: the reachable range of L is that of the hinge angles in the limits
    sweep = np.linspace(-0.3, 1.5, 200001)
    lengths = hinge_sweep_lengths(sk, limb, np.zeros(3), quat.identity(4), sweep)
    l_min, l_max = lengths.min(), lengths.max()
    l_goal = np.linalg.norm(goal - pos0[:, 1], axis=-1)
    expect = np.clip(l_goal, l_min, l_max)
    pos, _ = fk(sk, root, sol.rotations)
    np.testing.assert_allclose(np.linalg.norm(pos[:, 3] - pos[:, 1], axis=-1), expect, atol=1e-6)
    np.testing.assert_allclose(sol.residual, np.abs(l_goal - expect), atol=1e-6)
    outside = (l_goal < l_min - 1e-6) | (l_goal > l_max + 1e-6)
    inside = (l_goal > l_min + 1e-6) & (l_goal < l_max - 1e-6)
    assert outside.sum() > 20 and inside.sum() > 20
    assert sol.clamped[outside].all() and not sol.clamped[inside].any()


@pytest.mark.parametrize("which", ["r1", "r2"])
def test_degenerate_limb_upper_or_lower_on_the_axis(which):
    """r1 = 0 or r2 = 0: L does not depend on the hinge; it is kept, and nothing is NaN."""
    sk, limb = (
        hinge_skeleton(30.0, 0.0, 5.0, 38.0)
        if which == "r1"
        else hinge_skeleton(6.0, 40.0, 30.0, 0.0)
    )
    d1, d2 = sk.offsets[2], sk.offsets[3]
    h1, h2 = d1 @ limb.hinge_axis, d2 @ limb.hinge_axis
    r1 = np.linalg.norm(d1 - h1 * limb.hinge_axis)
    r2 = np.linalg.norm(d2 - h2 * limb.hinge_axis)
    fixed_l = np.sqrt((h1 + h2) ** 2 + r1**2 + r2**2)  # 2 r1 r2 cos φ = 0
    rng = np.random.default_rng(5)
    n = 50
    ref = quat.normalize(rng.normal(size=(n, 4, 4)))
    ref[:, 2] = quat.exp(0.7 * limb.hinge_axis)
    root = np.zeros((n, 3))
    pos0, _ = fk(sk, root, ref)
    l_goal = np.concatenate([rng.uniform(0, 2 * fixed_l, n - 1), [fixed_l]])
    goal = pos0[:, 1] + l_goal[:, None] * random_directions(rng, n)
    sol = solve_limb(sk, limb, root, ref, goal)
    assert all(np.isfinite(x).all() for x in (sol.rotations, sol.reached, sol.residual))
    np.testing.assert_allclose(hinge_angle(limb, sol.rotations), 0.7, atol=1e-12)
    pos, _ = fk(sk, root, sol.rotations)
    reach = pos[:, 3] - pos[:, 1]
    np.testing.assert_allclose(np.linalg.norm(reach, axis=-1), fixed_l, atol=1e-9)
    np.testing.assert_allclose(sol.residual, np.abs(l_goal - fixed_l), atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(pos[:, 3] - goal, axis=-1), sol.residual, atol=1e-9)
    assert sol.clamped[:-1].all() and sol.residual[-1] < 1e-9


# -- 3. out of reach, limits --------------------------------------------------------------------


@pytest.mark.parametrize(("side", "kind"), LIMBS)
def test_out_of_reach_lafan(lafan, side, kind):
    sk, limb, rng, root, rot, pos0 = lafan_limb_frames(lafan, side, kind, 21, 4)
    l1, l2 = limb_lengths(sk, limb)
    dirs = random_directions(rng, 4)
    for factor in (1.6, 1e-3, 0.0):
        goal = pos0[:, limb.upper] + factor * (l1 + l2) * dirs
        sol = solve_limb(sk, limb, root, rot, goal)
        assert sol.clamped.all()
        assert all(np.isfinite(x).all() for x in (sol.rotations, sol.reached, sol.residual))
        pos, _ = fk(sk, root, sol.rotations)
        reach = pos[:, limb.lower] - pos[:, limb.upper]
        dist = np.linalg.norm(reach, axis=-1)
        # the nearest reachable point: on the ray, at the extreme of the hinge's range
        for f in range(4):
            sweep = hinge_sweep_lengths(
                sk, limb, root[f], rot[f], np.linspace(-np.pi, np.pi, 100001)
            )
            # a grid cannot beat the true extreme, and comes close to it
            if factor > 1:
                assert sweep.max() - 1e-9 <= dist[f] < sweep.max() + 1e-5
            else:
                assert sweep.min() - 1e-5 < dist[f] <= sweep.min() + 1e-9
        if factor > 0:
            np.testing.assert_allclose(reach / dist[:, None], dirs, atol=1e-9)
        np.testing.assert_allclose(sol.residual, np.abs(factor * (l1 + l2) - dist), atol=1e-9)
        np.testing.assert_allclose(
            np.linalg.norm(pos[:, limb.lower] - goal, axis=-1), sol.residual, atol=1e-9
        )


@pytest.mark.parametrize(("side", "kind"), LIMBS)
def test_vicon_hinge_limits(vicon, side, kind):
    sk = vicon.skeleton
    limb = limb_from_roles(sk, find_roles(sk), side, kind)
    # one rotation channel (rx): its axis and limits, hinge angle = channel angle
    assert sk.dof_mask[limb.middle].sum() == 1
    np.testing.assert_allclose(limb.hinge_axis, quat.rotate(sk.axes[limb.middle], [1.0, 0, 0]))
    np.testing.assert_allclose(limb.hinge_limits, np.radians([-10.0, 170.0]))
    np.testing.assert_allclose(
        hinge_angle(limb, vicon.rotations), channel_angles(sk, vicon.rotations)[:, limb.middle, 0]
    )
    rng = np.random.default_rng(2)
    n = 400
    frames = rng.choice(vicon.num_frames, n)
    root, rot = vicon.root_position[frames], vicon.rotations[frames].copy()
    angles = channel_angles(sk, rot[:50])
    angles[:, limb.middle, 0] = -0.5  # 50 references hyperextended beyond the -10° limit
    rot[:50] = rotations_from_channel_angles(sk, angles)
    assert limit_violation(sk, rot[:50])[:, limb.middle, 0].min() > 0.1
    pos0, _ = fk(sk, root, rot)
    l1, l2 = limb_lengths(sk, limb)
    l_goal = rng.uniform(0.0, 1.3 * (l1 + l2), n)
    goal = pos0[:, limb.upper] + l_goal[:, None] * random_directions(rng, n)
    sol = solve_limb(sk, limb, root, rot, goal)
    assert np.isfinite(sol.rotations).all()
    assert limit_violation(sk, sol.rotations)[:, limb.middle].max() < 1e-12
    # too close: the knee (elbow) stops at 170°, L_min by FK at that angle
    angles = np.zeros((sk.num_joints, 3))
    angles[limb.middle, 0] = np.radians(170.0)
    at_limit = rotations_from_channel_angles(sk, angles)
    p_lim, _ = fk(sk, np.zeros(3), at_limit)
    l_min = np.linalg.norm(p_lim[limb.lower] - p_lim[limb.upper])
    pos, _ = fk(sk, root, sol.rotations)
    dist = np.linalg.norm(pos[:, limb.lower] - pos[:, limb.upper], axis=-1)
    close = l_goal < l_min
    far = l_goal > l1 + l2
    assert close.sum() > 20 and far.sum() > 20
    np.testing.assert_allclose(dist[close], l_min, atol=1e-9)
    np.testing.assert_allclose(sol.residual[close], l_min - l_goal[close], atol=1e-9)
    np.testing.assert_allclose(dist[far], l1 + l2, atol=1e-9)  # straight bones: r = l
    ok = ~close & ~far
    assert np.abs(pos[ok, limb.lower] - goal[ok]).max() < TOL
    assert np.array_equal(sol.clamped, close | far)


# -- 4. swivel ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("side", "kind"), LIMBS)
def test_swivel_turns_the_elbow_on_its_circle(lafan, side, kind):
    sk, limb, rng, root, rot, pos0 = lafan_limb_frames(lafan, side, kind, 4, 20)
    goal = reachable_goals(sk, limb, pos0, rng)
    swivels = np.linspace(-np.pi, np.pi, 13)[:, None]  # (13, 1) against (20,) frames
    sol = solve_limb(sk, limb, root, rot, goal, swivel=swivels)
    assert sol.rotations.shape == (13, 20, sk.num_joints, 4)
    pos, _ = fk(sk, root, sol.rotations)
    assert np.abs(pos[..., limb.lower, :] - goal).max() < TOL
    n = (goal - pos0[:, limb.upper]) / np.linalg.norm(goal - pos0[:, limb.upper], axis=-1)[:, None]
    elbow = pos[..., limb.middle, :] - pos0[:, limb.upper]
    along = np.sum(elbow * n, axis=-1)
    radial = elbow - along[..., None] * n
    # a circle about the shoulder–goal axis: fixed height and radius ...
    np.testing.assert_allclose(along, np.broadcast_to(along[6], along.shape), atol=1e-9)
    np.testing.assert_allclose(
        np.linalg.norm(radial, axis=-1),
        np.broadcast_to(np.linalg.norm(radial[6], axis=-1), along.shape),
        atol=1e-9,
    )
    # ... turned by the swivel about n (from the swivel-0 solution, row 6)
    turned = np.arctan2(np.sum(np.cross(radial[6], radial) * n, -1), np.sum(radial[6] * radial, -1))
    np.testing.assert_allclose(wrap(turned - swivels), 0.0, atol=1e-9)
    psi = swivel_angle(sk, limb, root, sol.rotations)
    np.testing.assert_allclose(wrap(psi - psi[6] - swivels), 0.0, atol=1e-9)

    # own goal: swivel_angle(solve(s)) − swivel_angle(reference) = s exactly
    psi_ref = swivel_angle(sk, limb, root, rot)
    own = solve_limb(sk, limb, root, rot, pos0[:, limb.lower], swivel=swivels)
    np.testing.assert_allclose(
        wrap(swivel_angle(sk, limb, root, own.rotations) - psi_ref - swivels), 0.0, atol=1e-9
    )
    # absolute mode: the result's swivel angle is the one asked; ψ_ref + δ turns by δ
    target = rng.uniform(-3, 3, 20)
    absolute = solve_limb(sk, limb, root, rot, goal, swivel=target, swivel_mode="absolute")
    np.testing.assert_allclose(
        wrap(swivel_angle(sk, limb, root, absolute.rotations) - target), 0.0, atol=1e-9
    )
    assert np.abs(absolute.reached - goal).max() < TOL
    same = solve_limb(
        sk, limb, root, rot, pos0[:, limb.lower], swivel=psi_ref + 0.3, swivel_mode="absolute"
    )
    relative = solve_limb(sk, limb, root, rot, pos0[:, limb.lower], swivel=0.3)
    assert quat.angle(same.rotations, relative.rotations).max() < 1e-9


@pytest.mark.parametrize(("side", "kind"), LIMBS)
def test_nearest_swivel_is_closest_to_the_reference(lafan, side, kind):
    """Shin et al. 2001, eqs. 21-23: no swivel on the elbow circle brings the upper
    joint closer to the captured one than the closed-form choice."""
    sk, limb, rng, root, rot, pos0 = lafan_limb_frames(lafan, side, kind, 5, 30)
    goal = reachable_goals(sk, limb, pos0, rng)
    best = solve_limb(sk, limb, root, rot, goal, swivel_mode="nearest")
    pos, _ = fk(sk, root, best.rotations)
    assert np.abs(pos[..., limb.lower, :] - goal).max() < TOL
    dist = quat.angle(best.rotations[:, limb.upper], rot[:, limb.upper])
    swivels = np.linspace(-np.pi, np.pi, 721)[:, None]
    others = solve_limb(sk, limb, root, rot, goal, swivel=swivels, swivel_mode="nearest")
    dists = quat.angle(others.rotations[..., limb.upper, :], rot[:, limb.upper])
    assert (dists.min(axis=0) >= dist - 1e-12).all()
    # the grid's best is within its spacing of the closed form (a smooth minimum)
    assert (dists.min(axis=0) - dist).max() < 1e-4
    # the relative mode's zero is not the nearest in general
    relative = solve_limb(sk, limb, root, rot, goal)
    assert (quat.angle(relative.rotations[:, limb.upper], rot[:, limb.upper]) >= dist - 1e-12).all()


# -- 5. orientation ------------------------------------------------------------------------------


@pytest.mark.parametrize(("side", "kind"), LIMBS)
def test_orientation_goal_three_dof(lafan, side, kind):
    sk, limb, rng, root, rot, pos0 = lafan_limb_frames(lafan, side, kind, 6, 100)
    goal = reachable_goals(sk, limb, pos0, rng, scatter=20.0)
    orientation = quat.normalize(rng.normal(size=(100, 4)))
    sol = solve_limb(sk, limb, root, rot, goal, orientation=orientation, swivel=0.2)
    pos, world = fk(sk, root, sol.rotations)
    assert quat.angle(world[:, limb.lower], orientation).max() < 1e-9
    assert sol.orientation_residual.max() < 1e-9
    assert np.abs(pos[:, limb.lower] - goal).max() < TOL
    others = np.setdiff1d(np.arange(sk.num_joints), limb.joints)
    assert np.array_equal(sol.rotations[:, others], rot[:, others])


def test_orientation_goal_two_dof_asf_ankle(vicon):
    sk = vicon.skeleton
    limb = limb_from_roles(sk, find_roles(sk), "left", "leg")
    ankle = limb.lower
    assert sk.dof_mask[ankle].sum() == 2
    rng = np.random.default_rng(9)
    within = np.flatnonzero(limit_violation(sk, vicon.rotations)[:, ankle].max(axis=-1) < 1e-12)
    frames = rng.choice(within, 200, replace=False)  # frames whose ankle keeps its limits
    root, rot = vicon.root_position[frames], vicon.rotations[frames]
    pos0, world0 = fk(sk, root, rot)
    goal = pos0[:, ankle] + rng.normal(scale=2.0, size=(200, 3))
    orientation = quat.normalize(rng.normal(size=(200, 4)))
    sol = solve_limb(sk, limb, root, rot, goal, orientation=orientation)
    _, world = fk(sk, root, sol.rotations)
    left = quat.angle(world[:, ankle], orientation)
    np.testing.assert_allclose(sol.orientation_residual, left, atol=1e-9)
    # the error vector takes the goal to the achieved turn, in the goal's frame
    back = quat.multiply(orientation, quat.exp(sol.orientation_error))
    assert quat.angle(back, world[:, ankle]).max() < 1e-9
    np.testing.assert_allclose(
        np.linalg.norm(sol.orientation_error, axis=1), sol.orientation_residual, atol=1e-9
    )
    assert np.median(left) > 0.1  # a 2-DOF ankle cannot take any orientation
    assert limit_violation(sk, sol.rotations)[:, ankle].max() < 1e-12
    # an orientation the ankle can take (its own, with its own position): no residual
    own = solve_limb(sk, limb, root, rot, pos0[:, ankle], orientation=world0[:, ankle])
    assert own.orientation_residual.max() < 1e-9
    assert quat.angle(own.rotations[:, ankle], rot[:, ankle]).max() < 1e-9


# -- 6. batches, NaN ----------------------------------------------------------------------------


def test_batched_equals_per_frame(lafan):
    sk = lafan.skeleton
    limb = limb_from_roles(sk, find_roles(sk), "right", "arm", lafan)
    rng = np.random.default_rng(12)
    b, f = 2, 5
    frames = rng.choice(lafan.num_frames, (b, f))
    root, rot = lafan.root_position[frames], lafan.rotations[frames]
    pos0, _ = fk(sk, root, rot)
    goal = pos0[..., limb.lower, :] + rng.normal(scale=30.0, size=(b, f, 3))
    goal[1, 2] = np.nan
    orientation = quat.normalize(rng.normal(size=(b, f, 4)))
    swivel = rng.uniform(-1, 1, (b, f))
    kwargs = {"orientation": orientation, "swivel": swivel}
    batched = solve_limb(sk, limb, root, rot, goal, **kwargs)
    flat = solve_limb(
        sk, limb, root[1], rot[1], goal[1], orientation=orientation[1], swivel=swivel[1]
    )
    for i in range(b):
        for k in range(f):
            one = solve_limb(
                sk,
                limb,
                root[i, k],
                rot[i, k],
                goal[i, k],
                orientation=orientation[i, k],
                swivel=swivel[i, k],
            )
            assert one.rotations.shape == (sk.num_joints, 4) and one.residual.shape == ()
            for field in ("rotations", "reached", "residual", "orientation_residual"):
                np.testing.assert_allclose(
                    getattr(batched, field)[i, k], getattr(one, field), atol=1e-12
                )
                if i == 1:
                    np.testing.assert_allclose(
                        getattr(flat, field)[k], getattr(one, field), atol=1e-12
                    )
            assert batched.clamped[i, k] == one.clamped
            assert i != 1 or flat.clamped[k] == one.clamped


def test_nan_goals_leave_the_pose_unchanged(lafan):
    sk = lafan.skeleton
    limb = limb_from_roles(sk, find_roles(sk), "left", "leg", lafan)
    m = lafan[:6]
    pos0, _ = fk(sk, m.root_position, m.rotations)
    l1, l2 = limb_lengths(sk, limb)
    goal = pos0[:, limb.upper] + 0.8 * (l1 + l2) * random_directions(np.random.default_rng(1), 6)
    goal[[1, 4]] = np.nan
    goal[3, 0] = np.nan
    orientation = quat.normalize(np.random.default_rng(0).normal(size=(6, 4)))
    orientation[5] = np.nan
    sol = solve_limb(sk, limb, m.root_position, m.rotations, goal, orientation=orientation)
    bad = np.array([False, True, False, True, True, False])
    assert np.array_equal(sol.rotations[bad], m.rotations[bad])
    assert np.allclose(sol.reached[bad], pos0[bad, limb.lower], atol=1e-9)
    assert not sol.clamped[bad].any() and np.all(sol.residual[bad] == 0.0)
    assert np.all(sol.orientation_residual[bad] == 0.0)
    assert np.abs(sol.reached[~bad] - goal[~bad]).max() < TOL
    assert np.array_equal(sol.rotations[5, limb.lower], m.rotations[5, limb.lower])
    for x in (sol.rotations, sol.reached, sol.residual, sol.orientation_residual):
        assert np.isfinite(x).all()


# -- hinge axes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("side", "kind"), LIMBS)
def test_estimated_hinge_axis_lafan(lafan, side, kind):
    sk = lafan.skeleton
    roles = find_roles(sk)
    limb = limb_from_roles(sk, roles, side, kind, lafan)
    axis = estimate_hinge_axis(sk, limb.joints, lafan.rotations)
    np.testing.assert_allclose(limb.hinge_axis, axis)
    v = quat.log(lafan.rotations[:, limb.middle])
    along = v @ axis
    share = np.sum(along**2) / np.sum(v**2)
    # the knee (elbow) of lafan_walk.bvh is a hinge to ~97 % (~99 %) of its rotation energy
    assert share > (0.96 if kind == "leg" else 0.98), share
    assert np.mean(along) > 0  # flexion positive
    # no other unit axis explains more (the dominant eigenvector)
    others = random_directions(np.random.default_rng(0), 2000)
    assert np.max(np.sum((v @ others.T) ** 2, axis=0)) <= np.sum(along**2) * (1 + 1e-12)
    # hinge angles of the clip are flexions (rest pose straight)
    assert np.percentile(hinge_angle(limb, lafan.rotations), 1) > -0.05


def test_rest_pose_hinge_axis():
    # a bent rest pose: the normal of the limb plane, rest bend positive
    sk, _ = hinge_skeleton(0.0, 40.0, 0.0, 38.0, beta_rest=0.6)
    roles = {"left_hip": 1, "left_knee": 2, "left_ankle": 3}
    sk3 = Skeleton(sk.names, sk.parents, sk.offsets)  # 3-DOF knee: no channel axis
    limb = limb_from_roles(sk3, roles, "left", "leg")
    d1, d2 = sk.offsets[2], sk.offsets[3]
    normal = np.cross(d1, d2) / np.linalg.norm(np.cross(d1, d2))
    np.testing.assert_allclose(limb.hinge_axis, normal, atol=1e-12)
    assert np.all(np.isinf(limb.hinge_limits))
    # turning positively bends the rest pose further
    bent = quat.identity(4)
    bent[2] = quat.exp(0.3 * limb.hinge_axis)
    straight = hinge_sweep_lengths(sk3, limb, np.zeros(3), quat.identity(4), np.array([0.0]))
    further = hinge_sweep_lengths(sk3, limb, np.zeros(3), bent, np.array([0.0]))
    assert further[0] < straight[0]
    # a straight rest pose: some axis perpendicular to the upper bone
    sk_s, _ = hinge_skeleton(0.0, 40.0, 0.0, 38.0)
    limb_s = limb_from_roles(Skeleton(sk_s.names, sk_s.parents, sk_s.offsets), roles, "left", "leg")
    assert abs(limb_s.hinge_axis @ sk_s.offsets[2]) < 1e-9
    # a clip without motion at the middle joint: the same fallback
    still = estimate_hinge_axis(sk3, (1, 2, 3), quat.identity((5, 4)))
    np.testing.assert_allclose(still, normal, atol=1e-12)


def test_a_knee_bent_at_rest_and_straightened_by_the_clip_still_bends_forward():
    """A character standing with its knees bent at rest (RobotExpressive's, 31°): a clip
    that straightens them turns each knee back from its rest, so the mean of the
    rotations about the knee's axis is negative; the axis is still oriented so that
    the limb's own bend (rest bend plus turn) is positive, and solved for a goal
    nearer than the straight leg, the knee bends the way it bends at rest (the other
    orientation bent it backwards, 31° off the source's thighs)."""
    sk, _ = hinge_skeleton(0.0, 40.0, 0.0, 38.0, beta_rest=0.55)
    sk3 = Skeleton(sk.names, sk.parents, sk.offsets)  # 3-DOF knee
    d1, d2 = sk.offsets[2], sk.offsets[3]
    normal = np.cross(d1, d2) / np.linalg.norm(np.cross(d1, d2))  # the rest bend's axis
    turns = np.linspace(-0.5, -0.1, 20)  # straighter than at rest, never past straight
    rotations = quat.identity((20, 4))
    rotations[:, 2] = quat.exp(turns[:, None] * normal)
    axis = estimate_hinge_axis(sk3, (1, 2, 3), rotations)
    np.testing.assert_allclose(axis, normal, atol=1e-9)
    limb = Limb(1, 2, 3, hinge_axis=axis, kind="leg", side="left")
    pos, _ = forward_kinematics(sk3, np.zeros(3), rotations[0])
    hip = pos[1]
    goal = hip + 0.8 * 78.0 * (pos[3] - hip) / np.linalg.norm(pos[3] - hip)  # (straight: 78)
    out = solve_limb(sk3, limb, np.zeros(3), rotations[0], goal)
    bent, _ = forward_kinematics(sk3, np.zeros(3), out.rotations)
    upper, lower = bent[2] - bent[1], bent[3] - bent[2]
    assert np.cross(upper, lower) @ normal > 0  # bent the rest pose's way


def test_a_knee_that_flexes_negative_is_turned_round():
    """A one-channel knee whose range reaches further below 0 than above (iCub's,
    [-125°, 23°]): the limb's axis and limits are turned round, so that flexion is
    positive; solved for a goal nearer than the straight leg, the knee's own channel
    angle comes out negative, inside its range (not the hyperextension the file's
    sign would have chosen, 34 % of frames onto iCub)."""
    sk, _ = hinge_skeleton(0.0, 40.0, 0.0, 38.0)
    limits = np.tile([-np.inf, np.inf], (4, 3, 1)).astype(float)
    limits[2, 0] = [-2.18, 0.40]  # the knee's one channel (X)
    sk = sk.replace(limits=limits)
    roles = {"left_hip": 1, "left_knee": 2, "left_ankle": 3}
    limb = limb_from_roles(sk, roles, "left", "leg")
    channel_axis = quat.rotate(sk.axes[2], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(limb.hinge_axis, -channel_axis, atol=1e-12)
    np.testing.assert_allclose(limb.hinge_limits, [-0.40, 2.18])
    # a CMU-like range keeps the file's sign
    limits[2, 0] = [-0.17, 2.97]
    cmu = limb_from_roles(sk.replace(limits=limits.copy()), roles, "left", "leg")
    np.testing.assert_allclose(cmu.hinge_axis, channel_axis, atol=1e-12)
    # a goal 70 cm from the hip (the leg is 78): the channel angle flexes, negative
    hip = forward_kinematics(sk, np.zeros(3), quat.identity(4))[0][1]
    goal = hip + 70.0 * np.array([0.0, -1.0, 0.0])
    out = solve_limb(sk, limb, np.zeros(3), quat.identity(4), goal)
    angle = channel_angles(sk, out.rotations)[2, 0]
    assert -2.18 <= angle < -0.1


# -- errors and values ----------------------------------------------------------------------------


def test_limb_is_immutable_and_checked(lafan):
    limb = Limb(1, 2, 3, hinge_axis=[0.0, 0.0, 2.0], hinge_limits=[-0.1, 2.0])
    np.testing.assert_allclose(limb.hinge_axis, [0, 0, 1])
    with pytest.raises(ValueError):
        limb.hinge_axis[0] = 1.0
    with pytest.raises(AttributeError):
        limb.upper = 4  # type: ignore[misc]
    with pytest.raises(ValueError, match="hinge_axis"):
        Limb(1, 2, 3, hinge_axis=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="hinge_limits"):
        Limb(1, 2, 3, hinge_axis=[1.0, 0, 0], hinge_limits=[1.0, 0.0])
    sk = lafan.skeleton
    roles = find_roles(sk)
    with pytest.raises(ValueError, match="side"):
        limb_from_roles(sk, roles, "middle", "leg")
    with pytest.raises(ValueError, match="kind"):
        limb_from_roles(sk, roles, "left", "tail")
    with pytest.raises(RetargetError, match="chain"):
        solve_limb(sk, Limb(1, 3, 4, [1.0, 0, 0]), lafan.root_position, lafan.rotations, 0.0)
    leg = limb_from_roles(sk, roles, "left", "leg")
    with pytest.raises(ValueError, match="goal"):
        solve_limb(sk, leg, lafan.root_position[:2], lafan.rotations[:2], np.zeros((2, 2)))
    with pytest.raises(ValueError, match="swivel_mode"):
        solve_limb(sk, leg, lafan.root_position[0], lafan.rotations[0], [0, 0, 0], swivel_mode="x")
    with pytest.raises(ValueError, match="broadcast"):
        solve_limb(sk, leg, lafan.root_position[:3], lafan.rotations[:3], np.zeros((2, 3)))


@pytest.mark.parametrize("side", ["left", "right"])
def test_swivel_angle_is_continuous_over_the_clip(lafan, side):
    """The swivel reference (mean hip rotation of the clip) keeps ψ away from its singularity.

    lafan's rest pose points the legs opposite to where the clip has them, so
    measuring from the rest pose would make ψ jump by ~180° between frames.
    """
    sk = lafan.skeleton
    limb = limb_from_roles(sk, find_roles(sk), side, "leg", lafan)
    psi = swivel_angle(sk, limb, lafan.root_position, lafan.rotations)
    assert np.abs(wrap(np.diff(psi))).max() < 0.5  # radians per frame at 30 fps
    from_rest = Limb(*limb.joints, limb.hinge_axis, limb.hinge_limits)
    psi_rest = swivel_angle(sk, from_rest, lafan.root_position, lafan.rotations)
    assert np.abs(wrap(np.diff(psi_rest))).max() > 2.0


# -- soft reach ---------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.0, 3.0),
    st.floats(0.0, 3.0),
    st.floats(0.5, 100.0),
    st.floats(0.001, 0.5),
)
def test_soft_reach_eases_monotonically_below_the_reach(a, b, reach, softness):
    """Identity below (1 - s) reach, increasing, C1 at the knee, always below the reach."""
    lo, hi = sorted((a * reach, b * reach))
    eased = soft_reach(np.array([lo, hi]), reach, softness)
    assert eased[0] <= eased[1] + 1e-12
    assert (eased <= reach * (1 + 1e-15)).all()  # below, to rounding far past the reach
    knee = (1.0 - softness) * reach
    if hi <= knee:
        assert np.array_equal(eased, [lo, hi])
    # the slope at the knee is 1 from both sides (finite differences)
    h = 1e-6 * softness * reach
    left = (soft_reach(knee, reach, softness) - soft_reach(knee - h, reach, softness)) / h
    right = (soft_reach(knee + h, reach, softness) - soft_reach(knee, reach, softness)) / h
    assert left == pytest.approx(1.0, abs=1e-4) and right == pytest.approx(1.0, abs=1e-4)
    # the shortfall at the reach is s * reach / e
    assert reach - soft_reach(reach, reach, softness) == pytest.approx(
        softness * reach / np.e, rel=1e-9
    )
    with pytest.raises(ValueError, match="softness"):
        soft_reach(lo, reach, 1.0)


def test_soft_limb_does_not_snap_straight(lafan):
    """A goal swept straight away from the hip through the leg's reach: the hard limb's
    knee snaps straight (its hinge angle changes without bound per unit of distance
    near full extension), the soft one eases, and reports its shortfall as residual."""
    sk = lafan.skeleton
    leg = limb_from_roles(sk, find_roles(sk), "left", "leg")
    rot = lafan.rotations[100]
    root = lafan.root_position[100]
    pos, _ = fk(sk, root, rot)
    reach = sum(limb_lengths(sk, leg))
    direction = (pos[leg.lower] - pos[leg.upper]) / np.linalg.norm(pos[leg.lower] - pos[leg.upper])
    dist = np.linspace(0.85, 1.1, 2001) * reach
    goals = pos[leg.upper] + dist[:, None] * direction
    hard = solve_limb(sk, leg, root, rot, goals)
    soft = solve_limb(sk, leg, root, rot, goals, softness=0.05)
    step = dist[1] - dist[0]
    rate_hard = np.abs(np.diff(hinge_angle(leg, hard.rotations))).max() / step
    rate_soft = np.abs(np.diff(hinge_angle(leg, soft.rotations))).max() / step
    assert rate_soft < rate_hard / 5
    assert (np.abs(hinge_angle(leg, soft.rotations)) > 0.05).all()  # never fully straight
    below = dist <= 0.95 * reach * (1 - 1e-9)
    assert soft.residual[below].max() < TOL
    reached = np.linalg.norm(soft.reached - pos[leg.upper], axis=-1)
    assert np.allclose(soft.residual, np.abs(dist - reached), atol=TOL)
    with pytest.raises(ValueError, match="softness"):
        solve_limb(sk, leg, root, rot, goals[0], softness=-0.1)


def test_bend_stays_on_the_flexion_side_through_a_straight_reference():
    """References whose knee passes through straight (β_ref from +3° to −3°) and goals
    that ask for a 20° bend: the solution bends the flexion way at every frame, so the
    knee does not flip 40° where the reference crosses 0 (a one-frame pop of the knee,
    4.8 % of height on a CMU walk onto blubby before)."""
    sk, limb = hinge_skeleton(0.0, 40.0, 0.0, 38.0)
    n = 61
    theta_ref = np.radians(np.linspace(3.0, -3.0, n))
    ref = quat.identity((n, 4))
    ref[:, 2] = quat.exp(theta_ref[:, None] * limb.hinge_axis)
    bent = quat.identity((n, 4))
    bent[:, 2] = quat.exp(np.radians(20.0) * limb.hinge_axis[None])
    root = np.zeros((n, 3))
    goal = fk(sk, root, bent)[0][:, 3]
    sol = solve_limb(sk, limb, root, ref, goal)
    theta = hinge_angle(limb, sol.rotations)
    np.testing.assert_allclose(theta, np.radians(20.0), atol=1e-9)
    knee = fk(sk, root, sol.rotations)[0][:, 2]
    assert np.linalg.norm(np.diff(knee, axis=0), axis=1).max() < 1e-9  # not a jump anywhere


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("kind", ["leg", "arm"])
def test_compiled_rows_are_the_numpy_steps(lafan, side, kind, monkeypatch):
    """The compiled rows (:mod:`retarget.ik._kernels.limb`) against the numpy steps they
    replace: goals near and out of reach and NaN, hinge limits, the soft reach, a
    swivel, an orientation goal, per-row bone lengths."""
    import retarget.ik.limb as limb_module

    sk, limb, rng, root, rot, pos0 = lafan_limb_frames(lafan, side, kind, 11, 60)
    limb = dataclasses.replace(limb, hinge_limits=(0.0, 2.4))
    goal = reachable_goals(sk, limb, pos0, rng)
    goal[::7] *= 3.0  # out of reach
    goal[3::11] = np.nan
    orientation = quat.normalize(rng.normal(size=(60, 4)))
    swivel = rng.uniform(-0.5, 0.5, 60)
    translations = np.broadcast_to(sk.offsets, (60, sk.num_joints, 3)) * rng.uniform(
        0.9, 1.1, (60, 1, 1)
    )
    for options in (
        {},
        {"orientation": orientation, "swivel": swivel, "softness": 0.05},
        {"translations": translations, "orientation": orientation},
    ):
        compiled = solve_limb(sk, limb, root, rot, goal, **options)
        monkeypatch.setattr(limb_module, "_COMPILED", False)
        reference = solve_limb(sk, limb, root, rot, goal, **options)
        monkeypatch.setattr(limb_module, "_COMPILED", True)
        # a goal out of reach straightens the limb, where the law of cosines' arccos is at
        # ±1 and a rounding of the operands (a fused multiply-add where the CPU has one)
        # moves the angle by up to √ε ≈ 1.5e-8: those frames to 1e-7, the others to 1e-12
        far = np.isin(np.arange(60), np.arange(0, 60, 7))[:, None, None]
        difference = np.abs(
            quat.canonical(compiled.rotations) - quat.canonical(reference.rotations)
        )
        assert np.where(far, 0.0, difference).max() <= 1e-12
        assert difference.max() <= 1e-7
        for field in ("reached", "residual", "orientation_residual", "extension"):
            np.testing.assert_allclose(
                getattr(compiled, field), getattr(reference, field), atol=1e-9, err_msg=field
            )
        np.testing.assert_allclose(
            compiled.orientation_error, reference.orientation_error, atol=1e-7
        )
        np.testing.assert_array_equal(compiled.clamped, reference.clamped)
        if "softness" not in options:  # (a soft reach eases far goals: none clamped)
            assert compiled.clamped.any() and not compiled.clamped.all()
