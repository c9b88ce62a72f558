"""The physically based retargeting filter (Tak & Ko 2005): frames per second, one process.

On ``lafan_walk.bvh`` frames 100-700 (22 joints, 30 fps; ``$RETARGET_DATA``,
default ``../shared/data``), the wide-steps goals (feet 15 % of height outward):

1. **kinematic filtering** (1K): the footplants; the state holds the root and
   the joints the feet hang from (30 of the skeleton's 69 DOFs: the others'
   sigma points could not change the result, see :mod:`retarget.physics.filter`),
   three iterated updates per frame, and the paper's single update;
2. **dynamic filtering** (1D): 27 DOFs (wrists, elbows, ankles, neck out),
   balance and footplants, with the least-squares filter;
3. **online** (:mod:`retarget.online.physics`): one dynamic application of the paper's
   form scanning the frames, with its lag;
4. **UKF update**, ours (all frames' sigma points in one call) against
   filterpy's ``UnscentedKalmanFilter.update`` (one frame at a time, the
   measurement function once per sigma point), 66 states, 12 measurements;
5. **inverse dynamics**, ours batched over frames against pinocchio's ``rnea``
   called once per frame from Python, on the same model.

6. **the two forms side by side** (``form="curve"``, the default, and ``"paper"``,
   §§5–6 as printed) on the issue's scenarios, each run once, its quality and
   frames/s in one table: wide steps (frames 100-360, feet 15 % out, 2D+1K), 8 kg
   in the right hand (frames 100-220, 1D), torque limits at 80 % of the source's
   peak at a hip and a knee (frames 100-360, 2D+1K), the synthetic jump of the tests
   (the root lifted 20 cm over 30 of 120 walking frames, a knot every second frame,
   2D+1K) and CMU 01_01's forward jumps (``real/01_01.amc``, its first 600 frames
   taken every 4th, 30 Hz as the paper's clips, a knot every second frame, 3D+1K
   as its jump kick: at 120 Hz the second differences of the measures are the
   capture's noise, and the source's own ZMP is outside on 77 % of its support
   frames), and 30 kg in the right hand on the first 900 frames (1K+3D+1K).

Medians of ``--repeats`` runs (3); the table is printed and appended to
``benchmarks/results/YYYY-MM-DD-physics.md`` (not with ``--no-save``). The paper: 150 frames/s
kinematic, 10-15 dynamic (Pentium 4); the issue's goals 5000 and 500.
"""

from __future__ import annotations

import datetime
import statistics

import _common as common
import numpy as np

from retarget import Motion, detect_contacts, read_bvh
from retarget.core import quat
from retarget.core.frames import PoseFrame
from retarget.filters import unscented_update
from retarget.humanoid.metrics import evaluate
from retarget.online.physics import OnlinePhysicsFilter
from retarget.physics import body_model
from retarget.physics.dynamics import inverse_dynamics
from retarget.physics.filter import (
    FilterSettings,
    PhysicsGoals,
    footplant_goals,
    physics_filter,
    physics_measures,
)


def _ukf_problem(batch: int, n: int = 66, m: int = 12):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(m, n)) / np.sqrt(n)
    x = rng.normal(size=(batch, n))
    p = np.eye(n) * 1e-2

    def h(points):
        return np.sin(points @ a.T)

    z = h(x[:, None, :])[:, 0] + 0.01
    return x, p, h, z


def _scenario(name, clip, passes, *, loads=None, widen=0.0, limits=None, **settings):
    """One row of the forms table: (name, clip, body, goals, passes, settings)."""
    contacts = detect_contacts(clip)
    body = body_model(clip.skeleton, 70.0, loads=loads or {})
    goals = PhysicsGoals(
        contacts, footplant_goals(clip, contacts, widen), torque_limits=limits or {}
    )
    return name, clip, body, goals, passes, settings


