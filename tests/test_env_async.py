"""The async env API (``areset``, ``astep``, ``aclose``) on real sandboxes and real repositories: the same
results as the sync calls, many episodes on one event loop with a bounded thread count, cancellation and
timeouts that leave nothing running."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import frog_gym  # noqa: F401
from frog_gym.agents.oracle import OracleAgent
from frog_gym.env import FrogSWEEnv
from frog_gym.errors import FrogGymError
from frog_gym.sandbox.base import Limits

TOY = "frogtoy__handwritten-0001"
REAL = "inflection__handwritten-0001"  # ordinal(): 13 -> 'th'; 8 FAIL_TO_PASS tests
RUN_FIELDS = ("seconds", "cached", "log_path")
"""Report fields that describe the grading run, not its outcome (a cached grade differs only in these, and
in the oracle replay's own ``seconds``)."""


def _outcome(result: tuple) -> tuple:
    """A step's result with the grading run's own fields (duration, cache hit, log path) left out."""
    if len(result) != 5 or "report" not in result[4]:
        return result
    info = dict(result[4])
    info["report"] = {k: v for k, v in info["report"].items() if k not in RUN_FIELDS}
    if info["report"].get("oracle"):
        info["report"]["oracle"] = {k: v for k, v in info["report"]["oracle"].items() if k != "seconds"}
    return (*result[:4], info)


def _forget_grade(result: tuple) -> None:
    """Remove the grade cache entry of a graded step, so that the next identical diff is graded again."""
    log = Path(result[4]["report"]["log_path"])
    for p in (log, log.with_suffix(".json")):
        p.unlink(missing_ok=True)


def _sync_episode(task_id: str, actions: list, **kwargs) -> list[tuple]:
    env = FrogSWEEnv(**kwargs)
    try:
        out: list[tuple] = [env.reset(seed=0, options={"task_id": task_id})]
        out += [env.step(a) for a in actions]
    finally:
        env.close()
    return out


async def _async_episode(task_id: str, actions: list, **kwargs) -> list[tuple]:
    env = FrogSWEEnv(**kwargs)
    try:
        out: list[tuple] = [await env.areset(seed=0, options={"task_id": task_id})]
        out += [await env.astep(a) for a in actions]
    finally:
        await env.aclose()
    return out


def test_async_results_equal_sync_results_on_the_same_actions():
    actions = [
        {"tool": "bash", "command": "cd /tmp && export X=7 && echo made > f.txt"},
        {"tool": "bash", "command": "echo $PWD $X; cat f.txt; ls /testbed"},
        "no tool call in this reply",  # malformed: an error observation, never an exception
        {"tool": "bash", "command": "sleep 5"},  # past the 1 s command timeout
        {"tool": "bash", "command": "echo still $X; exit 3"},  # the shell exits: a new one starts
        {"tool": "view", "path": "frogtoy.py"},
        {"tool": "str_replace", "path": "frogtoy.py", "old_str": "return a - b", "new_str": "return a + b"},
        {"tool": "bash", "command": "python -c 'import frogtoy; print(frogtoy.add(2, 3))'"},
        {"tool": "submit"},
    ]
    kwargs = {"max_steps": 20, "limits": Limits(command_timeout=1.0)}
    sync = _sync_episode(TOY, actions, **kwargs)
    _forget_grade(sync[-1])
    asynchronous = asyncio.run(_async_episode(TOY, actions, **kwargs))
    assert [_outcome(r) for r in asynchronous] == [_outcome(r) for r in sync]
    assert "/tmp 7" in asynchronous[2][0] and "timed out after 1 s" in asynchronous[4][0]
    assert asynchronous[-1][1] == 1.0 and asynchronous[-1][4]["report"]["resolved"] == "RESOLVED_FULL"
    assert asynchronous[-1][4]["report"]["cached"] is False  # graded for real, not read from the sync run's cache


def test_the_gold_patch_of_a_real_task_grades_full_under_async_as_under_sync():
    env = FrogSWEEnv(max_steps=30)
    agent = OracleAgent()
    actions, sync = [], []
    try:
        obs, info = env.reset(seed=0, options={"task_id": REAL})
        sync.append((obs, info))
        agent.reset(obs, info)
        done = False
        while not done:
            actions.append(agent.act(obs))
            sync.append(env.step(actions[-1]))
            obs, done = sync[-1][0], sync[-1][2] or sync[-1][3]
    finally:
        env.close()
    assert sync[-1][4]["report"]["resolved"] == "RESOLVED_FULL" and sync[-1][1] == 1.0
    _forget_grade(sync[-1])
    asynchronous = asyncio.run(_async_episode(REAL, actions, max_steps=30))
    assert [_outcome(r) for r in asynchronous] == [_outcome(r) for r in sync]
    assert asynchronous[-1][4]["report"]["cached"] is False


SIXTEEN = r"""
import asyncio, json, threading, time
import frog_gym
from frog_gym.env import FrogSWEEnv

N = 16
peak = 0


async def begin(i):
    env = FrogSWEEnv(max_steps=10)
    await env.areset(seed=i, options={"task_id": "frogtoy__handwritten-0001"})
    await env.astep({"tool": "bash", "command": "true"})  # every shell started before the timed part
    return env


async def timed(i, env):
    try:
        start = time.monotonic()
        obs = (await env.astep({"tool": "bash", "command": f"sleep 2; echo episode-{i}"}))[0]
        end = time.monotonic()
        graded = await env.astep({"tool": "submit"})
        return obs, start, end, graded[4]["report"]["resolved"]
    finally:
        await env.aclose()


async def watch():
    global peak
    while True:
        peak = max(peak, threading.active_count())
        await asyncio.sleep(0.02)


async def main():
    before = threading.active_count()
    watcher = asyncio.ensure_future(watch())
    envs = await asyncio.gather(*(begin(i) for i in range(N)))
    results = await asyncio.gather(*(timed(i, env) for i, env in enumerate(envs)))
    watcher.cancel()
    return {"before": before, "peak": peak, "results": results}


print(json.dumps(asyncio.run(main())))
"""


def test_sixteen_episodes_in_flight_on_one_event_loop_with_a_bounded_thread_count():
    env = {**os.environ, "FROG_GYM_ASYNC_THREADS": "2", "FROG_GYM_SANDBOX_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", SIXTEEN], env=env, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    for i, (obs, _, _, resolved) in enumerate(got["results"]):
        assert f"episode-{i}" in obs and "[exit code 0]" in obs and resolved == "RESOLVED_NO"
    # Sixteen 2 s commands overlapped: all of them ran within a few seconds, not 16 x 2 s one after another.
    took = max(r[2] for r in got["results"]) - min(r[1] for r in got["results"])
    assert took < 8, took
    # Threads: the two shared pools (2 + 2 here), the oracle's replay thread of each grade running (at most one
    # per host thread: 2), and what the process had, however many episodes run.
    assert got["peak"] - got["before"] <= 6, got


def _sleepers(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_cancelling_astep_mid_command_kills_the_sandbox_process_tree():
    marker = f"{time.monotonic() % 1000 + 2000:.3f}"  # a sleep no other process runs

    async def main():
        env = FrogSWEEnv(max_steps=10)
        try:
            await env.areset(options={"task_id": TOY})
            # a child in its own session, a grandchild, and the command itself: a tree, not one process
            step = asyncio.ensure_future(env.astep(
                {"tool": "bash", "command": f"setsid sleep {marker} & (sleep {marker} &); sleep {marker}"}))
            for _ in range(200):
                await asyncio.sleep(0.05)
                if len(_sleepers(marker)) == 3:
                    break
            assert len(_sleepers(marker)) == 3, "the command never started"
            step.cancel()
            try:
                await step
            except asyncio.CancelledError:
                pass
            else:
                raise AssertionError("the step was not cancelled")
            gone = time.monotonic()
            while _sleepers(marker) and time.monotonic() - gone < 10:
                await asyncio.sleep(0.05)
            assert not _sleepers(marker), "the cancelled command's processes outlived it"
            after = await env.astep({"tool": "bash", "command": "pwd; echo alive"})  # a fresh shell serves
            assert "/testbed\nalive" in after[0] and not after[2] and not after[3]
            end = await env.astep({"tool": "submit"})
            assert end[2] and end[4]["report"]["resolved"] == "RESOLVED_NO"
        finally:
            await env.aclose()

    asyncio.run(main())


def test_a_timed_out_command_under_async_leaves_the_shell_usable():
    async def main():
        env = FrogSWEEnv(max_steps=10, limits=Limits(command_timeout=1.0))
        try:
            await env.areset(options={"task_id": TOY})
            await env.astep({"tool": "bash", "command": "cd /tmp && export KEPT=yes"})
            t = time.monotonic()
            running = asyncio.ensure_future(env.astep({"tool": "bash", "command": "sleep 30 & sleep 30"}))
            await asyncio.sleep(0.2)
            with pytest.raises(FrogGymError, match=r"astep\(\) while this env's astep\(\) is still running"):
                await env.astep({"tool": "bash", "command": "echo two at once"})  # one call at a time per env
            obs = (await running)[0]
            assert time.monotonic() - t < 5 and "timed out after 1 s" in obs and "shell is still usable" in obs
            obs = (await env.astep({"tool": "bash", "command": "echo $PWD $KEPT; jobs | wc -l"}))[0]
            assert "/tmp yes" in obs and "[exit code 0]" in obs
        finally:
            await env.aclose()

    asyncio.run(main())


def test_episodes_work_with_descriptors_numbered_past_1024():
    """A process running hundreds of episodes holds thousands of descriptors (about 8 per episode): waits use
    poll, not select, whose limit is 1024. Here the env's pipes are opened past it, sync and async."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048 and (hard != resource.RLIM_INFINITY and hard < 2048):
        pytest.skip(f"RLIMIT_NOFILE is {soft}/{hard}: 2048 descriptors are needed")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        actions = [{"tool": "bash", "command": "echo far"}, {"tool": "submit"}]
        sync = _sync_episode(TOY, actions, max_steps=5)
        asynchronous = asyncio.run(_async_episode(TOY, actions, max_steps=5))
        assert "far\n" in sync[1][0] and "[exit code 0]" in sync[1][0]
        assert [_outcome(r) for r in asynchronous] == [_outcome(r) for r in sync]
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_long_command_is_written_to_the_shell_without_blocking_the_loop():
    """bash reads its input a byte at a time: a 4 MB command takes it a second or more to read, during which
    the loop serves other episodes; one that it cannot read within the command timeout is a timeout."""

    async def main():
        env = FrogSWEEnv(max_steps=10, limits=Limits(command_timeout=20.0))
        gaps: list[float] = []
        try:
            await env.areset(options={"task_id": TOY})

            async def heartbeat():
                last = time.monotonic()
                while True:
                    await asyncio.sleep(0.01)
                    gaps.append(time.monotonic() - last)
                    last = time.monotonic()

            beat = asyncio.ensure_future(heartbeat())
            t = time.monotonic()
            obs = (await env.astep({"tool": "bash", "command": "echo " + "x" * 4_000_000 + " | wc -c"}))[0]
            took = time.monotonic() - t
            beat.cancel()
            assert obs.startswith("4000001\n") and "[exit code 0]" in obs
            # The loop kept beating through the write: written blocking, one gap was most of the command's time.
            # (4 MB: bash read 2 MB in under half a second on a quiet machine.)
            assert took > 0.5 and max(gaps) < took / 3, (took, max(gaps))
        finally:
            await env.aclose()
        env = FrogSWEEnv(max_steps=10, limits=Limits(command_timeout=0.5))
        try:
            await env.areset(options={"task_id": TOY})
            obs = (await env.astep({"tool": "bash", "command": "echo " + "x" * 4_000_000 + " | wc -c"}))[0]
            assert "timed out after 0.5 s" in obs
            obs = (await env.astep({"tool": "bash", "command": "echo usable"}))[0]
            assert "usable\n" in obs and "[exit code 0]" in obs
        finally:
            await env.aclose()

    asyncio.run(main())
