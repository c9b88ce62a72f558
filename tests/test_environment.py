"""The environment: exact distances against brute force, derivatives against finite
differences, the height field's smoothness, scenes, ground heights and the file format."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import ndimage

from retarget.core import quat
from retarget.core.errors import FormatError
from retarget.environment import (
    Box,
    Floor,
    HeightField,
    Scene,
    Slope,
    Sphere,
    ground_height,
    random_height_field,
)
from retarget.io.scene import read_environment, write_environment

# -- fixtures and brute force ------------------------------------------------------------


def bumpy(seed: int = 3) -> HeightField:
    """2-unit bumps about 3 units wide on a unit grid: curvature radius ~ 1."""
    return random_height_field(
        [[0, 10], [0, 8]], 1.0, 2.0, np.random.default_rng(seed), smoothness=1.0
    )


def tilted_box() -> Box:
    q = quat.quat_from_rotvec([0.4, -0.7, 0.3])
    return Box([0.5, 1.0, -0.3], [1.2, 0.4, 0.7], q)


def shapes_for_contract():
    return {
        "floor": Floor(0.3),
        "sphere": Sphere([0.2, 1.0, -0.5], 0.8),
        "box": tilted_box(),
        "heightfield": bumpy(),
    }


def near_points(shape, rng, n, spread=0.5):
    """Random points within ``spread`` of the shape's surface (both sides)."""
    if isinstance(shape, HeightField):
        xz = rng.uniform([-1, -1], [11, 9], (n, 2))
        y = shape.height(xz) + rng.uniform(-spread, spread, n)
        return np.column_stack([xz[:, 0], y, xz[:, 1]])
    if isinstance(shape, Floor):
        return rng.uniform(-3, 3, (n, 3)) * [1, spread, 1] + [0, shape.height, 0]
    if isinstance(shape, Sphere):  # about half inside
        u = rng.normal(size=(n, 3))
        u /= np.linalg.norm(u, axis=-1, keepdims=True)
        return shape.center + shape.radius * rng.uniform(0.0, 2.0, (n, 1)) * u
    return shape.center + rng.uniform(-2.0, 2.0, (n, 3))


def brute_heightfield(hf: HeightField, p, radius, step):
    """Sampled minimum distance from ``p`` to the surface over a square, refined twice."""
    cx, cz = p[0], p[2]
    best = np.inf
    for _ in range(3):
        xs = np.arange(cx - radius, cx + radius + step / 2, step)
        zs = np.arange(cz - radius, cz + radius + step / 2, step)
        xz = np.stack(np.meshgrid(xs, zs, indexing="ij"), axis=-1).reshape(-1, 2)
        surface = np.column_stack([xz[:, 0], hf.height(xz), xz[:, 1]])
        d = np.linalg.norm(surface - p, axis=-1)
        k = int(np.argmin(d))
        best = min(best, float(d[k]))
        cx, cz = xz[k]
        radius, step = 2 * step, step / 20
    return best


def box_surface_samples(box: Box, step: float):
    """Points on the six faces of ``box``, on a grid of ``step``."""
    e = box.half_extents
    faces = []
    for k in range(3):
        a, b = [i for i in range(3) if i != k]
        ua = np.linspace(-e[a], e[a], max(2, int(2 * e[a] / step) + 1))
        ub = np.linspace(-e[b], e[b], max(2, int(2 * e[b] / step) + 1))
        A, B = np.meshgrid(ua, ub, indexing="ij")
        for side in (-1.0, 1.0):
            q = np.zeros((A.size, 3))
            q[:, a], q[:, b], q[:, k] = A.ravel(), B.ravel(), side * e[k]
            faces.append(q)
    q = np.concatenate(faces)
    return box.center + q @ quat.matrix_from_quat(box.rotation).T


# -- exact distances against brute force -------------------------------------------------


def test_floor():
    floor = Floor(0.5)
    p = np.array([[1.0, 2.0, 3.0], [0.0, 0.25, 0.0]])
    np.testing.assert_allclose(floor.distance(p), [1.5, -0.25])
    np.testing.assert_allclose(floor.project(p), [[1.0, 0.5, 3.0], [0.0, 0.5, 0.0]])
    np.testing.assert_allclose(floor.normal(p), [[0, 1, 0], [0, 1, 0]])
    assert Floor() == Floor(0.0)


