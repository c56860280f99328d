"""Running the selected tests of a repository in a sandbox, cold, and reading the signed report; trust no stdout.

:func:`run_tests` runs exactly the given test ids in a fresh sandbox where the test files are read-only; a
plugin (``frog_gym/_plugin/frog_report.py``) writes a report signed with a per-run key into a folder the
agent never sees, and :func:`read_report` verifies it and cross-checks it with pytest's exit code and the
canaries. The helpers a grade builds its run from live here too (the hidden tests as changes, the plugin's
guard, the test log in SWE-bench's format), so that the warm server (:mod:`frog_gym.grading.server`) and the
oracle (:mod:`frog_gym.grading.oracle`) use them without importing :mod:`frog_gym.grading.grade`.
"""

from __future__ import annotations

import base64
import enum
import fcntl
import functools
import hashlib
import json
import os
import secrets
import stat
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from frog_gym import paths

from frog_gym.errors import SourceError
from frog_gym.grading.integrity import Canaries, keep_json, kept_defined_names, verify
from frog_gym.sandbox.base import Limits
from frog_gym.sandbox import make_sandbox
from frog_gym.catalog.snapshot import PreparedRepo
from frog_gym.catalog.task import Task
from frog_gym.sandbox.workspace import Change, Template, apply_patch


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


def _plugin_dir() -> Any:
    return resources.files("frog_gym").joinpath("_plugin")


def vault_env() -> dict[str, str]:
    """What a graded run's environment takes from the host's: ``FROG_VAULT_ACCEL=0`` keeps the report vault off its C
    helper (``_plugin/frog_accel.c``), so that its Python checks can be run where the helper is built (tests)."""
    return {"FROG_VAULT_ACCEL": "0"} if os.environ.get("FROG_VAULT_ACCEL") == "0" else {}


PLUGIN_PARTS = ("frog_key.py", "frog_guard.py", "frog_seal.py", "frog_vault.py")
"""The report plugin's parts, which ``frog_report.py`` loads from its own folder (never through ``sys.path``, never
into ``sys.modules``): the whole ``_plugin`` folder is mounted at ``/frog/plugin``, so they travel with it."""


GRADING_PYTEST_ARGS = ("--tb=native",)
"""pytest arguments a graded run adds after the spec's, on both paths. Failures are printed as Python prints
them: pytest's own traceback style parses the whole test file again for every failure, and every graded run
has two (the must-fail canaries, in the largest file); the statuses don't depend on it."""


def grading_selection(ids: tuple[str, ...], canaries: Canaries,
                      guard: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The report plugin's ``$FROG_SELECT`` for a graded run: the ids, the canaries, collecting only them, and
    the test files it guards from the code under test (:func:`guard_for`)."""
    return {"ids": list(ids), "canaries": canaries.ids(), "only": True, **({"guard": guard} if guard else {})}


def key_fifo(folder: Path, selection: Any, guard: dict[str, list[str]] | None, key: bytes) -> int:
    """Make the FIFO ``folder/key`` that a graded run's report plugin reads before any code under test runs:
    the selection (8 hex digits of length, then its JSON: ids and canaries never lie in a file the tests could
    open), then the 64-byte ``key``. ``folder/select.json`` gets the guard alone, for the processes a test
    starts. Returns the FIFO's descriptor, to keep open until the run ends (writes never block)."""
    body = json.dumps(selection).encode()
    public = {k: v for k, v in (guard or {}).items() if k != "values"}  # the vault's own: never in a file
    (folder / "select.json").write_text(json.dumps({"guard": public}))
    fifo = folder / "key"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo, 0o644)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        data = f"{len(body):08x}".encode() + body + key
        if len(data) > 65536:
            fcntl.fcntl(fd, 1031, len(data))  # F_SETPIPE_SZ: the plugin reads it all at once, at its import
        os.write(fd, data)
    except OSError:
        os.close(fd)
        raise
    return fd


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
    tampering: list[str] = field(default_factory=list)
    output: str = ""
    collected: int = 0


