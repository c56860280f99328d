"""What grading trusts of an agent's final state, and how it notices a forged result.

The threat model (README, "Safety"): the agent controls every non-test file of its workspace and every
process it starts, knows frog-gym's source, and is optimised against the reward. Its library code runs
inside the test process, so grading trusts nothing that process could fake on its own. Five layers:

1. **Scope** (:func:`out_of_scope`): only edits to the package's own source (the spec's ``generate.mutable``
   folders and files, plus the files the task's gold patch touches) reach the grading tree. Test files,
   pytest configuration (``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``, ``conftest.py``),
   interpreter start-up hooks (``sitecustomize``, ``usercustomize``, ``*.pth``), compiled code and new
   top-level modules are reset to the pristine tree, so the run's configuration is the spec's alone.
2. **Static check** (:func:`tampering`): what the agent's edits *add* to a Python file is scanned for the
   vocabulary a forgery needs and a bug fix does not: pytest's internals, the report plugin, interpreter
   introspection (frames, ``gc``, ``sys.modules``, code objects), dynamic code (``exec``, ``__import__``),
   hard exits and the grading paths. A hit scores 0 and names the line in ``info["tampering"]``.
3. **Authenticated results**: the report plugin reads a per-run key from a FIFO before any agent code can
   run (it loads with ``-p``, ahead of the package under test) and signs the report with it (HMAC-SHA256);
   a report written by anything else, or a key read by anything else, fails verification.
4. **Canaries** (:class:`Canaries`): randomly named tests appended to a test file at grading, some that
   must fail and one that must pass; a patch that flips outcomes wholesale turns a must-fail canary green
   and is caught, whatever it did to hide.

5. **Guarded test files** (``frog_gym/_plugin/frog_report.py``): an audit hook in the test process refuses
   the package's own code every read of the graded test files (hidden tests, canaries) and every process
   start (a child would run without the hook), and reports it.

No layer alone is a proof (CPython has no in-process isolation); together they make every forgery we know
of (``tests/exploits/``) score 0 with its reason, and each new one becomes a test there.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import hmac
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

GRADING_VERSION = 4
"""Bumped whenever grading's rules change; with :func:`grading_code_digest` it is part of every cached grade's
key, so no grade made under older rules (or older code) is ever reused."""


def grading_code_digest() -> str:
    """A digest of the code that decides a grade (this module, grading, the warm server, the plugins)."""
    global _DIGEST
    if _DIGEST is None:
        from importlib import resources

        h = hashlib.sha256()
        for name in ("integrity.py", "grading.py", "grading_server.py", "_plugin/frog_report.py", "_plugin/frog_server.py",
                     "_plugin/frog_boot.py", "_plugin/sitecustomize.py", "oracle.py", "_plugin/frog_oracle.py"):
            h.update(resources.files("frog_gym").joinpath(name).read_bytes())
        _DIGEST = h.hexdigest()[:16]
    return _DIGEST


_DIGEST: str | None = None

STARTUP_FILES = ("sitecustomize.py", "usercustomize.py", "conftest.py", "pytest.ini", ".pytest.ini", "tox.ini",
                 "setup.cfg", "pyproject.toml", "setup.py", "noxfile.py")
"""File names that configure pytest or run at interpreter start, wherever they are: always pristine."""

CODE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll", ".pyc", ".pyo", ".pth", ".egg-link", ".zip", ".whl", ".egg")
"""Compiled or importable-archive files: an agent's copy is never graded (its content can't be reviewed)."""


def out_of_scope(path: str, mutable: tuple[str, ...], gold_files: frozenset[str], import_paths: tuple[str, ...],
                 is_test_file, exists_in_template) -> str | None:
    """Why an agent's edit of ``path`` is not applied at grading, or None when it is.

    Args:
        path: the file, relative to the repository root.
        mutable: the spec's source folders and files (``generate.mutable``).
        gold_files: files the task's gold patch touches (always in scope unless tests or start-up files).
        import_paths: folders the venv puts on ``sys.path`` (a new module directly in one would shadow others).
        is_test_file: the spec's test-file predicate.
        exists_in_template: whether ``path`` exists in the task's starting tree.

    >>> f = lambda p: out_of_scope(p, ("src/pkg",), frozenset(), ("src",), lambda p: "tests/" in p, lambda p: False)
    >>> f("src/pkg/core.py") is None, f("src/sitecustomize.py"), f("tests/test_a.py")
    (True, 'an interpreter start-up or pytest configuration file', 'a test file')
    >>> f("src/pkg/__main__.py") is None, f("src/__main__.py")  # a package's own entry point is its source
    (True, "outside the package's source")
    >>> f("setup.py"), f("src/pkg/_speedups.so")
    ('an interpreter start-up or pytest configuration file', 'compiled or archive code')
    """
    name = PurePosixPath(path).name
    if is_test_file(path):
        return "a test file"
    if name in STARTUP_FILES or name.endswith(".pth"):
        return "an interpreter start-up or pytest configuration file"
    if name.endswith(CODE_SUFFIXES) or "__pycache__" in path.split("/"):
        return "compiled or archive code"
    if path in gold_files:
        return None
    for m in mutable:
        m = m.rstrip("/")
        if path == m:
            return None
        if path.startswith(m + "/"):
            parent = str(PurePosixPath(path).parent)
            on_sys_path = {p.strip("./") or "." for p in import_paths}
            if not exists_in_template(path) and (parent if parent != "." else ".") in on_sys_path:
                return "a new top-level module (it could shadow another module)"
            return None
    return "outside the package's source"


# -- the static check ---------------------------------------------------------------------------------------

_MODULES = {"_pytest", "pytest", "pluggy", "py", "gc", "ctypes", "inspect", "importlib", "builtins", "marshal",
            "atexit", "faulthandler", "frog_report", "sysconfig", "site", "runpy", "pdb", "bdb", "trace",
            "tracemalloc", "_ctypes", "cffi", "code", "codeop", "zipimport", "pkgutil", "unittest", "doctest", "_thread",
            "linecache", "tokenize", "subprocess", "_posixsubprocess", "multiprocessing", "pty", "_imp",
            "_xxsubinterpreters", "_posixshmem"}
_SUBMODULES = ("concurrent.futures.process",)
"""Modules flagged by their dotted name where their package is not (``concurrent.futures`` threads are
ordinary; its process pools start interpreters)."""
_NAMES = {"__import__", "exec", "eval", "compile", "globals", "breakpoint", "__builtins__", "__loader__", "__spec__",
          "vars", "ProcessPoolExecutor"}
_ATTRS = {"__code__", "__globals__", "__closure__", "__subclasses__", "__builtins__", "__func__", "__self__",
          "f_back", "f_globals", "f_locals", "f_code", "f_builtins", "gi_frame", "cr_frame", "tb_frame",
          "tb_next", "_getframe", "_current_frames", "settrace", "setprofile", "addaudithook", "_exit",
          "modules", "meta_path", "path_hooks", "path_importer_cache", "excepthook", "unraisablehook",
          "displayhook", "__reduce__", "__reduce_ex__", "co_code", "__mro__", "__bases__", "register_at_fork",
          "execv", "execve", "execl", "execvp", "kill", "killpg", "fork", "forkpty", "system", "popen",
          "spawnv", "spawnl", "posix_spawn", "dup2", "pidfd_open", "environb", "getpid", "getppid",
          "__dict__", "__traceback__", "nodeid", "longrepr", "from_item_and_call",
          # starting a process (grading refuses the package any), and reaching what the guard keeps
          "fork_exec", "_fork_exec", "posix_spawnp", "spawnve", "spawnvp", "spawnvpe", "spawnle", "spawnlp",
          "spawnlpe", "execle", "execlp", "execlpe", "execvpe", "ProcessPoolExecutor", "get_context",
          "set_start_method", "get_objects", "get_referrers", "get_referents", "cell_contents", "__getattribute__"}
_STRINGS = ("pytest", "frog", "/proc", "/dev/fd", "report.json", "testreport", "longrepr", "nodeid",
            "exitstatus", "sessionfinish", "runtest", "makereport", "sys.modules", "builtins", "test_", "tests/",
            "conftest", "/testbed", "__code__", "__globals__", "f_back", "_getframe", "posixsubprocess",
            "fork_exec", "__closure__", "gi_frame")


_NAME_ARGUMENT = {"getattr": 1, "setattr": 1, "delattr": 1, "hasattr": 1, "attrgetter": 0, "methodcaller": 0}
"""Calls that name an attribute, and which argument does: a computed name spells out what the check looks for."""


def _flagged_module(module: str) -> bool:
    """Whether importing a dotted module name is forgery vocabulary (``gc``, ``multiprocessing.pool``,
    ``concurrent.futures.process``) or reaches into a test module."""
    return (module.split(".")[0] in _MODULES or _names_a_test(module)
            or any(module == m or module.startswith(m + ".") for m in _SUBMODULES))


def _names_a_test(module: str) -> bool:
    """Whether a dotted module name reaches into a test module (``tests.test_x``, ``pkg.tests``, ``conftest``)."""
    return any(p in ("test", "tests", "conftest") or p.startswith("test_") for p in module.split("."))


def _features(source: bytes) -> Counter[tuple[str, str]]:
    """The forgery vocabulary a Python source uses: (kind, name) -> count (empty if it does not parse)."""
    return Counter(dict(_features_of(source)))


@functools.lru_cache(maxsize=512)
def _features_of(source: bytes) -> tuple[tuple[tuple[str, str], int], ...]:
    """:func:`_features` as sorted pairs, cached: the pristine and starting versions of a file recur at every
    grade of a task, and a large module takes a tenth of a second to walk. Each top-level statement is walked
    once per exact text (:func:`_scan`, cached): an agent's edit changes a few statements of a file, and the
    rest need no second walk."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    lines = source.split(b"\n") if b"\r" not in source else None  # the parser's line numbers, exactly
    parts = []
    for node in tree.body:
        if lines is None:
            parts.append(_walked(node))
            continue
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        key = (type(node).__name__, node.col_offset, node.end_col_offset, b"\n".join(lines[first - 1:node.end_lineno]))
        part = _SCANNED.get(key)
        if part is None:
            part = _SCANNED[key] = _walked(node)
            if len(_SCANNED) > 20000:
                _SCANNED.pop(next(iter(_SCANNED)))
        parts.append(part)
    out: Counter[tuple[str, str]] = Counter()
    modules: set[str] = set()
    aliases: dict[str, str] = {}
    for counts, mods, _, als, _ in parts:
        out.update(dict(counts))
        modules.update(mods)
        aliases.update(als)
    for _, _, assigned, _, calls in parts:
        for is_name, name, constant_args in calls:
            func = aliases.get(name, name) if is_name else name
            at = _NAME_ARGUMENT.get(func)
            if at is None or len(constant_args) <= at:
                continue
            if not constant_args[at]:  # a constant name counts as that attribute (in _walked)
                out["dynamic", f"{func} with a computed name"] += 1
        for name, attr in assigned:
            if name in modules:
                out["monkeypatch", f"{name}.{attr}"] += 1
    return tuple(sorted(out.items()))


