"""Env latency of this checkout against another (say main) in the same run: ``reset_latency.py --json`` runs in
turns, baseline then this checkout, ``--rounds`` times, each in a fresh process importing its checkout's
``frog_gym`` first; the table gives the median over rounds of each side's medians, and the ratio.

Run: ``git worktree add /tmp/base main && python benchmarks/env_latency_ab.py --baseline /tmp/base``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def one(tree: Path, task: str, n: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(HERE / "reset_latency.py"), "--json", "--no-grade", "--task", task,
                          "--n", str(n)], env=env, capture_output=True, text=True, check=True, cwd=tree).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, type=Path, help="the other checkout (a git worktree of main)")
    ap.add_argument("--task", default="inflection__handwritten-0005")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    ours_tree = HERE.parent
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "ours": []}
    for _ in range(args.rounds):
        runs["baseline"].append(one(args.baseline.resolve(), args.task, args.n))
        runs["ours"].append(one(ours_tree, args.task, args.n))
    load = os.getloadavg()
    print(f"task {args.task}, {args.rounds} rounds x n={args.n}, alternating; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs\n")
    print("| measure | baseline | this checkout | ratio |")
    print("|---|---|---|---|")
    for key, label in (("reset_ms", "reset (clean)"), ("reset_after_step_ms", "reset right after a bash step"),
                       ("reset_after_pause_ms", "reset 0.2 s after a bash step"),
                       ("reset_after_submit_ms", "reset after a submitted episode"), ("step_ms", "bash `true` step")):
        b = statistics.median(r[key] for r in runs["baseline"])
        o = statistics.median(r[key] for r in runs["ours"])
        print(f"| {label} | {b:.3f} ms | {o:.3f} ms | {o / b:.2f}x |")


if __name__ == "__main__":
    main()
