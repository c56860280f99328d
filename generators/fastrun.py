"""A pytest fork server for validation: one sandboxed Python that has imported pytest, forking per run.

Validating thousands of candidates means thousands of pytest runs over one workspace, and importing
pytest is about half of a small run. The server starts once per worker in the same bubblewrap sandbox a
normal run gets (the worker's workspace at ``/testbed``, the venv read-only, no network), imports pytest
and the report plugin, and for each request forks a child that calls ``pytest.main`` with the same
arguments ``python -m pytest`` would get. The package under test is imported only in the child, after
the candidate's files were written, so each run sees exactly the tree on disk. A child past its timeout is
killed with its process group. Results are read from the plugin's report file exactly as
:func:`frog_gym.grading.runner.run_tests` reads them.

If importing pytest already loads a module from ``/testbed`` (the repository *is* a pytest dependency),
the server refuses to start and callers fall back to ``run_tests``.
"""

from __future__ import annotations

import json
import os
import select
import tempfile
import time
from importlib import resources
from pathlib import Path

from frog_gym import paths
from frog_gym.grading.runner import RunResult, read_report, run_tests, test_files_of
from frog_gym.sandbox.base import Limits
from frog_gym.sandbox.local import LocalSandbox
from frog_gym.catalog.snapshot import PreparedRepo

_MARK = "\x00frog "
_SERVER = r'''
import json, os, signal, sys, time
sys.path.insert(0, "/testbed")
import pytest
loaded = sorted(n for n, m in list(sys.modules.items())
                if str(getattr(m, "__file__", "") or "").startswith("/testbed/"))
sys.path.pop(0)
def say(d):
    sys.stdout.write("\x00frog " + json.dumps(d) + "\n"); sys.stdout.flush()
say({"ready": True, "testbed_modules": loaded})
for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fd = os.open("/frog/out/log.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1); os.dup2(fd, 2)
        os.environ.update(req["env"])
        sys.path.insert(0, "/testbed")
        sys.argv = ["pytest", *req["args"]]
        try:
            code = int(pytest.main(req["args"]))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            code = 99
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    deadline = time.monotonic() + req["timeout"]
    idle_limit = req.get("idle", 0)
    status, idle, last_cpu, last_change, polls = None, False, -1, time.monotonic(), 0
    while True:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        now = time.monotonic()
        if now > deadline:
            break
        polls += 1
        if idle_limit and polls % 50 == 0:  # a child that stopped using CPU is stuck (a deadlock): end it
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                cpu = int(fields[11]) + int(fields[12])
            except (OSError, ValueError, IndexError):
                cpu = last_cpu
            if cpu != last_cpu:
                last_cpu, last_change = cpu, now
            elif now - last_change > idle_limit:
                idle = True
                break
        time.sleep(0.005)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if status is None:
        os.waitpid(pid, 0)
    say({"exit": None if status is None else os.waitstatus_to_exitcode(status), "idle": idle})
'''


class ServerUnavailable(RuntimeError):
    pass


