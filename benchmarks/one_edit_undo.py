"""Share of tasks one ``candidate_fixes`` edit undoes, per operator family and for the whole training pool.

The pool is what ``FrogSWE-v0`` samples: every registered task file but the held-out FrogLive ones
(``*.live.jsonl``) and the toy family. Each task counts by its recorded mutation sites:

* **single-bug** (one site): undone when some candidate edit on its mutated lines of the buggy file
  gives back the pristine file (compared as ASTs; :mod:`frog_gym.generators.undo`);
* **combined** (two or more sites, in different functions): never undone by one edit. A candidate edit
  changes one site, and the bugs at the other sites stay, so the tree is not the pristine one and the
  task's FAIL_TO_PASS tests of those bugs still fail. They count as not undone in the all-tasks share
  and are left out of the single-bug share;
* **without recorded sites** (hand-written bugs, mirror tasks): not measurable here; counted and left
  out of both shares.

Both suite figures are printed, always: the all-tasks share (single-bug and combined tasks) and the
single-bug-only share. The **sample** columns measure a seeded sample of each family's mutations of the
registered repositories' mutable code (``--per-family`` each), which also covers families without tasks.

No test runs here: it is source analysis. Verdicts are cached under ``$FROG_GYM_HOME/undo`` per digest of
the operator code (``--no-cache`` measures everything again; a cold run of the whole pool takes several
CPU minutes).

Run: ``python benchmarks/one_edit_undo.py [--per-family 0] [--tasks-dir DIR] [--json OUT]``
(``--tasks-dir`` reads task files from elsewhere, e.g. a worktree of an older commit's
``registry/tasks``, to measure the pool as it was).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from frog_gym.generators.operators import FAMILIES
from frog_gym.generators.undo import UndoCache, sample_shares


def pool_files(tasks_dir: Path) -> list[Path]:
    """The task files of ``FrogSWE-v0``'s pool: no FrogLive file, no toy family."""
    from frog_gym import TOY_REPO

    return sorted(p for p in tasks_dir.glob("*.jsonl")
                  if not p.name.endswith(".live.jsonl") and p.name.split(".")[0] != TOY_REPO)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-family", type=int, default=150, help="sampled mutations per family (0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repos", help="comma-separated registry names (default: all with tasks)")
    p.add_argument("--tasks-dir", help="read task files here instead of the registry's task folder")
    p.add_argument("--no-cache", action="store_true", help="measure every task again")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("--max-file-lines", type=int, default=800,
                   help="sample only from source files up to this many lines (candidate search is per module)")
    args = p.parse_args()

    from frog_gym.generators.coverage_map import mutable_files
    from frog_gym.catalog.snapshot import PreparedRepo, snapshot_tree
    from frog_gym.catalog.spec import load_repo
    from frog_gym.catalog.task import _tasks_dir

    t0 = time.monotonic()
    tasks_dir = Path(args.tasks_dir) if args.tasks_dir else Path(str(_tasks_dir()))
    by_repo: dict[str, list[dict]] = {}
    for f in pool_files(tasks_dir):
        recs = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        by_repo.setdefault(f.name.split(".")[0], []).extend(recs)
    repos = sorted(by_repo)
    if args.repos:
        repos = [r for r in repos if r in args.repos.split(",")]
    cache = UndoCache(persist=not args.no_cache)
    by_family: dict[str, Counter] = {}
    kinds = Counter()
    per_repo: dict[str, Counter] = {}
    sources: list[str] = []
    for repo in repos:
        spec = load_repo(repo)
        tree = snapshot_tree(spec)
        pr = per_repo.setdefault(repo, Counter())
        for d in by_repo[repo]:
            sites = d.get("provenance", {}).get("sites", [])
            if not sites:
                kinds["no sites"] += 1
                pr["no sites"] += 1
            elif len(sites) > 1:
                kinds["combined"] += 1
                pr["combined"] += 1
            else:
                done = bool(cache.task_undone(tree, d))
                by_family.setdefault(sites[0]["family"], Counter())[done] += 1
                kinds["single undone" if done else "single kept"] += 1
                pr["single undone" if done else "single kept"] += 1
        cache.save()
        if args.per_family:
            for f in mutable_files(PreparedRepo(spec, tree, tree), tree):  # no venv needed to list files
                try:
                    text = (tree / f).read_text(encoding="utf-8")
                    if text.count("\n") <= args.max_file_lines:
                        sources.append(text)
                except (OSError, UnicodeDecodeError):
                    continue
    print(f"tasks measured in {time.monotonic() - t0:.0f} s", flush=True)
    sample = sample_shares(sources, args.per_family, args.seed) if args.per_family else {}
    print(f"{'family':24} {'tasks undone':>14} {'share':>6}   {'sample undone':>14} {'share':>6}")
    rows = {}
    for fam in FAMILIES:
        c = by_family.get(fam, Counter())
        n = c[True] + c[False]
        u, s = sample.get(fam, (0, 0))
        rows[fam] = {"tasks": [c[True], n], "sample": [u, s]}
        tshare = f"{c[True] / n:6.0%}" if n else "     -"
        sshare = f"{u / s:6.0%}" if s else "     -"
        print(f"{fam:24} {c[True]:>6} / {n:<5} {tshare}   {u:>6} / {s:<5} {sshare}")
    undone = kinds["single undone"]
    single = undone + kinds["single kept"]
    measured = single + kinds["combined"]
    print(f"\npool: {measured + kinds['no sites']} tasks on {len(repos)} repositories: {single} single-bug, "
          f"{kinds['combined']} combined (2-3 sites; one edit never undoes them), {kinds['no sites']} without "
          "recorded sites (hand-written, mirror: not measured)")
    print(f"{'suite, all measured tasks':32} {undone:>6} / {measured:<5} {undone / max(1, measured):6.1%}")
    print(f"{'suite, single-bug tasks only':32} {undone:>6} / {single:<5} {undone / max(1, single):6.1%}")
    print(f"({len(sources)} source files sampled, {time.monotonic() - t0:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"families": rows, "suite_all": [undone, measured], "suite_single": [undone, single],
                       "combined": kinds["combined"], "no_sites": kinds["no sites"],
                       "repos": {r: dict(c) for r, c in per_repo.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
