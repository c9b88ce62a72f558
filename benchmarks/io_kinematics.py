"""BVH parsing and forward kinematics of a long clip: ours against other libraries.

What is measured, on ``lafan_walk.bvh`` (22 joints + 5 end sites, 7184 frames,
5 MB; from ``$RETARGET_DATA``, default ``../shared/data`` beside the project):

* **parse** -- wall time to turn the file into in-memory motion, from a warm
  file cache: ours (:func:`retarget.io.read_bvh`: float64 quaternions, checked)
  against each BVH reader that imports, through its own "read a file" entry
  point: ``pybvh.read_bvh_file``, ``bvhTools.bvhIO.readBvh``,
  ``bvhsdk.ReadFile`` and ``bvhio.readAsBvh``. Every peer's frame count and
  root positions are compared with ours, so a reader that reads less shows.
* **FK** -- world positions of every joint of all 7184 frames, from each
  library's own parsed motion: ours (:func:`retarget.core.kinematics.positions`, a
  numba kernel that also computes every point's world rotation), pybvh's
  vectorised numpy FK (``pybvh.frames_to_node_positions``, uncached; its input
  is Euler angles, so it includes the Euler-to-matrix conversion), and
  ``pinocchio.forwardKinematics`` called once per frame in a Python loop on
  the same kinematic tree (free-flyer root, spherical joints at the BVH
  offsets, end sites as frames). Before any timing the script checks that
  pinocchio's ``data.oMi`` (positions and rotations) equals ours within 1e-9
  on a few frames, and reports how far pybvh's positions are from ours.

Protocol: each contender runs once to warm up (numba JIT, imports, caches),
then N times (``--repeats``, default 15) in round-robin order, the starting
contender rotating every round, so that the noise of a shared machine falls on
all alike; garbage is collected before every timed call and inputs are built
outside the timed region. The table gives median and p10/p90 in ms,
frames/s = 7184 / median, and speed-ups as ratios of medians (with p10-p90 of
the per-round ratios, which pair calls made seconds apart). It is printed as
Markdown and appended to ``benchmarks/results/YYYY-MM-DD-io_kinematics.md``
(one file a day holds that day's runs: quote the medians of several).

Run: ``make bench`` or ``.venv/bin/python benchmarks/io_kinematics.py --repeats 15``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import _common as common
import numpy as np

from retarget.core import quat
from retarget.core.kinematics import forward_kinematics, positions
from retarget.core.motion import Motion
from retarget.core.skeleton import Skeleton
from retarget.io import _scan, read_bvh

GOAL_PARSE = 4.0  # ours vs the fastest peer reader
GOAL_FK_PYBVH = 20.0
GOAL_FK_PINOCCHIO = 2.0
TOL_PINOCCHIO = 1e-9
DISTRIBUTIONS = ("retarget", "numpy", "numba", "pin", "pybvh", "bvhtools", "bvhsdk", "bvhio")


@dataclass
class Contender:
    """One timed call: ``run()`` does the work once; ``failure`` says why it cannot."""

    group: str  # "parse" or "fk"
    name: str
    what: str  # the call, and what it produces
    run: Callable[[], object] | None = None
    failure: str | None = None
    check: str = ""  # agreement with ours
    ours: bool = False  # ours or a variant of ours (not a peer)
    root_of: Callable[[object, Skeleton], np.ndarray] | None = None  # parse: (F, 3) root positions
    samples: list[float] = field(default_factory=list)  # seconds

    @property
    def ok(self) -> bool:
        return self.failure is None and self.run is not None

    def percentiles(self) -> tuple[float, float, float]:
        return common.percentiles(self.samples)


@contextlib.contextmanager
def _quiet():
    """Silence peers' prints (bvhsdk warns per joint) and warnings (pybvh's world-up)."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    """:func:`_common.timed`, the peers silenced (outside the timed region)."""
    with _quiet():
        return common.timed(fn)


# -- pinocchio on our skeleton --------------------------------------------------------------


def pinocchio_model(skeleton: Skeleton):
    """A pinocchio Model of the skeleton: joint ``j`` is pinocchio joint ``j + 1``.

    The root is a free flyer at the origin (BVH root position channels replace
    its OFFSET); every other joint is spherical, placed at its offset in its
    parent with identity rotation; end sites are operational frames.
    """
    import pinocchio as pin

    model = pin.Model()
    ids: list[int] = []
    for j, name in enumerate(skeleton.names):
        if j == 0:
            jid = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), name)
        else:
            placement = pin.SE3(np.eye(3), np.array(skeleton.offsets[j], dtype=np.float64))
            parent = ids[skeleton.parents[j]]
            jid = model.addJoint(parent, pin.JointModelSpherical(), placement, name)
        ids.append(jid)
    for s, name in enumerate(skeleton.site_names):
        placement = pin.SE3(np.eye(3), np.array(skeleton.site_offsets[s], dtype=np.float64))
        parent = ids[int(skeleton.site_parents[s])]
        model.addFrame(pin.Frame(name, parent, placement, pin.FrameType.OP_FRAME))
    return model, ids


def q_pinocchio_from_motion(motion: Motion) -> np.ndarray:
    """Configurations, shape (F, 7 + 4(J - 1)): root position, then every joint's
    quaternion in pinocchio's (x, y, z, w) order (ours are (w, x, y, z))."""
    if motion.translations is not None:
        raise ValueError("animated joint translations have no spherical-joint equivalent")
    q_xyzw = motion.rotations[..., [1, 2, 3, 0]]
    return np.ascontiguousarray(
        np.concatenate([motion.root_position, q_xyzw.reshape(motion.num_frames, -1)], axis=1)
    )


