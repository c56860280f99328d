"""Warm grading (frog_gym.grading.server): the same outcomes as a cold grade, and no state between grades.

The attacks here go below the static check (straight to ``GradingServer.run``), as the layer tests of
``tests/exploits/test_grading.py`` do, so that the server's own guarantees are shown to hold alone: no
process or ``/tmp`` file of one grade survives into the next, a process left behind can't rewrite the
report, a child that kills its parent only sends that grade to the cold path, and the tests stay
read-only. ``tests/exploits/test_grading.py`` runs every agent-level attack through the env, which
grades warm by default.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from frog_gym import paths

from frog_gym.grading import server as grading_server
from frog_gym.grading import runner as grading
from frog_gym.grading.runner import TestStatus, patch_files
from frog_gym.grading.grade import grade
from frog_gym.grading.integrity import Canaries
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo
from frog_gym.catalog.task import load_task, registered_task_ids
from frog_gym.sandbox.workspace import Change, Workspace, append_file, template_for

FLAT = "inflection__handwritten-0001"
SRC = "humanize__missing_branch-08a9c4b2"  # src layout
PYTEST_DEP = "iniconfig__arithmetic_op_swap-3e9569c7"  # pytest itself imports iniconfig


def _setup(task_id):
    task = load_task(task_id)
    repo = prepare(load_repo(task.repo))
    return task, repo, template_for(repo, task.bug_patch, task_id)


def gold(repo, task, template) -> list[Change]:
    """The gold fix as an agent's changes: each file the fix touches, as the repository's release has it."""
    return [Change(rel, (template.root / rel).read_bytes(), (repo.tree / rel).read_bytes())
            for rel in sorted(patch_files(task.patch)) if (template.root / rel).exists()]


def _canaries(task, seed=0):
    names = {t.rsplit("::", 1)[-1] for t in task.selected_tests}
    return Canaries.make(grading.test_files_of(task.FAIL_TO_PASS)[0], random.Random(seed), names)


def _append(template, rel, code) -> Change:
    old = (template.root / rel).read_bytes()
    return Change(rel, old, old + textwrap.dedent(code).encode())


def _parity(task_ids):
    """Grade the bug and the gold fix of each task cold and warm; return the mismatches, and every bug that
    grades as resolved (its tests would reward doing nothing). Prints how many gold fixes did not resolve."""
    bad = []
    unresolved_gold = []
    scratch = Workspace(paths.home() / "work" / f"parity-{random.randrange(1 << 30):08x}")
    try:
        for tid in task_ids:
            task, repo, template = _setup(tid)
            for label, changes in (("bug", []), ("gold", gold(repo, task, template))):
                cold = grade(repo, task, template, changes, scratch, use_cache=False, warm=False)
                warm = grade(repo, task, template, changes, scratch, use_cache=False, warm=True)
                if (cold.resolved, cold.tests, cold.tampering) != (warm.resolved, warm.tests, warm.tampering):
                    bad.append((tid, label, cold.resolved.value, warm.resolved.value,
                                {t: (s, warm.tests.get(t)) for t, s in cold.tests.items() if warm.tests.get(t) != s}))
                # (a FrogLive task is set up here on the registry's release, not its own, so its bug may be fixed)
                if label == "bug" and (cold.is_resolved or warm.is_resolved) and "__live-" not in tid:
                    bad.append((tid, "the bug grades as resolved"))
                if label == "gold" and not cold.is_resolved:
                    unresolved_gold.append(tid)
    finally:
        scratch.remove()
    print(f"parity: {len(task_ids)} tasks, {4 * len(task_ids)} grades, {len(bad)} mismatches; gold fixes that did not "
          f"resolve (both paths agreeing): {len(unresolved_gold)} {unresolved_gold[:10]}")
    return bad


def test_warm_grades_match_cold_grades():
    for tid in (FLAT, SRC):
        task, repo, template = _setup(tid)
        assert grading_server.server_for(repo, template) is not None, grading_server._REFUSED
    assert _parity([FLAT, SRC]) == []


@pytest.mark.parametrize("task_id", [PYTEST_DEP, "pluggy__exception_handling-477889a9"])
def test_a_repository_pytest_itself_imports_is_graded_warm_on_a_pristine_copy(task_id):
    """pytest imports iniconfig and pluggy itself: the parent binds pytest to the pristine release's copy, then
    forgets every module of the package, so each child's tests import the agent's (as frog_boot.py does cold)."""
    task, repo, template = _setup(task_id)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    assert server.hello["testbed"] == []  # no module of the package under test is left in the parent
    assert _parity([task_id]) == []


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_warm_grades_match_cold_grades_on_many_tasks():
    """Outcome parity on tasks of every repository (the bug and the gold fix of each, warm and cold): 200 tasks,
    dealt round-robin over the repositories (206 tasks, 824 grades: 0 mismatches, 51 minutes on 2 cores at load
    8-16 when first run); ``FROG_PARITY_TASKS`` sets another count."""
    n = int(os.environ.get("FROG_PARITY_TASKS", "200"))
    ids = [t for t in registered_task_ids() if not t.startswith("frogtoy__")]
    by_repo: dict[str, list[str]] = {}
    for t in ids:
        by_repo.setdefault(t.split("__")[0], []).append(t)
    rng = random.Random(16)
    chosen: list[str] = []
    while len(chosen) < n and any(by_repo.values()):
        for r in sorted(by_repo):
            if by_repo[r]:
                chosen.append(by_repo[r].pop(rng.randrange(len(by_repo[r]))))
    assert len(chosen) >= n
    assert _parity(chosen) == []


def test_the_parent_never_imported_the_package_under_test():
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    assert server.hello["testbed"] == [] and server.hello["modules"] > 100
    assert server.hello["dumpable"] == 0  # PR_GET_DUMPABLE: no child may ptrace it or write its memory
    assert "inflection" not in grading_server.preload_list(repo, template, ["inflection"])


def test_no_process_or_tmp_file_survives_into_the_next_grade():
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    leave = _append(template, "inflection/__init__.py", """
        import subprocess as _sp
        open("/tmp/left-behind", "w").write("x")
        _sp.Popen(["sleep", "300"], start_new_session=True)
    """)
    with server.lock:
        server.run(template, [leave], task.selected_tests, _canaries(task), 120)
        look = _append(template, "inflection/__init__.py", """
            import os as _o
            _cmds = []
            for _p in _o.listdir("/proc"):
                try:
                    _cmds.append(open(f"/proc/{_p}/cmdline", "rb").read())
                except OSError:
                    pass
            open("/testbed/seen.txt", "w").write(repr((_o.listdir("/tmp"), [c for c in _cmds if b"sleep" in c])))
        """)
        r = server.run(template, [look], task.selected_tests, _canaries(task, 1), 120)
        seen = (server.ws.path / "seen.txt").read_text()
    assert r.tampering == []
    assert "left-behind" not in seen and "sleep" not in seen, seen


def test_a_process_left_behind_never_reaches_the_next_grade():
    """A forked writer outlives pytest for a moment (as it would in a cold sandbox) and spoils its own
    report, which then fails verification; it is dead before the next grade starts, whose report is clean."""
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    writer = _append(template, "inflection/__init__.py", """
        import os as _o, time as _t
        if _o.fork() == 0:
            for _ in range(600):
                _t.sleep(0.05)
                try:
                    open("/frog/out/report.json", "w").write('{"exitstatus": 1, "tests": {}}')
                except OSError:
                    pass
            _o._exit(0)
    """)
    with server.lock:
        first = server.run(template, [writer], task.selected_tests, _canaries(task), 120)
        assert not any(first.statuses[t].ok for t in task.FAIL_TO_PASS)
        r = server.run(template, [], task.selected_tests, _canaries(task, 1), 120)
    assert r.tampering == [], r.note
    assert all(r.statuses[t] is TestStatus.FAILED for t in task.FAIL_TO_PASS)
    assert all(r.statuses[t] is TestStatus.PASSED for t in task.PASS_TO_PASS)


def test_a_warm_grade_past_its_limit_is_killed_there_and_the_next_grade_is_clean():
    """The parent waits for its child on a pidfd (or polls): a child that never ends is killed at the deadline,
    its tests count as failed, and the same server grades the next run as usual."""
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    hang = _append(template, "inflection/__init__.py", "import time as _t\n_t.sleep(600)\n")
    with server.lock:
        r = server.run(template, [hang], task.selected_tests, _canaries(task), 3)
        assert "past the grading limit" in r.note, r.note
        assert all(s is TestStatus.FAILED for s in r.statuses.values())
        again = server.run(template, [], task.selected_tests, _canaries(task, 1), 120)
    assert again.tampering == [], again.note
    assert all(again.statuses[t] is TestStatus.FAILED for t in task.FAIL_TO_PASS)
    assert all(again.statuses[t] is TestStatus.PASSED for t in task.PASS_TO_PASS)


def test_the_parent_takes_the_status_of_a_child_killed_at_its_deadline_from_its_clean_up():
    """At the deadline the parent kills every process of the sandbox and reaps its children as they die
    (``frog_fork.kill_others``): the child it was waiting for among them when that child is dead in time for the reap.
    It then has that child's status from there, not from a wait for a child that is gone (which raised
    ``ChildProcessError`` and ended the parent: the grade past its limit went cold, about 1 file run in 10). The
    order is forced here, outside a sandbox: the sandbox-wide kill is one of the child that returns once it is a
    zombie, and nothing of the host is emptied."""
    script = textwrap.dedent("""
        import os, sys, time
        import frog_fork

        pid = os.fork()
        if pid == 0:
            time.sleep(600)
            os._exit(0)

        def dead():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    return f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except OSError:
                return True

        kill = os.kill

        def kill_the_child(target, sig):
            assert target == -1
            kill(pid, sig)
            while not dead():
                time.sleep(0.001)

        os.kill = kill_the_child
        frog_fork.others = lambda: [] if dead() else [pid]
        frog_fork.wipe = lambda: None
        code, usage, clean = frog_fork.wait_child(pid, time.monotonic() + 0.2)
        print(code, clean, usage.ru_maxrss > 0)
    """)
    plugin = Path(grading_server.__file__).parents[1] / "_plugin"
    out = subprocess.run([sys.executable, "-c", script], check=False, env={**os.environ, "PYTHONPATH": str(plugin)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "True", "True"]


def test_a_child_that_kills_its_parent_sends_the_grade_to_the_cold_path():
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    kill = _append(template, "inflection/__init__.py", "import os as _o, signal as _s\n_o.kill(_o.getppid(), _s.SIGKILL)\n")
    with server.lock, pytest.raises(grading_server.Unavailable):
        server.run(template, [kill], task.selected_tests, _canaries(task), 120)
    grading_server.discard(server)
    again = grading_server.server_for(repo, template)
    assert again is not None and again is not server and again.alive()


def test_the_tests_stay_read_only_in_a_warm_grade():
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    rewrite = _append(template, "inflection/__init__.py", """
        try:
            _t = open("/testbed/test_inflection.py").read().replace("assert ", "assert True or ")
            open("/testbed/test_inflection.py", "w").write(_t)
        except OSError:
            pass
    """)
    with server.lock:
        r = server.run(template, [rewrite], task.selected_tests, _canaries(task), 120)
    assert r.tampering == [], r.note
    assert all(r.statuses[t] is TestStatus.FAILED for t in task.FAIL_TO_PASS)
    assert "assert True or" not in (server.view / "test_inflection.py").read_text()
    assert "assert True or" not in (server.ws.path / "test_inflection.py").read_text()


def test_the_code_caches_serve_only_unchanged_bytes():
    """The parent rewrites or compiles each version of a file once: a second grade makes nothing, and a test file
    that changed (as hidden tests change one) is made anew, so no grade runs stale code; the canaries, appended
    after the cached file, fail where they lie in it."""
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    fix = gold(repo, task, template)
    p2p = next(t for t in task.PASS_TO_PASS if "[" not in t)
    file, name = p2p.split("::")
    with server.lock:
        server.run(template, fix, task.selected_tests, _canaries(task), 120)
        canaries = _canaries(task, 1)
        again = server.run(template, fix, task.selected_tests, canaries, 120)
        assert server.code_made == 0
        flip = f"\n\ndef {name}():\n    assert False  # {os.urandom(8).hex()}\n"  # new bytes to every store too
        flipped = server.run(template, fix + [_append(template, file, flip)],
                             task.selected_tests, _canaries(task, 2), 120)
        assert server.code_made == 1
        back = server.run(template, fix, task.selected_tests, _canaries(task, 3), 120)
    assert again.tampering == [] and all(again.statuses[t].ok for t in task.selected_tests), again.note
    assert flipped.tampering == [] and flipped.statuses[p2p] is TestStatus.FAILED
    assert all(flipped.statuses[t].ok for t in task.selected_tests if t != p2p)
    assert all(back.statuses[t].ok for t in task.selected_tests)
    lines = ((template.root / canaries.file).read_bytes() + canaries.source.encode()).decode().splitlines()
    raise_at = lines.index(f"def {canaries.must_fail[1]}():") + 2
    assert f'"/testbed/{canaries.file}", line {raise_at}, in {canaries.must_fail[1]}' in again.output


def test_a_child_runs_with_the_configuration_a_cold_run_would_make(tmp_path):
    """The parent makes pytest's configuration start once (plugin manager, default plugins, their options) and each
    child's get_config takes it: with the child's own invocation parameters, the spec's blocked plugins blocked, and
    nothing one child did to it seen by the next (each is a copy made by fork). The probe is a test of the graded
    file, run warm twice and cold once."""
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    file = grading.test_files_of(task.FAIL_TO_PASS)[0]
    probe = _append(template, file, """

        def test_frog_configuration_probe(request):
            import sys
            from pathlib import Path
            config = request.config
            assert config.invocation_params.dir == Path("/testbed") == Path.cwd()
            assert config.invocation_params.args == tuple(sys.argv[1:]) and config.args == [
                a for a in sys.argv[1:] if a.endswith(".py")]
            assert config.pluginmanager.is_blocked("cacheprovider")
            assert config.pluginmanager.get_plugin("cacheprovider") is None
            assert config.pluginmanager.get_plugin("frog_report") is not None
            assert config.option.tbstyle == "native"
            assert not hasattr(config, "_frog_seen")  # what an earlier child set on its own copy
            config._frog_seen = True
    """)
    ids = (*task.selected_tests, f"{file}::test_frog_configuration_probe")
    fix = gold(repo, task, template)
    with server.lock:
        runs = [server.run(template, [*fix, probe], ids, _canaries(task, seed), 120) for seed in (0, 1)]
    tree, canaries = tmp_path / "tree", _canaries(task, 2)  # the same run cold, as grade() runs it there
    shutil.copytree(template.root, tree, symlinks=True)
    for c in [*fix, probe]:
        (tree / c.path).write_bytes(c.new)
    append_file(tree, canaries.file, canaries.source.encode())
    runs.append(grading.run_tests(repo, tree, ids, 120, canaries=canaries, authenticate=True,
                                  protect=repo.spec.tests.paths, args=grading.GRADING_PYTEST_ARGS,
                                  guard=grading.guard_for(repo, task, canaries, template, fix)))
    for i, r in enumerate(runs):
        assert r.statuses[ids[-1]] is TestStatus.PASSED, (i, r.output[-3000:])
        assert all(r.statuses[t].ok for t in task.selected_tests), r.note


def test_a_warm_child_still_runs_the_atexit_handlers_of_the_code_under_test():
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    hook = _append(template, "inflection/__init__.py", """
        import atexit as _a
        _a.register(lambda: open("/testbed/at-exit.txt", "w").write("ran"))
    """)
    with server.lock:
        r = server.run(template, [hook], task.selected_tests, _canaries(task), 120)
        assert (server.ws.path / "at-exit.txt").read_text() == "ran"
    assert r.tampering == [] and r.exit_code == 1


def _plugin_module(name):
    import importlib.util
    from importlib import resources

    path = resources.files("frog_gym").joinpath("_plugin", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_code_one_parent_made_is_taken_by_the_next_servers_never_the_agents_nor_a_damaged_copy(tmp_path):
    """A server started later (in this process or another) takes the code earlier parents made, kept on the host
    (:class:`~frog_gym.grading.server.CodeStore`), instead of rewriting and compiling it again: its first grade of the
    same tree makes only the agent's changed file. The agent's file is never kept. A kept copy that does not load is
    made again, and every grade's outcomes are the same."""
    task, repo, template = _setup(FLAT)
    note = f"\n# {os.urandom(8).hex()}\n".encode()  # the agent's file is new to every store
    fix = [Change(c.path, c.old, c.new + note) for c in gold(repo, task, template)]
    made, outcomes = [], []
    for _ in range(3):
        server = grading_server.GradingServer(repo, template)
        try:
            assert server.store is not None
            server.store.dir = tmp_path / "code"
            with server.lock:
                r = server.run(template, fix, task.selected_tests, _canaries(task), 120)
            made.append(server.code_made)
            outcomes.append((r.tampering, {t: r.statuses[t] for t in task.selected_tests}))
            if len(made) == 2:  # every kept copy damaged: the third server makes everything again
                for f in (tmp_path / "code").iterdir():
                    f.write_text("bm90IGNvZGU=")  # base64 of bytes that are no code
        finally:
            server.close()
    assert made[1] == len(fix) and made[0] > len(fix) + 2, made  # the test files, package and plugin parts were kept
    assert made[2] == made[0], made
    assert outcomes[0] == outcomes[1] == outcomes[2] and outcomes[0][0] == [], outcomes
    assert all(s.ok for s in outcomes[0][1].values())
    fork = _plugin_module("frog_fork")
    kept = {f.name for f in (tmp_path / "code").iterdir()}
    assert len(kept) == made[0] - len(fix)
    for c in fix:
        assert fork._name("compile", f"/testbed/{c.path}", c.new) not in kept


