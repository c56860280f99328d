"""Share of bugs one ``candidate_fixes`` edit undoes, per operator family (lower: harder to guess).

Two measurements, both printed per family:

* **tasks**: the registered single-bug tasks (their mutated file from the pristine snapshot, the bug
  applied, every candidate edit on the mutated lines tried);
* **sample**: a seeded sample of each family's mutations of the registered repositories' mutable code
  (``--per-family`` each), which also measures families that have no task yet.

The suite's share is the task-weighted total over the single-bug tasks. No test runs here: it is pure
source analysis (a couple of minutes for the whole registry).

Run: ``python benchmarks/one_edit_undo.py [--per-family 150] [--seed 0] [--repos a,b]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from frog_gym.generators.operators import FAMILIES
from frog_gym.generators.undo import sample_shares, task_undone


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-family", type=int, default=150)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repos", help="comma-separated registry names (default: all with tasks)")
    p.add_argument("--json", help="also write the figures here")
    p.add_argument("--max-file-lines", type=int, default=800,
                   help="sample only from source files up to this many lines (candidate search is per module)")
    args = p.parse_args()

    from frog_gym.generators.coverage_map import mutable_files
    from frog_gym.snapshot import PreparedRepo, snapshot_tree
    from frog_gym.spec import load_repo
    from frog_gym.task import load_task, registered_task_ids

    t0 = time.monotonic()
    ids = registered_task_ids()
    repos = sorted({i.split("__")[0] for i in ids})
    if args.repos:
        repos = [r for r in repos if r in args.repos.split(",")]
    by_task: dict[str, Counter] = {}
    sources: list[str] = []
    for repo in repos:
        spec = load_repo(repo)
        tree = snapshot_tree(spec)
        for iid in (i for i in ids if i.split("__")[0] == repo):
            t = load_task(iid)
            done = task_undone(tree, {"provenance": t.provenance})
            if done is None:
                continue
            by_task.setdefault(t.provenance["sites"][0]["family"], Counter())[done] += 1
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
    total = Counter()
    rows = {}
    for fam in FAMILIES:
        c = by_task.get(fam, Counter())
        n = c[True] + c[False]
        total.update(c)
        u, s = sample.get(fam, (0, 0))
        rows[fam] = {"tasks": [c[True], n], "sample": [u, s]}
        tshare = f"{c[True] / n:6.0%}" if n else "     -"
        sshare = f"{u / s:6.0%}" if s else "     -"
        print(f"{fam:24} {c[True]:>6} / {n:<5} {tshare}   {u:>6} / {s:<5} {sshare}")
    n = total[True] + total[False]
    print(f"{'suite (single-bug tasks)':24} {total[True]:>6} / {n:<5} {total[True] / max(1, n):6.0%}")
    print(f"({len(repos)} repositories, {len(sources)} source files, {time.monotonic() - t0:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"families": rows, "suite": [total[True], n]}, f, indent=1)


if __name__ == "__main__":
    main()
