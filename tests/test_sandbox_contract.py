"""The sandbox contract, checked against every backend (local bubblewrap, Docker) by doing what an agent
might do. Docker cases skip, saying why, only where no engine answers (see tests/conftest.py)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from frog_gym.sandbox import make_sandbox
from frog_gym.sandbox.base import Limits, Sandbox

BACKENDS = [pytest.param("local", id="local"), pytest.param("docker", id="docker", marks=pytest.mark.docker)]
LIMITS = Limits(command_timeout=5, max_processes=64, memory_bytes=1 << 30)


@pytest.fixture(params=BACKENDS)
def backend(request):
    if request.param == "docker":
        request.getfixturevalue("docker_engine")
    return request.param


@pytest.fixture()
def sb(backend, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = make_sandbox(backend, None, ws, LIMITS)
    yield s
    s.close()


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that is not a zombie (one that exits while it is read is gone)."""
    try:
        return "Z" not in (Path(f"/proc/{pid}/stat").read_text().split()[2:3] or ["Z"])
    except (FileNotFoundError, ProcessLookupError):
        return False


def _gone(pids: list[int], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return True
        time.sleep(0.02)
    return False


def test_is_a_sandbox(sb):
    assert isinstance(sb, Sandbox) and sb.root == "/testbed"


def test_shell_state_persists(sb):
    sb.run("cd /tmp && export FOO=bar")
    assert sb.run("echo $PWD $FOO").output == "/tmp bar\n"
    assert sb.run("false").exit_code == 1


def test_no_network_interfaces_but_loopback(sb):
    r = sb.run("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    assert r.output.split() == ["lo"]


def test_loopback_listener_on_host_is_unreachable(sb):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(srv.accept()), daemon=True).start()
    r = sb.run(f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\"")
    srv.close()
    assert r.exit_code != 0
    assert "Connection refused" in r.output or "timed out" in r.output
    assert not accepted


def test_runs_unprivileged(sb):
    assert sb.run("id -u").output.strip() != "0"


def test_writes_outside_workspace_fail(sb, tmp_path):
    r = sb.run("touch /usr/x 2>&1; touch /etc/x 2>&1; touch /x 2>&1; mkdir /root/x 2>&1; echo ok > /testbed/f")
    assert r.output.count("Read-only file system") + r.output.count("Permission denied") >= 3
    assert (tmp_path / "ws" / "f").read_text() == "ok\n"
    assert not Path("/usr/x").exists()


def test_host_written_files_are_editable_inside(sb, tmp_path):
    (tmp_path / "ws" / "d").mkdir()
    (tmp_path / "ws" / "d" / "m.py").write_text("x = 1\n")
    r = sb.run("echo 'y = 2' >> d/m.py && touch d/new && sed -i s/x/z/ d/m.py && cat d/m.py")
    assert r.exit_code == 0 and r.output == "z = 1\ny = 2\n"


def test_endless_loop_is_killed_and_shell_survives(sb):
    r = sb.run("while true; do :; done", timeout=1)
    assert r.timed_out and r.exit_code is None
    assert sb.run("echo alive").output == "alive\n"


def test_timeout_kills_the_tree_with_setsid_children_and_keeps_the_shell(sb):
    sb.run("cd /tmp && export KEPT=1")
    r = sb.run("setsid sleep 300 & (setsid sleep 301 &); sleep 100", timeout=1)
    assert r.timed_out
    # (bash may report the killed job, naming its command, on the next command's output: compare whole lines)
    assert "sleep" not in sb.run("ps -eo comm").output.splitlines()
    assert sb.run("echo $PWD $KEPT").output.splitlines()[-1] == "/tmp 1"


def test_close_kills_every_process(sb):
    sb.run("setsid sleep 302 & sleep 303 &")
    pids = sb.sandbox_pids()
    assert len(pids) >= 3
    sb.close()
    sb.close()  # twice is fine
    assert _gone(pids)


def test_fork_bomb_is_contained(sb):
    sb.run(":(){ :|:& };:", timeout=3)
    time.sleep(0.5)
    r = sb.run("echo survived", timeout=10)
    r2 = sb.run("echo survived again", timeout=10)
    assert "survived" in r.output + r2.output
    assert r2.exit_code == 0
    assert "forks\n" in sb.run("ls /testbed >/dev/null && echo forks", timeout=10).output


def test_memory_hog_is_contained(sb):
    r = sb.run("python3 -c 'x = bytearray(4 << 30)'")
    assert r.exit_code != 0 and "MemoryError" in r.output
    assert sb.run("echo ok").output == "ok\n"


def test_huge_output_is_capped_and_counted(sb):
    r = sb.run("head -c 100000000 /dev/zero | tr '\\0' 'y'", timeout=120)
    assert r.total_bytes == 100_000_000
    assert len(r.output) < 20_000
    assert r.dropped_bytes > 99_000_000
    assert "output cut" in r.output
    assert sb.run("echo next").output == "next\n"


def test_file_size_limit(backend, tmp_path):
    ws = tmp_path / "w"
    ws.mkdir()
    with make_sandbox(backend, None, ws, Limits(file_bytes=1 << 20)) as s:
        r = s.run("head -c 5000000 /dev/zero > /testbed/big; echo rc=$?")
        assert "rc=0" not in r.output
        assert (ws / "big").stat().st_size <= 1 << 20


def test_exit_restarts_shell(sb):
    r = sb.run("exit 7")
    assert r.exit_code == 7 and "new shell" in r.output
    assert sb.run("pwd").output == "/testbed\n"


def test_restart_resets_shell_tmp_and_processes(sb):
    sb.run("cd /tmp && export FOO=1 && touch /tmp/left && (setsid sleep 304 &)")
    sb.restart()
    r = sb.run("echo $PWD ${FOO:-unset}; ls -A /tmp; ps -eo comm | grep -c sleep")
    assert r.output.split() == ["/testbed", "unset", "0"]


def test_exec_runs_one_process_with_env_and_timeout(sb):
    r = sb.exec(["bash", "-c", "echo $X $PWD; exit 3"], timeout=60, env={"X": "from-exec"})
    assert (r.output, r.exit_code, r.timed_out) == ("from-exec /testbed\n", 3, False)
    r = sb.exec(["bash", "-c", "setsid sleep 300 & sleep 300"], timeout=2)
    assert r.timed_out and r.exit_code is None


@pytest.mark.slow
def test_env_gold_fix_scores_one_and_bare_submit_zero(backend):
    from frog_gym.agents.oracle import OracleAgent
    from frog_gym.env import FrogSWEEnv

    env = FrogSWEEnv("inflection__handwritten-0001", backend=backend)
    try:
        obs, info = env.reset(seed=0)
        obs, *_ = env.step({"tool": "bash", "command": "git status --porcelain | wc -l; id -u"})
        assert obs.split()[0] == "0" and obs.split()[1] != "0"
        agent = OracleAgent()
        agent.reset(obs, info)
        for _ in range(20):
            obs, reward, terminated, truncated, info = env.step(agent.act(obs))
            if terminated or truncated:
                break
        assert info["infra_failure"] is None, info
        assert reward == 1.0 and info["report"]["resolved"] == "RESOLVED_FULL"
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step({"tool": "submit"})
        assert terminated and reward == 0.0 and info["report"]["resolved"] == "RESOLVED_NO"
    finally:
        env.close()


def test_kill_all_ends_every_process_and_the_next_command_gets_a_fresh_shell(sb):
    sb.run("true")
    sb.kill_all()
    keeper = set(sb.sandbox_pids())  # what the backend itself keeps (Docker: the container's PID-1 supervisor)
    sb.run("export KEEP=1; setsid sleep 304 & nohup sleep 305 >/dev/null 2>&1 &")
    pids = [p for p in sb.sandbox_pids() if p not in keeper]
    assert len(pids) >= 3  # the shell and both sleeps
    sb.kill_all()
    assert _gone(pids)
    r = sb.run("echo ${KEEP:-fresh}")
    assert r.exit_code == 0 and r.output == "fresh\n"


def test_disk_budget_fails_the_command_and_the_episode_goes_on(backend, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with make_sandbox(backend, None, ws, Limits(command_timeout=30, disk_bytes=32 << 20)) as s:
        r = s.run("head -c 48M /dev/zero > big && echo wrote")
        assert "the workspace is over its 32 MiB budget; delete files" in r.output
        assert r.exit_code not in (0, None)
        ok = s.run("rm big && echo cleaned")
        assert ok.exit_code == 0 and ok.output.endswith("cleaned\n")
        assert s.run("echo fine").output == "fine\n"
