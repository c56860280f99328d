"""The warm oracle server (frog_gym.grading.oracle_server): the same outcome bytes as the cold replay, nothing of
one replay left for the next, and the cold replay whenever the server can't vouch for one."""

from __future__ import annotations

import json
import os
import random
import signal
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from frog_gym.catalog.live import is_live, task_spec
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.task import load_task, registered_task_ids
from frog_gym.grading import oracle
from frog_gym.grading import server as grading_server
from frog_gym.grading.oracle_server import OracleServer, replay_warm
from frog_gym.grading.runner import Change, _patched, patch_files
from frog_gym.sandbox.workspace import template_for

COVERED = "inflection__wrong_variable-a7636217"
TIMED_OUT = b'{"x":"builtins.TimeoutError"}'
"""A replayed call that ran past ``frog_oracle.CALL_TIMEOUT``: idna__live-3.14-1's bug (quadratic time on long
input, the fix refuses it up front) spends seconds a call, so on a loaded machine a call times out on one side
and ends in the package's own exception on the other; its gold calls take a fraction of a second."""
REL = "inflection/__init__.py"


def _setup(tid: str):
    task = load_task(tid)
    repo = prepare(task_spec(task))
    template = template_for(repo, task.bug_patch, tid, hidden_tests="" if is_live(tid) else task.test_patch)
    tests = patch_files(task.test_patch)
    gold = _patched(template, task.patch, "gold")
    assert isinstance(gold, dict), gold
    changes = [Change(f, (template.root / f).read_bytes() if (template.root / f).is_file() else None, new)
               for f, new in gold.items() if f not in tests]
    return task, repo, template, changes, frozenset(tests)


def _cold(repo, template, changes, calls, hidden, timeout=60.0):
    with tempfile.TemporaryDirectory() as d:
        tree = oracle.package_tree(repo, template, changes, Path(d) / "t", hidden)
        return oracle.replay(repo, tree, calls, timeout)


def _one_covered_task_per_repository() -> list[str]:
    seen: dict[str, str] = {}
    for tid in registered_task_ids():
        repo = tid.split("__", 1)[0]
        if repo not in seen and oracle.calls_of(load_task(tid)):
            seen[repo] = tid
    return sorted(seen.values())


def _same_bytes_warm_and_cold(tids: list[str]) -> None:
    """Gold and bug, warm and cold, byte for byte: the gold reproduces every recorded outcome warm, and the bug's
    outcomes (which differ from the gold's on a covered task) are the cold replay's too."""
    for tid in tids:
        task, repo, template, changes, hidden = _setup(tid)
        calls = oracle.calls_of(task)
        for side in (changes, []):
            warm = replay_warm(repo, template, side, calls, 60.0, hidden)
            assert warm is not None, (tid, grading_server._REFUSED)
            cold = _cold(repo, template, side, calls, hidden)
            if side:
                assert warm == cold, tid
            else:  # a bug call that runs into the per-call time limit on either side ends as the load decides
                slow = {i for i, pair in enumerate(zip(warm[0], cold[0])) if TIMED_OUT in pair}
                assert warm[1] == cold[1] and [a for i, a in enumerate(warm[0]) if i not in slow] == \
                    [b for i, b in enumerate(cold[0]) if i not in slow], tid
        gold = replay_warm(repo, template, changes, calls, 60.0, hidden)
        assert oracle.compare(calls, *gold).passed, (tid, gold[1])
        assert not oracle.compare(calls, *replay_warm(repo, template, [], calls, 60.0, hidden)).passed, tid


def test_warm_replays_give_the_cold_replays_bytes_on_covered_tasks_of_eight_repositories():
    tids = _one_covered_task_per_repository()
    random.Random(25).shuffle(tids)
    _same_bytes_warm_and_cold(sorted(tids[:8]))


@pytest.mark.slow
def test_warm_replays_give_the_cold_replays_bytes_on_a_covered_task_of_every_repository():
    tids = _one_covered_task_per_repository()
    assert len(tids) >= 25, tids
    _same_bytes_warm_and_cold(tids)


LEAVER = textwrap.dedent('''\
    import os as _os
    import subprocess as _subprocess

    if not _os.path.exists("/testbed/inflection/_left.py"):
        open("/testbed/inflection/_left.py", "w").write("LEFT = 1\\n")
        open("/tmp/left", "w").write("left")
        _os.makedirs("/dev/shm/left", exist_ok=True)
        _os.makedirs("/frog/out/left/deeper", exist_ok=True)  # where the host reads the outcomes
        _os.mkfifo("/frog/out/left.fifo")
        _os.symlink("/etc/passwd", "/frog/out/log.txt.link")
        _subprocess.Popen(["sleep", "307"], start_new_session=True)
        _subprocess.Popen(["sh", "-c", "trap '' TERM HUP; sleep 308"], start_new_session=True)
''')

