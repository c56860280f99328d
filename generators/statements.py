"""Problem statements without a language model, written from what the failing tests report.

Three levels, stored as the task's ``statement_level``:

- ``full``: the failing test ids, the assertion message and a trimmed traceback of the first failure.
- ``medium``: the symptom (exception type and message) and the public function involved; no test names.
- ``vague``: one sentence reporting wrong behaviour of a public function or module.

A user may plug in their own writer (``frog-gym generate --statement-writer module:function``): it gets the
:class:`StatementContext` as a dict and returns the text (an empty return falls back to the built-in one).

Example:
    >>> ctx = StatementContext("demo", "demo.core", "clamp", [Failure("tests/test_core.py::test_clamp",
    ...     "AssertionError", "AssertionError: assert 3 == 2", "")], crash=False)
    >>> write(ctx, "vague")
    '`clamp()` in `demo.core` gives wrong answers in some cases.'
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

LEVELS = ("full", "medium", "vague")
_WEIGHTS = (("full", 40), ("medium", 35), ("vague", 25))
_FRAME = re.compile(r"^(?P<file>[^\s:][^:]*\.py):(?P<line>\d+): in (?P<func>[\w<>.]+)$")
_TRACE_LINES = 30


@dataclass(frozen=True)
class Failure:
    """One failing test as the report plugin recorded it."""

    test: str
    exc_type: str
    message: str
    longrepr: str


@dataclass(frozen=True)
class StatementContext:
    """What a statement writer may use. ``module`` is dotted; ``function`` the public entry point or ''."""

    repo: str
    module: str
    function: str
    failures: list[Failure]
    crash: bool = False
    n_bugs: int = 1
    extra_modules: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def level_for(key: str) -> str:
    """The statement level of a task, spread 40/35/25 over full/medium/vague by a hash of ``key``.

    >>> sorted({level_for(f"t{i}") for i in range(50)})
    ['full', 'medium', 'vague']
    """
    x = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 100
    for level, w in _WEIGHTS:
        if x < w:
            return level
        x -= w
    return "vague"


def entry_function(failures: list[Failure], test_file_pattern: Callable[[str], bool]) -> str:
    """The first non-test frame below a failing test in the tracebacks (the public function it called)."""
    for f in failures:
        frames = [m for m in (_FRAME.match(line.strip()) for line in f.longrepr.splitlines()) if m]
        for m in frames:
            if not test_file_pattern(m.group("file")) and not m.group("func").startswith("_"):
                return m.group("func")
    return ""


def _pick(options: list[str], key: str) -> str:
    return options[int(hashlib.sha256(key.encode()).hexdigest()[:6], 16) % len(options)]


def _first_line(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else ""
    return line if len(line) <= 240 else line[:237] + "..."


def _trim(longrepr: str) -> str:
    lines = [ln.rstrip() for ln in longrepr.splitlines()]
    if len(lines) > _TRACE_LINES:
        lines = ["[...]"] + lines[-_TRACE_LINES:]
    return "\n".join(lines)


def _where(ctx: StatementContext) -> str:
    return f"`{ctx.function}()` in `{ctx.module}`" if ctx.function else f"`{ctx.module}`"


def full(ctx: StatementContext) -> str:
    ids = [f.test for f in ctx.failures]
    shown = ids[:10]
    more = f"\n- ... and {len(ids) - len(shown)} more" if len(ids) > len(shown) else ""
    first = ctx.failures[0]
    head = "Importing the package fails, so these tests error:" if ctx.crash else "These tests fail:"
    text = f"{head}\n" + "\n".join(f"- `{t}`" for t in shown) + more
    if first.message:
        text += f"\n\nThe first failure reports:\n\n    {_first_line(first.message)}"
    if first.longrepr.strip():
        text += f"\n\nTraceback of `{first.test}` (trimmed):\n\n```\n{_trim(first.longrepr)}\n```"
    text += "\n\nThe tests are correct; fix the library code so that they pass."
    return text


def medium(ctx: StatementContext) -> str:
    first = ctx.failures[0]
    symptom = _first_line(first.message) or first.exc_type or "a wrong result"
    key = ctx.module + ctx.function + symptom
    if ctx.crash:
        return (f"`import {ctx.module}` fails with `{symptom}`; nothing that depends on it can be used. "
                f"It worked before the last change to `{ctx.module}`.")
    if first.exc_type and first.exc_type != "AssertionError":
        opener = _pick([f"Using {_where(ctx)} now raises `{symptom}`.",
                        f"A call into {_where(ctx)} blows up with `{symptom}`."], key)
    else:
        opener = _pick([f"{_where(ctx)} returns a wrong result; a check of its output fails with `{symptom}`.",
                        f"The output of {_where(ctx)} is not what it should be: `{symptom}`."], key)
    more = " Other inputs seem affected too." if len(ctx.failures) > 3 else ""
    multi = (f" There may be more than one defect (also look at {', '.join(f'`{m}`' for m in ctx.extra_modules)})."
             if ctx.extra_modules else (" There may be more than one defect." if ctx.n_bugs > 1 else ""))
    return opener + more + multi


def vague(ctx: StatementContext) -> str:
    key = ctx.module + ctx.function
    if ctx.crash:
        return f"`{ctx.module}` cannot be imported any more."
    if ctx.n_bugs > 1:
        return f"Several things in `{ctx.module}` misbehave since the last change; some results are wrong."
    if ctx.function:
        return _pick([f"Something is wrong with {_where(ctx)}: it does not behave as documented for some inputs.",
                      f"{_where(ctx)} gives wrong answers in some cases."], key)
    return f"Part of `{ctx.module}` misbehaves: some results are wrong."


_BUILTIN: dict[str, Callable[[StatementContext], str]] = {"full": full, "medium": medium, "vague": vague}


def load_writer(spec: str | None) -> Callable[[dict], str] | None:
    """Import a user's statement writer named ``module:function`` (None: the built-in ones)."""
    if not spec:
        return None
    mod, sep, name = spec.partition(":")
    if not sep or not name:
        raise ValueError(f"--statement-writer must look like 'module:function', got {spec!r}")
    return getattr(importlib.import_module(mod), name)


def write(ctx: StatementContext, level: str, writer: Callable[[dict], str] | None = None) -> str:
    """The problem statement at ``level`` (one of :data:`LEVELS`), from ``writer`` when it returns text."""
    if level not in _BUILTIN:
        raise ValueError(f"Unknown statement level {level!r}; use one of {', '.join(LEVELS)}")
    if writer is not None:
        text = writer({**ctx.to_dict(), "level": level})
        if text:
            return str(text)
    return _BUILTIN[level](ctx)
