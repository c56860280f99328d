"""The `apr` agent: automatic program repair without a model, the baseline every other agent must beat.

It knows only what the prompt says. It writes a small probe (:mod:`frog_gym.agents.apr_probe`) into the
sandbox's ``/tmp`` and runs the repository's own test suite under ``sys.settrace`` with the venv's Python,
tests whose names share a word with the problem statement first. Lines are ranked by spectrum-based fault
localization (Ochiai over the lines that passing and failing tests execute, boosted where they appear in
a failing traceback; ties go to functions the statement names). For each suspicious line in turn it
tries the local edits that could undo a bug there (:func:`frog_gym.generators.operators.candidate_fixes`)
through the env's own ``str_replace`` tool, reruns the failing tests and then the suite, and submits the
first edit that makes every test pass without breaking one that passed. An edit that fixes some failing
tests and breaks none is kept and the search goes on from there (a bug may have several sites). When the
budget is spent it keeps those partial fixes, reverts every other edit, and submits.

Where the workspace holds no failing test (hidden tests, SWE-bench's contract), it reads the statement's
reproductions instead (:func:`reproductions`: the ``Running this`` snippets and ``Calling `f(...)` `` calls
with what they should give), writes them as a test module in ``/tmp`` and localizes and checks with those,
the visible suite staying the regression check.

Each candidate costs two steps (the edit, the check); it checks at most ``max_candidates`` of them.
It solves bugs a single local edit undoes (a flipped comparison, an off-by-one constant) and honestly
fails the rest (a deleted statement, a wrong literal).

Example:
    >>> agent = AprAgent(max_steps=30)
    >>> agent.reset(PROMPT_EXAMPLE, {"task_id": "x"})
    >>> agent.act(PROMPT_EXAMPLE)["command"].startswith("mkdir -p /tmp/frog_apr")
    True
"""

from __future__ import annotations

import base64
import json
import keyword
import re
import shlex
from collections.abc import Generator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from frog_gym.agents.base import Action, AgentStats

PROBE_DIR = "/tmp/frog_apr"
PROBE = f"{PROBE_DIR}/probe.py"
REPRO = f"{PROBE_DIR}/test_repro.py"
_RESULT = re.compile(r"^APR-PROBE (\{.*\})\s*$", re.MULTILINE)
_ROOT = re.compile(r"You are working in the repository at (\S+) (?:\(the Python package `([\w.-]+)`)?")
_ISSUE = re.compile(r"<issue>\n?(.*?)</issue>", re.DOTALL)
_COMMON = frozenset({"None", "True", "False", "self", "cls", "list", "dict", "str", "int", "float", "tuple", "set",
                     "return", "returns", "should", "the", "and", "with", "value", "values", "key", "keys"})
SUBMIT: dict[str, Any] = {"tool": "submit"}
FAMILY_ORDER = {f: i for i, f in enumerate((
    "off_by_one_constant", "comparison_flip", "arithmetic_op_swap", "boolean_op_swap", "negated_condition",
    "slice_range_off_by_one", "loop_bound", "changed_default_arg", "swapped_call_args", "swapped_if_else",
    "exception_handling", "dict_key_or_attribute", "wrong_variable", "removed_statement"))}
"""Which edits to try first on a line: the smallest, most common bug shapes before wholesale changes."""

PROMPT_EXAMPLE = ("You are working in the repository at /testbed (the Python package `demo`, version 1).\n"
                  "A user reported this problem:\n\n<issue>\n`last([1, 2])` returns 1.\n</issue>\n")


def statement_names(statement: str) -> list[str]:
    """Identifiers the problem statement quotes in backticks, the way a person would grep for them.

    >>> statement_names("`tail(2, xs)` returns `[50]`; `Cache.get` ignores None")
    ['tail', 'xs', 'Cache', 'get']
    """
    names: list[str] = []
    for quoted in re.findall(r"`([^`]+)`", statement):
        for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", quoted):
            if len(name) > 1 and name not in _COMMON and not keyword.iskeyword(name) and name not in names:
                names.append(name)
    return names


