"""The fixed harness: everything that affects a score, frozen, saved as TOML, and fingerprinted.

Two results are comparable only when they were produced under the same :class:`HarnessSpec`: the same
tools, prompt, budgets, sandbox (and, under Docker, the same images) and the same tasks with the same
content. :meth:`HarnessSpec.fingerprint` hashes all of it; every result records it, and the leaderboard
never ranks results with different fingerprints together.

:func:`run_episode` is the one place an agent meets the env under a harness: it builds the env from the
spec, drives the agent, writes the trajectory and returns an :class:`EpisodeResult`.

Example:
    >>> spec = HarnessSpec.for_suite("smoke")
    >>> spec == HarnessSpec.from_toml(spec.to_toml())
    True
    >>> spec.fingerprint() == HarnessSpec.from_toml(spec.to_toml()).fingerprint()
    True
    >>> spec.replace(max_steps=50).fingerprint() != spec.fingerprint()
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from frog_gym.errors import FrogGymError, SpecError
from frog_gym.env.prompt import PROMPT_VERSION
from frog_gym.sandbox import BACKENDS
from frog_gym.env.toolspec import TOOLS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HARNESS_VERSION = 1
"""Version of the harness itself (this module's episode loop); bump it when the loop changes scores."""


def tools_hash(names: tuple[str, ...]) -> str:
    """A hash of the enabled tools' full descriptions (what the agent is told), not only their names."""
    blob = json.dumps([TOOLS[n].json_schema() for n in sorted(names)], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class HarnessSpec:
    """Everything that affects a benchmark score.

    Build one with :meth:`for_suite` (which hashes each task of the suite) rather than by hand.
    """

    suite: str
    """Name of the task suite (see :mod:`frog_gym.bench.suites`), recorded for display."""
    suite_version: str
    """The suite's version as selected (a suite definition version, or a hash for an ad-hoc list)."""
    tasks: tuple[tuple[str, str], ...]
    """``(instance_id, content_hash)`` of every task, sorted by id: a changed task changes the fingerprint."""
    tools: tuple[str, ...] = tuple(sorted(TOOLS))
    """Tools the agent may call; ``submit`` is required. A call to another tool is an error observation."""
    tools_hash: str = ""
    """Hash of the enabled tools' descriptions (filled in from :data:`frog_gym.env.toolspec.TOOLS`)."""
    prompt_version: str = PROMPT_VERSION
    """Version of the task prompt template (:data:`frog_gym.env.prompt.PROMPT_VERSION`)."""
    max_steps: int = 100
    """Steps per episode; at the limit the current state is graded."""
    wall_time_s: float = 1800.0
    """Wall-clock seconds per episode, grading excluded."""
    command_timeout_s: float = 30.0
    """Wall seconds per bash command; the command's process tree is killed at the limit."""
    output_cap_bytes: int = 16_384
    """Bytes of output kept per command (head and tail)."""
    grade_timeout_s: float = 900.0
    """Wall seconds of one grading run; past it the episode is an infrastructure failure."""
    partial_credit: bool = False
    """Reward the pass rate instead of 0/1 (``resolved`` is reported either way)."""
    backend: str = "local"
    """Sandbox backend: ``local`` (bubblewrap) or ``docker``."""
    image_digests: tuple[tuple[str, str], ...] = ()
    """``(repo, image digest)`` under Docker, filled in by :meth:`for_suite`; empty for ``local``."""
    seed: int = 0
    """Base seed: sample ``j`` of a task is reset with ``seed + j``."""
    samples_per_task: int = 1
    """Episodes per task (pass@k needs k or more)."""
    harness_version: int = HARNESS_VERSION
    """Version of the episode loop itself."""
    visible_tests: bool = False
    """Keep the FAIL_TO_PASS tests in the workspace (default: hidden until grading, as in SWE-bench)."""
    impact_selection: bool = False
    """Grade only the PASS_TO_PASS tests an agent's changes can reach (:mod:`frog_gym.grading.impact`), as training
    does; the default grades every selected test, as SWE-bench does. Left out of the spec's JSON when off, so
    the fingerprints of harnesses written before it existed stay as they were."""

    def __post_init__(self) -> None:
        unknown = [t for t in self.tools if t not in TOOLS]
        if unknown:
            raise SpecError("harness", "tools", f"unknown tools {unknown}; choose from {sorted(TOOLS)}")
        if "submit" not in self.tools:
            raise SpecError("harness", "tools", "'submit' must be enabled, or no episode can end on purpose")
        if self.backend not in BACKENDS:
            raise SpecError("harness", "backend", f"{self.backend!r} is not one of {list(BACKENDS)}")
        for name in ("max_steps", "wall_time_s", "command_timeout_s", "output_cap_bytes", "grade_timeout_s",
                     "samples_per_task"):
            if getattr(self, name) <= 0:
                raise SpecError("harness", name, f"must be positive, got {getattr(self, name)!r}")
        if not self.tasks:
            raise SpecError("harness", "tasks", "empty; a suite needs at least one task (see `frog-gym suites`)")
        ids = [t for t, _ in self.tasks]
        if ids != sorted(set(ids)):
            raise SpecError("harness", "tasks", "must be sorted by id without duplicates; build the spec with "
                            "HarnessSpec.for_suite()")
        object.__setattr__(self, "tools", tuple(sorted(self.tools)))
        if not self.tools_hash:
            object.__setattr__(self, "tools_hash", tools_hash(self.tools))

    # -- building -----------------------------------------------------------------------------------
    @classmethod
    def for_suite(cls, suite: str, **overrides: Any) -> HarnessSpec:
        """The spec for a named suite (or an ad-hoc one, see :func:`frog_gym.bench.suites.resolve`), hashing its
        tasks, and under Docker recording each repository's image digest."""
        from frog_gym.bench.suites import resolve

        s = resolve(suite)
        spec = cls(suite=s.name, suite_version=s.version, tasks=s.tasks, **overrides)
        if spec.backend == "docker" and not spec.image_digests:
            spec = spec.replace(image_digests=_image_digests(spec))
        return spec

    def replace(self, **changes: Any) -> HarnessSpec:
        """A copy with some fields changed (the tools hash is recomputed when the tools change)."""
        if "tools" in changes and "tools_hash" not in changes:
            changes["tools_hash"] = ""
        return dataclasses.replace(self, **changes)

    @property
    def task_ids(self) -> list[str]:
        return [t for t, _ in self.tasks]

    def episodes(self) -> list[tuple[str, int]]:
        """Every ``(task_id, sample)`` this harness runs, in a fixed order."""
        return [(t, j) for t in self.task_ids for j in range(self.samples_per_task)]

    def limits(self) -> Any:
        from frog_gym.sandbox.base import Limits

        return Limits(command_timeout=self.command_timeout_s, output_cap=self.output_cap_bytes)

    # -- identity -----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["tasks"] = dict(self.tasks)
        d["image_digests"] = dict(self.image_digests)
        d["tools"] = list(self.tools)
        if not self.impact_selection:
            del d["impact_selection"]
        return d

    def fingerprint(self) -> str:
        """A stable hash of the whole spec: canonical JSON (sorted keys, no whitespace), sha256, 16 hex."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        """What a reader of a results table needs to know about the harness (the task list left out)."""
        return {"fingerprint": self.fingerprint(), "suite": self.suite, "suite_version": self.suite_version,
                "n_tasks": len(self.tasks), "max_steps": self.max_steps, "wall_time_s": self.wall_time_s,
                "command_timeout_s": self.command_timeout_s, "backend": self.backend,
                "prompt_version": self.prompt_version, "samples_per_task": self.samples_per_task,
                "tools": list(self.tools), "visible_tests": self.visible_tests,
                **({"impact_selection": True} if self.impact_selection else {})}

    # -- files --------------------------------------------------------------------------------------
    def to_toml(self) -> str:
        d = self.to_dict()
        tasks, digests = d.pop("tasks"), d.pop("image_digests")
        d["fingerprint"] = self.fingerprint()  # informational: recomputed and checked on load
        return ("# frog-gym harness spec: everything that affects a score. Results record its fingerprint.\n"
                + tomli_w.dumps({"harness": d, "image_digests": digests, "tasks": tasks}))

    @classmethod
    def from_toml(cls, text: str, file: str = "<harness>") -> HarnessSpec:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SpecError(file, "<toml>", f"not valid TOML ({e})") from None
        d = dict(data.get("harness", {}))
        stated = d.pop("fingerprint", None)
        known = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(d) - known)
        if extra:
            raise SpecError(file, extra[0], f"unknown harness field; known fields: {sorted(known)}")
        d["tasks"] = tuple(sorted(data.get("tasks", {}).items()))
        d["image_digests"] = tuple(sorted(data.get("image_digests", {}).items()))
        d["tools"] = tuple(d.get("tools", sorted(TOOLS)))
        spec = cls(**d)
        if stated is not None and stated != spec.fingerprint():
            raise SpecError(file, "fingerprint", f"says {stated} but the spec hashes to {spec.fingerprint()}: the "
                            "file was edited by hand. Delete the fingerprint line to accept the edit.")
        return spec

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.to_toml(), encoding="utf-8")
        return p

    @classmethod
    def load(cls, path: str | Path) -> HarnessSpec:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise FrogGymError(f"Cannot read the harness file {str(p)!r}: {e.strerror}. Write one with "
                               "`frog-gym bench --write-harness FILE --suite SUITE`.") from None
        return cls.from_toml(text, str(p))

    def check_tasks(self) -> None:
        """Raise if a registered task changed since the spec was made (its content hash differs)."""
        from frog_gym.catalog.task import load_task

        changed = [t for t, h in self.tasks if load_task(t).content_hash != h]
        if changed:
            raise FrogGymError(
                f"{len(changed)} task(s) of suite {self.suite!r} changed since this harness was written (first: "
                f"{changed[0]!r}); results would not be comparable. Rebuild the harness (omit --harness) and "
                "rerun under the new fingerprint.")


def _image_digests(spec: HarnessSpec) -> tuple[tuple[str, str], ...]:
    from frog_gym.sandbox.images import image_digest  # the docker extra, imported only for Docker harnesses
    from frog_gym.catalog.task import load_task

    repos = sorted({load_task(t).repo for t in spec.task_ids})
    return tuple((r, image_digest(r)) for r in repos)


# -- one episode ------------------------------------------------------------------------------------
@dataclass
class EpisodeResult:
    """One finished episode, as stored in a run's ``results.jsonl`` and on the leaderboard."""

    task_id: str
    sample: int
    seed: int
    agent: str
    fingerprint: str
    repo: str = ""
    tier: str = ""
    resolved: bool = False
    resolved_status: str = "RESOLVED_NO"
    reward: float = 0.0
    steps: int = 0
    submitted: bool = False
    wall_s: float = 0.0
    agent_s: float = 0.0
    env_s: float = 0.0
    grade_s: float = 0.0
    infra_failure: str | None = None
    error: str | None = None
    tampering: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0
    model_patch: str = ""
    agent_opts: dict[str, Any] = field(default_factory=dict)
    harness: dict[str, Any] = field(default_factory=dict)
    finished_at: float = 0.0

    @property
    def overhead_s(self) -> float:
        """Wall time spent neither in the agent nor in the env (sandbox, tools, grading): the harness's own."""
        return max(0.0, self.wall_s - self.agent_s - self.env_s)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EpisodeResult:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x, default=str))


