"""The multi-line mutation families (issue 22, "bigger synthetic bugs"): their exact edits on small snippets,
and, over the operator corpus, that each edit spans several lines, that its gold patch (the reverse diff, as
synthesis writes it) restores the source under ``git apply``, and that no single candidate edit of the
no-model repair agent undoes it."""

from __future__ import annotations

import ast
import functools
import subprocess

import pytest
from frog_gym.generators.operators import FAMILIES, MULTI_LINE_FAMILIES, Mutation, find_mutations
from frog_gym.generators.undo import site_lines, undone_by_one_edit
from frog_gym.generators.validate import patches
from frog_gym.sandbox.workspace import Change
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from operator_corpus import CORPUS

MULTI_LINE = {
    # family: fewest changed lines (``-`` and ``+`` lines) of its gold patch
    "duplicated_branch_body": 3,  # shared lines (fractions.Fraction.__new__): 3 changed; fewer: refused
    "wrong_variable_in_block": 4,
    "dropped_else_branch": 2,
    "misplaced_accumulator_reset": 2,
    "moved_loop_update": 2,
    "swapped_blocks": 4,
    "repeated_comparison_flip": 4,
    "missing_state_update": 4,
}
PROPERTY = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outputs(family: str, source: str) -> list[str]:
    return [m.apply(source) for m in find_mutations(source, families=[family])]


@functools.cache
def found(family: str, name: str) -> tuple[Mutation, ...]:
    return tuple(FAMILIES[family](CORPUS[name], ast.parse(CORPUS[name])))


