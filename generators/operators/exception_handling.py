"""exception_handling: break how a piece of code deals with exceptions.

Four shapes: a ``try`` loses its ``except`` clauses (without a ``finally`` the body, and any ``else``
block, is dedented into the try's place); a caught builtin exception becomes a plausible sibling
(``ValueError`` <-> ``TypeError``, see `PARTNERS`); a caught tuple loses one member; a ``raise`` is
deleted (``pass`` where the block would become empty). Exception-type swaps are self-inverse; the other
shapes are not invertible.

Example:
    >>> import ast
    >>> src = "try:\\n    v = int(s)\\nexcept ValueError:\\n    v = 0\\n"
    >>> [m.apply(src).splitlines()[0 if m.lineno == 1 else 2] for m in find(src, ast.parse(src))]
    ['v = int(s)', 'except Exception:', 'except TypeError:']
"""

from __future__ import annotations

import ast
from collections.abc import Container, Iterable

from .base import Mutation, SourceMap, last_line, removal, snippet, tokens_between

FAMILY = "exception_handling"

_PAIRS = (
    ("ValueError", "TypeError"),
    ("KeyError", "IndexError"),
    ("KeyError", "AttributeError"),
    ("AttributeError", "TypeError"),
    ("IndexError", "StopIteration"),
    ("FileNotFoundError", "PermissionError"),
    ("FileNotFoundError", "IsADirectoryError"),
    ("ImportError", "ModuleNotFoundError"),
    ("UnicodeDecodeError", "UnicodeEncodeError"),
    ("ZeroDivisionError", "OverflowError"),
    ("OSError", "FileNotFoundError"),
    ("Exception", "ValueError"),
)
PARTNERS: dict[str, tuple[str, ...]] = {
    name: tuple(sorted({b for a, b in _PAIRS if a == name} | {a for a, b in _PAIRS if b == name}))
    for name in sorted({n for pair in _PAIRS for n in pair})
}
"""Each builtin exception and the ones an ``except`` of it may catch instead (a symmetric relation)."""

_TRY = tuple(t for t in (getattr(ast, "Try", None), getattr(ast, "TryStar", None)) if t is not None)


def _string_lines(node: ast.AST) -> set[int]:
    """Lines inside multi-line string literals under ``node`` (their text must not be re-indented)."""
    return {
        line
        for n in ast.walk(node)
        if isinstance(n, (ast.Constant, ast.JoinedStr)) and n.end_lineno != n.lineno
        for line in range(n.lineno + 1, last_line(n) + 1)
    }


def _dedented(sm: SourceMap, lines: Iterable[int], old: str, new: str, frozen: set[int]) -> str:
    out = []
    for n in lines:
        line = sm.line_text(n)
        if n not in frozen and line.startswith(old):
            line = new + line[len(old) :]
        out.append(line)
    return "".join(out)


def _keyword_line(sm: SourceMap, start: int, end: int, keyword: str) -> int | None:
    token = next((t for t in tokens_between(sm.source, start, end) if t.text == keyword), None)
    return None if token is None else sm.line_of(token.start)


def _unwrapped(sm: SourceMap, node: ast.Try) -> tuple[int, int, str] | None:
    """Drop the except clauses of ``node``: dedent body (and else) or keep try/finally."""
    lines = sm.own_lines(node)
    indent, body_indent = sm.indent(node), sm.indent(node.body[0])
    if lines is None or indent is None or body_indent is None or node.body[0].lineno == node.lineno:
        return None
    last_handler = sm.end(node.handlers[-1])
    if node.finalbody:
        final_line = _keyword_line(sm, last_handler, sm.start(node.finalbody[0]), "finally")
        if node.orelse or final_line is None:
            return None
        return sm.line_start(node.handlers[0].lineno), sm.line_start(final_line), ""
    frozen = _string_lines(node)
    text = _dedented(sm, range(node.lineno + 1, node.handlers[0].lineno), body_indent, indent, frozen)
    if node.orelse:
        else_line = _keyword_line(sm, last_handler, sm.start(node.orelse[0]), "else")
        else_indent = sm.indent(node.orelse[0])
        if else_line is None or else_indent is None or node.orelse[0].lineno == else_line:
            return None
        text += _dedented(sm, range(else_line + 1, last_line(node) + 1), else_indent, indent, frozen)
    return lines[0], lines[1], text


def _handler_edits(sm: SourceMap, handler: ast.ExceptHandler) -> list[tuple[int, int, str, str]]:
    kind = handler.type
    if isinstance(kind, ast.Name):
        return [
            (*sm.span(kind), new, f"`except {kind.id}` -> `except {new}`")
            for new in PARTNERS.get(kind.id, ())
        ]
    if not isinstance(kind, ast.Tuple) or len(kind.elts) < 2:
        return []
    edits = []
    for i, elt in enumerate(kind.elts):
        if i + 1 < len(kind.elts):
            lo, hi = sm.start(elt), sm.start(kind.elts[i + 1])
        else:
            lo, hi = sm.end(kind.elts[i - 1]), sm.end(elt)
        edits.append((lo, hi, "", f"`{sm.text(elt)}` no longer caught by `except {snippet(sm.text(kind))}`"))
    return edits


def type_swaps(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """Only the self-inverse shape of this family: caught exception types swapped with a `PARTNERS` one.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found = [
        sm.mutation(FAMILY, lo, hi, new, f"{what} in {sm.label(node)}")
        for node in sm.nodes
        if isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Name)
        for lo, hi, new, what in _handler_edits(sm, node)
    ]
    return sm.finish(found, lines)


def find(source: str, tree: ast.Module, *, lines: Container[int] | None = None) -> list[Mutation]:
    """All exception-handling breakages in ``source``, in source order.

    ``lines``, when given, keeps only sites that touch those 1-based lines.
    """
    sm = SourceMap.of(source, tree)
    found: list[Mutation] = []
    for node in sm.nodes:
        where = sm.label(node)
        if isinstance(node, _TRY) and node.handlers:
            edit = _unwrapped(sm, node)
            if edit is not None:
                found.append(sm.mutation(FAMILY, *edit, f"removed the except clauses of a `try` in {where}"))
        elif isinstance(node, ast.ExceptHandler):
            for lo, hi, new, what in _handler_edits(sm, node):
                found.append(sm.mutation(FAMILY, lo, hi, new, f"{what} in {where}"))
        elif isinstance(node, ast.Raise):
            edit = removal(sm, node)
            if edit is not None:
                found.append(sm.mutation(FAMILY, *edit, f"removed `{snippet(sm.text(node))}` in {where}"))
    return sm.finish(found, lines)
