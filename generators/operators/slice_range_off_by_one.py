"""slice_range_off_by_one: move a slice bound or a ``range()`` start/stop by one.

Present bounds move both ways (``x[i:]`` -> ``x[i + 1:]``, ``x[:n - 1]`` -> ``x[:n]``); a missing lower
bound becomes ``1`` and a missing upper bound ``-1`` (``x[1:]`` -> ``x[1:-1]``). ``range()`` calls that a
``for`` loop or comprehension iterates over belong to loop_bound; the others (``list(range(n))``) are
here. Self-inverse up to equivalence, except an inserted ``-1`` upper bound, which candidate_fixes
removes explicitly.

Example:
    >>> import ast
    >>> src = "head = items[:n]\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['head = items[1:n]\\n', 'head = items[:n + 1]\\n', 'head = items[:n - 1]\\n']
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
    tokens_between,
)

FAMILY = "slice_range_off_by_one"


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All slice and ``range()`` off-by-one edits in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if isinstance(node, ast.Slice):
            where = sm.label(node)
            if node.lower is None:
                pos = sm.start(node)
                found.append(sm.mutation(FAMILY, pos, pos, "1", f"slice lower bound `` -> `1` in {where}"))
            else:
                found += shift_both(sm, FAMILY, node.lower, "slice lower bound")
            if node.upper is None:
                lo = sm.end(node.lower) if node.lower is not None else sm.start(node)
                hi = sm.start(node.step) if node.step is not None else sm.end(node)
                colon = next((t for t in tokens_between(source, lo, hi) if t.text == ":"), None)
                if colon is not None:
                    found.append(
                        sm.mutation(
                            FAMILY, colon.end, colon.end, "-1", f"slice upper bound `` -> `-1` in {where}"
                        )
                    )
            else:
                found += shift_both(sm, FAMILY, node.upper, "slice upper bound")
        elif is_range_call(node) and not is_loop_iter(sm, node):
            names = ("range() stop",) if len(node.args) == 1 else ("range() start", "range() stop")
            for arg, what in zip(range_bounds(node), names):
                found += shift_both(sm, FAMILY, arg, what)
    return sm.finish(found, lines)
