"""Every exported name exists; the documented example of the README runs."""

from __future__ import annotations

import importlib

import pytest

import retarget

PACKAGES = [
    "retarget",
    "retarget.io",
    "retarget.methods",
    "retarget.viz",
    "retarget.pipeline",
    "retarget.targets",
    "retarget.targets.robot",
    "retarget.targets.character",
    "retarget.online",
    "retarget.tasks",
    "retarget.ik",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_import(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    assert len(module.__all__) == len(set(module.__all__))


def test_readme_example(data_dir, tmp_path):
    rt = retarget
    walk = rt.read_motion(data_dir / "lafan_walk.bvh")[:300]
    blubby = rt.make_character(walk.skeleton, preset="blubby")
    result = rt.get_method("copy").run(walk, blubby)
    assert rt.evaluate(walk, result.motion)["skate_ratio"] > 1.0
    rt.write_motion(tmp_path / "walk_blubby.bvh", result.motion)
    assert rt.read_bvh(tmp_path / "walk_blubby.bvh").num_frames == 300


def test_the_lazy_io_names_are_the_exported_ones_and_live_where_they_are_said_to():
    from retarget import io

    assert sorted(io._HOME) == sorted(io.__all__)
    for name, home in io._HOME.items():
        module = importlib.import_module(f"retarget.io.{home}")
        assert getattr(module, name) is getattr(io, name), name
