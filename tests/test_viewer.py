"""The HTML viewer in a real browser: headless Chromium driven by Playwright.

Needs ``/usr/bin/chromium`` (Debian's ``chromium``; ``.ci/run`` installs it):
skipped locally without it, failed under ``CI=true``. Screenshots of the page
go to ``docs/screenshots/`` when ``RETARGET_UPDATE_SCREENSHOTS=1`` (how the
committed ones were made), else to the test's temporary folder.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import missing

from retarget.cli import main
from retarget.humanoid.characters import make_character
from retarget.humanoid.roles import height
from retarget.io import read_bvh, write_bvh
from retarget.methods import get_method
from retarget.viz.viewer import viewer_html

DOCS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"


@pytest.fixture(scope="module")
def walk_and_blubby(lafan):
    """lafan_walk, whole, and the hierarchical method's blubby of it."""
    blubby = make_character(lafan.skeleton, preset="blubby")
    return lafan, get_method("hierarchical").run(lafan, blubby).motion


def _fk(motion, n):
    """World positions (P, 3) of frame ``n``'s joints and end sites, in the file's unit
    and axes: parent by parent from the offsets and local rotations, with scipy's
    rotations (none of ``retarget.core.kinematics``, which the page's data comes from)."""
    from scipy.spatial.transform import Rotation

    sk = motion.skeleton
    offsets = np.array(sk.point_offsets)
    if motion.translations is not None:
        offsets[: sk.num_joints] = motion.translations[n]
    local = Rotation.from_quat(motion.rotations[n][:, [1, 2, 3, 0]])  # w x y z -> x y z w
    world = [local[0]]
    pos = np.zeros((sk.num_points, 3))
    pos[0] = motion.root_position[n]
    for p in range(1, sk.num_points):
        a = int(sk.point_parents[p])
        pos[p] = pos[a] + world[a].apply(offsets[p])
        if p < sk.num_joints:
            world.append(world[a] * local[p])
    return pos


#: Motion k's drawn points (the "points k" spheres' centres) and bone ends (the "bones k"
#: cylinders' y = -1/2 and +1/2 ends), world positions of what three.js draws.
DRAWN = """k => {
  const read = (mesh, ends) => {
    const m = new THREE.Matrix4();
    const v = new THREE.Vector3();
    const out = [];
    for (let i = 0; i < mesh.count; i++) {
      mesh.getMatrixAt(i, m);
      m.premultiply(mesh.matrixWorld);
      for (const y of ends) out.push(v.set(0, y, 0).applyMatrix4(m).toArray());
    }
    return out;
  };
  const scene = window.viewer.scene;
  return {
    points: read(scene.getObjectByName(`points ${k}`), [0]),
    bones: read(scene.getObjectByName(`bones ${k}`), [-0.5, 0.5]),
  };
}"""


def _drawn(page, k):
    """(points (P, 3), bone ends (B, 2, 3)) of motion ``k`` as drawn, after a new frame."""
    before = page.evaluate("viewer.drawn()")
    page.wait_for_function(f"viewer.drawn() > {before + 1}", timeout=10_000)
    drawn = page.evaluate(DRAWN, k)
    return np.array(drawn["points"]), np.array(drawn["bones"]).reshape(-1, 2, 3)


def _open(browser, path, errors):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    t0 = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_function("window.viewer && window.viewer.ready", timeout=30_000)
    return page, time.perf_counter() - t0


