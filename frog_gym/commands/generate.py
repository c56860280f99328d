"""``frog-gym generate``: synthesize validated tasks for registered repositories (resumable, seeded)."""

from __future__ import annotations

import argparse
import sys

HELP = "Generate validated synthetic tasks (mutations checked by the repository's own tests) into registry/tasks."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("repos", nargs="*", metavar="REPO", help="registered repository names (see `frog-gym registry list`)")
    p.add_argument("--all", action="store_true", help="every registered repository")
    p.add_argument("--max-tasks", type=int, default=60,
                   help="tasks each repository should have when done, combined ones included (default 60)")
    p.add_argument("--seed", type=int, default=0, help="seeds candidate order and combinations (default 0)")
    p.add_argument("--workers", type=int, default=2, help="validation processes (default 2)")
    p.add_argument("--combined-fraction", type=float, default=0.2,
                   help="share of tasks that combine 2-3 bugs of one package (default 0.2)")
    p.add_argument("--max-fail-to-pass", type=int, default=40, help="refuse bugs breaking more tests (default 40)")
    p.add_argument("--families", help="comma-separated operator families (default: all)")
    p.add_argument("--statement-writer", metavar="MODULE:FUNCTION",
                   help="your own problem-statement writer, called with a context dict (default: built-in)")
    p.add_argument("--tasks-dir", help="write <repo>.jsonl here instead of the registry's task folder")
    p.add_argument("--handwritten", action="store_true",
                   help="validate the hand-written bugs of generators/handwritten.py instead (full suite)")
    p.add_argument("--regrade", action="store_true",
                   help="re-run each existing task's bug exactly as graded and fix or drop tasks whose tests "
                        "depend on tests outside the selection (rewrites the task files)")
    p.add_argument("--harden", type=int, metavar="N", default=0,
                   help="instead, make N combined tasks per repository, each pairing a single-bug task of a hard "
                        "family (--families; default the four no single candidate edit undoes) with one that one "
                        "edit undoes, in another function; that easy single-bug task is retired into it")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from frog_gym.generators import synthesis
    from frog_gym.catalog.spec import load_repo, repo_names

    names = list(repo_names()) if args.all else args.repos
    if not names:
        print("frog-gym generate: name repositories or pass --all (see `frog-gym registry list`)", file=sys.stderr)
        return 2
    specs = [load_repo(n) for n in names]  # unknown names fail here, with a did-you-mean
    if args.handwritten:
        from frog_gym.generators.handwritten import generate_handwritten

        for spec in specs:
            n = generate_handwritten(spec, args.tasks_dir)
            print(f"{spec.name}: {n} hand-written tasks written")
        return 0
    cfg = synthesis.GenerateConfig(
        max_tasks=args.max_tasks, seed=args.seed, workers=args.workers, combined_fraction=args.combined_fraction,
        max_fail_to_pass=args.max_fail_to_pass, statement_writer=args.statement_writer, tasks_dir=args.tasks_dir,
        families=tuple(f.strip() for f in args.families.split(",")) if args.families else None)
    if args.harden < 0:
        print(f"frog-gym generate: --harden must be >= 0, got {args.harden}", file=sys.stderr)
        return 2
    if args.harden:
        from frog_gym.generators.harden import describe, harden

        failed = 0
        for spec in specs:
            try:
                print(describe(harden(spec, cfg, args.harden, progress=not args.no_progress)), flush=True)
            except Exception as e:  # noqa: BLE001 (one broken repository must not stop the others)
                failed += 1
                print(f"{spec.name}: hardening failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1 if failed else 0
    if args.regrade:
        total: dict[str, int] = {}
        for spec in specs:
            v = synthesis.regrade(spec, cfg)
            for k, n in v.items():
                total[k] = total.get(k, 0) + n
            print(f"{spec.name}: " + (", ".join(f"{k} {n}" for k, n in sorted(v.items())) or "no tasks"), flush=True)
        print("regraded: " + ", ".join(f"{k} {n}" for k, n in sorted(total.items())))
        return 1 if total.get("infrastructure failure") else 0
    failed = 0
    for spec in specs:
        try:
            s = synthesis.generate(spec, cfg, progress=not args.no_progress)
        except Exception as e:  # noqa: BLE001 (one broken repository must not stop --all)
            failed += 1
            print(f"{spec.name}: generation failed: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        rejected = ", ".join(f"{k}: {v}" for k, v in s.rejected.most_common())
        print(f"{spec.name}: +{s.accepted} single, +{s.combined} combined (had {s.existing}); tried {s.tried} "
              f"in {s.seconds:.0f} s, {s.test_runs} test runs; rejected {rejected or 'none'}"
              + (f"; {s.deduped} single-bug tasks dropped so that each combined one holds a bug of its own"
                 if s.deduped else ""))
    return 1 if failed else 0
