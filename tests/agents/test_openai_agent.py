"""OpenAIAgent against a real local HTTP server that answers from a script."""

from __future__ import annotations

import email.utils
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from frog_gym.agents.base import Agent
from frog_gym.agents.openai_agent import (
    NATIVE_SYSTEM_PROMPT,
    TEXT_SYSTEM_PROMPT,
    AgentError,
    OpenAIAgent,
    OpenAIAgentConfig,
    _retry_after,
)
from frog_gym.env.toolspec import TOOLS

PROMPT = "Fix the failing test in tests/test_math.py."


@dataclass
class Reply:
    """One scripted HTTP answer."""

    body: bytes | dict[str, Any] = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out closes the socket under a delayed reply; that is expected here


class ScriptedServer:
    """Answers each POST with the next scripted reply and records what it was sent."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = deque(replies)
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                scripted.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "json": json.loads(raw),
                    }
                )
                reply = (
                    scripted.replies.popleft() if scripted.replies else Reply({"error": "script done"}, 500)
                )
                if reply.delay_s:
                    scripted.release.wait(reply.delay_s)
                body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.url = self.base_url + "/chat/completions"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def roles(self, i: int) -> list[str]:
        return [m["role"] for m in self.requests[i]["json"]["messages"]]


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(*replies: Reply) -> ScriptedServer:
        servers.append(ScriptedServer(list(replies)))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def call(name: str, args: dict[str, Any] | str, call_id: str = "call_1") -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] = (10, 5),
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Reply(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
        }
    )


def make_agent(server: ScriptedServer, **overrides: Any) -> OpenAIAgent:
    settings: dict[str, Any] = {
        "model": "test-model",
        "base_url": server.base_url,
        "tool_mode": "native",
        "timeout_s": 2.0,
        "max_retries": 3,
        "backoff_base_s": 0.001,
        "backoff_cap_s": 0.01,
        "seed": 7,
    }
    settings.update(overrides)
    agent = OpenAIAgent(OpenAIAgentConfig(**settings))
    agent.reset(PROMPT, {})
    return agent


def test_native_tool_call_becomes_an_action_and_the_payload_is_complete(serve, monkeypatch):
    monkeypatch.setenv("FROG_TEST_KEY", "sk-test-123")
    edit = {"path": "src/math.py", "old_str": "a - b", "new_str": "a + b"}
    server = serve(
        completion(tool_calls=[call("str_replace", edit)]), completion(tool_calls=[call("submit", {})])
    )
    agent = make_agent(server, api_key_env="FROG_TEST_KEY", temperature=0.5, max_tokens=256)
    assert isinstance(agent, Agent)

    assert agent.act(PROMPT) == {"tool": "str_replace", **edit}
    assert agent.act("The file src/math.py has been edited.") == {"tool": "submit"}

    first, second = server.requests
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["authorization"] == "Bearer sk-test-123"
    payload = first["json"]
    assert (payload["model"], payload["temperature"], payload["max_tokens"], payload["seed"]) == (
        "test-model",
        0.5,
        256,
        7,
    )
    assert payload["tools"] == [t.json_schema() for t in TOOLS.values()]
    assert payload["messages"] == [
        {"role": "system", "content": NATIVE_SYSTEM_PROMPT},
        {"role": "user", "content": PROMPT},
    ]
    assert server.roles(1) == ["system", "user", "assistant", "tool"]
    assistant, tool = second["json"]["messages"][2:]
    assert assistant["tool_calls"] == [call("str_replace", edit)]
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "The file src/math.py has been edited.",
    }
    assert agent.stats.extra["tool_mode"] == "native"


def test_several_tool_calls_are_returned_one_by_one_and_answered_in_order(serve):
    calls = [call("view", {"path": "src"}, "c1"), call("bash", {"command": "pytest -q"}, "c2")]
    server = serve(completion(tool_calls=calls), completion(tool_calls=[call("submit", {}, "c3")]))
    agent = make_agent(server)

    assert agent.act(PROMPT) == {"tool": "view", "path": "src"}
    assert agent.act("math.py") == {"tool": "bash", "command": "pytest -q"}
    assert len(server.requests) == 1, "the queued call must not ask the model"
    assert agent.act("1 failed") == {"tool": "submit"}

    tail = server.requests[1]["json"]["messages"][2:]
    assert [(m["role"], m.get("tool_call_id"), m.get("content")) for m in tail] == [
        ("assistant", None, ""),
        ("tool", "c1", "math.py"),
        ("tool", "c2", "1 failed"),
    ]
    assert agent.stats.model_calls == 2


def test_text_mode_returns_raw_replies_and_sends_no_tools(serve):
    bash = "I will run the tests.\n```bash\npytest -q\n```"
    server = serve(completion(bash), completion('{"tool": "submit"}'))
    agent = make_agent(server, tool_mode="text")

    assert agent.act(PROMPT) == bash
    assert agent.act("1 failed") == '{"tool": "submit"}'

    assert all("tools" not in r["json"] for r in server.requests)
    assert "authorization" not in server.requests[0]["headers"]
    messages = server.requests[1]["json"]["messages"]
    assert messages[0] == {"role": "system", "content": TEXT_SYSTEM_PROMPT}
    assert messages[2:] == [{"role": "assistant", "content": bash}, {"role": "user", "content": "1 failed"}]
    assert "```bash" in TEXT_SYSTEM_PROMPT and all(name in TEXT_SYSTEM_PROMPT for name in TOOLS)


def test_native_reply_without_tool_calls_is_text_and_the_next_observation_a_user_message(serve):
    server = serve(completion("Let me think."), completion(tool_calls=[call("submit", {})]))
    agent = make_agent(server)

    assert agent.act(PROMPT) == "Let me think."
    assert agent.act("No action found.") == {"tool": "submit"}
    assert server.roles(1) == ["system", "user", "assistant", "user"]
    assert "tools" in server.requests[1]["json"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(b"<html>502 Bad Gateway</html>"), "the body is not JSON"),
        (Reply({"object": "chat.completion"}), "the reply has no choices"),
        (
            Reply({"error": {"message": "model is loading"}}),
            "the reply has no choices (error: model is loading)",
        ),
        (Reply({"choices": [{"index": 0}]}), "choices[0] has no message"),
        (Reply({"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]}), "tool_calls is not a list"),
    ],
)
def test_a_malformed_reply_is_malformed_text_and_the_episode_goes_on(serve, reply, reason):
    server = serve(reply, completion(tool_calls=[call("submit", {})]))
    agent = make_agent(server)

    action = agent.act(PROMPT)
    assert isinstance(action, str) and reason in action
    assert "{" not in action and "```" not in action, "the env must not find an action in it"
    [error] = agent.stats.extra["errors"]
    assert error.startswith(reason)
    assert agent.act("Your action could not be parsed.") == {"tool": "submit"}
    assert server.roles(1) == ["system", "user", "user"]


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [('{"path": "src/math.py"', "are not JSON"), ('["src/math.py"]', "are not a JSON object")],
)
def test_bad_tool_call_arguments_are_malformed_text_answered_with_a_tool_message(serve, arguments, reason):
    server = serve(
        completion(tool_calls=[call("view", arguments)]), completion(tool_calls=[call("submit", {})])
    )
    agent = make_agent(server)

    action = agent.act(PROMPT)
    assert isinstance(action, str) and f"the arguments of tool call 'view' {reason}" in action
    assert len(agent.stats.extra["errors"]) == 1
    assert agent.act("Your action could not be parsed.") == {"tool": "submit"}

    assistant, tool = server.requests[1]["json"]["messages"][2:]
    assert assistant["tool_calls"][0]["function"] == {"name": "view", "arguments": "{}"}
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "Your action could not be parsed."}


def test_429_with_retry_after_is_retried_after_the_asked_wait(serve):
    slow_down = Reply({"error": "rate limited"}, 429, {"Retry-After": "0.05"})
    server = serve(slow_down, slow_down, completion(tool_calls=[call("submit", {})]))
    agent = make_agent(server, backoff_cap_s=1.0)

    start = time.monotonic()
    assert agent.act(PROMPT) == {"tool": "submit"}
    assert time.monotonic() - start >= 0.1
    assert len(server.requests) == 3
    assert agent.stats.extra["http_retries"] == 2
    assert agent.stats.extra["backoff_s"] >= 0.1
    assert agent.stats.model_calls == 1


def test_retry_after_is_capped_by_backoff_cap_s(serve):
    server = serve(Reply(b"", 429, {"Retry-After": "30"}), completion(tool_calls=[call("submit", {})]))
    agent = make_agent(server, backoff_cap_s=0.02)

    start = time.monotonic()
    assert agent.act(PROMPT) == {"tool": "submit"}
    assert time.monotonic() - start < 2
    assert 0 < agent.stats.extra["backoff_s"] <= 0.02


def test_retry_after_reads_seconds_and_http_dates():
    assert _retry_after({"Retry-After": "3"}) == 3.0
    in_ten = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 < (_retry_after({"Retry-After": in_ten}) or 0) <= 10
    assert _retry_after({}) is None
    assert _retry_after({"Retry-After": "soon"}) is None


def test_500_is_retried(serve):
    server = serve(Reply(b"upstream crashed", 500), completion(tool_calls=[call("submit", {})]))
    agent = make_agent(server)

    assert agent.act(PROMPT) == {"tool": "submit"}
    assert len(server.requests) == 2
    assert agent.stats.extra["http_retries"] == 1
    assert agent.stats.extra["backoff_s"] > 0


def test_a_request_past_timeout_s_is_retried(serve):
    server = serve(
        Reply(completion(tool_calls=[call("bash", {"command": "ls"})]).body, delay_s=3),
        completion(tool_calls=[call("submit", {})]),
    )
    agent = make_agent(server, timeout_s=0.2)

    start = time.monotonic()
    assert agent.act(PROMPT) == {"tool": "submit"}
    assert time.monotonic() - start < 2
    assert len(server.requests) == 2
    assert agent.stats.extra["http_retries"] == 1


def test_timeouts_until_the_retries_run_out_raise_agent_error(serve):
    server = serve(Reply(b"{}", delay_s=3), Reply(b"{}", delay_s=3))
    agent = make_agent(server, timeout_s=0.2, max_retries=1)

    with pytest.raises(AgentError) as e:
        agent.act(PROMPT)
    assert str(e.value) == (
        f"POST {server.url} failed 2 times; the last failure: no answer within timeout_s=0.2. "
        "Check that the server is up and not overloaded, or raise timeout_s."
    )


def test_429_until_the_retries_run_out_raises_agent_error(serve):
    server = serve(*[Reply(b"slow down", 429)] * 3)
    agent = make_agent(server, max_retries=2)

    with pytest.raises(AgentError) as e:
        agent.act(PROMPT)
    assert str(e.value) == (
        f"POST {server.url} failed 3 times; the last failure: HTTP 429 Too Many Requests: slow down. "
        "The server is rate limiting: lower concurrency or raise max_retries / backoff_cap_s."
    )
    assert len(server.requests) == 3
    assert agent.stats.extra["http_retries"] == 2


def test_a_server_that_is_not_there_raises_agent_error_after_retries():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    agent = OpenAIAgent(OpenAIAgentConfig(model="m", base_url=base_url, max_retries=1, backoff_base_s=0.001))
    agent.reset(PROMPT, {})

    with pytest.raises(AgentError, match="failed 2 times; the last failure: connection failed: ") as e:
        agent.act(PROMPT)
    assert str(e.value).endswith(f"Check that the server is running and that base_url='{base_url}' is right.")


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "Check the API key in $FROG_TEST_KEY (OpenAIAgentConfig.api_key_env)."),
        (404, "(it usually ends in /v1) and that model 'test-model' is served there."),
        (
            400,
            "with tool_mode='native', that the server supports tools (else use tool_mode='auto' or 'text').",
        ),
    ],
)
def test_a_refused_request_raises_agent_error_without_retrying(serve, monkeypatch, status, hint):
    monkeypatch.setenv("FROG_TEST_KEY", "sk-wrong")
    server = serve(Reply({"error": "no"}, status))
    agent = make_agent(server, api_key_env="FROG_TEST_KEY")

    with pytest.raises(AgentError) as e:
        agent.act(PROMPT)
    assert str(e.value).startswith(f"POST {server.url} was refused: HTTP {status} ")
    assert str(e.value).endswith(hint)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "rejection",
    [
        Reply({"error": {"message": '"auto" tool choice requires --enable-auto-tool-choice'}}, 400),
        Reply({"detail": "tools: unexpected field"}, 422),
        Reply({"error": {"code": 500, "message": "tools param requires --jinja flag"}}, 500),
    ],
)
def test_auto_falls_back_to_text_for_good_when_the_server_rejects_tools(serve, rejection):
    bash = "```bash\nls\n```"
    server = serve(rejection, completion(bash), completion('{"tool": "submit"}'))
    agent = make_agent(server, tool_mode="auto")

    assert agent.act(PROMPT) == bash
    assert "tools" in server.requests[0]["json"]
    assert "tools" not in server.requests[1]["json"]
    assert server.requests[1]["json"]["messages"][0]["content"] == TEXT_SYSTEM_PROMPT
    assert agent.stats.extra["tool_mode"] == "text"
    assert agent.stats.extra["tool_mode_fallback"].startswith(f"HTTP {rejection.status} ")
    assert agent.stats.extra["http_retries"] == 0

    agent.reset(PROMPT, {})
    assert agent.act(PROMPT) == '{"tool": "submit"}'
    assert "tools" not in server.requests[2]["json"]
    assert server.requests[2]["json"]["messages"][0]["content"] == TEXT_SYSTEM_PROMPT


def test_auto_falls_back_to_text_when_the_first_reply_has_no_tool_calls(serve):
    server = serve(completion("```bash\nls\n```"), completion('{"tool": "submit"}'))
    agent = make_agent(server, tool_mode="auto")

    assert agent.act(PROMPT) == "```bash\nls\n```"
    assert agent.act("README.md") == '{"tool": "submit"}'
    assert "tools" not in server.requests[1]["json"]
    assert server.roles(1) == ["system", "user", "assistant", "user"]
    assert agent.stats.extra["tool_mode_fallback"] == "the first reply had no tool calls"


def test_auto_stays_native_once_the_server_made_a_tool_call(serve):
    server = serve(
        completion(tool_calls=[call("bash", {"command": "ls"})]),
        completion("Thinking out loud."),
        Reply({"error": "context length exceeded"}, 400),
    )
    agent = make_agent(server, tool_mode="auto")

    assert agent.act(PROMPT) == {"tool": "bash", "command": "ls"}
    assert agent.act("README.md") == "Thinking out loud."
    with pytest.raises(AgentError, match="was refused: HTTP 400 Bad Request"):
        agent.act("No action found.")
    assert all("tools" in r["json"] for r in server.requests)
    assert agent.stats.extra["tool_mode"] == "native"


def test_token_counts_are_summed_from_usage_and_reset_per_episode(serve):
    server = serve(
        completion(tool_calls=[call("bash", {"command": "ls"})], usage=(100, 20)),
        completion(tool_calls=[call("submit", {})], usage=(150, 30)),
        Reply({"choices": [{"message": {"role": "assistant", "content": "no usage"}}]}),
    )
    agent = make_agent(server)

    agent.act(PROMPT)
    agent.act("README.md")
    assert (agent.stats.prompt_tokens, agent.stats.completion_tokens, agent.stats.model_calls) == (250, 50, 2)

    agent.reset(PROMPT, {})
    assert agent.act(PROMPT) == "no usage"
    assert (agent.stats.prompt_tokens, agent.stats.completion_tokens, agent.stats.model_calls) == (0, 0, 1)


def test_a_missing_api_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("FROG_TEST_KEY", raising=False)
    with pytest.raises(AgentError) as e:
        OpenAIAgent(OpenAIAgentConfig(model="m", api_key_env="FROG_TEST_KEY"))
    assert str(e.value) == (
        "The environment variable 'FROG_TEST_KEY' (OpenAIAgentConfig.api_key_env) is not set, so there is no "
        "API key for http://localhost:8000/v1/chat/completions. Export it with the key, or set "
        "api_key_env=None for an endpoint that needs no key (local vLLM, llama.cpp, Ollama)."
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"tool_mode": "nativ"},
            "OpenAIAgentConfig.tool_mode='nativ' is not one of 'native', 'text', 'auto'. Did you mean 'native'?",
        ),
        ({"model": ""}, "OpenAIAgentConfig.model is empty: set it to a model the server serves"),
        (
            {"base_url": "localhost:8000/v1"},
            "OpenAIAgentConfig.base_url='localhost:8000/v1' is not an http(s) URL",
        ),
        ({"api_key_env": ""}, "OpenAIAgentConfig.api_key_env is '': set it to the name of the variable"),
        ({"timeout_s": 0}, "OpenAIAgentConfig.timeout_s=0 must be positive."),
        ({"max_retries": -1}, "OpenAIAgentConfig.max_retries=-1 must not be negative."),
        ({"backoff_cap_s": 0.5}, "OpenAIAgentConfig.backoff_cap_s=0.5 is below backoff_base_s=1.0"),
    ],
)
def test_config_mistakes_are_caught_early(settings, message):
    with pytest.raises(ValueError) as e:
        OpenAIAgentConfig(**{"model": "m", **settings})
    assert str(e.value).startswith(message)
