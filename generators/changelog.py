"""Changelog entries of a release (CHANGES / HISTORY / NEWS / docs changelog / a README's version history)
and the entry that names what a mined fix touches: the real statement of a FrogLive task.

Example:
    >>> changelog_entries(changelog_section("2.1\\n---\\n- Fix a.\\n- Fix b.\\n\\n2.0\\n---\\n", "2.1"))
    ['Fix a.', 'Fix b.']
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

from packaging.version import Version

from frog_gym.generators.hunks import Hunk

_CHANGELOG = re.compile(r"^(changes|changelog|history|news|release[-_]?notes|whatsnew|whats[-_]new)"
                        r"(\.(rst|md|txt|markdown))?$", re.I)
_BULLET = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+")
_UNDERLINE = re.compile(r"^\s*([=\-~^*+#`'\"])\1{2,}\s*$")
_ROLE = re.compile(r":[\w:.-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_COMMON = {"self", "None", "True", "False", "return", "def", "class", "import", "from", "the", "and", "for",
           "not", "with", "str", "int", "len", "raise", "elif", "else", "try", "except", "pass", "lambda",
           "while", "yield", "kwargs", "args", "value", "values", "name", "data", "result", "isinstance"}


def changelog_files(tree: Path) -> list[str]:
    """Changelog files of an unpacked sdist (root, ``docs/``, ``doc/``), relative paths; the README last
    (some projects keep their version history there). A changelog folder (rfc3986's
    ``docs/source/release-notes/``) holds one file per release, each headed by its version, as a section."""
    out = []
    for d in ("", "docs", "doc", "docs/source", "doc/source"):
        folder = tree / d if d else tree
        if folder.is_dir():
            for p in sorted(folder.iterdir()):
                if p.is_file() and _CHANGELOG.match(p.name):
                    out.append(f"{d}/{p.name}".lstrip("/"))
                elif p.is_dir() and _CHANGELOG.match(p.name):
                    out += [f"{d}/{p.name}/{f.name}".lstrip("/") for f in sorted(p.iterdir())
                            if f.is_file() and f.suffix.lower() in (".rst", ".md", ".txt")]
    return out + [p.name for p in sorted(tree.glob("README*")) if p.is_file()]


def version_bullets(text: str, version: str) -> list[str]:
    """Entries written as one bullet that starts with the version (``- 1.22.4 Fix ...``), without it.

    >>> version_bullets("- 1.2.1 Fix b.\\n- 1.2.0 Add a.\\n", "1.2.1")
    ['Fix b.']
    """
    want = _version_re(version)
    out = []
    for line in text.splitlines():
        m = _BULLET.match(line)
        if m and (v := want.match(line[m.end():])):
            out.append(line[m.end() + v.end():].strip(" :-\t"))
    return [e for e in out if e]


def _version_re(version: str) -> re.Pattern[str]:
    v = Version(version)
    forms = {version, str(v), v.base_version}
    if len(v.release) == 3 and v.release[2] == 0:
        forms.add(f"{v.release[0]}.{v.release[1]}")
    alts = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])v?({alts})(?![\w]|\.\d)")


_ANY_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(\.\d+)*(?![\w])")
_LINK_TARGET = re.compile(r"<[a-z][\w+.-]*://[^>]*>|(?<=\])\([a-z][\w+.-]*://[^)]*\)")
"""The target of an RST (```text <URL>`__``) or Markdown (``[text](URL)``) link."""


def _is_heading(lines: list[str], i: int) -> bool:
    line = lines[i].strip()
    if not line or len(line) > 100:
        return False
    if line.startswith("#") or re.match(r"^(version|release|v)?\s*\d+\.\d+", line, re.I):
        return True
    return i + 1 < len(lines) and bool(_UNDERLINE.match(lines[i + 1]))


def changelog_section(text: str, version: str) -> str:
    """The section of a changelog about ``version`` (its heading line to the next version heading).

    >>> changelog_section("2.1\\n---\\n- Fix a.\\n\\n2.0\\n---\\n- Add b.\\n", "2.1")
    '- Fix a.'

    A section whose bullets are all indented keeps them level (stripping only the first would make it the
    one outermost bullet, and the whole section one entry):

    >>> changelog_section("0.9.3 *2026-10-20*\\n  * Fix a.\\n  * Fix b.\\n", "0.9.3")
    '* Fix a.\\n* Fix b.'
    """
    lines = text.splitlines()
    # a heading's link target names other versions too (PyJWT: ``v2.15.1 <.../compare/2.15.0...2.15.1>`__``
    # under ``Unreleased <.../compare/2.15.1...HEAD>`__``): only the heading's own text says which it is
    seen = [_LINK_TARGET.sub("", line) for line in lines]
    want = _version_re(version)
    start = next((i for i, line in enumerate(seen) if want.search(line) and _is_heading(lines, i)), None)
    if start is None:
        return ""
    body = start + 1
    if body < len(lines) and _UNDERLINE.match(lines[body]):
        body += 1
    end = len(lines)
    for i in range(body, len(lines)):
        if _ANY_VERSION.search(seen[i]) and _is_heading(lines, i) and not _BULLET.match(lines[i]):
            end = i
            break
    return textwrap.dedent("\n".join(lines[body:end])).strip()


def changelog_entries(section: str) -> list[str]:
    """The entries of a section: its outermost bullets (continuation lines joined), else its paragraphs."""
    lines = section.splitlines()
    bullets = [(len(m.group(1)), i) for i, line in enumerate(lines) if (m := _BULLET.match(line))]
    if not bullets:
        return [p.strip() for p in re.split(r"\n\s*\n", section) if p.strip()]
    top = min(ind for ind, _ in bullets)
    starts = [i for ind, i in bullets if ind == top]
    out = []
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else len(lines)
        chunk = [lines[s]] + [ln for ln in lines[s + 1:e] if ln.startswith(" " * (top + 1)) or not ln.strip()]
        text = "\n".join(chunk).strip()
        text = _BULLET.sub("", text, count=1)
        out.append(re.sub(r"\n\s*\n.*", "", text, flags=re.S).strip() or text)
    return out


def clean_entry(text: str) -> str:
    """A changelog entry as plain text: RST roles and literals unwrapped, lines joined.

    >>> clean_entry("Fix :func:`foo` for ``None``.\\n  :issue:`12`")
    'Fix `foo` for `None`. `12`'
    >>> clean_entry("`Issue #81`_: GitIgnoreSpec behaviors differ from git.")
    'GitIgnoreSpec behaviors differ from git.'
    """
    text = _ROLE.sub(lambda m: f"`{m.group(1).strip()}`", text)
    text = text.replace("``", "`")
    # a leading issue reference ("`506`: ...", "`Issue #81`_: ...")
    text = re.sub(r"^(`?((issue|pull|pr|gh)\s*)?#?\d+`?_?[,\s]*)+:\s*", "", text, flags=re.I)
    return re.sub(r"\s*\n\s*", " ", text).strip()


def fix_names(hunks: list[Hunk], old: dict[str, str]) -> tuple[set[str], set[str]]:
    """``(identifiers, modules)`` a changelog entry about these hunks would name: identifiers on the
    changed lines and the functions or classes that enclose them; the touched modules' names."""
    idents: set[str] = set()
    mods: set[str] = set()
    for h in hunks:
        stem = Path(h.path).stem
        mods.add(Path(h.path).parent.name if stem == "__init__" else stem)
        a = (old.get(h.path) or "").splitlines()
        changed = list(h.new) + a[h.start:h.end]
        for line in changed:
            idents.update(i for i in _IDENT.findall(line) if i not in _COMMON)
        for line in reversed(a[:h.start + 1]):
            m = re.match(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", line)
            if m:
                idents.add(m.group(1))
                if not line.startswith((" ", "\t")):
                    break
    return idents, mods - {"__init__", ""}


def enclosing_names(hunks: list[Hunk], old: dict[str, str]) -> set[str]:
    """The functions and classes whose bodies the hunks change (the most specific names an entry can give)."""
    out = set()
    for h in hunks:
        for line in reversed((old.get(h.path) or "").splitlines()[:h.start + 1]):
            m = re.match(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", line)
            if m:
                out.add(m.group(1))
                break
    return out - _COMMON


_ISSUE_IN_TEST = re.compile(r"(?:(?<![A-Za-z0-9])|(?<=Test))(?:[Ii]ssue|[Gg][Hh]|[Bb]ug|[Pp]r|[Pp]ull)_?(\d+)")


def issue_refs(tests: Iterable[str]) -> set[str]:
    """Issue numbers the tests' names carry (``test_issue_81``, ``TestGH112``, ``test_bug_7``).

    >>> sorted(issue_refs(["t.py::T::test_14_issue_81_a", "t.py::TestGh112::test_x", "t.py::test_expr1"]))
    ['112', '81']
    """
    return {m for t in tests for m in _ISSUE_IN_TEST.findall(t.split("::", 1)[-1])}


def test_name_words(tests: Iterable[str]) -> set[str]:
    """Identifiers the failing tests' names carry: each name whole, and every run of two or more of its
    ``_``-separated parts (``test_get_host_invalid`` names ``get_host``, the function an entry would cite).

    >>> sorted(test_name_words(["t.py::test_get_host_invalid[a:0]"]))
    ['get_host', 'get_host_invalid', 'host_invalid', 'test_get_host_invalid']
    """
    out: set[str] = set()
    for t in tests:
        for w in re.findall(r"[A-Za-z_]\w{2,}", t.split("::")[-1].split("[")[0]):
            if w == "test":
                continue
            out.add(w)
            parts = [x for x in w.split("_") if x]
            parts = parts[1:] if parts and parts[0].lower() == "test" else parts
            out.update("_".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 2, len(parts) + 1))
    return out


def match_changelog(tree: Path, version: str, idents: set[str], mods: set[str], defs: set[str] = frozenset(),
                    accept: Callable[[str], bool] | None = None, refs: set[str] = frozenset()
                    ) -> tuple[str, str, float]:
    """``(entry, changelog file, score)`` of the best-matching entry of ``version``'s section, or
    ``("", "", 0)`` when no entry names an identifier of the fix (or two of its modules; or, when it is the
    release's only entry, one of them). Naming a function the fix changes (``defs``) weighs much; citing
    an issue that its tests are named after (``refs``, see :func:`issue_refs`) most.

    ``accept`` (given the entry as :func:`clean_entry` writes it) leaves out entries that cannot be the
    statement, e.g. one naming an API that release N lacks (a feature of the same release)."""
    best = ("", "", 0.0)
    for rel in changelog_files(tree):
        try:
            text = (tree / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        entries = changelog_entries(changelog_section(text, version)) if not rel.startswith("README") else []
        entries = entries or version_bullets(text, version)
        for entry in entries:
            words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", entry))
            lower = {w.lower() for w in words}
            score = (2.0 * len({i for i in idents if i in words}) + len({m for m in mods if m.lower() in lower})
                     + 4.0 * len({d for d in defs if d in words})
                     + 10.0 * len({r for r in refs if re.search(rf"(#|\b(issue|pull|pr|gh)\s*#?){r}\b", entry, re.I)})
                     )
            if len(entries) == 1 and score >= 1:  # the release's only entry, and it names what the fix touches
                score = max(score, 2.0)
            if score > best[2] and (accept is None or accept(clean_entry(entry))):
                best = (entry, rel, score)
    return best if best[2] >= 2 else ("", "", 0.0)
