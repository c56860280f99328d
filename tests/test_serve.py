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


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "frog_gym.cli", "serve", "--port", str(port), "--env",
                             "FrogSWE-Toy-v0", "--max-steps", "6", "--max-sessions", "2"],
                            env={**os.environ, "FROG_GYM_SERVE_TOKEN": TOKEN}, stderr=subprocess.PIPE, text=True)
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
    yield base
    proc.terminate()
    proc.wait(30)


def test_an_episode_through_openenvs_generic_client(server):
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=f"{server}/{TOKEN}").sync() as env:
        r = env.reset(task_id=TOY, seed=0)
        assert not r.done and r.reward is None
        assert r.observation["task_id"] == TOY and "/testbed" in r.observation["text"]
        r = env.step({"tool": "bash", "command": "echo hi > note.txt && cat note.txt"})
        assert "hi" in r.observation["text"] and not r.done and r.reward == 0.0
        state = env.state()
        assert state["task_id"] == TOY and state["step_count"] == 1 and not state["done"]
        r = env.step({"text": "not a tool call"})  # a malformed action is an observation, not an error
        assert r.observation["text"].startswith("Error:") and not r.done
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
