"""Example-based IK (Rose, Sloan & Cohen 2001): accuracy anywhere in the working volume
and poses per second, one process (the code before the change in a child process).

Two verbs, refined with pseudo-examples as ``retarget verb refine`` does
(``--max-pseudo 200``, the default; pseudo-examples only: the paper's runtime is
then one blend per query):

* the planar **3-link arm** (:func:`retarget.ik.verb_examples.arm3_verb`);
* the **reach verb** from ``lafan_walk.bvh`` (``$RETARGET_DATA``, default
  ``../shared/data``): 24 arm poses, the output a full-body pose of 22 joints.

**Held-out goals** (the first table): ``GOALS`` goals per verb drawn by
:func:`retarget.ik.verbs.convex_goals` (seed ``SEED``): convex combinations of
the examples' adverbs anywhere in the working volume, none a point of the error
map's grid. Per refinement: the error ``|x_e − goal|`` (mean and max, % of the
reach) of ``Verb.solve(goals, search=S)`` and the poses/s of that call, batched
(``BATCH`` goals in one call; with the search, 2,000), median of ``--repeats``
runs after a warm-up; the seconds the refinement took. The same goals go to the
code of commit ``--before`` (default ``BEFORE``: the last commit before the
pseudo-examples were placed as the paper places them), exported with ``git
archive`` and run in a child process of this invocation, so the old numbers
stand beside the new, measured in the same run.

**Speed** (the second table), on the verbs as shipped (refined with 200):
**batched** blends (goals in one call: weights, eq. 3, ``ref ⊕ x``), the blend
**one query at a time** (latency), the hybrid runtime (blend + 6 iterations of
the p′ search, batched) and, as the "traditional IK" peer in the same run, our
numerical polish (Levenberg–Marquardt on the same joints from the blend,
batched).

The tables are printed and appended to ``benchmarks/results/YYYY-MM-DD-verbs.md``.
The paper: "a little over 20,000 fps on a 733 MHz PC"; the issue's goals: within
1 % of the reach on average and 5 % at worst with no search, at 200,000 poses/s
batched (arm), 20,000 (reach); 50 µs per single query.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common as common
import numpy as np

from retarget import read_bvh
from retarget.ik.verb_examples import arm3_verb, reach_verb
from retarget.ik.verbs import refine

REPEATS = 5
GOALS = 300
SEED = 26
BEFORE = "fa5cca6"
SHIPPED = 200  # retarget verb refine --max-pseudo, default
BATCH = {"3-link arm": 100_000, "reach (22 joints)": 20_000}
SEARCHED = 2_000  # goals per batch when the p' search runs
# (label, pseudo-examples asked, also solved with the search: the hybrid of this code,
# the same pseudo-examples and the search at run time)
NOW = (("refine 50", 50, False), (f"refine {SHIPPED} (shipped)", SHIPPED, True))
THEN = (("refine 50 (shipped then)", 50, False), ("refine 200", 200, False))
HYBRID = 50  # the code before: its hybrid refinement (errors measured with the search)
RUNTIME = 6  # p' search iterations of a hybrid verb


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


def _verbs(walk):
    return (("3-link arm", arm3_verb()), ("reach (22 joints)", reach_verb(walk)))


def _row(name, label, verb, search, goals, batch, seconds, repeats) -> dict:
    """Accuracy on the held-out ``goals`` and poses/s of ``verb.solve(batch)``."""
    solved = verb.solve(goals, search=search)
    error = np.linalg.norm(solved.achieved - goals, axis=-1) * 100.0 / verb.scale
    batch = batch[:SEARCHED] if search else batch
    speed = _per_second(lambda: verb.solve(batch, search=search), len(batch), repeats)
    return {
        "verb": name,
        "refinement": label,
        "pseudo": int(verb.pseudo_examples),
        "search": int(search),
        "mean": float(error.mean()),
        "max": float(error.max()),
        "per_second": speed,
        "seconds": seconds,
    }


def measure(goals: dict, settings, hybrid: int | None, repeats: int) -> list[dict]:
    """The held-out rows of this code (the one ``retarget`` on the path): per verb, each
    of ``settings`` (without the search, and with it when asked), then the hybrid
    refinement of ``hybrid`` pseudo-examples solved without and with its search."""
    walk = read_bvh(common.clip_path())
    rows = []
    for name, verb in _verbs(walk):
        g, batch = goals[f"{name}/goals"], goals[f"{name}/batch"]
        for label, count, searched in settings:
            t0 = time.perf_counter()
            refined, _history = refine(verb, count)
            seconds = time.perf_counter() - t0
            rows.append(_row(name, label, refined, 0, g, batch, seconds, repeats))
            if searched:
                hybrid_label = f"hybrid: {label} + search"
                row = _row(name, hybrid_label, refined, RUNTIME, g, batch, seconds, repeats)
                rows.append(row)
        if hybrid is not None:
            t0 = time.perf_counter()
            refined, _history = refine(verb, hybrid, hybrid=True)
            seconds = time.perf_counter() - t0
            label = f"hybrid {hybrid}"
            for search in (0, RUNTIME):
                rows.append(_row(name, label, refined, search, g, batch, seconds, repeats))
    return rows


def _before(commit: str, goals: dict, repeats: int) -> list[dict]:
    """:func:`measure` run on the code of ``commit`` (``git archive`` of ``src``) in a
    child process, on the same goals."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(common.PROJECT_ROOT), "archive", commit, "src"],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        np.savez(Path(tmp) / "goals.npz", **goals)
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        child = subprocess.run(
            [sys.executable, __file__, "--child", tmp, "--repeats", str(repeats)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return list(json.loads(child.stdout.splitlines()[-1]))


def _goals() -> dict:
    from retarget.ik.verbs import convex_goals

    walk = read_bvh(common.clip_path())
    out = {}
    for name, verb in _verbs(walk):
        out[f"{name}/goals"] = convex_goals(verb, GOALS, SEED)
        out[f"{name}/batch"] = convex_goals(verb, BATCH[name], SEED + 1)
    return out


def _speed_rows(repeats: int) -> list[tuple]:
    from retarget.ik.verbs import convex_goals

    walk = read_bvh(common.clip_path())
    rows = []
    for name, verb in _verbs(walk):
        verb, _ = refine(verb, SHIPPED)
        goals = convex_goals(verb, BATCH[name], SEED + 1)
        blend = _per_second(lambda v=verb, g=goals: v.pose(v.dofs(g)), len(goals), repeats)
        single = _latency(verb, goals[:2000], repeats)
        few = goals[:SEARCHED]
        hybrid = _per_second(lambda v=verb, g=few: v.solve(g, search=RUNTIME), len(few), repeats)
        small = goals[:200]
        exact = _per_second(
            lambda v=verb, g=small: v.solve(g, search=0, exact=True), len(small), repeats
        )
        rows.append((name, len(verb.basis.centres), blend, single, hybrid, exact))
    return rows


def _table(rows: list[dict], code: str) -> list[str]:
    return [
        f"| {r['verb']} | {code} | {r['refinement']} | {r['pseudo']} | {r['search']} "
        f"| {r['mean']:.3f} | {r['max']:.2f} | {r['per_second']:,.0f} | {r['seconds']:.1f} |"
        for r in rows
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed runs per measure")
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--before", default=BEFORE, help=f"the old code's commit ({BEFORE})")
    parser.add_argument("--no-before", action="store_true", help="skip the old code")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # the old code, on the parent's goals: rows as JSON
        goals = dict(np.load(Path(args.child) / "goals.npz"))
        print(json.dumps(measure(goals, THEN, HYBRID, args.repeats)))
        return
    cpu = common.cpu_line()
    goals = _goals()
    now = measure(goals, NOW, None, args.repeats)
    then = [] if args.no_before else _before(args.before, goals, args.repeats)
    speed = _speed_rows(args.repeats)
    head = common.commit()
    lines = [
        f"# verbs benchmark, {datetime.date.today().isoformat()}",
        "",
        f"{cpu}; commit {head}; median of {args.repeats} runs in this one invocation "
        f"(`benchmarks/verbs.py --repeats {args.repeats}`).",
        "",
        f"## Held-out goals: {GOALS} convex combinations of the examples' adverbs "
        f"(`convex_goals`, seed {SEED})",
        "",
        "Error `|x_e − goal|` of `Verb.solve(goals, search=S)`, % of the reach; poses/s of "
        f"that call batched ({BATCH['3-link arm']:,} goals for the arm, "
        f"{BATCH['reach (22 joints)']:,} for the reach, {SEARCHED:,} with the search). "
        f"Code `{args.before}` (before) runs in a child process of this invocation on "
        "the same goals; its hybrid measured its errors with the search while refining.",
        "",
        "| verb | code | refinement | pseudo-examples | search S | mean % | max % "
        "| poses/s | refine s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
        *_table(now, head.split()[0]),
        *_table(then, f"{args.before} (before)"),
        "",
        "Goal (issue 26): no search, mean ≤ 1 %, max ≤ 5 %; ≥ 200,000 poses/s (arm), "
        "≥ 20,000 (reach).",
        "",
        f"## Speed of the shipped verbs (refined with {SHIPPED})",
        "",
        "| verb | centres | blend, batched (poses/s) | blend, one query (µs) "
        "| hybrid: blend + 6 p′ iterations (poses/s) | numerical IK polish (poses/s) |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {n} | {c} | {b:,.0f} | {s:.1f} | {h:,.0f} | {e:,.0f} |"
            for n, c, b, s, h, e in speed
        ),
        "",
        "Paper: a little over 20,000 poses/s (733 MHz). Goals: 200,000/s batched (arm), "
        "20,000/s batched (reach), 50 µs per single query.",
    ]
    common.publish(lines, "verbs", save=not args.no_save)


if __name__ == "__main__":
    main()
