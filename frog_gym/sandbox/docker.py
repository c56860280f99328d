"""The Docker sandbox backend: one container per episode, the same protocol as the local backend.

The episode's workspace (a host folder, where the file tools and diffs work) is bind-mounted at
``/testbed``; the image (see :mod:`frog_gym.sandbox.images`) carries the system programs, the Python the
venv was built from and the venv, at their host paths. The container has no network (``network_mode=
"none"``), a read-only root filesystem, a private ``/tmp``, bounds on memory, processes and CPU, and every
capability dropped. Commands run as an unprivileged user: the workspace's owner, or uid 65534 when that
owner is root, which then keeps one capability (``DAC_OVERRIDE``) so it can edit the root-owned workspace,
as the local backend's user-namespaced user can; both switch with ``setpriv``.

Inside run two processes the agent cannot signal: PID 1, a bash *supervisor* (root with only ``CAP_KILL``)
that reaps orphans and, on request over the container's attached stdin, kills every process but the
shell with builtins alone (so it works at the process limit, where a new ``docker exec`` cannot start);
and the episode's persistent shell, one ``docker exec -i bash`` whose socket speaks the local backend's
sentinel protocol: the shell's stdout and stderr carry the command's output, a third descriptor (the
exec's stderr stream) carries the control lines. A timed-out command's whole tree, ``setsid`` children
included, is killed by the supervisor and the shell survives. ``restart()`` resets inside the container
(kill all, empty ``/tmp``, ``exec`` a fresh bash); only a dead container is re-created.

Cleanup: containers carry the labels ``frog-gym=1`` and their owner's host, pid and start time. The
supervisor exits when its stdin closes, which happens when the driver closes it or dies, even by
SIGKILL, and the container is then removed by the engine. :func:`prune` (``frog-gym docker prune``, and
every new sandbox) removes whatever is left by owners that are gone.

Example:
    >>> import tempfile, pathlib
    >>> ws = pathlib.Path(tempfile.mkdtemp())
    >>> with DockerSandbox(ws) as sb:  # doctest: +SKIP
    ...     _ = sb.run("cd /tmp && export X=1")
    ...     sb.run("echo $PWD $X").output
    '/tmp 1\\n'
"""

from __future__ import annotations

import os
import select
import shlex
import socket
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from frog_gym.errors import SandboxError
from frog_gym.sandbox.base import ClosingOnExit, ExecResult, Limits
from frog_gym.sandbox.budget import DiskBudget, over_budget_message
from frog_gym.sandbox.images import SANDBOX_UID, docker_client, image_for
from frog_gym.sandbox.local import _Capture, base_env

if TYPE_CHECKING:
    from frog_gym.catalog.snapshot import PreparedRepo

TESTBED = "/testbed"
LABEL = "frog-gym"
_EOF = "\x00eof"
_STDOUT, _STDERR = 1, 2

SUPERVISOR = r"""trap '' HUP INT QUIT TERM USR1 USR2 PIPE ALRM
while read -r cmd keep tag; do
  case $cmd in
    kill)  # SIGKILL every process but PID 1 and $keep, until a whole pass finds none alive (fork bombs refill;
           # a process that exits by itself before its kill may have forked one the pass did not list)
      total=0
      for round in {1..400}; do
        seen=0
        for d in /proc/[0-9]*; do
          p=${d#/proc/}
          [[ $p == 1 || $p == "$keep" ]] && continue
          read -r line < "$d/stat" 2>/dev/null || continue
          st=${line##*) }
          [[ ${st%% *} == Z ]] && continue
          ((seen++))
          kill -9 "$p" 2>/dev/null && ((total++))
        done
        ((seen)) || break
      done
      printf 'killed %s %s\n' "$total" "$tag";;
    *) printf 'pong %s\n' "$keep";;
  esac
done
"""
"""PID 1 of every sandbox container: only bash builtins, so it needs no fork to do its work."""


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _owner_labels() -> dict[str, str]:
    return {LABEL: "1", f"{LABEL}.owner-host": socket.gethostname(), f"{LABEL}.owner-pid": str(os.getpid()),
            f"{LABEL}.owner-start": _start_time(os.getpid())}


