"""Repository specs: one TOML file per repository in ``registry/repos/``.

A spec pins a source (a PyPI sdist by name, version and sha256, or a git URL and commit), says how to
build the repository's test venv and how to run its tests, and records what ``frog-gym registry add``
measured. The schema below is the documentation; ``frog-gym registry schema`` prints it.

Example:
    >>> spec = load_repo("inflection")
    >>> spec.source.version, spec.tests.paths
    ('0.5.1', ('test_inflection.py',))
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from frog_gym.errors import SourceError, SpecError, UnknownNameError
from frog_gym.catalog.schema import Field, check

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")

DEFAULT_TEST_FILES = ("**/test_*.py", "**/*_test.py", "**/tests/**", "**/test/**", "**/testing/**",
                      "**/conftest.py", "test_*.py", "*_test.py", "conftest.py", "tests/**", "test/**")


def _sha(v: str) -> str | None:
    return None if _SHA256.match(v) else f"expected 64 lowercase hex digits (a sha256), got {v!r}"


def _commit(v: str) -> str | None:
    return None if _COMMIT.match(v) else f"expected a full 40-hex-digit commit id, got {v!r}"


def _owner_name(v: str) -> str | None:
    return None if re.fullmatch(r"[\w.-]+/[\w.-]+", v) else f"expected 'owner/name', e.g. 'pallets/flask', got {v!r}"


def _date(v: str) -> str | None:
    return None if re.fullmatch(r"\d{4}-\d\d-\d\d", v) else f"expected a date YYYY-MM-DD, got {v!r}"


def _relpaths(v: list[str]) -> str | None:
    for p in v:
        if p.startswith("/") or ".." in Path(p).parts:
            return f"paths must be relative to the repository root and stay inside it, got {p!r}"
    return None


SOURCE_SCHEMA = {
    "pypi": Field(str, required=False, doc="PyPI project name of the source distribution"),
    "version": Field(str, required=False, doc="exact released version (with pypi)"),
    "sha256": Field(str, required=False, check=_sha, doc="sha256 of the sdist archive (with pypi)"),
    "git": Field(str, required=False, doc="git URL or local path (instead of pypi)"),
    "commit": Field(str, required=False, check=_commit, doc="full commit id (with git)"),
    "repository": Field(str, required=False, default="", check=_owner_name,
                        doc="the upstream repository as 'owner/name' (SWE-bench's repo field)"),
    "released": Field(str, required=False, default="", check=_date,
                      doc="release date of the source, YYYY-MM-DD (SWE-bench's created_at)"),
}
INSTALL_SCHEMA = {
    "import_paths": Field(list, required=False, default=lambda: ["."], items=str, check=_relpaths,
                          doc="folders of the tree put on sys.path, e.g. ['src']"),
    "requires": Field(list, required=False, default=list, items=str,
                      doc="test requirements asked for, e.g. ['pytest==8.4.2']"),
    "lock": Field(list, required=False, default=list, items=str,
                  doc="the full pinned set 'name==version --hash=sha256:...' written by registry add"),
    "install_package": Field(bool, required=False, default=True,
                             doc="install the package's own metadata, entry points and dependencies"),
    "steps": Field(list, required=False, default=list, items=str,
                   doc="extra shell commands run in the venv after install"),
    "env": Field(dict, required=False, default=dict, doc="environment variables set in the sandbox"),
}
TESTS_SCHEMA = {
    "paths": Field(list, items=str, check=_relpaths, doc="test files or folders passed to pytest"),
    "args": Field(list, required=False, default=list, items=str, doc="extra pytest arguments"),
    "timeout": Field(int, required=False, default=60, doc="per-test timeout in seconds"),
    "suite_budget": Field(int, required=False, default=120, doc="seconds the full suite may take"),
    "test_files": Field(list, required=False, default=lambda: list(DEFAULT_TEST_FILES), items=str,
                        doc="glob patterns of files that count as tests (agent edits to them are discarded)"),
    "source_readers": Field(list, required=False, default=list, items=str, check=_relpaths,
                            doc="package files that read their caller's source lines to show a traceback, as "
                                "the standard library's traceback does (e.g. ['boltons/tbutils.py']): at grading "
                                "such a read counts as the caller's (a test may read its own file; the package "
                                "may not)"),
}
GENERATE_SCHEMA = {
    "mutable": Field(list, required=False, default=list, items=str, check=_relpaths,
                     doc="source folders or files that generators may mutate"),
    "exclude": Field(list, required=False, default=list, items=str, doc="glob patterns never mutated"),
}
MEASURED_SCHEMA = {
    "tests": Field(int, required=False, default=0, doc="tests collected"),
    "passing": Field(int, required=False, default=0, doc="tests that passed in every baseline run"),
    "suite_seconds": Field(float, required=False, default=0.0, doc="median wall time of the full suite"),
    "flaky": Field(list, required=False, default=list, items=str, doc="tests whose result varied"),
    "failing": Field(list, required=False, default=list, items=str, doc="tests that failed in every run"),
    "runs": Field(int, required=False, default=0, doc="baseline runs made"),
    "measured_on": Field(str, required=False, default="", doc="date of the measurement"),
}
REPO_SCHEMA = {
    "name": Field(str, check=lambda v: None if _NAME.match(v) else f"use lowercase letters, digits, '-', "
                  f"'_' or '.', got {v!r}", doc="registry name"),
    "kind": Field(str, required=False, default="", doc="what the library does, e.g. 'parsing'"),
    "license": Field(str, required=False, default="", doc="SPDX license of the source"),
    "description": Field(str, required=False, default="", doc="one-line summary"),
    "source": Field(dict, schema=SOURCE_SCHEMA),
    "python": Field(dict, required=False, schema={
        "requires": Field(str, required=False, default="", doc="PEP 440 specifier checked against the running Python, e.g. '>=3.9'")}),
    "install": Field(dict, required=False, schema=INSTALL_SCHEMA),
    "tests": Field(dict, schema=TESTS_SCHEMA),
    "generate": Field(dict, required=False, schema=GENERATE_SCHEMA),
    "measured": Field(dict, required=False, schema=MEASURED_SCHEMA),
}


@dataclass(frozen=True)
class Source:
    """Where a repository's tree comes from: ``kind`` is 'pypi' or 'git'."""

    kind: str
    name: str = ""
    version: str = ""
    sha256: str = ""
    url: str = ""
    commit: str = ""
    repository: str = ""
    """The upstream repository as ``owner/name`` (empty: unknown)."""
    released: str = ""
    """The source's release date, ``YYYY-MM-DD`` (empty: unknown)."""

    @property
    def key(self) -> str:
        """A content address of the tree: the sdist's sha256, or the git commit."""
        return self.sha256 if self.kind == "pypi" else self.commit

    def __str__(self) -> str:
        return f"{self.name}=={self.version}" if self.kind == "pypi" else f"{self.url}@{self.commit[:12]}"


