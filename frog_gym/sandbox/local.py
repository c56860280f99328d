"""The local sandbox backend: bubblewrap with every namespace unshared.

Inside, the agent sees the workspace at ``/testbed`` (writable), the system directories, the Python
installation and the repository's venv (read-only), a private ``/tmp``, a loopback-only network of its
own, and nothing else: not the frog-gym cache, not the task files, not the home directory. Processes run
as an unprivileged user with no capabilities, bounded by rlimits (memory, CPU time, file size), cgroups
(process count, and the memory of the whole sandbox, see :mod:`frog_gym.sandbox.cgroups`) and a disk budget
(:mod:`frog_gym.sandbox.budget`). A timed-out command's whole process tree dies, ``setsid`` children
included, because the kill is by PID namespace rather than by process group; the shell survives.
``kill_all()`` kills the whole sandbox, shell included, by cgroup (verified empty) before the host touches
the workspace; the next command starts in a warm spare sandbox.

Every wait of a command (for its output, its exit status, its shell's handshake, a spare shell) is written
once, as a generator that yields what it waits for (:class:`Wait`, :class:`Sleep`, :class:`Join`): ``run()``
drives it blocking, ``arun()`` on the running asyncio loop, so that one thread serves many sandboxes'
commands at once (see :mod:`frog_gym.env`, ``astep``). Cancelling ``arun()`` kills the whole sandbox, the
command's process tree and the shell with it; the next command starts in a fresh shell at ``/testbed``.
Spares are launched and dead sandboxes torn down on a thread pool shared by every sandbox of the process
(``FROG_GYM_SANDBOX_THREADS``, default 4), so the process's thread count does not grow with its sandboxes.

Example:
    >>> import tempfile, pathlib
    >>> ws = pathlib.Path(tempfile.mkdtemp())
    >>> with LocalSandbox(ws) as sb:
    ...     _ = sb.run("cd /tmp && export X=1")
    ...     sb.run("echo $PWD $X").output
    '/tmp 1\\n'
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import glob
import os
import resource
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from frog_gym import paths
from frog_gym.errors import SandboxError, SandboxUnavailableError
from frog_gym.sandbox import owner
from frog_gym.sandbox.base import ClosingOnExit, ExecResult, Limits
from frog_gym.sandbox.budget import DiskBudget, open_dir, over_budget_message
from frog_gym.sandbox.cgroups import SandboxCgroup

TESTBED = "/testbed"
_EOF = "\x00eof"
SPARE_DELAY_S = 0.05
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "nsswitch.conf", "protocols", "services",
        "mime.types", "localtime", "ssl")
_INSTALL_HINT = ("bubblewrap (bwrap) is not installed. Install it with `sudo apt-get install bubblewrap` "
                 "(Debian/Ubuntu), `sudo dnf install bubblewrap` (Fedora) or `sudo pacman -S bubblewrap` (Arch). "
                 "To run without a sandbox at your own risk, set FROG_GYM_UNSANDBOXED=1 (see README, 'Safety').")


POOL_THREADS = int(os.environ.get("FROG_GYM_SANDBOX_THREADS", "4"))
"""Threads shared by every sandbox of the process to launch spare shells and reap killed sandboxes."""
_T = TypeVar("_T")


@dataclass(frozen=True)
class Wait:
    """Wait until one of ``fds`` is readable (with ``write``: writable) or ``timeout`` seconds pass; the answer
    is the ready ones."""

    fds: tuple[int, ...]
    timeout: float
    write: bool = False


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds``."""

    seconds: float


@dataclass(frozen=True)
class Join:
    """Wait for a future of the shared pool; the answer is its result."""

    future: Future[Any]


Waits = Generator["Wait | Sleep | Join", Any, _T]
"""A sandbox operation written once: it yields what it waits for and returns its result."""


