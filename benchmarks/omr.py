"""Online retargeting (Choi & Ko 2000) of a long walk: frames per second, one core.

What is measured, on ``lafan_walk.bvh`` (22 joints + 5 end sites, 7184 frames
at 30 fps, cm; from ``$RETARGET_DATA``, default ``../shared/data`` beside the
project), each contender retargeting the whole clip frame by frame:

1. **omr lower** -- :func:`retarget.methods.omr.omr_retarget` ``(walk, blubby)``
   with its defaults: the paper's walking set-up (30 DOF: the root's
   translation and rotation, hips, knees, ankles, toes; end-effectors the toe
   tips and the pelvis x, z), with our foot holds (the stance foot as the
   base), heel and foot-orientation rows at a second priority level, and two
   rate-control steps per frame (§3.1's correction). ``blubby`` is
   :func:`retarget.humanoid.characters.make_character` ``(walk.skeleton, preset="blubby")``.
2. **omr full** -- the same call onto ``sally`` with ``setup="full"``: every
   joint moves (69 DOF) and the hand tips are end-effectors too.
3. **omr lower, iterations=1** -- contender 1 with ``iterations=1``: the
   paper's plain update (the error estimated from the last frame), no §3.1
   correction.
4. **pinocchio loop** (the peer) -- the same closed-loop inverse rate control
   written in Python over the C++ kinematics of pinocchio, on the same
   lower-body problem: the model of ``blubby`` is ``pinocchio_model`` from
   ``benchmarks/io_kinematics.py`` (free-flyer root, spherical joints, end
   sites as frames) and the source pose ``q_src`` is
   ``q_pinocchio_from_motion`` of the pose contender 1 imitated with the
   paper's goals (the source's rotations, its root where the source's is, the
   root's height above the floor scaled by the ratio of leg lengths; since
   issue 24 contender 1's default goals shorten the stride to ``blubby``'s
   legs and stand its pelvis where its legs reach, so its toe tips are far
   from the source's over the walk and the peer solves a problem of the same
   size, not the same problem). Per frame: one
   ``pin.computeJointJacobians`` (forward kinematics and joint Jacobians),
   ``pin.updateFramePlacement`` and ``pin.getFrameJacobian`` (LOCAL_WORLD_ALIGNED)
   of the two toe-tip frames, ``pin.getJointJacobian`` of the root for the
   pelvis x, z rows (8 rows), then eq. 21 with ``K1 = K2 = I`` as one step,
   ``dq = J⁺(x_goal − f(q)) + (I − J⁺J)(q_src ⊖ q)``, with ``q_src ⊖ q`` from
   ``pin.difference`` and the step applied by ``pin.integrate``, over the same
   30 columns of the tangent space (free flyer + hips, knees, ankles, toes; the
   other joints copy the source). ``J⁺`` is the damped least-squares inverse,
   ``Jᵀ(JJᵀ + λ²I)⁻¹``, with lengths and the root translation measured in the
   character's height and ``λ = 0.01`` height, as ours. The goals are the
   source's toe tips and pelvis x, z, unscaled, as in the paper. The first
   frame takes 20 steps toward its goals from the source pose, as our filter's
   ``reset`` does. It does **not** hold a stance foot, track heels or foot
   orientations, use priorities, weigh the root's rigidity, clamp the input
   or lower the gains near singularities, and takes one step per frame: it is
   the bare algorithm on a C++ kinematics library, the floor of what a Python
   loop over pinocchio costs, not a replacement for ours. Its inputs (model,
   ``q_src``, goals) are built outside the timed region; ours build theirs
   inside (roles, forward kinematics of the source, goals): the table also
   gives the frames/s of ours' per-frame loop alone (``report["frames_per_second"]``).
   Before timing, the script checks that pinocchio's forward kinematics of
   ``q_src`` on ``blubby`` equals ours, and the loop's output is checked for
   NaN.

For context only (not measured here) the table shows the paper's rates on its
machine: 300.7 Hz for the 30-DOF walking set-up with 8 constraint DOF, and
138.2 Hz for the 42-DOF bat swing. The goals (from the issue): contender 1 at
least 3000 frames/s and contender 2 at least 1500 frames/s.

Quality, beside the speed (from the warm-up run; every timed repeat's motion
is compared with it): the toe tips' tracking error from
``result.report["tracking_error"]`` (cm; the distance from the goals the filter
tracked, which are held points while a foot is the base), the toe tips'
distance from the source's toe tips (cm; for every contender, the peer
included), and :func:`retarget.humanoid.metrics.evaluate` ``(walk, result.motion,
goals=result.goals)``: skate of the result against the source's, and
smoothness. The amplitudes (5th to 95th percentile over the clip) of the left
and right hip, knee and ankle angles about their main axes
(:func:`retarget.humanoid.metrics.joint_angles`, on the source's axes), source against
result, and, when saving, the Figure-10 plot of the lower-body result
(:func:`retarget.viz.plot_joint_angles`) to
``benchmarks/results/YYYY-MM-DD-omr-joint-angles.png``.

Single core: the script sets ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS`` and ``NUMBA_NUM_THREADS`` to 1 before numpy is imported
(the paper's figures are one CPU's; a small-matrix loop gains nothing from
threads).

Protocol: each contender runs once to warm up (numba JIT, imports, caches),
then N times (``--repeats``, default 5) in round-robin order, the starting
contender rotating every round, so that the noise of a shared machine falls on
all alike; garbage is collected before every timed call and inputs are built
outside the timed region. The table gives median and p10/p90 in seconds,
frames/s = 7184 / median, and time ratios of medians against contender 1 and
against the pinocchio loop (with p10-p90 of the per-round ratios, which pair
calls made seconds apart). It is printed as Markdown and appended to
``benchmarks/results/YYYY-MM-DD-omr.md`` (one file a day holds that day's runs:
quote the medians of several).

Run: ``make bench`` or ``.venv/bin/python benchmarks/omr.py --repeats 5``.
"""

