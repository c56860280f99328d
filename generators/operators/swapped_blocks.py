"""swapped_blocks: two steps of an algorithm run in the wrong order; each step spans several lines.

Sites are two adjacent statements of one block inside a function, each on two or more lines of its own (an
``if``/``for``/``with``/``try`` block, a call or an assignment written over several lines), where the order
matters: one of them reads or updates a name or attribute the other one assigns or updates (``x.append``
counts as an update of ``x``), but the second does not read a local name that only the first one binds (that
would be a use before assignment, not a subtle slip). The two are swapped, each with the comment lines right
above it; blank lines between them stay where they are. The gold patch moves a whole multi-line step back (at least ``MIN_CHANGED`` changed lines, however
the diff lines them up); no edit of one token or one line restores it. Not invertible.

Example:
    >>> import ast
    >>> src = ("def f(xs):\\n    seen = set()\\n    for x in xs:\\n        seen.add(x)\\n"
    ...        "    if 0 in seen:\\n        seen.discard(0)\\n    return seen\\n")
    >>> print(find(src, ast.parse(src))[0].apply(src), end="")
    def f(xs):
        seen = set()
        if 0 in seen:
            seen.discard(0)
        for x in xs:
            seen.add(x)
        return seen
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, bound_before, chain_key, last_line, snippet
from .duplicated_branch_body import fewest_changed_lines

FAMILY = "swapped_blocks"
MAX_LINES = 12
"""Lines of either step: above this a swap reads like a restructured function, not a slip."""
MIN_CHANGED = 4
"""Fewest changed lines of the gold patch (``-`` and ``+`` lines; issue 22's size target)."""
_UPDATERS = frozenset({"append", "extend", "update", "add", "insert", "pop", "remove", "discard", "clear",
                       "setdefault", "appendleft", "popleft", "sort", "reverse", "write", "close", "seek"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def effects(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """``(written, read)`` keys of a statement and everything nested in it (nested scopes left out)."""
    written: set[str] = set()
    read: set[str] = set()
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) and node is not stmt:
            continue
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and (k := chain_key(node)):
            (read if isinstance(node.ctx, ast.Load) else written).add(k)
            if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
                read.add(k)  # an item store keeps the container
        elif isinstance(node, ast.AugAssign) and (k := chain_key(node.target)):
            read.add(k)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _UPDATERS
              and (k := chain_key(node.func.value))):
            written.add(k)
        stack.extend(ast.iter_child_nodes(node))
    return written, read


def _prefixes(keys: set[str]) -> set[str]:
    """Every key with its owners: ``self.a.b`` also stands for ``self.a`` (``self`` alone is left out)."""
    out = set()
    for k in keys:
        parts = k.split(".")
        out.update(".".join(parts[:i]) for i in range(2 if parts[0] in ("self", "cls") else 1, len(parts) + 1))
    return out


def depends(a: ast.stmt, b: ast.stmt) -> bool:
    """Whether running ``b`` before ``a`` may change what happens: one writes what the other reads or writes."""
    wa, ra = effects(a)
    wb, rb = effects(b)
    wa, wb = _prefixes(wa), _prefixes(wb)
    return bool(wa & (rb | wb) or wb & ra)


def _with_comments(sm: SourceMap, stmt: ast.stmt, start: int) -> int:
    """``start`` moved up over the comment lines right above ``stmt`` (they belong to it)."""
    line = sm.line_of(start)
    while line > 1 and sm.line_text(line - 1).strip().startswith("#"):
        line -= 1
    return sm.line_start(line)


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Every pair of adjacent dependent multi-line steps of a function swapped, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    owner: dict[ast.AST, ast.AST] = {}
    for func in sm.functions:
        for n in ast.walk(func):
            owner.setdefault(n, func) if n is not func else None
    for node in sm.nodes:
        if not isinstance(node, ast.stmt) or not sm.label(node).endswith("()") or isinstance(node, _SCOPES):
            continue
        block = sm.block_of(node)
        i = next(k for k, s in enumerate(block) if s is node)
        if i + 1 >= len(block):
            continue
        a, b = node, block[i + 1]
        if isinstance(b, _SCOPES) or not sm.visible(b):
            continue
        la, lb = sm.own_lines(a), sm.own_lines(b)
        if la is None or lb is None or sm.indent(a) != sm.indent(b):
            continue
        if not all(2 <= last_line(s) - s.lineno + 1 <= MAX_LINES for s in (a, b)):
            continue
        start_a, start_b = _with_comments(sm, a, la[0]), _with_comments(sm, b, lb[0])
        if start_a < la[0] and i == 0:
            continue  # the comment above the block's first statement may be about the block
        text_a, gap, text_b = sm.source[start_a:la[1]], sm.source[la[1]:start_b], sm.source[start_b:lb[1]]
        if gap.strip() or not text_b.endswith(("\n", "\r")) or not depends(a, b):
            continue
        # ``b`` first must not read a name only ``a`` binds: a use before assignment is no subtle slip
        first_bound = {n.id for n in ast.walk(a) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        read_b = {n.id for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if read_b & (first_bound - bound_before(owner[a], a.lineno)):
            continue
        new = text_b + gap + text_a
        if fewest_changed_lines(text_a + gap + text_b, new) < MIN_CHANGED:
            continue
        found.append(sm.mutation(FAMILY, start_a, lb[1], new,
                                 f"`{snippet(sm.text(b), 30)}` runs before `{snippet(sm.text(a), 30)}` in "
                                 f"{sm.label(a)}"))
    return sm.finish(found, lines)