@dataclass(frozen=True)
class Reproduction:
    """One reproduction a statement gives: code to run and what it should do."""

    code: str
    """The statement's snippet, or its call with the import it needs."""
    expected: str = ""
    """The expected value's source (``Expected: `X`.``); '' when the statement gives none."""
    raises: str = ""
    """The exception the code should raise (``Expected: `E` is raised.``)."""
    value: str = ""
    """The expression whose result is compared with ``expected`` (the snippet's last ``print(...)``)."""


_FENCE = re.compile(r"```python\n(.*?)\n```", re.DOTALL)
_CALLING = re.compile(r"^Calling `(.+?)`(?: \(that is, `([\w.]+)\(\)`\))?:$", re.MULTILINE)
_EXPECTED = re.compile(r"^Expected: (?:`(.*)`( is raised)?|no exception)\.$", re.MULTILINE)
_DOTTED = re.compile(r"^([A-Za-z_][\w.]*)\(")


def reproductions(statement: str, package: str = "") -> list[Reproduction]:
    """The runnable reproductions of an issue-like statement: its ``Running this`` snippets and its
    ``Calling `f(...)` (that is, `pkg.mod.f()`)`` calls, each with what the statement expects.

    A part that gives no code, or only "the result is wrong" with neither an expected value nor an
    assertion to run, gives nothing. Whether a reproduction really fails is for the tests to say.

    >>> r = reproductions("Calling `clamp(3, 0, 2)` (that is, `demo.core.clamp()`):\\n\\nExpected: `2`.\\n")
    >>> r[0].code, r[0].value, r[0].expected
    ('from demo.core import clamp', 'clamp(3, 0, 2)', '2')
    """
    out = []
    for part in statement.split("\n---\n"):
        fence, calling, want = _FENCE.search(part), _CALLING.search(part), _EXPECTED.search(part)
        expected = want.group(1) or "" if want else ""
        raises = expected if want and want.group(2) else ""
        expected = "" if raises else expected
        if fence:
            lines = fence.group(1).splitlines()
            last = lines[-1].strip() if lines else ""
            value = last[len("print("):-1] if last.startswith("print(") and last.endswith(")") else ""
            code = "\n".join(lines[:-1] if value else lines)
        elif calling:
            value = calling.group(1)
            code = _import_for(value, calling.group(2) or "", package)
            if code is None:
                continue
        else:
            continue
        if not value and not expected and not raises and "Actual: it raises" not in part and "assert " not in code:
            continue  # "the result is wrong" with nothing to compare against
        if not expected and not raises and value and "Actual: it raises" not in part:
            continue
        out.append(Reproduction(code, expected, raises, value))
    return out


def _import_for(call: str, api: str, package: str) -> str | None:
    """The import that makes a statement's call runnable: its dotted callee matched against the public
    name the statement gives (``json.dumps`` for ``simplejson.dumps``: ``import simplejson as json``)."""
    m = _DOTTED.match(call)
    if not m:
        return None
    parts = m.group(1).split(".")
    api_parts = [p for p in api.split(".") if p]
    if not api_parts or api_parts == parts:  # the call names its own public path: `pkg.f(...)`
        return f"import {parts[0]}" if len(parts) > 1 or parts[0] == package else None
    j = 0
    while j < min(len(parts), len(api_parts)) and parts[-1 - j] == api_parts[-1 - j]:
        j += 1
    if j == len(parts):  # the call names a definition of a module: import it from there
        head = api_parts[: len(api_parts) - j]
        return f"from {'.'.join(head)} import {parts[0]}" if head else f"import {parts[0]}"
    if j and len(parts) - j == 1:  # a module under another name
        head = api_parts[: len(api_parts) - j]
        return f"import {'.'.join(head)} as {parts[0]}"
    return None


