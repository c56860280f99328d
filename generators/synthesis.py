"""Task synthesis: mutate covered code, validate each candidate on the tests that reach it, write tasks.

For one repository: build the coverage map (once per venv), list every mutation of a covered line in the
spec's mutable files, order them with a seeded generator (balanced across operator families, spread over
functions), and validate them in that order on a process pool, each against only the tests that cover its
site. Accepted bugs are deduplicated (same site and same failure signature), given a problem statement and
difficulty features, and appended to ``registry/tasks/<repo>.jsonl`` one line at a time, in candidate
order, so that a seed always yields the same tasks and an interrupted run resumes where it stopped
(accepted ids are in the task file; rejected candidates in ``$FROG_GYM_HOME/gen/<repo>-<venv>/``).
Then 2-3 accepted bugs of the same package are combined into harder tasks and validated again as one.

Instance ids are ``<repo>__<family>-<sha8>`` (``<repo>__combo<k>-<sha8>`` for combined bugs), the digest
taken over the seed and the sites.

Example (what ``frog-gym generate toolz --max-tasks 40 --seed 0`` runs):
    >>> from frog_gym.catalog.spec import load_repo
    >>> summary = generate(load_repo("toolz"), GenerateConfig(max_tasks=40, seed=0))  # doctest: +SKIP
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from frog_gym import paths
from frog_gym.generators import coverage_map, dedupe, statements
from frog_gym.generators.fastrun import Runner
from frog_gym.generators.hidden import hidden_tests_patch
from frog_gym.generators.operators import MULTI_LINE_FAMILIES, enclosing_function, find_mutations
from frog_gym.generators.restate import WRITER, compose, kept_failure
from frog_gym.generators.taskfiles import append_task, read_existing, rewrite_task_file, write_ids_sidecar
from frog_gym.generators.validate import Validation, patches, record_oracle, validate
from frog_gym.catalog.snapshot import PreparedRepo, prepare
from frog_gym.catalog.spec import RepoSpec, module_name
from frog_gym.catalog.task import Task
from frog_gym.sandbox.workspace import Change, Template, Workspace

GENERATOR = "frog-gym/mutation-v1"


@dataclass(frozen=True)
class GenerateConfig:
    """Settings of one generation run (per repository)."""

    max_tasks: int = 60
    """Tasks to have for each repository when done (hand-written ones not counted), combined ones included."""
    seed: int = 0
    """Seeds the candidate order and the combinations; with it, the same tasks come out."""
    workers: int = 2
    """Processes validating candidates at once."""
    combined_fraction: float = 0.2
    """Share of ``max_tasks`` made by combining 2-3 validated bugs of one package."""
    runs: int = 3
    """Runs of the buggy tree per candidate; every run must agree."""
    max_fail_to_pass: int = 40
    """Bugs that break more tests than this are refused (too easy), import crashes apart."""
    max_candidate_tests: int = 50
    """At most this many covering tests run per candidate (a seeded sample when more cover it)."""
    crash_fraction: float = 0.05
    """At most this share of a repository's tasks may be import crashes."""
    per_function: int = 3
    """At most this many single-bug tasks in one function, counted apart for the one-line and the multi-line
    families (:func:`quota_key`)."""
    test_timeout: int = 5
    """Per-test timeout during validation (a mutant that loops must not stall the run)."""
    max_run_seconds: float = 30.0
    """Refuse candidates whose first test run takes longer than this."""
    max_attempts_factor: int = 8
    """Give up on a repository after ``max_attempts_factor * max_tasks`` candidates."""
    statement_writer: str | None = None
    """``module:function`` of a user statement writer; off by default."""
    families: tuple[str, ...] | None = None
    """Operator families to use (default: all)."""
    tasks_dir: str | None = None
    """Where the ``<repo>.jsonl`` files are (default: the registry's task folder)."""
    fork_server: bool = True
    """Run pytest through a per-worker fork server (:mod:`frog_gym.generators.fastrun`)."""
    hide_tests: bool = True
    """Store a ``test_patch`` per task (its FAIL_TO_PASS test functions, hidden from the workspace until
    grading, :mod:`frog_gym.generators.hidden`); False keeps the tests visible and ``test_patch`` empty."""

    def __post_init__(self) -> None:
        if self.max_tasks < 0:
            raise ValueError(f"max_tasks must be >= 0, got {self.max_tasks}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}; use 1 to validate in this process")
        if not 0 <= self.combined_fraction < 1:
            raise ValueError(f"combined_fraction must be in [0, 1), got {self.combined_fraction}")


