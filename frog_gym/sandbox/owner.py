"""Who owns a sandbox resource: a token naming the driver process, so leftovers of dead drivers can be reaped.

Cgroups and work folders are named after their owner, ``<host>-<pid>-<start time>``: the host (a short
hash of its name, since ``$FROG_GYM_HOME`` may be shared between machines), the driver's PID and its start
time in clock ticks since boot (a PID is reused; the pair is not). The reaper removes a resource only when
its owner is on this host and that process is gone, so the live sandboxes of other drivers on the same
machine are never touched.

Example:
    >>> t = token()
    >>> token_in(t + "-0123abcd") == t, dead(t)
    (True, False)
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import socket

_TOKEN = re.compile(r"^([0-9a-f]{6})-(\d+)-(\d+)(?:-|$)")


def start_time(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot ("" when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


@functools.cache
def _host() -> str:
    return hashlib.sha1(socket.gethostname().encode()).hexdigest()[:6]


def token(pid: int | None = None) -> str:
    """The owner token of ``pid`` (default: this process)."""
    return _token(os.getpid() if pid is None else pid)


@functools.lru_cache(maxsize=8)
def _token(pid: int) -> str:
    return f"{_host()}-{pid}-{start_time(pid)}"


def token_in(name: str) -> str | None:
    """The owner token a resource name starts with, or None for a name of the old, ownerless form."""
    m = _TOKEN.match(name)
    return f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else None


def dead(tok: str) -> bool:
    """True when the token's owner is a process of this host that no longer runs."""
    m = _TOKEN.match(tok)
    if m is None or m.group(1) != _host():
        return False  # another machine's: its own reaper decides
    return start_time(int(m.group(2))) != m.group(3)
