"""Run a mini-swe-agent agent in a FrogSWE episode: its environment is our sandbox.

Such an agent drives its environment itself: it calls ``env.execute({"command": ...})`` and reads
``{"output", "returncode", "exception_info"}``, until a command prints
``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``. Our harness drives agents the other way round (it calls
``act(observation)``). :class:`MiniSweAgentAdapter` turns one into the other: the agent's ``run(task)`` runs
on a thread, each ``execute`` becomes a ``bash`` action of the episode (through the env's own tool, so
budgets, timeouts, output caps and the trajectory all apply), and the episode is submitted when the agent
prints the submit marker (raising mini-swe-agent's own ``Submitted``, as its environments do) or its
``run`` returns. An agent that crashes (an exception out of ``run``) makes ``act`` raise
:class:`AgentCrashed` with the agent's own message, which the harness records as the episode's ``error``.

Both mini-swe-agent call styles work: ``execute("ls", cwd="")`` (v1) and ``execute({"command": "ls"})``
(v2). Its templates read the platform fields its environments provide (``system``, ``release``,
``version``, ``machine``): :meth:`SandboxEnvironment.get_template_vars` gives the sandbox's (it shares the
host's kernel), plus ``cwd`` and the config's ``env``.

:func:`mini_swe_agent` builds mini-swe-agent's own ``DefaultAgent`` with a config the package ships
(``default``, ``mini``, ``mini_textbased``) or a YAML file of yours; plug it in with a factory module, then
``frog-gym bench --agent python:my_agents:mini``::

    # my_agents.py  (pip install 'frog-gym[miniswe]')
    from minisweagent.models import get_model
    from frog_gym.agents.miniswe import mini_swe_agent

    def mini(model="openai/qwen2.5-coder"):
        return mini_swe_agent(lambda cfg: get_model(model, cfg), config="default")

Example:
    >>> class Lister:  # the smallest mini-style agent
    ...     def __init__(self, env): self.env = env
    ...     def run(self, task): return self.env.execute("ls")
    >>> agent = MiniSweAgentAdapter(Lister)
    >>> agent.reset("Fix the bug.", {})
    >>> agent.act("Fix the bug.")
    {'tool': 'bash', 'command': 'ls'}
    >>> agent.act("README.md\\n[exit code 0]")
    {'tool': 'submit'}
"""

from __future__ import annotations

import contextlib
import platform
import queue
import re
import shlex
import threading
from collections.abc import Callable
from typing import Any

from frog_gym.agents.base import Action, AgentStats

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_EXIT = re.compile(r"\n?\[exit code (-?\d+)\]")
_DONE = object()


class AgentCrashed(RuntimeError):
    """The agent's ``run`` raised: the message is its exception's. The harness records it as the episode's
    ``error`` (and grades the state the agent left)."""


class EpisodeOver(BaseException):
    """Raised inside the agent's thread when the episode ended under it (a budget ran out, or reset).
    A BaseException, so that an agent's ``except Exception`` does not swallow it."""


def parse_bash_observation(observation: str) -> dict[str, Any]:
    """Our ``bash`` observation as mini-swe-agent's result dict.

    >>> parse_bash_observation("hello\\n\\n[exit code 3]")
    {'output': 'hello\\n', 'returncode': 3, 'exception_info': ''}
    """
    found = list(_EXIT.finditer(observation))
    if not found:  # timed out (the note says so) or the sandbox failed
        return {"output": observation, "returncode": -1, "exception_info": ""}
    last = found[-1]
    output, trailer = observation[: last.start()], observation[last.end():].strip()
    return {"output": output + ("\n" + trailer if trailer else ""), "returncode": int(last.group(1)),
            "exception_info": ""}


class SandboxEnvironment:
    """A mini-swe-agent ``Environment`` whose commands run as ``bash`` actions of the current episode.

    Args:
        adapter: the adapter that carries commands to the episode.
        root: the repository root in the sandbox.
        env: environment variables exported before each command (a config's ``environment.env``).
    """

    def __init__(self, adapter: MiniSweAgentAdapter, root: str = "/testbed", env: dict[str, str] | None = None):
        self._adapter = adapter
        self.config = {"cwd": root, "env": dict(env or {})}

    def execute(self, command: str | dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        """Run ``command`` in the episode's shell; returns ``{"output", "returncode", "exception_info"}``."""
        text = command.get("command", "") if isinstance(command, dict) else command
        if cwd:
            text = f"cd {shlex.quote(cwd)} && {text}"
        if self.config["env"]:
            exports = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in sorted(self.config["env"].items()))
            text = f"export {exports}\n{text}"
        result = parse_bash_observation(self._adapter._round_trip(text))
        lines = result["output"].lstrip().splitlines()
        if lines and lines[0].strip() == SUBMIT_MARKER and result["returncode"] == 0:
            self._adapter._submitted = True
            _raise_submitted(result["output"].lstrip().split("\n", 1)[1] if len(lines) > 1 else "")
        return result

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """What mini-swe-agent's templates read: the platform (the sandbox shares this kernel), ``cwd``, ``env``."""
        uname = platform.uname()._asdict()
        uname["node"] = "sandbox"
        return {**uname, **self.config, **kwargs}

    def serialize(self) -> dict[str, Any]:
        return {"info": {"config": {"environment": dict(self.config),
                                    "environment_type": f"{__name__}.SandboxEnvironment"}}}


