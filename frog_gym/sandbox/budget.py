"""The disk budget of a sandbox: bytes its processes may add to the workspace and its ``/tmp``.

Nothing in the kernel bounds a folder's size without a filesystem of its own (quotas, a loop device), so
the budget is checked after every command and every half second while one runs, cheaply: two
``statvfs`` calls (the workspace's filesystem and the sandbox's ``/tmp``, a few microseconds). Only when
the filesystem lost more space or inodes than the budget has left, or five seconds after the last full
count, is the workspace counted exactly: a walk through directory descriptors (``O_NOFOLLOW``, so an
agent's symlink leads nowhere) adding each entry's allocated or apparent size, whichever is larger, and
at least one block per entry, so a million empty files are charged too. ``/tmp`` is a tmpfs whose kernel
size limit is at most the budget, and counts toward the same total.

Example:
    >>> import tempfile, pathlib
    >>> ws = pathlib.Path(tempfile.mkdtemp())
    >>> b = DiskBudget(ws, 1 << 20); b.begin()
    >>> _ = (ws / "big").write_bytes(b"x" * (2 << 20)); b.over(None) > (1 << 20)
    True
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

BLOCK = 4096
RECOUNT_S = 5.0


def usage(root: Path) -> int:
    """Bytes under ``root`` as the budget counts them (symlinks not followed, hard links counted once)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(root, flags)
    except OSError:
        return 0
    stack = [top]
    while stack:
        fd = stack.pop()
        try:
            with os.scandir(fd) as it:
                entries = list(it)
        except OSError:
            entries = []
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if key in seen:
                    continue
                seen.add(key)
            total += max(st.st_blocks * 512, BLOCK)
            if stat.S_ISDIR(st.st_mode):
                try:
                    stack.append(os.open(e.name, flags, dir_fd=fd))
                except OSError:
                    pass
        os.close(fd)
    return total


def _fs(where: str | int) -> tuple[int, int]:
    """(used bytes, used inodes) of the filesystem holding ``where`` (a path or an open descriptor)."""
    v = os.fstatvfs(where) if isinstance(where, int) else os.statvfs(where)
    return (v.f_blocks - v.f_bfree) * v.f_frsize, v.f_files - v.f_ffree


def open_dir(path: str) -> int | None:
    """A descriptor of the folder ``path`` for :func:`os.fstatvfs` (no path lookup per check), or None."""
    try:
        return os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None


class DiskBudget:
    """What a sandbox may write, checked from the host.

    Args:
        workspace: the host folder mounted at ``/testbed``.
        limit: bytes the sandbox may add to it and its ``/tmp`` together.
    """

    def __init__(self, workspace: Path, limit: int):
        self.workspace = workspace
        self.limit = limit
        self.base: int | None = None
        self._counted = 0
        self._fs_at_count = (0, 0)
        self._count_time = 0.0
        self._fd: int | None = None

    def begin(self) -> None:
        """Count the workspace as it is now: what the sandbox adds from here on is charged."""
        self.close()
        self._fd = open_dir(str(self.workspace))
        self._fs_at_count = _fs(self._where())
        self.base = usage(self.workspace)
        self._counted = 0
        self._count_time = time.monotonic()

    def _where(self) -> str | int:
        return self._fd if self._fd is not None else str(self.workspace)

    def close(self) -> None:
        """Release the descriptor of the workspace."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def over(self, tmp: str | int | None) -> int | None:
        """Bytes written in all when that reaches the budget, else None. ``tmp``: the sandbox's /tmp seen from
        the host (``/proc/<pid>/root/tmp``, or a descriptor of it), None when it is gone."""
        quick = self._quick(tmp)
        if quick is None or not quick[0]:
            return None
        _, used, inodes, tmp_used = quick
        self._fs_at_count = (used, inodes)
        self._counted = max(usage(self.workspace) - self.base, 0) if self.base is not None else 0
        self._count_time = time.monotonic()
        total = self._counted + tmp_used
        return total if total >= self.limit else None

    def due(self, tmp: str | int | None) -> bool:
        """Whether :meth:`over` would count the workspace in full now (a walk of the tree, the slow part)."""
        quick = self._quick(tmp)
        return quick is not None and quick[0]

    def _quick(self, tmp: str | int | None) -> tuple[bool, int, int, int] | None:
        """The hot path (after every command): two fstatvfs calls and arithmetic. Returns whether a full count
        is due, and the filesystem's used bytes and inodes and /tmp's bytes; None before :meth:`begin`."""
        if self.base is None:
            return None
        try:
            v = os.fstatvfs(self._fd) if self._fd is not None else os.statvfs(self.workspace)
        except OSError:
            return None
        try:
            t = (os.fstatvfs(tmp) if isinstance(tmp, int) else os.statvfs(tmp)) if tmp is not None else None
        except OSError:
            t = None
        tmp_used = (t.f_blocks - t.f_bfree) * t.f_frsize if t is not None else 0
        used, inodes = (v.f_blocks - v.f_bfree) * v.f_frsize, v.f_files - v.f_ffree
        grown = max(used - self._fs_at_count[0], 0) + max(inodes - self._fs_at_count[1], 0) * BLOCK
        due = self._counted + grown + tmp_used >= self.limit or time.monotonic() - self._count_time >= RECOUNT_S
        return due, used, inodes, tmp_used


def over_budget_message(limit: int, used: int) -> str:
    """What the agent reads when its command went over the budget."""
    return (f"\n[the workspace is over its {_size(limit)} budget; delete files ({_size(used)} written to /testbed "
            "and /tmp since the episode began); this command failed]\n")


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} bytes"
