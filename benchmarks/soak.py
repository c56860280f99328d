"""Soak: many episodes over mixed tasks with random and hostile actions; what leaks, and the driver's memory.

Each episode picks a task (a few repositories, rotating) and a handful of actions: random text from the action
space, ordinary commands and edits, and attacks (fork bomb, daemons that ignore SIGTERM, a symlink-swapping
loop, a disk fill past a small budget, a memory hog, a SIGCHLD trap, ``exec`` over the shell, killing the
shell, output floods). It ends by ``submit`` (graded, with a new file no other run made so the grade is
computed, not cached), by a reset in mid-episode, or by the step budget. Every 50 episodes the env is closed and a new
one made. Along the way it samples the driver's RSS and the sandbox resources it owns (processes, cgroups,
work folders; at most one live sandbox, its warm spare and a grading run may exist); after the last
``close()`` everything owned must be gone (goal: 0), and host mounts under ``$FROG_GYM_HOME`` must be 0.

Run: ``python benchmarks/soak.py [--episodes 1000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import gymnasium as gym

import frog_gym  # noqa: F401
from frog_gym import paths
from frog_gym.sandbox import cgroups, owner
from frog_gym.sandbox.base import Limits

SOAK_REPOS = ("inflection", "cachetools", "iniconfig", "itsdangerous", "markupsafe", "six", "parse")
"""Small, quick repositories; the soak takes the first task of each as the registry stands today."""


def soak_tasks() -> list[str]:
    """One task per repository of :data:`SOAK_REPOS` (the first id in sorted order), read from the registry."""
    from frog_gym.catalog.task import task_index

    ids = sorted(task_index())
    return [next(i for i in ids if i.startswith(f"{repo}__")) for repo in SOAK_REPOS]


LIMITS = Limits(command_timeout=3, disk_bytes=64 << 20, sandbox_memory_bytes=512 << 20, max_processes=128)

HOSTILE = [
    ":(){ :|:& };: ; sleep 0.3",
    "setsid sleep 900 & (setsid nohup sleep 901 >/dev/null 2>&1 &); (trap '' TERM HUP; sleep 902 &); echo ok",
    ("(setsid bash -c 'while :; do ln -sfn /etc/shadow README.rst 2>/dev/null; rm -f README.rst; "
     "ln -sfn /root plant; rm -f plant; done' &); sleep 0.1"),
    "head -c 100M /dev/zero > fill.bin; echo $?",
    "head -c 100M /dev/zero > /tmp/fill.bin; echo $?",
    "for i in 1 2 3 4; do python3 -c 'b = bytearray(200 << 20); import time; time.sleep(0.3)' & done; wait",
    "trap 'echo pwned > /testbed/trap_marker' CHLD EXIT; (sleep 0.2 &) ; true",
    "exec sleep 1",
    "kill -9 $$",
    "yes frog | head -c 5000000",
    "mkdir -p many && cd many && seq 1 20000 | xargs touch; cd /testbed",
    "cat /proc/1/environ | tr '\\0' '\\n' | head; ls /root 2>&1 | head -2",
]
ORDINARY = ["ls -la", "git status --short | head", "python -c 'print(1+1)'", "grep -rn def . | head -5",
            "echo hi > note.txt && cat note.txt", "cd /tmp && pwd", "true"]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def owned() -> dict[str, int]:
    """Sandbox resources this process owns right now."""
    tok = owner.token()
    mark = f"/{cgroups.PREFIX}{tok}-"
    procs = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                procs += mark in Path(f"/proc/{name}/cgroup").read_text()
            except OSError:
                pass
    cgs = sum(1 for _, parent in cgroups.parents() for _ in parent.glob(f"{cgroups.PREFIX}{tok}-*"))
    work = paths.home() / "work"
    folders = sum(1 for _ in work.glob(f"{tok}-*")) if work.is_dir() else 0
    home = str(paths.home())
    mounts = sum(1 for line in Path("/proc/self/mountinfo").read_text().splitlines() if home in line)
    return {"processes": procs, "cgroups": cgs, "work_folders": folders, "host_mounts": mounts}


def episode(env, rng: random.Random, ep: int, tasks: list[str]) -> str:
    env.reset(options={"task_id": tasks[ep % len(tasks)]})
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.2:
            action = env.action_space.sample()
        elif kind < 0.55:
            action = {"tool": "bash", "command": rng.choice(HOSTILE)}
        elif kind < 0.85:
            action = {"tool": "bash", "command": rng.choice(ORDINARY)}
        else:
            action = {"tool": "create", "path": f"/testbed/new_{rng.randint(0, 9)}.py", "file_text": "x = 1\n"}
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "budget"
    end = rng.random()
    if end < 0.25:
        # a new file no other run made (through the host-side tool, which no attack can break), so the grade is
        # computed here, not read from the grade cache shared with other checkouts
        env.step({"tool": "create", "path": f"/testbed/soak_{rng.getrandbits(64):x}.py", "file_text": "y = 2\n"})
        env.step({"tool": "submit"})
        return "submit"
    return "reset"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--recycle", type=int, default=50, help="close the env and make a new one every this many")
    ap.add_argument("--max-minutes", type=float, default=None, help="stop early after this long (reported)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    env_space_seed = args.seed
    start = time.monotonic()
    samples: list[tuple[int, float, dict[str, int]]] = []
    peak = {"processes": 0, "cgroups": 0, "work_folders": 0, "host_mounts": 0}
    ends: dict[str, int] = {}
    env = None
    done = 0
    tasks = soak_tasks()
    for ep in range(args.episodes):
        if args.max_minutes is not None and time.monotonic() - start > args.max_minutes * 60:
            break
        done = ep + 1
        if env is None or ep % args.recycle == 0:
            if env is not None:
                env.close()
            env = gym.make("FrogSWE-v0", task_ids=tasks, limits=LIMITS, max_steps=6).unwrapped
            env.action_space.seed(env_space_seed + ep)
        end = episode(env, rng, ep, tasks)
        ends[end] = ends.get(end, 0) + 1
        if ep % 10 == 0:
            now = owned()
            for k, v in now.items():
                peak[k] = max(peak[k], v)
            samples.append((ep, rss_mib(), now))
            print(f"episode {ep}: rss {samples[-1][1]:.0f} MiB, owned {now}, {time.monotonic() - start:.0f} s",
                  file=sys.stderr, flush=True)
    assert env is not None
    env.close()
    time.sleep(0.5)
    after = owned()
    wall = time.monotonic() - start
    rss = [s[1] for s in samples]
    first_q = rss[: max(1, len(rss) // 4)]
    last_q = rss[-max(1, len(rss) // 4):]
    load = os.getloadavg()
    print(f"soak: {done} of {args.episodes} episodes in {wall:.0f} s ({wall / done:.2f} s each), ends {ends}, "
          f"seed {args.seed}; load average {load[0]:.2f} on {os.cpu_count()} CPUs\n")
    print("| what | after close() (goal 0) | peak while running |")
    print("|---|---|---|")
    for k in ("processes", "cgroups", "work_folders", "host_mounts"):
        print(f"| {k.replace('_', ' ')} | {after[k]} | {peak[k]} |")
    print(f"\ndriver RSS (MiB): first quarter median {statistics.median(first_q):.0f}, last quarter median "
          f"{statistics.median(last_q):.0f}, max {max(rss):.0f} over {len(rss)} samples")
    print("RSS by episode: " + ", ".join(f"{ep}:{r:.0f}" for ep, r, _ in samples[:: max(1, len(samples) // 12)]))


if __name__ == "__main__":
    main()
