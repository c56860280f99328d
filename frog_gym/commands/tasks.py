"""``frog-gym tasks``: list the registered tasks."""

from __future__ import annotations

import argparse
import json

HELP = "List registered tasks (ids usable as gym ids FrogSWE/<id>-v0)."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", help="only tasks of this repository")
    p.add_argument("--json", action="store_true", help="one JSON object per line")


def run(args: argparse.Namespace) -> int:
    from frog_gym.errors import UsageError, did_you_mean
    from frog_gym.spec import repo_names
    from frog_gym.task import load_task, task_index

    if args.repo and args.repo not in repo_names():
        raise UsageError(f"--repo: no repository '{args.repo}'.{did_you_mean(args.repo, repo_names())} "
                         "See `frog-gym registry list`.")
    for iid in sorted(task_index()):
        t = load_task(iid)
        if args.repo and t.repo != args.repo:
            continue
        if args.json:
            print(json.dumps({"instance_id": iid, "repo": t.repo, "statement_level": t.statement_level,
                              "f2p": len(t.FAIL_TO_PASS), "p2p": len(t.PASS_TO_PASS), "features": t.features}))
        else:
            print(f"{iid:48} {t.repo:16} F2P={len(t.FAIL_TO_PASS):<4} P2P={len(t.PASS_TO_PASS):<5} {t.statement_level}")
    return 0
