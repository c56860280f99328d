"""FrogSWE for Prime Intellect's ``verifiers`` (v1 API; the ``verifiers`` extra).

verifiers (0.4) composes an environment from a *taskset* (rows a rollout starts from) and an ``Env``
whose ``run(task, agents)`` plays one episode; ``verifiers.v1.load_environment(EnvConfig)`` finds both
in the top-level module named by the taskset id (its ``__all__`` exports one ``Taskset`` and one ``Env``):
``frog-gym-verifiers``, i.e. ``frog_gym_verifiers``, which re-exports them from here. :func:`load_environment` builds that config from plain arguments.

An episode is multi-turn and tool-driven, like verifiers' own engine-driven envs (TextArena, OpenEnv):
the FrogSWE env runs host-side as the run's user. Its prompt (the problem statement and the tools) opens
the exchange; each model reply is one tool call (a JSON object such as ``{"tool": "bash", "command":
"pytest -x"}`` or a fenced bash block) executed in the episode's sandbox, whose output is the next user
turn, until ``submit`` or the step budget; then the repository's tests grade it. The reward
``frog_resolved`` is 1.0 when the bug is fixed (the pass rate with ``partial_credit``); an infrastructure
failure, in the sandbox or at the model endpoint, records no reward and fails the episode (verifiers
retries failed episodes), so it is never scored as the agent's.

The model's turns run through :class:`FrogSWEHarness`, verifiers' ``null`` harness (a plain chat loop, no
code execution on the model side) whose chat program runs under the current interpreter, which already
has its packages (verifiers' own dependencies), instead of being synced with ``uv``: no network is needed.
It is this taskset's default harness, and ``subprocess`` its default runtime, so ``vf-eval
frog-gym-verifiers`` runs here as it stands, with no remote runtime and no credentials (the agent acts only
through FrogSWE's own sandbox, so its seat needs none). Other runtimes keep the null harness's own
behaviour.

Episodes run on verifiers' event loop through the env's async API (``areset``/``astep``/``aclose``, see
:mod:`frog_gym.env`): a step waiting on its command holds no thread, so many rollouts share one process.

An infrastructure failure (a sandbox that cannot start, grading that cannot run) records no reward: the
episode fails with verifiers' own :class:`verifiers.v1.errors.SandboxError` whose message starts with
``FrogSWE infrastructure failure (not scored)``, so verifiers retries it and never scores it.

Example:
    >>> env = load_environment(task_ids=["frogtoy__handwritten-0001"], env_id="FrogSWE-Toy-v0")  # doctest: +SKIP
    >>> # then: vf-eval, or `async with env.serving(): await env.run_episode(task, ctx)`
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from frog_gym.errors import FrogGymError, SandboxError, SandboxUnavailableError

try:
    import verifiers.v1 as vf
    from pydantic import Field
    from verifiers.v1.errors import SandboxError as VfSandboxError
    from verifiers.v1.harnesses.null import NullHarness
    from verifiers.v1.runtimes.subprocess import SubprocessRuntime
except ImportError:  # pragma: no cover
    raise FrogGymError("The verifiers adapter needs verifiers>=0.4; install the extra: "
                       "pip install 'frog-gym[verifiers]'") from None

TASKSET_ID = "frog-gym-verifiers"
"""The taskset id that names this adapter to verifiers' loader (it imports the top-level module
``frog_gym_verifiers``, which re-exports this module's taskset and env)."""

INFRA = "FrogSWE infrastructure failure (not scored):"
"""How the message of an infrastructure failure's error starts."""

SYSTEM_PROMPT = (
    "You are fixing a bug in a Python repository. Reply with exactly one tool call per message: a JSON "
    "object such as {\"tool\": \"bash\", \"command\": \"pytest -x -q\"}, or a fenced ```bash block. "
    "Call {\"tool\": \"submit\"} when the bug is fixed.")


class FrogSWETasksetConfig(vf.TasksetConfig):
    """Which FrogSWE tasks, in which env, under which budget."""

    env_id: str = "FrogSWE-v0"
    """The registered gymnasium env the episodes run in (``FrogSWE-v0``, ``FrogSWE-Toy-v0``, ...)."""
    task_ids: list[str] = Field(default_factory=list)
    """The tasks, one row each; empty: every task the env samples."""
    max_steps: int = 30
    """Tool calls per episode; at the limit the state is graded as it stands."""
    partial_credit: bool = False
    """Reward the pass rate of the selected tests instead of 0/1."""
    env_kwargs: dict = Field(default_factory=dict)
    """More ``gymnasium.make`` keywords (``backend``, ``wall_time_s``, ...)."""


class FrogSWEData(vf.TaskData):
    info: dict
    """The task id and env settings the episode is reproduced from."""


class FrogSWETask(vf.Task[FrogSWEData, vf.State, vf.TaskConfig]):
    pass


class FrogSWEEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The seat of the policy being evaluated or trained: by default this taskset's harness
    (:class:`FrogSWEHarness`) in a local subprocess."""


class _ThisInterpreter:
    """A subprocess runtime whose PEP 723 scripts run under this interpreter instead of a ``uv`` env."""

    def __init__(self, runtime: Any):
        self._runtime = runtime

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)

    async def prepare_uv_script(self, script: str | bytes, env: dict[str, str] | None = None, *,
                                activate: bool = True) -> list[str]:
        data = script.encode() if isinstance(script, str) else script
        path = f".frog-chat-{hashlib.sha256(data).hexdigest()[:16]}.py"
        await self._runtime.write(path, data)
        return [sys.executable, path]


class FrogSWEHarness(NullHarness):
    """verifiers' null harness, offline: in a subprocess runtime its chat program runs under this interpreter
    (see the module docstring); in any other runtime it is the null harness unchanged."""

    def _here(self, runtime: Any) -> Any:
        return _ThisInterpreter(runtime) if isinstance(runtime, SubprocessRuntime) else runtime

    async def setup(self, runtime: Any) -> None:
        await super().setup(self._here(runtime))

    async def launch(self, ctx: Any, trace: Any, runtime: Any, *args: Any, **kwargs: Any) -> Any:
        return await super().launch(ctx, trace, self._here(runtime), *args, **kwargs)


class FrogSWETaskset(vf.Taskset[FrogSWETask, FrogSWETasksetConfig]):
    """One row per FrogSWE task; the prompt is left to the env (it comes from the sandbox's reset)."""

    def load(self) -> Iterator[FrogSWETask]:
        task_ids = list(self.config.task_ids)
        if not task_ids:
            from frog_gym.learners import env_tasks

            task_ids = env_tasks(self.config.env_id)
        for task_id in task_ids:
            yield FrogSWETask(
                FrogSWEData(name=task_id, prompt=None, system_prompt=SYSTEM_PROMPT,
                            info={"task_id": task_id, "env_id": self.config.env_id,
                                  "max_steps": self.config.max_steps,
                                  "partial_credit": self.config.partial_credit,
                                  "env_kwargs": dict(self.config.env_kwargs)}),
                self.config.task,
            )


class FrogSWEVerifiersEnv(vf.Env[FrogSWEEnvConfig]):
    """Plays one FrogSWE episode per task: the env is the user, the model's replies are tool calls."""

    async def run(self, task: FrogSWETask, agents: Any) -> None:
        import gymnasium as gym

        import frog_gym  # noqa: F401  (registers the envs)
        from frog_gym.env.core import in_thread

        info = task.data.info
        # The env's async API: verifiers runs many episodes on one event loop, and a step waiting on its command
        # holds no thread (see frog_gym.env). The env is unwrapped: its own step budget ends the episode.
        env = (await in_thread(gym.make, info["env_id"], max_steps=info["max_steps"],
                               partial_credit=info["partial_credit"], **info.get("env_kwargs", {}))).unwrapped
        try:
            try:
                prompt, _ = await env.areset(options={"task_id": info["task_id"]})
            except (SandboxError, SandboxUnavailableError) as e:
                raise VfSandboxError(f"{INFRA} {e}") from None
            reward: float | None = None
            outcome: dict[str, Any] = {}
            async with agents.agent.interaction(task) as interaction:
                segment = await interaction.turn(prompt)
                while not segment.terminated:
                    obs, r, terminated, truncated, step_info = await env.astep(segment.last_reply)
                    if terminated or truncated:
                        outcome = step_info
                        reward = float(r)
                        break
                    segment = await interaction.turn(obs)
                if reward is None and interaction.trace.errors:  # the model endpoint failed: not the agent's
                    raise RuntimeError(f"the model side failed ({interaction.trace.errors[0].message}); the "
                                       "episode is not scored")
                if reward is None:  # the exchange ended (a turn limit): grade the state as it stands
                    _, r, _, _, outcome = await env.astep({"tool": "submit"})
                    reward = float(r)
            trace = interaction.trace
            if outcome.get("infra_failure"):
                raise VfSandboxError(f"{INFRA} {outcome['infra_failure']}")
            trace.record_reward("frog_resolved", reward, 1.0)
            trace.info["frog"] = {"task_id": info["task_id"], "resolved": bool(outcome.get("resolved")),
                                  "steps": outcome.get("steps"),
                                  "status": (outcome.get("report") or {}).get("resolved")}
        finally:
            await env.aclose()


def load_environment(task_ids: Sequence[str] = (), env_id: str = "FrogSWE-v0", max_steps: int = 30,
                     partial_credit: bool = False, agent: dict[str, Any] | None = None,
                     env_kwargs: dict[str, Any] | None = None) -> Any:
    """A verifiers ``Env`` over FrogSWE tasks (see the module docstring).

    Args:
        task_ids: the tasks (one row each); empty: every task ``env_id`` samples.
        env_id: the registered FrogSWE env.
        max_steps: tool calls per episode.
        partial_credit: reward the pass rate instead of 0/1.
        agent: overrides of the seat's ``AgentConfig`` (model, client, sampling, max_turns, ...); the
            harness defaults to :class:`FrogSWEHarness` and the runtime to ``subprocess``.
        env_kwargs: more ``gymnasium.make`` keywords (``backend``, ``wall_time_s``, ...).
    """
    seat = {"harness": {"id": TASKSET_ID}, "runtime": {"type": "subprocess"}, **(agent or {})}
    config = FrogSWEEnvConfig(
        taskset={"id": TASKSET_ID, "env_id": env_id, "task_ids": list(task_ids), "max_steps": max_steps,
                 "partial_credit": partial_credit, "env_kwargs": dict(env_kwargs or {})},
        agent=seat,
    )
    return vf.load_environment(config)


__all__ = ["FrogSWEHarness", "FrogSWETaskset", "FrogSWEVerifiersEnv", "load_environment"]