class PytestServer:
    """A fork server over one workspace (which must stay the same folder: sync it, never replace it)."""

    def __init__(self, repo: PreparedRepo, workspace: Path, startup_timeout: float = 120):
        self.repo = repo
        self._tmp = tempfile.TemporaryDirectory(dir=paths.home())
        io = Path(self._tmp.name)
        self.in_dir, self.out_dir = io / "in", io / "out"
        self.in_dir.mkdir()
        self.out_dir.mkdir()
        (io / "server").mkdir()
        (io / "server" / "server.py").write_text(_SERVER)
        self._plugin = resources.as_file(resources.files("frog_gym").joinpath("_plugin"))
        plugin = self._plugin.__enter__()
        limits = Limits(command_timeout=3600, output_cap=8192, cpu_seconds=24 * 3600)
        self.sb = LocalSandbox(workspace, repo.venv, limits,
                               env={**repo.spec.install.env, "PYTHONPATH": "/frog/plugin"},
                               binds=((self.in_dir, "/frog/in", False), (self.out_dir, "/frog/out", True),
                                      (Path(plugin), "/frog/plugin", False), (io / "server", "/frog/server", False)))
        self.proc, self._cgroup = self.sb._spawn([str(repo.python), "/frog/server/server.py"])
        self._buf = b""
        hello = self._read(startup_timeout)
        if hello is None or not hello.get("ready"):
            self.close()
            raise ServerUnavailable(f"the pytest server of '{repo.spec.name}' did not start")
        if hello.get("testbed_modules"):
            self.close()
            raise ServerUnavailable(f"importing pytest loads the code under test ({hello['testbed_modules'][:3]})")

    def _read(self, timeout: float) -> dict | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                if text.startswith(_MARK):
                    return json.loads(text[len(_MARK):])
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                self._buf += chunk

    def run(self, ids: tuple[str, ...], timeout: float, *, details: bool = False, args: tuple[str, ...] = (),
            repeat: int = 1, idle: float = 0) -> RunResult:
        """Like :func:`frog_gym.grading.runner.run_tests` on the server's workspace; with ``idle`` > 0, a run that
        uses no CPU for that many seconds (a deadlock) ends like a timeout."""
        start = time.monotonic()
        (self.out_dir / "report.json").unlink(missing_ok=True)
        (self.in_dir / "select.json").write_text(json.dumps(list(ids)))
        env = {"FROG_REPORT": "/frog/out/report.json", "FROG_SELECT": "/frog/in/select.json"}
        if details:
            env["FROG_DETAILS"] = "1"
        if repeat > 1:
            env["FROG_REPEAT"] = str(repeat)
        argv = [*self.repo.spec.pytest_args, "-q", "-p", "frog_report", *args, *test_files_of(ids)]
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps({"args": argv, "env": env, "timeout": timeout, "idle": idle}) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            return RunResult({}, None, "", "the pytest server died", seconds=time.monotonic() - start)
        reply = self._read(timeout + 30)
        if reply is None:
            return RunResult({}, None, "", "the pytest server died", seconds=time.monotonic() - start)
        if reply["exit"] is None:
            why = f"no CPU used for {idle:.0f} s (stuck)" if reply.get("idle") else f"after {timeout:.0f} s"
            return RunResult({}, None, "", f"grading timed out: {why}", seconds=time.monotonic() - start)
        log = self.out_dir / "log.txt"
        output = log.read_text(errors="replace")[-4000:] if log.exists() else ""
        return read_report(self.out_dir / "report.json", ids, reply["exit"], output, time.monotonic() - start)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._cgroup.remove()
        self._plugin.__exit__(None, None, None)
        self._tmp.cleanup()


class Runner:
    """Runs tests on one workspace through a :class:`PytestServer`, or plain ``run_tests`` when none starts."""

    def __init__(self, repo: PreparedRepo, workspace: Path, use_server: bool = True, idle: float = 10.0):
        self.repo, self.workspace, self.idle = repo, workspace, idle
        self.server: PytestServer | None = None
        self.use_server = use_server

    def __call__(self, ids: tuple[str, ...], timeout: float, *, details: bool = False, args: tuple[str, ...] = (),
                 repeat: int = 1) -> RunResult:
        if self.use_server and (self.server is None or not self.server.alive()):
            try:
                self.server = PytestServer(self.repo, self.workspace)
            except ServerUnavailable:
                self.use_server = False
        if self.use_server and self.server is not None:
            r = self.server.run(ids, timeout, details=details, args=args, repeat=repeat, idle=self.idle)
            if r.exit_code == 99 and "wrote no report" in r.note:  # pytest.main raised in the child
                plain = run_tests(self.repo, self.workspace, ids, timeout, details=details, args=args, repeat=repeat)
                if "wrote no report" not in plain.note:  # it is the server, not the tree: stop using it
                    self.use_server = False
                    self.server.close()
                    self.server = None
                return plain
            if r.infra_failure != "the pytest server died":
                return r
            self.server.close()
            self.server = None
        return run_tests(self.repo, self.workspace, ids, timeout, details=details, args=args, repeat=repeat)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
