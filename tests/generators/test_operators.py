"""Properties and public API of `frog_gym.generators.operators`.

The properties draw a source file from `operator_corpus.CORPUS` (stdlib modules plus hand-written
non-ASCII, CRLF and odd-layout snippets) and a candidate of one family, and check that the edit is local,
parses and is reproducible. Example-based tests of each family live in ``test_operator_families.py``.
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib
import random

import pytest
from frog_gym.generators import operators
from frog_gym.generators.operators import (
    FAMILIES,
    SELF_INVERSE,
    Mutation,
    candidate_fixes,
    enclosing_function,
    find_mutations,
    sample_mutations,
    touches,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operator_corpus import CORPUS, SNIPPETS, STDLIB

PROPERTY = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = sorted(SNIPPETS) + ["textwrap"]


@functools.cache
def parsed(name: str) -> ast.Module:
    return ast.parse(CORPUS[name])


@functools.cache
def found(family: str, name: str) -> tuple[Mutation, ...]:
    return tuple(FAMILIES[family](CORPUS[name], parsed(name)))


def line_of(source: str, offset: int) -> int:
    return source.count("\n", 0, offset) + 1


def same_tree(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


# ---- properties ------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@PROPERTY
@given(data=st.data())
def test_mutation_is_local_parses_and_differs(family: str, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from([n for n in sorted(CORPUS) if found(family, n)]), label="file")
    m = data.draw(st.sampled_from(found(family, name)), label="mutation")
    source = CORPUS[name]
    out = m.apply(source)

    assert m.family == family
    assert out != source and source[m.start : m.end] != m.replacement
    assert out[: m.start] == source[: m.start]
    assert out[m.start + len(m.replacement) :] == source[m.end :]
    assert (m.lineno, m.end_lineno) == (line_of(source, m.start), line_of(source, max(m.start, m.end - 1)))
    ast.parse(out)


@pytest.mark.parametrize("family", FAMILIES)
@PROPERTY
@given(data=st.data())
def test_lines_filter_matches_filtering_afterwards(family: str, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(SMALL), label="file")
    source = CORPUS[name]
    last = source.count("\n") + 1
    lines = data.draw(st.sets(st.integers(1, last), max_size=8), label="lines")
    restricted = FAMILIES[family](source, parsed(name), lines=lines)
    assert restricted == [m for m in found(family, name) if touches(m, lines)]


@pytest.mark.parametrize("family", FAMILIES)
def test_find_is_deterministic_and_in_source_order(family: str) -> None:
    for name in ("textwrap", "layout", "non_ascii", "crlf"):
        source = CORPUS[name]
        first = FAMILIES[family](source, ast.parse(source))
        assert first == FAMILIES[family](source, ast.parse(source))
        assert first == sorted(first, key=lambda m: (m.start, m.end))
        assert len({(m.start, m.end, m.replacement) for m in first}) == len(first)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_finds_sites_in_the_stdlib(family: str) -> None:
    assert any(found(family, name) for name in STDLIB)


@PROPERTY
@given(
    name=st.sampled_from(SMALL),
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(0, 12),
    family=st.sampled_from([None, *FAMILIES]),
)
def test_sampling_is_deterministic_for_a_seed(name: str, seed: int, k: int, family: str | None) -> None:
    families = None if family is None else [family]
    first = sample_mutations(CORPUS[name], random.Random(seed), k, families=families)
    assert first == sample_mutations(CORPUS[name], random.Random(seed), k, families=families)
    pool = find_mutations(CORPUS[name], families=families)
    assert len(first) == min(k, len(pool))
    assert len(set(first)) == len(first) and all(m in pool for m in first)


def _invertible(family: str, source: str, m: Mutation) -> bool:
    old = source[m.start : m.end]
    if family == "early_return":
        return m.start == m.end  # the inserted `return`, not the converted assignment
    if family == "changed_default_arg":
        return not old.endswith(("'", '"'))
    if family == "exception_handling":
        return old.isidentifier()  # a swapped exception type
    return family in SELF_INVERSE - {"dict_key_or_attribute", "loop_bound", "slice_range_off_by_one"}


INVERTED = sorted(SELF_INVERSE - {"dict_key_or_attribute", "loop_bound", "slice_range_off_by_one"}) + [
    "changed_default_arg",
    "early_return",
    "exception_handling",
]


@pytest.mark.parametrize("family", sorted(set(INVERTED)))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_candidate_fixes_undo_invertible_mutations(family: str, data: st.DataObject) -> None:
    names = [n for n in SMALL if any(_invertible(family, CORPUS[n], m) for m in found(family, n))]
    name = data.draw(st.sampled_from(names), label="file")
    source = CORPUS[name]
    m = data.draw(st.sampled_from([m for m in found(family, name) if _invertible(family, source, m)]))
    buggy = m.apply(source)
    lines = range(line_of(buggy, m.start), line_of(buggy, m.start + len(m.replacement)) + 1)

    fixes = candidate_fixes(buggy, lines)

    assert any(same_tree(fix.apply(buggy), source) for fix in fixes), m.description


# ---- find_mutations, sample_mutations, enclosing_function ------------------------------------------


def test_families_are_sorted_and_match_their_modules() -> None:
    assert list(FAMILIES) == sorted(FAMILIES) and len(FAMILIES) >= 14
    for name, find in FAMILIES.items():
        module = importlib.import_module(f"frog_gym.generators.operators.{name}")
        assert module.FAMILY == name and module.find is find


def test_unknown_family_suggests_the_closest_name() -> None:
    with pytest.raises(ValueError) as err:
        find_mutations("x = 1\n", families=["comparison_flp"])
    assert str(err.value) == (
        "Unknown mutation family 'comparison_flp'. Did you mean 'comparison_flip'? Valid families: "
        + ", ".join(FAMILIES)
        + "."
    )


def test_unknown_family_without_a_close_name() -> None:
    with pytest.raises(
        ValueError, match=r"^Unknown mutation family 'zzz'\. Valid families: arithmetic_op_swap"
    ):
        find_mutations("x = 1\n", families=["zzz"])


def test_a_bare_string_of_families_is_refused() -> None:
    with pytest.raises(TypeError) as err:
        find_mutations("x = 1\n", families="comparison_flip")
    assert str(err.value) == (
        "families must be an iterable of family names, not the string 'comparison_flip'; "
        "pass ['comparison_flip'] instead."
    )


def test_find_mutations_filters_by_family_and_line() -> None:
    source = "def f(a, b):\n    if a < b:\n        return a + 1\n    return b\n"
    everything = find_mutations(source)
    assert {m.family for m in everything} >= {"comparison_flip", "arithmetic_op_swap", "negated_condition"}
    assert everything == sorted(everything, key=lambda m: (m.start, m.end))
    on_line_3 = find_mutations(source, lines={3})
    assert on_line_3 and all(m.lineno <= 3 <= m.end_lineno for m in on_line_3)
    flips = find_mutations(source, families=["comparison_flip"], lines=range(1, 3))
    assert [m.apply(source).splitlines()[1] for m in flips] == ["    if a <= b:", "    if a > b:"]


def test_multi_line_sites_match_any_of_their_lines() -> None:
    source = "def f(a, b):\n    if a:\n        g(a)\n    else:\n        g(b)\n"
    swaps = find_mutations(source, families=["swapped_if_else"], lines={5})
    assert [(m.lineno, m.end_lineno) for m in swaps] == [(3, 5)]


def test_sample_mutations_edges() -> None:
    source = "x = a < b\n"
    assert sample_mutations(source, random.Random(0), 0) == []
    everything = sample_mutations(source, random.Random(0), 100)
    assert sorted(everything, key=lambda m: (m.start, m.end, m.replacement)) == sorted(
        find_mutations(source), key=lambda m: (m.start, m.end, m.replacement)
    )
    with pytest.raises(ValueError, match="k must be >= 0, got -1"):
        sample_mutations(source, random.Random(0), -1)


def test_sample_mutations_balances_families() -> None:
    source = "def f(a, b, c, d, e):\n    return a + b + c + d + e\n"
    counts: dict[str, int] = {}
    for seed in range(30):
        for m in sample_mutations(source, random.Random(seed), 2):
            counts[m.family] = counts.get(m.family, 0) + 1
    assert len(counts) >= 3  # wrong_variable's many sites do not crowd out the rest


def test_enclosing_function() -> None:
    source = (
        "import os\n"
        "class A:\n"
        "    @staticmethod\n"
        "    def m():\n"
        "        def inner():\n"
        "            return 1\n"
        "        return inner\n"
        "async def top():\n"
        "    pass\n"
    )
    assert enclosing_function(source, 1) is None
    assert enclosing_function(source, 2) is None
    assert enclosing_function(source, 3) is None  # decorators are not counted
    assert enclosing_function(source, 4) == ("A.m", 4, 7)
    assert enclosing_function(source, 6) == ("A.m.<locals>.inner", 5, 6)
    assert enclosing_function(source, 7) == ("A.m", 4, 7)
    assert enclosing_function(ast.parse(source), 9) == ("top", 8, 9)


def test_mutation_rejects_bad_spans() -> None:
    with pytest.raises(ValueError, match="0 <= start <= end, got start=5, end=2"):
        Mutation("comparison_flip", 5, 2, "", 1, 1, "")
    with pytest.raises(ValueError, match="1 <= lineno <= end_lineno, got lineno=0"):
        Mutation("comparison_flip", 0, 1, "", 0, 1, "")


def test_non_ascii_offsets_are_str_offsets() -> None:
    source = 'def f(a, b):\n    s = "é🎉"; return a < b\n'
    [lt, gt] = find_mutations(source, families=["comparison_flip"])
    assert source[lt.start : lt.end] == "<"
    assert lt.apply(source) == 'def f(a, b):\n    s = "é🎉"; return a <= b\n'
    assert gt.apply(source) == 'def f(a, b):\n    s = "é🎉"; return a > b\n'


def test_docstrings_annotations_fstrings_and_guards_are_left_alone() -> None:
    source = (
        '"""Module doc: a < b and 1."""\n'
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    X = 1 + 2\n"
        "def f(x: list[int] = None) -> dict[str, int]:\n"
        '    """Doc: x < 1."""\n'
        "    y: tuple[int, 1] = x\n"
        '    return f"{x + 1 < 2}"\n'
        'if __name__ == "__main__":\n'
        "    print(f(1 < 2))\n"
    )
    touched = {n for m in find_mutations(source) for n in range(m.lineno, m.end_lineno + 1)}
    assert touched <= {5, 7, 8}
    at_5 = {m.apply(source).splitlines()[4] for m in find_mutations(source, lines={5})}
    assert at_5 == {"def f(x: list[int] = 0) -> dict[str, int]:"}
    assert all(
        m.family in {"removed_statement", "early_return", "wrong_variable"}
        for m in find_mutations(source, lines={7, 8})
    )


def test_candidate_fixes_on_known_bugs() -> None:
    def fixes_to(buggy: str, fixed: str, line: int) -> bool:
        return any(same_tree(m.apply(buggy), fixed) for m in candidate_fixes(buggy, {line}))

    assert fixes_to("def f(x):\n    return x[1:-1]\n", "def f(x):\n    return x[1:]\n", 2)
    assert fixes_to(
        "def f(n):\n    for i in range(1, n):\n        g(i)\n",
        "def f(n):\n    for i in range(0, n):\n        g(i)\n",
        2,
    )
    assert fixes_to("def f(x=0):\n    return x\n", "def f(x=None):\n    return x\n", 1)
    assert fixes_to("def f(x):\n    return\n    g(x)\n", "def f(x):\n    g(x)\n", 2)
    assert fixes_to(
        "def f(d):\n    return d['b'], d['a'], d['a']\n", "def f(d):\n    return d['a'], d['a'], d['a']\n", 2
    )
    assert all(m.lineno <= 2 <= m.end_lineno for m in candidate_fixes("def f(a):\n    return a < 1\n", {2}))


@pytest.mark.parametrize(
    "module",
    ["__init__", "base", "fixes", *FAMILIES],
)
def test_docstring_examples(module: str) -> None:
    name = "frog_gym.generators.operators" + ("" if module == "__init__" else f".{module}")
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and (result.attempted > 0 or module == "__init__")


def test_package_exports() -> None:
    assert set(operators.__all__) >= {
        "FAMILIES",
        "Mutation",
        "candidate_fixes",
        "find_mutations",
        "sample_mutations",
    }
