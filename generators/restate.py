"""Write a task's statement from its failures and its tests' source, checked before it is kept.

:func:`compose` serves generation (failures from the validation run) and :func:`restate_file`, which
rewrites the statements of a registered task file from what the old statements recorded of the first
failure (its message and traceback), so that no test has to run again.

Example (what ``frog-gym tasks --restate`` runs for each task file):
    >>> restate_file(Path("registry/tasks/inflection.jsonl"))  # doctest: +SKIP
    Counter({'rewritten': 62})
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from frog_gym.generators import statements
from frog_gym.generators.statement_check import problems, symbols_of
from frog_gym.generators.testsource import Evidence, evidence_for_test

WRITER = "builtin-v2"
"""``provenance.statement_writer`` of statements written here by the built-in writer."""
_EVIDENCE_TESTS = 8


def compose(spec, tree: Path, failures: list[statements.Failure], crash: bool, n_bugs: int, level: str,  # noqa: ANN001
            fail_to_pass: list[str] | tuple[str, ...], bug_patch: str,
            writer: Callable[[dict], str] | None = None) -> str:
    """The statement at ``level``, passing the checker: the writer's text, else the built-in one, else the
    built-in one with less evidence (no reproduction, then no messages), else a bare package-level one."""
    symbols, pkgs = symbols_of(spec, tree)
    package = sorted(pkgs)[0] if pkgs else spec.name
    if failures and failures[0].longrepr:  # the package the failing call went into, when there are several
        package = next((p for p in sorted(pkgs) if f"/{p}/" in failures[0].longrepr), package)
    evidence = [evidence_for_test(tree, f.test, f.longrepr, symbols, set(pkgs)) for f in failures[:_EVIDENCE_TESTS]]
    if evidence:
        package = next((e.api.split(".")[0] for e in evidence if e.api), package)
    ctx = statements.StatementContext(spec.name, package, failures, evidence, crash, n_bugs)
    tries = [ctx, replace(ctx, evidence=[replace(e, repro="", call="") for e in evidence]),
             replace(ctx, evidence=[replace(e, repro="", call="", expected="") for e in evidence],
                     failures=[replace(f, message="", longrepr="") for f in failures])]
    if writer is not None:
        text = statements.write(ctx, level, writer)
        if not problems(text, fail_to_pass, bug_patch, symbols, set(pkgs)):
            return text
    for c in tries:
        text = statements.write(c, level)
        if not problems(text, fail_to_pass, bug_patch, symbols, set(pkgs)):
            return text
    return statements.vague(replace(ctx, failures=[statements.Failure("", "", "", "")], evidence=[]))


_FIRST = re.compile(r"The first failure reports:\n\n {4}(?P<msg>[^\n]*)")
_TRACE = re.compile(r"Traceback of `(?P<test>[^`]+)` \(trimmed\):\n\n```\n(?P<tb>.*?)\n```", re.S)
_SYMPTOM = re.compile(r"(?:raises|blows up with|fails with|not what it should be:) `(?P<msg>[^`]+)`")


def recorded_failure(record: dict) -> tuple[list[statements.Failure], bool]:
    """The first failure as ``validation.failure`` keeps it or, for older records, as their statement
    recorded it (message and traceback), and whether the bug crashes the import; the other FAIL_TO_PASS
    tests follow without details."""
    text = record["problem_statement"]
    f2p = list(record["FAIL_TO_PASS"])
    kept = record.get("validation", {}).get("failure")
    if kept:
        first = statements.Failure(**kept)
        return [first] + [statements.Failure(t, "", "", "") for t in f2p if t != first.test][: _EVIDENCE_TESTS - 1], \
            bool(record.get("features", {}).get("crash"))
    crash = bool(record.get("features", {}).get("crash")) or "cannot be imported" in text \
        or text.startswith("Importing the package fails")
    msg, tb, test = "", "", f2p[0]
    if m := _FIRST.search(text):
        msg = m.group("msg")
    if m := _TRACE.search(text):
        test, tb = m.group("test"), m.group("tb")
    if not msg and (m := _SYMPTOM.search(text)):
        msg = m.group("msg")
    exc = ""
    if msg:
        head = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt|Failed|Iteration)\w*)\b", msg)
        exc = head.group(1) if head else ("AssertionError" if msg.startswith("assert") else "")
        if msg.startswith("AssertionError"):
            exc = "AssertionError"
    first = statements.Failure(test, exc, msg, tb)
    return [first] + [statements.Failure(t, "", "", "") for t in f2p if t != test][: _EVIDENCE_TESTS - 1], crash


def restate_record(spec, tree: Path, record: dict) -> dict:  # noqa: ANN001
    """The record with its statement rewritten at its own level (nothing else changes but provenance)."""
    failures, crash = recorded_failure(record)
    n_bugs = len(record.get("provenance", {}).get("sites", [])) or 1
    text = compose(spec, tree, failures, crash, n_bugs, record.get("statement_level", "full"),
                   record["FAIL_TO_PASS"], record["bug_patch"])
    prov = dict(record.get("provenance", {}), statement_writer=WRITER)
    return dict(record, problem_statement=text, provenance=prov,
                validation=dict(record.get("validation", {}), failure=kept_failure(failures[0])))


def kept_failure(f: statements.Failure) -> dict:
    """What a task record keeps of its first failure (``validation.failure``), so that its statement can be
    written again without running a test: the message and the last lines of the traceback."""
    tb = f.longrepr.splitlines()
    return {"test": f.test, "exc_type": f.exc_type, "message": f.message[:2000],
            "longrepr": "\n".join(tb[-40:])}


def restate_file(path: Path) -> Counter:
    """Rewrite every statement of one ``<repo>.jsonl`` in place (same order), under the task file's lock."""
    from frog_gym.generators.taskfiles import read_existing, rewrite_task_file
    from frog_gym.catalog.snapshot import snapshot_tree
    from frog_gym.catalog.spec import load_repo

    records = read_existing(path)
    if not records:
        return Counter()
    spec = load_repo(records[0]["repo"])
    tree = snapshot_tree(spec)
    return rewrite_task_file(path, lambda d: restate_record(spec, tree, d))


__all__ = ["Evidence", "WRITER", "compose", "recorded_failure", "restate_file", "restate_record"]
