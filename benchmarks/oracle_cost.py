"""The behavioural oracle's cost: a warm grade with the oracle against the same grade without it, paired.

For each covered task (its gold fix, grade cache off), the env's warm grade (``grade()``, the default) runs
with the task's oracle and with none, alternating which side goes first in each round, in one process.
"Without" is the same ``grade()`` with the task's oracle calls replaced by none (``oracle.calls_of``), so
both sides do the same test run; the difference is the replay (a child of the repository's warm oracle server,
alongside the tests). A third side, "cold", replays in a sandbox of its own per grade, as before the oracle
server (issue 25), and its ratio to "without" is printed beside. Wall and CPU (every descendant, through ``cpumeter``) are printed per task with p50 and p99 over
all samples, and the load average at the start and the end. Target (issue 21): at most 1.2x.

    python benchmarks/oracle_cost.py [--task ID ...] [--tasks 8] [--n 5]

Measured (2026-12-04, 2 shared cores, load 7.5-10.6, ``--tasks 10 --n 4``, 10 covered tasks of 10 repositories,
FrogLive included): wall 1.05x (target 1.2x: met), CPU 1.32x (every descendant counted: not met; the replay's
own sandbox start and interpreter cost about 0.05-0.2 s of CPU per grade, hidden in wall time behind the test
run). An earlier run (8 tasks, load 9.8-11): wall 1.11x, CPU 1.51x.

With the warm oracle server (2026-12-04, ``--tasks 8 --n 4``, 8 covered tasks of 8 repositories, load 1.8-2.4), two
runs: with / without wall 1.06x and 1.06x, CPU 1.06x and 1.08x (target 1.2x: met, CPU included); the cold replay in
the same rotation wall 1.07x and 1.23x, CPU 1.19x and 1.39x.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from cpumeter import CpuMeter  # noqa: E402

from frog_gym import paths# noqa: E402

from frog_gym.grading import oracle
from frog_gym.grading.runner import _patched, hidden_test_changes, patch_files  # noqa: E402
from frog_gym.grading.grade import grade
from frog_gym.catalog.live import is_live, task_spec  # noqa: E402
from frog_gym.catalog.snapshot import prepare  # noqa: E402
from frog_gym.catalog.task import load_task, registered_task_ids  # noqa: E402
from frog_gym.sandbox.workspace import Change, Workspace, template_for  # noqa: E402


def pctl(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


@contextmanager
def cold_oracle():
    from frog_gym.grading import oracle_server

    saved = oracle_server.replay_warm
    oracle_server.replay_warm = lambda *a, **k: None
    try:
        yield
    finally:
        oracle_server.replay_warm = saved


@contextmanager
def without_oracle():
    saved = oracle.calls_of
    oracle.calls_of = lambda task: []
    try:
        yield
    finally:
        oracle.calls_of = saved


def covered_tasks(k: int, seed: str = "bench") -> list[str]:
    """``k`` tasks with an oracle, one per repository first (seeded)."""
    ids = [i for i in registered_task_ids() if oracle.record_of(load_task(i)) and oracle.calls_of(load_task(i))]
    random.Random(seed).shuffle(ids)
    seen: set[str] = set()
    first = [i for i in ids if not (i.split("__")[0] in seen or seen.add(i.split("__")[0]))]
    return (first + [i for i in ids if i not in first])[:k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", nargs="*", default=None, help="task ids (default: --tasks covered tasks)")
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--n", type=int, default=5, help="rounds per task (each round: both sides, order alternating)")
    a = ap.parse_args()
    meter = CpuMeter()
    ids = a.task or covered_tasks(a.tasks)
    print(f"CPU meter: {meter.kind}\nload average at start: {os.getloadavg()}\n")
    print("| task | oracle calls | without: wall / CPU | with: wall / CPU | wall ratio | CPU ratio "
          "| cold replay: wall / CPU ratio |")
    print("|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {"wall": [], "cpu": [], "cold wall": [], "cold cpu": []}
    samples: dict[str, list[float]] = {"with": [], "without": [], "cold": []}
    sides = ("with", "without", "cold")
    for tid in ids:
        task = load_task(tid)
        repo = prepare(task_spec(task))
        template = template_for(repo, task.bug_patch, tid, hidden_tests="" if is_live(tid) else task.test_patch)
        tests = patch_files(task.test_patch)
        gold = _patched(template, task.patch, "gold")
        changes = [Change(f, (template.root / f).read_bytes() if (template.root / f).is_file() else None, new)
                   for f, new in gold.items() if f not in tests]
        assert not isinstance(hidden_test_changes(task, template), str)
        scratch = Workspace(paths.home() / "work" / f"bench-oracle-{os.getpid()}")
        try:
            first = grade(repo, task, template, changes, scratch, use_cache=False)  # starts the servers: not timed
            assert first.is_resolved and first.oracle and first.oracle["passed"], (tid, first.note, first.oracle)
            got: dict[str, list[tuple[float, float]]] = {s: [] for s in sides}
            for i in range(a.n):
                for side in sides[i % 3:] + sides[:i % 3]:  # each side first in turn
                    w0, c0 = time.perf_counter(), meter.read()
                    if side == "without":
                        with without_oracle():
                            r = grade(repo, task, template, changes, scratch, use_cache=False)
                        assert r.oracle is None
                    else:
                        with cold_oracle() if side == "cold" else nullcontext():
                            r = grade(repo, task, template, changes, scratch, use_cache=False)
                        assert r.oracle and r.oracle["passed"], (tid, side, r.oracle)
                    assert r.is_resolved, (tid, side, r.note)
                    got[side].append((time.perf_counter() - w0, meter.read() - c0))
                    samples[side].append(got[side][-1][0])
        finally:
            scratch.remove()
        med = {s: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for s, v in got.items()}
        ratios["wall"].append(med["with"][0] / med["without"][0])
        ratios["cpu"].append(med["with"][1] / med["without"][1])
        ratios["cold wall"].append(med["cold"][0] / med["without"][0])
        ratios["cold cpu"].append(med["cold"][1] / med["without"][1])
        print(f"| {tid} | {first.oracle['calls']} | {med['without'][0]:.2f} s / {med['without'][1]:.2f} s "
              f"| {med['with'][0]:.2f} s / {med['with'][1]:.2f} s | {ratios['wall'][-1]:.2f}x "
              f"| {ratios['cpu'][-1]:.2f}x | {ratios['cold wall'][-1]:.2f}x / {ratios['cold cpu'][-1]:.2f}x |", flush=True)
    meter.close()
    print(f"\nover {len(ids)} tasks of {len({t.split('__')[0] for t in ids})} repositories, {a.n} rounds each:")
    print(f"- warm grade with the oracle / without, median of per-task medians: wall "
          f"{statistics.median(ratios['wall']):.2f}x, CPU {statistics.median(ratios['cpu']):.2f}x (target: at most 1.2x)")
    print(f"- the same with a cold replay (a sandbox per grade): wall {statistics.median(ratios['cold wall']):.2f}x, "
          f"CPU {statistics.median(ratios['cold cpu']):.2f}x")
    for side, xs in samples.items():
        print(f"- {side:7} wall over all samples: p50 {statistics.median(xs):.2f} s, p99 {pctl(xs, .99):.2f} s")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
