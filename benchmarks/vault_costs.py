"""Where the report vault's time goes in a warm pass of ``benchmarks/harness.py``'s suite: each of its checks timed
in the grading servers' children and summed over the pass, against the pass's CPU.

The vault's checks are closures inside ``frog_vault.open_vault``, run in sandboxed children forked per grade: a
sampling profiler's samples land on them mixed with the children's other work (py-spy also puts some on the wrong
lines), and cProfile's own cost per call swamps checks of a few microseconds. So this runs the warm side of the
harness's suite once, in a process of its own (as ``harness.py --against`` runs another checkout), on a copy of this
checkout's ``frog_gym`` in a temporary folder:

- the copy's ``_plugin/frog_vault.py`` wraps each check named in :data:`TIMED` in a timer (``perf_counter``) and, at
  the end of the session, writes the totals beside the report;
- the copy's ``grading/server.py`` moves that file out of the server's folder after each grade.

Nothing of the checkout itself changes. A timer costs about a microsecond a call, and the figures include it. Times
nest: ``lying_values`` includes ``heap_classes`` and ``examine``, ``body`` (one call per event the vault takes)
includes the rest, and ``broken_seal`` is the seal's check (hot and full): ``broken_namespace`` once per group of
namespaces it compares, then ``broken_hook``.

    python benchmarks/vault_costs.py [--tasks 50]

Measured (session 26, 2 shared cores, load 0.3-1.0, the suite's 50 tasks, two runs; the warm pass 22.7 and 21.3 s of
CPU, the first with the instrumented copy's code not yet kept by the host's store): body 3.59 and 3.43 s over 41,770
events (16% of the pass); lying_values 2.04 and 1.95 s over 845 calls (heap_classes 0.73 and 0.70 s, examine 0.37
and 0.35 s over 166-167), 9% of the pass; broken_seal 1.06 and 1.02 s over 4,670 (5%); genuine 0.24 and 0.23 s over
27,880; test_function_replaced 0.13 and 0.12 s over 4,620. A third run with the seal split (load 1.1-1.4, pass 20.55 s):
broken_seal 0.98 s, of it broken_namespace 0.70 s over 4,870 groups (4,420 hot checks, two groups at each full one)
and broken_hook 0.27 s. The vault's checks run in a cold grade too.

Session 27 (load 0.0-1.6): on the session's first tree, as session 26 (body 3.54 s, lying_values 2.01 s, heap_classes
0.71 s, broken_seal 1.05 s, broken_namespace 0.75 s; the pass 21.5 s). With the vault's C helper
(``_plugin/frog_accel.c``: the walk of the classes and the comparison of their names): lying_values 1.03 s,
heap_classes 0.13 s, body 2.59 s; with the seal's namespaces compared there too: broken_namespace 0.21 s, broken_seal
0.49 s, body 1.99 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpumeter import CpuMeter  # noqa: E402
from harness import _run_side, mixed_tasks, warm_up  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TIMED = ("body", "lying_values", "heap_classes", "examine", "broken_seal", "broken_namespace", "broken_hook",
         "genuine", "test_function_replaced")
"""The vault's closures timed, each rebound to a timed wrapper before the vault's generator starts (the closures that
call them look them up when they run)."""
OUT = "vault_costs.json"

_TIMER = '''
    import json as _costs_json, os as _costs_os, time as _costs_time
    _costs = {}

    def _costs_timed(name, fn, _clock=_costs_time.perf_counter):
        def timed(*a, **k):
            t = _clock()
            try:
                return fn(*a, **k)
            finally:
                c = _costs.setdefault(name, [0, 0.0])
                c[0] += 1
                c[1] += _clock() - t
        return timed

'''


def _patch(path: Path, anchor: str, text: str, before: bool = False) -> None:
    """Put ``text`` after (or before) the one occurrence of ``anchor`` in ``path``; a clear error where the code
    has moved."""
    source = path.read_text(encoding="utf-8")
    if source.count(anchor) != 1:
        raise SystemExit(f"{path.name}: the line {anchor.strip()!r} is not there exactly once; update {__file__} "
                         "to where the vault's code now is")
    path.write_text(source.replace(anchor, text + anchor if before else anchor + text), encoding="utf-8")


def package_copy(into: Path, kept: str | None = None) -> Path:
    """A copy of this checkout's package and of the harness's runner in ``into`` (for ``_run_side(..., root=into)``),
    to instrument there: the checkout is never touched. With ``kept``: the copy's grading server moves the file of
    that name its child left in the out folder to ``$FROG_KEPT`` after each grade (:func:`instrumented_pass`)."""
    shutil.copytree(ROOT / "frog_gym", into / "frog_gym", ignore=shutil.ignore_patterns("__pycache__"))
    (into / "benchmarks").mkdir()
    for name in ("harness.py", "cpumeter.py"):
        shutil.copy2(ROOT / "benchmarks" / name, into / "benchmarks" / name)
    if kept is not None:
        _patch(into / "frog_gym" / "grading" / "server.py", '        output = _read_tail(self.out, "log.txt")\n',
               f"        if (self.out / {kept!r}).is_file() and os.environ.get('FROG_KEPT'):\n"
               f"            shutil.move(str(self.out / {kept!r}), os.path.join(os.environ['FROG_KEPT'],\n"
               f"                                                              f'{{uuid.uuid4().hex}}-{kept}'))\n")
    return into


def instrumented_pass(ids: list[str], make_copy, what: str, read):
    """One warm pass of ``ids`` in a process of its own on ``make_copy(folder)`` (a :func:`package_copy` with ``kept``),
    its CPU metered; ``read`` takes the files the grades left (one a grade, checked, as is every episode resolved)
    while they exist. Returns (CPU, wall, the side's summary, what ``read`` returned)."""
    with tempfile.TemporaryDirectory(prefix="frog-instrumented-") as tmp:
        root, found = make_copy(Path(tmp) / "tree"), Path(tmp) / "found"
        found.mkdir()
        os.environ["FROG_KEPT"] = str(found)  # (the side's process inherits it)
        meter = CpuMeter()
        print(f"CPU time: {meter.kind}", flush=True)
        cpu, wall, side = _run_side(meter, "warm", ids, False, root, what)
        meter.close()
        files = sorted(found.iterdir())
        if len(files) != side["episodes"] or side["resolved"] != side["episodes"]:
            raise SystemExit(f"{len(files)} grades left their {what} file, {side['resolved']} of {side['episodes']} "
                             f"episodes resolved: {side.get('unresolved')}")
        return cpu, wall, side, read(files)


def instrumented_copy(into: Path) -> Path:
    """A copy of this checkout's package and of the harness's runner, the copy's vault timed."""
    package_copy(into, kept=OUT)
    vault = into / "frog_gym" / "_plugin" / "frog_vault.py"
    rebind = "".join(f"    {n} = _costs_timed({n!r}, {n})\n" for n in TIMED)
    _patch(vault, "    gen = run()\n", _TIMER + rebind, before=True)
    _patch(vault, "        replace(tmp, report_path)\n",
           f"        with open_(_costs_os.path.join(_costs_os.path.dirname(report_path), {OUT!r}), 'w') as _f:\n"
           "            _f.write(_costs_json.dumps(_costs))\n")
    return into


def _totals(files: list[Path]) -> dict[str, list[float]]:
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for f in files:
        for name, (calls, seconds) in json.loads(f.read_text()).items():
            totals[name][0] += calls
            totals[name][1] += seconds
    return totals


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=50)
    args = p.parse_args()
    ids = mixed_tasks(args.tasks)
    print(f"{len(ids)} tasks of the harness's suite, one warm pass; load average at start {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs", flush=True)
    warm_up(ids)
    cpu, wall, side, totals = instrumented_pass(ids, instrumented_copy, "vault times", _totals)
    print(f"warm pass: {side['episodes']} episodes, CPU {cpu:.2f} s (every descendant), wall {wall:.1f} s; "
          f"{side['episodes']} grades' vaults:")
    print(f"  {'check':24} {'calls':>8} {'seconds':>8} {'us a call':>10} {'of the CPU':>10}")
    for name in sorted(totals, key=lambda n: -totals[n][1]):
        calls, seconds = totals[name]
        print(f"  {name:24} {int(calls):8d} {seconds:8.3f} {seconds / calls * 1e6:10.1f} {seconds / cpu:10.1%}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
