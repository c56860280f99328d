"""Test impact: which of a grade's PASS_TO_PASS tests can reach what the agent changed.

A task's PASS_TO_PASS tests pass on the repository's own tree. A test that executes no code the agent's final
tree changes, reads no file it changes, and runs under a module and class structure that is the same as the
repository's, behaves as it did there: it passes again. So a grade runs every FAIL_TO_PASS test and only those
PASS_TO_PASS tests that can reach a change, and carries the others' statuses over from the repository's own
run, listed as ``inferred`` in the report. The decision is the host's alone: it reads the final tree against
the repository's snapshot with :mod:`ast` and looks the changed functions up in the coverage map, which was
measured once per venv on the untouched snapshot (:mod:`frog_gym.generators.coverage_map`). Nothing of it
enters the process that runs the agent's code.

What counts as a change, file by file (the final tree against the snapshot, so an unfixed bug is a change):

- a function whose body differs (its docstring aside), or whose lines moved (an edit above it that changed
  the line count: a traceback or a warning names lines): every test that executed a line of it in the
  coverage run, or read its file then, is run;
- a changed function whose code ran while a module was imported (a decorator, a metaclass, a table built at
  import; the map's ``imported`` lines, wherever the import happened), a change to a file imported before the
  coverage run could measure it (``preloaded``: a package pytest itself imports), a changed function (either
  version) that may leave state behind for a later test (a module's object
  written, a ``global``, ``setattr``: :func:`writes_shared_state`), or anything else, at module or class level,
  in a signature, a decorator, a default, a docstring, a function added or removed, a file added, removed,
  unmeasured or not Python, or a file that does not parse: every selected test is run, as without this module.

Where the map is missing (``frog-gym registry coverage REPO`` builds it; generation does too), older than
:data:`MAP_VERSION`, or the task's reference tree is not the snapshot (a FrogLive fix is a later release's
code), every test runs. Selection is on in the env unless ``FROG_GYM_IMPACT=0`` (or ``impact_selection=False``);
the fixed benchmark harness grades every test unless its spec says ``impact_selection``, so that leaderboard
scores are graded exactly as SWE-bench grades.

What it assumes, as test-impact tools do: a test's path depends neither on chance (the map is one run) nor on
what earlier tests left in objects passed to the changed code (``self``); state left in a module's objects is
caught as above. The tests of one class run together or not at all (:func:`class_of`): a test may read what
another test of its class left on the class (pathspec's ``IterTreeTest`` records in one test whether symlinks
work, and the others read it), and the map does not know the order they ran in. ``tests/test_impact.py`` grades wrong fixes both ways and compares the verdicts.
"""

from __future__ import annotations

import ast
import functools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from frog_gym import paths
from frog_gym.catalog.spec import RepoSpec

if TYPE_CHECKING:
    from frog_gym.catalog.snapshot import PreparedRepo
    from frog_gym.catalog.task import Task
    from frog_gym.sandbox.workspace import Change, Template

MAP_VERSION = 5
"""Coverage maps from this version on list the files measured and each test's reads of them (``readers``)."""


@dataclass(frozen=True)
class CoverageMap:
    """Tests of one suite run and the lines each executed (as indices into ``tests``)."""

    tests: tuple[str, ...]
    statuses: dict[str, str]
    lines: dict[str, dict[int, tuple[int, ...]]]
    seconds: float = 0.0
    files: tuple[str, ...] = ()
    """The files measured (every mutable Python file, executed or not)."""
    readers: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """File -> the tests that opened it while they ran (``inspect.getsource``, ``linecache``, a lazy import)."""
    version: int = 1
    imported: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """File -> lines executed outside any test: while modules were imported (whenever that was), or between
    tests. A function run then built something that outlives it (a class made by a decorator, a table)."""
    preloaded: tuple[str, ...] = ()
    """Files imported before measurement began (by pytest itself, or a plugin): their import-time lines are
    unknown."""

    def covering(self, path: str, lines: Iterable[int]) -> list[str]:
        """Sorted ids of the tests that execute any of ``lines`` of ``path``."""
        by_line = self.lines.get(path, {})
        found = {i for n in lines for i in by_line.get(n, ())}
        return sorted(self.tests[i] for i in found)

    def covered_lines(self, path: str) -> set[int]:
        """Lines of ``path`` that at least one test executes."""
        return set(self.lines.get(path, {}))

    def passing(self) -> set[str]:
        return {t for t, s in self.statuses.items() if s in ("PASSED", "XFAIL")}

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "tests": list(self.tests), "statuses": self.statuses,
                           "seconds": self.seconds, "files": list(self.files),
                           "readers": {f: list(ix) for f, ix in sorted(self.readers.items())},
                           "imported": {f: list(ns) for f, ns in sorted(self.imported.items())},
                           "preloaded": list(self.preloaded),
                           "lines": {f: {str(n): list(ix) for n, ix in sorted(ls.items())}
                                     for f, ls in sorted(self.lines.items())}})

    @classmethod
    def from_json(cls, text: str) -> CoverageMap:
        d = json.loads(text)
        return cls(tuple(d["tests"]), d["statuses"],
                   {f: {int(n): tuple(ix) for n, ix in ls.items()} for f, ls in d["lines"].items()},
                   d.get("seconds", 0.0), tuple(d.get("files", ())),
                   {f: tuple(ix) for f, ix in d.get("readers", {}).items()}, d.get("version", 1),
                   {f: tuple(ns) for f, ns in d.get("imported", {}).items()}, tuple(d.get("preloaded", ())))