@dataclass(frozen=True)
class Site:
    """One mutation in one file, with what it needs for validation and features."""

    path: str
    start: int
    end: int
    replacement: str
    lineno: int
    end_lineno: int
    family: str
    description: str
    function: str
    function_lines: int
    module: str

    @property
    def key(self) -> str:
        return f"{self.path}:{self.start}:{self.end}:{self.replacement}"


@dataclass
class Candidate:
    iid: str
    sites: list[Site]
    tests: list[str]


@dataclass
class Summary:
    repo: str
    accepted: int = 0
    combined: int = 0
    tried: int = 0
    rejected: Counter = field(default_factory=Counter)
    by_family: dict[str, list[int]] = field(default_factory=dict)
    test_runs: int = 0
    seconds: float = 0.0
    existing: int = 0
    deduped: int = 0


def tasks_path(spec: RepoSpec, cfg: GenerateConfig) -> Path:
    if cfg.tasks_dir:
        return Path(cfg.tasks_dir) / f"{spec.name}.jsonl"
    from importlib import resources

    with resources.as_file(resources.files("frog_gym.registry").joinpath("tasks")) as d:
        return Path(d) / f"{spec.name}.jsonl"


def _sha8(*parts: object) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:8]


# ---- candidates ----------------------------------------------------------------------------------


def all_sites(repo: PreparedRepo, cmap: coverage_map.CoverageMap, families: tuple[str, ...] | None) -> list[Site]:
    """Every mutation of a covered line (or of the ``def`` line of a covered function) in the mutable files."""
    out: list[Site] = []
    for path in coverage_map.mutable_files(repo):
        covered = cmap.covered_lines(path)
        if not covered:
            continue
        try:
            source = (repo.tree / path).read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = set(covered)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    n in covered for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)):
                lines.update(range(node.lineno, node.body[0].lineno))
        try:
            found = find_mutations(source, families=families, lines=lines)
        except (SyntaxError, RecursionError, ValueError):
            continue
        mod = module_name(repo.spec, path)
        for m in found:
            func = enclosing_function(tree, m.lineno)
            name, lo, hi = func if func else ("", m.lineno, m.end_lineno)
            out.append(Site(path, m.start, m.end, m.replacement, m.lineno, m.end_lineno, m.family,
                            m.description, name, hi - lo + 1, mod))
    return out


def covering_tests(cmap: coverage_map.CoverageMap, site: Site, repo: PreparedRepo) -> list[str]:
    tests = cmap.covering(site.path, range(site.lineno, site.end_lineno + 1))
    if not tests and site.function:
        tree = ast.parse((repo.tree / site.path).read_text(encoding="utf-8"))
        func = enclosing_function(tree, site.lineno)
        if func:
            tests = cmap.covering(site.path, range(func[1], func[2] + 1))
    return tests


def order_sites(sites: list[Site], rng: random.Random) -> list[Site]:
    """A seeded order: each draw picks a family uniformly, then the candidate of that family whose
    function has been drawn least (ties broken at random), so early candidates spread over code."""
    pools: dict[str, list[Site]] = {}
    for s in sites:
        pools.setdefault(s.family, []).append(s)
    for fam in sorted(pools):
        rng.shuffle(pools[fam])
    used: Counter = Counter()
    out: list[Site] = []
    while pools:
        fam = rng.choice(sorted(pools))
        pool = pools[fam]
        window = pool[:25]
        best = min(range(len(window)), key=lambda i: used[(window[i].path, window[i].function)])
        s = pool.pop(best)
        used[(s.path, s.function)] += 1
        out.append(s)
        if not pool:
            del pools[fam]
    return out


