"""The share of bugs one candidate edit undoes: the new families stay out of its reach, old ones do not."""

from __future__ import annotations

import ast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frog_gym.generators.operators import find_mutations
from frog_gym.generators.undo import sample_shares, site_lines, undone_by_one_edit

from operator_corpus import SNIPPETS

SOURCE = '''
class Counter:
    def __init__(self, start=0):
        self.n = start
        self.seen = []

    def bump(self, by=1, *, note=None):
        if by < 0:
            raise ValueError("negative step")
        if note is not None:
            self.seen.append(note)
            self.seen.sort()
        self.n += by
        return self.n

    def pick(self, items, key=None, reverse=False):
        if not items:
            return None
        elif len(items) == 1:
            return items[0]
        ordered = sorted(items, key=key, reverse=reverse)
        self.n = len(ordered)
        return ordered[0]
'''
CORPUS = {**SNIPPETS, "counter": SOURCE}

NEW = ["missing_branch", "dropped_guard", "unforwarded_argument", "reordered_statements"]


def test_new_families_are_not_undone_by_one_candidate_edit():
    shares = sample_shares(list(CORPUS.values()), per_family=25, seed=0, families=[*NEW, "comparison_flip"])
    for fam in NEW:
        undone, n = shares[fam]
        assert n >= 1, f"{fam}: only {n} mutations in the corpus"
        assert undone == 0, f"{fam}: {undone} of {n} undone by one candidate edit"
    undone, n = shares["comparison_flip"]
    assert n and undone == n  # a self-inverse family: every mutation is undone


def test_new_family_mutations_parse_and_change_behaviour_shaped_code():
    for name, src in CORPUS.items():
        for m in find_mutations(src, families=NEW):
            out = m.apply(src)
            ast.parse(out)
            assert ast.dump(ast.parse(out)) != ast.dump(ast.parse(src)), (name, m.description)


def test_site_lines_cover_multi_line_replacements():
    assert site_lines(5, "x") == {5} and site_lines(5, "a\nb\n") == {5, 6} and site_lines(5, "") == {5}
    assert not undone_by_one_edit("def f(a, key=None):\n    return sorted(a, key=key)\n",
                                  "def f(a, key=None):\n    return sorted(a)\n", {2})


def test_undo_cache_keeps_verdicts_per_file_content_and_site(tmp_path, monkeypatch):
    from frog_gym.generators.undo import UndoCache, task_undone

    monkeypatch.setenv("FROG_GYM_HOME", str(tmp_path / "home"))
    tree = tmp_path / "tree"
    tree.mkdir()
    src = "def f(x):\n    return x < 1\n"
    (tree / "m.py").write_text(src)
    start = src.index("<")
    flip = {"provenance": {"sites": [{"path": "m.py", "start": start, "end": start + 1, "replacement": "<=",
                                      "lineno": 2, "family": "comparison_flip"}]}}
    cache = UndoCache()
    assert cache.task_undone(tree, flip) is True is task_undone(tree, flip)
    assert cache.task_undone(tree, {"provenance": {"sites": []}}) is None  # not a single-bug task
    cache.save()
    again = UndoCache()
    assert again.data == cache.data and len(again.data) == 1
    (tree / "m.py").write_text(src.replace("x < 1", "x < 1 "))  # another pristine file: measured afresh
    assert again.task_undone(tree, flip) is not None and len(again.data) == 2
    assert UndoCache(persist=False).data == {}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_comparing_the_touched_statements_gives_the_whole_module_verdict(data: st.DataObject) -> None:
    """undone_by_one_edit compares a candidate by the top-level statements its edit touches; over the operator
    corpus, every family's mutations and their candidate fixes, that says what comparing whole modules says."""
    from frog_gym.generators.operators import FAMILIES, candidate_fixes
    from frog_gym.generators.undo import _Region

    from operator_corpus import CORPUS

    name = data.draw(st.sampled_from(sorted(CORPUS)), label="file")
    source = CORPUS[name]
    family = data.draw(st.sampled_from(sorted(f for f in FAMILIES if FAMILIES[f](source, ast.parse(source)))),
                       label="family")
    m = data.draw(st.sampled_from(FAMILIES[family](source, ast.parse(source))), label="mutation")
    buggy = m.apply(source)
    region = _Region(source)
    whole = ast.dump(ast.parse(source))
    for c in candidate_fixes(buggy, site_lines(m.lineno, m.replacement))[:60]:
        text = c.apply(buggy)
        try:
            expected = ast.dump(ast.parse(text)) == whole
        except SyntaxError:
            expected = False
        try:
            got = region.same(text)
        except SyntaxError:
            got = False
        assert got == expected, (name, family, c)
    # and on edits it is made for: the pristine text itself, and a change in one statement only
    assert region.same(source)
    assert not region.same(source.replace("return", "return  None or", 1)) or "return" not in source
