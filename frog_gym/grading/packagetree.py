"""The package-only tree the behavioural oracle replays on: a task's files under the spec's import paths, no test
file, ``conftest.py`` or hidden test, with the agent's changes to them; and the one way the host reads a file a
replay wrote. Shared by the cold replay (:mod:`frog_gym.grading.oracle`) and the warm one
(:mod:`frog_gym.grading.oracle_server`)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

from frog_gym.catalog.snapshot import PreparedRepo
from frog_gym.sandbox.workspace import Change, Template, write_changes

_OUT_CAP = 8 << 20
"""Bytes read at most from a file a replay wrote."""


def package_template(repo: PreparedRepo, template: Template, hidden: frozenset[str] = frozenset()) -> Template:
    """``template`` cut down to the package: its files under the spec's import paths (and their folders), no test
    file, ``conftest.py`` or hidden test (``hidden``). The same root; only the manifest is smaller."""
    hidden = frozenset(hidden)
    memo = (str(template.root), id(template.manifest), repo.spec.source.key, hidden)
    known = _PACKAGE_TEMPLATES.get(memo)
    if known is not None and known[0] is template.manifest:
        return known[1]
    spec = repo.spec
    tests = tuple(p.rstrip("/") + "/" for p in spec.tests.paths)
    roots = tuple("" if p in (".", "") else p.rstrip("/") + "/" for p in spec.install.import_paths)
    manifest: dict[str, list] = {}
    for rel, w in sorted(template.manifest.items()):
        if w[0] == "f" and _wanted(spec, rel, roots, tests, hidden):
            manifest[rel] = w
            parts = rel.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d in template.manifest:
                    manifest.setdefault(d, template.manifest[d])
    pkg = Template(template.root, dict(sorted(manifest.items(), key=lambda kv: kv[0])))
    if len(_PACKAGE_TEMPLATES) > 256:
        _PACKAGE_TEMPLATES.clear()
    _PACKAGE_TEMPLATES[memo] = (template.manifest, pkg)
    return pkg


_PACKAGE_TEMPLATES: dict[tuple, tuple[dict, Template]] = {}


def _wanted(spec: Any, rel: str, roots: tuple[str, ...], tests: tuple[str, ...], hidden: frozenset[str]) -> bool:
    return (rel.startswith(roots) and not rel.startswith((".git/", *tests)) and rel not in hidden
            and not spec.tests.is_test_file(rel) and rel.rsplit("/", 1)[-1] != "conftest.py")


def package_changes(repo: PreparedRepo, changes: list[Change], hidden: frozenset[str] = frozenset()) -> list[Change]:
    """The ``changes`` that fall in the package tree (see :func:`package_template`)."""
    spec = repo.spec
    tests = tuple(p.rstrip("/") + "/" for p in spec.tests.paths)
    roots = tuple("" if p in (".", "") else p.rstrip("/") + "/" for p in spec.install.import_paths)
    return [c for c in changes if _wanted(spec, c.path, roots, tests, hidden)]


def package_tree(repo: PreparedRepo, template: Template, changes: list[Change], dest: Path,
                 hidden: frozenset[str] = frozenset()) -> Path:
    """``dest``: the package's files of ``template`` (:func:`package_template`), ``changes`` written over them."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel, (kind, _size, _digest, _mode) in package_template(repo, template, hidden).manifest.items():
        if kind == "f":
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template.root / rel, dest / rel)
    write_changes(dest, package_changes(repo, changes, hidden))
    return dest


def read_capped(path: Path) -> bytes:
    """A file the sandbox wrote, read only if it is a regular file (never through a symlink or a FIFO), capped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        chunks, left = [], _OUT_CAP
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)
