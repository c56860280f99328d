"""Benchmark of the fixed harness: episodes per minute on `smoke` with 1 and 2 workers, and the harness's
own overhead per episode (time spent neither in the agent nor in the env: sandbox, tools, grading).

The agent is the oracle (the gold patch through str_replace) plus a one-line file unique to each run, so
that every episode is really graded: identical final diffs would otherwise reuse a cached grade. The
baseline is the same episodes in a bare loop (env.reset, agent.act, env.step; no trajectories, no
results file, no worker processes), so the ratio shows what the harness adds.

    python benchmarks/harness.py [--suite smoke] [--tasks N]

Measured on smoke (20 tasks, 2 shared cores under a load average of about 12, so noisy):
baseline 9.3 episodes/min; bench 1 worker 10.6 (1.15x); 2 workers 22.3 (2.41x); the harness's own
time per episode 33-44 ms, under 0.8% of an episode (2.2% / 14.6% of worker time end to end with 1 / 2
workers, counting process start-up and the idle tail).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # spawn workers import this file as `harness`

from frog_gym.agents.oracle import OracleAgent
from frog_gym.bench import bench
from frog_gym.harness import HarnessSpec, make_env

_NONCE = uuid.uuid4().hex[:12]


class UniqueOracle(OracleAgent):
    """The oracle, plus a file whose content is unique per (process run, nonce), defeating the grade cache."""

    def __init__(self, nonce: str = "") -> None:
        super().__init__()
        self.nonce = nonce or _NONCE

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        super().reset(prompt, info)
        self._queue.insert(0, {"tool": "create", "path": "FROG_BENCH_NONCE.txt", "file_text": self.nonce + "\n"})


def unique_oracle(nonce: str = "") -> UniqueOracle:
    return UniqueOracle(nonce)


def direct(spec: HarnessSpec, nonce: str) -> float:
    """The baseline: a bare episode loop in this process. Returns its wall seconds."""
    env = make_env(spec)
    agent = UniqueOracle(nonce)
    start = time.monotonic()
    for task_id, sample in spec.episodes():
        obs, info = env.reset(seed=spec.seed + sample, options={"task_id": task_id})
        agent.reset(obs, {**info, "max_steps": spec.max_steps})
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(agent.act(obs))
            done = terminated or truncated
    wall = time.monotonic() - start
    env.close()
    return wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="smoke")
    p.add_argument("--tasks", type=int, help="only the first N tasks of the suite")
    args = p.parse_args()
    spec = HarnessSpec.for_suite(args.suite)
    if args.tasks:
        spec = spec.replace(tasks=spec.tasks[: args.tasks], suite_version=f"{spec.suite_version}-first{args.tasks}")
    n = len(spec.episodes())
    print(f"suite {spec.suite} ({n} episodes), harness {spec.fingerprint()}, agent: oracle + unique file")

    warm = make_env(spec)  # builds venvs and buggy templates once, outside every timing
    for task_id in spec.task_ids:
        warm.reset(options={"task_id": task_id})
    warm.close()

    base_wall = direct(spec, uuid.uuid4().hex)
    base_rate = 60 * n / base_wall
    print(f"{'baseline (bare loop, 1 process)':38} {base_rate:6.2f} episodes/min")
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as out:
            s = bench(spec, "python:harness:unique_oracle", {"nonce": uuid.uuid4().hex}, out, workers=workers,
                      progress=False)
        assert s.finished == n and s.resolved == n, f"{s.resolved}/{s.finished} resolved; the harness is broken"
        rate = 60 * n / s.wall_s
        in_episode = sum(r.overhead_s for r in s.results) / sum(r.wall_s for r in s.results)
        busy = sum(r.agent_s + r.env_s for r in s.results)
        end_to_end = 1 - busy / (workers * s.wall_s)
        per_episode = sum(r.overhead_s for r in s.results) / n
        print(f"{f'bench --workers {workers}':38} {rate:6.2f} episodes/min   ratio to baseline "
              f"{rate / base_rate:4.2f}x   harness overhead in-episode {1000 * per_episode:6.1f} ms "
              f"({100 * in_episode:4.2f}% of an episode)   end to end {100 * end_to_end:5.1f}% of worker time")


if __name__ == "__main__":
    main()