def _owner_gone(labels: dict[str, str]) -> bool:
    if labels.get(f"{LABEL}.owner-host") != socket.gethostname():
        return False  # another machine's: its own prune decides
    try:
        pid = int(labels.get(f"{LABEL}.owner-pid", ""))
    except ValueError:
        return True
    return not os.path.exists(f"/proc/{pid}") or _start_time(pid) != labels.get(f"{LABEL}.owner-start", "")


def prune(client: Any | None = None, everything: bool = False) -> list[str]:
    """Remove frog-gym containers whose owner process is gone (all of them with ``everything``).

    Returns the names of the containers removed.
    """
    import docker

    client = client or docker_client()
    removed = []
    # The low-level listing reads each container's labels from the list itself; the high-level one inspects every
    # container afterwards, and a container that another process removes in between fails the whole prune.
    for c in client.api.containers(all=True, filters={"label": f"{LABEL}=1"}):
        if everything or _owner_gone(c.get("Labels") or {}):
            try:
                client.api.remove_container(c["Id"], force=True)
                removed.append((c.get("Names") or [c["Id"]])[0].lstrip("/"))
            except docker.errors.APIError:  # already gone or going (auto-remove, another prune)
                pass
    return sorted(removed)


class _Frames:
    """Docker's multiplexed attach stream over a raw socket: 8-byte headers, then stdout or stderr bytes."""

    def __init__(self, sock_io: Any):
        self._io = sock_io  # keeps the HTTP response, and so the connection, alive
        self.sock: socket.socket = getattr(sock_io, "_sock", sock_io)
        self.sock.setblocking(False)
        self.buf = bytearray()
        self.eof = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, data: bytes) -> None:
        try:
            self.sock.setblocking(True)
            self.sock.sendall(data)
        except OSError:
            self.eof = True
        finally:
            try:
                self.sock.setblocking(False)
            except OSError:
                pass

    def pump(self) -> list[tuple[int, bytes]]:
        """Read what is available and return the complete frames; sets ``eof`` when the stream ends."""
        while not self.eof:
            try:
                chunk = self.sock.recv(1 << 17)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.eof = True
                break
            if not chunk:
                self.eof = True
                break
            self.buf += chunk
            if len(self.buf) > 1 << 20:
                break
        out = []
        at = 0
        while len(self.buf) - at >= 8:
            n = int.from_bytes(self.buf[at + 4:at + 8], "big")
            if len(self.buf) - at < 8 + n:
                break
            out.append((self.buf[at], bytes(self.buf[at + 8:at + 8 + n])))
            at += 8 + n
        del self.buf[:at]
        return out

    def close(self) -> None:
        for s in (self.sock, self._io):
            try:
                s.close()
            except Exception:
                pass


