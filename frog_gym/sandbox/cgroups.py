"""Per-sandbox control groups: the process and memory bounds of a sandbox, and the way to kill all of it.

Each sandbox (and each one-shot grading process) gets its own cgroup in every hierarchy this machine lets
us write: ``pids`` (``pids.max``: the process count) and ``memory`` (``memory.limit_in_bytes``: the
whole sandbox's memory, ``/tmp`` included, since tmpfs pages are charged to their writer) on cgroup v1, or
one cgroup with ``pids.max``/``memory.max`` on a delegated cgroup v2 tree. A sandbox's processes cannot
leave it (no cgroupfs inside, no capabilities), so ``kill()`` reaches every one of them, however it was
started: ``setsid``, double forks, a bubblewrap still setting up its namespaces.

A cgroup's name carries its owner: ``frog-gym-<host>-<pid>-<start>-<random>`` (see
:func:`frog_gym.sandbox.owner.token`), so the reaper can tell the cgroups of a driver that died from the
live ones of other drivers on the same machine.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from frog_gym.sandbox import owner

PREFIX = "frog-gym-"
_V1 = ("pids", "memory")


def _own_path(controller: str) -> str | None:
    """This process's cgroup in a v1 hierarchy (``controller``) or the v2 tree (``""``)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            if controller in names.split(","):
                return path.lstrip("/")
            if controller == "" and names == "":
                return path.lstrip("/")
    except (OSError, ValueError):
        pass
    return None


def parents() -> list[tuple[str, Path]]:
    """Where this process may make sandbox cgroups: ``(kind, folder)``, kind a v1 controller or ``"v2"``."""
    out: list[tuple[str, Path]] = []
    for ctl in _V1:
        root = Path("/sys/fs/cgroup") / ctl
        own = _own_path(ctl)
        if own is not None and (root / "cgroup.procs").exists():
            out.append((ctl, root / own))
    if not out and (Path("/sys/fs/cgroup") / "cgroup.controllers").exists():
        own = _own_path("")
        if own is not None:
            out.append(("v2", Path("/sys/fs/cgroup") / own))
    return out


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def _procs(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


PF_EXITING = 0x4  # include/linux/sched.h: set on a task as it enters do_exit()


def _exiting(pid: int) -> bool:
    """True when every thread of ``pid`` has entered exit (or is gone): it will run no more of its program,
    and none of its system calls is in flight."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                flags = int(f.read().rsplit(b")", 1)[1].split()[6])
        except (OSError, IndexError, ValueError):
            continue  # gone
        if not flags & PF_EXITING:
            return False
    return True


def _kill_member(pid: int, name: str) -> None:
    """SIGKILL ``pid`` if it is (still) in the cgroup called ``name``: through a pidfd, so that a PID freed and
    reused by another process between the listing and the signal is never hit."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            if f"/{name}\n" in f.read():
                signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)


def kill_cgroup(path: Path, deadline_s: float = 10.0, *, until_gone: bool = True) -> bool:
    """SIGKILL every process in ``path``; True when verified (see :func:`kill_cgroups`)."""
    return kill_cgroups([path], deadline_s, until_gone=until_gone)


def kill_cgroups(paths: list[Path], deadline_s: float = 10.0, *, until_gone: bool = True) -> bool:
    """SIGKILL every process in the cgroups ``paths`` (one sandbox's, of the same name, one per controller);
    True when verified.

    New processes are refused first (``pids.max`` 0), so a fork bomb cannot refill a cgroup while it is
    emptied; ``cgroup.kill`` kills all at once where the kernel has it (cgroup v2, Linux 5.14). Every process
    listed in any of the cgroups is signalled once, and all of them are watched together. Verified means:
    with ``until_gone``, every cgroup is empty; otherwise every task in them has entered exit
    (``PF_EXITING``), which is what matters before the host touches the workspace: such a task never runs
    another instruction of its program nor finishes a system call, and its teardown (address space,
    namespaces: milliseconds on a loaded machine) can go on in the background.
    """
    for path in paths:
        _write(path / "pids.max", "0")
        _write(path / "cgroup.kill", "1")
    end = time.monotonic() + deadline_s
    pause = 0.0001
    signalled: set[int] = set()
    while True:
        pids: set[int] = set()
        for path in paths:
            pids.update(_procs(path))
        if until_gone and not pids:
            return True
        for pid in pids - signalled:
            _kill_member(pid, paths[0].name)
            signalled.add(pid)
        if not until_gone and all(_exiting(p) for p in pids):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.005)


