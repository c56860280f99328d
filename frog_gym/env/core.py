"""`FrogSWEEnv`: a Gymnasium env where an agent fixes a real bug in a real repository.

The observation is text (the prompt at reset, then each tool's output); the action is a tool call
(a dict or the model's raw text, see :mod:`frog_gym.env.tools`). ``submit`` ends the episode
(``terminated``); running out of steps or wall time ends it too (``truncated``), and either way the final
state is graded by the repository's own tests (:mod:`frog_gym.grading.runner`). A malformed action is an error
observation that costs a step, never an exception. ``info["infra_failure"]`` names a sandbox or grading
fault, which is never scored as the agent's failure.

Example:
    >>> import gymnasium as gym, frog_gym
    >>> env = gym.make("FrogSWE/inflection__handwritten-0001-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step({"tool": "submit"})
    >>> reward, terminated, info["report"]["resolved"]
    (0.0, True, 'RESOLVED_NO')
    >>> env.close()

Async: ``await env.areset(...)``, ``await env.astep(action)`` and ``await env.aclose()`` return exactly what
``reset``, ``step`` and ``close`` return, and share their code (``step`` and ``astep`` run one generator,
:meth:`FrogSWEEnv._step_g`, that yields what it waits for). Many episodes run on one event loop: a ``bash``
command waits on its sandbox's pipes as loop readers (no thread; :meth:`LocalSandbox.arun
<frog_gym.sandbox.local.LocalSandbox.arun>`), file tools run on the loop, and the blocking host work of an
episode (a reset's workspace sync and sandbox start, grading, close) runs on a thread pool shared by the
process (``FROG_GYM_ASYNC_THREADS``, default ``min(32, CPUs + 4)``; a grade adds its oracle replay's thread),
so threads do not grow with episodes.
One call at a time per env. Cancelling ``astep`` mid-command kills the sandbox's processes (the next
command starts in a fresh shell at /testbed); cancelled mid-grade, the grade finishes first. The Docker
backend's commands run on that pool too. ``gym.make`` wraps the env: call these on ``env.unwrapped`` (the
env enforces its own step budget, ``max_steps`` or else the registration's, and grades when it runs out).

    >>> async def episode():
    ...     env = gym.make("FrogSWE-Toy-v0").unwrapped
    ...     prompt, info = await env.areset(options={"task_id": "frogtoy__handwritten-0001"})
    ...     obs, reward, terminated, truncated, info = await env.astep({"tool": "submit"})
    ...     await env.aclose()
    ...     return reward
    >>> import asyncio; asyncio.run(episode())
    0.0
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import gymnasium as gym

from frog_gym.grading import server as grading_server
from frog_gym.errors import FrogGymError, SandboxError, UnknownNameError
from frog_gym.grading.grade import GradeReport, grade
from frog_gym.env.prompt import render_prompt
from frog_gym.sandbox.reaper import work_dir
from frog_gym.sandbox.base import ExecResult, Limits
from frog_gym.sandbox import AsyncSandbox, Sandbox, make_sandbox
from frog_gym.catalog.snapshot import PreparedRepo, prepare
from frog_gym.env.spaces import UnicodeText
from frog_gym.catalog.live import is_live, task_spec
from frog_gym.catalog.task import Task, load_task, registered_task_ids, task_index
from frog_gym.env.tools import ActionError, Call, FileTools, parse_action
from frog_gym.sandbox.workspace import Template, Workspace, diff_text, template_for

MAX_ACTION_CHARS = 10_000_000
MAX_OBS_CHARS = 1_000_000
DEFAULT_MAX_STEPS = 100
MAX_WORKSPACES = int(os.environ.get("FROG_GYM_WORKSPACES", "12"))
"""Workspaces an env keeps, one per repository venv (``FROG_GYM_WORKSPACES`` sets it; see ``_use_workspace``)."""
ASYNC_THREADS = int(os.environ.get("FROG_GYM_ASYNC_THREADS", "0")) or min(32, (os.cpu_count() or 1) + 4)
"""Threads the async API's blocking host work (reset, grading, close) shares, for every env of the process."""

StepResult = tuple[str, float, bool, bool, dict[str, Any]]
_T = TypeVar("_T")


@dataclass(frozen=True)
class _Bash:
    """A step waits for a command in the episode's shell; the answer is its ExecResult."""

    command: str


@dataclass(frozen=True)
class _Host:
    """A step waits for blocking host work (grading); the answer is ``fn()``'s result."""

    fn: Callable[[], Any]


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _host_pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=ASYNC_THREADS, thread_name_prefix="frog-env")
        return _POOL


def _forget_pool_in_child() -> None:
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)


