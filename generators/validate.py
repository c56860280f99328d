"""Validating a candidate bug by running the repository's tests: the rule every task must pass.

A candidate is kept only if (a) at least one test fails with it, (b) its failures repeat over every run
(tests whose result varies are recorded as flaky and left out of FAIL_TO_PASS and PASS_TO_PASS), (c) the
reverse patch (the gold fix) makes every selected test pass, (d) PASS_TO_PASS is not empty, and (e) it
breaks no more than ``max_fail_to_pass`` tests, unless it is an import crash (its own, recorded class).

Candidates are tested in one reusable workspace that is synced back to the pristine tree before every
run (a stat scan and a few copies), never in a fresh template per candidate.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from frog_gym import paths
from frog_gym.grading.runner import RunResult, TestStatus, run_tests, test_files_of
from frog_gym.catalog.snapshot import PreparedRepo, venv_key
from frog_gym.catalog.spec import RepoSpec
from frog_gym.grading.integrity import GRADING_VERSION
from frog_gym.catalog.task import Task
from frog_gym.sandbox.workspace import Change, Template, Workspace, _manifest, diff_text, write_changes


@dataclass(frozen=True)
class Edit:
    """Replace the single occurrence of ``old`` by ``new`` in ``path`` (relative to the repository root)."""

    path: str
    old: str
    new: str


@dataclass
class Validation:
    """What validating one candidate found. ``ok`` False carries the ``reason``.

    ``crash`` marks a bug that breaks the import of the code under test (pytest reports collection errors
    and every failing test is one that never ran): such bugs are easy and form their own class. ``details`` holds, per
    failing test of the first run, the exception type, message and trimmed failure text (with
    ``details=True``); ``signature`` is the failing tests and exception types, for deduplication.
    """

    ok: bool
    reason: str = ""
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0
    failure_output: str = ""
    crash: bool = False
    details: dict[str, dict[str, str]] = field(default_factory=dict)
    test_runs: int = 0
    cpu_seconds: float = 0.0

    @property
    def signature(self) -> str:
        """A digest of the failing tests and their exception types (equal bugs have equal signatures)."""
        blob = json.dumps([sorted(self.fail_to_pass),
                           sorted({d.get("exc_type", "") for d in self.details.values()})])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


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


def baseline_path(spec: RepoSpec) -> Path:
    """Where the pristine tree's per-test statuses are cached (run as graded: the tests read-only and guarded),
    per version of grading's rules: a new rule (the guard refusing what it allowed) measures them anew."""
    return paths.home() / "baselines" / f"{spec.name}-{venv_key(spec)}-graded-v{GRADING_VERSION}.json"


_INSTALLED = re.compile(r"/(?:site|dist)-packages/|/venvs/[\w.-]+-[0-9a-f]{16}/")


def names_this_machine(test_id: str, repo: PreparedRepo | None = None) -> bool:
    """Whether a test id holds a path of the machine that collected it: a test parametrized by
    ``pytest.__file__`` is named after the venv's path, which moves with ``$FROG_GYM_HOME``, so on another
    machine (or under another home) the same test has another id and grading finds the recorded one MISSING.
    Such tests never enter a task (:func:`baseline` leaves them out)."""
    here = [str(paths.home())] + ([str(repo.venv), str(repo.venv.resolve())] if repo is not None else [])
    return bool(_INSTALLED.search(test_id)) or any(p in test_id for p in here)


def baseline(repo: PreparedRepo, timeout: float = 600) -> dict[str, str]:
    """Per-test statuses of the pristine tree, run once per venv and cached, as grading runs
    tests: with the spec's test paths mounted read-only (a test that writes into its own folder fails there,
    so it can never be a task's FAIL_TO_PASS or PASS_TO_PASS test), and with every test file guarded from the
    package's code (a test that makes the package open a test file, e.g. as a default file argument, would trip
    grading's guard: it fails here)."""
    cache = baseline_path(repo.spec)
    if cache.exists():
        return {t: s for t, s in json.loads(cache.read_text()).items() if not names_this_machine(t, repo)}
    with Scratch() as ws:
        shutil.rmtree(ws.path, ignore_errors=True)
        shutil.copytree(repo.tree, ws.path, symlinks=True)
        spec = repo.spec
        files = sorted(str(p.relative_to(ws.path)) for t in spec.tests.paths if (ws.path / t).exists()
                       for p in ([ws.path / t] if (ws.path / t).is_file() else (ws.path / t).rglob("*.py"))
                       if p.name.startswith("test") or p.name.endswith("_test.py"))
        guard = {"files": files, "code": sorted(spec.mutable), "tests": sorted(spec.tests.paths)}
        r = run_tests(repo, ws.path, None, timeout, protect=spec.tests.paths, guard=guard)
    if r.infra_failure or not r.statuses:
        raise RuntimeError(f"the baseline run of '{repo.spec.name}' failed: {r.infra_failure or r.note}")
    out = {t: s.value for t, s in sorted(r.statuses.items()) if not names_this_machine(t, repo)}
    cache.parent.mkdir(exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, cache)
    return out


