"""GRPO end to end on the toy env with the tiny model: a checkpoint resumes exactly."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from frog_gym.learners.grpo import GRPO, GRPOConfig, config_from_strings, train


def _cfg(model, out, **kw):
    return GRPOConfig(model=model, env_id="FrogSWE-Toy-v0", groups_per_update=2, group_size=4, max_turns=2,
                      num_envs=8, env_workers=2, max_new_tokens=12, learning_rate=1e-3, epochs=2, minibatches=2,
                      micro_batch_size=3, kl_coef=0.05, mask_truncated=False, zero_variance="backfill",
                      max_backfill_rounds=4, torch_threads=1, tensorboard=False,
                      output_dir=str(out), **kw)


def test_checkpoint_round_trip_gives_identical_next_losses(tiny_model, tmp_path):
    straight = train(_cfg(tiny_model, tmp_path / "a", updates=3, save_every=1))
    resumed = train(_cfg(tiny_model, tmp_path / "b", updates=3, resume=str(tmp_path / "a" / "checkpoint-000002")))
    assert [m["step"] for m in resumed] == [3]
    keys = ("loss", "reward", "entropy", "approx_kl", "kl", "grad_norm", "tasks", "generated_tokens")
    assert "loss" in straight[2], "the third update had no group with a learning signal"
    assert {k: resumed[0].get(k) for k in keys} == {k: straight[2].get(k) for k in keys}
    logged = [json.loads(line) for line in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in logged] == [1, 2, 3]
    for key in ("reward", "pass_rate", "zero_variance_fraction", "entropy", "approx_kl", "kl", "tokens_per_s"):
        assert key in logged[2]


def test_episodes_are_token_exact_and_scored(tiny_model, tmp_path):
    learner = GRPO(_cfg(tiny_model, tmp_path, updates=1))
    try:
        episodes, metrics = learner.collect()
        assert len(episodes) >= 8 and metrics["generated_tokens"] == sum(sum(e.trajectory.mask) for e in episodes)
        for e in episodes:
            t = e.trajectory
            assert 1 <= len(t.turns) <= 2 and e.turns == len(t.turns)
            assert e.terminated or e.truncated
            assert e.reward == e.env_reward and 0 <= e.reward <= 1  # mask_truncated=False: all scored
        groups = {e.group for e in episodes}
        assert len(groups) == 2 + metrics["backfilled_groups"] and len(episodes) == 4 * len(groups)
        assert learner.curriculum.stats()["groups"] == len(groups)  # every group was reported back
    finally:
        learner.close()


def test_truncated_episodes_are_masked_by_default(tiny_model, tmp_path):
    cfg = GRPOConfig(model=tiny_model, env_id="FrogSWE-Toy-v0", groups_per_update=1, group_size=2, max_turns=1,
                     num_envs=2, env_workers=1, max_new_tokens=8, torch_threads=1, tensorboard=False,
                     output_dir=str(tmp_path))
    learner = GRPO(cfg)
    try:
        episodes, _ = learner.collect()  # one turn: an edit, never a submit
        assert all(e.truncated and e.reward is None for e in episodes if not e.terminated)
        metrics = learner.update(episodes)
        assert metrics["masked_fraction"] == pytest.approx(sum(e.reward is None for e in episodes) / 2)
    finally:
        learner.close()


def test_default_curriculum_takes_measured_difficulty_as_its_prior(tiny_model, tmp_path, monkeypatch):
    from frog_gym.curriculum import prior_mean
    from frog_gym.catalog.task import TASK_DIRS_ENV, add_task_dir, load_task, refresh_tasks

    monkeypatch.setenv(TASK_DIRS_ENV, "")
    base = json.loads(load_task("frogtoy__handwritten-0002").to_json())
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "frogtoy.jsonl").write_text("".join(
        json.dumps(dict(base, instance_id=f"frogtoy__grpoprior-000{solved}", solve_rates={
            "apr": {"solved": solved, "runs": 1, "fingerprint": "f", "max_steps": 2}})) + "\n" for solved in (0, 1)))
    add_task_dir(tmp_path / "tasks")
    ids = ("frogtoy__grpoprior-0000", "frogtoy__grpoprior-0001")
    try:
        for agent, expect_gap in (("apr", True), ("none", False)):
            cfg = config_from_strings(GRPOConfig, {"model": tiny_model, "env_id": "FrogSWE-Toy-v0", "task_ids": ids,
                                                   "prior_agent": agent, "torch_threads": "1", "tensorboard": "false",
                                                   "output_dir": str(tmp_path / agent)})
            learner = GRPO(cfg)
            try:
                failed, solved = (a / (a + b) for a, b in map(learner.curriculum.posterior, ids))
            finally:
                learner.close()
            assert (solved > prior_mean(base["features"]) > failed) if expect_gap else (solved == failed)
    finally:
        refresh_tasks()
