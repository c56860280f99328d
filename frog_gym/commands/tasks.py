"""``frog-gym tasks``: list the registered tasks, check their statements, show their difficulty."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

HELP = "List registered tasks (ids usable as gym ids FrogSWE/<id>-v0)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", help="only tasks of this repository")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--check-statements", action="store_true",
                   help="check every statement (no FAIL_TO_PASS test named, no mutated line quoted, every named "
                        "module/function exists); exit 1 if any fails")
    p.add_argument("--restate", action="store_true",
                   help="rewrite every statement (of --repo, or all) with the built-in writer from what the old "
                        "statement recorded of the first failure (rewrites the task files)")
    p.add_argument("--hide-tests", action="store_true",
                   help="compute every task's test_patch (its FAIL_TO_PASS tests, hidden until grading) from the "
                        "pristine snapshot (rewrites the task files)")
    p.add_argument("--dedupe", action="store_true",
                   help="drop redundant tasks: one single-bug task per mutated line, and every combined task "
                        "holding a bug that is not itself a task (rewrites the task files)")
    p.add_argument("--drop-ungradable", action="store_true",
                   help="drop PASS_TO_PASS tests that fail on the pristine tree as grading runs it (tests mounted "
                        "read-only: a test that writes into its own folder), and tasks whose FAIL_TO_PASS holds one "
                        "(rewrites the task files)")
    p.add_argument("--difficulty", action="store_true",
                   help="the distribution of measured solve rates (tasks without one are counted apart), and the "
                        "solve rate per statement level, tier and bug family")
    p.add_argument("--import-results", metavar="RUN_DIR",
                   help="store the solve rates of a `frog-gym bench` run in the task records (measured difficulty)")
    p.add_argument("--label", help="with --import-results: the agent name to record (default: the run's)")
    p.add_argument("--unmeasured", metavar="AGENT",
                   help="print only the ids of the tasks (of --repo, or all) with no solve rate of AGENT, one a "
                        "line: a suite file for `frog-gym bench --suite FILE` that measures the rest")


def run(args: argparse.Namespace) -> int:
    from frog_gym.errors import UsageError, did_you_mean
    from frog_gym.catalog.spec import repo_names
    from frog_gym.catalog.task import load_task, task_index

    if args.repo and args.repo not in repo_names():
        raise UsageError(f"--repo: no repository '{args.repo}'.{did_you_mean(args.repo, repo_names())} "
                         "See `frog-gym registry list`.")
    ids = [i for i in sorted(task_index()) if not args.repo or load_task(i).repo == args.repo]
    if args.unmeasured:
        for iid in ids:
            if args.unmeasured not in load_task(iid).solve_rates:
                print(iid)
        return 0
    if args.check_statements:
        return _check(ids)
    if args.import_results:
        from pathlib import Path

        from frog_gym.generators.difficulty import record_results

        if not (Path(args.import_results) / "results.jsonl").is_file() and not Path(args.import_results).is_file():
            print(f"frog-gym tasks: {args.import_results} holds no results.jsonl; give a `frog-gym bench` run "
                  "directory", file=sys.stderr)
            return 2
        counts = record_results(args.import_results, args.label)
        print(f"solve rates recorded for {sum(counts.values())} tasks in {len(counts)} task files")
        return 0
    if args.dedupe:
        return _dedupe(ids)
    if args.drop_ungradable:
        from frog_gym.generators.validate import drop_ungradable
        from frog_gym.catalog.live import is_live
        from frog_gym.catalog.task import refresh_tasks

        for name in sorted({task_index()[i][0] for i in ids if not is_live(i)}):  # FrogLive's: graded when mined
            counts = drop_ungradable(_task_path(name))
            print(f"{name}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())), flush=True)
        refresh_tasks()
        return 0
    if args.restate or args.hide_tests:
        from frog_gym.generators.hidden import hide_tests_file
        from frog_gym.generators.restate import restate_file
        from frog_gym.catalog.live import is_live
        from frog_gym.catalog.task import refresh_tasks

        rewrite = restate_file if args.restate else hide_tests_file
        # FrogLive's hidden tests are the fix's own test changes, set when mined on the release before it
        # FrogLive's statements are changelog entries (`frog-gym mine --restate` rewrites them)
        names = {task_index()[i][0] for i in ids if not is_live(i)}
        for name in sorted(names):
            counts = rewrite(_task_path(name))
            print(f"{name}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())), flush=True)
        if args.restate:
            from frog_gym.generators.restate import distinguish_registry

            from frog_gym.generators.restate import restate_generated_live

            live = {task_index()[i][0] for i in ids if is_live(i)}  # a shared changelog entry says which part
            for name in sorted(live):
                counts = restate_generated_live(_task_path(name))
                print(f"{name}: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())), flush=True)
            print(f"made unique: {distinguish_registry([_task_path(n) for n in sorted(names | live)])} statement(s)")
        refresh_tasks()
        return 0
    if args.difficulty:
        from frog_gym.generators.difficulty import breakdown, histogram

        tasks = [load_task(i) for i in ids]
        print(histogram(tasks))
        table = breakdown(tasks)
        if table:
            print(table)
        return 0
    from frog_gym.grading.oracle import coverage

    for iid in ids:
        t = load_task(iid)
        cov = coverage(t)
        if args.json:
            print(json.dumps({"instance_id": iid, "repo": t.repo, "statement_level": t.statement_level,
                              "f2p": len(t.FAIL_TO_PASS), "p2p": len(t.PASS_TO_PASS), "features": t.features,
                              "oracle": cov}))
        else:
            label = "?" if cov is None else str(cov["calls"]) if cov["calls"] else "-"
            print(f"{iid:48} {t.repo:16} F2P={len(t.FAIL_TO_PASS):<4} P2P={len(t.PASS_TO_PASS):<5} "
                  f"oracle={label:<4} {t.statement_level}")
    if not args.json:
        print("oracle=N: the grade replays N recorded calls; -: no oracle (`--json` says why); ?: not recorded "
              "(frog-gym oracle record)", file=sys.stderr)
    return 0


def _check(ids: list[str]) -> int:
    from frog_gym.generators.statement_check import check_task
    from frog_gym.catalog.task import load_task

    kinds: Counter = Counter()
    bad = 0
    for iid in ids:
        found = check_task(load_task(iid))
        if found:
            bad += 1
            for f in found:
                kinds["names a test" if "FAIL_TO_PASS" in f else "quotes the mutated line" if f.startswith("quotes")
                      else "names a missing symbol"] += 1
            print(f"{iid}: " + "; ".join(found))
    detail = ", ".join(f"{k}: {n}" for k, n in kinds.most_common())
    print(f"checked {len(ids)} statements: {len(ids) - bad} ok, {bad} rejected" + (f" ({detail})" if detail else ""),
          file=sys.stderr)
    return 1 if bad else 0


def _task_path(name: str):  # noqa: ANN202 (a Path)
    import os
    from importlib import resources
    from pathlib import Path

    if os.path.isabs(name):
        return Path(name)
    with resources.as_file(resources.files("frog_gym.registry").joinpath("tasks", name)) as p:
        return Path(p)


def _dedupe(ids: list[str]) -> int:
    from frog_gym.generators import dedupe
    from frog_gym.generators.taskfiles import read_existing, rewrite_task_file
    from frog_gym.catalog.task import refresh_tasks, task_index

    total = kept = 0
    for name in sorted({task_index()[i][0] for i in ids}):
        path = _task_path(name)
        drop = dedupe.plan(read_existing(path))
        counts = rewrite_task_file(path, lambda d: None if d["instance_id"] in drop else d)
        total += sum(counts.values())
        kept += sum(counts.values()) - counts["dropped"]
        print(f"{name}: dropped {counts['dropped']}, kept {sum(counts.values()) - counts['dropped']}", flush=True)
    refresh_tasks()
    print(f"kept {kept} of {total} tasks")
    return 0
