"""Where a graded test's time goes on heavy test files, against bare pytest of the same ids, paired in one run.

For each task (its gold fix and hidden tests in a tree of its own, the canaries appended), these sides run
in turn, the order rotated each round, each a fresh process of the repository's venv unless it says otherwise:

- ``bare``: ``python -m pytest <spec args> -q <ids>`` (the baseline: what the issue's targets divide by);
- ``select``: ``-p frog_report`` with the grading selection alone (ids, canaries, selected-only collection),
  no guard, no key: what the plugin's deselection costs or saves;
- ``guard``: the same with the guard (the audit hook that refuses reads of the test files, process starts);
- ``graded``: a graded run as a grade's child runs it (key FIFO: guard, seal and vault), unsandboxed, cold;
- ``base`` (with ``--baseline-plugin DIR``): ``graded`` with another checkout's report plugin (the plugin imports
  nothing of frog_gym, so ``git worktree add /tmp/base main`` and ``DIR=/tmp/base/frog_gym/_plugin``): before and
  after, paired;
- ``warm``: the test run of a warm grade (:meth:`GradingServer.run`: sync, sandboxed fork server, report read);
- ``grade``: the whole warm grade (:func:`frog_gym.grading.grade`), the behavioural oracle included.

The differences between neighbouring sides are the phases: plugin selection, guard, seal and vault, the
sandbox and fork server, the oracle and the host's bookkeeping. Wall and CPU (every descendant, through
``cpumeter``) are printed, medians over the rounds, as ratios to ``bare``; and pytest's own reported time.

Then one ``graded`` run with a counting audit hook installed first (the audit events a graded test raises,
per selected test, by name) and one under ``cProfile`` (the plugin's functions' own time, per test, against
the whole run's): per-test costs of the guard's hook, the vault's entry and body, the seal and test checks.

    python benchmarks/grading_profile.py [--task ID ...] [--n 3] [--sides bare,select,guard,graded,warm,grade]
                                         [--first K] [--baseline-plugin DIR --sides bare,graded,base] [--no-profile]

The load average is printed at the start and the end.

Measured (2026-12-04, 2 shared cores, load 2.3-3.4, ``--n 3 --sides bare,graded,base --no-profile`` with ``base`` the
report plugin of main at c6b2ffd): graded run CPU / bare pytest CPU, this checkout against main's plugin:
marshmallow__combo2-9e9ce6ca 1.17x vs 1.41x, tomlkit__combo2-74b3a849 1.35x vs 1.51x, pyflakes__combo2-cd9d9021
1.52x vs 1.92x, inflection__handwritten-0005 1.39x vs 1.88x (what the plugin adds: 31-60% less). Audit events per
graded test on pyflakes: 470 before (``builtins.id`` 268, ``object.__getattr__`` 168), about 100 after. The guard
alone (``guard``) adds nothing per test; what it cost was pytest imported by each process a test starts (pyflakes'
command-line tests), 0.1-0.3 s each before.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpumeter import CpuMeter  # noqa: E402
from taskpick import pick  # noqa: E402

from frog_gym import paths  # noqa: E402
from frog_gym.catalog.live import is_live, task_spec  # noqa: E402
from frog_gym.catalog.snapshot import prepare  # noqa: E402
from frog_gym.catalog.task import load_task  # noqa: E402
from frog_gym.grading import server as grading_server  # noqa: E402
from frog_gym.grading.grade import grade  # noqa: E402
from frog_gym.grading.integrity import Canaries  # noqa: E402
from frog_gym.grading.runner import (GRADING_PYTEST_ARGS, PLUGIN_PARTS, _patched, grading_selection, guard_for,  # noqa: E402
                                     hidden_test_changes, key_fifo, patch_files, read_report, test_files_of)
from frog_gym.sandbox.workspace import Change, Workspace, append_file, template_for, write_changes  # noqa: E402

TASKS = ("marshmallow__combo2-1cd84399", "tomlkit__combo2-74b3a849", "pyflakes__combo2-cd9d9021",
         "inflection__handwritten-0005")
SIDES = ("bare", "select", "guard", "graded", "base", "warm", "grade")
_REPORTED = re.compile(r" in (\d+(?:\.\d+)?)s")

# Runs pytest as ``python -m pytest`` would, with a counting audit hook or cProfile started first (both before
# the report plugin is imported: the guard refuses neither then, and both see every later event and call).
_DRIVER = r"""
import collections, json, os, sys
mode, out = os.environ.pop("FROG_PROFILE_MODE"), os.environ.pop("FROG_PROFILE_OUT")
counts = collections.Counter()
_add = sys.addaudithook


