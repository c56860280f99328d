"""The behavioural oracle: expected outcomes recorded from the gold code, replayed outside the test process.

Issue 21's second pillar. Nothing a process running the agent's code reports is trusted on its own, so a
covered task's reward also rests on a comparison made on the host:

- **Record** (validation, gold code only, :func:`record_task`): the task's selected tests run on the gold
  tree as a grade runs them, with ``frog_gym/_plugin/frog_oracle.py`` loaded; during the FAIL_TO_PASS tests it
  keeps the calls into the functions the gold patch changes (:func:`targets`: functions and methods whose
  code differs between the bug and the fix and that exist in both) and the tests' own calls into the package
  that reach changed code (:func:`reach`: a changed generator, nested function or import-time table
  included), with their arguments, the value returned or exception type raised, and the after-state of
  every argument the call changed (``self`` included). Any selected test that fails under recording leaves
  the task without an oracle (``changed_outcome`` in its record).
- **Settle**: the calls are replayed on the gold code in a fresh sandbox, with the clock as it is and moved
  :data:`CLOCK_SHIFT` ahead, until every one reproduces its recorded outcome byte for byte in both (others
  are dropped: they depend on a test's set-up, on test code, on the date or time, or on objects' identity;
  :func:`resettle` applies the moved clock to records made before it), then on the bug: a call the bug can't take (a function, signature or
  class only the gold has) is dropped, and the task is **covered** when at least one call's outcome differs
  between bug and gold. At most :data:`MAX_CALLS` calls are kept, the differing ones first.
- **Grade** (:func:`check`): a sandbox holding only the package's source as the agent left it (no test file,
  no expected value, no key) replays the recorded arguments; the host compares each outcome line with the
  gold record as bytes. It never decodes (let alone unpickles) what a sandbox wrote.

Oracles are hidden task data, like ``test_patch``: ``registry/oracles/<repo>.jsonl.gz``, one record per task
(covered or not, so that recording can resume), read with :mod:`importlib.resources`. Record them with
``frog-gym oracle record``.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
import zlib
from concurrent.futures import Future
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from frog_gym import paths
from frog_gym.sandbox import make_sandbox
from frog_gym.sandbox.base import Limits
from frog_gym.catalog.snapshot import PreparedRepo
from frog_gym.catalog.task import Task
from frog_gym.grading.packagetree import package_template, package_tree, read_capped as _read_capped  # noqa: F401 (package_template: the oracle's tree, named here too)
from frog_gym.sandbox.workspace import Change, Template, write_changes

RECORDER_VERSION = 3
"""Bumped when recording changes what it keeps: ``frog-gym oracle record`` records older records again."""
MAX_CALLS = 120
"""Calls kept per task: every call whose outcome differs between bug and gold first, then the others."""
REPLAY_TIMEOUT = 120.0
"""Seconds a whole replay may run (each call has its own limit of ``frog_oracle.CALL_TIMEOUT``)."""
CLOCK_SHIFT = 400 * 86400 + 7 * 3600 + 13 * 60 + 17
"""Seconds settling moves the replay's clock ahead (``frog_oracle.shift_clock``): another year, month, day,
weekday, hour, minute and second, so that a call whose outcome depends on any of them is dropped."""


def _plugin_dir() -> Any:
    return resources.files("frog_gym").joinpath("_plugin")


# --- what to record -------------------------------------------------------------------------------------

def _functions(source: bytes, replayable: bool = True) -> dict[str, str] | None:
    """Every function and method defined outside a function (qualname -> a dump of its AST); with
    ``replayable`` only those a replay can call (not a generator or coroutine). None: the file does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    out: dict[str, str] = {}

    def plain(fn: ast.FunctionDef) -> bool:
        stack = list(ast.iter_child_nodes(fn))
        while stack:
            n = stack.pop()
            if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
                return False
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.extend(ast.iter_child_nodes(n))
        return True

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for n in body:
            if isinstance(n, ast.FunctionDef) and (plain(n) or not replayable):
                out[prefix + n.name] = ast.dump(n)
            elif isinstance(n, ast.AsyncFunctionDef) and not replayable:
                out[prefix + n.name] = ast.dump(n)
            elif isinstance(n, ast.ClassDef):
                walk(n.body, f"{prefix}{n.name}.")
            elif isinstance(n, (ast.If, ast.Try)):  # definitions under `if TYPE_CHECKING`/`try: import`
                for part in (n.body, getattr(n, "orelse", []), getattr(n, "finalbody", [])):
                    walk(part, prefix)

    walk(tree.body, "")
    return out