class Trajectory:
    """A JSONL trajectory: a header, one record per step (``action`` records replay with ReplayAgent),
    then the result. Each record is flushed as it is written, so an interrupted episode keeps its steps."""

    def __init__(self, path: Path | None):
        self.path = path
        self._f = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._f = path.open("w", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        if self._f is not None:
            self._f.write(json.dumps(_jsonable(record), ensure_ascii=False) + "\n")
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def run_episode(spec: HarnessSpec, agent: Any, agent_name: str, task_id: str, sample: int, *,
                env: Any = None, trajectory: Path | None = None,
                agent_opts: dict[str, Any] | None = None) -> EpisodeResult:
    """Run one episode of ``agent`` on ``task_id`` under ``spec``.

    The agent gets the prompt and the env's info plus ``max_steps``. A call to a disabled tool is an error
    observation that costs a step. If the agent raises, the current state is graded as its answer (its
    failure), except for :class:`~frog_gym.agents.openai_agent.AgentError` (the model endpoint could not be
    used), which is an infrastructure failure. ``env`` may be a reusable :class:`FrogSWEEnv` made by
    :func:`make_env` for this spec; it is closed only if this call created it.
    """
    from frog_gym.agents.openai_agent import AgentError
    from frog_gym.bench.suites import tier_of
    from frog_gym.catalog.task import load_task

    own_env = env is None
    if own_env:
        env = make_env(spec)
    fingerprint = spec.fingerprint()
    task = load_task(task_id)
    seed = spec.seed + sample
    result = EpisodeResult(task_id=task_id, sample=sample, seed=seed, agent=agent_name, fingerprint=fingerprint,
                           repo=task.repo, tier=tier_of(task), agent_opts=dict(agent_opts or {}),
                           harness=spec.summary())
    traj = Trajectory(trajectory)
    started = time.monotonic()
    info: dict[str, Any] = {}
    try:
        t = time.monotonic()
        obs, info = env.reset(seed=seed, options={"task_id": task_id})
        result.env_s += time.monotonic() - t
        traj.write({"type": "header", "task_id": task_id, "sample": sample, "seed": seed, "agent": agent_name,
                    "agent_opts": result.agent_opts, "fingerprint": fingerprint, "prompt": obs,
                    "started_at": time.time()})
        t = time.monotonic()
        agent.reset(obs, {**info, "max_steps": spec.max_steps})
        result.agent_s += time.monotonic() - t
        done = False
        step = 0
        while not done:
            step += 1
            t = time.monotonic()
            try:
                action = agent.act(obs)
            except AgentError as e:
                result.infra_failure = f"agent endpoint: {e}"
                break
            except Exception as e:  # noqa: BLE001  (the agent's own bug: its answer is the state it left)
                result.error = f"{type(e).__name__}: {e}"
                traj.write({"type": "agent_error", "step": step, "error": result.error,
                            "traceback": traceback.format_exc(limit=8)})
                action = {"tool": "submit"}
            t_agent = time.monotonic() - t
            result.agent_s += t_agent
            sent = action
            name = _tool_name(action)
            if name is not None and name not in spec.tools:
                sent = {"tool": f"<disabled:{name}>"}
            t = time.monotonic()
            obs, reward, terminated, truncated, info = env.step(sent)
            t_env = time.monotonic() - t
            result.env_s += t_env
            if sent is not action:
                obs = (f"Error: the tool {name!r} is disabled in this harness; enabled tools: "
                       f"{', '.join(spec.tools)}.")
            done = terminated or truncated
            traj.write({"type": "step", "step": step, "action": action, "observation": obs, "reward": reward,
                        "terminated": terminated, "truncated": truncated, "agent_s": round(t_agent, 4),
                        "env_s": round(t_env, 4)})
            result.reward = float(reward)
            result.submitted = bool(terminated)
        result.steps = int(info.get("steps", step))
        report = info.get("report") or {}
        if info.get("infra_failure") and not result.infra_failure:
            result.infra_failure = str(info["infra_failure"])
        result.resolved = bool(info.get("resolved")) and not result.infra_failure
        result.resolved_status = report.get("resolved", "RESOLVED_NO")
        result.tampering = list(info.get("tampering") or report.get("tampering") or [])
        result.grade_s = float(report.get("seconds", 0.0))
        result.model_patch = env.diff()
    except FrogGymError as e:
        result.infra_failure = f"{type(e).__name__}: {e}"
    finally:
        stats = getattr(agent, "stats", None)
        if stats is not None:
            result.prompt_tokens = int(getattr(stats, "prompt_tokens", 0))
            result.completion_tokens = int(getattr(stats, "completion_tokens", 0))
            result.model_calls = int(getattr(stats, "model_calls", 0))
        result.wall_s = time.monotonic() - started
        result.finished_at = time.time()
        traj.write({"type": "result", **result.to_dict(), "report": info.get("report"),
                    "messages": getattr(agent, "messages", None),
                    "agent_stats": dataclasses.asdict(stats) if dataclasses.is_dataclass(stats) else None})
        traj.close()
        if own_env:
            env.close()
    return result


def make_env(spec: HarnessSpec) -> Any:
    """A :class:`~frog_gym.env.FrogSWEEnv` configured by ``spec`` (reusable across its episodes)."""
    from frog_gym.env import FrogSWEEnv

    return FrogSWEEnv(task_ids=spec.task_ids, max_steps=spec.max_steps, wall_time_s=spec.wall_time_s,
                      limits=spec.limits(), partial_credit=spec.partial_credit,
                      grade_timeout_s=spec.grade_timeout_s, backend=spec.backend,
                      visible_tests=spec.visible_tests, impact_selection=spec.impact_selection)


def _tool_name(action: Any) -> str | None:
    from frog_gym.env.tools import Call, parse_action

    call = parse_action(action)
    return call.tool if isinstance(call, Call) else None
