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


# --- The rubric: what a developer needs to act on a statement ------------------------------------------------
#
# A statement passes the rubric when it (1) names package code below the top-level package (a module, class or
# function, in inline code or a reproduction's imports), (2) shows no Expected/Actual pair whose two values are
# the same text, and (3) is the statement of no other registered task. :func:`off_path_names` adds (4), which
# needs the package's source: the code it names is on the failing path (the bug's function, a package frame of
# the failing test's traceback, or a function that calls the bug's function within a few calls), so that a
# test helper the package ships (``toolz.utils.raises``) is never blamed.

_PAIR = re.compile(r"Expected: `(?P<want>.*?)`\.?\s*\n\s*Actual: (?:it raises )?`(?P<got>.*?)`\.?\s*(?:\n|$)", re.S)


def same_expected_actual(text: str) -> bool:
    """Whether the statement shows an Expected and an Actual value that read the same (quotes ignored).

    >>> same_expected_actual("Expected: `'ab...'`.\\nActual: `'ab...'`.")
    True
    >>> same_expected_actual("Expected: `'abc'`.\\nActual: `'abd'`.")
    False
    """
    for m in _PAIR.finditer(text):
        want, got = (re.sub(r"[\"']", "'", s.strip()) for s in (m.group("want"), m.group("got")))
        if want == got:
            return True
    return False


def package_of(record: dict) -> str:
    """The top-level package a task's bug is in: its first site's module, else its gold patch's first file."""
    sites = (record.get("provenance") or {}).get("sites") or []
    if sites and sites[0].get("module"):
        return sites[0]["module"].split(".")[0]
    m = re.search(r"^\+\+\+ b/(?:src/|lib/)?([A-Za-z_]\w*)", record.get("patch", ""), re.M)
    return m.group(1).removesuffix(".py") if m else record.get("repo", "")


def names_package_code(text: str, package: str) -> bool:
    """Whether the statement names a module, class or function of ``package``, not only the package.

    >>> names_package_code("Some results I get from `toolz` are wrong.", "toolz")
    False
    >>> names_package_code("`toolz.itertoolz.last()` returns a wrong result", "toolz")
    True
    """
    return any("." in n for n in _named_symbols(text, {package}))


def rubric_problems(records: list[dict]) -> dict[str, list[str]]:
    """``{instance_id: [what fails the rubric]}`` for the text-only parts (1)-(3) of the rubric, over task
    records (the whole registry: uniqueness is across all of them). Fast: no source is read."""
    from collections import Counter

    seen = Counter(r["problem_statement"].strip() for r in records)
    out: dict[str, list[str]] = {}
    for r in records:
        text, found = r["problem_statement"], []
        live = "__live-" in r["instance_id"]  # a changelog entry: judged by its own check (FrogLive quality)
        if not live and not names_package_code(text, package_of(r)):
            found.append(f"names only the package `{package_of(r)}`, no module, class or function of it")
        if same_expected_actual(text):
            found.append("shows an Expected and an Actual value that read the same")
        if seen[text.strip()] > 1:
            found.append(f"shares its statement with {seen[text.strip()] - 1} other task(s)")
        if found:
            out[r["instance_id"]] = found
    return out


