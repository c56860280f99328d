"""What turning a grade report into a dictionary costs, on reports the size of the pool's largest tasks: the report's
own ``GradeReport.to_dict`` against ``dataclasses.asdict`` (what it used before), measured in the same run.

Each grade does it twice (the grade cache's copy and the step's ``info["report"]``), on both grading paths. A report
holds a status for every selected test and the FAIL_TO_PASS / PASS_TO_PASS split of them; ``asdict`` deep-copies every
string of it, ``to_dict`` makes new containers and keeps the strings (immutable). Each task's report is built from its
registered ids (every test passed), both ways are checked equal, and each is timed as the best of ``--n`` runs.

    python benchmarks/report_dict.py [--tasks 5] [--n 200]

Measured (session 25, 2 shared cores, load 0.3): on the five tasks with the most selected tests (2,000 to 5,286, all
FrogLive's), ``asdict`` 3.15-8.22 ms a report, ``to_dict`` 0.29-0.75 ms: 0.09x on each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import asdict


def _best(fn, n: int) -> float:
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=5, help="how many of the tasks with the most selected tests")
    p.add_argument("--n", type=int, default=200, help="runs of each way per task (the best is kept)")
    args = p.parse_args()

    from frog_gym.catalog.task import load_task, registered_task_ids
    from frog_gym.grading.grade import GradeReport, judge
    from frog_gym.grading.runner import TestStatus

    tasks = sorted((load_task(t) for t in registered_task_ids()),
                   key=lambda t: (-(len(t.FAIL_TO_PASS) + len(t.PASS_TO_PASS)), t.instance_id))[:args.tasks]
    print(f"{len(tasks)} tasks; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print("| task | tests | asdict | to_dict | to_dict / asdict |\n|---|---|---|---|---|")
    ratios = []
    for task in tasks:
        statuses = {t: TestStatus.PASSED for t in (*task.FAIL_TO_PASS, *task.PASS_TO_PASS)}
        resolved, f2p, p2p = judge(task, statuses)
        report = GradeReport(resolved, {t: s.value for t, s in statuses.items()}, f2p, p2p, 0, 1.0,
                             oracle={"calls": 3, "matched": 3, "passed": True, "mismatch": ""})
        want = asdict(report)
        want["resolved"] = report.resolved.value
        if report.to_dict() != want:
            raise SystemExit(f"{task.instance_id}: to_dict differs from asdict")
        old = _best(lambda: asdict(report), args.n)
        new = _best(report.to_dict, args.n)
        ratios.append(new / old)
        print(f"| {task.instance_id} | {len(statuses)} | {old * 1e3:.2f} ms | {new * 1e3:.2f} ms | {new / old:.2f}x |")
    print(f"median to_dict / asdict: {statistics.median(ratios):.2f}x (the same dictionaries, checked)")


if __name__ == "__main__":
    main()
