"""The SkyRL adapter with the real skyrl-gym: a scripted rollout as SkyRL's generator drives it."""

from __future__ import annotations

import json

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the 'skyrl' extra is not installed")

TOY = "frogtoy__handwritten-0002"


def _make(**extras):
    from frog_gym.adapters.skyrl import register

    return skyrl_gym.make(register(), env_config={"env_id": "FrogSWE-Toy-v0"}, extras={"task_id": TOY, **extras})


def test_a_scripted_rollout_fixes_the_bug_and_is_rewarded():
    from frog_gym.agents.oracle import OracleAgent

    env = _make(max_turns=10)
    try:
        conversation, meta = env.init([{"role": "system", "content": "You fix bugs."}])
        assert [m["role"] for m in conversation] == ["system", "user"] and meta["task_id"] == TOY
        assert "/testbed" in conversation[-1]["content"]
        out = env.step("I will look first.\n```bash\ngit status --short | wc -l\n```")
        assert not out["done"] and out["reward"] == 0.0 and "[exit code 0]" in out["observations"][0]["content"]
        out = env.step("no tool call here")  # malformed: an observation, the episode goes on
        assert not out["done"] and out["observations"][0]["content"].startswith("Error:")
        oracle = OracleAgent()
        oracle.reset("", {"task_id": TOY})
        while not out["done"]:
            out = env.step(json.dumps(oracle.act("")))
        assert out["reward"] == 1.0 and out["observations"] == [] and out["metadata"]["resolved"]
        assert env.get_metrics()["resolved"] == 1.0
    finally:
        env.close()


def test_max_turns_submits_the_state_as_it_stands():
    env = _make(max_turns=2)
    try:
        env.init([])
        assert not env.step("```bash\nls\n```")["done"]
        out = env.step("```bash\nls\n```")
        assert out["done"] and out["reward"] == 0.0 and out["metadata"]["resolved"] is False
        assert out["metadata"]["submitted"] and out["metadata"]["infra_failure"] is None
    finally:
        env.close()


def test_an_infrastructure_failure_is_reward_none_not_zero(monkeypatch, tmp_path):
    from frog_gym.adapters.skyrl import register

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")  # a sandbox that cannot start
    env = skyrl_gym.make(register(), env_config={"env_id": "FrogSWE-Toy-v0", "backend": "docker"},
                         extras={"task_id": TOY, "max_turns": 4})
    try:
        conversation, meta = env.init([])
        assert meta["infra_failure"].startswith("No Docker engine answers")
        assert conversation[-1]["content"].startswith("Infrastructure failure (not scored): ")
        out = env.step('{"tool": "submit"}')
        assert out["done"] and out["reward"] is None and out["metadata"]["infra_failure"] == meta["infra_failure"]
        assert env.get_metrics() == {"resolved": 0.0, "submitted": 0.0, "turns": 1.0}
    finally:
        env.close()


def test_the_async_methods_return_what_the_sync_ones_do():
    import asyncio

    from frog_gym.agents.oracle import OracleAgent

    oracle = OracleAgent()
    oracle.reset("", {"task_id": TOY})
    actions = ["```bash\ncd /tmp && export Y=5\n```", "no tool call here", "```bash\necho $PWD $Y\n```",
               *[json.dumps(oracle.act("")) for _ in range(len(oracle._queue))]]
    env = _make(max_turns=10)
    try:
        sync = [env.init([{"role": "system", "content": "You fix bugs."}])] + [env.step(a) for a in actions]
    finally:
        env.close()

    async def run():
        env = _make(max_turns=10)
        try:
            out = [await env.ainit([{"role": "system", "content": "You fix bugs."}])]
            return out + [await env.astep(a) for a in actions]
        finally:
            await env.aclose()

    asynchronous = asyncio.run(run())
    assert asynchronous == sync
    assert "/tmp 5" in asynchronous[3]["observations"][0]["content"] and asynchronous[-1]["reward"] == 1.0


def test_episodes_step_at_once_on_one_event_loop(together):
    import asyncio
    import time

    n = 6

    async def episode(i: int, ready) -> tuple[str, float, float]:
        env = _make(max_turns=10)
        try:
            await env.ainit([])
            await env.astep("```bash\ntrue\n```")
            await ready()
            start = time.monotonic()
            out = await env.astep(f"```bash\nsleep 2; echo episode-{i}\n```")
            return out["observations"][0]["content"], start, time.monotonic()
        finally:
            await env.aclose()

    async def run():
        ready = together(n)
        return await asyncio.gather(*(episode(i, ready) for i in range(n)))

    results = asyncio.run(run())
    assert all(f"episode-{i}" in text for i, (text, _, _) in enumerate(results))
    took = max(end for _, _, end in results) - min(start for _, start, _ in results)
    assert took < 6, took  # the six 2 s commands ran together, not one after another (12 s)
