"""boolean_op_swap: turn one ``and`` into ``or`` or the reverse.

In ``a and b and c`` each operator is a separate site. Self-inverse: ``a or b and c`` parses as
``a or (b and c)``, whose ``or`` swaps back.

Example:
    >>> import ast
    >>> src = "ok = a and b\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['ok = a or b\\n']
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Container

from .base import Mutation, SourceMap, operator_span

FAMILY = "boolean_op_swap"

SWAPS = {"and": "or", "or": "and"}


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All ``and``/``or`` swaps in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, ast.BoolOp):
            continue
        for left, right in itertools.pairwise(node.values):
            op = operator_span(source, sm.end(left), sm.start(right))
            if op is None or op[2] not in SWAPS:
                continue
            start, end, old = op
            new = SWAPS[old]
            found.append(sm.mutation(FAMILY, start, end, new, f"`{old}` -> `{new}` in {sm.label(node)}"))
    return sm.finish(found, lines)
