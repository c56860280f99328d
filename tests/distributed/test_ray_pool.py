"""The Ray env pool on a real local Ray (2 CPUs): results match the local process pool on the same seeds,
an actor killed mid-episode is an infrastructure failure that is retried, never a 0 reward, and the
CLI's Ray errors are one line each with exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from frog_gym.bench.runner import bench, load_results
from frog_gym.bench.harness import HarnessSpec

TOY = [f"frogtoy__handwritten-000{i}" for i in range(1, 5)]
SLOW = "python:slow_agents:make"


def _key(r):
    return (r.task_id, r.sample)


def _outcome(r):
    return (r.seed, r.resolved, r.resolved_status, r.reward, r.steps, r.submitted, r.model_patch, r.infra_failure)


def test_bench_on_ray_matches_the_local_pool_on_the_same_seeds(request, tmp_path):
    spec = HarnessSpec.for_suite(",".join(TOY), samples_per_task=2, max_steps=6)
    local = bench(spec, "apr", {}, tmp_path / "local", workers=1, progress=False)  # before Ray starts here
    request.getfixturevalue("local_ray")
    remote = bench(spec, "apr", {}, tmp_path / "ray", workers=2, spares=0, progress=False, ray="local")
    assert remote.finished == local.finished == 8 and remote.infra_failures == 0
    by_local = {_key(r): _outcome(r) for r in load_results(tmp_path / "local")}
    by_ray = {_key(r): _outcome(r) for r in load_results(tmp_path / "ray")}
    assert by_ray == by_local
    assert {r.seed for r in load_results(tmp_path / "ray")} == {spec.seed, spec.seed + 1}
    for task_id, sample in spec.episodes():  # trajectories come back from the actors to the run directory
        lines = (tmp_path / "ray" / "trajectories" / f"{task_id}__s{sample}.jsonl").read_text().splitlines()
        assert json.loads(lines[0])["type"] == "header" and json.loads(lines[-1])["type"] == "result"


def test_an_actor_killed_mid_episode_is_retried_elsewhere_not_scored(local_ray):
    from frog_gym.bench.distributed import PoolConfig, RayEnvPool

    spec = HarnessSpec.for_suite(TOY[0])
    pool = RayEnvPool(PoolConfig(workers=1, spares=1, cpus_per_env=0.5), repos=["frogtoy"])
    try:
        first = local_ray.get(pool.idle[0].where.remote())["pid"]  # the actor the episode will go to
        killer = threading.Timer(2.0, os.kill, (first, signal.SIGKILL))
        killer.start()
        out = list(pool.run_episodes(spec, SLOW, {"seconds": "5"}, "slow-oracle", [(TOY[0], 0)]))
        killer.join()
    finally:
        pool.close()
    assert len(out) == 1
    r = out[0]["result"]
    assert r["infra_failure"] is None and r["resolved"] and r["reward"] == 1.0
    assert r["ray_tries"] == 2 and pool.lost == 1 and out[0]["pid"] != first


def test_remote_env_replays_the_episode_on_a_new_actor_when_its_actor_dies(local_ray):
    from frog_gym.agents.oracle import OracleAgent
    from frog_gym.bench.distributed import PoolConfig, RayEnvPool, RemoteEnv

    pool = RayEnvPool(PoolConfig(workers=1, spares=1, cpus_per_env=0.5), repos=["frogtoy"])
    env = RemoteEnv(pool, "FrogSWE-Toy-v0", max_steps=8)
    try:
        agent = OracleAgent()
        obs, info = env.reset(seed=0, options={"task_id": TOY[1]})
        agent.reset(obs, info)
        obs, *_ = env.step(agent.act(obs))  # the fix is made in this actor's workspace
        os.kill(local_ray.get(env.actor.where.remote())["pid"], signal.SIGKILL)
        obs, reward, terminated, truncated, info = env.step(agent.act(obs))  # submit, on a replacement
        assert env.retries == 1 and terminated and reward == 1.0 and info["resolved"]
    finally:
        env.close()
        pool.close()


def test_one_actor_holds_four_episodes_stepping_at_once(local_ray, together):
    """Four RemoteEnvs on one actor process (episodes_per_actor=4), stepped from one driver loop: their 2 s
    commands run at the same time, each episode keeps its own workspace, and the fixed one alone is resolved.
    The actor's Python threads grow by the env's two shared pools (2 + 2 here) and the oracle's replay thread of
    each grade running (2 at most), not by one per episode."""
    import asyncio

    from frog_gym.agents.oracle import OracleAgent
    from frog_gym.bench.distributed import PoolConfig, RayEnvPool, RemoteEnv

    small = {"FROG_GYM_ASYNC_THREADS": "2", "FROG_GYM_SANDBOX_THREADS": "2"}
    pool = RayEnvPool(PoolConfig(workers=1, spares=0, cpus_per_env=0.5, episodes_per_actor=4, env_vars=small),
                      repos=["frogtoy"])
    envs = [RemoteEnv(pool, "FrogSWE-Toy-v0", max_steps=8) for _ in range(4)]

    async def episode(i: int, env: RemoteEnv, ready):
        obs, info = await env.areset(seed=i, options={"task_id": TOY[1]})
        await env.astep({"tool": "bash", "command": f"echo mine-{i} > note.txt"})
        await ready()
        start = time.monotonic()
        seen = (await env.astep({"tool": "bash", "command": "sleep 2; cat note.txt"}))[0]
        end = time.monotonic()
        if i == 0:  # the gold fix in this episode only
            agent = OracleAgent()
            agent.reset(obs, info)
            while True:
                out = await env.astep(agent.act(obs))
                obs = out[0]
                if out[2] or out[3]:
                    break
        else:
            out = await env.astep({"tool": "submit"})
        return seen, start, end, out[1], out[4]["resolved"]

    async def run():
        peak = 0

        async def watch():
            nonlocal peak
            while True:
                peak = max(peak, (await envs[0].actor.load.remote())["threads"])
                await asyncio.sleep(0.02)

        watcher = asyncio.ensure_future(watch())
        ready = together(len(envs))
        try:
            return await asyncio.gather(*(episode(i, e, ready) for i, e in enumerate(envs))), peak
        finally:
            watcher.cancel()

    try:
        assert len({e.actor for e in envs}) == 1 and pool.leased == {envs[0].actor: 4}
        load = local_ray.get(envs[0].actor.load.remote())
        assert load["envs"] == 4
        before = load["threads"]
        results, peak = asyncio.run(run())
    finally:
        for e in envs:
            e.close()
        pool.close()
    for i, (seen, _, _, reward, resolved) in enumerate(results):
        assert f"mine-{i}" in seen and ("mine-" + str((i + 1) % 4)) not in seen
        assert (reward, resolved) == ((1.0, True) if i == 0 else (0.0, False))
    took = max(r[2] for r in results) - min(r[1] for r in results)
    assert took < 6, took  # the four 2 s commands together, not one after another (8 s)
    assert peak - before <= 6, (before, peak)


def test_both_episodes_of_a_killed_actor_are_replayed_on_one_replacement(local_ray):
    from frog_gym.agents.oracle import OracleAgent
    from frog_gym.bench.distributed import PoolConfig, RayEnvPool, RemoteEnv

    pool = RayEnvPool(PoolConfig(workers=1, spares=1, cpus_per_env=0.5, episodes_per_actor=2), repos=["frogtoy"])
    envs = [RemoteEnv(pool, "FrogSWE-Toy-v0", max_steps=8) for _ in range(2)]
    try:
        assert envs[0].actor == envs[1].actor
        agents, obs = [], []
        for env in envs:
            agent = OracleAgent()
            o, info = env.reset(seed=0, options={"task_id": TOY[1]})
            agent.reset(o, info)
            agents.append(agent)
            obs.append(env.step(agent.act(o))[0])  # the fix, in the actor's two workspaces
        os.kill(local_ray.get(envs[0].actor.where.remote())["pid"], signal.SIGKILL)
        for env, agent, o in zip(envs, agents, obs):
            _, reward, terminated, _, info = env.step(agent.act(o))  # submit, replayed on the replacement
            assert env.retries == 1 and terminated and reward == 1.0 and info["resolved"]
        assert envs[0].actor == envs[1].actor and pool.lost == 1 and pool.leased == {envs[0].actor: 2}
    finally:
        for env in envs:
            env.close()
        pool.close()


def test_env_actors_take_a_fraction_of_a_cpu_by_default(local_ray):
    from frog_gym.bench.distributed import PoolConfig, RayEnvPool

    pool = RayEnvPool(PoolConfig(workers=5, spares=0), repos=["frogtoy"])  # 5 envs on a 2-CPU Ray
    try:
        assert len(pool.idle) == 5
        assert local_ray.available_resources().get("CPU", 0.0) == pytest.approx(2 - 5 * 0.25)
    finally:
        pool.close()


def test_a_pool_the_cluster_cannot_hold_fails_at_once_saying_why(local_ray):
    from frog_gym.bench.distributed import PlacementError, PoolConfig, RayEnvPool

    t = time.monotonic()
    with pytest.raises(PlacementError) as e:
        RayEnvPool(PoolConfig(workers=3, spares=0, cpus_per_env=1.0))
    assert time.monotonic() - t < 10
    assert str(e.value).startswith("The Ray cluster can hold 2 env actor(s) and the pool needs 3: each asks for 1 CPU (node ")
    assert "2 CPU" in str(e.value) and "Lower --workers or PoolConfig.cpus_per_env (now 1)" in str(e.value)


def test_an_actor_that_finds_no_room_is_reported_with_the_resources(local_ray):
    from frog_gym.bench.distributed import PlacementError, PoolConfig, RayEnvPool

    deadline = time.monotonic() + 60  # the CPUs of the actors the last test killed are released
    while local_ray.available_resources().get("CPU", 0.0) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    pool = RayEnvPool(PoolConfig(workers=2, spares=1, cpus_per_env=1.0, place_timeout_s=5), repos=["frogtoy"])
    try:
        held = [pool.lease(), pool.lease()]  # the spare cannot be placed: both CPUs are taken
        t = time.monotonic()
        with pytest.raises(PlacementError) as e:
            pool.lease()
        assert time.monotonic() - t < 30
        msg = str(e.value)
        assert msg.startswith("An env actor has waited ") and "for a node with room for it: it asks for 1 CPU; " \
            "free now: 0 CPU, " in msg and "of 2 CPU, " in msg and "in the cluster. Lower PoolConfig.cpus_per_env (now 1)" in msg, msg
        for a in held:
            pool.release(a)
    finally:
        pool.close()


def test_a_sandbox_that_cannot_start_is_an_infrastructure_failure_not_scored(local_ray, tmp_path):
    from frog_gym.bench.distributed import PoolConfig, RayEnvPool

    spec = HarnessSpec.for_suite(TOY[0]).replace(backend="docker")
    # The actors look for their Docker engine where none listens (CI starts one for the docker tests).
    nowhere = {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    pool = RayEnvPool(PoolConfig(workers=1, spares=0, env_vars=nowhere), repos=["frogtoy"])
    try:
        (out,) = pool.run_episodes(spec, "oracle", {}, "oracle", [(TOY[0], 0)])
    finally:
        pool.close()
    r = out["result"]
    assert r["infra_failure"].startswith("SandboxUnavailableError: No Docker engine answers"), r
    assert not r["resolved"] and r["ray_tries"] == 1


def test_remote_env_past_its_retries_ends_the_episode_as_an_infrastructure_failure(local_ray):
    from frog_gym.bench.distributed import PoolConfig, RayEnvPool, RemoteEnv

    pool = RayEnvPool(PoolConfig(workers=1, spares=1, cpus_per_env=0.5, max_retries=0), repos=["frogtoy"])
    env = RemoteEnv(pool, "FrogSWE-Toy-v0", max_steps=8)
    try:
        env.reset(seed=0, options={"task_id": TOY[1]})
        os.kill(local_ray.get(env.actor.where.remote())["pid"], signal.SIGKILL)
        obs, reward, terminated, truncated, info = env.step({"tool": "bash", "command": "ls"})
        assert truncated and not terminated and info["infra_failure"].startswith("ray: the env's actor died 1 times")
        assert obs.startswith("Infrastructure failure (not scored): ")
        obs, info = env.reset(seed=0, options={"task_id": TOY[1]})  # a fresh actor serves the next episode
        assert info["task_id"] == TOY[1]
    finally:
        env.close()
        pool.close()


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "frog_gym.cli", *args], capture_output=True, text=True,
                          timeout=120, **kw)


def test_an_unreachable_ray_address_is_one_line_and_exit_2(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = _cli("bench", "--agent", "noop", "--suite", TOY[0], "--ray", f"127.0.0.1:{port}", "--out",
             str(tmp_path / "run"), "--no-progress")
    err = [ln for ln in p.stderr.splitlines() if "error" in ln]
    assert p.returncode == 2, p.stderr
    assert err == [f"frog-gym bench: error: Cannot reach the Ray cluster at 127.0.0.1:{port}: Connection refused. "
                   "Start one with `ray start --head` and pass the address it prints, or omit the address to "
                   "start a local Ray."]
    assert "Traceback" not in p.stderr
    p = _cli("bench", "--agent", "noop", "--suite", TOY[0], "--ray", "nonsense", "--out", str(tmp_path / "r2"))
    assert p.returncode == 2 and "is not a Ray address; give HOST:PORT" in p.stderr and "Traceback" not in p.stderr


def test_a_missing_ray_extra_is_one_line_and_exit_2(tmp_path):
    # A sitecustomize that hides ray, as if the extra were not installed.
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\nclass _Hide:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ray' or name.startswith('ray.'):\n            raise ImportError('hidden')\n"
        "sys.meta_path.insert(0, _Hide())\n")
    env = {**os.environ, "PYTHONPATH": str(hide)}
    p = _cli("bench", "--agent", "noop", "--suite", TOY[0], "--ray", "--out", str(tmp_path / "run"), env=env)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == (
        "frog-gym bench: error: Ray is not installed; install the extra: pip install 'frog-gym[ray]'")
