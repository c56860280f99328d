"""missing_branch: a case the code handles is no longer handled (an ``if`` block or an ``elif`` dropped).

Sites are ``if`` statements without an ``else`` (the whole statement goes: a special case, a guard clause
that returns or raises early) and ``elif`` branches (the branch goes, the chain continues). Only blocks
of at most eight lines are dropped, so what is lost reads like a forgotten case, not a missing feature.
No single-token edit undoes it: the fix has to write the case back.

Example:
    >>> import ast
    >>> src = "def f(x):\\n    if x is None:\\n        return 0\\n    return x + 1\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['def f(x):\\n    return x + 1\\n']
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, last_line, removal, snippet

FAMILY = "missing_branch"
_MAX_LINES = 8


def _is_elif(sm: SourceMap, node: ast.If) -> bool:
    parent = sm.parent.get(node)
    return (isinstance(parent, ast.If) and len(parent.orelse) == 1 and parent.orelse[0] is node
            and sm.line_text(node.lineno).lstrip().startswith("elif"))


def _next_branch_line(sm: SourceMap, node: ast.If) -> int | None:
    """The line of the ``elif``/``else`` that follows ``node``'s body (None: the chain ends with it)."""
    if not node.orelse:
        return None
    for n in range(last_line(node.body[-1]) + 1, node.orelse[0].lineno + 1):
        if sm.line_text(n).lstrip().startswith(("elif", "else")):
            return n
    return None


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All dropped ``if`` blocks and ``elif`` branches of ``source``, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, ast.If) or sm.label(node) == "module scope":
            continue
        if last_line(node.body[-1]) - node.lineno + 1 > _MAX_LINES:
            continue
        cond = snippet(sm.text(node.test))
        if _is_elif(sm, node):
            nxt = _next_branch_line(sm, node)
            if node.orelse and nxt is None:
                continue
            end = sm.line_start(nxt) if nxt is not None else sm.line_end(last_line(node))
            # `elif a: A else: E` -> `else: E`, `elif a: A elif b: B` -> `elif b: B`
            found.append(sm.mutation(FAMILY, sm.line_start(node.lineno), end, "",
                                     f"dropped the `elif {cond}` branch in {sm.label(node)}"))
        elif not node.orelse:
            edit = removal(sm, node)
            if edit is not None:
                found.append(sm.mutation(FAMILY, *edit, f"dropped the `if {cond}` case in {sm.label(node)}"))
    return sm.finish(found, lines)
