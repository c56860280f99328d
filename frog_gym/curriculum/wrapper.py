"""The ``gymnasium.Wrapper`` that draws each episode's task from a :class:`CurriculumState`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, SupportsFloat

import gymnasium

from frog_gym.curriculum.state import CurriculumState
from frog_gym.curriculum.stats import episode_score, filter_group


class FrontierCurriculum(gymnasium.Wrapper):
    """Chooses the task of each episode from a :class:`CurriculumState` and reports the result back.

    ``reset()`` without ``options["task_id"]`` takes the next committed (or freshly sampled) task and
    passes it down as ``options={"task_id": ...}``; with one, it runs that task. When an episode ends,
    its score is reported (:func:`episode_score`: the graded state, ``None`` for an infrastructure failure
    or, with ``mask_truncated``, a budget cut); an episode cut short by
    another ``reset()`` counts as neither success nor failure. Tasks outside the pool (e.g. held-out
    evaluation tasks named explicitly) are run but not reported.

    Args:
        env: An env whose ``reset`` accepts ``options={"task_id": ...}``.
        curriculum: The state; share one between the sub-envs of a vector env.

    Example:
        >>> import gymnasium
        >>> state = CurriculumState(["t0", "t1"])
        >>> def make():
        ...     return FrontierCurriculum(MyTaskEnv(), state)  # doctest: +SKIP
        >>> envs = gymnasium.vector.SyncVectorEnv([make] * 4)  # doctest: +SKIP
        >>> state.next_tasks(2, group_size=4)  # doctest: +SKIP
        >>> envs.reset()  # the four sub-envs run the first group  # doctest: +SKIP
    """

    def __init__(self, env: gymnasium.Env, curriculum: CurriculumState, mask_truncated: bool = False):
        super().__init__(env)
        self.curriculum = curriculum
        self.mask_truncated = mask_truncated
        """Report episodes cut by a budget as unscored, as a learner with the same setting masks them
        (:func:`episode_score`)."""
        self._group: int | None = None  # committed group of the running episode
        self._task: str | None = None  # pool task named by the caller, reported on its own

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Start the next task; ``seed`` goes to the env (the curriculum has ``CurriculumConfig.seed``,
        since one state may serve many sub-envs)."""
        self._end_episode(None)
        options = dict(options or {})
        if "task_id" not in options:
            options["task_id"], self._group = self.curriculum.take()
        elif options["task_id"] in self.curriculum:
            self._task = options["task_id"]
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self._end_episode(episode_score(reward, terminated=terminated, truncated=truncated,
                                            infra_failure=info.get("infra_failure"),
                                            mask_truncated=self.mask_truncated))
        return obs, reward, terminated, truncated, info

    def _end_episode(self, reward: SupportsFloat | None) -> None:
        if self._group is not None:
            self.curriculum.record(self._group, reward)
        elif self._task is not None and reward is not None:
            self.curriculum.update(self._task, [reward])
        self._group = self._task = None

    def next_tasks(self, k: int, group_size: int = 1) -> list[str]:
        """Commit the next ``k`` groups; see :meth:`CurriculumState.next_tasks`."""
        return self.curriculum.next_tasks(k, group_size)

    def update(
        self, task_id: str, rewards: Sequence[SupportsFloat | None], policy_step: int | None = None
    ) -> bool:
        """Report a group run outside this wrapper; see :meth:`CurriculumState.update`."""
        return self.curriculum.update(task_id, rewards, policy_step)

    def on_policy_update(self, step: int | None = None) -> None:
        """See :meth:`CurriculumState.on_policy_update`."""
        self.curriculum.on_policy_update(step)

    def filter_group(self, rewards: Sequence[SupportsFloat | None]) -> bool:
        """See :func:`filter_group`."""
        return filter_group(rewards)

    def stats(self) -> dict[str, Any]:
        """See :meth:`CurriculumState.stats`."""
        return self.curriculum.stats()

    def state_dict(self) -> dict[str, Any]:
        """See :meth:`CurriculumState.state_dict`."""
        return self.curriculum.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """See :meth:`CurriculumState.load_state_dict`."""
        self.curriculum.load_state_dict(state)