def _scenarios(walk):
    """The forms table's scenarios (docstring, 6)."""
    from retarget.io import read_asf_amc

    wide = walk[100:360]
    sk = wide.skeleton
    joints = [sk.index("RightUpLeg"), sk.index("LeftLeg")]
    probe = _scenario("", wide, "", limits=dict.fromkeys(joints, 1.0))
    peaks = physics_measures(probe[2], probe[3], wide)["torque"]
    root = np.array(wide.root_position[:120])  # the tests' jump: the root lifted 20 cm
    u = np.clip((np.arange(120) - 40) / 30, 0, 1)
    root[:, 1] += 20.0 * np.where(u < 1, np.sin(np.pi * u) ** 2, 0.0)  # frames 40-70
    jump = Motion(sk, root, wide.rotations[:120], wide.fps)
    data = common.clip_path().parent
    # every 4th frame: the paper's 30 Hz (docstring); a stepped slice sets the fps
    cmu = read_asf_amc(data / "real" / "01.asf", data / "real" / "01_01.amc")[:600:4]
    return [
        _scenario("wide steps, 2D+1K", wide, "2D+1K", widen=0.15),
        _scenario("8 kg in the right hand, 1D", walk[100:220], "1D", loads={"RightHand": 8.0}),
        _scenario(
            "torque limits at 80 % of the source's peak, 2D+1K",
            wide,
            "2D+1K",
            limits={j: 0.8 * peaks[sk.names[j]]["peak"] for j in joints},
        ),
        _scenario("synthetic jump, 2D+1K", jump, "2D+1K", spacing=2.0),
        _scenario("CMU 01_01 jumps, 150 frames at 30 fps, 3D+1K", cmu, "3D+1K", spacing=2.0),
        _scenario(
            "30 kg in the right hand, frames 0-900, 1K+3D+1K",
            walk[:900],
            "1K+3D+1K",
            loads={"RightHand": 30.0},
        ),
    ]


