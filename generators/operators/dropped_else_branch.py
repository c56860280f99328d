"""dropped_else_branch: the ``else`` case of an ``if`` is no longer handled; the code falls through.

Sites are ``if`` statements with a plain ``else`` (not an ``elif``) on its own line, whose body is an
indented block of one to eight lines: the ``else:`` line and its body go, so the case the ``else`` handled
does nothing (or whatever follows the ``if``). The fix writes the branch back, header and body, on lines of
its own: no token edit restores it. Not invertible by one candidate edit.

Example:
    >>> import ast
    >>> src = "def f(x):\\n    if x:\\n        y = 1\\n    else:\\n        y = 2\\n    return y\\n"
    >>> print(find(src, ast.parse(src))[0].apply(src), end="")
    def f(x):
        if x:
            y = 1
        return y
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, last_line, snippet, tokens_between

FAMILY = "dropped_else_branch"
MAX_LINES = 8


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Every plain ``else`` branch of ``source`` dropped, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, ast.If) or not node.orelse or sm.label(node) == "module scope":
            continue
        body, orelse = node.body, node.orelse
        words = [t for t in tokens_between(sm.source, sm.end(body[-1]), sm.start(orelse[0])) if t.text == "else"]
        if len(words) != 1 or sm.indent(orelse[0]) is None or sm.own_lines(orelse[-1]) is None:
            continue
        else_line = sm.line_of(words[0].start)
        if sm.line_text(else_line).strip().split("#")[0].strip() != "else:" or orelse[0].lineno <= else_line:
            continue
        if last_line(orelse[-1]) - else_line > MAX_LINES:
            continue
        start, end = sm.line_start(else_line), sm.line_end(last_line(orelse[-1]))
        if not sm.source[start:end].endswith(("\n", "\r")):
            continue
        found.append(sm.mutation(FAMILY, start, end, "",
                                 f"`else` branch of `if {snippet(sm.text(node.test), 30)}` dropped in {sm.label(node)}"))
    return sm.finish(found, lines)
