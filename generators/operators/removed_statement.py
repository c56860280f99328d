"""removed_statement: delete one simple statement.

Sites are assignments (plain, augmented, annotated with a value), expression statements other than bare
literals, ``return``, ``del`` and ``continue``. ``break`` is left alone (removing it tends to make
``while True`` loops spin forever) and so is ``raise`` (exception_handling removes it). A statement alone
on its lines loses those whole lines; a block that would become empty keeps a ``pass``. Not invertible.

Example:
    >>> import ast
    >>> src = "def f(xs):\\n    xs.sort()\\n    return xs\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['def f(xs):\\n    return xs\\n', 'def f(xs):\\n    xs.sort()\\n']
"""

from __future__ import annotations

import ast
from collections.abc import Container
from typing import TypeGuard

from .base import Mutation, SourceMap, removal, snippet

FAMILY = "removed_statement"

_SITES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Delete, ast.Continue)


def is_site(node: ast.AST) -> TypeGuard[ast.stmt]:
    """Whether ``node`` is a statement this family may delete."""
    if isinstance(node, ast.AnnAssign):
        return node.value is not None
    if isinstance(node, ast.Expr):
        return not isinstance(node.value, ast.Constant)
    return isinstance(node, _SITES)


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All statement deletions in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not is_site(node):
            continue
        edit = removal(sm, node)
        if edit is not None:
            what = snippet(sm.text(node))
            found.append(sm.mutation(FAMILY, *edit, f"removed `{what}` in {sm.label(node)}"))
    return sm.finish(found, lines)
