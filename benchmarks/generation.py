"""Task synthesis throughput: validated tasks per CPU-hour with coverage targeting, against the full suite.

The same seeded sample of candidate mutations of one repository is validated twice, in one process with
fresh sandboxes per run (no fork server, so that the two modes differ only in what they run):

* **targeted**: each candidate runs only the tests covering its site (how ``frog-gym generate`` works);
* **full suite**: each candidate runs every test that passes on the pristine tree (the baseline).

CPU time is this process's (``getrusage``) plus what each sandboxed pytest process reports for itself at
its end (the report plugin's ``cpu_seconds``: interpreter start, imports, collection, tests). Printed:
tasks kept, CPU seconds and tasks per CPU-hour for each mode, and their ratio. Then the acceptance rate
per operator family, from this sample and, when a generation run has left its records in the registry and
``$FROG_GYM_HOME/gen``, from that run too (accepted single-bug tasks / candidates tried).

Run: ``python benchmarks/generation.py [--repo inflection] [--n 12] [--seed 0]`` (a few minutes).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import resource
import time
from collections import Counter

from frog_gym.generators import coverage_map
from frog_gym.generators.synthesis import (GENERATOR, GenerateConfig, _sample_tests, all_sites, bug_changes_of,
                                           covering_tests, order_sites, read_existing, tasks_path)
from frog_gym.generators.validate import baseline, validate
from frog_gym.snapshot import prepare
from frog_gym.spec import load_repo, repo_names
from frog_gym.workspace import Workspace
from frog_gym import paths


def _cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime


def measure(repo_name: str, n: int, seed: int) -> tuple[dict, Counter, Counter]:
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
    try:
        for mode in ("targeted", "full suite"):
            gold: dict = {}
            c0, w0, ok, sandboxed = _cpu(), time.monotonic(), 0, 0.0
            for s in sites:
                tests = _sample_tests(covering_tests(cmap, s, repo), cmap, passing, cfg, s.key) \
                    if mode == "targeted" else None
                if mode == "targeted" and not tests:
                    continue
                v = validate(repo, bug_changes_of(repo, [s]), candidates=tests, max_fail_to_pass=cfg.max_fail_to_pass,
                             base=template, workspace=ws, gold_cache=gold, timeout=300,
                             test_args=(f"--timeout={cfg.test_timeout}", "--tb=short"))
                ok += v.ok
                sandboxed += v.cpu_seconds
                if mode == "targeted":
                    tried[s.family] += 1
                    kept[s.family] += v.ok
            cpu, wall = _cpu() - c0 + sandboxed, time.monotonic() - w0
            out[mode] = {"kept": ok, "cpu_s": cpu, "wall_s": wall, "per_cpu_hour": 3600 * ok / cpu if cpu else 0.0}
    finally:
        ws.remove()
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
    args = p.parse_args()
    res, tried, kept = measure(args.repo, args.n, args.seed)
    print(f"{args.repo}: {args.n} candidates, validated both ways (3 runs each, fresh sandboxes)")
    for mode, r in res.items():
        print(f"  {mode:11} kept {r['kept']:3}  CPU {r['cpu_s']:7.1f} s  wall {r['wall_s']:7.1f} s  "
              f"{r['per_cpu_hour']:7.1f} tasks per CPU-hour")
    t, f = res["targeted"]["per_cpu_hour"], res["full suite"]["per_cpu_hour"]
    print(f"  ratio targeted / full suite: {t / f:.2f}x" if f else "  ratio: full suite kept nothing")
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