class SandboxCgroup:
    """The cgroups of one sandbox: made at construction where writable, entered by the child before exec.

    Args:
        max_processes: ``pids.max``.
        memory_bytes: the memory limit of the whole sandbox.
    """

    def __init__(self, max_processes: int, memory_bytes: int):
        self.paths: dict[str, Path] = {}
        name = f"{PREFIX}{owner.token()}-{uuid.uuid4().hex[:8]}"
        for kind, parent in parents():
            path = parent / name
            try:
                path.mkdir()
            except OSError:
                continue
            ok = True
            if kind in ("pids", "v2"):
                ok = _write(path / "pids.max", str(max_processes)) or kind == "v2"
            if kind == "memory":
                ok = _write(path / "memory.limit_in_bytes", str(memory_bytes))
                _write(path / "memory.memsw.limit_in_bytes", str(memory_bytes))  # where swap is accounted
            if kind == "v2":
                _write(path / "memory.max", str(memory_bytes))
                _write(path / "memory.swap.max", "0")
            if ok:
                self.paths[kind] = path
            else:
                _rmdir(path)

    @property
    def pids_path(self) -> Path | None:
        """The cgroup that counts processes (``pids.current``), if any."""
        return self.paths.get("pids") or self.paths.get("v2")

    def bounds_memory(self) -> bool:
        """True when the whole sandbox's memory is bounded by the kernel."""
        return "memory" in self.paths or ("v2" in self.paths and (self.paths["v2"] / "memory.max").exists())

    def enter(self) -> None:
        """Move the calling process into every cgroup (called in the child between fork and exec)."""
        for path in self.paths.values():
            (path / "cgroup.procs").write_text(str(os.getpid()))

    def procs(self) -> list[int]:
        """Host PIDs of the sandbox's live processes."""
        seen: set[int] = set()
        for path in self.paths.values():
            seen.update(_procs(path))
        return sorted(seen)

    def kill(self, *, until_gone: bool = True) -> bool:
        """Kill every process of the sandbox; True when verified (see :func:`kill_cgroup`). False: no cgroup,
        or a process that would not die."""
        if not self.paths:
            return False
        return kill_cgroups(list(self.paths.values()), until_gone=until_gone)

    def remove(self) -> None:
        """Remove the (empty) cgroups; a busy one is left to the reaper."""
        for path in self.paths.values():
            _rmdir(path)
        self.paths = {}


def _rmdir(path: Path) -> None:
    for _ in range(50):  # a killed task leaves the cgroup a moment after it leaves cgroup.procs
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.002)


def sweep(dead: Callable[[str], bool]) -> int:
    """Kill and remove every frog-gym cgroup whose owner ``dead(token)`` says is gone; returns how many.

    Cgroups of the old naming (``frog-gym-<12 hex>``, no owner) are only removed when empty.
    """
    n = 0
    for _, parent in parents():
        try:
            entries = list(parent.glob(PREFIX + "*"))
        except OSError:
            continue
        for path in entries:
            tok = owner.token_in(path.name[len(PREFIX):])
            if tok is None:
                if not _procs(path):
                    _rmdir(path)
                continue
            if dead(tok):
                kill_cgroup(path, deadline_s=5.0)
                _rmdir(path)
                n += 1
    return n
