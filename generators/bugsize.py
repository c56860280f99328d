"""The single-bug pool's size policy (issue 22): how many easy single-bug tasks each repository retires into
combined ones so that its single-bug tasks are mostly multi-line bugs.

Targets, over a repository's registered single-bug tasks: the median gold patch changes at least
``MIN_MEDIAN_LINES`` lines (``-`` and ``+`` lines, as ``benchmarks/one_edit_undo.py`` counts them), and at
most ``MAX_UNDONE`` of them are undone by one ``candidate_fixes`` edit (:mod:`frog_gym.generators.undo`).
The only lever that keeps the pool's size is :func:`~frog_gym.generators.harden.harden`: it pairs a hard
single-bug task with an easy one (one edit undoes it) as a combined task and retires the easy one, so
every retirement takes one small, one-edit bug out of the single-bug pool and puts one combined task in.
:func:`plan` says how many retirements meet both targets; a repository whose small bugs that one edit does
not undo (a removed statement, a dropped argument) outnumber its big ones cannot get there by retiring and
needs new multi-line tasks (``frog-gym generate REPO --families`` with `BIG_FAMILIES`), which the plan
says as ``need_big``.

Run: ``python -m frog_gym.generators.bugsize [REPO ...|--all] [--apply] [--seed 0]`` prints the plan per
repository (``--apply`` runs the hardening it asks for, anchored on `ANCHORS`, and prints the plan again).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from frog_gym.generators.hunks import changed_lines
from frog_gym.generators.operators import HARD_FAMILIES, MULTI_LINE_FAMILIES

MIN_MEDIAN_LINES = 4
MAX_UNDONE = 0.40
BIG_FAMILIES = ("duplicated_branch_body", "missing_state_update", "repeated_comparison_flip", "swapped_blocks",
                "wrong_variable_in_block")
"""The multi-line families whose gold patches change at least ``MIN_MEDIAN_LINES`` lines (3 at the least for
duplicated_branch_body; the others move or drop one line as often as not): generate with these to add big
single-bug tasks, ``frog-gym generate REPO --families`` and a ``--max-tasks`` above the repository's count."""


ANCHORS = (*HARD_FAMILIES, "removed_statement", *MULTI_LINE_FAMILIES)
"""The families ``--apply`` pairs easy tasks with: harden's ``HARD_FAMILIES``, ``removed_statement`` (no single
candidate edit undoes one either; session 16's retirements needed it once the others' tasks were used) and the
multi-line ones."""


@dataclass(frozen=True)
class Plan:
    """A repository's single-bug tasks by size and one-edit verdict, and what the targets ask of it."""

    repo: str
    singles: int
    big: int
    """Single-bug tasks whose gold patch changes at least ``MIN_MEDIAN_LINES`` lines."""
    undone: int
    """Single-bug tasks one candidate edit undoes (all small but a handful: they change one token)."""
    small_kept: int
    """Small single-bug tasks no single edit undoes: retiring cannot take them out."""
    retire: int
    """Easy (undone) single-bug tasks to retire into combined ones."""
    need_big: int
    """New big single-bug tasks still needed once every easy one is retired (0: retiring is enough)."""

    def after(self) -> tuple[float, float]:
        """``(median changed-line lower bound met, undone share)`` once ``retire`` tasks are retired."""
        left = self.singles - self.retire
        return (self.big > (left - self.big) and left > 0), (self.undone - self.retire) / max(1, left)


def plan(repo: str, sizes: list[tuple[int, bool]]) -> Plan:
    """The plan for one repository's single-bug tasks, each given as ``(changed lines, undone by one edit)``.

    Retiring ``r`` easy tasks meets the median target when big tasks are more than half of what is left,
    ``big > small - r`` (so even the lower median is big), and the one-edit target when ``undone - r <= MAX_UNDONE * (singles - r)``.

    Example:
        >>> plan("demo", [(2, True)] * 6 + [(2, False)] + [(6, False)] * 3)
        Plan(repo='demo', singles=10, big=3, undone=6, small_kept=1, retire=5, need_big=0)
    """
    singles = len(sizes)
    big = sum(1 for n, _ in sizes if n >= MIN_MEDIAN_LINES)
    undone = sum(1 for n, u in sizes if n < MIN_MEDIAN_LINES and u)
    small_kept = singles - big - undone
    for_median = (singles - big) - big + 1
    for_undone = math.ceil((undone - MAX_UNDONE * singles) / (1 - MAX_UNDONE) - 1e-9)
    retire = max(0, for_median, for_undone)
    need_big = max(0, retire - undone)
    return Plan(repo, singles, big, undone, small_kept, min(retire, undone), need_big)


def sizes_of(spec, records: list[dict]) -> list[tuple[int, bool]]:  # type: ignore[no-untyped-def]
    """``(changed lines, undone)`` of each single-bug task record of one repository."""
    from frog_gym.catalog.snapshot import snapshot_tree
    from frog_gym.generators.undo import UndoCache

    tree = snapshot_tree(spec)
    cache = UndoCache()
    out = []
    for d in records:
        if len(d.get("provenance", {}).get("sites", [])) == 1:
            out.append((changed_lines(d.get("patch", "")), bool(cache.task_undone(tree, d))))
    cache.save()
    return out


def _records(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()] if path.exists() else []


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("repos", nargs="*", help="registered repository names")
    p.add_argument("--all", action="store_true", help="every repository with a task file")
    p.add_argument("--apply", action="store_true", help="run the hardening the plan asks for")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    from frog_gym.catalog.spec import load_repo
    from frog_gym.generators.harden import describe, harden
    from frog_gym.generators.synthesis import GenerateConfig, tasks_path

    cfg = GenerateConfig(seed=args.seed, workers=args.workers)
    if args.all:
        from frog_gym.catalog.spec import repo_names

        names = [n for n in repo_names() if tasks_path(load_repo(n), cfg).exists()]
    else:
        names = args.repos
    if not names:
        print("bugsize: name repositories or pass --all", file=sys.stderr)
        return 2
    totals = [0, 0, 0, 0, 0, 0]
    for name in names:
        spec = load_repo(name)  # an unknown name fails here, with a did-you-mean
        pl = plan(name, sizes_of(spec, _records(tasks_path(spec, cfg))))
        for _round in range(3 if args.apply else 0):  # a retired task may leave a pair untried: plan again
            if not pl.retire:
                break
            done = harden(spec, cfg, pl.retire, progress=False, anchors=ANCHORS, easy_below=MIN_MEDIAN_LINES)
            print(describe(done), flush=True)
            pl = plan(name, sizes_of(spec, _records(tasks_path(spec, cfg))))
            if not done.combined:
                break
        ok, share = pl.after()
        print(f"{name:16} singles {pl.singles:4}  big {pl.big:4}  undone {pl.undone:4}  small kept {pl.small_kept:4}"
              f"  retire {pl.retire:4}  need big {pl.need_big:4}  after: undone {share:5.1%}, median>=4 {ok}",
              flush=True)
        for i, v in enumerate((pl.singles, pl.big, pl.undone, pl.small_kept, pl.retire, pl.need_big)):
            totals[i] += v
    s, b, u, k, r, n = totals
    left = s - r
    print(f"{'all':16} singles {s:4}  big {b:4}  undone {u:4}  small kept {k:4}  retire {r:4}  need big {n:4}  "
          f"after: {left} single-bug tasks, undone {(u - r) / max(1, left):.1%}, big {b / max(1, left):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
