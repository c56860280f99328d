"""Grading, the way SWE-bench grades: run FAIL_TO_PASS ∪ PASS_TO_PASS in a fresh copy, trust no stdout.

``grade`` takes the agent's changes, discards edits to test files, writes the rest into a fresh copy of
the task's starting tree, runs exactly the selected tests in a new sandbox with a plugin that writes a
report into a folder the agent never sees, cross-checks the report against pytest's exit code, and
returns a :class:`GradeReport`. A sandbox fault or a grading timeout is an infrastructure failure, never
the agent's failure. Identical changes reuse the cached grade.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from frog_gym import paths
from frog_gym.sandbox.base import Limits
from frog_gym.sandbox import make_sandbox
from frog_gym.snapshot import PreparedRepo, venv_key
from frog_gym.task import Task
from frog_gym.workspace import Change, Template, Workspace, write_changes


class TestStatus(str, enum.Enum):
    """A test's outcome in one run (SWE-bench's statuses, plus MISSING: selected but never reported)."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    ERROR = "ERROR"
    XFAIL = "XFAIL"
    MISSING = "MISSING"

    @property
    def ok(self) -> bool:
        """SWE-bench counts PASSED and XFAIL as passing."""
        return self in (TestStatus.PASSED, TestStatus.XFAIL)


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

    @property
    def is_resolved(self) -> bool:
        return self.resolved is ResolvedStatus.FULL

    def reward(self, partial_credit: bool = False) -> float:
        """1.0 when resolved, else 0.0; with ``partial_credit``, the pass rate of FAIL_TO_PASS times that of
        PASS_TO_PASS (so breaking other tests still costs)."""
        if not partial_credit:
            return 1.0 if self.is_resolved else 0.0

        def rate(d: dict[str, list[str]]) -> float:
            n = len(d["success"]) + len(d["failure"])
            return len(d["success"]) / n if n else 1.0

        return rate(self.fail_to_pass) * rate(self.pass_to_pass)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["resolved"] = self.resolved.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GradeReport:
        known = {f.name for f in fields(cls)}  # a grade cached by another version may carry more
        d = {k: v for k, v in d.items() if k in known}
        d["resolved"] = ResolvedStatus(d["resolved"])
        return cls(**d)


def _plugin_dir() -> Any:
    return resources.files("frog_gym").joinpath("_plugin")


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


def test_files_of(ids: tuple[str, ...]) -> list[str]:
    """The test files that hold the given pytest node ids, in first-seen order."""
    return list(dict.fromkeys(t.split("::", 1)[0] for t in ids))


@dataclass
class RunResult:
    """One pytest run of selected tests: statuses from the report file, plus what the report held."""

    statuses: dict[str, TestStatus]
    exit_code: int | None
    note: str = ""
    infra_failure: str | None = None
    details: dict[str, dict[str, str]] = field(default_factory=dict)
    collect_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    passes: list[dict[str, TestStatus]] = field(default_factory=list)
    cpu_seconds: float = 0.0


def run_selected(repo: PreparedRepo, tree: Path, ids: tuple[str, ...] | None, timeout: float,
                 limits: Limits | None = None, backend: str = "local"
                 ) -> tuple[dict[str, TestStatus], int | None, str, str | None]:
    """Run exactly ``ids`` (None: the repository's whole suite) on ``tree`` in a fresh sandbox.

    Returns ``(statuses, exit_code, note, infra_failure)``. Statuses come from the report file alone,
    cross-checked with the exit code; a report that disagrees with the exit code is not trusted.
    """
    r = run_tests(repo, tree, ids, timeout, limits, backend=backend)
    return r.statuses, r.exit_code, r.note, r.infra_failure