# ruff: noqa: E402  (the thread variables must be set before numpy is imported)

from __future__ import annotations

import os

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)
for _variable in THREAD_VARIABLES:
    os.environ[_variable] = "1"

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as common
import numpy as np
from io_kinematics import check_pinocchio, pinocchio_model, q_pinocchio_from_motion

from retarget.core.kinematics import positions
from retarget.core.motion import Motion
from retarget.core.skeleton import Skeleton
from retarget.humanoid.characters import make_character
from retarget.humanoid.contacts import UP
from retarget.humanoid.metrics import evaluate, joint_angles
from retarget.humanoid.roles import find_roles, leg_length
from retarget.humanoid.roles import height as character_height
from retarget.methods.omr import omr_retarget

GOAL_LOWER_FPS = 3000.0  # contender 1, omr lower onto blubby
GOAL_FULL_FPS = 1500.0  # contender 2, omr full onto sally
PAPER_LOWER_HZ = 300.7  # Choi & Ko 2000: 30 DOF, 8 constraint DOF, their machine
PAPER_BAT_HZ = 138.2  # Choi & Ko 2000: 42-DOF bat swing, their machine
LOWER, FULL, ONE, PIN = "omr lower", "omr full", "omr lower, iterations=1", "pinocchio loop"
PIN_DAMPING = 0.01  # heights, as omr_retarget's default
PIN_SETTLE = 20  # steps on the first frame, as OnlineRetargeter's (reset(settle=...))
TOL_PINOCCHIO = 1e-9
TOES = ("left_toe_tip", "right_toe_tip")
AMPLITUDE_ROLES = ("hip", "knee", "ankle")
DISTRIBUTIONS = ("retarget", "numpy", "numba", "pin", "matplotlib")


def _reason(exc: BaseException) -> str:
    """:func:`_common.reason`, the file given by its path in the project."""
    return common.reason(exc, common.PROJECT_ROOT)


# -- the pinocchio peer -----------------------------------------------------------------------


