"""Finish the hunk reduction of live tasks whose mining ran out of runs (issue 22: each fix minimal).

Mining reduces a release pair's source change to the hunks a group of failing tests needs, by delta debugging
within a budget of test runs (``generators/mine.py``'s ``MAX_RUNS``); where the budget ran out it keeps the
passing, not proven minimal, hunk set and records ``features["minimal"] = False``. This module takes such a
task as it is registered and reduces its gold patch further, with a larger budget:

- the hunks are the gold patch's own (against release N, the task's snapshot), and a subset *passes* when every
  FAIL_TO_PASS and PASS_TO_PASS test passes with the task's hidden tests and that subset applied to release N;
- delta debugging (:func:`frog_gym.generators.hunks.minimize`) ends at a 1-minimal subset (removing any one hunk
  fails a test) unless the budget runs out first; then the smaller passing subset it reached is kept, still marked
  not minimal;
- a smaller patch is kept only after the task, with it, grades as mining validates a task
  (:func:`frog_gym.generators.mine.validate_live`: ``runs`` graded runs without a fix, none resolved, and with
  the gold patch, all resolved); a 1-minimal patch that is the whole patch just gets ``minimal`` true.

The task keeps its id, release, tests and statement; its ``patch`` and the ``features`` that describe it change.
Its oracle and its graded revalidation verdict are made from the gold patch, so a changed task needs both again
(``frog-gym oracle record --ids``, ``python .ci/sample_tasks.py --graded --record``).

    frog-gym mine --minimize REPO... [--budget N]   # every live task of REPO whose reduction ran out
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from frog_gym.catalog.live import task_spec
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.task import Task, ids_sidecar_text, load_tasks_file
from frog_gym.generators.hunks import apply_hunks, hunks_of, minimize
from frog_gym.generators.validate import Scratch
from frog_gym.grading.runner import TestStatus
from frog_gym.sandbox.workspace import diff_text

BUDGET = 200
"""Test runs one task's reduction may use (mining's own is 20 per group)."""


@dataclass
class Reduction:
    """What reducing one task did: hunks before and after, whether the result is proven 1-minimal, the test runs
    it took, and why the task was left as it was (``why``; empty when it changed or was proven minimal)."""

    task_id: str
    hunks: int
    kept: int
    minimal: bool
    runs: int = 0
    seconds: float = 0.0
    why: str = ""


def reduce_task(task: Task, budget: int = BUDGET, runs: int = 3, timeout: float = 180.0) -> tuple[Task, Reduction]:
    """``task`` with its gold patch reduced to a 1-minimal hunk set (see the module docstring), and what was done.
    Never raises for a task that does not reduce: the task comes back unchanged with the reason."""
    from frog_gym.generators.mine import _changes_of, _Pair, _text, validate_live

    start = time.monotonic()
    repo = prepare(task_spec(task))
    gold = _changes_of(repo.tree, task.patch)
    hidden = _changes_of(repo.tree, task.test_patch)
    old_text = {c.path: _text(c.old) for c in gold}
    hunks = [h for c in gold for h in hunks_of(c.path, _text(c.old), _text(c.new))]
    ids = tuple(dict.fromkeys(task.FAIL_TO_PASS + task.PASS_TO_PASS))
    files = sorted({t.split("::", 1)[0] for t in ids})
    rep = Reduction(task.instance_id, len(hunks), len(hunks), False)

    def done(t: Task, why: str = "") -> tuple[Task, Reduction]:
        rep.why, rep.seconds = why, round(time.monotonic() - start, 1)
        return t, rep

    if any(v is None for v in old_text.values()) or any(c.new is None for c in gold):
        return done(task, "the patch adds or deletes a whole file: left as mined")
    text = {p: t for p, t in old_text.items() if t is not None}
    with Scratch() as ws:
        pair = _Pair(repo.spec, repo, repo, ws, timeout)

        def passes(idx: list[int]) -> bool:
            r = pair.run(repo, pair.base, hidden + apply_hunks(text, [hunks[i] for i in idx]), files, ids,
                         first_failure=True)
            return not r.infra_failure and all(r.statuses.get(t, TestStatus.MISSING).ok for t in ids)

        everything = list(range(len(hunks)))
        if not passes(everything):
            rep.runs = pair.runs
            return done(task, "the gold patch does not pass its own tests in the reduction's runs")
        left = [budget]
        chosen = minimize(everything, passes, left)
        rep.runs, rep.kept, rep.minimal = pair.runs, len(chosen), left[0] > 0
        ran_out = "" if rep.minimal else (f"the budget of {budget} runs ran out "
                                          f"({len(chosen)} of {len(hunks)} hunks left)")
        features = {**task.features, "minimal": rep.minimal, "hunks": len(chosen), "n_sites": len(chosen),
                    "files_touched": len({hunks[i].path for i in chosen})}
        if len(chosen) == len(hunks):
            return done(dataclasses.replace(task, features=features), ran_out) if rep.minimal else done(task, ran_out)
        patch = diff_text(apply_hunks(text, [hunks[i] for i in chosen]))
        smaller = dataclasses.replace(task, patch=patch, features=features)
        ok, why, _ = validate_live(pair, smaller, runs)
        rep.runs = pair.runs
        if not ok:
            rep.kept, rep.minimal = len(hunks), False
            return done(task, f"the reduced patch does not grade as a fix: {why[:200]}")
        return done(smaller, ran_out)  # past the budget: smaller and passing, still not proven minimal


def minimize_file(path: Path, budget: int = BUDGET, runs: int = 3,
                  log: Callable[[str], None] = print) -> list[Reduction]:
    """Reduce every task of a live task file whose ``features["minimal"]`` is false, rewriting the file after each
    one (an interrupted run keeps what it finished); returns what each reduction did."""
    tasks = load_tasks_file(str(path))
    out: list[Reduction] = []
    for i, t in enumerate(tasks):
        if (t.features or {}).get("minimal", True):
            continue
        new, rep = reduce_task(t, budget, runs)
        out.append(rep)
        log(f"{rep.task_id}: {rep.hunks} -> {rep.kept} hunks, "
            f"{'1-minimal' if rep.minimal else 'not proven minimal'}, {rep.runs} runs, {rep.seconds:.0f} s"
            + (f" ({rep.why})" if rep.why else ""))
        if new is not t:
            tasks[i] = new
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(x.to_json() + "\n" for x in tasks), encoding="utf-8")
            os.replace(tmp, path)
            path.with_suffix(".ids").write_text(ids_sidecar_text(path.read_bytes()), encoding="utf-8")
    return out