def readable(fds: tuple[int, ...] | list[int], timeout: float, write: bool = False) -> list[int]:
    """Those of ``fds`` that are readable (or at end of file; with ``write``: writable) within ``timeout``
    seconds. ``poll``, not ``select``: a process running many sandboxes has descriptors past ``select``'s limit
    of 1024."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLOUT if write else select.POLLIN)
    return [fd for fd, _ in poller.poll(max(timeout, 0) * 1000)]


def drive(op: Waits[_T]) -> _T:
    """Run ``op`` to its end, blocking this thread at each wait."""
    answer: Any = None
    while True:
        try:
            w = op.send(answer)
        except StopIteration as stop:
            return stop.value
        if isinstance(w, Wait):
            answer = readable(w.fds, w.timeout, w.write)
        elif isinstance(w, Sleep):
            time.sleep(w.seconds)
            answer = None
        else:
            answer = w.future.result()


async def adrive(op: Waits[_T]) -> _T:
    """Run ``op`` to its end on the running event loop: each wait is a loop reader, timer or wrapped future."""
    loop = asyncio.get_running_loop()
    answer: Any = None
    while True:
        try:
            w = op.send(answer)
        except StopIteration as stop:
            return stop.value
        if isinstance(w, Wait):
            woken = loop.create_future()

            def wake(woken: asyncio.Future[None] = woken) -> None:
                if not woken.done():
                    woken.set_result(None)

            for fd in w.fds:
                (loop.add_writer if w.write else loop.add_reader)(fd, wake)
            timer = loop.call_later(max(w.timeout, 0), wake)
            try:
                await woken
            finally:
                timer.cancel()
                for fd in w.fds:
                    (loop.remove_writer if w.write else loop.remove_reader)(fd)
            answer = readable(w.fds, 0, w.write)  # every ready one, as the blocking wait says
        elif isinstance(w, Sleep):
            await asyncio.sleep(w.seconds)
            answer = None
        else:
            answer = await asyncio.wrap_future(w.future)


_SHARED: ThreadPoolExecutor | None = None
_SHARED_LOCK = threading.Lock()


def shared_pool() -> ThreadPoolExecutor:
    """The process's sandbox threads (:data:`POOL_THREADS`; made on first use, anew in a forked child)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="frog-sandbox")
        return _SHARED


def _forget_pool_in_child() -> None:
    global _SHARED, _SHARED_LOCK
    _SHARED, _SHARED_LOCK = None, threading.Lock()  # the parent's threads do not exist in a forked child


os.register_at_fork(after_in_child=_forget_pool_in_child)


def _prlimit_path() -> str | None:
    found = shutil.which("prlimit")
    return found and os.path.realpath(found)


def bwrap_path() -> str:
    """The bubblewrap binary, or a :class:`SandboxUnavailableError` that says how to install it."""
    found = shutil.which("bwrap")
    if not found:
        raise SandboxUnavailableError(_INSTALL_HINT)
    return found


def _etc_dir() -> Path:
    """A tiny /etc overlay (passwd, group, hosts) shared by all sandboxes, written once."""
    d = paths.home() / "etc"
    if not (d / "hosts").exists():  # hosts last: it marks the set complete
        d.mkdir(parents=True, exist_ok=True)
        for name, text in (("passwd", "frog:x:65534:65534:frog-gym:/tmp:/bin/bash\n"), ("group", "frog:x:65534:\n"),
                           ("hosts", "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n")):
            tmp = d / f"{name}.{os.getpid()}.{threading.get_ident()}.tmp"  # workers may race on a fresh cache
            tmp.write_text(text)
            tmp.replace(d / name)
    return d


