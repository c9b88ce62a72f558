"""Multilevel B-spline approximation (Lee & Shin 1999, §3.2, eq. 2)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retarget.editing.mba import bspline_weights, fit_bspline, multilevel_fit, reach


def naive_fit(times, values, spacing, num_frames):
    """Eq. 2 written out control point by control point."""
    n_ctrl = int(np.floor((num_frames - 1) / spacing)) + 4
    num = np.zeros((n_ctrl, values.shape[1]))
    den = np.zeros(n_ctrl)
    for t, x in zip(times, values, strict=True):
        i = int(np.floor(t / spacing))
        u = t / spacing - i
        w = [
            (1 - u) ** 3 / 6,
            (3 * u**3 - 6 * u**2 + 4) / 6,
            (-3 * u**3 + 3 * u**2 + 3 * u + 1) / 6,
            u**3 / 6,
        ]
        s = sum(wk * wk for wk in w)
        for k in range(4):
            phi = w[k] * x / s
            num[i + k] += w[k] ** 2 * phi
            den[i + k] += w[k] ** 2
    out = np.zeros_like(num)
    out[den > 0] = num[den > 0] / den[den > 0, None]
    return out


def test_weights_partition_unity_and_match_the_cubic_basis():
    u = np.linspace(0, 1, 50, endpoint=False)
    w = bspline_weights(u)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert np.all(w >= 0)
    # C2 joins: the curve of a single control point is continuous with two derivatives
    # the end of interval i (control points i-1 .. i+2) meets the start of interval i+1
    np.testing.assert_allclose(bspline_weights(1.0)[1:], bspline_weights(0.0)[:3], atol=1e-15)


@given(st.integers(0, 2**31), st.sampled_from([1.0, 2.0, 3.5, 8.0, 16.0]))
@settings(max_examples=40, deadline=None)
def test_fit_equals_naive_eq2(seed, spacing):
    rng = np.random.default_rng(seed)
    num_frames = int(rng.integers(5, 120))
    n = int(rng.integers(1, 30))
    times = rng.uniform(0, num_frames - 1, n)
    times[0] = num_frames - 1  # the last frame is a legal sample
    values = rng.normal(size=(n, 3))
    spline = fit_bspline(times, values, spacing, num_frames)
    np.testing.assert_allclose(
        spline.control, naive_fit(times, values, spacing, num_frames), atol=1e-12
    )


@pytest.mark.parametrize("spacing", [2, 4, 6, 12, 16])
def test_a_single_sample_changes_nothing_beyond_its_reach(spacing):
    num_frames = 200
    for t0 in [0, 37, 100, 101.5, 199]:
        spline = fit_bspline([t0], [[1.0, -2.0]], spacing, num_frames)
        values = spline(np.arange(num_frames))
        first, last = reach(t0, spacing, num_frames)
        changed = np.flatnonzero(np.abs(values).max(axis=1) > 0)
        assert changed.min() >= first and changed.max() <= last
        assert last - first < 7 * spacing + 1  # about seven knot intervals, as the paper says


def test_one_sample_is_met_at_its_frame_for_any_spacing():
    # a lone sample: its four control points all take x / Σw², so f(t) = x exactly
    for spacing in [1, 3, 8]:
        spline = fit_bspline([50.0], [[2.5]], spacing, 120)
        assert spline([50.0])[0, 0] == pytest.approx(2.5)


def test_multilevel_converges_level_by_level():
    rng = np.random.default_rng(0)
    num_frames = 300
    times = np.sort(rng.choice(num_frames, 60, replace=False)).astype(float)
    values = np.stack([np.sin(times / 9.0), np.cos(times / 4.0)], axis=1)
    levels = multilevel_fit(times, values, [16, 8, 4, 2, 1, 1], num_frames)
    errors = []
    total = np.zeros_like(values)
    for level in levels:
        total += level(times)
        errors.append(np.abs(total - values).max())
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(errors))
    assert errors[-1] < 0.02 * errors[0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="spacing"):
        fit_bspline([1.0], [[1.0]], 0, 10)
    with pytest.raises(ValueError, match=r"\[0, 9\]"):
        fit_bspline([10.0], [[1.0]], 2, 10)
    assert np.all(fit_bspline([], np.zeros((0, 2)), 4, 10)(np.arange(10)) == 0)
