"""Load test of ``retarget serve``: 120 Hz sensor frames over UDP loopback for minutes.

The server runs as its own process (``retarget serve --method puppetry
--performer lafan_walk.bvh --target-preset blubby --in udp://127.0.0.1:0
--out ws://127.0.0.1:0``); this script is the second process. It sends the
sensors of lafan_walk.bvh resampled to ``--rate`` Hz (played forwards and
backwards in turn, so the performer never jumps; the frame number counting
on), each frame at its own time on a fixed schedule, with
``--drop`` of the datagrams left out and ``--malformed`` replaced by broken
JSON or wrong rows, and listens on the WebSocket. It measures:

* **latency**: from the send of a frame to the receipt of its pose, both on
  this process's clock (the pose echoes the frame's ``time``); percentiles;
* **memory**: the server's resident set (``/proc/PID/status``) each second;
  growth from the end of the first minute to the end;
* **recovery**: the poses of a gap-free reference (the same frames, none
  dropped, through a :class:`~retarget.online.stream.LiveStream` in this
  process) against the received ones; after each gap, the frames until every
  point of the character is back within ``--tolerance`` % of its height of
  the reference, and until the stream's error is back to round-off;
* the server's own counts (received, malformed, gaps, …) and time per frame.

The table is printed and saved to ``benchmarks/results/YYYY-MM-DD-serve.md``.
Goals (issue 10): no crash, p99 at most 5 ms, memory growth at most 10 %,
recovery within 10 frames of each gap.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as common
import numpy as np

from retarget import read_bvh
from retarget.humanoid.roles import height
from retarget.methods.puppetry import sensor_stream


def frames_of(clip: Path, rate: float) -> tuple[list[str], object]:
    """The clip's sensor frames at ``rate`` Hz as JSON bodies (without frame and time)."""
    motion = read_bvh(clip)
    motion = motion.resample(rate) if abs(motion.fps - rate) > 1e-9 else motion
    pos, ori = sensor_stream(motion)
    bodies = [
        json.dumps(
            {"positions": np.round(p, 4).tolist(), "orientations": np.round(q, 6).tolist()},
            separators=(",", ":"),
        )[1:]
        for p, q in zip(pos, ori, strict=True)
    ]
    return bodies, motion


def body_of(bodies: list[str], frame: int) -> str:
    """Frame ``frame`` of the clip played forwards, backwards, forwards, …"""
    n = len(bodies)
    i = frame % (2 * n - 2)
    return bodies[i if i < n else 2 * n - 2 - i]


def message(frame: int, stamp: float, body: str) -> bytes:
    return f'{{"frame":{frame},"time":{stamp:.6f},{body}'.encode()


def broken(frame: int, rng: np.random.Generator) -> bytes:
    """One of the malformed kinds: cut JSON, wrong row count, zero quaternion, not an object."""
    kind = int(rng.integers(4))
    if kind == 0:
        return b'{"frame": %d, "positions": [[0, 1' % frame
    if kind == 1:
        return b'{"frame": %d, "positions": [[0, 0, 0]], "orientations": [[1, 0, 0, 0]]}' % frame
    if kind == 2:
        return b"[1, 2, 3]"
    return b'\xff\xfe{"frame": %d}' % frame


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def drive(args, bodies, port_in, port_out, pid):
    import websockets

    total = int(args.minutes * 60 * args.rate)
    rng = np.random.default_rng(args.seed)
    fate = rng.random(total)
    dropped = fate < args.drop
    malformed = (fate >= args.drop) & (fate < args.drop + args.malformed)
    latency = np.full(total, np.nan)
    received = {}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    memory = []
    async with websockets.connect(f"ws://127.0.0.1:{port_out}", max_size=None) as ws:
        header = json.loads(await ws.recv())

        async def listen():
            async for text in ws:
                now = time.perf_counter()
                pose = json.loads(text)
                k = pose["frame"]
                latency[k] = now - pose["time"]
                if k % args.keep == 0 or k in watch:
                    received[k] = np.asarray(pose["positions"], np.float32)

        watch = set()
        for k in np.flatnonzero(dropped | malformed):
            watch.update(range(k + 1, k + 1 + 3 * args.window))
        listener = asyncio.ensure_future(listen())
        t0 = time.perf_counter() + 0.5
        next_memory = t0
        for k in range(total):
            due = t0 + k / args.rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if dropped[k]:
                continue
            if malformed[k]:
                sock.sendto(broken(k, rng), ("127.0.0.1", port_in))
            else:
                stamp = time.perf_counter()
                sock.sendto(message(k, stamp, body_of(bodies, k)), ("127.0.0.1", port_in))
            if due >= next_memory:
                memory.append((due - t0, rss_kb(pid)))
                next_memory += 1.0
        await asyncio.sleep(0.5)
        listener.cancel()
    return header, latency, received, dropped, malformed, memory