def _sample_tests(tests: list[str], cmap: coverage_map.CoverageMap, passing: set[str], cfg: GenerateConfig,
                  key: str) -> list[str]:
    tests = [t for t in tests if t in passing]
    if len(tests) > cfg.max_candidate_tests:
        rng = random.Random(f"{cfg.seed}:{key}")
        tests = sorted(rng.sample(tests, cfg.max_candidate_tests))
    if tests:  # the same files are collected anyway: a few of their other tests are nearly free P2P
        files = {t.split("::", 1)[0] for t in tests}
        have = set(tests)
        extra = [t for t in cmap.tests if t in passing and t.split("::", 1)[0] in files and t not in have]
        tests = sorted(tests + extra[:: max(1, len(extra) // 20)][:20])
    return tests


# ---- validation in worker processes --------------------------------------------------------------

_WORKER: dict[str, Any] = {}
_INHERITED: list[dict[str, Any]] = []


def _worker_state(spec: RepoSpec, use_server: bool = True) -> tuple[PreparedRepo, Template, Workspace, dict, Runner]:
    key = spec.name + spec.source.key
    if _WORKER.get("pid") != os.getpid():
        # Inherited through fork: the parent's pytest server and workspace. Keep a reference so that no
        # finalizer of ours ever cleans them up (they are the parent's), and build this process's own.
        _INHERITED.append(dict(_WORKER))
        _WORKER.clear()
    if _WORKER.get("key") != key:
        if _WORKER.get("state"):
            _WORKER["state"][4].close()
            _WORKER["state"][2].remove()
        repo = prepare(spec)
        _, template = coverage_map.build(repo)
        ws = Workspace(paths.home() / "work" / f"gen-{os.getpid()}-{spec.name}")
        ws.remove()
        ws.sync(template)
        _WORKER.update(key=key, pid=os.getpid(), state=(repo, template, ws, {}, Runner(repo, ws.path, use_server)))
    return _WORKER["state"]


def bug_changes_of(repo: PreparedRepo, sites: list[Site]) -> list[Change]:
    """Pristine -> buggy changes of non-overlapping sites (applied from the end of each file backwards)."""
    by_path: dict[str, list[Site]] = {}
    for s in sites:
        by_path.setdefault(s.path, []).append(s)
    out = []
    for path, group in sorted(by_path.items()):
        old = (repo.tree / path).read_text(encoding="utf-8")
        new = old
        for s in sorted(group, key=lambda s: s.start, reverse=True):
            new = new[:s.start] + s.replacement + new[s.end:]
        out.append(Change(path, old.encode("utf-8"), new.encode("utf-8")))
    return out


def validate_candidate(spec: RepoSpec, sites: list[Site], tests: list[str], cfg: GenerateConfig) -> Validation:
    """Validate one candidate in this process's workspace (the process pool's unit of work)."""
    repo, template, ws, gold, runner = _worker_state(spec, cfg.fork_server)
    changes = bug_changes_of(repo, sites)
    budget = 3 * cfg.max_run_seconds
    return validate(repo, changes, candidates=tests, runs=cfg.runs,
                    max_fail_to_pass=cfg.max_fail_to_pass * len(sites), timeout=budget, base=template,
                    workspace=ws, details=True, gold_cache=gold, test_args=(f"--timeout={cfg.test_timeout}", "--tb=short"),
                    runner=runner, max_run_seconds=cfg.max_run_seconds)


# ---- task records ---------------------------------------------------------------------------------


def _imports_module(text: str, module: str) -> bool:
    parent, _, last = module.rpartition(".")
    pats = [rf"^\s*import\s+{re.escape(module)}\b", rf"^\s*from\s+{re.escape(module)}\s+import\b"]
    if parent:
        pats.append(rf"^\s*from\s+{re.escape(parent)}\s+import\s+[^#\n]*\b{re.escape(last)}\b")
    return any(re.search(p, text, re.M) for p in pats)


def features_of(repo: PreparedRepo, sites: list[Site], v: Validation, level: str) -> dict[str, Any]:
    """Difficulty features: what was mutated, how much breaks, and how far the tests are from the bug."""
    files = sorted({s.path for s in sites})
    test_files = sorted({t.split("::", 1)[0] for t in v.fail_to_pass})
    direct = 0
    for tf in test_files:
        try:
            text = (repo.tree / tf).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        direct += any(_imports_module(text, s.module) for s in sites)
    return {
        "family": sites[0].family if len(sites) == 1 else "+".join(sorted({s.family for s in sites})),
        "families": sorted({s.family for s in sites}),
        "n_sites": len(sites),
        "files_touched": len(files),
        "fail_to_pass": len(v.fail_to_pass),
        "pass_to_pass": len(v.pass_to_pass),
        "statement_level": level,
        "function_lines": max(s.function_lines for s in sites),
        "test_files": len(test_files),
        "direct_import": direct / len(test_files) if test_files else 0.0,
        "crash": v.crash,
    }


def _failures(v: Validation) -> list[statements.Failure]:
    out = []
    for t in v.fail_to_pass + [k for k in v.details if k not in v.fail_to_pass]:
        d = v.details.get(t, {})
        out.append(statements.Failure(t, d.get("exc_type", ""), d.get("message", ""), d.get("longrepr", "")))
    return out


def make_task(repo: PreparedRepo, cand: Candidate, v: Validation, cfg: GenerateConfig,
              writer: Callable[[dict], str] | None, level: str | None = None) -> Task:
    """The task record of a validated candidate; its statement level is ``level`` or a hash of its id."""
    spec = repo.spec
    level = level or statements.level_for(cand.iid)
    failures = _failures(v) or [statements.Failure(t, "", "", "") for t in v.fail_to_pass]
    bug_patch, gold = patches(bug_changes_of(repo, cand.sites))
    text = compose(spec, repo.tree, failures, v.crash, len(cand.sites), level, v.fail_to_pass, bug_patch, writer,
                   sites=[asdict(s) for s in cand.sites])
    test_patch = hidden_tests_patch(repo.tree, v.fail_to_pass, spec.tests.is_test_file) if cfg.hide_tests else ""
    return Task(
        instance_id=cand.iid, repo=spec.name, version=spec.source.version or spec.source.commit[:12],
        base_commit=spec.source.key, patch=gold, problem_statement=text, FAIL_TO_PASS=tuple(v.fail_to_pass),
        PASS_TO_PASS=tuple(v.pass_to_pass), bug_patch=bug_patch, statement_level=level, test_patch=test_patch,
        provenance={"generator": GENERATOR, "seed": cfg.seed, "sites": [asdict(s) for s in cand.sites],
                    "candidate_tests": len(cand.tests), "statement_writer": cfg.statement_writer or WRITER},
        features=features_of(repo, cand.sites, v, level),
        validation={"runs": v.runs, "test_runs": v.test_runs, "seconds": round(v.seconds, 2),
                    "cpu_seconds": v.cpu_seconds,
                    "flaky": v.flaky, "signature": v.signature, "targeted": True,
                    "failure": kept_failure(failures[0])},
    )


# ---- the run --------------------------------------------------------------------------------------


class _Pool:
    """A process pool, or inline calls for ``workers=1`` (tests, debugging)."""

    def __init__(self, workers: int):
        self.ex = ProcessPoolExecutor(workers) if workers > 1 else None

    def submit(self, fn: Callable, *args: Any) -> Future:
        if self.ex is not None:
            return self.ex.submit(fn, *args)
        f: Future = Future()
        try:
            f.set_result(fn(*args))
        except Exception as e:  # noqa: BLE001 (surfaced by result())
            f.set_exception(e)
        return f

    def close(self) -> None:
        if self.ex is not None:
            self.ex.shutdown(cancel_futures=True)


def _ordered(pool: _Pool, spec: RepoSpec, cands: Iterator[Candidate], cfg: GenerateConfig,
             window: int) -> Iterator[tuple[Candidate, Validation]]:
    """Validate candidates with ``window`` running at once, yielding results in candidate order.

    A slow candidate at the head of the line does not stall the others: submission counts only the
    futures still running, and finished ones wait (at most ``16 * window``) in a reorder buffer.
    """
    from concurrent.futures import FIRST_COMPLETED, wait

    pending: list[tuple[Candidate, Future]] = []
    it = iter(cands)
    exhausted = False
    while True:
        while not exhausted and sum(not f.done() for _, f in pending) < window and len(pending) < 16 * window:
            c = next(it, None)
            if c is None:
                exhausted = True
                break
            pending.append((c, pool.submit(validate_candidate, spec, c.sites, c.tests, cfg)))
        if not pending:
            return
        c, fut = pending[0]
        if not fut.done():
            wait([f for _, f in pending if not f.done()], timeout=5, return_when=FIRST_COMPLETED)
            continue
        pending.pop(0)
        try:
            v = fut.result()
        except Exception as e:  # noqa: BLE001 (one broken candidate must not stop the run)
            v = Validation(False, f"validation raised {type(e).__name__}: {e}")
        yield c, v


def quota_key(path: str, function: str, family: str) -> tuple[str, str, bool]:
    """The per-function quota's bucket of a single-bug site: its function, and whether its family is
    multi-line.

    The one-line families had filled most functions' quotas before the multi-line ones existed, so a
    repository with few functions had no room left for a multi-line bug, the kind the pool policy
    (:mod:`frog_gym.generators.bugsize`) asks for. Each kind has its own ``per_function`` in a function.

    Example:
        >>> quota_key("m.py", "f", "negated_condition") == quota_key("m.py", "f", "swapped_blocks")
        False
    """
    return path, function, family in MULTI_LINE_FAMILIES


STATE_REJECTIONS = ("per function quota reached", "duplicate: another single-bug task", "crash quota reached")
"""Refusals that depend on the tasks registered at the time, not on the candidate: never kept, since a
retirement or a change of quota can make the same candidate acceptable."""


class _Rejections:
    """Candidates already refused for this seed, so a resumed run does not test them again
    (`STATE_REJECTIONS` apart, which a later run tries again)."""

    def __init__(self, path: Path):
        self.path = path
        self.seen: dict[str, str] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    d = json.loads(line)
                    if not d["reason"].startswith(STATE_REJECTIONS):
                        self.seen[d["id"]] = d["reason"]
                except (ValueError, KeyError, AttributeError):
                    continue

    def add(self, iid: str, reason: str, family: str) -> None:
        if reason.startswith(STATE_REJECTIONS):
            return
        self.seen[iid] = reason
        with open(self.path, "a") as f:
            f.write(json.dumps({"id": iid, "reason": reason, "family": family}) + "\n")


def _reason_class(reason: str) -> str:
    for key in ("no test fails", "too slow", "breaks", "do not repeat", "gold fix", "PASS_TO_PASS", "no passing test",
                "infrastructure", "raised", "duplicate", "crash", "per function"):
        if key in reason:
            return key
    return reason[:40]


def generate(spec: RepoSpec, cfg: GenerateConfig, progress: bool = True, log: Callable[[str], None] = print
             ) -> Summary:
    """Generate tasks for one repository until it has ``cfg.max_tasks`` of them (see the module docstring)."""
    start = time.monotonic()
    summary = Summary(spec.name)
    out = tasks_path(spec, cfg)
    existing = read_existing(out)
    generated = [d for d in existing if d.get("provenance", {}).get("generator") == GENERATOR]
    summary.existing = len(generated)
    n_combo = round(cfg.max_tasks * cfg.combined_fraction)
    have_single = [d for d in generated if len(d["provenance"]["sites"]) == 1]
    have_combo = [d for d in generated if len(d["provenance"]["sites"]) > 1]
    # a bug of a combined task whose single-bug task was dropped (dedupe) still counts as generated, so that
    # a resumed run does not make it again; the registry then holds fewer than max_tasks tasks
    single_keys = {dedupe.site_key(d["provenance"]["sites"][0]) for d in have_single}
    held_back = {dedupe.site_key(s) for d in have_combo for s in d["provenance"]["sites"]} - single_keys
    want_single = max(0, cfg.max_tasks - n_combo - len(have_single) - len(held_back))
    want_combo = max(0, n_combo - len(have_combo))
    if want_single == 0 and want_combo == 0:
        return summary
    repo = prepare(spec)
    cmap, _ = coverage_map.build(repo)
    passing = cmap.passing()
    from frog_gym.generators.validate import baseline

    passing &= {t for t, s in baseline(repo).items() if s in ("PASSED", "XFAIL")}
    writer = statements.load_writer(cfg.statement_writer)
    rng = random.Random(f"{cfg.seed}:{spec.name}:{spec.source.key}")
    sites = order_sites(all_sites(repo, cmap, cfg.families), rng)
    known_ids = {d["instance_id"] for d in existing}
    # bugs inside combined tasks count as known: dedupe may have dropped their single-bug task on purpose
    known_sites = {s["path"] + f":{s['start']}:{s['end']}:{s['replacement']}" for d in generated
                   for s in d["provenance"]["sites"]}
    lines_taken = {(d["provenance"]["sites"][0]["path"], d["provenance"]["sites"][0]["lineno"]) for d in have_single}
    per_func = Counter(quota_key(d["provenance"]["sites"][0]["path"], d["provenance"]["sites"][0]["function"],
                                 d["provenance"]["sites"][0]["family"]) for d in have_single)
    crashes = sum(1 for d in generated if d.get("features", {}).get("crash"))
    max_crash = max(1, int(cfg.max_tasks * cfg.crash_fraction))
    rejections = _Rejections(coverage_map.gen_dir(repo) / f"rejected-seed{cfg.seed}.jsonl")
    singles: list[dict] = list(have_single)
    pool = _Pool(cfg.workers)
    bar = _bar(progress, spec.name, cfg.max_tasks, len(generated))
    try:
        def candidates() -> Iterator[Candidate]:
            budget = cfg.max_attempts_factor * cfg.max_tasks
            for s in sites:
                if budget <= 0:
                    return
                iid = f"{spec.name}__{s.family}-{_sha8(cfg.seed, s.key)}"
                if iid in known_ids or s.key in known_sites or iid in rejections.seen:
                    continue
                if (per_func[quota_key(s.path, s.function, s.family)] >= cfg.per_function
                        or (s.path, s.lineno) in lines_taken):
                    continue
                tests = _sample_tests(covering_tests(cmap, s, repo), cmap, passing, cfg, s.key)
                if not tests:
                    continue
                budget -= 1
                yield Candidate(iid, [s], tests)

        accepted = 0
        if want_single:
            for cand, v in _ordered(pool, spec, candidates(), cfg, window=cfg.workers + 1):
                s = cand.sites[0]
                summary.tried += 1
                summary.test_runs += v.test_runs
                fam = summary.by_family.setdefault(s.family, [0, 0])
                fam[1] += 1
                reason = v.reason if not v.ok else ""
                if v.ok and (s.path, s.lineno) in lines_taken:
                    reason = "duplicate: another single-bug task mutates this line"
                elif v.ok and v.crash and crashes >= max_crash:
                    reason = "crash quota reached"
                elif v.ok and per_func[quota_key(s.path, s.function, s.family)] >= cfg.per_function:
                    reason = "per function quota reached"
                if reason:
                    summary.rejected[_reason_class(reason)] += 1
                    if "infrastructure" not in reason and "raised" not in reason:
                        rejections.add(cand.iid, reason, s.family)
                    bar.set_postfix_str(f"tried {summary.tried}")
                    continue
                task = make_task(repo, cand, v, cfg, writer)
                append_task(out, task)
                record_oracle(task, out, repo)
                known_ids.add(task.instance_id)
                lines_taken.add((s.path, s.lineno))
                per_func[quota_key(s.path, s.function, s.family)] += 1
                crashes += v.crash
                singles.append(json.loads(task.to_json()))
                fam[0] += 1
                accepted += 1
                summary.accepted += 1
                bar.update(1)
                bar.set_postfix_str(f"tried {summary.tried}")
                if accepted >= want_single:
                    break
        if want_combo:
            _combine(pool, repo, cmap, passing, singles, want_combo, cfg, out, known_ids, writer, summary,
                     bar, rejections)
    finally:
        pool.close()
        bar.close()
    if summary.combined:  # a combined task must hold a bug that is not itself a task
        drop = dedupe.plan([d for d in read_existing(out) if d.get("provenance", {}).get("generator") == GENERATOR])
        if drop:
            rewrite_task_file(out, lambda d: None if d["instance_id"] in drop else d)
            summary.deduped = len(drop)
    summary.seconds = time.monotonic() - start
    return summary


def combinable(sites: list[Site]) -> bool:
    """Whether single bugs can make one combined task: each in its own function, no two spans overlapping."""
    if len({(s.path, s.function) for s in sites}) < len(sites):
        return False
    spans = sorted((s.path, s.lineno, s.end_lineno) for s in sites)
    return not any(a[0] == b[0] and b[1] <= a[2] for a, b in zip(spans, spans[1:]))


def combination_tests(repo: PreparedRepo, cmap: coverage_map.CoverageMap, passing: set[str], sites: list[Site],
                      parts: list[dict], cfg: GenerateConfig, key: str) -> list[str]:
    """The candidate tests of a combined bug: what covers any of its sites, plus every FAIL_TO_PASS test of
    its parts; past ``2 * max_candidate_tests``, those failures and a sample (seeded by ``key``) of the rest."""
    must = {t for d in parts for t in d["FAIL_TO_PASS"]}
    tests = sorted(set().union(*(set(covering_tests(cmap, s, repo)) for s in sites)) & passing | must)
    if len(tests) > 2 * cfg.max_candidate_tests:
        rest = sorted(set(tests) - must)
        keep = max(0, 2 * cfg.max_candidate_tests - len(must))
        tests = sorted(must | set(random.Random(key).sample(rest, min(keep, len(rest)))))
    return tests


def _combine(pool: _Pool, repo: PreparedRepo, cmap: coverage_map.CoverageMap, passing: set[str],
             singles: list[dict], want: int, cfg: GenerateConfig, out: Path, known_ids: set[str],
             writer: Callable[[dict], str] | None, summary: Summary, bar: Any, rejections: _Rejections) -> None:
    """Combine 2-3 validated single bugs of one top-level package (different functions, maybe different
    files; disjoint sites)."""
    spec = repo.spec
    rng = random.Random(f"{cfg.seed}:{spec.name}:combine")
    by_pkg: dict[str, list[dict]] = {}
    for d in sorted(singles, key=lambda d: d["instance_id"]):
        if d.get("features", {}).get("crash"):
            continue
        site = d["provenance"]["sites"][0]  # one top-level package: bugs across its files and subpackages
        by_pkg.setdefault(site.get("module", site["path"]).split(".")[0], []).append(d)
    groups = [g for _, g in sorted(by_pkg.items()) if len(g) >= 2]
    if not groups:
        return
    used: Counter = Counter()

    def combos() -> Iterator[tuple[Candidate, list[dict]]]:
        tries = 0
        while tries < 20 * want:
            tries += 1
            group = rng.choice(groups)
            k = 3 if len(group) >= 3 and rng.random() < 0.35 else 2
            picked = rng.sample(group, k)
            sites = [Site(**d["provenance"]["sites"][0]) for d in picked]
            if not combinable(sites) or any(used[d["instance_id"]] >= 2 for d in picked):
                continue
            iid = f"{spec.name}__combo{k}-{_sha8(cfg.seed, *sorted(s.key for s in sites))}"
            if iid in known_ids or iid in rejections.seen:
                continue
            tests = combination_tests(repo, cmap, passing, sites, picked, cfg, iid)
            for d in picked:
                used[d["instance_id"]] += 1
            known_ids.add(iid)
            yield Candidate(iid, sites, tests), picked

    made = 0
    pairs = combos()
    picked_of: dict[str, list[dict]] = {}

    def cands() -> Iterator[Candidate]:
        for c, picked in pairs:
            picked_of[c.iid] = picked
            yield c

    for cand, v in _ordered(pool, spec, cands(), cfg, window=cfg.workers + 1):
        summary.tried += 1
        summary.test_runs += v.test_runs
        need = {t for d in picked_of[cand.iid] for t in d["FAIL_TO_PASS"]}
        reason = v.reason if not v.ok else ""
        if v.ok and not need <= set(v.fail_to_pass):
            reason = "combined bug: FAIL_TO_PASS lacks some failures of its parts"
        if reason:
            summary.rejected["combo: " + _reason_class(reason)] += 1
            if "infrastructure" not in reason:
                rejections.add(cand.iid, reason, "combo")
            continue
        task = make_task(repo, cand, v, cfg, writer)
        task.provenance["parts"] = sorted(d["instance_id"] for d in picked_of[cand.iid])
        append_task(out, task)
        record_oracle(task, out, repo)
        made += 1
        summary.combined += 1
        bar.update(1)
        if made >= want:
            break


def _bar(progress: bool, name: str, total: int, initial: int) -> Any:
    """A progress bar on a terminal; elsewhere (a pipe, a log file, a terminal that reports no width), where a bar's
    carriage returns would show nothing until the last line, one plain line per task."""
    from tqdm import tqdm

    if progress and not _terminal_width():
        return _Lines(name, total, min(initial, total))
    return tqdm(total=total, initial=min(initial, total), desc=f"{name:>16}", unit="task", disable=not progress,
                file=sys.stderr, dynamic_ncols=True, mininterval=2.0)


def _terminal_width() -> int:
    """The width of the terminal on stderr; 0 when stderr is not one or it reports no width."""
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns if sys.stderr.isatty() else 0
    except (OSError, ValueError, AttributeError):
        return 0


class _Lines:
    """The progress bar's interface as plain lines on stderr: ``NAME: k/total tasks (s)``."""

    def __init__(self, name: str, total: int, initial: int):
        self.name, self.total, self.n, self.start = name, total, initial, time.monotonic()
        self.postfix = "tried 0"
        print(f"{name}: {self.n}/{total} tasks", file=sys.stderr, flush=True)

    def update(self, k: int = 1) -> None:
        self.n += k
        print(f"{self.name}: {self.n}/{self.total} tasks ({time.monotonic() - self.start:.0f} s, {self.postfix})",
              file=sys.stderr, flush=True)

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def close(self) -> None:
        pass


# ---- re-grading registered tasks ------------------------------------------------------------------


def regrade_record(spec: RepoSpec, record: dict[str, Any], cfg: GenerateConfig) -> tuple[str, dict[str, Any] | None]:
    """Run a task's bug exactly as grading will (FAIL_TO_PASS + PASS_TO_PASS in one session) and fix its
    lists: a test whose result contradicts its role there depended on tests outside the selection, and
    leaves both lists (recorded under ``validation.flaky`` and ``validation.regraded``). A task left
    with an empty list, or whose gold fix then fails its new selection, is dropped.

    Returns ``(verdict, record)``: ``("ok", record)``, ``("fixed: ...", new record)``, ``("dropped: ...",
    None)``, or ``("infrastructure failure: ...", record)`` (kept unchanged; run again).
    """
    from frog_gym.generators.validate import graded_disagreements
    from frog_gym.sandbox.workspace import apply_patch

    _, template, ws, _, runner = _worker_state(spec, cfg.fork_server)
    f2p, p2p = list(record["FAIL_TO_PASS"]), list(record["PASS_TO_PASS"])
    args = ("--continue-on-collection-errors", f"--timeout={cfg.test_timeout}", "--tb=no")
    timeout = 3 * cfg.max_run_seconds
    ws.sync(template)
    apply_patch(ws.path, record["bug_patch"], f"the bug of {record['instance_id']}")
    r = runner(tuple(f2p + p2p), timeout, details=False, args=args, repeat=1)
    if r.infra_failure:
        return f"infrastructure failure: {r.infra_failure}", record
    odd = graded_disagreements(r.statuses, f2p, p2p)
    if not odd:
        return "ok", record
    f2p = [t for t in f2p if t not in odd]
    p2p = [t for t in p2p if t not in odd]
    if not f2p or not p2p:
        return f"dropped: {'FAIL_TO_PASS' if not f2p else 'PASS_TO_PASS'} would be empty without {odd[:3]}", None
    ws.sync(template)
    gold = runner(tuple(f2p + p2p), timeout, details=False, args=args, repeat=1)
    failing = [t for t, s in gold.statuses.items() if not s.ok]
    if gold.infra_failure or failing:
        return f"dropped: the gold fix fails the new selection ({gold.infra_failure or failing[:3]})", None
    new = dict(record, FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p)
    validation = dict(new.get("validation", {}))
    validation["flaky"] = sorted({*validation.get("flaky", []), *odd})
    validation["regraded"] = {"removed": sorted(odd), "on": time.strftime("%Y-%m-%d")}
    new["validation"] = validation
    if "features" in new:
        new["features"] = dict(new["features"], fail_to_pass=len(f2p), pass_to_pass=len(p2p))
    return f"fixed: removed {len(odd)} test(s) whose result depends on tests outside the selection", new


def regrade(spec: RepoSpec, cfg: GenerateConfig, log: Callable[[str], None] = print) -> Counter:
    """:func:`regrade_record` over every task of one repository's task file, rewritten in place (same
    order; dropped tasks removed) under the task file's lock. Returns a count of verdict kinds."""
    path = tasks_path(spec, cfg)
    records = read_existing(path)
    verdicts: Counter = Counter()
    if not records:
        return verdicts
    pool = _Pool(cfg.workers)
    try:
        futures = [pool.submit(regrade_record, spec, d, cfg) for d in records]
        out = []
        for d, fut in zip(records, futures):
            try:
                verdict, new = fut.result()
            except Exception as e:  # noqa: BLE001 (kept unchanged, reported)
                verdict, new = f"infrastructure failure: {type(e).__name__}: {e}", d
            verdicts[verdict.split(":", 1)[0]] += 1
            if verdict != "ok":
                log(f"{d['instance_id']}: {verdict}")
            if new is not None:
                out.append(new)
    finally:
        pool.close()
    if verdicts["fixed"] or verdicts["dropped"]:
        tasks = [Task.from_dict(d, str(path)) for d in out]  # every rewritten record must still load
        with FileLock(str(paths.home() / "locks" / f"tasks-{path.name}.lock")):
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text("".join(t.to_json() + "\n" for t in tasks), encoding="utf-8")
            os.replace(tmp, path)
            write_ids_sidecar(path)
    return verdicts