@dataclass
class PinocchioProblem:
    """The lower-body problem of contender 1, in pinocchio's terms."""

    model: Any
    data: Any
    q_src: np.ndarray  # (F, nq): the pose to imitate
    goals: np.ndarray  # (F, 8): left toe tip, right toe tip, pelvis x, z
    toe_frames: tuple[int, int]  # frame ids of the toe-tip end sites
    root_joint: int  # pinocchio joint id of the root (the pelvis)
    columns: np.ndarray  # (30,) tangent (v) indices that move
    copied: np.ndarray  # q indices of the joints that copy the source
    height: float  # the character's height, file unit
    damping: float


def source_pose(source: Motion, target: Skeleton) -> Motion:
    """The pose contender 1 imitates (``θ_src`` of :func:`omr_retarget`, unscaled): the
    source's rotations by name, its root where the source's is, the root's height above
    the floor scaled by the ratio of leg lengths."""
    roles_s, roles_t = find_roles(source.skeleton), find_roles(target)
    feet = [roles_s[f"{s}_{r}"] for s in ("left", "right") for r in ("ankle", "toe", "toe_tip")]
    floor = float(positions(source)[0, feet, UP].min())
    rotations = np.tile([1.0, 0.0, 0.0, 0.0], (source.num_frames, target.num_joints, 1))
    rotations[:, target.indices(source.skeleton.names)] = source.rotations
    root = source.root_position.copy()
    ratio = leg_length(target, roles_t) / leg_length(source.skeleton, roles_s)
    root[:, UP] = floor + ratio * (source.root_position[:, UP] - floor)
    return Motion(target, root, rotations, source.fps)


def pinocchio_problem(source: Motion, target: Skeleton) -> tuple[PinocchioProblem, str]:
    """The peer's inputs, and how pinocchio's FK of ``q_src`` compares with ours."""
    model, ids = pinocchio_model(target)
    roles_s, roles_t = find_roles(source.skeleton), find_roles(target)
    pose = source_pose(source, target)
    q_src = q_pinocchio_from_motion(pose)
    frames = np.unique(np.linspace(0, source.num_frames - 1, 6).astype(int))
    d_pos, d_rot = check_pinocchio(model, ids, q_src, pose, frames)
    agree = d_pos <= TOL_PINOCCHIO and d_rot <= TOL_PINOCCHIO
    check = (
        f"pinocchio's forward kinematics of q_src on the target "
        f"{'equals' if agree else 'DIFFERS FROM'} ours on frames "
        f"{', '.join(map(str, frames))}: max abs difference {d_pos:.1e} {target.unit} "
        f"(joint and site positions), {d_rot:.1e} (rotation matrices)"
    )
    if not agree:
        raise RuntimeError(check)
    pos_s = positions(source)
    goals = np.concatenate(
        [pos_s[:, roles_s[t]] for t in TOES] + [source.root_position[:, [0, 2]]], axis=1
    )
    moving = [
        roles_t[f"{s}_{r}"]
        for s in ("left", "right")
        for r in ("hip", "knee", "ankle", "toe")
        if f"{s}_{r}" in roles_t.points and roles_t[f"{s}_{r}"] < target.num_joints
    ]
    columns = list(range(6))  # the free flyer
    copied = []
    for j in range(1, target.num_joints):
        joint = model.joints[ids[j]]
        if j in moving:
            columns += range(joint.idx_v, joint.idx_v + joint.nv)
        else:
            copied += range(joint.idx_q, joint.idx_q + joint.nq)
    toe_frames = tuple(model.getFrameId(target.point_names[roles_t[t]]) for t in TOES)
    problem = PinocchioProblem(
        model=model,
        data=model.createData(),
        q_src=q_src,
        goals=goals,
        toe_frames=(toe_frames[0], toe_frames[1]),
        root_joint=ids[0],
        columns=np.asarray(columns, dtype=np.intp),
        copied=np.asarray(copied, dtype=np.intp),
        height=character_height(target, roles_t),
        damping=PIN_DAMPING,
    )
    return problem, check


