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
