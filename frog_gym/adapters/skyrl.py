"""FrogSWE as a ``skyrl_gym`` text environment (the ``skyrl`` extra: ``pip install 'frog-gym[skyrl]'``).

SkyRL's generator makes one env per rollout with ``skyrl_gym.make(env_class, env_config=..., extras=...)``,
where ``extras`` is the dataset row's ``extras`` (here ``{"task_id": ..., "max_turns": ...}``, and
optionally ``env_id`` and ``env_kwargs``, which override ``env_config``: skyrl-train passes no
``env_config`` to an env class it does not know), calls ``init(prompt)`` for the first conversation, then
``step(model_text)`` until ``done``; each step returns ``BaseTextEnvStepOutput`` (new messages, reward,
done, metadata). :class:`FrogSWESkyRLEnv` runs a :class:`~frog_gym.env.FrogSWEEnv` episode under that
contract: the model's text is read for native tool calls (:mod:`frog_gym.env.toolcalls`; give the model our
tools with ``generator.chat_template_kwargs.tools``, see :mod:`frog_gym.adapters.skyrl_train`), each call is
one env step answered by a ``role: "tool"`` message with the call's id; a reply without a well-formed call
(a JSON tool call or fenced bash block in plain text, or a malformed call) is one env step whose output
comes back as a user message. The reward is the graded one when the episode ends (by ``submit``, the env's budget, or ``max_turns``, when
the state is submitted as it stands). An infrastructure failure (a sandbox that cannot start, grading that
cannot run) is never a reward: the episode ends at the next step with reward ``None`` and
``metadata["infra_failure"]`` saying why (a sandbox that cannot start at ``init`` is reported there in the
metadata too, and the first step ends the episode). SkyRL has no masked reward: a trainer must drop such
episodes, and a ``None`` reward fails loudly rather than training on a 0 the agent did not earn.

skyrl_gym (0.4) defines only sync methods, and SkyRL's generator calls ``init`` and ``step`` on its env
executor's threads (``max_env_workers``). :meth:`FrogSWESkyRLEnv.ainit`, :meth:`~FrogSWESkyRLEnv.astep` and
:meth:`~FrogSWESkyRLEnv.aclose` return exactly what those return, on the caller's event loop with no thread
per call (the env's async API, :mod:`frog_gym.env`), for a generator that awaits its envs.

Example:
    >>> import skyrl_gym                                                  # doctest: +SKIP
    >>> register()                                                        # doctest: +SKIP
    >>> env = skyrl_gym.make("frog_swe", env_config={"env_id": "FrogSWE-Toy-v0"},  # doctest: +SKIP
    ...                      extras={"task_id": "frogtoy__handwritten-0001", "max_turns": 8})
    >>> conversation, meta = env.init([])                                 # doctest: +SKIP
    >>> env.step('{"tool": "submit"}')["done"]                            # doctest: +SKIP
    True
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from typing import Any

from frog_gym.errors import FrogGymError, SandboxError, SandboxUnavailableError
from frog_gym.env.toolcalls import reply_steps

ENV_ID = "frog_swe"
"""The id :func:`register` gives the env in skyrl_gym's registry (SkyRL datasets name it as ``env_class``)."""

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError:  # pragma: no cover
    raise FrogGymError("The SkyRL adapter needs skyrl-gym; install the extra: pip install 'frog-gym[skyrl]'") from None


