"""Check our BVH files against Blender's importer, the reference animators use.

``make verify-blender`` (not part of ``make test``) runs this script in the
project's venv. For every real clip in ``$RETARGET_DATA`` (default
``../shared/data`` beside the project): lafan_walk.bvh, mocapbank.bvh and, when
:mod:`retarget.io` has ``read_asf_amc``, vicon.asf + vicon.amc, it

1. reads the clip, writes it with :func:`retarget.io.write_bvh` to a scratch
   folder, and saves our forward kinematics (:func:`retarget.core.kinematics.positions`)
   of every joint at ``--frames`` evenly spaced frames (first and last included)
   to ``<clip>.ours.npz`` beside the BVH;
2. runs ``tools/_blender_import.py`` with the Blender venv's Python
   (``--blender-python``), which imports each BVH with ``bpy.ops.import_anim.bvh``
   and saves every pose bone's world head position at those frames
   (BVH frame f = Blender frame f + 1) to ``<clip>.blender.npz``;
3. maps Blender's axes back to the file's (Blender's importer turns the file's
   (x, y, z) into (x, -z, y), so ours = (x_b, z_b, -y_b)); the mapping is not
   taken on trust: all 48 signed axis permutations are tried and the best must
   be this one. Then it compares every joint with our FK (a bone's head is its
   joint; End Sites are not bones) and prints, per clip, the joints and frames
   compared, the largest and mean distance in the file's unit and PASS/FAIL
   against 1e-4 of that unit.

The table also goes to ``benchmarks/results/YYYY-MM-DD-verify-blender.md``. The
exit status is 1 when a clip fails, 2 when the check cannot run.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import retarget.io as rio
from retarget.core import quat
from retarget.core.kinematics import positions
from retarget.core.motion import Motion

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 1e-4  # of the file's length unit
BLENDER_SCRIPT = Path(__file__).resolve().parent / "_blender_import.py"
# Blender's importer maps the file's (x, y, z) to (x, -z, y); ours = EXPECTED @ blender.
EXPECTED = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
MAXBONENAME = 63  # bytes of a Blender bone name


@dataclass
class Clip:
    """One clip to check and what was found."""

    name: str
    unit: str = ""
    joints: int = 0
    frames: int = 0
    max_err: float = float("nan")
    mean_err: float = float("nan")
    note: str = ""
    passed: bool = False
    details: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "PASS" if self.passed else ("SKIP" if self.note.startswith("skipped") else "FAIL")


def _load_clips(data: Path) -> tuple[list[tuple[str, Motion]], list[Clip]]:
    """The motions to check, and the clips that cannot be (skipped or unreadable)."""
    motions: list[tuple[str, Motion]] = []
    other: list[Clip] = []
    for name in ("lafan_walk.bvh", "mocapbank.bvh"):
        try:
            motions.append((name, rio.read_bvh(data / name)))
        except Exception as exc:  # report it as a failed clip
            other.append(Clip(name, note=f"cannot read: {exc}"))
    vicon = "vicon.asf+amc"
    if hasattr(rio, "read_asf_amc"):
        try:
            motions.append((vicon, rio.read_asf_amc(data / "vicon.asf", data / "vicon.amc")))
        except Exception as exc:
            other.append(Clip(vicon, note=f"cannot read: {exc}"))
    else:
        print(f"note: retarget.io has no read_asf_amc yet: {vicon} skipped")
        other.append(Clip(vicon, note="skipped: retarget.io has no read_asf_amc"))
    return motions, other


def sample_frames(num_frames: int, count: int) -> np.ndarray:
    """``count`` evenly spaced frame indices, first and last included."""
    if num_frames <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(0, num_frames - 1, count).round().astype(np.int64))


def blender_bone_name(name: str) -> str:
    """The bone name Blender's importer gives a BVH joint (spaces joined by '_',
    cut to 63 bytes)."""
    name = "_".join(name.split())
    raw = name.encode("utf-8")[:MAXBONENAME]
    return raw.decode("utf-8", errors="ignore")


def signed_permutations() -> list[np.ndarray]:
    """The 48 signed 3x3 permutation matrices."""
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            m = np.zeros((3, 3))
            m[range(3), perm] = signs
            out.append(m)
    return out


def _axes_label(m: np.ndarray) -> str:
    parts = []
    for row in m:
        k = int(np.flatnonzero(row)[0])
        parts.append(("-" if row[k] < 0 else "") + "xyz"[k] + "_b")
    return "(" + ", ".join(parts) + ")"


def fk_float32(motion: Motion) -> np.ndarray:
    """Joint positions by our FK done in single precision, as Blender computes, (F, J, 3)."""
    sk = motion.skeleton
    rot = quat.matrix_from_quat(motion.rotations).astype(np.float32)
    off = (sk.offsets if motion.translations is None else motion.translations).astype(np.float32)
    off = np.broadcast_to(off, (motion.num_frames, sk.num_joints, 3))
    pos = np.empty((motion.num_frames, sk.num_joints, 3), np.float32)
    world = np.empty_like(rot)
    pos[:, 0] = motion.root_position.astype(np.float32)
    world[:, 0] = rot[:, 0]
    for j in range(1, sk.num_joints):
        p = sk.parents[j]
        pos[:, j] = pos[:, p] + np.einsum("fab,fb->fa", world[:, p], off[:, j])
        world[:, j] = world[:, p] @ rot[:, j]
    return pos.astype(np.float64)


def _euler_matrix(angles: np.ndarray, mode: str) -> np.ndarray:
    """Blender's Euler rotation (x, y, z angles; mode 'XYZ' = Rz Ry Rx), in double precision."""
    out = np.eye(3)
    for axis in mode:
        a = angles["XYZ".index(axis)]
        c, s = np.cos(a), np.sin(a)
        i, k = [(1, 2), (2, 0), (0, 1)]["XYZ".index(axis)]
        r = np.eye(3)
        r[i, i] = r[k, k] = c
        r[i, k], r[k, i] = -s, s
        out = r @ out
    return out


