"""Episode workspaces: a task's buggy tree as a one-commit git repository, reset and diffed fast.

A *template* is made once per task (snapshot + bug patch + ``git init`` with one commit, so no history
shows the fix) with a manifest of every entry's content digest. A *workspace* is the episode's writable
copy. Resetting it restores only what changed since the last sync (a stat scan, then copies), which is
what ``git reset --hard && git clean -fdx`` does, without running git on a tree the agent controlled.
Diffs are computed here in Python too, for the same reason: a workspace's ``.git/config`` is the
agent's, and git honours commands written there.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from frog_gym import paths
from frog_gym.errors import SourceError
from frog_gym.snapshot import PreparedRepo, git_commit_tree

_NOISE_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache"}
_MARKER = ".frog-complete"


@dataclass(frozen=True)
class Change:
    """One file that differs from the task's starting state (``old``/``new`` None: absent)."""

    path: str
    old: bytes | None
    new: bytes | None


def _digest(p: Path) -> str:
    return hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest()


def _walk(root: Path) -> dict[str, os.stat_result]:
    """Every entry under ``root`` (relative path -> lstat), symlinks not followed."""
    out: dict[str, os.stat_result] = {}
    base = str(root)
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            it = os.scandir(f"{base}/{rel}" if rel else base)
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            continue
        with it:
            for e in it:
                r = f"{rel}/{e.name}" if rel else e.name
                st = e.stat(follow_symlinks=False)
                out[r] = st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(r)
    return out


def _sig(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _is_noise(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0] == ".git" or any(p in _NOISE_DIRS for p in parts) or rel.endswith((".pyc", ".pyo"))


def _manifest(root: Path) -> dict[str, list]:
    m: dict[str, list] = {}
    for rel, st in _walk(root).items():
        if stat.S_ISLNK(st.st_mode):
            m[rel] = ["l", 0, os.readlink(root / rel), 0]
        elif stat.S_ISDIR(st.st_mode):
            m[rel] = ["d", 0, "", st.st_mode & 0o7777]
        else:
            m[rel] = ["f", st.st_size, _digest(root / rel), st.st_mode & 0o7777]
    return m


@dataclass(frozen=True)
class Template:
    """A task's pristine starting tree (read-only by convention) and its manifest."""

    root: Path
    manifest: dict[str, list]


def apply_patch(tree: Path, patch: str, what: str) -> None:
    """Apply a unified diff to a plain folder with ``git apply`` (no repository needed)."""
    if not patch.strip():
        return
    proc = subprocess.run(["git", "apply", "--whitespace=nowarn", "-p1", "-"], cwd=tree, input=patch,
                          capture_output=True, text=True, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1",
                                                               "GIT_CONFIG_GLOBAL": os.devnull})
    if proc.returncode != 0:
        raise SourceError(f"{what} does not apply to {tree}: {proc.stderr.strip()[:800]}")


def template_for(repo: PreparedRepo, bug_patch: str, label: str) -> Template:
    """The cached starting tree of a task (the snapshot with ``bug_patch`` applied, one git commit)."""
    key = hashlib.sha256(f"{repo.spec.source.key}\0{bug_patch}".encode()).hexdigest()[:20]
    base = paths.home() / "templates"
    base.mkdir(exist_ok=True)
    root, man = base / key, base / f"{key}.manifest.json"
    if not man.exists():
        with FileLock(str(base / f"{key}.lock")):
            if not man.exists():
                shutil.rmtree(root, ignore_errors=True)
                with tempfile.TemporaryDirectory(dir=base) as tmp:
                    staged = Path(tmp) / "t"
                    shutil.copytree(repo.tree, staged, symlinks=True, ignore=shutil.ignore_patterns(_MARKER))
                    apply_patch(staged, bug_patch, f"the bug patch of {label}")
                    git_commit_tree(staged, f"{repo.spec.name} {repo.spec.source.version or ''}".strip())
                    os.replace(staged, root)
                tmp_man = man.with_suffix(".tmp")
                tmp_man.write_text(json.dumps(_manifest(root)))
                os.replace(tmp_man, man)
    return Template(root, json.loads(man.read_text()))