def _raise_submitted(submission: str) -> None:
    try:
        from minisweagent.exceptions import Submitted  # type: ignore[import-not-found]
    except ImportError:
        return
    raise Submitted({"role": "exit", "content": submission,
                     "extra": {"exit_status": "Submitted", "submission": submission}})


class MiniSweAgentAdapter:
    """The Agent protocol over an agent that drives its own environment.

    Args:
        factory: builds the agent from a :class:`SandboxEnvironment`; the result needs ``run(task)``.
        timeout_s: how long ``act`` waits for the agent's next command before giving up (its model may be
            slow); on timeout the episode is submitted as it stands.
        env_vars: environment variables exported before each of the agent's commands.
    """

    def __init__(self, factory: Callable[[SandboxEnvironment], Any], timeout_s: float = 3600.0,
                 env_vars: dict[str, str] | None = None):
        if not callable(factory):
            raise TypeError(f"MiniSweAgentAdapter needs a factory env -> agent, got {type(factory).__name__}.")
        self.factory = factory
        self.timeout_s = timeout_s
        self.env_vars = dict(env_vars or {})
        self._crash = None
        self.stats = AgentStats()
        self._thread: threading.Thread | None = None
        self._actions: queue.Queue[Any] = queue.Queue()
        self._observations: queue.Queue[Any] = queue.Queue()

    def reset(self, prompt: str, info: dict[str, Any]) -> None:
        """End the previous episode's thread and prepare a fresh agent for ``prompt``."""
        self._stop()
        root = re.search(r"repository at (\S+) ", prompt)
        self.env = SandboxEnvironment(self, root.group(1) if root else "/testbed", self.env_vars)
        self._prompt = prompt
        self._submitted = False
        self._crash: str | None = None
        self.stats = AgentStats(extra={"exit": None})
        self._actions, self._observations = queue.Queue(), queue.Queue()

    def act(self, observation: str) -> Action:
        """Hand the observation to the agent's pending ``execute`` and return its next command."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, name="mini-swe-agent", daemon=True)
            self._thread.start()
        else:
            self._observations.put(observation)
        try:
            item = self._actions.get(timeout=self.timeout_s)
        except queue.Empty:
            self.stats.extra["exit"] = f"no command within {self.timeout_s:g} s"
            return {"tool": "submit"}
        if item is _DONE:
            if self._crash is not None:
                raise AgentCrashed(self._crash)
            return {"tool": "submit"}
        return {"tool": "bash", "command": item}

    def _main(self) -> None:
        try:
            agent = self.factory(self.env)
            result = agent.run(self._prompt)
            self.stats.extra["exit"] = repr(result)[:500]
        except EpisodeOver:
            return
        except BaseException as e:  # noqa: BLE001  (the agent's own failure; Submitted when it is not installed)
            if type(e).__name__ == "Submitted":
                self.stats.extra["exit"] = "Submitted"
            else:
                self._crash = f"{type(e).__name__}: {e}"[:2000]
                self.stats.extra["exit"] = self._crash
        self._actions.put(_DONE)

    def _round_trip(self, command: str) -> str:
        self._actions.put(command)
        observation = self._observations.get()
        if observation is _DONE:
            raise EpisodeOver
        return observation

    def _stop(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._observations.put(_DONE)
            self._thread.join(timeout=5)
        self._thread = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter teardown the queues may be gone
            self._stop()


def load_config(config: str = "default") -> dict[str, Any]:
    """A mini-swe-agent config: one the package ships (``default``, ``mini``, ``mini_textbased``) or a YAML
    path, read by mini-swe-agent's own loader (the ``miniswe`` extra)."""
    try:
        from minisweagent.config import get_config_from_spec  # type: ignore[import-not-found]
    except ImportError:
        from frog_gym.errors import FrogGymError

        raise FrogGymError("The mini-swe-agent adapter needs the mini-swe-agent package: "
                           "pip install 'frog-gym[miniswe]'") from None
    return get_config_from_spec(config)


def mini_swe_agent(model_factory: Callable[[dict[str, Any]], Any], config: str = "default",
                   timeout_s: float = 3600.0) -> MiniSweAgentAdapter:
    """mini-swe-agent's own ``DefaultAgent`` with a shipped config, as a frog-gym agent.

    Args:
        model_factory: builds the model from the config's ``model`` table (e.g. ``lambda cfg:
            get_model("openai/qwen2.5-coder", cfg)``, or a ``DeterministicModel`` in tests).
        config: ``default``, ``mini``, ``mini_textbased`` or a YAML path.
        timeout_s: see :class:`MiniSweAgentAdapter`.
    """
    from minisweagent.agents.default import DefaultAgent  # type: ignore[import-not-found]

    cfg = load_config(config)
    agent_cfg = dict(cfg.get("agent", {}))
    return MiniSweAgentAdapter(lambda env: DefaultAgent(model_factory(dict(cfg.get("model", {}))), env, **agent_cfg),
                               timeout_s=timeout_s, env_vars=cfg.get("environment", {}).get("env", {}))
