"""Example-based tests: the exact text each mutation family produces on a small snippet."""

from __future__ import annotations

from frog_gym.generators.operators import find_mutations


def outputs(family: str, source: str) -> list[str]:
    return [m.apply(source) for m in find_mutations(source, families=[family])]


def changed_lines(family: str, source: str) -> list[str]:
    """For single-line edits: the edited line of each mutation."""
    out = []
    for m in find_mutations(source, families=[family]):
        assert m.lineno == m.end_lineno and "\n" not in m.replacement
        out.append(m.apply(source).splitlines()[m.lineno - 1])
    return out


def test_comparison_flip() -> None:
    source = "def f(a, b, c):\n    return a < b <= c and a is not None and b not in c\n"
    assert changed_lines("comparison_flip", source) == [
        "    return a <= b <= c and a is not None and b not in c",
        "    return a > b <= c and a is not None and b not in c",
        "    return a < b < c and a is not None and b not in c",
        "    return a < b >= c and a is not None and b not in c",
        "    return a < b <= c and a is None and b not in c",
        "    return a < b <= c and a is not None and b in c",
    ]
    assert [m.description for m in find_mutations(source, families=["comparison_flip"])][:1] == [
        "`<` -> `<=` in f()"
    ]


def test_comparison_flip_across_comments_and_lines() -> None:
    source = "ok = (a  # left\n      not  in b)\n"
    assert outputs("comparison_flip", source) == ["ok = (a  # left\n      in b)\n"]


def test_boolean_op_swap() -> None:
    assert outputs("boolean_op_swap", "ok = a and b or c\n") == ["ok = a or b or c\n", "ok = a and b and c\n"]


def test_arithmetic_op_swap() -> None:
    source = "def f(a, b):\n    a //= 2\n    return a - b % 3, 's' + a, flags | re.I, a & b | c\n"
    assert changed_lines("arithmetic_op_swap", source) == [
        "    a /= 2",
        "    a %= 2",
        "    return a + b % 3, 's' + a, flags | re.I, a & b | c",
        "    return a - b // 3, 's' + a, flags | re.I, a & b | c",
        "    return a - b % 3, 's' + a, flags & re.I, a & b | c",
    ]


def test_off_by_one_constant() -> None:
    source = "def f(x, n=5):\n    x[0] = -1\n    return x[1:2], range(3), 0xFF, True\n"
    assert changed_lines("off_by_one_constant", source) == [
        "    x[1] = -1",
        "    x[-1] = -1",
        "    x[0] = 0",
        "    x[0] = -2",
        "    return x[1:2], range(3), 0x100, True",
        "    return x[1:2], range(3), 0xFE, True",
    ]


def test_slice_range_off_by_one() -> None:
    source = "a = xs[:]\nb = xs[i:len(xs) - 1]\nc = list(range(1, n))\nfor i in range(n): pass\n"
    assert changed_lines("slice_range_off_by_one", source) == [
        "a = xs[1:]",
        "a = xs[:-1]",
        "b = xs[i + 1:len(xs) - 1]",
        "b = xs[i - 1:len(xs) - 1]",
        "b = xs[i:len(xs)]",
        "b = xs[i:len(xs) - 2]",
        "c = list(range(2, n))",
        "c = list(range(0, n))",
        "c = list(range(1, n + 1))",
        "c = list(range(1, n - 1))",
    ]


def test_slice_bound_needing_parentheses() -> None:
    assert changed_lines("slice_range_off_by_one", "y = x[a or b:]\n")[:2] == [
        "y = x[(a or b) + 1:]",
        "y = x[(a or b) - 1:]",
    ]


def test_loop_bound() -> None:
    source = (
        "def f(n, m):\n"
        "    for i in range(2, n):\n"
        "        pass\n"
        "    out = [j for j in range(m)]\n"
        "    while i < n and m > 0:\n"
        "        i += 1\n"
    )
    assert changed_lines("loop_bound", source) == [
        "    for i in range(3, n):",
        "    for i in range(1, n):",
        "    for i in range(2, n + 1):",
        "    for i in range(2, n - 1):",
        "    out = [j for j in range(1, m)]",
        "    out = [j for j in range(m + 1)]",
        "    out = [j for j in range(m - 1)]",
        "    while i < n + 1 and m > 0:",
        "    while i < n - 1 and m > 0:",
        "    while i < n and m > 1:",
        "    while i < n and m > -1:",
    ]


def test_negated_condition() -> None:
    source = (
        "def f(a, b):\n"
        "    if a:\n"
        "        pass\n"
        "    elif not (a or b):\n"
        "        pass\n"
        "    while b > 0:\n"
        "        b -= 1\n"
        "    assert a, 'msg'\n"
        "    return [x for x in b if x] if a else None\n"
    )
    assert changed_lines("negated_condition", source) == [
        "    if not a:",
        "    elif (a or b):",
        "    while not b > 0:",
        "    assert not a, 'msg'",
        "    return [x for x in b if not x] if a else None",
        "    return [x for x in b if x] if not a else None",
    ]