def _shots(tmp_path):
    if os.environ.get("RETARGET_UPDATE_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        return DOCS
    return tmp_path


def test_viewer_plays_scrubs_and_draws_the_pose(browser, walk_and_blubby, tmp_path):
    """The page plays and scrubs; at frame N three.js draws each motion's pose of frame N:
    the world positions of the drawn spheres and bone ends are the test's own forward
    kinematics of the motion read back from its written file (centimetres to metres, Y
    up), moved by one horizontal offset per motion for all frames, the first motion's
    root over the origin at frame 0, the second beside it (0.7 of the taller height)."""
    source, result = walk_and_blubby
    written = write_bvh(tmp_path / "blubby.bvh", result)
    motions = [("lafan_walk.bvh", source), ("blubby (hierarchical)", read_bvh(written))]
    path = tmp_path / "view.html"
    path.write_text(viewer_html(motions), encoding="utf-8")
    errors: list[str] = []
    page, seconds = _open(browser, path, errors)
    print(f"\nviewer start-up, {source.num_frames} frames x 2 skeletons: {seconds:.2f} s")
    assert page.evaluate("viewer.frames") == source.num_frames

    # not blank: the skeletons' colours are on the canvas
    canvas = page.locator("canvas").screenshot()
    from io import BytesIO

    import matplotlib.image as mpimg

    pixels = mpimg.imread(BytesIO(canvas), format="png")[..., :3]
    background = np.array([0xF4, 0xF4, 0xF2]) / 255.0
    differs = np.abs(pixels - background).max(axis=-1) > 0.1
    assert differs.mean() > 0.002, f"canvas nearly blank: {differs.mean():.4%} drawn"

    # play advances the frame counter
    label = page.locator("#frame")
    assert label.inner_text().startswith("frame 0 ")
    page.click("#play")
    page.wait_for_function("viewer.frame() > 5", timeout=10_000)
    before, t0 = page.evaluate("viewer.drawn()"), time.perf_counter()
    page.wait_for_timeout(1000)
    rate = (page.evaluate("viewer.drawn()") - before) / (time.perf_counter() - t0)
    print(f"playback: {rate:.0f} frames drawn per second (software WebGL, headless)")
    page.click("#play")
    assert not page.evaluate("viewer.playing()")
    assert int(label.inner_text().split()[1]) == page.evaluate("viewer.frame()") > 5

    # scrubbing to frame N draws the pose of frame N
    offsets, worst = {}, 0.0
    for n in (0, 1234, source.num_frames - 1):
        page.locator("#scrub").fill(str(n))
        assert page.evaluate("viewer.frame()") == n
        assert label.inner_text().startswith(f"frame {n} ")
        for k, (_, motion) in enumerate(motions):
            sk = motion.skeleton
            assert sk.unit == "cm"
            want = 0.01 * _fk(motion, n)  # metres, Y up as the file
            points, bones = _drawn(page, k)
            assert points.shape == want.shape
            offset = points - want
            assert np.abs(offset - offset[0]).max() < 1e-5, (n, k)  # one shift for all
            offsets.setdefault(k, offset[0])
            np.testing.assert_allclose(offset[0], offsets[k], rtol=0, atol=1e-5)  # every frame
            assert abs(offset[0, 1]) < 1e-6  # none up: the floor stays
            bone = [(int(sk.point_parents[p]), p) for p in range(1, sk.num_points)]
            ends = want[np.array([b for b in bone if b[0] >= 0])] + offsets[k]
            assert np.abs(bones - ends).max() < 1e-5, (n, k)
            worst = max(worst, np.abs(offset - offsets[k]).max(), np.abs(bones - ends).max())
    print(f"drawn points and bone ends off the test's FK by at most {worst:.1e} m")
    # side by side: the first motion's root starts over the origin, the second beside it
    roots = [offsets[k] + 0.01 * _fk(motion, 0)[0] for k, (_, motion) in enumerate(motions)]
    np.testing.assert_allclose(roots[0][[0, 2]], 0.0, atol=1e-6)
    apart = np.linalg.norm((roots[1] - roots[0])[[0, 2]])
    tallest = max(height(m.skeleton) for _, m in motions) * 0.01
    assert apart == pytest.approx(0.7 * tallest, abs=1e-5)

    page.locator("#scrub").fill("2200")
    page.screenshot(path=str(_shots(tmp_path) / "viewer-lafan-walk-blubby.png"))
    assert errors == []
    page.close()


def test_cli_view_with_goals_and_a_box(browser, lafan, tmp_path):
    """`retarget run --terrain --report` carries the goals and the scene; `retarget view`
    draws them (a box, a height field) with no console error; a report that is not a
    motion file is refused in one line."""
    import json

    from retarget.environment import Box, random_height_field
    from retarget.io.scene import write_environment

    clip = lafan[:120]
    src = tmp_path / "walk.bvh"
    write_bvh(src, clip)
    ground = random_height_field(((-300.0, 300.0), (-300.0, 300.0)), 20.0, 3.0, 3)
    box = Box([0.0, 200.0, 0.0], [10.0, 10.0, 10.0], [0.96, 0.0, 0.28, 0.0])
    scene = tmp_path / "scene.json"
    write_environment(scene, [ground, box])
    out, report = tmp_path / "r.bvh", tmp_path / "r.json"
    args = ["run", str(src), "--target-preset", "blubby", "--terrain", str(scene)]
    assert main([*args, "-o", str(out), "--report", str(report)]) == 0
    rep = json.loads(report.read_text())
    assert [s["type"] for s in rep["scene"]] == ["heightfield", "box"]
    goals = [f for frames in rep["goals"].values() for f in frames]
    assert len(goals) == clip.num_frames * len(rep["goals"])
    assert any(f is None for f in goals) and any(f is not None for f in goals)
    page_path = tmp_path / "v.html"
    assert main(["view", str(src), str(out), "--report", str(report), "-o", str(page_path)]) == 0
    errors: list[str] = []
    page, _ = _open(browser, page_path, errors)
    page.locator("#scrub").fill("60")
    assert page.evaluate("viewer.frame()") == 60
    assert page.evaluate("viewer.goals()") == len(rep["goals"])
    page.screenshot(path=str(tmp_path / "terrain.png"))
    assert errors == []
    page.close()
    # bad input: one line, exit 2
    assert main(["view", str(report), "-o", str(tmp_path / "x.html")]) == 2


def test_cli_render_gif_and_mp4(lafan, tmp_path):
    """A GIF and an MP4 of two motions: one video frame per clip frame at 30 fps."""
    import imageio_ffmpeg
    from PIL import Image

    clip = lafan[:45]
    src = tmp_path / "walk.bvh"
    write_bvh(src, clip)
    gif, mp4 = tmp_path / "a.gif", tmp_path / "a.mp4"
    assert main(["render", str(src), str(src), "-o", str(gif), "--size", "320x180"]) == 0
    with Image.open(gif) as im:
        assert im.n_frames == 45 and im.size == (320, 180)
    assert main(["render", str(src), "-o", str(mp4), "--rate", "15"]) == 0
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(mp4))
    assert frames == 23  # every second frame of 45
    assert mp4.read_bytes()[4:8] == b"ftyp"
    assert main(["render", str(src), "-o", str(tmp_path / "a.avi")]) == 2
    assert main(["render", str(src), "-o", str(src.with_suffix(".gif")), "--size", "x"]) == 2
    assert not (tmp_path / "a.avi").exists()


