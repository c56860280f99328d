"""Learners: the bundled GRPO (:mod:`.grpo`), thin adapters for stable-baselines3 (:mod:`.sb3`) and TRL
(:mod:`.trl_env`), the optional vLLM rollout engine of the GRPO (:mod:`.vllm_engine`), a scripted learner
that tests the training loop (:mod:`.scripted`), and the tiny policy of the toy family (:mod:`.toy`).

``frog-gym train`` drives any object with the :class:`Learner` protocol, made by a factory
``factory(options: LearnerOptions, curriculum: CurriculumState) -> Learner`` named on the command line
(``--learner grpo``, ``--learner scripted`` or ``--learner python:my_module:make_learner``).

Example:
    >>> env_tasks("FrogSWE-Toy-v0")[:2]
    ['frogtoy__handwritten-0001', 'frogtoy__handwritten-0002']
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from frog_gym.curriculum import CurriculumState


@dataclass(frozen=True)
class LearnerOptions:
    """What ``frog-gym train`` tells a learner factory; ``settings`` carries learner-specific values."""

    model: str = ""
    """The policy to start from (a folder written by ``save_pretrained``, or a hub id)."""
    env_id: str = "FrogSWE-v0"
    """The env the episodes run in."""
    seed: int = 0
    """Seed of everything random in the learner."""
    group_size: int = 8
    """G: episodes per task in a training group."""
    groups_per_update: int = 8
    """k: groups per policy update."""
    output_dir: str = "runs/train"
    """Where the learner writes its logs and checkpoints."""
    ray: str | None = None
    """Run the envs on Ray actors (``frog-gym train --ray``): ``"local"`` or a cluster's ``HOST:PORT``."""
    settings: dict[str, str] = field(default_factory=dict)
    """Learner-specific ``--set KEY=VALUE`` values (for GRPO: any :class:`~.grpo.GRPOConfig` field)."""


@runtime_checkable
class Learner(Protocol):
    """A policy that can be measured on tasks and improved from the curriculum's groups."""

    curriculum: CurriculumState

    def evaluate(self, task_ids: Sequence[str], episodes: int = 1) -> dict[str, list[float | None]]:
        """Scores of ``episodes`` episodes of each task under the current policy (None: masked)."""
        ...

    def train_step(self) -> dict[str, Any]:
        """One update from the curriculum's next groups; returns metrics, with ``tasks`` (the task ids
        trained on) and ``reward``."""
        ...

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write a checkpoint."""
        ...

    def close(self) -> None:
        """Release envs and threads."""
        ...


def env_tasks(env_id: str) -> list[str]:
    """The tasks a registered env samples: its ``task_ids`` (or ``task_id``), else every registered task."""
    import gymnasium as gym

    import frog_gym  # noqa: F401  (registers the envs)
    kwargs = gym.spec(env_id).kwargs
    if kwargs.get("task_ids"):
        return list(kwargs["task_ids"])
    if kwargs.get("task_id"):
        return [kwargs["task_id"]]
    from frog_gym.env.core import default_pool

    return sorted(default_pool())  # never the held-out FrogLive tasks


__all__ = ["Learner", "LearnerOptions", "env_tasks"]