def run_tests(repo: PreparedRepo, tree: Path, ids: tuple[str, ...] | None, timeout: float,
              limits: Limits | None = None, backend: str = "local", *, details: bool = False,
              env: dict[str, str] | None = None, binds: tuple[tuple[Path, str, bool], ...] = (),
              out_dir: Path | None = None, plugins: tuple[str, ...] = (), args: tuple[str, ...] = (),
              repeat: int = 1) -> RunResult:
    """:func:`run_selected` with more in and out: failure ``details`` (the report plugin's "details" key),
    extra sandbox ``env`` (a ``PYTHONPATH`` there is appended to the plugin's) and ``binds``, ``out_dir`` (a
    host folder mounted writable at ``/frog/out`` that the caller keeps: the coverage map reads its data
    there), more pytest ``plugins`` loaded with ``-p``, and more pytest ``args`` (after the spec's, so that
    e.g. ``--timeout=15`` overrides the spec's per-test timeout), and ``repeat``: run each test that many
    times in the one session (``RunResult.passes`` then holds one status map per pass).
    """
    start = time.monotonic()
    with tempfile.TemporaryDirectory(dir=paths.home()) as io_dir, resources.as_file(_plugin_dir()) as plugin:
        io = Path(io_dir)
        (io / "in").mkdir()
        out = out_dir or io / "out"
        out.mkdir(exist_ok=True)
        (out / "report.json").unlink(missing_ok=True)
        extra = dict(env or {})
        run_env = {"PYTHONPATH": ":".join(["/frog/plugin", *filter(None, [extra.pop("PYTHONPATH", "")])]),
                   "FROG_REPORT": "/frog/out/report.json", **extra}
        if details:
            run_env["FROG_DETAILS"] = "1"
        if repeat > 1:
            run_env["FROG_REPEAT"] = str(repeat)
        if ids is not None:
            (io / "in" / "select.json").write_text(json.dumps(list(ids)))
            run_env["FROG_SELECT"] = "/frog/in/select.json"
        limits = limits or Limits(command_timeout=timeout, output_cap=8192)
        sb = make_sandbox(backend, repo, tree, limits,
                          binds=((io / "in", "/frog/in", False), (out, "/frog/out", True),
                                 (Path(plugin), "/frog/plugin", False), *binds))
        argv = [str(repo.python), "-m", "pytest", *repo.spec.pytest_args, "-q", "-p", "frog_report",
                *(a for p in plugins for a in ("-p", p)), *args,
                *(test_files_of(ids) if ids is not None else repo.spec.tests.paths)]
        result = sb.exec(argv, timeout, env=run_env)
        sb.close()
        if result.timed_out:
            return RunResult({}, None, result.output[-2000:], f"grading timed out after {timeout:.0f} s",
                             seconds=time.monotonic() - start)
        if result.output.startswith("bwrap:"):
            return RunResult({}, result.exit_code, result.output[-2000:], f"sandbox failed: {result.output[:300]}",
                             seconds=time.monotonic() - start)
        return read_report(out / "report.json", ids, result.exit_code, result.output, time.monotonic() - start)


def read_report(path: Path, ids: tuple[str, ...] | None, exit_code: int | None, output: str,
                seconds: float = 0.0) -> RunResult:
    """Statuses from the plugin's report file, cross-checked with pytest's exit code (see :func:`run_selected`)."""
    statuses = {t: TestStatus.MISSING for t in ids or ()}
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        note = f"pytest wrote no report (exit code {exit_code}); every selected test counts as failed"
        return RunResult(statuses, exit_code, note + "\n" + output[-2000:], seconds=seconds)
    if report.get("exitstatus") != exit_code:
        note = (f"the report says exit status {report.get('exitstatus')} but pytest exited with "
                f"{exit_code}; the report is not trusted")
        return RunResult(statuses, exit_code, note, seconds=seconds)

    def parse(tests: dict[str, str]) -> dict[str, TestStatus]:
        out = dict.fromkeys(ids or (), TestStatus.MISSING)
        for t, s in tests.items():
            if ids is None or t in out:
                out[t] = TestStatus(s) if s in TestStatus.__members__ else TestStatus.ERROR
        return out

    statuses = parse(report.get("tests", {}))
    passes = [parse(p) for p in report.get("passes", [])]
    note = ""
    if all(s.ok for p in (passes or [statuses]) for s in p.values()) and exit_code != 0:
        note = f"every selected test passed but pytest exited with {exit_code}; not trusted"
        statuses = {t: TestStatus.FAILED for t in statuses}
        passes = [statuses for _ in passes]
    return RunResult(statuses, exit_code, note, None, report.get("details", {}), report.get("collect_errors", []),
                     seconds, passes, float(report.get("cpu_seconds", 0.0)))


def grade(repo: PreparedRepo, task: Task, template: Template, changes: list[Change], scratch: Workspace,
          timeout: float = 900.0, use_cache: bool = True, backend: str = "local") -> GradeReport:
    """Grade the agent's ``changes`` to ``task`` (see the module docstring). ``scratch`` is reused."""
    kept = [c for c in changes if not repo.spec.tests.is_test_file(c.path)]
    discarded = sorted(c.path for c in changes if repo.spec.tests.is_test_file(c.path))
    h = hashlib.sha256(f"{task.content_hash}\0{venv_key(repo.spec)}\0{backend}".encode())
    for c in sorted(kept, key=lambda c: c.path):
        h.update(f"\0{c.path}\0".encode())
        h.update(hashlib.sha256(c.new).digest() if c.new is not None else b"<deleted>")
    cache = paths.home() / "grades" / f"{h.hexdigest()[:32]}.json"
    if use_cache and cache.exists():
        report = GradeReport.from_dict(json.loads(cache.read_text()))
        report.cached, report.discarded_test_edits = True, discarded
        return report
    start = time.monotonic()
    scratch.sync(template)
    write_changes(scratch.path, kept)
    statuses, code, note, infra = run_selected(repo, scratch.path, task.selected_tests, timeout, backend=backend)
    if infra:
        return GradeReport(ResolvedStatus.NO, {}, {"success": [], "failure": list(task.FAIL_TO_PASS)},
                           {"success": [], "failure": list(task.PASS_TO_PASS)}, code, time.monotonic() - start,
                           discarded, infra, note)
    resolved, f2p, p2p = judge(task, statuses)
    report = GradeReport(resolved, {t: s.value for t, s in statuses.items()}, f2p, p2p, code,
                         time.monotonic() - start, discarded, None, note)
    cache.parent.mkdir(exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report.to_dict()))
    os.replace(tmp, cache)
    return report