def test_cli_plot_reports_and_motions(lafan, tmp_path):
    """`retarget plot`: a hierarchical report's levels, a puppetry report's importance
    and iterations, the feet and joint angles of motions; PNG and SVG; bad input exit 2."""
    import json

    clip = lafan[:150]
    src = tmp_path / "walk.bvh"
    write_bvh(src, clip)
    for method in ("hierarchical", "puppetry"):
        out, rep = tmp_path / f"{method}.bvh", tmp_path / f"{method}.json"
        args = ["run", str(src), "--target-preset", "blubby", "--method", method]
        assert main([*args, "-o", str(out), "--report", str(rep)]) == 0
        png = tmp_path / f"{method}.png"
        assert main(["plot", str(rep), "-o", str(png), "--fps", "30"]) == 0
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "feet.svg"
    assert main(["plot", str(src), str(tmp_path / "hierarchical.bvh"), "-o", str(svg)]) == 0
    assert b"<svg" in svg.read_bytes()[:400]
    angles = tmp_path / "angles.png"
    args = ["plot", str(src), str(tmp_path / "puppetry.bvh"), "--kind", "angles"]
    assert main([*args, "-o", str(angles)]) == 0
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"method": "copy"}))
    assert main(["plot", str(empty), "-o", str(tmp_path / "e.png")]) == 2
    assert main(["plot", str(src), "-o", str(tmp_path / "e.jpg")]) == 2
    assert not (tmp_path / "e.png").exists()