@dataclass(frozen=True)
class Install:
    import_paths: tuple[str, ...]
    requires: tuple[str, ...]
    lock: tuple[str, ...]
    install_package: bool
    steps: tuple[str, ...]
    env: dict[str, str]


@dataclass(frozen=True)
class Tests:
    paths: tuple[str, ...]
    args: tuple[str, ...]
    timeout: int
    suite_budget: int
    test_files: tuple[str, ...]
    source_readers: tuple[str, ...] = ()

    def is_test_file(self, path: str) -> bool:
        """Whether an agent's edit of ``path`` (relative to the root) is a test edit, to be discarded.

        >>> Tests((), (), 60, 120, DEFAULT_TEST_FILES).is_test_file("src/pkg/tests/test_x.py")
        True
        """
        return any(fnmatch.fnmatchcase(path, pat) for pat in self.test_files) or path in self.paths


@dataclass(frozen=True)
class RepoSpec:
    """A validated repository spec. ``path`` is the TOML file it came from."""

    name: str
    kind: str
    license: str
    description: str
    source: Source
    python_requires: str
    install: Install
    tests: Tests
    mutable: tuple[str, ...]
    exclude: tuple[str, ...]
    measured: dict[str, Any] = field(compare=False)
    path: str = field(default="", compare=False)

    @property
    def pytest_args(self) -> tuple[str, ...]:
        """Arguments every pytest run of this repository gets (before test ids)."""
        return ("-p", "no:cacheprovider", f"--timeout={self.tests.timeout}", *self.tests.args)


