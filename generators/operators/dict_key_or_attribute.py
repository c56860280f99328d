"""dict_key_or_attribute: use the wrong string key or attribute name.

A string subscript key (``row["name"]``) becomes another string key of the module: subscripted on the
same object text first (``.get("k")`` / ``.pop("k")`` / ``.setdefault("k")`` count), then any subscript
or dict-literal key. An attribute (``self.width``) becomes another attribute used on the same object
text elsewhere in the module (``self.height``); ``self`` and ``cls`` mean the enclosing class, whose
methods and class attributes count too. Dunder names are left alone. Within each group the closest spellings
come first (`difflib`), and at most `ALTERNATIVES` are offered per site. Self-inverse when the original
name is still part of that vocabulary and close enough to make the cut (candidate_fixes offers
`FIX_ALTERNATIVES`).

Example:
    >>> import ast
    >>> src = "def area(self):\\n    return self.width * self.height\\n"
    >>> [m.apply(src).splitlines()[1] for m in find(src, ast.parse(src))]
    ['    return self.height * self.height', '    return self.width * self.width']
"""

from __future__ import annotations

import ast
import difflib
from collections import defaultdict
from collections.abc import Container

from .base import Mutation, SourceMap, node_touches, string_literal

FAMILY = "dict_key_or_attribute"

ALTERNATIVES = 3
"""How many replacement names `find` offers per site by default."""

FIX_ALTERNATIVES = 10
"""How many replacement names candidate_fixes asks for per site."""

_KEY_METHODS = frozenset({"get", "pop", "setdefault"})


def _ranked(name: str, near: set[str], far: set[str], limit: int | None) -> list[str]:
    matcher = difflib.SequenceMatcher(None, "", name)

    def closeness(other: str) -> tuple[float, str]:
        matcher.set_seq1(other)
        return -matcher.ratio(), other

    ranked = sorted(near - {name}, key=closeness) + sorted(far - near - {name}, key=closeness)
    return ranked if limit is None else ranked[:limit]


def _attribute_name_start(sm: SourceMap, node: ast.Attribute) -> int:
    end = sm.end(node)
    start = end
    while start > 0 and ("a" + sm.source[start - 1]).isidentifier():
        start -= 1
    return start


def _base(sm: SourceMap, node: ast.expr) -> str:
    return " ".join(sm.text(node).split())


def _is_name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is str


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _class_members(cls: ast.ClassDef) -> set[str]:
    names = set()
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if not _is_dunder(n)}


def _enclosing_class(sm: SourceMap, node: ast.AST) -> ast.ClassDef | None:
    owner = sm.parent.get(node)
    while owner is not None and not isinstance(owner, ast.ClassDef):
        owner = sm.parent.get(owner)
    return owner


def _owner(sm: SourceMap, attribute: ast.Attribute) -> tuple[str, int]:
    """The object an attribute is read from: its text, and for ``self``/``cls`` the class it means."""
    base = _base(sm, attribute.value)
    cls = _enclosing_class(sm, attribute) if base in ("self", "cls") else None
    return base, id(cls) if cls is not None else 0


def find(
    source: str,
    tree: ast.Module,
    limit: int | None = ALTERNATIVES,
    *,
    lines: Container[int] | None = None,
) -> list[Mutation]:
    """All wrong-key and wrong-attribute edits in ``source``, in source order.

    Args:
        source: The module's text.
        tree: ``ast.parse(source)``.
        limit: Most replacement names per site; ``None`` for all of them.
        lines: Only sites that touch these 1-based lines, when given.
    """
    sm = SourceMap.of(source, tree)
    keys = [
        n
        for n in sm.nodes
        if isinstance(n, ast.Subscript) and _is_name(n.slice) and not isinstance(n.ctx, ast.Del)
    ]
    attributes = [
        n
        for n in sm.nodes
        if isinstance(n, ast.Attribute) and not _is_dunder(n.attr) and not isinstance(n.ctx, ast.Del)
    ]
    keys_on: dict[str, set[str]] = defaultdict(set)
    for n in keys:
        keys_on[_base(sm, n.value)].add(n.slice.value)  # type: ignore[attr-defined]
    all_keys: set[str] = set()
    for node in sm.nodes:
        if isinstance(node, ast.Dict):
            all_keys.update(k.value for k in node.keys if _is_name(k))  # type: ignore[union-attr]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _KEY_METHODS
            and node.args
            and _is_name(node.args[0])
        ):
            keys_on[_base(sm, node.func.value)].add(node.args[0].value)  # type: ignore[attr-defined]
    all_keys.update(*keys_on.values())
    attributes_on: dict[tuple[str, int], set[str]] = defaultdict(set)
    for a in attributes:
        attributes_on[_owner(sm, a)].add(a.attr)

    found: list[Mutation] = []
    rankings: dict[tuple[str, ...], list[str]] = {}  # many sites share a name and an object
    for n in keys:
        if not node_touches(n.slice, lines):
            continue
        key, base = n.slice.value, _base(sm, n.value)  # type: ignore[attr-defined]
        old = sm.text(n.slice)
        if ("key", key, base) not in rankings:
            rankings["key", key, base] = _ranked(key, keys_on[base], all_keys, limit)
        for other in rankings["key", key, base]:
            new = string_literal(old, other)
            description = f"key `[{old}]` -> `[{new}]` in {sm.label(n)}"
            found.append(sm.mutation(FAMILY, *sm.span(n.slice), new, description))
    for a in attributes:
        if not node_touches(a, lines):
            continue
        start = _attribute_name_start(sm, a)
        old = sm.source[start : sm.end(a)]
        owner = _owner(sm, a)
        rank_key = ("attribute", a.attr, *map(str, owner))
        if rank_key not in rankings:
            cls = _enclosing_class(sm, a) if owner[1] else None
            near = attributes_on[owner] | (_class_members(cls) if cls is not None else set())
            rankings[rank_key] = _ranked(a.attr, near, set(), limit)
        for other in rankings[rank_key]:
            description = f"attribute `.{old}` -> `.{other}` in {sm.label(a)}"
            found.append(sm.mutation(FAMILY, start, sm.end(a), other, description))
    return sm.finish(found, lines)
