"""The last line against leaks: remove what drivers that died left behind, never what a live one holds.

``close()`` and the sandbox's own kill leave nothing; a driver that is SIGKILLed cannot clean up, so the
next frog-gym process that makes a sandbox or an env runs :func:`reap_once`: it kills and removes the
cgroups (with every process still in them) and deletes the work folders whose owner (named in them, see
:mod:`frog_gym.sandbox.owner`) is a process of this host that is gone. Other drivers on the machine keep
their sandboxes. Resources of the old, ownerless naming are handled conservatively: an empty cgroup is
removed, a bubblewrap namespace whose launcher is gone is killed (a live sandbox's launcher is its
parent), a work folder is deleted when untouched for a day.

Example:
    >>> d = work_dir(); d.name.startswith(owner.token())
    True
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
import uuid
from pathlib import Path

from frog_gym import paths
from frog_gym.sandbox import cgroups, owner

LEGACY_WORK_AGE_S = 86_400
_done = False
_lock = threading.Lock()


def work_dir() -> Path:
    """A new episode work folder under ``$FROG_GYM_HOME/work``, named after this process."""
    return paths.home() / "work" / f"{owner.token()}-{uuid.uuid4().hex[:8]}"


def _status(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
    except OSError:
        return {}


def _orphan_namespaces(pids: list[int]) -> list[int]:
    """The inits of bubblewrap PID namespaces among ``pids`` whose launcher (their parent) is gone."""
    out = []
    for pid in pids:
        st = _status(pid)
        nspid = st.get("NSpid", "").split()
        if st.get("Name", "").strip() == "bwrap" and len(nspid) > 1 and nspid[-1] == "1":
            parent = _status(int(st.get("PPid", "0").strip() or 0))
            if parent.get("Name", "").strip() != "bwrap":
                out.append(pid)
    return out


def reap() -> dict[str, int]:
    """Reap the leftovers of dead owners; returns counts of what was removed."""
    counts = {"cgroups": cgroups.sweep(owner.dead), "processes": 0, "work": 0}
    for _, parent in cgroups.parents():  # ownerless cgroups: only orphaned namespaces are surely leaked
        for path in parent.glob(cgroups.PREFIX + "*"):
            if owner.token_in(path.name[len(cgroups.PREFIX):]) is None:
                try:
                    pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
                except (OSError, ValueError):
                    continue
                for pid in _orphan_namespaces(pids):
                    try:
                        os.kill(pid, signal.SIGKILL)
                        counts["processes"] += 1
                    except ProcessLookupError:
                        pass
    counts["processes"] += _reap_processes()
    work = paths.home() / "work"
    now = time.time()
    stale, legacy = [], []
    for d in work.iterdir() if work.is_dir() else ():
        tok = owner.token_in(d.name)
        try:
            if tok is not None and owner.dead(tok):
                stale.append(d)
            elif tok is None and now - d.lstat().st_mtime > LEGACY_WORK_AGE_S:
                legacy.append(d)
        except OSError:
            continue
    if legacy:  # a long run of an older frog-gym may still use one: keep those a sandbox has mounted
        used = _mounted()
        stale += [d for d in legacy if not any(m == str(d) or m.startswith(f"{d}/") for m in used)]
    for d in stale:
        shutil.rmtree(d, ignore_errors=True)  # never follows a symlink (fd-based on Linux)
        counts["work"] += 1
    return counts


def _mounted() -> set[str]:
    """Host folders bind-mounted into any process's mount namespace (the root of each mount, as the host
    sees it when the mount is of the root filesystem)."""
    out: set[str] = set()
    seen: set[str] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            ns = os.readlink(f"/proc/{name}/ns/mnt")
            if ns in seen:
                continue
            seen.add(ns)
            with open(f"/proc/{name}/mountinfo") as f:
                out.update(line.split()[3] for line in f)
        except (OSError, IndexError):
            continue
    return out


def _reap_processes() -> int:
    """Sandboxes started where no cgroup could be made: their launcher's environment names the owner."""
    if cgroups.parents():
        return 0
    n = 0
    key = b"FROG_GYM_SANDBOX_OWNER="
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read(1 << 16)
        except OSError:
            continue
        for item in env.split(b"\0"):
            if item.startswith(key) and owner.dead(item[len(key):].decode("ascii", "replace")):
                try:
                    os.kill(int(name), signal.SIGKILL)
                    n += 1
                except ProcessLookupError:
                    pass
    return n


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """Have the kernel send ``sig`` to this process when ``parent`` (the one that started it) dies.

    For worker processes (``frog-gym bench``'s pool): a SIGKILLed driver then takes its workers, and with
    them their sandboxes, along. Exits at once when the parent is already gone.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(sig), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def reap_once() -> None:
    """Run :func:`reap` once per process (the first sandbox or env calls it)."""
    global _done
    with _lock:
        if _done:
            return
        _done = True
    try:
        reap()
    except OSError:
        pass  # reaping is best effort; it must never stop an episode from starting
