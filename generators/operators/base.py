"""Shared parts of the mutation operators: the `Mutation` record and the `SourceMap` of one module.

Every family module calls :meth:`SourceMap.of` to get str offsets, parents, scope labels and the list of
nodes worth mutating (docstrings, annotations, f-string internals and ``if __name__ == "__main__"`` /
``if TYPE_CHECKING`` blocks are left out), builds candidate `Mutation`s, and hands them to
:meth:`SourceMap.finish`, which drops edits that do not parse or change nothing and sorts the rest into
source order.

Example:
    >>> import ast
    >>> source = "def f(x):\\n    return x < 1\\n"
    >>> sm = SourceMap.of(source, ast.parse(source))
    >>> compare = next(n for n in sm.nodes if isinstance(n, ast.Compare))
    >>> sm.text(compare), sm.label(compare)
    ('x < 1', 'f()')
    >>> m = sm.mutation("demo", *sm.span(compare), "x <= 1", "`<` -> `<=`")
    >>> m.apply(source)
    'def f(x):\\n    return x <= 1\\n'
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeGuard


class Finder(Protocol):
    """What every family exposes as ``find``: all its candidate mutations of ``source``, in source
    order; ``lines``, when given, keeps only sites that touch those 1-based lines."""

    def __call__(
        self, source: str, tree: ast.Module, *, lines: Container[int] | None = None
    ) -> list[Mutation]: ...


@dataclass(frozen=True)
class Mutation:
    """One local edit of a Python source: replace ``source[start:end]`` by ``replacement``.

    Example:
        >>> m = Mutation("comparison_flip", 6, 7, "<=", 1, 1, "`<` -> `<=` at module scope")
        >>> m.apply("x = a < b")
        'x = a <= b'
    """

    family: str
    """The family that produced the edit, e.g. ``"comparison_flip"``."""
    start: int
    """Character offset (str index, not bytes) of the first replaced character, inclusive."""
    end: int
    """Character offset just past the replaced text, exclusive; ``start == end`` is an insertion."""
    replacement: str
    """The text that replaces ``source[start:end]``."""
    lineno: int
    """1-based first line of the site."""
    end_lineno: int
    """1-based last line of the site."""
    description: str
    """Human-readable summary, e.g. ``"`<` -> `<=` in parse_date()"``."""

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(
                f"Mutation span must satisfy 0 <= start <= end, got start={self.start}, end={self.end}; "
                "pass str offsets of the replaced text (SourceMap.span converts ast positions)."
            )
        if not 1 <= self.lineno <= self.end_lineno:
            raise ValueError(
                f"Mutation lines must satisfy 1 <= lineno <= end_lineno, got lineno={self.lineno}, "
                f"end_lineno={self.end_lineno}; line numbers are 1-based like ast's."
            )

    def apply(self, source: str) -> str:
        """Return ``source`` with the edit applied."""
        return source[: self.start] + self.replacement + source[self.end :]


def node_touches(node: ast.AST, lines: Container[int] | None) -> bool:
    """Whether a node with a position spans one of ``lines`` (always true for ``None``)."""
    return lines is None or any(n in lines for n in range(node.lineno, last_line(node) + 1))  # type: ignore[attr-defined]


def touches(mutation: Mutation, lines: Container[int]) -> bool:
    """Whether any line of ``mutation``'s site is in ``lines``.

    Example:
        >>> touches(Mutation("demo", 0, 1, "y", 2, 3, "demo"), {3, 7})
        True
    """
    return any(n in lines for n in range(mutation.lineno, mutation.end_lineno + 1))


@dataclass(frozen=True)
class Token:
    """A significant token found by `tokens_between`: an operator, keyword, bracket or punctuation."""

    text: str
    start: int
    end: int


_OPERATORS = sorted(
    "** // << >> <= >= == != -> := += -= *= /= %= @= &= |= ^= **= //= <<= >>= ... "
    "+ - * / % @ & | ^ ~ < > = . ! ( ) [ ] { } , : ;".split(),
    key=len,
    reverse=True,
)
_WORD = re.compile(r"\w+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BRACKETS = frozenset("()[]{}")


def tokens_between(source: str, start: int, end: int) -> list[Token]:
    """Return the significant tokens in a gap between two ast nodes, e.g. the operator of a `BinOp`.

    A gap between adjacent child nodes holds only whitespace, line continuations, comments, brackets and
    the parent's own keywords or operator symbols, so a small scanner is enough (and, unlike `tokenize`,
    it accepts unbalanced brackets).

    Example:
        >>> [t.text for t in tokens_between("(a)  not  # c\\n in b", 2, 17)]
        [')', 'not', 'in']
    """
    tokens: list[Token] = []
    i = start
    while i < end:
        ch = source[i]
        if ch.isspace() or ch == "\\":
            i += 1
        elif ch == "#":
            brk = _LINE_BREAK.search(source, i, end)
            i = brk.start() if brk else end
        elif ch.isalnum() or ch == "_" or not ch.isascii():
            word = _WORD.match(source, i, end)
            j = word.end() if word and word.end() > i else i + 1
            tokens.append(Token(source[i:j], i, j))
            i = j
        else:
            op = next((op for op in _OPERATORS if source.startswith(op, i) and i + len(op) <= end), ch)
            tokens.append(Token(op, i, i + len(op)))
            i += len(op)
    return tokens


def operator_span(source: str, start: int, end: int) -> tuple[int, int, str] | None:
    """Locate the operator between two operands: ``(start, end, text)`` with brackets left out.

    Multi-word operators (``not in``, ``is not``) span their words and whatever lies between them; the
    returned text is normalised to single spaces.

    Example:
        >>> operator_span("(a) is  not b", 2, 12)
        (4, 11, 'is not')
    """
    words = [t for t in tokens_between(source, start, end) if t.text not in _BRACKETS]
    if not words:
        return None
    return words[0].start, words[-1].end, " ".join(t.text for t in words)


def is_docstring(stmt: ast.AST) -> bool:
    """Whether ``stmt`` is a bare string-literal expression statement (a docstring when it comes first)."""
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def is_guard(stmt: ast.AST) -> bool:
    """Whether ``stmt`` is ``if __name__ == "__main__":`` or ``if TYPE_CHECKING:`` (never mutated)."""
    if not isinstance(stmt, ast.If):
        return False
    test = stmt.test
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
        return True
    if isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
        return True
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        sides = [test.left, test.comparators[0]]
        names = [s.id for s in sides if isinstance(s, ast.Name)]
        consts = [s.value for s in sides if isinstance(s, ast.Constant)]
        return names == ["__name__"] and consts == ["__main__"]
    return False


def int_value(node: ast.AST) -> int | None:
    """The value of an integer literal, including a negated one such as ``-1``; ``None`` otherwise.

    Example:
        >>> int_value(ast.parse("-0x10", mode="eval").body), int_value(ast.parse("True", mode="eval").body)
        (-16, None)
    """
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = int_value(node.operand)
        return None if inner is None or isinstance(node.operand, ast.UnaryOp) else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def format_int(value: int, original: str) -> str:
    """Write ``value`` in the base (and hex letter case) of the literal text ``original``.

    Example:
        >>> format_int(256, "0xFF"), format_int(-1, "0"), format_int(8, "0o7"), format_int(1000, "999")
        ('0x100', '-1', '0o10', '1000')
    """
    sign = "-" if value < 0 else ""
    literal = original.lstrip("-+ \t").lower()
    for prefix, spec in (("0x", "x"), ("0o", "o"), ("0b", "b")):
        if literal.startswith(prefix):
            digits = format(abs(value), spec)
            if any(c.isupper() for c in original[2:]):
                digits = digits.upper()
            return f"{sign}{original.lstrip('-+ ')[:2]}{digits}"
    return str(value)


_LOOSE = (ast.BoolOp, ast.Compare, ast.IfExp, ast.Lambda, ast.NamedExpr, ast.Yield, ast.YieldFrom)
_LOOSE_OPS = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)


def binds_looser_than_sum(node: ast.AST) -> bool:
    """Whether ``node``'s text needs parentheses before ``+ 1`` is appended to it."""
    if isinstance(node, _LOOSE):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    return isinstance(node, ast.BinOp) and isinstance(node.op, _LOOSE_OPS)


