"""The task prompt an agent sees at reset. Versioned: the harness fingerprint records the version."""

from __future__ import annotations

import functools

from frog_gym.catalog.task import Task
from frog_gym.env.toolspec import TOOLS

PROMPT_VERSION = "1"


@functools.lru_cache(maxsize=1)
def tool_help() -> str:
    lines = []
    for t in TOOLS.values():
        args = ", ".join(f"{p.name}{'' if p.required else '?'}" for p in t.params)
        lines.append(f"- {t.name}({args}): {t.description}")
    return "\n".join(lines)


def render_prompt(task: Task, root: str = "/testbed") -> str:
    """The first observation of an episode: the issue, the tools, and how to call them."""
    version = f", version {task.version}" if task.version else ""
    return f"""You are working in the repository at {root} (the Python package `{task.repo}`{version}).
A user reported this problem:

<issue>
{task.problem_statement.strip()}
</issue>

Change the source code (not the tests) so that the problem is fixed, then call `submit`. The repository's
own tests decide whether it is fixed. There is no network access.

Tools:
{tool_help()}

Each turn, send exactly one tool call as a JSON object, for example
{{"tool": "bash", "command": "grep -rn 'def parse' {root}"}}
{{"tool": "str_replace", "path": "{root}/pkg/module.py", "old_str": "old text", "new_str": "new text"}}
or a fenced ```bash block to run a command. Paths may be absolute under {root} or relative to it.
"""