def pinocchio_rate_control(p: PinocchioProblem) -> np.ndarray:
    """Closed-loop inverse rate control over pinocchio, frame by frame: configurations (F, nq).

    Per step, with ``J`` (8 x 30) the toe tips' and the pelvis x, z rows of the
    moving columns, and ``s = q_src ⊖ q``: ``dq = s + J⁺(x_goal − f(q) − J s)``,
    which is ``J⁺ e + (I − J⁺J) s`` (eq. 21, ``K1 = K2 = I``), ``J⁺`` the damped
    least-squares inverse; lengths and the root translation in heights.
    """
    import pinocchio as pin

    model, data, h = p.model, p.data, p.height
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    jacobians, frame_jacobian = pin.computeJointJacobians, pin.getFrameJacobian
    joint_jacobian, placement = pin.getJointJacobian, pin.updateFramePlacement
    difference, integrate = pin.difference, pin.integrate
    left, right = p.toe_frames
    root = p.root_joint
    cols, copied = p.columns, p.copied
    # columns: root translation in heights (x h), rows: lengths in heights (/ h)
    col_scale = np.ones(len(cols))
    col_scale[:3] = h
    col_scale /= h
    lam2 = np.eye(8) * p.damping**2
    v = np.zeros(model.nv)
    x = np.empty(8)
    jac = np.empty((8, model.nv))

    def step(q: np.ndarray, q_src: np.ndarray, goal: np.ndarray) -> np.ndarray:
        jacobians(model, data, q)
        x[0:3] = placement(model, data, left).translation
        x[3:6] = placement(model, data, right).translation
        x[6:8] = data.oMi[root].translation[[0, 2]]
        jac[0:3] = frame_jacobian(model, data, left, lwa)[:3]
        jac[3:6] = frame_jacobian(model, data, right, lwa)[:3]
        jac[6:8] = joint_jacobian(model, data, root, lwa)[[0, 2]]
        j = jac[:, cols] * col_scale
        e = (goal - x) / h
        s = difference(model, q, q_src)[cols]
        s[:3] /= h
        d = s + j.T @ np.linalg.solve(j @ j.T + lam2, e - j @ s)
        d[:3] *= h
        v[cols] = d
        q = integrate(model, q, v)
        q[copied] = q_src[copied]
        return q

    out = np.empty_like(p.q_src)
    q = p.q_src[0].copy()
    for _ in range(PIN_SETTLE):
        q = step(q, p.q_src[0], p.goals[0])
    out[0] = q
    for f in range(1, len(out)):
        q = step(q, p.q_src[f], p.goals[f])
        out[f] = q
    return out


def motion_from_q(q: np.ndarray, target: Skeleton, fps: float) -> Motion:
    """The inverse of ``q_pinocchio_from_motion``: quaternions back to (w, x, y, z)."""
    rot = q[:, 3:].reshape(len(q), target.num_joints, 4)[..., [3, 0, 1, 2]]
    return Motion(target, q[:, :3].copy(), rot, fps)


# -- contenders -------------------------------------------------------------------------------


@dataclass
class Contender:
    """One timed call: ``run()`` retargets the whole clip once and returns its motion."""

    name: str
    what: str
    character: str
    run: Callable[[], tuple[Motion, dict]] | None = None
    ours: bool = True
    failure: str | None = None
    check: str = ""
    samples: list[float] = field(default_factory=list)  # seconds, whole call
    loop_fps: list[float] = field(default_factory=list)  # ours: report["frames_per_second"]
    reference: Motion | None = None  # the warm-up's motion
    goals: dict[str, np.ndarray] = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    measures: dict[str, float] = field(default_factory=dict)
    toe_tracking: tuple[float, float] | None = None  # report: mean, max cm
    toe_source: tuple[float, float] | None = None  # from the source's toe tips: mean, max cm
    max_drift: float = 0.0  # largest difference of a timed run's motion from the warm-up's

    @property
    def ok(self) -> bool:
        return self.failure is None and self.run is not None

    def percentiles(self) -> tuple[float, float, float]:
        return common.percentiles(self.samples)


def _ours(source: Motion, target: Skeleton, **kwargs) -> Callable[[], tuple[Motion, dict]]:
    def run() -> tuple[Motion, dict]:
        result = omr_retarget(source, target, **kwargs)
        return result.motion, {"report": dict(result.report), "goals": dict(result.goals)}

    return run