def _skeleton(source: bytes) -> str | None:
    """A dump of the module with every function's body left out: what runs at import (constants, tables,
    decorators, class attributes)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n.body = [ast.Pass()]
    return ast.dump(tree)


def reach(bug: dict[str, bytes | None], gold: dict[str, bytes | None]) -> dict[str, list[str]]:
    """What a test's call into the package must reach for it to be kept (per file): every function the gold
    patch changes, generators and coroutines included (a nested function's change is its enclosing one's),
    and ``"*"`` (the whole file) where the patch changes what runs at import (a constant, a table)."""
    out: dict[str, list[str]] = {}
    for path, new in sorted(gold.items()):
        old = bug.get(path)
        if not path.endswith(".py") or new is None or old is None:
            continue
        before, after = _functions(old, replayable=False), _functions(new, replayable=False)
        if before is None or after is None:
            continue
        changed = sorted(q for q, body in after.items() if q in before and before[q] != body)
        if _skeleton(old) != _skeleton(new):
            changed.append("*")
        if changed:
            out[path] = changed
    return out


def targets(bug: dict[str, bytes | None], gold: dict[str, bytes | None]) -> dict[str, list[str]]:
    """The functions the gold patch changes, per file (``{path: [qualname, ...]}``), given each changed
    ``.py`` file's bytes in the bug and in the gold tree: those whose code differs and that exist in both
    (never one that exists only in the gold version: the agent's fix need not add it)."""
    out: dict[str, list[str]] = {}
    for path, new in sorted(gold.items()):
        old = bug.get(path)
        if not path.endswith(".py") or new is None or old is None:
            continue
        before, after = _functions(old), _functions(new)
        if before is None or after is None:
            continue
        changed = sorted(q for q, body in after.items() if q in before and before[q] != body)
        if changed:
            out[path] = changed
    return out


# --- storage -----------------------------------------------------------------------------------------------

def task_digest(task: Task) -> str:
    """What an oracle was recorded from: a task whose bug, fix, tests or release changed needs a new one."""
    blob = json.dumps([task.bug_patch, task.patch, task.test_patch, list(task.FAIL_TO_PASS), task.version,
                       (task.provenance or {}).get("source")], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _oracles_dir() -> Any:
    return resources.files("frog_gym.registry").joinpath("oracles")


def _read_lines(data: bytes) -> list[dict]:
    """The records of an oracle file: gzip members, one or more records each; a last member still being
    written (a recording appending now) is left out."""
    parts = []
    while data:
        d = zlib.decompressobj(wbits=31)
        try:
            chunk = d.decompress(data)
        except zlib.error:
            break
        if not d.eof:
            break
        parts.append(chunk)
        data = d.unused_data
    return [json.loads(line) for line in b"".join(parts).decode("utf-8").splitlines() if line.strip()]


@lru_cache(maxsize=256)
def _repo_records(repo: str) -> dict[str, dict]:
    f = _oracles_dir().joinpath(f"{repo}.jsonl.gz")
    if not f.is_file():
        return {}
    return {r["instance_id"]: r for r in _read_lines(f.read_bytes())}  # a later line replaces an earlier one


def record_of(task: Task) -> dict | None:
    """The stored oracle record of ``task`` when it was made from the task as it stands, else None."""
    r = _repo_records(task.repo).get(task.instance_id)
    return r if r is not None and r.get("digest") == task_digest(task) else None


def coverage(task: Task) -> dict[str, Any] | None:
    """The oracle coverage of ``task`` for listings: ``{"calls", "covered", "why"}``, None when no record
    was made from the task as it stands."""
    r = record_of(task)
    if r is None:
        return None
    return {"calls": len(r["calls"]), "covered": r.get("covered", 0), "why": r.get("why", "")}


def calls_of(task: Task) -> list[dict]:
    """The task's oracle calls (empty: the task has no oracle)."""
    r = record_of(task)
    return list(r["calls"]) if r else []


def append_record(folder: Path, record: dict) -> None:
    """Add one task's record to ``folder/<repo>.jsonl.gz`` (a gzip member per record, so that an
    interrupted recording loses at most the record being written)."""
    folder.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()
    with open(folder / f"{record['repo']}.jsonl.gz", "ab") as f:
        f.write(gzip.compress(line, mtime=0))
    _repo_records.cache_clear()


def compact(folder: Path) -> None:
    """Rewrite each oracle file as one gzip stream, the last record of each task only, sorted by id."""
    for f in sorted(folder.glob("*.jsonl.gz")):
        recs = {r["instance_id"]: r for r in _read_lines(f.read_bytes())}
        text = "".join(json.dumps(recs[i], sort_keys=True, separators=(",", ":")) + "\n" for i in sorted(recs))
        tmp = f.with_suffix(".tmp")
        tmp.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
        os.replace(tmp, f)
    _repo_records.cache_clear()


# --- replay ------------------------------------------------------------------------------------------------

def replay(repo: PreparedRepo, tree: Path, calls: list[dict], timeout: float = REPLAY_TIMEOUT,
           backend: str = "local", clock_shift: float = 0.0) -> tuple[list[bytes], str]:
    """Replay ``calls`` (their arguments only) on the package in ``tree``, in a sandbox like a grade's
    (``clock_shift``: seconds the replay's wall clock is moved ahead; settling only).

    Returns one outcome line per call, as raw bytes (missing lines are empty), and a note when the replay
    did not finish (ran past ``timeout`` or died)."""
    with tempfile.TemporaryDirectory(dir=paths.home()) as io_dir, resources.as_file(_plugin_dir()) as plugin:
        io = Path(io_dir)
        (io / "in").mkdir()
        (io / "out").mkdir()
        sent = [{k: c[k] for k in ("m", "q", "n", "args", "after")} for c in calls]  # never the outcome
        (io / "in" / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in sent))
        sb = make_sandbox(backend, repo, tree, Limits(command_timeout=timeout, output_cap=4096),
                          binds=((io / "in", "/frog/in", False), (io / "out", "/frog/out", True),
                                 (Path(plugin), "/frog/oracle", False)))
        try:
            env = {"PYTHONHASHSEED": "0", "PYTHONPATH": ""}
            if clock_shift:
                env["FROG_ORACLE_CLOCK_SHIFT"] = repr(float(clock_shift))
            r = sb.exec([str(repo.python), "-s", "-c", _BOOT], timeout, env=env)
        finally:
            sb.close()
        data = _read_capped(io / "out" / "results.jsonl")
        lines = data.split(b"\n")
        got = [lines[i] if i < len(lines) else b"" for i in range(len(calls))]
        note = "" if r.exit_code == 0 and not r.timed_out else (
            f"the replay {'ran past its limit' if r.timed_out else f'exited with {r.exit_code}'}: "
            f"{r.output[-300:]}")
        return got, note


_BOOT = ("import sys; sys.path[:] = ['/frog/oracle', *(p for p in sys.path if p)]; import frog_oracle; "
         "frog_oracle.replay('/frog/in/calls.jsonl', '/frog/out/results.jsonl')")
"""The replay's start: no user site (``-s``), the working folder out of ``sys.path``, hash seed pinned (so a
set's order is the same in every replay); the venv's ``site`` (with its ``_frog_testbed.pth``) finds the
package; only the plugin folder is added."""


@dataclass
class OracleVerdict:
    """What the oracle said of one graded state."""

    calls: int
    matched: int
    mismatch: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.matched == self.calls and not self.mismatch

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "matched": self.matched, "passed": self.passed, "mismatch": self.mismatch,
                "seconds": round(self.seconds, 3)}


