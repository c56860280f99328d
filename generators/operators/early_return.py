"""early_return: make a function return before it has done its work.

Two shapes: a ``return`` (``return None`` in functions that return values) inserted on its own line
before a statement of the function, other than the first; and an assignment to a variable the function
later returns turned into that return (``result = f(x)`` -> ``return f(x)``) when it is not already
followed by it. The inserted ``return`` is undone by deleting it (candidate_fixes does); the converted
assignment is not invertible.

Example:
    >>> import ast
    >>> src = "def f(x):\\n    y = g(x)\\n    y += 1\\n    return y\\n"
    >>> for m in find(src, ast.parse(src)):
    ...     print(m.apply(src).splitlines()[1:3])
    ['    return g(x)', '    y += 1']
    ['    y = g(x)', '    return None']
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, is_docstring, scope_nodes, snippet, tokens_between

FAMILY = "early_return"

_NOT_BEFORE = (ast.Return, ast.Raise, ast.Pass)


def _returned_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {
        n.value.id for n in scope_nodes(func) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)
    }


def _converted(sm: SourceMap, stmt: ast.stmt, returned: set[str]) -> tuple[int, int, str] | None:
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id in returned
    ):
        return None
    block = sm.block_of(stmt)
    i = next(i for i, s in enumerate(block) if s is stmt)
    following = block[i + 1] if i + 1 < len(block) else None
    if isinstance(following, ast.Return) and isinstance(following.value, ast.Name):
        if following.value.id == stmt.targets[0].id:
            return None  # `y = e; return y` -> `return e; return y` changes nothing
    gap = tokens_between(sm.source, sm.end(stmt.targets[0]), sm.start(stmt.value))
    after_eq = gap[[t.text for t in gap].index("=") + 1 :]
    stop = after_eq[0].start if after_eq else sm.start(stmt.value)
    return sm.start(stmt), stop, "return "


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All premature returns in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for func in sm.functions:
        nodes = list(scope_nodes(func))
        gives_value = any(isinstance(n, ast.Return) and n.value is not None for n in nodes)
        text = "return None" if gives_value else "return"
        returned = _returned_names(func)
        first = next((s for s in func.body if not is_docstring(s)), None)
        where = f"{sm.qualname(func)}()"
        for stmt in nodes:
            if not isinstance(stmt, ast.stmt) or not sm.visible(stmt):
                continue
            what = snippet(sm.line_text(stmt.lineno))
            converted = _converted(sm, stmt, returned)
            if converted is not None:
                found.append(sm.mutation(FAMILY, *converted, f"`{what}` -> `return ...` in {where}"))
            indent = sm.indent(stmt)
            if stmt is first or isinstance(stmt, _NOT_BEFORE) or indent is None:
                continue
            pos = sm.line_start(stmt.lineno)
            found.append(
                sm.mutation(
                    FAMILY,
                    pos,
                    pos,
                    f"{indent}{text}{sm.newline(stmt.lineno)}",
                    f"inserted `{text}` before `{what}` in {where}",
                )
            )
    return sm.finish(found, lines)