def keyed_heads_float64(blender: dict) -> np.ndarray | None:
    """Bone heads re-evaluated in double precision from the values Blender keyed and
    its rest matrices (Blender's axes), (K, B, 3); None without Euler channels."""
    modes = [str(m) for m in blender.get("modes", [])]
    if not modes or any(m not in {"XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"} for m in modes):
        return None
    names = [str(b) for b in blender["bones"]]
    parent = [names.index(str(p)) if str(p) else -1 for p in blender["parents"]]
    rest = blender["rest_matrices"]
    heads = np.empty(blender["heads"].shape)
    for k in range(heads.shape[0]):
        pose: list[np.ndarray] = []
        for b, mode in enumerate(modes):
            basis = np.eye(4)
            basis[:3, :3] = _euler_matrix(blender["eulers"][k, b], mode)
            if not blender["connect"][b]:
                basis[:3, 3] = blender["locations"][k, b]
            p = parent[b]
            up = blender["matrix_world"] if p < 0 else pose[p] @ np.linalg.inv(rest[p])
            pose.append(up @ rest[b] @ basis)
            heads[k, b] = pose[b][:3, 3]
    return heads


def compare(clip: Clip, ours: dict, blender: dict) -> None:
    """Fill ``clip`` with the comparison of our FK and Blender's bone heads."""
    if "error" in blender:
        lines = str(blender["error"]).strip().splitlines()
        errors = [ln.strip() for ln in lines if re.match(r"\s*\w*(Error|Exception)\b", ln)]
        clip.note = "Blender import failed: " + (errors[-1] if errors else lines[-1])
        clip.details.append(str(blender["error"]))
        return
    names = [str(n) for n in ours["names"]]
    bones = [str(b) for b in blender["bones"]]
    index = {b: k for k, b in enumerate(bones)}
    cols, missing = [], []
    for n in names:
        k = index.get(blender_bone_name(n))
        (missing if k is None else cols).append(n if k is None else k)
    if missing or len(set(cols)) != len(cols) or len(bones) != len(names):
        clip.note = f"bone names do not match the joints: missing {missing}, bones {bones}"
        return
    if not np.array_equal(blender["frames"], ours["frames"]):
        clip.note = "Blender read other frames than asked"
        return
    ref = ours["pos"]  # (K, J, 3)
    heads = blender["heads"][:, cols]  # (K, J, 3), Blender's axes
    # Which signed axis permutation brings Blender's positions onto ours?
    errs = sorted(
        (float(np.abs(heads @ m.T - ref).max()), k, m) for k, m in enumerate(signed_permutations())
    )
    best, second = errs[0], errs[1]
    mapping_ok = np.array_equal(best[2], EXPECTED)
    clip.details.append(
        f"axis mapping: best of 48 signed permutations is ours = {_axes_label(best[2])} "
        f"(largest coordinate error {best[0]:.3g}; next best {_axes_label(second[2])}: "
        f"{second[0]:.3g}) -> "
        + ("as expected" if mapping_ok else "NOT the expected (x_b, z_b, -y_b)")
    )
    mapped = heads @ EXPECTED.T
    dist = np.linalg.norm(mapped - ref, axis=-1)  # (K, J)
    clip.max_err = float(dist.max())
    clip.mean_err = float(dist.mean())
    over = int((dist > TOLERANCE).sum())
    clip.details.append(
        f"{over} of {dist.size} joint-frames ({100 * over / dist.size:.2f}%) beyond {TOLERANCE:g}; "
        f"99th percentile {np.percentile(dist, 99):.3g} {clip.unit}"
    )
    kf, kj = np.unravel_index(int(dist.argmax()), dist.shape)
    clip.details.append(
        f"largest error {clip.max_err:.3g} {clip.unit} at joint {names[kj]!r}, "
        f"BVH frame {int(ours['frames'][kf])} (ours {np.round(ref[kf, kj], 6).tolist()}, "
        f"Blender mapped {np.round(mapped[kf, kj], 6).tolist()})"
    )
    rest = np.linalg.norm(blender["rest_heads"][cols] @ EXPECTED.T - ours["rest"], axis=-1)
    clip.details.append(f"rest pose: largest head error {rest.max():.3g} {clip.unit}")
    if "file_pos" in ours:
        w = np.linalg.norm(ours["file_pos"] - ref, axis=-1).max()
        clip.details.append(
            f"our own reader on the written file vs our FK: largest error {w:.3g} {clip.unit}"
        )
        fd = np.linalg.norm(mapped - ours["file_pos"], axis=-1)
        clip.details.append(
            f"Blender vs FK of the re-read file: largest error {fd.max():.3g} {clip.unit}"
        )
    keyed = keyed_heads_float64(blender)
    if keyed is not None:
        ke = np.linalg.norm(keyed[:, cols] @ EXPECTED.T - ref, axis=-1)
        clip.details.append(
            f"Blender's keyed values and rest matrices re-evaluated in float64: largest error "
            f"{ke.max():.3g} {clip.unit} (mean {ke.mean():.3g})"
        )
    if "pos32" in ours:
        e32 = np.linalg.norm(ours["pos32"] - ref, axis=-1)
        clip.details.append(
            f"our FK in float32 (Blender's precision) vs float64: largest error {e32.max():.3g} "
            f"{clip.unit} (mean {e32.mean():.3g})"
        )
    mag = float(np.abs(ref).max())
    clip.details.append(
        f"largest coordinate magnitude {mag:.4g} {clip.unit} "
        f"(float32 spacing there {np.spacing(np.float32(mag)):.3g})"
    )
    clip.passed = bool(mapping_ok and clip.max_err <= TOLERANCE)
    if not mapping_ok:
        clip.note = "axis mapping differs from (x, -z, y)"