def compare(calls: list[dict], got: list[bytes], note: str = "") -> OracleVerdict:
    """Compare replayed outcome lines with the gold record, as bytes."""
    matched, first = 0, ""
    for i, (c, line) in enumerate(zip(calls, got)):
        if line == c["out"].encode():
            matched += 1
        elif not first:
            what = ("no outcome" if not line else "the call could not be made" if line.startswith(b'{"e":')
                    else "a different outcome")
            first = f"{c['m']}:{c['q']}: call {i + 1} of {len(calls)} gave {what} than the gold code"
    return OracleVerdict(len(calls), matched, first or (note and f"the replay did not finish: {note[:200]}"))


def calls_digest(calls: list[dict]) -> str:
    """A digest of an oracle (grades cached under another oracle are not reused)."""
    return hashlib.sha256(json.dumps(calls, sort_keys=True).encode()).hexdigest()[:16] if calls else "none"


def check(repo: PreparedRepo, task: Task, template: Template, changes: list[Change],
          calls: list[dict] | None = None, backend: str = "local",
          timeout: float = REPLAY_TIMEOUT, server: Any = None) -> OracleVerdict | None:
    """Replay the task's oracle (``calls``, default the stored one) on the package as ``changes`` leave it, in
    a sandbox of the grade's ``backend``, for at most ``timeout`` seconds (None: the task has no oracle). On the
    local backend the replay is a child of the repository's warm oracle server (``server``, default the pooled one:
    :mod:`frog_gym.grading.oracle_server`), else, or where it can't vouch for the replay, a sandbox of its own."""
    from frog_gym.grading.runner import patch_files

    calls = calls_of(task) if calls is None else calls
    if not calls:
        return None
    start = time.monotonic()
    hidden = frozenset(patch_files(task.test_patch))
    warm = None
    if backend == "local":  # a child of the repository's warm oracle server (frog_gym.grading.oracle_server)
        from frog_gym.grading.oracle_server import replay_warm

        warm = replay_warm(repo, template, changes, calls, timeout, hidden, server)
    if warm is not None:
        got, note = warm
    else:
        with tempfile.TemporaryDirectory(dir=paths.home()) as d:
            tree = package_tree(repo, template, changes, Path(d) / "t", hidden)
            got, note = replay(repo, tree, calls, timeout, backend=backend)
    v = compare(calls, got, note)
    v.seconds = time.monotonic() - start
    return v


