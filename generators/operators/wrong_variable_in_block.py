"""wrong_variable_in_block: a copy-pasted block still reads the variable of the code it was copied from.

Sites are the blocks (``if``/``elif``/``else`` bodies, loop bodies, ``with`` and ``try`` blocks) of a
function that read one of its local names at least three times, on at least two lines, without binding it:
every such read becomes another local name the function binds before the block (each of the two bound
last, the latest first). The fix has to find and restore each read, on several lines: no edit of one token or one line undoes
it. Nested functions, lambdas and comprehensions are their own scopes and keep their reads; ``self`` and
``cls`` are never swapped. Not invertible by one candidate edit.

Example:
    >>> import ast
    >>> src = ("def f(xs, ys):\\n    out = []\\n    if ys:\\n        for y in ys:\\n"
    ...        "            out.append(y + len(ys))\\n        out.extend(ys)\\n    return out\\n")
    >>> [m.description for m in find(src, ast.parse(src))]
    ['3 reads of `ys` -> `out` in a block of f()', '3 reads of `ys` -> `xs` in a block of f()']
    >>> print(find(src, ast.parse(src))[1].apply(src), end="")
    def f(xs, ys):
        out = []
        if ys:
            for y in xs:
                out.append(y + len(xs))
            out.extend(xs)
        return out
"""

from __future__ import annotations

import ast
from collections.abc import Container, Iterator

from .base import Mutation, SourceMap, last_line

FAMILY = "wrong_variable_in_block"
MIN_READS = 3
ALTERNATIVES = 2
"""Replacement names tried per site: the locals bound most recently before the block."""
_KEEP = frozenset({"self", "cls"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def _walk(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """Nodes of some statements in their own scope (nested scopes are yielded, not entered)."""
    stack: list[ast.AST] = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _blocks(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[list[ast.stmt]]:
    for node in _walk(func.body):
        if not isinstance(node, ast.stmt) or isinstance(node, _SCOPES):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block
        for handler in getattr(node, "handlers", []):
            yield handler.body


def _bindings(func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int]:
    """Each local name of ``func`` bound by a parameter, an assignment, a loop or a ``with``, and the first
    line after which it is usable (an assignment's last line; a loop's or ``with``'s header line)."""
    a = func.args
    bound = {p.arg: func.lineno for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p}
    declared: set[str] = set()
    for stmt in _walk(func.body):
        targets: list[ast.AST] = []
        if isinstance(stmt, (ast.Global, ast.Nonlocal)):
            declared.update(stmt.names)
        elif isinstance(stmt, ast.Assign):
            targets, usable = list(stmt.targets), last_line(stmt)
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            targets, usable = [stmt.target], last_line(stmt)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            targets, usable = [stmt.target], stmt.lineno
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            targets, usable = [i.optional_vars for i in stmt.items if i.optional_vars], stmt.lineno
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    bound[n.id] = min(bound.get(n.id, usable), usable)
    return {k: v for k, v in bound.items() if k not in declared and k not in _KEEP}


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Every block of ``source`` made to read another local name throughout, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for func in sm.functions:
        bound = _bindings(func)
        if len(bound) < 2:
            continue
        for block in _blocks(func):
            first = block[0].lineno
            inside = list(_walk(block))
            stored = {n.id for n in inside if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
            reads: dict[str, list[ast.Name]] = {}
            for n in inside:
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in bound:
                    reads.setdefault(n.id, []).append(n)
            before = sorted((line, name) for name, line in bound.items() if line < first and name not in stored)
            for name, uses in reads.items():
                if (name in stored or len(uses) < MIN_READS or len({u.lineno for u in uses}) < 2
                        or bound[name] >= first or not all(sm.visible(u) for u in uses)):
                    continue
                uses.sort(key=lambda u: (u.lineno, u.col_offset))
                others = [other for _, other in before if other != name][-ALTERNATIVES:]
                for other in reversed(others):
                    lo, hi = sm.start(uses[0]), sm.end(uses[-1])
                    parts, at = [], lo
                    for u in uses:
                        parts += [sm.source[at:sm.start(u)], other]
                        at = sm.end(u)
                    found.append(sm.mutation(FAMILY, lo, hi, "".join(parts),
                                             f"{len(uses)} reads of `{name}` -> `{other}` in a block of "
                                             f"{sm.label(uses[0])}"))
    return sm.finish(found, lines)
