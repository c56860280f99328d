"""arithmetic_op_swap: replace one arithmetic operator by a neighbour of the same precedence.

``+``/``-``, ``*``/``/``, ``/``/``//``, ``//``/``%``, ``<<``/``>>`` and ``&``/``|`` trade places, in
expressions and in augmented assignments (``+=`` -> ``-=``). String concatenation and ``%``-formatting
(a string or f-string operand) are left alone, and so is ``&``/``|`` next to another bitwise operator,
where a swap would also regroup the expression. Self-inverse: the table is symmetric.

Example:
    >>> import ast
    >>> src = "total += price * qty\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['total -= price * qty\\n', 'total += price / qty\\n']
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, operator_span

FAMILY = "arithmetic_op_swap"

SWAPS: dict[str, tuple[str, ...]] = {
    "+": ("-",),
    "-": ("+",),
    "*": ("/",),
    "/": ("*", "//"),
    "//": ("/", "%"),
    "%": ("//",),
    "<<": (">>",),
    ">>": ("<<",),
    "&": ("|",),
    "|": ("&",),
}
"""Each operator and what it may become; augmented forms (``+=``) follow the same table."""

_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


def _bitwise(node: ast.AST | None) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, _BITWISE)


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All operator swaps in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if isinstance(node, ast.BinOp):
            left, right, suffix = node.left, node.right, ""
            if _is_text(left) or _is_text(right):
                continue
            if isinstance(node.op, _BITWISE) and any(_bitwise(n) for n in (left, right, sm.parent.get(node))):
                continue
        elif isinstance(node, ast.AugAssign):
            left, right, suffix = node.target, node.value, "="
            if _is_text(right):
                continue
        else:
            continue
        op = operator_span(source, sm.end(left), sm.start(right))
        if op is None or not op[2].endswith(suffix) or op[2][: len(op[2]) - len(suffix)] not in SWAPS:
            continue
        start, end, old = op
        for new in SWAPS[old[: len(old) - len(suffix)]]:
            new += suffix
            found.append(sm.mutation(FAMILY, start, end, new, f"`{old}` -> `{new}` in {sm.label(node)}"))
    return sm.finish(found, lines)
