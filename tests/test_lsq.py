"""The least-squares B-spline filter (Tak & Ko 2005, eqs. 17-19) on a real walk."""

from __future__ import annotations

import numpy as np
import pytest

from retarget.filters.lsq import bspline_basis, lsq_filter


def test_basis_is_a_partition_of_unity_with_exact_derivatives():
    b0, b1, b2 = bspline_basis(50, 4, 30.0)
    np.testing.assert_allclose(b0.sum(axis=1), 1.0)
    np.testing.assert_allclose(b1.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(b2.sum(axis=1), 0.0, atol=1e-12)
    # derivatives against central differences on a fine grid (the same curve, 64x the
    # frames): central differences err by O(h²) times the jumps of the third derivative
    fine0, fine1, fine2 = bspline_basis(3201, 256, 1920.0)
    c = np.random.default_rng(0).normal(size=fine0.shape[1])
    x, v, a = fine0 @ c, fine1 @ c, fine2 @ c
    dt = 1 / 1920.0
    assert np.abs(np.gradient(x, dt) - v)[2:-2].max() < 1e-4 * np.abs(v).max()
    assert np.abs(np.gradient(v, dt) - a)[2:-2].max() < 1e-2 * np.abs(a).max()


def test_a_spline_of_the_same_knots_comes_back_exactly():
    b0, b1, b2 = bspline_basis(120, 4, 30.0)
    c = np.random.default_rng(1).normal(size=(b0.shape[1], 3))
    out = lsq_filter(b0 @ c, b1 @ c, b2 @ c, 30.0, spacing=4)
    for got, want in zip(out, (b0 @ c, b1 @ c, b2 @ c), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-8 * np.abs(want).max())


def test_window_of_64_matches_the_global_fit(lafan):
    """Figure 5: the sliding window of 64 frames gives the global fit's curve (within
    0.1 mm), on every joint position of 600 frames of the walk with per-frame noise."""
    from retarget.core.kinematics import positions

    clip = lafan[:600]
    q = positions(clip).reshape(clip.num_frames, -1) / 100.0  # metres, 81 coordinates
    rng = np.random.default_rng(2)
    qd = np.gradient(q, axis=0) * clip.fps + rng.normal(scale=0.02, size=q.shape)
    qdd = np.gradient(qd, axis=0) * clip.fps
    q_noisy = q + rng.normal(scale=0.005, size=q.shape)
    full = lsq_filter(q_noisy, qd, qdd, clip.fps)
    slid = lsq_filter(q_noisy, qd, qdd, clip.fps, window=64)
    gap = np.abs(slid[0] - full[0]).max()
    print(f"\nwindow 64 against global: largest difference {1000 * gap:.3f} mm")
    assert gap < 1e-4
    # the fit is one curve: its velocity is its position's derivative
    v = np.gradient(full[0], axis=0) * clip.fps
    assert np.abs(v - full[1])[2:-2].max() < 0.05 * np.abs(full[1]).max()
    # and it smooths the noise away from the positions
    assert np.abs(full[0] - q).std() < 0.6 * np.abs(q_noisy - q).std()


def test_bad_input():
    with pytest.raises(ValueError, match="one shape"):
        lsq_filter(np.zeros((5, 2)), np.zeros((5, 2)), np.zeros((4, 2)), 30.0)
    with pytest.raises(ValueError, match="spacing"):
        bspline_basis(5, 0, 30.0)