def drop_ungradable(path: Path) -> Counter:
    """Rewrite a task file so that every task's tests pass on the pristine tree as grading runs them
    (:func:`baseline`): PASS_TO_PASS tests that don't are dropped from the task, and a task whose
    FAIL_TO_PASS holds one is dropped. Returns the counts of :func:`rewrite_task_file` plus ``tests dropped``."""
    from frog_gym.generators.taskfiles import rewrite_task_file
    from frog_gym.catalog.live import is_live, task_spec
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.catalog.task import Task

    dropped: Counter = Counter()
    ok: dict[str, set[str]] = {}

    def passing(task: Task) -> set[str]:
        repo = prepare(task_spec(task))
        key = f"{repo.spec.name}-{repo.spec.source.key}"
        if key not in ok:
            ok[key] = {t for t, s in baseline(repo).items() if TestStatus(s).ok}
        return ok[key]

    def fix(d: dict) -> dict | None:
        task = Task.from_dict(d, str(path))
        if is_live(task.instance_id):  # graded by grade() itself when mined
            return d
        good = passing(task)
        if not set(task.FAIL_TO_PASS) <= good:
            return None
        keep = [t for t in d["PASS_TO_PASS"] if t in good]
        dropped["tests dropped"] += len(d["PASS_TO_PASS"]) - len(keep)
        if len(keep) == len(d["PASS_TO_PASS"]):
            return d
        if "features" in d:
            d = {**d, "features": {**d["features"], "pass_to_pass": len(keep)}}
        return {**d, "PASS_TO_PASS": keep}

    counts = rewrite_task_file(path, fix)
    return counts + dropped


_TEMPLATES: dict[str, Template] = {}