def _forms_table(walk) -> list[str]:
    """Both forms on every scenario (docstring, 6): one run each."""
    lines = [
        "| scenario | form | ZMP outside (source → after) | feet max, % of height | "
        "torque worst ratio | flight force, moment ÷ | foot skate ÷ source's | frames/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, clip, body, goals, passes, extra in _scenarios(walk):
        for form in ("curve", "paper"):
            result = physics_filter(clip, body, goals, passes, FilterSettings(form=form, **extra))
            stages = result.report["stages"]
            first, last = stages[0], stages[-1]
            torque = last.get("torque") or {}
            worst = max((v["worst_ratio"] for v in torque.values()), default=float("nan"))
            if first["flight_frames"] and "momentum_force" in last:
                flight = (
                    f"{first['momentum_force'] / max(last['momentum_force'], 1e-12):.1f}, "
                    f"{first['momentum_moment'] / max(last['momentum_moment'], 1e-12):.1f}"
                )
            else:
                flight = "no flight"
            skate = evaluate(clip, result.motion).get("skate_ratio")
            frames = len(clip) * len(stages[1:])
            lines.append(
                f"| {name} | {form} | {first['zmp_outside']:.1%} → {last['zmp_outside']:.1%} "
                f"| {last['kinematic_error_max']:.3f} | {worst:.3f} | {flight} "
                f"| {common.fmt(skate)} | {frames / result.report['seconds']:,.0f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    args = common.parse_args(__doc__, 3, argv)
    repeats = args.repeats
    walk = read_bvh(common.clip_path())
    clip = walk[100:700]
    body = body_model(clip.skeleton, 70.0)
    contacts = detect_contacts(clip)
    goals = PhysicsGoals(contacts, footplant_goals(clip, contacts, 0.15))
    rows = []

    def stage_time(passes: str, settings: FilterSettings) -> float:
        def run():
            r = physics_filter(clip, body, goals, passes, settings)
            run.seconds = r.report["seconds"]  # type: ignore[attr-defined]

        times = []
        run()
        for _ in range(repeats):
            run()
            times.append(run.seconds)  # type: ignore[attr-defined]
        return statistics.median(times)

    n = len(clip)
    for label, passes, st in (
        ("kinematic 1K, 3 iterations", "1K", FilterSettings()),
        ("kinematic 1K, 1 update (paper)", "1K", FilterSettings(iterations=1)),
        ("dynamic 1D, 27 DOF, curve form (default)", "1D", FilterSettings()),
        ("dynamic 1D, 27 DOF, paper form, 3 iterations", "1D", FilterSettings(form="paper")),
        (
            "dynamic 1D, 27 DOF, paper form, 1 update",
            "1D",
            FilterSettings(form="paper", iterations=1),
        ),
    ):
        t = stage_time(passes, st)
        rows.append((label, n / t, t / n * 1e3))

    for label, st, block in (
        (
            "online 1D, paper form, 1 update, Kalman blocks of 8",
            FilterSettings(form="paper", iterations=1),
            8,
        ),
        (
            "online 1D, paper form, 1 update, frame by frame",
            FilterSettings(form="paper", iterations=1),
            1,
        ),
        (
            "online 1D, paper form, 3 iterations, Kalman blocks of 8",
            FilterSettings(form="paper"),
            8,
        ),
    ):
        online = OnlinePhysicsFilter(body, goals, "D", st, fps=clip.fps, block=block)
        frames = [PoseFrame(clip.root_position[k], clip.rotations[k]) for k in range(n)]

        def scan(online=online, frames=frames):
            online.reset()
            for frame in frames:
                online.step(frame)
            online.flush()

        t = common.median_seconds(scan, repeats, warm_up=True)
        rows.append((f"{label} (lag {online.lag})", n / t, t / n * 1e3))

    x, p, h, z = _ukf_problem(n)
    t_ours = common.median_seconds(lambda: unscented_update(x, p, h, z), repeats, warm_up=True)
    rows.append(("UKF update 66x12, ours (batched)", n / t_ours, t_ours / n * 1e3))
    try:
        from filterpy.kalman import JulierSigmaPoints, UnscentedKalmanFilter

        points = JulierSigmaPoints(66, kappa=3.0 - 66)
        ukf = UnscentedKalmanFilter(
            66, 12, 1.0, lambda s: np.sin(s @ np.zeros((12, 66)).T), lambda s, dt: s, points
        )
        a_rows = 40

        def peer():
            for b in range(a_rows):
                ukf.x, ukf.P = x[b].copy(), p.copy()
                ukf.hx = lambda s: h(s[None, None, :])[0, 0]
                ukf.sigmas_f = points.sigma_points(x[b], p)
                ukf.update(z[b])

        t_peer = common.median_seconds(peer, repeats, warm_up=True)
        rows.append(("UKF update 66x12, filterpy", a_rows / t_peer, t_peer / a_rows * 1e3))
    except ImportError:
        rows.append(("UKF update 66x12, filterpy", float("nan"), float("nan")))

    rng = np.random.default_rng(1)
    nj = clip.skeleton.num_joints
    root = rng.normal(size=(n, 3))
    rot = quat.normalize(rng.normal(size=(n, nj, 4)))
    v, a = rng.normal(size=(2, n, 3))
    w, wd = rng.normal(size=(2, n, nj, 3))
    t_rnea = common.median_seconds(
        lambda: inverse_dynamics(body, root, rot, v, w, a, wd), repeats, warm_up=True
    )
    rows.append(("RNEA, ours (batched)", n / t_rnea, t_rnea / n * 1e3))
    try:
        import pinocchio as pin

        model = pin.Model()
        model.gravity = pin.Motion(np.array([0.0, -9.81, 0.0]), np.zeros(3))
        ids = []
        for j in range(nj):
            parent = 0 if j == 0 else ids[int(clip.skeleton.parents[j])]
            off = np.zeros(3) if j == 0 else clip.skeleton.offsets[j] * body.metres
            joint = pin.JointModelFreeFlyer() if j == 0 else pin.JointModelSpherical()
            jid = model.addJoint(parent, joint, pin.SE3(np.eye(3), off), clip.skeleton.names[j])
            model.appendBodyToJoint(
                jid, pin.Inertia(body.mass[j], body.com[j], body.inertia[j]), pin.SE3.Identity()
            )
            ids.append(jid)
        data = model.createData()
        qs = [np.concatenate([root[f], rot[f][:, [1, 2, 3, 0]].ravel()]) for f in range(n)]
        vs = [np.concatenate([v[f], w[f].ravel()]) for f in range(n)]
        accs = [np.concatenate([a[f], wd[f].ravel()]) for f in range(n)]

        def pin_loop():
            for f in range(n):
                pin.rnea(model, data, qs[f], vs[f], accs[f])

        t_pin = common.median_seconds(pin_loop, repeats, warm_up=True)
        rows.append(("RNEA, pinocchio (Python loop)", n / t_pin, t_pin / n * 1e3))
    except ImportError:
        rows.append(("RNEA, pinocchio (Python loop)", float("nan"), float("nan")))

    lines = [
        f"# physics filter benchmark, {datetime.date.today().isoformat()}",
        "",
        f"lafan_walk.bvh frames 100-700 ({n}), wide-steps goals; median of {repeats} runs.",
        "",
        "| contender | frames/s | ms/frame |",
        "|---|---:|---:|",
        *(f"| {label} | {fps:,.0f} | {ms:.4f} |" for label, fps, ms in rows),
        "",
        "Paper: 150 frames/s kinematic, 10-15 dynamic. Goals: 5000 and 500.",
        "",
        "## The two forms on the issue's scenarios (one run each)",
        "",
        *_forms_table(walk),
        "",
        "frames/s: frames × applications over the filter's own time (all applications).",
    ]
    common.publish(lines, "physics", save=not args.no_save)


if __name__ == "__main__":
    main()
