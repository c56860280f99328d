"""Agents by name, for ``frog-gym bench --agent NAME --agent-opt k=v``.

Registration is data: a name maps to a ``module:factory`` string imported only when the agent is made,
so heavy agents (``hf`` needs torch) cost nothing until used. Any third-party agent plugs in as
``python:package.module:factory``: the factory is called with the ``--agent-opt`` options as keyword
arguments and must return an object with ``reset(prompt, info)`` and ``act(observation)``.

Options arrive as strings; each is converted to the type the factory's signature (or, for ``openai``, the
config dataclass) declares, else read as an int, float, bool or ``none`` when it looks like one.

Example:
    >>> agent = make_agent("noop")
    >>> agent.act("Fix the bug.")
    {'tool': 'submit'}
    >>> AGENTS["oracle"].ranked
    False
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from frog_gym.agents.base import Agent
from frog_gym.errors import FrogGymError, UnknownNameError, did_you_mean


@dataclass(frozen=True)
class AgentEntry:
    """A registered agent: where its factory lives and whether its scores may be ranked."""

    target: str
    """``module:factory``, imported lazily."""
    description: str
    ranked: bool = True
    """False for agents that read the answer (``oracle``): the leaderboard lists them apart, never ranked."""
    extra: str | None = None
    """The pip extra that provides its dependencies, named in the error when the import fails."""


AGENTS: dict[str, AgentEntry] = {
    "apr": AgentEntry("frog_gym.agents.apr:AprAgent",
                      "automatic program repair without a model: fault localization plus candidate edits"),
    "openai": AgentEntry("frog_gym.agents.registry:openai_agent",
                         "any OpenAI-compatible chat endpoint (vLLM, llama.cpp, Ollama); needs model=..."),
    "hf": AgentEntry("frog_gym.agents.hf:HFAgent", "a local Hugging Face causal LM (the GRPO policy)", extra="torch"),
    "replay": AgentEntry("frog_gym.agents.simple:ReplayAgent", "replays a trajectory file: actions=PATH"),
    "noop": AgentEntry("frog_gym.agents.simple:NoopAgent", "submits at once: the untouched repository's score"),
    "oracle": AgentEntry("frog_gym.agents.oracle:OracleAgent",
                         "applies the gold patch: checks the harness, never ranked", ranked=False),
}
"""Built-in agents. ``python:module:factory`` reaches any other."""


def openai_agent(**options: Any) -> Any:
    """An :class:`~frog_gym.agents.openai_agent.OpenAIAgent` from ``OpenAIAgentConfig`` fields."""
    from frog_gym.agents.openai_agent import OpenAIAgent, OpenAIAgentConfig

    options = _coerce_for(OpenAIAgentConfig, options, "openai")
    if "model" not in options:
        raise FrogGymError("The openai agent needs a model: add --agent-opt model=NAME (and base_url=URL when the "
                           "server is not at http://localhost:8000/v1).")
    return OpenAIAgent(OpenAIAgentConfig(**options))


def is_ranked(name: str) -> bool:
    """Whether results of the agent called ``name`` may be ranked (third-party agents may)."""
    entry = AGENTS.get(name)
    return entry.ranked if entry is not None else True


def _load(target: str, name: str, extra: str | None = None) -> Callable[..., Any]:
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise FrogGymError(f"Agent target {target!r} is not 'module:factory', e.g. "
                           "'python:my_agents.coder:make_agent'.")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        hint = f" Install it with `pip install 'frog-gym[{extra}]'`." if extra else ""
        raise FrogGymError(f"Cannot import the module of agent {name!r} ({module}): {e}.{hint}") from None
    try:
        factory = getattr(mod, attr)
    except AttributeError:
        public = [n for n in dir(mod) if not n.startswith("_")]
        raise FrogGymError(f"Module {module} has no {attr!r} for agent {name!r}.{did_you_mean(attr, public)}") from None
    if not callable(factory):
        raise FrogGymError(f"{target} is not callable; an agent factory must return an Agent.")
    return factory


def _parse_scalar(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _convert(value: Any, hint: Any, key: str, who: str) -> Any:
    if not isinstance(value, str) or hint is None:
        return value
    args = typing.get_args(hint)
    kinds = [a for a in args if a is not type(None)] if args else [hint]
    if value.lower() in ("none", "null") and type(None) in args:
        return None
    for kind in kinds:
        if kind is bool:
            if value.lower() in ("true", "1", "yes", "false", "0", "no"):
                return value.lower() in ("true", "1", "yes")
        elif kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                continue
        elif kind is str:
            return value
    if kinds and all(k in (bool, int, float) for k in kinds):
        raise FrogGymError(f"Option {key}={value!r} of agent {who!r} must be "
                           f"{' or '.join(k.__name__ for k in kinds)}.")
    return _parse_scalar(value)


def _coerce_for(target: Any, options: dict[str, Any], who: str) -> dict[str, Any]:
    """Convert string options to the types ``target`` (a dataclass or a callable) declares; reject unknown
    keys unless it takes ``**kwargs``."""
    if dataclasses.is_dataclass(target):
        hints = typing.get_type_hints(target)
        known = {f.name: hints.get(f.name) for f in dataclasses.fields(target) if f.init}
        open_ended = False
    else:
        try:
            sig = inspect.signature(target)
        except (TypeError, ValueError):
            return {k: _parse_scalar(v) if isinstance(v, str) else v for k, v in options.items()}
        try:
            hints = typing.get_type_hints(target.__init__ if inspect.isclass(target) else target)
        except Exception:  # noqa: BLE001  (unresolvable annotations: fall back to plain parsing)
            hints = {}
        params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL,)]
        open_ended = any(p.kind is p.VAR_KEYWORD for p in params)
        known = {p.name: hints.get(p.name) for p in params if p.kind is not p.VAR_KEYWORD}
    out: dict[str, Any] = {}
    for k, v in options.items():
        if k not in known and not open_ended:
            raise FrogGymError(f"Agent {who!r} has no option {k!r}.{did_you_mean(k, known)} "
                               f"Its options: {', '.join(sorted(known)) or '(none)'}.")
        out[k] = _convert(v, known.get(k), k, who) if k in known else _parse_scalar(v) if isinstance(v, str) else v
    return out


def _resolve(name: str, options: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any]]:
    if name.startswith("python:"):
        factory = _load(name[len("python:"):], name)
    elif name in AGENTS:
        factory = _load(AGENTS[name].target, name, AGENTS[name].extra)
    else:
        raise UnknownNameError("agent", name, AGENTS, "Built-in agents: "
                               + ", ".join(AGENTS) + "; or python:module:factory for your own.")
    return factory, (options if factory is openai_agent else _coerce_for(factory, options, name))


def check_agent(name: str, options: dict[str, Any] | None = None) -> None:
    """Raise what :func:`make_agent` would for a bad name or option, without building the agent (which
    may load a model)."""
    factory, options = _resolve(name, dict(options or {}))
    if factory is openai_agent:
        from frog_gym.agents.openai_agent import OpenAIAgentConfig

        if "model" not in options:
            openai_agent(**options)  # raises the explanation
        _coerce_for(OpenAIAgentConfig, options, "openai")


def make_agent(name: str, options: dict[str, Any] | None = None) -> Agent:
    """Build the agent registered as ``name`` (or ``python:module:factory``) with ``options``.

    Raises:
        UnknownNameError: an unknown name, with the nearest registered one.
        FrogGymError: the factory cannot be imported, rejects an option, or returns a non-agent.
    """
    factory, options = _resolve(name, dict(options or {}))
    try:
        agent = factory(**options)
    except TypeError as e:
        raise FrogGymError(f"Agent {name!r} rejected its options {options}: {e}") from None
    if not isinstance(agent, Agent):
        raise FrogGymError(f"Agent {name!r} made a {type(agent).__name__}, which lacks reset(prompt, info) and "
                           "act(observation); see frog_gym.agents.base.Agent.")
    return agent


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` from the command line into a dict (values stay strings until :func:`make_agent`).

    >>> parse_options(["model=qwen", "temperature=0.2"])
    {'model': 'qwen', 'temperature': '0.2'}
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise FrogGymError(f"--agent-opt {pair!r} is not KEY=VALUE, e.g. --agent-opt model=qwen2.5-coder.")
        out[key.strip()] = value
    return out