_SCANNED: dict[tuple[str, int, int | None, bytes], tuple] = {}
"""Top-level statements already walked, by (kind, columns, exact text): what :func:`_walked` found in each."""


def _walked(top: ast.AST) -> tuple:
    """What one top-level statement holds: (flagged (kind, name) counts, names its imports bind, assignments to
    ``name.attribute``, import aliases, calls as (by a bare name, the name, whether each argument is a
    constant)); :func:`_features_of` adds them up, resolving aliases and monkeypatches across statements."""
    out: Counter[tuple[str, str]] = Counter()
    modules: set[str] = set()  # every name an import binds (`from m import sub` too)
    assigned: list[tuple[str, str]] = []  # (name, attribute) of assignments to `name.attribute`
    aliases: dict[str, str] = {}  # `from operator import attrgetter as ag`: "ag" -> "attrgetter"
    calls: list[tuple[bool, str, tuple[bool, ...]]] = []
    for node in ast.walk(top):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules.add((a.asname or a.name).split(".")[0])
                if _flagged_module(a.name):
                    out["import", a.name] += 1
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if _flagged_module(mod):
                out["import", "." * node.level + mod] += 1
            for a in node.names:
                modules.add((a.asname or a.name).split(".")[0])
                aliases[a.asname or a.name] = a.name
                if (a.name in _NAMES or a.name in _ATTRS or a.name in _MODULES or (not mod and _names_a_test(a.name))
                        or f"{mod}.{a.name}" in _SUBMODULES):
                    out["import", f"{'.' * node.level}{mod}{'.' if mod else ''}{a.name}"] += 1
        elif isinstance(node, ast.Name):
            if node.id in _NAMES:
                out["name", node.id] += 1
        elif isinstance(node, ast.Attribute):
            if node.attr in _ATTRS:
                out["attribute", node.attr] += 1
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, (str, bytes)):
                text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
                low = text.lower()
                for s in _STRINGS:
                    if s in low:
                        out["string", s] += 1
                # an attribute's name as data: getattr(sys, "modules"), attrgetter("f_back.f_locals"),
                # functools.reduce(getattr, ["modules"], sys) are all sys.modules spelled another way
                for part in text.split(".") if len(text) < 100 else ():
                    if part in _ATTRS:
                        out["attribute", part] += 1
        elif isinstance(node, ast.Call):
            is_name = isinstance(node.func, ast.Name)
            calls.append((is_name, node.func.id if is_name else getattr(node.func, "attr", ""),
                          tuple(isinstance(a, ast.Constant) for a in node.args)))
        else:
            targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                       if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    assigned.append((t.value.id, t.attr))
    return (tuple(out.items()), frozenset(modules), tuple(assigned), tuple(aliases.items()), tuple(calls))


