"""Grading, the way SWE-bench grades: run FAIL_TO_PASS ∪ PASS_TO_PASS in a fresh copy, trust no stdout.

``grade`` takes the agent's changes, keeps only edits to the package's own source (test files, pytest
configuration and interpreter start-up hooks stay pristine: :func:`frog_gym.grading.integrity.out_of_scope`),
scans what they add for tampering, writes them into a fresh copy of the task's starting tree, appends
canary tests, and runs exactly the selected tests in a new sandbox where the test files are read-only. A
plugin writes a report signed with a per-run key into a folder the agent never sees; the report is
verified, cross-checked with pytest's exit code and the canaries, and becomes a :class:`GradeReport`. A
caught forgery scores 0 with its reasons in ``tampering``. A sandbox that fails to start is an
infrastructure failure, never the agent's failure; a test run that outlives the grading timeout is the
agent's (its code runs there). Identical changes reuse the cached grade (keyed by the grading version).
By default the test run happens in the repository's warm grading server (:mod:`frog_gym.grading.server`:
the same command line, every layer kept, a clean forked child per grade), and cold where none can start.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import json
import os
import random
import secrets
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from frog_gym import paths
from frog_gym.catalog.snapshot import PreparedRepo, venv_key
from frog_gym.catalog.task import Task
from frog_gym.grading import impact, oracle
from frog_gym.grading.integrity import GRADING_VERSION, Canaries, grading_code_digest, out_of_scope, scan
from frog_gym.grading.runner import (
    GRADING_PYTEST_ARGS,
    RunResult,
    TestStatus,
    _pristine,
    guard_for,
    hidden_test_changes,
    patch_files,
    run_tests,
    test_files_of,
    write_test_log,
)
from frog_gym.sandbox.workspace import Change, Template, Workspace, append_file, write_changes


class ResolvedStatus(str, enum.Enum):
    """FULL: every FAIL_TO_PASS and PASS_TO_PASS test passes. PARTIAL: some but not all FAIL_TO_PASS pass
    and every PASS_TO_PASS passes. NO: anything else."""

    FULL = "RESOLVED_FULL"
    PARTIAL = "RESOLVED_PARTIAL"
    NO = "RESOLVED_NO"


@dataclass
class GradeReport:
    """The result of grading one final state."""

    resolved: ResolvedStatus
    tests: dict[str, str]
    fail_to_pass: dict[str, list[str]]
    pass_to_pass: dict[str, list[str]]
    exit_code: int | None
    seconds: float
    discarded_test_edits: list[str] = field(default_factory=list)
    infra_failure: str | None = None
    note: str = ""
    cached: bool = False
    discarded: dict[str, str] = field(default_factory=dict)
    tampering: list[str] = field(default_factory=list)
    log_path: str = ""
    """The raw test log of this grade (see :func:`write_test_log`), under ``$FROG_GYM_HOME/grades``."""
    inferred: list[str] = field(default_factory=list)
    """PASS_TO_PASS tests not run because they reach nothing the changes touch (:mod:`frog_gym.grading.impact`);
    their status in ``tests`` is the one they had on the repository's own tree."""
    oracle: dict[str, Any] | None = None
    """The behavioural oracle's verdict (:class:`frog_gym.grading.oracle.OracleVerdict`: ``calls``, ``matched``,
    ``passed``, ``mismatch``); None where the task has none."""

    @property
    def is_resolved(self) -> bool:
        """Every selected test passes, nothing was caught tampering, and the oracle (if any) agrees."""
        return (self.resolved is ResolvedStatus.FULL and not self.tampering
                and (self.oracle is None or bool(self.oracle.get("passed"))))

    def reward(self, partial_credit: bool = False) -> float:
        """1.0 when resolved, else 0.0; with ``partial_credit``, the pass rate of FAIL_TO_PASS times that of
        PASS_TO_PASS (so breaking other tests still costs)."""
        if self.tampering:
            return 0.0
        if not partial_credit:
            return 1.0 if self.is_resolved else 0.0

        def rate(d: dict[str, list[str]]) -> float:
            n = len(d["success"]) + len(d["failure"])
            return len(d["success"]) / n if n else 1.0

        agree = self.oracle["matched"] / self.oracle["calls"] if self.oracle and self.oracle["calls"] else 1.0
        return rate(self.fail_to_pass) * rate(self.pass_to_pass) * agree

    def to_dict(self) -> dict[str, Any]:
        """What ``dataclasses.asdict`` gives (every container a new one), without its deep copy of each string: a
        report holds thousands of test ids, and each grade turns its report into a dictionary twice."""
        d = {f.name: _copied(getattr(self, f.name)) for f in fields(self)}
        d["resolved"] = self.resolved.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GradeReport:
        known = {f.name for f in fields(cls)}  # a grade cached by another version may carry more
        d = {k: v for k, v in d.items() if k in known}
        d["resolved"] = ResolvedStatus(d["resolved"])
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