def pristine_template(repo: PreparedRepo) -> Template:
    """The snapshot itself as a :class:`Template` (its manifest computed once per process)."""
    key = str(repo.tree)
    if key not in _TEMPLATES:
        _TEMPLATES[key] = Template(repo.tree, _manifest(repo.tree))
    return _TEMPLATES[key]


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
             max_fail_to_pass: int | None = None, min_pass_to_pass: int = 5, timeout: float = 600,
             base: Template | None = None, workspace: Workspace | None = None, details: bool = False,
             gold_cache: dict[tuple[str, ...], bool] | None = None, test_args: tuple[str, ...] = (),
             runner: Callable[..., RunResult] | None = None, max_run_seconds: float | None = None) -> Validation:
    """Validate a bug (``changes`` from pristine to buggy) against the candidate tests.

    Args:
        candidates: tests to run (default: every test that passes on the pristine tree). Coverage
            targeting passes only the tests that execute the mutated lines.
        runs: how many times the buggy tree is tested; results must agree.
        max_fail_to_pass: refuse bugs that break more tests than this (too easy to localize); checked
            after the first run, so such bugs cost one run. Import crashes are exempt (see ``crash``).
        min_pass_to_pass: below this many passing candidates, PASS_TO_PASS also takes the other tests of
            the failing tests' files (each checked to pass with the bug), and for a crash, tests of other files.
        base: the pristine tree to work from (default: the snapshot; generators pass their warmed copy).
        workspace: a reusable scratch workspace (default: a throwaway one); it is synced, never trusted.
        details: record failure details of the first run (for problem statements).
        gold_cache: the gold-fix results of earlier calls by selected test set, shared across calls; a set
            inside one that passed on the pristine tree counts as passing.
        test_args: more pytest arguments for every run (generators bound the per-test timeout).
        runner: runs tests on the workspace, ``runner(ids, timeout, details=, args=, repeat=)``, e.g. a
            :class:`frog_gym.generators.fastrun.Runner` over ``workspace`` (default: a fresh sandbox per run).
        max_run_seconds: refuse bugs whose first run takes longer (hangs that only a timeout ends make
            slow, poor tasks).

    The first run is its own pytest process (most candidates are refused on it). Runs 2..``runs`` happen
    in one more process that repeats each test (``FROG_REPEAT``), so agreement is checked both across
    processes and within one.
    """
    start = time.monotonic()
    base = base or pristine_template(repo)
    test_args = ("--continue-on-collection-errors", *test_args)  # a crash in one file must not hide the rest
    passing_all = [t for t, s in baseline(repo).items() if TestStatus(s).ok]
    flaky_known = set(repo.spec.measured.get("flaky", []))
    passing = [t for t in passing_all if t not in flaky_known]
    passing_set = set(passing)
    ids = [t for t in (candidates if candidates is not None else passing) if t in passing_set]
    if not ids:
        return Validation(False, "no passing test covers the site", seconds=time.monotonic() - start)
    with _workspace(workspace) as ws:
        count = 0
        cpu = 0.0

        def run(selected: tuple[str, ...], buggy: bool, want_details: bool = False, repeat: int = 1,
                extra: tuple[str, ...] = ()) -> RunResult:
            nonlocal count, cpu
            count += 1
            ws.sync(base)
            if buggy:
                write_changes(ws.path, changes)
            args = (*test_args, *extra)
            if runner is not None:
                r = runner(selected, timeout, details=want_details, args=args, repeat=repeat)
            else:
                r = run_tests(repo, ws.path, selected, timeout, details=want_details, args=args, repeat=repeat)
            cpu += r.cpu_seconds
            return r

        def result(ok: bool, reason: str = "", **kw) -> Validation:
            return Validation(ok, reason, runs=kw.pop("runs", len(results)), seconds=time.monotonic() - start,
                              test_runs=count, cpu_seconds=round(cpu, 3), **kw)

        results: list[dict[str, TestStatus]] = []
        # past max_fail_to_pass failures the bug is refused anyway, so the first run may stop there
        stop = (f"--maxfail={max_fail_to_pass + 1}",) if max_fail_to_pass is not None else ()
        first = run(tuple(ids), True, details, extra=stop)
        if first.infra_failure and first.infra_failure.startswith("grading timed out"):
            return result(False, f"too slow: the buggy tree's run timed out after {timeout:.0f} s", runs=1)
        if first.infra_failure:
            return result(False, f"infrastructure failure: {first.infra_failure}", runs=1)
        results.append(first.statuses)
        if max_run_seconds is not None and first.seconds > max_run_seconds:
            return result(False, f"too slow: the first run took {first.seconds:.0f} s (limit {max_run_seconds:.0f})")
        failing = [t for t in ids if not first.statuses[t].ok]
        if not failing:
            return result(False, "no test fails with the bug")
        crash = bool(first.collect_errors) and all(first.statuses[t] is TestStatus.MISSING for t in failing)
        if max_fail_to_pass is not None and not crash and len(failing) > max_fail_to_pass:
            return result(False, f"the bug breaks {len(failing)} tests (limit {max_fail_to_pass})")
        if runs > 1:
            r = run(tuple(ids), True, repeat=runs - 1)
            if r.infra_failure and r.infra_failure.startswith("grading timed out"):
                return result(False, f"too slow: a rerun timed out after {timeout:.0f} s", runs=2)
            if r.infra_failure:
                return result(False, f"infrastructure failure: {r.infra_failure}", runs=2)
            results.extend(r.passes or [r.statuses])
        flaky = sorted(t for t in ids if len({r[t].ok for r in results}) > 1)
        f2p = [t for t in ids if t not in flaky and not results[0][t].ok]
        if not f2p:
            return result(False, "the failures do not repeat across runs", flaky=flaky)
        p2p = [t for t in ids if t not in flaky and t not in f2p]
        if len(p2p) < min_pass_to_pass:  # widen, checked on the bug
            files = set(test_files_of(tuple(f2p)))
            chosen = set(ids)
            extra = [t for t in passing if t.split("::", 1)[0] in files and t not in chosen]
            if crash or not extra:
                others = [t for t in passing if t.split("::", 1)[0] not in files and t not in chosen]
                extra += others[:: max(1, len(others) // 50)][:50]
            if extra:
                r = run(tuple(extra), True)
                p2p += [t for t in extra if not r.infra_failure and r.statuses[t].ok]
        if not p2p:
            return result(False, "PASS_TO_PASS would be empty", fail_to_pass=f2p, flaky=flaky)
        selected = tuple(f2p + p2p)
        # Grading runs exactly FAIL_TO_PASS + PASS_TO_PASS: run the bug once that way (unless the first run
        # already was that selection). A test whose result there contradicts its role depended on tests
        # outside the selection (shared state, order); it leaves both lists, as a flaky one does.
        for attempt in range(3):
            if attempt == 0 and set(selected) == set(ids):
                break
            r = run(selected, True)
            if r.infra_failure:
                return result(False, f"infrastructure failure: {r.infra_failure}")
            odd = graded_disagreements(r.statuses, f2p, p2p)
            if not odd:
                break
            flaky = sorted({*flaky, *odd})
            f2p = [t for t in f2p if t not in odd]
            p2p = [t for t in p2p if t not in odd]
            if not f2p:
                return result(False, "the failures depend on tests outside the graded selection", flaky=flaky)
            if not p2p:
                return result(False, "PASS_TO_PASS would be empty", fail_to_pass=f2p, flaky=flaky)
            selected = tuple(f2p + p2p)
        else:
            return result(False, "the graded selection's results do not settle", fail_to_pass=f2p, flaky=flaky)
        key = tuple(sorted(selected))
        gold_ok = gold_cache.get(key) if gold_cache is not None else None
        if gold_ok is None and gold_cache is not None:  # a verified superset, run as one session, covers it
            want = set(key)
            if any(ok and want <= set(k) for k, ok in gold_cache.items()):
                gold_ok = True
        bad: object = None
        if gold_ok is None:
            r = run(selected, False)
            gold_ok = not r.infra_failure and all(s.ok for s in r.statuses.values())
            bad = r.infra_failure or [t for t, s in r.statuses.items() if not s.ok][:5]
            if gold_cache is not None and not r.infra_failure:
                gold_cache[key] = gold_ok
        if not gold_ok:
            return result(False, f"the gold fix does not pass every selected test ({bad or 'cached'})",
                          fail_to_pass=f2p, flaky=flaky)
    keep = {t: first.details[t] for t in f2p if t in first.details}
    if crash:
        keep.update({k: v for k, v in first.details.items() if k in first.collect_errors})
    return result(True, "", fail_to_pass=f2p, pass_to_pass=p2p, flaky=flaky, failure_output=first.note,
                  crash=crash, details=keep)


def graded_disagreements(statuses: Mapping[str, TestStatus], fail_to_pass: Sequence[str],
                         pass_to_pass: Sequence[str]) -> list[str]:
    """Tests whose result with the bug, run as graded, contradicts their role: a FAIL_TO_PASS test that
    passes, or a PASS_TO_PASS test that does not (a test missing from ``statuses`` did not pass).

    >>> graded_disagreements({"a": TestStatus.PASSED, "b": TestStatus.FAILED}, ["a", "b"], ["c"])
    ['a', 'c']
    """
    missing = TestStatus.MISSING
    return ([t for t in fail_to_pass if statuses.get(t, missing).ok]
            + [t for t in pass_to_pass if not statuses.get(t, missing).ok])


class _workspace:
    """The caller's workspace, or a throwaway :class:`Scratch` one."""

    def __init__(self, ws: Workspace | None):
        self.ws, self.scratch = ws, None if ws is not None else Scratch()

    def __enter__(self) -> Workspace:
        return self.ws if self.ws is not None else self.scratch.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self.scratch is not None:
            self.scratch.__exit__(*exc)


def record_oracle(task: Task, tasks_file: Path, repo: PreparedRepo | None = None) -> dict:
    """Record the behavioural oracle of a task just accepted (:func:`frog_gym.grading.oracle.record_task`, on the gold
    code, in ``repo``: default the task's registered one) into the ``oracles`` folder beside its task folder (``registry/oracles`` for the registry's own);
    returns the record. Recording never fails a task: a task without an oracle is graded by its tests."""
    from frog_gym.grading.oracle import append_record, record_task, task_digest

    try:
        rec = record_task(task, repo=repo)
    except Exception as e:  # noqa: BLE001 (`frog-gym oracle record` retries it)
        rec = {"instance_id": task.instance_id, "repo": task.repo, "digest": task_digest(task), "calls": [],
               "covered": 0, "recorded": 0,
               "stable": 0, "infra": True, "why": f"recording failed: {type(e).__name__}: {e}"[:400]}
    append_record(tasks_file.parent.parent / "oracles", rec)
    return rec
