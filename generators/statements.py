"""Issue-like problem statements without a language model, written from what the failing tests show.

A statement reads like a user's bug report: what they ran, what they expected, what they got. It is built
from the failing assertion or exception (:class:`Failure`) and from the failing test's source
(:class:`~frog_gym.generators.testsource.Evidence`: the public function it calls, a reproduction when
one can be lifted cleanly). It never names a test, never quotes the mutated line, and names only modules
and functions that exist where it says (:mod:`frog_gym.generators.statement_check` enforces all three).

Three levels, stored as the task's ``statement_level``:

- ``full``: a reproduction (or the failing call), expected and actual behaviour.
- ``medium``: the symptom in the public API's terms (which function, what goes wrong), no reproduction.
- ``vague``: what a user would notice, naming only the package.

A user may plug in their own writer (``frog-gym generate --statement-writer module:function``, or
``openai:<model>@<base_url>`` for any OpenAI-compatible endpoint): it gets the :class:`StatementContext`
as a dict and returns the text (an empty return falls back to the built-in one).

Example:
    >>> from frog_gym.generators.testsource import Evidence
    >>> ctx = StatementContext("demo", "demo", [Failure("tests/test_core.py::test_clamp", "AssertionError",
    ...     "AssertionError: assert 3 == 2", "")], [Evidence("demo.core.clamp", "clamp(3, 0, 2)", "2")])
    >>> print(write(ctx, "medium"))
    `demo.core.clamp()` returns a wrong result: I got `3` back.
    >>> write(ctx, "vague")
    'Some results I get from `demo` are wrong since the last change.'
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from frog_gym.generators.testsource import Evidence

LEVELS = ("full", "medium", "vague")
_WEIGHTS = (("full", 40), ("medium", 35), ("vague", 25))
_ADDR = re.compile(r"0x[0-9a-fA-F]{6,}")


@dataclass(frozen=True)
class Failure:
    """One failing test as the report plugin recorded it."""

    test: str
    exc_type: str
    message: str
    longrepr: str


@dataclass(frozen=True)
class StatementContext:
    """What a statement writer may use.

    ``package`` is the top-level import name; ``evidence`` is aligned with ``failures`` (may be shorter).
    Test ids in ``failures`` are for a writer's own use and must not appear in the text.
    """

    repo: str
    package: str
    failures: list[Failure]
    evidence: list[Evidence] = field(default_factory=list)
    crash: bool = False
    n_bugs: int = 1
    path: list[str] = field(default_factory=list)
    modules: frozenset[str] = frozenset()
    """The package's module names (to tell a module from a function in ``path``)."""
    """Dotted package code on the failing path (traceback frames, the called function when it reaches the
    bug, the bug's module), entry point first: what a statement names when the evidence names nothing."""

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


def _pick(options: list[str], key: str) -> str:
    return options[int(hashlib.sha256(key.encode()).hexdigest()[:6], 16) % len(options)]


def _first_line(message: str, limit: int = 200) -> str:
    line = message.strip().splitlines()[0].strip() if message.strip() else ""
    line = _ADDR.sub("0x...", line)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _exception(f: Failure) -> str:
    """``Type: message`` of a failure that is an exception other than a failed assert, else ''."""
    line = _first_line(f.message)
    if f.exc_type and f.exc_type != "AssertionError":
        return line if line.startswith(f.exc_type.split(".")[-1]) else f"{f.exc_type}: {line}".rstrip(": ")
    return ""


def observed_expected(f: Failure, ev: Evidence) -> tuple[str, str]:
    """What the call gave and what was expected, from pytest's assertion message (''s when unknown).

    >>> observed_expected(Failure("t", "AssertionError", "AssertionError: assert 'a_b' == 'aB'", ""), Evidence())
    ("'a_b'", "'aB'")
    """
    line = _first_line(f.message, 400)
    m = re.match(r"^(?:AssertionError: )?assert (.+?) == (.+)$", line)
    if m and " == " not in m.group(1) and " == " not in m.group(2):
        got, want = (m.group(2), m.group(1)) if ev.flipped else (m.group(1), m.group(2))
        if not (got.startswith("(") or got.startswith("<") and " at 0x" in got):
            return got[:160], (ev.expected or want)[:160]
    return "", ev.expected


def _api(ev: Evidence) -> str:
    return f"`{ev.api}()`" if ev.api else ""


def _where(ctx: StatementContext, ev: Evidence) -> str:
    """The package code a statement names: the evidence's function, else the failing path's entry point,
    else the package (only when nothing is known)."""
    if ev.api:
        return _api(ev)
    if ctx.path:
        p = ctx.path[0]
        return f"`{p}()`" if p.rsplit(".", 1)[-1][:1].islower() and p not in ctx.modules else f"`{p}`"
    return f"`{ctx.package}`"