def check_pinocchio(
    model, ids: list[int], q: np.ndarray, motion: Motion, frames: np.ndarray
) -> tuple[float, float]:
    """Max abs difference of joint and site positions and of joint rotation matrices
    between pinocchio and ours."""
    import pinocchio as pin

    sk = motion.skeleton
    p_world, q_world = forward_kinematics(
        sk, motion.root_position[frames], motion.rotations[frames]
    )
    r_world = quat.matrix_from_quat(q_world)
    data = model.createData()
    d_pos = d_rot = 0.0
    for k, f in enumerate(frames):
        pin.forwardKinematics(model, data, q[f])
        pin.updateFramePlacements(model, data)
        for j, jid in enumerate(ids):
            d_pos = max(d_pos, float(np.abs(data.oMi[jid].translation - p_world[k, j]).max()))
            d_rot = max(d_rot, float(np.abs(data.oMi[jid].rotation - r_world[k, j]).max()))
        for s, name in enumerate(sk.site_names):
            oMf = data.oMf[model.getFrameId(name)]
            d_pos = max(d_pos, float(np.abs(oMf.translation - p_world[k, sk.num_joints + s]).max()))
    return d_pos, d_rot


# -- peers' readers -------------------------------------------------------------------------


def _root_columns(skeleton: Skeleton) -> list[int]:
    """Columns of the root's X, Y, Z position channels in a frame's values."""
    chans = list(skeleton.channels[0])
    return [chans.index(f"{a}position") for a in "XYZ"]


def _peer_root_pybvh(b, sk):
    return np.asarray(b.root_pos)


def _peer_root_bvhtools(b, sk):
    return np.asarray(b.motion.frames, dtype=np.float64)[:, _root_columns(sk)]


def _peer_root_bvhsdk(a, sk):
    return np.asarray(a.root.translation, dtype=np.float64)


def _peer_root_bvhio(c, sk):
    return np.array([list(k.Position) for k in c.Root.Keyframes], dtype=np.float64)


def _read_bvh_one_thread(path: Path) -> Motion:
    """Our reader pinned to one thread (a private knob, for this benchmark only)."""
    saved = _scan.SPLIT_BYTES
    _scan.SPLIT_BYTES = 1 << 62
    try:
        return read_bvh(path)
    finally:
        _scan.SPLIT_BYTES = saved