def run_selected(repo: PreparedRepo, tree: Path, ids: tuple[str, ...] | None, timeout: float,
                 limits: Limits | None = None, backend: str = "local"
                 ) -> tuple[dict[str, TestStatus], int | None, str, str | None]:
    """Run exactly ``ids`` (None: the repository's whole suite) on ``tree`` in a fresh sandbox.

    Returns ``(statuses, exit_code, note, infra_failure)``. Statuses come from the report file alone,
    cross-checked with the exit code; a report that disagrees with the exit code is not trusted.
    """
    r = run_tests(repo, tree, ids, timeout, limits, backend=backend)
    return r.statuses, r.exit_code, r.note, r.infra_failure


PYTEST_STARTUP = frozenset(("pluggy", "iniconfig", "packaging", "pygments", "exceptiongroup", "tomli", "colorama",
                            "py"))
"""Modules pytest imports before it loads any ``-p`` plugin (its own dependencies)."""


def pytest_startup_owned(repo: PreparedRepo) -> tuple[str, ...]:
    """The package's top-level modules when pytest itself imports one of them at start-up (pluggy, iniconfig),
    else ``()``. Such a package is graded through ``frog_boot.py``: pytest is bound to the pristine release's
    copy and the tests import the agent's, so none of the agent's code runs before the report plugin, nor as
    the hook machinery that reports the outcomes."""
    return _startup_owned(str(repo.tree), tuple(repo.spec.install.import_paths))


def pristine_binds(repo: PreparedRepo) -> tuple[tuple[Path, str, bool], ...]:
    """Read-only mounts of the pristine release's import paths at ``/frog/pristine/<i>`` for a package pytest
    itself imports (:func:`pytest_startup_owned`), else none: what ``frog_boot.py`` and the warm server's
    parent bind pytest to."""
    if not pytest_startup_owned(repo):
        return ()
    return tuple((repo.tree / p, f"/frog/pristine/{i}", False) for i, p in enumerate(repo.spec.install.import_paths))


def _owned_modules(tree: Path, import_paths: tuple[str, ...]) -> list[str]:
    """Top-level module names the package's import paths provide (the parent must never import them)."""
    out = set()
    for p in import_paths:
        d = tree / p
        if not d.is_dir():
            continue
        for e in d.iterdir():
            if e.is_dir() and not e.is_symlink():
                out.add(e.name)
            elif e.suffix in (".py", ".so", ".pyd") or e.name.endswith(".pth"):
                out.add(e.name.split(".")[0])
    return sorted(out)


@functools.lru_cache(maxsize=64)
def _startup_owned(tree: str, import_paths: tuple[str, ...]) -> tuple[str, ...]:
    owned = _owned_modules(Path(tree), import_paths)
    return tuple(owned) if PYTEST_STARTUP & set(owned) else ()