def last_line(node: ast.AST) -> int:
    """The 1-based last line of a node with a position (``end_lineno`` is typed optional)."""
    end = getattr(node, "end_lineno", None)
    return end if end is not None else node.lineno  # type: ignore[attr-defined, no-any-return]


def snippet(text: str, width: int = 40) -> str:
    """A one-line, shortened rendering of source text for descriptions."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


_CACHE: list[SourceMap] = []


class SourceMap:
    """Offsets, parents, scopes and mutable nodes of one parsed module (build it with `SourceMap.of`)."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self._line_starts = [0]
        self._line_starts.extend(m.end() for m in _LINE_BREAK.finditer(source))
        self._ascii = [self.line_text(n).isascii() for n in range(1, len(self._line_starts) + 1)]
        self.parent: dict[ast.AST, ast.AST] = {}
        """Parent of every node with a position (and of ``arguments``/``comprehension`` nodes)."""
        self.nodes: list[ast.AST] = []
        """Nodes worth mutating, in depth-first order, without the regions listed in the module doc."""
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        """Every function definition among `nodes`."""
        self._label: dict[ast.AST, str] = {}
        self._qualname: dict[ast.AST, str] = {}
        self._window_ok: dict[tuple[int, ...], bool] = {}
        self._windows_at: dict[tuple[int, int], list[tuple[tuple[int, ...], int, int, ast.stmt | None]]] = {}
        self._blocks: dict[int, tuple[list[int], list[int], list[int], list[int]]] = {}
        self._walk()

    @classmethod
    def of(cls, source: str, tree: ast.Module) -> SourceMap:
        """The map of ``source`` parsed as ``tree``, reused while the same pair is asked for."""
        for cached in _CACHE:
            if cached.tree is tree and cached.source == source:
                return cached
        made = cls(source, tree)
        _CACHE[:] = [made, *_CACHE[:3]]
        return made

    # ---- positions -------------------------------------------------------------------------------

    def line_start(self, lineno: int) -> int:
        """Offset of the first character of line ``lineno`` (1-based)."""
        return self._line_starts[lineno - 1]

    def line_end(self, lineno: int) -> int:
        """Offset just past line ``lineno``, its line break included."""
        return self._line_starts[lineno] if lineno < len(self._line_starts) else len(self.source)

    def line_text(self, lineno: int) -> str:
        """Line ``lineno`` with its line break."""
        return self.source[self.line_start(lineno) : self.line_end(lineno)]

    def line_of(self, offset: int) -> int:
        """The 1-based line holding character ``offset``."""
        return bisect.bisect_right(self._line_starts, offset)

    def offset(self, lineno: int, col_offset: int) -> int:
        """Convert an ast position (``col_offset`` counts UTF-8 bytes) to a str offset."""
        start = self.line_start(lineno)
        if self._ascii[lineno - 1]:
            return start + col_offset
        return start + len(self.line_text(lineno).encode("utf-8")[:col_offset].decode("utf-8"))

    def start(self, node: ast.AST) -> int:
        """Str offset of ``node``'s first character."""
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        """Str offset just past ``node``'s last character."""
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def span(self, node: ast.AST) -> tuple[int, int]:
        """``(start, end)`` str offsets of ``node``."""
        return self.start(node), self.end(node)

    def text(self, node: ast.AST) -> str:
        """The source text of ``node`` (without enclosing parentheses)."""
        return self.source[self.start(node) : self.end(node)]

    def indent(self, stmt: ast.AST) -> str | None:
        """The text before ``stmt`` on its first line when that is whitespace only, else ``None``."""
        before = self.source[self.line_start(stmt.lineno) : self.start(stmt)]  # type: ignore[attr-defined]
        return before if before.strip() == "" else None

    def own_lines(self, stmt: ast.stmt) -> tuple[int, int] | None:
        """``(start, end)`` of the full lines of ``stmt`` when nothing but a comment shares them."""
        if self.indent(stmt) is None:
            return None
        after = self.source[self.end(stmt) : self.line_end(last_line(stmt))].strip()
        if after and not after.startswith("#"):
            return None
        return self.line_start(stmt.lineno), self.line_end(last_line(stmt))

    def newline(self, lineno: int) -> str:
        """The line break that ends line ``lineno`` (``"\\n"`` when it has none)."""
        brk = _LINE_BREAK.search(self.line_text(lineno))
        return brk.group() if brk else "\n"

    # ---- structure -------------------------------------------------------------------------------

    def visible(self, node: ast.AST) -> bool:
        """Whether ``node`` is among `nodes` (not in a docstring, annotation, f-string or guard block)."""
        return node in self._visible

    def label(self, node: ast.AST) -> str:
        """Where ``node`` lives: ``"Parser.parse()"``, ``"class Parser"`` or ``"module scope"``."""
        return self._label.get(node, "module scope")

    def qualname(self, func: ast.AST) -> str:
        """The ``__qualname__`` of a function or class node among `nodes`."""
        return self._qualname[func]

    def block_of(self, stmt: ast.stmt) -> list[ast.stmt]:
        """The statement list (``body``, ``orelse``, ...) of the parent that holds ``stmt``."""
        owner = self.parent[stmt]
        for _, value in ast.iter_fields(owner):
            if isinstance(value, list) and any(item is stmt for item in value):
                return value
        raise LookupError(f"{stmt!r} is not in a statement list of {owner!r}")

    def _walk(self) -> None:
        stack: list[tuple[ast.AST, str, str]] = [(self.tree, "module scope", "")]
        while stack:
            node, label, prefix = stack.pop()
            if node is not self.tree:
                self.nodes.append(node)
                self._label[node] = label
            if isinstance(node, ast.JoinedStr):
                continue  # positions inside f-strings are unreliable before Python 3.12
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._qualname[node] = prefix + node.name
                self.functions.append(node)
                label, prefix = f"{prefix}{node.name}()", f"{prefix}{node.name}.<locals>."
            elif isinstance(node, ast.ClassDef):
                self._qualname[node] = prefix + node.name
                label, prefix = f"class {prefix}{node.name}", f"{prefix}{node.name}."
            children = list(_children(node))
            for child in children:
                self.parent[child] = node
            stack.extend((child, label, prefix) for child in reversed(children))
        self._visible = set(self.nodes)

    # ---- building and checking mutations ---------------------------------------------------------

    def mutation(self, family: str, start: int, end: int, replacement: str, description: str) -> Mutation:
        """A `Mutation` of ``source[start:end]``, its line numbers derived from the offsets."""
        last = max(start, end - 1)
        return Mutation(family, start, end, replacement, self.line_of(start), self.line_of(last), description)

    def finish(self, mutations: Iterable[Mutation], lines: Container[int] | None = None) -> list[Mutation]:
        """Drop duplicates, edits that change nothing or break parsing and, when ``lines`` is given,
        edits that touch none of those lines; sort the rest by position."""
        seen: set[tuple[int, int, str]] = set()
        kept: list[Mutation] = []
        for m in mutations:
            key = (m.start, m.end, m.replacement)
            if key in seen or self.source[m.start : m.end] == m.replacement:
                continue
            if lines is not None and not touches(m, lines):
                continue
            seen.add(key)
            if self.parses(m):
                kept.append(m)
        kept.sort(key=lambda m: (m.start, m.end))
        return kept

    def parses(self, m: Mutation) -> bool:
        """Whether ``m.apply(source)`` parses.

        Re-parsing a whole module per candidate is slow, so the edit is applied to the innermost window
        around it that parses on its own and that window is parsed instead: the full lines of a block of
        statements, of a statement, or of a compound statement's header (given a ``pass`` body). The
        module is the last resort.
        """
        span = (m.start, m.end)
        if span not in self._windows_at:
            self._windows_at[span] = self._windows(*span)
        for key, lo, hi, body in reversed(self._windows_at[span]):
            if self._window_parses(key, lo, hi, body, None):
                return self._window_parses(key, lo, hi, body, m)
        return _parses(m.apply(self.source))

    def _windows(self, start: int, end: int) -> list[tuple[tuple[int, ...], int, int, ast.stmt | None]]:
        """Windows around ``[start, end)``, outermost first: ``(cache key, lo, hi, body stand-in)``.

        At each depth: the run of sibling statements whose lines the edit touches, widened by one
        sibling each way (so a deleted statement leaves a neighbour); then the statement that holds the
        edit; then, when the edit lies in it, that statement's header.
        """
        windows: list[tuple[tuple[int, ...], int, int, ast.stmt | None]] = []
        blocks: list[list[ast.stmt]] = [self.tree.body]
        last_char = max(start, end - 1)
        while True:
            found = None
            for block in blocks:
                if block:
                    los, his, starts, ends = self._block_positions(block)
                    if los[0] <= start and end <= his[-1]:
                        found = block
                        break
            if found is None:
                return windows
            block = found
            first_i, last_i = bisect.bisect_right(his, start), bisect.bisect_right(los, last_char) - 1
            if first_i <= last_i:
                first, last = max(first_i - 1, 0), min(last_i + 1, len(block) - 1)
                if self.indent(block[first]) is not None:
                    windows.append(((id(block[first]), id(block[last])), los[first], his[last], None))
            k = bisect.bisect_right(starts, start) - 1
            if k < 0 or ends[k] < end or (start <= starts[k] and ends[k] <= end):
                return windows
            stmt = block[k]
            windows.append(((id(stmt),), los[k], his[k], None))
            header = _header_end(self, stmt)
            if header is not None and end <= header:
                windows.append(((id(stmt), 0), los[k], header, stmt.body[0]))  # type: ignore[attr-defined]
            blocks = list(_blocks(stmt))

    def _block_positions(self, block: list[ast.stmt]) -> tuple[list[int], list[int], list[int], list[int]]:
        """Line starts, line ends, starts and ends of a block's statements (cached)."""
        key = id(block[0])
        if key not in self._blocks:
            self._blocks[key] = (
                [self.line_start(s.lineno) for s in block],
                [self.line_end(last_line(s)) for s in block],
                [self.start(s) for s in block],
                [self.end(s) for s in block],
            )
        return self._blocks[key]

    def _window_parses(
        self, key: tuple[int, ...], lo: int, hi: int, body: ast.stmt | None, m: Mutation | None
    ) -> bool:
        if m is None and key in self._window_ok:
            return self._window_ok[key]
        text = self.source[lo:hi]
        if m is not None:
            text = text[: m.start - lo] + m.replacement + text[m.end - lo :]
        if body is not None:
            text += f"{self.indent(body)}pass\n"
        if text[:1].isspace():
            text = "if 1:\n" + text
        ok = _parses(text)
        if m is None:
            self._window_ok[key] = ok
        return ok