def test_view_live_draws_the_served_stream(browser, lafan, start_server, tmp_path):
    """`retarget view --live ws://…` reads the server's skeleton, and the page draws each
    pose that arrives: the points shown are the last pose's positions."""
    import json
    import socket

    from retarget.methods.puppetry import sensor_stream
    from retarget.online.puppetry import Puppeteer
    from retarget.online.stream import LiveStream, PuppetryLive

    sally = make_character(lafan.skeleton, preset="sally")

    server, ports = start_server("sally", "--in", "udp://127.0.0.1:0", "--out", "ws://127.0.0.1:0")
    try:
        port_in, address = ports["udp"], f"ws://127.0.0.1:{ports['ws']}"
        page_path = tmp_path / "live.html"
        assert main(["view", "--live", address, "-o", str(page_path)]) == 0
        errors: list[str] = []
        page, _ = _open(browser, page_path, errors)
        page.wait_for_timeout(500)  # the page's socket connects
        pos, ori = sensor_stream(lafan[:40])
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for k in range(40):
            frame = {"frame": k, "positions": pos[k].tolist(), "orientations": ori[k].tolist()}
            sock.sendto(json.dumps(frame).encode(), ("127.0.0.1", port_in))
            time.sleep(0.01)
        page.wait_for_function("viewer.liveFrame() === 39", timeout=30_000)
        assert page.evaluate("viewer.received()") == 40
        shown = np.asarray(page.evaluate("viewer.points(0)")).reshape(-1, 3)
    finally:
        server.send_signal(2)
        server.communicate(timeout=60)
    # the same frames through an in-process stream: the server's last pose
    stream = LiveStream(
        PuppetryLive(Puppeteer(lafan.skeleton, sally, fps=30, calibration=lafan)), fps=30
    )
    for k in range(40):
        frame = {"frame": k, "positions": pos[k].tolist(), "orientations": ori[k].tolist()}
        last = json.loads(stream.receive(json.dumps(frame)))
    np.testing.assert_allclose(shown, np.asarray(last["positions"]), atol=1e-3)
    assert errors == []
    page.close()
    assert main(["view", "--live", "ws://127.0.0.1:9", "-o", str(tmp_path / "x.html")]) == 2


#: Motion k's drawn capsules: centre (the cylinder's y = 0) and radius (its x scale).
CAPSULES = """k => {
  const mesh = window.viewer.scene.getObjectByName(`capsules ${k}`);
  const m = new THREE.Matrix4();
  const p = new THREE.Vector3();
  const x = new THREE.Vector3();
  const out = [];
  for (let i = 0; i < mesh.count; i++) {
    mesh.getMatrixAt(i, m);
    m.premultiply(mesh.matrixWorld);
    p.setFromMatrixPosition(m);
    out.push([p.x, p.y, p.z, x.setFromMatrixColumn(m, 0).length()]);
  }
  return out;
}"""


def test_view_draws_a_robot_with_its_collision_geometry(browser, data_dir, tmp_path):
    """``retarget view SRC traj.npz --robot g1.xml``: the robot's capsules drawn where
    MuJoCo puts its primitive collision geoms (the G1's feet spheres and shoulder
    cylinders) at the shown frame, of their radii, relative to its root (z up turned
    y up), with no console error."""
    import mujoco

    robots = data_dir.parent / "robots"
    model_path = robots / "unitree_g1" / "g1_29dof.xml"
    gmr = robots / "reference" / "gmr_lafan_walk_g1.npz"
    if not (model_path.is_file() and gmr.is_file()):
        missing("../shared/robots not found beside RETARGET_DATA")
    page_path = tmp_path / "robot.html"
    args = [str(data_dir / "lafan_walk.bvh"), str(gmr), "--robot", str(model_path)]
    assert main(["view", *args, "--frames", "0:60", "-o", str(page_path)]) == 0
    errors: list[str] = []
    page, _ = _open(browser, page_path, errors)
    n = 40
    page.locator("#scrub").fill(str(n))
    points, _ = _drawn(page, 1)
    drawn = np.array(page.evaluate(CAPSULES, 1))  # (C, 4)
    model = mujoco.MjModel.from_xml_path(str(model_path))
    data = mujoco.MjData(model)
    with np.load(gmr) as z:
        data.qpos[:3], data.qpos[3:7], data.qpos[7:] = (
            z["root_pos"][n],
            z["root_quat"][n],
            z["dof_pos"][n],
        )
    mujoco.mj_kinematics(model, data)
    turn = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # z up -> y up
    root = data.xpos[1] @ turn.T
    found = 0
    for g in range(model.ngeom):
        kind = int(model.geom_type[g])
        if kind not in (mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_CYLINDER):
            continue
        if not (model.geom_contype[g] or model.geom_conaffinity[g]):
            continue
        want = data.geom_xpos[g] @ turn.T - root + points[0]  # the drawn root is point 0
        near = np.linalg.norm(drawn[:, :3] - want, axis=1)
        k = int(np.argmin(near))
        assert near[k] < 1e-5, (g, near[k])
        assert drawn[k, 3] == pytest.approx(float(model.geom_size[g, 0]), abs=1e-6)
        found += 1
    assert found == 12  # 8 foot spheres, 4 shoulder cylinders
    assert errors == []
    page.close()