def map_path(spec: RepoSpec) -> Path:
    """Where the coverage map of ``spec``'s venv is cached."""
    from frog_gym.catalog.snapshot import venv_key

    return paths.home() / "coverage" / f"{spec.name}-{venv_key(spec)}.json"


_MAPS: dict[Path, tuple[float, CoverageMap]] = {}


def cached_map(spec: RepoSpec) -> CoverageMap | None:
    """The repository's coverage map if one of :data:`MAP_VERSION` is cached (read once per process)."""
    path = map_path(spec)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    hit = _MAPS.get(path)
    if hit is None or hit[0] != mtime:
        try:
            hit = (mtime, CoverageMap.from_json(path.read_text()))
        except (OSError, ValueError, KeyError):
            return None
        _MAPS[path] = hit
    return hit[1] if hit[1].version >= MAP_VERSION else None


def enabled() -> bool:
    """Selection is on unless ``FROG_GYM_IMPACT=0``."""
    return os.environ.get("FROG_GYM_IMPACT", "1") != "0"


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _functions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """The outermost functions (module functions and methods of classes at any depth, not functions inside
    functions), each with a key unique in the file: its qualified name and, for a name defined again (a
    property's setter), its rank."""
    out: list[tuple[str, ast.AST]] = []
    seen: dict[str, int] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, _DEFS):
                name = prefix + node.name
                seen[name] = seen.get(name, 0) + 1
                out.append((f"{name}#{seen[name]}", node))
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            else:  # a def under an if/try/with/match at class or module level is still at that level
                for _, value in ast.iter_fields(node):
                    for child in value if isinstance(value, list) else ():
                        if isinstance(child, ast.stmt):
                            visit([child], prefix)
                        elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                            visit(child.body, prefix)

    visit(tree.body, "")
    return out


def _split_docstring(body: list[ast.stmt]) -> tuple[list[ast.stmt], list[ast.stmt]]:
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return body[:1], body[1:]
    return [], body


def _span(node: ast.AST) -> tuple[int, int]:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return first, node.end_lineno or node.lineno


def _shape(tree: ast.Module, functions: list[tuple[str, ast.AST]] | None = None) -> str:
    """The module with every outermost function's code (its docstring aside) left out: what must be equal for
    the functions' changes to be all there is. (The bodies are swapped out for the dump and put back: the tree is
    left as it was.)"""
    bodies = [(node, node.body) for _, node in (functions if functions is not None else _functions(tree))]
    try:
        for node, body in bodies:
            doc, _ = _split_docstring(body)
            node.body = [*doc, ast.Pass()]
        return ast.dump(tree, include_attributes=False)
    finally:
        for node, body in bodies:
            node.body = body


_MUTATING_METHODS = frozenset({
    "append", "appendleft", "extend", "extendleft", "insert", "pop", "popleft", "popitem", "remove", "clear",
    "update", "setdefault", "add", "discard", "sort", "reverse", "rotate", "move_to_end", "cache_clear",
    "__setitem__", "__delitem__", "__setattr__", "__delattr__", "__iadd__", "__ior__", "register"})
_DYNAMIC_CALLS = frozenset({"setattr", "delattr", "globals", "vars", "exec", "eval", "__import__"})


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node


