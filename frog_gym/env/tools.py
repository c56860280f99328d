"""Parsing agent actions and running the file tools, safely confined to the workspace.

An action arrives as a dict ``{"tool": NAME, **args}`` (an OpenAI-style ``{"name", "arguments"}`` dict
works too, and Llama's ``{"name", "parameters"}``) or as model text: a JSON object (bare or in a fenced
``json`` block), a fenced ``bash`` block, or one native tool call as a chat model writes it
(``<tool_call>...</tool_call>`` or ``<|python_tag|>{...}``, see :mod:`frog_gym.env.toolcalls`). Whatever arrives, :func:`parse_action` returns a :class:`Call` or an :class:`ActionError` whose
message tells the agent what to send instead; nothing here raises on bad input.

File tools work on the host side of the workspace. Every path is resolved lexically and through
symlinks inside the workspace, and each component is opened with ``O_NOFOLLOW`` relative to its parent,
so neither ``../``, an absolute path nor a symlink can reach outside.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frog_gym.errors import did_you_mean
from frog_gym.env.toolcalls import PYTHON_TAG, parse_tool_calls
from frog_gym.env.toolspec import TOOLS

TESTBED = "/testbed"
MAX_ACTION_CHARS = 1_000_000
MAX_VIEW_CHARS = 16_000
_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
_TYPES = {"string": str, "integer": int, "array": list}


@dataclass(frozen=True)
class Call:
    """A well-formed tool call."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionError:
    """A malformed action: the message is the observation the agent gets."""

    message: str


_FORMAT_HELP = ('Send one tool call: a JSON object such as {"tool": "bash", "command": "ls"} or '
                '{"tool": "str_replace", "path": "pkg/mod.py", "old_str": "a", "new_str": "b"}, or a fenced '
                "```bash block. Tools: " + ", ".join(sorted(TOOLS)) + ".")


def _from_text(text: str) -> dict[str, Any] | ActionError:
    s = text.strip()
    if not s:
        return ActionError("Empty action. " + _FORMAT_HELP)
    if "<tool_call>" in s or s.startswith(PYTHON_TAG):  # a chat model's native call
        reply = parse_tool_calls(s)
        if reply.errors:
            return ActionError(reply.errors[0])
        if len(reply.calls) > 1:
            return ActionError(f"The reply has {len(reply.calls)} tool calls; an env step runs one. Send one "
                               "tool call per turn.")
        if reply.calls:
            return reply.calls[0].action()
    candidates: list[str] = [s] if s.startswith("{") else []
    fences = _FENCE.findall(text)
    for lang, body in reversed(fences):
        lang = lang.lower()
        if lang in ("bash", "sh", "shell", "console"):
            return {"tool": "bash", "command": body.rstrip("\n")}
        if lang in ("json", ""):
            candidates.append(body.strip())
    if "{" in s and "}" in s:
        candidates.append(s[s.index("{"): s.rindex("}") + 1])
    for c in candidates:
        try:
            obj = json.loads(c)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj
    return ActionError("Could not read a tool call from the text. " + _FORMAT_HELP)


