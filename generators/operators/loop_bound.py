"""loop_bound: change the bound of a loop by one.

For a ``for`` loop or comprehension over ``range()``, the start and stop move by one and a lone stop
gains a start of ``1`` (``range(n)`` -> ``range(1, n)``). For a ``while`` loop, the right-hand side of
an ordering comparison in its test (alone or and-ed) moves by one. Self-inverse up to equivalence
(``range(1, n)`` steps back to ``range(0, n)``).

Example:
    >>> import ast
    >>> src = "for i in range(n):\\n    pass\\n"
    >>> [m.apply(src).splitlines()[0] for m in find(src, ast.parse(src))]
    ['for i in range(1, n):', 'for i in range(n + 1):', 'for i in range(n - 1):']
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import (
    Mutation,
    SourceMap,
    is_loop_iter,
    is_range_call,
    range_bounds,
    shift_both,
    while_bounds,
)

FAMILY = "loop_bound"


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All loop-bound edits in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if is_range_call(node) and is_loop_iter(sm, node):
            if len(node.args) == 1:
                pos = sm.start(node.args[0])
                stop = sm.text(node.args[0])
                found.append(
                    sm.mutation(
                        FAMILY,
                        pos,
                        pos,
                        "1, ",
                        f"`range({stop})` -> `range(1, {stop})` in {sm.label(node)}",
                    )
                )
                found += shift_both(sm, FAMILY, node.args[0], "loop stop")
            else:
                first, last = range_bounds(node)
                found += shift_both(sm, FAMILY, first, "loop start")
                found += shift_both(sm, FAMILY, last, "loop stop")
        elif isinstance(node, ast.While):
            for compare in while_bounds(node):
                found += shift_both(sm, FAMILY, compare.comparators[0], "while bound")
    return sm.finish(found, lines)
