"""Reset and step latency with the kill of the agent's processes (issue 11), against bare baselines in the same run.

- reset: ``env.reset()`` of the same task vs ``git reset --hard && git clean -fdx`` on the same tree
  (target: at most 2x).
- reset after a bash step (the agent's processes must die first: issue 11): right after the step (the warm
  spare sandbox may still be starting), after a 0.2 s pause (an episode lasts longer), and after a submitted
  (graded) episode, whose processes died before grading: the common case in training. Compared with the clean
  reset.
- bash step ``true``: ``env.step`` vs the same command in a bare persistent bash (target: at most 2 ms more).
- grading: grading a gold fix (cache off) vs a bare ``pytest`` of the same test ids in the same venv,
  unsandboxed (target: at most 1.2x).

Run: ``python benchmarks/reset_latency.py [--task ID] [--n 30] [--json] [--no-grade]``; to compare with another
checkout in the same run, ``python benchmarks/env_latency_ab.py --baseline PATH``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import frog_gym  # noqa: F401
from frog_gym.agents.oracle import hunks
from frog_gym.grading.runner import test_files_of
from frog_gym.grading.grade import grade
from frog_gym.catalog.task import load_task


def median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def bare_bash_ms(n: int) -> float:
    p = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdin and p.stdout

    def once() -> None:
        p.stdin.write(b"true; echo __done\n")
        p.stdin.flush()
        while p.stdout.readline() != b"__done\n":
            pass

    ms = median_ms(once, n)
    p.kill()
    p.wait()
    return ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="inflection__handwritten-0005")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--no-grade", action="store_true", help="skip the (slow) grading row")
    args = ap.parse_args()
    task = load_task(args.task)
    env = gym.make(f"FrogSWE/{args.task}-v0", max_steps=10**6).unwrapped  # no truncation mid-measurement
    env.reset(seed=0)
    files = sum(1 for _ in Path(env._ws.path).rglob("*"))

    def dirty_then_reset() -> None:
        env.reset(seed=0)

    reset_ms = median_ms(dirty_then_reset, args.n)

    def timed_reset_after_step(pause: float) -> float:
        env.step({"tool": "bash", "command": "true"})
        time.sleep(pause)
        t = time.perf_counter()
        env.reset(seed=0)
        return time.perf_counter() - t

    dirty_ms = statistics.median(timed_reset_after_step(0.0) for _ in range(args.n)) * 1000

    def timed_reset_after_submit() -> float:
        # an edit no other run made, so the grade is computed (about a second), as in training
        env.step({"tool": "bash", "command": f"echo '# {os.urandom(8).hex()}' >> README.rst; true"})
        env.step({"tool": "submit"})  # the episode's processes die here, before grading
        t = time.perf_counter()
        env.reset(seed=0)
        return time.perf_counter() - t

    submit_ms = statistics.median(timed_reset_after_submit() for _ in range(max(3, args.n // 4))) * 1000
    warm_ms = statistics.median(timed_reset_after_step(0.2) for _ in range(args.n)) * 1000
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "t"
        shutil.copytree(env._template.root, tree, symlinks=True)
        git_env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        git_ms = median_ms(lambda: subprocess.run("git reset -q --hard && git clean -qfdx", shell=True, cwd=tree,
                                                  env=git_env, check=True), args.n)

    env.reset(seed=0)
    env.step({"tool": "bash", "command": "true"})
    step_ms = median_ms(lambda: env.step({"tool": "bash", "command": "true"}), args.n * 5)
    bare_ms = bare_bash_ms(args.n * 5)

    if args.json:
        import json

        print(json.dumps({"reset_ms": reset_ms, "reset_after_step_ms": dirty_ms, "reset_after_pause_ms": warm_ms,
                          "reset_after_submit_ms": submit_ms,
                          "git_ms": git_ms, "step_ms": step_ms, "bare_ms": bare_ms}))
        if args.no_grade:
            env.close()
            return
    # grading: the gold fix, cache off, vs bare pytest of the same ids in the same venv
    env.reset(seed=0)
    for path, old, new in hunks(task.patch):
        env.step({"tool": "str_replace", "path": path, "old_str": old, "new_str": new})
    changes = env._ws.changes()
    grade_ms = median_ms(lambda: grade(env._repo, task, env._template, changes, env._scratch, use_cache=False),
                         max(3, args.n // 6))
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "t"
        shutil.copytree(env._ws.path, tree, symlinks=True)
        spec = env._repo.spec
        pyenv = {**os.environ, "PYTHONPATH": ":".join(str(tree / p) for p in spec.install.import_paths),
                 "PYTHONDONTWRITEBYTECODE": "1"}
        cmd = [str(env._repo.python), "-m", "pytest", *spec.pytest_args, "-q", *task.selected_tests]
        pytest_ms = median_ms(lambda: subprocess.run(cmd, cwd=tree, env=pyenv, capture_output=True),
                              max(3, args.n // 6))
    env.close()
    print(f"task {args.task} ({files} files in the workspace, {len(task.selected_tests)} selected tests "
          f"in {len(test_files_of(task.selected_tests))} files)\n")
    print("| measure | frog-gym | baseline | ratio / delta | target |")
    print("|---|---|---|---|---|")
    print(f"| reset | {reset_ms:.1f} ms | git reset+clean {git_ms:.1f} ms | {reset_ms / git_ms:.2f}x | <= 2x |")
    print(f"| reset right after a bash step | {dirty_ms:.1f} ms | clean reset {reset_ms:.1f} ms | "
          f"{dirty_ms / reset_ms:.2f}x | |")
    print(f"| reset 0.2 s after a bash step | {warm_ms:.1f} ms | clean reset {reset_ms:.1f} ms | "
          f"{warm_ms / reset_ms:.2f}x | |")
    print(f"| reset after a submitted episode | {submit_ms:.1f} ms | clean reset {reset_ms:.1f} ms | "
          f"{submit_ms / reset_ms:.2f}x | |")
    print(f"| bash `true` step | {step_ms:.2f} ms | bare bash {bare_ms:.2f} ms | +{step_ms - bare_ms:.2f} ms | <= +2 ms |")
    print(f"| grading | {grade_ms:.0f} ms | bare pytest {pytest_ms:.0f} ms | {grade_ms / pytest_ms:.2f}x | <= 1.2x |")


if __name__ == "__main__":
    main()