def start_check(repo: PreparedRepo, task: Task, template: Template, changes: list[Change],
                calls: list[dict], backend: str = "local",
                timeout: float = REPLAY_TIMEOUT) -> Future[OracleVerdict | None] | None:
    """:func:`check` in a thread of its own, so that the replay runs while the tests do (None: no oracle),
    within the grade's own time limit (``timeout``: a package that hangs at import costs no more than that).
    A replay whose sandbox fails to start is an infrastructure failure of the oracle: it says so in
    ``mismatch`` and the grade is not resolved."""
    if not calls:
        return None
    fut: Future[OracleVerdict | None] = Future()
    server = None
    if backend == "local":  # started here, not in the thread below: a sandbox dies with the thread that started it
        from frog_gym.grading.oracle_server import server_for

        server = server_for(repo, template)

    def run() -> None:
        try:
            fut.set_result(check(repo, task, template, list(changes), calls, backend, timeout, server))
        except Exception as e:  # never a grade that passes for want of a verdict
            fut.set_result(OracleVerdict(len(calls), 0, f"the oracle could not run: {type(e).__name__}: {str(e)[:200]}"))

    # A thread per grade, not a pool: a pool made before a fork (vector envs) has no threads in the child.
    threading.Thread(target=run, name="frog-oracle", daemon=True).start()
    return fut


# --- recording (validation) ----------------------------------------------------------------------------

def _settle(repo: PreparedRepo, gold: Path, calls: list[dict], rounds: int = 4) -> list[dict]:
    """The calls whose replay on the gold code reproduces the recorded outcome, with the clock as it is and
    moved by :data:`CLOCK_SHIFT`, replayed as a set (each replay runs them in order in one process, so a
    dropped call can change a later one's state)."""
    for _ in range(rounds):
        if not calls:
            return []
        got, _note = replay(repo, gold, calls)
        moved, _note = replay(repo, gold, calls, clock_shift=CLOCK_SHIFT)
        keep = [c for c, line, later in zip(calls, got, moved) if line == c["out"].encode() == later]
        if len(keep) == len(calls):
            return calls
        calls = keep
    return []


def _gold_files(repo: PreparedRepo, task: Task) -> tuple[Template, dict[str, bytes | None], dict[str, bytes | None],
                                                          frozenset[str]] | str:
    """The task's starting template, the files of its gold fix (after), the same files before it and the hidden
    test files; or why the gold patch does not apply."""
    from frog_gym.grading.runner import _patched, patch_files
    from frog_gym.catalog.live import is_live
    from frog_gym.sandbox.workspace import template_for

    template = template_for(repo, task.bug_patch, task.instance_id,
                            hidden_tests="" if is_live(task.instance_id) else task.test_patch)
    after = _patched(template, task.patch, f"the gold patch of {task.instance_id}")
    if isinstance(after, str):
        return after
    before = {f: ((template.root / f).read_bytes() if (template.root / f).is_file() else None) for f in after}
    return template, after, before, patch_files(task.test_patch)


