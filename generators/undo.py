"""How easy a bug is to undo without understanding it: does one ``candidate_fixes`` edit restore the code?

A bug is *undone by one edit* when some candidate of :func:`~frog_gym.generators.operators.candidate_fixes`
on the mutated lines of the buggy source gives back the pristine source (compared as ASTs, so
formatting does not count). ``benchmarks/one_edit_undo.py`` reports the share per operator family, over
the registered single-bug tasks and over a seeded sample of each family's mutations of the registered
repositories' code (which is how a family with no tasks yet is measured).

Example:
    >>> pristine = "def f(x):\\n    return x < 1\\n"
    >>> undone_by_one_edit(pristine, "def f(x):\\n    return x <= 1\\n", {2})
    True
    >>> undone_by_one_edit("def f(x):\\n    if x:\\n        x = 1\\n    return x\\n", "def f(x):\\n    return x\\n", {2})
    False
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
from collections import Counter
from pathlib import Path

from frog_gym.generators.operators import FAMILIES, candidate_fixes, find_mutations


def undone_by_one_edit(pristine: str, buggy: str, lines: set[int]) -> bool:
    """Whether one candidate fix on ``lines`` of ``buggy`` gives back ``pristine`` (as an AST).

    The verdict of comparing every candidate's whole AST with the pristine one, for less (a file of 100 KB with
    hundreds of candidates took seconds): a candidate that gives back the exact text needs no parse, a text is
    compared once, and a candidate is compared by the top-level statements its edit touches (:class:`_Region`)."""
    try:
        candidates = candidate_fixes(buggy, lines)
    except (SyntaxError, RecursionError, ValueError):
        return False
    region: _Region | None = None
    seen: set[str] = set()
    for m in candidates:
        text = m.apply(buggy)
        if text == pristine:
            return True
        if text in seen:
            continue
        seen.add(text)
        try:
            if region is None:
                region = _Region(pristine)
            if region.same(text):
                return True
        except SyntaxError:
            if region is None:  # the pristine source does not parse: nothing is the same as it
                return False
        except (RecursionError, ValueError):
            continue
    return False


class _Region:
    """Compares sources with one pristine source as ASTs, parsing only what differs.

    A candidate differs from the pristine text in a band of lines (the lines before and after it are the same
    text). The pristine module's top-level statements that the band touches (with their decorators) span lines
    ``S..E``; lines before ``S`` and after ``E`` are whole statements, blank lines or comments, the same in both.
    When the candidate's lines in that place parse on their own, the two modules are equal as ASTs exactly when
    those two pieces are (statements before and after are the same text, so the same nodes). Otherwise the whole
    candidate is parsed, as before."""

    def __init__(self, pristine: str) -> None:
        self.lines = pristine.splitlines(keepends=True)
        tree = ast.parse(pristine)
        self.whole = ast.dump(tree)
        self.spans = [(min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]), s.end_lineno or s.lineno)
                      for s in tree.body]
        self._piece: dict[tuple[int, int], str] = {}

    def same(self, text: str) -> bool:
        other = text.splitlines(keepends=True)
        a, b = self.lines, other
        k = 0
        while k < len(a) and k < len(b) and a[k] == b[k]:
            k += 1
        j = 0
        while j < len(a) - k and j < len(b) - k and a[-1 - j] == b[-1 - j]:
            j += 1
        first, last = k + 1, len(a) - j  # the band in the pristine lines (1-based, may be empty)
        start, end = first, max(last, first - 1)
        for s, e in self.spans:
            if s <= max(last, first) and e >= first:
                start, end = min(start, s), max(end, e)
        if start > first or end < last:
            return ast.dump(ast.parse(text)) == self.whole
        piece = self._piece.get((start, end))
        if piece is None:
            piece = self._piece[(start, end)] = ast.dump(ast.parse("".join(a[start - 1:end])))
        mine = "".join(b[start - 1:end + len(b) - len(a)])
        try:
            return ast.dump(ast.parse(mine)) == piece
        except SyntaxError:
            return ast.dump(ast.parse(text)) == self.whole


def site_lines(start_line: int, replacement: str) -> set[int]:
    """The lines of the buggy source a site's replacement occupies (at least its first line)."""
    return set(range(start_line, start_line + max(1, replacement.count("\n") + (0 if replacement.endswith("\n") else 1))))