def test_sphere_against_brute_force():
    rng = np.random.default_rng(0)
    sphere = Sphere([0.2, 1.0, -0.5], 0.8)
    # a dense Fibonacci lattice on the sphere
    n = 200_000
    k = np.arange(n) + 0.5
    phi = np.arccos(1 - 2 * k / n)
    theta = np.pi * (1 + 5**0.5) * k
    dirs = np.stack([np.cos(theta) * np.sin(phi), np.cos(phi), np.sin(theta) * np.sin(phi)], -1)
    surface = sphere.center + sphere.radius * dirs
    p = near_points(sphere, rng, 40)
    d = sphere.distance(p)
    brute = np.array([np.linalg.norm(surface - x, axis=-1).min() for x in p])
    assert (np.abs(d) <= brute + 1e-12).all()
    np.testing.assert_allclose(np.abs(d), brute, atol=5e-3)
    inside = np.linalg.norm(p - sphere.center, axis=-1) < sphere.radius
    assert inside.any() and (~inside).any()
    assert ((d < 0) == inside).all()


@pytest.mark.parametrize("rotated", [False, True])
def test_box_against_brute_force(rotated):
    rng = np.random.default_rng(1)
    box = tilted_box() if rotated else Box([0.5, 1.0, -0.3], [1.2, 0.4, 0.7])
    step = 0.01
    surface = box_surface_samples(box, step)
    p = box.center + rng.uniform(-2.0, 2.0, (60, 3))
    p[:20] = (
        box.center
        + rng.uniform(-1, 1, (20, 3)) * box.half_extents @ quat.matrix_from_quat(box.rotation).T
    )  # inside
    d = box.distance(p)
    brute = np.array([np.linalg.norm(surface - x, axis=-1).min() for x in p])
    assert (d[:20] < 0).all() and (d[20:] > 0).any()
    assert (np.abs(d) <= brute + 1e-12).all()  # never farther than a surface point
    np.testing.assert_allclose(np.abs(d), brute, atol=step)
    closest = box.closest(p)
    np.testing.assert_allclose(closest.distance, d)


def test_heightfield_against_brute_force_near_the_surface():
    rng = np.random.default_rng(2)
    hf = bumpy()
    p = near_points(hf, rng, 40, spread=0.6)
    d = hf.distance(p)
    brute = np.array(
        [
            brute_heightfield(hf, x, abs(v) + 0.05, 0.02)
            for x, v in zip(p, hf.vertical_distance(p), strict=True)
        ]
    )
    assert (np.abs(d) <= brute + 1e-9).all()
    np.testing.assert_allclose(np.abs(d), brute, atol=1e-5)
    assert ((d < 0) == (hf.vertical_distance(p) < 0)).all()


def test_heightfield_against_brute_force_far_from_the_surface():
    """Far above rough terrain the minimum is not below the point: the cell search finds it."""
    rng = np.random.default_rng(4)
    hf = bumpy()
    xz = rng.uniform([-1, -1], [11, 9], (40, 2))
    p = np.column_stack([xz[:, 0], hf.height(xz) + rng.uniform(2.0, 6.0, 40), xz[:, 1]])
    d = hf.distance(p)
    brute = np.array(
        [
            brute_heightfield(hf, x, v + 0.05, 0.04)
            for x, v in zip(p, hf.vertical_distance(p), strict=True)
        ]
    )
    assert (d <= brute + 1e-9).all()
    np.testing.assert_allclose(d, brute, atol=1e-4)
    assert (d < hf.vertical_distance(p) - 0.1).sum() >= 10  # the Euclidean answer matters


def test_heightfield_minimum_beside_a_wall():
    """Straight below is flat ground, yet a wall beside the point is closer."""
    heights = np.zeros((12, 5))
    heights[6:] = 3.0
    hf = HeightField([0.0, 0.0], 1.0, heights)
    p = np.array([4.6, 1.0, 2.0])
    d = float(hf.distance(p))
    assert d < 0.8 < hf.vertical_distance(p)
    assert abs(d - brute_heightfield(hf, p, 1.4, 0.01)) < 1e-6
    assert hf.project(p)[0] > 5.0  # on the wall


