"""changed_default_arg: change the default value of a function or lambda parameter.

Integers and floats (negative ones included) move by one, ``True`` and ``False`` trade places, ``None``
becomes a falsy value of the annotated type (``0`` when there is none), and a string or bytes default
becomes empty (an empty one becomes a space). Numbers and booleans are self-inverse; candidate_fixes
also offers ``None`` back for any default.

Example:
    >>> import ast
    >>> src = "def f(n=1, strict=True, key: str | None = None):\\n    pass\\n"
    >>> [m.apply(src).splitlines()[0] for m in find(src, ast.parse(src))]  # doctest: +NORMALIZE_WHITESPACE
    ['def f(n=2, strict=True, key: str | None = None):',
     'def f(n=0, strict=True, key: str | None = None):',
     'def f(n=1, strict=False, key: str | None = None):',
     "def f(n=1, strict=True, key: str | None = ''):"]
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Container, Iterator

from .base import Mutation, SourceMap, format_int, int_value, string_literal

FAMILY = "changed_default_arg"

_FALSY_BY_TYPE = (
    (re.compile(r"\bbool\b"), "False"),
    (re.compile(r"\b(int|float|complex)\b"), "0"),
    (re.compile(r"\bstr\b"), "''"),
    (re.compile(r"\bbytes\b"), "b''"),
    (re.compile(r"\b(list|List|Sequence|Iterable|MutableSequence)\b"), "[]"),
    (re.compile(r"\b(dict|Dict|Mapping|MutableMapping)\b"), "{}"),
    (re.compile(r"\b(tuple|Tuple)\b"), "()"),
)


def defaults(node: ast.arguments) -> Iterator[tuple[ast.arg, ast.expr]]:
    """Each parameter of ``node`` that has a default, with that default."""
    positional = [*node.posonlyargs, *node.args]
    yield from zip(positional[len(positional) - len(node.defaults) :], node.defaults)
    yield from ((a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None)


def _instead_of_none(arg: ast.arg) -> str:
    annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
    return next((value for pattern, value in _FALSY_BY_TYPE if pattern.search(annotation)), "0")


def _alternatives(arg: ast.arg, default: ast.expr, old: str) -> list[str]:
    number = int_value(default)
    if number is not None:
        return [format_int(number + 1, old), format_int(number - 1, old)]
    if isinstance(default, ast.UnaryOp) and isinstance(default.op, ast.USub):
        inner = default.operand
        if isinstance(inner, ast.Constant) and type(inner.value) is float and math.isfinite(inner.value):
            return [repr(-inner.value + 1), repr(-inner.value - 1)]
    if not isinstance(default, ast.Constant):
        return []
    value = default.value
    if isinstance(value, bool):
        return [str(not value)]
    if type(value) is float and math.isfinite(value):
        return [repr(value + 1), repr(value - 1)]
    if value is None:
        return [_instead_of_none(arg)]
    if isinstance(value, (str, bytes)):
        return [string_literal(old, "" if value else " ")]
    return []


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All default-value changes in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        if not isinstance(node, ast.arguments):
            continue
        for arg, default in defaults(node):
            old = sm.text(default)
            for new in _alternatives(arg, default, old):
                description = f"default of `{arg.arg}` `{old}` -> `{new}` in {sm.label(node)}"
                found.append(sm.mutation(FAMILY, *sm.span(default), new, description))
    return sm.finish(found, lines)
