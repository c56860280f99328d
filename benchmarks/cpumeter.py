"""CPU time of this process and everything it starts, including what no one waits for (sandboxes).

``getrusage(RUSAGE_CHILDREN)`` counts only children that were waited for; bubblewrap's outer process
exits without reaping the sandbox's init, so a sandbox's CPU never reaches it. A cgroup counts every
process in it whoever reaps them: this process joins a new ``cpuacct`` cgroup (v1) or a v2 cgroup
where the machine lets it, and every process it starts afterwards inherits it. Elsewhere it falls back to
this process plus its waited children, and says so.
"""

from __future__ import annotations

import os
import resource
import uuid
from pathlib import Path


class CpuMeter:
    """``read()``: CPU seconds used so far by this process and all its descendants (see the module doc)."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.kind = "getrusage (self + waited children only: sandboxes are missed)"
        for root, stat in ((Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage"), (Path("/sys/fs/cgroup"), "cpu.stat")):
            if not (root / stat).exists() and not (root / "cgroup.controllers").exists():
                continue
            try:
                path = root / f"frog-bench-{uuid.uuid4().hex[:10]}"
                path.mkdir()
                (path / "cgroup.procs").write_text(str(os.getpid()))
                self.path, self.stat = path, stat
                self.kind = f"cgroup {path} ({stat}: every descendant counted)"
                return
            except OSError:
                continue

    def read(self) -> float:
        if self.path is not None:
            text = (self.path / self.stat).read_text()
            if self.stat == "cpuacct.usage":
                return int(text) / 1e9
            return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

    def close(self) -> None:
        """Leave the cgroup and remove it (left in place while a descendant still runs in it)."""
        if self.path is None:
            return
        try:
            (self.path.parent / "cgroup.procs").write_text(str(os.getpid()))
            self.path.rmdir()
        except OSError:
            pass
        self.path = None