_ATOMS = (str, int, float, bool, type(None))


def _copied(x: Any) -> Any:
    """``x`` with each dictionary, list and tuple in it a new one (as ``dataclasses.asdict`` copies a field's value);
    a string, number or None is itself, anything else a deep copy."""
    t = type(x)
    if t in _ATOMS:
        return x
    if t is dict:
        return {_copied(k): _copied(v) for k, v in x.items()}
    if t is list or t is tuple:
        return t(_copied(v) for v in x)
    return copy.deepcopy(x)


def _split(ids: tuple[str, ...], statuses: dict[str, TestStatus]) -> dict[str, list[str]]:
    return {"success": [t for t in ids if statuses[t].ok], "failure": [t for t in ids if not statuses[t].ok]}


def judge(task: Task, statuses: dict[str, TestStatus]) -> tuple[ResolvedStatus, dict, dict]:
    """SWE-bench's resolution rule over per-test statuses."""
    f2p, p2p = _split(task.FAIL_TO_PASS, statuses), _split(task.PASS_TO_PASS, statuses)
    f2p_all = not f2p["failure"]
    p2p_all = not p2p["failure"]
    if f2p_all and p2p_all:
        return ResolvedStatus.FULL, f2p, p2p
    if p2p_all and f2p["success"]:
        return ResolvedStatus.PARTIAL, f2p, p2p
    return ResolvedStatus.NO, f2p, p2p


def scope(repo: PreparedRepo, task: Task, template: Template, changes: list[Change]
          ) -> tuple[list[Change], dict[str, str]]:
    """Split ``changes`` into those graded and those reset to the pristine tree (path -> why)."""
    spec = repo.spec
    gold, hidden = patch_files(task.patch), patch_files(task.test_patch)
    kept, discarded = [], {}
    for c in changes:
        why = ("a test file" if c.path in hidden else
               out_of_scope(c.path, spec.mutable, gold, spec.install.import_paths, spec.tests.is_test_file,
                            lambda p: p in template.manifest))
        if why is None:
            kept.append(c)
        else:
            discarded[c.path] = why
    return kept, dict(sorted(discarded.items()))