def contenders(source: Motion) -> list[Contender]:
    blubby = make_character(source.skeleton, preset="blubby")
    sally = make_character(source.skeleton, preset="sally")
    out = [
        Contender(
            LOWER,
            "retarget.methods.omr.omr_retarget(walk, blubby) (defaults: setup='lower', "
            "iterations=2)",
            "blubby",
            run=_ours(source, blubby),
        ),
        Contender(
            FULL,
            "retarget.methods.omr.omr_retarget(walk, sally, setup='full')",
            "sally",
            run=_ours(source, sally, setup="full"),
        ),
        Contender(
            ONE,
            "retarget.methods.omr.omr_retarget(walk, blubby, iterations=1)",
            "blubby",
            run=_ours(source, blubby, iterations=1),
        ),
    ]
    peer = Contender(
        PIN,
        "pinocchio_rate_control(problem): per frame pin.computeJointJacobians, "
        "pin.getFrameJacobian (2 toe tips, LOCAL_WORLD_ALIGNED), pin.getJointJacobian "
        "(pelvis x, z), DLS step with the null-space projection of pin.difference(q, q_src), "
        "pin.integrate; 30 DOF, 8 rows, 1 step per frame",
        "blubby",
        ours=False,
    )
    try:
        problem, peer.check = pinocchio_problem(source, blubby)
    except Exception as exc:
        peer.failure = _reason(exc)
    else:

        def run_peer() -> tuple[Motion, dict]:
            q = pinocchio_rate_control(problem)
            return motion_from_q(q, blubby, source.fps), {"q": q}

        peer.run = run_peer
    out.append(peer)
    return out


def _toe_distance(source: Motion, motion: Motion) -> tuple[float, float]:
    """Mean and max distance (file unit) of the result's toe tips from the source's."""
    roles_s, roles_r = find_roles(source.skeleton), find_roles(motion.skeleton)
    p_s = positions(source)[:, [roles_s[t] for t in TOES]]
    p_r = positions(motion)[:, [roles_r[t] for t in TOES]]
    d = np.linalg.norm(p_r - p_s, axis=-1)
    return float(d.mean()), float(d.max())


def warm_up(cs: list[Contender], source: Motion) -> None:
    """Run each once (JIT, caches); keep its motion, report and measures."""
    roles_s = find_roles(source.skeleton)
    for c, _, (motion, extra) in common.attempts(cs, why=_reason):
        if not (np.isfinite(motion.root_position).all() and np.isfinite(motion.rotations).all()):
            c.failure = "the motion has NaN or infinite values"
            continue
        c.reference = motion
        c.report = extra.get("report", {})
        if c.ours:
            c.goals = extra["goals"]
            per = c.report["tracking_error"]
            c.toe_tracking = (
                float(np.mean([per[t]["mean"] for t in TOES])),
                float(max(per[t]["max"] for t in TOES)),
            )
        else:
            names = [source.skeleton.point_names[roles_s[t]] for t in TOES]
            pos_s = positions(source)
            c.goals = {n: pos_s[:, roles_s[t]] for n, t in zip(names, TOES, strict=True)}
            c.check += f"; ran all {len(extra['q'])} frames without NaN"
        c.toe_source = _toe_distance(source, motion)
        if not c.ours:
            c.toe_tracking = c.toe_source  # its goals are the source's toe tips
        c.measures = evaluate(source, motion, goals=c.goals or None)
        print(f"  warm-up {c.name} done", file=sys.stderr)


def measure(cs: list[Contender], repeats: int) -> None:
    for c, (motion, extra) in common.round_robin(cs, repeats, why=_reason):
        fps = extra.get("report", {}).get("frames_per_second")
        if fps:
            c.loop_fps.append(float(fps))
        if c.reference is not None:
            c.max_drift = max(c.max_drift, common.max_difference(motion, c.reference))


