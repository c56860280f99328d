"""moved_loop_update: a loop's state update runs at the start of each iteration instead of at its end.

Sites are loop bodies of at least three statements whose last statement is a simple assignment to local
names (``i += 1``, ``prev = cur``, ``pos = end``) that an earlier statement of the body reads: the update
moves to the top of the body, so the body works on the next iteration's state (an index skips its first
value, ``prev`` equals ``cur``). The fix moves a line across the body, often into another hunk; no token
edit restores it. Not invertible by one candidate edit.

Example:
    >>> import ast
    >>> src = ("def f(s):\\n    i = 0\\n    while i < len(s):\\n        c = s[i]\\n        print(c)\\n"
    ...        "        i += 1\\n")
    >>> print(find(src, ast.parse(src))[0].apply(src), end="")
    def f(s):
        i = 0
        while i < len(s):
            i += 1
            c = s[i]
            print(c)
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, snippet

FAMILY = "moved_loop_update"
MIN_BODY = 3


def _targets(stmt: ast.stmt) -> set[str] | None:
    """Names a simple assignment binds, or ``None`` when it binds anything else (an attribute, an item)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AugAssign):
        targets = [stmt.target]
    else:
        return None
    names: set[str] = set()
    for t in targets:
        elts = t.elts if isinstance(t, ast.Tuple) else [t]
        if not all(isinstance(e, ast.Name) for e in elts):
            return None
        names.update(e.id for e in elts)  # type: ignore[attr-defined]
    return names


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Every loop-closing update moved to the top of its loop body, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for loop in sm.nodes:
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)) or len(loop.body) < MIN_BODY:
            continue
        first, last = loop.body[0], loop.body[-1]
        names = _targets(last)
        if not names or not sm.visible(last) or sm.indent(first) is None:
            continue
        own = sm.own_lines(last)
        if own is None or sm.own_lines(first) is None:
            continue
        earlier = [n for s in loop.body[:-1] for n in ast.walk(s)]
        if not any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names for n in earlier):
            continue
        moved = sm.source[own[0]:own[1]]
        rest = sm.source[sm.line_start(first.lineno):own[0]]
        if not moved.endswith(("\n", "\r")):
            continue
        found.append(sm.mutation(FAMILY, sm.line_start(first.lineno), own[1], moved + rest,
                                 f"`{snippet(sm.text(last))}` moved to the top of its loop in {sm.label(last)}"))
    return sm.finish(found, lines)
