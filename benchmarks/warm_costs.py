"""Where a warm pass of ``benchmarks/harness.py``'s suite spends its CPU: the servers' starts, the forked grades, the
host's own share, in one process (the harness's rotation runs each side in a fresh one and prints only totals).

Two parts, each measured with ``benchmarks/cpumeter.py`` (every descendant's CPU, sandboxes included):

- **starts**: for the first task of each repository, a grading server and an oracle server started and closed
  (:class:`~frog_gym.grading.server.GradingServer`, :class:`~frog_gym.grading.oracle_server.OracleServer`): CPU and
  wall of each start, and the host thread's own part of the grading server's (its tree and test copies);
- **pass**: the oracle episodes of the suite in the harness's order (its agent, a unique comment per episode, so
  every grade really runs), the CPU of each phase: resets, steps, the grading step of each repository's first
  episode (its servers start there) and of the others, and within grading the host thread's own time, what the
  grading servers spent (their children and their parents' work, starts included) and the oracle servers' replays.
  ``--cold`` runs the pass with ``FROG_GYM_GRADE_SERVER=0`` instead (set in this process, so run it separately).

    python benchmarks/warm_costs.py [--tasks 50] [--impact] [--cold] [--skip-starts]

Measured (session 14, load 5-8, three helpers beside; the harness's warm-up done), ``--impact``: starts 0.16-0.34 s
of CPU a grading server (its host thread 0.02-0.12 s), 0.07-0.12 s an oracle server, 2.3 and 0.85 s for the ten
repositories; the warm pass 18.2 s (grading 16.8: first episodes 6.6, the 40 others 10.2; the host thread 3.8, the
grading servers 11.1, the oracle replays 0.24), resets 0.84; ``--impact --cold``: grading 28.7 s (first episodes 5.5,
the others 23.2, the host thread 5.0), resets 0.70.

Session 18 (load 1.0-1.6, nothing beside; every selected test, no ``--impact``), before the code kept between
processes and after it: starts 1.70 and 1.67 s of CPU for the ten grading servers, 0.68 and 0.51 s for the oracle
servers; the warm pass 22.1 s (first episodes 5.6, the others 15.0, the grading servers 15.6) and 18.1 s (4.1, 13.0,
13.0); ``--cold --skip-starts``: 35.3 s and 31.7 s (first episodes 5.5 and 4.9, the others 29.0 and 26.1).

Session 20 (load 0.3-1.9), at the start and on the final tree: the warm pass 16.84 and 16.35 s (first episodes 4.62
and 3.79: attrs' server no longer walks every code point for hypothesis's tables; the host thread 1.70 and 1.43: the
static check's module context read from statements alone; the others 11.20 and 11.55, the machine a little slower).

Session 23 (another machine, load 0.2-1.2), at the start and on the final tree: the warm pass 20.89 and 18.64 s
(the grading servers 16.01 and 14.19; the host thread 1.53 and 1.37; starts 1.59 + 0.61 and 1.51 + 0.67 s for the
grading and oracle servers). Of the final pass's grading-server time, 1.02 s is its children's time in the kernel:
329,145 page faults, 6,583 a grade (a forked child's first write to a page of its parent's memory, a reference count
among it, copies that page; the Python runtime of these repositories has no immortal objects).

Session 24 (the same machine), at the start and on the final tree: the warm pass 19.03 and 18.82 s (the host thread
1.44 and 1.37: the applied patches kept on disk; the grading servers 14.39 and 14.38, their children's kernel time
1.12 and 1.16, 6,609 and 6,468 page faults a grade; starts 1.52 + 0.68 and 1.63 + 0.71 s). The pass moves by about
its own noise between runs (18.63 s with ``--skip-starts`` right after the patches were kept).

Session 25 (the same machine), at the start and on the final tree: the warm pass 18.52 and 18.47 s (the host thread
1.43 and 1.30, the grading servers 14.06 and 14.25, their children's kernel time 1.15 and 1.17, 6,465 and 6,468 page
faults a grade); starts 1.52 + 0.71 and 1.53 + 0.40 s. The oracle servers' figure fell because the grading server's
parent used to read the seal and its plugin's parts after it said it was ready, inside the oracle server's start:
that work now runs at its first request, inside the pass. An oracle server's start is about 40 ms of CPU.

Session 26 (the same machine), at the start and on the final tree: the warm pass 19.65 and 19.19 s (the host thread
1.40 and 1.38, the grading servers 15.07 and 14.65, their children's kernel time 1.24 and 1.21, 6,125 and 6,096 page
faults a grade); starts 1.49 + 0.41 and 1.62 + 0.43 s. Then with the static check and the workspace syncs timed
(the host thread's CPU in each call; both sides pay them), load 1.1-1.4: the pass 21.19 s, the host thread 1.62 s,
of it the static check 0.68 s; the workspace syncs (the resets' and the grades') 0.75 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpumeter import CpuMeter  # noqa: E402
from harness import UniqueOracle, mixed_tasks  # noqa: E402


def _thread_cpu() -> float:
    return time.thread_time()


def starts(ids: list[str], meter: CpuMeter) -> None:
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.catalog.spec import load_repo
    from frog_gym.catalog.task import load_task
    from frog_gym.grading.oracle_server import OracleServer
    from frog_gym.grading.server import GradingServer
    from frog_gym.sandbox.workspace import template_for

    seen: set[str] = set()
    total = [0.0, 0.0]
    for t in ids:
        task = load_task(t)
        if task.repo in seen:
            continue
        seen.add(task.repo)
        repo = prepare(load_repo(task.repo))
        template = template_for(repo, task.bug_patch, t)
        a, w, h = meter.read(), time.monotonic(), _thread_cpu()
        grader = GradingServer(repo, template)
        b, w2, h2 = meter.read(), time.monotonic(), _thread_cpu()
        oracle = OracleServer(repo, template)
        c, w3 = meter.read(), time.monotonic()
        grader.close()
        oracle.close()
        total[0] += b - a
        total[1] += c - b
        print(f"  {task.repo:16} grading server {b - a:5.2f} s CPU ({h2 - h:4.2f} s host thread), {w2 - w:4.2f} s wall; "
              f"oracle server {c - b:5.2f} s CPU, {w3 - w2:4.2f} s wall", flush=True)
    print(f"starts: {len(seen)} grading servers {total[0]:.2f} s CPU, {len(seen)} oracle servers {total[1]:.2f} s CPU")


def _thread_timed(fn, into: list[float]):
    """``fn``, adding the CPU time of this thread each call takes to ``into[0]``."""
    def timed(*a, **k):
        t = _thread_cpu()
        try:
            return fn(*a, **k)
        finally:
            into[0] += _thread_cpu() - t
    return timed


def one_pass(ids: list[str], meter: CpuMeter, impact: bool) -> None:
    from frog_gym.bench.harness import HarnessSpec, make_env
    from frog_gym.grading import grade as grading, server as grading_server
    from frog_gym.sandbox.workspace import Workspace

    # the host's shares both sides pay: the static check of a grade's edits, and making a workspace match its
    # template (the env's at each reset, and the grade's own)
    scanned, synced = [0.0], [0.0]
    grading.scan = _thread_timed(grading.scan, scanned)
    Workspace.sync = _thread_timed(Workspace.sync, synced)

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(sorted(set(ids))))
    spec = HarnessSpec.for_suite(f.name, impact_selection=impact)
    os.unlink(f.name)
    start = meter.read()
    env = make_env(spec)
    agent = UniqueOracle(uuid.uuid4().hex)
    cpu: dict[str, float] = defaultdict(float)
    firsts: set[str] = set()
    for task_id in ids:
        a = meter.read()
        obs, info = env.reset(seed=spec.seed, options={"task_id": task_id})
        cpu["resets"] += meter.read() - a
        agent.reset(obs, {**info, "max_steps": spec.max_steps})
        done = False
        while not done:
            action = agent.act(obs)
            a, h = meter.read(), _thread_cpu()
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            spent, host = meter.read() - a, _thread_cpu() - h
            if not done:
                cpu["steps"] += spent
                continue
            repo = task_id.split("__")[0]
            cpu["grading"] += spent
            cpu["  first episodes of a repository" if repo not in firsts else "  the other episodes"] += spent
            firsts.add(repo)
            cpu["  the host thread"] += host
        if not info.get("resolved"):
            raise SystemExit(f"{task_id} was not resolved: {info.get('report')}")
    faults = 0
    for (kind, _), server in grading_server._POOL.items():
        cpu["  the grading servers (children, parents, starts)" if kind == "grader" else
            "  the oracle servers' replays"] += server.cpu_seconds
        if kind == "grader":
            cpu["    their children's time in the kernel"] += server.system_seconds
            faults += server.faults
    cpu["    the static check"] = scanned[0]
    a = meter.read()
    env.close()
    cpu["close"] += meter.read() - a
    cpu["workspace syncs (within the rows above)"] = synced[0]
    print(f"pass of {len(ids)} episodes ({'cold' if not grading_server.enabled() else 'warm'}, test-impact selection "
          f"{'on' if impact else 'off'}): {meter.read() - start:.2f} s CPU")
    order = ["resets", "steps", "grading", "  first episodes of a repository", "  the other episodes",
             "  the host thread", "    the static check", "  the grading servers (children, parents, starts)",
             "    their children's time in the kernel", "  the oracle servers' replays", "close",
             "workspace syncs (within the rows above)"]
    for k in order:
        if k in cpu:
            print(f"  {k:52} {cpu[k]:6.2f} s")
    if faults:
        print(f"  the grading servers' children took {faults} page faults ({faults / len(ids):.0f} a grade)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=50)
    p.add_argument("--impact", action="store_true", help="grade with test-impact selection (as harness.py --impact)")
    p.add_argument("--cold", action="store_true", help="the pass with FROG_GYM_GRADE_SERVER=0 (cold grading)")
    p.add_argument("--skip-starts", action="store_true")
    args = p.parse_args()
    if args.cold:
        os.environ["FROG_GYM_GRADE_SERVER"] = "0"
    ids = mixed_tasks(args.tasks)
    print(f"{len(ids)} tasks; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs "
          f"(run benchmarks/harness.py once first: its warm-up builds what this needs)", flush=True)
    meter = CpuMeter()
    print(f"CPU time: {meter.kind}")
    if not args.skip_starts and not args.cold:
        starts(ids, meter)
    one_pass(ids, meter, args.impact)
    print(f"load average at end: {os.getloadavg()[0]:.2f}; this process's own peak memory "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
    meter.close()


if __name__ == "__main__":
    main()
