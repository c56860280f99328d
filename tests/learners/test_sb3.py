"""The stable-baselines3 adapter: SB3's own env checker accepts it, and PPO learns the toy family."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="needs the sb3 extra")

from frog_gym.learners.sb3 import MenuEnv, candidate_menu

import frog_gym  # noqa: F401

TOY = ["frogtoy__handwritten-0001", "frogtoy__handwritten-0004"]


def test_menu_holds_the_fix():
    from frog_gym.catalog.task import load_task

    for task_id in TOY:
        patch = load_task(task_id).patch.splitlines()
        fixed = next(line[1:] for line in patch if line.startswith("+") and not line.startswith("+++"))
        assert any(a["new_str"] == fixed for a in candidate_menu(task_id, 8))


def test_sb3_check_env_passes():
    from stable_baselines3.common.env_checker import check_env

    env = MenuEnv(gym.make("FrogSWE-Toy-v0", max_steps=2, task_ids=TOY), max_candidates=6)
    try:
        check_env(env, warn=True)
    finally:
        env.close()


@pytest.mark.slow
def test_ppo_learns_the_toy_family():
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    env = MenuEnv(gym.make("FrogSWE-Toy-v0", max_steps=2, task_ids=TOY), max_candidates=6)
    try:
        # The fix sits in a different menu slot for each task, so the policy must tell them apart from the
        # statement bins; with less entropy (0.01) PPO can settle on one task's slot for both (reward 0.5).
        model = PPO("MlpPolicy", env, n_steps=64, batch_size=32, learning_rate=3e-3, gamma=1.0, ent_coef=0.05,
                    seed=0, verbose=0)

        def mean_reward(episodes: int = 12) -> float:
            total = 0.0
            for i in range(episodes):
                obs, _ = env.reset(options={"task_id": TOY[i % len(TOY)]})
                done = False
                while not done:
                    action, _ = model.predict(obs, deterministic=True)
                    obs, reward, terminated, truncated, _ = env.step(action)
                    done = terminated or truncated
                total += reward
            return total / episodes

        model.learn(total_timesteps=2048)
        assert mean_reward() >= 0.9
    finally:
        env.close()


def test_observation_tells_tasks_apart():
    env = MenuEnv(gym.make("FrogSWE-Toy-v0", max_steps=2, task_ids=TOY))
    try:
        a, _ = env.reset(options={"task_id": TOY[0]})
        b, _ = env.reset(options={"task_id": TOY[1]})
        assert a.dtype == np.float32 and env.observation_space.contains(a) and not np.array_equal(a, b)
    finally:
        env.close()