class FrogSWESkyRLEnv(BaseTextEnv):
    """One FrogSWE episode as a SkyRL text env.

    Args:
        env_config: ``env_id`` (default ``FrogSWE-v0``) and any ``gymnasium.make`` keyword (``max_steps``,
            ``wall_time_s``, ...); a dict or an omegaconf ``DictConfig``.
        extras: the dataset row's extras: ``task_id`` (else the env samples one) and ``max_turns``
            (default 30).
    """

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None):
        import gymnasium as gym

        import frog_gym  # noqa: F401  (registers the envs)

        super().__init__()
        config = dict(env_config or {})
        extras = dict(extras or {})
        self.task_id: str | None = extras.get("task_id")
        self.max_turns = int(extras.get("max_turns", 30))
        env_id = extras.get("env_id") or config.pop("env_id", "FrogSWE-v0")
        config.pop("env_id", None)
        env_kwargs = extras.get("env_kwargs") or {}
        if isinstance(env_kwargs, str):  # a parquet row keeps it as JSON text
            env_kwargs = json.loads(env_kwargs) if env_kwargs.strip() else {}
        # The env itself, not gymnasium's wrappers: its own step budget ends an episode (graded), sync or async.
        self.env = gym.make(env_id, **{**config, **env_kwargs}).unwrapped
        self.result: dict[str, Any] = {}
        self.infra_failure: str | None = None
        """Why the episode's sandbox could not start (set by :meth:`init`), else None."""

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Start the episode: the dataset's prompt messages, then the task's prompt as a user message."""
        self.turns, self.result, self.infra_failure = 0, {}, None
        try:
            text, info = self.env.reset(options={"task_id": self.task_id} if self.task_id else None)
        except (SandboxError, SandboxUnavailableError) as e:
            return self._not_started(prompt, e)
        return self._started(prompt, text, info)

    async def ainit(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """:meth:`init`, awaited (the env's ``areset``)."""
        self.turns, self.result, self.infra_failure = 0, {}, None
        try:
            text, info = await self.env.areset(options={"task_id": self.task_id} if self.task_id else None)
        except (SandboxError, SandboxUnavailableError) as e:
            return self._not_started(prompt, e)
        return self._started(prompt, text, info)

    def _not_started(self, prompt: list[dict[str, str]], e: Exception) -> tuple[list[dict[str, str]], dict[str, Any]]:
        self.infra_failure = str(e)
        return ([*prompt, {"role": "user", "content": f"Infrastructure failure (not scored): {e}"}],
                {"task_id": self.task_id, "infra_failure": self.infra_failure})

    def _started(self, prompt: list[dict[str, str]], text: str,
                 info: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        self.task_id = info["task_id"]
        return [*prompt, {"role": "user", "content": text}], {"task_id": info["task_id"], "repo": info["repo"]}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Run the model's reply (its native tool calls, else its text as one action); a finished episode
        carries the graded reward (``None`` for an infrastructure failure)."""
        op = self._step_g(action)
        result: Any = None
        while True:
            try:
                result = self.env.step(op.send(result))
            except StopIteration as stop:
                return stop.value

    async def astep(self, action: str) -> BaseTextEnvStepOutput:
        """:meth:`step`, awaited (the env's ``astep``)."""
        op = self._step_g(action)
        result: Any = None
        while True:
            try:
                result = await self.env.astep(op.send(result))
            except StopIteration as stop:
                return stop.value

    def _step_g(self, action: str) -> Generator[Any, Any, BaseTextEnvStepOutput]:
        """The step, written once for :meth:`step` and :meth:`astep`: it yields each env action and gets the
        env's step result back."""
        self.turns += 1
        if self.infra_failure is not None:
            self.result = {"resolved": False, "infra_failure": self.infra_failure, "submitted": False,
                           "turns": self.turns}
            return BaseTextEnvStepOutput(observations=[], reward=None, done=True,
                                         metadata={"task_id": self.task_id, **self.result})
        out = yield from reply_steps(action, id_prefix=f"call_{self.turns}_")
        reward, terminated, truncated, info = out.reward, out.terminated, out.truncated, out.info
        if not out.done and self.turns >= self.max_turns:
            _, reward, terminated, truncated, info = yield {"tool": "submit"}
        done = bool(terminated or truncated)
        metadata = {"task_id": self.task_id, "steps": info.get("steps"), "action_ok": info.get("action_ok")}
        if done:
            self.result = {"resolved": bool(info.get("resolved")), "infra_failure": info.get("infra_failure"),
                           "submitted": bool(terminated), "turns": self.turns}
            metadata.update(self.result)
        scored = None if info.get("infra_failure") else float(reward)
        return BaseTextEnvStepOutput(observations=[] if done else out.messages,
                                     reward=scored if done else 0.0, done=done, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        """Per-episode metrics SkyRL aggregates: resolved, turns, submitted (numbers only)."""
        return {k: float(v) for k, v in self.result.items() if isinstance(v, (bool, int, float))}

    def close(self) -> None:
        self.env.close()

    async def aclose(self) -> None:
        await self.env.aclose()


def register(env_id: str = ENV_ID) -> str:
    """Register :class:`FrogSWESkyRLEnv` in skyrl_gym's registry (once); returns its id."""
    import skyrl_gym
    from skyrl_gym.envs.registration import registry

    if env_id not in registry:
        skyrl_gym.register(id=env_id, entry_point="frog_gym.adapters.skyrl:FrogSWESkyRLEnv")
    return env_id
