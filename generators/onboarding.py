"""Adding a repository to the registry, and re-checking one: the work behind ``frog-gym registry``.

``add`` fetches a source (a PyPI release or a git commit) and hashes it itself, infers the layout (src
folder, test paths, mutable source folders), locks the test requirements with hashes, builds the venv,
runs the whole suite several times in the sandbox and writes the spec with what it measured: tests
collected, those passing in every run, flaky ones (results that differ between runs), always-failing
ones, and the median suite time. ``validate`` re-verifies a spec's source, rebuilds if needed, re-runs
the suite and says what changed against the recorded measurement.

Example:
    >>> parse_source("pypi:iniconfig==2.3.1")
    SourceArg(kind='pypi', name='iniconfig', version='2.3.1', url='', ref='')
"""

from __future__ import annotations

import datetime as _dt
import email.parser
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import tomli_w
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from frog_gym import paths
from frog_gym.errors import FrogGymError, HashMismatchError, RefusedError, SourceError
from frog_gym.grading.runner import TestStatus, run_tests
from frog_gym.sandbox import Limits, make_sandbox
from frog_gym.catalog.snapshot import (PreparedRepo, download_sdist, fetch_sdist, prepare, resolve_lock, sha256_file,
                               snapshot_tree)
from frog_gym.catalog.spec import RepoSpec, load_spec, parse_repo, python_problem, repo_names, repos_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_REQUIRES = ("pytest==8.4.2", "pytest-timeout==2.4.0")
"""Every spec's test runner: grading needs pytest-timeout; pytest 9 breaks some suites (flask)."""

Progress = Callable[[str, int, int], None]
"""``progress(description, done, total)``: called as long work advances (the CLI draws a bar)."""

_NOT_SOURCE = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "bench", "scripts",
               "tools", "build", "dist", "site-packages", "venv", ".venv", "ci", "changelog.d", "requirements"}
_NOT_MODULES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py", "runtests.py", "run_tests.py",
                "bootstrap.py", "ez_setup.py", "versioneer.py"}
_VENDORED = {"_vendor", "vendor", "vendored", "_vendored", "externals", "_externals", "third_party"}
_SPDX = {"MIT License": "MIT", "BSD License": "BSD-3-Clause", "Apache Software License": "Apache-2.0",
         "Python Software Foundation License": "PSF-2.0", "ISC License (ISCL)": "ISC",
         "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0", "The Unlicense (Unlicense)": "Unlicense",
         "GNU General Public License v2 (GPLv2)": "GPL-2.0-only", "Zope Public License": "ZPL-2.1",
         "GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0-only",
         "GNU Lesser General Public License v2 or later (LGPLv2+)": "LGPL-2.0-or-later",
         "GNU Library or Lesser General Public License (LGPL)": "LGPL-2.1-or-later"}
_SHORT_LICENSES = {"mit": "MIT", "bsd": "BSD-3-Clause", "apache 2.0": "Apache-2.0", "apache-2.0": "Apache-2.0",
                   "apache software license": "Apache-2.0", "isc": "ISC", "psf": "PSF-2.0", "mpl-2.0": "MPL-2.0"}


def _noop(desc: str, done: int, total: int) -> None:
    pass


# --- sources -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceArg:
    """A source named on the command line: ``pypi:NAME==VERSION`` or ``git:URL@COMMIT``."""

    kind: str
    name: str = ""
    version: str = ""
    url: str = ""
    ref: str = ""


def parse_source(text: str) -> SourceArg:
    """Parse ``pypi:NAME==VERSION`` or ``git:URL@COMMIT`` (a local path works as the URL).

    >>> parse_source("git:/tmp/repo@0123abc").url
    '/tmp/repo'
    >>> parse_source("flask")
    Traceback (most recent call last):
    ...
    frog_gym.errors.RefusedError: Cannot read the source 'flask': write pypi:NAME==VERSION (e.g. pypi:flask==3.1.3) or git:URL@COMMIT (e.g. git:https://github.com/pallets/flask@<40-hex commit>)
    """
    if text.startswith("pypi:") and "==" in text:
        name, _, version = text[5:].partition("==")
        if name.strip() and version.strip():
            return SourceArg("pypi", name=name.strip(), version=version.strip())
    if text.startswith("git:") and "@" in text[4:]:
        url, _, ref = text[4:].rpartition("@")
        if url and ref:
            return SourceArg("git", url=url, ref=ref)
    raise RefusedError(f"Cannot read the source {text!r}: write pypi:NAME==VERSION (e.g. pypi:flask==3.1.3) or "
                       f"git:URL@COMMIT (e.g. git:https://github.com/pallets/flask@<40-hex commit>)")


