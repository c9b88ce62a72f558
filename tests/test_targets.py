"""Kinds of target (:mod:`retarget.targets`): one type each, opened once, one registry.

- A toy kind added as the architecture's recipe says, one module and one registry
  line, runs through ``retarget run``, ``retarget batch`` and the library API.
- A run parses a character's file once and compiles a robot's model once.
- The library API retargets onto every kind (README's example).
- The registry: presets, morphs, files of no kind, options a kind does not take.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import missing

import retarget as rt
from retarget.cli import main
from retarget.core.errors import RetargetError
from retarget.io.bvh import write_bvh
from retarget.targets import KINDS, Target, kind_of, open_target

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "retarget"


@pytest.fixture(scope="module")
def shared(data_dir) -> Path:
    path = data_dir.parent
    for part in ("robots", "characters"):
        if not (path / part).is_dir():
            missing(f"{path / part} not found (../shared beside RETARGET_DATA)")
    return path


# -- a toy kind, as the recipe adds one -----------------------------------------------------

#: The toy kind's module: a stick figure read from a ``.toy`` file (JSON: a skeleton
#: file and a uniform scale), its result written as its joints' world positions, one
#: JSON line a frame, and measured by its own measure.
TOY = '''
"""A toy kind of target (the tests' own): a ``.toy`` file names a skeleton file and a
uniform scale; the result is written as its joints' world positions, a JSON line a
frame."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core.kinematics import positions
from ..core.skeleton import Skeleton
from ..io.files import atomic_write
from ..io.formats import read_skeleton
from .base import Prepared
from .skeleton import MotionTarget


@dataclass(frozen=True, eq=False)
class ToyTarget(MotionTarget):
    body: Skeleton
    path: str
    kind: str = "toy"

    @property
    def name(self):
        return self.path

    @property
    def inputs(self):
        return (self.path,)

    @property
    def writes(self):
        return (".jsonl",)

    def prepare(self, source):
        return Prepared(self.body, check_roles=self.path)

    def measure(self, run):
        feet = positions(run.output)[:, :, 1].min(axis=1)
        return {"frames": run.output.num_frames, "lowest": float(feet.min()), "toy": True}

    def write(self, path, output, *, name, inputs=()):
        lines = [json.dumps(frame.tolist()) for frame in positions(output)]
        return atomic_write(path, "\\n".join(lines) + "\\n", inputs=inputs)

    def describe(self, measures):
        return f"toy: {measures['frames']} frames"


def open_toy(path):
    spec = json.loads(Path(path).read_text())
    return ToyTarget(read_skeleton(spec["skeleton"]).scaled(spec["scale"]), str(path))
'''

#: The registry line the recipe adds.
TOY_LINE = 'register(Kind("toy", (".toy",), "retarget.targets.toy:open_toy"))'


@pytest.fixture(scope="module")
def toy_src(tmp_path_factory) -> Path:
    """A copy of the package with the toy kind: one module, one registry line (the
    compiled kernels' caches copied along, their sources' times kept)."""
    src = tmp_path_factory.mktemp("toy") / "src"
    shutil.copytree(PACKAGE, src / "retarget", ignore=shutil.ignore_patterns("node_modules"))
    (src / "retarget" / "targets" / "toy.py").write_text(TOY)
    registry = src / "retarget" / "targets" / "registry.py"
    text = registry.read_text()
    anchor = "#: Openers of the targets that are not one file"
    registry.write_text(text.replace(anchor, f"{TOY_LINE}\n\n{anchor}", 1))
    return src


def _run(src: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_a_toy_kind_runs_through_run_batch_and_the_api(toy_src, data_dir, tmp_path):
    walk = rt.read_motion(data_dir / "lafan_walk.bvh")
    (tmp_path / "clips").mkdir()
    for k in range(2):
        write_bvh(tmp_path / "clips" / f"c{k}.bvh", walk[200 * k : 200 * k + 40])
    figure = tmp_path / "figure.toy"
    figure.write_text(json.dumps({"skeleton": str(data_dir / "mocapbank.bvh"), "scale": 0.9}))
    # retarget run
    out, report = tmp_path / "walk.jsonl", tmp_path / "walk.json"
    args = ["run", str(tmp_path / "clips" / "c0.bvh"), "--target", str(figure)]
    done = _run(
        toy_src, "-m", "retarget.cli", *args, "-o", str(out), "--report", str(report), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "toy: 40 frames" in done.stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 40 and np.isfinite(rows).all()
    ran = json.loads(report.read_text())
    assert ran["measures"]["toy"] is True and ran["target"] == str(figure)
    assert ran["mapping"]["mapped"] is True  # (mocapbank's rig: another hierarchy)
    # retarget batch (worker processes import the package afresh)
    batch = ["batch", str(tmp_path / "clips" / "*.bvh"), "--target", str(figure)]
    done = _run(
        toy_src,
        "-m",
        "retarget.cli",
        *batch,
        "--out",
        str(tmp_path / "out"),
        "--workers",
        "2",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    records = [
        json.loads(x) for x in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()
    ]
    assert sorted(r["status"] for r in records) == ["ok", "ok"]
    assert all(r["measures"]["frames"] == 40 for r in records)
    assert sorted(p.name for p in (tmp_path / "out").glob("*.jsonl")) == [
        "c0.jsonl",
        "c1.jsonl",
        "manifest.jsonl",
    ]
    # the library API
    script = textwrap.dedent(
        f"""
        import retarget as rt
        target = rt.open_target({str(figure)!r})
        assert target.kind == "toy" and isinstance(target, rt.Target)
        out = rt.retarget(rt.read_motion({str(tmp_path / "clips" / "c1.bvh")!r}), target)
        print(out.measures["frames"], out.write({str(tmp_path / "api.jsonl")!r}).name)
        """
    )
    done = _run(toy_src, "-c", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["40", "api.jsonl"]


def test_the_toy_kind_is_one_module_and_one_line(toy_src):
    """The recipe's whole change: the package copy differs from the package by the new
    module and one registry line."""
    added = sorted(
        str(p.relative_to(toy_src / "retarget"))
        for p in (toy_src / "retarget").rglob("*.py")
        if not (PACKAGE / p.relative_to(toy_src / "retarget")).exists()
    )
    assert added == ["targets/toy.py"]
    before = (PACKAGE / "targets" / "registry.py").read_text().splitlines()
    after = (toy_src / "retarget" / "targets" / "registry.py").read_text().splitlines()
    assert [line for line in after if line not in before] == [TOY_LINE]


# -- opened once ---------------------------------------------------------------------------


def test_a_run_parses_a_character_once_and_compiles_a_robot_once(
    shared, data_dir, tmp_path, monkeypatch, capsys
):
    """``retarget run`` onto a glTF character parses its file once (the reader, the
    hands pass, the writer: the one document); onto a robot MuJoCo compiles the model
    once (read, gathered, carried back, measured)."""
    import mujoco

    import retarget.io.gltf as gltf

    parses, compiles = [], []
    doc_init, compile_ = gltf._Doc.__init__, mujoco.MjSpec.compile

    def counted_doc(self, path):
        parses.append(Path(path).name)
        doc_init(self, path)

    def counted_compile(self, *args, **kwargs):
        compiles.append(1)
        return compile_(self, *args, **kwargs)

    monkeypatch.setattr(gltf._Doc, "__init__", counted_doc)
    monkeypatch.setattr(mujoco.MjSpec, "compile", counted_compile)
    walk = str(data_dir / "lafan_walk.bvh")
    knight = shared / "characters" / "kaykit_Knight.glb"
    args = ["run", walk, "--frames", "0:30", "--target", str(knight), "-o", str(tmp_path / "k.glb")]
    assert main([*args, "--report", str(tmp_path / "k.json")]) == 0
    assert parses == ["kaykit_Knight.glb"]
    assert "hands_in_body" in json.loads((tmp_path / "k.json").read_text())
    g1 = shared / "robots" / "unitree_g1" / "g1_29dof.xml"
    args = ["run", walk, "--frames", "0:30", "--target", str(g1), "-o", str(tmp_path / "g.npz")]
    assert main([*args, "--report", str(tmp_path / "g.json")]) == 0
    assert len(compiles) == 1
    measures = json.loads((tmp_path / "g.json").read_text())["measures"]
    assert measures["frames"] == 30 and "self_collision_share" in measures
    capsys.readouterr()


# -- the library API, every kind -------------------------------------------------------------


def test_the_api_onto_a_robot_a_character_a_file_and_a_preset(shared, data_dir, tmp_path):
    """README's example: ``rt.retarget(rt.read_motion(...), rt.open_target(ROBOT),
    method="omr")``, and the same onto a GLB character, a skeleton file and a preset:
    each the target's own result and measures, written as its kind writes."""
    walk = rt.read_motion(data_dir / "lafan_walk.bvh")[:60]
    robot = rt.open_target(shared / "robots" / "unitree_g1" / "g1_29dof.xml")
    out = rt.retarget(walk, robot, method="omr")
    assert (
        out.output.dof_pos.shape == (60, 29) and out.output.joint_names == robot.robot.joint_names
    )
    assert out.measures["limit_violations"] == 0 and out.report["robot"]["ik_end_error_m"] < 0.05
    written = out.write(tmp_path / "walk_g1.npz")
    with np.load(written) as z:
        np.testing.assert_array_equal(z["dof_pos"], out.output.dof_pos)
    knight = rt.open_target(shared / "characters" / "kaykit_Knight.glb")
    out = rt.retarget(walk, knight, method="omr", name="walk.bvh")
    assert out.output.skeleton is knight.character.skeleton
    assert out.measures["skate_result"] >= 0 and "hands_in_body" in out.report
    back = rt.read_motion(out.write(tmp_path / "walk_knight.glb"), animation="walk")
    assert back.num_frames == 60 and back.skeleton.names == knight.character.skeleton.names
    out = rt.retarget(walk, data_dir / "mocapbank.bvh", "copy")
    assert out.output.skeleton.names[0] == "Hips" and out.report["mapping"]["mapped"]
    out = rt.retarget(walk, "blubby", "hierarchical", plant_speed=0.1)
    assert out.report["target"] == "preset:blubby" and out.measures["skate_source"] > 0


def test_the_api_refuses_what_the_method_does_not_declare(data_dir):
    walk = rt.read_motion(data_dir / "lafan_walk.bvh")[:30]
    with pytest.raises(RetargetError, match="does not take --setup"):
        rt.retarget(walk, "blubby", "copy", setup="full")
    with pytest.raises(RetargetError, match="does not take translations"):
        rt.retarget(walk, "blubby", "copy", translations=np.zeros((30, 22, 3)))


# -- the registry ----------------------------------------------------------------------------


def test_the_registry_finds_each_kind_by_suffix_and_content(shared, data_dir, tmp_path):
    assert list(KINDS) == ["robot", "character", "skeleton"]
    assert kind_of(shared / "robots" / "unitree_g1" / "g1_29dof.xml").name == "robot"
    assert kind_of(shared / "characters" / "kaykit_Knight.glb").name == "character"
    assert kind_of(data_dir / "vicon.asf").name == "skeleton"
    other = tmp_path / "scene.xml"  # an XML file that is no robot
    other.write_text("<scene><floor/></scene>")
    assert kind_of(other) is None
    with pytest.raises(RetargetError, match=r"scene.xml: its first element is <scene>; expected"):
        open_target(other)  # (the kind whose suffix it has says why it is none)
    with pytest.raises(RetargetError, match=r"not a target this library opens \(\.xml"):
        open_target(tmp_path / "thing.dat")
    assert open_target("preset:sally").name == open_target("sally").name == "preset:sally"
    with pytest.raises(RetargetError, match="unknown preset 'tall'; presets: blubby, sally"):
        open_target("preset:tall")
    morph = open_target((str(data_dir / "mocapbank.bvh"), str(data_dir / "mocapbank.bvh")))
    assert isinstance(morph, Target) and morph.name.startswith("morph:")


def test_a_kind_refuses_an_option_it_does_not_take(shared, data_dir):
    with pytest.raises(RetargetError, match=r"a skeleton takes none of \['velocity_limit'\]"):
        open_target(data_dir / "mocapbank.bvh", velocity_limit=2.0)
    with pytest.raises(RetargetError, match=r"a robot takes none of \['body_collision'\]"):
        open_target(shared / "robots" / "unitree_g1" / "g1_29dof.xml", body_collision=False)
    robot = open_target(shared / "robots" / "unitree_g1" / "g1_29dof.xml", velocity_limit=3.0)
    assert robot.velocity_limit == 3.0


def test_robots_and_characters_are_frozen(shared):
    robot = open_target(shared / "robots" / "unitree_g1" / "g1_29dof.xml").robot
    for array in (robot.lower, robot.masses, robot.dof_joint, robot.geoms[0].points):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
    character = open_target(shared / "characters" / "kaykit_Knight.glb").character
    with pytest.raises(ValueError, match="read-only"):
        character.rest_world[0, 0] = 0.0
