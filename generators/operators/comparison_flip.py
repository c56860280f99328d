"""comparison_flip: flip one comparison operator.

``<`` becomes ``<=`` or ``>``, ``<=`` becomes ``<`` or ``>=`` (and mirrored for ``>``/``>=``), ``==`` and
``!=`` trade places, as do ``is``/``is not`` and ``in``/``not in``. Self-inverse: every flip has its
reverse in the same table.

Example:
    >>> import ast
    >>> src = "def f(a, b):\\n    return a < b\\n"
    >>> [m.apply(src).splitlines()[1].strip() for m in find(src, ast.parse(src))]
    ['return a <= b', 'return a > b']
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Container

from .base import Mutation, SourceMap, operator_span

FAMILY = "comparison_flip"

FLIPS: dict[str, tuple[str, ...]] = {
    "<": ("<=", ">"),
    "<=": ("<", ">="),
    ">": (">=", "<"),
    ">=": (">", "<="),
    "==": ("!=",),
    "!=": ("==",),
    "is": ("is not",),
    "is not": ("is",),
    "in": ("not in",),
    "not in": ("in",),
}
"""Each comparison operator and what it may become."""


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All comparison flips in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for left, right in itertools.pairwise(operands):
            op = operator_span(source, sm.end(left), sm.start(right))
            if op is None or op[2] not in FLIPS:
                continue
            start, end, old = op
            for new in FLIPS[old]:
                found.append(sm.mutation(FAMILY, start, end, new, f"`{old}` -> `{new}` in {sm.label(node)}"))
    return sm.finish(found, lines)