def parse_action(action: Any) -> Call | ActionError:
    """Turn whatever the agent sent into a :class:`Call`, or an :class:`ActionError` saying what is wrong.

    >>> parse_action('```bash\\nls -la\\n```')
    Call(tool='bash', args={'command': 'ls -la'})
    >>> parse_action({"tool": "bsh", "command": "ls"}).message[:40]
    "Unknown tool 'bsh'. Did you mean 'bash'?"
    """
    if isinstance(action, bytes):
        action = action.decode("utf-8", "replace")
    if isinstance(action, str):
        if len(action) > MAX_ACTION_CHARS:
            return ActionError(f"The action is {len(action):,} characters long; the limit is {MAX_ACTION_CHARS:,}. "
                               "Write large files in several smaller edits.")
        parsed = _from_text(action)
        if isinstance(parsed, ActionError):
            return parsed
        action = parsed
    if not isinstance(action, dict):
        return ActionError(f"An action must be a dict or text, got {type(action).__name__}. " + _FORMAT_HELP)
    d = dict(action)
    if "tool" not in d and "name" in d:  # OpenAI-style function call (Llama writes "parameters")
        args = d.get("arguments", d.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError as e:
                return ActionError(f"The arguments of tool '{d['name']}' are not valid JSON ({e}).")
        if not isinstance(args, dict):
            return ActionError(f"The arguments of tool '{d['name']}' must be a JSON object.")
        d = {"tool": d["name"], **args}
    tool = d.pop("tool", None)
    if not isinstance(tool, str):
        return ActionError('The action has no "tool" name. ' + _FORMAT_HELP)
    if tool not in TOOLS:
        return ActionError(f"Unknown tool '{tool[:80]}'.{did_you_mean(tool, TOOLS)} Tools: {', '.join(sorted(TOOLS))}.")
    spec = TOOLS[tool]
    known = {p.name: p for p in spec.params}
    extra = sorted(k for k in d if k not in known)
    if extra:
        return ActionError(f"Tool '{tool}' has no argument {', '.join(repr(k[:60]) for k in extra)}."
                           f"{did_you_mean(str(extra[0]), known)} Its arguments: {', '.join(known) or 'none'}.")
    for name in spec.required:
        if name not in d:
            return ActionError(f"Tool '{tool}' needs the argument '{name}' ({known[name].description})")
    for name, value in list(d.items()):
        want = _TYPES[known[name].type]
        if want is int and isinstance(value, str) and value.strip().lstrip("-").isdigit():
            d[name] = value = int(value)
        if want is list and name == "view_range":
            if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                                        for v in value)):
                return ActionError(f"'view_range' must be two line numbers [first, last], got {value!r:.80}.")
            continue
        if not isinstance(value, want) or isinstance(value, bool):
            return ActionError(f"Argument '{name}' of tool '{tool}' must be a {known[name].type}, "
                               f"got {type(value).__name__}.")
    return Call(tool, d)


class PathError(Exception):
    """A path the agent may not use; the message is shown to the agent."""