def run_tests(repo: PreparedRepo, tree: Path, ids: tuple[str, ...] | None, timeout: float,
              limits: Limits | None = None, backend: str = "local", *, details: bool = False,
              env: dict[str, str] | None = None, binds: tuple[tuple[Path, str, bool], ...] = (),
              out_dir: Path | None = None, plugins: tuple[str, ...] = (), args: tuple[str, ...] = (),
              repeat: int = 1, canaries: Canaries | None = None, authenticate: bool = False,
              protect: tuple[str, ...] = (), guard: dict[str, list[str]] | None = None) -> RunResult:
    """:func:`run_selected` with more in and out: failure ``details`` (the report plugin's "details" key),
    extra sandbox ``env`` (a ``PYTHONPATH`` there is appended to the plugin's) and ``binds``, ``out_dir`` (a
    host folder mounted writable at ``/frog/out`` that the caller keeps: the coverage map reads its data
    there), more pytest ``plugins`` loaded with ``-p``, and more pytest ``args`` (after the spec's, so that
    e.g. ``--timeout=15`` overrides the spec's per-test timeout), and ``repeat``: run each test that many
    times in the one session (``RunResult.passes`` then holds one status map per pass).

    Grading adds ``canaries`` (selected too, run last, judged by :meth:`Canaries.verdict`), ``authenticate``
    (the plugin signs its report with a key it reads from a FIFO before any code under test runs; an unsigned
    or badly signed report is not trusted) and ``protect`` (paths of the tree mounted read-only, so code under
    test can't rewrite the tests it is judged by) and ``guard`` (:func:`guard_for`: the report plugin refuses,
    and reports, the package's own code reading the test files).
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
        chosen: Any = None
        if ids is not None:
            chosen = list(ids) if canaries is None else grading_selection(ids, canaries, guard)
        elif guard is not None:  # the whole suite, its test files guarded
            chosen = {"guard": guard}
        key_fd = -1
        if authenticate:
            key = secrets.token_hex(32).encode()
            key_fd = key_fifo(io / "in", chosen, guard, key)
            run_env["FROG_KEY_FIFO"] = "/frog/in/key"
            run_env.update(vault_env())
        elif chosen is not None:
            (io / "in" / "select.json").write_text(json.dumps(chosen))
        if chosen is not None and (guard is not None or not authenticate):
            run_env["FROG_SELECT"] = "/frog/in/select.json"
        limits = limits or Limits(command_timeout=timeout, output_cap=8192)
        ro = tuple((tree / p, f"/testbed/{p}", False) for p in protect if (tree / p).exists())
        pristine = pristine_binds(repo)
        try:
            sb = make_sandbox(backend, repo, tree, limits,
                              binds=((io / "in", "/frog/in", False), (out, "/frog/out", True),
                                     (Path(plugin), "/frog/plugin", False), *binds, *ro, *pristine))
            files = test_files_of(ids) if ids is not None else list(repo.spec.tests.paths)
            if canaries is not None and canaries.file not in files:
                files.append(canaries.file)
            start_pytest = ["-m", "pytest"]
            if pristine:  # pytest imports the package itself: start it bound to a pristine copy (frog_boot.py)
                start_pytest = ["/frog/plugin/frog_boot.py"]
                run_env["FROG_OWNED"] = ",".join(pytest_startup_owned(repo))
                run_env["FROG_PRISTINE"] = ":".join(inside for _, inside, _ in pristine)
            argv = [str(repo.python), *start_pytest, *repo.spec.pytest_args, "-q", "-p", "frog_report",
                    *(a for p in plugins for a in ("-p", p)), *args, *files]
            result = sb.exec(argv, timeout, env=run_env)
            sb.close()
        finally:
            if key_fd >= 0:
                os.close(key_fd)
        if result.output.startswith("bwrap:"):
            return RunResult({}, result.exit_code, result.output[-2000:], f"sandbox failed: {result.output[:300]}",
                             seconds=time.monotonic() - start)
        if result.timed_out:
            if canaries is not None:  # grading: the code under test ran past the limit, which is its doing
                statuses = {t: TestStatus.FAILED for t in ids or ()}
                return RunResult(statuses, None, f"the tests ran past the grading limit of {timeout:.0f} s and were "
                                 "killed; every selected test counts as failed\n" + result.output[-2000:],
                                 seconds=time.monotonic() - start)
            return RunResult({}, None, result.output[-2000:], f"grading timed out after {timeout:.0f} s",
                             seconds=time.monotonic() - start)
        return read_report(out / "report.json", ids, result.exit_code, result.output, time.monotonic() - start,
                           key=key if authenticate else None, canaries=canaries)


def read_report(path: Path, ids: tuple[str, ...] | None, exit_code: int | None, output: str,
                seconds: float = 0.0, key: bytes | None = None, canaries: Canaries | None = None) -> RunResult:
    """Statuses from the plugin's report file, cross-checked with pytest's exit code (see :func:`run_selected`),
    and, in grading, with the report's signature under ``key`` and the ``canaries``' verdict."""
    statuses = {t: TestStatus.MISSING for t in ids or ()}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO there must not hang us
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ValueError("not a regular file")
        with os.fdopen(fd, "rb") as f:
            raw = f.read(64 << 20)
        report = json.loads(raw)
        if not isinstance(report, dict):
            raise ValueError("not an object")
    except (OSError, ValueError):
        note = f"pytest wrote no report (exit code {exit_code}); every selected test counts as failed"
        return RunResult(statuses, exit_code, note + "\n" + output[-2000:], seconds=seconds, output=output)
    if key is not None and not verify(key, report):
        reason = ("the test report is not signed by the grading plugin: something in the test process wrote it "
                  "(every selected test counts as failed)")
        return RunResult(statuses, exit_code, reason, seconds=seconds, tampering=[reason], output=output)
    guarded = report.get("guard")  # a baseline run guards too, where a refused read just fails its test
    if canaries is not None:  # every layer that saw tampering says so: the guard and seal, and the canaries
        flags = sorted({str(g)[:300] for g in guarded})[:10] if isinstance(guarded, list) else []
        flags += canaries.verdict(report.get("tests", {}), exit_code, report.get("collect_errors", []))
        if flags:
            return RunResult(statuses, exit_code, "; ".join(flags), seconds=seconds, tampering=flags, output=output)
    if report.get("exitstatus") != exit_code:
        note = (f"the report says exit status {report.get('exitstatus')} but pytest exited with "
                f"{exit_code}; the report is not trusted")
        return RunResult(statuses, exit_code, note, seconds=seconds, output=output)

    def parse(tests: dict[str, str]) -> dict[str, TestStatus]:
        out = dict.fromkeys(ids or (), TestStatus.MISSING)
        for t, s in tests.items():
            if ids is None or t in out:
                out[t] = TestStatus(s) if s in TestStatus.__members__ else TestStatus.ERROR
        return out

    statuses = parse(report.get("tests", {}))
    passes = [parse(p) for p in report.get("passes", [])]
    note = ""
    if canaries is not None:  # the must-fail canaries make an honest run exit 1 (tests failed), nothing else
        if exit_code != 1:
            note = f"pytest exited with {exit_code} (an honest graded run exits 1); not trusted"
            statuses = {t: TestStatus.FAILED for t in statuses}
    elif all(s.ok for p in (passes or [statuses]) for s in p.values()) and exit_code != 0:
        errors = [str(e) for e in report.get("collect_errors", [])]
        if exit_code == 1 and errors:
            # --continue-on-collection-errors: the modules that did not import are what failed; the tests
            # that were collected ran, and what they say stands (a miner's new test module importing an API
            # the old release lacks, a test dependency the lock does not have)
            note = f"{len(errors)} test module(s) failed to collect: {', '.join(errors[:3])}"
        else:
            what = "every selected test passed" if statuses else "no selected test ran"
            note = f"{what} but pytest exited with {exit_code}; not trusted"
            statuses = {t: TestStatus.FAILED for t in statuses}
            passes = [statuses for _ in passes]
    return RunResult(statuses, exit_code, note, None, report.get("details", {}), report.get("collect_errors", []),
                     seconds, passes, float(report.get("cpu_seconds", 0.0)), output=output,
                     collected=int(report.get("collected", 0)))


def patch_files(patch: str) -> frozenset[str]:
    """The files a unified diff touches (its ``+++ b/`` and ``--- a/`` sides)."""
    out = set()
    for line in patch.splitlines():
        if line.startswith(("+++ b/", "--- a/")):
            out.add(line[6:].split("\t")[0].strip())
    return frozenset(out)


def _patched(template: Template, patch: str, label: str) -> dict[str, bytes | None] | str:
    """The files ``patch`` touches, as they read once it is applied to ``template`` (None: deleted), or why
    it does not apply. Cached per template and patch, in this process and on disk (:func:`_kept_patched`)."""
    digest = hashlib.sha256(patch.encode()).hexdigest()
    key = (str(template.root), digest)
    if key not in _PATCHED:
        kept = _kept_patched(template, digest)
        if kept is not None:
            _PATCHED[key] = kept
            return kept
        files = sorted(patch_files(patch))
        with tempfile.TemporaryDirectory(dir=paths.home()) as d:
            for f in files:
                src = template.root / f
                if src.is_file() and not src.is_symlink():
                    (Path(d) / f).parent.mkdir(parents=True, exist_ok=True)
                    (Path(d) / f).write_bytes(src.read_bytes())
            try:
                apply_patch(Path(d), patch, label)
            except SourceError as e:
                return str(e)
            _PATCHED[key] = {f: (Path(d) / f).read_bytes() if (Path(d) / f).is_file() else None for f in files}
        keep_json(_patched_file(template, digest), {
            "template": template.root.name, "patch": digest,
            "files": {f: None if b is None else base64.b64encode(b).decode() for f, b in _PATCHED[key].items()}})
    return _PATCHED[key]


def _patched_file(template: Template, digest: str) -> Path:
    return paths.home() / "patched" / template.root.name / f"{digest}.json"


def _kept_patched(template: Template, digest: str) -> dict[str, bytes | None] | None:
    """What :func:`_patched` made of this patch and template in an earlier process, from ``$FROG_GYM_HOME/patched``
    (host-only: no sandbox mounts it; a template's folder is named by the digest of what it was built from, and
    never changes once built), so that each process grading a task does not run ``git apply`` on its test and gold
    patches again: two per grade. None where there is none, or it does not read back as written."""
    try:
        d = json.loads(_patched_file(template, digest).read_text(encoding="utf-8"))
        if d.get("template") != template.root.name or d.get("patch") != digest:
            return None
        return {str(f): None if b is None else base64.b64decode(b, validate=True) for f, b in d["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # (a bad base64 is a ValueError)
        return None


_PATCHED: dict[tuple[str, str], dict[str, bytes | None]] = {}


def hidden_test_changes(task: Task, template: Template) -> list[Change] | str:
    """The task's hidden tests (``test_patch``) as changes to the starting tree, written after the agent's
    (whose edits to those files :func:`scope` has already reset), or why the patch does not apply.

    A synthetic task's template lacks them when it was built hidden (``template.hidden_tests``; visible-tests
    templates keep them); a FrogLive task's release never had them."""
    from frog_gym.catalog.live import is_live

    if not task.test_patch.strip() or not (template.hidden_tests or is_live(task.instance_id)):
        return []
    after = _patched(template, task.test_patch, f"the test patch of {task.instance_id}")
    if isinstance(after, str):
        return after
    out = []
    for f, new in after.items():
        old = (template.root / f).read_bytes() if (template.root / f).is_file() else None
        if old != new:
            out.append(Change(f, old, new))
    return out


