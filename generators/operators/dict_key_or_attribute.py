"""dict_key_or_attribute: use the wrong string key or attribute name.

A string subscript key (``row["name"]``) becomes another string key subscripted elsewhere in the module;
keys subscripted on the same object text come first. An attribute (``self.width``) becomes another
attribute used on the same object text elsewhere in the module (``self.height``); dunder names are left
alone. Within each group the closest spellings come first (`difflib`), and at most `ALTERNATIVES` are
offered per site. Self-inverse as long as the original name is still used elsewhere in the module (pass
``limit=None`` to offer every alternative).

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

from .base import Mutation, SourceMap, string_literal

FAMILY = "dict_key_or_attribute"

ALTERNATIVES = 3
"""How many replacement names `find` offers per site by default."""


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


def find(source: str, tree: ast.Module, limit: int | None = ALTERNATIVES) -> list[Mutation]:
    """All wrong-key and wrong-attribute edits in ``source``, in source order.

    Args:
        source: The module's text.
        tree: ``ast.parse(source)``.
        limit: Most replacement names per site; ``None`` for all of them.
    """
    sm = SourceMap.of(source, tree)
    keys = [
        n
        for n in sm.nodes
        if isinstance(n, ast.Subscript)
        and isinstance(n.slice, ast.Constant)
        and type(n.slice.value) is str
        and not isinstance(n.ctx, ast.Del)
    ]
    attributes = [
        n
        for n in sm.nodes
        if isinstance(n, ast.Attribute)
        and not (n.attr.startswith("__") and n.attr.endswith("__"))
        and not isinstance(n.ctx, ast.Del)
    ]
    keys_on: dict[str, set[str]] = defaultdict(set)
    for n in keys:
        keys_on[_base(sm, n.value)].add(n.slice.value)  # type: ignore[attr-defined]
    all_keys = set().union(*keys_on.values())
    attributes_on: dict[str, set[str]] = defaultdict(set)
    for a in attributes:
        attributes_on[_base(sm, a.value)].add(a.attr)

    found: list[Mutation] = []
    rankings: dict[tuple[str, str, str], list[str]] = {}  # many sites share a name and an object
    for n in keys:
        key, base = n.slice.value, _base(sm, n.value)  # type: ignore[attr-defined]
        old = sm.text(n.slice)
        if ("key", key, base) not in rankings:
            rankings["key", key, base] = _ranked(key, keys_on[base], all_keys, limit)
        for other in rankings["key", key, base]:
            new = string_literal(old, other)
            description = f"key `[{old}]` -> `[{new}]` in {sm.label(n)}"
            found.append(sm.mutation(FAMILY, *sm.span(n.slice), new, description))
    for a in attributes:
        start = _attribute_name_start(sm, a)
        old = sm.source[start : sm.end(a)]
        base = _base(sm, a.value)
        if ("attribute", a.attr, base) not in rankings:
            rankings["attribute", a.attr, base] = _ranked(a.attr, attributes_on[base], set(), limit)
        for other in rankings["attribute", a.attr, base]:
            description = f"attribute `.{old}` -> `.{other}` in {sm.label(a)}"
            found.append(sm.mutation(FAMILY, start, sm.end(a), other, description))
    return sm.finish(found)
