#!/usr/bin/env python
"""Re-validate a random sample of registered tasks: the bug fails its FAIL_TO_PASS, the gold fix passes all,
under the hidden-tests contract (the starting tree lacks the FAIL_TO_PASS tests; grading's test_patch
puts them back).

Usage: python .ci/sample_tasks.py [--n 20] [--seed S] [--budget 900] [--graded]
       python .ci/sample_tasks.py --all --record FILE [--budget SECONDS] [--graded]   (every registered task)
       python .ci/sample_tasks.py --summary --record FILE   (counts, failures by reason, seconds per task)
       python .ci/sample_tasks.py --ids ID... [--graded] [--record FILE]   (these tasks, again)

Each sampled task is applied to a fresh copy of its repository's pristine snapshot in the sandbox and its
FAIL_TO_PASS + PASS_TO_PASS tests run together, as grading runs them: with the bug patch, every
FAIL_TO_PASS test must fail and every PASS_TO_PASS test pass; with the gold patch on top, all must pass. The sample is seeded (default: the date, so each day checks other tasks).
Tasks left when ``--budget`` seconds have passed are reported as not checked, and do not fail the run;
any checked task that breaks a rule does. Exit status: 0 when every checked task holds.

``--graded`` checks each task through the env instead, exactly as an episode is graded (:func:`check_graded`):
``FrogSWE-v0``'s ``reset(options={"task_id": ...})``, submit the untouched bug state (every FAIL_TO_PASS test
fails, every PASS_TO_PASS test passes, no tampering, no infrastructure failure), reset again, write the gold
fix's files with the env's own ``create`` tool, submit (RESOLVED_FULL, no tampering). A grade the grade cache
answers is dropped from it and run again, so every verdict comes from a test run made now. Grading is then warm
(one grading server per repository venv), so the tasks run grouped by repository venv, the groups in seeded
order, and one env serves the whole run. The cold check stays the default. Measured on 2026-12-03 (2 shared
cores, ``--summary`` of docs/revalidation.jsonl): graded median 1.0 s, p90 3.2 s per task, over all 2,019
tasks; cold median 17.7 s, p90 54.2 s over 152 tasks of earlier runs (not paired: other hours, other load).

``--all`` checks every registered task: ``FrogSWE-v0``'s pool, the FrogLive tasks (on their own release) and the
embedded default's, in a seeded order (cold: shuffled, so an unfinished run has checked a uniform sample; graded:
grouped as above); ``--record FILE`` appends one JSON line per checked task (id, mode, verdict, seconds, and the
task's :func:`validated_digest`) and skips the tasks a line of the same mode already records for the task as it
stands (same digest; a line without a mode is a cold one), so a run resumes where it stopped and a task changed
since its last verdict is checked again.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path


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


def validated_digest(task) -> str:
    """A hash of what a verdict depends on: the snapshot, the bug, the hidden tests, the gold fix and the test ids
    (not the statement, which no test run reads). A verdict recorded under another digest is about another task."""
    import hashlib

    parts = [task.repo, task.version, task.base_commit, task.bug_patch, task.test_patch, task.patch,
             task.FAIL_TO_PASS, task.PASS_TO_PASS]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def verdicts(record: str, mode: str = "graded") -> dict[str, dict]:
    """The last line of ``mode`` per task id in ``record`` (a line without a mode is a cold one)."""
    last: dict[str, dict] = {}
    with open(record, encoding="utf-8") as f:
        for r in map(json.loads, filter(str.strip, f)):
            if r.get("mode", "cold") == mode:
                last[r["id"]] = r
    return last


def check(task_id: str, timeout: float) -> str | None:
    """None when the task holds, else what is wrong."""
    from frog_gym.generators.validate import Scratch, pristine_template
    from frog_gym.grading.runner import run_tests
    from frog_gym.catalog.live import is_live, task_spec
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.catalog.task import load_task
    from frog_gym.sandbox.workspace import apply_patch, template_for

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


def gold_files(task, tree) -> dict[str, bytes | None]:
    """The files ``task``'s gold fix changes, as it leaves them on ``tree`` (the task's starting tree):
    path -> new bytes, or None for a file the fix deletes. ``tree`` itself is not touched."""
    import shutil
    import tempfile

    from frog_gym.grading.runner import patch_files
    from frog_gym.sandbox.workspace import apply_patch

    files = sorted(patch_files(task.patch) - {"/dev/null"})
    with tempfile.TemporaryDirectory() as tmp:
        for rel in files:
            if (tree / rel).is_file():
                (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(tree / rel, Path(tmp) / rel)
        apply_patch(Path(tmp), task.patch, f"the gold fix of {task.instance_id}")
        return {rel: (Path(tmp) / rel).read_bytes() if (Path(tmp) / rel).is_file() else None for rel in files}


def _episode(env, task_id: str, files: dict[str, bytes | None], fresh: bool) -> tuple[dict, str | None, bool]:
    """One episode of ``task_id`` in ``env``: write ``files`` with the env's tools (None: delete), submit.

    Returns the episode's GradeReport (as a dict), what went wrong outside the grade (an infrastructure
    failure, a refused write) and whether the episode was run twice: with ``fresh``, a grade the grade cache
    answered is dropped from it and the episode run again, so that the verdict comes from a test run made now
    (the new grade is cached in turn).
    """
    for attempt in (1, 2):
        env.reset(options={"task_id": task_id})
        for rel, data in files.items():
            if data is None:
                obs, _, _, _, info = env.step({"tool": "bash", "command": f"rm -f -- {_quote(rel)}"})
            else:
                obs, _, _, _, info = env.step({"tool": "create", "path": rel,
                                               "file_text": data.decode("utf-8", "surrogateescape")})
            if not info.get("action_ok"):
                return {}, f"the env refused the write of {rel}: {obs[:300]}", attempt > 1
        _, _, terminated, _, info = env.step({"tool": "submit"})
        if not terminated or "report" not in info:
            return {}, f"submit did not grade: {info.get('infra_failure') or info.get('error') or info}", attempt > 1
        report = info["report"]
        if not (fresh and report["cached"] and attempt == 1):
            infra = report["infra_failure"]
            return report, (f"infrastructure failure: {infra}" if infra else None), attempt > 1
        Path(report["log_path"]).with_suffix(".json").unlink(missing_ok=True)
    raise AssertionError("unreachable")


def check_graded(env, task_id: str, fresh: bool = True) -> tuple[str | None, dict]:
    """Check ``task_id`` through ``env`` (a ``FrogSWE-v0`` env) as an episode is graded.

    Returns None when the task holds, else what is wrong; and facts about the run (``regraded``: how many
    of the two grades the grade cache held, then dropped and run again; see :func:`_episode`).
    """
    from frog_gym.catalog.live import is_live
    from frog_gym.catalog.task import load_task

    task = load_task(task_id)
    if task.instance_id != task_id:  # its file was rewritten between reading the index and the record
        raise RuntimeError(f"the registry changed while {task_id} was read; run again")
    env.reset(options={"task_id": task_id})
    start = env.unwrapped._ws.path  # read before any action: no agent process is alive
    # A FrogLive task starts on release N, which never had release N+1's tests: nothing is hidden there.
    if task.test_patch and not is_live(task_id):
        hidden = [t for t in task.FAIL_TO_PASS if _defined(start, t)]
        if len(hidden) == len(task.FAIL_TO_PASS):
            return f"the workspace still defines hidden FAIL_TO_PASS tests: {hidden[:3]}", {}
    gold = gold_files(task, start)
    report, trouble, again = _episode(env, task_id, {}, fresh)
    facts = {"regraded": int(again)}
    if trouble:
        return f"bug grade: {trouble}", facts
    if report["tampering"]:
        return f"bug grade: tampering flagged on the untouched tree: {report['tampering'][:3]}", facts
    why = f" ({report['note'][:300]})" if report["note"] else ""  # e.g. the run was killed at the time limit
    if report["fail_to_pass"]["success"]:
        passing = report["fail_to_pass"]["success"]
        return f"with the bug, {len(passing)} FAIL_TO_PASS tests pass: {passing[:3]}{why}", facts
    if report["pass_to_pass"]["failure"]:
        broken = report["pass_to_pass"]["failure"]
        return f"with the bug, {len(broken)} PASS_TO_PASS tests fail: {broken[:3]}{why}", facts
    if report["resolved"] != "RESOLVED_NO":
        return f"with the bug, the grade is {report['resolved']}, not RESOLVED_NO ({report['note']})", facts
    report, trouble, again = _episode(env, task_id, gold, fresh)
    facts["regraded"] += int(again)
    if trouble:
        return f"gold grade: {trouble}", facts
    if report["tampering"]:
        return f"the gold fix is flagged as tampering: {report['tampering'][:3]}", facts
    if report["resolved"] != "RESOLVED_FULL":
        failing = report["fail_to_pass"]["failure"] + report["pass_to_pass"]["failure"]
        return (f"with the gold fix, the grade is {report['resolved']}: {len(failing)} selected tests fail: "
                f"{failing[:3]}" + (f" ({report['note'][:300]})" if report["note"] else "")), facts
    return None, facts


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)


def graded_order(ids: list[str], seed: str) -> list[str]:
    """``ids`` grouped by the repository venv they run in (a FrogLive task's release is its own), the groups
    in seeded random order and each group's tasks too: each warm grading server is started once."""
    from frog_gym.catalog.live import task_spec
    from frog_gym.catalog.task import load_task

    rng = random.Random(seed)
    groups: dict[tuple[str, str], list[str]] = {}
    for t in sorted(ids):
        spec = task_spec(load_task(t))
        groups.setdefault((spec.name, spec.source.key), []).append(t)
    keys = sorted(groups)
    rng.shuffle(keys)
    return [t for k in keys for t in rng.sample(groups[k], len(groups[k]))]


def summary(record: str, registered: list[str]) -> str:
    """Per mode of ``record``'s lines (a task's last line counts): tasks checked, passed, failed by reason (the
    problem's text before its first colon, numbers as N), not reached among ``registered``, and the seconds
    per task (median, p90)."""
    import re
    import statistics
    from collections import Counter

    last: dict[str, dict[str, dict]] = {}
    with open(record, encoding="utf-8") as f:
        for r in map(json.loads, filter(str.strip, f)):
            last.setdefault(r.get("mode", "cold"), {})[r["id"]] = r
    out = []
    for mode, rows in sorted(last.items()):
        secs = sorted(r["seconds"] for r in rows.values())
        bad = Counter(re.sub(r"\d+", "N", r["problem"].split(":")[0]) for r in rows.values() if not r["ok"])
        gone = len(set(rows) - set(registered))
        out.append(f"{mode}: {len(rows)} checked ({gone} no longer registered), {len(rows) - sum(bad.values())} passed, "
                   f"{sum(bad.values())} failed, {len(set(registered) - set(rows))} of the {len(registered)} registered "
                   f"not reached; seconds per task: median {statistics.median(secs):.1f}, "
                   f"p90 {secs[int(0.9 * (len(secs) - 1))]:.1f}")
        out += [f"  {n:5}  {why}" for why, n in bad.most_common()]
        if any("digest" in r for r in rows.values()):
            from frog_gym.catalog.task import load_task

            held = sum(1 for t in registered if t in rows and rows[t]["ok"]
                       and rows[t].get("digest") == validated_digest(load_task(t)))
            out.append(f"  {held} of the {len(registered)} registered hold as they stand (a verdict under their digest)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--seed", default=time.strftime("%Y-%m-%d"))
    p.add_argument("--budget", type=float, default=900.0, help="seconds for the whole sample")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per test run")
    p.add_argument("--all", action="store_true",
                   help="every registered task: FrogSWE-v0's pool and the FrogLive tasks (not a sample of --n)")
    p.add_argument("--graded", action="store_true",
                   help="check through the env and its warm grading, as an episode is graded (default: cold)")
    p.add_argument("--record", help="append each verdict here as a JSON line; skip the tasks it records in this mode")
    p.add_argument("--summary", action="store_true", help="print what --record FILE holds per mode, and check nothing")
    p.add_argument("--ids", nargs="+", metavar="ID",
                   help="check these tasks (again: a verdict --record holds is not skipped; the last line counts)")
    args = p.parse_args(argv)
    mode = "graded" if args.graded else "cold"

    from frog_gym.catalog.task import load_task, registered_task_ids, task_index

    if args.summary:
        if not args.record:
            p.error("--summary reads the file of --record FILE; name it")
        print(summary(args.record, registered_task_ids()))
        return 0
    if args.ids:
        unknown = [t for t in args.ids if t not in task_index()]
        if unknown:
            p.error(f"unknown task ids {unknown}; see `frog-gym tasks`")
        sample = list(args.ids)
    elif args.all:
        ids = registered_task_ids()
        sample = random.Random(args.seed).sample(ids, len(ids))
    else:
        ids = sorted(task_index())
        sample = random.Random(args.seed).sample(ids, min(args.n, len(ids)))
    if args.graded:
        sample = graded_order(sample, args.seed)
    if args.record and not args.ids:
        try:
            done = verdicts(args.record, mode)
        except FileNotFoundError:
            done = {}
        sample = [t for t in sample
                  if t not in done or done[t].get("digest") != validated_digest(load_task(t))]
    env = None
    if args.graded:
        import gymnasium as gym

        import frog_gym  # noqa: F401 (registers FrogSWE-v0)

        env = gym.make("FrogSWE-v0", grade_timeout_s=args.timeout)
    try:
        start = time.monotonic()
        bad, checked, skipped = [], 0, []
        for i, task_id in enumerate(sample, 1):
            if time.monotonic() - start > args.budget:
                skipped = sample[i - 1:]
                break
            t0 = time.monotonic()
            if args.all:  # the registry may change under a long run (generation retiring tasks): read it afresh
                from frog_gym.catalog.task import refresh_tasks

                refresh_tasks()
                if task_id not in task_index():
                    print(f"[{i:2}/{len(sample)}] {task_id:56} no longer registered", flush=True)
                    continue
            facts: dict = {"digest": validated_digest(load_task(task_id))}
            try:
                if env is not None:
                    problem, more = check_graded(env, task_id)
                    facts |= more
                else:
                    problem = check(task_id, args.timeout)
            except Exception as e:  # noqa: BLE001 (reported, counted as a failure)
                problem = f"{type(e).__name__}: {e}"
            checked += 1
            if args.record:
                with open(args.record, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"id": task_id, "mode": mode, "ok": problem is None, "problem": problem,
                                        "seconds": round(time.monotonic() - t0, 1), **facts}) + "\n")
            print(f"[{i:2}/{len(sample)}] {task_id:56} {'ok' if problem is None else 'FAIL: ' + problem} "
                  f"({time.monotonic() - t0:.1f} s)", flush=True)
            if problem is not None:
                bad.append(task_id)
    finally:
        if env is not None:
            env.close()
    if skipped:
        print(f"budget of {args.budget:.0f} s reached; {len(skipped)} tasks not checked: {', '.join(skipped)}")
    print(f"{checked - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