def gold_shape(source: str, m: Mutation) -> tuple[str, int]:
    """The gold patch of ``m`` on ``source`` as synthesis writes it, and its changed-line count."""
    _, gold = patches([Change("m.py", source.encode(), m.apply(source).encode())])
    lines = [ln for ln in gold.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return gold, len(lines)


def test_every_multi_line_family_is_registered() -> None:
    assert set(MULTI_LINE) <= set(FAMILIES)


def test_duplicated_branch_body() -> None:
    source = (
        "def sign(x):\n"
        "    if x < 0:\n        s = -1\n        return s * x\n"
        "    elif x == 0:\n        log(x)\n        return 0\n"
        "    else:\n        y = x\n        return y\n"
    )
    assert outputs("duplicated_branch_body", source) == [
        # the ``elif`` runs the ``if`` body, keeping its own condition
        source.replace("log(x)\n        return 0", "s = -1\n        return s * x"),
        # the ``else`` runs the ``elif`` body
        source.replace("    else:\n        y = x\n        return y\n", "    else:\n        log(x)\n        return 0\n"),
    ]
    # the ``elif``/``else`` pair has 3 lines together: too small a fix, left alone; a one-line pair too
    assert outputs("duplicated_branch_body", "def f(x):\n    if x:\n        a()\n    else:\n        b()\n") == []


def test_duplicated_branch_body_needs_differing_bodies_at_one_indentation() -> None:
    same = "def f(x):\n    if x:\n        a()\n        b()\n    else:\n        a()\n        b()\n"
    inline = "def f(x):\n    if x: a(); b(); c()\n    else:\n        d()\n        e()\n"
    assert outputs("duplicated_branch_body", same) == outputs("duplicated_branch_body", inline) == []


def test_duplicated_branch_body_refuses_bodies_that_differ_in_fewer_than_three_lines() -> None:
    from frog_gym.generators.operators.duplicated_branch_body import MIN_CHANGED

    assert MIN_CHANGED == MULTI_LINE["duplicated_branch_body"]
    head = "def f(x, a, b):\n    if x:\n"
    # one line apart, the rest shared (argparse ArgumentParser._get_option_tuples): the fix would be 2 lines
    one_apart = head + (
        "        t = g(x)\n        u = a, t\n        out.append(u)\n"
        "    else:\n        t = g(x)\n        u = b, t\n        out.append(u)\n"
    )
    # a body of two lines where the other has them fused into one, and two more shared (Fraction.__new__)
    fused = head + (
        "        # exact\n        p = x.p\n        q = x.q\n        return p\n"
        "    elif a:\n        # exact\n        p, q = x.ratio()\n        return p\n"
    )
    # the first body holds the second one's lines and two more: the fix deletes 2 lines
    two_extra = head + "        a()\n        b()\n        c()\n        d()\n    else:\n        a()\n        d()\n"
    # one body's lines are the other's, reordered: the fix moves one line (a 2-line diff)
    moved = head + "        a()\n        b()\n        c()\n    else:\n        b()\n        c()\n        a()\n"
    assert outputs("duplicated_branch_body", one_apart) == []
    assert outputs("duplicated_branch_body", two_extra) == []
    assert outputs("duplicated_branch_body", moved) == []
    [m] = find_mutations(fused, families=["duplicated_branch_body"])
    assert m.apply(fused) == fused.replace("        p, q = x.ratio()\n",
                                           "        p = x.p\n        q = x.q\n")
    for source in (one_apart, fused, two_extra, moved):
        for m in find_mutations(source, families=["duplicated_branch_body"]):
            gold, changed = gold_shape(source, m)
            assert changed >= MULTI_LINE["duplicated_branch_body"], gold
            assert not undone_by_one_edit(source, m.apply(source), site_lines(m.lineno, m.replacement))


def test_duplicated_branch_body_counts_changed_lines_as_the_gold_patch_does() -> None:
    from frog_gym.generators.bugsize import changed_lines
    from frog_gym.generators.operators.duplicated_branch_body import fewest_changed_lines

    cases = [("a\nb\nc\n", "a\nx\nc\n"), ("a\nb\n", "b\nc\nd\n"), ("a\nb\nc\n", "b\nc\na\n"),
             ("x\ny\n", "p\nq\nr\n"), ("a\nb\na\nb\n", "b\na\nb\na\n"), ("a\n", "a\n")]
    for old, new in cases:
        source = "def f():\n    pass\n" + new + "z = 1\n"  # the replaced block among common lines
        _, gold = patches([Change("m.py", source.encode(), source.replace(new, old, 1).encode())])
        assert fewest_changed_lines(old, new) <= changed_lines(gold), (old, new, gold)
    # a line that would read as a diff header ("--- ...") is not counted by bugsize: left out of the bound
    assert fewest_changed_lines("--- x\n", "y\n") == 1


def test_wrong_variable_in_block() -> None:
    source = (
        "def merge(left, right):\n    out = []\n    for item in right:\n        if item not in left:\n"
        "            out.append(item)\n            left.add(item)\n    return out\n"
    )
    got = find_mutations(source, families=["wrong_variable_in_block"])
    assert [m.description for m in got] == [
        "3 reads of `item` -> `out` in a block of merge()", "3 reads of `item` -> `right` in a block of merge()"
    ]
    texts = [m.apply(source) for m in got]
    # the ``for`` body reads ``left`` twice and ``item`` three times on three lines: ``item`` is the site
    assert texts == [
        source.replace("item not in left:\n            out.append(item)\n            left.add(item)",
                       "out not in left:\n            out.append(out)\n            left.add(out)"),
        source.replace("item not in left:\n            out.append(item)\n            left.add(item)",
                       "right not in left:\n            out.append(right)\n            left.add(right)"),
    ]


def test_wrong_variable_in_block_leaves_rebound_names_nested_scopes_and_self() -> None:
    rebound = "def f(a, b):\n    if a:\n        a = a + a\n        g(a)\n    return b\n"
    nested = "def f(a, b):\n    if b:\n        g(lambda: a, lambda: a)\n        h(lambda: a)\n"
    selfish = "class C:\n    def m(self, a):\n        if a:\n            self.x(self)\n            self.y = self\n"
    for source in (rebound, nested, selfish):
        assert outputs("wrong_variable_in_block", source) == []


def test_dropped_else_branch() -> None:
    source = "def f(x):\n    if x:\n        y = 1\n    else:  # default\n        y = 2\n        log(y)\n    return y\n"
    assert outputs("dropped_else_branch", source) == ["def f(x):\n    if x:\n        y = 1\n    return y\n"]
    elif_ = "def f(x):\n    if x:\n        y = 1\n    elif x is None:\n        y = 2\n    return y\n"
    assert outputs("dropped_else_branch", elif_) == []


def test_misplaced_accumulator_reset() -> None:
    source = (
        "def words(lines):\n    found = []\n    seen = set()\n    for line in lines:\n"
        "        found.extend(line.split())\n        seen.add(line)\n    return found, len(seen)\n"
    )
    assert outputs("misplaced_accumulator_reset", source) == [
        "def words(lines):\n    seen = set()\n    for line in lines:\n        found = []\n"
        "        found.extend(line.split())\n        seen.add(line)\n    return found, len(seen)\n",
        "def words(lines):\n    found = []\n    for line in lines:\n        seen = set()\n"
        "        found.extend(line.split())\n        seen.add(line)\n    return found, len(seen)\n",
    ]
    # not read after the loop: a per-iteration scratch value, resetting it inside is no bug
    scratch = "def f(xs):\n    buf = []\n    for x in xs:\n        buf.append(x)\n    return 1\n"
    assert outputs("misplaced_accumulator_reset", scratch) == []


def test_moved_loop_update() -> None:
    source = (
        "def pairs(xs):\n    prev = None\n    out = []\n    for x in xs:\n        out.append((prev, x))\n"
        "        check(x)\n        prev = x\n    return out\n"
    )
    assert outputs("moved_loop_update", source) == [
        "def pairs(xs):\n    prev = None\n    out = []\n    for x in xs:\n        prev = x\n"
        "        out.append((prev, x))\n        check(x)\n    return out\n"
    ]
    unread = "def f(xs):\n    for x in xs:\n        a(x)\n        b(x)\n        last = x\n    return last\n"
    assert outputs("moved_loop_update", unread) == []


def test_swapped_blocks() -> None:
    source = (
        "def total(self, xs):\n    n = 0\n"
        "    # count the new items\n    for x in xs:\n        n += 1\n\n"
        "    if n > self.limit:\n        n = self.limit\n    return n\n"
    )
    assert outputs("swapped_blocks", source) == [
        "def total(self, xs):\n    n = 0\n"
        "    if n > self.limit:\n        n = self.limit\n\n"
        "    # count the new items\n    for x in xs:\n        n += 1\n    return n\n"
    ]


def test_swapped_blocks_needs_a_dependency_two_lines_each_and_no_use_before_assignment() -> None:
    independent = "def f(a, b):\n    if a:\n        g(a)\n    if b:\n        h(b)\n"
    one_line = "def f(a):\n    a.x = 1\n    if a.x:\n        g(a)\n"
    first_bound = "def f(a):\n    for x in a:\n        t = x\n    if t:\n        g(t)\n"
    module_level = "if a:\n    b = 1\nif b:\n    c = 2\n"
    for source in (independent, one_line, first_bound, module_level):
        assert outputs("swapped_blocks", source) == []
    rebound = "def f(a, t):\n    for x in a:\n        t = x\n    if t:\n        g(t)\n"
    assert len(outputs("swapped_blocks", rebound)) == 1  # ``t`` has a value already: the order is the bug


def test_repeated_comparison_flip() -> None:
    source = (
        "def scan(s, i, n):\n    while i < n and s[i] == ' ':\n        i += 1\n"
        "    if i >= n or [j for j in s if j < 0]:\n        return None\n    return i <= len(s)\n"
    )
    got = find_mutations(source, families=["repeated_comparison_flip"])
    assert [m.description for m in got] == [  # in source order: both start at ``i < n``, ``n``'s ends first
        "2 comparisons of `n` made inclusive/exclusive the other way in scan()",
        "3 comparisons of `i` made inclusive/exclusive the other way in scan()",
    ]
    assert got[1].apply(source) == source.replace("i < n", "i <= n").replace("i >= n", "i > n").replace(
        "i <= len", "i < len")
    # one comparison, or several on one line, is a one-line fix: left to comparison_flip
    assert outputs("repeated_comparison_flip", "def f(a, b):\n    return a < b and a > 0\n") == []


def test_missing_state_update() -> None:
    source = (
        "class Stack:\n    def __init__(self):\n        self.items = []\n        self.size = 0\n"
        "        self.top = None\n        self.log = []\n\n"
        "    def push(self, x, n):\n        y = x\n        self.items.append(x)\n        self.size += 1\n"
        "        self.top = x\n        n = n + 1\n        return y, n\n"
    )
    # ``y = x`` is a first binding (a definition), ``n = n + 1`` a new value of a bound name; __init__ is left
    assert outputs("missing_state_update", source) == [
        source.replace("        self.items.append(x)\n        self.size += 1\n        self.top = x\n"
                       "        n = n + 1\n", "")
    ]
    short = "def f(self, x):\n    self.a = x\n    self.b = x\n    return x\n"
    whole = "def f(self, x):\n    self.a = x\n    self.b = x\n    self.c = x\n    self.d = x\n"
    assert outputs("missing_state_update", short) == outputs("missing_state_update", whole) == []


@pytest.mark.parametrize("family", sorted(MULTI_LINE))
@PROPERTY
@given(data=st.data())
def test_gold_patch_is_multi_line_restores_the_source_and_defeats_one_edit(
    family: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    names = [n for n in sorted(CORPUS) if found(family, n)]
    assert names, f"{family} finds no site in the operator corpus"
    name = data.draw(st.sampled_from(names), label="file")
    m = data.draw(st.sampled_from(found(family, name)), label="mutation")
    source = CORPUS[name]
    buggy = m.apply(source)

    gold, changed = gold_shape(source, m)
    assert changed >= MULTI_LINE[family]
    assert m.end_lineno > m.lineno or m.replacement.count("\n") >= 1

    work = tmp_path_factory.mktemp("gold")
    (work / "m.py").write_bytes(buggy.encode())
    (work / "gold.diff").write_bytes(gold.encode())
    subprocess.run(["git", "apply", "--unsafe-paths", "gold.diff"], cwd=work, check=True, capture_output=True)
    assert (work / "m.py").read_bytes().decode() == source

    assert not undone_by_one_edit(source, buggy, site_lines(m.lineno, m.replacement))


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.tuples(st.integers(1, 12), st.booleans()), min_size=1, max_size=60))
def test_size_plan_meets_both_targets_when_retiring_is_enough(sizes: list[tuple[int, bool]]) -> None:
    import statistics

    from frog_gym.generators import bugsize

    sizes = [(n, u and n < bugsize.MIN_MEDIAN_LINES) for n, u in sizes]  # one edit undoes small bugs only
    pl = bugsize.plan("demo", sizes)
    # retire the easy (undone) tasks, smallest first, as many as the plan says
    easy = sorted((i for i, (n, u) in enumerate(sizes) if u), key=lambda i: sizes[i][0])[: pl.retire]
    left = [s for i, s in enumerate(sizes) if i not in set(easy)]
    if pl.need_big == 0 and left:
        assert statistics.median_low(n for n, _ in left) >= bugsize.MIN_MEDIAN_LINES
        assert sum(u for _, u in left) <= bugsize.MAX_UNDONE * len(left) + 1e-9
    else:
        assert pl.retire == sum(u for _, u in sizes)  # every easy task goes, and it is still not enough
        left_big = sum(1 for n, _ in left if n >= bugsize.MIN_MEDIAN_LINES)
        assert left_big + pl.need_big > len(left) - left_big


