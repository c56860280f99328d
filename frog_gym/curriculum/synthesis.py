"""Online synthesis: the protocol of a :class:`TaskSynthesizer` that tops the pool up, and what it offers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class PendingTask:
    """A task a synthesizer proposed, before validation and probation admit it to the pool."""

    task_id: str
    """The id the wrapped env accepts in ``reset(options={"task_id": ...})``."""

    features: Mapping[str, Any] = field(default_factory=dict)
    """Difficulty features (``n_sites``, ``statement_level``, ...), used for its prior."""


@runtime_checkable
class TaskSynthesizer(Protocol):
    """Makes new tasks on request.

    ``propose`` should be quick (it runs on the caller's thread); ``validate`` may take long (run the tests,
    check the bug breaks at least one and the reverse patch restores them) and runs on the curriculum's
    thread pool, so it must be thread-safe. Once ``validate`` returns True, the env must accept the task id.
    """

    def propose(self, n: int, target: dict[str, Any]) -> list[PendingTask]: ...

    def validate(self, task: PendingTask) -> bool: ...