def task_undone(tree: Path, record: dict) -> bool | None:
    """For a single-bug task record: whether one candidate edit undoes it (None: not a single-bug task)."""
    sites = record.get("provenance", {}).get("sites", [])
    if len(sites) != 1:
        return None
    s = sites[0]
    pristine = (tree / s["path"]).read_text(encoding="utf-8")
    buggy = pristine[: s["start"]] + s["replacement"] + pristine[s["end"]:]
    return undone_by_one_edit(pristine, buggy, site_lines(s["lineno"], s["replacement"]))


def _operators_digest() -> str:
    """A digest of the operator code and of the functions that judge a task: a cached verdict holds only for
    the candidate edits and the comparison it was made with (the cache's own code is not part of it)."""
    import inspect

    h = hashlib.sha256()
    root = Path(__file__).parent / "operators"
    for f in sorted(root.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    for fn in (undone_by_one_edit, site_lines, task_undone):
        h.update(inspect.getsource(fn).encode())
    return h.hexdigest()[:16]


class UndoCache:
    """Verdicts of :func:`task_undone`, kept on disk (``$FROG_GYM_HOME/undo/<operators digest>.json``).

    The key is the pristine file's content and the sites, and the file name the digest of the operator
    code, so a verdict is reused only for the same bug measured with the same candidate edits.
    """

    def __init__(self, persist: bool = True):
        from frog_gym import paths

        self.persist = persist
        self.path = paths.home() / "undo" / f"{_operators_digest()}.json"
        self.data: dict[str, bool | None] = {}
        if persist and self.path.exists():
            try:
                self.data = json.loads(self.path.read_text(encoding="utf-8"))
            except ValueError:
                self.data = {}
        self.dirty = False

    def task_undone(self, tree: Path, record: dict) -> bool | None:
        """:func:`task_undone`, through the cache."""
        sites = record.get("provenance", {}).get("sites", [])
        if len(sites) != 1:
            return None
        h = hashlib.sha256((tree / sites[0]["path"]).read_bytes())
        h.update(json.dumps(sites, sort_keys=True).encode())
        key = h.hexdigest()
        if key not in self.data:
            self.data[key] = task_undone(tree, record)
            self.dirty = True
        return self.data[key]

    def save(self) -> None:
        """Write the verdicts, merged with what concurrent runs wrote meanwhile (atomically)."""
        if not (self.dirty and self.persist):
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.data = {**json.loads(self.path.read_text(encoding="utf-8")), **self.data}
        except (OSError, ValueError):
            pass
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.data, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)
        self.dirty = False


def sample_shares(sources: list[str], per_family: int, seed: int = 0,
                  families: list[str] | None = None) -> dict[str, tuple[int, int]]:
    """``{family: (undone, sampled)}`` over a seeded sample of each family's mutations of ``sources``."""
    rng = random.Random(seed)
    pools: dict[str, list[tuple[int, object]]] = {f: [] for f in (families or list(FAMILIES))}
    for i, src in enumerate(sources):
        try:
            muts = find_mutations(src, families=list(pools))
        except (SyntaxError, RecursionError, ValueError):
            continue
        for m in muts:
            pools[m.family].append((i, m))
    out: dict[str, tuple[int, int]] = {}
    for fam, pool in pools.items():
        picked = rng.sample(pool, min(per_family, len(pool)))
        done = Counter()
        for i, m in picked:
            src = sources[i]
            buggy = m.apply(src)  # type: ignore[attr-defined]
            done[undone_by_one_edit(src, buggy, site_lines(m.lineno, m.replacement))] += 1  # type: ignore[attr-defined]
        out[fam] = (done[True], len(picked))
    return out
