"""negated_condition: negate the test of an ``if``, ``elif``, ``while``, ternary, ``assert`` or
comprehension ``if``.

A test that already starts with ``not`` loses it instead, so the family is its own inverse. Constant
tests (``while True``) are left alone.

Example:
    >>> import ast
    >>> src = "if ready and not done:\\n    go()\\nassert not failed\\n"
    >>> [m.apply(src).splitlines()[m.lineno - 1] for m in find(src, ast.parse(src))]
    ['if not (ready and not done):', 'assert failed']
"""

from __future__ import annotations

import ast
from collections.abc import Container, Iterator

from .base import Mutation, SourceMap, snippet, tokens_between

FAMILY = "negated_condition"

_NEEDS_PARENS = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr)


def _tests(node: ast.AST) -> Iterator[tuple[ast.expr, str]]:
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        yield node.test, type(node).__name__.lower()
    elif isinstance(node, ast.comprehension):
        yield from ((test, "comprehension if") for test in node.ifs)


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All condition negations in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        for test, kind in _tests(node):
            if isinstance(test, ast.Constant):
                continue
            start, end = sm.span(test)
            old = snippet(sm.text(test))
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                rest = tokens_between(source, start + len("not"), sm.start(test.operand))
                stop = rest[0].start if rest else sm.start(test.operand)
                edit = (start, stop, "")
                new = snippet(source[stop:end])
            else:
                text = sm.text(test)
                edit = (start, end, f"not ({text})" if isinstance(test, _NEEDS_PARENS) else f"not {text}")
                new = snippet(edit[2])
            found.append(sm.mutation(FAMILY, *edit, f"{kind} test `{old}` -> `{new}` in {sm.label(node)}"))
    return sm.finish(found, lines)