def tampering(path: str, old: bytes | None, new: bytes, pristine: bytes | None = None) -> list[str]:
    """What an edit of a Python file adds to the forgery vocabulary, one reason per kind (empty: clean).

    What the repository's own release of the file (``pristine``) already uses is not evidence: a fix that
    restores a traceback helper's ``f_globals`` is the repository's code, not a forgery.

    >>> tampering("pkg/a.py", b"x = 1\\n", b"import _pytest.reports\\nx = 1\\n")
    ["pkg/a.py: adds import of '_pytest.reports'"]
    >>> tampering("pkg/a.py", b"def f(x):\\n    return x - 1\\n", b"def f(x):\\n    return x + 1\\n")
    []
    """
    if not path.endswith((".py", ".pyw", ".pyi")):
        return []
    added = _features(new) - (_features(old or b"") | _features(pristine or b""))
    what = {"import": "import of", "name": "use of", "attribute": "access to attribute", "string": "string mentioning",
            "dynamic": "a", "monkeypatch": "an assignment to another module's attribute"}
    return [f"{path}: adds {what[k]} {n!r}" for k, n in sorted(added)]


# -- canaries -------------------------------------------------------------------------------------------------

_WORDS = ("value", "parse", "render", "empty", "nested", "default", "roundtrip", "unicode", "repr", "order",
          "format", "missing", "keys", "error", "compare", "convert", "simple", "multiple", "invalid", "none")


