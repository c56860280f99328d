"""repeated_comparison_flip: one quantity's bound is misread throughout a function (inclusive for exclusive).

Sites are the ordering comparisons (``<``, ``<=``, ``>``, ``>=``) of one function that compare the same
quantity (a name, an attribute chain such as ``self.pos``, or ``len()`` of one) at least twice, on at least two
lines: every one of them flips its strictness (``<`` <-> ``<=``, ``>`` <-> ``>=``), as a developer who takes an
end for inclusive writes every test of it that way. Comparisons in nested functions, lambdas and
comprehensions belong to their own scopes and are kept. The fix restores each comparison, on several
lines: no edit of one token or one line undoes it. Not invertible by one candidate edit.

Example:
    >>> import ast
    >>> src = ("def clip(i, n):\\n    if i < 0:\\n        return 0\\n    if i >= n:\\n        return n - 1\\n"
    ...        "    return i\\n")
    >>> [m.description for m in find(src, ast.parse(src))]
    ['2 comparisons of `i` made inclusive/exclusive the other way in clip()']
    >>> print(find(src, ast.parse(src))[0].apply(src), end="")
    def clip(i, n):
        if i <= 0:
            return 0
        if i > n:
            return n - 1
        return i
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Container

from .base import Mutation, SourceMap, operator_span, scope_nodes

FAMILY = "repeated_comparison_flip"
MIN_SITES = 2
MAX_SITES = 6
"""More comparisons of one quantity than this read like a different algorithm, not one misreading."""
FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}


def _key(node: ast.AST) -> str | None:
    """A quantity compared: ``i``, ``self.pos``, ``len(xs)``; ``None`` for anything else (a literal, a call)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _key(node.value)
        return f"{inner}.{node.attr}" if inner else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
            and len(node.args) == 1 and not node.keywords and (inner := _key(node.args[0]))):
        return f"len({inner})"
    return None


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Every function's comparisons of one quantity all flipped, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for func in sm.functions:
        by_key: dict[str, list[tuple[int, int, str]]] = {}
        for node in scope_nodes(func):
            if not isinstance(node, ast.Compare) or not sm.visible(node):
                continue
            for left, right in itertools.pairwise([node.left, *node.comparators]):
                op = operator_span(source, sm.end(left), sm.start(right))
                if op is None or op[2] not in FLIP:
                    continue
                keys = {k for k in (_key(left), _key(right)) if k}
                for k in keys:
                    by_key.setdefault(k, []).append(op)
        for key, ops in sorted(by_key.items()):
            ops = sorted(set(ops))
            if not MIN_SITES <= len(ops) <= MAX_SITES or len({sm.line_of(s) for s, _, _ in ops}) < 2:
                continue
            lo, hi = ops[0][0], ops[-1][1]
            parts, at = [], lo
            for start, end, old in ops:
                parts += [source[at:start], FLIP[old]]
                at = end
            found.append(sm.mutation(FAMILY, lo, hi, "".join(parts),
                                     f"{len(ops)} comparisons of `{key}` made inclusive/exclusive the other way "
                                     f"in {sm.qualname(func)}()"))
    return sm.finish(found, lines)