def _module_of(ctx: StatementContext) -> str:
    """The module of the failing path's entry point (what a vague statement names), else the package."""
    for p in ctx.path:
        if p in ctx.modules:
            return f"`{p}`"
        parent = p.rsplit(".", 1)[0]
        while parent and parent not in ctx.modules and "." in parent:
            parent = parent.rsplit(".", 1)[0]
        if parent in ctx.modules and "." in parent:
            return f"`{parent}`"
        if parent in ctx.modules:  # a one-module package: its class or function is what a user sees
            return f"`{p}`"
    return f"`{ctx.package}`"


def _differ(got: str, want: str) -> tuple[str, str]:
    """``got``/``want`` with the part where they differ kept visible: equal prefixes and suffixes longer than
    a few characters are elided (``...``); ('', '') when the two read the same (quotes ignored)."""
    norm = lambda x: x.replace('"', "'")  # noqa: E731
    if norm(got) == norm(want):
        return "", ""
    if len(got) <= 60 and len(want) <= 60:
        return got, want
    a, b = norm(got), norm(want)
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    lo = max(0, i - 15)

    def cut(x: str) -> str:
        hi = len(x) - max(0, j - 15)
        return ("..." if lo else "") + x[lo:hi] + ("..." if hi < len(x) else "")

    return cut(got), cut(want)


def _symptom(f: Failure, ev: Evidence) -> str:
    """One clause: what goes wrong, in the API's terms."""
    exc = _exception(f)
    got, _ = observed_expected(f, ev)
    if ev.raises and "DID NOT RAISE" in f.message:
        return f"does not raise `{ev.raises}` any more"
    if exc:
        return f"raises `{exc}`"
    if got:
        return f"returns a wrong result: I got `{got}` back"
    return "returns a wrong result"


def full(ctx: StatementContext) -> str:
    if ctx.crash:
        return (f"Importing `{ctx.package}` fails:\n\n```\n>>> import {ctx.package}\n"
                f"{_first_line(ctx.failures[0].message) or ctx.failures[0].exc_type}\n```\n\n"
                f"Expected: the package imports without error.")
    parts = []
    for f, ev in _distinct(ctx)[: min(2, ctx.n_bugs)]:
        exc = _exception(f)
        got, want = observed_expected(f, ev)
        hidden = False
        if got and want:
            got, want = _differ(got, want)
            if not got:  # the shortened values read the same: say so instead of showing two equal strings
                want, f, hidden = "", replace(f, message=""), True
        if ev.repro:
            text = f"Running this:\n\n```python\n{ev.repro}\n```\n\n"
        elif ev.call:
            named = not ev.api or ev.call.startswith(ev.api + "(")
            text = f"Calling `{ev.call}`" + ("" if named else f" (that is, {_api(ev)})") + ":\n\n"
        else:
            text = f"Using {_where(ctx, ev)}:\n\n"
        if ev.raises and "DID NOT RAISE" in f.message:
            text += f"Expected: `{ev.raises}` is raised.\nActual: no exception."
        elif exc:
            text += "Expected: " + (f"`{want}`.\n" if want else "no exception.\n") + f"Actual: it raises `{exc}`."
        elif got:
            text += (f"Expected: `{want}`.\n" if want else "") + f"Actual: `{got}`."
        else:
            line = _first_line(f.message)
            text += (f"Expected: `{want}`.\n" if want else "") + (
                f"Actual: the result is wrong (`{line}`)." if line and line != f.exc_type
                else "Actual: a result that differs from the expected one in a detail the shortened values "
                     "hide (compare them in full)." if hidden else "Actual: the result is wrong.")
        parts.append(text)
    title = _title(ctx)
    more = "\n\nOther calls seem affected too." if len(_distinct(ctx)) > len(parts) else ""
    multi = "\n\nThere may be more than one defect." if ctx.n_bugs > 1 else ""
    return f"{title}\n\n" + "\n\n---\n\n".join(parts) + more + multi


def _distinct(ctx: StatementContext) -> list[tuple[Failure, Evidence]]:
    """Failures paired with their evidence, one per public function (the first failure of each)."""
    seen, out = set(), []
    for i, f in enumerate(ctx.failures[:8]):
        ev = ctx.evidence[i] if i < len(ctx.evidence) else Evidence()
        key = ev.api or f"#{i}"
        if key in seen or (not ev.api and out):
            continue
        seen.add(key)
        out.append((f, ev))
    return out or [(ctx.failures[0], Evidence())]


def _title(ctx: StatementContext) -> str:
    f, ev = _distinct(ctx)[0]
    what = _where(ctx, ev)
    exc = _exception(f)
    if ev.raises and "DID NOT RAISE" in f.message:
        return f"{what} does not raise `{ev.raises}` any more"
    return f"{what} raises `{exc.split(':')[0]}`" if exc else f"{what} returns a wrong result"


