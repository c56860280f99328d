#!/usr/bin/env python
"""Re-validate a random sample of registered tasks: the bug fails its FAIL_TO_PASS, the gold fix passes all.

Usage: python .ci/sample_tasks.py [--n 20] [--seed S] [--budget 900]

Each sampled task is applied to a fresh copy of its repository's pristine snapshot in the sandbox and its
FAIL_TO_PASS + PASS_TO_PASS tests run together, as grading runs them: with the bug patch, every
FAIL_TO_PASS test must fail and every PASS_TO_PASS test pass; with the gold patch on top, all must pass. The sample is seeded (default: the date, so each day checks other tasks).
Tasks left when ``--budget`` seconds have passed are reported as not checked, and do not fail the run;
any checked task that breaks a rule does. Exit status: 0 when every checked task holds.
"""

from __future__ import annotations

import argparse
import random
import sys
import time


def check(task_id: str, timeout: float) -> str | None:
    """None when the task holds, else what is wrong."""
    from frog_gym.generators.validate import Scratch, pristine_template
    from frog_gym.grading import run_tests
    from frog_gym.live import task_spec
    from frog_gym.snapshot import prepare
    from frog_gym.task import load_task
    from frog_gym.workspace import apply_patch

    task = load_task(task_id)
    repo = prepare(task_spec(task))  # a FrogLive task runs on its own release
    with Scratch() as ws:
        ws.sync(pristine_template(repo))
        apply_patch(ws.path, task.bug_patch, f"the bug of {task_id}")
        apply_patch(ws.path, task.test_patch, f"the hidden tests of {task_id}")  # as grading applies them
        r = run_tests(repo, ws.path, task.selected_tests, timeout)  # as graded: FAIL_TO_PASS + PASS_TO_PASS
        if r.infra_failure:
            return f"bug run: {r.infra_failure}"
        passing = [t for t in task.FAIL_TO_PASS if r.statuses[t].ok]
        if passing:
            return f"with the bug, {len(passing)} FAIL_TO_PASS tests pass: {passing[:3]}"
        broken = [t for t in task.PASS_TO_PASS if not r.statuses[t].ok]
        if broken:
            return f"with the bug, {len(broken)} PASS_TO_PASS tests fail: {broken[:3]}"
        apply_patch(ws.path, task.patch, f"the gold fix of {task_id}")
        r = run_tests(repo, ws.path, task.selected_tests, timeout)
        if r.infra_failure:
            return f"gold run: {r.infra_failure}"
        failing = [t for t, s in r.statuses.items() if not s.ok]
        if failing:
            return f"with the gold fix, {len(failing)} selected tests fail: {failing[:3]}"
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--seed", default=time.strftime("%Y-%m-%d"))
    p.add_argument("--budget", type=float, default=900.0, help="seconds for the whole sample")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per test run")
    args = p.parse_args(argv)

    from frog_gym.task import task_index

    ids = sorted(task_index())
    sample = random.Random(args.seed).sample(ids, min(args.n, len(ids)))
    start = time.monotonic()
    bad, checked, skipped = [], 0, []
    for i, task_id in enumerate(sample, 1):
        if time.monotonic() - start > args.budget:
            skipped = sample[i - 1:]
            break
        t0 = time.monotonic()
        try:
            problem = check(task_id, args.timeout)
        except Exception as e:  # noqa: BLE001 (reported, counted as a failure)
            problem = f"{type(e).__name__}: {e}"
        checked += 1
        print(f"[{i:2}/{len(sample)}] {task_id:56} {'ok' if problem is None else 'FAIL: ' + problem} "
              f"({time.monotonic() - t0:.1f} s)", flush=True)
        if problem is not None:
            bad.append(task_id)
    if skipped:
        print(f"budget of {args.budget:.0f} s reached; {len(skipped)} tasks not checked: {', '.join(skipped)}")
    print(f"{checked - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
