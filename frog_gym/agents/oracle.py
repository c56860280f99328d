"""The `oracle` agent: applies the task's gold fix through the env's own edit tools.

It exists to test the env and the harness end to end (a correct harness must score it 1.0 on every
task) and is never ranked on a leaderboard. It reads the gold patch, so it must never be used for
training or evaluation.
"""

from __future__ import annotations

import re
from typing import Any

from frog_gym.catalog.task import load_task

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_ANCHOR = "# frog-gym oracle: the next lines are hunk {}"


def hunks(patch: str) -> list[tuple[str, str, str]]:
    """``(path, old_text, new_text)`` for each hunk of a unified diff (old = lines before the patch).

    >>> hunks("diff --git a/m.py b/m.py\\n--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n x = 1\\n-y = 2\\n+y = 3\\n")
    [('m.py', 'x = 1\\ny = 2\\n', 'x = 1\\ny = 3\\n')]
    """
    return [(path, old, new) for path, old, new, _ in placed_hunks(patch)]


def placed_hunks(patch: str) -> list[tuple[str, str, str, int]]:
    """:func:`hunks` with each hunk's first line in the patched file (the ``+N`` of its header): where its old
    text starts once the file's earlier hunks are applied, since the lines above it are then the patched ones."""
    out: list[tuple[str, str, str, int]] = []
    path = None
    start = 0
    old: list[str] | None = None
    new: list[str] = []
    lines = patch.splitlines(keepends=True)

    def flush() -> None:
        if path is not None and old is not None:
            out.append((path, "".join(old), "".join(new), start))

    for i, line in enumerate(lines):
        if line.startswith("+++ "):
            flush()
            old = None
            target = line[4:].strip()
            path = target[2:] if target.startswith("b/") else target
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            continue
        elif m := _HUNK.match(line):
            flush()
            old, new, start = [], [], int(m.group(1))
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
    """Fixes the bug with ``str_replace`` calls built from the gold patch, then submits.

    A hunk whose old text occurs more than once in its file (code repeated in two functions, as wcwidth's
    ``wcswidth`` and ``wcstwidth`` are) is placed by its line: an anchor line is inserted just above where the
    hunk starts, and the ``str_replace`` includes it, so the edit lands on that occurrence and removes the anchor.
    """

    name = "oracle"

    def __init__(self) -> None:
        self._queue: list[dict[str, Any]] = []
        self._last: dict[str, Any] | None = None

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        task = load_task(info["task_id"])
        # a hunk with no old lines creates its file (a real fix may add a module): str_replace can't
        self._queue = [{"tool": "create", "path": path, "file_text": new} if not old else
                       {"tool": "str_replace", "path": path, "old_str": old, "new_str": new, "_at": start}
                       for path, old, new, start in placed_hunks(task.patch)]
        self._queue.append({"tool": "submit"})
        self._last = None

    def act(self, observation: str) -> dict[str, Any]:
        last, self._last = self._last, None
        if last is not None and "occurs" in observation and "times in" in observation and "_at" in last:
            anchor = _ANCHOR.format(last["_at"])
            self._queue[:0] = [{"tool": "str_replace", "path": last["path"], "old_str": anchor + "\n" + last["old_str"],
                                "new_str": last["new_str"]}]
            return {"tool": "insert", "path": last["path"], "insert_line": last["_at"] - 1, "insert_text": anchor}
        if not self._queue:
            return {"tool": "submit"}
        action = self._queue.pop(0)
        if "_at" in action:
            self._last = action
            return {k: v for k, v in action.items() if k != "_at"}
        return action
