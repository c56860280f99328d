"""``frog-gym serve`` driven by openenv-core's own clients over real HTTP and WebSocket on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

openenv = pytest.importorskip("openenv.core", reason="the 'openenv' extra is not installed")

from frog_gym.env.toolspec import openai_tools

TOKEN = "test-token-0123456789abcdef"
TOY = "frogtoy__handwritten-0001"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _serve(*args: str, env: dict[str, str] | None = None):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "frog_gym.cli", "serve", "--port", str(port), "--env",
                             "FrogSWE-Toy-v0", *args],
                            env={**os.environ, "FROG_GYM_SERVE_TOKEN": TOKEN, **(env or {})}, stderr=subprocess.PIPE,
                            text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if _get(f"{base}/{TOKEN}/health")[0] == 200:
                break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        raise AssertionError(f"the server did not start: {proc.stderr.read()}")
    return base, proc


@pytest.fixture(scope="module")
def server():
    base, proc = _serve("--max-steps", "6", "--max-sessions", "2")
    yield base
    proc.terminate()
    proc.wait(30)


@pytest.fixture(scope="module")
def one_session_server():
    """One session at most, closed after 2 s idle."""
    base, proc = _serve("--max-sessions", "1", "--idle-timeout", "2")
    yield base
    proc.terminate()
    proc.wait(30)


def test_an_episode_through_openenvs_generic_client(server):
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=f"{server}/{TOKEN}").sync() as env:
        r = env.reset(task_id=TOY, seed=0)
        assert not r.done and r.reward is None
        assert r.observation["task_id"] == TOY and "/testbed" in r.observation["text"]
        assert r.observation["tools"] == openai_tools()  # for the model request's tools=
        r = env.step({"tool": "bash", "command": "echo hi > note.txt && cat note.txt"})
        assert "hi" in r.observation["text"] and not r.done and r.reward == 0.0
        state = env.state()
        assert state["task_id"] == TOY and state["step_count"] == 1 and not state["done"]
        r = env.step({"text": "not a tool call"})  # a malformed action is an observation, not an error
        assert r.observation["text"].startswith("Error:") and not r.done
        r = env.step({"text": '<tool_call>\n{"name": "bash", "arguments": {"command": "cat note.txt"}}\n</tool_call>'})
        assert r.observation["text"].startswith("hi") and r.observation["tools"] == []  # a native call, as written
        r = env.step({"tool": "submit"})
        assert r.done and r.reward == 0.0 and r.observation["resolved"] is False
        assert r.observation["report"]["resolved"] == "RESOLVED_NO"


def test_the_typed_client_solves_a_task_with_the_gold_fix(server):
    from frog_gym.agents.oracle import OracleAgent
    from frog_gym.serve import FrogAction, FrogSWEClient

    agent = OracleAgent()
    with FrogSWEClient(base_url=f"{server}/{TOKEN}").sync() as env:
        r = env.reset(task_id=TOY)
        agent.reset(r.observation.text, {"task_id": TOY})
        while not r.done:
            r = env.step(FrogAction(**agent.act(r.observation.text)))
        assert r.reward == 1.0 and r.observation.resolved and r.observation.infra_failure is None
        assert env.state().done


def test_sessions_are_isolated(server):
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=f"{server}/{TOKEN}").sync() as a, \
            GenericEnvClient(base_url=f"{server}/{TOKEN}").sync() as b:
        a.reset(task_id=TOY)
        b.reset(task_id=TOY)
        a.step({"tool": "bash", "command": "echo secret-of-a > mine.txt; pwd"})
        seen = b.step({"tool": "bash", "command": "cat mine.txt; ls"}).observation["text"]
        assert "secret-of-a" not in seen and "No such file" in seen
        assert a.state()["episode_id"] != b.state()["episode_id"]
        assert b.state()["step_count"] == 1


def test_a_wrong_or_missing_token_is_refused(server):
    from openenv.core import GenericEnvClient

    assert _get(f"{server}/health")[0] == 401
    assert _get(f"{server}/wrong-token-0123456789/health")[0] == 401
    assert _get(f"{server}/health", {"Authorization": "Bearer nope"})[0] == 401
    status, body = _get(f"{server}/health", {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and body["status"] == "healthy"
    with pytest.raises(ConnectionError):
        GenericEnvClient(base_url=f"{server}/wrong-token-0123456789").sync().reset()


def test_serve_errors_are_one_line_and_exit_2():
    p = subprocess.run([sys.executable, "-m", "frog_gym.cli", "serve", "--token", "short"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("frog-gym serve: error: The token must be at least 16")
    p = subprocess.run([sys.executable, "-m", "frog_gym.cli", "serve", "--env", "FrogSWE-Toy-v9"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Did you mean 'FrogSWE-Toy-v0'?" in p.stderr


def test_http_reset_and_step_follow_openenvs_stateless_protocol(server):
    status, body = _post(f"{server}/{TOKEN}/reset", {"task_id": TOY})
    assert status == 200 and body["done"] is False and "/testbed" in body["observation"]["text"]
    status, body = _post(f"{server}/{TOKEN}/step", {"action": {"tool": "bash", "command": "ls"}})
    assert status == 200, body  # it was a 500 (gymnasium's ResetNeeded)
    assert body["done"] is True and body["reward"] is None
    assert body["observation"]["text"].startswith("No episode to step: send reset first. Over HTTP there is never one")
    assert _post(f"{server}/{TOKEN}/step", {"action": {"tool": 7}})[0] == 422  # OpenEnv validates the action
    status, body = _get(f"{server}/{TOKEN}/schema")
    assert status == 200 and "command" in body["action"]["properties"]


def test_a_session_over_the_limit_is_told_why(server):
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=f"{server}/{TOKEN}").sync() as a, \
            GenericEnvClient(base_url=f"{server}/{TOKEN}").sync() as b:
        a.reset(task_id=TOY)
        b.reset(task_id=TOY)
        third = GenericEnvClient(base_url=f"{server}/{TOKEN}").sync()
        with pytest.raises(Exception) as e:
            with third:
                third.reset(task_id=TOY)
        assert "all 2 sessions are in use (--max-sessions); close one or retry later" in str(e.value)


def _sandbox_sleepers(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _wait_for(cond, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


def test_an_idle_session_is_closed_and_a_long_step_is_not(one_session_server):
    from openenv.core import GenericEnvClient

    base = f"{one_session_server}/{TOKEN}"
    with GenericEnvClient(base_url=base).sync() as env:
        env.reset(task_id=TOY)
        r = env.step({"tool": "bash", "command": "sleep 3.5; echo slept"})  # longer than the idle timeout
        assert "slept" in r.observation["text"]
        time.sleep(4.5)
        with pytest.raises(Exception) as e:
            env.step({"tool": "bash", "command": "ls"})
        assert "idle for more than 2 s: the session and its sandbox were closed" in str(e.value)
    with GenericEnvClient(base_url=base).sync() as env:  # the one slot is free again
        assert env.reset(task_id=TOY).observation["task_id"] == TOY


CLIENT = """
import sys
from openenv.core import GenericEnvClient
with GenericEnvClient(base_url=sys.argv[1]).sync() as env:
    env.reset(task_id=sys.argv[2])
    env.step({"tool": "bash", "command": "sleep " + sys.argv[3]})
