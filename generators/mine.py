"""Mining real bug fixes from consecutive PyPI releases (FrogLive tasks; see :mod:`frog_gym.catalog.live`).

For a registered repository, ``mine`` lists its releases on the package index pip uses (the index's JSON
API), and for each consecutive pair (N, N+1) of releases with a source distribution:

1. fetches both sdists, verified against the sha256 the index lists (recorded in the task);
2. diffs the trees: files the spec counts as tests form the test change, files under the spec's mutable
   source paths form the source change (split into hunks); everything else (docs, changelog) is ignored;
3. runs the changed test files on N+1 (in N+1's venv) and on N with N+1's tests (in N's venv): tests that
   pass on N+1 and fail (not error at collection) on N are the candidate fixes;
4. groups the candidates by test file and reduces N+1's source change to the smallest set of hunks that
   makes each group pass on N (delta debugging over files, then hunks); groups with equal hunk sets merge;
5. writes the task (release N as the starting tree, the hunks as the gold ``patch``, N+1's test files of
   those tests as the hidden ``test_patch``), and validates it three times exactly as graded
   (:func:`frog_gym.grading.grade.grade`): FAIL_TO_PASS fail and PASS_TO_PASS pass without a fix, all pass with
   the gold patch;
6. takes its problem statement from release N+1's changelog entry that names what the fix touches, or
   generates one from the failures and flags it (``provenance["statement"] == "generated"``).

Each release gets its own venv through the spec's lock; when a release's tests do not run with it (its
dependencies changed), a lock resolved for that release is used instead and recorded in the task. A pair
is skipped with a one-line reason in the report (no tests, no sdist, no test change, suite does not run);
every pair's outcome is remembered under ``$FROG_GYM_HOME/mine``, so mining resumes where it stopped.

The parts live beside this driver: the index client (:mod:`~frog_gym.generators.releases`), hunks and
delta debugging (:mod:`~frog_gym.generators.hunks`), changelog matching
(:mod:`~frog_gym.generators.changelog`) and mirror tasks (:mod:`~frog_gym.generators.mirror`).

Example:
    >>> hunks_of("a.py", "x = 1\\ny = 2\\nz = 3\\n", "x = 1\\ny = 5\\nz = 3\\n")[0].new
    ('y = 5\\n',)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from frog_gym import paths
from frog_gym.grading.runner import TestStatus, run_tests
from frog_gym.grading.grade import grade
from frog_gym.catalog.live import LIVE_MARK, MIRROR_MARK, release_spec
from frog_gym.catalog.snapshot import PreparedRepo, prepare, resolve_lock, snapshot_tree
from frog_gym.catalog.spec import RepoSpec, load_repo, repos_dir
from frog_gym.catalog.task import Task, ids_sidecar_text
from frog_gym.sandbox.workspace import Change, Template, Workspace, _manifest, diff_text, template_for, write_changes
from frog_gym.generators.changelog import (
    changelog_entries,
    changelog_section,
    clean_entry,
    enclosing_names,
    fix_names,
    issue_refs,
    match_changelog,
    test_name_words,
)
from frog_gym.generators.hunks import Hunk, apply_hunks, hunks_of, minimize
from frog_gym.generators.mirror import mirror_task, reverse_onto
from frog_gym.generators.releases import Release, fetch_release, list_releases
from frog_gym.generators.restate import compose
from frog_gym.generators.statements import Failure
from frog_gym.generators.validate import Scratch, names_this_machine

MAX_HUNKS = 120
"""A release pair with more source hunks than this is skipped (too large to reduce in reasonable time)."""
MAX_RUNS = 20
"""Test runs one group's hunk reduction may use; past it the (passing, not minimal) set is kept."""
MAX_GROUPS = 5
"""Candidate groups (test modules) reduced per pair, the largest first."""
PAIR_BUDGET_S = 420.0
"""Past this many seconds on one pair no further group is reduced."""
TEST_TIMEOUT = 8
"""Per-test timeout (seconds) of the miner's runs: a new test that hangs on the old release fails fast."""
_MARKER = ".frog-complete"


# -- trees and hunks -----------------------------------------------------------------------------------
def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not p.is_symlink() and rel != _MARKER and "__pycache__" not in rel \
                and ".egg-info/" not in rel and rel != "PKG-INFO":
            out[rel] = p.read_bytes()
    return out


def _is_source(spec: RepoSpec, rel: str) -> bool:
    """Whether ``rel`` is package source: under the spec's mutable paths, also in the layouts older
    releases used (a module ``pkg.py`` before the package ``pkg/``, the package outside ``src/``).

    >>> import dataclasses; from frog_gym.catalog.spec import load_repo
    >>> s = dataclasses.replace(load_repo("semver"), mutable=("src/parse",))
    >>> [_is_source(s, p) for p in ("src/parse/a.py", "parse.py", "parse/b.py", "tests/test_parse.py", "setup.py")]
    [True, True, True, False, False]
    """
    if spec.tests.is_test_file(rel):
        return False
    for m in spec.mutable:
        m = m.rstrip("/")
        for root in {m, m.removeprefix("src/")}:
            if rel == root or rel.startswith(root + "/") or rel == root.removesuffix(".py") + ".py":
                return True
    return False




