"""dropped_guard: a condition that protected several lines is gone; its block always runs.

Sites are ``if`` statements without an ``else`` whose body is two to eight lines of plain statements:
``if cond:`` disappears and the body moves out one level. The guard spans lines, so no edit of one token
on one line restores it.

Example:
    >>> import ast
    >>> src = "def f(xs):\\n    if xs:\\n        xs.sort()\\n        xs.pop()\\n    return xs\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['def f(xs):\\n    xs.sort()\\n    xs.pop()\\n    return xs\\n']
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, last_line, snippet

FAMILY = "dropped_guard"
_MAX_LINES = 8


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All unwrapped guards of ``source``, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, ast.If) or node.orelse or sm.label(node) == "module scope":
            continue
        head = sm.indent(node)
        first, last = node.body[0].lineno, last_line(node.body[-1])
        if head is None or first == node.lineno or not 2 <= last - first + 1 <= _MAX_LINES:
            continue
        if sm.line_text(node.lineno).lstrip().startswith("elif"):
            continue
        body_indent = sm.indent(node.body[0])
        if body_indent is None or not body_indent.startswith(head) or len(body_indent) <= len(head):
            continue
        step = len(body_indent) - len(head)
        out = []
        for n in range(first, last + 1):
            text = sm.line_text(n)
            if text.strip() and not text.startswith(body_indent[:len(head) + step]):
                out = []
                break
            out.append(text[step:] if text.strip() else text)
        if not out:
            continue
        found.append(sm.mutation(FAMILY, sm.line_start(node.lineno), sm.line_end(last), "".join(out),
                                 f"dropped the guard `if {snippet(sm.text(node.test))}` in {sm.label(node)}"))
    return sm.finish(found, lines)
