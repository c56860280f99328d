"""FrogSWE for TRL's ``GRPOTrainer``, through its ``environment_factory`` extension point.

TRL (1.x) documents ``GRPOTrainer(..., environment_factory=factory)``: ``factory()`` returns an object
whose ``reset(**example)`` returns text appended to the prompt, whose public methods are tools the model
may call (typed, with Google-style docstrings, which TRL turns into the tool schema: here one method per
tool of :mod:`frog_gym.env.toolspec`, its docstring written from it, so the schemas are the toolspec's), and whose
``get_reward()`` scores the rollout. :class:`FrogSWEToolEnv` is that object over a FrogSWE env: the
dataset's ``task_id`` column picks the task, the env's prompt is the observation, its tools are the
methods, and the reward is the graded result (an episode the model never submitted is graded as it
stands when TRL asks; an infrastructure failure, a sandbox that cannot start included, scores ``None``,
which TRL leaves out of the loss and the mean, and :attr:`FrogSWEToolEnv.infra_failure` says why).

TRL also needs a tokenizer whose chat template can render tool calls and whose replies it can parse
(see ``trl.chat_template_utils.add_response_schema``: Qwen, Llama 3, GLM, GPT-OSS, ...).

Example:
    >>> from trl import GRPOConfig, GRPOTrainer  # doctest: +SKIP
    >>> trainer = GRPOTrainer(model, args=GRPOConfig(...), processing_class=tokenizer,  # doctest: +SKIP
    ...                       train_dataset=task_dataset(["frogtoy__handwritten-0001"], repeats=8),
    ...                       environment_factory=environment_factory("FrogSWE-Toy-v0"))
    >>> trainer.train()  # doctest: +SKIP
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from frog_gym.env.toolspec import TOOLS, Tool


class FrogSWEToolEnv:
    """One FrogSWE episode at a time, with the tools as methods (one instance per concurrent rollout).

    Args:
        env_id: the registered env (``FrogSWE-v0``, ``FrogSWE-Toy-v0``, ``FrogSWE/<task>-v0``, ...).
        **env_kwargs: passed to ``gymnasium.make`` (``max_steps``, ``wall_time_s``, ...).
    """

    def __init__(self, env_id: str = "FrogSWE-v0", **env_kwargs: Any):
        import gymnasium as gym

        import frog_gym  # noqa: F401  (registers the envs)

        self.env = gym.make(env_id, **env_kwargs)
        self.reward: float | None = 0.0
        self.done = True
        self.infra_failure: str | None = None
        """Why the last episode was not scored (a sandbox or grading fault), else None."""

    def reset(self, **example: Any) -> str:
        """Start the episode of ``example["task_id"]`` (else the env's own choice); returns the task prompt."""
        from frog_gym.errors import SandboxError, SandboxUnavailableError

        task_id = example.get("task_id")
        self.infra_failure = None
        try:
            prompt, _ = self.env.reset(options={"task_id": task_id} if task_id else None)
        except (SandboxError, SandboxUnavailableError) as e:  # not the model's: over before it starts, unscored
            self.reward, self.done, self.infra_failure = None, True, str(e)
            return f"Infrastructure failure (not scored): {e}"
        self.reward, self.done = 0.0, False
        return prompt

    def _act(self, action: dict[str, Any]) -> str:
        if self.done:
            return "The episode is over; no more tool calls are needed."
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self.done = True
            self.infra_failure = info.get("infra_failure")
            self.reward = None if self.infra_failure else float(reward)
        return obs

    # The tools: one method per tool of frog_gym.env.toolspec, typed; their docstrings are written from the
    # toolspec below, so TRL's schemas (read from signature and docstring) are the toolspec's.

    def bash(self, command: str) -> str:
        return self._act({"tool": "bash", "command": command})

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        return self._act({"tool": "view", "path": path, **({"view_range": view_range} if view_range else {})})

    def create(self, path: str, file_text: str) -> str:
        return self._act({"tool": "create", "path": path, "file_text": file_text})

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        return self._act({"tool": "str_replace", "path": path, "old_str": old_str, "new_str": new_str})

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        return self._act({"tool": "insert", "path": path, "insert_line": insert_line, "insert_text": insert_text})

    def undo_edit(self, path: str) -> str:
        return self._act({"tool": "undo_edit", "path": path})

    def submit(self) -> str:
        return self._act({"tool": "submit"})

    def get_reward(self) -> float | None:
        """The graded reward; an episode still open is submitted (graded as it stands) first."""
        if not self.done:
            self._act({"tool": "submit"})
        return self.reward


def _docstring(tool: Tool) -> str:
    """A Google-style docstring for a tool (what ``transformers.utils.get_json_schema`` reads)."""
    doc = tool.description
    if tool.params:
        doc += "\n\nArgs:\n" + "\n".join(f"    {p.name}: {p.description}" for p in tool.params)
    return doc + "\n\nReturns:\n    The tool's output, as the env shows it."


for _tool in TOOLS.values():
    getattr(FrogSWEToolEnv, _tool.name).__doc__ = _docstring(_tool)


def environment_factory(env_id: str = "FrogSWE-v0", **env_kwargs: Any) -> Callable[[], FrogSWEToolEnv]:
    """What ``GRPOTrainer(environment_factory=...)`` takes: a callable making one env per rollout."""
    return functools.partial(FrogSWEToolEnv, env_id, **env_kwargs)


def task_dataset(task_ids: Sequence[str], repeats: int = 1) -> Any:
    """A ``datasets.Dataset`` with a ``prompt`` column (the env's prompt is appended to it by TRL) and a
    ``task_id`` column (read by :meth:`FrogSWEToolEnv.reset`), each task ``repeats`` times."""
    try:
        from datasets import Dataset
    except ImportError:
        raise ImportError("task_dataset needs datasets; install the extra: pip install 'frog-gym[trl]'") from None
    rows = [t for t in task_ids for _ in range(repeats)]
    return Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}] for _ in rows], "task_id": rows})
