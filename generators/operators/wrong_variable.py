"""wrong_variable: read the wrong local variable.

A read of a function's local name (a parameter or a name the function binds) becomes another local
name of the same function that is bound before the site: for assignments, after the whole statement
(so ``y = x + 1`` never becomes ``y = y + 1``); for ``for`` targets, after the iterable. ``self`` and
``cls`` are never swapped in or out, and names declared ``global``/``nonlocal`` are not locals. Nested
functions, lambdas and comprehensions are their own scopes and are skipped. Self-inverse.

Example:
    >>> import ast
    >>> src = "def area(w, h):\\n    return w * w\\n"
    >>> [(m.description, m.apply(src).splitlines()[1]) for m in find(src, ast.parse(src))]
    [('`w` -> `h` in area()', '    return h * w'), ('`w` -> `h` in area()', '    return w * h')]
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, scope_nodes

FAMILY = "wrong_variable"

NEVER_SWAPPED = frozenset({"self", "cls"})


def _bound_at(sm: SourceMap, name: ast.Name) -> int | None:
    """Offset from which a stored name holds its new value."""
    child: ast.AST = name
    owner = sm.parent.get(name)
    while owner is not None:
        if isinstance(owner, (ast.For, ast.AsyncFor)) and child is owner.target:
            return sm.end(owner.iter)
        if isinstance(owner, ast.NamedExpr):
            return sm.end(owner)
        if isinstance(owner, ast.withitem):
            return sm.end(owner.context_expr)
        if isinstance(owner, ast.stmt):
            return sm.end(owner)
        child, owner = owner, sm.parent.get(owner)
    return None


def local_names(sm: SourceMap, func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int]:
    """Each local name of ``func`` and the offset of its first binding."""
    bound: dict[str, int] = {}
    declared: set[str] = set()

    def bind(name: str, at: int | None) -> None:
        if at is not None and at < bound.get(name, at + 1):
            bound[name] = at

    a = func.args
    for arg in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]:
        if arg is not None:
            bind(arg.arg, sm.start(func))
    for node in scope_nodes(func):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bind(node.id, _bound_at(sm, node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, sm.end(node))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bind(alias.asname or alias.name.split(".")[0], sm.end(node))
        elif isinstance(node, ast.ExceptHandler) and node.name and node.body:
            bind(node.name, sm.start(node.body[0]))
    return {n: at for n, at in bound.items() if n not in declared and n != "*"}


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All wrong-variable reads in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for func in sm.functions:
        names = local_names(sm, func)
        swappable = sorted((at, n) for n, at in names.items() if n not in NEVER_SWAPPED)
        where = f"{sm.qualname(func)}()"
        for node in scope_nodes(func):
            if not (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id in names
                and node.id not in NEVER_SWAPPED
                and sm.visible(node)
            ):
                continue
            start, end = sm.span(node)
            others = sorted(n for at, n in swappable if at <= start and n != node.id)
            for other in others:
                found.append(sm.mutation(FAMILY, start, end, other, f"`{node.id}` -> `{other}` in {where}"))
    return sm.finish(found, lines)
