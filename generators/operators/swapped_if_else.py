"""swapped_if_else: exchange the two branches of an ``if``/``else`` statement or a ternary.

Only a plain ``else`` counts (an ``elif`` chain is left alone). Statement branches must both be
indented blocks at the same indentation or both sit on their header lines. Self-inverse: swapping twice
restores the text.

Example:
    >>> import ast
    >>> src = "if ok:\\n    a()\\nelse:\\n    b()\\nx = 1 if ok else 2\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))][0]
    'if ok:\\n    b()\\nelse:\\n    a()\\nx = 1 if ok else 2\\n'
    >>> [m.apply(src) for m in find(src, ast.parse(src))][1].splitlines()[-1]
    'x = 2 if ok else 1'
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Container

from .base import Mutation, SourceMap, last_line, snippet, tokens_between

FAMILY = "swapped_if_else"


def _statement_swap(sm: SourceMap, node: ast.If) -> tuple[int, int, str] | None:
    body, orelse = node.body, node.orelse
    if not orelse or sm.source.startswith("elif", sm.start(orelse[0])):
        return None
    keyword = next(
        (t for t in tokens_between(sm.source, sm.end(body[-1]), sm.start(orelse[0])) if t.text == "else"),
        None,
    )
    if keyword is None:
        return None
    else_line = sm.line_of(keyword.start)
    inline = body[0].lineno == node.lineno, orelse[0].lineno == else_line
    if all(inline):
        lo, mid_lo = sm.start(body[0]), sm.end(body[-1])
        mid_hi, hi = sm.start(orelse[0]), sm.end(orelse[-1])
        return lo, hi, sm.source[mid_hi:hi] + sm.source[mid_lo:mid_hi] + sm.source[lo:mid_lo]
    if any(inline) or sm.indent(body[0]) is None or sm.indent(body[0]) != sm.indent(orelse[0]):
        return None
    lo, mid_lo = sm.line_start(body[0].lineno), sm.line_end(last_line(body[-1]))
    mid_hi, hi = sm.line_start(orelse[0].lineno), sm.line_end(last_line(orelse[-1]))
    first, middle, last = sm.source[lo:mid_lo], sm.source[mid_lo:mid_hi], sm.source[mid_hi:hi]
    if not last.endswith(("\n", "\r")):
        last, first = last + sm.newline(last_line(body[-1])), first.rstrip("\r\n")
    return lo, hi, last + middle + first


def _ternary_swap(sm: SourceMap, node: ast.IfExp) -> tuple[int, int, str]:
    # The branches' own parentheses sit in the gaps around `if` and `else`; they travel with them.
    lo, hi = sm.span(node)
    gap = tokens_between(sm.source, sm.end(node.body), sm.start(node.test))
    closing = list(itertools.takewhile(lambda t: t.text != "if", gap))
    body_end = closing[-1].end if closing else sm.end(node.body)
    gap = tokens_between(sm.source, sm.end(node.test), sm.start(node.orelse))
    opening = gap[[t.text for t in gap].index("else") + 1 :]
    orelse_start = opening[0].start if opening else sm.start(node.orelse)
    orelse = sm.source[orelse_start:hi]
    if not opening and isinstance(node.orelse, (ast.IfExp, ast.Lambda)):
        orelse = f"({orelse})"
    return lo, hi, orelse + sm.source[body_end:orelse_start] + sm.source[lo:body_end]


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All branch swaps in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if isinstance(node, ast.If):
            edit = _statement_swap(sm, node)
            what = f"`if {snippet(sm.text(node.test))}`"
        elif isinstance(node, ast.IfExp):
            edit = _ternary_swap(sm, node)
            what = f"`{snippet(sm.text(node))}`"
        else:
            continue
        if edit is not None:
            found.append(sm.mutation(FAMILY, *edit, f"swapped the branches of {what} in {sm.label(node)}"))
    return sm.finish(found, lines)