async def in_thread(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` on the async API's shared threads. Cancelled while it runs, it lets it finish
    (host work on a workspace is never left half done) before the cancellation propagates."""
    job = _host_pool().submit(fn, *args, **kwargs)
    try:
        return await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        if not job.cancel():
            await asyncio.wait([asyncio.wrap_future(job)])
        raise


class FrogSWEEnv(gym.Env[str, Any]):
    """A repository-repair environment.

    Args:
        task_id: always run this task (registered ids ``FrogSWE/<instance_id>-v0`` set it).
        task_ids: sample among these at each reset (default: every registered task but the toy family).
        max_steps: step budget (default: the registration's ``max_episode_steps``, else 100).
        wall_time_s: wall-clock budget of an episode, grading excluded.
        limits: sandbox limits (per-command timeout, output cap, memory, processes, ...).
        partial_credit: reward the pass rate instead of 0/1 (see :meth:`GradeReport.reward`).
        grade_timeout_s: wall limit of one grading run; past it the episode is an infrastructure failure.
        backend: sandbox backend, "local" (bubblewrap) or "docker".
        render_mode: "ansi" (``render()`` returns the transcript) or "human" (prints each step).
        visible_tests: keep the FAIL_TO_PASS tests in the workspace (by default they are hidden, as in
            SWE-bench: the task's ``test_patch`` is applied only when grading); ``reset(options=
            {"visible_tests": ...})`` overrides it for one episode. ``info["visible_tests"]`` says which.
        impact_selection: run only the PASS_TO_PASS tests the agent's changes can reach, carrying the others
            over (:mod:`frog_gym.grading.impact`; ``info["report"]["inferred"]`` lists them). Default: on
            unless ``FROG_GYM_IMPACT=0``; False grades every test.

    ``areset``, ``astep`` and ``aclose`` are the same calls awaited, for many episodes on one event loop (see
    the module docstring): one call at a time per env.
    """

    metadata = {"render_modes": ["ansi", "human"]}

    def __init__(self, task_id: str | None = None, task_ids: Sequence[str] | None = None, *,
                 max_steps: int | None = None, wall_time_s: float = 1800.0, limits: Limits | None = None,
                 partial_credit: bool = False, grade_timeout_s: float = 900.0, backend: str = "local",
                 render_mode: str | None = None, visible_tests: bool = False,
                 impact_selection: bool | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} is not supported; use one of {self.metadata['render_modes']}")
        if task_id is not None and task_id not in task_index():
            raise UnknownNameError("task", task_id, task_index(), "See `frog-gym tasks`.")
        self.task_id = task_id
        self._pool = list(task_ids) if task_ids is not None else None
        grading_server.hold(self)  # the process's warm grading servers stay while an env of it is open
        for t in self._pool or ():
            if t not in task_index():
                raise UnknownNameError("task", t, task_index(), "See `frog-gym tasks`.")
        self.max_steps = max_steps
        self.wall_time_s = wall_time_s
        self.limits = limits or Limits()
        self.partial_credit = partial_credit
        self.grade_timeout_s = grade_timeout_s
        self.backend = backend
        self.render_mode = render_mode
        self.visible_tests = visible_tests
        self.impact_selection = impact_selection
        self.action_space = UnicodeText(4096)
        self.observation_space = UnicodeText(MAX_OBS_CHARS)
        self._dir = work_dir()  # named after this process: the reaper removes it if the driver dies
        self._ws = Workspace(self._dir / "ws")
        self._workspaces: OrderedDict[str, Workspace] = OrderedDict()
        """One workspace per repository venv (least recently used dropped past :data:`MAX_WORKSPACES`): a
        mixed pool switches repository at almost every reset, and a workspace kept from the repository's last
        episode differs from the new template in a few files, where another repository's differs in all."""
        self._scratch = Workspace(self._dir / "grade")
        self._tools = FileTools(self._ws.path)
        self._sandbox: Sandbox | None = None
        self._repo: PreparedRepo | None = None
        self._template: Template | None = None
        self._visible = visible_tests
        self.task: Task | None = None
        self._steps = 0
        self._started = 0.0
        self._done = True
        self._transcript: list[str] = []
        self.last_report: GradeReport | None = None
        self._graded_walk: dict[str, os.stat_result] | None = None
        self._busy: str | None = None

    # -- Gymnasium API ------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        return self._begin(self._pick(options or {}), options or {})

    async def areset(self, *, seed: int | None = None,
                     options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """:meth:`reset`, awaited; its host work (workspace sync, sandbox start) runs on the shared threads."""
        with self._one_call("areset"):
            super().reset(seed=seed)
            return await in_thread(self._begin, self._pick(options or {}), options or {})

    def _pick(self, options: dict[str, Any]) -> str:
        task_id = options.get("task_id") or self.task_id
        if task_id is None:
            pool = self._pool if self._pool is not None else default_pool()
            if not pool:
                raise FrogGymError("No tasks are registered; see `frog-gym tasks` and `frog-gym generate`.")
            task_id = pool[int(self.np_random.integers(len(pool)))]
        return task_id

    def _begin(self, task_id: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Start an episode of ``task_id``: the workspace, the sandbox, the prompt (blocking host work)."""
        self.task = load_task(task_id)
        repo = _prepared(self.task)
        self._visible = bool(options.get("visible_tests", self.visible_tests))
        self._template = template_for(repo, self.task.bug_patch, task_id,
                                      hidden_tests="" if self._visible or is_live(task_id) else self.task.test_patch)
        # The walk grading made after it killed the last episode's processes is still the tree's state: nothing
        # ran and nothing was written since. Otherwise (an episode left mid-way) kill, then walk afresh.
        walked, self._graded_walk = self._graded_walk, None
        if self._sandbox is not None:
            self._sandbox.kill_all()  # no process of the last episode may race the sync below
        ws = self._ws
        self._use_workspace(str(repo.venv))
        self._ws.sync(self._template, walked=walked if self._ws is ws else None)
        self._tools.reset()
        if self._sandbox is None or self._repo is None or self._repo.venv != repo.venv:
            if self._sandbox is not None:
                self._sandbox.close()
            self._sandbox = make_sandbox(self.backend, repo, self._ws.path, self.limits)
        self._sandbox.restart()
        self._repo = repo
        self._steps = 0
        self._started = time.monotonic()
        self._done = False
        self.last_report = None
        prompt = render_prompt(self.task, self._sandbox.root)
        self._transcript = [f"=== task {task_id} ===\n{prompt}"]
        return prompt, {**self._info(), "bounds": dict(self._sandbox.bounds)}

    def step(self, action: Any) -> StepResult:
        op = self._step_g(action)
        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = op.throw(error) if error is not None else op.send(answer)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            try:
                assert self._sandbox is not None or not isinstance(effect, _Bash)
                answer = self._sandbox.run(effect.command) if isinstance(effect, _Bash) else effect.fn()
            except Exception as e:  # noqa: BLE001 (handed to the step, which decides, as where it was raised)
                error = e

    async def astep(self, action: Any) -> StepResult:
        """:meth:`step`, awaited: the same observation, reward, flags and info (see the module docstring)."""
        with self._one_call("astep"):
            return await self._astep(action)

    async def _astep(self, action: Any) -> StepResult:
        op = self._step_g(action)
        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                effect = op.throw(error) if error is not None else op.send(answer)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            try:
                if isinstance(effect, _Bash):
                    sandbox = self._sandbox
                    assert sandbox is not None
                    answer = await (sandbox.arun(effect.command) if isinstance(sandbox, AsyncSandbox)
                                    else in_thread(sandbox.run, effect.command))
                else:
                    answer = await in_thread(effect.fn)
            except Exception as e:  # noqa: BLE001 (as in step)
                error = e

    def _step_g(self, action: Any) -> Generator[_Bash | _Host, Any, StepResult]:
        """The step, written once for :meth:`step` and :meth:`astep`: it yields each wait (a command, grading)
        and gets the answer back (or the exception, raised where it yielded)."""
        if self._done or self.task is None:
            return ("The episode is over; call reset() to start a new one.", 0.0, True, False,
                    {"task_id": getattr(self.task, "instance_id", None), "error": "episode over"})
        self._steps += 1
        if isinstance(action, str) and len(action) > MAX_ACTION_CHARS:
            call: Call | ActionError = ActionError(f"The action is {len(action):,} characters; the limit is "
                                                   f"{MAX_ACTION_CHARS:,}.")
        else:
            call = parse_action(action)
        infra: str | None = None
        terminated = False
        if isinstance(call, ActionError):
            obs, ok = f"Error: {call.message}", False
        elif call.tool == "submit":
            obs, ok, terminated = "Submitted. Grading with the repository's tests.", True, True
        elif call.tool == "bash":
            try:
                obs, ok = self._bash_output((yield _Bash(call.args["command"])))
            except SandboxError as e:
                obs, ok, infra = f"The sandbox failed: {e}", False, str(e)
        else:
            obs, ok = self._tools.run(call)
        budget = self._budget_left()
        truncated = not terminated and (budget is not None or infra is not None)
        if budget and not infra:
            obs += f"\n[{budget}: the episode ends and the current state is graded]"
        reward, info = 0.0, self._info()
        info["action_ok"] = ok
        if terminated or truncated:
            self._done = True
            if infra is None:
                report: GradeReport = yield _Host(self._grade)
                reward = report.reward(self.partial_credit)
                info.update(report=report.to_dict(), resolved=report.is_resolved, infra_failure=report.infra_failure,
                            tampering=report.tampering)
                obs += f"\n[graded: {report.resolved.value}]"
                if report.tampering:
                    obs += f"\n[reward 0: tampering with grading: {report.tampering[0]}]"
            else:
                info["infra_failure"] = infra
        self._transcript.append(f"--- step {self._steps}: {_show_action(call)}\n{obs}")
        if self.render_mode == "human":
            print(self._transcript[-1])
        return obs[:MAX_OBS_CHARS], reward, terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return "\n".join(self._transcript)
        return None

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        shutil.rmtree(self._dir, ignore_errors=True)
        for ws in (self._ws, self._scratch, *self._workspaces.values()):
            ws.template = None
        self._done = True
        grading_server.release(self)  # the last open env of the process stops the warm grading servers

    async def aclose(self) -> None:
        """:meth:`close`, awaited (it runs on the shared threads). Await a cancelled ``astep`` before closing."""
        with self._one_call("aclose"):
            await in_thread(self.close)

    # -- helpers ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _one_call(self, name: str) -> Iterator[None]:
        """An env runs one async call at a time (its shell, its workspace); many envs run at once."""
        if self._busy is not None:
            raise FrogGymError(f"{name}() while this env's {self._busy}() is still running: await it first (one "
                               "call at a time per env; run more episodes with more envs).")
        self._busy = name
        try:
            yield
        finally:
            self._busy = None

    def _use_workspace(self, key: str) -> None:
        """Switch to the workspace kept for ``key`` (a repository venv), closing the sandbox bound to another."""
        ws = self._workspaces.get(key)
        if ws is None:
            ws = self._ws if not self._workspaces else Workspace(self._dir / f"ws-{len(self._workspaces)}-{key[-16:]}")
            self._workspaces[key] = ws
            while len(self._workspaces) > MAX_WORKSPACES:
                self._workspaces.popitem(last=False)[1].remove()
        self._workspaces.move_to_end(key)
        if ws is not self._ws:
            if self._sandbox is not None:
                self._sandbox.close()
                self._sandbox = None
            self._ws, self._tools = ws, FileTools(ws.path)

    def _bash_output(self, r: ExecResult) -> tuple[str, bool]:
        if r.timed_out:
            return (r.output + f"\n[timed out after {self.limits.command_timeout:g} s: the command and every process "
                    "it started were killed; the shell is still usable]"), False
        return r.output + f"\n[exit code {r.exit_code}]", r.exit_code == 0

    def _budget_left(self) -> str | None:
        limit = self.max_steps or (self.spec.max_episode_steps if self.spec else None) or DEFAULT_MAX_STEPS
        if self._steps >= limit:
            return f"step budget of {limit} used up"
        if time.monotonic() - self._started > self.wall_time_s:
            return f"wall-time budget of {self.wall_time_s:g} s used up"
        return None

    def _grade(self) -> GradeReport:
        assert self._repo and self.task and self._template and self._sandbox
        self._sandbox.kill_all()  # nothing the agent started may run while its changes are read
        changes = self._ws.changes()
        self._graded_walk = self._ws.last_walk  # the episode is over: the next reset restores from this walk
        self.last_report = grade(self._repo, self.task, self._template, changes, self._scratch,
                                 timeout=self.grade_timeout_s, backend=self.backend, unread=self._ws.skipped,
                                 impact_selection=self.impact_selection)
        return self.last_report

    def _info(self) -> dict[str, Any]:
        t = self.task
        assert t is not None
        return {"task_id": t.instance_id, "repo": t.repo, "statement_level": t.statement_level,
                "features": dict(t.features), "steps": self._steps, "infra_failure": None,
                "visible_tests": self._visible or not t.test_patch}

    def diff(self) -> str:
        """The agent's changes so far, as a unified diff (SWE-bench's ``model_patch``)."""
        return diff_text(self._ws.changes()) if self._ws.template else ""

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


_PREPARED: dict[tuple, PreparedRepo] = {}


def _prepared(task: Task) -> PreparedRepo:
    """``prepare(task_spec(task))``, once per process (a reset of the same repository skips its checks)."""
    spec = task_spec(task)
    key = (spec.name, spec.source.key, spec.install.lock)
    if key not in _PREPARED:
        _PREPARED[key] = prepare(spec)
    return _PREPARED[key]


def default_pool() -> list[str]:
    """What ``FrogSWE-v0`` samples: every registered task but the toy family (``FrogSWE-Toy-v0``) and the
    held-out FrogLive tasks (``FrogLive-v0``)."""
    from frog_gym import TOY_REPO

    return [i for i in registered_task_ids() if not i.startswith(TOY_REPO + "__") and not is_live(i)]


def _show_action(call: Call | ActionError) -> str:
    if isinstance(call, ActionError):
        return "<malformed action>"
    if call.tool == "bash":
        return f"bash: {call.args['command'][:200]}"
    return f"{call.tool} {call.args.get('path', '')}".strip()