def repro_tests(found: list[Reproduction]) -> str:
    """A pytest module with one test per reproduction (tests that do not compile are left out).

    >>> print(repro_tests([Reproduction("from m import f", expected="2", value="f(1)")]))
    import pytest
    <BLANKLINE>
    <BLANKLINE>
    def test_repro_0():
        from m import f
        assert (f(1)) == (2)
    <BLANKLINE>
    """
    import ast
    import textwrap

    tests = []
    for r in found:
        body = r.code.splitlines()
        if r.value:
            body.append(f"assert ({r.value}) == ({r.expected})" if r.expected else r.value)
        if r.raises:
            name = r.raises.split(".")[-1]
            body = ["with pytest.raises(Exception) as _raised:", *("    " + ln for ln in body),
                    f"assert type(_raised.value).__name__ == {name!r}"]
        src = f"def test_repro_{len(tests)}():\n" + textwrap.indent("\n".join(body) or "pass", "    ") + "\n"
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        if not _free_names(tree):
            tests.append(src)
    return "import pytest\n\n\n" + "\n\n".join(tests) if tests else ""


def _free_names(tree: Any) -> set[str]:
    """Names a test reads that nothing binds: a call quoted from a test module's helpers (``f(blog)``)
    cannot run outside it.

    >>> import ast
    >>> sorted(_free_names(ast.parse("def t():\\n    import m\\n    x = [y for y in m.f(1)]\\n    m.g(x, z)\\n")))
    ['z']
    """
    import ast
    import builtins

    bound = set(dir(builtins)) | {"pytest", "_raised"}
    for node in ast.walk(tree):
        if isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def transition(current: str, target: str) -> tuple[str, str]:
    """A ``str_replace`` (old, new) that turns ``current`` into ``target``: the differing span, widened to
    whole lines, then line by line until ``old`` occurs once in ``current``.

    >>> transition("a\\nb = 1\\nc\\nb = 1\\n", "a\\nb = 1\\nc\\nb = 2\\n")
    ('c\\nb = 1\\n', 'c\\nb = 2\\n')
    """
    if current == target:
        raise ValueError("current and target are equal; there is nothing to replace")
    lo = 0
    while lo < min(len(current), len(target)) and current[lo] == target[lo]:
        lo += 1
    hi = 0
    while hi < min(len(current), len(target)) - lo and current[-1 - hi] == target[-1 - hi]:
        hi += 1
    start = current.rfind("\n", 0, lo) + 1
    end_c, end_t = len(current) - hi, len(target) - hi
    nl = current.find("\n", end_c)
    tail = (nl + 1 if nl >= 0 else len(current)) - end_c
    end_c, end_t = end_c + tail, end_t + tail
    while current.count(current[start:end_c]) != 1 or start == end_c:
        if start > 0:
            start = current.rfind("\n", 0, start - 1) + 1
        elif end_c < len(current):
            nl = current.find("\n", end_c)
            step = (nl + 1 if nl >= 0 else len(current)) - end_c
            end_c, end_t = end_c + step, end_t + step
        else:
            break
    return current[start:end_c], target[start:end_t]


@dataclass
class _Candidate:
    path: str
    text: str
    description: str


