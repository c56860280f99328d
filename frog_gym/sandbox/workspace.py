"""Episode workspaces: a task's buggy tree as a one-commit git repository, reset and diffed fast.

A *template* is made once per task (snapshot + bug patch + ``git init`` with one commit, so no history
shows the fix) with a manifest of every entry's content digest. A *workspace* is the episode's writable
copy. Resetting it restores only what changed since the last sync (a stat scan, then copies), which is
what ``git reset --hard && git clean -fdx`` does, without running git on a tree the agent controlled.
Diffs are computed here in Python too, for the same reason: a workspace's ``.git/config`` is the
agent's, and git honours commands written there.

Everything here that touches a workspace treats it as hostile (the agent may have left symlinks, FIFOs or
deep trees, and swapped them in at any moment): it walks and writes relative to directory file
descriptors opened with ``O_NOFOLLOW``, never through a path that could cross a symlink, and caps what it
reads (``changes()`` reads at most :data:`MAX_FILE_BYTES` per file and :data:`MAX_TOTAL_BYTES` in all).
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
from frog_gym.catalog.snapshot import PreparedRepo, git_commit_tree

_NOISE_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache"}
_MARKER = ".frog-complete"
MAX_FILE_BYTES = 32 << 20
"""Largest changed file ``changes()`` reads; a larger one is listed in ``Workspace.skipped``, not read."""
MAX_TOTAL_BYTES = 64 << 20
"""Most bytes ``changes()`` reads in all; files past it are listed in ``Workspace.skipped``."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_DEPTH = 64
"""Deepest folder level walked; deeper entries are never read (their folder is removed at a sync)."""


@dataclass(frozen=True)
class Change:
    """One file that differs from the task's starting state (``old``/``new`` None: absent)."""

    path: str
    old: bytes | None
    new: bytes | None


def _digest(p: Path) -> str:
    return hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest()


def _open_dir(root_fd: int, rel: str, create: bool = False) -> int:
    """A new fd of the folder ``rel`` under ``root_fd``, every component opened with ``O_NOFOLLOW`` (and
    made where missing, with ``create``).

    Raises OSError (ELOOP, ENOTDIR, ENOENT) when a component is a symlink, not a folder, or missing."""
    fd = os.dup(root_fd)
    try:
        for part in rel.split("/") if rel else ():
            if part in ("", ".", ".."):
                raise OSError(f"refusing path component {part!r} in {rel!r}")
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


class _Root:
    """An open workspace root: fd-relative helpers that never follow a symlink."""

    def __init__(self, path: Path):
        self.fd = os.open(path, _DIR_FLAGS)

    def __enter__(self) -> _Root:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def parent(self, rel: str) -> tuple[int, str]:
        """(fd of the parent folder, base name); the caller closes the fd."""
        head, _, name = rel.rpartition("/")
        return _open_dir(self.fd, head), name

    def lstat(self, rel: str) -> os.stat_result:
        pfd, name = self.parent(rel)
        try:
            return os.stat(name, dir_fd=pfd, follow_symlinks=False)
        finally:
            os.close(pfd)


