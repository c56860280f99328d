"""Many episodes stepping at once in one process: the env's async API against a thread per step, paired.

Both sides run the same work on the same envs in one process: ``--episodes`` toy episodes in flight, each
taking ``--steps`` steps cycling through a shell command, a file view and a short ``sleep`` (an episode
mostly waits). The baseline steps each env with ``await loop.run_in_executor(pool, env.step, action)`` on an
executor of ``--threads`` threads (default one per episode, as the OpenEnv server and the verifiers adapter
did; ``--threads 4`` is the Ray actor's former 4-thread pool); ours awaits ``env.astep(action)``. Rounds alternate which side goes first. Resets are outside the timed part; nothing is
graded. Printed per side: wall seconds per round (median), steps per second, step latency p50/p99, the
process's peak thread count (the async API's shared pools exist on both sides), and CPU seconds of the process and every sandbox it started
(:mod:`cpumeter`), with the load average beside them.

Run: ``python benchmarks/async_steps.py --episodes 32 --steps 12 --rounds 4``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpumeter import CpuMeter

import frog_gym  # noqa: F401
from frog_gym.env import FrogSWEEnv

TASK = "frogtoy__handwritten-0001"
ACTIONS = [{"tool": "bash", "command": "echo $RANDOM >> notes.txt; wc -l < notes.txt"},
           {"tool": "view", "path": "frogtoy.py"},
           {"tool": "bash", "command": "sleep 0.2"}]


async def side(name: str, envs: list[FrogSWEEnv], steps: int, meter: CpuMeter, threads: int) -> dict[str, float]:
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="baseline") if name == "threaded" else None
    loop = asyncio.get_running_loop()
    for i, env in enumerate(envs):
        await env.areset(seed=i, options={"task_id": TASK})
    peak = threading.active_count()
    latencies: list[float] = []

    async def episode(env: FrogSWEEnv) -> None:
        nonlocal peak
        for k in range(steps):
            action = ACTIONS[k % len(ACTIONS)]
            t = time.perf_counter()
            if pool is not None:
                out = await loop.run_in_executor(pool, env.step, action)
            else:
                out = await env.astep(action)
            latencies.append(time.perf_counter() - t)
            peak = max(peak, threading.active_count())
            assert not (out[2] or out[3]), out[0]

    cpu, t = meter.read(), time.perf_counter()
    await asyncio.gather(*(episode(e) for e in envs))
    wall, cpu = time.perf_counter() - t, meter.read() - cpu
    if pool is not None:
        pool.shutdown()
    latencies.sort()
    return {"wall": wall, "cpu": cpu, "p50": latencies[len(latencies) // 2],
            "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], "threads": peak,
            "steps": len(latencies)}


async def main_async(args: argparse.Namespace) -> None:
    meter = CpuMeter()
    envs = [FrogSWEEnv(max_steps=args.steps + 5) for _ in range(args.episodes)]
    runs: dict[str, list[dict[str, float]]] = {"threaded": [], "async": []}
    try:
        threads = args.threads or args.episodes
        await side("async", envs, 3, meter, threads)  # warm: templates, workspaces, spare shells
        for r in range(args.rounds):
            for name in (("threaded", "async") if r % 2 == 0 else ("async", "threaded")):
                runs[name].append(await side(name, envs, args.steps, meter, threads))
    finally:
        for e in envs:
            await e.aclose()
        meter.close()

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in runs[name])

    load = os.getloadavg()
    print(f"{args.episodes} episodes x {args.steps} steps in flight, baseline on {args.threads or args.episodes} "
          f"threads, {args.rounds} rounds alternating; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs; CPU: {meter.kind}")
    print(f"{'side':<10}{'wall s':>9}{'steps/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'threads':>9}{'CPU s':>8}")
    for name in ("threaded", "async"):
        steps = runs[name][0]["steps"]
        print(f"{name:<10}{med(name, 'wall'):>9.2f}{steps / med(name, 'wall'):>10.1f}{med(name, 'p50') * 1e3:>9.1f}"
              f"{med(name, 'p99') * 1e3:>9.1f}{med(name, 'threads'):>9.0f}{med(name, 'cpu'):>8.2f}")
    print(f"ratio async/threaded: steps/s {med('threaded', 'wall') / med('async', 'wall'):.2f}x, "
          f"CPU {med('async', 'cpu') / med('threaded', 'cpu'):.2f}x, p99 {med('async', 'p99') / med('threaded', 'p99'):.2f}x, "
          f"threads {med('async', 'threads'):.0f} vs {med('threaded', 'threads'):.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=32)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", type=int, default=0, help="the baseline's threads (0: one per episode)")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
