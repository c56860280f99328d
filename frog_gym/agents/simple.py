"""Agents without a model: one that submits at once, one that replays a trajectory, and an adapter.

:class:`NoopAgent` gives the score of the untouched repository, :class:`ReplayAgent` re-runs recorded
actions (to reproduce an episode or check a harness), and :class:`CallableAgent` is how a third-party
Python agent plugs in: wrap its step function, no subclassing needed.

Example:
    >>> agent = ReplayAgent([{"tool": "bash", "command": "ls"}])
    >>> agent.reset("Fix the bug.", {})
    >>> agent.act("Fix the bug."), agent.act("README.md")
    ({'tool': 'bash', 'command': 'ls'}, {'tool': 'submit'})
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frog_gym.agents.base import Action

SUBMIT: dict[str, Any] = {"tool": "submit"}


class NoopAgent:
    """Submits immediately: the baseline of an episode where the agent changes nothing.

    Example:
        >>> NoopAgent().act("Fix the bug.")
        {'tool': 'submit'}
    """

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        """Nothing to remember."""

    def act(self, observation: str) -> Action:
        """Submit."""
        return dict(SUBMIT)


def _load_actions(path: Path) -> list[Action]:
    actions: list[Action] = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as e:
                raise ValueError(
                    f"{path}:{lineno} is not a JSON record ({e}); "
                    "a trajectory file holds one JSON object per line."
                ) from None
            if isinstance(record, dict) and "action" in record:
                actions.append(record["action"])
    return actions


class ReplayAgent:
    """Replays stored actions in order, ignoring observations, then submits once they run out.

    Args:
        actions: the actions themselves, or the path of a JSONL trajectory whose records with an
            ``"action"`` key are replayed in file order (other records, such as a header, are skipped).

    Raises:
        ValueError: a line of the trajectory file is not JSON.

    Example:
        >>> agent = ReplayAgent(["```bash\\npytest -q\\n```"])
        >>> agent.reset("Fix the bug.", {})
        >>> agent.act("Fix the bug.")
        '```bash\\npytest -q\\n```'
        >>> agent.act("1 passed"), agent.act("")
        ({'tool': 'submit'}, {'tool': 'submit'})
    """

    def __init__(self, actions: Sequence[Action] | str | os.PathLike[str]) -> None:
        if isinstance(actions, (str, os.PathLike)):
            self.actions = _load_actions(Path(actions))
        else:
            self.actions = list(actions)
        self._next = 0

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        """Rewind to the first action."""
        self._next = 0

    def act(self, observation: str) -> Action:
        """The next stored action, or submit when none is left."""
        if self._next >= len(self.actions):
            return dict(SUBMIT)
        action = self.actions[self._next]
        self._next += 1
        return copy.deepcopy(action)  # the env may keep or change the action; the stored copy stays intact


class CallableAgent:
    """Adapts a plain function ``f(observation, history) -> action`` to the Agent protocol.

    This is the way to plug in a third-party Python agent: wrap its step function. ``history`` lists the
    episode's earlier steps, oldest first, as ``{"observation": str, "action": Action}`` dicts; it is empty
    on the first call, whose observation is the task prompt. ``f`` gets a copy, so it may keep or change it.

    Args:
        fn: the step function; it returns a tool dict such as ``{"tool": "bash", "command": "ls"}`` or the
            model's raw text.

    Example:
        >>> def step(observation, history):
        ...     return {"tool": "submit"} if history else {"tool": "bash", "command": "ls"}
        >>> agent = CallableAgent(step)
        >>> agent.reset("Fix the bug.", {})
        >>> agent.act("Fix the bug."), agent.act("README.md")
        ({'tool': 'bash', 'command': 'ls'}, {'tool': 'submit'})
    """

    def __init__(self, fn: Callable[[str, list[dict[str, Any]]], Action]) -> None:
        if not callable(fn):
            raise TypeError(
                f"CallableAgent needs a function f(observation, history) -> action, got {type(fn).__name__}."
            )
        self.fn = fn
        self.history: list[dict[str, Any]] = []

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        """Forget the previous episode's history."""
        self.history = []

    def act(self, observation: str) -> Action:
        """Call ``fn`` with the observation and the history so far, and record the step."""
        action = self.fn(observation, copy.deepcopy(self.history))
        self.history.append({"observation": observation, "action": action})
        return action