def parse_repo(data: dict[str, Any], file: str) -> RepoSpec:
    """Validate a parsed TOML table as a repository spec."""
    d = check(data, REPO_SCHEMA, file)
    s = d["source"]
    if s.get("pypi") and s.get("git"):
        raise SpecError(file, "source", "give either 'pypi' (with version, sha256) or 'git' (with commit), not both")
    if s.get("pypi"):
        for k in ("version", "sha256"):
            if not s.get(k):
                raise SpecError(file, f"source.{k}", "missing; a pypi source needs 'version' and 'sha256' "
                                "(frog-gym registry add computes the sha256)")
        source = Source("pypi", name=s["pypi"], version=s["version"], sha256=s["sha256"],
                        repository=s["repository"], released=s["released"])
    elif s.get("git"):
        if not s.get("commit"):
            raise SpecError(file, "source.commit", "missing; a git source needs a full commit id")
        source = Source("git", name=d["name"], url=s["git"], commit=s["commit"], repository=s["repository"],
                        released=s["released"])
    else:
        raise SpecError(file, "source", "missing 'pypi' or 'git'; e.g. pypi = \"flask\", version = \"3.1.3\", "
                        "sha256 = \"...\"")
    i, t, g = d["install"], d["tests"], d["generate"]
    if not t["paths"]:
        raise SpecError(file, "tests.paths", "empty; name the test files or folders, e.g. ['tests']")
    for k, v in i["env"].items():
        if not isinstance(v, str):
            raise SpecError(file, f"install.env.{k}", f"expected a string, got {type(v).__name__} {v!r}")
    return RepoSpec(
        name=d["name"], kind=d["kind"], license=d["license"], description=d["description"], source=source,
        python_requires=d["python"]["requires"],
        install=Install(tuple(i["import_paths"]), tuple(i["requires"]), tuple(i["lock"]), i["install_package"],
                        tuple(i["steps"]), dict(i["env"])),
        tests=Tests(tuple(t["paths"]), tuple(t["args"]), t["timeout"], t["suite_budget"], tuple(t["test_files"]),
                    tuple(t["source_readers"])),
        mutable=tuple(g["mutable"]), exclude=tuple(g["exclude"]), measured=d["measured"], path=file,
    )


