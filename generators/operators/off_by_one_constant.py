"""off_by_one_constant: add or subtract one from an integer literal.

``-1`` counts as one literal. Literals that another family owns are left to it: slice bounds and
``range()`` start/stop (slice_range_off_by_one, loop_bound), ``while`` bounds (loop_bound) and parameter
defaults (changed_default_arg). Self-inverse: ``n + 1`` steps back with ``- 1``.

Example:
    >>> import ast
    >>> src = "retries = 0x10\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['retries = 0x11\\n', 'retries = 0xf\\n']
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, format_int, int_value, is_range_call, range_bounds, while_bounds

FAMILY = "off_by_one_constant"


def _owned_elsewhere(sm: SourceMap, node: ast.AST) -> bool:
    owner = sm.parent.get(node)
    if isinstance(owner, ast.UnaryOp) and int_value(owner) is not None:
        return True  # the negated literal is the site
    if isinstance(owner, ast.Slice):
        return node is owner.lower or node is owner.upper
    if isinstance(owner, ast.Call) and is_range_call(owner):
        return any(node is a for a in range_bounds(owner))
    if isinstance(owner, ast.arguments):
        return any(node is d for d in owner.defaults + owner.kw_defaults)
    if isinstance(owner, ast.Compare):
        loop = sm.parent.get(owner)
        if isinstance(loop, ast.BoolOp):
            loop = sm.parent.get(loop)
        return (
            isinstance(loop, ast.While)
            and any(owner is c for c in while_bounds(loop))
            and (node is owner.comparators[0])
        )
    return False


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All ±1 changes of integer literals in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        value = int_value(node)
        if value is None or _owned_elsewhere(sm, node):
            continue
        old = sm.text(node)
        for delta in (1, -1):
            new = format_int(value + delta, old)
            found.append(sm.mutation(FAMILY, *sm.span(node), new, f"`{old}` -> `{new}` in {sm.label(node)}"))
    return sm.finish(found, lines)