def record_task(task: Task, timeout: float = 600.0, repo: PreparedRepo | None = None) -> dict:
    """Record, settle and measure the oracle of ``task`` (see the module docstring); returns its record.

    The record always says what happened: ``calls`` (empty when the task has no oracle), ``covered`` (calls
    whose outcome differs between bug and gold), ``recorded`` (calls seen), ``stable`` (reproduced by the
    gold code in a fresh process), and ``why`` when there is no oracle."""
    from frog_gym.grading.runner import GRADING_PYTEST_ARGS, TestStatus, hidden_test_changes, run_tests
    from frog_gym.catalog.live import task_spec
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.sandbox.workspace import Workspace

    start = time.monotonic()
    base = {"instance_id": task.instance_id, "repo": task.repo, "digest": task_digest(task), "calls": [],
            "covered": 0, "recorded": 0, "stable": 0, "v": RECORDER_VERSION, "clock": CLOCK_SHIFT}

    def done(why: str = "", **kw: Any) -> dict:
        return {**base, **kw, **({"why": why} if why else {}), "seconds": round(time.monotonic() - start, 1)}

    repo = repo or prepare(task_spec(task))
    gold_of = _gold_files(repo, task)
    if isinstance(gold_of, str):
        return done(f"the gold patch does not apply: {gold_of[:200]}")
    template, after, bug_files, tests = gold_of
    source = {f: b for f, b in bug_files.items() if not repo.spec.tests.is_test_file(f) and f not in tests}
    aim = targets(source, after)
    reached = reach(source, after)
    if not reached:
        return done("the gold patch changes no code that exists in the bug too (new functions or files only)")
    gold = [Change(f, bug_files[f], new) for f, new in after.items() if f not in tests and bug_files[f] != new]
    hidden = hidden_test_changes(task, template)
    if isinstance(hidden, str):
        return done(f"the hidden tests do not apply: {hidden[:200]}")
    work = paths.home() / "work" / f"oracle-{os.getpid()}-{hashlib.sha256(task.instance_id.encode()).hexdigest()[:8]}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        ws = Workspace(work / "ws")
        ws.sync(template)
        write_changes(ws.path, gold + hidden)
        (work / "out").mkdir()
        own = [*repo.spec.mutable, *(f for f in after if f.endswith(".py") and f not in tests)]
        package = sorted({f"/testbed/{p}" + ("/" if (template.root / p).is_dir() else "") for p in own})
        test_dirs = sorted({f"/testbed/{p}" + ("/" if (template.root / p).is_dir() else "")
                            for p in repo.spec.tests.paths})
        env = {"FROG_ORACLE_TARGETS": json.dumps({f"/testbed/{f}": q for f, q in aim.items()}),
               "FROG_ORACLE_OUT": "/frog/out/oracle.jsonl", "FROG_ORACLE_PACKAGE": json.dumps(package),
               "FROG_ORACLE_TESTS": json.dumps(test_dirs),
               "FROG_ORACLE_REACH": json.dumps({f"/testbed/{f}": q for f, q in reached.items()}),
               "FROG_ORACLE_ONLY": json.dumps(list(task.FAIL_TO_PASS))}
        # Every selected test runs, as in a grade (some depend on the others' set-up); only the FAIL_TO_PASS
        # tests' calls are kept.
        r = run_tests(repo, ws.path, task.selected_tests, timeout, plugins=("frog_oracle",), env=env,
                      out_dir=work / "out", protect=repo.spec.tests.paths, args=GRADING_PYTEST_ARGS)
        failing = sorted(t for t in task.selected_tests if not r.statuses.get(t, TestStatus.MISSING).ok)
        rest = [t for t in task.FAIL_TO_PASS if t not in failing]
        if failing and not r.infra_failure and rest and set(failing) <= set(task.FAIL_TO_PASS):
            # A test the hook itself disturbs (one that measures memory or time): record the others only.
            env["FROG_ORACLE_ONLY"] = json.dumps(rest)
            r = run_tests(repo, ws.path, task.selected_tests, timeout, plugins=("frog_oracle",), env=env,
                          out_dir=work / "out", protect=repo.spec.tests.paths, args=GRADING_PYTEST_ARGS)
            failing = sorted(t for t in task.selected_tests if not r.statuses.get(t, TestStatus.MISSING).ok)
        if r.infra_failure:
            return done(f"the recording run failed: {r.infra_failure[:200]}", infra=True)
        if failing:  # recording must never change a gold test's outcome; such a task keeps no oracle
            return done(f"{len(failing)} selected tests did not pass on the gold code under recording: "
                        f"{failing[:3]}", changed_outcome=failing[:10])
        raw = work / "out" / "oracle.jsonl"
        skipped = work / "out" / "oracle.jsonl.skipped"
        if skipped.is_file():
            counts = json.loads(skipped.read_text(encoding="utf-8"))
            base["skipped"] = dict(sorted(counts.items(), key=lambda kv: -kv[1])[:3])
        calls = [json.loads(line) for line in raw.read_text(encoding="utf-8").splitlines()] if raw.is_file() else []
        base["recorded"] = len(calls)
        if not calls:
            return done("the FAIL_TO_PASS tests made no call into the changed functions that encodes exactly")
        gold_tree = package_tree(repo, template, gold, work / "gold", tests)
        bug_tree = package_tree(repo, template, [], work / "bug", tests)
        calls = _settle(repo, gold_tree, calls)
        base["stable"] = len(calls)
        if not calls:
            return done("no recorded call reproduced its outcome on the gold code in a fresh process")
        got, _ = replay(repo, bug_tree, calls)
        # A call the bug's code can't even take (a function, signature or class only the gold version has) asks
        # for the gold's API, not its behaviour: dropped.
        live = [(c, line) for c, line in zip(calls, got) if not line.startswith((b'{"e":"resolve', b'{"e":"decode'))]
        differ = [c for c, line in live if line != c["out"].encode()]
        same = [c for c, line in live if line == c["out"].encode()]
        picked = {id(c) for c in differ[:MAX_CALLS]} | {id(c) for c in same[:max(0, MAX_CALLS - len(differ))]}
        calls = _settle(repo, gold_tree, [c for c in calls if id(c) in picked])
        got, _ = replay(repo, bug_tree, calls)
        covered = sum(line != c["out"].encode() for c, line in zip(calls, got))
        if not covered:
            return done("no recorded call's outcome differs between the bug and the gold fix")
        return done(calls=calls, covered=covered, stable=base["stable"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def resettle(task: Task, rec: dict, repo: PreparedRepo | None = None) -> dict | None:
    """Settle a stored record's calls again as :func:`record_task` settles them today (the moved clock came
    after most records were made); returns the record to store (marked ``clock``: the calls that hold, and
    the coverage measured again when some did not), or None when the record has no calls or is settled so."""
    from frog_gym.catalog.live import task_spec
    from frog_gym.catalog.snapshot import prepare

    if not rec.get("calls") or rec.get("clock") == CLOCK_SHIFT:
        return None
    start = time.monotonic()
    repo = repo or prepare(task_spec(task))
    gold_of = _gold_files(repo, task)
    if isinstance(gold_of, str):
        raise ValueError(f"{task.instance_id}: the gold patch does not apply: {gold_of[:200]}")
    template, after, bug_files, tests = gold_of
    gold = [Change(f, bug_files[f], new) for f, new in after.items() if f not in tests and bug_files[f] != new]
    with tempfile.TemporaryDirectory(dir=paths.home()) as work:
        gold_tree = package_tree(repo, template, gold, Path(work) / "gold", tests)
        calls = _settle(repo, gold_tree, list(rec["calls"]))
        out = {**rec, "clock": CLOCK_SHIFT, "resettled": round(time.monotonic() - start, 1)}
        if len(calls) == len(rec["calls"]):
            return {**out, "calls": rec["calls"]}
        if not calls:
            return {**out, "calls": [], "covered": 0, "why": "no recorded call reproduced its outcome on the gold "
                                                            "code in a fresh process (with the clock moved)"}
        got, _ = replay(repo, package_tree(repo, template, [], Path(work) / "bug", tests), calls)
        covered = sum(line != c["out"].encode() for c, line in zip(calls, got))
        if not covered:
            return {**out, "calls": [], "covered": 0,
                    "why": "no recorded call's outcome differs between the bug and the gold fix (with the clock moved)"}
        return {**out, "calls": calls, "covered": covered}