def amplitudes(source: Motion, results: list[tuple[str, Motion]]) -> list[str]:
    """Markdown rows: 5th-95th percentile of the hip, knee and ankle angles, degrees."""
    sk = source.skeleton
    roles = find_roles(sk)
    src = np.degrees(joint_angles(source.rotations)[0])
    angles = []
    for _, m in results:
        cols = m.skeleton.indices(sk.names)
        angles.append(np.degrees(joint_angles(m.rotations[:, cols], reference=source.rotations)[0]))

    def amp(a: np.ndarray) -> float:
        return float(np.percentile(a, 95) - np.percentile(a, 5))

    lines = [
        "| joint | source ° | " + " | ".join(f"{label} °" for label, _ in results) + " |",
        "|---|---:|" + "---:|" * len(results),
    ]
    for side in ("left", "right"):
        for role in AMPLITUDE_ROLES:
            j = roles[f"{side}_{role}"]
            cells = [f"{amp(a[:, j]):.1f}" for a in angles]
            lines.append(
                f"| {side} {role} (`{sk.names[j]}`) | {amp(src[:, j]):.1f} | "
                + " | ".join(cells)
                + " |"
            )
    return lines


# -- the report -------------------------------------------------------------------------------


def machine_info() -> list[str]:
    """Called at the start of the run, with the code that is imported and timed."""
    threads = ", ".join(f"{v}={os.environ.get(v, '?')}" for v in THREAD_VARIABLES)
    return [
        common.cpu_line(),
        common.platform_line(),
        f"- single core: {threads}, set by this script before numpy is imported",
        f"- versions: {common.versions(DISTRIBUTIONS)}; commit {common.commit(digest=True)} "
        "(at the start of the run)",
    ]


def _ratio_text(c: Contender, ref: Contender) -> str:
    return common.ratio_text(c.samples, ref.samples, 2)


def _goal_line(label: str, c: Contender | None, goal: float, n: int) -> str:
    text = f"{label} ≥ {goal:,.0f} frames/s"
    if c is None or not c.ok or not c.samples:
        return f"- {text}: **UNKNOWN** — could not run"
    p10, p50, p90 = c.percentiles()
    fps = n / p50
    verdict = "MET" if fps >= goal else "NOT MET"
    loop = f"; its per-frame loop alone {np.median(c.loop_fps):,.0f}" if c.loop_fps else ""
    return (
        f"- {text}: **{verdict}** — {fps:,.0f} frames/s (per-run {n / p90:,.0f}-"
        f"{n / p10:,.0f}, p90-p10 of the times; {fps / goal:.2f}x the goal){loop}"
    )


