"""What reward integrity costs a grade: the guarded path against the unguarded one, paired in one run.

Both sides grade the same gold fix of the same task in the same scratch tree and venv, alternating:

- **unguarded** (the grading of before issue 11): sync the scratch tree, write the changes, run the
  selected tests with the report plugin, read the report.
- **guarded** (``frog_gym.grading.grade.grade``, cache off): the same, plus the scope split, the static check,
  canaries appended to a test file, the signing key through a FIFO, signature verification and the test
  paths mounted read-only.

Target (issue 11): at most 0.1 s more per grade. Prints p50 and p99 of each side, the difference of the
medians, and the load. Run: ``python benchmarks/grading_integrity.py [--task ID ...] [--n 10]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from frog_gym.grading.runner import run_tests
from frog_gym.grading.grade import grade, scope
from frog_gym.sandbox.reaper import work_dir
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo
from frog_gym.catalog.task import load_task
from frog_gym.sandbox.workspace import Change, Workspace, template_for, write_changes

DEFAULT_TASKS = ("inflection__handwritten-0001", "iniconfig__arithmetic_op_swap-3e9569c7",
                 "inflection__handwritten-0005")


def gold_changes(repo, task, template) -> list[Change]:
    """The gold fix as the agent's changes: each touched file as the repository's release has it."""
    out = []
    for line in task.patch.splitlines():
        if line.startswith("+++ b/"):
            rel = line[6:].strip()
            out.append(Change(rel, (template.root / rel).read_bytes(), (repo.tree / rel).read_bytes()))
    return out


def pctl(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", action="append", help="task id (repeatable); default: three small repositories")
    ap.add_argument("--n", type=int, default=10, help="pairs per task")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    deltas = []
    for tid in args.task or DEFAULT_TASKS:
        task = load_task(tid)
        repo = prepare(load_repo(task.repo))
        template = template_for(repo, task.bug_patch, tid)
        changes = gold_changes(repo, task, template)
        scratch = Workspace(work_dir())
        try:
            plain, guarded = [], []
            for i in range(args.n * 2):
                t = time.perf_counter()
                if i % 2 == 0:
                    kept, _ = scope(repo, task, template, changes)
                    scratch.sync(template)
                    write_changes(scratch.path, kept)
                    r = run_tests(repo, scratch.path, task.selected_tests, 600)
                    assert all(s.ok for s in r.statuses.values()), r.note
                    plain.append(time.perf_counter() - t)
                else:
                    rep = grade(repo, task, template, changes, scratch, use_cache=False)
                    assert rep.is_resolved, rep.note
                    guarded.append(time.perf_counter() - t)
        finally:
            scratch.remove()
        d = statistics.median(guarded) - statistics.median(plain)
        deltas.append(d)
        print(f"{tid}: unguarded p50 {statistics.median(plain) * 1000:.0f} ms p99 {pctl(plain, .99) * 1000:.0f} ms | "
              f"guarded p50 {statistics.median(guarded) * 1000:.0f} ms p99 {pctl(guarded, .99) * 1000:.0f} ms | "
              f"+{d * 1000:.0f} ms ({statistics.median(guarded) / statistics.median(plain):.2f}x)")
    print(f"median extra cost per grade: {statistics.median(deltas) * 1000:.0f} ms (target: at most 100 ms); "
          f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