"""


def test_a_client_killed_mid_step_has_its_command_killed(one_session_server):
    from openenv.core import GenericEnvClient

    base = f"{one_session_server}/{TOKEN}"
    marker = f"{time.monotonic() % 1000 + 1000:.3f}"  # a sleep no other process runs
    client = subprocess.Popen([sys.executable, "-c", CLIENT, base, TOY, marker])
    try:
        assert _wait_for(lambda: _sandbox_sleepers(marker), 60), "the step never started"
    finally:
        client.kill()
        client.wait()
    assert _wait_for(lambda: not _sandbox_sleepers(marker), 10), "the sandbox command outlived its client"
    with GenericEnvClient(base_url=base).sync() as env:  # the session was removed: its slot is free
        assert env.reset(task_id=TOY).observation["task_id"] == TOY


def test_an_infrastructure_failure_is_unscored(tmp_path):
    from openenv.core import GenericEnvClient

    base, proc = _serve("--backend", "docker", env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"})
    try:
        with GenericEnvClient(base_url=f"{base}/{TOKEN}").sync() as env:
            r = env.reset(task_id=TOY)
            assert r.done and r.reward is None and "No Docker engine answers" in r.observation["infra_failure"]
            assert r.observation["text"].startswith("Infrastructure failure (not scored): ")
    finally:
        proc.terminate()
        proc.wait(30)


def test_openenvs_runtime_validator_passes(server):
    from openenv.cli._validation import validate_running_environment

    report = validate_running_environment(f"{server}/{TOKEN}")
    assert report["passed"], [c for c in report["criteria"] if not c["passed"]]


def test_the_manifest_app_runs_under_uvicorn_as_openenv_runs_it(tmp_path):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    manifest = dict(line.split(": ", 1) for line in (root / "openenv.yaml").read_text().splitlines()
                    if line and not line.startswith("#"))
    assert manifest["runtime"] == "fastapi" and manifest["app"] == "frog_gym.serve:app"
    assert "uvicorn\", \"frog_gym.serve:app\"" in (root / "Dockerfile").read_text()
    port = _free_port()
    cmd = [sys.executable, "-m", "uvicorn", manifest["app"], "--port", str(port), "--log-level", "warning"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "FROG_GYM_SERVE_TOKEN"})
    assert p.returncode != 0 and "Set FROG_GYM_SERVE_TOKEN to the token clients must send" in p.stderr
    proc = subprocess.Popen(cmd, env={**os.environ, "FROG_GYM_SERVE_TOKEN": TOKEN, "FROG_GYM_SERVE_ENV": "FrogSWE-Toy-v0"},
                            stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: _health(f"http://127.0.0.1:{port}/{TOKEN}"), 60), "uvicorn did not serve the app"
        assert _get(f"http://127.0.0.1:{port}/health")[0] == 401
    finally:
        proc.terminate()
        proc.wait(30)


def _health(base: str) -> bool:
    try:
        return _get(f"{base}/health")[0] == 200
    except OSError:
        return False


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def test_eight_sessions_step_at_once_on_the_servers_event_loop(together):
    """Eight WebSocket sessions each run a 2 s command at the same time: they overlap, and the server's
    thread count stays within its two shared pools (2 + 2 threads here), the oracle's replay thread of each
    grade running (2 at most) and OpenEnv's one session thread."""
    import asyncio

    from openenv.core import GenericEnvClient

    base, proc = _serve("--max-sessions", "8", "--max-steps", "6",
                        env={"FROG_GYM_ASYNC_THREADS": "2", "FROG_GYM_SANDBOX_THREADS": "2"})
    n = 8
    try:
        idle = _threads(proc.pid)
        peak = 0

        async def watch():
            nonlocal peak
            while True:
                peak = max(peak, _threads(proc.pid))
                await asyncio.sleep(0.02)

        async def session(i: int, ready):
            async with GenericEnvClient(base_url=f"{base}/{TOKEN}", message_timeout_s=120) as env:
                await env.reset(task_id=TOY)
                await env.step({"tool": "bash", "command": "true"})
                await ready()
                t = time.monotonic()
                r = await env.step({"tool": "bash", "command": f"sleep 2; echo session-{i}"})
                took = time.monotonic() - t
                end = await env.step({"tool": "submit"})
                return r.observation["text"], took, end.done, end.observation["resolved"]

        async def main():
            watcher = asyncio.ensure_future(watch())
            ready = together(n)
            try:
                return await asyncio.gather(*(session(i, ready) for i in range(n)))
            finally:
                watcher.cancel()

        results = asyncio.run(main())
    finally:
        proc.terminate()
        proc.wait(30)
    for i, (text, took, done, resolved) in enumerate(results):
        assert f"session-{i}" in text and done and resolved is False
    assert max(took for _, took, _, _ in results) < 8, results  # overlapped, not 8 x 2 s in a queue
    assert peak - idle <= 7, (idle, peak)
