"""The physically based retargeting filter (Tak & Ko 2005): frames per second, one process.

On ``lafan_walk.bvh`` frames 100-700 (22 joints, 30 fps; ``$RETARGET_DATA``,
default ``../shared/data``), the wide-steps goals (feet 15 % of height outward):

1. **kinematic filtering** (1K): the footplants; the state holds the root and
   the joints the feet hang from (30 of the skeleton's 69 DOFs: the others'
   sigma points could not change the result, see :mod:`retarget.physics.filter`),
   three iterated updates per frame, and the paper's single update;
2. **dynamic filtering** (1D): 27 DOFs (wrists, elbows, ankles, neck out),
   balance and footplants, with the least-squares filter;
3. **UKF update**, ours (all frames' sigma points in one call) against
   filterpy's ``UnscentedKalmanFilter.update`` (one frame at a time, the
   measurement function once per sigma point), 66 states, 12 measurements;
4. **inverse dynamics**, ours batched over frames against pinocchio's ``rnea``
   called once per frame from Python, on the same model.

Medians of ``--repeats`` runs (3); the table is printed and appended to
``benchmarks/results/YYYY-MM-DD-physics.md`` (not with ``--no-save``). The paper: 150 frames/s
kinematic, 10-15 dynamic (Pentium 4); the issue's goals 5000 and 500.
"""

from __future__ import annotations

import datetime
import statistics

import _common as common
import numpy as np

from retarget import detect_contacts, quat, read_bvh
from retarget.filters import unscented_update
from retarget.physics import body_model
from retarget.physics.dynamics import inverse_dynamics
from retarget.physics.filter import (
    FilterSettings,
    PhysicsGoals,
    footplant_goals,
    physics_filter,
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
    ]
    common.publish(lines, "physics", save=not args.no_save)


if __name__ == "__main__":
    main()
