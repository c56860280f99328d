"""unforwarded_argument: a function no longer passes one of its own parameters on to the call it makes.

Sites are calls inside a function that forward one of the function's parameters by keyword
(``g(x, key=key)``) or forward ``*args`` / ``**kwargs``: that argument is dropped, so the callee falls
back to its default. The fix has to know what the callee accepts and add the argument back; no
candidate edit of one token restores it.

Example:
    >>> import ast
    >>> src = "def f(x, key=None):\\n    return sorted(x, key=key)\\n"
    >>> [m.apply(src) for m in find(src, ast.parse(src))]
    ['def f(x, key=None):\\n    return sorted(x)\\n']
"""

from __future__ import annotations

import ast
from collections.abc import Container

from .base import Mutation, SourceMap, snippet

FAMILY = "unforwarded_argument"


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = func.args
    names = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]} - {"self", "cls"}
    names |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    return names


def _enclosing(sm: SourceMap, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    while node in sm.parent:
        node = sm.parent[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All dropped forwarded arguments of ``source``, in source order."""
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for call in sm.nodes:
        if not isinstance(call, ast.Call):
            continue
        func = _enclosing(sm, call)
        if func is None:
            continue
        params = _params(func)
        args: list[ast.AST] = [*call.args, *call.keywords]
        for i, arg in enumerate(args):
            value = arg.value if isinstance(arg, (ast.keyword, ast.Starred)) else None
            if isinstance(arg, ast.keyword) and arg.arg is not None:
                forwarded = isinstance(value, ast.Name) and value.id in params
            else:  # *args or **kwargs
                forwarded = isinstance(value, ast.Name) and value.id in params
            if not forwarded or not hasattr(arg, "lineno"):
                continue
            start, end = sm.span(arg)
            if i + 1 < len(args):  # drop "arg, " up to the next argument
                end = sm.start(args[i + 1])
            elif i > 0:  # the last one: drop ", arg" back to the previous one
                start = sm.end(args[i - 1])
            found.append(sm.mutation(FAMILY, start, end, "",
                                     f"`{snippet(sm.text(arg))}` no longer passed on in {sm.label(call)}"))
    return sm.finish(found, lines)