def guard_for(repo: PreparedRepo, task: Task, canaries: Canaries, template: Template | None = None,
              kept: list[Change] = ()) -> dict[str, Any]:
    """What the report plugin's guard protects in a graded run: the files of the graded tests, the hidden
    tests and the canaries (``files``), from the package's own code (``code``: the spec's source folders and
    the gold patch's non-test files), telling test code (``tests``: the spec's test paths) apart; the package's
    traceback utilities (``readers``: the spec's ``tests.source_readers``) read a line for their caller.

    With the ``template`` and the agent's ``kept`` changes, the vault also gets what it needs to tell a value
    that equals anything (``values``): the FAIL_TO_PASS ids, at whose passing report it looks at every class
    alive, and for each Python file of the package the agent changed, what the repository's own version of it
    defines (:func:`frog_gym.grading.integrity.kept_defined_names`): a comparison or format method made by changed code
    must be code that version defines. The processes a test starts never get ``values``
    (:func:`key_fifo`)."""
    spec = repo.spec
    gold = [f for f in patch_files(task.patch) if not spec.tests.is_test_file(f)]
    files = set(test_files_of(task.selected_tests)) | set(patch_files(task.test_patch)) | {canaries.file}
    out: dict[str, Any] = {"files": sorted(files), "code": sorted({*spec.mutable, *gold}),
                           "tests": sorted(spec.tests.paths), "readers": sorted(spec.tests.source_readers)}
    if template is not None:
        changed = {}
        for c in kept:
            if c.path.endswith(".py") and c.new is not None and not spec.tests.is_test_file(c.path):
                own = _pristine(repo, task, template, c.path)
                changed[c.path] = kept_defined_names(own) if own is not None else {"code": []}
        out["values"] = {"f2p": list(task.FAIL_TO_PASS), "changed": changed}
    return out