def parse_contenders(path: Path) -> list[Contender]:
    """Ours and every peer reader (a peer that cannot import is kept, failed)."""
    out = [
        Contender(
            "parse",
            "ours",
            "retarget.io.read_bvh -> float64 quaternions (F, J, 4)",
            run=lambda: read_bvh(path),
            check="reference",
            ours=True,
        ),
        Contender(
            "parse",
            "ours, 1 thread",
            "retarget.io.read_bvh with retarget.io._scan.SPLIT_BYTES raised so the "
            "motion section is scanned in one thread (information only: files over "
            "1 MB are scanned in two threads by default, the peers use one)",
            run=lambda: _read_bvh_one_thread(path),
            ours=True,
        ),
    ]
    peers = [
        (
            "pybvh",
            "pybvh",
            "read_bvh_file",
            "pybvh.read_bvh_file -> Euler radians (F, J, 3)",
            _peer_root_pybvh,
        ),
        (
            "bvhtools",
            "bvhTools.bvhIO",
            "readBvh",
            "bvhTools.bvhIO.readBvh -> Python lists of channel values",
            _peer_root_bvhtools,
        ),
        (
            "bvhsdk",
            "bvhsdk",
            "ReadFile",
            "bvhsdk.ReadFile -> per-joint Euler degree arrays",
            _peer_root_bvhsdk,
        ),
        (
            "bvhio",
            "bvhio",
            "readAsBvh",
            "bvhio.readAsBvh -> per-keyframe glm (float32) poses",
            _peer_root_bvhio,
        ),
    ]
    for name, module, func, what, root_of in peers:
        c = Contender("parse", name, what)
        try:
            mod = importlib.import_module(module)
            reader = getattr(mod, func)
        except Exception as exc:
            c.failure = f"cannot import: {common.reason(exc)}"
        else:
            c.run = lambda reader=reader: reader(str(path))
            c.root_of = root_of
        out.append(c)
    return out


def numpy_fk(motion: Motion) -> tuple[np.ndarray, np.ndarray]:
    """Forward kinematics with numpy only: every frame at once, one tree level per step."""
    sk = motion.skeleton
    n, j = motion.num_frames, sk.num_joints
    parents = sk.point_parents
    world = np.empty((n, sk.num_points, 4))
    pos = np.empty((n, sk.num_points, 3))
    world[:, 0] = motion.rotations[:, 0]
    pos[:, 0] = motion.root_position
    for level in sk.levels[1:]:
        par = parents[level]
        pos[:, level] = pos[:, par] + quat.rotate(world[:, par], sk.point_offsets[level])
        joints, sites = level[level < j], level[level >= j]
        world[:, joints] = quat.multiply(world[:, parents[joints]], motion.rotations[:, joints])
        world[:, sites] = world[:, parents[sites]]
    return pos, world