def partial_rotation_joints(bvh: Path) -> list[str]:
    """Joints of a BVH file with one or two rotation channels, which Blender's
    importer cannot read (its Euler-order table has no such key, and it would
    take a missing channel's value from the end of the frame line)."""
    out, name = [], ""
    for line in bvh.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words and words[0] in {"ROOT", "JOINT"}:
            name = " ".join(words[1:])
        elif words and words[0] == "CHANNELS":
            if 0 < sum(w.endswith("rotation") for w in words[2:]) < 3:
                out.append(f"{name} ({' '.join(words[2:])})")
        elif words and words[0] == "MOTION":
            break
    return out


def _rest_positions(motion: Motion) -> np.ndarray:
    """Joint positions at rest: the root at its OFFSET, offsets summed down the tree."""
    sk = motion.skeleton
    rest = np.zeros((sk.num_joints, 3))
    rest[0] = sk.offsets[0]
    for j in range(1, sk.num_joints):
        rest[j] = rest[sk.parents[j]] + sk.offsets[j]
    return rest


def write_inputs(motions: list[tuple[str, Motion]], work: Path, count: int) -> list[dict]:
    """Write every motion as BVH with our FK beside it; the Blender job's clip list."""
    jobs = []
    for name, motion in motions:
        stem = name.split(".")[0]
        bvh = rio.write_bvh(work / f"{stem}.bvh", motion)
        frames = sample_frames(motion.num_frames, count)
        sk = motion.skeleton
        sampled = motion[frames]
        pos = positions(sampled)[:, : sk.num_joints]
        extra = {}
        try:  # diagnostic: the written file through our own reader
            back = rio.read_bvh(bvh, unit=sk.unit)
            if back.skeleton.names == sk.names:
                extra["file_pos"] = positions(back[frames])[:, : sk.num_joints]
        except Exception as exc:
            print(f"note: our reader cannot read back {bvh.name}: {exc}")
        np.savez(
            work / f"{stem}.ours.npz",
            names=np.array(sk.names),
            frames=frames,
            pos=pos,
            rest=_rest_positions(motion),
            pos32=fk_float32(sampled),
            unit=np.array(sk.unit),
            **extra,
        )
        jobs.append(
            {
                "clip": name,
                "bvh": str(bvh),
                "frames": frames.tolist(),
                "ours": str(work / f"{stem}.ours.npz"),
                "out": str(work / f"{stem}.blender.npz"),
            }
        )
    return jobs


