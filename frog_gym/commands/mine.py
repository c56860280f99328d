"""``frog-gym mine``: mine real bug fixes from consecutive PyPI releases into FrogLive tasks (resumable)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "Mine real bug fixes from consecutive PyPI releases of registered repositories (FrogLive tasks)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("repos", nargs="*", metavar="REPO",
                   help="registered repository names (see `frog-gym registry list`)")
    p.add_argument("--all", action="store_true", help="every registered repository with a PyPI source")
    p.add_argument("--since", metavar="DATE", help="only fixes released on or after DATE (YYYY-MM-DD)")
    p.add_argument("--max-pairs", type=int, default=12,
                   help="newest release pairs scanned per repository (default 12; 0: all)")
    p.add_argument("--runs", type=int, default=3, help="graded validation runs per task (default 3)")
    p.add_argument("--tasks-dir", help="write <repo>.live.jsonl here instead of the registry's task folder")
    p.add_argument("--mirror", action="store_true",
                   help="make mirror tasks (training: the fix reversed onto the pinned release) from the older "
                        "release pairs, never one a live task comes from")
    p.add_argument("--restate", action="store_true",
                   help="match the statements of the named repositories' live tasks against their "
                        "changelogs again (no mining)")
    p.add_argument("--minimize", action="store_true",
                   help="reduce the gold patches of the named repositories' live tasks whose reduction ran out of "
                        "runs to 1-minimal hunk sets, validating each smaller patch (no mining; "
                        "generators/minimal.py)")
    p.add_argument("--budget", type=int, default=None,
                   help="with --minimize: test runs each task's reduction may use (default 200)")
    p.add_argument("--retry", action="store_true", help="mine again the pairs that ended in an error")
    p.add_argument("--report", metavar="FILE",
                   help="write the mining report (every pair recorded so far) as Markdown to FILE")
    p.add_argument("--keep-records", action="store_true",
                   help="copy the pair outcomes recorded under $FROG_GYM_HOME/mine for registered repositories "
                        "into the registry's committed records (registry/mine/), which mining keeps up to date")


def run(args: argparse.Namespace) -> int:
    from frog_gym.generators import mine
    from frog_gym.catalog.live import check_date
    from frog_gym.catalog.spec import load_repo, repo_names

    if args.since:
        try:
            check_date(args.since)
        except ValueError as e:
            print(f"frog-gym mine: {e}", file=sys.stderr)
            return 2
    names = [n for n in repo_names() if load_repo(n).source.kind == "pypi"] if args.all else args.repos
    if args.keep_records:
        fam = "mirror" if args.mirror else "live"
        print(f"{mine.keep_local_records(fam)} {fam} pair outcome(s) added to {mine.records_path('x', fam).parent}")
        if not names and not args.report:
            return 0
    if not names and not args.report:
        print("frog-gym mine: name repositories or pass --all (see `frog-gym registry list`)", file=sys.stderr)
        return 2
    from frog_gym.errors import UnknownNameError

    for n in names:
        try:
            load_repo(n)
        except UnknownNameError as e:
            print(f"frog-gym mine: {e}", file=sys.stderr)
            return 2
    if args.restate:
        for n in names:
            path = mine.live_path(n, Path(args.tasks_dir) if args.tasks_dir else None, "live")
            if path.exists():
                print(f"{path.name}: {mine.restate(path)} statement(s) now from the changelog")
        return 0
    if args.minimize:
        from frog_gym.generators.minimal import BUDGET, minimize_file

        for n in names:
            path = mine.live_path(n, Path(args.tasks_dir) if args.tasks_dir else None, "live")
            if path.exists():
                reps = minimize_file(path, budget=args.budget or BUDGET, runs=args.runs,
                                     log=lambda s: print(s, flush=True))
                print(f"{path.name}: {len(reps)} task(s) reduced further, "
                      f"{sum(r.kept < r.hunks for r in reps)} smaller, {sum(r.minimal for r in reps)} now 1-minimal")
        return 0
    if names:
        mine.mine(names, since=args.since, max_pairs=args.max_pairs or None, runs=args.runs,
                  tasks_dir=Path(args.tasks_dir) if args.tasks_dir else None, retry=args.retry,
                  family="mirror" if args.mirror else "live", log=lambda s: print(s, flush=True))
    results = mine.all_results("mirror" if args.mirror else "live")
    text = mine.report([r for r in results if not names or r.repo in names] if not args.report else results)
    if args.report:
        fam = "mirror" if args.mirror else "live"
        files = sorted(mine.live_path("x").parent.glob(f"*.{fam}.jsonl"))
        counts = {f.name.split(".")[0]: sum(1 for line in f.read_text().splitlines() if line.strip()) for f in files}
        Path(args.report).write_text(
            f"# FrogLive mining report ({fam} tasks)\n\nWritten by `frog-gym mine --report` from every release "
            f"pair recorded in `registry/mine/` (and under `$FROG_GYM_HOME/mine`). The task files hold "
            f"{sum(counts.values())} {fam} tasks from {sum(1 for n in counts.values() if n)} repositories (a pair "
            f"interrupted after writing a task is not in the table).\n\n{text}{mine.unrecorded_note(counts, results)}",
            encoding="utf-8")
        print(f"report written to {args.report}")
    else:
        print(text)
    return 0