# -- the contract: projection, distance and normal agree ---------------------------------


@pytest.mark.parametrize("name", ["floor", "sphere", "box", "heightfield"])
def test_projection_lands_on_the_surface(name):
    shape = shapes_for_contract()[name]
    p = near_points(shape, np.random.default_rng(5), 500)
    closest = shape.closest(p)
    np.testing.assert_allclose(shape.distance(closest.point), 0.0, atol=1e-9)
    np.testing.assert_allclose(
        np.linalg.norm(p - closest.point, axis=-1), np.abs(closest.distance), atol=1e-12
    )
    np.testing.assert_allclose(np.linalg.norm(closest.normal, axis=-1), 1.0, atol=1e-12)
    # p = point + distance * normal where the surface is smooth (everywhere but box edges)
    smooth = np.abs(closest.distance) > 1e-6
    np.testing.assert_allclose(
        (closest.point + closest.distance[:, None] * closest.normal)[smooth], p[smooth], atol=1e-9
    )
    np.testing.assert_array_equal(shape.distance(p), closest.distance)
    np.testing.assert_array_equal(shape.project(p), closest.point)
    np.testing.assert_array_equal(shape.normal(p), closest.normal)


@pytest.mark.parametrize("name", ["floor", "slope", "sphere", "box", "heightfield", "scene"])
def test_ground_gradient_is_the_slope_of_the_ground_height(name):
    """The contract's ground slope (GroundTask's normal) against central differences of
    the ground height, taken here with a larger step than the default's; exact for the
    planes; zero where there is no ground."""
    shapes = shapes_for_contract()
    shapes["slope"] = Slope(0.2, [0.3, -0.15])
    shapes["scene"] = Scene((Floor(-2.0), tilted_box(), shapes["sphere"]))
    shape = shapes[name]
    rng = np.random.default_rng(8)
    if name in ("box", "sphere"):  # about their footprint, and beside it
        xz = shape.center[[0, 2]] + rng.uniform(-1.6, 1.6, (300, 2))
    else:
        xz = rng.uniform([-1.0, -2.0], [10.0, 8.0], (300, 2))
    eps = 1e-5
    with np.errstate(invalid="ignore"):  # (-inf - -inf off a bounded object)
        fd = np.stack(
            [
                (shape.ground_height(xz + eps * e) - shape.ground_height(xz - eps * e)) / (2 * eps)
                for e in np.eye(2)
            ],
            axis=-1,
        )
    got = shape.ground_gradient(xz)
    assert got.shape == (300, 2) and np.isfinite(got).all()
    smooth = np.isfinite(fd).all(axis=-1) & (np.abs(fd) < 50).all(axis=-1)  # off edges
    assert smooth.mean() > 0.2 if name in ("box", "sphere", "scene") else smooth.all()
    np.testing.assert_allclose(got[smooth], fd[smooth], atol=2e-4)
    if name in ("floor", "slope"):
        np.testing.assert_array_equal(got, np.broadcast_to(getattr(shape, "slope", 0.0), (300, 2)))
    if name in ("box", "sphere"):  # off the object: no ground, no slope
        off = ~np.isfinite(shape.ground_height(xz))
        assert off.any() and not got[off].any()


def _off_medial_axis(shape, p):
    if isinstance(shape, Box):
        q = np.abs((p - shape.center) @ quat.matrix_from_quat(shape.rotation)) - shape.half_extents
        top2 = np.sort(q, axis=-1)[:, -2:]
        return (top2[:, 1] > 1e-3) | (top2[:, 1] - top2[:, 0] > 1e-3)
    if isinstance(shape, Sphere):
        return np.linalg.norm(p - shape.center, axis=-1) > 1e-3
    return np.ones(len(p), bool)


