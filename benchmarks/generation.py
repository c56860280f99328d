"""Task synthesis throughput: validated tasks per CPU-hour with coverage targeting, against the full suite.

The same seeded sample of candidate mutations of one repository is validated twice in one process, by
the same rule and the same machinery, so that the two modes differ only in which tests they run:

* **targeted**: each candidate runs only the tests covering its site (how ``frog-gym generate`` works);
* **full suite**: each candidate runs every test that passes on the pristine tree (the baseline).

The same acceptance rule holds in both: a bug is kept when it breaks at least one test, deterministically,
and the gold fix restores every test (no cap on how many tests it may break, since "breaks more than 40"
would count different tests in the two modes: that, not cheaper validation, made the old ratio). Both
modes run through the pytest fork server ``generate`` uses (``--no-server``: a fresh sandbox per run in
both). CPU time is everything this process and all its descendants use, the sandboxes included (a
cgroup's counter: ``benchmarks/cpumeter.py``). Printed: tasks kept, CPU seconds and tasks per CPU-hour
for each mode, their ratio, and how many candidates the two modes judged alike. Then the acceptance rate
per operator family, from this sample and, when a generation run has left its records in the registry and
``$FROG_GYM_HOME/gen``, from that run too (accepted single-bug tasks / candidates tried).

Run: ``python benchmarks/generation.py [--repo inflection] [--n 12] [--seed 0] [--no-server]`` (minutes).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import time
from collections import Counter

from frog_gym.generators import coverage_map
from frog_gym.generators.synthesis import GENERATOR, GenerateConfig, _sample_tests, all_sites, bug_changes_of, covering_tests, order_sites, tasks_path
from frog_gym.generators.taskfiles import read_existing
from frog_gym.generators.validate import baseline, validate
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo, repo_names
from frog_gym.sandbox.workspace import Workspace
from frog_gym import paths
from frog_gym.generators.fastrun import Runner

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpumeter import CpuMeter  # noqa: E402


def measure(repo_name: str, n: int, seed: int, meter: CpuMeter, server: bool = True) -> tuple[dict, Counter, Counter]:
    spec = load_repo(repo_name)
    repo = prepare(spec)
    cmap, template = coverage_map.build(repo)
    cfg = GenerateConfig(seed=seed)
    passing = cmap.passing() & {t for t, s in baseline(repo).items() if s in ("PASSED", "XFAIL")}
    sites = order_sites(all_sites(repo, cmap, None), random.Random(f"bench:{seed}"))[:n]
    ws = Workspace(paths.home() / "work" / f"bench-{os.getpid()}")
    ws.remove()
    ws.sync(template)
    out: dict = {}
    tried, kept = Counter(), Counter()
    verdicts: dict[str, dict[str, bool]] = {}
    try:
        for mode in ("targeted", "full suite"):
            gold: dict = {}
            runner = Runner(repo, ws.path, use_server=server)
            verdicts[mode] = {}
            c0, w0, ok = meter.read(), time.monotonic(), 0
            for s in sites:
                tests = _sample_tests(covering_tests(cmap, s, repo), cmap, passing, cfg, s.key) \
                    if mode == "targeted" else None
                if mode == "targeted" and not tests:
                    continue
                v = validate(repo, bug_changes_of(repo, [s]), candidates=tests, max_fail_to_pass=None,
                             base=template, workspace=ws, gold_cache=gold, timeout=300, runner=runner,
                             test_args=(f"--timeout={cfg.test_timeout}", "--tb=short"))
                ok += v.ok
                verdicts[mode][s.key] = v.ok
                if mode == "targeted":
                    tried[s.family] += 1
                    kept[s.family] += v.ok
            runner.close()
            cpu, wall = meter.read() - c0, time.monotonic() - w0
            out[mode] = {"kept": ok, "cpu_s": cpu, "wall_s": wall, "per_cpu_hour": 3600 * ok / cpu if cpu else 0.0}
    finally:
        ws.remove()
    both = verdicts["targeted"].keys() & verdicts["full suite"].keys()
    out["agree"] = (sum(verdicts["targeted"][k] == verdicts["full suite"][k] for k in both), len(both))
    return out, tried, kept


def from_generation_run() -> tuple[Counter, Counter]:
    """Accepted single-bug tasks and candidates tried per family, from what generation left behind."""
    accepted, rejected = Counter(), Counter()
    for name in repo_names():
        for d in read_existing(tasks_path(load_repo(name), GenerateConfig())):
            prov = d.get("provenance", {})
            if prov.get("generator") == GENERATOR and len(prov.get("sites", [])) == 1:
                accepted[prov["sites"][0]["family"]] += 1
    for f in glob.glob(str(paths.home() / "gen" / "*" / "rejected-seed*.jsonl")):
        for line in open(f):
            d = json.loads(line)
            if d.get("family") != "combo":
                rejected[d["family"]] += 1
    return accepted, rejected


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repo", default="inflection")
    p.add_argument("--n", type=int, default=12, help="candidates in the sample")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-server", action="store_true", help="a fresh sandbox per pytest run in both modes")
    args = p.parse_args()
    meter = CpuMeter()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; CPU time: {meter.kind}")
    res, tried, kept = measure(args.repo, args.n, args.seed, meter, server=not args.no_server)
    agree, compared = res.pop("agree")
    how = "fresh sandboxes" if args.no_server else "the pytest fork server"
    print(f"{args.repo}: {args.n} candidates, validated both ways by the same rule through {how}; "
          f"verdicts agree on {agree}/{compared}")
    for mode, r in res.items():
        print(f"  {mode:11} kept {r['kept']:3}  CPU {r['cpu_s']:7.1f} s  wall {r['wall_s']:7.1f} s  "
              f"{r['per_cpu_hour']:7.1f} tasks per CPU-hour")
    t, f = res["targeted"]["per_cpu_hour"], res["full suite"]["per_cpu_hour"]
    print(f"  ratio targeted / full suite: {t / f:.2f}x" if f else "  ratio: full suite kept nothing")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    meter.close()
    print("acceptance per family (this sample):")
    for fam in sorted(tried):
        print(f"  {fam:24} {kept[fam]}/{tried[fam]}")
    accepted, rejected = from_generation_run()
    if accepted:
        print("acceptance per family (the generation run's records: accepted / tried):")
        for fam in sorted(set(accepted) | set(rejected)):
            n = accepted[fam] + rejected[fam]
            print(f"  {fam:24} {accepted[fam]:4}/{n:<4} {100 * accepted[fam] / n:5.1f}%")
        a, r = sum(accepted.values()), sum(rejected.values())
        print(f"  {'all':24} {a:4}/{a + r:<4} {100 * a / (a + r):5.1f}%")


if __name__ == "__main__":
    main()
