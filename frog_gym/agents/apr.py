"""The `apr` agent: automatic program repair without a model, the baseline every other agent must beat.

It knows only what the prompt says. It writes a small probe (:mod:`frog_gym.agents.apr_probe`) into the
sandbox's ``/tmp`` and runs the repository's own test suite under ``sys.settrace`` with the venv's Python,
tests whose names share a word with the problem statement first. Lines are ranked by spectrum-based fault
localization (Ochiai over the lines that passing and failing tests execute, boosted where they appear in
a failing traceback; ties go to functions the statement names). For each suspicious line in turn it
tries the local edits that could undo a bug there (:func:`frog_gym.generators.operators.candidate_fixes`)
through the env's own ``str_replace`` tool, reruns the failing tests and then the suite, and submits the
first edit that makes every test pass without breaking one that passed. If none does within its step
budget, it keeps the best partial fix (fewer failures, nothing broken) or reverts, and submits.

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
_RESULT = re.compile(r"^APR-PROBE (\{.*\})\s*$", re.MULTILINE)
_ROOT = re.compile(r"You are working in the repository at (\S+) ")
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
        best: tuple[int, _Candidate] | None = None
        for cand in candidates[: self.max_candidates]:
            moves = sum(1 for p, text in current.items() if text != (cand.text if p == cand.path else originals[p]))
            if self.budget - self.steps < moves + 3:  # the edits, the check, the final revert, submit
                extra["outcome"] = "step budget spent"
                break
            ok = yield from self._move(current, cand.path, cand.text)
            if not ok:
                continue
            check = self._result((yield self._probe("check", "--budget", f"{self.check_budget_s:g}")))
            extra["tried"].append(cand.description)
            if check.get("solved"):
                extra["outcome"] = f"solved by {cand.description}"
                yield dict(SUBMIT)
                return
            if check.get("accepted") and (best is None or check.get("suite_failing", 1 << 30) < best[0]):
                best = (int(check.get("suite_failing", 1 << 30)), cand)
        else:
            extra["outcome"] = "no candidate passed"
        if best is not None:  # fewer failures and nothing broken: better than the bug as it stands
            extra["outcome"] += f"; kept the partial fix {best[1].description}"
            yield from self._move(current, best[1].path, best[1].text)
        elif originals:  # put every file back as it was
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