def grade(repo: PreparedRepo, task: Task, template: Template, changes: list[Change], scratch: Workspace,
          timeout: float = 900.0, use_cache: bool = True, backend: str = "local",
          rng: random.Random | None = None, unread: dict[str, str] | None = None,
          warm: bool | None = None, impact_selection: bool | None = None) -> GradeReport:
    """Grade the agent's ``changes`` to ``task`` (see the module docstring). ``scratch`` is reused.

    ``warm`` (default: on unless ``FROG_GYM_GRADE_SERVER=0``) runs the tests in the repository's warm
    grading server (:mod:`frog_gym.grading.server`), with every layer kept; where none can start, or it
    can't vouch for a run, the grade runs cold in ``scratch``.

    ``impact_selection`` (default: on unless ``FROG_GYM_IMPACT=0``) runs only the PASS_TO_PASS tests the changes
    can reach and carries the others over (:mod:`frog_gym.grading.impact`); off, every selected test runs.

    ``rng`` draws the canaries' names and values (default: fresh system randomness, so no agent can
    predict them); ``unread`` lists changed files that were too large to collect (path -> why)."""
    if warm is None:
        from frog_gym.grading.server import enabled

        warm = enabled()
    if impact_selection is None:
        impact_selection = impact.enabled()
    kept, discarded = scope(repo, task, template, changes)
    discarded = dict(sorted({**discarded, **(unread or {})}.items()))
    tests_discarded = sorted(p for p, why in discarded.items() if why == "a test file")
    oracle_calls = oracle.calls_of(task)
    h = hashlib.sha256(f"v{GRADING_VERSION}-{grading_code_digest()}\0{task.content_hash}\0{venv_key(repo.spec)}"
                       f"\0{backend}\0{hashlib.sha256(task.test_patch.encode()).hexdigest()}"
                       f"\0{oracle.calls_digest(oracle_calls)}\0impact={impact_selection}".encode())
    for c in sorted(kept, key=lambda c: c.path):
        h.update(f"\0{c.path}\0".encode())
        h.update(hashlib.sha256(c.new).digest() if c.new is not None else b"<deleted>")
    cache = paths.home() / "grades" / f"{h.hexdigest()[:32]}.json"
    if use_cache and cache.exists() and cache.with_suffix(".log").exists():  # a grade keeps its raw log
        report = GradeReport.from_dict(json.loads(cache.read_text()))
        report.cached, report.discarded_test_edits, report.discarded = True, tests_discarded, discarded
        report.log_path = str(cache.with_suffix(".log"))  # the log of the grade this cache entry records
        return report
    start = time.monotonic()
    f2p_fail = {"success": [], "failure": list(task.FAIL_TO_PASS)}
    p2p_fail = {"success": [], "failure": list(task.PASS_TO_PASS)}
    flags = scan((c.path, c.old, c.new, _pristine(repo, task, template, c.path)) for c in kept)
    if flags:
        report = GradeReport(ResolvedStatus.NO, {}, f2p_fail, p2p_fail, None, time.monotonic() - start,
                             tests_discarded, None, "the changes were not run: " + "; ".join(flags[:3]),
                             discarded=discarded, tampering=flags)
        report.log_path = write_test_log(cache.with_suffix(".log"), task.selected_tests,
                                         RunResult({}, None, report.note, tampering=flags))
        _store(cache, report)
        return report
    hidden = hidden_test_changes(task, template)
    if isinstance(hidden, str):
        return GradeReport(ResolvedStatus.NO, {}, f2p_fail, p2p_fail, None, time.monotonic() - start,
                           tests_discarded, f"the hidden tests did not apply: {hidden[:300]}", discarded=discarded)
    # The behavioural oracle replays in a sandbox of its own (the package only), alongside the test run.
    replaying = oracle.start_check(repo, task, template, kept, oracle_calls, backend,
                                   min(timeout, oracle.REPLAY_TIMEOUT))
    selection = impact.select(repo, task, template, kept) if impact_selection else None
    run_ids = selection.run if selection is not None else task.selected_tests
    kept = kept + hidden
    rng = rng or random.Random(secrets.randbits(64))
    target = test_files_of(task.FAIL_TO_PASS)[0]
    names = {t.rsplit("::", 1)[-1] for t in task.selected_tests}
    canaries = Canaries.make(target, rng, names)
    r = _run_warm(repo, template, kept, task, run_ids, canaries, timeout) if warm and backend == "local" else None
    if r is None:
        scratch.sync(template)
        write_changes(scratch.path, kept)
        append_file(scratch.path, target, canaries.source.encode())
        r = run_tests(repo, scratch.path, run_ids, timeout, backend=backend, canaries=canaries,
                      authenticate=True, protect=repo.spec.tests.paths, args=GRADING_PYTEST_ARGS,
                      guard=guard_for(repo, task, canaries, template, kept))
    verdict = replaying.result() if replaying is not None else None
    if verdict is not None and not verdict.passed:
        r.note = "; ".join(filter(None, [r.note, f"the behavioural oracle disagrees: {verdict.mismatch}"]))
    carried = {t: TestStatus(s) for t, s in selection.inferred.items()} if selection is not None else {}
    statuses = {**r.statuses, **carried}
    if carried and not (r.infra_failure or r.tampering):
        # The log reads as SWE-bench reads one: a status for every selected test, the carried-over ones listed
        # after the results as not run.
        log_path = write_test_log(cache.with_suffix(".log"), task.selected_tests, replace(r, statuses=statuses),
                                  inferred=tuple(carried))
    else:
        log_path = write_test_log(cache.with_suffix(".log"), run_ids, r)
    if r.infra_failure:
        return GradeReport(ResolvedStatus.NO, {}, f2p_fail, p2p_fail, r.exit_code, time.monotonic() - start,
                           tests_discarded, r.infra_failure, r.note, discarded=discarded, log_path=log_path)
    if r.tampering:
        report = GradeReport(ResolvedStatus.NO, {}, f2p_fail, p2p_fail, r.exit_code, time.monotonic() - start,
                             tests_discarded, None, r.note, discarded=discarded, tampering=r.tampering,
                             log_path=log_path)
        _store(cache, report)
        return report
    resolved, f2p, p2p = judge(task, statuses)
    if verdict is not None and not verdict.passed and resolved is ResolvedStatus.FULL:
        # The tests passed in a process that ran the agent's code; the oracle's replay, compared on the host,
        # says the code does not behave as the gold fix does: not resolved (r.note says why). A partial fix stays
        # partial (the oracle is expected to disagree with it; it is not resolved either way).
        resolved = ResolvedStatus.NO
    report = GradeReport(resolved, {t: s.value for t, s in statuses.items()}, f2p, p2p, r.exit_code,
                         time.monotonic() - start, tests_discarded, None, r.note, discarded=discarded,
                         log_path=log_path, oracle=verdict.to_dict() if verdict is not None else None,
                         inferred=sorted(carried))
    _store(cache, report)
    return report


def _run_warm(repo: PreparedRepo, template: Template, kept: list[Change], task: Task, ids: tuple[str, ...],
              canaries: Canaries, timeout: float) -> RunResult | None:
    """The test run of a grade in the repository's warm server; None: grade cold instead."""
    from frog_gym.grading import server as grading_server

    server = grading_server.server_for(repo, template)
    if server is None:
        return None
    with server.lock:
        try:
            return server.run(template, kept, ids, canaries, timeout,
                              guard_for(repo, task, canaries, template, kept))
        except grading_server.Unavailable:
            grading_server.discard(server)
            return None


def _store(cache: Path, report: GradeReport) -> None:
    cache.parent.mkdir(exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report.to_dict()))
    os.replace(tmp, cache)