def _calls_of(tree: Path, import_paths, packages: set[str]) -> dict[str, set[str]]:  # noqa: ANN001
    """``{dotted function or class: simple names its body uses}`` over the package's modules (name-based: a
    call graph good enough to say whether one function can reach another)."""
    out: dict[str, set[str]] = {}
    for ip in import_paths or ["."]:
        base = (tree / ip).resolve()
        for pkg in sorted(packages):
            files = [base / f"{pkg}.py"] if (base / f"{pkg}.py").is_file() else sorted((base / pkg).rglob("*.py"))
            for f in files:
                rel = f.relative_to(base).with_suffix("").parts
                mod = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
                try:
                    mtree = ast.parse(f.read_text(encoding="utf-8", errors="replace"))
                except (SyntaxError, ValueError, RecursionError):
                    continue

                def visit(body, prefix: str) -> None:  # noqa: ANN001
                    for node in body:
                        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
                                   {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                            if isinstance(node, ast.ClassDef):
                                used |= {m.name for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
                                visit(node.body, f"{prefix}.{node.name}")
                            out.setdefault(f"{prefix}.{node.name}", set()).update(used)

                visit(mtree.body, mod)
    return out


_GRAPHS: dict[str, dict[str, set[str]]] = {}


def _graph(repo: str) -> dict[str, set[str]]:
    if repo not in _GRAPHS:
        from frog_gym.catalog.spec import load_repo

        _, pkgs, tree = repo_symbols(repo)
        _GRAPHS[repo] = _calls_of(tree, load_repo(repo).install.import_paths, set(pkgs))
    return _GRAPHS[repo]


_FRAME = re.compile(r"^(?P<path>[^\s:]+\.py):\d+: in (?P<func>[\w<>]+)", re.M)


def failing_path(record: dict, graph: dict[str, set[str]], depth: int = 4) -> set[str]:
    """Simple names of the functions on a task's failing path: its bug sites' functions (and classes), the
    package frames of its recorded traceback, and the package functions that reach a site within ``depth``
    calls."""
    sites = (record.get("provenance") or {}).get("sites") or []
    targets = set()
    for s in sites:
        targets |= set((s.get("function") or "").split("."))
    tb = ((record.get("validation") or {}).get("failure") or {}).get("longrepr", "")
    frames = {m.group("func") for m in _FRAME.finditer(tb) if "test" not in m.group("path").rsplit("/", 1)[-1]}
    by_simple: dict[str, set[str]] = {}
    for q, used in graph.items():
        by_simple.setdefault(q.rsplit(".", 1)[-1], set()).update(used)
    on = set(targets - {""}) | frames
    frontier = set(on)
    for _ in range(depth):
        new = {name for name, used in by_simple.items() if name not in on and used & frontier}
        if not new:
            break
        on |= new
        frontier = new
    return on


def off_path_names(record: dict) -> list[str]:
    """Package functions or classes the statement names, when none of them is on the failing path (empty: it
    names one on the path, or names none). Needs the repository's source; only tasks with bug sites."""
    if not (record.get("provenance") or {}).get("sites"):
        return []
    pkg = package_of(record)
    named = [n for n in _named_symbols(record["problem_statement"], {pkg}) if "." in n]
    if not named:
        return []
    graph = _graph(record["repo"])
    on = failing_path(record, graph)
    mods = {s.get("module", "") for s in record["provenance"]["sites"]}
    if any(n.rsplit(".", 1)[-1] in on or n in mods for n in named):
        return []
    return named


def report(records: list[dict], sources: bool = True) -> str:
    """The issue's figures on ``records``: statements naming only the package, with identical Expected/Actual,
    shared with another task, and (``sources``) naming only code off the failing path."""
    from collections import Counter

    bad = rubric_problems(records)
    n = len(records)
    only_pkg = sum(any(p.startswith("names only") for p in v) for v in bad.values())
    same = sum(any(p.startswith("shows an Expected") for p in v) for v in bad.values())
    shared = sum(any(p.startswith("shares") for p in v) for v in bad.values())
    texts = Counter(r["problem_statement"].strip() for r in records)
    lines = [f"statements: {n}",
             f"name only the package: {only_pkg} ({100 * only_pkg / max(n, 1):.1f}%)",
             f"Expected and Actual read the same: {same}",
             f"share their statement text with another task: {shared} "
             f"({sum(1 for c in texts.values() if c > 1)} distinct shared texts)"]
    if sources:
        off, checked, examples = 0, 0, []
        for r in records:
            if not (r.get("provenance") or {}).get("sites"):
                continue
            try:
                names = off_path_names(r)
            except Exception as e:  # noqa: BLE001 (a repository whose source cannot be read is reported)
                lines.append(f"  {r['instance_id']}: source not readable ({type(e).__name__})")
                continue
            checked += 1
            if names:
                off += 1
                examples.append(f"{r['instance_id']}: {', '.join(names)}")
        lines.append(f"name only code off the failing path (of {checked} with bug sites): {off}"
                     + "".join(f"\n  e.g. {e}" for e in examples[:5]))
    lines.append(f"pass the text rubric (package code named, values differ, unique): {n - len(bad)} of {n}")
    return "\n".join(lines)


def registry_records(pattern: str = "*.jsonl") -> list[dict]:
    """Every task record in ``registry/tasks`` (the files themselves, no validation)."""
    import json

    from fnmatch import fnmatch

    from frog_gym.catalog.task import task_files

    out = []
    for p in task_files():
        if fnmatch(p.name, pattern):
            out += [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m frog_gym.generators.statement_check",
                                description="The statement rubric's figures over the registered tasks.")
    p.add_argument("--report", action="store_true", help="print the figures")
    p.add_argument("--no-sources", action="store_true", help="skip the failing-path check (reads no source)")
    p.add_argument("--glob", default="*.jsonl", help="task files under registry/tasks (default: all)")
    args = p.parse_args(argv)
    print(report(registry_records(args.glob), sources=not args.no_sources))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