def medium(ctx: StatementContext) -> str:
    if ctx.crash:
        return f"`import {ctx.package}` raises `{ctx.failures[0].exc_type or 'an error'}`."
    pairs = _distinct(ctx)
    out = []
    for f, ev in pairs[: min(2, ctx.n_bugs)]:
        who = _where(ctx, ev) if ev.api or ctx.path else f"Something in `{ctx.package}`"
        out.append(f"{who} {_symptom(f, ev)}.")
    multi = " There may be more than one defect." if ctx.n_bugs > 1 else ""
    more = " Other inputs seem affected too." if len(ctx.failures) > 3 else ""
    return " ".join(out) + more + multi


def vague(ctx: StatementContext) -> str:
    pkg = _module_of(ctx)
    if ctx.crash:
        return f"{pkg} cannot be imported any more."
    if ctx.n_bugs > 1:
        return f"Several things in {pkg} misbehave since the last change."
    f = ctx.failures[0]
    exc = _exception(f)
    key = ctx.package + f.test
    if exc:
        kind = exc.split(":")[0]
        return _pick([f"Code that uses {pkg} now fails with a `{kind}`.",
                      f"After the last change, {pkg} crashes with `{kind}` on input that used to work."], key)
    return _pick([f"Some results I get from {pkg} are wrong since the last change.",
                  f"{pkg} no longer behaves as documented for some inputs."], key)


_BUILTIN: dict[str, Callable[[StatementContext], str]] = {"full": full, "medium": medium, "vague": vague}


def openai_writer(model: str, base_url: str, api_key_env: str | None = None) -> Callable[[dict], str]:
    """A writer that asks an OpenAI-compatible chat endpoint to phrase the statement.

    The model sees the built-in statement of the same level as a draft plus the evidence (never the test
    ids, the bug or the fix) and is asked for a user's bug report. HTTP, retries and error messages are
    the :class:`~frog_gym.agents.openai_agent.OpenAIAgent`'s.
    """
    from frog_gym.agents.openai_agent import OpenAIAgent, OpenAIAgentConfig

    agent = OpenAIAgent(OpenAIAgentConfig(model=model, base_url=base_url, api_key_env=api_key_env,
                                          tool_mode="text", max_tokens=600, max_retries=2))

    def writer(ctx: dict) -> str:
        level = ctx["level"]
        draft = _BUILTIN[level](_context_of(ctx))
        facts = {"package": ctx["package"], "level": level,
                 "evidence": [{k: v for k, v in e.items() if v} for e in ctx["evidence"][:2]]}
        prompt = (f"Rewrite this bug report as a GitHub issue written by a user of `{ctx['package']}`. Keep "
                  f"every fact, add none, do not mention tests. Level '{level}': " +
                  {"full": "keep the reproduction and expected/actual.",
                   "medium": "name the function and the symptom, no code.",
                   "vague": "one or two sentences, what a user notices, no function names."}[level] +
                  f"\n\nDraft:\n{draft}\n\nFacts (JSON):\n{json.dumps(facts)}\n\nAnswer with the issue text only.")
        body = agent._post({"model": model, "messages": [{"role": "user", "content": prompt}],
                            "temperature": 0.0, "max_tokens": 600})
        try:
            return str(json.loads(body)["choices"][0]["message"]["content"] or "").strip()
        except (ValueError, KeyError, IndexError, TypeError):
            return ""

    return writer


def _context_of(d: dict) -> StatementContext:
    return StatementContext(d["repo"], d["package"], [Failure(**f) for f in d["failures"]],
                            [Evidence(**e) for e in d["evidence"]], d["crash"], d["n_bugs"], list(d.get("path", [])),
                            frozenset(d.get("modules", ())))


def load_writer(spec: str | None) -> Callable[[dict], str] | None:
    """A user's statement writer: ``module:function``, or ``openai:<model>@<base_url>`` (None: built-in).

    >>> load_writer("openai:nomodel")
    Traceback (most recent call last):
    ...
    ValueError: --statement-writer openai: needs 'openai:<model>@<base_url>', e.g. 'openai:qwen2.5-coder@http://localhost:8000/v1'; got 'openai:nomodel'
    """
    if not spec:
        return None
    if spec.startswith("openai:"):
        model, at, url = spec[len("openai:"):].partition("@")
        if not at or not model or not url.startswith(("http://", "https://")):
            raise ValueError("--statement-writer openai: needs 'openai:<model>@<base_url>', e.g. "
                             f"'openai:qwen2.5-coder@http://localhost:8000/v1'; got {spec!r}")
        import os

        return openai_writer(model, url, "OPENAI_API_KEY" if os.environ.get("OPENAI_API_KEY") else None)
    mod, sep, name = spec.partition(":")
    if not sep or not name:
        raise ValueError(f"--statement-writer must look like 'module:function' or 'openai:<model>@<base_url>', "
                         f"got {spec!r}")
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
