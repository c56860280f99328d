"""Hidden tests (SWE-bench's contract): the workspace holds the repository without the FAIL_TO_PASS tests.

Per task, the test functions of FAIL_TO_PASS are cut out of their test files by :mod:`ast` line spans
(decorators included; a class left without tests goes too; a file left without tests is removed). The
task's ``test_patch`` is the diff that adds them back (from the workspace's test files to the pristine
ones): the template of the task is built without them, and grading applies ``test_patch`` to the graded
tree after the agent's changes. Tests that are not functions of a test file (doctests in the source) stay
visible. The agent can still run every other test.

Example:
    >>> src = "import x\\n\\n\\ndef test_a():\\n    assert 1\\n\\n\\n@mark\\ndef test_b():\\n    assert x.f()\\n"
    >>> print(without_tests(src, {((), "test_b")}), end="")
    import x
    <BLANKLINE>
    <BLANKLINE>
    def test_a():
        assert 1
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from frog_gym.generators.testsource import split_test_id
from frog_gym.sandbox.workspace import Change, diff_text


def _span(node: ast.stmt) -> tuple[int, int]:
    decos = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decos)])
    return start, node.end_lineno or node.lineno


def _has_tests(body: list[ast.stmt], gone: set[int]) -> bool:
    """Whether ``body`` keeps something pytest may collect: a ``test*`` function, or a class that has a
    ``test*`` method left, a base class (inherited tests) or ``Test`` in its name."""
    for n in body:
        if id(n) in gone:
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"):
            return True
        if isinstance(n, ast.ClassDef) and (n.bases or "Test" in n.name or _has_tests(n.body, gone)):
            return True
    return False


def without_tests(src: str, targets: set[tuple[tuple[str, ...], str]], keep_file: bool = False) -> str | None:
    """``src`` without the test functions ``targets`` (``(classes, name)``); None when no test is left
    (with ``keep_file``, the file without them even then: a module other tests import from).

    Returns ``src`` unchanged when none of the targets is found.
    """
    tree = ast.parse(src)
    spans: list[tuple[int, int]] = []
    gone: set[int] = set()
    emptied: dict[int, str] = {}  # with keep_file: line index -> "pass" line for a class left without a body

    def visit(body: list[ast.stmt], path: tuple[str, ...]) -> bool:
        """Cut targets out of ``body``; True when something was cut."""
        cut = False
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (path, node.name) in targets:
                spans.append(_span(node))
                gone.add(id(node))
                cut = True
            elif isinstance(node, ast.ClassDef) and any(t[0][: len(path) + 1] == (*path, node.name) for t in targets):
                if keep_file:  # other modules import this class: it stays, with a body
                    cut = visit(node.body, (*path, node.name)) or cut
                    if all(id(n) in gone for n in node.body):
                        emptied[node.body[0].lineno - 1] = " " * node.body[0].col_offset + "pass\n"
                elif visit(node.body, (*path, node.name)) and not any(
                        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
                        and id(n) not in gone for n in node.body):
                    spans[:] = [s for s in spans if not (node.lineno <= s[0] <= (node.end_lineno or 0))]
                    spans.append(_span(node))
                    gone.add(id(node))
                    cut = True
                elif any(id(n) in gone for n in node.body):
                    cut = True
        return cut

    if not visit(tree.body, ()):
        return src
    if not keep_file and not _has_tests(tree.body, gone):
        return None
    lines = src.splitlines(keepends=True)
    drop: set[int] = set()
    for a, b in spans:  # with the blank lines that separated it from what precedes
        a -= 1
        while a > 0 and not lines[a - 1].strip():
            a -= 1
        drop.update(range(a, b))
    return "".join(emptied.get(i, "") + (line if i not in drop else "") for i, line in enumerate(lines))


def _parsed(tree: Path, file: str, cache: dict[str, ast.Module | None]) -> ast.Module | None:
    if file not in cache:
        try:
            cache[file] = ast.parse((tree / file).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
            cache[file] = None
    return cache[file]


def _module_file(tree: Path, importer: str, module: str | None, level: int) -> str | None:
    """The file of ``module`` as ``importer`` imports it: relative to its package, or from any folder
    between the tree's root and the importer (pytest puts test folders on ``sys.path``)."""
    parts = [p for p in (module or "").split(".") if p]
    if level:
        roots = [Path(importer).parents[level - 1]] if level <= len(Path(importer).parents) else []
    else:
        roots = [*Path(importer).parents]
    for root in roots:
        base = root.joinpath(*parts)
        for cand in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
            if cand is not None and (tree / cand).is_file():
                return cand.as_posix()
    return None


