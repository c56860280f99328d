"""A scripted learner: no model, a seeded skill table, real episodes. It tests the ``frog-gym train`` loop.

A task starts solved with probability ``start``; every group trained on it raises that to
``1 - (1 - start) * (1 - rate) ** groups``. Each episode draws from a seeded generator whether it is
solved: a solved episode applies the task's gold fix through the env's edit tools (the ``oracle`` agent,
which is why this learner is a test double and never a result), an unsolved one submits at once. The env
grades both, so the loop sees real rewards, real curriculum updates and real grading.

Example:
    >>> from frog_gym.curriculum import CurriculumState
    >>> state = CurriculumState(["frogtoy__handwritten-0001"])
    >>> learner = make_learner(LearnerOptions(env_id="FrogSWE-Toy-v0", group_size=2, groups_per_update=1), state)
    >>> learner.skill("frogtoy__handwritten-0001")
    0.0
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from frog_gym.learners import LearnerOptions

from frog_gym.agents.oracle import OracleAgent
from frog_gym.agents.simple import NoopAgent
from frog_gym.curriculum import CurriculumState
from frog_gym.bench.distributed import make_env


class ScriptedLearner:
    """See the module docstring. ``start`` and ``rate`` come from ``--set start=... --set rate=...``."""

    def __init__(self, options: LearnerOptions, curriculum: CurriculumState, *, start: float = 0.0,
                 rate: float = 0.5, max_steps: int = 8):
        if not (0 <= start <= 1 and 0 <= rate <= 1):
            raise ValueError(f"start and rate are probabilities in [0, 1], got start={start}, rate={rate}.")
        self.options, self.curriculum = options, curriculum
        self.start, self.rate = start, rate
        self.rng = np.random.default_rng(options.seed)
        self.trained: Counter[str] = Counter()
        self.step = 0
        self.env = make_env(options.env_id, options.ray, max_steps=max_steps)

    def skill(self, task_id: str) -> float:
        """The probability that an episode of ``task_id`` is solved now."""
        return 1 - (1 - self.start) * (1 - self.rate) ** self.trained[task_id]

    def _episode(self, task_id: str) -> float | None:
        agent = OracleAgent() if self.rng.random() < self.skill(task_id) else NoopAgent()
        obs, info = self.env.reset(options={"task_id": task_id})
        agent.reset(obs, info)
        while True:
            obs, reward, terminated, truncated, info = self.env.step(agent.act(obs))
            if terminated or truncated:
                return None if info.get("infra_failure") else float(reward)

    def evaluate(self, task_ids: Sequence[str], episodes: int = 1) -> dict[str, list[float | None]]:
        """Scores of ``episodes`` episodes of each task."""
        return {t: [self._episode(t) for _ in range(episodes)] for t in task_ids}

    def train_step(self) -> dict[str, Any]:
        """Run the curriculum's next groups, report them, and "learn" each task trained on."""
        cur, opts = self.curriculum, self.options
        n = len(cur.next_tasks(opts.groups_per_update, group_size=opts.group_size))
        rewards, tasks = [], []
        for _ in range(n):
            task_id, group = cur.take()
            reward = self._episode(task_id)
            cur.record(group, reward)
            rewards.append(reward)
            tasks.append(task_id)
        for task_id in set(tasks):
            self.trained[task_id] += 1
        self.step += 1
        cur.on_policy_update(self.step)
        scored = [r for r in rewards if r is not None]
        return {"step": self.step, "reward": float(np.mean(scored)) if scored else float("nan"),
                "tasks": sorted(set(tasks))}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the skill table and the curriculum state as JSON."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "scripted.json").write_text(json.dumps({"step": self.step, "trained": dict(sorted(self.trained.items())),
                                                        "curriculum": self.curriculum.state_dict()}))
        return path

    def close(self) -> None:
        self.env.close()


def make_learner(options: LearnerOptions, curriculum: CurriculumState) -> ScriptedLearner:
    """The ``frog-gym train --learner scripted`` factory."""
    settings = {k: float(v) for k, v in options.settings.items() if k in ("start", "rate")}
    unknown = sorted(set(options.settings) - {"start", "rate", "max_steps"})
    if unknown:
        raise ValueError(f"The scripted learner has no setting {unknown[0]!r}; it takes start, rate and max_steps.")
    if "max_steps" in options.settings:
        return ScriptedLearner(options, curriculum, max_steps=int(options.settings["max_steps"]), **settings)
    return ScriptedLearner(options, curriculum, **settings)