#: World positions of a character's mesh bones (the GLTFLoader scene's Bone objects),
#: by three.js's names for them.
BONES = """k => {
  const group = window.viewer.scene.getObjectByName(`mesh ${k}`);
  const out = {};
  const v = new THREE.Vector3();
  group.traverse(o => { if (o.isBone) out[o.name] = o.getWorldPosition(v).toArray(); });
  return out;
}"""


def test_view_plays_a_characters_skinned_mesh(browser, data_dir, tmp_path):
    """``retarget view SRC OUT.glb``: the character's skinned mesh (GLTFLoader) plays the
    clip ``retarget run`` added, in step with the drawn skeleton: at frame N every mesh
    bone stands where the page draws that joint's point, within 1e-4 of the height; a
    screenshot shows the mesh."""
    char = data_dir.parent / "characters" / "kaykit_Knight.glb"
    if not char.is_file():
        missing(f"{char} not found (../shared/characters beside RETARGET_DATA)")
    src = data_dir / "lafan_walk.bvh"
    out = tmp_path / "lafan_walk.glb"
    assert main(["run", str(src), "--frames", "0:150", "--target", str(char), "-o", str(out)]) == 0
    page_path = tmp_path / "view.html"
    args = ["view", str(src), str(out), "--frames", "0:150", "-o", str(page_path)]
    assert main(args) == 0
    errors: list[str] = []
    page, _ = _open(browser, page_path, errors)
    page.wait_for_function("viewer.meshes() === 1", timeout=30_000)
    names = page.evaluate("viewer.scene.getObjectByName('points 1') && 1")
    assert names == 1
    import re

    from retarget.io.gltf import read_character

    sk = read_character(out).skeleton
    shown = {re.sub(r"[\[\]\.:/]", "", re.sub(r"\s", "_", n)): k for k, n in enumerate(sk.names)}
    tall = height(sk)
    for n in (0, 75, 149):
        page.locator("#scrub").fill(str(n))
        points, _ = _drawn(page, 1)
        bones = page.evaluate(BONES, 1)
        matched = [(np.array(p), points[shown[b]]) for b, p in bones.items() if b in shown]
        assert len(matched) >= 0.9 * sk.num_joints
        worst = max(np.abs(a - b).max() for a, b in matched)
        assert worst < 1e-4 * tall, (n, worst)
    page.locator("#scrub").fill("60")
    page.wait_for_timeout(200)
    page.screenshot(path=str(_shots(tmp_path) / "viewer-lafan-walk-knight.png"))
    assert errors == []
    page.close()


def test_the_demo_draws_every_kind_of_target(browser, data_dir, tmp_path, monkeypatch):
    """``retarget demo``'s page draws the walk beside the presets' results, a robot (its
    collision capsules, from its joint trajectories) and a glTF character (its skinned
    mesh, from the GLB written); a screenshot shows them (``--robot``: the G1 of
    ``../shared``, not the package index's T1, which ``make demo`` fetches)."""
    g1 = data_dir.parent / "robots" / "unitree_g1" / "g1_29dof.xml"
    if not g1.is_file():
        missing(f"{g1} not found (../shared/robots beside RETARGET_DATA)")
    monkeypatch.setenv("RETARGET_DATA", str(data_dir))
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "--frames", "0:240", "--robot", str(g1), "--quiet"]
    assert main(args) == 0
    errors: list[str] = []
    page, _ = _open(browser, out / "view.html", errors)
    page.wait_for_function("viewer.meshes() === 1", timeout=30_000)
    shown = page.evaluate("viewer.scene.children.map(o => o.name).filter(n => n)")
    robot = next(k for k in range(8) if f"capsules {k}" in shown)
    assert page.evaluate(f"viewer.scene.getObjectByName('capsules {robot}').count") > 10
    assert any(name.startswith("mesh ") for name in shown)
    page.locator("#scrub").fill("120")
    page.wait_for_timeout(300)
    page.screenshot(path=str(tmp_path / "demo.png"))  # (docs/screenshots/demo.png: make demo)
    assert errors == []
    page.close()