def test_the_kept_code_is_the_hosts_alone(tmp_path):
    """No grade's code can read or write what the host keeps: the folder is mounted in no sandbox (another task's
    hidden tests are in it), and a name that is not a digest is never read or written."""
    task, repo, template = _setup(FLAT)
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    store = grading_server.CodeStore(repo)
    probe = _append(template, "inflection/__init__.py", f"""
        import os as _os
        open("/testbed/seen.txt", "w").write(repr([_os.path.exists({str(store.dir)!r}),
                                                   _os.path.exists({str(paths.home() / "grading")!r})]))
    """)
    with server.lock:
        server.run(template, [probe], task.selected_tests, _canaries(task), 120)
        assert (server.ws.path / "seen.txt").read_text() == "[False, False]"
    mine = grading_server.CodeStore(repo)
    mine.dir = tmp_path / "code"
    mine.put({"../escape": ["/testbed/x.py", "YQ=="], "a" * 64: ["/testbed/x.py", "YQ=="]})
    assert [f.name for f in mine.dir.iterdir()] == ["a" * 64] and not (tmp_path / "escape").exists()
    assert mine.get(["../escape", "a" * 64, "b" * 64]) == {"a" * 64: "YQ=="}


def test_the_kept_code_stays_within_its_size_least_recently_used_first(tmp_path, monkeypatch):
    task, repo, template = _setup(FLAT)
    store = grading_server.CodeStore(repo)
    store.dir = tmp_path / "code"
    monkeypatch.setattr(grading_server, "CODE_STORE_BYTES", 3000)
    names = [f"{i:064x}" for i in range(4)]
    for i, name in enumerate(names):
        store.put({name: ["/testbed/m.py", "x" * 1000]})
        os.utime(store.dir / name, (1000 + i, 1000 + i))  # one second apart, whatever the clock's resolution
        if i == 2:
            assert store.get([names[0]]) == {names[0]: "x" * 1000}  # used: the most recent now
    assert sorted(f.name for f in store.dir.iterdir()) == sorted([names[0], names[2], names[3]])