@dataclass
class AprAgent:
    """Spectrum-based fault localization plus candidate local edits, checked against the repository's tests.

    Args:
        max_steps: the step budget it plans for; the harness's ``max_steps`` (``info["max_steps"]``) wins
            when smaller. Two steps are kept for the final edit and ``submit``.
        max_lines: how many of the most suspicious lines it tries edits on.
        max_candidates: how many candidate edits it checks at most (the right one, when it exists, is
            usually among the first few; a failing search otherwise spends the whole step budget).
        trace_budget_s: seconds of testing before the probe stops starting new tests; at 1.6 times that it
            answers with what it has (keep that under the harness's per-command timeout).
        check_budget_s: seconds a candidate's check may take before it counts as rejected.
        python: the interpreter that runs the probe inside the sandbox (the repository venv's, on PATH).
    """

    max_steps: int = 100
    max_lines: int = 25
    max_candidates: int = 24
    trace_budget_s: float = 15.0
    check_budget_s: float = 25.0
    python: str = "python"
    stats: AgentStats = field(default_factory=AgentStats, init=False)

    def __post_init__(self) -> None:
        if self.max_steps < 6:
            raise ValueError(f"AprAgent.max_steps={self.max_steps} leaves no room for a candidate; use at least 6.")
        if self.max_lines < 1 or self.max_candidates < 1 or self.trace_budget_s <= 0:
            raise ValueError(f"AprAgent needs max_lines >= 1, max_candidates >= 1 and trace_budget_s > 0, got "
                             f"{self.max_lines}, {self.max_candidates} and {self.trace_budget_s}.")
        self._plan: Generator[Action, str, None] | None = None

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        """Read the repository root and the problem statement from the prompt; plan a fresh episode."""
        root = _ROOT.search(prompt)
        issue = _ISSUE.search(prompt)
        self.root = root.group(1) if root else "/testbed"
        self.package = (root.group(2) or "") if root else ""
        self.statement = issue.group(1).strip() if issue else prompt
        self.budget = min(self.max_steps, int(info.get("max_steps") or self.max_steps))
        self.steps = 0
        self.stats = AgentStats(extra={"tried": [], "outcome": "not started"})
        self._plan = self._run()
        self._primed = False

    def act(self, observation: str) -> Action:
        """The next step of the plan; ``submit`` once it is over."""
        if self._plan is None:
            self.reset(observation, {})
        assert self._plan is not None
        try:
            action = next(self._plan) if not self._primed else self._plan.send(observation)
        except StopIteration:
            return dict(SUBMIT)
        self._primed = True
        self.steps += 1
        return action

    # -- the plan -----------------------------------------------------------------------------------
    def _bash(self, command: str) -> dict[str, Any]:
        return {"tool": "bash", "command": command}

    def _probe(self, *args: str) -> dict[str, Any]:
        return self._bash(f"{self.python} {PROBE} {shlex.join(args)}")

    @staticmethod
    def _result(observation: str) -> dict[str, Any]:
        found = _RESULT.findall(observation)
        if not found:
            return {"error": "no probe result in the output: " + observation[-300:]}
        try:
            result = json.loads(found[-1])
        except ValueError as e:
            return {"error": f"unreadable probe result ({e})"}
        return result if isinstance(result, dict) else {"error": "probe result is not an object"}

    def _run(self) -> Generator[Action, str, None]:
        extra = self.stats.extra
        source = resources.files("frog_gym.agents").joinpath("apr_probe.py").read_text(encoding="utf-8")
        yield self._bash(f"mkdir -p {PROBE_DIR} && cat > {PROBE} <<'FROG_APR_EOF'\n{source}\nFROG_APR_EOF")
        names = statement_names(self.statement)
        opts = ["--budget", f"{self.trace_budget_s:g}"] + (["--prefer", ",".join(names)] if names else [])
        baseline = self._result((yield self._probe("run", *opts)))
        extra["failing_tests"] = baseline.get("failed")
        tests = repro_tests(reproductions(self.statement, self.package)) if not baseline.get("error") else ""
        if tests:  # the statement's reproductions: failing tests the workspace does not hold (hidden tests)
            yield self._bash(f"cat > {REPRO} <<'FROG_APR_EOF'\n{tests}\nFROG_APR_EOF")
            found = self._result((yield self._probe("repro", "--budget", f"{self.trace_budget_s:g}", REPRO)))
            extra["reproductions"] = {"written": tests.count("def test_repro_"), "failing": found.get("failed")}
            baseline["failed"] = (baseline.get("failed") or 0) + (found.get("failed") or 0)
        if baseline.get("error") or not baseline.get("failed"):
            extra["outcome"] = "no failing test to localize from: " + str(baseline.get("error", "all pass"))
            yield dict(SUBMIT)
            return
        spectrum = self._result((yield self._probe("trace", *opts)))
        if spectrum.get("error") or not spectrum.get("suspicious"):
            extra["outcome"] = "no suspicious line: " + str(spectrum.get("error", "the failing tests ran no source"))
            yield dict(SUBMIT)
            return
        lines = [(str(p), int(n), float(s)) for p, n, s in spectrum.get("suspicious", [])[: self.max_lines]]
        originals: dict[str, str] = {}
        self._originals = originals
        for path in dict.fromkeys(p for p, _, _ in lines):
            text = yield from self._read(path)
            if text is not None:
                originals[path] = text
        candidates = candidates_for(lines, originals, names)
        extra["candidates"] = len(candidates)
        current = dict(originals)
        kept: list[str] = []
        extra["outcome"] = "no candidate passed"
        while candidates and len(extra["tried"]) < self.max_candidates:
            cand = candidates.pop(0)
            moves = sum(1 for p, text in current.items() if text != (cand.text if p == cand.path else originals[p]))
            if self.budget - self.steps < moves + 3:  # the edits, the check, the final revert, submit
                extra["outcome"] = "step budget spent"
                break
            ok = yield from self._move(current, cand.path, cand.text)
            if not ok:
                continue
            check = self._result((yield self._probe("check", "--budget", f"{self.check_budget_s:g}", "--keep")))
            extra["tried"].append(cand.description)
            if check.get("solved"):
                extra["outcome"] = "solved by " + "; ".join([*kept, cand.description])
                yield dict(SUBMIT)
                return
            if check.get("accepted"):
                # Fewer failures and nothing broken: build on it (a bug can have several sites). The probe
                # made what still fails the baseline; later candidates apply on top of this edit.
                kept.append(cand.description)
                originals[cand.path] = cand.text
                tried = set(extra["tried"])
                candidates = [c for c in candidates_for(lines, originals, names) if c.description not in tried]
        if kept:
            extra["outcome"] += "; kept the partial fix " + "; ".join(kept)
        if originals:  # every file as it was, but for the partial fixes kept
            path = next(iter(originals))
            yield from self._move(current, path, originals[path])
        yield dict(SUBMIT)

    def _read(self, path: str) -> Generator[Action, str, str | None]:
        chunks: list[bytes] = []
        offset, size = 0, 1
        while offset < size:
            if self.budget - self.steps < 8:
                return None
            got = self._result((yield self._probe("read", path, str(offset))))
            if "data" not in got:
                return None
            data = base64.b64decode(got["data"])
            chunks.append(data)
            offset, size = offset + len(data), int(got["size"])
            if not data:
                break
        try:
            return b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError:
            return None

    def _move(self, current: dict[str, str], path: str, target: str) -> Generator[Action, str, bool]:
        """Bring the files to the state where ``path`` holds ``target`` and every other file its original."""
        ok = True
        for other, text in list(current.items()):
            if other == path or not ok:
                continue
            original = self._originals.get(other)
            if original is not None and text != original:
                ok = yield from self._edit(current, other, original)
        if current.get(path) != target:
            ok = (yield from self._edit(current, path, target)) and ok
        return ok

    def _edit(self, current: dict[str, str], path: str, target: str) -> Generator[Action, str, bool]:
        old, new = transition(current[path], target)
        obs = yield {"tool": "str_replace", "path": path, "old_str": old, "new_str": new}
        if not obs.startswith("Edited "):
            obs = yield {"tool": "create", "path": path, "file_text": target}
            if not obs.startswith("File written"):
                return False
        current[path] = target
        return True


