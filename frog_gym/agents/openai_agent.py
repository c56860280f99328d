"""An agent backed by any OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp server, Ollama).

The agent keeps the conversation: a system prompt, the task prompt as the first user message, then each
model reply and each observation. In ``native`` tool mode it sends ``tools=`` built from
:data:`frog_gym.env.toolspec.TOOLS` and turns the reply's ``tool_calls`` into action dicts, answering each
call with a ``tool`` message; in ``text`` mode the system prompt describes the text protocol and the raw
reply is the action, which the env parses. ``auto`` starts native and falls back to text for good when
the server shows it cannot do tool calls.

Only the standard library speaks HTTP. Transient failures (429, 5xx, connection errors, timeouts) are
retried with exponential backoff and jitter, honouring ``Retry-After``; when the retries run out, or the
server refuses the request outright (401, 404, ...), :class:`AgentError` says what to check. A reply that
arrives but cannot be read (a body that is not JSON, no ``choices``, tool-call arguments that are not a
JSON object) does not end the episode: the action is text the env reports as malformed, and the problem
is recorded in ``stats.extra["errors"]``.

Example:
    >>> agent = OpenAIAgent(OpenAIAgentConfig(model="qwen2.5-coder", base_url="http://localhost:8000/v1"))
    >>> agent.reset("Fix the failing test in tests/test_math.py.", {})
    >>> action = agent.act("Fix the failing test in tests/test_math.py.")  # doctest: +SKIP
    >>> action  # doctest: +SKIP
    {'tool': 'bash', 'command': 'pytest -q tests/test_math.py'}
"""

from __future__ import annotations

import collections
import difflib
import email.utils
import http
import http.client
import json
import os
import random
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from frog_gym.agents.base import Action, AgentStats
from frog_gym.env.toolspec import TOOLS

TOOL_MODES = ("native", "text", "auto")


class AgentError(RuntimeError):
    """The model endpoint could not be used: the message names the URL, the status and what to check."""


