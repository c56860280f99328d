"""Source hunks of a release diff and delta debugging over them (the miner's reduction of a release's
change to the smallest set of hunks that makes its new tests pass).

Example:
    >>> hunks_of("a.py", "x = 1\\ny = 2\\nz = 3\\n", "x = 1\\ny = 5\\nz = 3\\n")[0].new
    ('y = 5\\n',)
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from frog_gym.sandbox.workspace import Change


@dataclass(frozen=True)
class Hunk:
    """One contiguous change of a source file: old lines ``[start, end)`` become ``new``. A file created in
    N+1 is one hunk with ``created``; a file deleted is one hunk with ``deleted``."""

    path: str
    start: int
    end: int
    new: tuple[str, ...]
    created: bool = False
    deleted: bool = False


def hunks_of(path: str, old: str | None, new: str | None, context: int = 2) -> list[Hunk]:
    """The hunks turning ``old`` into ``new`` (changes closer than ``context`` lines form one hunk)."""
    if old is None:
        return [Hunk(path, 0, 0, tuple((new or "").splitlines(keepends=True)), created=True)]
    a = old.splitlines(keepends=True)
    if new is None:
        return [Hunk(path, 0, len(a), (), deleted=True)]
    b = new.splitlines(keepends=True)
    out: list[list[int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if out and i1 - out[-1][1] <= context:
            out[-1][1], out[-1][3] = i2, j2
        else:
            out.append([i1, i2, j1, j2])
    return [Hunk(path, i1, i2, tuple(b[j1:j2])) for i1, i2, j1, j2 in out]


def apply_hunks(old: dict[str, str], hunks: Iterable[Hunk]) -> list[Change]:
    """The changes that apply ``hunks`` to the files ``old`` (path -> text of release N)."""
    by_path: dict[str, list[Hunk]] = {}
    for h in hunks:
        by_path.setdefault(h.path, []).append(h)
    out = []
    for path, hs in sorted(by_path.items()):
        before = old.get(path)
        if any(h.created for h in hs):
            out.append(Change(path, None, "".join(hs[0].new).encode()))
            continue
        if any(h.deleted for h in hs):
            out.append(Change(path, (before or "").encode(), None))
            continue
        a = (before or "").splitlines(keepends=True)
        text, pos = [], 0
        for h in sorted(hs, key=lambda h: h.start):
            text += a[pos:h.start] + list(h.new)
            pos = h.end
        text += a[pos:]
        out.append(Change(path, (before or "").encode(), "".join(text).encode()))
    return out


def minimize(items: list[Any], passes: Callable[[list[Any]], bool], budget: list[int]) -> list[Any]:
    """Delta debugging (Zeller's ddmin): a 1-minimal sublist of ``items`` for which ``passes`` holds,
    given that it holds for ``items``. ``budget[0]`` counts down the calls allowed; at zero the current
    (passing) list is returned.

    >>> minimize(list(range(8)), lambda s: {2, 5} <= set(s), [100])
    [2, 5]
    """
    n = 2
    while len(items) >= 2 and budget[0] > 0:
        size = -(-len(items) // n)
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        for subset in chunks + ([] if n == 2 else [[x for x in items if x not in c] for c in chunks]):
            if budget[0] <= 0:
                return items
            budget[0] -= 1
            if passes(subset):
                items, n = subset, (2 if subset in chunks else max(n - 1, 2))
                break
        else:
            if n >= len(items):
                break
            n = min(2 * n, len(items))
    return items


def changed_lines(patch: str) -> int:
    """``-`` and ``+`` lines of a unified diff (headers left out).

    Example:
        >>> changed_lines("--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n")
        2
    """
    return sum(1 for ln in patch.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- ")))