HYPOTHESIS_TEXT = "attrs__combo2-03a5898d"  # its tests draw text with hypothesis: UTF-8's table of every code point
_NEEDS_TABLES = b"""
import sys as _s
_c = _s.modules.get("hypothesis.internal.charmap")
if _c is None or _c._charmap is None or not _c.intervals_from_codec.cache_info().currsize:
    raise ImportError("hypothesis's Unicode tables were not made before the package was imported")
"""


def test_the_parent_makes_hypothesis_tables_once_for_every_child():
    """hypothesis's Unicode tables (a walk of every code point, about a second of CPU in each process whose tests
    draw text) are made in the server's parent: a child finds them made before the package is imported, where a
    cold run has not made them yet (the same probe fails every test there)."""
    task, repo, template = _setup(HYPOTHESIS_TEXT)
    fix = gold(repo, task, template)
    probed = [Change(fix[0].path, fix[0].old, fix[0].new + _NEEDS_TABLES), *fix[1:]]
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    with server.lock:
        warm = server.run(template, probed, task.selected_tests, _canaries(task), 120)
    assert all(warm.statuses[t] is TestStatus.PASSED for t in task.FAIL_TO_PASS), warm.note
    scratch = Workspace(paths.home() / "work" / f"tables-{random.randrange(1 << 30):08x}")
    try:
        cold = grade(repo, task, template, probed, scratch, use_cache=False, warm=False)
    finally:
        scratch.remove()
    assert not cold.is_resolved and not any(cold.tests.get(t) is TestStatus.PASSED for t in task.FAIL_TO_PASS)


