"""FrogSWE over HTTP and WebSocket in the OpenEnv convention (the ``openenv`` extra): ``frog-gym serve``.

The server is ``openenv-core``'s own (``openenv.core.env_server.create_app``) around
:class:`FrogOpenEnv`, an ``openenv.core.env_server.Environment`` whose episodes run in a
:class:`~frog_gym.env.FrogSWEEnv`. As OpenEnv specifies, each WebSocket connection to ``/ws`` is a session
with its own env (``{"type": "reset" | "step" | "state" | "close", "data": ...}`` messages), so one
session can never address another's workspace; ``POST /reset`` and ``POST /step`` are OpenEnv's
stateless calls (a fresh env per request), ``GET /state``, ``/schema``, ``/metadata`` and ``/health``
describe it. Any OpenEnv client works, e.g. ``GenericEnvClient``, or :class:`FrogSWEClient` with typed
actions and observations.

Every request needs the server's token, either as ``Authorization: Bearer TOKEN`` or as the first path
segment of the base URL (``http://HOST:PORT/TOKEN``, the form OpenEnv's clients can carry, since they
send no headers): anything else gets 401 (HTTP) or a refused WebSocket handshake (403).

Example:
    >>> from openenv.core import GenericEnvClient                           # doctest: +SKIP
    >>> env = GenericEnvClient(base_url=f"http://127.0.0.1:8000/{token}").sync()  # doctest: +SKIP
    >>> with env:                                                           # doctest: +SKIP
    ...     r = env.reset(task_id="frogtoy__handwritten-0001")
    ...     r = env.step({"tool": "bash", "command": "ls"})
    ...     r = env.step({"tool": "submit"})
    ...     r.reward, r.done, r.observation["resolved"]
    (0.0, True, False)
"""

from __future__ import annotations

import hmac
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from frog_gym.errors import FrogGymError

INSTALL_HINT = "pip install 'frog-gym[openenv]'"
MIN_TOKEN_CHARS = 16


class ServeError(FrogGymError):
    """``frog-gym serve`` cannot start: the extra is missing or the token is unusable (exit 2)."""

    exit_code = 2


try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import Action, Environment, Observation, State, create_app
    from pydantic import Field
except ImportError:  # pragma: no cover (the module is imported only by `frog-gym serve` and the tests)
    raise ServeError(f"frog-gym serve needs openenv-core; install the extra: {INSTALL_HINT}") from None


class FrogAction(Action):
    """One tool call (``tool`` plus its arguments, see :mod:`frog_gym.toolspec`), or the model's raw
    ``text`` (a JSON tool call or a fenced bash block), parsed as the env parses it."""

    tool: str | None = Field(default=None, description="bash, view, create, str_replace, insert, undo_edit, submit")
    command: str | None = Field(default=None, description="bash: the command")
    path: str | None = Field(default=None, description="file tools: the file or directory")
    view_range: list[int] | None = Field(default=None, description="view: [first, last] lines")
    file_text: str | None = Field(default=None, description="create: the content")
    old_str: str | None = Field(default=None, description="str_replace: the text to replace")
    new_str: str | None = Field(default=None, description="str_replace: the replacement")
    insert_line: int | None = Field(default=None, description="insert: the line after which to insert")
    insert_text: str | None = Field(default=None, description="insert: the text")
    text: str | None = Field(default=None, description="the model's raw reply, instead of tool and arguments")

    def to_env(self) -> Any:
        """What :meth:`FrogSWEEnv.step` takes: the raw text, or ``{"tool": ..., **arguments}``."""
        if self.text is not None:
            return self.text
        return {k: v for k, v in self.model_dump(exclude={"metadata", "text"}).items() if v is not None}


class FrogObservation(Observation):
    """The env's text (the prompt after reset, a tool's output after a step) and what grading found."""

    text: str = Field(default="", description="the prompt, or the tool's output")
    task_id: str = Field(default="", description="the task of the episode")
    step: int = Field(default=0, description="steps taken in the episode")
    truncated: bool = Field(default=False, description="a budget ran out (the state was graded as it stood)")
    resolved: bool | None = Field(default=None, description="graded: whether the bug is fixed (None before)")
    infra_failure: str | None = Field(default=None, description="a sandbox or grading fault (never scored)")
    report: dict[str, Any] | None = Field(default=None, description="the grading report, once graded")


class FrogState(State):
    """The session's episode: its id, steps, task and whether it is over."""

    task_id: str = ""
    done: bool = True


@dataclass(frozen=True)
class ServeConfig:
    """What every session's env is made with."""

    env_id: str = "FrogSWE-v0"
    """The registered env each session runs (``FrogSWE-v0``, ``FrogSWE-Toy-v0``, ``FrogSWE/<task>-v0``)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to ``gymnasium.make`` (``max_steps``, ``wall_time_s``, ...)."""


