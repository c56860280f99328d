"""The `Sandbox` protocol every backend implements, and the records it returns.

A sandbox runs an episode's commands where they can touch only the episode's workspace. Backends (local
bubblewrap, Docker) share this protocol and nothing else. A failed or killed command is data in an
:class:`ExecResult`, never an exception; only a broken sandbox raises :class:`~frog_gym.errors.SandboxError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Limits:
    """Resource bounds of one sandbox.

    Attributes:
        command_timeout: wall seconds per command; at the limit the command's whole process tree dies.
        output_cap: bytes of output kept per command (head and tail); the rest is counted and dropped.
        memory_bytes: address-space limit per process (RLIMIT_AS).
        sandbox_memory_bytes: memory of the whole sandbox, every process and its /tmp together (a memory
            cgroup where this machine lets frog-gym make one; ``info["bounds"]`` says which bound is active).
        cpu_seconds: CPU-time limit per process (RLIMIT_CPU).
        file_bytes: largest file a process may write (RLIMIT_FSIZE).
        max_processes: processes and threads alive at once in the sandbox (pids cgroup, else RLIMIT_NPROC).
        tmp_bytes: size of the private /tmp.
        disk_bytes: bytes the sandbox may add to the workspace and its /tmp together; a command that goes over
            fails with a message saying so, and the episode goes on.
    """

    command_timeout: float = 30.0
    output_cap: int = 16_384
    memory_bytes: int = 4 << 30
    cpu_seconds: int = 600
    file_bytes: int = 512 << 20
    max_processes: int = 256
    tmp_bytes: int = 512 << 20
    sandbox_memory_bytes: int = 4 << 30
    disk_bytes: int = 1 << 30

    def __post_init__(self) -> None:
        for name in ("command_timeout", "output_cap", "memory_bytes", "cpu_seconds", "file_bytes",
                     "max_processes", "tmp_bytes", "sandbox_memory_bytes", "disk_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class ExecResult:
    """What one command did.

    Attributes:
        output: stdout and stderr interleaved, decoded as UTF-8 with replacement, capped.
        exit_code: the exit status; None when the command was killed at its timeout.
        timed_out: the command ran past its timeout and its process tree was killed.
        total_bytes: bytes the command printed in all.
        dropped_bytes: bytes cut by the output cap (``output`` says where).
        seconds: wall time of the command.
    """

    output: str
    exit_code: int | None
    timed_out: bool = False
    total_bytes: int = 0
    dropped_bytes: int = 0
    seconds: float = 0.0


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place to run an episode's commands.

    ``root`` is the repository root as seen inside the sandbox. ``host_root`` is the workspace on the
    driver's side, where file tools read and write (through :mod:`frog_gym.sandbox.workspace`'s safe helpers).
    """

    root: str
    host_root: Path
    bounds: dict[str, str]
    """Which bound is active for processes, memory and disk, in words (``info["bounds"]``)."""

    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` in the episode's persistent shell (cwd and exported variables persist)."""
        ...

    def exec(self, argv: list[str], timeout: float, env: dict[str, str] | None = None) -> ExecResult:
        """Run one process (not in the shell) with the same isolation; used by grading."""
        ...

    def restart(self) -> None:
        """Kill everything running and start a fresh shell (used by reset)."""
        ...

    def kill_all(self) -> None:
        """Kill every process the episode started, the shell included, and return once they are gone.

        The host calls it before it touches the workspace (reset's sync, collecting changes for grading), so
        no agent process can race those file operations. The next ``run()`` or ``restart()`` starts a fresh
        shell. A sandbox in which no command ran since its shell started holds no agent process; killing it
        is then a no-op.
        """
        ...

    def close(self) -> None:
        """Kill everything and release the sandbox's resources. Safe to call twice."""
        ...


@runtime_checkable
class AsyncSandbox(Protocol):
    """A sandbox that can also run a command on the running asyncio loop without holding a thread (the
    local backend). The env's ``astep`` uses ``arun`` where a sandbox has it, else runs ``run`` on a thread."""

    async def arun(self, command: str, timeout: float | None = None) -> ExecResult:
        """:meth:`Sandbox.run`, awaited; cancelling it kills every process of the sandbox, the shell too."""
        ...


class ClosingOnExit:
    """What every sandbox shares: ``with`` closes it, and so does garbage collection of one left open.

    A subclass sets ``self._closed`` (False while open) and defines an idempotent ``close()``.
    """

    _closed: bool
    close: Callable[[], None]  # the sandbox's own, idempotent

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001, S110 (nothing to report to at interpreter exit)
                pass
