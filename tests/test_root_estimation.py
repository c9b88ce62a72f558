"""Root position estimation (Shin et al. 2001, section 5.1, eqs. 16-17 and Appendix, eqs. 25-35).

The closest point of an intersection of balls is checked against an
independent reference (scipy's SLSQP on ``|x − p|²`` subject to the balls,
from several starts), each case (interior, sphere, circle, vertex) on a
configuration with a known answer, the dropping rule, infinite balls and
degenerate configurations; then eq. (16) and :func:`estimate_root`.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize

from retarget.ik.root import BallEstimate, closest_in_balls, estimate_root, weighted_offset

INTERIOR, SPHERE, CIRCLE, VERTEX = 0, 1, 2, 3
RTOL = 1e-9  # the module's "inside" tolerance, τ_i = RTOL (r_i + max |c_j|)
REF_FEASIBLE = 1e-7  # SLSQP's answers violate the balls by up to ~1e-9; accept up to this


# -- independent references ------------------------------------------------------------------


def _ball_constraints(c, r):
    return [
        {
            "type": "ineq",
            "fun": lambda x, ci=ci, ri=ri: ri * ri - np.sum((x - ci) ** 2),
            "jac": lambda x, ci=ci: -2.0 * (x - ci),
        }
        for ci, ri in zip(c, r, strict=True)
    ]


def reference_closest(p, c, r):
    """min |x − p|² s.t. |x − c_i|² ≤ r_i² (finite balls) by SLSQP from p, the centres and
    their mean; the best start whose answer violates no ball by more than REF_FEASIBLE, or None."""
    finite = np.isfinite(r)
    c, r = c[finite], r[finite]
    if len(r) == 0:
        return p
    best = None
    for x0 in [p, c.mean(axis=0), *c]:
        res = minimize(
            lambda x: np.sum((x - p) ** 2),
            x0,
            jac=lambda x: 2.0 * (x - p),
            constraints=_ball_constraints(c, r),
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 500},
        )
        violation = np.max(np.linalg.norm(res.x - c, axis=-1) - r)
        if violation <= REF_FEASIBLE and (
            best is None or np.linalg.norm(res.x - p) < np.linalg.norm(best - p)
        ):
            best = res.x
    return best


def reference_emptiness(c, r):
    """min over x of max_i (|x − c_i|² − r_i²) (finite balls), by SLSQP on the epigraph:
    ≤ 0 iff the balls have a common point."""
    finite = np.isfinite(r)
    c, r = c[finite], r[finite]
    if len(r) == 0:
        return -np.inf
    cons = [
        {"type": "ineq", "fun": lambda z, ci=ci, ri=ri: z[3] - np.sum((z[:3] - ci) ** 2) + ri * ri}
        for ci, ri in zip(c, r, strict=True)
    ]
    best = np.inf
    for x0 in [c.mean(axis=0), *c]:
        t0 = np.max(np.sum((x0 - c) ** 2, axis=-1) - r**2)
        res = minimize(
            lambda z: z[3],
            np.r_[x0, t0 + 1.0],
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 500},
        )
        best = min(best, np.max(np.sum((res.x[:3] - c) ** 2, axis=-1) - r**2))
    return best


def slack(c, r):
    """τ_i of the module docstring."""
    finite = np.isfinite(r)
    scale = np.max(np.linalg.norm(c[finite], axis=-1), initial=0.0)
    return RTOL * (r + scale)


def assert_valid(est: BallEstimate, p, c, r, w):
    """What every answer satisfies: finite, in every kept ball, the most important ball kept."""
    assert np.isfinite(est.position).all()
    assert est.case in (INTERIOR, SPHERE, CIRCLE, VERTEX)
    finite = np.flatnonzero(np.isfinite(r))
    if len(finite):  # the most important ball of finite radius is kept
        assert est.kept[finite[np.argmax(w[finite])]]
    assert est.kept[~np.isfinite(r)].all()
    k = est.kept
    assert (np.linalg.norm(est.position - c[k], axis=-1) <= r[k] + slack(c, r)[k]).all()
    assert est.moved == pytest.approx(np.linalg.norm(est.position - p), abs=1e-12)
    if est.case == INTERIOR:
        assert (est.position == p).all()


def check_against_reference(p, c, r, w):
    """The answer is at least as close to p as the reference's on the kept balls, and balls
    were dropped exactly when the reference finds no common point."""
    est = closest_in_balls(p, c, r, w)
    assert_valid(est, p, c, r, w)
    ref = reference_closest(p, c[est.kept], r[est.kept])
    assert ref is not None
    d_ref = np.linalg.norm(ref - p)
    assert est.moved <= d_ref + 1e-6 * (1.0 + d_ref)
    emptiness = reference_emptiness(c, r)
    if emptiness < -1e-7:
        assert est.kept.all()
    if emptiness > 1e-7:
        assert not est.kept.all()
    return est


# -- hypothesis strategies -------------------------------------------------------------------

coord = st.floats(-1.0, 1.0, allow_nan=False)


@st.composite
def random_balls(draw, max_n=5):
    n = draw(st.integers(1, max_n))
    c = draw(arrays(np.float64, (n, 3), elements=coord))
    r = draw(arrays(np.float64, n, elements=st.floats(0.2, 2.0)))
    w = draw(arrays(np.float64, n, elements=st.floats(0.0, 1.0)))
    p = draw(arrays(np.float64, 3, elements=st.floats(-3.0, 3.0)))
    return p, c, r, w


POOL = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, 0], [1, 1, 0], [0.5, 0.5, 0.5]], float)


@st.composite
def degenerate_balls(draw):
    """Centres from a few points (coincident, collinear), radii from values that make
    tangent, concentric, point-sized and infinite balls, points at centres."""
    n = draw(st.integers(1, 5))
    c = POOL[draw(st.lists(st.integers(0, len(POOL) - 1), min_size=n, max_size=n))]
    r = np.array(
        draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, np.inf]), min_size=n, max_size=n))
    )
    w = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n)))
    p = draw(
        st.one_of(
            st.sampled_from(list(POOL)),
            arrays(np.float64, 3, elements=st.floats(-3.0, 3.0)),
        )
    )
    return p, c, r, w


# -- closest point in the intersection -------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(random_balls())
def test_closest_in_balls_matches_reference(balls):
    check_against_reference(*balls)


@settings(max_examples=80, deadline=None)
@given(degenerate_balls())
def test_degenerate_configurations(balls):
    p, c, r, w = balls
    est = closest_in_balls(p, c, r, w)
    assert_valid(est, p, c, r, w)
    ref = reference_closest(p, c[est.kept], r[est.kept])
    if ref is not None:  # SLSQP may fail where the intersection is a single point
        d_ref = np.linalg.norm(ref - p)
        assert est.moved <= d_ref + 1e-6 * (1.0 + d_ref)


def test_reference_comparison_covers_every_case():
    """Random configurations reach all four cases, and each agrees with the reference."""
    rng = np.random.default_rng(7)
    count = 4000
    n = 4
    p = rng.uniform(-3, 3, (count, 3))
    c = rng.uniform(-1, 1, (count, n, 3))
    r = rng.uniform(0.5, 2.0, (count, n))
    w = rng.uniform(0, 1, (count, n))
    est = closest_in_balls(p, c, r, w)
    for case in (INTERIOR, SPHERE, CIRCLE, VERTEX):
        frames = np.flatnonzero(est.case == case)
        assert len(frames) >= 5, case
        for f in frames[:5]:
            one = check_against_reference(p[f], c[f], r[f], w[f])
            assert one.case == case


@settings(max_examples=40, deadline=None)
@given(random_balls(max_n=4), st.lists(st.integers(0, 4), min_size=1, max_size=3))
def test_infinite_balls_are_ignored(balls, where):
    """Balls of infinite radius (importance 0 in eq. 17) change nothing and are kept."""
    p, c, r, w = balls
    with_inf_c, with_inf_r, with_inf_w = list(c), list(r), list(w)
    for k, i in enumerate(where):
        i = min(i, len(with_inf_r))
        with_inf_c.insert(i, np.array([5.0 * k, -3.0, 1.0]))
        with_inf_r.insert(i, np.inf)
        with_inf_w.insert(i, 0.0)
    est = closest_in_balls(p, c, r, w)
    big = closest_in_balls(p, np.array(with_inf_c), np.array(with_inf_r), np.array(with_inf_w))
    infinite = np.isinf(with_inf_r)
    assert big.kept[infinite].all()
    np.testing.assert_array_equal(big.kept[~infinite], est.kept)
    np.testing.assert_allclose(big.position, est.position, rtol=0, atol=1e-12)
    assert big.case == est.case


def test_interior():
    c = np.array([[0.0, 0, 0], [1, 0, 0]])
    est = closest_in_balls([0.5, 0.2, 0.1], c, [1.0, 1.0], [1.0, 1.0])
    assert est.case == INTERIOR
    assert est.moved == 0.0
    np.testing.assert_array_equal(est.position, [0.5, 0.2, 0.1])
    assert est.kept.all()


def test_sphere_single_ball():
    est = closest_in_balls([4.0, 3.0, 0.0], [[1.0, -1.0, 0.0]], [2.5], [1.0])
    assert est.case == SPHERE
    np.testing.assert_allclose(est.position, [1.0 + 1.5, -1.0 + 2.0, 0.0], atol=1e-15)
    assert est.moved == pytest.approx(2.5)


def test_sphere_of_a_ball_containing_the_point_does_not_bound_the_answer():
    """Ball 0 contains p; its sphere's closest point (0, 0, 0) lies in all balls but is not
    the answer (a reading of the paper's "closest point on each sphere" that ignores the side
    of p would return it): the answer lies on the circle of balls 1 and 2."""
    c = np.array([[0.0, 3.5, 0.0], [-5.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    r = np.array([3.5, 5.5, 5.5])
    est = closest_in_balls([0.0, 3.0, 0.0], c, r, [1.0, 1.0, 1.0])
    assert est.case == CIRCLE
    np.testing.assert_allclose(est.position, [0.0, np.sqrt(5.5**2 - 25.0), 0.0], atol=1e-14)


def test_circle():
    """Two unit balls 1.5 apart: the circle at x = 0.75 has radius √(1 − 0.75²) (eq. 27)."""
    c = np.array([[0.0, 0, 0], [1.5, 0, 0]])
    rc = np.sqrt(1 - 0.75**2)
    est = closest_in_balls([0.75, 2.0, 2.0], c, [1.0, 1.0], [1.0, 1.0])
    assert est.case == CIRCLE
    np.testing.assert_allclose(est.position, [0.75, rc / np.sqrt(2), rc / np.sqrt(2)], atol=1e-15)
    # off the circle's plane: the closest point is still on it, towards p (eq. 31)
    est = closest_in_balls([1.0, 0.0, 3.0], c, [1.0, 1.0], [1.0, 1.0])
    assert est.case == CIRCLE
    np.testing.assert_allclose(est.position, [0.75, 0.0, rc], atol=1e-15)


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [0, 1, 3, 2], [3, 2, 1, 0]])
def test_circle_that_does_not_face_the_point_does_not_bound_the_answer(order):
    """The closest point to p on the circle of balls 2 and 3 (eq. 31) lies in all four balls,
    but the projection of p on ball 2 lies inside ball 3, so the closest point of balls 2 ∩ 3
    is not on their circle: the answer is a vertex of balls 0, 1, 2, nearer to p (whatever
    the order of the balls)."""
    p = np.array([0.5, 0.0, 4.0])
    c = np.array([[0.0, 0.0, -0.5], [-1.0, -1.0, 1.0], [1.0, 0.0, -0.5], [1.0, 0.0, 0.0]])
    r = np.array([1.25, 1.75, 1.25, 1.0])
    # circle of spheres 2, 3 (eqs. 27-29): centre (1, 0, 0.8125 - 0.5), axis z
    x = (r[2] ** 2 - r[3] ** 2 + 0.5**2) / (2 * 0.5)
    on_circle = np.array([1.0 - np.sqrt(r[2] ** 2 - x**2), 0.0, x - 0.5])
    assert (np.linalg.norm(on_circle - c, axis=-1) <= r).all()
    projection_on_2 = c[2] + r[2] * (p - c[2]) / np.linalg.norm(p - c[2])
    assert np.linalg.norm(projection_on_2 - c[3]) < r[3]
    est = closest_in_balls(p, c[order], r[order], np.ones(4))
    assert est.case == VERTEX
    np.testing.assert_allclose(np.linalg.norm(est.position - c[:3], axis=-1), r[:3], atol=1e-14)
    assert est.moved < np.linalg.norm(on_circle - p) - 0.3
    np.testing.assert_allclose(est.position, reference_closest(p, c, r), atol=1e-7)


@pytest.mark.parametrize("z", [10.0, -10.0])
def test_vertex(z):
    """Three balls of radius 1.25 centred on a unit circle in z = 0 meet at (0, 0, ±0.75);
    from a point far up the z axis the answer is that vertex (eqs. 32-35)."""
    angles = np.array([0.0, 2.0, 4.0]) * np.pi / 3
    c = np.stack([np.cos(angles), np.sin(angles), np.zeros(3)], axis=-1)
    est = closest_in_balls([0.0, 0.0, z], c, [1.25] * 3, [1.0, 0.5, 0.2])
    assert est.case == VERTEX
    np.testing.assert_allclose(est.position, [0.0, 0.0, np.copysign(0.75, z)], atol=1e-14)
    # moved rigidly, the answer moves with it
    shift = np.array([3.0, -2.0, 0.5])
    p = shift + np.array([0.2, 0.1, z])
    est = closest_in_balls(p, c + shift, [1.25] * 3, [1.0, 0.5, 0.2])
    assert est.case == VERTEX
    answer = shift + np.array([0.0, 0.0, np.copysign(0.75, z)])
    np.testing.assert_allclose(est.position, answer, atol=1e-13)


def test_tangent_spheres():
    # externally tangent: the intersection is the single point (1, 0, 0), a circle of radius 0
    c = np.array([[0.0, 0, 0], [2, 0, 0]])
    est = closest_in_balls([1.0, 3.0, -1.0], c, [1.0, 1.0], [1.0, 1.0])
    assert est.case == CIRCLE
    assert est.kept.all()
    np.testing.assert_allclose(est.position, [1.0, 0, 0], atol=1e-15)
    # internally tangent: the small ball is the intersection
    c = np.array([[0.0, 0, 0], [1, 0, 0]])
    for p, answer in [([5.0, 0, 0], [2.0, 0, 0]), ([-5.0, 0, 0], [0.0, 0, 0])]:
        est = closest_in_balls(p, c, [2.0, 1.0], [1.0, 1.0])
        assert est.case == SPHERE
        np.testing.assert_allclose(est.position, answer, atol=1e-15)


@pytest.mark.parametrize("radii", [[1.0, 2.0], [2.0, 1.0], [1.0, 1.0]])
def test_concentric_and_coincident(radii):
    c = np.array([[1.0, 1, 1], [1, 1, 1]])
    est = closest_in_balls([4.0, 5.0, 1.0], c, radii, [1.0, 1.0])
    assert est.case == SPHERE
    np.testing.assert_allclose(est.position, [1.6, 1.8, 1.0], atol=1e-15)
    # p at the common centre: inside both
    est = closest_in_balls([1.0, 1.0, 1.0], c, radii, [1.0, 1.0])
    assert est.case == INTERIOR


def test_point_at_a_sphere_centre():
    """p at the centre of ball 0 (no direction to its sphere), outside ball 1."""
    c = np.array([[0.0, 0, 0], [3, 0, 0]])
    est = closest_in_balls([0.0, 0, 0], c, [1.0, 2.5], [1.0, 1.0])
    assert est.case == SPHERE
    np.testing.assert_allclose(est.position, [0.5, 0, 0], atol=1e-15)
    # a ball of radius 0 is its centre
    est = closest_in_balls([2.0, 2.0, 0.0], c, [1.0, 0.0], [0.0, 1.0])
    np.testing.assert_allclose(est.position, [3.0, 0, 0])
    assert est.kept.tolist() == [False, True]


def test_all_balls_infinite():
    est = closest_in_balls([7.0, -1.0, 2.0], np.zeros((3, 3)), [np.inf] * 3, [0.0] * 3)
    assert est.case == INTERIOR
    np.testing.assert_array_equal(est.position, [7.0, -1.0, 2.0])
    assert est.kept.all()


# -- dropping balls when the intersection is empty -------------------------------------------


def test_drops_the_balls_that_miss_the_most_important_one():
    """Ball 2 does not meet ball 0 (the most important): it is discarded and the answer lies
    on the circle of balls 0 and 1."""
    c = np.array([[0.0, 0, 0], [1.5, 0, 0], [10.0, 0, 0]])
    est = closest_in_balls([0.5, 2.0, 0.0], c, [1.0, 1.0, 1.0], [1.0, 0.5, 0.2])
    assert est.kept.tolist() == [True, True, False]
    assert est.case == CIRCLE
    np.testing.assert_allclose(est.position, [0.75, np.sqrt(1 - 0.75**2), 0.0], atol=1e-15)
    # with ball 2 the most important, balls 0 and 1 go
    est = closest_in_balls([0.5, 2.0, 0.0], c, [1.0, 1.0, 1.0], [0.2, 0.5, 1.0])
    assert est.kept.tolist() == [False, False, True]
    direction = np.array([-9.5, 2.0, 0.0]) / np.hypot(9.5, 2.0)
    np.testing.assert_allclose(est.position, c[2] + direction, atol=1e-15)


@pytest.mark.parametrize(
    ("importance", "kept"),
    [
        ([1.0, 0.5, 0.8], [True, False, True]),
        ([0.3, 0.5, 0.8], [False, True, True]),
        ([1.0, 1.0, 1.0], [True, True, False]),  # ties: keep the lowest, drop the highest index
    ],
)
def test_pairwise_meeting_balls_without_a_common_point(importance, kept):
    """Balls of radius 1.05 on an equilateral triangle of side 2 meet pairwise (1.05 > 1)
    but have no common point (1.05 < 2/√3): the least important other ball goes."""
    angles = np.array([0.0, 2.0, 4.0]) * np.pi / 3
    c = 2 / np.sqrt(3) * np.stack([np.cos(angles), np.sin(angles), np.zeros(3)], axis=-1)
    r = np.full(3, 1.05)
    p = np.array([0.1, 0.2, 0.3])
    est = closest_in_balls(p, c, r, importance)
    assert est.kept.tolist() == kept
    assert reference_emptiness(c, r) > 1e-3
    k = np.array(kept)
    ref = reference_closest(p, c[k], r[k])
    np.testing.assert_allclose(est.position, ref, atol=1e-7)


# -- batches, inputs -------------------------------------------------------------------------


def test_batched_equals_per_frame():
    rng = np.random.default_rng(3)
    shape = (4, 6)
    p = rng.uniform(-3, 3, (*shape, 3))
    c = rng.uniform(-1, 1, (*shape, 4, 3))
    r = rng.uniform(0.3, 2.0, (*shape, 4))
    r[0, 0, 1] = np.inf
    w = rng.uniform(0, 1, (*shape, 4))
    est = closest_in_balls(p, c, r, w)
    assert est.position.shape == (*shape, 3)
    assert est.kept.shape == (*shape, 4)
    assert est.case.shape == shape
    assert est.case.dtype == np.int8
    assert est.moved.shape == shape
    for idx in np.ndindex(*shape):
        one = closest_in_balls(p[idx], c[idx], r[idx], w[idx])
        np.testing.assert_array_equal(one.position, est.position[idx])
        np.testing.assert_array_equal(one.kept, est.kept[idx])
        assert one.case == est.case[idx]
        assert one.moved == est.moved[idx]
    # one point against many frames of balls, one set of balls against many points
    many = closest_in_balls(p[0, 0], c[0], r[0], w[0])
    for f in range(shape[1]):
        np.testing.assert_array_equal(
            many.position[f], closest_in_balls(p[0, 0], c[0, f], r[0, f], w[0, f]).position
        )
    many = closest_in_balls(p[0], c[0, 0], r[0, 0], w[0, 0])
    np.testing.assert_array_equal(
        many.position[2], closest_in_balls(p[0, 2], c[0, 0], r[0, 0], w[0, 0]).position
    )


def test_outputs_are_read_only():
    est = closest_in_balls([0.0, 0, 3], [[0.0, 0, 0]], [1.0], [1.0])
    for a in (est.position, est.kept, est.case, est.moved):
        with pytest.raises(ValueError):
            a[...] = 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0, 0], [[0, 0, 0]], [1], [1]), "point"),
        (([0, 0, 0], [0, 0, 0], [1], [1]), "centers"),
        (([0, 0, 0], np.zeros((0, 3)), [], []), "1 to 8"),
        (([0, 0, 0], np.zeros((9, 3)), np.ones(9), np.ones(9)), "1 to 8"),
        (([0, 0, 0], [[0, 0, 0]], [1, 1], [1]), "radii"),
        (([np.nan, 0, 0], [[0, 0, 0]], [1], [1]), "point"),
        (([0, 0, 0], [[0, np.inf, 0]], [1], [1]), "centers"),
        (([0, 0, 0], [[0, 0, 0]], [-1], [1]), "radii"),
        (([0, 0, 0], [[0, 0, 0]], [np.nan], [1]), "radii"),
        (([0, 0, 0], [[0, 0, 0]], [1], [-0.5]), "importance"),
        (([[0, 0, 0]] * 2, [[[0, 0, 0]]] * 3, [1], [1]), "broadcast"),
    ],
)
def test_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        closest_in_balls(*args)


# -- eq. (16) and section 5.1 ----------------------------------------------------------------


def test_weighted_offset():
    e = np.array([[1.0, 1, 1], [2, 2, 2], [0, 0, 0]])
    g = e + np.array([[4.0, 0, 0], [0, 8, 0], [5, 5, 5]])
    np.testing.assert_allclose(weighted_offset(e, g, [1.0, 3.0, 0.0]), [1.0, 6.0, 0.0])
    np.testing.assert_allclose(weighted_offset(e, g, [2.0, 6.0, 0.0]), [1.0, 6.0, 0.0])
    np.testing.assert_allclose(weighted_offset(e, g, [1.0, 1.0, 1.0]), [3.0, 13 / 3, 5 / 3])
    np.testing.assert_array_equal(weighted_offset(e, g, [0.0, 0.0, 0.0]), [0.0, 0.0, 0.0])
    # batched: a different importance per frame
    w = np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 0]])
    np.testing.assert_allclose(weighted_offset(e, g, w), [[4, 0, 0], [0, 8, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="importance"):
        weighted_offset(e, g, [1.0, -1.0, 0.0])
    with pytest.raises(ValueError, match="goals"):
        weighted_offset(e, g[:2], [1.0, 1.0, 1.0])


def limbs(rng, count):
    """A root, two shoulders and two hips, wrists and ankles at 40-90 % of limb length 0.6."""
    root = rng.uniform(-1, 1, (count, 3))
    uppers = root[:, None, :] + np.array([[-0.2, 0.5, 0], [0.2, 0.5, 0], [-0.1, 0, 0], [0.1, 0, 0]])
    direction = rng.normal(size=(count, 4, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    effectors = uppers + rng.uniform(0.24, 0.54, (count, 4, 1)) * direction
    return root, effectors, uppers, np.full(4, 0.6)


def test_estimate_root_keeps_the_offset_root_when_every_goal_is_reachable():
    rng = np.random.default_rng(11)
    root, effectors, uppers, lengths = limbs(rng, 50)
    shift = rng.uniform(-2, 2, (50, 1, 3))
    goals = effectors + shift + rng.uniform(-0.02, 0.02, (50, 4, 3))
    w = rng.uniform(0.5, 1.0, (50, 4))
    est = estimate_root(root, effectors, goals, uppers, lengths, w)
    np.testing.assert_allclose(est.offset, weighted_offset(effectors, goals, w), atol=1e-15)
    np.testing.assert_array_equal(est.position, root + est.offset)
    assert (est.balls.case == INTERIOR).all()
    assert est.reachable.all()
    assert (est.balls.moved == 0).all()


def test_estimate_root_moves_just_enough_for_an_important_limb():
    """Limb 0 (importance 1) has its goal 2 to the left; limb 1 (importance 0.25, ball radius
    0.6 / 0.25) none: eq. (16) moves the root 1.6 to the left, and the estimate then moves
    it until the shoulder is exactly l = 0.6 from the goal."""
    root = np.array([0.0, 1.0, 0.0])
    uppers = np.array([[-0.2, 1.5, 0.0], [0.2, 1.5, 0.0]])
    effectors = np.array([[-0.2, 1.0, 0.0], [0.2, 1.0, 0.0]])
    goals = effectors + np.array([[-2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    est = estimate_root(root, effectors, goals, uppers, [0.6, 0.6], [1.0, 0.25])
    np.testing.assert_allclose(est.offset, [-1.6, 0.0, 0.0])
    assert est.balls.case == SPHERE
    shoulder = uppers[0] + est.position - root
    assert np.linalg.norm(shoulder - goals[0]) == pytest.approx(0.6, abs=1e-14)
    # just enough: the distance from the offset root is the shortfall
    shortfall = np.linalg.norm(uppers[0] + est.offset - goals[0]) - 0.6
    assert est.balls.moved == pytest.approx(shortfall, abs=1e-14)
    assert est.reachable.all()
    # equally important, the two balls miss each other: limb 1's is dropped
    est = estimate_root(root, effectors, goals, uppers, [0.6, 0.6], [1.0, 1.0])
    assert est.balls.kept.tolist() == [True, False]
    assert est.reachable.tolist() == [True, False]
    shoulder = uppers[0] + est.position - root
    assert np.linalg.norm(shoulder - goals[0]) == pytest.approx(0.6, abs=1e-14)


def test_estimate_root_ignores_limbs_of_importance_zero():
    rng = np.random.default_rng(5)
    root, effectors, uppers, lengths = limbs(rng, 20)
    goals = effectors + rng.uniform(-1, 1, (20, 4, 3))
    w = rng.uniform(0.3, 1.0, (20, 4))
    w[:, 2] = 0.0
    goals[:, 2] += 100.0  # far, but unimportant
    est = estimate_root(root, effectors, goals, uppers, lengths, w)
    keep = [0, 1, 3]
    three = estimate_root(
        root, effectors[:, keep], goals[:, keep], uppers[:, keep], lengths[keep], w[:, keep]
    )
    np.testing.assert_allclose(est.position, three.position, atol=1e-14)
    assert est.reachable[:, 2].all()
    np.testing.assert_array_equal(est.reachable[:, keep], three.reachable)


def test_estimate_root_batched_equals_per_frame():
    rng = np.random.default_rng(9)
    root, effectors, uppers, lengths = limbs(rng, 12)
    goals = effectors + rng.uniform(-1, 1, (12, 4, 3))
    w = rng.uniform(0.0, 1.0, (12, 4))
    batch = estimate_root(root, effectors, goals, uppers, lengths, w)
    per_frame_lengths = estimate_root(
        root, effectors, goals, uppers, np.broadcast_to(lengths, (12, 4)), w
    )
    np.testing.assert_array_equal(per_frame_lengths.position, batch.position)
    for f in range(12):
        one = estimate_root(root[f], effectors[f], goals[f], uppers[f], lengths, w[f])
        np.testing.assert_array_equal(one.position, batch.position[f])
        np.testing.assert_array_equal(one.offset, batch.offset[f])
        np.testing.assert_array_equal(one.reachable, batch.reachable[f])
        np.testing.assert_array_equal(one.balls.kept, batch.balls.kept[f])
        # the balls of section 5.1, built by hand
        centers = goals[f] + root[f] - uppers[f]
        radii = np.where(w[f] > 0, lengths / np.where(w[f] > 0, w[f], 1.0), np.inf)
        by_hand = closest_in_balls(root[f] + one.offset, centers, radii, w[f])
        np.testing.assert_allclose(by_hand.position, one.position, rtol=0, atol=1e-14)
        inside = np.linalg.norm(one.position - centers, axis=-1) <= radii + slack(centers, radii)
        np.testing.assert_array_equal(one.reachable, inside)


def test_estimate_root_bad_input():
    root, effectors, uppers = np.zeros(3), np.zeros((2, 3)), np.zeros((2, 3))
    with pytest.raises(ValueError, match="lengths"):
        estimate_root(root, effectors, effectors, uppers, [1.0, -1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="uppers"):
        estimate_root(root, effectors, effectors, uppers[:1], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="importance"):
        estimate_root(root, effectors, effectors, uppers, [1.0, 1.0], [np.nan, 1.0])
