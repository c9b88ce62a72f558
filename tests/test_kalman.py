"""The sensor filter of Shin et al. 2001, §3 (:mod:`retarget.filters.kalman`).

Checked against filterpy's ``KalmanFilter`` step by step, on a one-hour stream
(unit quaternions, no drift), on a real walk with synthetic sensor noise
(accuracy and lag), for drop-outs, for the agreement of the online object and
the whole-recording function, and for the noise estimate of a still stretch.
"""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest
from filterpy.kalman import KalmanFilter

from retarget.core import quat
from retarget.core.kinematics import forward_kinematics
from retarget.filters import (
    KalmanParameters,
    SensorEstimate,
    SensorFilter,
    estimate_noise,
    filter_stream,
    process_noise,
    still_window,
)
from retarget.filters._kernels.kalman import _filter_frames

DEG = np.pi / 180.0
FPS = 120.0


def random_spd(rng, scales):
    """A random symmetric positive definite matrix with cross terms, std ``scales``."""
    n = len(scales)
    a = rng.normal(size=(n, n))
    corr = a @ a.T + n * np.eye(n)
    d = 1.0 / np.sqrt(np.diag(corr))
    corr = corr * d[:, None] * d[None, :]
    return corr * np.outer(scales, scales)


def smooth_trajectory(rng, frames, sensors, amplitude, seconds_per_frame=1.0 / FPS):
    """Sums of three sinusoids per axis, periods 2.5-20 s: shape (frames, sensors, 3)."""
    t = np.arange(frames)[:, None, None, None] * seconds_per_frame
    freq = rng.uniform(0.05, 0.4, (1, sensors, 3, 3))
    phase = rng.uniform(0.0, 2 * np.pi, (1, sensors, 3, 3))
    return amplitude * np.sin(2 * np.pi * freq * t + phase).sum(axis=-1)


def noisy(rng, positions, orientations, position_std=0.5, angle_std=DEG):
    """White noise: ``position_std`` per axis; ``q ⊗ exp(n)``, ``n`` of ``angle_std`` per axis."""
    p = positions + rng.normal(0.0, position_std, positions.shape)
    q = quat.multiply(orientations, quat.exp(rng.normal(0.0, angle_std, positions.shape)))
    return p, q


# -- the equations against filterpy -----------------------------------------------------------
def paper_matrices(dt, q):
    """A, H and Q of eqs. (3), (6), (5), written out from the paper."""
    eye, zero = np.eye(3), np.zeros((3, 3))
    a = np.block(
        [
            [eye, dt * eye, zero, zero],
            [zero, eye, zero, zero],
            [zero, zero, eye, dt * eye],
            [zero, zero, zero, eye],
        ]
    )
    h = np.block([[eye, zero, zero, zero], [zero, zero, eye, zero]])
    q1, q2, q3, q4, q5, q6, q7, q8 = q
    big_q = np.block(
        [
            [q1 * eye, q2 * eye, zero, zero],
            [q3 * eye, q4 * eye, zero, zero],
            [zero, zero, q5 * eye, q6 * eye],
            [zero, zero, q7 * eye, q8 * eye],
        ]
    )
    return a, h, big_q


def test_process_noise_is_eq_5():
    q = np.arange(1.0, 9.0)
    np.testing.assert_array_equal(process_noise(q), paper_matrices(0.1, q)[2])
    with pytest.raises(ValueError, match=r"shape \(8,\)"):
        process_noise(q[:7])