def writes_shared_state(fn: ast.AST) -> bool:
    """Whether a function may change state that outlives its call, so that a later test could see the change
    without running the function: a ``global`` or ``nonlocal`` declaration; an assignment, augmented assignment
    or ``del`` of an attribute or item of a name the function does not bind (a module's object, a closure's);
    a mutating method (``append``, ``update``, ...) called on such an object; ``setattr``, ``globals()``,
    ``exec`` and the like. A module imported in the function, or a name bound to an existing object
    (``m = MOD``), is not the call's own. Its parameters' objects (``self``) and what a call returns count as
    the caller's, as test-impact tools assume.

    Example:
        >>> writes_shared_state(ast.parse("def f(k, v):\\n    _CACHE[k] = v").body[0])
        True
        >>> writes_shared_state(ast.parse("def f(self, v):\\n    self.v = v\\n    out = []\\n    out.append(v)").body[0])
        False
    """
    local = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    local |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
    aliases = set()  # a module imported here, or a name bound to an existing object (m = MOD): not the call's own
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            aliases |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and isinstance(
                node.value, (ast.Name, ast.Attribute, ast.Subscript)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            aliases |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fn:
            local.add(node.name)
    local -= aliases

    def shared(target: ast.AST) -> bool:
        root = _root(target)
        return root is not target and not (isinstance(root, ast.Name) and root.id in local)

    for node in ast.walk(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        if any(shared(t) for t in targets):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in _DYNAMIC_CALLS:
                return True
            if isinstance(f, ast.Attribute) and f.attr in _MUTATING_METHODS and shared(f):
                return True
    return False


def changed_functions(old: bytes, new: bytes) -> list[tuple[int, int]] | None:
    """Line spans, in ``old``'s numbering, of the functions of ``old`` that ``new`` changes (their code, or
    their place); None when the two differ anywhere else, when a changed function (either version) may
    change state another test could see (:func:`writes_shared_state`), or when either does not parse.

    Example:
        >>> old = b"def f():\\n    return 1\\n\\ndef g():\\n    return 2\\n"
        >>> changed_functions(old, old.replace(b"return 2", b"return 3"))
        [(4, 5)]
        >>> changed_functions(old, old.replace(b"return 1", b"x = 0\\n    return 1"))  # g moved down a line
        [(1, 2), (4, 5)]
        >>> changed_functions(old, old.replace(b"def g():", b"def g(a=1):")) is None
        True
    """
    found = _changed(old, new)
    return None if found is None else [(first, last) for first, last, _ in found]


@functools.lru_cache(maxsize=256)
def _parsed(source: bytes) -> tuple[str, list[tuple[str, ast.AST]], list[bytes]] | None:
    """A file's shape (:func:`_shape`), outermost functions and lines, or None when it does not parse; kept, since
    the snapshot's side of a file is the same at every grade of a task (the nodes are read, never changed)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    functions = _functions(tree)
    return _shape(tree, functions), functions, source.split(b"\n")


def _changed(old: bytes, new: bytes) -> list[tuple[int, int, int]] | None:
    """:func:`changed_functions`, each span with the first line of the function's code (its docstring aside)."""
    pa, pb = _parsed(old), _parsed(new)
    if pa is None or pb is None or pa[0] != pb[0]:
        return None
    fa, fb = pa[1], pb[1]
    if [k for k, _ in fa] != [k for k, _ in fb]:  # the shapes agree, so this cannot differ; kept as a guard
        return None
    out = []
    for (_, x), (_, y) in zip(fa, fb):
        (a0, a1), (b0, b1) = _span(x), _span(y)
        if pa[2][a0 - 1:a1] == pb[2][b0 - 1:b1]:  # the same text (decorators to last line): the same code
            if a0 != b0:  # moved
                out.append((a0, a1, _split_docstring(x.body)[1][0].lineno if _split_docstring(x.body)[1] else x.end_lineno))
            continue
        edited = [ast.dump(s) for s in _split_docstring(x.body)[1]] != [ast.dump(s) for s in _split_docstring(y.body)[1]]
        if edited and (writes_shared_state(x) or writes_shared_state(y)):
            return None
        if edited or _span(x) != _span(y):
            out.append((*_span(x), _split_docstring(x.body)[1][0].lineno if _split_docstring(x.body)[1] else x.end_lineno))
    return out


def affected(cmap: CoverageMap, changes: Iterable[tuple[str, bytes | None, bytes | None]]) -> set[str] | None:
    """The tests that may behave differently in a tree whose files differ from the measured snapshot by
    ``changes`` (path, the snapshot's bytes, the final bytes; None where absent); None: any test may."""
    measured = set(cmap.files)
    out: set[int] = set()
    for path, old, new in changes:
        if old == new:
            continue
        if old is None or new is None or path not in measured or path in cmap.preloaded:
            return None
        spans = _changed(old, new)
        if spans is None:
            return None
        by_line, at_import = cmap.lines.get(path, {}), set(cmap.imported.get(path, ()))
        for first, last, code in spans:
            if any(n in at_import for n in range(code, last + 1)):
                return None  # run while modules were imported: what it made then, every test may hold
            for n in range(first, last + 1):
                out.update(by_line.get(n, ()))
        out.update(cmap.readers.get(path, ()))
    return {cmap.tests[i] for i in out}


@dataclass(frozen=True)
class Selection:
    """The tests a grade runs, and the PASS_TO_PASS tests it carries over (id -> the status they had)."""

    run: tuple[str, ...]
    inferred: dict[str, str]


_SNAPSHOT_MANIFESTS: dict[str, dict[str, tuple[int, str]]] = {}
_REFERENCE: dict[tuple[str, str, str], bool] = {}


def _files(manifest: dict[str, list]) -> dict[str, tuple[int, str]]:
    """A tree's files by size and digest, leaving out what is not the repository's (the workspace's own ``.git``,
    bytecode, pytest's cache of a run in that tree, the snapshot's completion mark)."""
    return {rel: (e[1], e[2]) for rel, e in manifest.items()
            if e[0] == "f" and "__pycache__" not in rel and not rel.startswith((".git/", ".pytest_cache/"))
            and not rel.endswith(".frog-complete")}


def reference_is_snapshot(repo: PreparedRepo, task: Task, template: Template) -> bool:
    """Whether the task's reference tree (its starting tree with the gold patch and the hidden tests) is the
    repository's snapshot, file for file, so that the snapshot's coverage map speaks for it."""
    from frog_gym.grading.runner import _patched, patch_files
    from frog_gym.sandbox.workspace import _manifest

    key = (task.instance_id, task.content_hash, str(template.root))
    if key in _REFERENCE:
        return _REFERENCE[key]
    root = str(repo.tree)
    if root not in _SNAPSHOT_MANIFESTS:
        _SNAPSHOT_MANIFESTS[root] = _files(_manifest(repo.tree))
    snap, start = _SNAPSHOT_MANIFESTS[root], _files(template.manifest)
    gold, tests = patch_files(task.patch), patch_files(task.test_patch)
    differ = {p for p in snap.keys() | start.keys() if snap.get(p) != start.get(p)}
    ok = differ <= gold | tests
    if ok:
        after: dict[str, bytes | None] = {}
        for patch, files, label in ((task.test_patch, tests, "test"), (task.patch, gold, "gold")):
            if files and (label == "gold" or template.hidden_tests):
                got = _patched(template, patch, f"the {label} patch of {task.instance_id}")
                if isinstance(got, str):
                    ok = False
                    break
                after.update(got)
        for p in gold | tests:
            if not ok:
                break
            own = repo.tree / p
            want = own.read_bytes() if own.is_file() and not own.is_symlink() else None
            mine = template.root / p
            have = after[p] if p in after else (mine.read_bytes() if mine.is_file() else None)
            ok = want == have
    _REFERENCE[key] = ok
    return ok


def class_of(test_id: str) -> str:
    """The class a test id's test is a method of (its id up to the test's name), or ``""`` for a function.

    >>> class_of("tests/test_util.py::IterTreeTest::test_2_2_links[a::b]")
    'tests/test_util.py::IterTreeTest'
    >>> class_of("tests/test_util.py::test_links")
    ''
    """
    parts = test_id.split("[", 1)[0].split("::")
    return "::".join(parts[:-1]) if len(parts) > 2 else ""


def select(repo: PreparedRepo, task: Task, template: Template, kept: list[Change]) -> Selection | None:
    """What a grade of ``kept`` (the agent's graded changes) to ``task`` runs; None: every selected test."""
    if not task.PASS_TO_PASS:
        return None
    cmap = cached_map(repo.spec)
    if cmap is None or not reference_is_snapshot(repo, task, template):
        return None
    from frog_gym.grading.runner import patch_files

    final = {c.path: c.new for c in kept}
    changes = []
    for path in sorted(final.keys() | patch_files(task.patch)):
        own, mine = repo.tree / path, template.root / path
        old = own.read_bytes() if own.is_file() and not own.is_symlink() else None
        new = final[path] if path in final else (mine.read_bytes() if mine.is_file() else None)
        changes.append((path, old, new))
    reach = affected(cmap, changes)
    if reach is None:
        return None
    known, f2p = set(cmap.tests), set(task.FAIL_TO_PASS)
    inferred = {t: cmap.statuses[t] for t in task.PASS_TO_PASS
                if t not in reach and t not in f2p and t in known and cmap.statuses.get(t) in ("PASSED", "XFAIL")}
    running = {class_of(t) for t in task.selected_tests if t not in inferred} - {""}
    inferred = {t: s for t, s in inferred.items() if class_of(t) not in running}
    if not inferred:
        return None
    return Selection(tuple(t for t in task.selected_tests if t not in inferred), inferred)
