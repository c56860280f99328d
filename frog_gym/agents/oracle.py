"""The `oracle` agent: applies the task's gold fix through the env's own edit tools.

It exists to test the env and the harness end to end (a correct harness must score it 1.0 on every
task) and is never ranked on a leaderboard. It reads the gold patch, so it must never be used for
training or evaluation.
"""

from __future__ import annotations

import re
from typing import Any

from frog_gym.catalog.task import load_task

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def hunks(patch: str) -> list[tuple[str, str, str]]:
    """``(path, old_text, new_text)`` for each hunk of a unified diff (old = lines before the patch).

    >>> hunks("diff --git a/m.py b/m.py\\n--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n x = 1\\n-y = 2\\n+y = 3\\n")
    [('m.py', 'x = 1\\ny = 2\\n', 'x = 1\\ny = 3\\n')]
    """
    out: list[tuple[str, str, str]] = []
    path = None
    old: list[str] | None = None
    new: list[str] = []
    lines = patch.splitlines(keepends=True)

    def flush() -> None:
        if path is not None and old is not None:
            out.append((path, "".join(old), "".join(new)))

    for i, line in enumerate(lines):
        if line.startswith("+++ "):
            flush()
            old = None
            target = line[4:].strip()
            path = target[2:] if target.startswith("b/") else target
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            continue
        elif _HUNK.match(line):
            flush()
            old, new = [], []
        elif old is not None:
            if line.startswith("\\"):
                for block in (old, new):
                    if block and block[-1].endswith("\n"):
                        block[-1] = block[-1][:-1]
                continue
            tag, body = line[:1], line[1:]
            if tag in (" ", "-"):
                old.append(body)
            if tag in (" ", "+"):
                new.append(body)
    flush()
    return out


class OracleAgent:
    """Fixes the bug with ``str_replace`` calls built from the gold patch, then submits."""

    name = "oracle"

    def __init__(self) -> None:
        self._queue: list[dict[str, Any]] = []

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        task = load_task(info["task_id"])
        # a hunk with no old lines creates its file (a real fix may add a module): str_replace can't
        self._queue = [{"tool": "create", "path": path, "file_text": new} if not old else
                       {"tool": "str_replace", "path": path, "old_str": old, "new_str": new}
                       for path, old, new in hunks(task.patch)]
        self._queue.append({"tool": "submit"})

    def act(self, observation: str) -> dict[str, Any]:
        return self._queue.pop(0) if self._queue else {"tool": "submit"}