def _traceable(hook):  # cProfile sees an audit hook only if it says it may be traced
    hook.__cantrace__ = True
    _add(hook)


if mode == "count":
    def _count(event, args, _c=counts):
        _c[event] += 1
    sys.addaudithook(_count)
else:
    import cProfile
    sys.addaudithook = _traceable
    prof = cProfile.Profile()
    prof.enable()
import pytest
sys.argv = ["pytest", *sys.argv[1:]]
try:
    code = pytest.console_main()
finally:
    if mode == "count":
        with open(out, "w") as f:
            json.dump(dict(counts), f)
    else:
        import marshal
        prof.snapshot_stats()  # not disable(): the guard refuses a profile function's change from here
        with open(out, "wb") as f:
            marshal.dump(prof.stats, f)
raise SystemExit(code)
"""


class Task:
    """One task's trees and command lines (see the module docstring)."""

    def __init__(self, tid: str, work: Path, first: int | None = None, baseline: str = "") -> None:
        self.tid = tid
        self.task = t = load_task(tid)
        self.ids = t.selected_tests[:first]  # all of them by default
        self.repo = repo = prepare(task_spec(t))
        self.template = template_for(repo, t.bug_patch, tid, hidden_tests="" if is_live(tid) else t.test_patch)
        tests = patch_files(t.test_patch)
        gold = _patched(self.template, t.patch, "gold")
        assert isinstance(gold, dict), gold
        self.changes = [Change(f, (self.template.root / f).read_bytes() if (self.template.root / f).is_file()
                               else None, new) for f, new in gold.items() if f not in tests]
        hidden = hidden_test_changes(t, self.template)
        assert not isinstance(hidden, str), hidden
        names = {i.rsplit("::", 1)[-1] for i in t.selected_tests}
        self.canaries = Canaries.make(test_files_of(t.FAIL_TO_PASS)[0], __import__("random").Random(0), names)
        self.guard = guard_for(repo, t, self.canaries, self.template, self.changes)
        self.tree = Workspace(work / "tree")
        self.tree.sync(self.template)
        write_changes(self.tree.path, self.changes + hidden)
        append_file(self.tree.path, self.canaries.file, self.canaries.source.encode())
        self.io = work / "io"
        self.io.mkdir()
        self.scratch = Workspace(work / "scratch")
        self.plugin = str(resources.files("frog_gym").joinpath("_plugin"))
        self.baseline = baseline
        self.env = {**os.environ, **repo.spec.install.env, "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTHONPATH": ":".join(str(self.tree.path / p) for p in repo.spec.install.import_paths)}
        self.files = test_files_of(self.ids)
        if self.canaries.file not in self.files:
            self.files.append(self.canaries.file)

    def bare(self) -> tuple[str, float | None]:
        cmd = [str(self.repo.python), "-m", "pytest", *self.repo.spec.pytest_args, "-q", *self.ids]
        out = subprocess.run(cmd, cwd=self.tree.path, env=self.env, capture_output=True, text=True).stdout
        m = _REPORTED.findall(out)
        assert m and "no tests ran" not in out, f"bare pytest ran nothing (ids naming /testbed?): {out[-800:]}"
        return out, float(m[-1])

    def plugin_run(self, side: str, driver: str | None = None, mode: str = "", out: str = "") -> None:  # noqa: C901
        """``select``, ``guard`` or ``graded`` (see the module docstring), checked: a report of every selected test,
        nothing flagged (a test may fail here that passes in a sandbox: unsandboxed, it runs as this user)."""
        for f in self.io.iterdir():
            f.unlink()
        plugin = self.baseline if side == "base" else self.plugin
        env = {**self.env, "PYTHONPATH": f"{plugin}:{self.env['PYTHONPATH']}",
               "FROG_REPORT": str(self.io / "report.json")}
        selection = grading_selection(self.ids, self.canaries, self.guard if side != "select" else None)
        key_fd, key = -1, None
        if side in ("graded", "base"):
            key = secrets.token_hex(32).encode()
            key_fd = key_fifo(self.io, selection, self.guard, key)
            env.update(FROG_KEY_FIFO=str(self.io / "key"), FROG_SELECT=str(self.io / "select.json"))
        else:
            (self.io / "select.json").write_text(json.dumps(selection))
            env["FROG_SELECT"] = str(self.io / "select.json")
        if driver is not None:
            env.update(FROG_PROFILE_MODE=mode, FROG_PROFILE_OUT=out)
        start = ["-c", driver] if driver is not None else ["-m", "pytest"]
        cmd = [str(self.repo.python), *start, *self.repo.spec.pytest_args, "-q", "-p", "frog_report",
               *GRADING_PYTEST_ARGS, *self.files]
        try:
            p = subprocess.run(cmd, cwd=self.tree.path, env=env, capture_output=True, text=True)
            if driver is not None and not os.path.exists(out):
                raise RuntimeError(f"the {mode} run wrote nothing: {p.stdout[-500:]} {p.stderr[-1500:]}")
        finally:
            if key_fd >= 0:
                os.close(key_fd)
        r = read_report(self.io / "report.json", self.ids, p.returncode, p.stdout, key=key,
                        canaries=self.canaries if side in ("graded", "base") else None)
        assert len(r.statuses) == len(self.ids) and not r.tampering and not r.infra_failure, (
            self.tid, side, r.tampering, r.note, p.stdout[-800:])

    def warm(self) -> None:
        server = grading_server.server_for(self.repo, self.template)
        assert server is not None
        hidden = hidden_test_changes(self.task, self.template)
        assert not isinstance(hidden, str)
        canaries = Canaries.make(self.canaries.file, __import__("random").Random(), set(self.canaries.ids()))
        with server.lock:
            r = server.run(self.template, self.changes + hidden, self.ids, canaries, 900,
                           guard_for(self.repo, self.task, canaries, self.template, self.changes))
        assert all(s.ok for s in r.statuses.values()) and not r.tampering, (self.tid, r.note)

    def grade(self) -> None:
        """The whole grade (every selected test, whatever ``--first`` says)."""
        r = grade(self.repo, self.task, self.template, self.changes, self.scratch, use_cache=False)
        assert r.is_resolved, (self.tid, r.note)


