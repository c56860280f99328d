"""Warm replays of the behavioural oracle: one fork server per repository, a fresh child per grade.

A cold replay (:func:`frog_gym.grading.oracle.replay`) pays a sandbox and an interpreter per grade, beside the
grade's test run. An :class:`OracleServer` pays them once per repository: its parent
(``frog_gym/_plugin/frog_oracle_server.py``) is started in a bubblewrap sandbox exactly as a cold replay's process
is (``python -s``, hash seed 0, no ``PYTHONPATH``, ``/frog/oracle`` first on ``sys.path``, the same limits and
mounts), imports the replayer and nothing of the package, and forks one child per replay, which does what the
cold process does. What the cold replay guarantees, this one does too:

- **Package only**: the server's tree is the task's package and nothing else (:func:`frog_gym.grading.packagetree.package_template`:
  no test file, no ``conftest.py``, no hidden test), synced by the host before each replay to the task's tree
  with the agent's changes to the package written over it; the calls go in a file the host writes, the outcomes
  come back as bytes the host compares (never decoded, never unpickled), exactly as cold.
- **Fresh state per replay**: the child is forked from a parent the agent's code never ran in; after it, the parent
  kills every other process of the sandbox and empties ``/tmp``, ``/dev/shm`` and System V IPC before it answers,
  and the host's next sync puts back every file of the tree (``O_NOFOLLOW`` all the way) and removes any other.
- **Same outcome bytes**: same interpreter, flags, environment, working folder, ``sys.path`` and hash seed as
  cold; a test replays every covered task's gold both ways and compares the bytes.

A replay the server can't vouch for (no answer, a process it could not kill, a parent gone) falls back to the
cold replay. ``FROG_GYM_GRADE_SERVER=0`` turns warm replays off with warm grading.
"""

from __future__ import annotations

import json

from frog_gym.grading.packagetree import package_changes, package_template, read_capped
from frog_gym.grading.server import ForkServer, Unavailable, _empty, discard, enabled, pooled
from frog_gym.sandbox.base import Limits
from frog_gym.sandbox.workspace import Change, Template, Workspace, write_changes
from frog_gym.catalog.snapshot import PreparedRepo


class OracleServer(ForkServer):
    """A warm replay server for one repository's oracle (see the module docstring)."""

    kind = "oracle"

    def __init__(self, repo: PreparedRepo, template: Template, startup_timeout: float = 60.0):
        super().__init__(repo)
        self.ws = Workspace.empty(self.base / "ws")
        # the tree first: the venv's .pth puts the import paths on sys.path at start-up only where they exist
        self.ws.sync(package_template(repo, template))
        self.io_in, self.out = self.base / "in", self.base / "out"
        for d in (self.io_in, self.out):
            d.mkdir(parents=True)
        self.cpu_seconds = 0.0
        """CPU seconds its children spent replaying (the parent's own start-up not included)."""
        self.code_made = 0
        """How many of the package's modules the parent compiled for the last replay (the others' code was cached)."""
        try:
            self._start(startup_timeout)
        except BaseException:
            self.close()
            raise

    def _start(self, timeout: float) -> None:
        from frog_gym.sandbox.local import LocalSandbox, bwrap_path

        bwrap_path()
        limits = Limits(command_timeout=3600, output_cap=4096)  # per replay, the parent enforces the grade's limit
        binds = ((self.io_in, "/frog/in", False), (self.out, "/frog/out", True), (self._plugin, "/frog/oracle", False))
        sb = LocalSandbox(self.ws.path, self.repo.venv, limits,
                          env={**self.repo.spec.install.env, "PYTHONHASHSEED": "0", "PYTHONPATH": ""}, binds=binds)
        self._spawn_parent(sb, [str(self.repo.python), "-s", "/frog/oracle/frog_oracle_server.py"])
        hello = self._read(timeout)
        if not hello or not hello.get("ready") or hello.get("hashseed") != "0" or hello.get("testbed"):
            raise Unavailable(f"the oracle server of '{self.repo.spec.name}' did not start: {hello}")

    def replay(self, template: Template, changes: list[Change], calls: list[dict], timeout: float,
               hidden: frozenset[str] = frozenset()) -> tuple[list[bytes], str]:
        """:func:`frog_gym.grading.oracle.replay` of ``calls`` on the package of ``template`` with ``changes``:
        one outcome line per call (raw bytes) and a note when the replay did not finish. Raises
        :class:`Unavailable` when this server can't vouch for the replay (the caller replays cold)."""
        if not self.alive():
            raise Unavailable("the oracle server is not running")
        pkg = package_template(self.repo, template, hidden)
        self.ws.sync(pkg)
        ours = package_changes(self.repo, changes, hidden)
        write_changes(self.ws.path, ours)
        _empty(self.out)  # what the last replay left where outcomes are read: removed, never followed
        sent = [{k: c[k] for k in ("m", "q", "n", "args", "after")} for c in calls]  # never the outcome
        (self.io_in / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in sent))
        compile_ = [f"/testbed/{rel}" for rel, w in pkg.manifest.items() if w[0] == "f" and rel.endswith(".py")]
        unkept = [f"/testbed/{c.path}" for c in ours]
        reply = self._ask({"timeout": timeout, "compile": compile_, "unkept": unkept}, timeout + 30)
        if reply is None or "exit" not in reply:
            raise Unavailable(f"the oracle server did not answer ({reply})")
        if not reply.get("clean"):
            raise Unavailable("a process of the replayed code could not be killed")
        self.cpu_seconds += float(reply.get("cpu", 0.0))
        self.code_made = int(reply.get("made", 0))
        lines = read_capped(self.out / "results.jsonl").split(b"\n")
        got = [lines[i] if i < len(lines) else b"" for i in range(len(calls))]
        code = reply["exit"]
        note = "" if code == 0 else (
            f"the replay {'ran past its limit' if code is None else f'exited with {code}'}: {self._log_tail()}")
        return got, note

    def _log_tail(self, limit: int = 300) -> str:
        """The end of the child's output (a regular file only, never through a link: :func:`read_capped`)."""
        return read_capped(self.out / "log.txt")[-limit:].decode("utf-8", "replace")


def server_for(repo: PreparedRepo, template: Template) -> OracleServer | None:
    """This process's warm oracle server for ``repo`` (started on first use), or None when warm grading is off or
    none can start. Call it from a thread that outlives the server's use, never from a grade's own short-lived
    thread: the sandbox dies with the thread that started it (bubblewrap's ``--die-with-parent``)."""
    if not enabled():
        return None
    server = pooled(OracleServer.kind, repo, lambda: OracleServer(repo, template))
    return server if isinstance(server, OracleServer) else None


def replay_warm(repo: PreparedRepo, template: Template, changes: list[Change], calls: list[dict], timeout: float,
                hidden: frozenset[str] = frozenset(), server: OracleServer | None = None) -> tuple[list[bytes], str] | None:
    """The replay in the repository's warm oracle server (``server``, default :func:`server_for`); None: replay cold
    instead (warm grading is off, no server could start, or it could not vouch for this replay)."""
    server = server if server is not None else server_for(repo, template)
    if server is None:
        return None
    with server.lock:
        try:
            return server.replay(template, changes, calls, timeout, hidden)
        except (Unavailable, OSError):  # a tree or folder it could not put back: it can't vouch for the next replay
            discard(server)
            return None