# -- the miner -----------------------------------------------------------------------------------------
@dataclass
class PairResult:
    """What mining one release pair found."""

    repo: str
    old: str
    new: str
    outcome: str
    """``kept``, ``skipped`` or ``error``."""
    reason: str = ""
    candidates: int = 0
    kept: list[str] = field(default_factory=list)
    seconds: float = 0.0
    test_runs: int = 0
    released: str = ""


def mine_dir() -> Path:
    d = paths.home() / "mine"
    d.mkdir(parents=True, exist_ok=True)
    return d


def records_path(repo: str, family: str = "live", tasks_dir: Path | None = None) -> Path:
    """The committed record of every release pair of ``repo`` mined for ``family``: one :class:`PairResult` per
    line, in ``registry/mine/`` beside the task folder, so that which pairs were mined (and for which family),
    and the mining report, survive the machine that mined them (``$FROG_GYM_HOME/mine`` is its working copy).
    Mining into another task folder (``tasks_dir``) keeps its records in that folder's ``mine/``."""
    folder = tasks_dir / "mine" if tasks_dir is not None else repos_dir().parent / "mine"
    return folder / f"{repo}.{family}.jsonl"


def recorded(repo: str, family: str = "live", tasks_dir: Path | None = None) -> dict[tuple[str, str], PairResult]:
    """The committed pair outcomes of ``repo`` for ``family``, by ``(old, new)`` version."""
    path = records_path(repo, family, tasks_dir)
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = PairResult(**json.loads(line))
            out[(r.old, r.new)] = r
    return out


