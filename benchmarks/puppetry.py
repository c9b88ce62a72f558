"""Computer puppetry (Shin et al. 2001): frames per second of the whole pipeline, one core.

On ``lafan_walk.bvh`` (22 joints, 7184 frames at 30 fps; ``$RETARGET_DATA``,
default ``../shared/data``), the sensors simulated at every joint:

1. **file, blubby / sally** -- :func:`retarget.methods.puppetry.puppetry_retarget`
   over the whole clip: the filter's recursion, then stages 2-9 vectorised
   over the frames; the cost of each stage from ``report["stage_seconds"]``.
2. **stream, blubby / sally** -- :class:`retarget.online.puppetry.Puppeteer.step`
   one frame at a time over the first 1000 frames (what ``retarget puppet``
   runs): stages 2-9 as one compiled call (:mod:`retarget.online._kernels.puppetry`).
   Timed after the first, calibrating step, and after one warm-up stream (the
   compile or the load of numba's cache).
3. **peer: filterpy** -- the filter stage alone written with filterpy's
   ``KalmanFilter`` (one object per sensor, eqs. 1-10 with the external
   quaternion as in the paper) over 1000 frames, against ours over the same.

Medians of ``REPEATS`` runs; the table is printed and saved to
``benchmarks/results/YYYY-MM-DD-puppetry.md``. The paper: 5.4 ms per frame
(185 frames/s) on a 195 MHz R10000; the issue's goal 2000 frames/s.
"""

from __future__ import annotations

import datetime
import statistics
import time

import _common as common
import numpy as np

from retarget import make_character, read_bvh
from retarget.core import quat
from retarget.filters import KalmanParameters, filter_stream, process_noise
from retarget.methods.puppetry import puppetry_retarget, sensor_stream
from retarget.online import SensorFrame
from retarget.online.puppetry import Puppeteer

REPEATS = 3


def _filterpy_stream(pos: np.ndarray, ori: np.ndarray, fps: float) -> None:
    from filterpy.kalman import KalmanFilter

    params = KalmanParameters()
    dt = 1.0 / fps
    a = np.eye(12)
    for k in (0, 6):
        a[k : k + 3, k + 3 : k + 6] = dt * np.eye(3)
    h = np.zeros((6, 12))
    h[:3, :3] = np.eye(3)
    h[3:, 6:9] = np.eye(3)
    filters = []
    for s in range(pos.shape[1]):
        kf = KalmanFilter(dim_x=12, dim_z=6)
        kf.F, kf.H, kf.Q = a, h, process_noise(params.q)
        kf.R = np.asarray(params.measurement_noise)
        kf.x = np.concatenate([pos[0, s], np.zeros(9)])
        filters.append(kf)
    q_e = ori[0].copy()
    for f in range(pos.shape[0]):
        for s, kf in enumerate(filters):
            kf.predict()
            r = quat.log(quat.multiply(quat.conjugate(q_e[s]), ori[f, s]))
            kf.update(np.concatenate([pos[f, s], r]))
            q_e[s] = quat.normalize(quat.multiply(q_e[s], quat.exp(kf.x[6:9])))
            kf.x[6:9] = 0.0


def main() -> None:
    walk = read_bvh(common.clip_path())
    n = walk.num_frames
    rows = []
    stages_rows = []
    for name in ("blubby", "sally"):
        character = make_character(walk.skeleton, preset=name)
        puppetry_retarget(walk[:200], character)  # compile
        result: dict = {}

        def run(character=character, result=result) -> None:
            result["r"] = puppetry_retarget(walk, character)

        t = common.median_seconds(run, REPEATS)
        rep = result["r"].report
        rows.append((f"file, {name}", n / t, t / n * 1e3))
        stages_rows.append((name, rep["stage_seconds"], rep["iterations"]["total"]))

    clip = walk[:1000]
    pos, ori = sensor_stream(clip)

    def stream(character) -> float:
        """Seconds per step after the calibrating first one."""
        pup = Puppeteer(clip.skeleton, character, fps=clip.fps, calibration=clip)
        frames = [SensorFrame(p, q) for p, q in zip(pos, ori, strict=True)]
        pup.step(frames[0])
        t = time.perf_counter()
        for frame in frames[1:]:
            pup.step(frame)
        return (time.perf_counter() - t) / (len(clip) - 1)

    for name in ("blubby", "sally"):
        character = make_character(walk.skeleton, preset=name)
        stream(character)
        t = statistics.median(stream(character) for _ in range(REPEATS))
        rows.append((f"stream (step), {name}", 1.0 / t, t * 1e3))
    t_ours = common.median_seconds(lambda: filter_stream(pos, ori, clip.fps), REPEATS)
    rows.append(("filter stage, ours", len(clip) / t_ours, t_ours / len(clip) * 1e3))
    t_peer = common.median_seconds(lambda: _filterpy_stream(pos, ori, clip.fps), REPEATS)
    rows.append(("filter stage, filterpy", len(clip) / t_peer, t_peer / len(clip) * 1e3))

    lines = [
        f"# puppetry benchmark, {datetime.date.today().isoformat()}",
        "",
        f"lafan_walk.bvh, {n} frames, 22 joints; median of {REPEATS} runs; one process.",
        "",
        "| contender | frames/s | ms/frame |",
        "|---|---:|---:|",
        *(f"| {label} | {fps:,.0f} | {ms:.4f} |" for label, fps, ms in rows),
        "",
        f"filter stage: ours / filterpy = {t_peer / t_ours:.0f}x; paper 185 frames/s; goal 2000.",
        "",
        "| character | " + " | ".join(stages_rows[0][1]) + " | CG iterations |",
        "|---|" + "---:|" * (len(stages_rows[0][1]) + 1),
        *(
            f"| {name} | " + " | ".join(f"{v * 1e3:.1f} ms" for v in st.values()) + f" | {it} |"
            for name, st, it in stages_rows
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = common.results_path("puppetry.md")
    out.write_text(text, encoding="utf-8")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