@pytest.mark.parametrize("name", ["floor", "sphere", "box", "heightfield"])
def test_normal_is_the_gradient_of_the_signed_distance(name):
    shape = shapes_for_contract()[name]
    p = near_points(shape, np.random.default_rng(6), 200)
    p = p[_off_medial_axis(shape, p)]
    eps = 1e-6
    fd = np.stack(
        [
            (shape.distance(p + eps * e) - shape.distance(p - eps * e)) / (2 * eps)
            for e in np.eye(3)
        ],
        axis=-1,
    )
    np.testing.assert_allclose(shape.normal(p), fd, atol=2e-5)


def test_batch_shapes_and_scalars():
    for shape in shapes_for_contract().values():
        p = near_points(shape, np.random.default_rng(7), 6).reshape(2, 3, 3)
        c = shape.closest(p)
        assert (
            c.distance.shape == (2, 3)
            and c.point.shape == (2, 3, 3)
            and c.normal.shape == (2, 3, 3)
        )
        np.testing.assert_allclose(shape.distance(p[1, 2]), c.distance[1, 2])
        assert shape.ground_height(np.zeros((4, 1, 2))).shape == (4, 1)
        with pytest.raises(ValueError, match=r"\(\.\.\., 3\)"):
            shape.distance(np.zeros((5, 2)))


def test_nan_points_give_nan_and_no_crash():
    hf = bumpy()
    d = hf.distance([[np.nan, 0.0, 1.0], [1.0, 5.0, 1.0]])
    assert np.isnan(d[0]) and np.isfinite(d[1])
    assert np.isnan(hf.height([np.nan, 1.0]))


def test_values_are_immutable_copies():
    heights = np.zeros((3, 4))
    hf = HeightField([0, 0], [1.0, 2.0], heights)
    heights[1, 1] = 5.0
    assert hf.heights[1, 1] == 0.0
    centre = np.array([0.0, 1.0, 0.0])
    box = Box(centre, [1, 1, 1])
    centre[1] = 9.0
    assert box.center[1] == 1.0
    for arr in (hf.heights, hf.origin_xz, hf.spacing, box.center, box.half_extents, box.rotation):
        with pytest.raises(ValueError):
            arr[...] = 0.0
    with pytest.raises(AttributeError):
        box.center = centre  # type: ignore[misc]
    np.testing.assert_allclose(Box([0, 0, 0], [1, 1, 1], [2.0, 0, 0, 0]).rotation, [1, 0, 0, 0])


@pytest.mark.parametrize(
    "make",
    [
        lambda: Sphere([0, 0, 0], -1.0),
        lambda: Box([0, 0, 0], [1, -1, 1]),
        lambda: Box([0, 0, 0], [1, 1, 1], [0, 0, 0, 0]),
        lambda: HeightField([0, 0], 0.0, np.zeros((3, 3))),
        lambda: HeightField([0, 0], 1.0, np.zeros((1, 3))),
        lambda: HeightField([0, 0], 1.0, [[0, np.nan], [0, 0]]),
        lambda: Floor(np.inf),
        lambda: Scene(()),
    ],
)
def test_invalid_shapes_are_rejected(make):
    with pytest.raises(ValueError):
        make()


# -- the height field surface ------------------------------------------------------------


def test_heightfield_interpolates_and_agrees_with_scipy():
    hf = bumpy()
    nx, nz = hf.shape
    i, j = np.meshgrid(np.arange(nx), np.arange(nz), indexing="ij")
    nodes = np.stack([i * hf.spacing[0], j * hf.spacing[1]], -1) + hf.origin_xz
    np.testing.assert_allclose(hf.height(nodes), hf.heights, atol=1e-12)
    # the same interpolating cubic spline, computed independently by scipy
    s = np.random.default_rng(8).uniform([0, 0], [nx - 1, nz - 1], (500, 2))
    ref = ndimage.map_coordinates(hf.heights, s.T, order=3, mode="mirror")
    np.testing.assert_allclose(hf.height(hf.origin_xz + s * hf.spacing), ref, atol=1e-12)