def _origin(tree: Path, file: str, mod: ast.Module, name: str) -> tuple[str, str] | None:
    """Where the class ``name`` (``X`` or ``module.X``) that ``file`` uses comes from: ``(file, class)``."""
    head, _, attr = name.rpartition(".")
    for node in mod.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                bound = alias.asname or alias.name
                if not head and bound == name:  # from m import X
                    src = _module_file(tree, file, node.module, node.level)
                    if src:
                        return src, alias.name
                elif head and bound == head:  # from pkg import m; m.X
                    sub = f"{node.module}.{alias.name}" if node.module else alias.name
                    src = _module_file(tree, file, sub, node.level)
                    if src:
                        return src, attr
        elif isinstance(node, ast.Import) and head:
            for alias in node.names:
                if (alias.asname or alias.name) == head:
                    src = _module_file(tree, file, alias.name, 0)
                    if src:
                        return src, attr
    return None


def defining_class(tree: Path, file: str, classes: tuple[str, ...], func: str,
                   cache: dict[str, ast.Module | None] | None = None, depth: int = 0) -> tuple[str, tuple[str, ...]] | None:
    """Where the test ``func`` that pytest collects as ``file::classes::func`` is defined: the class itself, a
    base class (of the same file, or imported from another), or a class the file imports (pytest collects an
    imported test class too). ``(file, classes)``, or None when it is not found.
    """
    cache = {} if cache is None else cache
    mod = _parsed(tree, file, cache)
    if mod is None or depth > 8:
        return None
    if not classes:
        found = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func for n in mod.body)
        return (file, ()) if found else None
    node = next((n for n in mod.body if isinstance(n, ast.ClassDef) and n.name == classes[0]), None)
    if node is None:
        origin = _origin(tree, file, mod, classes[0])
        return defining_class(tree, origin[0], (origin[1], *classes[1:]), func, cache, depth + 1) if origin else None
    for name in classes[1:]:
        node = next((n for n in node.body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if node is None:
            return None
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func for n in node.body):
        return file, classes
    if len(classes) > 1:
        return None
    for base in node.bases:
        try:
            name = ast.unparse(base)
        except (ValueError, AttributeError):
            continue
        local = "." not in name and any(isinstance(n, ast.ClassDef) and n.name == name for n in mod.body)
        origin = (file, name) if local else _origin(tree, file, mod, name)
        found = defining_class(tree, origin[0], (origin[1],), func, cache, depth + 1) if origin else None
        if found:
            return found
    return None


def hidden_test_changes(tree: Path, fail_to_pass: list[str] | tuple[str, ...],
                        is_test_file: Callable[[str], bool]) -> list[Change]:
    """Pristine -> hidden changes of the test files of ``fail_to_pass`` in the pristine ``tree``.

    A test a class inherits (a mixin in ``tests/__init__.py``, a base class imported from another test
    module) is cut where it is defined: every class that inherits it loses it too until grading.
    """
    by_file: dict[str, set[tuple[tuple[str, ...], str]]] = {}
    inherited: set[str] = set()
    cache: dict[str, ast.Module | None] = {}
    for t in fail_to_pass:
        file, classes, func = split_test_id(t)
        if not (func and file.endswith(".py") and is_test_file(file)):
            continue
        where = defining_class(tree, file, tuple(classes), func, cache)
        if where and where[0] != file and not is_test_file(where[0]):
            continue  # defined outside the tests: it stays visible
        if where and (where[0], where[1]) != (file, tuple(classes)):
            inherited.add(where[0])
            file, classes = where
        by_file.setdefault(file, set()).add((tuple(classes), func))
    out = []
    for file, targets in sorted(by_file.items()):
        p = tree / file
        try:
            old = p.read_text(encoding="utf-8")
            new = without_tests(old, targets, keep_file=file in inherited or file.endswith("__init__.py"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
            continue
        if new != old:
            out.append(Change(file, old.encode("utf-8"), None if new is None else new.encode("utf-8")))
    return out


def hidden_tests_patch(tree: Path, fail_to_pass: list[str] | tuple[str, ...], is_test_file: Callable[[str], bool]) -> str:
    """The task's ``test_patch``: the diff from the hidden test files back to the pristine ones ('' when
    no FAIL_TO_PASS test can be hidden)."""
    changes = hidden_test_changes(tree, fail_to_pass, is_test_file)
    return diff_text([Change(c.path, c.new, c.old) for c in changes])


def hide_tests_file(path: Path) -> Counter:
    """Set ``test_patch`` of every task of one ``<repo>.jsonl`` (in place) from its pristine snapshot."""
    from frog_gym.generators.taskfiles import read_existing, rewrite_task_file
    from frog_gym.catalog.snapshot import snapshot_tree
    from frog_gym.catalog.spec import load_repo

    records = read_existing(path)
    if not records:
        return Counter()
    spec = load_repo(records[0]["repo"])
    tree = snapshot_tree(spec)
    return rewrite_task_file(path, lambda d: dict(d, test_patch=hidden_tests_patch(
        tree, d["FAIL_TO_PASS"], spec.tests.is_test_file)))
