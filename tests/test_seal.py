"""The seal's code ids read ahead by a grading server's parent (``frog_seal.ahead``) and taken by its children.

A child's report plugin hands the parent's seal to the vault, which reads only the functions that differ from it
(the server's child replaces a few of pytest's import hooks before the plugin loads) and takes the parent's ids for
the rest: the result must be what reading every function gives, and the code of the functions replaced since (pytest's
own, held by the parent's seal, which the vault keeps), and a seal that does not line up with the parent's is read
whole.
"""

from __future__ import annotations

import importlib.util
import types

import pytest

from frog_gym.grading import runner as grading


@pytest.fixture(scope="module")
def seal():
    spec = importlib.util.spec_from_file_location("frog_seal_under_test", grading._plugin_dir() / "frog_seal.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nested(code):
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out.add(object.__hash__(c))
        todo.extend(k for k in c.co_consts if type(k) is types.CodeType)
    return out


def test_the_parents_ids_are_what_reading_every_function_gives(seal):
    known = seal.ahead()
    now = seal.make_seal()
    assert seal.code_of(now, known) == seal.code_of(now) == known[1]


def test_a_function_replaced_since_the_parent_read_is_read_again(seal, monkeypatch):
    from _pytest.assertion import rewrite

    known = seal.ahead()
    original = rewrite._rewrite_test

    def _rewrite_test(fn, config):  # as the server's child puts in place before the plugin loads
        def inner():
            return fn
        return inner

    monkeypatch.setattr(rewrite, "_rewrite_test", _rewrite_test)
    now = seal.make_seal()
    ids = seal.code_of(now, known)
    assert ids == seal.code_of(now) | _nested(original.__code__)
    assert _nested(_rewrite_test.__code__) <= ids
    assert not _nested(_rewrite_test.__code__) <= known[1]


def test_a_seal_that_does_not_line_up_with_the_parents_is_read_whole(seal, monkeypatch):
    known = seal.ahead()
    extra = types.ModuleType("_pytest._frog_extra")

    def helper():
        return 1

    helper.__module__ = extra.__name__
    extra.helper = helper
    monkeypatch.setitem(__import__("sys").modules, extra.__name__, extra)
    now = seal.make_seal()
    assert len(now) == len(known[0]) + 1
    forged = (known[0], frozenset())  # ids that do not belong to this seal: never taken where it does not line up
    ids = seal.code_of(now, forged)
    assert ids == seal.code_of(now)
    assert object.__hash__(helper.__code__) in ids


def test_a_seal_made_from_the_parents_is_the_seal_made_afresh(seal, monkeypatch):
    from _pytest import runner

    known = seal.ahead()
    assert seal.make_seal(known) == seal.make_seal()
    kept = seal.make_seal(known)
    assert all(x[2] is y[2] for x, y in zip(known[0], kept))  # the parent's very items: code_of takes its ids
    assert seal.code_of(kept, known) == known[1]

    def show_test_item(item):  # replaced since the parent sealed: sealed as it is now (pytest calls it with
        return None  # --setup-show alone, so this run's own tests are unaffected)

    monkeypatch.setattr(runner, "show_test_item", show_test_item)
    now = seal.make_seal(known)
    assert now == seal.make_seal()
    entry = next(e for e in now if e[0] == "_pytest.runner")
    assert ("show_test_item", show_test_item) in entry[2]
    assert entry[2] is not next(e for e in known[0] if e[0] == "_pytest.runner")[2]
    assert seal.code_of(now, known) == seal.code_of(now) | known[1]  # (the replaced one's code is pytest's own)
    assert object.__hash__(show_test_item.__code__) in seal.code_of(now, known)