def test_heightfield_gradient_and_surface_normal_by_finite_differences():
    hf = HeightField([-1.0, 2.0], [0.5, 0.8], np.random.default_rng(9).random((7, 6)))
    xz = np.random.default_rng(10).uniform([-2, 1], [3, 8], (300, 2))  # inside and outside
    eps = 1e-6
    fd = np.stack(
        [(hf.height(xz + eps * e) - hf.height(xz - eps * e)) / (2 * eps) for e in np.eye(2)], -1
    )
    np.testing.assert_allclose(hf.gradient(xz), fd, atol=1e-6)
    n = hf.surface_normal(xz)
    g = hf.gradient(xz)
    np.testing.assert_allclose(
        n * np.sqrt(1 + (g**2).sum(-1))[:, None],
        np.column_stack([-g[:, 0], np.ones(300), -g[:, 1]]),
    )


def test_heightfield_is_c2_across_cells_and_c1_across_the_grid_edge():
    hf = HeightField([0.0, 0.0], 1.0, np.random.default_rng(11).random((6, 6)))
    eps = 1e-4
    z = 2.37
    for x in [1.0, 2.0, 3.0, 4.0]:  # cell borders
        left, right = hf.gradient([[x - eps, z], [x + eps, z]])
        assert np.abs(right - left).max() < 1e-2 * eps / 1e-4  # C¹: the jump vanishes with eps
        g = hf.gradient([[x - 2 * eps, z], [x - eps, z], [x + eps, z], [x + 2 * eps, z]])
        hxx_left = (g[1, 0] - g[0, 0]) / eps
        hxx_right = (g[3, 0] - g[2, 0]) / eps
        assert abs(hxx_left - hxx_right) < 1e-2  # C²: Catmull-Rom would jump by O(1) here
    # across the edge of the grid: clamped to the edge values, with zero slope
    xs = np.array([[-eps, z], [eps, z], [5 - eps, z], [5 + eps, z], [-3.0, z], [9.0, z]])
    h, g = hf.height(xs), hf.gradient(xs)
    assert abs(h[0] - h[1]) < 1e-6 and abs(h[2] - h[3]) < 1e-6
    assert np.abs(g[:, 0]).max() < 1e-3
    np.testing.assert_allclose(h[[0, 4]], hf.height([0.0, z]))
    np.testing.assert_allclose(h[[3, 5]], hf.height([5.0, z]))


def test_vertical_distance_and_sign():
    hf = bumpy()
    xz = np.random.default_rng(12).uniform(0, 8, (100, 2))
    up = np.random.default_rng(13).uniform(-1, 1, 100)
    p = np.column_stack([xz[:, 0], hf.height(xz) + up, xz[:, 1]])
    np.testing.assert_allclose(hf.vertical_distance(p), up, atol=1e-12)
    d = hf.distance(p)
    assert (np.sign(d) == np.sign(up)).all()
    assert (np.abs(d) <= np.abs(up) + 1e-12).all()


def test_random_height_field_range_and_reproducibility():
    extent = [[-50.0, 150.0], [0.0, 80.0]]
    a = random_height_field(extent, 5.0, 17.0, np.random.default_rng(42))
    b = random_height_field(extent, 5.0, 17.0, np.random.default_rng(42))
    c = random_height_field(extent, 5.0, 17.0, np.random.default_rng(43))
    np.testing.assert_array_equal(a.heights, b.heights)
    assert not np.array_equal(a.heights, c.heights)
    assert (a.extent_xz[:, 0] == [-50, 0]).all() and (a.extent_xz[:, 1] >= [150, 80]).all()
    xs, zs = np.meshgrid(np.linspace(-60, 160, 400), np.linspace(-10, 90, 200), indexing="ij")
    h = a.height(np.stack([xs, zs], -1))
    assert h.min() >= -1e-9 and h.max() <= 17.0 + 1e-9  # the whole surface, not just samples
    assert np.ptp(h) > 0.6 * 17.0
    lo, hi = a.height_bounds()
    assert -1e-9 <= lo <= h.min() and h.max() <= hi <= 17 + 1e-9
    rough = random_height_field(extent, 5.0, 17.0, np.random.default_rng(42), smoothness=0.0)
    assert np.abs(np.diff(rough.heights, axis=0)).mean() > np.abs(np.diff(a.heights, axis=0)).mean()
    flat = random_height_field(extent, 5.0, 0.0, 1)
    assert (flat.heights == 0).all()


# -- scenes and ground heights -----------------------------------------------------------