def _rmtree_at(dir_fd: int, name: str) -> None:
    """Remove ``name`` (a file, link or whole folder) under ``dir_fd`` without following any symlink."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    stack = [(os.open(name, _DIR_FLAGS, dir_fd=dir_fd), dir_fd, name)]
    while stack:
        fd, parent_fd, dname = stack[-1]
        sub = None
        with os.scandir(fd) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    sub = e.name
                    break
                os.unlink(e.name, dir_fd=fd)
        if sub is not None:
            stack.append((os.open(sub, _DIR_FLAGS, dir_fd=fd), fd, sub))
            continue
        stack.pop()
        os.close(fd)
        os.rmdir(dname, dir_fd=parent_fd)


def _walk(root: Path) -> dict[str, os.stat_result]:
    """Every entry under ``root`` (relative path -> lstat), symlinks never followed, at most MAX_DEPTH deep."""
    out: dict[str, os.stat_result] = {}
    try:
        top = os.open(root, _DIR_FLAGS)
    except OSError:
        return out
    stack = [("", top)]
    while stack:
        rel, fd = stack.pop()
        try:
            with os.scandir(fd) as it:
                entries = list(it)
            for e in entries:
                r = f"{rel}/{e.name}" if rel else e.name
                try:
                    st = os.stat(e.name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                out[r] = st
                if stat.S_ISDIR(st.st_mode) and r.count("/") < MAX_DEPTH:
                    try:
                        stack.append((r, os.open(e.name, _DIR_FLAGS, dir_fd=fd)))
                    except OSError:
                        pass
        except OSError:
            pass
        finally:
            os.close(fd)
    return out


_FILE = os.stat_result((stat.S_IFREG, 0, 0, 0, 0, 0, 0, 0, 0, 0))
"""The stand-in stat of an entry no walk saw (a removed folder's children): a plain file."""


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
    hidden_tests: str = ""
    """The task's ``test_patch`` when this tree was built without it (hidden tests): grading applies it."""


def apply_patch(tree: Path, patch: str, what: str, reverse: bool = False) -> None:
    """Apply a unified diff (``reverse``: undo it) to a plain folder with ``git apply`` (no repository needed)."""
    if not patch.strip():
        return
    proc = subprocess.run(["git", "apply", "--whitespace=nowarn", "-p1", *(["-R"] if reverse else []), "-"],
                          cwd=tree, input=patch,
                          capture_output=True, text=True, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1",
                                                               "GIT_CONFIG_GLOBAL": os.devnull})
    if proc.returncode != 0:
        raise SourceError(f"{what} does not apply to {tree}: {proc.stderr.strip()[:800]}")


def template_for(repo: PreparedRepo, bug_patch: str, label: str, hidden_tests: str = "") -> Template:
    """The cached starting tree of a task (the snapshot with ``bug_patch`` applied, one git commit);
    without the tests ``hidden_tests`` adds (the task's ``test_patch``) when it is given."""
    memo = (repo.spec.source.key, os.environ.get("FROG_GYM_HOME", ""), bug_patch, hidden_tests)
    known = _BY_INPUT.get(memo)
    if known is not None and known.root.is_dir():  # a reset of the same task: no hashing, no lock
        return known
    key = hashlib.sha256(f"t3\0{repo.spec.source.key}\0{bug_patch}".encode()
                         + (f"\0hidden\0{hidden_tests}".encode() if hidden_tests else b"")).hexdigest()[:20]
    base = paths.home() / "templates"
    known = _TEMPLATES.get(str(base / key))
    if known is not None:  # a finished template never changes: its manifest is read once per process
        _BY_INPUT[memo] = known
        return known
    base.mkdir(exist_ok=True)
    root, man = base / key, base / f"{key}.manifest.json"
    if not man.exists():
        with FileLock(str(base / f"{key}.lock")):
            if not man.exists():
                shutil.rmtree(root, ignore_errors=True)
                with tempfile.TemporaryDirectory(dir=base) as tmp:
                    staged = Path(tmp) / "t"
                    shutil.copytree(repo.tree, staged, symlinks=True,  # shipped bytecode could hold the original
                                    ignore=shutil.ignore_patterns(_MARKER, "__pycache__", "*.pyc", "*.pyo"))
                    apply_patch(staged, bug_patch, f"the bug patch of {label}")
                    apply_patch(staged, hidden_tests, f"the test patch of {label}", reverse=True)
                    git_commit_tree(staged, f"{repo.spec.name} {repo.spec.source.version or ''}".strip())
                    os.replace(staged, root)
                tmp_man = man.with_suffix(".tmp")
                tmp_man.write_text(json.dumps(_manifest(root)))
                os.replace(tmp_man, man)
    t = Template(root, json.loads(man.read_text()), hidden_tests)
    _TEMPLATES[str(root)] = t
    _BY_INPUT[memo] = t
    return t


