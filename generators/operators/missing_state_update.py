"""missing_state_update: a step that keeps state up to date is gone (several lines of updates, or their loop).

Sites are runs of adjacent statements of a function's block that only update state: an assignment or
augmented assignment to an attribute or an item (``self.size += 1``, ``cache[key] = value``), a call that
updates an object in place (``self.items.append(x)``), a new value for a local name that was bound before
and is read again later (``pos = end``; a first binding is a definition, and dropping it a ``NameError``),
or a ``for``/``while``/``with`` block made of nothing but such updates. Initializers
(``__init__`` and its kind) are left alone: what they assign is a first value, not an update. A run of
``MIN_LINES`` to ``MAX_LINES`` lines goes (the longest run from each statement that starts one); the block keeps another
statement, so nothing needs a ``pass``. The fix writes the update back, several lines of it: no edit of one
token or one line restores it. Not invertible.

Example:
    >>> import ast
    >>> src = ("def push(self, x):\\n    self.items.append(x)\\n    self.size += 1\\n"
    ...        "    for w in self.watchers:\\n        w.pending.append(x)\\n        w.count += 1\\n    return x\\n")
    >>> print(find(src, ast.parse(src))[0].apply(src), end="")
    def push(self, x):
        return x
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, bound_before, last_line, snippet

FAMILY = "missing_state_update"
MIN_LINES = 4
"""Fewest lines a run spans: the gold patch adds them all back (issue 22's size target)."""
MAX_LINES = 10
"""Most lines a run spans: more reads like a missing feature, not a forgotten update."""
_UPDATERS = frozenset({"append", "extend", "update", "add", "insert", "remove", "discard", "clear",
                       "setdefault", "appendleft", "extendleft", "write", "writelines", "pop", "popleft"})
_INITIALIZERS = frozenset({"__init__", "__new__", "__post_init__", "__setstate__", "__init_subclass__"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _holder(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _updates(stmt: ast.stmt, read_later: set[str], bound: set[str]) -> bool:
    """Whether ``stmt`` only updates state (the module docstring's list); ``bound``: the local names bound
    before it, ``read_later``: those read after it."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            return False
        for t in targets:
            for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(e, (ast.Attribute, ast.Subscript)):
                    continue
                if not (isinstance(e, ast.Name) and e.id in read_later and e.id in bound):
                    return False
        return True
    if isinstance(stmt, ast.Expr):
        call = stmt.value
        return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in _UPDATERS and isinstance(_holder(call.func.value), ast.Name))
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
        if getattr(stmt, "orelse", None):
            return False
        inner = _loop_names(stmt)
        return bool(stmt.body) and all(_updates(s, read_later | inner, bound | inner) for s in stmt.body)
    return False


def _loop_names(stmt: ast.stmt) -> set[str]:
    """Names bound by a loop or ``with`` header: updating them inside counts as using the loop's state."""
    targets = [stmt.target] if isinstance(stmt, (ast.For, ast.AsyncFor)) else [
        i.optional_vars for i in getattr(stmt, "items", []) if i.optional_vars]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _names_read(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Every run of state updates of a function dropped, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    blocks: list[tuple[list[ast.stmt], ast.AST]] = []
    for func in sm.functions:
        if func.name in _INITIALIZERS:
            continue  # a first value of an attribute is a definition; dropping it an AttributeError
        for node in ast.walk(func):
            for block in (getattr(node, f, None) for f in ("body", "orelse", "finalbody")):
                if (isinstance(block, list) and block and isinstance(block[0], ast.stmt)
                        and (node is func or not isinstance(node, _SCOPES))):
                    blocks.append((block, func))
            if isinstance(node, ast.ExceptHandler):
                blocks.append((node.body, func))
    for block, func in blocks:
        if not sm.visible(block[0]):
            continue
        i = 0
        while i < len(block):
            bound = bound_before(func, block[i].lineno)
            if not _updates(block[i], _names_read(block[i + 1:]), bound):
                i += 1
                continue
            j = i
            while (j + 1 < len(block) and _updates(block[j + 1], _names_read(block[j + 2:]), bound)
                   and last_line(block[j + 1]) - block[i].lineno + 1 <= MAX_LINES):
                j += 1
            run = block[i:j + 1]
            span = last_line(run[-1]) - run[0].lineno + 1
            first, last = sm.own_lines(run[0]), sm.own_lines(run[-1])
            if (MIN_LINES <= span <= MAX_LINES and len(run) < len(block) and first and last
                    and all(sm.visible(s) for s in run) and sm.indent(run[0]) is not None):
                what = snippet(sm.text(run[0]), 30) + (f" and {len(run) - 1} more" if len(run) > 1 else "")
                found.append(sm.mutation(FAMILY, first[0], last[1], "",
                                         f"state update `{what}` ({span} lines) dropped in {sm.label(run[0])}"))
            i = j + 1
    return sm.finish(found, lines)