class Workspace:
    """A writable copy of a template, synced back to it on demand.

    Example:
        >>> import tempfile, pathlib
        >>> src = pathlib.Path(tempfile.mkdtemp()); (src / "a.py").write_text("x = 1\\n")
        6
        >>> t = Template(src, _manifest(src)); ws = Workspace(pathlib.Path(tempfile.mkdtemp()) / "w")
        >>> _ = ws.sync(t); _ = (ws.path / "a.py").write_text("x = 2\\n"); [c.path for c in ws.changes()]
        ['a.py']
        >>> _ = ws.sync(t); ws.changes()
        []
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.template: Template | None = None
        self._state: dict[str, tuple] = {}

    def sync(self, template: Template) -> int:
        """Make the workspace identical to ``template``; returns how many entries were rewritten."""
        if self.template is None or not self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(template.root, self.path, symlinks=True)
            self.template = template
            self._state = {r: _sig(st) for r, st in _walk(self.path).items()}
            return len(self._state)
        old, want = self.template.manifest, template.manifest
        have = _walk(self.path)
        base, src_base = str(self.path), str(template.root)
        touched: list[str] = []
        # Remove what should not be there (deepest first), or what is of the wrong kind or content.
        for rel in sorted(have, key=lambda r: r.count("/"), reverse=True):
            st = have[rel]
            w = want.get(rel)
            if w is not None and self._state.get(rel) == _sig(st) and old.get(rel) == w:
                continue
            p = f"{base}/{rel}"
            if stat.S_ISDIR(st.st_mode):
                if w is not None and w[0] == "d":
                    if st.st_mode & 0o7777 != w[3]:
                        os.chmod(p, w[3])
                        touched.append(rel)
                    continue
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
            have.pop(rel)
            touched.append(rel)
        # Create what is missing, parents first.
        for rel in sorted(want.keys() - have.keys(), key=lambda r: r.count("/")):
            p = f"{base}/{rel}"
            if os.path.lexists(p):  # under a folder restored above
                continue
            kind = want[rel][0]
            if kind == "d":
                os.mkdir(p)
                os.chmod(p, want[rel][3])
            elif kind == "l":
                os.symlink(want[rel][2], p)
            else:
                shutil.copy2(f"{src_base}/{rel}", p)
            touched.append(rel)
        if touched:  # re-record only what changed; a removed folder's children are gone from the state
            gone = {r for r in touched if r not in want}
            self._state = {r: v for r, v in self._state.items()
                           if r in want and not any(r == g or r.startswith(g + "/") for g in gone)}
            for rel in touched:
                if rel in want:
                    self._state[rel] = _sig(os.lstat(f"{base}/{rel}"))
                    if want[rel][0] == "d":
                        self._state.update({f"{rel}/{r}": _sig(st) for r, st in _walk(self.path / rel).items()})
        self.template = template
        return len(touched)

    def changes(self) -> list[Change]:
        """Files that differ from the starting state (noise such as ``.git`` and bytecode ignored)."""
        assert self.template is not None, "sync() first"
        man, root = self.template.manifest, self.template.root
        out: list[Change] = []
        have = _walk(self.path)
        for rel, st in sorted(have.items()):
            if _is_noise(rel) or not stat.S_ISREG(st.st_mode):
                continue
            w = man.get(rel)
            if self._state.get(rel) == _sig(st) and w is not None:
                continue
            new = (self.path / rel).read_bytes()
            if w is not None and w[0] == "f":
                old = (root / rel).read_bytes()
                if old != new:
                    out.append(Change(rel, old, new))
            else:
                out.append(Change(rel, None, new))
        for rel, w in sorted(man.items()):
            if w[0] == "f" and not _is_noise(rel) and not (rel in have and stat.S_ISREG(have[rel].st_mode)):
                out.append(Change(rel, (root / rel).read_bytes(), None))
        return out

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self.template = None
        self._state = {}


def write_changes(root: Path, changes: list[Change]) -> None:
    """Apply ``changes`` to a synced tree (grading's fresh copy)."""
    for c in changes:
        p = root / c.path
        if c.new is None:
            p.unlink(missing_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            if p.is_symlink():
                p.unlink()
            p.write_bytes(c.new)


def diff_text(changes: list[Change]) -> str:
    """A git-style unified diff of ``changes`` (what SWE-bench calls a model patch)."""
    chunks: list[str] = []
    for c in changes:
        a = f"a/{c.path}" if c.old is not None else "/dev/null"
        b = f"b/{c.path}" if c.new is not None else "/dev/null"
        head = f"diff --git a/{c.path} b/{c.path}\n"
        if c.old is None:
            head += "new file mode 100644\n"
        elif c.new is None:
            head += "deleted file mode 100644\n"
        try:
            old = (c.old or b"").decode("utf-8").splitlines(keepends=True)
            new = (c.new or b"").decode("utf-8").splitlines(keepends=True)
        except UnicodeDecodeError:
            chunks.append(head + f"Binary files {a} and {b} differ\n")
            continue
        lines = list(difflib.unified_diff(old, new, a, b, n=3))
        for i, line in enumerate(lines):
            if not line.endswith("\n"):
                lines[i] = line + "\n\\ No newline at end of file\n"
        chunks.append(head + "".join(lines))
    return "".join(chunks)