def _children(node: ast.AST) -> Iterator[ast.AST]:
    docstring_owner = isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    for field, value in ast.iter_fields(node):
        if field in ("annotation", "returns", "type_params"):
            continue
        items = value if isinstance(value, list) else [value]
        if field == "body" and docstring_owner and items and is_docstring(items[0]):
            items = items[1:]
        for item in items:
            if isinstance(item, ast.AST) and not isinstance(item, _POSITIONLESS) and not is_guard(item):
                yield item


_POSITIONLESS = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list):
            yield block
    for sub in getattr(stmt, "handlers", []) + getattr(stmt, "cases", []):
        yield sub.body


def _header_end(sm: SourceMap, stmt: ast.stmt) -> int | None:
    """Start of the line of ``stmt``'s first body statement, when that line holds nothing else."""
    body = getattr(stmt, "body", None)
    if not isinstance(stmt, _HEADED) or not body or body[0].lineno <= stmt.lineno:
        return None
    return sm.line_start(body[0].lineno) if sm.indent(body[0]) is not None else None


_HEADED = (
    ast.If,
    ast.While,
    ast.For,
    ast.AsyncFor,
    ast.With,
    ast.AsyncWith,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)


def _parses(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. invalid escapes already in the file
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            return False
    return True


# ---- edits shared by several families -------------------------------------------------------------


def shifted(sm: SourceMap, node: ast.expr, delta: int) -> tuple[int, int, str]:
    """An edit that adds ``delta`` to the value of expression ``node``: ``(start, end, replacement)``.

    Integer literals are rewritten (``0`` -> ``1``), a trailing ``+ c`` / ``- c`` is adjusted or dropped
    (``len(x) - 1`` -> ``len(x)``), anything else gets ``+ 1`` / ``- 1`` appended, parenthesised when needed.

    Example:
        >>> src = "x[len(a) - 1]"
        >>> sm = SourceMap.of(src, ast.parse(src))
        >>> node = sm.tree.body[0].value.slice
        >>> [src[:s] + r + src[e:] for s, e, r in (shifted(sm, node, 1), shifted(sm, node, -1))]
        ['x[len(a)]', 'x[len(a) - 2]']
    """
    start, end = sm.span(node)
    value = int_value(node)
    if value is not None:
        return start, end, format_int(value + delta, sm.text(node))
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub))
        and isinstance(node.right, ast.Constant)
        and type(node.right.value) is int
    ):
        constant = node.right.value if isinstance(node.op, ast.Add) else -node.right.value
        found = operator_span(sm.source, sm.end(node.left), sm.start(node.right))
        if found is not None:
            op_start, op_end, _ = found
            closers = tokens_between(sm.source, sm.end(node.left), op_start)
            lo = closers[-1].end if closers else sm.end(node.left)
            new = constant + delta
            if new == 0:
                return lo, end, ""
            space = " " if sm.source[op_end : op_end + 1].isspace() else ""
            sign = "+" if new > 0 else "-"
            return lo, end, f"{sm.source[lo:op_start]}{sign}{space}{abs(new)}"
    text = sm.text(node)
    if binds_looser_than_sum(node):
        text = f"({text})"
    return start, end, f"{text} {'+' if delta > 0 else '-'} {abs(delta)}"


