"""The static check's module context (imports anywhere, names bound once to a literal) is read from the statements
alone where the source can hold no assignment expression: the same nodes, in the same order, as a walk of every
node (``ast.walk``), checked on the standard library's own modules (nested imports, ``try``/``except*``, ``match``,
classes and functions in every position) and on cases made for it."""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

import pytest

from frog_gym.grading import integrity

_BINDING = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


def _order(nodes):
    return [n for n in nodes if isinstance(n, _BINDING)]


def _stdlib_sample(step: int = 5) -> list[Path]:
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))
    return [f for f in files if "site-packages" not in f.parts and "test" not in f.parts][::step]


def test_the_statements_alone_give_every_binding_in_ast_walks_order_on_the_standard_library():
    checked = walrus = 0
    for f in _stdlib_sample():
        source = f.read_bytes()
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        if integrity._walrus_possible(source):
            walrus += 1
            continue
        assert _order(integrity._binding_nodes(tree, walrus=False)) == _order(ast.walk(tree)), f
        a, b = integrity._Walk(str(f), tree, index=False, walrus=False), integrity._Walk(str(f), tree, index=False)
        assert (a.modules, a.imported, a.consts) == (b.modules, b.imported, b.consts), f
        checked += 1
    assert checked > 100 and walrus > 0  # the sample holds both kinds


CASES = {
    "nested": b"import a\nif x:\n    import b as a\ntry:\n    from c import d\nexcept E:\n    import e\n"
              b"else:\n    X = 1\nfinally:\n    Y = 'y'\nclass K:\n    Z = 2\n    def f(self):\n        import g\n"
              b"        W = 3\nfor i in r:\n    V = 4\nelse:\n    V = 5\nwhile 0:\n    with m:\n        U = 6\n",
    "match": b"match v:\n    case 1:\n        import h\n        T = 7\n    case _:\n        S = 8\n",
    "star": b"try:\n    pass\nexcept* ValueError:\n    import i\n    R = 9\n",
    "deep": b"def f():\n    def g():\n        class C:\n            import j\n            Q = 10\n    P = 11\nQ = 12\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bindings_in_every_kind_of_block_come_in_ast_walks_order(name):
    source = CASES[name]
    tree = ast.parse(source)
    assert not integrity._walrus_possible(source)
    fast = _order(integrity._binding_nodes(tree, walrus=False))
    assert fast == _order(ast.walk(tree)) and len(fast) >= 2


def test_a_source_that_may_hold_an_assignment_expression_is_walked_whole():
    """A binding inside an expression is only found by a walk of every node: a source that spells ``:=``, or
    declares an encoding (which may spell it otherwise), is walked whole."""
    source = b"N = 3\nM = 4\nif (N := 5):\n    pass\n"
    tree = ast.parse(source)
    assert integrity._walrus_possible(source)
    assert _order(integrity._binding_nodes(tree, walrus=True)) == _order(ast.walk(tree))
    assert integrity._Walk("pkg/a.py", tree, index=False, walrus=True).consts == {"M": 4}  # N is bound twice
    assert integrity._Walk("pkg/a.py", tree, index=False, walrus=False).consts == {"N": 3, "M": 4}  # (why not)
    assert integrity._walrus_possible(b"# -*- coding: utf-7 -*-\nx = 1\n")
    assert not integrity._walrus_possible(b"x = 1\n# a comment that says nothing of codings\n")