def load_repo_file(path: str | Path) -> RepoSpec:
    """Load and validate one spec file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise SpecError(str(path), "<toml>", f"not valid TOML: {e}") from None
    spec = parse_repo(data, str(path))
    if spec.name != path.stem:
        raise SpecError(str(path), "name", f"{spec.name!r} must match the file name {path.stem!r}")
    return spec


def _repo_dir() -> Any:
    return resources.files("frog_gym.registry").joinpath("repos")


@lru_cache(maxsize=None)
def repo_names() -> tuple[str, ...]:
    """Names of all registered repositories, sorted."""
    return tuple(sorted(p.name[:-5] for p in _repo_dir().iterdir() if p.name.endswith(".toml")))


@lru_cache(maxsize=None)
def load_repo(name: str) -> RepoSpec:
    """Load a registered repository spec by name.

    Raises:
        UnknownNameError: with the nearest registered name.
    """
    if name not in repo_names():
        raise UnknownNameError("repository", name, repo_names(), "See `frog-gym registry list`.")
    with resources.as_file(_repo_dir().joinpath(f"{name}.toml")) as p:
        return load_repo_file(p)


def python_problem(spec: RepoSpec, version: str | None = None) -> str | None:
    """Why the running interpreter (or ``version``) cannot run ``spec``, or None when it can.

    >>> python_problem(parse_repo({"name": "x", "source": {"git": ".", "commit": "0" * 40},
    ...     "python": {"requires": ">=3.99"}, "tests": {"paths": ["t"]}}, "x.toml"), "3.11.7")
    "x.toml: field 'python.requires': '>=3.99' excludes Python 3.11.7; run frog-gym with a Python it allows"
    """
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not spec.python_requires:
        return None
    version = version or ".".join(map(str, sys.version_info[:3]))
    try:
        allowed = SpecifierSet(spec.python_requires)
    except InvalidSpecifier:
        return f"{spec.path}: field 'python.requires': {spec.python_requires!r} is not a PEP 440 specifier"
    if allowed.contains(version, prereleases=True):
        return None
    return (f"{spec.path}: field 'python.requires': {spec.python_requires!r} excludes Python {version}; "
            f"run frog-gym with a Python it allows")


def check_python(spec: RepoSpec) -> None:
    """Raise :class:`SourceError` when the running interpreter is outside ``python.requires``."""
    if problem := python_problem(spec):
        raise SourceError(problem)


def repos_dir() -> Path:
    """The folder of the registered spec files (a real folder in an editable install)."""
    with resources.as_file(_repo_dir()) as p:
        return Path(p)


def load_spec(name_or_path: str) -> RepoSpec:
    """A registered spec by name, or any spec file by path (anything ending in ``.toml``)."""
    if name_or_path.endswith(".toml"):
        return load_repo_file(name_or_path)
    return load_repo(name_or_path)


def schema_doc() -> str:
    """The spec schema as text: every table and field, its type, whether required, and what it means."""
    names = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list", dict: "table"}
    lines = ["A repository spec is a TOML file registry/repos/<name>.toml. Unknown keys are refused.", ""]

    def render(schema: dict[str, Field], prefix: str) -> None:
        for key, f in schema.items():
            if f.schema is not None:
                continue
            t = names.get(f.type, f.type.__name__) + (f" of {names.get(f.items, '?')}s" if f.items else "")
            req = "required" if f.required else "optional"
            default = f.default() if callable(f.default) else f.default
            dflt = "" if f.required or default in (None, "", [], {}) else f", default {default!r}"
            lines.append(f"  {prefix}{key:<16} {t} ({req}{dflt})" + (f": {f.doc}" if f.doc else ""))

    render(REPO_SCHEMA, "")
    for key, f in REPO_SCHEMA.items():
        if f.schema is not None:
            lines += ["", f"[{key}]" + ("" if f.required else " (optional table)")]
            render(f.schema, "")
    lines += ["", "A source is either pypi + version + sha256, or git + commit. frog-gym registry add writes",
              "the sha256, the hashed lock and [measured]; `frog-gym registry validate NAME` re-checks them."]
    return "\n".join(lines)


def module_name(spec: RepoSpec, path: str) -> str:
    """Dotted module name of a source path, relative to the spec's import paths.

    >>> from frog_gym.catalog.spec import load_repo
    >>> module_name(load_repo("cachetools"), "src/cachetools/keys.py")
    'cachetools.keys'
    """
    p = path[:-3] if path.endswith(".py") else path
    for root in sorted(spec.install.import_paths, key=len, reverse=True):
        r = os.path.normpath(root)
        if r == ".":
            break
        if p.startswith(r + "/"):
            p = p[len(r) + 1:]
            break
    parts = p.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)