def fk_contenders(motion: Motion, pybvh_obj, frames_check: np.ndarray) -> list[Contender]:
    sk = motion.skeleton
    n_pts = sk.num_points
    ours = Contender(
        "fk",
        "ours",
        f"retarget.core.kinematics.positions (numba) -> positions (F, {n_pts}, 3); "
        f"also computes world rotations (F, {n_pts}, 4)",
        run=lambda: positions(motion),
        check="reference",
        ours=True,
    )
    out = [ours]
    p_ours = positions(motion)

    # pybvh: its own vectorised FK on its own parse, uncached.
    c = Contender(
        "fk",
        "pybvh",
        "pybvh.frames_to_node_positions (numpy, per node) -> "
        f"positions (F, {n_pts}, 3), from Euler angles",
    )
    if pybvh_obj is None:
        c.failure = "pybvh could not read the file (see parse)"
    else:
        try:
            import pybvh

            topology = pybvh_obj.fk_topology
            root_pos, angles = pybvh_obj.root_pos, pybvh_obj.joint_angles
            c.run = lambda: pybvh.frames_to_node_positions(
                topology, root_pos=root_pos, joint_angles=angles, centered="world"
            )
            with _quiet():
                p_pybvh = np.asarray(c.run())
            # Same points by name; pybvh names an end site "EndSite" + its parent's name.
            names = [
                *sk.names,
                *(f"EndSite{sk.names[p]}" for p in sk.site_parents),
            ]
            idx = [pybvh_obj.node_index[n] for n in names]
            diff = np.abs(p_pybvh[:, idx] - p_ours)
            d_joint = float(diff[:, : sk.num_joints].max())
            d_all = float(diff.max())
            agree = d_all <= 1e-9
            c.check = (
                f"{'agrees' if agree else 'DISAGREES'} with ours on all {motion.num_frames} "
                f"frames: max abs difference {d_joint:.2e} {sk.unit} (joints), "
                f"{d_all:.2e} {sk.unit} (joints + sites)"
                # pybvh puts the root at its position channels and ignores its OFFSET, as we do;
                # it has no position channels on other joints (ours may animate them).
                + (
                    ""
                    if agree
                    else "; pybvh ignores the root OFFSET and non-root position "
                    "channels: check the file's conventions"
                )
            )
        except Exception as exc:
            c.failure = common.reason(exc)
    out.append(c)

    # numpy: the same algorithm array-at-a-time (one level of the tree per step),
    # the best numpy formulation we found; it backs the numba choice in kinematics.py.
    c = Contender(
        "fk",
        "numpy (same algorithm)",
        "retarget.core.quat, level by level over all frames -> "
        f"positions (F, {n_pts}, 3) and world rotations (F, {n_pts}, 4)",
    )
    c.run = lambda: numpy_fk(motion)
    diff = float(np.abs(numpy_fk(motion)[0] - p_ours).max())
    verdict = "agrees" if diff <= 1e-9 else "DISAGREES"
    c.check = f"{verdict} with ours: max abs difference {diff:.2e} {sk.unit}"
    out.append(c)

    # pinocchio: forwardKinematics per frame on the same tree.
    c = Contender(
        "fk",
        "pinocchio loop",
        "for q_f in q: pinocchio.forwardKinematics(model, data, "
        f"q_f) -> data.oMi (SE3 of {sk.num_joints} joints)",
    )
    try:
        import pinocchio as pin

        model, ids = pinocchio_model(sk)
        data = model.createData()
        q = q_pinocchio_from_motion(motion)
        d_pos, d_rot = check_pinocchio(model, ids, q, motion, frames_check)
        agree = d_pos <= TOL_PINOCCHIO and d_rot <= TOL_PINOCCHIO
        c.check = (
            f"{'equals' if agree else 'DIFFERS FROM'} ours on frames "
            f"{', '.join(map(str, frames_check))}: max abs difference {d_pos:.2e} {sk.unit} "
            f"(joint and site positions), {d_rot:.2e} (joint rotation matrices); "
            f"tolerance {TOL_PINOCCHIO:g}"
        )
        if not agree:
            c.failure = f"not timed: {c.check}"
        else:
            forward = pin.forwardKinematics

            def loop() -> None:
                for q_f in q:
                    forward(model, data, q_f)

            c.run = loop
    except Exception as exc:
        c.failure = common.reason(exc)
    out.append(c)
    return out


# -- the run ---------------------------------------------------------------------------------


def warm_up(contenders: list[Contender]) -> dict[str, object]:
    """Run each once; keep the results of the parse group by name."""
    return {f"{c.group}:{c.name}": out for c, _, out in common.attempts(contenders, _timed)}


def check_parse(contenders: list[Contender], results: dict[str, object], motion: Motion) -> None:
    """Frame count and root positions of each peer's read against ours."""
    one = next((c for c in contenders if c.name == "ours, 1 thread" and c.ok), None)
    if one is not None:
        m1 = results["parse:ours, 1 thread"]
        same = (
            isinstance(m1, Motion)
            and np.array_equal(m1.rotations, motion.rotations)
            and (np.array_equal(m1.root_position, motion.root_position))
        )
        one.check = "same motion as ours, bit for bit" if same else "DIFFERS from ours"
    for c in contenders:
        if c.group != "parse" or c.root_of is None or not c.ok:
            continue
        try:
            root = c.root_of(results[f"parse:{c.name}"], motion.skeleton)
            n = len(root)
            d = np.nan
            if n == motion.num_frames:
                d = float(np.abs(root - motion.root_position).max())
            c.check = f"{n} frames read; root positions differ from ours by at most {d:.1e}"
        except Exception as exc:
            c.check = f"could not compare: {common.reason(exc)}"


def measure(contenders: list[Contender], repeats: int) -> None:
    """Time the live contenders ``repeats`` times each; their samples are all that is kept."""
    for _ in common.round_robin(contenders, repeats, _timed, progress=False):
        pass


