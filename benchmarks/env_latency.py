"""Env latency against floors measured in the same run, paired and alternating (issue 16's targets).

- **grading**, per task (the gold fix, grade cache off): the env's warm grade (``grade()``, the default)
  against a cold bare ``python -m pytest`` of the same ids in the same venv on the same tree, unsandboxed
  (target: at most 0.5x, the median over the tasks), and against the time pytest itself reports for that
  run ("in X s": collection and tests; target: at most 1.5x). The cold grade of before (``warm=False``) is
  timed in the same rotation for reference. Wall time and CPU time (children included: the sandbox, the
  server's child and parent) are both printed, with p50 and p99.
- **same-task reset**: the agent edited the files of the gold fix and made a new file; ``env.reset()`` of the
  same task against the floor, restoring exactly those files with ``shutil.copy2`` and removing the new one.
- **cross-repository reset**: alternating tasks of two repositories; ``env.reset()`` against the floor of
  ``cp -a`` of the new tree plus ``rm -rf`` of the old one.
- **reset + first step**: ``env.reset()`` then ``bash true`` (the shell's restart is paid here), against the
  same floors plus a bare persistent bash's ``true``.

The machine is shared, so every figure comes from samples of both sides taken alternately; the load
average is printed at the start and the end. Run:

    python benchmarks/env_latency.py [--task ID ...] [--n 3] [--resets 20]
    python benchmarks/env_latency.py --skip-resets --set heavy --n 2 --no-cold   # issue 25's heavy-test set
    python benchmarks/env_latency.py --skip-resets --set heavy --n 2 --no-cold --fix edited

The grade runs the PASS_TO_PASS tests the fix can reach (:mod:`frog_gym.grading.impact`; the repository's coverage
map is built first, untimed); the bare side runs every selected test. With ``--fix gold`` the graded tree is the
snapshot's, so only FAIL_TO_PASS runs: a correct fix in the gold's words. ``--fix edited`` adds a line at the top
of each fixed function: those functions and every one below them in their file count as changed. Set
``FROG_GYM_IMPACT=0`` to grade every test as before.

Measured (2026-12-03, 2 shared cores). Session 4, before the grading server's code caches and selected-only
collection (load 10-20, ``--n 1``, 12 tasks): warm grade / cold bare pytest wall 0.51x, CPU 0.69x; / pytest's
reported time 1.98x; after (load 7.8-9.2, 13 tasks of 11 repositories): 0.31x, 0.29x, 1.12x. Session 5, with the
seal of pytest and the process guard in every graded run (load 1.8-3.5, ``--n 2 --resets 15``): wall 0.36x, CPU
0.36x (target 0.5x: met), / pytest's reported time 1.19x (target 1.5x: met). Resets (``--skip-grading --resets 20``,
load 1.8-2.1): same task after a graded episode 1.71x and 1.86x its floor in two runs (0.8-0.9 ms against
0.5 ms; target 2x: met; 14.9x in session 4, when the spare shell's launch forked the whole driver), + the first
``bash true`` 1.1-1.4x; mid-episode 7-8x (the kernel's kill of the sandbox and a walk: not met); a repository
switch 0.05-0.12x of ``cp -a`` + ``rm -rf``, 0.5-1.1x with the first command.

Issue 25's heavy set (2026-12-04, ``--skip-resets --set heavy --n 2 --no-cold``, 40 tasks of 16 repositories, the
oracle and the always-equal check included, load 4.3-6.5 at start and 4.5 at the end, 2 shared cores): warm grade /
cold bare pytest median wall 0.77x, CPU 0.96x (target 0.5x: not met); worst 2.46x wall (pyflakes__combo2-55b9a4ae,
CPU 1.35x: a wall outlier under load; the heavy tasks lie at 0.5-1.3x); / pytest's reported time, median 1.39x
(target 1.5x: met). The three requests tasks' bare side ran in a sandbox (their ids name /testbed): a first run
of this set, whose bare side ran none of their tests, printed 5-6x for them.

Session 11, with the oracle replayed in a warm fork server (same command, 40 tasks of 18 repositories, load 2.1-2.3):
median wall 0.82x, CPU 0.87x (a first run at load 1.3: 0.89x, 0.96x); worst python-dotenv__combo3-c4487e43 1.78x; /
pytest's reported time, median 1.44x (met). What a warm grade pays grows with the task's FAIL_TO_PASS tests, not its
selected tests: the vault walks every class alive at each passing FAIL_TO_PASS test (``lying_values``), so the
worst tasks are those with many (python-dotenv__combo3-c4487e43: 66 of 100 tests, 1.78x; humanize__combo2-6145a5ed:
49, 1.28x) while marshmallow__combo2-1cd84399 (8 of 580) grades at 0.57x; ``benchmarks/grading_profile.py --task
inflection__negated_condition-0995b94c`` shows that walk as the largest item of a graded run.

Session 12, the vault's walk skipping static types and keeping verdicts of functions found fine (same command, 40
tasks of 18 repositories, load 2.8 at start, 3.8 at the end, two helpers mining beside): median wall 0.81x, CPU
0.87x (target 0.5x: not met); worst 1.29x (pyflakes__combo2-55b9a4ae; python-dotenv__combo3-c4487e43 now 1.08x);
/ pytest's reported time, median 1.43x (met). The heavy half of the set is bound by the tests' own work: under
``benchmarks/grading_profile.py --task pyflakes__combo2-55b9a4ae`` pytest running the selected ids alone
(``select``) takes 0.86x of the bare run, the warm grade 0.94x.

Session 13, with test-impact selection (``frog_gym/grading/impact.py``: the grade runs FAIL_TO_PASS and the
PASS_TO_PASS tests the fix can reach; the bare side still runs every selected id) and coverage maps built
beforehand (same command, 40 tasks of 18 repositories, load 5-6 at the start, 3.7 at the end, three helpers
mining and generating beside): median wall **0.23x**, CPU 0.27x (target 0.5x: met); worst **0.90x**
(wrapt__combo2-32a86189: 42 of its 56 tests are FAIL_TO_PASS, and the vault's class walk at each passing one,
``classes_with_slots``, is 11 ms a test there; target 1.0x: met); / pytest's reported time, median **0.35x** (met).
The gold fix's text leaves the tree as the snapshot's, so a grade runs FAIL_TO_PASS alone; ``--fix edited``
(a ``pass`` line at the top of each fixed function, moving every function below it) is the other end:
``--set heavy --heavy 10 --random 10 --n 1 --no-cold --fix edited`` (20 tasks of 13 repositories, load 2.7 at
the end) median 0.79x wall, 0.85x CPU, worst 1.77x (tomlkit__combo2-db01dbce), 1.35x pytest's reported time.
Session 17 (same command as session 13, 40 tasks of 16 repositories, quiet machine: load 0.59 at the start, 1.07 at
the end): median wall **0.31x**, CPU 0.31x (met); worst **0.96x** wall (xmltodict__combo2-747b06a4: all 58 of its
tests run, 1.09x of bare pytest's CPU; met by wall); / pytest's reported time, median **0.49x** (met).
Session 18, the same command with the code kept between servers and the vault's fewer reads (load 1.23 at the start,
1.05 at the end): median wall **0.31x**, CPU 0.31x; worst **0.90x** wall (xmltodict__combo2-747b06a4, 1.04x of bare
pytest's CPU); / pytest's reported time, median **0.45x**: all met.
Session 19, the same command with the seal compared in place and ``lying_values`` skipping unchanged classes (load
0.98 at the start, 1.00 at the end): median wall **0.33x**, CPU 0.33x; worst **0.86x** wall
(xmltodict__combo2-747b06a4); / pytest's reported time, median **0.50x**: all met.
Session 20, the same command on the final tree (load 1.78 at the start, 1.10 at the end): median wall **0.32x**, CPU
0.31x; worst **0.87x** wall (xmltodict__combo2-747b06a4, 1.01x of bare pytest's CPU); / pytest's reported time,
median **0.49x**: all met.
Session 23, the same command on the final tree (another machine; load 1.46 at the start, 1.08 at the end): median
wall **0.32x**, CPU 0.32x; worst **0.84x** wall (xmltodict__combo2-747b06a4); / pytest's reported time, median
**0.52x**: all met.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import sys
import time
from pathlib import Path

import gymnasium as gym

import frog_gym  # noqa: F401
from frog_gym import paths
from frog_gym.grading import server as grading_server
from frog_gym.grading.runner import patch_files
from frog_gym.grading.grade import grade
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo
from frog_gym.catalog.task import load_task
from frog_gym.sandbox import make_sandbox
from frog_gym.sandbox.base import Limits
from frog_gym.sandbox.workspace import Change, Workspace, template_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpumeter import CpuMeter  # noqa: E402
from taskpick import pick  # noqa: E402

TASKS = ("attrs__comparison_flip-d2b7587d", "attrs__early_return-b76e57a6", "flask__slice_range_off_by_one-1b5b3acb",
         "jinja2__loop_bound-da800e5c", "jinja2__removed_statement-03fd9a54", "click__swapped_if_else-0a2c8152",
         "inflection__swapped_call_args-e597d9c8", "cachetools__dict_key_or_attribute-5bb17fca",
         "humanize__missing_branch-08a9c4b2", "toolz__removed_statement-670bad7f", "markupsafe__negated_condition-a5980033",
         "semver__removed_statement-3b3e1b8e", "marshmallow__removed_statement-378f0110")
THINK_S = 0.02
"""Seconds between an agent's actions in the reset measures (a language model takes far longer per action)."""
_REPORTED = re.compile(r" in (\d+(?:\.\d+)?)s")


