"""``frog-gym export``: write the registered tasks as SWE-bench JSONL or a Hugging Face dataset."""

from __future__ import annotations

import argparse

HELP = "Export registered tasks: --format swebench OUT.jsonl, or --format hf OUT_DIR (a `datasets` save_to_disk folder; the 'hf' extra)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", metavar="OUT", help="output file (swebench) or folder (hf)")
    p.add_argument("--format", choices=("swebench", "hf"), default="swebench", help="default: swebench")
    p.add_argument("--repo", action="append", help="only tasks of this repository (repeatable)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from frog_gym.errors import UsageError, did_you_mean
    from frog_gym.generators import interop
    from frog_gym.paths import check_writable
    from frog_gym.catalog.spec import repo_names

    for r in args.repo or ():
        if r not in repo_names():
            raise UsageError(f"--repo: no repository '{r}'.{did_you_mean(r, repo_names())} "
                             "See `frog-gym registry list`.")
    if args.format == "swebench" and Path(args.out).is_dir():
        raise UsageError(f"{args.out} is a folder; `export --format swebench` writes one JSONL file: "
                         "give a file name, or use --format hf for a folder.")
    check_writable(args.out, "OUT")
    tasks = interop.registered_tasks()
    if args.repo:
        tasks = [t for t in tasks if t.repo in set(args.repo)]
    n = (interop.export_swebench if args.format == "swebench" else interop.export_hf)(tasks, args.out)
    print(f"wrote {n} tasks ({args.format}) to {args.out}")
    return 0
