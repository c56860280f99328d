"""Test doubles for the Ray tests: the oracle, slowed down by a ``sleep`` in its sandbox, so that a test can
kill an actor or a node while the episode runs (the tests put this folder on the workers' PYTHONPATH)."""

from __future__ import annotations

from typing import Any

from frog_gym.agents.oracle import OracleAgent


class SlowOracle(OracleAgent):
    """Sleeps ``seconds`` in the sandbox, then applies the gold fix and submits."""

    def __init__(self, seconds: str | float = 3.0) -> None:
        super().__init__()
        self.seconds = float(seconds)

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        super().reset(prompt, info)
        self._queue.insert(0, {"tool": "bash", "command": f"sleep {self.seconds:g}"})


def make(seconds: str = "3") -> SlowOracle:
    return SlowOracle(seconds)