def test_negated_condition_multi_line_test() -> None:
    source = "if (a and\n        b):\n    pass\n"
    assert outputs("negated_condition", source) == ["if (not (a and\n        b)):\n    pass\n"]


def test_swapped_if_else() -> None:
    source = (
        "def f(a):\n"
        "    if a:\n"
        "        x = 1\n"
        "    else:\n"
        "        x = 2\n"
        "        y = 3\n"
        "    if a: u = 1\n"
        "    else: u = 2\n"
        "    if a:\n"
        "        pass\n"
        "    elif b:\n"
        "        pass\n"
        "    else:\n"
        "        pass\n"
        "    return (lambda: 1) if a else b if a else c\n"
    )
    swapped = outputs("swapped_if_else", source)
    assert len(swapped) == 4  # the if/elif/else chain is left alone
    assert swapped[0].splitlines()[1:6] == [
        "    if a:",
        "        x = 2",
        "        y = 3",
        "    else:",
        "        x = 1",
    ]
    assert swapped[1].splitlines()[6:8] == ["    if a: u = 2", "    else: u = 1"]
    assert swapped[2].splitlines()[-1] == "    return (b if a else c) if a else (lambda: 1)"
    assert swapped[3].splitlines()[-1] == "    return (lambda: 1) if a else c if a else b"


def test_swapped_if_else_at_end_of_file_without_newline() -> None:
    assert outputs("swapped_if_else", "if a:\n    x()\nelse:\n    y()") == ["if a:\n    y()\nelse:\n    x()"]


def test_removed_statement() -> None:
    source = (
        "def f(xs):\n"
        "    xs.sort(); n = len(xs)\n"
        "    if n: return xs  # early\n"
        "    for x in xs:\n"
        "        continue\n"
        "    del xs[0]\n"
        "    raise ValueError(n)\n"
    )
    removed = outputs("removed_statement", source)
    assert [r.splitlines()[1:6] for r in removed] == [
        [
            "    n = len(xs)",
            "    if n: return xs  # early",
            "    for x in xs:",
            "        continue",
            "    del xs[0]",
        ],
        [
            "    xs.sort()",
            "    if n: return xs  # early",
            "    for x in xs:",
            "        continue",
            "    del xs[0]",
        ],
        [
            "    xs.sort(); n = len(xs)",
            "    if n: pass  # early",
            "    for x in xs:",
            "        continue",
            "    del xs[0]",
        ],
        [
            "    xs.sort(); n = len(xs)",
            "    if n: return xs  # early",
            "    for x in xs:",
            "        pass",
            "    del xs[0]",
        ],
        [
            "    xs.sort(); n = len(xs)",
            "    if n: return xs  # early",
            "    for x in xs:",
            "        continue",
            "    raise ValueError(n)",
        ],
    ]


def test_removed_statement_takes_whole_lines_of_a_multi_line_statement() -> None:
    source = "def f():\n    total = (1 +\n             2)  # note\n    return total\n"
    assert outputs("removed_statement", source) == [
        "def f():\n    return total\n",
        "def f():\n    total = (1 +\n             2)  # note\n",
    ]


def test_early_return() -> None:
    source = (
        "def f(xs):\n"
        '    """Doc."""\n'
        "    total = 0\n"
        "    for x in xs:\n"
        "        total += x\n"
        "    result = total * 2\n"
        "    return result\n"
    )
    early = outputs("early_return", source)
    assert [e.splitlines()[2:6] for e in early] == [
        ["    total = 0", "    return None", "    for x in xs:", "        total += x"],
        ["    total = 0", "    for x in xs:", "        return None", "        total += x"],
        ["    total = 0", "    for x in xs:", "        total += x", "    return None"],
    ]


def test_early_return_converts_an_assignment_of_the_result() -> None:
    source = "def f(x):\n    y = (x +\n         1)\n    log(y)\n    return y\n"
    assert outputs("early_return", source) == [
        "def f(x):\n    return (x +\n         1)\n    log(y)\n    return y\n",
        "def f(x):\n    y = (x +\n         1)\n    return None\n    log(y)\n    return y\n",
    ]


def test_wrong_variable() -> None:
    source = "def f(a, b):\n    c = a + b\n    for i in range(c):\n        a = i\n    return c\n"
    assert changed_lines("wrong_variable", source) == [
        "    c = b + b",
        "    c = a + a",
        "    for i in range(a):",
        "    for i in range(b):",
        "        a = a",
        "        a = b",
        "        a = c",
        "    return a",
        "    return b",
        "    return i",
    ]


