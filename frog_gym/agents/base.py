"""The `Agent` protocol: given the prompt and each observation, return the next action.

An action is what :meth:`frog_gym.env.FrogSWEEnv.step` accepts: a dict ``{"tool": NAME, **args}`` (see
:mod:`frog_gym.env.toolspec`) or the model's raw text. Agents keep their own conversation state.

Example:
    >>> class Submitter:
    ...     def reset(self, prompt, info): pass
    ...     def act(self, observation): return {"tool": "submit"}
    >>> isinstance(Submitter(), Agent)
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Action = dict[str, Any] | str


@dataclass
class AgentStats:
    """What an agent spent on its episode, reported by the harness."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Agent(Protocol):
    """A coding agent.

    ``reset`` starts an episode with the task prompt and the env's ``info``; ``act`` receives the text
    observation of the previous action (the prompt itself for the first call) and returns the next action.
    """

    def reset(self, prompt: str, info: dict[str, Any]) -> None: ...

    def act(self, observation: str) -> Action: ...
