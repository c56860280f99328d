"""The package's shape: no import cycle, each subpackage imports only what its ``__init__`` declares, the public
API is what it was, and the README's layout table names the folders that exist.

The import graph is read from the source with :mod:`ast`, not by importing it: every ``import`` counts, at
module level and inside functions alike (a lazy import still couples two modules, and a cycle through one
only waits for the right call order), and so do imports under ``TYPE_CHECKING``. Importing ``frog_gym.a.b``
also runs ``frog_gym/__init__`` and ``frog_gym/a/__init__``; those implicit parent imports are not edges.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SANDBOX_SIDE = "frog_gym._plugin"
"""The pytest plugins that run inside the sandbox: data to the host (read with importlib.resources), never
imported by it, and free to import nothing of frog_gym."""


@cache
def modules() -> dict[str, Path]:
    """Every host-side module of the distribution: ``frog_gym/`` and the folders pyproject maps into it."""
    out: dict[str, Path] = {}
    for package, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items():
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = [package, *rel.parts]
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join(parts)
            if name == SANDBOX_SIDE or name.startswith(SANDBOX_SIDE + "."):
                continue
            if package == "frog_gym" and parts[1:2] and parts[1] in _mapped_names():
                continue  # a folder of the same name under frog_gym/ would shadow the mapping; none exists
            out.setdefault(name, path)
    return out


def _mapped_names() -> set[str]:
    return {p.split(".", 1)[1] for p in PYPROJECT["tool"]["setuptools"]["package-dir"] if "." in p}


@cache
def imports(name: str) -> dict[str, int]:
    """The frog_gym modules ``name`` imports (a package's ``__init__`` when a name is not a module), each with
    the line of its first import."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names]
        for t in targets:
            while t and t not in modules() and t != SANDBOX_SIDE:
                t = t.rpartition(".")[0]  # ``import frog_gym.x.y as z`` of an attribute: its module
            if t and t != name and t.split(".")[0] == "frog_gym":
                out.setdefault(t, node.lineno)
    return out


def find_cycles() -> list[list[str]]:
    """One cycle (``a -> b -> ... -> a``) through each strongly connected component of the import graph; the
    component's other members, if any, follow the cycle in brackets."""
    graph = {m: sorted(imports(m)) for m in modules()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan, iterative enough for this graph's depth
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, []):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    cycles = []
    for comp in comps:
        members, start = set(comp), comp[0]
        # shortest path from start back to itself inside the component
        prev: dict[str, str] = {}
        frontier, seen = [start], {start}
        while frontier:
            nxt = []
            for v in frontier:
                for w in graph[v]:
                    if w == start:
                        path = [v]
                        while path[-1] != start:
                            path.append(prev[path[-1]])
                        cycle = [start, *reversed(path[:-1]), start]
                        rest = sorted(members - set(cycle))
                        cycles.append(cycle + ([f"[also in this cycle: {', '.join(rest)}]"] if rest else []))
                        frontier, nxt = [], []
                        break
                    if w in members and w not in seen:
                        seen.add(w)
                        prev[w] = v
                        nxt.append(w)
                else:
                    continue
                break
            frontier = nxt
    return cycles


def test_the_import_graph_is_read_from_every_module():
    # The walk finds the moved modules and both kinds of import (a lazy one in a function included).
    assert {"frog_gym.env.core", "frog_gym.grading.grade", "frog_gym.catalog.task", "frog_gym.generators.validate",
            "frog_gym.learners.grpo"} <= set(modules())
    assert "frog_gym.grading.runner" in imports("frog_gym.grading.grade")
    assert "frog_gym.catalog.live" in imports("frog_gym.grading.runner")  # imported inside a function
    assert not any(m.startswith(SANDBOX_SIDE) for m in modules())


def test_there_is_no_import_cycle():
    cycles = find_cycles()
    assert not cycles, "import cycles (lazy imports count): " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_cycle_finder_names_a_cycle(monkeypatch):
    # The finder itself: a cycle put into the graph is reported with its members in order.
    real = imports.__wrapped__

    def with_cycle(name: str) -> dict[str, int]:
        out = dict(real(name))
        if name == "frog_gym.errors":
            out["frog_gym.paths"] = 1
        return out

    monkeypatch.setattr(sys.modules[__name__], "imports", with_cycle)
    assert ["frog_gym.errors", "frog_gym.paths", "frog_gym.errors"] in find_cycles()


# -- what each subpackage may import ---------------------------------------------------------------
SUBPACKAGES = sorted(p.name for p in (ROOT / "frog_gym").iterdir()
                     if p.is_dir() and (p / "__init__.py").exists())
TOP_MODULES = {"frog_gym.errors": set(), "frog_gym.paths": {"frog_gym.errors"},
               "frog_gym.cli": {"frog_gym", "frog_gym.commands", "frog_gym.errors"},
               "frog_gym.serve": {"frog_gym", "frog_gym.errors", "frog_gym.env"}}
"""The top-level modules beside ``__init__`` and what each may import: the errors and cache paths everything
uses, and the two process entry points whose paths are documented (``frog-gym`` is ``frog_gym.cli:main``, the
OpenEnv server is ``uvicorn frog_gym.serve:app``)."""


def allowed(sub: str) -> list[str]:
    """The ``May import:`` list of ``frog_gym/<sub>/__init__.py``'s docstring."""
    doc = ast.get_docstring(ast.parse((ROOT / "frog_gym" / sub / "__init__.py").read_text(encoding="utf-8"))) or ""
    m = re.search(r"^May import: (.*?)(?:\n\n|\Z)", doc, re.M | re.S)
    assert m, f"frog_gym/{sub}/__init__.py's docstring has no 'May import:' paragraph: add one naming what it may import"
    return [x.strip().rstrip(".") for x in m.group(1).replace("\n", " ").split(",") if x.strip()]


def _covered(target: str, allowances: list[str]) -> bool:
    return any(target == a or (a != "frog_gym" and target.startswith(a + ".")) for a in allowances)


@pytest.mark.parametrize("sub", SUBPACKAGES)
def test_each_subpackage_starts_with_what_it_owns_and_may_import(sub):
    doc = ast.get_docstring(ast.parse((ROOT / "frog_gym" / sub / "__init__.py").read_text(encoding="utf-8")))
    assert doc and len(doc.splitlines()[0]) > 20, f"frog_gym/{sub}/__init__.py must start with a line saying what it owns"
    for a in allowed(sub):
        assert a in modules(), f"frog_gym/{sub} declares it may import {a!r}, which is no module of frog_gym"


@pytest.mark.parametrize("sub", SUBPACKAGES)
def test_each_subpackage_imports_only_what_it_declares(sub):
    own = f"frog_gym.{sub}"
    allowances = allowed(sub)
    wrong = [f"{m} imports {t} (line {line})" for m in sorted(modules()) if m == own or m.startswith(own + ".")
             for t, line in imports(m).items() if not (t == own or t.startswith(own + ".")) and not _covered(t, allowances)]
    assert not wrong, (f"frog_gym/{sub} may import {', '.join(allowances)} only; move the shared part lower or "
                       f"declare the dependency in its __init__: " + "; ".join(wrong))


def test_top_level_modules_import_only_the_base():
    wrong = [f"{m} imports {t}" for m, ok in TOP_MODULES.items() for t in imports(m) if not _covered(t, sorted(ok))]
    assert not wrong, "; ".join(wrong)
    top = {p.stem for p in (ROOT / "frog_gym").glob("*.py")} - {"__init__"}
    assert {f"frog_gym.{t}" for t in top} == set(TOP_MODULES), "a new top-level module: put it in a subpackage"


def test_the_declared_dependencies_between_subpackages_have_no_cycle():
    deps = {sub: {a.split(".")[1] for a in allowed(sub) if a.count(".") >= 1 and a.split(".")[1] in SUBPACKAGES}
            for sub in SUBPACKAGES}
    order: list[str] = []
    while len(order) < len(deps):
        ready = sorted(s for s in deps if s not in order and deps[s] <= set(order))
        assert ready, f"the declared imports of {sorted(set(deps) - set(order))} form a cycle"
        order += ready


def test_nothing_on_the_host_imports_the_sandbox_side_plugins():
    wrong = [f"{m} imports {t}" for m in modules() for t in imports(m) if t.startswith(SANDBOX_SIDE)]
    assert not wrong, "frog_gym/_plugin runs in the sandbox; read it with importlib.resources: " + "; ".join(wrong)


# -- the README's layout table ----------------------------------------------------------------------
def _layout_table() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)/` \|", section, re.M)


def _tracked_folders() -> set[str]:
    """The repository's top-level folders and ``frog_gym/``'s subfolders, as git tracks them (a run folder or a
    venv beside the code is not part of the layout); hidden folders aside."""
    import subprocess

    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    out = set()
    for f in filter(None, files.split("\0")):
        parts = f.split("/")
        if len(parts) > 1 and not parts[0].startswith("."):
            out.add(parts[0])
        if len(parts) > 2 and parts[0] == "frog_gym":
            out.add(f"frog_gym/{parts[1]}")
    return out


def test_the_readme_layout_table_names_every_folder_and_only_those():
    named = _layout_table()
    assert len(named) == len(set(named)), "a folder appears twice in the README's layout table"
    missing = sorted(_tracked_folders() - set(named))
    gone = sorted(f for f in named if not (ROOT / f).is_dir())
    assert not missing, f"README.md's layout table does not name {missing}: add a row saying what each owns"
    assert not gone, f"README.md's layout table names {gone}, which do not exist: remove or rename the rows"