@dataclass
class Canaries:
    """Tests appended to one test file at grading: each of ``must_fail`` must fail, ``must_pass`` must pass.

    Names are drawn from ``rng`` in the style of real test names, so agent code can't tell them from the
    file's own tests by name.
    """

    file: str
    must_fail: list[str] = field(default_factory=list)
    must_pass: list[str] = field(default_factory=list)
    source: str = ""

    @classmethod
    def make(cls, file: str, rng: random.Random, taken: set[str]) -> Canaries:
        def name() -> str:
            while True:
                n = "test_" + "_".join(rng.sample(_WORDS, 2)) + f"_{rng.randrange(10, 99)}"
                if n not in taken:
                    taken.add(n)
                    return n

        c = cls(file)
        a, b = rng.randrange(1, 10**6), rng.randrange(1, 10**6)
        b = b if b != a else a + 1
        c.must_fail = [name(), name()]
        c.must_pass = [name()]
        c.source = ("\n\n"
                    f"def {c.must_fail[0]}():\n    assert {a} == {b}\n\n\n"
                    f"def {c.must_fail[1]}():\n    raise ValueError({str(a)!r})\n\n\n"
                    f"def {c.must_pass[0]}():\n    assert {a} + 0 == {a}\n")
        return c

    def ids(self) -> list[str]:
        return [f"{self.file}::{n}" for n in (*self.must_fail, *self.must_pass)]

    def verdict(self, statuses: dict[str, str], exit_code: int | None, collect_errors: list[str] = ()) -> list[str]:
        """Reasons the run is not to be trusted (empty: the canaries behaved).

        A canary may be reported several times, once per parameter of an autouse fixture (``name[param]``). A
        canary missing because its file failed to collect is honest: every test of that file failed with it; so
        is one missing because another file failed to collect and pytest stopped there (exit status 2): no test
        ran at all, so nothing can have passed (a bug or an edit that breaks a test module at import)."""
        def of(name: str) -> list[str]:
            base = f"{self.file}::{name}"
            return [s for t, s in statuses.items() if t == base or t.startswith(base + "[")]

        out = []
        for n in self.must_fail:
            seen = of(n)
            if any(s in ("PASSED", "XFAIL") for s in seen):
                out.append("a test that must fail reported a pass: outcomes were rewritten in the test process")
            elif not seen and not any(e.split("::")[0] == self.file for e in collect_errors) and \
                    not (collect_errors and exit_code == 2 and not statuses):
                out.append("a canary test was never reported: the test run was cut short or filtered")
        for n in self.must_pass:
            if "FAILED" in of(n):
                out.append("a test that must pass reported FAILED: outcomes were rewritten in the test process")
        if exit_code == 0:
            out.append("pytest exited 0 although tests that must fail ran: the exit status was forged")
        return sorted(set(out))


# -- authenticated reports -----------------------------------------------------------------------------------

def sign(key: bytes, body: dict) -> str:
    """HMAC-SHA256 of a report body's canonical JSON (the plugin computes the same)."""
    return hmac.new(key, json.dumps(body, sort_keys=True, separators=(",", ":")).encode(), hashlib.sha256).hexdigest()


def verify(key: bytes, report: dict) -> bool:
    """Whether ``report`` (with its ``"signature"``) was signed with ``key``."""
    body = {k: v for k, v in report.items() if k != "signature"}
    got = report.get("signature")
    return isinstance(got, str) and hmac.compare_digest(got, sign(key, body))


def scan(edits, limit: int = 50) -> list[str]:
    """:func:`tampering` over ``(path, old, new, pristine)`` tuples, at most ``limit`` reasons."""
    out: list[str] = []
    for path, old, new, pristine in edits:
        if new is not None:
            out += tampering(path, old, new, pristine)
    return out[:limit]
