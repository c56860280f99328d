"""reordered_statements: two dependent statements run in the wrong order (a state update comes late).

Sites are two adjacent simple statements of one block where the second reads a name or attribute the
first assigns (``self.count += 1`` before ``return self.count``; ``x = norm(x)`` before ``y = f(x)``):
they are swapped. Each keeps its lines, so the fix moves code rather than changing a token.

Example:
    >>> import ast
    >>> src = "def f(self):\\n    self.n += 1\\n    return self.n\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['def f(self):\\n    return self.n\\n    self.n += 1\\n']
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, chain_key, snippet

FAMILY = "reordered_statements"
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)


def _writes(stmt: ast.stmt) -> set[str]:
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        targets = [stmt.value.func.value]  # xs.append(...) updates xs
    out = set()
    for t in targets:
        for n in ast.walk(t):
            k = chain_key(n) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript)) else None
            if k:
                out.add(k)
    return out


def _reads(stmt: ast.stmt) -> set[str]:
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)) else None
    if value is None:
        return set()
    return {k for n in ast.walk(value) if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(
        getattr(n, "ctx", None), ast.Load) and (k := chain_key(n))}


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All swaps of two adjacent dependent statements of ``source``, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.For, ast.While, ast.With, ast.Try)):
            continue
        for block in (getattr(node, "body", []), getattr(node, "orelse", [])):
            for a, b in zip(block, block[1:]):
                if not (isinstance(a, _SIMPLE) and isinstance(b, _SIMPLE)) or isinstance(a, ast.Return):
                    continue
                if not sm.visible(a) or not sm.visible(b):
                    continue
                la, lb = sm.own_lines(a), sm.own_lines(b)
                if la is None or lb is None or la[1] != lb[0]:
                    continue
                if not (_writes(a) & _reads(b)) or _writes(b) & _reads(a):
                    continue
                text_a, text_b = sm.source[la[0]:la[1]], sm.source[lb[0]:lb[1]]
                if not text_b.endswith(("\n", "\r")):
                    continue
                found.append(sm.mutation(FAMILY, la[0], lb[1], text_b + text_a,
                                         f"`{snippet(sm.text(a))}` moved after `{snippet(sm.text(b))}` in "
                                         f"{sm.label(a)}"))
    return sm.finish(found, lines)
