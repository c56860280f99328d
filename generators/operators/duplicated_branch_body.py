"""duplicated_branch_body: a copy-pasted branch; one case runs the code of its sibling case.

Sites are ``if`` statements with an ``else`` or an ``elif``: the body of the second branch is replaced by a
copy of the first branch's body (an ``elif`` keeps its own condition), so one case is handled as the other
one is. Both bodies must be indented blocks at the same indentation, span at least four lines together, and
differ in at least three lines: the gold patch (the reverse diff) changes at least ``MIN_CHANGED`` lines
(``-`` and ``+`` lines, as :func:`frog_gym.generators.bugsize.changed_lines` counts them) however the diff
lines them up, so where the bodies share lines (``fractions.Fraction.__new__``) only the pairs whose
differing lines are enough are made. The fix rewrites a whole branch: no edit of one token or one line
restores it. Not invertible.

Example:
    >>> import ast
    >>> src = ("def f(x):\\n    if x < 0:\\n        y = -x\\n        return y\\n"
    ...        "    else:\\n        y = x * 2\\n        return y + 1\\n")
    >>> print(find(src, ast.parse(src))[0].apply(src), end="")
    def f(x):
        if x < 0:
            y = -x
            return y
        else:
            y = -x
            return y
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, last_line, snippet

FAMILY = "duplicated_branch_body"
MIN_LINES = 4
"""Lines of the two bodies together: below this the fix is a one-line edit."""
MAX_LINES = 12
"""Lines of the copied body: above this the branch reads like a feature, not a case."""
MIN_CHANGED = 3
"""Fewest changed lines of the gold patch: lines of either body that the other one lacks (issue 22)."""


def fewest_changed_lines(old: str, new: str) -> int:
    """The fewest ``-`` and ``+`` lines any diff of ``old`` against ``new`` has, however it is embedded.

    A diff keeps a common subsequence of the two line lists and changes the rest, and the common lines around
    a replaced block never change that minimum, so it is the lines of both outside their longest common
    subsequence (the gold patch's ``difflib`` diff may change more, never fewer). A line starting ``--`` or
    ``++`` (a string's continuation at column 0) would read as a diff header and not be counted: it is left
    out of the bound wherever it may fall.

    Example:
        >>> fewest_changed_lines("a\\nb\\nc\\n", "a\\nx\\nc\\n")
        2
        >>> fewest_changed_lines("a\\nb\\n", "b\\nc\\nd\\n")
        3
    """
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    row = [0] * (len(b) + 1)
    for x in a:  # longest common subsequence, one row at a time
        prev, row = row, [0]
        for j, y in enumerate(b):
            row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
    headers = sum(1 for ln in a if ln.startswith("--")) + sum(1 for ln in b if ln.startswith("++"))
    return len(a) + len(b) - 2 * row[-1] - headers


def _block_lines(sm: SourceMap, block: list[ast.stmt]) -> tuple[int, int] | None:
    """``(start, end)`` offsets of a block's full lines, or ``None`` when it shares a line with its header."""
    first, last = block[0], block[-1]
    if sm.indent(first) is None or sm.own_lines(last) is None:
        return None
    return sm.line_start(first.lineno), sm.line_end(last_line(last))


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Every branch of ``source`` replaced by a copy of its sibling, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, ast.If) or not node.orelse:
            continue
        orelse = node.orelse
        elif_ = (len(orelse) == 1 and isinstance(orelse[0], ast.If)
                 and sm.line_text(orelse[0].lineno).lstrip().startswith("elif"))
        target = orelse[0].body if elif_ else orelse  # an ``elif`` keeps its condition, loses its body
        if elif_ and not sm.visible(orelse[0]):
            continue
        a, b = _block_lines(sm, node.body), _block_lines(sm, target)
        if a is None or b is None or sm.indent(node.body[0]) != sm.indent(target[0]):
            continue
        text_a, text_b = sm.source[a[0]:a[1]], sm.source[b[0]:b[1]]
        n_a, n_b = text_a.count("\n") or 1, text_b.count("\n") or 1
        if n_a + n_b < MIN_LINES or n_a > MAX_LINES or ast.dump(ast.Module(node.body, [])) == ast.dump(
                ast.Module(target, [])):
            continue
        if not text_a.endswith(("\n", "\r")):
            continue
        if not text_b.endswith(("\n", "\r")):
            text_a = text_a.rstrip("\r\n")
        if fewest_changed_lines(text_a, text_b) < MIN_CHANGED:
            continue  # the bodies share lines: the fix is one or two lines
        what = "elif" if elif_ else "else"
        found.append(sm.mutation(FAMILY, b[0], b[1], text_a,
                                 f"`{what}` branch runs the `if {snippet(sm.text(node.test), 30)}` body in "
                                 f"{sm.label(node)}"))
    return sm.finish(found, lines)