_TEMPLATES: dict[str, Template] = {}
_BY_INPUT: dict[tuple[str, str, str, str], Template] = {}


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
        self.skipped: dict[str, str] = {}
        self.last_walk: dict[str, os.stat_result] | None = None
        """The tree as the last :meth:`changes` found it (None after a :meth:`sync`)."""

    @classmethod
    def empty(cls, path: Path) -> "Workspace":
        """A new, empty workspace at ``path``: its first :meth:`sync` writes only what the template's manifest
        lists (a template whose manifest is a part of its root's tree, as the oracle's package-only one)."""
        ws = cls(path)
        shutil.rmtree(ws.path, ignore_errors=True)
        ws.path.mkdir(parents=True, mode=0o700)
        ws.template = Template(ws.path, {})
        return ws

    def sync(self, template: Template, walked: dict[str, os.stat_result] | None = None) -> int:
        """Make the workspace identical to ``template``; returns how many entries were rewritten.

        ``walked``: :attr:`last_walk` of a :meth:`changes` made since the last process that could write here
        was verified dead, with nothing written since (an episode that ended in grading): the tree is then
        not walked again."""
        if self.template is None or not self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(template.root, self.path, symlinks=True)
            self.template = template
            self._state = {r: _sig(st) for r, st in _walk(self.path).items()}
            return len(self._state)
        old, want = self.template.manifest, template.manifest
        have = dict(walked) if walked is not None else _walk(self.path)
        self.last_walk = None
        src_base = str(template.root)
        touched: list[str] = []
        state = self._state
        # What may have to go: entries the template lacks, that changed since the last sync, or that the two
        # templates disagree on (a cheap first pass: most of a tree is as it was).
        suspect = [rel for rel, st in have.items()
                   if (w := want.get(rel)) is None or state.get(rel) != _sig(st) or old.get(rel) != w]
        with _Root(self.path) as root:
            # Remove what should not be there (deepest first), or what is of the wrong kind or content.
            for rel in sorted(suspect, key=lambda r: r.count("/"), reverse=True):
                st = have[rel]
                w = want.get(rel)
                try:
                    pfd, name = root.parent(rel)
                except OSError:  # an ancestor is gone or was swapped; it is handled at its own level
                    continue
                try:
                    if stat.S_ISDIR(st.st_mode) and w is not None and w[0] == "d":
                        if st.st_mode & 0o7777 != w[3]:
                            dfd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
                            try:
                                os.fchmod(dfd, w[3])
                            finally:
                                os.close(dfd)
                            touched.append(rel)
                        continue
                    if stat.S_ISREG(st.st_mode) and w is not None and w[0] == "f" and \
                            _overwrite_at(pfd, name, f"{src_base}/{rel}", st):
                        touched.append(rel)  # rewritten in place: a new inode costs several times more
                        continue
                    _rmtree_at(pfd, name)
                finally:
                    os.close(pfd)
                have.pop(rel)
                touched.append(rel)
            # Create what is missing, parents first.
            for rel in sorted(want.keys() - have.keys(), key=lambda r: r.count("/")):
                pfd, name = root.parent(rel)
                try:
                    try:
                        os.stat(name, dir_fd=pfd, follow_symlinks=False)
                        continue  # under a folder restored above
                    except FileNotFoundError:
                        pass
                    kind = want[rel][0]
                    if kind == "d":
                        os.mkdir(name, 0o700, dir_fd=pfd)
                        dfd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
                        try:
                            os.fchmod(dfd, want[rel][3])
                        finally:
                            os.close(dfd)
                    elif kind == "l":
                        os.symlink(want[rel][2], name, dir_fd=pfd)
                    else:
                        _copy_in(f"{src_base}/{rel}", pfd, name)
                finally:
                    os.close(pfd)
                touched.append(rel)
            if touched:  # re-record only what changed; a removed folder's children are gone from the state
                gone = {r for r in touched if r not in want}
                under = tuple(g + "/" for g in gone if stat.S_ISDIR(have.get(g, _FILE).st_mode))
                if under or old is not want:
                    self._state = {r: v for r, v in self._state.items()
                                   if r in want and r not in gone and not (under and r.startswith(under))}
                else:  # the same template and files only: their entries go, nothing under them
                    for g in gone:
                        self._state.pop(g, None)
                for rel in touched:
                    if rel in want:
                        self._state[rel] = _sig(root.lstat(rel))
                        if want[rel][0] == "d":
                            self._state.update({f"{rel}/{r}": _sig(st)
                                                for r, st in _walk(self.path / rel).items()})
        self.template = template
        return len(touched)

    def changes(self) -> list[Change]:
        """Files that differ from the starting state (noise such as ``.git`` and bytecode ignored).

        Reads through ``O_NOFOLLOW`` descriptors, at most :data:`MAX_FILE_BYTES` per file and
        :data:`MAX_TOTAL_BYTES` in all; what it did not read is listed in :attr:`skipped` (path -> why)."""
        assert self.template is not None, "sync() first"
        man, root = self.template.manifest, self.template.root
        out: list[Change] = []
        self.skipped: dict[str, str] = {}
        budget = MAX_TOTAL_BYTES
        have = self.last_walk = _walk(self.path)
        with _Root(self.path) as ws:
            for rel, st in sorted(have.items()):
                if _is_noise(rel) or not stat.S_ISREG(st.st_mode):
                    continue
                w = man.get(rel)
                if self._state.get(rel) == _sig(st) and w is not None:
                    continue
                if st.st_size > min(MAX_FILE_BYTES, budget):
                    self.skipped[rel] = (f"{st.st_size:,} bytes: over the {MAX_FILE_BYTES >> 20} MiB limit of one "
                                         f"file or the {MAX_TOTAL_BYTES >> 20} MiB limit of all changes")
                    continue
                new = _read_at(ws, rel, min(MAX_FILE_BYTES, budget))
                if new is None:
                    self.skipped[rel] = "not a regular file when read, or larger than the limit"
                    continue
                budget -= len(new)
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
        self.last_walk = None


