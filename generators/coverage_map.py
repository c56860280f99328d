"""Targeting: which tests execute which lines, so that a candidate bug runs only the tests that reach it.

Once per repository venv, the whole suite runs once in the sandbox under coverage.py, each test in its
own dynamic context named by its pytest node id (plugin ``frog_gym/_plugin/frog_coverage.py``; coverage
is bound read-only into the sandbox and put on ``PYTHONPATH``, so the repository's venv stays as it is).
Only the spec's mutable paths are measured. The result, ``(file, line) -> sorted test ids``, with the files
measured and which tests opened which of them while they ran (``readers``), is cached as JSON under
``$FROG_GYM_HOME/coverage/`` by venv key (:class:`frog_gym.grading.impact.CoverageMap`; grading reads it to
run only the tests a change can reach, :mod:`frog_gym.grading.impact`). A map of an older
:data:`~frog_gym.grading.impact.MAP_VERSION` is measured again.

The same run warms the *generation tree*, a private copy of the snapshot whose modules are precompiled
with hash-checked invalidation (an edited file always recompiles, whatever its timestamp) and whose test
modules carry pytest's rewritten bytecode; validating a candidate there costs less than half as much.

Example:
    >>> cmap = CoverageMap(("t.py::a", "t.py::b"), {"t.py::a": "PASSED", "t.py::b": "PASSED"},
    ...                    {"m.py": {3: (0,), 4: (0, 1)}})
    >>> cmap.covering("m.py", [3, 4])
    ['t.py::a', 't.py::b']
    >>> sorted(cmap.covered_lines("m.py"))
    [3, 4]
"""

from __future__ import annotations

import compileall
import fnmatch
import json
import os
import py_compile
import shutil
import time
from pathlib import Path

import coverage

from frog_gym import paths
from frog_gym.grading.impact import MAP_VERSION, CoverageMap, map_path
from frog_gym.grading.runner import run_tests
from frog_gym.sandbox.base import Limits
from frog_gym.catalog.snapshot import TESTBED, PreparedRepo, venv_key
from frog_gym.sandbox.workspace import Template, _manifest

_DONE = ".frog-complete"


def mutable_files(repo: PreparedRepo, tree: Path | None = None) -> list[str]:
    """Python files generators may mutate: under ``generate.mutable``, minus ``exclude`` and test files."""
    spec, root = repo.spec, tree or repo.tree
    roots = spec.mutable or spec.install.import_paths
    out: set[str] = set()
    for r in roots:
        p = root / r
        files = [p] if p.is_file() else sorted(p.rglob("*.py")) if p.is_dir() else []
        for f in files:
            rel = f.relative_to(root).as_posix()
            if "__pycache__" in rel or not rel.endswith(".py") or spec.tests.is_test_file(rel):
                continue
            if any(fnmatch.fnmatchcase(rel, pat) for pat in spec.exclude):
                continue
            out.add(rel)
    return sorted(out)


def gen_dir(repo: PreparedRepo) -> Path:
    """The generator's private folder for one repository venv (generation tree, logs, rejections)."""
    d = paths.home() / "gen" / f"{repo.spec.name}-{venv_key(repo.spec)}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _compile_tree(tree: Path) -> None:
    """Precompile every module with checked-hash bytecode, so edits can never run stale code."""
    compileall.compile_dir(str(tree), quiet=2, workers=1,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)


def _coverage_binds() -> tuple[tuple[Path, str, bool], ...]:
    return ((Path(coverage.__file__).parent, "/frog/cov/coverage", False),)


def _rel(measured: str) -> str | None:
    return measured[len(TESTBED) + 1:] if measured.startswith(TESTBED + "/") else None


def _read_record(path: Path, tests: tuple[str, ...], files: list[str]
                 ) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
    """The plugin's record: files opened during tests (absolute path -> node ids, ``*`` for a read before the
    first test that every test may depend on), as file -> test indices; and the measured files imported
    before measurement began."""
    if not path.exists():
        raise RuntimeError(f"the coverage run wrote no record of the files its tests read ({path.name})")
    record = json.loads(path.read_text())
    index = {t: i for i, t in enumerate(tests)}
    wanted = set(files)
    out: dict[str, tuple[int, ...]] = {}
    for measured, ids in record["readers"].items():
        if _rel(measured) in wanted:
            ix = list(range(len(tests))) if "*" in ids else sorted({index[t] for t in ids if t in index})
            if ix:
                out[_rel(measured)] = tuple(ix)
    return out, tuple(sorted(r for m in record["preloaded"] if (r := _rel(m)) in wanted))