_STORAGE_PROBE = b"""
import os as _o
from hypothesis.configuration import storage_directory as _sd
_d = _sd()
if str(getattr(_d, "path", _d)) != _o.path.join(_o.getcwd(), ".hypothesis"):
    raise ImportError(f"hypothesis's storage is {getattr(_d, 'path', _d)}, not the working folder's")
"""


def test_a_later_server_takes_hypothesis_tables_from_the_store_and_leaves_storage_as_cold(tmp_path, monkeypatch):
    """The first parent walks every code point and hands hypothesis's own table files to the host's store; a
    server started later takes them from there (no walk), and its child still finds them made. Either way the
    child's hypothesis storage is its working folder's (``/testbed/.hypothesis``), as a cold run's."""
    task, repo, template = _setup(HYPOTHESIS_TEXT)
    monkeypatch.setattr(grading_server.CodeStore, "__init__", lambda self, repo: setattr(self, "dir", tmp_path / "code"))
    fix = gold(repo, task, template)
    probed = [Change(fix[0].path, fix[0].old, fix[0].new + _NEEDS_TABLES + _STORAGE_PROBE), *fix[1:]]
    seen = []
    for _ in range(2):
        server = grading_server.GradingServer(repo, template)
        try:
            with server.lock:
                run = server.run(template, probed, task.selected_tests, _canaries(task), 120)
        finally:
            server.close()
        assert all(run.statuses[t] is TestStatus.PASSED for t in task.FAIL_TO_PASS), run.note
        seen.append(server.tables)
    assert seen == ["made", "kept"]
    assert any(f.is_file() for f in (tmp_path / "code").iterdir())
