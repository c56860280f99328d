"""What a failing test shows about the bug, read from the test's source: the public call, a reproduction.

Statements are written from this evidence (:mod:`frog_gym.generators.statements`) and checked against the
same symbol table (:mod:`frog_gym.generators.statement_check`), so a statement only names a module or a
function that exists where it says.

Example:
    >>> src = "from demo.core import clamp\\n\\ndef test_clamp():\\n    assert clamp(3, 0, 2) == 2\\n"
    >>> ev = evidence_of(src, "test_clamp", None, Symbols({"demo.core": {"clamp"}}))
    >>> ev.api, ev.call, ev.expected
    ('demo.core.clamp', 'clamp(3, 0, 2)', '2')
    >>> print(ev.repro)
    from demo.core import clamp
    print(clamp(3, 0, 2))
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_MAX_STATEMENTS = 6
_MAX_LINES = 10
_MAX_LINE = 160
_BUILTINS = set(dir(builtins))
_FRAME = re.compile(r"^(?P<file>[^\s:][^:]*\.py):(?P<line>\d+): in (?P<func>[\w<>.]+)$")


class Symbols:
    """The top-level names of a tree's modules: ``{"pkg.mod": {"f", "C", ...}}``, plus class members.

    Built from source with :mod:`ast` (nothing is imported). ``exists("pkg.mod.f")`` is True when some
    prefix is a module and the rest names a definition in it (a class's members are checked one level
    deep; a name a module imports counts as defined there, as Python sees it).
    """

    def __init__(self, names: dict[str, set[str]], members: dict[str, set[str]] | None = None,
                 star: dict[str, list[str]] | None = None):
        self.names = names
        self.members = members or {}
        self.star = star or {}

    @classmethod
    def of_tree(cls, root: Path, import_paths: tuple[str, ...] | list[str], packages: set[str]) -> Symbols:
        """Scan every module of ``packages`` (top-level import names) under the ``import_paths`` of ``root``."""
        names: dict[str, set[str]] = {}
        members: dict[str, set[str]] = {}
        star: dict[str, list[str]] = {}
        for ip in import_paths or ["."]:
            base = (root / ip).resolve()
            for pkg in sorted(packages):
                files = [base / f"{pkg}.py"] if (base / f"{pkg}.py").is_file() else sorted((base / pkg).rglob("*.py"))
                for f in files:
                    rel = f.relative_to(base).with_suffix("").parts
                    mod = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
                    if mod in names or "__pycache__" in rel:
                        continue
                    try:
                        tree = ast.parse(f.read_text(encoding="utf-8", errors="replace"))
                    except (SyntaxError, ValueError, RecursionError):
                        continue
                    is_pkg = rel[-1] == "__init__"
                    names[mod], star[mod] = _top_level(tree, mod, is_pkg, members)
        return cls(names, members, star)

    def module(self, dotted: str) -> bool:
        return dotted in self.names

    def defined(self, module: str, name: str, _depth: int = 0) -> bool:
        """Whether ``module`` defines or imports ``name`` (following ``from x import *`` in the tree)."""
        if name in self.names.get(module, ()) or f"{module}.{name}" in self.names:
            return True
        return _depth < 4 and any(self.defined(m, name, _depth + 1) for m in self.star.get(module, ()))

    def exists(self, dotted: str) -> bool:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            if mod not in self.names:
                continue
            rest = parts[i:]
            if not rest:
                return True
            if not self.defined(mod, rest[0]):
                return False
            if len(rest) == 1:
                return True
            cls = f"{mod}.{rest[0]}"
            return cls not in self.members or rest[1] in self.members[cls] or len(rest) > 2
        return False


def _top_level(tree: ast.Module, mod: str, is_pkg: bool, members: dict[str, set[str]]) -> tuple[set[str], list[str]]:
    names: set[str] = set()
    star: list[str] = []
    pkg = mod if is_pkg else mod.rpartition(".")[0]

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                if isinstance(node, ast.ClassDef):
                    own = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                       ast.ClassDef))}
                    own |= {t.id for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                            if isinstance(t, ast.Name)}
                    members[f"{mod}.{node.name}"] = own if not node.bases else own | {"*"}
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            names.add(n.id)
            elif isinstance(node, ast.Import):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name == "*":
                        base = pkg.split(".")[: max(0, len(pkg.split(".")) - node.level + 1)] if node.level else []
                        star.append(".".join([*base, *(node.module or "").split(".")]).strip("."))
                    else:
                        names.add(a.asname or a.name)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                for h in getattr(node, "handlers", []):
                    visit(h.body)
                visit(getattr(node, "finalbody", []))
    visit(tree.body)
    return names, star


@dataclass(frozen=True)
class Evidence:
    """What one failing test shows: the public function it calls and how, and what it expects."""

    api: str = ""
    """Dotted public name of the library function or class the failing statement calls ('' if none)."""
    call: str = ""
    """Source of that call as the test writes it (``camelize("a_b")``), '' when too long."""
    expected: str = ""
    """Source of the expected value of an ``assert <call> == <expected>`` ('' otherwise)."""
    repro: str = ""
    """A short self-contained snippet (imports + the test's statements), '' when not clean."""
    raises: str = ""
    """The exception the test expects (``pytest.raises(X)``), '' if none."""
    flipped: bool = False
    """The test writes ``assert <expected> == <call>`` (the observed value is on the right)."""


def split_test_id(test_id: str) -> tuple[str, list[str], str]:
    """``(file, [classes], function)`` of a pytest node id (parameters dropped).

    >>> split_test_id("tests/test_a.py::TestX::test_y[1-2]")
    ('tests/test_a.py', ['TestX'], 'test_y')
    """
    parts = test_id.split("::")
    func = re.sub(r"\[.*$", "", parts[-1]) if len(parts) > 1 else ""
    return parts[0], parts[1:-1], func


def _find_function(tree: ast.Module, classes: list[str], func: str) -> ast.FunctionDef | None:
    body: list[ast.stmt] = tree.body
    for c in classes:
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == c), None)
        if node is None:
            return None
        body = node.body
    return next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func),
                None)  # type: ignore[return-value]