@dataclass(frozen=True)
class OpenAIAgentConfig:
    """How to reach the model and how to sample from it.

    Example:
        >>> OpenAIAgentConfig(model="qwen2.5-coder:7b", base_url="http://localhost:11434/v1").tool_mode
        'auto'
    """

    model: str
    """Model name as the server knows it (vLLM: ``--served-model-name``; Ollama: ``qwen2.5-coder:7b``)."""
    base_url: str = "http://localhost:8000/v1"
    """Root of the OpenAI-compatible API, usually ending in ``/v1``; requests go to
    ``{base_url}/chat/completions``."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key, sent as ``Authorization: Bearer``; ``None``
    for an endpoint that needs no key (a local vLLM, llama.cpp or Ollama server)."""
    temperature: float = 0.0
    """Sampling temperature; raise it to draw diverse rollouts."""
    max_tokens: int = 4096
    """Most tokens the model may write in one reply."""
    tool_mode: str = "auto"
    """``native``: send ``tools=`` and read ``tool_calls``. ``text``: describe the text protocol in the
    system prompt and return the raw reply. ``auto``: native, falling back to text for the rest of the
    agent's life if the server rejects ``tools`` (400/422, or an error that mentions tools) or its first
    reply carries no tool calls."""
    timeout_s: float = 300.0
    """Seconds to wait on the socket for one request before retrying it."""
    max_retries: int = 5
    """Retries of a transient failure (429, 5xx, connection error, timeout) before :class:`AgentError`."""
    backoff_base_s: float = 1.0
    """Wait before the first retry; it doubles with each retry, with jitter."""
    backoff_cap_s: float = 60.0
    """Longest single wait between retries, a server's ``Retry-After`` included."""
    seed: int | None = None
    """Sampling seed sent to the server, and the seed of the backoff jitter; ``None`` sends none."""

    def __post_init__(self) -> None:
        if self.tool_mode not in TOOL_MODES:
            near = difflib.get_close_matches(str(self.tool_mode), TOOL_MODES, n=1)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            raise ValueError(
                f"OpenAIAgentConfig.tool_mode={self.tool_mode!r} is not one of "
                f"{', '.join(map(repr, TOOL_MODES))}.{hint}"
            )
        if not self.model:
            raise ValueError(
                "OpenAIAgentConfig.model is empty: set it to a model the server serves "
                f"(GET {self.base_url.rstrip('/')}/models lists them)."
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"OpenAIAgentConfig.base_url={self.base_url!r} is not an http(s) URL: "
                "set it to e.g. 'http://localhost:8000/v1'."
            )
        if self.api_key_env == "":
            raise ValueError(
                "OpenAIAgentConfig.api_key_env is '': set it to the name of the variable holding the key, "
                "or to None for an endpoint that needs no key."
            )
        for name in ("timeout_s", "max_tokens"):
            if getattr(self, name) <= 0:
                raise ValueError(f"OpenAIAgentConfig.{name}={getattr(self, name)!r} must be positive.")
        for name in ("temperature", "max_retries", "backoff_base_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"OpenAIAgentConfig.{name}={getattr(self, name)!r} must not be negative.")
        if self.backoff_cap_s < self.backoff_base_s:
            raise ValueError(
                f"OpenAIAgentConfig.backoff_cap_s={self.backoff_cap_s!r} is below "
                f"backoff_base_s={self.backoff_base_s!r}: raise the cap or lower the base."
            )


def _tool_signature(name: str) -> str:
    params = ", ".join(p.name if p.required else f"{p.name}?" for p in TOOLS[name].params)
    return f"{name}({params})"


NATIVE_SYSTEM_PROMPT = (
    "You are a software engineer working on a task in a repository. Act through the tools you are given, "
    "one call at a time, reading each result before the next call. Call submit when the task is done."
)

TEXT_SYSTEM_PROMPT = (
    "You are a software engineer working on a task in a repository. Act with exactly one action per "
    "reply and read its result before the next one.\n\n"
    "Write an action as one JSON object naming the tool and its arguments, optionally in a ```json block:\n"
    '{"tool": "view", "path": "src/app.py", "view_range": [1, 40]}\n'
    "or run a shell command with a ```bash block:\n"
    "```bash\npytest -q\n```\n\n"
    "Tools (? marks an optional argument):\n"
    + "\n".join(f"- {_tool_signature(t.name)}: {t.description}" for t in TOOLS.values())
    + "\n\nUse submit when the task is done."
)

_TRANSIENT = frozenset({408, 429})


def _transient(status: int) -> bool:
    return status in _TRANSIENT or status >= 500


def _rejects_tools(status: int, body: bytes) -> bool:
    # llama.cpp without --jinja answers 500 "tools param requires --jinja flag": not worth retrying.
    return status in (400, 422) or (status >= 500 and b"tool" in body.lower())


def _snippet(body: bytes, limit: int = 300) -> str:
    text = body.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _status_text(status: int) -> str:
    try:
        return f"HTTP {status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def _retry_after(headers: Any) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delay-seconds or an HTTP date), if it has one."""
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _call_arguments(name: str, arguments: Any) -> dict[str, Any] | str:
    """The arguments of a tool call as a dict, or why they are not one."""
    if isinstance(arguments, dict):
        return arguments
    try:
        args = json.loads(arguments or "{}")
    except (TypeError, ValueError) as e:
        return f"the arguments of tool call {name!r} are not JSON ({e})"
    if not isinstance(args, dict):
        return f"the arguments of tool call {name!r} are not a JSON object"
    return args


class _ToolsRejected(Exception):
    """The server refused a request because of ``tools``; ``auto`` mode falls back to text."""


class OpenAIAgent:
    """An :class:`~frog_gym.agents.base.Agent` that asks an OpenAI-compatible chat endpoint for each action.

    ``stats`` holds the episode's token counts (from ``usage``), model calls, and in ``extra``:
    ``tool_mode`` (the mode in use), ``http_retries``, ``backoff_s`` (seconds slept between retries),
    ``errors`` (unreadable replies) and, after an ``auto`` fallback, ``tool_mode_fallback`` (why).

    Args:
        config: the endpoint and sampling settings.

    Raises:
        AgentError: ``config.api_key_env`` names a variable that is not set.

    Example:
        >>> agent = OpenAIAgent(OpenAIAgentConfig(model="llama3.1", tool_mode="text"))
        >>> agent.reset("Make tests/test_io.py pass.", {})
        >>> [m["role"] for m in agent.messages]
        ['system', 'user']
    """

    def __init__(self, config: OpenAIAgentConfig) -> None:
        self.config = config
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if config.api_key_env is not None:
            key = os.environ.get(config.api_key_env)
            if not key:
                raise AgentError(
                    f"The environment variable {config.api_key_env!r} (OpenAIAgentConfig.api_key_env) is not "
                    f"set, so there is no API key for {self.url}. Export it with the key, or set "
                    "api_key_env=None for an endpoint that needs no key (local vLLM, llama.cpp, Ollama)."
                )
            self._headers["Authorization"] = f"Bearer {key}"
        self._rng = random.Random(config.seed)
        # "auto" until the server shows whether it does tool calls; kept across episodes.
        self._mode = config.tool_mode
        self.reset("", {})

    @property
    def messages(self) -> list[dict[str, Any]]:
        """A copy of the conversation so far, as sent to the server."""
        return [dict(m) for m in self._messages]

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        """Start a conversation: the system prompt, then ``prompt`` as the first user message."""
        system = TEXT_SYSTEM_PROMPT if self._mode == "text" else NATIVE_SYSTEM_PROMPT
        self._messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        self._prompt = prompt
        self._started = False
        self._pending_call: str | None = None
        self._queued: collections.deque[tuple[str, Action]] = collections.deque()
        self.stats = AgentStats(
            extra={"tool_mode": self._mode, "http_retries": 0, "backoff_s": 0.0, "errors": []}
        )

    def act(self, observation: str) -> Action:
        """Record ``observation`` and return the next action: a queued tool call, or a new model reply."""
        self._observe(observation)
        if self._queued:
            self._pending_call, action = self._queued.popleft()
            return action
        return self._ask_model()

    def _observe(self, observation: str) -> None:
        if not self._started:
            self._started = True
            if observation == self._prompt:  # the env's first observation is the prompt itself
                return
        if self._pending_call is not None:
            self._messages.append(
                {"role": "tool", "tool_call_id": self._pending_call, "content": observation}
            )
            self._pending_call = None
        else:
            self._messages.append({"role": "user", "content": observation})

    def _payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": self._messages,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if self.config.seed is not None:
            payload["seed"] = self.config.seed
        if self._mode != "text":
            payload["tools"] = [t.json_schema() for t in TOOLS.values()]
        return payload

    def _fall_back(self, reason: str) -> None:
        self._mode = "text"
        self._messages[0] = {"role": "system", "content": TEXT_SYSTEM_PROMPT}
        self.stats.extra["tool_mode"] = "text"
        self.stats.extra["tool_mode_fallback"] = reason

    def _ask_model(self) -> Action:
        try:
            body = self._post(self._payload())
        except _ToolsRejected as rejected:
            self._fall_back(str(rejected))
            body = self._post(self._payload())
        self.stats.model_calls += 1
        return self._read_reply(body)

    def _post(self, payload: dict[str, Any]) -> bytes:
        """POST ``payload``, retrying transient failures; return the body of the 2xx response."""
        cfg = self.config
        data = json.dumps(payload).encode()
        for attempt in range(cfg.max_retries + 1):
            request = urllib.request.Request(self.url, data=data, headers=self._headers, method="POST")
            wait = None
            try:
                with urllib.request.urlopen(request, timeout=cfg.timeout_s) as response:
                    return response.read()
            except urllib.error.HTTPError as e:
                body = e.read()
                if self._mode == "auto" and _rejects_tools(e.code, body):
                    raise _ToolsRejected(f"{_status_text(e.code)}: {_snippet(body)}") from None
                if not _transient(e.code):
                    raise AgentError(self._refusal(e.code, body)) from None
                failure = f"{_status_text(e.code)}: {_snippet(body)}"
                hint = self._hint(e.code)
                wait = _retry_after(e.headers)
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                reason = e.reason if isinstance(e, urllib.error.URLError) else e
                if isinstance(reason, TimeoutError):
                    failure = f"no answer within timeout_s={cfg.timeout_s}"
                    hint = "Check that the server is up and not overloaded, or raise timeout_s."
                else:
                    failure = f"connection failed: {reason}"
                    hint = f"Check that the server is running and that base_url={cfg.base_url!r} is right."
            if attempt < cfg.max_retries:
                self._sleep(attempt, wait)
        raise AgentError(
            f"POST {self.url} failed {cfg.max_retries + 1} times; the last failure: {failure}. {hint}"
        )

    def _sleep(self, attempt: int, retry_after: float | None) -> None:
        cfg = self.config
        ceiling = min(cfg.backoff_cap_s, cfg.backoff_base_s * 2**attempt)
        delay = self._rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            delay = max(delay, min(retry_after, cfg.backoff_cap_s))
        self.stats.extra["http_retries"] += 1
        self.stats.extra["backoff_s"] += delay
        time.sleep(delay)

    def _hint(self, status: int) -> str:
        cfg = self.config
        if status in (401, 403):
            if cfg.api_key_env is None:
                return (
                    "The endpoint wants a key: set OpenAIAgentConfig.api_key_env to the variable holding it."
                )
            return f"Check the API key in ${cfg.api_key_env} (OpenAIAgentConfig.api_key_env)."
        if status == 404:
            return (
                f"Check base_url={cfg.base_url!r} (it usually ends in /v1) and that model {cfg.model!r} "
                "is served there."
            )
        if status in (400, 422):
            return (
                f"Check model={cfg.model!r} and max_tokens={cfg.max_tokens}, that the conversation fits the "
                "model's context, and, with tool_mode='native', that the server supports tools "
                "(else use tool_mode='auto' or 'text')."
            )
        if status == 429:
            return "The server is rate limiting: lower concurrency or raise max_retries / backoff_cap_s."
        if status >= 500:
            return "The server failed: check its logs."
        return "Check the server's logs and the OpenAIAgentConfig."

    def _refusal(self, status: int, body: bytes) -> str:
        return f"POST {self.url} was refused: {_status_text(status)}: {_snippet(body)}. {self._hint(status)}"

    def _malformed(self, reason: str, body: bytes) -> str:
        self.stats.extra["errors"].append(f"{reason}; body: {_snippet(body)}")
        # Plain words only, no JSON object or ```bash block, so the env reports a malformed action.
        return f"Unreadable model reply: {reason}."

    def _read_reply(self, body: bytes) -> Action:
        try:
            data = json.loads(body)
        except ValueError as e:
            return self._malformed(f"the body is not JSON ({e})", body)
        if not isinstance(data, dict):
            return self._malformed("the body is not a JSON object", body)
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.stats.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.stats.completion_tokens += int(usage.get("completion_tokens") or 0)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            error = data.get("error")
            detail = (
                f" (error: {error.get('message', error) if isinstance(error, dict) else error})"
                if error
                else ""
            )
            return self._malformed(f"the reply has no choices{detail}", body)
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            return self._malformed("choices[0] has no message", body)
        content = message.get("content")
        content = content if isinstance(content, str) else ""
        tool_calls = message.get("tool_calls") or []
        if not isinstance(tool_calls, list) or not all(
            isinstance(c, dict)
            and isinstance(c.get("function"), dict)
            and isinstance(c["function"].get("name"), str)
            for c in tool_calls
        ):
            return self._malformed("tool_calls is not a list of named function calls", body)
        if self._mode == "text" or not tool_calls:
            if self._mode == "auto":
                self._fall_back("the first reply had no tool calls")
            self._messages.append({"role": "assistant", "content": content})
            return content
        self._mode = "native"
        self.stats.extra["tool_mode"] = "native"
        recorded = []
        for i, call in enumerate(tool_calls):
            call_id = str(call.get("id") or f"call_{self.stats.model_calls}_{i}")
            name, arguments = call["function"]["name"], call["function"].get("arguments")
            args = _call_arguments(name, arguments)
            action: Action
            if isinstance(args, dict):
                action = {"tool": name, **{k: v for k, v in args.items() if k != "tool"}}
                text_args = arguments if isinstance(arguments, str) and arguments else json.dumps(args)
            else:
                action = self._malformed(args, str(arguments).encode())
                # Servers such as vLLM decode the arguments of past calls and answer 400 when they can't.
                text_args = "{}"
            recorded.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": text_args}}
            )
            self._queued.append((call_id, action))
        self._messages.append({"role": "assistant", "content": content, "tool_calls": recorded})
        self._pending_call, first = self._queued.popleft()
        return first
