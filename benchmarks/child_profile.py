"""Where a warm grade's test run spends its time, by pytest phase: every grading server child of a warm pass of
``benchmarks/harness.py``'s suite under ``cProfile``, the profiles summed.

``warm_costs.py`` splits a warm pass between the servers' starts, their children, the host and the oracle;
``vault_costs.py`` times the report vault's checks. This splits the children's own run (``pytest.main`` in a forked
child, as :meth:`frog_gym.grading.server.GradingServer.run` asks it) into pytest's configuration (arguments, ini
files, plugins, conftests; the report plugin's load, which builds the guard, the seal and the vault, within it),
collection, each test's setup, call and teardown, the reports, and the audit hooks (the vault's events and the
guard): what pytest costs around the tests themselves, which a cold grade pays alike.

It runs the warm side once, in a process of its own, on a copy of this checkout's package in a temporary folder (as
``vault_costs.py`` does; the checkout is untouched), whose grading server child starts a profiler before
``pytest.main`` and writes its statistics to a file it opened then (the guard refuses what code under test may not
do, a profile function set or a file opened under ``/frog/out`` among it, once the report plugin loads), which the
copy's host moves out after each grade. cProfile costs about a microsecond a call and cannot see inside audit hooks
(Python runs them with profiling off: the vault's and the guard's time shows as ``sys.audit``'s own), so the
seconds are inflated against a plain pass, most where calls are small and many (pytest's hooks); the shares are
what to read.

    python benchmarks/child_profile.py [--tasks 50] [--top 25]

Measured (session 27, 2 shared cores, load 0.1 at the start, the suite's 50 tasks: 4,635 tests, 13,890 reports; the
profiled pass took 33.4 s of CPU against about 20 s for a plain one): of the children's 23.95 s under the profiler,
pytest's configuration 3.02 s (12.6%; of it the report plugin's load 0.98 s: the vault's opening 0.39, the seal
0.34, the guard 0.16), collection 3.20 s (13.3%), the run loop 16.88 s (70.5%): the tests' calls 5.60 s (23.4%),
setup 1.23, teardown 0.41, the report plugin's report hook 3.39 s (14.2%) and the audit hooks' 4.33 s over 41,876
events (18.1%, the vault's checks: ``vault_costs.py``; the two overlap), the terminal reporter 0.38 s; the rest of
the loop is pytest's own machinery per test (its hooks, reports, capture and log handlers). What a graded test
pays beyond pytest's own work is the vault's checks; the rest is pytest's, paid cold alike.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import mixed_tasks, warm_up  # noqa: E402
from vault_costs import _patch, instrumented_pass, package_copy  # noqa: E402

OUT = "child.pstats"

_CHILD_START = f'''        import cProfile as _profile
        import marshal as _marshal

        _stats = os.open("/frog/out/{OUT}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        _profiler = _profile.Profile()
        _profiler.enable()
'''
_CHILD_END = '''        _profiler.snapshot_stats()  # (still enabled: turning it off is a profile function set, which the guard refuses)
        _data = _marshal.dumps(_profiler.stats)
        while _data:
            _data = _data[os.write(_stats, _data):]
'''
PHASES = (
    ("pytest's configuration (arguments, ini, plugins, conftests)", "_pytest/config/__init__.py", "_prepareconfig"),
    ("  the report plugin's load (guard, seal, vault)", "frog_report.py", "<module>"),
    ("    the vault's opening", "frog_vault.py", "open_vault"),
    ("    the seal", "frog_seal.py", "make_seal"),
    ("    the guard", "frog_guard.py", "install"),
    ("collection", "_pytest/main.py", "pytest_collection"),
    ("the run loop", "_pytest/main.py", "pytest_runtestloop"),
    ("  setup", "_pytest/runner.py", "pytest_runtest_setup"),
    ("  the tests' calls", "_pytest/python.py", "pytest_pyfunc_call"),
    ("  teardown", "_pytest/runner.py", "pytest_runtest_teardown"),
    ("  the report plugin's report hook (the vault's events in it)", "frog_report.py", "pytest_runtest_logreport"),
    ("  the terminal reporter's report hook", "_pytest/terminal.py", "pytest_runtest_logreport"),
    ("the audit hooks (vault and guard; sys.audit's own)", "~", "<built-in method sys.audit>"),
)
"""(label, file suffix, function): the cumulative time of that function in the summed profile (the audit hooks':
``sys.audit``'s own time, as the profiler sees none of the hooks' calls)."""


def profiled_copy(into: Path) -> Path:
    """A copy of the package whose grading server child profiles its ``pytest.main`` and whose host keeps each
    child's statistics (:func:`vault_costs.instrumented_pass`)."""
    package_copy(into, kept=OUT)
    server = into / "frog_gym" / "_plugin" / "frog_server.py"
    call = "        code = pytest.main(plugins=[_ChildPlugin])\n"
    _patch(server, call, _CHILD_START, before=True)
    _patch(server, _CHILD_START + call, _CHILD_END)
    return into


def _where(filename: str) -> str:
    """A profile's file name without the venv's or the interpreter's prefix."""
    return re.sub(r"^.*/(site-packages|lib/python3\.\d+)/", "", filename)


def summed(files: list[Path]):
    """The profiles of ``files`` summed by (file, function) across venvs: cumulative, own seconds and calls."""
    import pstats

    stats = pstats.Stats(*map(str, files))
    cumulative: Counter = Counter()
    own: Counter = Counter()
    calls: Counter = Counter()
    for (filename, _, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        key = (_where(filename), name)
        cumulative[key] += cumtime
        own[key] += tottime
        calls[key] += ncalls
    return cumulative, own, calls


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=50)
    p.add_argument("--top", type=int, default=25, help="functions listed by their own time")
    args = p.parse_args()
    ids = mixed_tasks(args.tasks)
    print(f"{len(ids)} tasks of the harness's suite, one warm pass, every grade's child profiled; load average at "
          f"start {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    warm_up(ids)
    cpu, _, _, (cumulative, own, calls) = instrumented_pass(ids, profiled_copy, "profile", summed)

    def key(suffix: str, name: str) -> tuple[str, str]:
        found = next((k for k in cumulative if k[1] == name and k[0].endswith(suffix)), None)
        if found is None:
            raise SystemExit(f"no {suffix}:{name} in the profiles: update {__file__} to where the code is")
        return found

    main_key = key("_pytest/config/__init__.py", "main")
    total = cumulative[main_key]
    print(f"warm pass under the profiler: CPU {cpu:.2f} s (every descendant); {calls[main_key]} children's "
          f"pytest.main: {total:.2f} s profiled, {calls[key('_pytest/runner.py', 'pytest_runtest_protocol')]} tests, "
          f"{calls[key('frog_report.py', 'pytest_runtest_logreport')]} reports")
    print(f"  {'phase':64} {'seconds':>8} {'calls':>8} {'share':>7}")
    for label, suffix, name in PHASES:
        k = key(suffix, name)
        seconds = own[k] if suffix == "~" else cumulative[k]
        print(f"  {label:64} {seconds:8.2f} {calls[k]:8d} {seconds / total:7.1%}")
    print(f"the {args.top} functions with the most time of their own:")
    for (where, name), seconds in own.most_common(args.top):
        print(f"  {seconds:7.3f} s {calls[(where, name)]:9d} calls  {where}:{name}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