def keep_records(results: list[PairResult], family: str = "live", tasks_dir: Path | None = None) -> None:
    """Add (or replace) pair outcomes in their repositories' committed records, each file written once, in
    release order."""
    by_repo: dict[str, list[PairResult]] = {}
    for r in results:
        by_repo.setdefault(r.repo, []).append(r)
    for repo, rs in by_repo.items():
        have = recorded(repo, family, tasks_dir)
        have.update({(r.old, r.new): r for r in rs})
        path = records_path(repo, family, tasks_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = sorted(have.values(), key=lambda x: (Version(x.new), Version(x.old)))
        path.write_text("".join(json.dumps(dataclasses.asdict(x), sort_keys=True) + "\n" for x in rows),
                        encoding="utf-8")


def keep_local_records(family: str = "live") -> int:
    """Copy the pair outcomes recorded under ``$FROG_GYM_HOME/mine`` for registered repositories into the
    committed records (a machine's mining, made part of the registry); returns how many were new or changed."""
    kept: dict[str, dict[tuple[str, str], PairResult]] = {}
    new = [r for r in _local_results(family) if (repos_dir() / f"{r.repo}.toml").exists()
           and kept.setdefault(r.repo, recorded(r.repo, family)).get((r.old, r.new)) != r]
    keep_records(new, family)
    return len(new)


def live_path(repo: str, tasks_dir: Path | None = None, family: str = "live") -> Path:
    return (tasks_dir or repos_dir().parent / "tasks") / f"{repo}.{family}.jsonl"


def append_task(task: Task, path: Path) -> None:
    """Append one record to a task file and rewrite its ``.ids`` sidecar."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(task.to_json() + "\n")
    path.with_suffix(".ids").write_text(ids_sidecar_text(path.read_bytes()), encoding="utf-8")


def _statuses(r: Any) -> dict[str, TestStatus]:
    return {} if r.infra_failure else dict(r.statuses)


class _Pair:
    """Mining state of one release pair (both trees prepared, their file maps, a scratch workspace)."""

    def __init__(self, spec: RepoSpec, old: PreparedRepo, new: PreparedRepo, ws: Workspace, timeout: float):
        self.spec, self.old, self.new, self.ws, self.timeout = spec, old, new, ws, timeout
        self.runs = 0
        self.seconds: list[float] = []
        self.started = time.monotonic()
        self.base = Template(old.tree, _manifest(old.tree))
        self.new_base = Template(new.tree, _manifest(new.tree))

    def run(self, repo: PreparedRepo, base: Template, changes: list[Change], files: list[str],
            ids: tuple[str, ...] | None = None, details: bool = False, first_failure: bool = False) -> Any:
        """Run ``files`` (or exactly ``ids``) on ``base`` plus ``changes`` with ``repo``'s venv
        (``first_failure``: stop at the first failing test, when only "do all pass?" matters)."""
        self.runs += 1
        self.ws.sync(base)
        write_changes(self.ws.path, changes)
        spec = dataclasses.replace(repo.spec, tests=dataclasses.replace(repo.spec.tests, paths=tuple(files)))
        r = run_tests(PreparedRepo(spec, repo.tree, repo.venv), self.ws.path, ids, self.timeout,
                      details=details, args=("--continue-on-collection-errors", f"--timeout={TEST_TIMEOUT}",
                                             *(["--maxfail=1"] if first_failure else [])))
        self.seconds.append(r.seconds)
        return r


def _is_text(b: bytes | None) -> bool:
    """Whether ``b`` (a file's bytes, ``None`` for an absent file) is UTF-8 text."""
    try:
        _text(b)
    except UnicodeDecodeError:
        return False
    return True


def _text(b: bytes | None) -> str | None:
    if b is None:
        return None
    return b.decode("utf-8")


def _test_targets(spec: RepoSpec, paths_: Iterable[str], tree_files: dict[str, bytes]) -> list[str]:
    """Changed test modules that pytest should collect (inside the spec's test paths; a file the spec names
    itself, such as voluptuous's ``voluptuous/tests/tests.py``, whatever its name)."""
    out = []
    for p in paths_:
        name = Path(p).name
        named = name.startswith("test_") or name.endswith("_test.py") or p in spec.tests.paths
        if p not in tree_files or not p.endswith(".py") or not named:
            continue
        if any(p == t or p.startswith(t.rstrip("/") + "/") for t in spec.tests.paths):
            out.append(p)
    return sorted(out)


def _bad_failure(d: dict[str, str]) -> bool:
    """A failure that only says N lacked a new API (a feature, not a fix): a missing import or module
    attribute, or an unknown keyword argument."""
    msg = f"{d.get('exc_type', '')}: {d.get('message', '')}"
    return bool(re.search(r"cannot import name|No module named|module '[\w.]+' has no attribute|"
                          r"unexpected keyword argument", msg))


def _collect_error(r: Any) -> str:
    """``path: message`` of a run's first collection error (e.g. a new test module importing what the old
    release lacks).

    >>> from frog_gym.grading.runner import RunResult
    >>> _collect_error(RunResult({}, 1, "", None, {"t.py": {"message": "E   ImportError: no x"}}, ["t.py"]))
    't.py: ImportError: no x'
    """
    first = r.collect_errors[0]
    d = r.details.get(first, {})
    msg = re.sub(r"^E\s+", "", str(d.get("message") or d.get("exc_type") or "")).strip().splitlines()
    return f"{first}: {(msg or ['error'])[0][:160]}"


def _prepare_release(spec: RepoSpec, rel: Release) -> PreparedRepo:
    return prepare(fetch_release(spec, rel))


def _relock(repo: PreparedRepo) -> PreparedRepo:
    """``repo`` with a lock resolved for its own release (its test dependencies differ from the spec's)."""
    s = repo.spec
    lock = resolve_lock(list(s.install.requires), repo.tree, f"'{s.name}' {s.source.version}", key=s.source.key,
                        release=f"{s.source.name}=={s.source.version}")
    return prepare(release_spec(s, s.source.version, s.source.sha256, lock))


def mine_pair(spec: RepoSpec, a: Release, b: Release, *, tasks_dir: Path | None = None, runs: int = 3,
              timeout: float = 180, family: str = "live", log: Callable[[str], None] = print) -> PairResult:
    """Mine one release pair ``a`` -> ``b`` (see the module docstring); never raises for bad input.

    ``family`` ``mirror`` turns each fix into a mirror task instead (see :func:`mirror_task`)."""
    start = time.monotonic()
    res = PairResult(spec.name, a.version, b.version, "skipped", released=b.uploaded[:10])

    def done(outcome: str, reason: str = "") -> PairResult:
        res.outcome, res.reason, res.seconds = outcome, reason, round(time.monotonic() - start, 1)
        return res

    try:
        spec_a, spec_b = fetch_release(spec, a), fetch_release(spec, b)
        tree_a, tree_b = snapshot_tree(spec_a), snapshot_tree(spec_b)
    except Exception as e:  # noqa: BLE001 (a broken release is a skip with its reason)
        return done("skipped", f"no usable sdist: {type(e).__name__}: {str(e)[:160]}")
    fa, fb = _files(tree_a), _files(tree_b)
    if not any(spec.tests.is_test_file(p) for p in fb):
        return done("skipped", f"the sdist of {b.version} has no tests")
    changed = sorted(p for p in set(fa) | set(fb) if fa.get(p) != fb.get(p))
    test_changed = [p for p in changed if spec.tests.is_test_file(p)]
    src_changed = [p for p in changed if _is_source(spec, p)]
    targets = _test_targets(spec, test_changed, fb)
    if not targets:
        return done("skipped", "no test module added or changed")
    if not src_changed:
        return done("skipped", "no source change")
    # binary data beside the code (compiled message catalogues, images) cannot be a hunk of a text patch;
    # a fix that needs it fails its reduction and is skipped there
    src_changed = [p for p in src_changed if all(_is_text(t.get(p)) for t in (fa, fb))]
    if not src_changed:
        return done("skipped", "every changed source file is binary")
    old_text = {p: _text(fa[p]) for p in src_changed if p in fa}
    new_text = {p: _text(fb[p]) for p in src_changed if p in fb}
    hunks = [h for p in src_changed for h in hunks_of(p, old_text.get(p), new_text.get(p))]
    if len(hunks) > MAX_HUNKS:
        return done("skipped", f"the source change has {len(hunks)} hunks (limit {MAX_HUNKS})")
    try:
        test_changes_all = [Change(p, fa.get(p), fb.get(p)) for p in test_changed]
        old_repo = _prepare_release(spec, a)
        new_repo = _prepare_release(spec, b)
    except Exception as e:  # noqa: BLE001
        return done("skipped", f"the venv does not build: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    with Scratch() as ws:
        pair = _Pair(spec, old_repo, new_repo, ws, timeout)
        try:
            return _mine(pair, spec, a, b, res, done, fa, targets, test_changes_all, hunks, old_text,
                         tasks_dir, runs, family, log)
        except Exception as e:  # noqa: BLE001 (one broken pair must not stop the run)
            res.test_runs = pair.runs
            return done("error", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")


def _mine(pair: _Pair, spec: RepoSpec, a: Release, b: Release, res: PairResult, done: Callable[..., PairResult],
          fa: dict[str, bytes], targets: list[str], test_changes: list[Change], hunks: list[Hunk],
          old_text: dict[str, str | None], tasks_dir: Path | None, runs: int, family: str,
          log: Callable[[str], None]) -> PairResult:
    on_new = pair.run(pair.new, pair.new_base, [], targets)
    passed_new = {t for t, s in _statuses(on_new).items() if s.ok}
    if not passed_new:
        relocked = _relock(pair.new)
        if relocked.venv != pair.new.venv:
            pair.new = relocked
            on_new = pair.run(pair.new, pair.new_base, [], targets)
            passed_new = {t for t, s in _statuses(on_new).items() if s.ok}
    if not passed_new:
        res.test_runs = pair.runs
        why = on_new.infra_failure or (on_new.note.strip().splitlines() or ["none passed"])[0][:120]
        return done("skipped", f"the changed tests do not run on {b.version} ({why})")
    on_old = pair.run(pair.old, pair.base, test_changes, targets, details=True)
    st_old = _statuses(on_old)
    if not st_old or not any(s.ok for s in st_old.values()):
        relocked = _relock(pair.old)
        if relocked.venv != pair.old.venv:
            pair.old = relocked
            on_old = pair.run(pair.old, pair.base, test_changes, targets, details=True)
            st_old = _statuses(on_old)
    if not st_old and on_old.collect_errors and not on_old.infra_failure:
        res.test_runs = pair.runs
        return done("skipped", f"no changed test module imports on {a.version} ({_collect_error(on_old)})")
    if not st_old:
        res.test_runs = pair.runs
        why = on_old.infra_failure or (on_old.note.strip().splitlines() or ["no test ran"])[0][:160]
        return done("skipped", f"the suite does not run on {a.version}: {why}")
    collect_failed = set(on_old.collect_errors)
    cands = sorted(t for t in passed_new if t in st_old and st_old[t] is TestStatus.FAILED
                   and t.split("::", 1)[0] not in collect_failed
                   and not _bad_failure(on_old.details.get(t, {})))
    res.candidates = len(cands)
    if not cands:
        res.test_runs = pair.runs
        return done("skipped", "no new or changed test fails on the old release (or only for a missing API)")
    groups: dict[str, list[str]] = {}
    for t in cands:
        groups.setdefault(t.split("::", 1)[0], []).append(t)
    memo: dict[tuple[frozenset[int], tuple[str, ...]], bool] = {}

    def passes(idx: list[int], ids: tuple[str, ...]) -> bool:
        key = (frozenset(idx), ids)
        if key not in memo:
            r = pair.run(pair.old, pair.base, test_changes + apply_hunks(old_text_str, [hunks[i] for i in idx]),
                         sorted({t.split("::", 1)[0] for t in ids}), ids, first_failure=True)
            memo[key] = not r.infra_failure and all(r.statuses[t].ok for t in ids)
        return memo[key]

    old_text_str = {p: t for p, t in old_text.items() if t is not None}
    everything = list(range(len(hunks)))
    found: dict[tuple[int, ...], list[str]] = {}
    minimal_of: dict[tuple[int, ...], bool] = {}
    for file, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_GROUPS]:
        if time.monotonic() - pair.started > PAIR_BUDGET_S:
            break
        ids_t = tuple(ids)
        if not passes(everything, ids_t):
            continue
        budget = [MAX_RUNS]
        by_file: dict[str, list[int]] = {}
        for i, h in enumerate(hunks):
            by_file.setdefault(h.path, []).append(i)
        files = minimize(sorted(by_file), lambda fs: passes([i for f in fs for i in by_file[f]], ids_t), budget)
        chosen = minimize([i for f in files for i in by_file[f]], lambda s: passes(s, ids_t), budget)
        key = tuple(sorted(chosen))
        found.setdefault(key, []).extend(ids)
        minimal_of[key] = budget[0] > 0
    if not found:
        res.test_runs = pair.runs
        return done("skipped", f"{len(cands)} candidate(s), but N+1's source change does not make them pass on N")
    path = live_path(spec.name, tasks_dir, family)
    existing = _existing_ids(path)
    mark = LIVE_MARK if family == "live" else MIRROR_MARK
    for k, (key, f2p) in enumerate(sorted(found.items(), key=lambda kv: kv[1][0]), start=1):
        iid = f"{spec.name}{mark}{b.version}-{k}"
        if iid in existing:
            res.kept.append(iid)
            continue
        task = _build_task(pair, spec, a, b, iid, [hunks[i] for i in key], sorted(set(f2p)), test_changes,
                           old_text_str, minimal_of[key], len(hunks))
        if task is None:
            continue
        if family == "mirror":
            task, why = mirror_task(task, [hunks[i] for i in key], old_text_str, runs)
            if task is None:
                log(f"  {iid}: no mirror: {why}")
                continue
            append_task(task, path)
            res.kept.append(iid)
            log(f"  {iid}: kept as a mirror task ({len(task.FAIL_TO_PASS)} F2P, {len(task.PASS_TO_PASS)} P2P)")
            continue
        ok, why, val = validate_live(pair, task, runs)
        if not ok:
            log(f"  {iid}: not kept: {why}")
            continue
        task = dataclasses.replace(task, validation=val)
        append_task(task, path)
        res.kept.append(iid)
        log(f"  {iid}: kept ({len(task.FAIL_TO_PASS)} F2P, {len(task.PASS_TO_PASS)} P2P, "
            f"{task.features['hunks']}/{len(hunks)} hunks, statement {task.provenance['statement']})")
    res.test_runs = pair.runs
    return done("kept" if res.kept else "skipped", "" if res.kept else "no candidate survived validation")


def statement_ok(repo: str, version: str, sha256: str, f2p: Iterable[str]) -> Callable[[str], bool]:
    """Whether a statement passes the statement checker on release ``version`` of ``repo`` (it names no
    test and no symbol that release lacks)."""
    from frog_gym.generators.statement_check import problems, repo_symbols

    symbols, pkgs, _ = repo_symbols(repo, version, sha256)
    return lambda text: not problems(text, tuple(f2p), "", symbols, set(pkgs))


def _existing_ids(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return {json.loads(line)["instance_id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def _build_task(pair: _Pair, spec: RepoSpec, a: Release, b: Release, iid: str, hunks: list[Hunk],
                f2p: list[str], test_changes: list[Change], old_text: dict[str, str], minimal: bool,
                release_hunks: int) -> Task | None:
    gold = apply_hunks(old_text, hunks)
    f2p_files = {t.split("::", 1)[0] for t in f2p}
    # the hidden tests: the changed test modules of the failing tests, and changed support files (conftest,
    # data); other changed test modules stay out (they may test what this fix does not include)
    hidden = [c for c in test_changes if c.path in f2p_files or not c.path.endswith(".py")
              or Path(c.path).name == "conftest.py"]
    files = sorted(f2p_files)
    without = pair.run(pair.old, pair.base, hidden, files, details=True)
    with_gold = pair.run(pair.old, pair.base, hidden + gold, files)
    s0, s1 = _statuses(without), _statuses(with_gold)
    if not s0 or not s1:
        return None
    f2p = [t for t in f2p if t in s0 and not s0[t].ok and s1.get(t, TestStatus.MISSING).ok]
    p2p = sorted(t for t in s1 if s1[t].ok and s0.get(t, TestStatus.MISSING).ok and not names_this_machine(t))
    if any(names_this_machine(t) for t in f2p):
        return None
    if not f2p:
        return None
    test_patch = diff_text(hidden)
    if "Binary files " in test_patch:
        return None
    idents, mods = fix_names(hunks, old_text)
    idents |= test_name_words(f2p)
    entry, source, score = match_changelog(pair.new.tree, b.version, idents, mods,
                                           enclosing_names(hunks, old_text),
                                           statement_ok(spec.name, a.version, a.sha256, f2p), issue_refs(f2p))
    if entry:
        statement, kind = clean_entry(entry), "changelog"
    else:
        fails = [Failure(t, without.details.get(t, {}).get("exc_type", ""), without.details.get(t, {}).get(
            "message", ""), without.details.get(t, {}).get("longrepr", "")) for t in f2p]
        # the built-in writer, from the failing tests' source in release N+1 (the checker's rules included)
        statement = compose(spec, pair.new.tree, fails, False, 1, "medium", f2p, diff_text(gold))
        kind = "generated"
    features = {"f2p": len(f2p), "files_touched": len({h.path for h in hunks}), "hunks": len(hunks),
                "release_hunks": release_hunks, "minimal": minimal, "n_sites": len(hunks),
                "statement_level": "full" if kind == "changelog" else "medium"}
    provenance = {"generator": "live", "source": {"version": a.version, "sha256": a.sha256},
                  "from_version": a.version, "to_version": b.version, "to_sha256": b.sha256,
                  "released": b.uploaded, "statement": kind, "changelog": source, "changelog_score": score}
    if pair.old.spec.install.lock != spec.install.lock:
        provenance["source"]["lock"] = list(pair.old.spec.install.lock)
    return Task(instance_id=iid, repo=spec.name, version=a.version, base_commit=a.sha256, patch=diff_text(gold),
                problem_statement=statement, FAIL_TO_PASS=tuple(f2p), PASS_TO_PASS=tuple(p2p), bug_patch="",
                test_patch=test_patch, created_at=b.uploaded, statement_level=features["statement_level"],
                provenance=provenance, features=features)


def validate_live(pair: _Pair, task: Task, runs: int = 3) -> tuple[bool, str, dict[str, Any]]:
    """Grade ``task`` exactly as an episode would, ``runs`` times without a fix and ``runs`` times with
    the gold patch: every FAIL_TO_PASS must fail and every PASS_TO_PASS pass without it, all with it."""
    start = time.monotonic()
    repo = prepare(release_spec(load_repo(task.repo), task.version, task.base_commit,
                                task.provenance["source"].get("lock")))
    template = template_for(repo, task.bug_patch, task.instance_id)
    gold = _changes_of(repo.tree, task.patch)
    with Scratch() as scratch:
        for n in range(runs):
            r = grade(repo, task, template, [], scratch, use_cache=False)
            if r.infra_failure:
                return False, f"grading failed: {r.infra_failure}", {}
            if r.fail_to_pass["success"] or r.pass_to_pass["failure"]:
                return False, (f"run {n + 1} without the fix: F2P passing {r.fail_to_pass['success'][:3]}, "
                               f"P2P failing {r.pass_to_pass['failure'][:3]}"), {}
            g = grade(repo, task, template, gold, scratch, use_cache=False)
            if not g.is_resolved:
                return False, f"run {n + 1} with the gold patch: {g.resolved.value} {g.note[:200]}", {}
    return True, "", {"runs": runs, "graded": True, "seconds": round(time.monotonic() - start, 1)}


def _changes_of(tree: Path, patch: str) -> list[Change]:
    """The changes a gold patch makes to ``tree`` (applied to a scratch copy)."""
    from frog_gym.grading.runner import patch_files
    from frog_gym.sandbox.workspace import apply_patch

    tmp = paths.home() / "work" / f"m-{hashlib.sha256(patch.encode()).hexdigest()[:12]}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        files = sorted(patch_files(patch))
        tmp.mkdir(parents=True)
        for f in files:
            if (tree / f).exists():
                (tmp / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(tree / f, tmp / f)
        apply_patch(tmp, patch, "the gold patch")
        out = [Change(f, (tree / f).read_bytes() if (tree / f).exists() else None,
                      (tmp / f).read_bytes() if (tmp / f).exists() else None) for f in files]
        return [c for c in out if c.old != c.new]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def restate(path: Path) -> int:
    """Match the statements of a live or mirror task file against the changelog again (after the matcher
    improved); rewrites the file and returns how many statements come from a changelog entry."""
    from frog_gym.catalog.live import task_spec
    from frog_gym.catalog.task import load_tasks_file

    tasks, n = load_tasks_file(str(path)), 0
    out = []
    for t in tasks:
        prov = dict(t.provenance)
        if prov.get("statement") in ("generated", "changelog"):
            spec = load_repo(t.repo)
            tree_new = snapshot_tree(release_spec(spec, prov["to_version"], prov["to_sha256"]))
            base = snapshot_tree(task_spec(t))
            gold = _changes_of(base, t.patch)
            old = {c.path: _text(c.old) or "" for c in gold if c.old is not None}
            hunks = [h for c in gold for h in hunks_of(c.path, _text(c.old), _text(c.new))]
            idents, mods = fix_names(hunks, old)
            idents |= test_name_words(t.FAIL_TO_PASS)
            src = prov.get("source") or {}
            entry, source, score = match_changelog(tree_new, prov["to_version"], idents, mods,
                                                   enclosing_names(hunks, old),
                                                   statement_ok(t.repo, src.get("version", ""),
                                                                src.get("sha256", ""), t.FAIL_TO_PASS),
                                                   issue_refs(t.FAIL_TO_PASS))
            if entry and (prov["statement"] == "generated" or clean_entry(entry) != t.problem_statement):
                prov.update(statement="changelog", changelog=source, changelog_score=score)
                t = dataclasses.replace(t, problem_statement=clean_entry(entry), statement_level="full",
                                        provenance=prov, features={**t.features, "statement_level": "full"})
        n += t.provenance.get("statement") == "changelog"
        out.append(t)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(t.to_json() + "\n" for t in out), encoding="utf-8")
    os.replace(tmp, path)
    path.with_suffix(".ids").write_text(ids_sidecar_text(path.read_bytes()), encoding="utf-8")
    return n


# -- driving -------------------------------------------------------------------------------------------
def pairs_for(spec: RepoSpec, releases: list[Release], since: str | None, max_pairs: int | None
              ) -> list[tuple[Release, Release]]:
    """Consecutive release pairs, newest first, whose N+1 was released on or after ``since`` and whose
    releases allow the running Python."""
    import sys

    here = ".".join(map(str, sys.version_info[:3]))
    pairs = []
    for a, b in zip(releases, releases[1:]):
        if since and b.uploaded[:10] < since:
            continue
        try:
            if any(r.requires_python and not SpecifierSet(r.requires_python).contains(here) for r in (a, b)):
                continue
        except InvalidSpecifier:
            continue
        pairs.append((a, b))
    pairs.reverse()
    return pairs[:max_pairs] if max_pairs else pairs


def state_path(spec: RepoSpec, a: Release, b: Release, family: str = "live") -> Path:
    suffix = "" if family == "live" else f".{family}"
    return mine_dir() / spec.name / f"{a.version}..{b.version}{suffix}.json"


def live_releases(repo: str, family: str = "live") -> set[str]:
    """The releases N+1 whose fixes some live task of ``repo`` carries (mirror tasks never reuse them)."""
    path = live_path(repo, family=family)
    if not path.exists():
        return set()
    return {json.loads(line)["provenance"]["to_version"] for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()}


def mirror_releases(repo: str) -> set[str]:
    """The releases N+1 whose fixes some mirror task of ``repo`` carries (live tasks never reuse them)."""
    return live_releases(repo, "mirror")


def family_pairs(spec: RepoSpec, pairs: list[tuple[Release, Release]], family: str
                 ) -> list[tuple[Release, Release]]:
    """The ``pairs`` that ``family`` may mine: a release pair belongs to one family only.

    Mirror tasks come from pairs up to the pinned release that were never mined for live tasks and whose
    N+1 no live task carries; live tasks skip the pairs mined for mirror tasks and the N+1 of every
    mirror task, so that a fix is never both held out and trained on."""
    if family == "mirror":
        pinned = Version(spec.source.version)
        live = {p.stem.split("..")[1] for p in (mine_dir() / spec.name).glob("*..*.json")
                if not p.stem.endswith(".mirror")} | {new for _, new in recorded(spec.name)} | live_releases(spec.name)
        return [(a, b) for a, b in pairs if Version(b.version) <= pinned and b.version not in live]
    mirror = mirror_releases(spec.name)
    # The time split (generators/timesplit.py): a live fix must come after the training snapshot, so live
    # mining starts at the pinned release (N >= pin); the pairs before it are the training code's past.
    pinned = Version(spec.source.version) if spec.source.version else None
    mirrored = recorded(spec.name, "mirror")
    return [(a, b) for a, b in pairs if not state_path(spec, a, b, "mirror").exists()
            and (a.version, b.version) not in mirrored and b.version not in mirror
            and (pinned is None or Version(a.version) >= pinned)]


def mine(repos: list[str], *, since: str | None = None, max_pairs: int | None = 12, runs: int = 3,
         tasks_dir: Path | None = None, retry: bool = False, family: str = "live",
         log: Callable[[str], None] = print) -> list[PairResult]:
    """Mine each repository's release pairs (newest first), resuming from earlier runs' recorded outcomes
    (``retry``: mine pairs that ended in ``error`` again). Returns every pair's result, old and new.

    ``family="mirror"`` makes mirror tasks (training) from the pairs after those mined for live tasks
    (older releases, never a release that a live task comes from), up to the pinned release."""
    out = []
    for name in repos:
        spec = load_repo(name)
        if spec.source.kind != "pypi":
            log(f"{name}: skipped: not a PyPI source, it has no releases")
            continue
        try:
            releases = list_releases(spec.source.name)
        except OSError as e:
            log(f"{name}: skipped: the index could not be read: {e}")
            continue
        todo = family_pairs(spec, pairs_for(spec, releases, since, None), family)
        todo = todo[:max_pairs] if max_pairs else todo
        kept = recorded(name, family, tasks_dir)
        for a, b in todo:
            sp = state_path(spec, a, b, family)
            prev = PairResult(**json.loads(sp.read_text())) if sp.exists() else kept.get((a.version, b.version))
            if prev is not None and not (retry and prev.outcome == "error"):
                out.append(prev)
                continue
            log(f"{name} {a.version} -> {b.version}: mining")
            r = mine_pair(spec, a, b, tasks_dir=tasks_dir, runs=runs, family=family, log=log)
            sp.parent.mkdir(parents=True, exist_ok=True)
            sp.write_text(json.dumps(dataclasses.asdict(r)))
            keep_records([r], family, tasks_dir)
            log(f"{name} {a.version} -> {b.version}: {r.outcome}"
                f"{': ' + r.reason if r.reason else ''} ({r.candidates} candidates, {len(r.kept)} kept, "
                f"{r.test_runs} test runs, {r.seconds:.0f} s)")
            out.append(r)
    return out


def report(results: list[PairResult]) -> str:
    """The mining report as Markdown: yield per repository and time per pair, then every skip reason."""
    by: dict[str, list[PairResult]] = {}
    for r in results:
        by.setdefault(r.repo, []).append(r)
    lines = ["| repository | pairs scanned | candidate fixes | kept | seconds per pair |", "|---|---:|---:|---:|---:|"]
    tot = [0, 0, 0, 0.0]
    for repo, rs in sorted(by.items()):
        kept = sum(len(r.kept) for r in rs)
        cand = sum(r.candidates for r in rs)
        secs = sum(r.seconds for r in rs)
        lines.append(f"| {repo} | {len(rs)} | {cand} | {kept} | {secs / len(rs):.0f} |")
        tot = [tot[0] + len(rs), tot[1] + cand, tot[2] + kept, tot[3] + secs]
    if tot[0]:
        lines.append(f"| **all** | {tot[0]} | {tot[1]} | {tot[2]} | {tot[3] / tot[0]:.0f} |")
    lines += ["", "Pairs without a task:", ""]
    for r in sorted(results, key=lambda r: (r.repo, Version(r.new))):
        if not r.kept:
            lines.append(f"- {r.repo} {r.old} -> {r.new}: {r.outcome}: {r.reason}")
    return "\n".join(lines) + "\n"


def unrecorded_note(counts: dict[str, int], results: list[PairResult]) -> str:
    """A line for the report naming the repositories whose tasks come from pairs that no record holds (mined on
    a machine whose records were not kept, before records were committed), with their task counts; else ""."""
    have = {r.repo for r in results}
    missing = {repo: n for repo, n in sorted(counts.items()) if n and repo not in have}
    if not missing:
        return ""
    return ("\nNo pair record is kept for the tasks of " + ", ".join(f"{r} ({n})" for r, n in missing.items())
            + ": they were mined before the records were committed (their yield is not in the table; as measured "
            "when they were mined, it is in this file's git history).\n")


def all_results(family: str = "live") -> list[PairResult]:
    """Every pair outcome of ``family`` for a registered repository: the committed records, and those recorded
    under ``$FROG_GYM_HOME/mine`` that they lack (a pair mined here and not yet kept)."""
    by = {(r.repo, r.old, r.new): r for r in _local_results(family) if (repos_dir() / f"{r.repo}.toml").exists()}
    for path in sorted(records_path("x", family).parent.glob(f"*.{family}.jsonl")):
        for r in recorded(path.name[: -len(f".{family}.jsonl")], family).values():
            by[(r.repo, r.old, r.new)] = r
    return sorted(by.values(), key=lambda r: (r.repo, Version(r.new), Version(r.old)))


def _local_results(family: str = "live") -> list[PairResult]:
    out = []
    for p in sorted(mine_dir().glob("*/*.json")):
        if (family == "live") == p.name.endswith(".mirror.json"):
            continue
        try:
            out.append(PairResult(**json.loads(p.read_text())))
        except (ValueError, TypeError):
            continue
    return out


__all__ = ["Release", "Hunk", "PairResult", "list_releases", "fetch_release", "mine", "mine_pair", "minimize",
           "records_path", "recorded", "keep_records", "keep_local_records", "unrecorded_note",
           "report", "hunks_of", "apply_hunks", "changelog_section", "changelog_entries", "clean_entry",
           "fix_names", "issue_refs", "match_changelog", "test_name_words", "reverse_onto", "mirror_task", "MIRROR_MARK"]


# --- FrogLive quality: what a mined task must be to count as a real bug fix ----------------------------------

MAX_FIX_LINES = 400
"""A FrogLive fix changing more lines than this (added + removed) is a rewrite or a bundle, not one fix."""
_VERSION_DROP = re.compile(r"(?i)\bdrop(?:ped|s)? support for python|\bpython \d+(?:\.\d+)+ support\b")
_FEATURE = re.compile(r"(?i)^\W*(?:add(?:ed|s)?|new|introduce[sd]?|support(?:s|ed)?|implement(?:s|ed)?|allow(?:s|ed)?|"
                      r"enable[sd]?|deprecate[sd]?|test(?:s|ed)?|pep\s*\d+\s*:)(?:\W|$)")
_FIXLIKE = re.compile(r"(?i)\b(?:fix\w*|bug|regression|crash\w*|wrong|incorrect\w*|error|broken)\b")


def quality_problems(record: dict) -> list[str]:
    """Why a FrogLive task record is not a usable bug fix (empty: it is). The rule: its gold patch changes at
    most :data:`MAX_FIX_LINES` lines, at most half of them outside ``.py`` files (else a data update); it has a
    PASS_TO_PASS test; its statement is not a version drop ("Drop support for Python 2.7", "Python 3.10
    support") nor a feature ("Add ...", "New ...", "Support ...", "Allow ...", "PEP 639: ...", a "Test ..." of its
    own) unless it also says it fixes something."""
    patch = record.get("patch", "")
    changed, data, path = 0, 0, ""
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
        elif line[:1] in "+-" and not line.startswith(("+++", "---")):
            changed += 1
            data += not path.endswith(".py")
    found = []
    if changed > MAX_FIX_LINES:
        found.append(f"its fix changes {changed} lines (cap {MAX_FIX_LINES}): a rewrite or a bundle")
    if changed and data * 2 > changed:
        found.append(f"{data} of its {changed} changed lines are not Python: a data update")
    if not record.get("PASS_TO_PASS"):
        found.append("it has no PASS_TO_PASS test")
    head = record.get("problem_statement", "").strip().split("\n")[0]
    if _VERSION_DROP.search(head):
        found.append("its statement is a version drop")
    elif _FEATURE.match(head) and not _FIXLIKE.search(head):
        found.append("its statement is a feature")
    return found