class SafeFS:
    """File access confined to one workspace root (the host side of ``/testbed``)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def resolve(self, path: str) -> str:
        """The workspace-relative path that ``path`` names, after symlinks; '' is the root.

        Raises:
            PathError: the path leaves the workspace, lexically or through a symlink.
        """
        if not isinstance(path, str) or "\x00" in path:
            raise PathError("The path must be text without NUL characters.")
        shown = path
        if path.startswith("/"):
            if path != TESTBED and not path.startswith(TESTBED + "/"):
                raise PathError(f"The path {shown!r} is outside the repository; use a path under {TESTBED}/ "
                                "or relative to it.")
            path = path[len(TESTBED):]
        parts: list[str] = []
        todo = [p for p in path.split("/") if p not in ("", ".")]
        hops = 0
        while todo:
            part = todo.pop(0)
            if part == "..":
                if not parts:
                    raise PathError(f"The path {shown!r} leaves the repository through '..'.")
                parts.pop()
                continue
            parts.append(part)
            p = self.root.joinpath(*parts)
            if os.path.islink(p):
                hops += 1
                if hops > 40:
                    raise PathError(f"The path {shown!r} has too many levels of symbolic links.")
                target = os.readlink(p)
                parts.pop()
                if target.startswith("/"):
                    if target != TESTBED and not target.startswith(TESTBED + "/"):
                        raise PathError(f"The path {shown!r} goes through the symlink /testbed/"
                                        f"{'/'.join(parts + [part])} -> {target}, which points outside the repository.")
                    parts = []
                    target = target[len(TESTBED):]
                todo = [t for t in target.split("/") if t not in ("", ".")] + todo
        return "/".join(parts)

    def _open_dir(self, rel_dir: str, create: bool = False) -> int:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in [p for p in rel_dir.split("/") if p]:
                try:
                    nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(part, 0o755, dir_fd=fd)
                    nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def kind(self, rel: str) -> str | None:
        """'file', 'dir', 'other' or None (missing)."""
        try:
            st = os.lstat(self.root / rel) if rel else os.stat(self.root)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"

    def read(self, rel: str) -> bytes:
        d, _, name = rel.rpartition("/")
        dfd = self._open_dir(d)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
        finally:
            os.close(dfd)
        with os.fdopen(fd, "rb") as f:
            return f.read()

    def write(self, rel: str, data: bytes) -> None:
        d, _, name = rel.rpartition("/")
        dfd = self._open_dir(d, create=True)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
        finally:
            os.close(dfd)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def unlink(self, rel: str) -> None:
        d, _, name = rel.rpartition("/")
        dfd = self._open_dir(d)
        try:
            os.unlink(name, dir_fd=dfd)
        finally:
            os.close(dfd)

    def listing(self, rel: str, depth: int = 2) -> list[str]:
        out: list[str] = []

        def walk(r: str, level: int) -> None:
            try:
                entries = sorted(os.scandir(self.root / r if r else self.root), key=lambda e: e.name)
            except OSError:
                return
            for e in entries:
                if e.name.startswith(".") or e.name == "__pycache__":
                    continue
                sub = f"{r}/{e.name}" if r else e.name
                is_dir = e.is_dir(follow_symlinks=False)
                out.append(f"{TESTBED}/{sub}{'/' if is_dir else ''}")
                if is_dir and level < depth:
                    walk(sub, level + 1)

        walk(rel, 1)
        return out


def _numbered(text: str, first: int = 1) -> str:
    return "".join(f"{i:6}\t{line}\n" for i, line in enumerate(text.split("\n"), start=first))


def _snippet(text: str, line: int, context: int = 4) -> str:
    lines = text.split("\n")
    lo, hi = max(line - context, 1), min(line + context, len(lines))
    return _numbered("\n".join(lines[lo - 1: hi]), lo)


class FileTools:
    """The edit tools (view, create, str_replace, insert, undo_edit) over one workspace."""

    def __init__(self, root: Path):
        self.fs = SafeFS(root)
        self.history: dict[str, list[bytes | None]] = {}

    def reset(self) -> None:
        self.history.clear()

    def run(self, call: Call) -> tuple[str, bool]:
        """Run a file tool; returns ``(observation, ok)``. Never raises on the agent's input."""
        try:
            rel = self.fs.resolve(call.args["path"])
            return getattr(self, "_" + call.tool)(rel, call.args)
        except (PathError, _NotText) as e:
            return str(e), False
        except OSError as e:
            if e.errno == errno.ELOOP:
                return f"The path {call.args['path']!r} crosses a symbolic link that changed; try again.", False
            return f"{call.tool} failed on {call.args['path']!r}: {e.strerror or e}.", False

    def _show(self, rel: str) -> str:
        return f"{TESTBED}/{rel}" if rel else TESTBED

    def _text(self, rel: str) -> str:
        """An existing file's text, or a :class:`_NotText` whose message tells the agent what is wrong."""
        if self.fs.kind(rel) != "file":
            raise _NotText(f"{self._show(rel)} is not an existing file.")
        data = self.fs.read(rel)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _NotText(f"{self._show(rel)} is not valid UTF-8 text (byte {e.start}); the edit tools work "
                           "on text files only. Use bash to inspect it (e.g. `xxd` or `file`).") from None

    def _view(self, rel: str, args: dict[str, Any]) -> tuple[str, bool]:
        kind = self.fs.kind(rel)
        if kind is None:
            return f"{self._show(rel)} does not exist.", False
        if kind == "dir":
            if "view_range" in args:
                return "view_range applies to files, not directories.", False
            items = self.fs.listing(rel)
            body = "\n".join(items[:2000]) + (f"\n[... {len(items) - 2000} more entries]" if len(items) > 2000 else "")
            return f"Files and directories up to 2 levels deep in {self._show(rel)}, hidden items excluded:\n{body}", True
        if kind != "file":
            return f"{self._show(rel)} is not a regular file.", False
        data = self.fs.read(rel)
        note = ""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", "replace")
            note = "[the file is not valid UTF-8; undecodable bytes are shown as U+FFFD]\n"
        lines = text.split("\n")
        first, last = 1, len(lines)
        if "view_range" in args:
            first, last = args["view_range"]
            if last == -1:
                last = len(lines)
            if not (1 <= first <= len(lines)) or last < first or last > len(lines):
                return (f"Invalid view_range {args['view_range']}: the file has {len(lines)} lines; use 1 <= first "
                        f"<= last <= {len(lines)} (last may be -1 for the end).", False)
        body = _numbered("\n".join(lines[first - 1: last]), first)
        if len(body) > MAX_VIEW_CHARS:
            body = body[:MAX_VIEW_CHARS]
            body = body[: body.rfind("\n") + 1] + (f"[... cut: the file has {len(lines)} lines; use view_range to "
                                                  "see the rest]\n")
        return f"{note}Here is {self._show(rel)} (lines {first}-{last} of {len(lines)}):\n{body}", True

    def _remember(self, rel: str) -> None:
        try:
            old: bytes | None = self.fs.read(rel)
        except FileNotFoundError:
            old = None
        self.history.setdefault(rel, []).append(old)

    def _create(self, rel: str, args: dict[str, Any]) -> tuple[str, bool]:
        if not rel or self.fs.kind(rel) == "dir":
            return f"{self._show(rel)} is a directory; give a file path.", False
        self._remember(rel)
        self.fs.write(rel, args["file_text"].encode("utf-8", "surrogateescape"))
        return f"File written: {self._show(rel)} ({args['file_text'].count(chr(10)) + 1} lines).", True

    def _str_replace(self, rel: str, args: dict[str, Any]) -> tuple[str, bool]:
        text = self._text(rel)
        old, new = args["old_str"], args["new_str"]
        if not old:
            return "old_str is empty; give the exact text to replace.", False
        n = text.count(old)
        if n == 0:
            return (f"No replacement was performed: old_str did not appear verbatim in {self._show(rel)}. Check "
                    "whitespace and indentation (view the file first).", False)
        if n > 1:
            starts, i = [], text.find(old)
            while i >= 0 and len(starts) < 10:
                starts.append(text.count("\n", 0, i) + 1)
                i = text.find(old, i + 1)
            return (f"No replacement was performed: old_str occurs {n} times in {self._show(rel)} (at lines "
                    f"{', '.join(map(str, starts))}). Include more surrounding lines to make it unique.", False)
        self._remember(rel)
        at = text.index(old)
        after = text[:at] + new + text[at + len(old):]
        self.fs.write(rel, after.encode("utf-8", "surrogateescape"))
        line = text.count("\n", 0, at) + 1
        return f"Edited {self._show(rel)}. Around the change:\n{_snippet(after, line + new.count(chr(10)) // 2)}", True

    def _insert(self, rel: str, args: dict[str, Any]) -> tuple[str, bool]:
        text = self._text(rel)
        lines = text.split("\n")
        at = args["insert_line"]
        if not 0 <= at <= len(lines):
            return f"Invalid insert_line {at}: the file has {len(lines)} lines; use 0..{len(lines)}.", False
        self._remember(rel)
        new = args["insert_text"].split("\n")
        after = "\n".join(lines[:at] + new + lines[at:])
        self.fs.write(rel, after.encode("utf-8", "surrogateescape"))
        return f"Inserted {len(new)} lines after line {at} of {self._show(rel)}:\n{_snippet(after, at + 1)}", True

    def _undo_edit(self, rel: str, args: dict[str, Any]) -> tuple[str, bool]:
        stack = self.history.get(rel)
        if not stack:
            return f"No edit to undo on {self._show(rel)}.", False
        old = stack.pop()
        if old is None:
            self.fs.unlink(rel)
            return f"Undid the creation of {self._show(rel)} (removed).", True
        self.fs.write(rel, old)
        return f"Restored {self._show(rel)} to its state before the last edit.", True


class _NotText(Exception):
    pass
