"""The statement checker: a problem statement must not hand over the answer or point to a wrong place.

A statement is rejected when it

- names a FAIL_TO_PASS test (its id, its file's node id, or its function name),
- quotes the mutated line (a line the bug patch removes or adds, whitespace ignored),
- names a module or function of the package that does not exist where it says (checked against the
  pristine snapshot's source with :class:`~frog_gym.generators.testsource.Symbols`: inline code such as
  `` `pkg.mod.f()` `` or "`` `f()` in `pkg.mod` ``", and the imports of its code blocks).

``frog-gym tasks --check-statements`` runs it over the registry; a test runs it on every registered task.

Example:
    >>> from frog_gym.generators.testsource import Symbols
    >>> sym = Symbols({"demo": set(), "demo.core": {"clamp"}})
    >>> problems("`clamp()` in `demo.util` is wrong", ["t.py::test_a"], "", sym, {"demo"})
    ['names `demo.util.clamp`, which does not exist in the source']
    >>> problems("`demo.core.clamp()` fails", ["t.py::test_clamp"], "+    return lo if x < lo else x\\n", sym, {"demo"})
    []
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

from frog_gym.generators.testsource import Symbols, split_test_id

_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_INLINE = re.compile(r"`([^`\n]+)`")
_IN_MODULE = re.compile(r"`([A-Za-z_]\w*)\(\)` in `([A-Za-z_][\w.]*)`")
_DOTTED = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(\(\))?$")
_MIN_LINE = 10


def mutated_lines(bug_patch: str) -> list[str]:
    """The lines a bug patch removes or adds, whitespace removed, long enough to be worth matching.

    >>> mutated_lines("--- a/x.py\\n+++ b/x.py\\n@@ -1 +1 @@\\n-    if a < b:\\n+    if a <= b:\\n")
    ['ifa<b:', 'ifa<=b:']
    """
    out = []
    for line in bug_patch.splitlines():
        if line.startswith(("+++", "---")) or not line[:1] in ("+", "-"):
            continue
        squashed = re.sub(r"\s+", "", line[1:])
        if squashed:
            out.append(squashed)
    return out


def problems(text: str, fail_to_pass: list[str] | tuple[str, ...], bug_patch: str, symbols: Symbols | None,
             packages: set[str]) -> list[str]:
    """What is wrong with a statement (empty: it passes). ``symbols`` None skips the existence check."""
    found: list[str] = []
    for t in fail_to_pass:
        file, _, func = split_test_id(t)
        if t in text or (func and f"{file}::" in text):
            found.append(f"names the FAIL_TO_PASS test {t}")
            break
        if func.startswith("test") and re.search(rf"\b{re.escape(func)}\b", text):
            found.append(f"names the FAIL_TO_PASS test function {func}")
            break
    squashed = re.sub(r"\s+", "", text)
    for line in mutated_lines(bug_patch):
        if len(line) >= _MIN_LINE and line in squashed:
            found.append(f"quotes the mutated line {line!r}")
            break
    if symbols is None:
        return found
    for name in _named_symbols(text, packages):
        if not symbols.exists(name):
            found.append(f"names `{name}`, which does not exist in the source")
    return found


def _named_symbols(text: str, packages: set[str]) -> list[str]:
    """Dotted names of the package the statement points at (inline code, "`f()` in `m`", code imports)."""
    names: list[str] = []
    for block in _FENCE.findall(text):
        for line in block.splitlines():
            s = line.strip()
            if not s.startswith(("import ", "from ")):
                continue
            try:
                node = ast.parse(s).body[0]
            except (SyntaxError, IndexError):
                continue
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    prose = _FENCE.sub("", text)
    for func, mod in _IN_MODULE.findall(prose):
        names.append(f"{mod}.{func}")
    for span in _INLINE.findall(_IN_MODULE.sub("", prose)):
        m = _DOTTED.match(span.strip().removeprefix("import "))
        if m and ("." in m.group(1) or m.group(2) or span.startswith("import ")):
            names.append(m.group(1))
    return [n for n in dict.fromkeys(names) if n.split(".")[0] in packages]


def packages_of(spec, tree: Path) -> set[str]:  # noqa: ANN001 (a RepoSpec)
    """Top-level import names of the code generators mutate (``generate.mutable``, else the import paths)."""
    from frog_gym.catalog.spec import module_name

    out = set()
    for r in spec.mutable:
        out.add(module_name(spec, r).split(".")[0])
    if not out:
        for ip in spec.install.import_paths:
            base = tree / ip
            for p in sorted(base.iterdir()) if base.is_dir() else []:
                if (p.suffix == ".py" and p.stem not in ("setup", "conftest")) or (p / "__init__.py").is_file():
                    rel = p.relative_to(tree).as_posix()
                    if not spec.tests.is_test_file(rel) and not p.name.startswith(("test", "doc", "_")):
                        out.add(p.stem)
    return {p for p in out if p.isidentifier()}


_SYMBOLS: dict[tuple[str, str], tuple[Symbols, frozenset[str]]] = {}


def symbols_of(spec, tree: Path) -> tuple[Symbols, frozenset[str]]:  # noqa: ANN001 (a RepoSpec)
    """``(symbols, packages)`` of a repository's pristine tree (cached per tree)."""
    key = (spec.name, str(tree))
    if key not in _SYMBOLS:
        pkgs = packages_of(spec, tree)
        _SYMBOLS[key] = Symbols.of_tree(tree, spec.install.import_paths, pkgs), frozenset(pkgs)
    return _SYMBOLS[key]


@lru_cache(maxsize=64)
def repo_symbols(name: str, version: str = "", sha256: str = "") -> tuple[Symbols, frozenset[str], Path]:
    """``(symbols, packages, snapshot tree)`` of a registered repository, or of one of its releases
    (``version``/``sha256``: a FrogLive task's); fetches the sdist on first use."""
    from frog_gym.catalog.live import release_spec
    from frog_gym.catalog.snapshot import snapshot_tree
    from frog_gym.catalog.spec import load_repo

    spec = load_repo(name)
    if version:
        spec = release_spec(spec, version, sha256, None)
    tree = snapshot_tree(spec)
    return (*symbols_of(spec, tree), tree)


def check_task(task) -> list[str]:  # noqa: ANN001 (a Task)
    """:func:`problems` of a registered task's statement, against the source it runs on (a FrogLive task's
    own release)."""
    src = (task.provenance or {}).get("source") or {}
    symbols, pkgs, _ = repo_symbols(task.repo, src.get("version", ""), src.get("sha256", ""))
    return problems(task.problem_statement, task.FAIL_TO_PASS, task.bug_patch, symbols, set(pkgs))
