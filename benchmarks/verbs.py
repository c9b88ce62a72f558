"""Example-based IK (Rose, Sloan & Cohen 2001): poses per second, one process.

Two verbs, each refined with 20 pseudo-examples (pseudo-examples only: the
paper's runtime is then one blend per query):

* the planar **3-link arm** (:func:`retarget.ik.verb_examples.arm3_verb`);
* the **reach verb** from ``lafan_walk.bvh`` (``$RETARGET_DATA``, default
  ``../shared/data``): 24 arm poses, the output a full-body pose of 22 joints.

Per verb: **batched** blends (goals in one call: weights, eq. 3, ``ref ⊕ x``),
the blend **one query at a time** (latency), the hybrid runtime (blend + 6
iterations of the p′ search, batched) and, as the "traditional IK" peer in
the same run, our numerical polish (Levenberg–Marquardt on the same joints
from the blend, batched). Medians of ``--repeats`` runs (5); the table is
printed and appended to ``benchmarks/results/YYYY-MM-DD-verbs.md`` (not with
``--no-save``). The paper: "a little over 20,000 fps on a 733 MHz PC"; the
issue's goals: 200,000 batched (arm), 20,000 batched (reach), 50 µs per single
query.
"""

from __future__ import annotations

import datetime
import statistics
import time

import _common as common
import numpy as np

from retarget import read_bvh
from retarget.ik.verb_examples import arm3_verb, reach_verb
from retarget.ik.verbs import error_map, refine


def _per_second(fn, count: int, repeats: int) -> float:
    times = []
    fn()
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return count / statistics.median(times)


def _latency(verb, goals, repeats: int) -> float:
    def one():
        for g in goals:
            verb.pose(verb.dofs(g))

    return 1e6 / _per_second(one, len(goals), repeats)


def main(argv: list[str] | None = None) -> None:
    args = common.parse_args(__doc__, 5, argv)
    repeats = args.repeats
    walk = read_bvh(common.clip_path())
    rows = []
    rng = np.random.default_rng(0)
    for name, verb, batch in (
        ("3-link arm", arm3_verb(), 100_000),
        ("reach (22 joints)", reach_verb(walk), 20_000),
    ):
        verb, _ = refine(verb, 20)
        grid = error_map(verb).grid
        goals = grid[rng.integers(0, len(grid), batch)]
        blend = _per_second(lambda v=verb, g=goals: v.pose(v.dofs(g)), batch, repeats)
        single = _latency(verb, goals[:2000], repeats)
        few = goals[:2000]
        hybrid = _per_second(lambda v=verb, g=few: v.solve(g, search=6), len(few), repeats)
        small = goals[:200]
        exact = _per_second(
            lambda v=verb, g=small: v.solve(g, search=0, exact=True), len(small), repeats
        )
        rows.append((name, len(verb.basis.centres), blend, single, hybrid, exact))
    lines = [
        f"# verbs benchmark, {datetime.date.today().isoformat()}",
        "",
        f"{common.cpu_line()}; median of {repeats} runs; verbs refined with 20 pseudo-examples.",
        "",
        "| verb | centres | blend, batched (poses/s) | blend, one query (µs) "
        "| hybrid: blend + 6 p′ iterations (poses/s) | numerical IK polish (poses/s) |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {n} | {c} | {b:,.0f} | {s:.1f} | {h:,.0f} | {e:,.0f} |" for n, c, b, s, h, e in rows),
        "",
        "Paper: a little over 20,000 poses/s (733 MHz). Goals: 200,000/s batched (arm), "
        "20,000/s batched (reach), 50 µs per single query.",
    ]
    common.publish(lines, "verbs", save=not args.no_save)


if __name__ == "__main__":
    main()
