"""CPU time of the host's static check of an episode's edits (``frog_gym.grading.integrity.scan``), on the
harness's mixed suite: what a grade pays on the host before any test runs.

For each task of ``benchmarks/harness.py``'s suite, every file the gold fix touches is checked as a grade checks it:
the file as the agent found it (the buggy file), the repository's pristine file, and the agent's final file (the
gold fix plus a unique comment, as the harness's agent writes it). Two passes are timed:

* **first visit**: nothing analysed before, as when each task is seen once (the harness's one pass): three
  analyses per file;
* **first visit, kept**: the same, in a process that did not analyse them, with the starting and pristine files'
  analyses kept on disk (``$FROG_GYM_HOME/analyses``) by an earlier one: only the final file is analysed;
* **revisit**: the same tasks with another unique comment, as a training pool revisits them: the buggy and
  pristine files' analyses are cached, so only the final file is analysed.

Measured (2026-12-04, 50 tasks of 10 repositories, 64 files, FrogLive miners beside): first visit 3.0-3.2 s of CPU,
revisit 0.6-0.7 s, against 29 s for the whole warm side of one harness pass (``benchmarks/harness.py --rounds 2``:
29.1 and 28.9 s).

Session 14 (the analyses of files no agent wrote kept on disk, load 4-5): first visit 1.45 s, first visit with the
analyses kept 0.41 s, revisit 0.39 s.

Session 17, the agent's file walked by parts (only the top-level statements whose exact source and module context
no kept analysis walked; the starting file's parts kept with its analysis): see the last line it prints, the final
files alone by parts against the same files walked whole, alternated in one run.

Session 20, the module's bindings read from its statements alone (not every node), alternated twice with the
session's first tree (a worktree of 3c49be6 on ``PYTHONPATH``; 91 files, load 0.9): first visit 1.50 / 1.47 ->
1.25 / 1.26 s, first visit with the analyses kept 0.21 / 0.21 -> 0.16 / 0.16 s, revisit 0.18 / 0.19 -> 0.14 / 0.13 s.

    python benchmarks/static_check_cost.py [--tasks 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import mixed_tasks  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=50, help="tasks of the harness's mixed suite")
    args = p.parse_args()

    from frog_gym.agents.oracle import hunks
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.catalog.spec import load_repo
    from frog_gym.catalog.task import load_task
    from frog_gym.grading import integrity

    files = []  # (path, as the agent found it, pristine)
    for tid in mixed_tasks(args.tasks):
        task = load_task(tid)
        tree = prepare(load_repo(task.repo)).tree
        for path, old, new in hunks(task.patch):
            pristine = (tree / path).read_bytes()
            buggy = pristine.decode("utf-8").replace(new, old, 1).encode("utf-8")
            files.append((path, buggy, pristine))

    def one_pass() -> float:
        mark = f"\n# {uuid.uuid4().hex}\n".encode()
        start = time.process_time()
        for path, buggy, pristine in files:
            integrity.scan([(path, buggy, pristine + mark, pristine)])
        return time.process_time() - start

    def final_files(whole: bool) -> float:
        """The agent's final files alone (the starting files' analyses already at hand): walked by parts, as
        grading does, or whole, as before the parts (parse, every statement walked, the vocabulary)."""
        import ast

        mark = f"\n# {uuid.uuid4().hex}\n".encode()
        start = time.process_time()
        for path, _, pristine in files:
            if whole:
                tree = ast.parse(pristine + mark)
                integrity._Walk(path, tree).visit(tree)
                integrity._vocabulary(tree)
            else:
                integrity._analysis(path, pristine + mark)
        return time.process_time() - start

    with tempfile.TemporaryDirectory() as home:
        os.environ["FROG_GYM_HOME"] = home  # nothing kept yet (the venvs were found above)
        first = one_pass()
        integrity._kept_analysis.cache_clear()  # a new process: the starting files' analyses read back from disk
        integrity._analysis.cache_clear()
        integrity._PARTS.clear()
        kept = one_pass()
        again = one_pass()
        sides = {"parts": [], "whole": []}
        for i in range(6):  # alternated, median of three each
            side = ("parts", "whole")[i % 2]
            sides[side].append(final_files(side == "whole"))
    print(f"{args.tasks} tasks, {len(files)} files: static check CPU, first visit {first:.2f} s "
          f"({1000 * first / len(files):.0f} ms a file), first visit in another process with the starting files' "
          f"analyses kept {kept:.2f} s ({1000 * kept / len(files):.0f} ms a file), revisit {again:.2f} s "
          f"({1000 * again / len(files):.0f} ms a file)")
    parts, whole = (sorted(v)[1] for v in (sides["parts"], sides["whole"]))
    print(f"the agent's final files alone: walked by parts {parts:.2f} s, walked whole {whole:.2f} s "
          f"({parts / whole:.2f}x); load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