class DockerSandbox(ClosingOnExit):
    """A Docker container over one workspace, with one persistent bash.

    Args:
        workspace: the host folder mounted writable at ``/testbed``.
        repo: the prepared repository whose image (base plus venv) to run; None: the base image.
        limits: resource bounds (``memory_bytes`` bounds each process, as in the local backend;
            ``sandbox_memory_bytes`` the container as a whole).
        binds: extra ``(host_path, sandbox_path, writable)`` mounts (grading's report folder).
        image: run this image instead (a SWE-bench instance image, say); it needs bash and ``setpriv``.
        env: extra environment variables (the repository spec's ``install.env`` by default).
        cpus: CPU cores the container may use.
        read_only: keep the root filesystem read-only (False for a grading run that installs into the image's
            environment, as SWE-bench eval scripts may; the container is discarded after).
        client: a docker SDK client (default: from ``DOCKER_HOST``).
    """

    root = TESTBED

    def __init__(self, workspace: Path, repo: PreparedRepo | None = None, limits: Limits | None = None,
                 binds: tuple[tuple[Path, str, bool], ...] = (), *, image: str | None = None,
                 env: dict[str, str] | None = None, cpus: float | None = None, read_only: bool = True,
                 client: Any | None = None):
        self.host_root = Path(workspace)
        self.limits = limits or Limits()
        venv = repo.venv if repo is not None and image is None else None
        self.env = base_env(venv, {**(repo.spec.install.env if repo is not None else {}), **(env or {})})
        self.binds = binds
        self.cpus = cpus or float(min(2, os.cpu_count() or 1))
        self.read_only = read_only
        self.client = client or docker_client()
        self.image = image or image_for(repo, self.client)
        st = os.stat(self.host_root)
        self.uid, self.gid = (st.st_uid, st.st_gid) if st.st_uid != 0 else (SANDBOX_UID, SANDBOX_UID)
        if self.uid != st.st_uid:  # git refuses a repository its user does not own, unless told it is safe
            self.env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="safe.directory", GIT_CONFIG_VALUE_0="*")
        self.container: Any = None
        self._sup: _Frames | None = None
        self._sup_buf = b""
        self._sup_seq = 0
        self._shell: _Frames | None = None
        self._exec_id: str | None = None
        self._shell_pid: int | None = None
        self._ctl_buf = b""
        self._out_held = b""
        self._marker = f"\x1f{uuid.uuid4().hex}\n".encode()
        self._pending = False
        self._closed = False
        self._budget = DiskBudget(self.host_root, self.limits.disk_bytes)
        self._budget_from_here = True
        self.restarts = 0
        gib = self.limits.sandbox_memory_bytes / (1 << 30)
        self.bounds = {"processes": f"container pids limit: {self.limits.max_processes} processes",
                       "memory": f"container memory limit: {gib:g} GiB for the whole sandbox",
                       "disk": f"{self.limits.disk_bytes / (1 << 30):g} GiB written to /testbed, checked after every "
                               "command", "kill": "by the container's PID 1"}

    # -- the container --------------------------------------------------------------------------------
    def _drop_to_user(self) -> list[str]:
        """``setpriv`` arguments that become the sandbox user, keeping DAC_OVERRIDE only when it is 65534."""
        caps = "-all,+dac_override" if self.uid == SANDBOX_UID else "-all"
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", f"--inh-caps={caps}",
                *(["--ambient-caps=+dac_override"] if self.uid == SANDBOX_UID else []), f"--bounding-set={caps}"]

    def _config(self, command: list[str], labels: dict[str, str], env: dict[str, str]) -> dict[str, Any]:
        import docker

        lim = self.limits
        mounts = [docker.types.Mount(TESTBED, str(self.host_root), type="bind")]
        mounts += [docker.types.Mount(inside, str(host), type="bind", read_only=not writable)
                   for host, inside, writable in self.binds]
        ul = docker.types.Ulimit
        return dict(
            image=self.image, command=command, user="0:0", working_dir=TESTBED, environment=env, hostname="sandbox",
            labels={**_owner_labels(), **labels}, network_mode="none", read_only=self.read_only, mounts=mounts,
            tmpfs={"/tmp": f"size={min(lim.tmp_bytes, lim.disk_bytes)},mode=1777,exec"},
            mem_limit=lim.sandbox_memory_bytes, memswap_limit=lim.sandbox_memory_bytes, pids_limit=lim.max_processes, nano_cpus=int(self.cpus * 1e9),
            cap_drop=["ALL"], cap_add=["KILL", "SETUID", "SETGID", "SETPCAP", "DAC_OVERRIDE"],
            security_opt=["no-new-privileges"], ulimits=[ul(name="core", soft=0, hard=0),
                                                         ul(name="cpu", soft=lim.cpu_seconds, hard=lim.cpu_seconds),
                                                         ul(name="fsize", soft=lim.file_bytes, hard=lim.file_bytes)])

    def _start_container(self) -> None:
        import docker

        prune(self.client)
        cmd = ["setpriv", "--inh-caps=-all", "--bounding-set=-all,+kill", "bash", "--noprofile", "--norc", "-c",
               SUPERVISOR]
        try:
            self.container = self.client.containers.create(
                stdin_open=True, auto_remove=True, **self._config(cmd, {f"{LABEL}.role": "episode"}, self.env))
            self._sup = _Frames(self.client.api.attach_socket(
                self.container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}))
            self.container.start()
        except docker.errors.DockerException as e:
            self._drop_container()
            raise SandboxError(f"could not start a container of {self.image}: {e}") from e
        self._sup_buf = b""
        if self._supervise("ping", 30) is None:
            self._drop_container()
            raise SandboxError(f"the container of {self.image} did not start its supervisor (it needs bash and "
                               "setpriv, from util-linux)")

    def _supervise(self, request: str, timeout: float = 10.0) -> str | None:
        """Send a request to PID 1 and wait for its one-line answer (None: it did not answer in time).

        Each request carries a tag PID 1 repeats in its answer, and an answer with another tag (one that came
        after its request was given up on) is dropped: a late ``killed`` line must not stand for a later kill
        that is still under way, killing the next command's processes."""
        if self._sup is None or self._sup.eof:
            return None
        self._sup_seq += 1
        tag = f"t{self._sup_seq}"
        verb, _, arg = request.partition(" ")
        self._sup.send(f"{verb} {arg or tag} {tag}\n".encode())
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._sup_buf:
                line, self._sup_buf = self._sup_buf.split(b"\n", 1)
                words = line.decode("ascii", "replace").split()
                if words and words[-1] == tag:
                    return " ".join(words[:-1])
            left = deadline - time.monotonic()
            if left <= 0 or self._sup.eof:
                return None
            select.select([self._sup], [], [], min(left, 0.5))
            for _, data in self._sup.pump():
                self._sup_buf += data

    def _alive(self) -> bool:
        return self.container is not None and self._sup is not None and not self._sup.eof

    def _drop_container(self) -> None:
        import docker

        for f in (self._shell, self._sup):
            if f is not None:
                f.close()
        self._shell = self._sup = None
        self._exec_id = self._shell_pid = None
        self._pending = False
        if self.container is not None:
            try:
                self.container.remove(force=True)
            except docker.errors.APIError:
                pass  # gone already (auto-remove)
            self.container = None

    # -- the shell ------------------------------------------------------------------------------------
    def _start_shell(self) -> None:
        if not self._alive():
            self._drop_container()
            self._start_container()
        if self._shell is not None:
            self._shell.close()
        ex = self.client.api.exec_create(self.container.id, [*self._drop_to_user(), "bash", "--noprofile", "--norc"],
                                         stdin=True, stdout=True, stderr=True, user="0:0", workdir=TESTBED,
                                         environment=self.env)
        self._exec_id = ex["Id"]
        self._shell = _Frames(self.client.api.exec_start(self._exec_id, socket=True))
        self._shell.send((f"exec 3>&2 2>&1; ulimit -v {self.limits.memory_bytes // 1024}; {self._handshake()}"
                          ).encode())
        self._ctl_buf = self._out_held = b""
        self._pending = True

    @staticmethod
    def _handshake() -> str:
        return "set +o history; PS1=''; PS2=''; printf 'ready %s\\n' $$ >&3\n"

    def _ready(self) -> None:
        if not self._pending:
            return
        self._pending = False
        cap = _Capture(4096)
        deadline = time.monotonic() + 30
        line = self._read_ctl(deadline, cap)
        while line is not None and line is not _EOF and not line.startswith("ready "):
            cap.feed(line.encode() + b"\n")  # what bash said on stderr before the handshake moved it
            line = self._read_ctl(deadline, cap)
        if line is None or line is _EOF or not line.startswith("ready "):
            self._drop_container()
            raise SandboxError(f"the sandbox shell did not start in {self.image} (it said: "
                               f"{cap.text()[0].strip()[:500] or 'nothing'})")
        self._shell_pid = int(line.split()[1])
        self._out_held = b""

    def _read_ctl(self, deadline: float, cap: _Capture) -> str | None:
        """Wait for one control line, feeding output to ``cap``; None at the deadline, ``_EOF`` at the end."""
        assert self._shell is not None
        while True:
            if b"\n" in self._ctl_buf:
                line, self._ctl_buf = self._ctl_buf.split(b"\n", 1)
                return line.decode("ascii", "replace")
            if self._shell.eof:
                return _EOF
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            select.select([self._shell], [], [], min(left, 0.5))
            for kind, data in self._shell.pump():
                if kind == _STDERR:
                    self._ctl_buf += data
                else:
                    self._feed(cap, data)

    def _feed(self, cap: _Capture, data: bytes) -> None:
        """Pass output on, holding back a tail as long as the end marker so it can be cut off."""
        held = self._out_held + data
        keep = len(self._marker)
        if len(held) > keep:
            cap.feed(held[:-keep])
            held = held[-keep:]
        self._out_held = held

    def _finish_output(self, cap: _Capture, wait: bool) -> None:
        """Docker copies stdout and stderr separately, so the control line can overtake the command's last
        output: read on until the end marker the shell prints on stdout after each command."""
        deadline = time.monotonic() + (5.0 if wait else 0.0)
        while wait and not self._out_held.endswith(self._marker) and self._shell is not None \
                and not self._shell.eof and time.monotonic() < deadline:
            select.select([self._shell], [], [], 0.05)
            for kind, data in self._shell.pump():
                if kind == _STDERR:
                    self._ctl_buf += data
                else:
                    self._feed(cap, data)
        held, self._out_held = self._out_held, b""
        cap.feed(held[:-len(self._marker)] if held.endswith(self._marker) else held)

    def _shell_exit_code(self) -> int | None:
        for _ in range(50):
            info = self.client.api.exec_inspect(self._exec_id)
            if not info.get("Running"):
                return info.get("ExitCode")
            time.sleep(0.01)
        return None

    def run(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` in the persistent shell; see :class:`~frog_gym.sandbox.base.Sandbox`."""
        if self._closed:
            raise SandboxError("run() on a closed sandbox; make a new one (or call env.reset()).")
        if self._shell is None or self._shell.eof or not self._alive():
            self._restart_shell()
        self._ready()
        assert self._shell is not None
        if self._budget_from_here:
            self._budget.begin()
            self._budget_from_here = False
        timeout = self.limits.command_timeout if timeout is None else timeout
        cap = _Capture(self.limits.output_cap)
        wrapped = (f"eval {shlex.quote(command)} </dev/null 3>&-\n"
                   "__frog_rc=$? __frog_p=(/proc/[0-9]*); printf %s " + shlex.quote(self._marker.decode()) +
                   "; printf '\\036%s %s\\n' $__frog_rc ${#__frog_p[@]} >&3; unset __frog_rc __frog_p\n"
                   ).encode("utf-8", "surrogateescape")
        start = time.monotonic()
        self._shell.send(wrapped)
        line = self._read_ctl(start + timeout, cap)
        timed_out = False
        code = None
        if line is None:
            timed_out = True
            self._kill_children()
            line = self._read_ctl(time.monotonic() + 2.0, cap)
            self._finish_output(cap, wait=line is not None and line is not _EOF)
            if line is None or line is _EOF:  # the shell itself is wedged (a loop in the shell, `exec`)
                self._restart_shell()
        elif line is _EOF:
            self._finish_output(cap, wait=False)
            code = self._shell_exit_code()
            cap.feed(b"\n[the shell exited; a new shell was started in /testbed: cd and exported variables "
                     b"were reset]\n")
            self._restart_shell()
        else:
            self._finish_output(cap, wait=True)
        if line and line is not _EOF and line.startswith("\x1e") and not timed_out:
            rc, _, procs = line[1:].partition(" ")
            try:
                code = int(rc)
            except ValueError:
                code = None
            if procs.isdigit() and int(procs) > self.limits.max_processes // 2:  # zombies count: ask PID 1
                killed = self._kill_children()
                if killed:
                    cap.feed(f"\n[{killed} background processes were killed: the sandbox was near its limit "
                             f"of {self.limits.max_processes} processes]\n".encode())
        over = self._budget.over(None)  # after every command; the container's /tmp is a tmpfs within budget
        if over is not None:
            cap.feed(over_budget_message(self.limits.disk_bytes, over).encode())
            code = code if code not in (0, None) else 1
        out, dropped = cap.text()
        return ExecResult(out, code, timed_out, cap.total, dropped, time.monotonic() - start)

    def _kill_children(self) -> int:
        """Kill every process in the container but PID 1 and the shell (``setsid`` children included);
        returns how many were killed."""
        answer = self._supervise(f"kill {self._shell_pid or 0}")
        if answer is None:
            self._drop_container()  # the supervisor is gone: the container with it
            return 0
        return int(answer.split()[-1]) if answer.split()[-1].isdigit() else 0

    def _restart_shell(self) -> None:
        if self._alive():
            self._supervise("kill 0")
        self._start_shell()
        self._ready()
        self.restarts += 1

    # -- one-shot processes (grading) -----------------------------------------------------------------
    def exec(self, argv: list[str], timeout: float, env: dict[str, str] | None = None) -> ExecResult:
        """Run one process in a fresh container over the same workspace; kill it all at ``timeout``.

        The process is also bounded inside the container (``timeout -s KILL``), so a container whose
        driver died cannot outlive its timeout by much.
        """
        import docker

        prune(self.client)
        lim = self.limits
        cmd = [*self._drop_to_user(), "bash", "--noprofile", "--norc", "-c",
               f'ulimit -v {lim.memory_bytes // 1024}; exec timeout -s KILL {int(timeout) + 5} "$@" </dev/null',
               "frog-exec", *argv]
        cap = _Capture(lim.output_cap)
        start = time.monotonic()
        try:
            ctr = self.client.containers.create(**self._config(cmd, {f"{LABEL}.role": "exec"},
                                                               {**self.env, **(env or {})}))
        except docker.errors.DockerException as e:
            raise SandboxError(f"could not create a container of {self.image}: {e}") from e
        timed_out = False
        code: int | None = None
        try:
            stream = _Frames(self.client.api.attach_socket(ctr.id, params={"stdout": 1, "stderr": 1, "stream": 1}))
            ctr.start()
            while not stream.eof:
                left = start + timeout - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                select.select([stream], [], [], min(left, 0.5))
                for _, data in stream.pump():
                    cap.feed(data)
            stream.close()
            if timed_out:
                ctr.kill()
            code = int(ctr.wait(timeout=30)["StatusCode"])
        except docker.errors.DockerException as e:
            raise SandboxError(f"the container of {self.image} failed: {e}") from e
        finally:
            try:
                ctr.remove(force=True)
            except docker.errors.APIError:
                pass
        out, dropped = cap.text()
        return ExecResult(out, None if timed_out else code, timed_out, cap.total, dropped, time.monotonic() - start)

    # -- lifecycle ------------------------------------------------------------------------------------
    def sandbox_pids(self) -> list[int]:
        """Host PIDs of the container's processes (meaningful where the engine runs on this machine)."""
        if self.container is None:
            return []
        try:
            top = self.container.top(ps_args="-eo pid")
        except Exception:
            return []
        return [int(row[0]) for row in top.get("Processes") or []]

    def restart(self) -> None:
        """Kill everything and start a fresh shell at /testbed with an empty /tmp, inside the same container
        when it is alive (a new ``exec`` of bash), else in a new one."""
        if self._closed:
            raise SandboxError("restart() on a closed sandbox")
        self._budget_from_here = True
        if self._pending and self._shell is not None and not self._shell.eof:
            try:
                self._ready()
            except SandboxError:
                pass
        if self._alive() and self._shell is not None and not self._shell.eof and self._shell_pid:
            self._kill_children()
        if self._alive() and self._shell is not None and not self._shell.eof and self._shell_pid:
            assign = " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(self.env.items()))
            self._shell.send((f"cd /tmp && find . -mindepth 1 -delete 2>/dev/null; cd {TESTBED} && "
                              f"exec /usr/bin/env -i {assign} /bin/bash --noprofile --norc\n"
                              f"{self._handshake()}").encode())
            self._ctl_buf = self._out_held = b""
            self._pending = True
            return
        if self._alive():
            self._supervise("kill 0")
        self._start_shell()

    def kill_all(self) -> None:
        """Kill every process of the episode, the shell included (see :class:`~frog_gym.sandbox.base.Sandbox`).

        PID 1 (the supervisor, not the agent's) kills every other process until none is left; a container
        whose supervisor does not answer is removed. The next command starts a fresh shell.
        """
        if self._closed or self.container is None:
            return
        if self._alive() and self._supervise("kill 0") is not None:
            if self._shell is not None:
                self._shell.close()
            self._shell = None
            self._exec_id = self._shell_pid = None
            self._pending = False
            return
        self._drop_container()

    def close(self) -> None:
        """Remove the container and everything in it. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._drop_container()
        self._budget.close()
