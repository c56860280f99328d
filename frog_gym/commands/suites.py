"""``frog-gym suites``: the named task suites, their sizes by tier, and their hashes."""

from __future__ import annotations

import argparse
import json

HELP = "List the task suites (smoke, lite, full) with their tiers and content hashes."


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="show this suite's task ids")
    p.add_argument("--json", action="store_true", help="one JSON object per suite")


def run(args: argparse.Namespace) -> int:
    from frog_gym.bench.suites import SUITES, resolve, tier_counts

    if args.name:
        suite = resolve(args.name)
        for task_id, content_hash in suite.tasks:
            print(f"{task_id}  {content_hash}")
        return 0
    for name, definition in SUITES.items():
        suite = resolve(name)
        tiers = tier_counts(suite)
        if args.json:
            print(json.dumps({"name": name, "version": suite.version, "hash": suite.hash, "tasks": len(suite.tasks),
                              "tiers": tiers, "description": definition.description}))
        else:
            tier_text = " ".join(f"{t}={n}" for t, n in tiers.items())
            print(f"{name:6} v{suite.version}  {len(suite.tasks):5} tasks  {tier_text:28}  hash {suite.hash}  "
                  f"{definition.description}")
    return 0
