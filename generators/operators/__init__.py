"""Mutation operators: small, local, parse-preserving bug injections into Python source.

Each family lives in its own module exposing ``FAMILY`` and ``find(source, tree)``, which returns every
candidate `Mutation` in source order. Every candidate parses, differs from the input only inside
``[start, end)``, and leaves docstrings, annotations, f-string internals and
``if __name__ == "__main__"`` / ``if TYPE_CHECKING`` blocks alone. A list of mutations holds
alternatives: each applies to the original source, not on top of the others.

Example:
    >>> import random
    >>> source = "def clamp(x, lo, hi):\\n    if x < lo:\\n        return lo\\n    return min(x, hi)\\n"
    >>> [m.description for m in find_mutations(source, families=["comparison_flip"])]
    ['`<` -> `<=` in clamp()', '`<` -> `>` in clamp()']
    >>> m = sample_mutations(source, random.Random(0), k=1, lines={2})[0]
    >>> m.lineno
    2
    >>> enclosing_function(source, 3)
    ('clamp', 1, 4)
"""

from __future__ import annotations

import ast
import difflib
import importlib
import pkgutil
import random
from collections.abc import Container, Iterable

from .base import Finder, Mutation, touches
from .fixes import SELF_INVERSE, candidate_fixes

_HELPERS = frozenset({"base", "fixes"})
# Every other module of this package is one family (a ``FAMILY`` name and a ``find``): adding a family is
# adding a file.
_MODULES = tuple(
    importlib.import_module(f"{__name__}.{m.name}")
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if m.name not in _HELPERS
)

FAMILIES: dict[str, Finder] = {m.FAMILY: m.find for m in sorted(_MODULES, key=lambda m: m.FAMILY)}
"""Every mutation family's ``find(source, tree, *, lines=None)``, by name, sorted by name."""


def resolve_families(families: Iterable[str] | None) -> list[str]:
    """The family names to run, in `FAMILIES` order; all of them for ``None``.

    Raises:
        ValueError: for an unknown name, suggesting the closest valid one.
        TypeError: for a bare string, which would be read as a sequence of letters.
    """
    if families is None:
        return list(FAMILIES)
    if isinstance(families, str):
        raise TypeError(
            f"families must be an iterable of family names, not the string {families!r}; "
            f"pass [{families!r}] instead."
        )
    chosen = set(families)
    for name in sorted(chosen):
        if name not in FAMILIES:
            close = difflib.get_close_matches(name, FAMILIES, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"Unknown mutation family {name!r}.{hint} Valid families: {', '.join(FAMILIES)}."
            )
    return [name for name in FAMILIES if name in chosen]


def find_mutations(
    source: str,
    families: Iterable[str] | None = None,
    lines: Container[int] | None = None,
) -> list[Mutation]:
    """Every candidate mutation of ``source``, sorted by position (family order breaks ties).

    Args:
        source: Python source text; it must parse (a `SyntaxError` propagates).
        families: Names from `FAMILIES` to run; all of them when ``None``.
        lines: Keep only mutations whose site spans one of these 1-based lines.

    Example:
        >>> [m.replacement for m in find_mutations("x = a + 1\\n", families=["arithmetic_op_swap"])]
        ['-']
    """
    chosen = resolve_families(families)
    tree = ast.parse(source)
    found = [m for name in chosen for m in FAMILIES[name](source, tree, lines=lines)]
    found.sort(key=lambda m: (m.start, m.end))
    return found


def sample_mutations(
    source: str,
    rng: random.Random,
    k: int,
    *,
    families: Iterable[str] | None = None,
    lines: Container[int] | None = None,
) -> list[Mutation]:
    """Draw up to ``k`` distinct mutations, balanced across families; deterministic for a seeded ``rng``.

    Each draw picks a family uniformly among those with candidates left, then one of its candidates,
    so a family with many sites (wrong_variable) does not crowd out the others.

    Args:
        source: Python source text.
        rng: The random source; seed it for reproducible draws.
        k: How many mutations to draw; fewer come back when fewer exist.
        families: As in `find_mutations`.
        lines: As in `find_mutations`.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}; pass how many mutations to draw.")
    pools: dict[str, list[Mutation]] = {}
    for m in find_mutations(source, families=families, lines=lines):
        pools.setdefault(m.family, []).append(m)
    drawn: list[Mutation] = []
    while len(drawn) < k and pools:
        family = rng.choice(sorted(pools))
        pool = pools[family]
        drawn.append(pool.pop(rng.randrange(len(pool))))
        if not pool:
            del pools[family]
    return drawn


def enclosing_function(source_or_tree: str | ast.Module, lineno: int) -> tuple[str, int, int] | None:
    """The innermost function around line ``lineno``: ``(qualname, def line, last line)``, or ``None``.

    The first line is the ``def`` line (decorators are not counted); qualified names follow
    ``__qualname__`` (``Outer.method``, ``outer.<locals>.inner``).

    Example:
        >>> enclosing_function("class A:\\n    def m(self):\\n        return 1\\n", 3)
        ('A.m', 2, 3)
    """
    tree = ast.parse(source_or_tree) if isinstance(source_or_tree, str) else source_or_tree
    best: tuple[str, int, int] | None = None
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                inside = child.lineno <= lineno <= child.end_lineno  # type: ignore[operator]
                if not inside:
                    continue
                if isinstance(child, ast.ClassDef):
                    stack.append((child, name + "."))
                else:
                    best = (name, child.lineno, child.end_lineno)  # type: ignore[assignment]
                    stack.append((child, name + ".<locals>."))
            elif isinstance(child, ast.stmt) or isinstance(child, (ast.excepthandler, ast.match_case)):
                stack.append((child, prefix))
    return best


__all__ = [
    "MULTI_LINE_FAMILIES",
    "FAMILIES",
    "Finder",
    "SELF_INVERSE",
    "Mutation",
    "candidate_fixes",
    "enclosing_function",
    "find_mutations",
    "resolve_families",
    "sample_mutations",
    "touches",
]


MULTI_LINE_FAMILIES = ("duplicated_branch_body", "wrong_variable_in_block", "dropped_else_branch",
                       "misplaced_accumulator_reset", "moved_loop_update", "missing_state_update",
                       "repeated_comparison_flip", "swapped_blocks")
"""The families whose bugs span lines (issue 22); no candidate edit undoes one of their bugs."""

HARD_FAMILIES = ("dropped_guard", "missing_branch", "reordered_statements", "unforwarded_argument")
"""The families none of whose registered bugs one candidate edit undoes (``benchmarks/one_edit_undo.py``): what
``generators/harden.py`` anchors combined tasks on by default."""