@pytest.mark.parametrize("num_sensors", [1, 4])
def test_equal_to_filterpy(num_sensors):
    rng = np.random.default_rng(11)
    frames = 700  # long enough for P to reach its fixed point (the exact shortcut)
    q = (1e-3, 0.05, 0.05, 40.0, 1e-6, 2e-4, 2e-4, 0.2)
    # a diagonal R lets P settle to the bit (then the kernel skips eqs. 4, 7, 9);
    # with cross terms it keeps wandering in the last bit
    scales = [0.4, 0.5, 0.6, DEG, 2 * DEG, DEG]
    noise = np.stack([np.diag(np.square(scales))] + [random_spd(rng, scales) for _ in range(3)])
    parameters = KalmanParameters(q=q, measurement_noise=noise[:num_sensors])
    truth_p = smooth_trajectory(rng, frames, num_sensors, 10.0)
    truth_q = quat.exp(smooth_trajectory(rng, frames, num_sensors, 0.5))
    positions, orientations = noisy(rng, truth_p, truth_q)
    orientations[rng.random((frames, num_sensors)) < 0.5] *= -1.0  # either sign is measured
    if num_sensors > 1:  # drop-outs: sensor 1 for a stretch, sensor 2 here and there
        positions[200:230, 1] = np.nan
        orientations[rng.random(frames) < 0.05, 2] = np.nan
    sensors = SensorFilter(num_sensors, parameters, FPS)
    a, h, big_q = paper_matrices(1.0 / FPS, q)
    vp, vr = parameters.initial_velocity_variance

    estimate = sensors.update(positions[0], orientations[0])
    kfs = []
    for s in range(num_sensors):
        kf = KalmanFilter(dim_x=12, dim_z=6)
        kf.F, kf.H, kf.Q, kf.R = a, h, big_q, noise[s]
        kf.x = np.concatenate([positions[0, s], np.zeros(9)])
        kf.P = np.zeros((12, 12))
        kf.P[np.ix_([0, 1, 2, 6, 7, 8], [0, 1, 2, 6, 7, 8])] = noise[s]
        kf.P[[3, 4, 5, 9, 10, 11], [3, 4, 5, 9, 10, 11]] = [vp] * 3 + [vr] * 3
        np.testing.assert_array_equal(sensors.covariance[s], kf.P)
        kfs.append(kf)
    for t in range(1, frames):
        previous = estimate.orientations
        estimate = sensors.update(positions[t], orientations[t])
        for s, kf in enumerate(kfs):
            kf.predict()
            if np.isfinite(positions[t, s]).all() and np.isfinite(orientations[t, s]).all():
                q_e_inverse = quat.conjugate(previous[s])
                r = quat.log(quat.multiply(q_e_inverse, orientations[t, s]))  # eq. (2)
                kf.update(np.concatenate([positions[t, s], r]))
            # eq. (10), then r̂ = 0
            q_e = quat.normalize(quat.multiply(previous[s], quat.exp(kf.x[6:9])))
            np.testing.assert_allclose(estimate.orientations[s], q_e, rtol=0, atol=1e-12)
            kf.x[6:9] = 0.0
            ours = np.concatenate(
                [
                    estimate.positions[s],
                    estimate.velocities[s],
                    np.zeros(3),
                    estimate.angular_velocities[s],
                ]
            )
            np.testing.assert_allclose(ours, kf.x, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(sensors.covariance[s], kf.P, rtol=1e-10, atol=1e-12)
    assert sensors._steady[0], "P never reached its fixed point: the shortcut went untested"


def test_unsymmetric_q_as_printed():
    """q2 ≠ q3 and q6 ≠ q7: eqs. (4), (7), (9) literally (filterpy's Joseph form
    assumes a symmetric P, so the reference is plain numpy here)."""
    rng = np.random.default_rng(12)
    q = (1e-3, 0.08, 0.02, 40.0, 1e-6, 3e-4, 1e-4, 0.2)
    noise = random_spd(rng, [0.5, 0.5, 0.5, DEG, DEG, DEG])
    parameters = KalmanParameters(q=q, measurement_noise=noise)
    positions, orientations = noisy(
        rng, smooth_trajectory(rng, 60, 1, 10.0), quat.exp(smooth_trajectory(rng, 60, 1, 0.5))
    )
    positions[30:33] = np.nan
    a, h, big_q = paper_matrices(1.0 / FPS, q)
    sensors = SensorFilter(1, parameters, FPS)
    estimate = sensors.update(positions[0], orientations[0])
    x = np.concatenate([positions[0, 0], np.zeros(9)])
    big_p = sensors.covariance[0]
    for t in range(1, 60):
        previous = estimate.orientations[0]
        estimate = sensors.update(positions[t], orientations[t])
        x, big_p = a @ x, a @ big_p @ a.T + big_q
        if np.isfinite(positions[t, 0]).all():
            r = quat.log(quat.multiply(quat.conjugate(previous), orientations[t, 0]))
            z = np.concatenate([positions[t, 0], r])
            gain = big_p @ h.T @ np.linalg.inv(h @ big_p @ h.T + noise)
            x, big_p = x + gain @ (z - h @ x), (np.eye(12) - gain @ h) @ big_p
        x[6:9] = 0.0
        np.testing.assert_allclose(sensors.covariance[0], big_p, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(estimate.positions[0], x[:3], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(estimate.angular_velocities[0], x[9:], rtol=1e-10, atol=1e-10)
    assert np.abs(big_p - big_p.T).max() > 1e-3  # P is not symmetric: the test tells q2 from q3


# -- long streams ------------------------------------------------------------------------------
def test_one_hour_stream_stays_unit_and_does_not_drift():
    rng = np.random.default_rng(5)
    frames, sensors = int(3600 * FPS), 3
    truth_q = quat.exp(smooth_trajectory(rng, frames, sensors, 0.6))
    truth_p = smooth_trajectory(rng, frames, sensors, 20.0)
    positions, orientations = noisy(rng, truth_p, truth_q)
    start = time.perf_counter()
    estimate = filter_stream(positions, orientations, FPS)
    seconds = time.perf_counter() - start
    norm_error = np.abs(np.linalg.norm(estimate.orientations, axis=-1) - 1.0)
    error = quat.angle(estimate.orientations, truth_q) / DEG
    minute = int(60 * FPS)
    early = np.sqrt(np.mean(error[int(FPS) : 3 * minute] ** 2))
    late = np.sqrt(np.mean(error[-minute:] ** 2))
    print(
        f"\n1-hour stream, {sensors} sensors: {seconds:.2f} s, max |norm - 1| "
        f"{norm_error.max():.1e}, orientation error max {error.max():.2f}°, RMS minutes 0-3 "
        f"{early:.3f}°, last minute {late:.3f}°"
    )
    assert norm_error.max() < 1e-12
    assert error.max() < 5.0
    assert late <= 1.1 * early


# -- accuracy and lag on a real walk ---------------------------------------------------------
def rms_position(estimate, truth, shift=0):
    d = estimate[shift:] - truth[: len(truth) - shift]
    return np.sqrt(np.mean(np.sum(d * d, axis=-1)))


def rms_angle(estimate, truth, shift=0):
    return np.sqrt(np.mean(quat.angle(estimate[shift:], truth[: len(truth) - shift]) ** 2))


def test_acceptance_on_a_real_walk(lafan):
    """Every joint of lafan_walk at 120 Hz as a sensor, 0.5 cm and 1° per axis of noise.

    Noise: positions N(0, 0.5²) cm per axis; orientations ``q ⊗ exp(n)`` with
    ``n`` N(0, 1°²) per axis (an angle of RMS √3°). ``R`` is estimated from one
    synthetic second of the same noise on a still pose; ``q`` is the default.

    The paper's constant-velocity filter cannot halve this error on a walk:
    over ``q4`` and ``q8`` the best ratios are 0.61 (positions) and 0.65
    (orientations) without lag, and the defaults sit there (the 0.7 bound
    keeps them from getting worse). The issue allows two frames of lag: a
    fixed-lag smoother over them (``lag=2``) brings both under half.
    """
    rng = np.random.default_rng(2001)
    motion = lafan.resample(FPS)
    points, world = forward_kinematics(motion.skeleton, motion.root_position, motion.rotations)
    joints = motion.skeleton.num_joints
    truth_p, truth_q = points[:, :joints], world[:, :joints]
    still_p = np.broadcast_to(truth_p[:1], (int(FPS), joints, 3))
    still_q = np.broadcast_to(truth_q[:1], (int(FPS), joints, 4))
    noise = estimate_noise(*noisy(rng, still_p, still_q))
    positions, orientations = noisy(rng, truth_p, truth_q)

    def errors(lag):
        """RMS errors at shifts 0..10 and the shifts where they are least."""
        parameters = KalmanParameters(measurement_noise=noise, lag=lag)
        estimate = filter_stream(positions, orientations, FPS, parameters)
        out_p = [rms_position(estimate.positions, truth_p, s) for s in range(11)]
        out_q = [rms_angle(estimate.orientations, truth_q, s) / DEG for s in range(11)]
        return out_p, out_q, int(np.argmin(out_p)), int(np.argmin(out_q))

    raw_p, raw_q = rms_position(positions, truth_p), rms_angle(orientations, truth_q) / DEG
    out_p, out_q, lag_p, lag_q = errors(0)
    print(
        f"\nlafan_walk at 120 Hz, {joints} sensors, {len(truth_p)} frames:\n"
        f"  position RMS raw {raw_p:.3f} cm, filtered {out_p[0]:.3f} cm, "
        f"ratio {out_p[0] / raw_p:.3f}, lag {lag_p} frames\n"
        f"  orientation RMS raw {raw_q:.3f}°, filtered {out_q[0]:.3f}°, "
        f"ratio {out_q[0] / raw_q:.3f}, lag {lag_q} frames"
    )
    assert out_p[0] <= 0.7 * raw_p
    assert out_q[0] <= 0.7 * raw_q
    assert lag_p <= 2 and lag_q <= 2
    # the acceptance: two frames of fixed-lag smoothing (17 ms at 120 Hz) halve the error
    out_p, out_q, lag_p, lag_q = errors(2)
    print(
        f"  with lag=2: position ratio {out_p[lag_p] / raw_p:.3f} at lag {lag_p} frames, "
        f"orientation ratio {out_q[lag_q] / raw_q:.3f} at lag {lag_q} frames"
    )
    assert lag_p <= 2 and lag_q <= 2
    assert out_p[lag_p] <= 0.5 * raw_p and out_q[lag_q] <= 0.5 * raw_q


def test_fixed_lag_is_rts_over_the_frames_so_far():
    """With ``lag`` L, frame f is the Rauch-Tung-Striebel smoothing (filterpy's) of frame
    f - L over frames 0..f: positions and velocities, to 1e-9 (R without cross terms, so
    the position block is the linear filter on its own); orientations agree with
    filterpy's smoothed rotation vector to first order."""
    rng = np.random.default_rng(5)
    frames, lag = 60, 2
    q = (0.0, 0.0, 0.0, 50.0, 0.0, 0.0, 0.0, 0.1)
    parameters = KalmanParameters(q=q, lag=lag)
    truth_p = smooth_trajectory(rng, frames, 1, 10.0)
    truth_q = quat.exp(smooth_trajectory(rng, frames, 1, 0.5))
    positions, orientations = noisy(rng, truth_p, truth_q)
    ours = filter_stream(positions, orientations, FPS, parameters)
    plain = filter_stream(positions, orientations, FPS, KalmanParameters(q=q))
    a, h, big_q = paper_matrices(1.0 / FPS, q)
    pos = [0, 1, 2, 3, 4, 5]
    r = parameters.measurement_noise[:3, :3]
    vp, _ = parameters.initial_velocity_variance
    for f in range(lag, frames):
        kf = KalmanFilter(dim_x=6, dim_z=3)
        kf.F, kf.H, kf.Q, kf.R = a[np.ix_(pos, pos)], h[:3, pos], big_q[np.ix_(pos, pos)], r
        kf.x = np.concatenate([positions[0, 0], np.zeros(3)])
        kf.P = np.diag(np.concatenate([np.diag(r), [vp] * 3]))
        x0, p0 = kf.x.copy(), kf.P.copy()
        xs, ps, _, _ = kf.batch_filter(positions[1 : f + 1, 0])
        xs, ps = np.concatenate([[x0], xs]), np.concatenate([[p0], ps])
        smoothed, _, _, _ = kf.rts_smoother(xs, ps)
        np.testing.assert_allclose(ours.positions[f, 0], smoothed[f - lag, :3], atol=1e-9)
        np.testing.assert_allclose(ours.velocities[f, 0], smoothed[f - lag, 3:], atol=1e-9)
    # the smoothed orientations are the filtered ones, corrected by less than the noise
    gap = quat.angle(ours.orientations[lag:], plain.orientations[:-lag])
    assert 0.0 < gap.max() < 3 * DEG
    assert rms_angle(ours.orientations[lag:], truth_q[:-lag]) < rms_angle(
        plain.orientations, truth_q
    )


# -- drop-outs, start-up, online against offline ---------------------------------------------
def constant_motion(frames, sensors):
    """Constant velocity (cm/s) and constant body angular velocity (rad/s) per sensor."""
    t = np.arange(frames)[:, None, None] / FPS
    velocity = np.array([[30.0, -10.0, 5.0], [0.0, 50.0, -20.0], [-5.0, 0.0, 0.0]])[:sensors]
    omega = np.array([[0.0, 0.0, 2.0], [1.0, -0.5, 0.3], [0.2, 0.2, 0.2]])[:sensors]
    start = quat.exp(np.array([[0.3, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0]])[:sensors])
    positions = 100.0 + velocity * t
    orientations = quat.multiply(start, quat.exp(omega * t))  # body frame: q0 ⊗ exp(ω t)
    return positions, orientations, velocity, omega


def test_rates_are_per_second_and_in_the_body_frame():
    positions, orientations, velocity, omega = constant_motion(600, 3)
    estimate = filter_stream(positions, orientations, FPS)
    np.testing.assert_allclose(estimate.velocities[-1], velocity, atol=1e-6)
    np.testing.assert_allclose(estimate.angular_velocities[-1], omega, atol=1e-6)
    np.testing.assert_allclose(estimate.positions[-1], positions[-1], atol=1e-8)
    assert quat.angle(estimate.orientations[-1], orientations[-1]).max() < 1e-8


def test_dropped_sensor_is_predicted_through_the_gap_and_recovers():
    truth_p, truth_q, _, _ = constant_motion(1000, 3)
    gap = slice(500, 560)  # half a second
    # without noise the rates have converged, and constant rates are predicted exactly
    positions, orientations = truth_p.copy(), truth_q.copy()
    positions[gap, 1] = np.nan
    orientations[gap, 2, 0] = np.nan  # one component is enough to drop the row
    estimate = filter_stream(positions, orientations, FPS)
    assert np.abs(estimate.positions[gap] - truth_p[gap]).max() < 1e-5
    assert quat.angle(estimate.orientations[gap], truth_q[gap]).max() < 1e-7
    # with noise: never NaN, and back to the error of before the gap
    positions, orientations = noisy(np.random.default_rng(3), truth_p, truth_q)
    positions[gap, 1] = np.nan
    orientations[gap, 2, 0] = np.nan
    estimate = filter_stream(positions, orientations, FPS)
    for field in ("positions", "orientations", "velocities", "angular_velocities"):
        assert np.isfinite(getattr(estimate, field)).all(), field
    p_error = np.linalg.norm(estimate.positions - truth_p, axis=-1)
    q_error = quat.angle(estimate.orientations, truth_q)
    before, after = slice(200, 500), slice(700, 1000)
    for s in (1, 2):
        assert p_error[after, s].mean() < 1.3 * p_error[before, s].mean()
        assert q_error[after, s].mean() < 1.3 * q_error[before, s].mean()
    # sensors are independent: sensor 0 is the same alone
    alone = filter_stream(positions[:, :1], orientations[:, :1], FPS)
    np.testing.assert_array_equal(alone.positions[:, 0], estimate.positions[:, 0])
    np.testing.assert_array_equal(alone.orientations[:, 0], estimate.orientations[:, 0])


def test_sensor_starts_at_its_first_measurement():
    positions, orientations, _, _ = constant_motion(50, 2)
    positions[:10, 1] = np.nan
    estimate = filter_stream(positions, orientations, FPS)
    assert np.isnan(estimate.positions[:10, 1]).all()
    assert np.isnan(estimate.orientations[:10, 1]).all()
    np.testing.assert_array_equal(estimate.positions[10, 1], positions[10, 1])
    np.testing.assert_allclose(estimate.orientations[10, 1], orientations[10, 1], atol=1e-15)
    np.testing.assert_array_equal(estimate.velocities[10, 1], 0.0)
    assert np.isfinite(estimate.positions[10:]).all()


def test_filter_stream_is_update_frame_by_frame_bitwise():
    rng = np.random.default_rng(8)
    frames, sensors = 400, 5
    truth_p = smooth_trajectory(rng, frames, sensors, 15.0)
    truth_q = quat.exp(smooth_trajectory(rng, frames, sensors, 0.7))
    positions, orientations = noisy(rng, truth_p, truth_q)
    positions[rng.random((frames, sensors)) < 0.05] = np.nan
    scales = [0.5, 0.5, 0.5, DEG, DEG, DEG]
    noise = np.stack(  # sensor 0 reaches the covariance shortcut, the others do not
        [np.diag(np.square(scales))] + [random_spd(rng, scales) for _ in range(sensors - 1)]
    )
    q = (0.0, 0.0, 0.0, 30.0, 0.0, 0.0, 0.0, 0.2)
    parameters = KalmanParameters(q=q, measurement_noise=noise)
    positions.setflags(write=False)  # read-only input is copied: one compiled kernel
    whole = filter_stream(positions, orientations, FPS, parameters)
    online = SensorFilter(sensors, parameters, FPS)
    for _ in range(2):  # reset() starts afresh
        frames_out = [online.update(positions[t], orientations[t]) for t in range(frames)]
        for field in ("positions", "orientations", "velocities", "angular_velocities"):
            stacked = np.stack([getattr(f, field) for f in frames_out])
            np.testing.assert_array_equal(stacked, getattr(whole, field), err_msg=field)
        online.reset()
    assert len(_filter_frames.signatures) == 1


def test_covariance_shortcut_is_exact():
    """Skipping eqs. (4), (7), (9) at P's fixed point gives the bits of the full update."""
    rng = np.random.default_rng(9)
    frames, sensors = 400, 3
    scales = [0.5, 0.5, 0.5, DEG, DEG, DEG]
    noise = np.stack([np.diag(np.square(scales)), random_spd(rng, scales), np.diag(scales)])
    positions, orientations = noisy(
        rng,
        smooth_trajectory(rng, frames, sensors, 10.0),
        quat.exp(smooth_trajectory(rng, frames, sensors, 0.5)),
    )
    positions[250:260, 2] = np.nan
    parameters = KalmanParameters(measurement_noise=noise)
    shortcut, full = SensorFilter(sensors, parameters, FPS), SensorFilter(sensors, parameters, FPS)
    reached = np.zeros(sensors, bool)
    for t in range(frames):
        a = shortcut.update(positions[t], orientations[t])
        full._steady[:] = False  # never at the fixed point: every frame runs eqs. (4), (7), (9)
        b = full.update(positions[t], orientations[t])
        reached |= shortcut._steady
        np.testing.assert_array_equal(a.positions, b.positions)
        np.testing.assert_array_equal(a.orientations, b.orientations)
        np.testing.assert_array_equal(shortcut.covariance, full.covariance)
    assert reached[0] and reached[2]


def test_predict_is_update_with_every_row_dropped():
    positions, orientations, _, _ = constant_motion(20, 3)
    a, b = SensorFilter(3, None, FPS), SensorFilter(3, None, FPS)
    for t in range(20):
        a.update(positions[t], orientations[t])
        b.update(positions[t], orientations[t])
    predicted = a.predict()
    dropped = b.update(np.full((3, 3), np.nan), np.full((3, 4), np.nan))
    np.testing.assert_array_equal(predicted.positions, dropped.positions)
    np.testing.assert_array_equal(predicted.orientations, dropped.orientations)
    np.testing.assert_array_equal(a.covariance, b.covariance)


def test_estimates_are_read_only():
    positions, orientations, _, _ = constant_motion(3, 2)
    estimate = SensorFilter(2, None, FPS).update(positions[0], orientations[0])
    with pytest.raises(ValueError, match="read-only"):
        estimate.positions[0, 0] = 1.0
    parameters = KalmanParameters()
    with pytest.raises(ValueError, match="read-only"):
        parameters.measurement_noise[0, 0] = 1.0
    mine = np.zeros((2, 3))
    built = SensorEstimate(mine, [[1.0, 0, 0, 0]] * 2, mine, mine)
    mine[0, 0] = 5.0  # the estimate holds copies
    assert built.positions[0, 0] == 0.0 and not built.velocities.flags.writeable
    with pytest.raises(ValueError, match="matching `positions`"):
        SensorEstimate(mine, [[1.0, 0, 0, 0]] * 3, mine, mine)


# -- the measurement noise of a still stretch --------------------------------------------------
def test_estimate_noise_recovers_a_known_covariance():
    rng = np.random.default_rng(4)
    frames = 200_000
    covariances = np.stack(
        [
            random_spd(rng, [0.3, 0.5, 0.2, DEG, 0.5 * DEG, 2 * DEG]),
            random_spd(rng, [1.0, 0.1, 0.4, 3 * DEG, DEG, DEG]),
        ]
    )
    n = np.einsum("sij,fsj->fsi", np.linalg.cholesky(covariances), rng.normal(size=(frames, 2, 6)))
    positions = np.array([[10.0, 90.0, -5.0], [0.0, 150.0, 20.0]]) + n[..., :3]
    mean = quat.exp(np.array([[0.0, 3.0, 0.0], [1.0, -0.5, 2.0]]))
    orientations = quat.multiply(mean, quat.exp(n[..., 3:]))
    orientations[rng.random((frames, 2)) < 0.5] *= -1.0  # the sign is arbitrary
    found = estimate_noise(positions, orientations)
    scale = np.sqrt(np.einsum("sii,sjj->sij", covariances, covariances))
    assert (np.abs(covariances[:, :3, 3:]) / scale[:, :3, 3:]).max() > 0.2  # cross terms
    assert (np.abs(found - covariances) / scale).max() < 0.03
    with pytest.raises(ValueError, match="at least 2 frames"):
        estimate_noise(positions[:1], orientations[:1])
    with pytest.raises(ValueError, match="finite"):
        estimate_noise(np.full((5, 1, 3), np.nan), np.ones((5, 1, 4)))


def test_still_window_finds_the_planted_still_stretch():
    rng = np.random.default_rng(6)
    positions = smooth_trajectory(rng, 2000, 4, 10.0) + rng.normal(0.0, 0.5, (2000, 4, 3))
    positions[1200:1260] = positions[1200] + rng.normal(0.0, 0.5, (60, 4, 3))
    positions[100:130, 2] = np.nan  # windows over a drop-out are skipped
    assert still_window(positions, FPS, seconds=0.5) == slice(1200, 1260)
    with pytest.raises(ValueError, match="window of 2 to 2000 frames"):
        still_window(positions, FPS, seconds=30.0)
    with pytest.raises(ValueError, match=r"shape \(F, S, 3\)"):
        still_window(positions[0], FPS)


# -- checks at the boundary --------------------------------------------------------------------
def test_invalid_input_is_rejected_with_clear_messages():
    with pytest.raises(ValueError, match="8 finite floats"):
        KalmanParameters(q=(1.0, 2.0))
    with pytest.raises(ValueError, match="positive semi-definite"):
        KalmanParameters(q=(1.0, 5.0, 5.0, 1.0, 0.0, 0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="positive definite"):
        KalmanParameters(measurement_noise=np.zeros((6, 6)))
    with pytest.raises(ValueError, match="symmetric"):
        KalmanParameters(measurement_noise=np.eye(6) + np.triu(np.ones((6, 6)), 1))
    with pytest.raises(ValueError, match=r"\(6, 6\) or \(S, 6, 6\)"):
        KalmanParameters(measurement_noise=np.eye(3))
    with pytest.raises(ValueError, match=r"\(3, 6, 6\) for 3 sensors"):
        SensorFilter(3, KalmanParameters(measurement_noise=np.stack([np.eye(6)] * 2)), FPS)
    with pytest.raises(ValueError, match="fps > 0"):
        SensorFilter(3, None, 0.0)
    with pytest.raises(ValueError, match="num_sensors"):
        SensorFilter(0, None, FPS)
    sensors = SensorFilter(2, None, FPS)
    with pytest.raises(ValueError, match=r"`positions` of shape \(2, 3\)"):
        sensors.update(np.zeros((3, 3)), np.tile([1.0, 0, 0, 0], (3, 1)))
    with pytest.raises(ValueError, match="to match `positions`"):
        sensors.update(np.zeros((2, 3)), np.tile([1.0, 0, 0, 0], (3, 1)))
    with pytest.raises(ValueError, match=r"zero quaternion \(frame 0, sensor 1\)"):
        sensors.update(np.zeros((2, 3)), [[1.0, 0, 0, 0], [0.0, 0, 0, 0]])
    assert np.isnan(sensors.predict().positions).all()  # the bad frame changed nothing
    with pytest.raises(ValueError, match=r"zero quaternion \(frame 2, sensor 0\)"):
        filter_stream(
            np.zeros((3, 2, 3)), np.pad(np.ones((2, 2, 4)), ((0, 1), (0, 0), (0, 0))), FPS
        )
    with pytest.raises(ValueError, match="zero quaternion"):
        estimate_noise(np.zeros((3, 1, 3)), np.zeros((3, 1, 4)))
    with pytest.raises(ValueError, match=r"\(F, S, 3\)"):
        filter_stream(np.zeros((2, 3)), np.zeros((2, 4)), FPS)


def test_every_exported_name_exists():
    module = importlib.import_module("retarget.filters")
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert len(module.__all__) == len(set(module.__all__))