def report(
    cs: list[Contender],
    source: Motion,
    path: Path,
    repeats: int,
    figure: Path | None,
    machine: list[str],
) -> list[str]:
    n = source.num_frames
    by_name = {c.name: c for c in cs}
    ref, peer = by_name[LOWER], by_name[PIN]
    lines = [
        f"# Online retargeting (Choi & Ko 2000): `{path.name}` ({n} frames)",
        "",
        common.protocol_line("omr.py", repeats),
        "",
        *machine,
        "",
        "## Speed (whole clip, one core)",
        "",
        "| contender | character | median s | p10 s | p90 s | frames/s | "
        "loop-only frames/s | time / omr lower | time / pinocchio loop |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cs:
        if not c.ok or not c.samples:
            lines.append(f"| {c.name} | {c.character} | failed | | | | | | |")
            continue
        loop = f"{np.median(c.loop_fps):,.0f}" if c.loop_fps else "—"
        vs_ref = "—" if c is ref or not (ref.ok and ref.samples) else _ratio_text(c, ref)
        vs_peer = "—" if c is peer or not (peer.ok and peer.samples) else _ratio_text(c, peer)
        times = common.timing_cells(c.samples, n)
        lines.append(common.row([c.name, c.character, *times, loop, vs_ref, vs_peer]))
    lines += [
        f"| (paper) Choi & Ko 2000, walking: 30 DOF, 8 constraint DOF, their machine "
        f"(not measured here) | | | | | {PAPER_LOWER_HZ} | | | |",
        f"| (paper) Choi & Ko 2000, bat swing: 42 DOF, their machine (not measured here) "
        f"| | | | | {PAPER_BAT_HZ} | | | |",
        "",
        "loop-only frames/s: ours' `report['frames_per_second']`, the per-frame filter "
        "steps without the set-up (roles, the source's forward kinematics, goals) that the "
        "whole call includes; the pinocchio loop's inputs are built outside its timed call, "
        "so its frames/s compares with this column. Ratios are of medians (a ratio above 1: "
        "slower than the reference).",
        "",
    ]
    for c in cs:
        status = "" if c.ok else f"; FAILED: {c.failure}"
        check = f"; {c.check}" if c.check else ""
        lines.append(f"- {c.name}: `{c.what}`{check}{status}")
    lines.append("")

    # quality
    lines += [
        "## Quality of the result (warm-up run)",
        "",
        "| contender | toe tracking mean cm | toe tracking max cm | toe tips from source's "
        "mean cm | toe tips from source's max cm | skate % h/s | skate source % h/s | "
        "skate ratio | smoothness | same motion every repeat |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cs:
        if c.reference is None:
            lines.append(f"| {c.name} | failed | | | | | | | | |")
            continue
        m = c.measures
        tt = c.toe_tracking or (None, None)
        ts = c.toe_source or (None, None)
        same = (
            "—"
            if not c.samples
            else "yes"
            if c.max_drift == 0.0
            else f"NO (max abs difference {c.max_drift:.1e})"
        )
        keys = ("skate_result", "skate_source", "skate_ratio", "smoothness")
        cells = [common.fmt(x) for x in (*tt, *ts, *(m.get(k) for k in keys))]
        lines.append(common.row([c.name, *cells, same]))
    lines += [
        "",
        "toe tracking: ours from `result.report['tracking_error']` (left and right toe tips: "
        "the mean of their means, the larger max), the distance from the goals the filter "
        "tracked — the source's toe tips while a foot swings, the point where it is held "
        "while it is the base; the pinocchio loop's goals are always the source's toe tips, "
        "so its two pairs of columns are the same. toe tips from source's: every "
        "contender's distance from the source's (unscaled) toe tips, all frames. skate: "
        "mean horizontal speed of foot points over the source's contact frames, % of the "
        "character's height per second (`retarget.humanoid.metrics.evaluate`; ratio to the "
        "source's); smoothness: mean squared jerk of joint positions, result over source "
        "(1 = no new high frequencies).",
        "",
    ]
    # Figure 10
    results = [
        (f"{c.character} ({c.name})", c.reference) for c in (ref, peer) if c.reference is not None
    ]
    if results:
        lines += [
            "## Joint-angle amplitudes (Figure 10)",
            "",
            "5th to 95th percentile over the clip of each joint's angle about its main axis "
            "(`retarget.humanoid.metrics.joint_angles`, on the source's axes).",
            "",
            *amplitudes(source, results),
            "",
        ]
        if figure is not None:
            lines += [f"Figure: [`{figure.name}`]({figure.name}) (left leg, first 8 s).", ""]

    # goals
    lines += [
        "## Goals (medians)",
        "",
        _goal_line(f"omr lower, `{path.name}` → `blubby`", ref, GOAL_LOWER_FPS, n),
        _goal_line(f"omr full, `{path.name}` → `sally`", by_name[FULL], GOAL_FULL_FPS, n),
    ]
    lines += common.could_not_run(cs, lambda c: c.name)
    return lines


def main(argv: list[str] | None = None) -> int:
    args = common.parse_args(__doc__, 5, argv)
    machine = machine_info()
    path, source = common.read_clip()
    cs = contenders(source)
    print(f"warming up {len(cs)} contenders ...", file=sys.stderr)
    warm_up(cs, source)
    measure(cs, args.repeats)

    figure = None
    lower = next(c for c in cs if c.name == LOWER)
    if not args.no_save and lower.reference is not None:
        from retarget.viz import plot_joint_angles

        figure = common.results_path("omr-joint-angles.png")
        plot_joint_angles(source, [("blubby (omr)", lower.reference)], figure, start=4.0)
        print(f"wrote {figure.relative_to(common.PROJECT_ROOT)}", file=sys.stderr)

    common.publish(report(cs, source, path, args.repeats, figure, machine), "omr", not args.no_save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