def _fetch_release(name: str, version: str) -> str:
    """Download a release's sdist into the cache (if not there yet) and return its sha256, computed here.

    A release fetched before is re-hashed from the cache instead of downloaded again."""
    cache = paths.home() / "sdists"
    cache.mkdir(exist_ok=True)
    memo = cache / f"{canonicalize_name(name)}-{version}.sha256"
    if memo.exists():
        known = memo.read_text().strip()
        for archive in cache.glob(f"{known}.*"):
            if sha256_file(archive) == known:
                return known
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        archive = download_sdist(name, version, Path(tmp))
        sha = sha256_file(archive)
        suffix = ".zip" if archive.name.endswith(".zip") else ".tar.gz"
        if not list(cache.glob(f"{sha}.*")):
            os.replace(archive, cache / f"{sha}{suffix}")
    memo.write_text(sha + "\n")
    return sha


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(["git", *args], capture_output=True, text=True, env=env)


def resolve_commit(url: str, ref: str) -> str:
    """The full commit id that ``ref`` (a commit, tag or branch) names in the repository at ``url``."""
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        return ref
    if Path(url).is_dir():
        proc = _git("-C", url, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if proc.returncode == 0:
            return proc.stdout.strip()
    elif not paths.offline():
        proc = _git("ls-remote", url, ref, f"{ref}^{{}}")
        lines = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
        if proc.returncode == 0 and lines:
            return lines[-1]
    raise RefusedError(f"Cannot resolve {ref!r} in the git repository {url}: give a full 40-hex commit id, "
                       f"or a tag or branch that exists there")


# --- layout inference ----------------------------------------------------------------------------------


def read_metadata(tree: Path) -> dict[str, str]:
    """``summary``, ``license`` (SPDX where recognisable), ``requires_python`` and ``repository`` (GitHub
    ``owner/name``, from the project URLs) of a source tree, from its
    PKG-INFO (sdists) or pyproject.toml (git trees); missing values are empty strings."""
    out = {"summary": "", "license": "", "requires_python": "", "repository": ""}
    if (tree / "PKG-INFO").is_file():
        msg = email.parser.Parser().parsestr((tree / "PKG-INFO").read_text(encoding="utf-8", errors="replace"))
        out["summary"] = (msg.get("Summary") or "").strip()
        urls = " ".join([msg.get("Home-page") or "", *(msg.get_all("Project-URL") or [])])
        found = sorted(set(re.findall(r"github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?(?=[/#\s]|$)", urls)))
        found = [f for f in found if not f.startswith("sponsors/")]
        out["repository"] = found[0] if len(found) == 1 else ""
        out["requires_python"] = (msg.get("Requires-Python") or "").strip()
        lic = (msg.get("License-Expression") or "").strip()
        short = (msg.get("License") or "").strip()
        if not lic and short and "\n" not in short and len(short) <= 40:
            lic = _SHORT_LICENSES.get(short.lower(), short)
        if not lic:
            for c in msg.get_all("Classifier") or []:
                if c.startswith("License :: OSI Approved :: ") and c[27:] in _SPDX:
                    lic = _SPDX[c[27:]]
                    break
        out["license"] = lic
    elif (tree / "pyproject.toml").is_file():
        try:
            project = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
        except tomllib.TOMLDecodeError:
            project = {}
        out["summary"] = str(project.get("description", ""))
        out["requires_python"] = str(project.get("requires-python", ""))
        lic = project.get("license", "")
        out["license"] = lic if isinstance(lic, str) else ""
    return out


def _has_py(d: Path) -> bool:
    return any(d.rglob("*.py"))


def infer_import_paths(tree: Path) -> list[str]:
    """``['src']`` for a src layout, else ``['.']``."""
    src = tree / "src"
    if src.is_dir() and (any(src.glob("*/__init__.py")) or any(src.glob("*.py"))):
        return ["src"]
    return ["."]


def infer_tests(tree: Path) -> list[str]:
    """Where the tests are: a top-level tests/ or test/ folder, top-level test files, or test folders
    inside the packages (``pkg/tests``). Empty when the source ships no tests."""
    for d in ("tests", "test", "testing", "t"):
        if (tree / d).is_dir() and _has_py(tree / d):
            return [d]
    top = sorted(p.name for p in tree.glob("*.py") if p.name.startswith("test_") or p.name.endswith("_test.py"))
    if top:
        return top
    nested = sorted(str(p.relative_to(tree)) for pat in ("*/tests", "*/test", "src/*/tests", "src/*/test")
                    for p in tree.glob(pat) if p.is_dir() and _has_py(p))
    return nested


def infer_mutable(tree: Path, import_paths: list[str]) -> list[str]:
    """The package folders and top-level modules under the import paths: what generators may mutate."""
    out = []
    for ip in import_paths:
        base = tree / ip
        for p in sorted(base.iterdir()):
            rel = os.path.normpath(os.path.join(ip, p.name))
            if p.is_dir() and (p / "__init__.py").is_file() and p.name.lower() not in _NOT_SOURCE:
                out.append(rel)
            elif (p.is_file() and p.suffix == ".py" and p.name not in _NOT_MODULES
                  and not p.name.startswith("test_") and not p.name.endswith("_test.py")):
                out.append(rel)
    return out


def infer_exclude(tree: Path, mutable: list[str]) -> list[str]:
    """Glob patterns, inside the mutable folders, of test and vendored code."""
    out = []
    for m in mutable:
        if not (tree / m).is_dir():
            continue
        for d in sorted(p for p in (tree / m).rglob("*") if p.is_dir()):
            rel = d.relative_to(tree).as_posix()
            if d.name in _VENDORED or d.name in ("tests", "test", "testing"):
                if not any(rel.startswith(x[:-3] + "/") for x in out):
                    out.append(f"{rel}/**")
    return out


def project(req: str) -> str:
    """The canonical project name of a requirement string: ``project("Tornado>=6.0") == "tornado"``."""
    return canonicalize_name(re.split(r"[<>=!~;\[ ]", req.strip(), maxsplit=1)[0])


TEST_EXTRAS = ("test", "tests", "testing")
"""The extras and dependency groups whose requirements ``add`` installs for the tests."""


def declared_test_requires(tree: Path, package: str = "") -> tuple[list[str], list[str]]:
    """The test requirements a source declares, and where: extras (or PEP 735 dependency groups) named
    ``test``, ``tests`` or ``testing`` in PKG-INFO, pyproject.toml, setup.cfg or a literal ``extras_require``
    of setup.py. pytest itself is left out (the registry pins its own), and so is the package itself.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> _ = (d / "setup.cfg").write_text("[options.extras_require]\\ntest =\\n    pytest>=7\\n    tornado>=6.0\\n")
    >>> declared_test_requires(d)
    (['tornado>=6.0'], ['setup.cfg [options.extras_require] test'])
    >>> _ = (d / "setup.cfg").write_text("[options.extras_require]\\ntesting =\\n    pytest-black; \\\\\\n"
    ...                                  "    python_implementation != 'PyPy'\\n    pygments\\n")
    >>> declared_test_requires(d)[0]
    ["pytest-black; python_implementation != 'PyPy'", 'pygments']
    """
    import ast
    import configparser

    found: list[tuple[str, list[str]]] = []
    if (tree / "PKG-INFO").is_file():
        msg = email.parser.Parser().parsestr((tree / "PKG-INFO").read_text(encoding="utf-8", errors="replace"))
        for extra in TEST_EXTRAS:
            reqs = []
            for r in msg.get_all("Requires-Dist") or []:
                try:
                    req = Requirement(r)
                except InvalidRequirement:
                    continue
                if req.marker is not None and re.search(rf"""extra\s*==\s*['"]{extra}['"]""", r) \
                        and req.marker.evaluate({"extra": extra}):
                    req.marker = None  # it held for this interpreter and this extra
                    reqs.append(str(req))
            if reqs:
                found.append((f"PKG-INFO extra {extra}", reqs))
    if not found and (tree / "pyproject.toml").is_file():
        try:
            doc = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            doc = {}
        tables = (("[project.optional-dependencies]", doc.get("project", {}).get("optional-dependencies", {})),
                  ("[dependency-groups]", doc.get("dependency-groups", {})))
        for where, table in tables:
            for extra in TEST_EXTRAS:
                reqs = [r for r in table.get(extra, []) if isinstance(r, str)] if isinstance(table, dict) else []
                if reqs:
                    found.append((f"pyproject.toml {where} {extra}", reqs))
    if not found and (tree / "setup.cfg").is_file():
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read(tree / "setup.cfg", encoding="utf-8")
            extras = cfg["options.extras_require"] if cfg.has_section("options.extras_require") else {}
        except configparser.Error:
            extras = {}
        for extra in TEST_EXTRAS:
            # a requirement goes on over a backslash (inflect: ``pytest-black >= 0.3.7; \`` then its marker)
            text = re.sub(r"\s*\\[ \t]*\n\s*", " ", extras.get(extra, ""))
            reqs = [ln.strip() for ln in text.splitlines() if ln.strip()]
            if reqs:
                found.append((f"setup.cfg [options.extras_require] {extra}", reqs))
    if not found and (tree / "setup.py").is_file():
        try:
            module = ast.parse((tree / "setup.py").read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            module = None
        for node in ast.walk(module) if module else ():
            if isinstance(node, ast.keyword) and node.arg == "extras_require":
                try:
                    extras = ast.literal_eval(node.value)
                except ValueError:  # not a literal: not readable without running setup.py
                    continue
                for extra in TEST_EXTRAS:
                    reqs = list(extras.get(extra, [])) if isinstance(extras, dict) else []
                    if reqs:
                        found.append((f"setup.py extras_require {extra}", [str(r) for r in reqs]))
    own = {project(package)} if package else set()
    skip = {project(r) for r in DEFAULT_REQUIRES} | own
    reqs = [r for _, rs in found for r in rs if project(r) not in skip]
    return list(dict.fromkeys(reqs)), [w for w, _ in found]


def merge_requires(extra: list[str] | tuple[str, ...]) -> list[str]:
    """The default test runner pins plus ``extra``; a pin of the same project in ``extra`` wins.

    >>> merge_requires(["pytest==8.3.5", "pygments"])
    ['pytest-timeout==2.4.0', 'pytest==8.3.5', 'pygments']
    """
    given = {project(r) for r in extra}
    return [r for r in DEFAULT_REQUIRES if project(r) not in given] + list(extra)


# --- measuring the suite -------------------------------------------------------------------------------


@dataclass
class Baseline:
    """Per-test statuses of several full runs of a pristine tree, and their wall times."""

    runs: list[dict[str, TestStatus]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def tests(self) -> list[str]:
        return sorted(set().union(*self.runs)) if self.runs else []

    @property
    def passing(self) -> list[str]:
        """Tests that passed in every run."""
        return [t for t in self.tests if all(t in r and r[t].ok for r in self.runs)]

    @property
    def flaky(self) -> list[str]:
        """Tests whose status differed between runs (or that some runs did not report)."""
        return [t for t in self.tests if len({r.get(t, TestStatus.MISSING) for r in self.runs}) > 1]

    @property
    def failing(self) -> list[str]:
        """Tests that failed or errored in every run."""
        bad = (TestStatus.FAILED, TestStatus.ERROR)
        return [t for t in self.tests if all(r.get(t) in bad for r in self.runs)]

    def measured(self) -> dict[str, Any]:
        """The spec's ``[measured]`` table."""
        return {"tests": len(self.tests), "passing": len(self.passing),
                "suite_seconds": round(statistics.median(self.seconds), 2), "runs": len(self.runs),
                "measured_on": _dt.date.today().isoformat(), "flaky": self.flaky, "failing": self.failing}


def _collect_output(repo: PreparedRepo, tree: Path) -> str:
    """pytest's own words on what it collects (shown when a run reported no tests)."""
    sb = make_sandbox("local", repo, tree, Limits(command_timeout=120, output_cap=8192))
    try:
        argv = [str(repo.python), "-m", "pytest", *repo.spec.pytest_args, "--collect-only", "-q",
                *repo.spec.tests.paths]
        return "\n".join(sb.exec(argv, 120).output.strip().splitlines()[-25:])
    finally:
        sb.close()


def run_suite(repo: PreparedRepo, budget: float) -> tuple[dict[str, TestStatus], float]:
    """One full run of the suite in the sandbox, on a fresh copy of the pristine tree.

    Raises:
        RefusedError: the suite ran over ``budget`` seconds, or no test was collected.
        SourceError: the sandbox itself failed.
    """
    name = repo.spec.name
    work = paths.home() / "work" / f"reg-{uuid.uuid4().hex[:12]}"
    try:
        shutil.copytree(repo.tree, work, symlinks=True)
        start = time.monotonic()
        run = run_tests(repo, work, None, budget + 15, details=True, protect=repo.spec.tests.paths)  # as graded
        statuses, code, note, infra = run.statuses, run.exit_code, run.note, run.infra_failure
        seconds = time.monotonic() - start
        if infra and "timed out" in infra:
            raise RefusedError(f"'{name}': the full suite did not finish within its budget of {budget:.0f} s. "
                               f"Deselect slow tests (--pytest-arg=--deselect=ID, or --tests a subset) or raise "
                               f"--budget if the repository is worth it.")
        if infra:
            raise SourceError(f"'{name}': the sandbox failed while running the suite: {infra}\n{note}")
        if seconds > budget:
            raise RefusedError(f"'{name}': the full suite took {seconds:.0f} s, over its budget of {budget:.0f} s. "
                               f"Deselect slow tests or raise --budget.")
        if not statuses and run.collect_errors:
            raise RefusedError(f"'{name}': pytest collected {run.collected} test(s) but stopped on "
                               f"{len(run.collect_errors)} collection error(s): {_import_errors(run)}. Add the "
                               f"missing test dependencies (--requires NAME), or leave those files out "
                               f"(--pytest-arg=--ignore=PATH).")
        if not statuses:
            raise RefusedError(f"'{name}': no test collected from {', '.join(repo.spec.tests.paths)} (pytest exit "
                               f"{code}). pytest said:\n{_collect_output(repo, work)}\nFix the test paths (--tests), "
                               f"add undeclared test dependencies (--requires), or clear options the repository's "
                               f"config adds (--pytest-arg=-o --pytest-arg=addopts=).")
        return statuses, seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _import_errors(run: Any) -> str:
    """``path: ExcType: message`` for each collection error, the first three in full."""
    parts = []
    for nodeid in run.collect_errors[:3]:
        d = run.details.get(nodeid, {})
        message = re.sub(r"^E\s+", "", (d.get("message") or d.get("exc_type") or "error").strip())
        parts.append(f"{nodeid or '<session>'}: {message}")
    more = len(run.collect_errors) - 3
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def measure(repo: PreparedRepo, runs: int, budget: float, progress: Progress = _noop) -> Baseline:
    """Run the full suite ``runs`` times; see :class:`Baseline`."""
    base = Baseline()
    for i in range(runs):
        progress(f"{repo.spec.name}: test run {i + 1}/{runs}", i, runs)
        statuses, seconds = run_suite(repo, budget)
        base.runs.append(statuses)
        base.seconds.append(seconds)
    progress(f"{repo.spec.name}: {runs} runs done", runs, runs)
    return base


# --- add -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AddOptions:
    """What ``registry add`` is told. Fields left None are inferred from the source tree.

    Attributes:
        name: registry name (default: the normalized PyPI name, or the git repository's folder name).
        kind: what the library does ('parsing', 'dates', 'web', ...).
        import_paths: folders put on sys.path (inferred: ['src'] for a src layout, else ['.']).
        tests: test files or folders (inferred: tests/, test/, test_*.py, pkg/tests).
        pytest_args: extra pytest arguments (e.g. '-o', 'addopts=' or '--deselect=ID').
        requires: test requirements beyond pytest==8.4.2 and pytest-timeout (a pytest pin replaces ours).
        env: environment variables for the sandbox (e.g. pure-Python switches of compiled packages).
        steps: shell commands run in the venv after install.
        mutable: source folders generators may mutate (inferred: the packages under the import paths).
        exclude: glob patterns never mutated (inferred: tests and vendored folders inside them).
        install_package: install the package's metadata and dependencies (inferred: it has a build file).
        timeout: per-test timeout in seconds.
        budget: seconds one full run may take; a slower suite is refused.
        runs: full runs used to find flaky tests.
        out_dir: where the spec is written (default: the registry's repos folder).
        force: overwrite an existing spec.
    """

    name: str | None = None
    kind: str = ""
    import_paths: tuple[str, ...] | None = None
    tests: tuple[str, ...] | None = None
    pytest_args: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    steps: tuple[str, ...] = ()
    mutable: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    install_package: bool | None = None
    timeout: int = 60
    budget: int = 120
    runs: int = 3
    out_dir: Path | None = None
    force: bool = False

    def __post_init__(self) -> None:
        if self.runs < 1:
            raise RefusedError(f"runs must be at least 1, got {self.runs}; use 3 or more to find flaky tests")
        if self.budget <= 0 or self.timeout <= 0:
            raise RefusedError(f"budget and timeout must be positive, got {self.budget} and {self.timeout}")


@dataclass
class AddResult:
    """What ``add`` wrote: the spec file, its data, and the measurement behind it."""

    path: Path
    data: dict[str, Any]
    baseline: Baseline


def _default_name(src: SourceArg) -> str:
    raw = src.name if src.kind == "pypi" else Path(src.url.rstrip("/")).name.removesuffix(".git")
    return canonicalize_name(raw)


def spec_text(data: dict[str, Any]) -> str:
    """A spec's TOML text, with a header that says how it was made."""
    return ("# Written by `frog-gym registry add`. Edit by hand if needed, then check with\n"
            f"# `frog-gym registry validate {data['name']}`; the schema: `frog-gym registry schema`.\n"
            + tomli_w.dumps(data))


def write_spec(path: Path, data: dict[str, Any]) -> None:
    """Write a spec atomically (concurrent writers of the same spec leave one whole file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(spec_text(data), encoding="utf-8")
    os.replace(tmp, path)


def add(source: str, opts: AddOptions, progress: Progress = _noop) -> AddResult:
    """Add a repository to the registry (see the module docstring).

    Raises:
        RefusedError: the source has no tests, its suite is over budget, nothing passes, its Python
            requirement excludes this interpreter, or the spec exists (without ``force``).
        SourceError: the download or the build failed (with the build log's tail).
    """
    total = 4 + opts.runs
    src = parse_source(source)
    name = opts.name or _default_name(src)
    out = (opts.out_dir or repos_dir()) / f"{name}.toml"
    if out.exists() and not opts.force:
        raise RefusedError(f"{out} exists. Pass --force to measure again and overwrite it, or run "
                           f"`frog-gym registry validate {name}` to check it.")
    progress(f"{name}: fetching {source}", 0, total)
    if src.kind == "pypi":
        table: dict[str, str] = {"pypi": src.name, "version": src.version,
                                 "sha256": _fetch_release(src.name, src.version)}
    else:
        table = {"git": src.url, "commit": resolve_commit(src.url, src.ref)}
    tree = snapshot_tree(parse_repo({"name": name, "source": table, "tests": {"paths": ["."]}}, str(out)))
    meta = read_metadata(tree)
    if meta["repository"]:
        table["repository"] = meta["repository"]
    requires_python = meta["requires_python"]
    try:
        SpecifierSet(requires_python)
    except InvalidSpecifier:
        requires_python = ""
    import_paths = list(opts.import_paths or infer_import_paths(tree))
    tests = list(opts.tests or infer_tests(tree))
    if not tests:
        raise RefusedError(f"'{name}' ({source}) ships no tests: no tests/ or test/ folder, no test_*.py file and "
                           f"no package tests/ folder in the source. Many sdists leave their tests out; try the "
                           f"git repository (git:URL@COMMIT), or name the tests with --tests PATH.")
    for t in tests:
        if not (tree / t).exists():
            raise RefusedError(f"'{name}': the test path {t!r} does not exist in the source tree")
    mutable = list(opts.mutable if opts.mutable is not None else infer_mutable(tree, import_paths))
    install_package = (opts.install_package if opts.install_package is not None
                       else any((tree / f).is_file() for f in ("pyproject.toml", "setup.py", "setup.cfg")))
    declared, where = declared_test_requires(tree, src.name if src.kind == "pypi" else name)
    given = {project(r) for r in opts.requires}
    requires = merge_requires([*(r for r in declared if project(r) not in given), *opts.requires])
    if declared:
        progress(f"{name}: test requirements declared in {', '.join(where)}: {', '.join(declared)}", 1, total)
    progress(f"{name}: locking {len(requires)} test requirement(s)", 1, total)
    release = f"{src.name}=={src.version}" if src.kind == "pypi" else ""
    lock = resolve_lock(requires, tree if install_package else None, f"'{name}'",
                        key=table.get("sha256") or table["commit"], release=release)
    install: dict[str, Any] = {"import_paths": import_paths, "requires": requires, "lock": lock}
    if not install_package:
        install["install_package"] = False
    if opts.steps:
        install["steps"] = list(opts.steps)
    if opts.env:
        install["env"] = dict(opts.env)
    tests_table: dict[str, Any] = {"paths": tests}
    if opts.pytest_args:
        tests_table["args"] = list(opts.pytest_args)
    if opts.timeout != 60:
        tests_table["timeout"] = opts.timeout
    if opts.budget != 120:
        tests_table["suite_budget"] = opts.budget
    data: dict[str, Any] = {"name": name, "kind": opts.kind, "license": meta["license"],
                            "description": meta["summary"], "source": table}
    if requires_python:
        data["python"] = {"requires": requires_python}
    data["install"] = install
    data["tests"] = tests_table
    data["generate"] = {"mutable": mutable,
                        "exclude": list(opts.exclude if opts.exclude is not None else infer_exclude(tree, mutable))}
    spec = parse_repo(data, str(out))
    if problem := python_problem(spec):
        raise RefusedError(problem)
    progress(f"{name}: building the venv", 2, total)
    repo = prepare(spec)

    def sub(desc: str, done: int, _total: int) -> None:
        progress(desc, 3 + done, total)

    base = measure(repo, opts.runs, opts.budget, sub)
    if not base.passing:
        raise RefusedError(f"'{name}': {len(base.tests)} tests collected but none passed in every run "
                           f"({len(base.failing)} always failed, {len(base.flaky)} flaky). Check undeclared test "
                           f"dependencies (--requires) and the pytest options (--pytest-arg).")
    data["measured"] = base.measured()
    parse_repo(data, str(out))
    write_spec(out, data)
    progress(f"{name}: wrote {out}", total, total)
    return AddResult(out, data, base)


# --- validate ------------------------------------------------------------------------------------------


@dataclass
class Check:
    """What re-validating one spec found. ``ok`` is False when anything changed or failed."""

    name: str
    ok: bool
    error: str = ""
    changes: list[str] = field(default_factory=list)
    newly_failing: list[str] = field(default_factory=list)
    newly_passing: list[str] = field(default_factory=list)
    tests: int = 0
    passing: int = 0
    recorded_tests: int = 0
    recorded_passing: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def verify_source(spec: RepoSpec) -> None:
    """Re-hash the cached sdist (or fetch and check it); a git source is checked against its commit on
    fetch.

    Raises:
        HashMismatchError: naming the file, the field, and both hashes.
    """
    if spec.source.kind != "pypi":
        snapshot_tree(spec)
        return
    cached = sorted((paths.home() / "sdists").glob(f"{spec.source.sha256}.*"))
    if not cached:
        fetch_sdist(spec)
        return
    got = sha256_file(cached[0])
    if got != spec.source.sha256:
        raise HashMismatchError(f"{spec.path}: field 'source.sha256': the cached archive {cached[0]} has sha256 "
                                f"{got}, the spec pins {spec.source.sha256}. Delete the file to download it again.")


def validate_spec(spec: RepoSpec, runs: int = 1, progress: Progress = _noop) -> Check:
    """Re-verify, rebuild if needed, re-run the suite ``runs`` times and compare with ``[measured]``."""
    m = spec.measured
    check = Check(spec.name, False, recorded_tests=m["tests"], recorded_passing=m["passing"])
    try:
        if problem := python_problem(spec):
            raise RefusedError(problem)
        progress(f"{spec.name}: verifying the source", 0, runs + 2)
        verify_source(spec)
        progress(f"{spec.name}: building", 1, runs + 2)
        repo = prepare(spec)
        base = measure(repo, runs, spec.tests.suite_budget,
                       lambda d, i, n: progress(d, 2 + i, runs + 2))
    except FrogGymError as e:
        check.error = f"{type(e).__name__}: {e}"
        return check
    flaky, failing = set(m["flaky"]), set(m["failing"])
    bad = (TestStatus.FAILED, TestStatus.ERROR)
    now_bad = {t for r in base.runs for t, s in r.items() if s in bad}
    check.newly_failing = sorted(now_bad - failing - flaky)
    check.newly_passing = sorted(t for t in failing if t in set(base.passing))
    check.tests = len(base.tests)
    check.passing = len([t for t in base.passing if t not in flaky])
    check.seconds = round(statistics.median(base.seconds), 2)
    if not m["runs"]:
        check.changes.append("no measurement recorded; run `frog-gym registry add --force` to record one")
    if check.newly_failing:
        check.changes.append(f"{len(check.newly_failing)} newly failing: {_few(check.newly_failing)}")
    if check.newly_passing:
        check.changes.append(f"{len(check.newly_passing)} newly passing: {_few(check.newly_passing)}")
    # flaky tests may come and go (some suites put the time into test ids): counts may move that much
    slack = len(flaky)
    if abs(check.tests - check.recorded_tests) > slack:
        check.changes.append(f"tests collected: recorded {check.recorded_tests}, now {check.tests}")
    if abs(check.passing - check.recorded_passing) > slack:
        check.changes.append(f"tests passing: recorded {check.recorded_passing}, now {check.passing}")
    check.ok = not check.changes
    return check


def _few(ids: list[str], n: int = 5) -> str:
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")


# --- which specs CI validates --------------------------------------------------------------------------


def _toplevel(d: Path) -> Path | None:
    proc = _git("-C", str(d), "rev-parse", "--show-toplevel")
    return Path(proc.stdout.strip()) if proc.returncode == 0 else None


def base_ref(root: Path) -> str:
    """``git merge-base HEAD origin/main``, or the first commit when there is no such remote branch."""
    proc = _git("-C", str(root), "merge-base", "HEAD", "origin/main")
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.strip()
    proc = _git("-C", str(root), "rev-list", "--max-parents=0", "HEAD")
    roots = proc.stdout.split()
    if proc.returncode != 0 or not roots:
        raise SourceError(f"{root}: cannot find a base commit to compare with (git: {proc.stderr.strip()})")
    return roots[-1]


def changed_specs(ref: str = "auto", folder: Path | None = None) -> list[str]:
    """Names of the specs added or modified since ``ref`` ('auto': :func:`base_ref`), committed or not."""
    folder = folder or repos_dir()
    root = _toplevel(folder)
    if root is None:
        raise SourceError(f"{folder} is not inside a git checkout; --changed-since needs one")
    ref = base_ref(root) if ref == "auto" else ref
    rel = os.path.relpath(folder, root)
    diff = _git("-C", str(root), "diff", "--name-only", "--diff-filter=AMR", ref, "--", rel)
    if diff.returncode != 0:
        raise SourceError(f"git diff against {ref!r} failed: {diff.stderr.strip()}")
    new = _git("-C", str(root), "ls-files", "--others", "--exclude-standard", "--", rel)
    files = set(diff.stdout.split()) | set(new.stdout.split())
    return sorted(Path(f).stem for f in files if f.endswith(".toml") and (root / f).is_file())


def plan(names: list[str] | None, changed_since: str | None, sample: int, seed: int | None
         ) -> tuple[list[str], list[str]]:
    """``(required, optional)``: the specs that must be validated, and others in random order for a
    time-bounded sample (empty unless ``sample``)."""
    everything = list(repo_names())
    required = list(names or [])
    if changed_since:
        required += [n for n in changed_specs(changed_since) if n not in required]
    if not names and not changed_since and not sample:
        required = everything
    rest = [n for n in everything if n not in required]
    random.Random(seed).shuffle(rest)
    return required, rest[:sample]


def estimate_seconds(spec: RepoSpec, runs: int) -> float:
    """A rough cost of validating a spec from a cold cache: a build plus the recorded suite time."""
    return 30.0 + runs * float(spec.measured["suite_seconds"] or spec.tests.suite_budget)


def validate_many(required: list[str], optional: list[str], runs: int, budget: float | None,
                  progress: Progress = _noop) -> tuple[list[Check], list[str]]:
    """Validate every ``required`` spec, then ``optional`` ones while ``budget`` seconds allow.
    Returns the checks and the optional names skipped for time."""
    start, checks, skipped = time.monotonic(), [], []
    todo = [(n, True) for n in required] + [(n, False) for n in optional]
    for i, (name, must) in enumerate(todo):
        try:
            spec = load_spec(name)
        except FrogGymError as e:
            checks.append(Check(name, False, error=f"{type(e).__name__}: {e}"))
            continue
        if not must and budget is not None and time.monotonic() - start + estimate_seconds(spec, runs) > budget:
            skipped.append(name)
            continue
        progress(f"validating {name}", i, len(todo))
        checks.append(validate_spec(spec, runs))
    progress("done", len(todo), len(todo))
    return checks, skipped
