"""Warm grading: one fork server per repository, a clean child per grade, every layer of grading kept.

A cold grade pays a new sandbox, a new interpreter, pytest's import, its plugins and the test
dependencies (hypothesis alone is half a second) before the first test runs. A :class:`GradingServer`
pays them once per repository: its parent process (``frog_gym/_plugin/frog_server.py``) runs in a
bubblewrap sandbox like a cold grade's, imports pytest and the modules the repository's pristine test
suite imports from the venv (never anything from ``/testbed``: see that file), and forks one child per
grade, which runs exactly the cold grade's pytest command line. What the cold path guarantees, this path
guarantees too:

- **Scope and static check** happen before either path (:func:`frog_gym.grading.grade.grade`).
- **Fresh state per grade**: the child is forked from a parent the agent's code never ran in; after it,
  the parent kills every other process of the sandbox and empties ``/tmp``, ``/dev/shm`` and System V IPC
  before it replies, and the host syncs the server's tree back to the task's template, so nothing of one
  grade reaches the next. A child that kills or stops the parent only makes this grade fall back to the
  cold path.
- **Signed report**: the plugin is imported in the child, where it reads a per-grade key from a FIFO
  before any code under test runs (the parent never imported it).
- **Canaries** are appended to the FAIL_TO_PASS test file and run last, exactly as cold.
- **Read-only tests**: the spec's test paths are mounted read-only from a host copy the sandbox can't
  write (so the host updates them in place without breaking the mounts); the parent checks the mounts
  before every fork.
- **Host I/O** into the tree through :mod:`frog_gym.sandbox.workspace`'s ``O_NOFOLLOW`` helpers, after every
  sandbox process but the parent is dead.

What it saves beyond the start-up: the parent keeps pytest's rewritten code of the test files and the
compiled code of the package's modules, each with the exact bytes it came from, and a child uses it only
for a file whose bytes are unchanged (``frog_server.py`` says how; the canaries' file is its cached code
followed by the canaries' own), and the host keeps that code on disk by content (:class:`CodeStore`), so a server
started later, in this process or another, takes it instead of making it again (never the agent's files' code);
the report plugin makes only the test items the selected ids name
(``"only"`` in ``$FROG_SELECT``, on the cold path too); a child ends with ``os._exit`` after its ``atexit``
handlers, without tearing every object down.

Disable it with ``FROG_GYM_GRADE_SERVER=0`` (every grade is then cold); ``FROG_GYM_CODE_STORE=0`` turns off only
the code kept between servers.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Callable

from frog_gym import paths
from frog_gym.errors import FrogGymError
from frog_gym.grading.integrity import Canaries
from frog_gym.grading.runner import (GRADING_PYTEST_ARGS, PLUGIN_PARTS, RunResult, TestStatus, _owned_modules,
                                      grading_selection, key_fifo, pristine_binds, read_report, run_tests,
                                      test_files_of, vault_env)
from frog_gym.sandbox import owner
from frog_gym.sandbox.base import Limits
from frog_gym.sandbox.local import readable
from frog_gym.catalog.snapshot import PreparedRepo, venv_key
from frog_gym.sandbox.workspace import (Change, Template, Workspace, _Root, _rmtree_at, append_file, open_regular,
                                parent_for_write, write_all, write_changes)

MAX_SERVERS = int(os.environ.get("FROG_GYM_GRADE_SERVERS", "32"))
"""Servers kept alive per process (least recently used closed first; ``FROG_GYM_GRADE_SERVERS`` sets it): a
mixed pool switches repository at almost every episode, and a waiting server holds about 40 MB."""
_LOG_TAIL = 8192


def enabled() -> bool:
    """Whether grading uses warm servers (``FROG_GYM_GRADE_SERVER=0`` turns them off)."""
    return os.environ.get("FROG_GYM_GRADE_SERVER", "1") != "0"


class Unavailable(RuntimeError):
    """This repository can't be graded warm (the caller grades cold)."""


def _test_modules(files: list[str], template: Template) -> list[str]:
    """The test files pytest will import for a run of ``files``: each ``conftest.py`` above them, then them."""
    out: dict[str, None] = {}
    for f in files:
        parts = f.split("/")[:-1]
        for i in range(len(parts) + 1):
            c = "/".join([*parts[:i], "conftest.py"])
            if c in template.manifest:
                out[c] = None
    out.update(dict.fromkeys(f for f in files if f.endswith(".py")))
    return list(out)


