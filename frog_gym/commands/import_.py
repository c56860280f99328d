"""``frog-gym import``: turn an exported JSONL file or Hugging Face folder back into registered tasks."""

from __future__ import annotations

import argparse

HELP = "Import tasks from a SWE-bench-format JSONL file or an `export --format hf` folder into registry/tasks."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", metavar="FILE_OR_DIR")
    p.add_argument("--tasks-dir", help="write <repo>.jsonl files here instead of the registry's task folder")


def run(args: argparse.Namespace) -> int:
    from frog_gym.generators import interop

    added = interop.import_tasks(args.src, args.tasks_dir)
    total = sum(added.values())
    print(f"imported {total} new tasks" + (": " + ", ".join(f"{k} {v}" for k, v in sorted(added.items()))
                                           if added else " (all were already there)"))
    return 0
