"""``frog-gym leaderboard``: render the leaderboard (README.md, index.html, plots) from stored results."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Render leaderboard/README.md and index.html from stored results (one table per harness)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--add", action="append", default=[], metavar="RUN_DIR",
                   help="first copy a bench run's results into leaderboard/results/ (repeatable)")
    p.add_argument("--results", action="append", default=[], metavar="PATH",
                   help="also include these results files or run directories, without storing them")
    p.add_argument("--dir", help="the leaderboard folder: results are read from DIR/results and README.md, "
                                 "index.html and plots/ written to DIR (default: the frog_gym.leaderboard package)")
    p.add_argument("--one-table", action="store_true",
                   help="rank every result in a single table (refused when they come from several harnesses)")


def run(args: argparse.Namespace) -> int:
    from frog_gym.leaderboard.render import (
        NO_PLOTS, add_run, can_plot, leaderboard_dir, load_results, render, results_dir, table, text_table)

    root = Path(args.dir) if args.dir else leaderboard_dir()
    for run_dir in args.add:
        dest = add_run(Path(run_dir), root)
        print(f"added {run_dir} -> {dest}")
    sources = [results_dir(root), *map(Path, args.results)]
    results = load_results(sources)
    if args.one_table:
        table(results)  # raises with an explanation when fingerprints differ
    tables = render(results, root)
    added = {r.fingerprint for d in args.add for r in load_results([Path(d)])}
    for t in tables:
        best = t.ranked[0] if t.ranked else None
        lead = f"; leader {best.agent} {100 * best.rate:.1f}%" if best else ""
        print(f"harness {t.fingerprint} ({t.harness.get('suite')}): {len(t.rows)} agent(s){lead}")
    for t in tables:  # show the tables the added runs belong to (all of them when nothing was added)
        if not added or t.fingerprint in added:
            print("\n" + text_table(t) + "\n")
    plots = f"{len(tables)} plot(s) in {root / 'plots'}" if can_plot() else "no plots " + NO_PLOTS
    print(f"wrote {root / 'README.md'}, {root / 'index.html'} and {plots}")
    return 0
