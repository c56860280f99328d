"""The tools an agent can call inside a FrogSWE episode, described once.

Every consumer reads this table: the env's action parser, the prompt shown to an agent, the OpenAI-style
``tools=`` schemas (:func:`openai_tools`) that every adapter sends with its requests and that a chat
template renders into the prompt, and the harness fingerprint. An action is a dict
``{"tool": NAME, **arguments}``; the same action can be written as model text (a JSON object, optionally
in a fenced ``json`` block, or a fenced ``bash`` block, which means the ``bash`` tool).

Example:
    >>> sorted(TOOLS)
    ['bash', 'create', 'insert', 'str_replace', 'submit', 'undo_edit', 'view']
    >>> TOOLS["str_replace"].required
    ('path', 'old_str', 'new_str')
    >>> openai_tools(["submit"])[0]["function"]["name"]
    'submit'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    """One argument of a tool."""

    name: str
    type: str  # JSON-schema type: "string", "integer" or "array"
    description: str
    required: bool = True


@dataclass(frozen=True)
class Tool:
    """A tool: its name, what it does, and its arguments."""

    name: str
    description: str
    params: tuple[Param, ...] = ()

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)

    def json_schema(self) -> dict[str, Any]:
        """The tool in OpenAI's function-calling format."""
        props: dict[str, Any] = {}
        for p in self.params:
            prop: dict[str, Any] = {"type": p.type, "description": p.description}
            if p.type == "array":
                prop["items"] = {"type": "integer"}
            props[p.name] = prop
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {"type": "object", "properties": props, "required": list(self.required)},
            },
        }


_PATH = Param("path", "string", "File or directory path, absolute under the repository root or relative to it.")

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "bash",
            "Run a command in a persistent bash shell at the repository (cd and exported variables persist). "
            "No network. Each command has a wall-time limit and its output is capped.",
            (Param("command", "string", "The bash command to run."),),
        ),
        Tool(
            "view",
            "Show a file with line numbers (optionally only a range of lines) or list a directory.",
            (_PATH, Param("view_range", "array", "[first, last] line numbers, 1-based; last may be -1.", False)),
        ),
        Tool(
            "create",
            "Create a file with the given content, or overwrite an existing one.",
            (_PATH, Param("file_text", "string", "The full content of the file.")),
        ),
        Tool(
            "str_replace",
            "Replace old_str by new_str in a file; old_str must occur exactly once.",
            (
                _PATH,
                Param("old_str", "string", "The exact text to replace (whitespace included)."),
                Param("new_str", "string", "The replacement text."),
            ),
        ),
        Tool(
            "insert",
            "Insert text after a line of a file (0 inserts at the top).",
            (
                _PATH,
                Param("insert_line", "integer", "The line after which the text goes; 0 for the top."),
                Param("insert_text", "string", "The text to insert."),
            ),
        ),
        Tool("undo_edit", "Undo the last edit tool call (create, str_replace, insert) on a file.", (_PATH,)),
        Tool("submit", "Finish the episode: the repository's tests grade the current state of the files."),
    )
}


def openai_tools(names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The tools as OpenAI function-calling schemas, in :data:`TOOLS` order: what a request's ``tools=``
    carries and what ``tokenizer.apply_chat_template(messages, tools=...)`` renders into the prompt.

    Args:
        names: only these tools (each must be in :data:`TOOLS`); None: all of them.

    Raises:
        KeyError: a name that is not a tool.
    """
    wanted = list(TOOLS) if names is None else list(names)
    unknown = [n for n in wanted if n not in TOOLS]
    if unknown:
        raise KeyError(f"Unknown tool {unknown[0]!r}; the tools are {', '.join(TOOLS)}.")
    return [TOOLS[n].json_schema() for n in TOOLS if n in wanted]