def test_scene_is_the_union():
    shapes = [Floor(0.0), Sphere([0, 2, 0], 0.5), tilted_box(), bumpy()]
    scene = Scene(shapes, unit="cm")
    p = np.random.default_rng(14).uniform([-1, -1, -1], [3, 3, 3], (300, 3))
    each = np.stack([s.distance(p) for s in shapes], -1)
    np.testing.assert_array_equal(scene.distances(p), each)
    np.testing.assert_array_equal(scene.distance(p), each.min(-1))
    k = scene.nearest(p)
    np.testing.assert_array_equal(k, each.argmin(-1))
    assert set(k.tolist()) == {1, 2, 3}  # the terrain covers the floor everywhere
    assert set(Scene(shapes[:3]).nearest(p).tolist()) == {0, 1, 2}
    c = scene.closest(p)
    for i, s in enumerate(shapes[1:], start=1):
        np.testing.assert_array_equal(c.point[k == i], s.project(p[k == i]))
        np.testing.assert_array_equal(c.normal[k == i], s.normal(p[k == i]))
    assert scene.distances(p.reshape(10, 30, 3)).shape == (10, 30, 4)
    nested = Scene([Scene(shapes[:2]), Scene(shapes[2:], unit="cm")])
    assert nested.shapes == scene.shapes and nested.unit == "cm"
    with pytest.raises(ValueError, match="nest"):
        Scene([Scene([Floor()], unit="m")], unit="cm")
    with pytest.raises(TypeError):
        Scene([Floor(), "box"])  # type: ignore[list-item]


def test_ground_height_boxes_on_a_floor():
    step = Box([1.0, 0.25, 0.0], [0.5, 0.25, 0.5])
    turned = Box([4.0, 0.5, 0.0], [0.5, 0.5, 0.5], quat.quat_from_rotvec([0, np.pi / 4, 0]))
    ball = Sphere([-3.0, 1.0, 0.0], 0.5)
    scene = Scene([Floor(0.0), step, turned, ball])
    xz = np.array(
        [[1.0, 0.0], [1.4, 0.4], [1.6, 0.0], [4.0, 0.6], [4.0, 0.75], [-3.0, 0.0], [-3.3, 0.0]]
    )
    np.testing.assert_allclose(
        ground_height(scene, xz), [0.5, 0.5, 0.0, 1.0, 0.0, 1.5, 1.0 + np.sqrt(0.25 - 0.09)]
    )
    assert np.isneginf(ground_height(step, [[3.0, 0.0]])).all()
    # a box tipped onto an edge: the roof line along its top edge
    tipped = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0], quat.quat_from_rotvec([np.pi / 4, 0, 0]))
    np.testing.assert_allclose(
        ground_height(tipped, [[0.0, 0.0], [0.0, 0.5]]), [np.sqrt(2), np.sqrt(2) - 0.5]
    )


def test_ground_height_ignores_overhangs_below_which_the_foot_is():
    table = Box([0.0, 0.75, 0.0], [0.5, 0.05, 0.5])
    scene = Scene([Floor(0.0), table])
    xz = np.zeros((3, 2))
    np.testing.assert_allclose(ground_height(scene, xz), 0.8)
    # under the table, on it, and sunk a little into its top
    np.testing.assert_allclose(ground_height(scene, xz, below=[0.1, 0.85, 0.78]), [0.0, 0.8, 0.8])


def test_ground_height_on_terrain_with_a_box():
    hf = bumpy()
    box = Box([5.0, 1.0, 4.0], [0.5, 1.5, 0.5])
    xz = np.array([[5.0, 4.0], [2.0, 2.0]])
    np.testing.assert_allclose(
        ground_height(Scene([hf, box]), xz), [max(2.5, float(hf.height(xz[0]))), hf.height(xz[1])]
    )


# -- files -------------------------------------------------------------------------------


def _scene():
    return Scene(
        [
            Floor(-0.5),
            tilted_box(),
            Sphere([1.0, 2.0, 3.0], 0.25),
            HeightField([-1.0, 2.0], [0.5, 0.25], np.random.default_rng(15).random((4, 5)) / 3),
        ],
        unit="cm",
    )


