"""The local sandbox's isolation and limits, checked by doing what an agent might do."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from frog_gym import paths
from frog_gym.sandbox.base import Limits
from frog_gym.sandbox.local import LocalSandbox


@pytest.fixture()
def sb(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    s = LocalSandbox(ws, limits=Limits(command_timeout=5, max_processes=64, memory_bytes=1 << 30))
    yield s
    s.close()


def _gone(pids: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and
                 "Z" not in (Path(f"/proc/{p}/stat").read_text().split()[2:3] or ["Z"])]
        if not alive:
            return True
        time.sleep(0.02)
    return False


def test_shell_state_persists(sb):
    sb.run("cd /tmp && export FOO=bar")
    assert sb.run("echo $PWD $FOO").output == "/tmp bar\n"
    assert sb.run("false").exit_code == 1


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


def test_no_network_interfaces_but_loopback(sb):
    r = sb.run("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    assert r.output.split() == ["lo"]


def test_writes_outside_workspace_fail(sb, tmp_path):
    r = sb.run("touch /usr/x 2>&1; touch /etc/x 2>&1; touch /x 2>&1; mkdir /root/x 2>&1; echo ok > /testbed/f")
    assert r.output.count("Read-only file system") + r.output.count("Permission denied") >= 3
    assert (tmp_path / "ws" / "f").read_text() == "ok\n"
    assert not Path("/usr/x").exists()


def test_cannot_see_home_cache_or_task_files(sb):
    home = paths.home()
    tasks = Path(__file__).resolve().parents[1] / "registry" / "tasks"
    r = sb.run(f"ls {home} 2>&1; ls {tasks} 2>&1; ls ~ 2>&1; ls /root 2>&1; cat /etc/shadow 2>&1")
    assert "No such file or directory" in r.output
    assert ".jsonl" not in r.output and "venvs" not in r.output


def test_endless_loop_is_killed_and_shell_survives(sb):
    r = sb.run("while true; do :; done", timeout=1)
    assert r.timed_out and r.exit_code is None
    assert sb.run("echo alive").output == "alive\n"


def test_setsid_children_die_at_timeout_and_close(sb):
    r = sb.run("setsid sleep 300 & (setsid sleep 301 &); sleep 100", timeout=1)
    assert r.timed_out
    assert "sleep" not in sb.run("ps -eo comm").output
    sb.run("setsid sleep 302 &")
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


def test_memory_hog_is_contained(sb):
    r = sb.run("python3 -c 'x = bytearray(4 << 30)'")
    assert r.exit_code != 0 and "MemoryError" in r.output
    assert sb.run("echo ok").output == "ok\n"


def test_huge_output_is_capped_and_counted(sb):
    r = sb.run("head -c 100000000 /dev/zero | tr '\\0' 'y'")
    assert r.total_bytes == 100_000_000
    assert len(r.output) < 20_000
    assert r.dropped_bytes > 99_000_000
    assert "output cut" in r.output
    assert sb.run("echo next").output == "next\n"


def test_file_size_limit(tmp_path):
    ws = tmp_path / "w"
    ws.mkdir()
    with LocalSandbox(ws, limits=Limits(file_bytes=1 << 20)) as s:
        r = s.run("head -c 5000000 /dev/zero > /testbed/big; echo rc=$?")
        assert "rc=0" not in r.output
        assert (ws / "big").stat().st_size <= 1 << 20


def test_exit_restarts_shell(sb):
    r = sb.run("exit 7")
    assert r.exit_code == 7 and "new shell" in r.output
    assert sb.run("pwd").output == "/testbed\n"


def test_close_leaves_no_processes(tmp_path):
    ws = tmp_path / "w"
    ws.mkdir()
    s = LocalSandbox(ws)
    s.run("sleep 100 &")
    pids = s.sandbox_pids()
    s.close()
    assert _gone(pids)
