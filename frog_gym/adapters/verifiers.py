"""FrogSWE for Prime Intellect's ``verifiers`` (v1 API; the ``verifiers`` extra).

verifiers (0.4) composes an environment from a *taskset* (rows a rollout starts from) and an ``Env``
whose ``run(task, agents)`` plays one episode; ``verifiers.v1.load_environment(EnvConfig)`` finds both
in the top-level module named by the taskset id (its ``__all__`` exports one ``Taskset`` and one ``Env``):
``frog-gym-verifiers``, i.e. ``frog_gym_verifiers``, which re-exports them from here. :func:`load_environment` builds that config from plain arguments.

An episode is multi-turn and tool-driven, like verifiers' own engine-driven envs (TextArena, OpenEnv):
the FrogSWE env runs host-side as the run's user. Its prompt (the problem statement and the tools) opens
the exchange, and every request carries the tools as OpenAI schemas (:func:`frog_gym.env.toolspec.openai_tools`).
Each native tool call of a reply is one env step in the episode's sandbox, answered by a ``role: "tool"``
message with the call's id; a reply without calls (a JSON tool call or a fenced bash block in its text) is
one step whose output is the next user turn. This goes on until ``submit`` or the step budget; then the
repository's tests grade it. The reward
``frog_resolved`` is 1.0 when the bug is fixed (the pass rate with ``partial_credit``); an infrastructure
failure, in the sandbox or at the model endpoint, records no reward and fails the episode (verifiers
retries failed episodes), so it is never scored as the agent's.

The model's turns run through :class:`FrogSWEHarness`, verifiers' ``null`` harness with our own chat
program (:data:`TURN_PROGRAM`: one completion per turn, the tools in the request, no code execution on the
model side: verifiers' bundled program would run the calls itself, while here the env does), which in a
subprocess runtime runs under the current interpreter, which already has its packages (verifiers' own
dependencies), instead of being synced with ``uv``: no network is needed. It is this taskset's default
harness, and ``subprocess`` its default runtime, so ``vf-eval frog-gym-verifiers`` runs here as it stands,
with no remote runtime and no credentials (the agent acts only through FrogSWE's own sandbox, so its seat
needs none).

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
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from frog_gym.errors import FrogGymError, SandboxError, SandboxUnavailableError
from frog_gym.env.toolspec import openai_tools

try:
    import verifiers.v1 as vf
    from pydantic import Field
    from verifiers.v1.errors import SandboxError as VfSandboxError
    from verifiers.v1.harnesses.null import NullHarness
    from verifiers.v1.harnesses.utils.launch import launch_chat_program
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
    "You are fixing a bug in a Python repository. Use the tools you are given, and call submit when the bug "
    "is fixed. Without tool calling, reply with one tool call per message as a JSON object such as "
    "{\"tool\": \"bash\", \"command\": \"pytest -x -q\"}, or a fenced ```bash block.")


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


TURN_PROGRAM = """# /// script
# dependencies = ["openai>=1.40"]
# ///
# One model turn of a FrogSWE episode (frog_gym.adapters.verifiers): the conversation so far goes to the
# model with FrogSWE's tools as OpenAI schemas, and the reply is left in the trace; its tool calls are not
# run here: the env runs them in the episode's sandbox and answers with tool messages in the next turn.
import argparse
import json
import pathlib

from openai import OpenAI

TOOLS = json.loads(@TOOLS@)

parser = argparse.ArgumentParser()
for flag in ("--base-url", "--api-key", "--model", "--system-prompt", "--prompt", "--initial-messages-file"):
    parser.add_argument(flag, default="")
args, _ = parser.parse_known_args()
messages = [{"role": "system", "content": args.system_prompt}] if args.system_prompt else []
if args.initial_messages_file:
    path = pathlib.Path(args.initial_messages_file)
    messages += json.loads(path.read_bytes())
    path.unlink()
elif args.prompt:
    messages.append({"role": "user", "content": args.prompt})
client = OpenAI(base_url=args.base_url, api_key=args.api_key)
stream = client.chat.completions.create(model=args.model, messages=messages, tools=TOOLS, stream=True,
                                        stream_options={"include_usage": True})
for _ in stream:
    pass
""".replace("@TOOLS@", repr(json.dumps(openai_tools())))
"""The chat program of :class:`FrogSWEHarness`: one completion per turn, with our tools in the request."""


class FrogSWEHarness(NullHarness):
    """verifiers' null harness with FrogSWE's chat program (:data:`TURN_PROGRAM`: the tools go in every
    request; the env, not the program, runs the calls), offline: in a subprocess runtime the program runs
    under this interpreter (see the module docstring)."""

    def _here(self, runtime: Any) -> Any:
        return _ThisInterpreter(runtime) if isinstance(runtime, SubprocessRuntime) else runtime

    async def setup(self, runtime: Any) -> None:
        await self._here(runtime).prepare_uv_script(TURN_PROGRAM, self.config.resolved_env)

    async def launch(self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: Any, tool_interception_url: str | None = None) -> Any:
        system_prompt, prompt = self.resolve_prompt(data)
        return await launch_chat_program(TURN_PROGRAM, self.config, ctx, trace, self._here(runtime), endpoint,
                                         secret, mcp_urls, system_prompt, prompt)


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
                    answer, done = await _answer(env, segment)
                    if done is not None:
                        reward, outcome = done
                        break
                    segment = await interaction.turn(answer)
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


async def _answer(env: Any, segment: Any) -> tuple[Any, tuple[float, dict[str, Any]] | None]:
    """Step the env with a segment's reply: each native tool call is a step answered by a tool message with
    the call's id; a reply without calls is one step on its text, answered as the next user turn. Returns the
    answer and, once the episode ends, its reward and step info."""
    calls = next((m.tool_calls for m in reversed(segment.messages) if getattr(m, "role", "") == "assistant"),
                 None)
    if not calls:
        obs, r, terminated, truncated, info = await env.astep(segment.last_reply)
        return obs, ((float(r), info) if terminated or truncated else None)
    answer = []
    for call in calls:
        obs, r, terminated, truncated, info = await env.astep({"name": call.name, "arguments": call.arguments})
        answer.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": obs})
        if terminated or truncated:
            return answer, (float(r), info)
    return answer, None


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