def _same_scene(a: Scene, b: Scene):
    assert a.unit == b.unit and len(a) == len(b)
    for s, t in zip(a.shapes, b.shapes, strict=True):
        assert type(s) is type(t)
        for key in vars(s):
            if not key.startswith("_"):
                np.testing.assert_array_equal(getattr(s, key), getattr(t, key))


def test_json_round_trip(tmp_path):
    scene = _scene()
    path = write_environment(tmp_path / "env.json", scene)
    back = read_environment(path)
    _same_scene(scene, back)
    p = np.random.default_rng(16).uniform(-2, 3, (50, 3))
    np.testing.assert_array_equal(back.distance(p), scene.distance(p))
    doc = json.loads(path.read_text())
    assert doc["format"] == "retarget-environment" and doc["unit"] == "cm"
    assert [s["type"] for s in doc["shapes"]] == ["floor", "box", "sphere", "heightfield"]
    # a hand-written minimal file
    (tmp_path / "min.json").write_text(
        '{"shapes": [{"type": "box", "center": [0, 1, 0], "half_extents": [1, 1, 1]},\n'
        '  {"type": "floor"},\n'
        '  {"type": "heightfield", "origin": [0, 0], "spacing": 2, "heights": [[0, 1], [1, 0]]}]}'
    )
    mini = read_environment(tmp_path / "min.json")
    assert mini.unit is None and isinstance(mini.shapes[1], Floor)
    np.testing.assert_array_equal(mini.shapes[2].spacing, [2.0, 2.0])  # type: ignore[attr-defined]


def test_npz_height_field(tmp_path):
    hf = bumpy()
    path = write_environment(tmp_path / "terrain.npz", Scene([hf], unit="m"))
    back = read_environment(path)
    _same_scene(Scene([hf], unit="m"), back)
    np.savez(tmp_path / "plain.npz", origin=[1.0, 2.0], spacing=0.5, heights=np.ones((3, 3)))
    plain = read_environment(tmp_path / "plain.npz").shapes[0]
    assert isinstance(plain, HeightField) and plain.spacing.tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match="one height field"):
        write_environment(tmp_path / "two.npz", _scene())
    with pytest.raises(ValueError, match="refusing"):
        write_environment(path, Scene([hf]), inputs=[path])


def one(shape: str) -> str:
    """A document holding one shape, given the inside of its braces."""
    return '{"shapes": [{' + shape + "}]}"