def _pristine(repo: PreparedRepo, task: Task, template: Template, rel: str) -> bytes | None:
    """The repository's own version of a file: as the gold patch leaves it where the patch touches it (a
    FrogLive task's fix is a later release's code), else the snapshot's (the host's, never the agent's)."""
    if rel in patch_files(task.patch):
        after = _patched(template, task.patch, f"the gold patch of {task.instance_id}")
        if isinstance(after, dict):
            return after.get(rel)
    p = repo.tree / rel
    return p.read_bytes() if p.is_file() and not p.is_symlink() else None


START_TEST_OUTPUT, END_TEST_OUTPUT = ">>>>> Start Test Output", ">>>>> End Test Output"
TEST_EXIT_CODE = ">>>>> Test Exit Code"
"""SWE-bench's log markers (``swebench.harness.constants``): its grading reads only what lies between the
first two, and the test command's exit status from the first line that starts with the third."""


def tap_lines(ids: tuple[str, ...], statuses: dict[str, TestStatus]) -> list[str]:
    """Per-test results as TAP lines, ``ok N id`` when the test counts as passing, else ``not ok N id``.

    SWE-bench's ``parse_log_tap`` keeps the whole rest of the line as the id, so ids with spaces survive
    (its pytest parser cuts them at the first space); a test with no status is ``not ok``.

    >>> tap_lines(("t.py::test_a[a b]", "t.py::test_b"), {"t.py::test_a[a b]": TestStatus.PASSED})
    ['ok 1 t.py::test_a[a b]', 'not ok 2 t.py::test_b']
    """
    return [f"{'ok' if statuses.get(t, TestStatus.MISSING).ok else 'not ok'} {n} {t}" for n, t in enumerate(ids, 1)]