def _overwrite_at(dir_fd: int, name: str, src: str, seen: os.stat_result) -> bool:
    """Give the regular file ``name`` under ``dir_fd`` the bytes, mode and times of the host file ``src``, in
    place; False when the caller must replace it whole instead: it is not, as ``seen`` (its lstat from the
    walk) says, a regular file with no other link, or it has extended attributes (then it is left empty).
    Only called with no process of the episode alive, so nothing can swap the entry in between."""
    if not stat.S_ISREG(seen.st_mode) or seen.st_nlink != 1:
        return False
    try:
        fd = os.open(name, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino) or st.st_nlink != 1 or os.listxattr(fd):
            return False
        src_st = os.stat(src)
        with open(src, "rb") as f:
            data = f.read()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, stat.S_IMODE(src_st.st_mode))
        os.utime(fd, ns=(src_st.st_atime_ns, src_st.st_mtime_ns))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _copy_in(src: str, dir_fd: int, name: str) -> None:
    """Copy the host file ``src`` to a new file ``name`` under ``dir_fd`` (mode and mtime kept)."""
    st = os.stat(src)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with open(src, "rb") as f:
            while chunk := f.read(1 << 20):
                os.write(fd, chunk)
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
        os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(fd)


def open_regular(root: _Root, rel: str) -> int | None:
    """A read-only fd of the regular file ``rel`` through O_NOFOLLOW descriptors, without blocking on a FIFO;
    None when it is missing or anything but a regular file."""
    try:
        pfd, name = root.parent(rel)
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=pfd)
    except OSError:
        return None
    finally:
        os.close(pfd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _read_at(root: _Root, rel: str, limit: int) -> bytes | None:
    """A regular file's bytes through O_NOFOLLOW descriptors; None if it is anything else or over ``limit``."""
    fd = open_regular(root, rel)
    if fd is None:
        return None
    try:
        chunks, n = [], 0
        while chunk := os.read(fd, 1 << 20):
            n += len(chunk)
            if n > limit:
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (os.write may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def parent_for_write(root: _Root, rel: str) -> tuple[int, str]:
    """The parent folder of ``rel`` (made where missing, never through a symlink) and the base name."""
    head, _, name = rel.rpartition("/")
    return _open_dir(root.fd, head, create=True), name


def write_changes(root: Path, changes: list[Change]) -> None:
    """Apply ``changes`` to a synced tree (grading's fresh copy), never following a symlink in it."""
    with _Root(root) as r:
        for c in changes:
            pfd, name = parent_for_write(r, c.path)
            try:
                mode = 0o644
                try:
                    st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        mode = stat.S_IMODE(st.st_mode)
                    if stat.S_ISDIR(st.st_mode):
                        _rmtree_at(pfd, name)
                    else:
                        os.unlink(name, dir_fd=pfd)
                except FileNotFoundError:
                    pass
                if c.new is not None:
                    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                                 dir_fd=pfd)
                    try:
                        write_all(fd, c.new)
                    finally:
                        os.close(fd)
            finally:
                os.close(pfd)


def append_file(root: Path, rel: str, data: bytes) -> None:
    """Append ``data`` to the regular file ``rel`` of a host tree, never following a symlink."""
    with _Root(root) as r:
        pfd, name = r.parent(rel)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=pfd)
        finally:
            os.close(pfd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{rel} is not a regular file")
            os.write(fd, data)
        finally:
            os.close(fd)


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
