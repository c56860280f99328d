"""Validating a candidate bug by running the repository's tests: the rule every task must pass.

A candidate is kept only if (a) at least one test fails with it, (b) its failures repeat over every run
(tests whose result varies are recorded as flaky and left out of FAIL_TO_PASS and PASS_TO_PASS), (c) the
reverse patch (the gold fix) makes every selected test pass, and (d) PASS_TO_PASS is not empty.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from frog_gym import paths
from frog_gym.grading import TestStatus, run_selected, test_files_of
from frog_gym.snapshot import PreparedRepo, venv_key
from frog_gym.workspace import Change, Workspace, diff_text, template_for, write_changes


@dataclass(frozen=True)
class Edit:
    """Replace the single occurrence of ``old`` by ``new`` in ``path`` (relative to the repository root)."""

    path: str
    old: str
    new: str


@dataclass
class Validation:
    """What validating one candidate found. ``ok`` False carries the ``reason``."""

    ok: bool
    reason: str = ""
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0
    failure_output: str = ""


def bug_changes(repo: PreparedRepo, edits: list[Edit]) -> list[Change]:
    """The pristine -> buggy changes of ``edits`` (each ``old`` must occur exactly once)."""
    by_path: dict[str, str] = {}
    for e in edits:
        text = by_path.get(e.path) or (repo.tree / e.path).read_text(encoding="utf-8")
        n = text.count(e.old)
        if n != 1:
            raise ValueError(f"{repo.spec.name}:{e.path}: the edit's old text occurs {n} times; it must occur once")
        by_path[e.path] = text.replace(e.old, e.new)
    return [Change(p, (repo.tree / p).read_bytes(), t.encode()) for p, t in sorted(by_path.items())]


def patches(changes: list[Change]) -> tuple[str, str]:
    """``(bug_patch, gold_patch)``: the changes as a diff, and its reverse."""
    return diff_text(changes), diff_text([Change(c.path, c.new, c.old) for c in changes])


def baseline(repo: PreparedRepo, timeout: float = 600) -> dict[str, str]:
    """Per-test statuses of the pristine tree, run once per venv and cached."""
    cache = paths.home() / "baselines" / f"{repo.spec.name}-{venv_key(repo.spec)}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    with Scratch() as ws:
        shutil.rmtree(ws.path, ignore_errors=True)
        shutil.copytree(repo.tree, ws.path, symlinks=True)
        statuses, code, note, infra = run_selected(repo, ws.path, None, timeout)
    if infra or not statuses:
        raise RuntimeError(f"the baseline run of '{repo.spec.name}' failed: {infra or note}")
    out = {t: s.value for t, s in sorted(statuses.items())}
    cache.parent.mkdir(exist_ok=True)
    cache.write_text(json.dumps(out))
    return out


class Scratch:
    """A throwaway workspace under $FROG_GYM_HOME/work, removed on exit."""

    def __init__(self) -> None:
        self.root = paths.home() / "work" / f"v-{uuid.uuid4().hex[:12]}"
        self.ws = Workspace(self.root / "ws")

    def __enter__(self) -> Workspace:
        return self.ws

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def validate(repo: PreparedRepo, changes: list[Change], *, candidates: list[str] | None = None, runs: int = 3,
             max_fail_to_pass: int | None = None, min_pass_to_pass: int = 5, timeout: float = 600) -> Validation:
    """Validate a bug (``changes`` from pristine to buggy) against the candidate tests.

    Args:
        candidates: tests to run (default: every test that passes on the pristine tree). Coverage
            targeting passes only the tests that execute the mutated lines.
        runs: how many times the buggy tree is tested; results must agree.
        max_fail_to_pass: refuse bugs that break more tests than this (too easy to localize).
        min_pass_to_pass: below this many passing candidates, PASS_TO_PASS also takes the other tests of
            the failing tests' files (each checked to pass with the bug).
    """
    start = time.monotonic()
    base = baseline(repo)
    flaky_known = set(repo.spec.measured.get("flaky", []))
    passing = [t for t, s in base.items() if TestStatus(s).ok and t not in flaky_known]
    ids = [t for t in (candidates if candidates is not None else passing) if t in set(passing)]
    if not ids:
        return Validation(False, "no passing test covers the site", seconds=time.monotonic() - start)
    bug_patch, _ = patches(changes)
    template = template_for(repo, bug_patch, f"a candidate bug of {repo.spec.name}")
    results: list[dict[str, TestStatus]] = []
    output = ""
    with Scratch() as ws:
        for i in range(runs):
            ws.sync(template)
            statuses, code, note, infra = run_selected(repo, ws.path, tuple(ids), timeout)
            if infra:
                return Validation(False, f"infrastructure failure: {infra}", runs=i + 1,
                                  seconds=time.monotonic() - start)
            results.append(statuses)
            output = output or note
            if i == 0 and all(s.ok for s in statuses.values()):
                return Validation(False, "no test fails with the bug", runs=1, seconds=time.monotonic() - start)
        flaky = sorted(t for t in ids if len({r[t].ok for r in results}) > 1)
        f2p = [t for t in ids if t not in flaky and not results[0][t].ok]
        if not f2p:
            return Validation(False, "the failures do not repeat across runs", flaky=flaky, runs=runs,
                              seconds=time.monotonic() - start)
        if max_fail_to_pass is not None and len(f2p) > max_fail_to_pass:
            return Validation(False, f"the bug breaks {len(f2p)} tests (limit {max_fail_to_pass})",
                              runs=runs, seconds=time.monotonic() - start)
        p2p = [t for t in ids if t not in flaky and t not in f2p]
        if len(p2p) < min_pass_to_pass:  # widen to the other tests of the failing tests' files, checked on the bug
            files = set(test_files_of(tuple(f2p)))
            extra = tuple(t for t in passing if t.split("::", 1)[0] in files and t not in set(ids))
            if extra:
                ws.sync(template)
                statuses, code, note, infra = run_selected(repo, ws.path, extra, timeout)
                p2p += [t for t in extra if not infra and statuses[t].ok]
        if not p2p:
            return Validation(False, "PASS_TO_PASS would be empty", fail_to_pass=f2p, flaky=flaky, runs=runs,
                              seconds=time.monotonic() - start)
        ws.sync(template)
        write_changes(ws.path, [Change(c.path, c.new, c.old) for c in changes])
        statuses, code, note, infra = run_selected(repo, ws.path, tuple(f2p + p2p), timeout)
        if infra or not all(s.ok for s in statuses.values()):
            bad = [t for t, s in statuses.items() if not s.ok][:5]
            return Validation(False, f"the gold fix does not pass every selected test ({infra or bad})",
                              fail_to_pass=f2p, runs=runs, seconds=time.monotonic() - start)
    return Validation(True, "", f2p, p2p, flaky, runs, time.monotonic() - start, output)