def pctl(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def gold_changes(repo, task, template) -> list[Change]:
    return [Change(rel, (template.root / rel).read_bytes(), (repo.tree / rel).read_bytes())
            for rel in sorted(patch_files(task.patch)) if (template.root / rel).exists()]


def edited_changes(changes: list[Change], template) -> list[Change]:
    """The gold fix as an agent might write it: a ``pass`` line put first in each function the fix changes, so
    its text (and every line below it) differs from the gold's. Test-impact selection then runs every test
    that executes such a function or one below it in that file, as it would for that agent's fix."""
    import ast
    import difflib

    out = []
    for c in changes:
        new = c.new or b""
        old_lines, new_lines = (template.root / c.path).read_text().splitlines(True), new.decode().splitlines(True)
        firsts = [j1 + 1 for tag, _, _, j1, _ in difflib.SequenceMatcher(None, old_lines, new_lines).get_opcodes()
                  if tag != "equal"]
        if not c.path.endswith(".py") or not firsts:
            out.append(c)
            continue
        tree = ast.parse(new)
        starts = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = node.body[1:] if (isinstance(node.body[0], ast.Expr) and isinstance(
                    getattr(node.body[0], "value", None), ast.Constant) and len(node.body) > 1) else node.body
                if any(node.lineno <= n <= (node.end_lineno or node.lineno) for n in firsts):
                    starts.add((body[0].lineno, body[0].col_offset))
        # the innermost function of each change: the last start before it
        for line, col in sorted(starts, reverse=True):  # the statement's own indentation (tabs stay tabs)
            new_lines.insert(line - 1, new_lines[line - 1][:col] + "pass  # edited: not the gold's text\n")
        out.append(Change(c.path, c.old, "".join(new_lines).encode()))
    return out


def _rotated(sides: tuple[str, ...], k: int) -> tuple[str, ...]:
    k %= len(sides)
    return sides[k:] + sides[:k]


def heavy_set(n_heavy: int = 20, n_random: int = 20, seed: int = 0) -> list[str]:
    """The ``n_heavy`` pool tasks with the most selected tests, then ``n_random`` other pool tasks drawn at random
    (FrogLive's tasks left out: the pool is what training revisits)."""
    import random

    from frog_gym.catalog.live import is_live
    from frog_gym.catalog.task import registered_task_ids

    pool = [i for i in registered_task_ids() if not is_live(i)]
    by_size = sorted(pool, key=lambda i: (-len(load_task(i).selected_tests), i))
    heavy = by_size[:n_heavy]
    rest = sorted(set(pool) - set(heavy))
    return heavy + random.Random(seed).sample(rest, min(n_random, len(rest)))


def bare_in_sandbox(repo, tree: Path, cmd: list[str]) -> str:
    """``cmd`` run in a local sandbox over ``tree`` (at /testbed, as a grade's), its output's tail."""
    sb = make_sandbox("local", repo, tree, Limits(command_timeout=900, output_cap=1 << 16))
    try:
        return sb.exec(cmd, 900, env={"PYTHONDONTWRITEBYTECODE": "1"}).output
    finally:
        sb.close()


def grading(task_ids: list[str], n: int, meter: CpuMeter, sides: tuple[str, ...] = ("bare", "warm", "cold"),
            fix: str = "gold") -> None:
    from frog_gym.generators import coverage_map
    from frog_gym.grading import impact

    print(f"\n## grading ({fix} fix, cache off, test-impact selection {'on' if impact.enabled() else 'off'}): "
          "warm grade vs cold bare pytest of the same ids, paired\n")
    print("| task | tests (run by the grade) | bare pytest wall / CPU | pytest reports | warm grade wall / CPU | cold grade wall / CPU "
          "| warm/bare wall | warm/bare CPU | warm/reported |")
    print("|---|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {"wall": [], "cpu": [], "reported": [], "cold_wall": [], "cold_cpu": []}
    samples: dict[str, list[float]] = {side: [] for side in sides}
    worst: list[tuple[float, str]] = []
    for tid in task_ids:
        task = load_task(tid)
        repo = prepare(load_repo(task.repo))
        template = template_for(repo, task.bug_patch, tid)
        changes = gold_changes(repo, task, template)
        if fix == "edited":
            changes = edited_changes(changes, template)
        if impact.enabled():
            coverage_map.build(repo)  # measured once per venv, not timed (a training pool has it)
        scratch = Workspace(paths.home() / "work" / f"bench-grade-{os.getpid()}")
        bare_tree = Workspace(paths.home() / "work" / f"bench-bare-{os.getpid()}")
        bare_tree.sync(template)
        for c in changes:
            (bare_tree.path / c.path).write_bytes(c.new or b"")
        env = {**os.environ, **repo.spec.install.env, "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONPATH": ":".join(str(bare_tree.path / p) for p in repo.spec.install.import_paths)}
        cmd = [str(repo.python), "-m", "pytest", *repo.spec.pytest_args, "-q", *task.selected_tests]
        rep = grade(repo, task, template, changes, scratch, use_cache=False)  # starts the server: not timed
        # Some ids name the tree's path (a parameter made from __file__: requests' test_unzipped_paths_unchanged
        # [/testbed/tests/test_utils.py]); outside /testbed pytest finds none of them and runs nothing (exit 4).
        # For such a task the bare side runs in a local sandbox, the tree at /testbed (the row says so).
        sandboxed = subprocess.run(cmd, cwd=bare_tree.path, env=env, capture_output=True).returncode == 4
        assert rep.is_resolved, (tid, rep.note)
        server = grading_server.server_for(repo, template)
        assert server is not None, grading_server._REFUSED
        got: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
        reported = []
        try:
            for i in range(n):
                for side in _rotated(sides, i + len(ratios["wall"])):  # each side goes first in turn
                    w0, c0 = time.perf_counter(), meter.read()
                    if side == "bare":
                        out = bare_in_sandbox(repo, bare_tree.path, cmd) if sandboxed else subprocess.run(
                            cmd, cwd=bare_tree.path, env=env, capture_output=True, text=True).stdout
                        m = _REPORTED.findall(out)
                        assert m and "no tests ran" not in out, out[-500:]
                        reported.append(float(m[-1]))
                    else:
                        r = grade(repo, task, template, changes, scratch, use_cache=False, warm=side == "warm")
                        assert r.is_resolved, (tid, side, r.note)
                    wall = time.perf_counter() - w0
                    cpu = meter.read() - c0
                    got[side].append((wall, cpu))
                    samples[side].append(wall)
        finally:
            scratch.remove()
            bare_tree.remove()
        med = {s: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for s, v in got.items()}
        rep_s = statistics.median(reported)
        ratios["wall"].append(med["warm"][0] / med["bare"][0])
        ratios["cpu"].append(med["warm"][1] / med["bare"][1])
        ratios["reported"].append(med["warm"][0] / rep_s)
        cold = med.get("cold", (float("nan"), float("nan")))
        ratios["cold_wall"].append(cold[0] / med["bare"][0])
        ratios["cold_cpu"].append(cold[1] / med["bare"][1])
        print(f"| {tid}{' (bare sandboxed)' if sandboxed else ''} | {len(task.selected_tests)} "
              f"({len(task.selected_tests) - len(rep.inferred)}) | {med['bare'][0]:.2f} s / {med['bare'][1]:.2f} s | {rep_s:.2f} s "
              f"| {med['warm'][0]:.2f} s / {med['warm'][1]:.2f} s | {cold[0]:.2f} s / {cold[1]:.2f} s "
              f"| {ratios['wall'][-1]:.2f}x | {ratios['cpu'][-1]:.2f}x | {ratios['reported'][-1]:.2f}x |", flush=True)
        worst.append((ratios["wall"][-1], tid))
    repos = {t.split("__")[0] for t in task_ids}
    print(f"\nover {len(task_ids)} tasks of {len(repos)} repositories, {n} samples of each side per task:")
    print(f"- warm grade / cold bare pytest, median: wall {statistics.median(ratios['wall']):.2f}x, CPU "
          f"{statistics.median(ratios['cpu']):.2f}x (target: at most 0.5x)")
    print(f"- warm grade / cold bare pytest, worst task: wall {max(worst)[0]:.2f}x ({max(worst)[1]}; target: at most "
          "1.0x)")
    print(f"- warm grade wall / pytest's reported time, median: {statistics.median(ratios['reported']):.2f}x "
          "(target: at most 1.5x)")
    if "cold" in sides:
        print(f"- cold grade (before) / cold bare pytest, median: wall {statistics.median(ratios['cold_wall']):.2f}x, "
              f"CPU {statistics.median(ratios['cold_cpu']):.2f}x")
    for side, xs in samples.items():
        print(f"- {side:4} wall over all samples: p50 {statistics.median(xs):.2f} s, p99 {pctl(xs, .99):.2f} s")


class BareBash:
    def __init__(self) -> None:
        self.p = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def true(self) -> None:
        assert self.p.stdin and self.p.stdout
        self.p.stdin.write(b"true; echo __done\n")
        self.p.stdin.flush()
        while self.p.stdout.readline() != b"__done\n":
            pass

    def close(self) -> None:
        self.p.kill()
        self.p.wait()


def resets(same: str, other: str, n: int) -> None:
    print(f"\n## resets ({n} pairs each; same task {same}, switching with {other})\n")
    task = load_task(same)
    env = gym.make(f"FrogSWE/{same}-v0").unwrapped
    bash = BareBash()
    fix = gold_changes(prepare(load_repo(task.repo)), task, template_for(prepare(load_repo(task.repo)),
                                                                               task.bug_patch, same))

    def dirty(think: float = THINK_S) -> None:  # what an agent does: look, edit the fix's files, add a file
        for action in ({"tool": "bash", "command": "ls >/dev/null"},
                       *({"tool": "create", "path": c.path, "file_text": (c.new or b"").decode()} for c in fix),
                       {"tool": "create", "path": "scratch_notes.py", "file_text": "x = 1\n"}):
            env.step(action)
            if action["tool"] == "create":  # the floor's tree gets the same writes at the same moment
                (tree / action["path"]).write_text(action["file_text"])
            time.sleep(think)  # the agent choosing its next action

    def floor_restore() -> float:  # copy back exactly the files written (no search), remove the new one
        t = time.perf_counter()
        for c in fix:
            shutil.copy2(env._template.root / c.path, tree / c.path)
        (tree / "scratch_notes.py").unlink()
        return time.perf_counter() - t

    rows = []
    env.reset(options={"task_id": same})
    with tempfile.TemporaryDirectory(dir=paths.home()) as tmp:
        tree = Path(tmp) / "t"
        shutil.copytree(env._template.root, tree, symlinks=True)
        graded, mid, rushed, graded1 = [], [], [], []
        f_graded, f_mid, f_rushed, f_graded1 = [], [], [], []
        for _ in range(n):
            # The common case in training: the episode ended (submitted or out of budget) and was graded. The
            # floor restores its tree, written at the same moments, right after the reset (same page-cache state).
            dirty()
            env.step({"tool": "submit"})
            t = time.perf_counter()
            env.reset(options={"task_id": same})
            graded.append(time.perf_counter() - t)
            f_graded.append(floor_restore())
            env.step({"tool": "bash", "command": "true"})
            # An episode abandoned mid-way: the agent's processes are killed first.
            dirty()
            t = time.perf_counter()
            env.reset(options={"task_id": same})
            mid.append(time.perf_counter() - t)
            f_mid.append(floor_restore())
            env.step({"tool": "bash", "command": "true"})
            # The same with no time between the agent's actions (no agent is that fast): the spare shell, started
            # after the episode's first command, may still be starting and is waited for.
            dirty(think=0.0)
            t = time.perf_counter()
            env.reset(options={"task_id": same})
            rushed.append(time.perf_counter() - t)
            f_rushed.append(floor_restore())
            env.step({"tool": "bash", "command": "true"})
            # Reset and the first command (the fresh shell's start is paid here).
            dirty()
            env.step({"tool": "submit"})
            t = time.perf_counter()
            env.reset(options={"task_id": same})
            env.step({"tool": "bash", "command": "true"})
            graded1.append(time.perf_counter() - t)
            t = time.perf_counter()
            bash.true()
            f_graded1.append(time.perf_counter() - t + floor_restore())
        rows.append(("same-task reset after a graded episode", graded, "copy back the changed files", f_graded))
        rows.append(("same-task reset mid-episode (processes killed)", mid, "copy back the changed files", f_mid))
        rows.append(("same-task reset mid-episode, no think time", rushed, "copy back the changed files", f_rushed))
        rows.append(("same-task reset after a graded episode + `bash true`", graded1,
                     "the same + a bare bash `true`", f_graded1))
        ours, floor, ours1, floor1 = [], [], [], []
        roots = {}
        for tid in (same, other):
            env.reset(options={"task_id": tid})
            roots[tid] = env._template.root
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        shutil.copytree(roots[same], a, symlinks=True)
        for i in range(n):
            tid = other if i % 2 == 0 else same
            t = time.perf_counter()
            env.reset(options={"task_id": tid})
            ours.append(time.perf_counter() - t)
            env.step({"tool": "bash", "command": "true"})
            t = time.perf_counter()
            subprocess.run(["cp", "-a", str(roots[tid]), str(b)], check=True)
            subprocess.run(["rm", "-rf", str(a)], check=True)
            floor.append(time.perf_counter() - t)
            a, b = b, a
            tid = same if tid == other else other
            t = time.perf_counter()
            env.reset(options={"task_id": tid})
            env.step({"tool": "bash", "command": "true"})
            ours1.append(time.perf_counter() - t)
            t = time.perf_counter()
            subprocess.run(["cp", "-a", str(roots[tid]), str(b)], check=True)
            subprocess.run(["rm", "-rf", str(a)], check=True)
            bash.true()
            floor1.append(time.perf_counter() - t)
            a, b = b, a
        rows.append(("cross-repository reset", ours, "`cp -a` new tree + `rm -rf` old", floor))
        rows.append(("cross-repository reset + `bash true`", ours1, "the same + a bare bash `true`", floor1))
    env.close()
    bash.close()
    print("| measure | frog-gym p50 / p99 | floor | floor p50 / p99 | ratio of p50s | target |")
    print("|---|---|---|---|---|---|")
    for name, xs, what, fl in rows:
        print(f"| {name} | {statistics.median(xs) * 1000:.1f} / {pctl(xs, .99) * 1000:.1f} ms | {what} | "
              f"{statistics.median(fl) * 1000:.1f} / {pctl(fl, .99) * 1000:.1f} ms | "
              f"{statistics.median(xs) / statistics.median(fl):.2f}x | <= 2x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", help="grading task id (repeatable); default: 12 tasks, 10 repositories")
    ap.add_argument("--n", type=int, default=3, help="samples of each side per grading task")
    ap.add_argument("--resets", type=int, default=20, help="samples of each side per reset measure")
    ap.add_argument("--skip-grading", action="store_true")
    ap.add_argument("--skip-resets", action="store_true")
    ap.add_argument("--set", choices=("default", "heavy"), default="default",
                    help="heavy: the 20 pool tasks with the most selected tests plus 20 random ones (issue 25)")
    ap.add_argument("--heavy", type=int, default=20, help="with --set heavy: how many of the heaviest tasks")
    ap.add_argument("--random", type=int, default=20, help="with --set heavy: how many random tasks")
    ap.add_argument("--no-cold", action="store_true", help="leave out the cold grade (a reference, not a target)")
    ap.add_argument("--fix", choices=("gold", "edited"), default="gold",
                    help="the graded fix: the gold patch's text, or the gold with a line added at the top of each "
                    "function it changes (a correct fix in other words; test-impact selection runs more)")
    args = ap.parse_args()
    meter = CpuMeter()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; CPU time: {meter.kind}")
    if not args.skip_resets:
        resets("inflection__swapped_call_args-e597d9c8", "attrs__comparison_flip-d2b7587d", args.resets)
    if not args.skip_grading:
        ids = args.task or (heavy_set(args.heavy, args.random) if args.set == "heavy" else pick(TASKS))
        grading(ids, args.n, meter, ("bare", "warm") if args.no_cold else ("bare", "warm", "cold"), args.fix)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    meter.close()


if __name__ == "__main__":
    main()
