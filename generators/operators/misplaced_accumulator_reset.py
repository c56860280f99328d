"""misplaced_accumulator_reset: an accumulator is reset inside the loop instead of once before it.

Sites are a simple assignment of a fresh value (a literal, an empty container, ``None``, a call without
arguments such as ``set()``) to a local name, up to three statements before a ``for``/``while`` loop of
the same block, where the loop body updates the name (``acc += x``, ``acc.append(x)``, ``acc[k] = v``,
``acc = acc + x``) and the code after the loop reads it. The assignment moves to the top of the loop body,
so only the last iteration's work survives. The fix moves a line across the loop header: the buggy line
is right, only its place is wrong, so no token edit restores it. Not invertible by one candidate edit.

Example:
    >>> import ast
    >>> src = "def f(xs):\\n    total = 0\\n    for x in xs:\\n        total += x\\n    return total\\n"
    >>> print(find(src, ast.parse(src))[0].apply(src), end="")
    def f(xs):
        for x in xs:
            total = 0
            total += x
        return total
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, snippet

FAMILY = "misplaced_accumulator_reset"
LOOKBACK = 3
_UPDATERS = frozenset({"append", "add", "extend", "update", "insert", "appendleft", "setdefault", "write"})


def _fresh(value: ast.expr) -> bool:
    """Whether ``value`` is a fresh start value: a constant, an empty display, or a call without arguments."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return not value.elts
    if isinstance(value, ast.Dict):
        return not value.keys
    return isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)) and not (
        value.args or value.keywords)


def _updates(loop: ast.For | ast.While | ast.AsyncFor, name: str) -> bool:
    """Whether the loop body accumulates into ``name``."""
    for node in (n for stmt in loop.body for n in ast.walk(stmt)):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, (ast.Name, ast.Subscript)):
            target = node.target.value if isinstance(node.target, ast.Subscript) else node.target
            if isinstance(target, ast.Name) and target.id == name:
                return True
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _UPDATERS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name):
            return True
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name:
                    return True
                if isinstance(t, ast.Name) and t.id == name and any(
                        isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value)):
                    return True
    return False


def _mentions(stmts: list[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for s in stmts for n in ast.walk(s))


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Every accumulator reset moved into the loop that fills it, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for loop in sm.nodes:
        if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)) or sm.label(loop) == "module scope":
            continue
        block = sm.block_of(loop)
        i = next(k for k, s in enumerate(block) if s is loop)
        body_indent = sm.indent(loop.body[0])
        if body_indent is None or sm.indent(loop) is None or loop.body[0].lineno <= loop.lineno:
            continue
        for j in range(max(0, i - LOOKBACK), i):
            init = block[j]
            if not (isinstance(init, ast.Assign) and len(init.targets) == 1 and isinstance(init.targets[0], ast.Name)
                    and _fresh(init.value) and sm.visible(init)):
                continue
            name = init.targets[0].id
            own = sm.own_lines(init)
            if (own is None or init.lineno != init.end_lineno or _mentions(block[j + 1:i], name)
                    or _mentions([loop.iter if not isinstance(loop, ast.While) else loop.test], name)
                    or not _updates(loop, name) or not _mentions(block[i + 1:] + loop.orelse, name)):
                continue
            line = sm.source[own[0]:own[1]]
            moved = body_indent + line.lstrip(" \t")
            between = sm.source[own[1]:sm.line_start(loop.body[0].lineno)]
            found.append(sm.mutation(FAMILY, own[0], sm.line_start(loop.body[0].lineno), between + moved,
                                     f"`{snippet(sm.text(init))}` moved into the loop it feeds in {sm.label(init)}"))
    return sm.finish(found, lines)