PROBE = textwrap.dedent('''\
    import os as _os


    def singularize(word: str) -> str:
        """Report what a replay finds of the one before."""
        procs = []
        for p in _os.listdir("/proc"):
            if p.isdigit() and int(p) not in (1, _os.getpid(), _os.getppid()):
                try:
                    procs.append(open(f"/proc/{p}/cmdline", "rb").read().replace(b"\\0", b" ").decode())
                except OSError:
                    pass
        return repr({"left": _os.path.exists("/testbed/inflection/_left.py"), "tmp": _os.listdir("/tmp"),
                     "shm": _os.listdir("/dev/shm"), "procs": procs, "cwd": _os.getcwd(),
                     "files": sorted(p for d, _, fs in _os.walk("/testbed") for p in fs if not p.endswith(".pyc"))})
''')


def test_a_replay_leaves_nothing_for_the_next():
    """The agent's package writes into the tree, /tmp and /dev/shm and starts processes that leave its session and
    ignore TERM; the next replay (another grade) finds none of it, and the tree is the package's files only."""
    task, repo, template, _, hidden = _setup(COVERED)
    calls = oracle.calls_of(task)
    src = (template.root / REL).read_text()
    assert replay_warm(repo, template, [Change(REL, src.encode(), (LEAVER + src).encode())], calls, 60.0, hidden)
    server = grading_server.pooled(OracleServer.kind, repo, lambda: pytest.fail("the oracle server is gone"))
    got, note = replay_warm(repo, template, [Change(REL, src.encode(), (src + "\n\n" + PROBE).encode())], calls,
                            60.0, hidden)
    assert not note, note
    seen = eval(json.loads(got[0])["r"])  # the test decodes what the probe returned; the host never does
    assert seen["left"] is False and seen["tmp"] == [] and seen["shm"] == []
    assert not [p for p in seen["procs"] if "sleep" in p], seen["procs"]
    assert seen["cwd"] == "/testbed"
    pkg = oracle.package_template(repo, template, hidden)
    assert sorted(seen["files"]) == sorted(r.rsplit("/", 1)[-1] for r, w in pkg.manifest.items() if w[0] == "f")
    assert not [f for f in seen["files"] if f.startswith("test") or f == "conftest.py"]
    # what it left where the host reads the outcomes was removed, not followed, and cost the next replay nothing
    assert grading_server.pooled(OracleServer.kind, repo, lambda: pytest.fail("the server was replaced")) is server
    assert sorted(p.name for p in server.out.iterdir()) == ["log.txt", "results.jsonl"]
    assert Path("/etc/passwd").exists()


HANG = textwrap.dedent('''\


    def singularize(word: str) -> str:
        while True:
            pass
''')


def test_a_replay_past_its_limit_is_killed_and_the_server_replays_the_next():
    task, repo, template, changes, hidden = _setup(COVERED)
    calls = oracle.calls_of(task)
    src = (template.root / REL).read_text()
    got, note = replay_warm(repo, template, [Change(REL, src.encode(), (src + HANG).encode())], calls, 3.0, hidden)
    assert "ran past its limit" in note and not oracle.compare(calls, got, note).passed
    gold = replay_warm(repo, template, changes, calls, 60.0, hidden)
    assert gold is not None and oracle.compare(calls, *gold).passed


def test_a_server_that_dies_mid_replay_means_a_cold_replay_and_a_new_server_next_time(monkeypatch):
    task, repo, template, changes, hidden = _setup(COVERED)
    calls = oracle.calls_of(task)
    assert replay_warm(repo, template, changes, calls, 60.0, hidden) is not None
    server = grading_server.pooled(OracleServer.kind, repo, lambda: pytest.fail("the server should be pooled"))
    assert isinstance(server, OracleServer)
    src = (template.root / REL).read_text()
    hang = [Change(REL, src.encode(), (src + HANG).encode())]
    killer = threading.Timer(1.5, os.kill, (server.proc.pid, signal.SIGKILL))  # the sandbox's init, mid-replay
    killer.start()
    try:
        assert replay_warm(repo, template, hang, calls, 30.0, hidden) is None  # the caller replays cold
    finally:
        killer.cancel()
    assert not server.base.exists()  # discarded and closed
    again = replay_warm(repo, template, changes, calls, 60.0, hidden)
    assert again is not None and oracle.compare(calls, *again).passed
    assert grading_server.pooled(OracleServer.kind, repo, lambda: pytest.fail("pooled")) is not server
    # with warm grading off, check() replays cold and says the same
    monkeypatch.setenv("FROG_GYM_GRADE_SERVER", "0")
    assert replay_warm(repo, template, changes, calls, 60.0, hidden) is None
    assert oracle.check(repo, task, template, changes).passed
    assert not oracle.check(repo, task, template, hang, timeout=3.0).passed