SPHERE = '"type": "sphere", "center": [0, 0, 0]'
BOX = '"type": "box", "center": [0, 0, 0]'
GRID = '"type": "heightfield", "origin": [0, 0], "spacing": 1'
BAD_FILES = [
    ("{", 1, "invalid JSON"),
    ('{\n  "shapes": [\n    {"type": "floor",}\n  ]\n}', 3, "invalid JSON"),
    ("", 1, "invalid JSON"),
    ("[1, 2]", 1, "JSON object"),
    ('{"shapes": []}', None, "non-empty list"),
    ('{"shape": []}', None, "unexpected key 'shape'"),
    ('{"format": "bvh", "shapes": [{"type": "floor"}]}', None, "format"),
    ('{"unit": 3, "shapes": [{"type": "floor"}]}', None, "unit"),
    ('{"version": 7, "shapes": [{"type": "floor"}]}', None, "version"),
    (
        '{"shapes": [\n{"type": "floor"},\n{"type": "cone", "radius": 1}]}',
        3,
        "unknown shape type 'cone'; expected one of floor, slope, box, sphere, heightfield",
    ),
    ('{"shapes": [{"radius": 1}]}', 1, "unknown shape type None"),
    ('{"shapes": [1]}', 1, "expected an object"),
    (one(SPHERE), 1, "missing radius"),
    (one(SPHERE + ', "radius": 1, "centre": [0, 0, 0]'), 1, "unexpected key 'centre'"),
    (one('"type": "sphere", "center": [0, 0], "radius": 1'), 1, "shapes[0].center"),
    (one('"type": "sphere", "center": [0, 0, "a"], "radius": 1'), 1, "[x, y, z]"),
    (one(SPHERE + ', "radius": -1'), 1, ">= 0"),
    (one(SPHERE + ', "radius": NaN'), 1, "finite"),
    (one(SPHERE + ', "radius": 1e400'), 1, "finite"),
    (one(SPHERE + ', "radius": true'), 1, "expected a number"),
    (one(BOX + ', "half_extents": [1, 1, 1], "rotation": [0, 0, 0, 0]'), 1, "non-zero"),
    (one(BOX + ', "half_extents": [1, 1]'), 1, "shapes[0].half_extents"),
    (one(BOX + ', "half_extents": [1, -1, 1]'), 1, ">= 0"),
    ('{"shapes": [\n  {' + GRID + ',\n   "heights": [[0, 1], [1]]}]}', 2, "ragged"),
    (one(GRID + ', "heights": [[0, 1, 2]]'), 1, "shape (1, 3)"),
    (one(GRID + ', "heights": [0, 1, 2]'), 1, "nx × nz"),
    (one(GRID + ', "heights": [[0, NaN], [1, 1]]'), 1, "NaN"),
    (
        one(GRID.replace('"spacing": 1', '"spacing": [1, 0]') + ', "heights": [[0, 0], [1, 1]]'),
        1,
        "spacing > 0",
    ),
    (one(GRID.replace("[0, 0]", "[0, 0, 0]") + ', "heights": [[0, 0], [1, 1]]'), 1, "origin"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD_FILES)
def test_malformed_json_is_a_format_error(tmp_path, text, line, message):
    path = tmp_path / "env.json"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_environment(path)
    assert type(info.value) is FormatError
    assert info.value.line == line
    assert message in info.value.message, info.value.message
    assert str(path) in str(info.value)


def test_unreadable_files_are_format_errors(tmp_path):
    cases = {
        "missing.json": None,
        "latin1.json": b'{"unit": "\xe9"}',
        "junk.npz": b"PK\x03\x04 not really a zip archive",
    }
    np.savez(tmp_path / "partial.npz", origin=[0.0, 0.0], spacing=1.0)
    np.savez(tmp_path / "badshape.npz", origin=[0.0, 0.0], spacing=1.0, heights=np.ones(4))
    for name, payload in cases.items():
        if payload is not None:
            (tmp_path / name).write_bytes(payload)
    for name in [*cases, "partial.npz", "badshape.npz"]:
        with pytest.raises(FormatError) as info:
            read_environment(tmp_path / name)
        assert type(info.value) is FormatError
    with pytest.raises(FormatError, match="missing heights"):
        read_environment(tmp_path / "partial.npz")


# -- properties --------------------------------------------------------------------------

coords = st.floats(-3.0, 3.0, allow_nan=False)
point = st.tuples(coords, coords, coords)
CONTRACT = shapes_for_contract()


@settings(max_examples=60, deadline=None)
@given(p=point, name=st.sampled_from(["sphere", "box", "heightfield"]))
def test_projection_is_idempotent(p, name):
    shape = CONTRACT[name]
    once = shape.project(p)
    np.testing.assert_allclose(shape.project(once), once, atol=1e-9)
    assert abs(shape.distance(once)) < 1e-9


@settings(max_examples=60, deadline=None)
@given(p=point)
def test_distance_is_nonnegative_outside(p):
    box = CONTRACT["box"]
    q = (np.array(p) - box.center) @ quat.matrix_from_quat(box.rotation)
    outside = (np.abs(q) > box.half_extents).any()
    assert (box.distance(p) >= 0) == outside
    hf = CONTRACT["heightfield"]
    above = hf.vertical_distance(p)
    d = hf.distance(p)
    assert (d >= 0) == (above >= 0) and abs(d) <= abs(above) + 1e-12


def test_speed_of_100k_points():
    hf = random_height_field([[0, 500], [0, 400]], 5.0, 17.0, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    xz = rng.uniform([-20, -20], [520, 420], (100_000, 2))
    p = np.column_stack([xz[:, 0], hf.height(xz) + rng.uniform(-3, 3, len(xz)), xz[:, 1]])
    hf.closest(p[:10])  # compile / load the kernels
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        hf.closest(p)
        best = min(best, time.perf_counter() - start)
    assert best < 0.3, f"100k closest points took {best * 1e3:.0f} ms (about 30 ms expected)"