def reference(args, clip: Path, total: int):
    """The gap-free stream's positions, in this process."""
    from retarget import make_character
    from retarget.online.puppetry import Puppeteer
    from retarget.online.stream import LiveStream, PuppetryLive

    take = read_bvh(clip)
    character = make_character(take.skeleton, preset=args.target_preset)
    stream = LiveStream(
        PuppetryLive(Puppeteer(take.skeleton, character, fps=args.rate, calibration=take)),
        fps=args.rate,
    )
    bodies, _ = frames_of(clip, args.rate)
    out = {}
    for k in range(total):
        pose = json.loads(stream.receive(message(k, 0.0, body_of(bodies, k))))
        out[k] = np.asarray(pose["positions"], np.float32)
    return out, height(character)


def recovery(args, received, ref, tall, dropped, malformed):
    """Per gap: frames after it until within tolerance, and until round-off."""
    missing = dropped | malformed
    total = len(missing)
    ends = [k for k in range(1, total) if missing[k - 1] and not missing[k]]
    within, exact, worst_during = [], [], []
    for end in ends:
        frames = [k for k in range(end, min(end + 3 * args.window, total)) if not missing[k]]
        errs = []
        for k in frames:
            if k not in received:
                errs.append(np.inf)
                continue
            errs.append(100.0 * float(np.abs(received[k] - ref[k]).max()) / tall)
        errs = np.asarray(errs)
        worst_during.append(errs[0] if len(errs) else 0.0)
        ok = np.flatnonzero(errs <= args.tolerance)
        within.append(int(ok[0]) if len(ok) else len(errs))
        tiny = np.flatnonzero(errs <= 1e-3)
        exact.append(int(tiny[0]) if len(tiny) else len(errs))
    return np.asarray(within), np.asarray(exact), np.asarray(worst_during), len(ends)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=120.0, help="frames per second")
    parser.add_argument("--drop", type=float, default=0.05, help="share of datagrams left out")
    parser.add_argument("--malformed", type=float, default=0.01, help="share replaced by junk")
    parser.add_argument("--tolerance", type=float, default=0.1, help="recovered: %% of height")
    parser.add_argument("--window", type=int, default=10, help="frames allowed to recover")
    parser.add_argument("--keep", type=int, default=50, help="keep every Nth pose for checks")
    parser.add_argument("--target-preset", default="blubby")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(argv)
    clip = common.clip_path()
    bodies, _ = frames_of(clip, args.rate)
    total = int(args.minutes * 60 * args.rate)
    with tempfile.TemporaryDirectory(prefix="retarget-serve-") as tmp:
        stats_path = Path(tmp) / "stats.json"
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "retarget.cli",
                "serve",
                "--method",
                "puppetry",
                "--performer",
                str(clip),
                "--target-preset",
                args.target_preset,
                "--fps",
                str(args.rate),
                "--in",
                "udp://127.0.0.1:0",
                "--out",
                "ws://127.0.0.1:0",
                "--stats",
                str(stats_path),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert server.stderr is not None
        line = server.stderr.readline()
        if "ready" not in line:
            raise SystemExit(f"the server did not start: {line}{server.stderr.read()}")
        port_in = int(line.split("udp://127.0.0.1:")[1].split()[0])
        port_out = int(line.split("ws://127.0.0.1:")[1].split()[0].rstrip(","))
        started = time.perf_counter()
        header, latency, received, dropped, malformed, memory = asyncio.run(
            drive(args, bodies, port_in, port_out, server.pid)
        )
        wall = time.perf_counter() - started
        alive = server.poll() is None
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
        stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    sent_ok = ~(dropped | malformed)
    lat_ms = 1000.0 * latency[sent_ok]
    lost = int(np.isnan(lat_ms).sum())
    lat_ms = lat_ms[np.isfinite(lat_ms)]
    ref, tall = reference(args, clip, total)
    within, exact, jump, gaps = recovery(args, received, ref, tall, dropped, malformed)
    near = np.zeros(total, bool)  # frames missing or within 3 windows after one
    for k in np.flatnonzero(~sent_ok):
        near[k : k + 1 + 3 * args.window] = True
    clean = [k for k in received if k % args.keep == 0 and not near[k]]
    steady = max(
        (100.0 * float(np.abs(received[k] - ref[k]).max()) / tall for k in clean), default=0.0
    )
    mem = np.asarray(memory, dtype=np.float64)
    after_minute = mem[mem[:, 0] >= min(60.0, mem[-1, 0] / 2)]
    growth = 100.0 * (mem[-1, 1] - after_minute[0, 1]) / after_minute[0, 1]
    p = {q: float(np.percentile(lat_ms, q)) for q in (50, 90, 99, 99.9)}
    lines = [
        f"# retarget serve: puppetry onto {args.target_preset}, {args.rate:g} Hz over UDP "
        f"loopback for {args.minutes:g} min",
        "",
        f"{datetime.datetime.now().isoformat(timespec='seconds')}; `benchmarks/serve_load.py "
        f"--minutes {args.minutes:g} --drop {args.drop:g} --malformed {args.malformed:g}` "
        f"(server and sender in two processes; {len(header['joints'])}-joint character)",
        common.cpu_line(),
        common.platform_line(),
        common.versions(["retarget", "websockets"]),
        "",
        "| measure | value | goal |",
        "|---|---|---|",
        f"| frames sent / dropped / malformed | {int(sent_ok.sum())} / {int(dropped.sum())} / "
        f"{int(malformed.sum())} | |",
        f"| server alive at the end | {'yes' if alive else 'NO'} | yes |",
        f"| poses received of frames sent | {len(latency[sent_ok]) - lost} of "
        f"{int(sent_ok.sum())} | all |",
        f"| latency p50 / p90 / p99 / p99.9 / max (ms) | {p[50]:.3f} / {p[90]:.3f} / "
        f"{p[99]:.3f} / {p[99.9]:.3f} / {lat_ms.max():.3f} | p99 <= 5 |",
        f"| server time per frame p50 / p99 (ms) | {stats.get('server_ms', {}).get('p50', 0):.3f}"
        f" / {stats.get('server_ms', {}).get('p99', 0):.3f} | |",
        f"| server RSS after the first minute → end (MB) | {after_minute[0, 1] / 1024:.1f} → "
        f"{mem[-1, 1] / 1024:.1f} ({growth:+.1f} %) | <= +10 % |",
        f"| server counts | received {stats.get('received')}, malformed "
        f"{stats.get('malformed')}, gaps {stats.get('gaps')}, predicted "
        f"{stats.get('predicted')}, late {stats.get('late')}, duplicate "
        f"{stats.get('duplicate')}, restarts {stats.get('restarts')} | |",
    ]
    if gaps:
        lines += [
            f"| gaps; error at the first frame after, median / max (% height) | {gaps}; "
            f"{np.median(jump):.3f} / {jump.max():.3f} | |",
            f"| frames to recover within {args.tolerance:g} % of height, median / max | "
            f"{np.median(within):.0f} / {within.max()} | <= {args.window} |",
            f"| frames to round-off (1e-3 % height), median / max | {np.median(exact):.0f} / "
            f"{exact.max()} | |",
            f"| gaps recovered within {args.window} frames | "
            f"{int((within <= args.window).sum())} of {gaps} | all |",
        ]
    lines += [
        f"| error of frames away from gaps (every {args.keep}th), max (% height) | "
        f"{steady:.4f} | |",
        f"| wall time (s) | {wall:.0f} | |",
        "",
        f"Server: {err.strip().splitlines()[-1] if err.strip() else ''}",
    ]
    common.publish(lines, "serve", not args.no_save)
    if not alive:
        raise SystemExit(1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