def test_grades_in_a_row_replay_in_one_server_that_outlives_each_grades_thread(tmp_path):
    """A grade replays in a thread of its own; the server is started outside it (a sandbox dies with the thread that
    started it), so the next grade's replay finds the same server alive, not a new one per grade."""
    from frog_gym.grading.grade import grade
    from frog_gym.sandbox.workspace import Workspace

    task, repo, template, changes, _ = _setup(COVERED)
    scratch = Workspace(tmp_path / "scratch")
    first = grade(repo, task, template, changes, scratch, use_cache=False)
    server = grading_server.pooled(OracleServer.kind, repo, lambda: pytest.fail("the oracle server is gone"))
    second = grade(repo, task, template, changes, scratch, use_cache=False)
    assert first.oracle["passed"] and second.oracle["passed"] and second.is_resolved
    assert grading_server.pooled(OracleServer.kind, repo, lambda: pytest.fail("the oracle server is gone")) is server
    assert server.alive()


def test_a_forked_child_leaves_its_parents_servers_alone(tmp_path):
    """A process forked after grading (a vector env's worker) inherits the pool's objects but not the servers: it
    starts its own and, at its exit, never stops, kills or deletes the parent's."""
    task, repo, template, changes, hidden = _setup(COVERED)
    calls = oracle.calls_of(task)
    assert replay_warm(repo, template, changes, calls, 60.0, hidden) is not None
    server = grading_server.pooled(OracleServer.kind, repo, lambda: pytest.fail("the oracle server is gone"))
    grader = grading_server.server_for(repo, template)  # the test runs' server of the same pool
    assert grader is not None
    pid = os.fork()
    if pid == 0:  # the child: replays on a server of its own, then exits the way a worker does (atexit runs)
        code = 1
        try:
            got = replay_warm(repo, template, changes, calls, 60.0, hidden)
            mine = grading_server.pooled(OracleServer.kind, repo, lambda: None)
            code = 0 if got is not None and oracle.compare(calls, *got).passed and mine is not server else 2
        finally:
            import atexit

            atexit._run_exitfuncs()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert server.alive() and server.base.exists()
    assert grader.alive() and grader.base.exists() and grading_server.server_for(repo, template) is grader
    assert grading_server.pooled(OracleServer.kind, repo, lambda: pytest.fail("replaced")) is server
    again = replay_warm(repo, template, changes, calls, 60.0, hidden)
    assert again is not None and oracle.compare(calls, *again).passed


LOCKER = textwrap.dedent('''\
    import os as _os

    _os.makedirs("/testbed/inflection/_locked/inner", exist_ok=True)
    _os.chmod("/testbed/inflection/_locked", 0)
    _os.makedirs("/frog/out/locked/inner", exist_ok=True)
    _os.chmod("/frog/out/locked", 0)
''')


def test_folders_a_replay_locks_do_not_cost_the_next_grade_its_oracle():
    """Folders with no permissions in the tree and in the outcomes' folder: the next replay (another episode's grade)
    still gets its verdict, warm or, where the server can't put its folders back, cold."""
    task, repo, template, changes, hidden = _setup(COVERED)
    calls = oracle.calls_of(task)
    src = (template.root / REL).read_text()
    replay_warm(repo, template, [Change(REL, src.encode(), (LOCKER + src).encode())], calls, 60.0, hidden)
    verdict = oracle.check(repo, task, template, changes)
    assert verdict is not None and verdict.passed, verdict
    again = replay_warm(repo, template, changes, calls, 60.0, hidden)
    assert again is not None and oracle.compare(calls, *again).passed


def test_a_later_oracle_server_takes_the_package_code_earlier_ones_made(tmp_path):
    """The package's modules an oracle server's parent compiled are kept on the host (as the grading servers' are):
    a server started later compiles only the agent's files, and replays the same bytes."""
    task, repo, template, changes, hidden = _setup(COVERED)
    calls = oracle.calls_of(task)
    note = f"\n# {os.urandom(8).hex()}\n".encode()
    changes = [Change(c.path, c.old, c.new + note) for c in changes]
    made, got = [], []
    for _ in range(2):
        server = OracleServer(repo, template)
        try:
            server.store.dir = tmp_path / "code"
            got.append(server.replay(template, changes, calls, 60.0, hidden))
            made.append(server.code_made)
        finally:
            server.close()
    assert made[1] == len(changes) < made[0], made
    assert got[0] == got[1] and oracle.compare(calls, *got[1]).passed