def _imports(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Local name -> (dotted origin, the import line that binds it), module-level absolute imports only."""
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = (a.name, f"import {a.name} as {a.asname}")
                else:
                    root = a.name.split(".")[0]
                    out.setdefault(root, (root, f"import {a.name}"))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for a in node.names:
                if a.name != "*":
                    local = a.asname or a.name
                    alias = f" as {a.asname}" if a.asname else ""
                    out[local] = (f"{node.module}.{a.name}", f"from {node.module} import {a.name}{alias}")
    return out


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _resolve_call(call: ast.Call, imports: dict[str, tuple[str, str]], symbols: Symbols,
                  packages: set[str]) -> str:
    chain = _dotted(call.func)
    if not chain or chain[0] not in imports:
        return ""
    origin = imports[chain[0]][0]
    dotted = ".".join([origin, *chain[1:]])
    if dotted.split(".")[0] not in packages or any(p.startswith("_") and not p.startswith("__") for p in
                                                   dotted.split(".")[1:]):
        return ""
    return dotted if symbols.exists(dotted) else ""


def _statement_at(func: ast.FunctionDef, line: int | None) -> tuple[int, ast.stmt] | None:
    """The index and node of the top-level statement of ``func`` holding ``line`` (else the first assert)."""
    body = func.body
    if line is not None:
        for i, st in enumerate(body):
            if st.lineno <= line <= (st.end_lineno or st.lineno):
                return i, st
    for kind in (ast.Assert, ast.With):
        for i, st in enumerate(body):
            if isinstance(st, kind):
                return i, st
    return None


def _segment(src: str, node: ast.AST) -> str:
    return ast.get_source_segment(src, node) or ""


def failing_line(longrepr: str, test_file: str, func: str) -> int | None:
    """The line of the test function at which the traceback left it (None when not shown)."""
    for raw in longrepr.splitlines():
        m = _FRAME.match(raw.strip())
        if m and m.group("file") == test_file and m.group("func") == func:
            return int(m.group("line"))
    return None


_STDLIB = set(getattr(sys, "stdlib_module_names", ()))


def evidence_of(src: str, func_name: str, line: int | None, symbols: Symbols, classes: list[str] | None = None,
                packages: set[str] | None = None) -> Evidence:
    """The :class:`Evidence` of test ``func_name`` (in ``classes``) of the test module source ``src``."""
    packages = packages if packages is not None else {m.split(".")[0] for m in symbols.names}
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError):
        return Evidence()
    func = _find_function(tree, classes or [], func_name)
    if func is None:
        return Evidence()
    found = _statement_at(func, line)
    if found is None:
        return Evidence()
    idx, stmt = found
    imports = _imports(tree)
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call)]
    api, call_src, call_node = "", "", None
    for c in calls:
        api = _resolve_call(c, imports, symbols, packages)
        if api:
            call_src, call_node = _segment(src, c), c
            break
    if not api:  # the failing line calls a local; look at the statements before it
        for st in reversed(func.body[:idx]):
            for c in (n for n in ast.walk(st) if isinstance(n, ast.Call)):
                api = _resolve_call(c, imports, symbols, packages)
                if api:
                    call_src = _segment(src, c)
                    break
            if api:
                break
    expected, raises, flipped = "", "", False
    if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1 \
            and isinstance(stmt.test.ops[0], (ast.Eq, ast.Is)):
        left, right = stmt.test.left, stmt.test.comparators[0]
        flipped = call_node is not None and any(n is call_node for n in ast.walk(right)) and \
            not any(n is call_node for n in ast.walk(left))
        want = left if flipped else right
        if _plain(want):
            expected = _segment(src, want)
    if isinstance(stmt, ast.With):
        for item in stmt.items:
            e = item.context_expr
            if isinstance(e, ast.Call) and (_dotted(e.func) or [""])[-1] == "raises" and e.args:
                raises = _segment(src, e.args[0])
    repro = _repro(src, func, idx, imports, packages, flipped)
    if len(call_src) > _MAX_LINE or "\n" in call_src:
        call_src = ""
    if len(expected) > _MAX_LINE or "\n" in expected:
        expected = ""
    return Evidence(api, call_src, expected, repro, raises, flipped)


def _plain(node: ast.AST) -> bool:
    """An expected value a reader understands without the test: literals and builtins applied to them."""
    return all(not isinstance(n, (ast.Name, ast.Attribute)) or (isinstance(n, ast.Name) and n.id in _BUILTINS)
               for n in ast.walk(node))


def _repro(src: str, func: ast.FunctionDef, idx: int, imports: dict[str, tuple[str, str]],
           packages: set[str], flipped: bool = False) -> str:
    """The test's statements up to the failing one, with the imports they need, or '' when not clean:
    fixtures or parameters, decorators, ``self``, helpers of the test module, too long."""
    args = func.args
    if args.args[1:] if args.args and args.args[0].arg == "self" else args.args:
        return ""
    if args.vararg or args.kwarg or args.kwonlyargs or func.decorator_list:
        return ""
    body = func.body[: idx + 1]
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body or len(body) > _MAX_STATEMENTS:
        return ""
    bound: set[str] = set()
    needed: dict[str, str] = {}
    for st in body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.For, ast.While,
                           ast.Try)):
            return ""
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound:
                if n.id in imports:
                    origin, line = imports[n.id]
                    root = origin.split(".")[0]
                    if root not in packages and root not in _STDLIB:
                        return ""
                    needed[n.id] = line
                elif n.id not in _BUILTINS:
                    return ""
            elif isinstance(n, ast.Name) and n.id == "self":
                return ""
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                bound.add(n.id)
    lines = list(dict.fromkeys(needed.values()))
    for st in body[:-1]:
        lines += _segment(src, st).splitlines()
    last = body[-1]
    if isinstance(last, ast.Assert) and isinstance(last.test, ast.Compare) and len(last.test.ops) == 1 \
            and isinstance(last.test.ops[0], (ast.Eq, ast.Is)):
        shown = last.test.comparators[0] if flipped else last.test.left
        lines.append(f"print({_segment(src, shown)})")
    else:
        lines += _segment(src, last).splitlines()
    if len(lines) > _MAX_LINES or any(len(ln) > _MAX_LINE for ln in lines):
        return ""
    text = "\n".join(lines)
    try:
        ast.parse(text)
    except SyntaxError:
        return ""
    return text


@lru_cache(maxsize=256)
def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def evidence_for_test(tree: Path, test_id: str, longrepr: str, symbols: Symbols, packages: set[str]) -> Evidence:
    """:func:`evidence_of` for a pytest node id of the tree at ``tree``."""
    file, classes, func = split_test_id(test_id)
    if not func or not file.endswith(".py"):
        return Evidence()
    src = _read(os.fspath(tree / file))
    if not src:
        return Evidence()
    return evidence_of(src, func, failing_line(longrepr, file, func), symbols, classes, packages)
