#!/usr/bin/env python
"""Re-validate a random sample of registered tasks: the bug fails its FAIL_TO_PASS, the gold fix passes all,
under the hidden-tests contract (the starting tree lacks the FAIL_TO_PASS tests; grading's test_patch
puts them back).

Usage: python .ci/sample_tasks.py [--n 20] [--seed S] [--budget 900]
       python .ci/sample_tasks.py --all --record FILE [--budget SECONDS]   (every task of FrogSWE-v0's pool)

Each sampled task is applied to a fresh copy of its repository's pristine snapshot in the sandbox and its
FAIL_TO_PASS + PASS_TO_PASS tests run together, as grading runs them: with the bug patch, every
FAIL_TO_PASS test must fail and every PASS_TO_PASS test pass; with the gold patch on top, all must pass. The sample is seeded (default: the date, so each day checks other tasks).
Tasks left when ``--budget`` seconds have passed are reported as not checked, and do not fail the run;
any checked task that breaks a rule does. Exit status: 0 when every checked task holds.

``--all`` checks every task of ``FrogSWE-v0``'s pool in a seeded order (so an unfinished run has checked a
uniform sample); ``--record FILE`` appends one JSON line per checked task (id, verdict, seconds) and
skips the tasks a line already records, so a run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time


def _defined(tree, test_id: str) -> bool:
    """Whether the test function of ``test_id`` is defined in its file of ``tree`` (hidden tests are not)."""
    import ast

    from frog_gym.generators.testsource import split_test_id

    file, classes, func = split_test_id(test_id)
    try:
        body = ast.parse((tree / file).read_text(encoding="utf-8")).body
    except (OSError, SyntaxError, ValueError):
        return False
    for c in classes:
        body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == c), [])
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func for n in body)


def check(task_id: str, timeout: float) -> str | None:
    """None when the task holds, else what is wrong."""
    from frog_gym.generators.validate import Scratch, pristine_template
    from frog_gym.grading import run_tests
    from frog_gym.live import is_live, task_spec
    from frog_gym.snapshot import prepare
    from frog_gym.task import load_task
    from frog_gym.workspace import apply_patch, template_for

    task = load_task(task_id)
    if task.instance_id != task_id:  # its file was rewritten between reading the index and the record
        raise RuntimeError(f"the registry changed while {task_id} was read; run again")
    repo = prepare(task_spec(task))  # a FrogLive task runs on its own release
    with Scratch() as ws:
        if is_live(task_id):  # release N's tree never had release N+1's tests: grading adds them
            ws.sync(pristine_template(repo))
            apply_patch(ws.path, task.bug_patch, f"the bug of {task_id}")
            apply_patch(ws.path, task.test_patch, f"the hidden tests of {task_id}")
        else:  # the starting tree as an agent gets it (hidden tests cut), then what grading adds back
            start = template_for(repo, task.bug_patch, task_id, hidden_tests=task.test_patch)
            ws.sync(start)
            hidden = [t for t in task.FAIL_TO_PASS if _defined(ws.path, t)]
            if task.test_patch and len(hidden) == len(task.FAIL_TO_PASS):
                return f"the workspace still defines hidden FAIL_TO_PASS tests: {hidden[:3]}"
            if start.hidden_tests:
                apply_patch(ws.path, start.hidden_tests, f"the hidden tests of {task_id}")
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
    p.add_argument("--all", action="store_true", help="every task of FrogSWE-v0's pool (not a sample of --n)")
    p.add_argument("--record", help="append each verdict here as a JSON line; skip the tasks it records")
    args = p.parse_args(argv)

    from frog_gym.task import task_index

    if args.all:
        from frog_gym.env import default_pool

        ids = default_pool()
        sample = random.Random(args.seed).sample(ids, len(ids))
    else:
        ids = sorted(task_index())
        sample = random.Random(args.seed).sample(ids, min(args.n, len(ids)))
    done: set[str] = set()
    if args.record:
        try:
            with open(args.record, encoding="utf-8") as f:
                done = {json.loads(line)["id"] for line in f if line.strip()}
        except FileNotFoundError:
            pass
        sample = [t for t in sample if t not in done]
    start = time.monotonic()
    bad, checked, skipped = [], 0, []
    for i, task_id in enumerate(sample, 1):
        if time.monotonic() - start > args.budget:
            skipped = sample[i - 1:]
            break
        t0 = time.monotonic()
        if args.all:  # the registry may change under a long run (generation retiring tasks): read it afresh
            from frog_gym.task import refresh_tasks

            refresh_tasks()
            if task_id not in task_index():
                print(f"[{i:2}/{len(sample)}] {task_id:56} no longer registered", flush=True)
                continue
        try:
            problem = check(task_id, args.timeout)
        except Exception as e:  # noqa: BLE001 (reported, counted as a failure)
            problem = f"{type(e).__name__}: {e}"
        checked += 1
        if args.record:
            with open(args.record, "a", encoding="utf-8") as f:
                f.write(json.dumps({"id": task_id, "ok": problem is None, "problem": problem,
                                    "seconds": round(time.monotonic() - t0, 1)}) + "\n")
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