def write_test_log(path: Path, ids: tuple[str, ...], run: RunResult, inferred: tuple[str, ...] = ()) -> str:
    """Keep a grading run's raw test log at ``path`` (host side, where no sandbox can reach); returns its path.

    The log reads the way SWE-bench's grading reads an eval log: the per-test results between its markers
    (:func:`tap_lines`, parsed by ``parse_log_tap``), pytest's exit code, then pytest's own output, with
    any marker it prints defused so that output from the code under test can never pose as results.
    ``inferred`` tests (not run: :mod:`frog_gym.grading.impact`) are listed after the markers.
    """
    output = run.output.replace(">>>>>", ">>>> >")
    passed = bool(ids) and all(run.statuses.get(t, TestStatus.MISSING).ok for t in ids)
    # The exit status of the selected tests: grading adds must-fail canary tests, so pytest itself exits 1
    # on an honest run; a run whose statuses were not trusted has every test failed already.
    code = 0 if passed and not run.tampering else (run.exit_code or 1)
    lines = [START_TEST_OUTPUT, *tap_lines(ids, run.statuses), END_TEST_OUTPUT, f"{TEST_EXIT_CODE}: {code}",
             f"pytest exit code (canary tests included): {run.exit_code}"]
    if inferred:
        lines.append(f"not run, carried over from the repository's own run (they reach no changed code): "
                     f"{len(inferred)} PASS_TO_PASS tests")
        lines.extend(f"  inferred {t}" for t in inferred)
    if run.tampering:
        lines.append("tampering: " + "; ".join(run.tampering).replace(">>>>>", ">>>> >"))
    if run.infra_failure:
        lines.append(f"infrastructure failure: {run.infra_failure}")
    if run.note:
        lines.append(f"note: {run.note.replace('>>>>>', '>>>> >')}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text("\n".join([*lines, "pytest output:", output]) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return str(path)