def test_wrong_variable_skips_self_globals_and_nested_scopes() -> None:
    source = (
        "class A:\n"
        "    def m(self, x):\n"
        "        global G\n"
        "        G = x\n"
        "        y = [x for x in G]\n"
        "        return len(y)\n"
    )
    assert changed_lines("wrong_variable", source) == ["        return len(x)"]


def test_swapped_call_args() -> None:
    source = "x = f(a, b, c)\ny = max(a, b)\nz = g(a, a, *rest)\nw = h(k, m=1)\n"
    assert changed_lines("swapped_call_args", source) == ["x = f(b, a, c)", "x = f(a, c, b)"]


def test_changed_default_arg() -> None:
    source = "def f(a, b=-1, *, c=2.5, d=None, e: bool | None = None, s='x', t=b'', u=(1,)):\n    pass\n"
    assert [line.split("(", 1)[1] for line in changed_lines("changed_default_arg", source)] == [
        "a, b=0, *, c=2.5, d=None, e: bool | None = None, s='x', t=b'', u=(1,)):",
        "a, b=-2, *, c=2.5, d=None, e: bool | None = None, s='x', t=b'', u=(1,)):",
        "a, b=-1, *, c=3.5, d=None, e: bool | None = None, s='x', t=b'', u=(1,)):",
        "a, b=-1, *, c=1.5, d=None, e: bool | None = None, s='x', t=b'', u=(1,)):",
        "a, b=-1, *, c=2.5, d=0, e: bool | None = None, s='x', t=b'', u=(1,)):",
        "a, b=-1, *, c=2.5, d=None, e: bool | None = False, s='x', t=b'', u=(1,)):",
        "a, b=-1, *, c=2.5, d=None, e: bool | None = None, s='', t=b'', u=(1,)):",
        "a, b=-1, *, c=2.5, d=None, e: bool | None = None, s='x', t=b' ', u=(1,)):",
    ]
    assert changed_lines("changed_default_arg", "g = lambda z=False: z\n") == ["g = lambda z=True: z"]


def test_exception_handling() -> None:
    source = (
        "def f(s):\n"
        "    try:\n"
        "        v = int(s)\n"
        "        w = '''a\n"
        "  b'''\n"
        "    except (ValueError, KeyError):\n"
        "        raise\n"
        "    else:\n"
        "        v += 1\n"
        "    return v\n"
    )
    assert outputs("exception_handling", source) == [
        "def f(s):\n    v = int(s)\n    w = '''a\n  b'''\n    v += 1\n    return v\n",
        source.replace("(ValueError, KeyError)", "(KeyError)"),
        source.replace("(ValueError, KeyError)", "(ValueError)"),
        source.replace("        raise\n", "        pass\n"),
    ]


def test_exception_handling_swaps_types_and_keeps_finally() -> None:
    source = "try:\n    go()\nexcept KeyError:\n    pass\nfinally:\n    done()\n"
    assert outputs("exception_handling", source) == [
        "try:\n    go()\nfinally:\n    done()\n",
        source.replace("KeyError", "AttributeError"),
        source.replace("KeyError", "IndexError"),
    ]


def test_dict_key_or_attribute() -> None:
    source = (
        "def f(row, self):\n"
        "    a = row['name'] + row['nome']\n"
        "    b = cfg['other']\n"
        "    return self.width * self.height + self.__class__ + os.sep\n"
    )
    assert changed_lines("dict_key_or_attribute", source) == [
        "    a = row['nome'] + row['nome']",
        "    a = row['other'] + row['nome']",
        "    a = row['name'] + row['name']",
        "    a = row['name'] + row['other']",
        "    b = cfg['nome']",
        "    b = cfg['name']",
        "    return self.height * self.height + self.__class__ + os.sep",
        "    return self.width * self.width + self.__class__ + os.sep",
    ]


def test_non_ascii_identifiers_and_text_before_the_site() -> None:
    source = 'def größe(maß, ü):\n    s = "€ — 🎉"; return self.größe + maß[ü:]\n'
    assert changed_lines("slice_range_off_by_one", source) == [
        '    s = "€ — 🎉"; return self.größe + maß[ü + 1:]',
        '    s = "€ — 🎉"; return self.größe + maß[ü - 1:]',
        '    s = "€ — 🎉"; return self.größe + maß[ü:-1]',
    ]
    assert changed_lines("wrong_variable", source) == [
        '    s = "€ — 🎉"; return self.größe + s[ü:]',
        '    s = "€ — 🎉"; return self.größe + ü[ü:]',
        '    s = "€ — 🎉"; return self.größe + maß[maß:]',
        '    s = "€ — 🎉"; return self.größe + maß[s:]',
    ]