def shift_both(sm: SourceMap, family: str, node: ast.expr, what: str) -> list[Mutation]:
    """The `shifted` edits of ``node`` by ``+1`` and ``-1`` as mutations described as ``what``."""
    out = []
    for delta in (1, -1):
        start, end, new = shifted(sm, node, delta)
        after = sm.source[sm.start(node) : start] + new + sm.source[end : sm.end(node)]
        description = f"{what} `{sm.text(node)}` -> `{after}` in {sm.label(node)}"
        out.append(sm.mutation(family, start, end, new, description))
    return out


def removal(sm: SourceMap, stmt: ast.stmt) -> tuple[int, int, str] | None:
    """An edit that deletes ``stmt``: ``(start, end, replacement)``, or ``None`` when it cannot.

    A statement alone on its lines loses those whole lines; one that shares a line with ``;`` loses its
    text and separator. A block that would become empty gets ``pass`` instead.
    """
    block = sm.block_of(stmt)
    only = len(block) == 1
    lines = sm.own_lines(stmt)
    if lines is not None:
        if not only:
            return lines[0], lines[1], ""
        old = sm.source[lines[0] : lines[1]]
        brk = _LINE_BREAK.search(old, len(old.rstrip("\r\n")))
        return lines[0], lines[1], f"{sm.indent(stmt)}pass{brk.group() if brk else ''}"
    i = next(i for i, s in enumerate(block) if s is stmt)
    if i + 1 < len(block) and block[i + 1].lineno == stmt.end_lineno:
        return sm.start(stmt), sm.start(block[i + 1]), ""
    if i > 0 and block[i - 1].end_lineno == stmt.lineno:
        return sm.end(block[i - 1]), sm.end(stmt), ""
    return (*sm.span(stmt), "pass") if only else None