def _read_data(data_file: Path, tests: tuple[str, ...], files: list[str]
               ) -> tuple[dict[str, dict[int, tuple[int, ...]]], dict[str, tuple[int, ...]]]:
    """Per file, line -> the tests that executed it; and the lines executed outside any test (import time)."""
    index = {t: i for i, t in enumerate(tests)}
    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    wanted = set(files)
    lines: dict[str, dict[int, tuple[int, ...]]] = {}
    imported: dict[str, tuple[int, ...]] = {}
    for measured in data.measured_files():
        rel = _rel(measured)
        if rel not in wanted:
            continue
        by_line: dict[int, tuple[int, ...]] = {}
        at_import = []
        for n, contexts in data.contexts_by_lineno(measured).items():
            ix = sorted({index[c] for c in contexts if c in index})
            if ix:
                by_line[n] = tuple(ix)
            if "" in contexts:
                at_import.append(n)
        if by_line:
            lines[rel] = by_line
        if at_import:
            imported[rel] = tuple(sorted(at_import))
    return lines, imported


def build(repo: PreparedRepo, *, timeout: float | None = None, refresh: bool = False) -> tuple[CoverageMap, Template]:
    """The repository's coverage map and its warmed generation tree, each made once per venv key.

    The coverage run also records the suite's statuses; when no baseline is cached yet it becomes the
    baseline that :func:`frog_gym.generators.validate.baseline` reads (one suite run per repository, not two).
    """
    d = gen_dir(repo)
    cache = map_path(repo.spec)
    tree, man = d / "tree", d / "tree.manifest.json"

    def cached() -> CoverageMap | None:
        if refresh or not cache.exists() or not man.exists():
            return None
        cmap = CoverageMap.from_json(cache.read_text())
        return cmap if cmap.version >= MAP_VERSION else None

    if (hit := cached()) is not None:
        return hit, Template(tree, json.loads(man.read_text()))
    from filelock import FileLock

    with FileLock(str(d / "build.lock")):
        if (hit := cached()) is not None:
            return hit, Template(tree, json.loads(man.read_text()))
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(repo.tree, tree, symlinks=True, ignore=shutil.ignore_patterns(_DONE, "__pycache__"))
        _compile_tree(tree)
        files = mutable_files(repo, tree)
        include = [f"{TESTBED}/{f}" for f in files]
        out = d / "cov-out"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        budget = float(timeout or max(600, 4 * repo.spec.tests.suite_budget))
        env = {"PYTHONPATH": "/frog/cov", "FROG_COVERAGE": "/frog/out/coverage.sqlite",
               "FROG_COVERAGE_INCLUDE": json.dumps(include), "PYTHONDONTWRITEBYTECODE": ""}
        start = time.monotonic()
        r = run_tests(repo, tree, None, budget, Limits(command_timeout=budget, output_cap=8192,
                                                       cpu_seconds=int(budget) + 60),
                      env=env, binds=_coverage_binds(), out_dir=out, plugins=("frog_coverage",))
        seconds = time.monotonic() - start
        if r.infra_failure or not r.statuses:
            raise RuntimeError(f"the coverage run of '{repo.spec.name}' failed: {r.infra_failure or r.note}")
        tests = tuple(sorted(r.statuses))
        statuses = {t: r.statuses[t].value for t in tests}
        lines, imported = _read_data(out / "coverage.sqlite", tests, files)
        readers, preloaded = _read_record(out / "coverage.sqlite.readers.json", tests, files)
        cmap = CoverageMap(tests, statuses, lines, round(seconds, 1), tuple(files), readers, MAP_VERSION,
                           imported, preloaded)
        baseline = paths.home() / "baselines" / f"{repo.spec.name}-{venv_key(repo.spec)}.json"
        if not baseline.exists():
            baseline.parent.mkdir(exist_ok=True)
            _atomic_write(baseline, json.dumps(statuses))
        shutil.rmtree(out, ignore_errors=True)
        template = Template(tree, _manifest(tree))
        _atomic_write(man, json.dumps(template.manifest))
        cache.parent.mkdir(exist_ok=True)
        _atomic_write(cache, cmap.to_json())
        return cmap, template


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