class FrogOpenEnv(Environment):
    """One session's FrogSWE env behind OpenEnv's ``Environment`` interface.

    ``reset(seed=, episode_id=, task_id=)`` starts an episode (``task_id`` picks the task; else the env
    samples one with ``seed``) and returns the prompt; ``step(FrogAction)`` returns the tool's output with
    ``reward`` and ``done`` (the graded reward once the episode ends by ``submit`` or a budget).
    Sessions are isolated (their own workspace, sandbox and scratch), so the server runs many at once."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, config: ServeConfig | None = None):
        import gymnasium as gym

        import frog_gym  # noqa: F401  (registers the envs)

        super().__init__()
        self.config = config or ServeConfig()
        self.env = gym.make(self.config.env_id, **self.config.env_kwargs)
        self._state = FrogState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              **kwargs: Any) -> FrogObservation:
        prompt, info = self.env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
        self._state = FrogState(episode_id=episode_id or uuid.uuid4().hex, step_count=0, task_id=info["task_id"],
                                done=False)
        return FrogObservation(text=prompt, task_id=info["task_id"], reward=None, done=False)

    def step(self, action: FrogAction, timeout_s: float | None = None, **kwargs: Any) -> FrogObservation:
        if not isinstance(action, FrogAction):  # OpenEnv validates into action_cls; keep direct callers honest
            action = FrogAction.model_validate(action)
        obs, reward, terminated, truncated, info = self.env.step(action.to_env())
        done = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.done = done
        report = info.get("report")
        return FrogObservation(text=obs, task_id=self._state.task_id, step=int(info.get("steps", 0)),
                               truncated=bool(truncated), done=done, reward=float(reward),
                               resolved=bool(info["resolved"]) if done and "resolved" in info else None,
                               infra_failure=info.get("infra_failure"),
                               report=json.loads(json.dumps(report, default=str)) if report else None)

    @property
    def state(self) -> FrogState:
        return self._state

    def close(self) -> None:
        self.env.close()


class FrogSWEClient(EnvClient[FrogAction, FrogObservation, FrogState]):
    """OpenEnv's WebSocket client with FrogSWE's typed actions and observations.

    Example:
        >>> with FrogSWEClient(base_url=f"http://127.0.0.1:8000/{token}").sync() as env:  # doctest: +SKIP
        ...     env.reset(task_id="frogtoy__handwritten-0001")
        ...     result = env.step(FrogAction(tool="submit"))
    """

    def _step_payload(self, action: FrogAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[FrogObservation]:
        obs = FrogObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                              done=payload.get("done", False))
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> FrogState:
        return FrogState(**payload)


class TokenGate:
    """ASGI middleware: only requests that carry the token reach the app (see the module docstring).

    A token in the first path segment is stripped before the app sees the path. Comparisons take
    constant time."""

    def __init__(self, app: Any, token: str):
        self.app, self.token = app, token

    def _admit(self, scope: dict[str, Any]) -> dict[str, Any] | None:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                given = value.decode("latin-1")
                if hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                    return scope
        path = scope.get("path", "")
        first, _, rest = path.lstrip("/").partition("/")
        if hmac.compare_digest(first.encode(), self.token.encode()):
            scope = dict(scope, path="/" + rest)
            if "raw_path" in scope and scope["raw_path"] is not None:
                scope["raw_path"] = scope["path"].encode()
            return scope
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        admitted = self._admit(scope)
        if admitted is not None:
            return await self.app(admitted, receive, send)
        if scope["type"] == "websocket":  # closing before accept: the handshake is refused with 403
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"detail": "missing or wrong token: send 'Authorization: Bearer TOKEN' or use "
                                     "http://HOST:PORT/TOKEN as the base URL"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body})


def check_token(token: str) -> str:
    """The token, or a :class:`ServeError` saying why it is unusable."""
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or not all(c.isalnum() or c in "-_" for c in token):
        raise ServeError(f"The token must be at least {MIN_TOKEN_CHARS} characters of letters, digits, '-' and "
                         "'_' (it goes into URLs); e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))'.")
    return token


def make_app(token: str, config: ServeConfig | None = None, max_sessions: int = 4) -> Any:
    """The ASGI app: OpenEnv's server for :class:`FrogOpenEnv`, behind :class:`TokenGate`."""
    import functools

    config = config or ServeConfig()
    app = create_app(functools.partial(FrogOpenEnv, config), FrogAction, FrogObservation, env_name="frog-gym",
                     max_concurrent_envs=max_sessions)
    return TokenGate(app, check_token(token))