def _read_tail(root: Path, rel: str, limit: int = _LOG_TAIL) -> str:
    """The last ``limit`` bytes of a regular file under ``root``, never following a symlink or blocking."""
    with _Root(root) as r:
        fd = open_regular(r, rel)
    if fd is None:
        return ""
    try:
        os.lseek(fd, max(0, os.fstat(fd).st_size - limit), os.SEEK_SET)
        return os.read(fd, limit).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _empty(folder: Path) -> None:
    """Remove everything in a host folder the sandbox could write, never following a symlink."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for name in os.listdir(fd):
            _rmtree_at(fd, name)
    finally:
        os.close(fd)


def _write_in_place(root: Path, rel: str, data: bytes) -> None:
    """Rewrite a host-only file keeping its inode (a bind mount of it stays valid), or create it."""
    with _Root(root) as r:
        pfd, name = parent_for_write(r, rel)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=pfd)
        finally:
            os.close(pfd)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)


class ForkServer:
    """What every warm fork server of a repository has: a work folder named for its driver, a sandboxed parent
    process spoken to in JSON lines, its cgroup, and the plugin folder it runs from. Subclasses start the parent
    (:meth:`_spawn_parent`) and say what a request is."""

    kind = "server"

    def __init__(self, repo: PreparedRepo):
        self.repo = repo
        self.lock = threading.Lock()
        # named for its driver, like an episode's work folder: the reaper deletes it as soon as the driver is gone
        self.base = paths.home() / "work" / f"{owner.token()}-{self.kind}-{uuid.uuid4().hex[:8]}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._cgroup = None
        self._buf = b""
        self._plugin_ctx = resources.as_file(resources.files("frog_gym").joinpath("_plugin"))
        self._plugin = Path(self._plugin_ctx.__enter__())
        self.store = CodeStore(repo) if os.environ.get("FROG_GYM_CODE_STORE", "1") != "0" else None

    def _spawn_parent(self, sb, argv: list[str]) -> None:
        self.proc, self._cgroup = sb._spawn(argv)
        self._buf = b""

    def _ask(self, req: dict, timeout: float) -> dict | None:
        """:meth:`_request`, the parent's asks for kept code answered on the way (:class:`CodeStore`), and the code it
        made for files not the agent's kept for the servers to come."""
        reply = self._request({**req, "store": self.store is not None}, timeout)
        while reply is not None and "need" in reply and self.store is not None:
            reply = self._request({"code": self.store.get(reply["need"])}, timeout)
        if reply is not None and self.store is not None and reply.get("new"):
            self.store.put(reply["new"])
        return reply

    def _request(self, req: dict, timeout: float) -> dict | None:
        """Send one request and read its answer (None: no answer within ``timeout``); raises
        :class:`Unavailable` when the parent is gone."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as e:
            raise Unavailable(f"the {self.kind} died") from e
        return self._read(timeout)

    def _read(self, timeout: float) -> dict | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        parts: list[bytes] = []  # chunks of a long line (the code a parent made), each searched once
        while True:
            if b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                try:
                    return json.loads(line)
                except ValueError:
                    continue  # a line the parent's own imports printed
            left = deadline - time.monotonic()
            if left <= 0:
                self._buf = b"".join([self._buf, *parts])
                return None
            if readable([fd], min(left, 1.0)):  # poll: a process of many episodes has descriptors past 1024
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                if b"\n" in chunk:
                    self._buf, parts = b"".join([self._buf, *parts, chunk]), []
                else:
                    parts.append(chunk)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- stopping -----------------------------------------------------------------------------------
    def _stop(self) -> None:
        """End the parent (it exits when its input closes, so its CPU time is accounted to this process), or
        kill the sandbox: its PID namespace's init first (the kernel then kills every process in it)."""
        if self.proc is None:
            return
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            kids = []
        for k in kids:
            try:
                os.kill(int(k), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f:
                    f.close()
            except OSError:
                pass
        if self._cgroup is not None:
            self._cgroup.remove()
        self.proc = self._cgroup = None

    def close(self) -> None:
        self._stop()
        if self._plugin_ctx is not None:
            self._plugin_ctx.__exit__(None, None, None)
            self._plugin_ctx = None
        shutil.rmtree(self.base, ignore_errors=True)


class GradingServer(ForkServer):
    """A warm pytest fork server for one repository, over its own tree (see the module docstring)."""

    kind = "grader"

    def __init__(self, repo: PreparedRepo, template: Template, startup_timeout: float = 120.0):
        super().__init__(repo)
        self.ws = Workspace(self.base / "ws")
        self.view = self.base / "view"
        self.io_in, self.out = self.base / "in", self.base / "out"
        for d in (self.view, self.io_in, self.out):
            d.mkdir(parents=True)
        self.ws.sync(template)
        self.protect = tuple(p for p in repo.spec.tests.paths if p in template.manifest)
        self._view: dict[str, str | None] = {}
        for p in self.protect:
            src = template.root / p
            if src.is_dir():
                shutil.copytree(src, self.view / p, symlinks=True)
            else:
                (self.view / p).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, self.view / p)
        self._view = {rel: w[2] for rel, w in template.manifest.items() if w[0] == "f" and self._protected(rel)}
        self.cpu_seconds = 0.0
        """CPU seconds its processes spent grading (each child, and the parent's own work between grades)."""
        self.code_made = 0
        """How many test or package modules the parent rewrote or compiled for the last grade (the others'
        code came from its caches)."""
        self.system_seconds = 0.0
        """Of its children's CPU seconds, those spent in the kernel (a forked child's first write to each page of
        the parent's memory copies that page: ``faults``)."""
        self.faults = 0
        """Page faults its children took (minor: pages copied or zeroed, none read from disk)."""
        self.tables: str | None = None
        """Where the parent's hypothesis Unicode tables came from: ``"made"`` (a walk of every code point),
        ``"kept"`` (the host's store), None (no hypothesis preloaded, or no grade yet)."""
        self._parent_cpu = 0.0
        try:
            self._start(template, startup_timeout)
        except BaseException:
            self.close()
            raise

    def _protected(self, rel: str) -> bool:
        return any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in self.protect)

    def _package_modules(self, template: Template) -> list[str]:
        """The package's Python files in ``template``: the modules its import paths give the owned names."""
        out = []
        for rel, w in template.manifest.items():
            if w[0] != "f" or not rel.endswith(".py") or self._protected(rel):
                continue
            for p in self.repo.spec.install.import_paths:
                p = p.strip("/")
                sub = rel if p in ("", ".") else rel[len(p) + 1:] if rel.startswith(p + "/") else None
                if sub is not None and sub.split("/")[0].removesuffix(".py") in self._owned:
                    out.append(rel)
                    break
        return out

    # -- starting -----------------------------------------------------------------------------------
    def _start(self, template: Template, timeout: float) -> None:
        from frog_gym.sandbox.local import LocalSandbox, bwrap_path

        bwrap_path()

        owned = _owned_modules(template.root, self.repo.spec.install.import_paths)
        self._owned = set(owned)
        preload = preload_list(self.repo, template, owned)
        # A package pytest itself imports (pluggy, iniconfig): the parent binds pytest to the pristine release's
        # copy, then forgets it, so each child's tests import the agent's (as frog_boot.py does cold).
        pristine = pristine_binds(self.repo)
        for _ in range(4):
            (self.io_in / "server.json").write_text(json.dumps({"owned": owned, "preload": preload,
                                                                "pristine": [b[1] for b in pristine]}))
            limits = Limits(command_timeout=3600, output_cap=8192)  # per process, as cold: each child starts at 0 s
            binds = ((self.io_in, "/frog/in", False), (self.out, "/frog/out", True), (self._plugin, "/frog/plugin", False),
                     *((self.view / p, f"/testbed/{p}", False) for p in self.protect), *pristine)
            sb = LocalSandbox(self.ws.path, self.repo.venv, limits,
                              env={**self.repo.spec.install.env, "PYTHONPATH": "/frog/plugin"}, binds=binds)
            self._spawn_parent(sb, [str(self.repo.python), "/frog/plugin/frog_server.py"])
            hello = self._read(timeout)
            if hello is None:
                raise Unavailable(f"the grading server of '{self.repo.spec.name}' did not start")
            if hello.get("ready"):
                self.hello = hello
                return
            self._stop()
            if not hello.get("bad"):
                raise Unavailable(f"the grading server of '{self.repo.spec.name}' refused: {hello}")
            preload = [m for m in preload if m not in hello["bad"]]
            _store_preload(self.repo, preload)
        raise Unavailable(f"the grading server of '{self.repo.spec.name}' found no clean preload")

    # -- grading ------------------------------------------------------------------------------------
    def run(self, template: Template, kept: list[Change], ids: tuple[str, ...], canaries: Canaries,
            timeout: float, guard: dict[str, list[str]] | None = None):
        """One grade's test run: the tree synced to ``template`` plus ``kept``, the ``canaries`` appended,
        the test files under the report plugin's ``guard`` (:func:`frog_gym.grading.runner.guard_for`).

        Returns :class:`frog_gym.grading.runner.RunResult`, or raises :class:`Unavailable` when this server can't
        vouch for the run (it died, hung, left a process it could not kill, or lost a mount): the caller
        closes it and grades cold."""

        start = time.monotonic()
        if not self.alive():
            raise Unavailable("the grading server is not running")
        if tuple(p for p in self.repo.spec.tests.paths if p in template.manifest) != self.protect:
            raise Unavailable("this task's test paths differ from the server's mounts")
        self.ws.sync(template)
        # A protected path's changes (the hidden tests) go to the read-only copy only: replacing a test file in
        # the tree would unmount the copy bound over it.
        write_changes(self.ws.path, [c for c in kept if not self._protected(c.path)])
        self._sync_view(template)
        ours = {c.path: c for c in kept if self._protected(c.path)}  # the hidden tests (scope dropped the agent's)
        for rel, c in ours.items():
            if c.new is not None:
                _write_in_place(self.view, rel, c.new)
                self._view[rel] = None  # the next grade restores the template's copy
        if self._protected(canaries.file):
            base = ours[canaries.file].new if canaries.file in ours else None
            data = (base if base is not None else (template.root / canaries.file).read_bytes()) + canaries.source.encode()
            _write_in_place(self.view, canaries.file, data)
            self._view[canaries.file] = None
        else:
            append_file(self.ws.path, canaries.file, canaries.source.encode())
        _empty(self.out)
        key = secrets.token_hex(32).encode()
        key_fd = key_fifo(self.io_in, grading_selection(ids, canaries, guard), guard, key)
        try:
            files = test_files_of(ids)
            if canaries.file not in files:
                files.append(canaries.file)
            args = [*self.repo.spec.pytest_args, "-q", "-p", "frog_report", *GRADING_PYTEST_ARGS, *files]
            env = {"FROG_REPORT": "/frog/out/report.json", "FROG_SELECT": "/frog/in/select.json",
                   "FROG_KEY_FIFO": "/frog/in/key", **vault_env()}
            req = {"args": args, "env": env, "timeout": timeout, "protect": [f"/testbed/{p}" for p in self.protect],
                   "rewrite": ["/frog/plugin/frog_report.py",
                               *(f"/testbed/{p}" for p in _test_modules(files, template) if p != canaries.file)],
                   "canaries": {"file": f"/testbed/{canaries.file}", "source": canaries.source},
                   "compile": [*(f"/frog/plugin/{p}" for p in PLUGIN_PARTS),
                               *(f"/testbed/{p}" for p in self._package_modules(template))],
                   "unkept": [f"/testbed/{c.path}" for c in kept if not self._protected(c.path)]}
            reply = self._ask(req, timeout + 30)
        finally:
            os.close(key_fd)
        if reply is None or "exit" not in reply:
            raise Unavailable(f"the grading server did not answer ({reply})")
        if not reply.get("clean"):
            raise Unavailable("a process of the graded code could not be killed")
        seconds = time.monotonic() - start
        self.code_made = int(reply.get("made", 0))
        if reply.get("tables") is not None:
            self.tables = str(reply["tables"])
        parent = float(reply.get("parent_cpu", 0.0))
        self.cpu_seconds += float(reply.get("cpu", 0.0)) + parent - self._parent_cpu
        self._parent_cpu = parent
        self.system_seconds += float(reply.get("system", 0.0))
        self.faults += int(reply.get("faults", 0))
        output = _read_tail(self.out, "log.txt")
        if reply["exit"] is None:  # the code under test ran past the limit, which is its doing (as cold)
            return RunResult({t: TestStatus.FAILED for t in ids}, None,
                             f"the tests ran past the grading limit of {timeout:.0f} s and were killed; every "
                             "selected test counts as failed\n" + output[-2000:], seconds=seconds,
                             cpu_seconds=float(reply.get("cpu", 0.0)))
        r = read_report(self.out / "report.json", ids, reply["exit"], output, seconds, key=key, canaries=canaries)
        r.cpu_seconds = float(reply.get("cpu", r.cpu_seconds))
        return r

    def _sync_view(self, template: Template) -> None:
        """Make the read-only test copy match ``template`` (in place: the mounts hold its inodes)."""
        for rel, w in template.manifest.items():
            if w[0] == "f" and self._protected(rel) and self._view.get(rel) != w[2]:
                _write_in_place(self.view, rel, (template.root / rel).read_bytes())
                self._view[rel] = w[2]
        for rel in [r for r in self._view if r not in template.manifest]:
            try:
                os.unlink(self.view / rel)
            except OSError:
                pass
            del self._view[rel]