def string_literal(original: str, value: str) -> str:
    """Write ``value`` as a literal with the prefix and quote character of the literal text ``original``.

    Example:
        >>> string_literal("r'a+'", "b"), string_literal('"x"', 'say "hi"')
        ("r'b'", '\\'say "hi"\\'')
    """
    prefix = ""
    while len(prefix) < len(original) and original[len(prefix)].isalpha():
        prefix += original[len(prefix)]
    quote = original[len(prefix) : len(prefix) + 1] or "'"
    if quote in value or "\\" in value or not value.isprintable():
        return ("b" if "b" in prefix.lower() else "") + repr(value)
    return f"{prefix}{quote}{value}{quote}"


def is_range_call(node: ast.AST) -> TypeGuard[ast.Call]:
    """Whether ``node`` is ``range(...)`` with one to three plain positional arguments."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and 1 <= len(node.args) <= 3
        and not node.keywords
        and not any(isinstance(a, ast.Starred) for a in node.args)
    )


def range_bounds(call: ast.Call) -> list[ast.expr]:
    """The start and stop arguments of a `is_range_call` call (the step is not a bound)."""
    return call.args[:1] if len(call.args) == 1 else call.args[:2]


def is_loop_iter(sm: SourceMap, node: ast.AST) -> bool:
    """Whether ``node`` is what a ``for`` statement or comprehension iterates over."""
    owner = sm.parent.get(node)
    return isinstance(owner, (ast.For, ast.AsyncFor, ast.comprehension)) and owner.iter is node


_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def while_bounds(loop: ast.While) -> list[ast.Compare]:
    """The single ordering comparisons (``i < n``) that bound a ``while`` loop, alone or and-ed."""
    tests = loop.test.values if isinstance(loop.test, ast.BoolOp) else [loop.test]
    return [
        t for t in tests if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], _ORDERING)
    ]


_NEW_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def scope_nodes(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Nodes of ``func``'s body in its own scope: nested defs, lambdas and comprehensions are yielded
    but not entered."""
    stack: list[ast.AST] = list(reversed(func.body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NEW_SCOPES):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def chain_key(node: ast.AST) -> str | None:
    """``x``, ``self.a.b`` for a name or attribute chain; the chain's key for an item of it (``x[k]`` -> ``x``);
    None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = chain_key(node.value)
        return f"{inner}.{node.attr}" if inner else None
    if isinstance(node, ast.Subscript):
        return chain_key(node.value)
    return None


def bound_before(func: ast.AST, line: int) -> set[str]:
    """Names ``func`` binds before ``line``: its parameters and every name stored on an earlier line."""
    a = func.args  # type: ignore[attr-defined]
    out = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p}
    out.update(n.id for n in ast.walk(func) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
               and n.lineno < line)
    return out