def machine_info() -> list[str]:
    return [
        common.cpu_line(),
        common.platform_line(),
        f"- versions: {common.versions(DISTRIBUTIONS)}",
    ]


def _ratio_text(peer: Contender, ours: Contender) -> tuple[float, str]:
    ratio, lo, hi = common.paired_ratio(peer.samples, ours.samples)
    return ratio, f"{ratio:.1f}x (per-round {lo:.1f}-{hi:.1f}x)"


def report(contenders: list[Contender], n_frames: int, path: Path, repeats: int) -> list[str]:
    lines = [
        f"# BVH parse and forward kinematics: `{path.name}` ({n_frames} frames)",
        "",
        common.protocol_line("io_kinematics.py", repeats),
        "",
        *machine_info(),
        "",
    ]
    goals: list[tuple[str, bool | None, str]] = []
    titles = [("parse", "Parse (warm file cache)"), ("fk", f"FK, all {n_frames} frames")]
    for group, title in titles:
        rows = [c for c in contenders if c.group == group]
        ours = next(c for c in rows if c.name == "ours")
        lines += [
            f"## {title}",
            "",
            "| contender | median ms | p10 ms | p90 ms | frames/s | ours faster by |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for c in rows:
            if not c.ok or not c.samples:
                lines.append(f"| {c.name} | failed | | | | |")
                continue
            speed = "—" if c.ours or not ours.ok else _ratio_text(c, ours)[1]
            ms = common.timing_cells(c.samples, n_frames, scale=1e3, digits=2)
            lines.append(common.row([c.name, *ms, speed]))
        lines.append("")
        for c in rows:
            status = c.check if c.ok else f"FAILED: {c.failure}"
            lines.append(f"- {c.name}: `{c.what}`; {status}")
        lines.append("")
        peers = [c for c in rows if not c.ours and c.ok and c.samples]
        if group == "parse":
            if peers and ours.ok:
                fastest = min(peers, key=lambda c: c.percentiles()[1])
                ratio, text = _ratio_text(fastest, ours)
                goals.append(
                    (
                        f"parse ≥ {GOAL_PARSE:g}x faster than the fastest peer ({fastest.name})",
                        ratio >= GOAL_PARSE,
                        text,
                    )
                )
                one = next((c for c in rows if c.name == "ours, 1 thread"), None)
                if one is not None and one.ok and one.samples:
                    ratio1, text1 = _ratio_text(fastest, one)
                    goals.append(
                        (
                            f"(information) parse, ours in one thread, vs {fastest.name}",
                            ratio1 >= GOAL_PARSE,
                            text1,
                        )
                    )
            else:
                goals.append(
                    (
                        f"parse ≥ {GOAL_PARSE:g}x faster than the fastest peer",
                        None,
                        "no peer or ours could run",
                    )
                )
        else:
            for name, goal in [("pybvh", GOAL_FK_PYBVH), ("pinocchio loop", GOAL_FK_PINOCCHIO)]:
                peer = next((c for c in peers if c.name == name), None)
                label = f"FK ≥ {goal:g}x faster than {name}"
                if peer is None or not ours.ok:
                    goals.append((label, None, f"{name} could not run"))
                else:
                    ratio, text = _ratio_text(peer, ours)
                    goals.append((label, ratio >= goal, text))
    lines += ["## Goals (ratio of medians)", ""]
    for label, met, text in goals:
        verdict = {True: "MET", False: "NOT MET", None: "UNKNOWN"}[met]
        lines.append(f"- {label}: **{verdict}** — {text}")
    lines += common.could_not_run(contenders, lambda c: f"{c.group} / {c.name}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(__doc__, 15, argv)
    path, motion = common.read_clip()
    n = motion.num_frames
    parse = parse_contenders(path)
    results = warm_up(parse)
    check_parse(parse, results, motion)
    frames_check = np.unique(np.linspace(0, n - 1, 6).astype(int))
    fk = fk_contenders(motion, results.get("parse:pybvh"), frames_check)
    results.clear()  # the peers' parsed objects are large
    everything = parse + fk
    warm_up(fk)
    measure(everything, args.repeats)

    common.publish(report(everything, n, path, args.repeats), "io_kinematics", not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