# -- the code kept between processes ------------------------------------------------------------------------

_CODE_NAME = re.compile(r"[0-9a-f]{64}")
CODE_STORE_BYTES = int(os.environ.get("FROG_GYM_CODE_STORE_MB", "64")) << 20
"""What a venv's kept code may take on disk (``FROG_GYM_CODE_STORE_MB``); past it, the least recently used goes."""


class CodeStore:
    """The code the fork servers' parents made (test modules with pytest's asserts rewritten, the package's modules
    compiled), kept on the host by name, one folder per venv, so that a server started later (in this process or
    another) takes it instead of making it again: what pytest's and Python's ``__pycache__`` are to a developer's
    runs, which grading can't use (the trees are the agent's and the tests read-only).

    A name is a digest of the exact source bytes, the path, pytest's version and the interpreter's bytecode magic
    (``frog_fork._name``), so code is only ever taken for the bytes it was made of. It comes only from a parent over
    its pipe, which no child can write to (see ``frog_fork.code_ahead``), and never of a file the agent changed
    (the request names those ``unkept``). The folder is the host's: no sandbox mounts it, so a grade's code can't
    read another task's hidden tests in it. ``FROG_GYM_CODE_STORE=0`` turns it off."""

    def __init__(self, repo: PreparedRepo):
        self.dir = paths.home() / "grading" / "code" / venv_key(repo.spec)

    def get(self, names: list) -> dict[str, str]:
        """The kept code of each name there is (base64 of its marshal bytes), marked used."""
        out = {}
        for name in names:
            if not isinstance(name, str) or not _CODE_NAME.fullmatch(name):
                continue
            try:
                out[name] = (self.dir / name).read_text()
                os.utime(self.dir / name)
            except OSError:
                pass
        return out

    def put(self, new: dict) -> None:
        """Keep the code a parent made (name -> [path, base64 marshal bytes]), then drop the least recently used past
        :data:`CODE_STORE_BYTES`. A store that can't be written costs only the time it would have saved."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            for name, item in new.items():
                if not _CODE_NAME.fullmatch(name) or not isinstance(item, list) or len(item) != 2 \
                        or not isinstance(item[1], str):
                    continue
                tmp = self.dir / f".{name}.{os.getpid()}.{threading.get_ident()}"
                tmp.write_text(item[1])
                os.replace(tmp, self.dir / name)
            self._trim()
        except OSError:
            pass

    def _trim(self) -> None:
        files = [(e.stat().st_mtime, e.stat().st_size, e.path) for e in os.scandir(self.dir) if e.is_file()]
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= CODE_STORE_BYTES:
                break
            os.unlink(path)
            total -= size


# -- the preload list ---------------------------------------------------------------------------------------

def _preload_file(repo: PreparedRepo) -> Path:
    d = paths.home() / "grading"
    d.mkdir(exist_ok=True)
    return d / f"preload-{venv_key(repo.spec)}.json"


def _store_preload(repo: PreparedRepo, names: list[str]) -> None:
    f = _preload_file(repo)
    tmp = f.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(names))
    os.replace(tmp, f)


def preload_list(repo: PreparedRepo, template: Template, owned: list[str]) -> list[str]:
    """Top-level modules the repository's pristine test suite imports from the venv and the standard
    library, in import order: what the parent imports. Measured once per venv by collecting the suite on
    the pristine tree (the repository's own code, no agent's), then cached."""
    f = _preload_file(repo)
    if f.exists():
        return json.loads(f.read_text())

    base = paths.home() / "work" / f"preload-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        ws = Workspace(base / "ws")
        ws.sync(template)
        out = base / "out"
        out.mkdir()
        run_tests(repo, ws.path, None, 600, env={"FROG_MODULES": "1"}, out_dir=out, args=("--collect-only",))
        try:
            modules = json.loads((out / "report.json").read_text()).get("modules", {})
        except (OSError, ValueError):
            modules = {}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    names: list[str] = []
    skip = set(owned) | {"__main__", "frog_report", "frog_coverage", "frog_server", "frog_fork", "conftest",
                         *(p[:-3] for p in PLUGIN_PARTS)}
    for name, file in modules.items():
        top = name.split(".")[0]
        if top in skip or top in names or str(file or "").startswith("/testbed"):
            continue
        if any(str(f or "").startswith("/testbed") for n, f in modules.items() if n.split(".")[0] == top):
            continue
        names.append(top)
    _store_preload(repo, names)
    return names


# -- the per-process pool -------------------------------------------------------------------------------

_POOL: OrderedDict[tuple[str, str], ForkServer] = OrderedDict()
_POOL_LOCK = threading.Lock()
_REFUSED: dict[tuple[str, str], str] = {}
"""Repositories whose server of a kind could not start in this process, and why (they are graded cold)."""


def pooled(kind: str, repo: PreparedRepo, start: Callable[[], ForkServer]) -> ForkServer | None:
    """This process's warm server of ``kind`` for ``repo`` (``start()`` makes it on first use), or None when it
    can't have one. At most :data:`MAX_SERVERS` servers are kept (the least recently used closed first)."""
    key = (kind, venv_key(repo.spec))
    with _POOL_LOCK:
        if key in _REFUSED:
            return None
        s = _POOL.get(key)
        if s is not None and s.alive():
            _POOL.move_to_end(key)
            return s
        if s is not None:
            _POOL.pop(key).close()
        try:
            s = start()
        except (Unavailable, FrogGymError, OSError) as e:
            _REFUSED[key] = f"{type(e).__name__}: {e}"
            return None
        _POOL[key] = s
        while len(_POOL) > MAX_SERVERS:
            _POOL.popitem(last=False)[1].close()
        return s


