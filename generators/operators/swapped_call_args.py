"""swapped_call_args: swap two adjacent positional arguments of a call.

Calls with a ``*args`` argument, pairs with identical text and the commutative ``max``/``min`` are left
alone. Self-inverse.

Example:
    >>> import ast
    >>> src = "s = text.replace(old, new)\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['s = text.replace(new, old)\\n']
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Container

from .base import Mutation, SourceMap, snippet

FAMILY = "swapped_call_args"

COMMUTATIVE = frozenset({"max", "min"})


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All adjacent-argument swaps in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        if isinstance(node.func, ast.Name) and node.func.id in COMMUTATIVE:
            continue
        callee = snippet(sm.text(node.func))
        for left, right in itertools.pairwise(node.args):
            first, second = sm.text(left), sm.text(right)
            if first == second:
                continue
            lo, hi = sm.start(left), sm.end(right)
            middle = source[sm.end(left) : sm.start(right)]
            found.append(
                sm.mutation(
                    FAMILY,
                    lo,
                    hi,
                    second + middle + first,
                    f"swapped arguments `{snippet(first, 20)}` and `{snippet(second, 20)}` of "
                    f"`{callee}()` in {sm.label(node)}",
                )
            )
    return sm.finish(found, lines)
