"""Sources for the mutation-operator tests: stdlib modules plus hand-written odd layouts and rare syntax."""

from __future__ import annotations

import argparse
import fractions
import inspect
import json.decoder
import textwrap

NON_ASCII = '''\
"""Modul für Grüße — ünïcödé docstring."""
from __future__ import annotations

import argparse
import fractions
import inspect
import json.decoder
import textwrap

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

GRÜSSE = {"größe": 3, "naïve": 1}


def grüßen(name: str = "Jürgen", wiederholung: int = 2, laut: bool = False) -> str:
    """Grüßt — mit Emoji 🎉."""
    text = "¡Hola, " + name + "! 🎉" if laut else "Grüß Gott, " + name
    for i in range(wiederholung):
        if i > 0 and laut:
            text = text + " — " + text[:-1]
    größe = GRÜSSE["größe"] * len(text)
    return text[: größe + 1]


class Zähler:
    def __init__(self, anfang=0, schritt=1):
        self.wert = anfang
        self.schritt = schritt

    def weiter(self, n):
        übrig = n
        while übrig > 0:
            self.wert += self.schritt
            übrig -= 1
        return self.wert


if __name__ == "__main__":
    print(grüßen("Welt"))
'''

LAYOUT = """\
import os, sys


def layout(a, b, *rest, key=None, flag=True, ratio=0.5, sep=b",", **extra):
    total = (a +
             b) * 2  # multi-line, commented
    if (a < b and
            b is not None):
        total -= 1
    elif a == b: total = 0
    else:
        total = \\
            total // 3
    x = 1; y = 2; z = x if a else y
    values = [v for v in rest if v not in (None, 0) and v != key]
    pairs = {k: v for k, v in extra.items() if k}
    first, *others = values or [0]
    try:
        n = int(first)
    except (ValueError, TypeError) as err:
        raise RuntimeError(f"bad {first!r}: {err}") from err
    else:
        n += len(others)
    finally:
        pass
    while n >= 0 and total < 100:
        n -= 1
        if n % 2:
            continue
        total += n
    with open(os.devnull) as fh:
        data = fh.read()[1:-1]
    if (m := len(data)) > 3:
        total += m
    assert total is not None, "total"
    f = lambda q, r=3: q * r - 1
    return f(total, 2) if flag else sys.maxsize - total, pairs, sep


async def agen(items, limit=10):
    async for item in items:
        if not item:
            break
        yield item[0:limit]


def matcher(command):
    match command.split():
        case [verb, obj] if verb == "go":
            return obj
        case _:
            return None


def nested(xs):
    def inner(y):
        return y + 1
    out = []
    for i in range(1, len(xs)):
        out.append(inner(xs[i - 1]))
    return out


def lookup(table, key, default=None):
    try:
        return table["k" + key]
    except KeyError:
        return default
"""

CRLF = LAYOUT.replace("\n", "\r\n")

TABS = "def tabbed(a, b):\n\tif a < b:\n\t\treturn a\n\telse:\n\t\treturn b\n"

SNIPPETS = {"non_ascii": NON_ASCII, "layout": LAYOUT, "crlf": CRLF, "tabs": TABS}
"""Hand-written sources, by name."""

STDLIB = {m.__name__: inspect.getsource(m) for m in (textwrap, json.decoder, argparse, fractions)}
"""Real-world sources, by module name."""

CORPUS = {**STDLIB, **SNIPPETS}
"""Everything the property tests draw from."""
