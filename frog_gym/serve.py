"""FrogSWE over HTTP and WebSocket in the OpenEnv convention (the ``openenv`` extra): ``frog-gym serve``.

The server is ``openenv-core``'s own (``openenv.core.env_server.create_app``) around
:class:`FrogOpenEnv`, an ``openenv.core.env_server.Environment`` whose episodes run in a
:class:`~frog_gym.env.FrogSWEEnv`. As OpenEnv specifies, each WebSocket connection to ``/ws`` is a session
with its own env (``{"type": "reset" | "step" | "state" | "close", "data": ...}`` messages), so one
session can never address another's workspace; ``POST /reset`` and ``POST /step`` are OpenEnv's
stateless calls (a fresh env per request), ``GET /state``, ``/schema``, ``/metadata`` and ``/health``
describe it. Any OpenEnv client works, e.g. ``GenericEnvClient``, or :class:`FrogSWEClient` with typed
actions and observations.

OpenEnv's HTTP ``POST /reset`` and ``POST /step`` are stateless: each request gets a fresh env, which is
closed when it answers. ``/reset`` returns the prompt of a freshly reset episode; ``/step`` has no episode
to act in, so it answers (200, as the env answers a step without an episode) with ``done`` and an
observation that says to use a WebSocket session. An episode is a ``/ws`` session.

Sessions are managed in front of OpenEnv's server (:class:`SessionGuard`): a session idle for
``idle_timeout_s`` (no message and no step running) is closed with its sandbox, and its client is told why
(close code 4408 and a reason); a connection over ``max_sessions`` gets OpenEnv's ``CAPACITY_REACHED``
error and a close (code 1013, "try again later") whose reason says how many sessions are in use; a client
that disconnects mid-step has its step cancelled (its running command killed with the sandbox's every
process) and its session removed at once, instead of the step running on to its end.

Sessions run on the server's event loop, not in threads: OpenEnv awaits :meth:`FrogOpenEnv.reset_async` and
:meth:`FrogOpenEnv.step_async`, which await the env's ``areset`` and ``astep`` (see :mod:`frog_gym.env`), so a
session waiting on its command holds no thread. What blocks (a reset's workspace sync, grading) runs on the
env's shared thread pool; OpenEnv's own per-session executor thread (used only to construct and close a
session's env) is one thread shared by every session (``REQUIRES_SINGLE_THREAD_EXECUTOR``), so the server's
thread count does not grow with its sessions.

An infrastructure failure (a sandbox that cannot start, grading that cannot run) is never a reward: the
observation has ``done``, ``reward`` None and ``infra_failure`` saying why (see ``docs/training.md``).

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

import asyncio
import contextvars
import hmac
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from frog_gym.errors import FrogGymError, SandboxError, SandboxUnavailableError
from frog_gym.env.toolspec import openai_tools

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
    """One tool call (``tool`` plus its arguments, see :mod:`frog_gym.env.toolspec`), or the model's raw
    ``text`` (one native tool call as the model wrote it, a JSON tool call or a fenced bash block), parsed
    as the env parses it."""

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
    tools: list[dict[str, Any]] = Field(default_factory=list, description="after reset: the tools as OpenAI "
                                        "function schemas, for the model request's tools=")


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
    idle_timeout_s: float | None = 600.0
    """A session with no message and no step running for this long is closed with its sandbox (None: never)."""

    def __post_init__(self) -> None:
        if self.idle_timeout_s is not None and self.idle_timeout_s <= 0:
            raise ServeError(f"idle_timeout_s={self.idle_timeout_s}: give a positive number of seconds, or None "
                             "to keep idle sessions forever.")


NO_EPISODE = ("No episode to step: send reset first. Over HTTP there is never one: OpenEnv's POST /step runs each "
              "request on a fresh env (HTTP calls are stateless), and a FrogSWE episode needs the workspace its "
              "reset made. Run episodes in a WebSocket session: "
              "any OpenEnv EnvClient (e.g. openenv.core.GenericEnvClient(base_url=...).sync(), or "
              "frog_gym.serve.FrogSWEClient) sends reset and step over /ws.")


class FrogOpenEnv(Environment):
    """One session's FrogSWE env behind OpenEnv's ``Environment`` interface.

    ``reset(seed=, episode_id=, task_id=)`` starts an episode (``task_id`` picks the task; else the env
    samples one with ``seed``) and returns the prompt; ``step(FrogAction)`` returns the tool's output with
    ``reward`` and ``done`` (the graded reward once the episode ends by ``submit`` or a budget).
    Sessions are isolated (their own workspace, sandbox and scratch), so the server runs many at once, on its
    event loop (``reset_async``, ``step_async``); ``reset`` and ``step`` do the same, blocking."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    REQUIRES_SINGLE_THREAD_EXECUTOR = True
    """Not that the env needs one thread: OpenEnv gives each session an executor thread of its own unless a class
    asks for this, and here that thread would only construct and close the env (the episode runs on the loop),
    so one shared thread serves every session."""

    def __init__(self, config: ServeConfig | None = None):
        import gymnasium as gym

        import frog_gym  # noqa: F401  (registers the envs)

        super().__init__()
        self.config = config or ServeConfig()
        # The env itself, not gymnasium's wrappers: its own budget (``max_steps``, graded when it runs out) is the
        # one that ends an episode, on the sync and the async path alike.
        self.env = gym.make(self.config.env_id, **self.config.env_kwargs).unwrapped
        self._state = FrogState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              **kwargs: Any) -> FrogObservation:
        episode_id = episode_id or uuid.uuid4().hex
        try:
            started = self.env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
        except (SandboxError, SandboxUnavailableError) as e:
            return self._not_started(episode_id, task_id, e)
        return self._started(episode_id, *started)

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
                          **kwargs: Any) -> FrogObservation:
        """:meth:`reset` on the event loop (the env's ``areset``)."""
        episode_id = episode_id or uuid.uuid4().hex
        try:
            started = await self.env.areset(seed=seed, options={"task_id": task_id} if task_id else None)
        except (SandboxError, SandboxUnavailableError) as e:
            return self._not_started(episode_id, task_id, e)
        return self._started(episode_id, *started)

    def _not_started(self, episode_id: str, task_id: str | None, e: Exception) -> FrogObservation:
        """Not the agent's: the episode is over, unscored."""
        self._state = FrogState(episode_id=episode_id, step_count=0, task_id=task_id or "", done=True)
        return FrogObservation(text=f"Infrastructure failure (not scored): {e}", task_id=task_id or "",
                               infra_failure=str(e), reward=None, done=True)

    def _started(self, episode_id: str, prompt: str, info: dict[str, Any]) -> FrogObservation:
        self._state = FrogState(episode_id=episode_id, step_count=0, task_id=info["task_id"], done=False)
        return FrogObservation(text=prompt, task_id=info["task_id"], reward=None, done=False, tools=openai_tools())

    def step(self, action: FrogAction, timeout_s: float | None = None, **kwargs: Any) -> FrogObservation:
        checked = self._check(action)
        if isinstance(checked, FrogObservation):
            return checked
        return self._stepped(self.env.step(checked))

    async def step_async(self, action: FrogAction, timeout_s: float | None = None, **kwargs: Any) -> FrogObservation:
        """:meth:`step` on the event loop (the env's ``astep``). If the session's client disconnects meanwhile,
        the step is cancelled: its command dies with every process of the sandbox, and the session (going away
        with its client) gets an observation that says so."""
        checked = self._check(action)
        if isinstance(checked, FrogObservation):
            return checked
        work = asyncio.ensure_future(self.env.astep(checked))
        conn = _CONNECTION.get()
        if conn is not None:
            gone = asyncio.ensure_future(conn.gone.wait())
            try:
                await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:  # the server is ending the session: the step goes with it
                work.cancel()
                raise
            finally:
                gone.cancel()
            if not work.done():
                conn.interrupted += 1
                work.cancel()
        try:
            return self._stepped(await work)
        except asyncio.CancelledError:
            if conn is None or not conn.gone.is_set():
                raise  # the server itself is cancelling this session's task
            self._state.done = True
            return FrogObservation(text="The client disconnected mid-step: the step was cancelled and its command "
                                   "killed.", task_id=self._state.task_id, step=self._state.step_count,
                                   reward=None, done=True)

    def _check(self, action: Any) -> Any:
        """The env's action, or the observation that answers a step with no episode to act in."""
        if not isinstance(action, FrogAction):  # OpenEnv validates into action_cls; keep direct callers honest
            action = FrogAction.model_validate(action)
        if self._state.done:
            text = NO_EPISODE if not self._state.task_id else "The episode is over; send reset to start a new one."
            return FrogObservation(text=text, task_id=self._state.task_id, step=self._state.step_count,
                                   reward=None, done=True)
        return action.to_env()

    def _stepped(self, result: tuple[str, float, bool, bool, dict[str, Any]]) -> FrogObservation:
        obs, reward, terminated, truncated, info = result
        done = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.done = done
        report = info.get("report")
        infra = info.get("infra_failure")
        return FrogObservation(text=obs, task_id=self._state.task_id, step=int(info.get("steps", 0)),
                               truncated=bool(truncated), done=done, reward=None if infra else float(reward),
                               resolved=bool(info["resolved"]) if done and "resolved" in info and not infra else None,
                               infra_failure=infra,
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


class _Connection:
    """What :class:`SessionGuard` knows of one WebSocket connection."""

    def __init__(self) -> None:
        self.gone = asyncio.Event()
        """Set when the client disconnected."""
        self.last = time.monotonic()
        """When the last message arrived or the last answer left."""
        self.pending = 0
        """Messages received and not yet answered (a step running counts)."""
        self.closed_by_us = False
        self.over_capacity = False
        self.interrupted = 0
        """Steps cancelled (their command killed) because the client went away."""


_CONNECTION: contextvars.ContextVar[_Connection | None] = contextvars.ContextVar("frog_serve_connection",
                                                                                  default=None)
LIVE: set[_Connection] = set()
"""The open WebSocket connections of this process (for tests and the log)."""


class SessionGuard:
    """ASGI middleware around OpenEnv's app that manages WebSocket sessions (see the module docstring).

    It reads each connection's messages as they arrive (so a disconnect is seen while a step runs), closes
    sessions idle for ``idle_timeout_s``, and turns OpenEnv's over-capacity close into one the client can
    read. OpenEnv's own server still creates, runs and destroys every session."""

    def __init__(self, app: Any, max_sessions: int, idle_timeout_s: float | None):
        self.app, self.max_sessions, self.idle_timeout_s = app, max_sessions, idle_timeout_s
        self._full = (f"frog-gym serve: all {max_sessions} sessions are in use (--max-sessions); close one or "
                      "retry later")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        conn = _Connection()
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        async def pump() -> None:
            while True:
                message = await receive()
                if message["type"] == "websocket.receive":
                    conn.last = time.monotonic()
                    conn.pending += 1
                await inbox.put(message)
                if message["type"] == "websocket.disconnect":
                    conn.gone.set()
                    return

        async def reaper(timeout: float) -> None:
            while not conn.gone.is_set():
                await asyncio.sleep(min(timeout / 4, 1.0))
                if conn.pending == 0 and time.monotonic() - conn.last > timeout:
                    conn.closed_by_us = True
                    reason = (f"idle for more than {timeout:g} s: the session and its sandbox were closed "
                              "(frog-gym serve --idle-timeout); connect again for a new one")
                    await send({"type": "websocket.close", "code": 4408, "reason": reason[:120]})
                    await inbox.put({"type": "websocket.disconnect", "code": 4408})
                    conn.gone.set()
                    return

        async def guarded_receive() -> dict[str, Any]:
            return await inbox.get()

        async def guarded_send(message: dict[str, Any]) -> None:
            if conn.closed_by_us:
                return  # the session was reaped: the client was told already
            if message["type"] == "websocket.send":
                conn.pending = max(0, conn.pending - 1)
                conn.last = time.monotonic()
                if '"CAPACITY_REACHED"' in (message.get("text") or ""):  # OpenEnv's error, with our words
                    conn.over_capacity = True
                    error = json.loads(message["text"])
                    error["data"]["message"] = self._full
                    message = {**message, "text": json.dumps(error)}
            elif message["type"] == "websocket.close" and conn.over_capacity:
                message = {**message, "code": 1013, "reason": self._full[:120]}
            try:
                await send(message)
            except OSError:  # the client is gone; OpenEnv's handler then ends the session
                conn.gone.set()

        tasks = [asyncio.ensure_future(pump())]
        if self.idle_timeout_s is not None:
            tasks.append(asyncio.ensure_future(reaper(self.idle_timeout_s)))
        token = _CONNECTION.set(conn)
        LIVE.add(conn)
        try:
            await self.app(scope, guarded_receive, guarded_send)
        finally:
            LIVE.discard(conn)
            _CONNECTION.reset(token)
            for t in tasks:
                t.cancel()


def check_token(token: str) -> str:
    """The token, or a :class:`ServeError` saying why it is unusable."""
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or not all(c.isalnum() or c in "-_" for c in token):
        raise ServeError(f"The token must be at least {MIN_TOKEN_CHARS} characters of letters, digits, '-' and "
                         "'_' (it goes into URLs); e.g. python -c 'import secrets; print(secrets.token_urlsafe(24))'.")
    return token


def make_app(token: str, config: ServeConfig | None = None, max_sessions: int = 4) -> Any:
    """The ASGI app: OpenEnv's server for :class:`FrogOpenEnv`, behind :class:`SessionGuard` and
    :class:`TokenGate`."""
    import functools

    config = config or ServeConfig()
    app = create_app(functools.partial(FrogOpenEnv, config), FrogAction, FrogObservation, env_name="frog-gym",
                     max_concurrent_envs=max_sessions)
    return TokenGate(SessionGuard(app, max_sessions, config.idle_timeout_s), check_token(token))


def app_from_environment() -> Any:
    """The app configured by environment variables, for ``uvicorn frog_gym.serve:app`` (what ``openenv.yaml``
    and the ``Dockerfile`` run): ``FROG_GYM_SERVE_TOKEN`` (required), ``FROG_GYM_SERVE_ENV`` (default
    ``FrogSWE-v0``), ``FROG_GYM_SERVE_MAX_SESSIONS`` (4) and ``FROG_GYM_SERVE_IDLE_TIMEOUT`` (600 s; 0: never)."""
    import os

    token = os.environ.get("FROG_GYM_SERVE_TOKEN", "")
    if not token:
        raise ServeError("Set FROG_GYM_SERVE_TOKEN to the token clients must send (e.g. python -c 'import secrets; "
                         "print(secrets.token_urlsafe(24))').")
    try:
        sessions = int(os.environ.get("FROG_GYM_SERVE_MAX_SESSIONS", "4"))
        idle = float(os.environ.get("FROG_GYM_SERVE_IDLE_TIMEOUT", "600"))
    except ValueError as e:
        raise ServeError(f"FROG_GYM_SERVE_MAX_SESSIONS must be an integer and FROG_GYM_SERVE_IDLE_TIMEOUT a "
                         f"number of seconds: {e}") from None
    config = ServeConfig(os.environ.get("FROG_GYM_SERVE_ENV", "FrogSWE-v0"), idle_timeout_s=idle or None)
    return make_app(token, config, max_sessions=sessions)


def __getattr__(name: str) -> Any:
    if name == "app":  # built on first access, so that importing this module needs no token
        return app_from_environment()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
