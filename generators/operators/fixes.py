"""candidate_fixes: local edits that could undo a bug on known lines, for a no-model repair agent.

A family is *self-inverse* when, for each of its mutations, the family's candidates on the mutated
source include one that restores the original (or an equivalent) text. Those families are searched in
full on the suspect lines:

- exactly: comparison_flip, boolean_op_swap, arithmetic_op_swap, negated_condition (a ``not`` is added or
  removed), swapped_if_else, swapped_call_args, off_by_one_constant, wrong_variable;
- up to equivalence: loop_bound and slice_range_off_by_one (``range(1, n)`` steps back to
  ``range(0, n)``, ``x[1:n]`` to ``x[0:n]``);
- for part of the family: changed_default_arg (numbers and booleans) and dict_key_or_attribute (when the
  original name is still in the module's vocabulary and among the closest alternatives).

Explicit inverses cover the rest where that is cheap: deleting a ``return`` (undoes early_return's
insertion), a default back to ``None`` (undoes changed_default_arg's ``None`` -> value), dropping a ``-1``
slice upper bound (undoes slice_range_off_by_one's insertion) and exception_handling's type swaps.
removed_statement, the try/raise removals of exception_handling, string defaults and early_return's
converted assignment have no cheap inverse.

Example:
    >>> buggy = "def last(xs):\\n    return xs[len(xs) - 2]\\n"
    >>> fixed = "def last(xs):\\n    return xs[len(xs) - 1]\\n"
    >>> any(m.apply(buggy) == fixed for m in candidate_fixes(buggy, {2}))
    True
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Container

from . import (
    arithmetic_op_swap,
    boolean_op_swap,
    changed_default_arg,
    comparison_flip,
    dict_key_or_attribute,
    exception_handling,
    loop_bound,
    negated_condition,
    off_by_one_constant,
    slice_range_off_by_one,
    swapped_call_args,
    swapped_if_else,
    wrong_variable,
)
from .base import Finder, Mutation, SourceMap, int_value, node_touches, removal, snippet

_SEARCHED: dict[str, Finder] = {
    arithmetic_op_swap.FAMILY: arithmetic_op_swap.find,
    boolean_op_swap.FAMILY: boolean_op_swap.find,
    changed_default_arg.FAMILY: changed_default_arg.find,
    comparison_flip.FAMILY: comparison_flip.find,
    dict_key_or_attribute.FAMILY: functools.partial(
        dict_key_or_attribute.find, limit=dict_key_or_attribute.FIX_ALTERNATIVES
    ),
    loop_bound.FAMILY: loop_bound.find,
    negated_condition.FAMILY: negated_condition.find,
    off_by_one_constant.FAMILY: off_by_one_constant.find,
    slice_range_off_by_one.FAMILY: slice_range_off_by_one.find,
    swapped_call_args.FAMILY: swapped_call_args.find,
    swapped_if_else.FAMILY: swapped_if_else.find,
    wrong_variable.FAMILY: wrong_variable.find,
}

SELF_INVERSE: frozenset[str] = frozenset(_SEARCHED)
"""Families whose own candidates undo their mutations (in full or in part, see the module doc)."""


def _explicit_inverses(sm: SourceMap, lines: Container[int]) -> list[Mutation]:
    found = exception_handling.type_swaps(sm.source, sm.tree, lines=lines)
    for node in sm.nodes:
        if not isinstance(node, (ast.Return, ast.arguments, ast.Slice)):
            continue
        if not isinstance(node, ast.arguments) and not node_touches(node, lines):
            continue
        where = sm.label(node)
        if isinstance(node, ast.Return):
            edit = removal(sm, node)
            if edit is not None:
                found.append(
                    sm.mutation("removed_statement", *edit, f"removed `{snippet(sm.text(node))}` in {where}")
                )
        elif isinstance(node, ast.arguments):
            for arg, default in changed_default_arg.defaults(node):
                if not (isinstance(default, ast.Constant) and default.value is None):
                    description = f"default of `{arg.arg}` `{snippet(sm.text(default))}` -> `None` in {where}"
                    found.append(
                        sm.mutation(changed_default_arg.FAMILY, *sm.span(default), "None", description)
                    )
        elif isinstance(node, ast.Slice) and node.upper is not None and int_value(node.upper) == -1:
            found.append(
                sm.mutation(
                    slice_range_off_by_one.FAMILY,
                    *sm.span(node.upper),
                    "",
                    f"slice upper bound `-1` -> `` in {where}",
                )
            )
    return found


def candidate_fixes(source: str, lines: Container[int]) -> list[Mutation]:
    """Edits on ``lines`` that could undo a bug injected there, sorted by position.

    Args:
        source: The (buggy) Python source; it must parse.
        lines: 1-based lines suspected to hold the bug; an edit qualifies when its site touches one.

    Returns:
        Distinct, parsing edits: every candidate of the `SELF_INVERSE` families plus the explicit
        inverses listed in the module doc.
    """
    tree = ast.parse(source)
    sm = SourceMap.of(source, tree)
    found = [m for find in _SEARCHED.values() for m in find(source, tree, lines=lines)]
    return sm.finish(found + _explicit_inverses(sm, lines), lines)