def profile(t: Task, work: Path) -> None:
    """The counting run and the cProfile run of the graded side (see the module docstring)."""
    n = len(t.ids)
    for side in ("select", "guard", "graded"):
        out = str(work / f"counts-{side}.json")
        t.plugin_run(side, _DRIVER, "count", out)
        counts = json.loads(Path(out).read_text())
        total = sum(counts.values())
        top = sorted(counts.items(), key=lambda kv: -kv[1])[:6]
        print(f"  audit events, {side}: {total / n:.1f} per selected test; most: "
              + ", ".join(f"{e} {c / n:.1f}" for e, c in top))
    out = str(work / "prof.out")
    t.plugin_run("graded", _DRIVER, "profile", out)
    st = pstats.Stats(out)
    whole = st.total_tt
    own: dict[str, float] = {}
    calls: dict[str, int] = {}
    parts = {"frog_report.py", *(Path(f).name for f in PLUGIN_PARTS)}
    for (fn, _line, name), (_cc, nc, tt, _ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        if Path(fn).name in parts:  # the report plugin and every part it loads (guard, seal, vault, key)
            name = f"{Path(fn).stem}.{name}"
            own[name] = own.get(name, 0.0) + tt
            calls[name] = calls.get(name, 0) + nc
    mine = sum(own.values())
    print(f"  under cProfile: whole run {whole:.2f} s, the report plugin's own code (its parts included) {mine:.2f} s "
          f"({100 * mine / whole:.1f}%, {1e6 * mine / n:.0f} us per selected test); its functions by own time:")
    for name, tt in sorted(own.items(), key=lambda kv: -kv[1])[:12]:
        print(f"    {name:40} {tt:7.3f} s  {calls[name] / n:8.1f} calls/test  {1e6 * tt / n:7.1f} us/test")
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:15]  # type: ignore[attr-defined]
    print("  the whole run's functions by own time (pytest's and the plugin's alike):")
    for (fn, line, name), (_cc, nc, tt, _ct, _callers) in rows:
        where = f"{Path(fn).name}:{line}" if fn != "~" else "(built-in)"
        print(f"    {where + ' ' + name:60} {tt:7.3f} s  {nc / n:8.1f} calls/test  {1e6 * tt / n:7.1f} us/test")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", help=f"task id (repeatable); default: {', '.join(TASKS)}")
    ap.add_argument("--n", type=int, default=3, help="rounds per task (each round: every side once, rotated)")
    ap.add_argument("--sides", default=",".join(s for s in SIDES if s != "base"),
                    help="comma-separated, from " + ",".join(SIDES))
    ap.add_argument("--first", type=int, default=None,
                    help="run only the first K selected tests (the grade side still runs all): fixed costs apart")
    ap.add_argument("--baseline-plugin", default="", metavar="DIR",
                    help="the side 'base': 'graded' with the report plugin of another checkout (its frog_gym/_plugin)")
    ap.add_argument("--no-profile", action="store_true", help="skip the counting and cProfile runs")
    a = ap.parse_args()
    sides = tuple(s for s in a.sides.split(",") if s)
    assert "bare" in sides and set(sides) <= set(SIDES), sides
    assert ("base" in sides) == bool(a.baseline_plugin), "the side 'base' needs --baseline-plugin, and only it"
    meter = CpuMeter()
    print(f"load average at start: {os.getloadavg()}; CPU time: {meter.kind}\n")
    summary: dict[str, list[float]] = {s: [] for s in sides}
    for tid in a.task or pick(TASKS, heaviest=True):
        with tempfile.TemporaryDirectory(dir=paths.home() / "work", prefix="grading-profile-") as d:
            work = Path(d)
            t = Task(tid, work, a.first, a.baseline_plugin)
            print(f"## {tid}: {len(t.ids)} selected tests in {len(t.files)} files")
            if "warm" in sides or "grade" in sides:
                t.grade()  # starts the warm server (untimed)
            got: dict[str, list[tuple[float, float]]] = {s: [] for s in sides}
            reported = []
            for i in range(a.n):
                k = i % len(sides)
                for side in sides[k:] + sides[:k]:
                    w0, c0 = time.perf_counter(), meter.read()
                    if side == "bare":
                        reported.append(t.bare()[1])
                    elif side in ("select", "guard", "graded", "base"):
                        t.plugin_run(side)
                    else:
                        getattr(t, side)()
                    got[side].append((time.perf_counter() - w0, meter.read() - c0))
            med = {s: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for s, v in got.items()}
            base = med["bare"]
            print(f"  pytest's reported time (bare): {statistics.median(reported):.2f} s")
            print("  | side | wall | CPU | wall / bare | CPU / bare |\n  |---|---|---|---|---|")
            for s in sides:
                print(f"  | {s} | {med[s][0]:.2f} s | {med[s][1]:.2f} s | {med[s][0] / base[0]:.2f}x "
                      f"| {med[s][1] / base[1]:.2f}x |")
                summary[s].append(med[s][0] / base[0])
            if not a.no_profile:
                profile(t, work)
            t.tree.remove()
            t.scratch.remove()
            print(flush=True)
    print("median over tasks, wall / bare: " + ", ".join(f"{s} {statistics.median(v):.2f}x" for s, v in summary.items()))
    print(f"load average at end: {os.getloadavg()}")
    meter.close()


if __name__ == "__main__":
    main()
