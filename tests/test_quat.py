"""Quaternion algebra: group axioms, double cover, edge angles, and scipy as the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.transform import Rotation

from retarget.core import quat

ORDERS = ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"]

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@st.composite
def unit_quats(draw, n=1):
    q = draw(arrays(np.float64, (n, 4), elements=st.floats(-1, 1)))
    norms = np.linalg.norm(q, axis=-1, keepdims=True)
    q = np.where(norms < 1e-3, [1.0, 0, 0, 0], q / np.where(norms < 1e-3, 1, norms))
    return q


def scipy_from(q):
    return Rotation.from_quat(np.asarray(q)[..., [1, 2, 3, 0]])


def same_rotation(a, b, atol=1e-12):
    return np.allclose(np.abs(np.sum(a * b, axis=-1)), 1.0, atol=atol)


@given(unit_quats(3))
def test_group_axioms(q):
    a, b, c = q
    e = quat.identity()
    np.testing.assert_allclose(
        quat.multiply(quat.multiply(a, b), c), quat.multiply(a, quat.multiply(b, c)), atol=1e-12
    )
    np.testing.assert_allclose(quat.multiply(a, e), a, atol=1e-15)
    np.testing.assert_allclose(quat.multiply(e, a), a, atol=1e-15)
    assert same_rotation(quat.multiply(a, quat.inverse(a)), e)
    assert same_rotation(quat.multiply(quat.inverse(a), a), e)


@given(unit_quats(2), arrays(np.float64, (5, 3), elements=finite))
def test_multiply_and_rotate_match_scipy(q, v):
    a, b = q
    ab = quat.multiply(a, b)
    ref = (scipy_from(a) * scipy_from(b)).as_quat()[[3, 0, 1, 2]]
    assert same_rotation(ab, ref)
    np.testing.assert_allclose(quat.rotate(a, v), scipy_from(a).apply(v), atol=1e-9)
    np.testing.assert_allclose(quat.matrix_from_quat(a), scipy_from(a).as_matrix(), atol=1e-12)


@given(unit_quats(1))
def test_double_cover(q):
    q = q[0]
    v = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(quat.rotate(q, v), quat.rotate(-q, v), atol=1e-12)
    np.testing.assert_allclose(quat.log(q), quat.log(-q), atol=1e-12)
    assert quat.angle(q, -q) < 1e-7
    np.testing.assert_allclose(quat.matrix_from_quat(q), quat.matrix_from_quat(-q), atol=1e-15)


@given(arrays(np.float64, (4, 3), elements=st.floats(-1.79, 1.79)))
def test_exp_log_round_trip_and_scipy(v):
    assert np.all(np.linalg.norm(v, axis=-1) < np.pi)
    q = quat.exp(v)
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0, atol=1e-15)
    np.testing.assert_allclose(
        quat.matrix_from_quat(q), Rotation.from_rotvec(v).as_matrix(), atol=1e-12
    )
    # log inverts exp on the shortest arc (|v| < π here)
    np.testing.assert_allclose(quat.log(q), v, atol=1e-12)


@pytest.mark.parametrize(
    "angle", [0.0, 1e-300, 1e-12, 1e-8, 1e-5, 1e-4, 2e-4, 0.5, np.pi - 1e-6, np.pi - 1e-12, np.pi]
)
def test_exp_log_near_zero_and_pi(angle):
    axis = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    v = angle * axis
    q = quat.exp(v)
    np.testing.assert_allclose(
        quat.matrix_from_quat(q), Rotation.from_rotvec(v).as_matrix(), atol=1e-15
    )
    back = quat.log(q)
    if angle < np.pi - 1e-9:
        np.testing.assert_allclose(back, v, rtol=1e-12, atol=1e-300)
    else:  # at π, v and -v are the same rotation
        assert np.allclose(back, v, atol=1e-9) or np.allclose(back, -v, atol=1e-9)
    np.testing.assert_allclose(quat.angle(q), angle, rtol=1e-9, atol=1e-300)


def test_log_is_exact_for_tiny_rotations():
    q = np.array([1.0, 1e-20, -3e-19, 0.0])
    np.testing.assert_allclose(quat.log(q), [2e-20, -6e-19, 0.0], rtol=1e-15)


@given(unit_quats(2), st.floats(0, 1))
def test_slerp_matches_scipy(q, t):
    from scipy.spatial.transform import Slerp

    a, b = q
    ref = Slerp([0, 1], scipy_from(np.stack([a, b])))([t]).as_quat()[0, [3, 0, 1, 2]]
    assert same_rotation(quat.slerp(a, b, t), ref, atol=1e-9)


def test_slerp_endpoints_and_shortest_arc():
    a = quat.exp([0.1, 0.2, 0.3])
    b = -quat.exp([0.2, 0.1, -0.3])  # other hemisphere: still the short way
    assert same_rotation(quat.slerp(a, b, 0.0), a)
    assert same_rotation(quat.slerp(a, b, 1.0), b)
    mid = quat.slerp(a, b, 0.5)
    np.testing.assert_allclose(quat.angle(a, mid), 0.5 * quat.angle(a, b), rtol=1e-12)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_matches_scipy_bvh_convention(order):
    rng = np.random.default_rng(3)
    angles = rng.uniform(-np.pi, np.pi, (200, 3))
    angles[:, 1] /= 2.0  # middle angle in [-π/2, π/2]
    q = quat.quat_from_euler(angles, order)
    ref = Rotation.from_euler(order, angles)  # upper case = intrinsic, R = R1 R2 R3
    np.testing.assert_allclose(quat.matrix_from_quat(q), ref.as_matrix(), atol=1e-12)
    np.testing.assert_allclose(quat.euler_from_quat(q, order), angles, atol=1e-9)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_round_trip_at_gimbal_lock(order):
    rng = np.random.default_rng(4)
    angles = rng.uniform(-np.pi, np.pi, (50, 3))
    angles[:, 1] = np.pi / 2 * rng.choice([-1, 1], 50)
    q = quat.quat_from_euler(angles, order)
    back = quat.euler_from_quat(q, order)
    assert np.all(back[:, 2] == 0.0)
    assert same_rotation(quat.quat_from_euler(back, order), q, atol=1e-12)


@given(unit_quats(8), st.sampled_from(ORDERS))
def test_euler_round_trip_any_rotation(q, order):
    back = quat.quat_from_euler(quat.euler_from_quat(q, order), order)
    assert same_rotation(back, q, atol=1e-10)


@pytest.mark.parametrize("order", ["X", "Y", "Z", "ZX", "YZ", "XY"])
def test_partial_orders(order):
    rng = np.random.default_rng(5)
    angles = rng.uniform(-1.5, 1.5, (20, len(order)))
    q = quat.quat_from_euler(angles, order)
    np.testing.assert_allclose(quat.euler_from_quat(q, order), angles, atol=1e-12)


@given(unit_quats(6))
def test_matrix_round_trip(q):
    back = quat.quat_from_matrix(quat.matrix_from_quat(q))
    assert same_rotation(back, q, atol=1e-12)
    assert np.all(back[:, 0] >= 0)


def test_quat_from_matrix_handles_every_pivot():
    for v in [[np.pi, 0, 0], [0, np.pi, 0], [0, 0, np.pi], [0, 0, 0], [2.5, 2.5, 0.1]]:
        q = quat.exp(v)
        assert same_rotation(quat.quat_from_matrix(quat.matrix_from_quat(q)), q)


def test_broadcasting_over_leading_axes():
    rng = np.random.default_rng(0)
    a = quat.normalize(rng.normal(size=(5, 1, 4)))
    b = quat.normalize(rng.normal(size=(1, 7, 4)))
    ab = quat.multiply(a, b)
    assert ab.shape == (5, 7, 4)
    np.testing.assert_allclose(ab[2, 3], quat.multiply(a[2, 0], b[0, 3]))
    assert quat.rotate(a, np.ones(3)).shape == (5, 1, 3)
    assert quat.euler_from_quat(ab, "ZYX").shape == (5, 7, 3)


@given(
    arrays(np.float64, (6, 3), elements=st.floats(-1, 1)),
    arrays(np.float64, (6, 3), elements=st.floats(-1, 1)),
)
@example(  # parallel to rounding: the cross product is all noise (hypothesis found it)
    np.array([[0.0, -0.375, -0.375]] * 6), np.array([[7.57895518e-281, -1.0, -1.0]] * 6)
)
@settings(max_examples=50)
def test_quat_between(u, v):
    ok = (np.linalg.norm(u, axis=-1) > 1e-3) & (np.linalg.norm(v, axis=-1) > 1e-3)
    u, v = u[ok], v[ok]
    if len(u) == 0:
        return
    q = quat.quat_between(u, v)
    un = u / np.linalg.norm(u, axis=-1, keepdims=True)
    vn = v / np.linalg.norm(v, axis=-1, keepdims=True)
    np.testing.assert_allclose(quat.rotate(q, un), vn, atol=1e-9)


def test_quat_between_opposite():
    q = quat.quat_between([1.0, 0, 0], [-1.0, 0, 0])
    np.testing.assert_allclose(quat.rotate(q, [1.0, 0, 0]), [-1, 0, 0], atol=1e-15)


def test_unroll_makes_sequence_continuous():
    rng = np.random.default_rng(1)
    seq = quat.exp(np.cumsum(rng.normal(scale=0.1, size=(100, 3)), axis=0))
    flipped = seq * rng.choice([-1.0, 1.0], (100, 1))
    un = quat.unroll(flipped)
    assert np.all(np.sum(un[1:] * un[:-1], axis=-1) > 0)
    assert same_rotation(un, seq)


def test_bad_shapes_raise_value_error():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\)"):
        quat.multiply(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="Euler order"):
        quat.quat_from_euler([0, 0, 0], "XXY")
    with pytest.raises(ValueError, match="zero"):
        quat.normalize(np.zeros(4))


def test_quat_between_near_opposite_keeps_the_tilt():
    # 1 + u·v rounds to 0 here; the half-angle form keeps the 1e-8 tilt
    v = np.array([1e-8, 0.0, -1.0])
    q = quat.quat_between([0.0, 0.0, 1.0], v)
    np.testing.assert_allclose(quat.rotate(q, [0.0, 0.0, 1.0]), v / np.linalg.norm(v), atol=1e-15)


# -- numpy before numba: the same bits ---------------------------------------------------------


def test_numpy_products_give_the_kernels_bits():
    """Until numba is loaded, multiply and rotate run in numpy (a quick command never
    imports numba): operation for operation the kernels' formulas, so the same bits,
    over broadcasting, signed zeros, huge, tiny and non-finite values (a NaN's sign
    bit aside: which operand's NaN goes through is the CPU's choice)."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(50_000, 4)) * 10.0 ** rng.integers(-200, 200, size=(50_000, 1))
    b = rng.normal(size=(50_000, 4))
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, 1e308])
    a[:729] = np.stack(np.meshgrid(special, special, special, [0.5]), -1).reshape(-1, 4)
    b[:729] = a[:729][::-1]
    kernels = quat._kernels()

    def same_bits(got, want):
        np.testing.assert_array_equal(got, want)
        number = ~np.isnan(want)
        assert np.array_equal(np.signbit(got)[number], np.signbit(want)[number])  # ±0

    for x, y in ((a, b), (a[:7, None], b[None, :5]), (a[3], b)):
        same_bits(quat._multiply_numpy(x, y), np.asarray(kernels._multiply(x, y)))
        v = y[..., 1:]
        same_bits(quat._rotate_numpy(x, v), np.asarray(kernels._rotate(x, v)))