def _forget_pool_in_child() -> None:
    """A forked child (a vector env's worker) inherits the pool's objects, not the servers: their processes, cgroups
    and folders are the parent's. It forgets them without closing one (a close would kill the parent's server and
    delete its folder, at the child's exit at the latest) and starts servers of its own."""
    global _POOL_LOCK
    _POOL.clear()
    _REFUSED.clear()
    _POOL_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)


def server_for(repo: PreparedRepo, template: Template) -> GradingServer | None:
    """This process's warm grading server for ``repo`` (started on first use), or None when it can't have one."""
    s = pooled(GradingServer.kind, repo, lambda: GradingServer(repo, template))
    assert s is None or isinstance(s, GradingServer)
    return s


def discard(server: ForkServer) -> None:
    """Close a server that can't vouch for its last run; the next grade of its repository starts another."""
    with _POOL_LOCK:
        for k, v in list(_POOL.items()):
            if v is server:
                del _POOL[k]
    server.close()


def close_all() -> None:
    """Close every warm server of this process (also run at exit)."""
    with _POOL_LOCK:
        while _POOL:
            _POOL.popitem()[1].close()


_USERS: weakref.WeakSet = weakref.WeakSet()
"""The open envs of this process: the warm servers are theirs to share, and go when the last one closes."""


def hold(user: object) -> None:
    """``user`` (an env) grades through the warm servers until it calls :func:`release`."""
    _USERS.add(user)


def release(user: object) -> None:
    """``user`` is done; once no other user of this process holds them, every warm server is closed."""
    _USERS.discard(user)
    if not _USERS:
        close_all()


atexit.register(close_all)