def base_env(venv: Path | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The pinned environment of every sandboxed process: deterministic hash seed, TZ, locale."""
    path = "/usr/local/bin:/usr/bin:/bin"
    env = {"HOME": "/tmp", "USER": "frog", "LOGNAME": "frog", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
           "LC_ALL": "C.UTF-8", "TZ": "UTC", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONUNBUFFERED": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "PIP_NO_INDEX": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@sandbox",
           "GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@sandbox", "PATH": path}
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv}/bin:{path}"
    env.update(extra or {})
    return env



def _foreign_packages(*prefixes: str) -> list[str]:
    """The folders of installed packages outside a repository's venv that the sandbox would otherwise show: the
    base interpreter's ``site-packages`` and the system's ``dist-packages``. A registered package installed there
    at the task's version is the task's original source (``diff -r`` against ``/testbed`` prints the bug); the
    venvs are made without system site-packages, so nothing in them needs these. Each is hidden under an empty,
    read-only tmpfs."""
    found = []
    for pattern in ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages",
                    *(f"{p}/lib/python3*/*-packages" for p in prefixes)):
        for d in sorted(glob.glob(pattern)):
            if os.path.isdir(d) and not os.path.islink(d) and d not in found:
                found.append(d)
    return found

class _Capture:
    """Keeps the head and the tail of a stream up to a byte cap, counting what it drops."""

    def __init__(self, cap: int):
        self.half = max(cap // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> tuple[str, int]:
        tail = self.tail[-self.half:] if len(self.tail) > self.half else self.tail
        dropped = self.total - len(self.head) - len(tail)
        out = self.head.decode("utf-8", "replace")
        if dropped:
            out += (f"\n[... output cut: {dropped} of {self.total} bytes dropped; showing the first "
                    f"{len(self.head)} and the last {len(tail)} bytes ...]\n")
        return out + bytes(tail).decode("utf-8", "replace"), dropped


def _ns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _nspid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


class LocalSandbox(ClosingOnExit):
    """A bubblewrap sandbox over one workspace, with one persistent bash.

    Args:
        workspace: the host folder mounted writable at ``/testbed``.
        venv: the repository venv, mounted read-only at its own path (its scripts hard-code it).
        limits: resource bounds.
        env: extra environment variables.
        binds: extra ``(host_path, sandbox_path, writable)`` mounts (grading's report folder).
    """

    root = TESTBED

    def __init__(self, workspace: Path, venv: Path | None = None, limits: Limits | None = None,
                 env: dict[str, str] | None = None, binds: tuple[tuple[Path, str, bool], ...] = (),
                 isolated: bool = True):
        self.host_root = Path(workspace)
        self.isolated = isolated
        if not isolated:  # FROG_GYM_UNSANDBOXED=1: the workspace is where it is, nothing is mounted
            self.root = str(self.host_root)
        self.venv = Path(venv) if venv else None
        self.limits = limits or Limits()
        self.env = base_env(self.venv, env)
        self.binds = binds
        self._bwrap = bwrap_path() if isolated else ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._cgroup: SandboxCgroup | None = None
        self._ctl_r = -1
        self._ns: str | None = None
        self._shell_nspid: int | None = None
        self._closed = False
        self._pending = False
        self._init_pid: int | None = None
        self._spare: Future[tuple[subprocess.Popen[bytes], SandboxCgroup, int, int] | None] | None = None
        self._jobs: set[Future[Any]] = set()
        """This sandbox's work on the shared pool (a spare's launch, a teardown): close() waits for it."""
        self._hurry = threading.Event()
        self._tmp_fd: int | None = None
        self._used = False
        self._budget = DiskBudget(self.host_root, self.limits.disk_bytes)
        self._budget_from_here = True
        self.restarts = 0
        if isolated:
            from frog_gym.sandbox.reaper import reap_once

            reap_once()
        _OPEN.add(self)

    @property
    def bounds(self) -> dict[str, str]:
        """Which bound is active for processes, memory and disk, in words (``info["bounds"]``)."""
        return _bounds(self.limits)

    # -- launching ----------------------------------------------------------------------------------
    def _argv(self, command: list[str]) -> list[str]:
        if not self.isolated:
            return command
        a = [self._bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
             "--uid", "65534", "--gid", "65534", "--hostname", "sandbox", "--clearenv"]
        for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"):
            if os.path.islink(top):
                a += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top) and top != "/opt":
                a += ["--ro-bind", top, top]
        a += ["--proc", "/proc", "--dev", "/dev", "--size", str(min(self.limits.tmp_bytes, self.limits.disk_bytes)),
              "--tmpfs", "/tmp"]
        for name in _ETC:
            a += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        etc = _etc_dir()
        for name in ("passwd", "group", "hosts"):
            a += ["--ro-bind", str(etc / name), f"/etc/{name}"]
        prefix = os.path.realpath(sys.base_prefix)
        if not prefix.startswith("/usr"):
            a += ["--ro-bind", prefix, prefix]
            if os.path.realpath(sys.base_prefix) != sys.base_prefix:
                a += ["--ro-bind", prefix, sys.base_prefix]
        for d in _foreign_packages(prefix, sys.base_prefix):
            a += ["--tmpfs", d, "--remount-ro", d]
        if self.venv is not None:
            a += ["--ro-bind", str(self.venv), str(self.venv)]
        a += ["--bind", str(self.host_root), TESTBED]
        for host, inside, writable in self.binds:
            a += ["--bind" if writable else "--ro-bind", str(host), inside]
        a += ["--remount-ro", "/"]  # bwrap's root is a tmpfs; read-only, so /etc or / take no writes
        for k, v in sorted(self.env.items()):
            a += ["--setenv", k, v]
        a += ["--chdir", TESTBED, "--", *command]
        return a

    def _preexec(self, cgroup: SandboxCgroup) -> None:
        lim = self.limits
        resource.setrlimit(resource.RLIMIT_AS, (lim.memory_bytes, lim.memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (lim.cpu_seconds, lim.cpu_seconds))
        resource.setrlimit(resource.RLIMIT_FSIZE, (lim.file_bytes, lim.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cgroup.pids_path is None:
            resource.setrlimit(resource.RLIMIT_NPROC, (lim.max_processes, lim.max_processes))
        cgroup.enter()

    def _launcher(self, cgroup: SandboxCgroup) -> list[str] | None:
        """A command prefix that does what :meth:`_preexec` does (enter the cgroups, then the rlimits) in the child
        itself, so that the launch needs no Python between fork and exec: ``subprocess`` then starts it with
        ``vfork``, which neither copies this (possibly large) process nor holds its interpreter lock for the
        milliseconds a fork takes. None where ``prlimit`` (util-linux) is missing: :meth:`_preexec` then."""
        prlimit = _prlimit_path()
        if prlimit is None:
            return None
        lim = self.limits
        enter = "".join(f"echo $$ >{shlex.quote(str(p / 'cgroup.procs'))} && " for p in cgroup.paths.values())
        limits = [f"--as={lim.memory_bytes}", f"--cpu={lim.cpu_seconds}", f"--fsize={lim.file_bytes}", "--core=0"]
        if cgroup.pids_path is None:
            limits.append(f"--nproc={lim.max_processes}")
        return ["/bin/sh", "-c", f'{enter}exec "$@"', "frog-launch", prlimit, *limits, "--"]

    def _spawn(self, command: list[str], pass_fds: tuple[int, ...] = ()) -> tuple[subprocess.Popen[bytes], SandboxCgroup]:
        cgroup = SandboxCgroup(self.limits.max_processes, self.limits.sandbox_memory_bytes)
        # The launcher's environment names its owner: where no cgroup could be made, the reaper finds a dead
        # driver's sandboxes by it (bubblewrap clears it for the sandboxed command).
        env = {**os.environ, "FROG_GYM_SANDBOX_OWNER": owner.token()}
        prefix = self._launcher(cgroup)
        try:
            proc = subprocess.Popen([*(prefix or ()), *self._argv(command)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=pass_fds,
                                    preexec_fn=None if prefix else lambda: self._preexec(cgroup), close_fds=True,
                                    **({"env": env} if self.isolated else {"cwd": self.host_root, "env": self.env,
                                                                           "start_new_session": True}))
        except OSError as e:
            cgroup.remove()
            raise SandboxError(f"could not start bubblewrap: {e}") from e
        return proc, cgroup

    def _launch(self) -> tuple[subprocess.Popen[bytes], SandboxCgroup, int, int]:
        """Start a sandboxed shell and send its handshake; returns (process, cgroup, control fd, its number)."""
        ctl_r, ctl_w = os.pipe()
        try:
            proc, cgroup = self._spawn(["/bin/bash", "--noprofile", "--norc"], pass_fds=(ctl_w,))
        finally:
            os.close(ctl_w)
        os.set_blocking(ctl_r, False)
        assert proc.stdout is not None and proc.stdin is not None
        os.set_blocking(proc.stdout.fileno(), False)
        try:  # a few bytes into an empty pipe: this write does not wait
            os.write(proc.stdin.fileno(),
                     f"set +o history; PS1=''; PS2=''; exec 2>&1; printf 'ready %s\\n' $$ >&{ctl_w}\n".encode())
        except OSError:
            pass
        os.set_blocking(proc.stdin.fileno(), False)  # commands are written by _send_g, which waits on the loop
        return proc, cgroup, ctl_r, ctl_w

    def _make_spare(self, hurry: threading.Event) -> tuple[subprocess.Popen[bytes], SandboxCgroup, int, int] | None:
        # Started at a reset: wait a moment, so the launch (a fork of this process) does not stall the reset
        # that asked for it, unless the spare is needed now.
        hurry.wait(SPARE_DELAY_S)
        if self._closed:
            return None
        try:
            return self._launch()
        except SandboxError:
            return None

    def _start_shell(self) -> None:
        drive(self._start_shell_g())

    def _start_shell_g(self) -> Waits[None]:
        """Adopt the warm spare shell (or launch one) and warm the next spare in the background.

        Launching costs tens of milliseconds (moving a process into a cgroup waits for RCU on cgroup v1),
        so a spare is started on a thread while the episode runs, and a reset only swaps it in. A spare still
        queued behind other sandboxes' work on the shared pool is not waited for: it is launched here.
        """
        spare = None
        if self._spare is not None:
            self._hurry.set()
            if not self._spare.cancel():
                spare = yield Join(self._spare)
            self._spare = None
        if spare is None or spare[0].poll() is not None:
            if spare is not None:
                self._discard(spare)
            spare = self._launch()
        self._proc, self._cgroup, self._ctl_r, self._ctl_fd = spare
        self._ctl_buf = b""
        self._pending = True
        if not self._closed:
            self._hurry = threading.Event()
            self._spare = self._submit(self._make_spare, self._hurry)

    def _submit(self, fn: Any, *args: Any) -> Future[Any]:
        """Run ``fn(*args)`` on the shared pool, as work of this sandbox that close() waits for."""
        job = shared_pool().submit(fn, *args)
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        return job

    @staticmethod
    def _discard(spare: tuple[subprocess.Popen[bytes], SandboxCgroup, int, int]) -> None:
        proc, cgroup, ctl_r, _ = spare
        _terminate(proc, cgroup)
        os.close(ctl_r)

    def _ready_g(self) -> Waits[None]:
        """Wait for the shell's handshake (it boots while the caller does other work)."""
        if not self._pending:
            return
        self._pending = False
        line = yield from self._read_ctl_g(time.monotonic() + 10, _Capture(4096))
        if line is None or line is _EOF or not line.startswith("ready "):
            out = self._drain_now()
            self._kill_all()
            raise SandboxError("the sandbox shell did not start (bubblewrap said: "
                               f"{out.strip()[:500] or 'nothing'}). Check that `bwrap --unshare-all true` works "
                               "on this machine.")
        self._shell_nspid = int(line.split()[1])
        self._ns = yield from self._find_ns_g()

    def _find_ns_g(self) -> Waits[str | None]:
        assert self._proc is not None
        if not self.isolated:
            return f"session:{self._proc.pid}"
        own = _ns_of(os.getpid())
        for _ in range(100):
            try:
                kids = Path(f"/proc/{self._proc.pid}/task/{self._proc.pid}/children").read_text().split()
            except OSError:
                kids = []
            for k in kids:
                ns = _ns_of(int(k))
                if ns and ns != own:
                    self._init_pid = int(k)
                    return ns
            yield Sleep(0.001)
        return None

    # -- talking to the shell -------------------------------------------------------------------------
    def _send_g(self, data: bytes, deadline: float) -> Waits[None]:
        """Write ``data`` to the shell, waiting (not blocking) while its pipe is full: a long command is read by
        bash a byte at a time. Stops at ``deadline`` (the caller then finds the command timed out) or when the
        shell is gone (the caller then finds it exited)."""
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        rest = memoryview(data)
        while rest:
            try:
                rest = rest[os.write(fd, rest):]
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                yield Wait((fd,), min(left, 0.5), write=True)
            except OSError:
                return

    def _drain_now(self) -> str:
        cap = _Capture(8192)
        self._pump(cap)
        return cap.text()[0]

    def _pump(self, cap: _Capture) -> bool:
        """Read what output is available; False at end of file."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            cap.feed(chunk)

    def _read_ctl_g(self, deadline: float, cap: _Capture) -> Waits[str | None]:
        """Wait for one control line, pumping output meanwhile.

        Returns None at the deadline, and ``_EOF`` when the shell has gone away.
        """
        assert self._proc is not None and self._proc.stdout is not None
        out_fd = self._proc.stdout.fileno()
        out_open = True
        while True:
            if b"\n" in self._ctl_buf:
                line, self._ctl_buf = self._ctl_buf.split(b"\n", 1)
                return line.decode("ascii", "replace")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            fds = [self._ctl_r] + ([out_fd] if out_open else [])
            ready = yield Wait(tuple(fds), min(left, 0.5))
            if out_fd in ready:
                out_open = self._pump(cap)
            if self._ctl_r in ready:
                try:
                    chunk = os.read(self._ctl_r, 4096)
                except BlockingIOError:
                    continue
                if not chunk:
                    self._pump(cap)
                    return _EOF
                self._ctl_buf += chunk
            if not ready and self._proc.poll() is not None:
                self._pump(cap)
                return _EOF

    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` in the persistent shell; see :class:`~frog_gym.sandbox.base.Sandbox`."""
        return drive(self._run_g(command, timeout))

    async def arun(self, command: str, timeout: float | None = None) -> ExecResult:
        """:meth:`run` on the running event loop: the same result, with no thread held while it waits.

        Cancelled (its task cancelled, or a timeout around it), it kills the whole sandbox, the command's
        process tree and the shell, before the cancellation propagates; the next command starts in a fresh
        shell at /testbed (cd and exported variables reset)."""
        try:
            return await adrive(self._run_g(command, timeout))
        except asyncio.CancelledError:
            self._kill_all()
            raise

    def _run_g(self, command: str, timeout: float | None) -> Waits[ExecResult]:
        if self._closed:
            raise SandboxError("run() on a closed sandbox; make a new one (or call env.reset()).")
        if self._proc is None or self._proc.poll() is not None:
            yield from self._restart_shell_g()
        yield from self._ready_g()
        if self._budget_from_here:  # the episode's first command: what is in the workspace now is not charged
            yield Join(self._submit(self._budget.begin))  # a walk of the tree: off the caller's loop
            self._budget_from_here = False
        timeout = self.limits.command_timeout if timeout is None else timeout
        cap = _Capture(self.limits.output_cap)
        fd = self._ctl_fd
        wrapped = (f"eval {shlex.quote(command)} </dev/null {fd}>&-\n"
                   f"printf '\\036%s\\n' $? >&{fd}\n").encode("utf-8", "surrogateescape")
        start = time.monotonic()
        self._used = True
        yield from self._send_g(wrapped, start + timeout)
        over = None
        while True:  # the disk budget is checked while the command runs, twice a second
            line = yield from self._read_ctl_g(min(start + timeout, time.monotonic() + 0.5), cap)
            if line is not None or time.monotonic() >= start + timeout:
                break
            over = yield from self._over_g()
            if over is not None:
                break
        timed_out = False
        code = None
        if line is None and over is not None:  # stop at once: a loop in the shell itself would go on writing
            yield from self._restart_shell_g()
            cap.feed(b"\n[every process of the sandbox was killed; a new shell was started in /testbed: cd and "
                     b"exported variables were reset]\n")
        elif line is None:
            timed_out = True
            yield from self._kill_children_g()
            line = yield from self._read_ctl_g(time.monotonic() + 2.0, cap)
            if line is None or line is _EOF:  # the shell itself is wedged (`exec` replaced it): a new one
                yield from self._restart_shell_g()
        elif line is _EOF:
            assert self._proc is not None
            try:
                code = self._proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:  # `exec` replaced the shell by another program
                code = None
            cap.feed(b"\n[the shell exited; a new shell was started in /testbed: cd and exported variables "
                     b"were reset]\n")
            yield from self._restart_shell_g()
        else:
            yield from self._reap_if_crowded_g(cap)
        if over is None:
            over = yield from self._over_g()
        seconds = time.monotonic() - start
        if line and line is not _EOF and line.startswith("\x1e") and not timed_out:
            try:
                code = int(line[1:])
            except ValueError:
                code = None
        if over is not None:
            cap.feed(over_budget_message(self.limits.disk_bytes, over).encode())
            code = code if code not in (0, None) else 1
        out, dropped = cap.text()
        # This shell is used now: the next reset needs the spare. It starts after the command, not during it,
        # so that its start does not slow the command down.
        self._hurry.set()
        return ExecResult(out, code, timed_out, cap.total, dropped, seconds)

    def _over_g(self) -> Waits[int | None]:
        """The disk budget's check: its cheap part here, the full count of the workspace (every few seconds, or
        when the filesystem grew past what is left) on the shared pool, so that it never stalls the loop."""
        tmp = self._tmp()
        if self._budget.due(tmp):
            return (yield Join(self._submit(self._budget.over, tmp)))
        return self._budget.over(tmp)

    def _tmp(self) -> int | None:
        """A descriptor of the sandbox's /tmp seen from the host (its init's root), for the disk budget."""
        if self._tmp_fd is None and self._init_pid is not None:
            self._tmp_fd = open_dir(f"/proc/{self._init_pid}/root/tmp")
        return self._tmp_fd

    # -- one-shot processes (grading) -----------------------------------------------------------------
    def exec(self, argv: list[str], timeout: float, env: dict[str, str] | None = None) -> ExecResult:
        """Run one process in a fresh sandbox over the same workspace; kill it all at ``timeout``."""
        saved = self.env
        self.env = {**self.env, **(env or {})}
        try:
            proc, cgroup = self._spawn(argv)
        finally:
            self.env = saved
        assert proc.stdout is not None and proc.stdin is not None
        proc.stdin.close()
        cap = _Capture(self.limits.output_cap)
        start = checked = time.monotonic()
        budget = DiskBudget(self.host_root, self.limits.disk_bytes)
        budget.begin()
        fd = proc.stdout.fileno()
        timed_out = False
        over = None
        while True:
            now = time.monotonic()
            left = start + timeout - now
            if left <= 0:
                timed_out = True
                break
            if now - checked >= 0.5:
                checked = now
                over = budget.over(None)  # /tmp is a tmpfs no larger than the budget
                if over is not None:
                    break
            if readable([fd], min(left, 0.5)):
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                cap.feed(chunk)
        if timed_out or over is not None:
            proc.kill()
        code = proc.wait()
        # The process is done, but what it left running (a daemon, say) dies with its sandbox, now.
        _terminate(proc, cgroup)
        budget.close()
        if over is not None:
            cap.feed(over_budget_message(self.limits.disk_bytes, over).encode())
            code = code if code not in (0, None) else 1
        out, dropped = cap.text()
        return ExecResult(out, None if timed_out else code, timed_out, cap.total, dropped,
                          time.monotonic() - start)

    # -- killing --------------------------------------------------------------------------------------
    def sandbox_pids(self) -> list[int]:
        """Host PIDs of every process inside the sandbox's PID namespace (the init included)."""
        if self._ns is None:
            return []
        pids = []
        if not self.isolated:  # the shell's session (setsid children escape: unsandboxed mode says so)
            sid = self._ns.split(":")[1]
            for name in os.listdir("/proc"):
                try:
                    if name.isdigit() and Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[3] == sid:
                        pids.append(int(name))
                except (OSError, IndexError):
                    pass
            return pids
        if self._cgroup is not None and self._cgroup.paths:
            # the cgroup lists exactly the sandbox's processes (plus the outer bwrap)
            return [p for p in self._cgroup.procs() if _ns_of(p) == self._ns]
        for name in os.listdir("/proc"):
            if name.isdigit() and _ns_of(int(name)) == self._ns:
                pids.append(int(name))
        return pids

    def _kill_children_g(self) -> Waits[None]:
        """Kill everything in the sandbox but its init and the shell: ``setsid`` children included."""
        for _ in range(50):
            victims = [p for p in self.sandbox_pids() if _nspid(p) not in (1, self._shell_nspid)]
            if not victims:
                return
            for p in victims:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            yield Sleep(0.005)

    def _reap_if_crowded_g(self, cap: _Capture) -> Waits[None]:
        """Background processes may outlive their command, but not crowd the process limit (a fork bomb)."""
        if self._cgroup is None or self._cgroup.pids_path is None:
            return
        try:
            current = int((self._cgroup.pids_path / "pids.current").read_text())
        except (OSError, ValueError):
            return
        if current > self.limits.max_processes // 2:
            others = [p for p in self.sandbox_pids() if _nspid(p) not in (1, self._shell_nspid)]
            yield from self._kill_children_g()
            cap.feed(f"\n[{len(others)} background processes were killed: the sandbox was near its limit of "
                     f"{self.limits.max_processes} processes]\n".encode())

    def _kill_all(self) -> None:
        """Kill the sandbox (every process in it, verified) and forget it; the next command starts a new one."""
        self._pending = False
        if self._proc is not None:
            proc, cgroup, ctl_r = self._proc, self._cgroup, self._ctl_r
            self._proc, self._cgroup, self._ctl_r = None, None, -1
            if self._closed or cgroup is None or not cgroup.kill(until_gone=False):
                _terminate(proc, cgroup)
            else:  # every process is past the point of no return; the kernel's teardown need not be waited for
                self._submit(_terminate, proc, cgroup)
            if ctl_r >= 0:
                os.close(ctl_r)
        self._ns = None
        self._init_pid = None
        self._used = False
        if self._tmp_fd is not None:
            os.close(self._tmp_fd)
            self._tmp_fd = None

    def kill_all(self) -> None:
        """Kill every process of the episode, the shell included; see :class:`~frog_gym.sandbox.base.Sandbox`.

        The whole sandbox goes: every process in its cgroup (or, where there is none, its PID namespace) is
        killed and this returns once none runs. The next command starts in a fresh sandbox (a warm spare).
        """
        if self._closed or (not self._used and self._proc is not None and self._proc.poll() is None):
            return  # no command ran in this shell since it started: nothing of the agent's is alive
        self._kill_all()

    def _restart_shell_g(self) -> Waits[None]:
        self._kill_all()
        yield from self._start_shell_g()
        yield from self._ready_g()
        self.restarts += 1

    def restart(self) -> None:
        """Kill everything and start a fresh shell at /testbed, with an empty /tmp.

        A sandbox where a command ran is killed whole (:meth:`kill_all`) and a warm spare takes its place;
        a fresh one is kept. The disk budget starts again from the workspace as it is at the next command.
        """
        if self._closed:
            raise SandboxError("restart() on a closed sandbox")
        self.kill_all()
        self._budget_from_here = True
        if self._proc is None or self._proc.poll() is not None:
            self._kill_all()
            self._start_shell()

    def close(self) -> None:
        """Kill every process of the sandbox. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._kill_all()
        self._hurry.set()
        if self._spare is not None:
            spare = self._spare.result() if not self._spare.cancel() else None
            self._spare = None
            if spare is not None:
                self._discard(spare)
        concurrent.futures.wait(list(self._jobs))  # its killed sandboxes' teardown: none of its processes is left
        self._budget.close()


def _children(pid: int) -> list[int]:
    try:
        return [int(k) for t in os.listdir(f"/proc/{pid}/task")
                for k in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _terminate(proc: subprocess.Popen[bytes], cgroup: SandboxCgroup | None) -> None:
    """Kill a sandbox started by ``_spawn``, every process in it, and reap its launcher.

    By cgroup where there is one. Otherwise the launcher (the outer bubblewrap) is stopped first, so that
    it starts nothing more, then what it started is killed: the init of the sandbox's PID namespace, whose
    death takes every process of the namespace with it; a pidfd says when each is gone. (Killing only the
    launcher is not enough: an inner bubblewrap still setting up has no parent-death signal yet and lives
    on, orphaned, as the init of its namespace.)
    """
    if cgroup is None or not cgroup.kill():
        fds = []
        try:
            os.kill(proc.pid, signal.SIGSTOP)
        except ProcessLookupError:
            pass
        for kid in _children(proc.pid):  # stopped, the launcher cannot reap them: their PIDs stay theirs
            try:
                fd = os.pidfd_open(kid)
            except OSError:
                continue
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
            fds.append(fd)
        try:
            os.killpg(proc.pid, signal.SIGKILL) if proc.pid == os.getpgid(proc.pid) else proc.kill()
        except OSError:
            pass
        for fd in fds:
            readable([fd], 10)
            os.close(fd)
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for f in (proc.stdin, proc.stdout):
        try:
            if f:
                f.close()
        except OSError:
            pass
    if cgroup is not None:
        cgroup.remove()


_OPEN: weakref.WeakSet[LocalSandbox] = weakref.WeakSet()


@atexit.register
def _close_open() -> None:
    """A driver that exits without ``close()`` still kills its sandboxes (SIGKILL: the reaper does)."""
    for sb in list(_OPEN):
        try:
            sb.close()
        except Exception:  # noqa: BLE001, S110 (nothing to report to at interpreter exit)
            pass


_BOUNDS: dict[tuple[int, int, int], dict[str, str]] = {}


def _bounds(lim: Limits) -> dict[str, str]:
    key = (lim.max_processes, lim.sandbox_memory_bytes, lim.memory_bytes)
    if key not in _BOUNDS:
        probe = SandboxCgroup(lim.max_processes, lim.sandbox_memory_bytes)
        gib = lim.sandbox_memory_bytes / (1 << 30)
        _BOUNDS[key] = {
            "processes": (f"pids cgroup: {lim.max_processes} processes" if probe.pids_path is not None else
                          f"RLIMIT_NPROC: {lim.max_processes} processes (binds no root; no pids cgroup here)"),
            "memory": (f"memory cgroup: {gib:g} GiB for the whole sandbox" if probe.bounds_memory() else
                       f"RLIMIT_AS: {lim.memory_bytes / (1 << 30):g} GiB per process (no memory cgroup here)"),
            "disk": (f"{lim.disk_bytes / (1 << 30):g} GiB written to /testbed and /tmp, checked after every command "
                     "and twice a second while one runs"),
            "kill": "by cgroup" if probe.paths else "by PID namespace",
        }
        probe.remove()
    return _BOUNDS[key]


class UnsandboxedWarning(UserWarning):
    """Commands are running without isolation (FROG_GYM_UNSANDBOXED=1)."""


def check_unsandboxed_opt_in() -> bool:
    """True when the user opted out of sandboxing; warns loudly every time."""
    if os.environ.get("FROG_GYM_UNSANDBOXED") == "1":
        warnings.warn("FROG_GYM_UNSANDBOXED=1: agent commands run WITHOUT a sandbox, with your user's full "
                      "access to files and network. Use only for debugging trusted agents.", UnsandboxedWarning,
                      stacklevel=2)
        return True
    return False