def candidates_for(lines: list[tuple[str, int, float]], originals: dict[str, str],
                   names: list[str]) -> list[_Candidate]:
    """Candidate fixed files, most promising first.

    Lines are taken by suspiciousness; among equally suspicious lines, those inside a function the
    statement names come first. Each line contributes the edits of ``candidate_fixes`` that touch it.
    """
    from frog_gym.generators.operators import candidate_fixes, enclosing_function

    def named(path: str, line: int) -> bool:
        try:
            where = enclosing_function(originals[path], line)
        except SyntaxError:
            return False
        return bool(where) and where[0].split(".")[-1] in names

    keyed: list[tuple[tuple[float, bool, int, int, int], _Candidate]] = []
    seen: set[tuple[str, str]] = set()
    for i, (path, line, score) in enumerate(lines):
        source = originals.get(path)
        if source is None:
            continue
        try:
            fixes = candidate_fixes(source, {line})
        except SyntaxError:
            continue
        in_named = named(path, line)
        for j, m in enumerate(fixes):
            text = m.apply(source)
            if text != source and (path, text) not in seen:
                seen.add((path, text))
                key = (-score, not in_named, FAMILY_ORDER.get(m.family, len(FAMILY_ORDER)), i, j)
                keyed.append((key, _Candidate(path, text, f"{path}:{m.lineno} {m.description}")))
    keyed.sort(key=lambda kc: kc[0])
    return [c for _, c in keyed]