def table(clips: list[Clip]) -> list[str]:
    """The result table as Markdown lines."""
    lines = [
        "| clip | unit | joints | frames compared | max error | mean error | result |",
        "|---|---|---:|---:|---:|---:|---|",
    ]

    def err(v: float) -> str:
        return "–" if np.isnan(v) else f"{v:.3g}"

    for c in clips:
        lines.append(
            f"| {c.name} | {c.unit or '–'} | {c.joints or '–'} | {c.frames or '–'} | "
            f"{err(c.max_err)} | {err(c.mean_err)} | {c.status}"
            f"{' (' + c.note + ')' if c.note else ''} |"
        )
    return lines


def report(clips: list[Clip], version: str, options: str, out: Path) -> None:
    """Print the table and details, and write them as Markdown to ``out``."""
    lines = table(clips)
    print()
    print("\n".join(lines))
    for c in clips:
        for d in c.details:
            print(f"  {c.name}: {d}")
    today = datetime.date.today().isoformat()
    md = [
        f"# Blender BVH import vs our FK ({today})",
        "",
        f"`make verify-blender`: our `write_bvh` output imported by Blender {version} (bpy) with",
        f"`bpy.ops.import_anim.bvh(filepath=..., {options})`; every bone's world head position "
        "at BVH frame f (Blender frame f + 1), "
        "axes mapped back with ours = (x_b, z_b, -y_b), against "
        "`retarget.core.kinematics.positions`. "
        f"Error = distance in the file's unit; tolerance {TOLERANCE:g}.",
        "",
        *lines,
        "",
        "Details. Besides the comparison itself: the re-read line is our reader on the written "
        "file (shows what writing costs); the float64 line evaluates the values Blender keyed "
        "and its rest matrices in double precision (shows what Blender's import stored); the "
        "float32 line runs our own FK in single precision, Blender's arithmetic (the error a "
        "perfect single-precision evaluation would already have).",
        "",
        *[f"- {c.name}: {d}" for c in clips for d in c.details if "\n" not in d],
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(md), encoding="utf-8")
    print(f"\nwritten {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blender-python", required=True, help="Python of the venv with bpy")
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("RETARGET_DATA", ROOT.parent / "shared" / "data")),
        help="folder of the real clips (default $RETARGET_DATA or ../shared/data)",
    )
    parser.add_argument("--frames", type=int, default=40, help="frames compared per clip")
    parser.add_argument("--keep", type=Path, help="write the BVH and .npz files here and keep them")
    today = datetime.date.today().isoformat()
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "benchmarks" / "results" / f"{today}-verify-blender.md",
        help="Markdown report (default benchmarks/results/YYYY-MM-DD-verify-blender.md)",
    )
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"error: no data folder {args.data} (set RETARGET_DATA)", file=sys.stderr)
        return 2
    motions, clips = _load_clips(args.data)
    with tempfile.TemporaryDirectory(prefix="verify-blender-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        jobs = write_inputs(motions, work, args.frames)
        job_file = work / "job.json"
        job_file.write_text(json.dumps({"clips": jobs}, indent=1), encoding="utf-8")
        cmd = [args.blender_python, str(BLENDER_SCRIPT), str(job_file)]
        proc = subprocess.run(cmd, check=False)
        if proc.returncode != 0:
            print(f"error: {BLENDER_SCRIPT.name} exited with {proc.returncode}", file=sys.stderr)
            return 2
        version, options = "?", "?"
        checked = []
        for job, (_, motion) in zip(jobs, motions, strict=True):
            with np.load(job["ours"]) as f:
                ours = {k: f[k] for k in f.files}
            with np.load(job["out"]) as f:
                blender = {k: f[k] for k in f.files}
            version = str(blender.get("version", version))
            if "options" in blender:
                opts = json.loads(str(blender["options"]))
                options = ", ".join(f"{k}={v!r}" for k, v in opts.items())
            clip = Clip(
                job["clip"],
                unit=motion.skeleton.unit,
                joints=motion.skeleton.num_joints,
                frames=len(job["frames"]),
            )
            compare(clip, ours, blender)
            partial = partial_rotation_joints(Path(job["bvh"]))
            if "error" in blender and partial:
                why = "joints with 1 or 2 rotation channels, which Blender's importer cannot read"
                clip.details.insert(0, f"the written file has {why}: {', '.join(partial)}")
            checked.append(clip)
    clips = checked + clips
    print(f"Blender {version}: bpy.ops.import_anim.bvh(filepath=..., {options})")
    report(clips, version, options, args.out)
    failed = [c.name for c in clips if c.status == "FAIL"]
    if failed:
        print(f"FAIL: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