def test_per_function_quota_counts_multi_line_bugs_apart_and_state_refusals_are_not_kept(tmp_path) -> None:
    """A function whose quota one-line bugs filled still takes multi-line ones (each kind up to the
    quota): in a small repository the one-line families had taken every function before the multi-line
    ones existed. A refusal that depends on the registered tasks (quota, a line taken) is not kept, so that
    a later run, after a retirement, tries the candidate again; a refusal of the candidate itself is kept."""
    import json
    from collections import Counter

    from frog_gym.generators.synthesis import _Rejections, quota_key

    one_line = ("negated_condition", "off_by_one_constant", "comparison_flip")
    per_func = Counter(quota_key("pkg/m.py", "f", fam) for fam in one_line)
    assert per_func[quota_key("pkg/m.py", "f", "arithmetic_op_swap")] == 3
    for fam in MULTI_LINE:
        assert per_func[quota_key("pkg/m.py", "f", fam)] == 0
        assert quota_key("pkg/m.py", "f", fam) == quota_key("pkg/m.py", "f", "swapped_blocks")
    assert quota_key("pkg/m.py", "g", "swapped_blocks") != quota_key("pkg/m.py", "f", "swapped_blocks")

    path = tmp_path / "rejected-seed0.jsonl"
    rej = _Rejections(path)
    rej.add("r__swapped_blocks-1", "per function quota reached", "swapped_blocks")
    rej.add("r__swapped_blocks-2", "duplicate: another single-bug task mutates this line", "swapped_blocks")
    rej.add("r__swapped_blocks-3", "no test fails with the bug", "swapped_blocks")
    kept_by_an_older_run = {"id": "r__old-4", "reason": "per function quota reached", "family": "x"}
    path.write_text(path.read_text() + json.dumps(kept_by_an_older_run) + "\n")
    assert set(_Rejections(path).seen) == set(rej.seen) == {"r__swapped_blocks-3"}


def test_bugsize_anchors_on_every_hard_and_multi_line_family() -> None:
    from frog_gym.generators.bugsize import ANCHORS
    from frog_gym.generators.harden import HARD_FAMILIES

    assert set(HARD_FAMILIES) | set(MULTI_LINE_FAMILIES) | {"removed_statement"} == set(ANCHORS)
