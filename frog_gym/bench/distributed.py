"""Rollouts on Ray: a pool of env actors, one per sandbox slot (the ``ray`` extra).

The driver keeps the harness, the curriculum and the learner; each actor is one process with its prepared
repository venvs. Whole episodes under a harness (``frog-gym bench --ray``) run one at a time per actor. Episodes
stepped from the driver (:class:`RemoteEnv`) run on the actor's event loop through the env's async API
(:mod:`frog_gym.env`): an actor holds up to ``PoolConfig.episodes_per_actor`` of them at once, each with its
own env, sandbox and workspace, and an episode waiting on its command holds no thread (the actor's threads
are the env's two shared pools, whatever the number of episodes). Actors are placed by Ray's
resource scheduler: each asks for ``cpus_per_env`` CPUs, ``memory_mb_per_env`` of memory and any custom
resources (``{"frog_sandbox": 1}`` keeps them on nodes that advertise sandbox slots, e.g.
``ray start --resources='{"frog_sandbox": 64}'``). A few warm spares wait with their env built, so that an
actor lost with its node is replaced at once; at most ``max_starting`` actors build their env at a time
(the first start on a node prepares the suite's repository venvs, which is the expensive part).

An actor or node that dies mid-episode is an infrastructure failure, not the agent's: the episode is run
again from its start on another actor (``max_retries`` times; after that it is recorded with
``infra_failure`` set, which is never scored). Episodes run through the same function as the local
process pool (:func:`frog_gym.bench.worker._episode`), with the same seeds, so results match it.

Example:
    >>> from frog_gym.bench.distributed import PoolConfig, RayEnvPool, connect  # doctest: +SKIP
    >>> connect(None, num_cpus=2)                                        # a local Ray; or "HOST:6379"  # doctest: +SKIP
    >>> pool = RayEnvPool(PoolConfig(workers=2, spares=1))               # doctest: +SKIP
    >>> for d in pool.run_episodes(spec, "oracle", {}, "oracle", spec.episodes()):  # doctest: +SKIP
    ...     print(d["result"]["task_id"], d["result"]["resolved"])
"""

from __future__ import annotations

import collections
import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from frog_gym.errors import FrogGymError

INSTALL_HINT = "pip install 'frog-gym[ray]'"
_T = TypeVar("_T")


class RayError(FrogGymError):
    """Ray cannot be used: the extra is missing, the cluster cannot be reached, or it refused our token.

    The CLI prints the message on one line and exits 2."""

    exit_code = 2


def require_ray() -> Any:
    """The ``ray`` module, or a :class:`RayError` naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise RayError(f"Ray is not installed; install the extra: {INSTALL_HINT}") from None
    return ray


def _died_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Exceptions that mean the actor, its worker process or its node is gone (not the episode's fault)."""
    ex = ray.exceptions
    return tuple(getattr(ex, n) for n in ("RayActorError", "WorkerCrashedError", "NodeDiedError",
                                          "ObjectLostError", "OwnerDiedError") if hasattr(ex, n))


def connect(address: str | None = None, *, num_cpus: int | None = None, object_store_mb: int = 128) -> Any:
    """Join the Ray cluster at ``address`` (``HOST:PORT`` as printed by ``ray start --head``, or ``auto``), or
    start a local one when ``address`` is empty. Returns the ``ray`` module.

    Raises:
        RayError: the extra is missing, nothing answers at ``address``, or the cluster refused this
            driver's authentication token (one line each, saying what to do).
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    common = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if not address or address == "local":
        _loopback_only(ray)
        for attempt in range(3):  # Ray gives its raylet 30 s to register: a loaded machine can miss that
            try:
                ray.init(num_cpus=num_cpus, object_store_memory=object_store_mb * 2**20, **common)
                return ray
            except Exception as e:  # noqa: BLE001
                ray.shutdown()
                if "timed out during startup" not in str(e) or attempt == 2:
                    raise RayError(f"A local Ray did not start: {_first(e)}") from None
    if address != "auto":
        host, sep, port = address.rpartition(":")
        if not sep or not port.isdigit():
            raise RayError(f"--ray {address!r} is not a Ray address; give HOST:PORT as printed by `ray start "
                           "--head` (e.g. 10.0.0.5:6379), or no address to start a local Ray.")
        try:
            socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=5).close()
        except OSError as e:
            raise RayError(f"Cannot reach the Ray cluster at {address}: {e.strerror or e}. Start one with `ray "
                           "start --head` and pass the address it prints, or omit the address to start a local "
                           "Ray.") from None
    if address != "auto":
        _check_token(ray, address)
    try:
        ray.init(address=address, **common)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise RayError(f"Cannot join the Ray cluster at {address}: {_first(e)}. Check the address printed by "
                       "`ray start --head` and that this driver runs the same Ray and Python versions.") from None
    return ray


def _check_token(ray: Any, address: str) -> None:
    """Ask the cluster's GCS for its id once: a wrong token fails here in about a second with a clear
    error, where ``ray.init`` would retry for half a minute and then report a failed connection. Ray's own
    log line about the refusal (written by its C++ client to stderr) is silenced for the probe."""
    auth_error = getattr(ray.exceptions, "AuthenticationError", None)
    try:
        from ray._raylet import GcsClient
    except ImportError:  # pragma: no cover (a Ray without it: ray.init reports)
        return
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            try:
                GcsClient(address=address)
            finally:
                os.dup2(saved, 2)
    except Exception as e:  # noqa: BLE001 (anything but a refused token is left to ray.init to report)
        if auth_error is not None and isinstance(e, auth_error):
            raise RayError(f"The Ray cluster at {address} refused this driver's authentication token. Set "
                           "RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to the cluster's token: `ray get-auth-token` "
                           "on its head node prints it.") from None
    finally:
        os.close(saved)


def _loopback_only(ray: Any) -> None:
    """A Ray started here serves only this machine: keep its nodes on 127.0.0.1 (Ray otherwise binds and
    advertises the address of the default route's interface). Ray's switch for this is
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read at import, so the module constant is set as well."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False


def _first(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


@dataclass(frozen=True)
class PoolConfig:
    """How many env actors, where they go, and how they start."""

    workers: int = 2
    """Sandbox slots: actors running episodes at the same time."""
    spares: int = 1
    """Warm actors kept idle, env built, to replace actors lost with their node at once."""
    cpus_per_env: float = 0.25
    """CPUs Ray reserves for each actor. An episode mostly waits (on the policy, on its test runs), so an
    actor reserves a quarter of a core by default: a node of N CPUs holds 4N envs. Raise it for agents that
    run the test suite every turn (``docs/scaling.md`` sizes it)."""
    memory_mb_per_env: int = 0
    """Memory Ray reserves for each actor (0: none reserved); see ``docs/scaling.md`` for measured needs."""
    resources: dict[str, float] = field(default_factory=dict)
    """Custom Ray resources each actor needs, e.g. ``{"frog_sandbox": 1}``."""
    env_vars: dict[str, str] = field(default_factory=dict)
    """Environment variables set in every actor's worker process (Ray's ``runtime_env``), e.g.
    ``{"DOCKER_HOST": "unix:///run/docker.sock"}`` where the nodes' Docker engine listens somewhere else."""
    episodes_per_actor: int = 1
    """Episodes stepped through :class:`RemoteEnv` that one actor holds at once (each its own env, on the actor's
    event loop): ``workers * episodes_per_actor`` episodes in flight. The actor's ``cpus_per_env`` is shared by
    them: raise it with this where episodes run tests often. Whole episodes (``run_episodes``) stay one per
    actor."""
    max_starting: int = 4
    """Actors building their env (preparing repository venvs) at the same time."""
    max_retries: int = 3
    """Reruns of an episode whose actor died before it is recorded as an infrastructure failure."""
    place_timeout_s: float = 60.0
    """Seconds an actor may take to be placed and have its worker process started (a few seconds where a
    node has room) before the pool says which resources it asked for and which are free (a cluster that
    autoscales may need longer)."""
    start_timeout_s: float = 600.0
    """Seconds an actor, once placed, may take to build its env (the first on a node prepares the venvs)."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise FrogGymError(f"PoolConfig.workers={self.workers}: a pool needs at least one actor.")
        if self.spares < 0 or self.max_retries < 0:
            raise FrogGymError("PoolConfig.spares and max_retries must be 0 or more.")
        if self.episodes_per_actor < 1:
            raise FrogGymError(f"PoolConfig.episodes_per_actor={self.episodes_per_actor}: an actor holds at least one "
                               "episode.")
        if self.max_starting < 1:
            raise FrogGymError(f"PoolConfig.max_starting={self.max_starting}: at least one actor must start at a "
                               "time.")
        if self.cpus_per_env < 0 or self.memory_mb_per_env < 0:
            raise FrogGymError("PoolConfig.cpus_per_env and memory_mb_per_env cannot be negative.")
        if self.place_timeout_s <= 0 or self.start_timeout_s <= 0:
            raise FrogGymError("PoolConfig.place_timeout_s and start_timeout_s must be positive numbers of seconds.")

    def demand(self) -> dict[str, float]:
        """The Ray resources one actor asks for, by Ray's names (``CPU``, ``memory`` in bytes, custom ones)."""
        need = {"CPU": self.cpus_per_env, **self.resources}
        if self.memory_mb_per_env:
            need["memory"] = self.memory_mb_per_env * 2**20
        return {k: v for k, v in need.items() if v}


class PlacementError(RayError):
    """The Ray cluster cannot hold the pool's env actors; the message names what one asks and what is free."""


def _show(resources: dict[str, float]) -> str:
    def one(k: str, v: float) -> str:
        return f"{v / 2**20:.0f} MB memory" if k == "memory" else f"{v:g} {k}"

    return ", ".join(one(k, v) for k, v in sorted(resources.items())
                     if k in ("CPU", "GPU", "memory") or not k.startswith(("node:", "object_store")))


def _fits(node: dict[str, float], need: dict[str, float]) -> int:
    """How many actors needing ``need`` fit into ``node``'s resources."""
    counts = [int(node.get(k, 0.0) / v + 1e-9) for k, v in need.items() if v > 0]
    return min(counts) if counts else 1 << 30


def check_capacity(ray: Any, config: PoolConfig) -> None:
    """Fail at once, saying why, when the cluster's alive nodes cannot hold ``config.workers`` actors.

    Raises:
        PlacementError: names the resources one actor asks for, what each node has, and what to change.
    """
    need = config.demand()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    room = sum(_fits(n.get("Resources", {}), need) for n in nodes)
    if room >= config.workers:
        return
    have = "; ".join(f"node {n['NodeID'][:8]}: {_show(n.get('Resources', {}))}" for n in nodes) or "no alive node"
    raise PlacementError(
        f"The Ray cluster can hold {room} env actor(s) and the pool needs {config.workers}: each asks for "
        f"{_show(need)} ({have}). Lower --workers or PoolConfig.cpus_per_env (now {config.cpus_per_env:g}), or "
        "add nodes (`ray start --address HEAD:PORT --num-cpus N`).")


# -- the actor --------------------------------------------------------------------------------------
class EnvActor:
    """One actor process: envs kept across episodes. Wrapped by ``ray.remote`` in :class:`RayEnvPool`.

    Two ways to drive it: whole episodes under a harness (:meth:`episode`, what ``frog-gym bench --ray``
    uses; one at a time), or step by step (:meth:`make`, :meth:`reset`, :meth:`step`, each naming its env by a
    key, what a learner's rollout uses through :class:`RemoteEnv`). It is an asyncio actor: the step-by-step
    calls of several envs run at once on its event loop, through the env's async API."""

    def __init__(self) -> None:
        self.envs: dict[str, Any] = {}
        """key -> the env a :class:`RemoteEnv` steps."""
        self.specs: dict[str, Any] = {}

    def where(self) -> dict[str, Any]:
        """The node and process this actor runs on."""
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    async def warm(self, repos: Sequence[str]) -> dict[str, Any]:
        """Prepare the repositories' snapshots and venvs on this node (a no-op where they are cached)."""
        from frog_gym.env.core import in_thread
        from frog_gym.catalog.snapshot import prepare
        from frog_gym.catalog.spec import load_repo

        t = time.monotonic()
        for repo in repos:
            await in_thread(prepare, load_repo(repo))
        return {**self.where(), "warm_s": time.monotonic() - t}

    async def episode(self, spec_toml: str, agent: str, opts: dict[str, Any], label: str, task_id: str,
                      sample: int) -> dict[str, Any]:
        """Run one episode exactly as a local bench worker does (on a thread: the harness's agents are sync);
        returns its result and its trajectory."""
        from frog_gym.bench.worker import _episode, trajectory_path
        from frog_gym.env.core import in_thread

        def run() -> dict[str, Any]:
            with tempfile.TemporaryDirectory(prefix="frog-gym-ray-") as out:
                d = _episode(spec_toml, agent, opts, label, task_id, sample, out)
                traj = trajectory_path(Path(out), task_id, sample)
                text = traj.read_text(encoding="utf-8") if traj.exists() else ""
            return {"result": d, "trajectory": text}

        return {**await in_thread(run), **self.where()}

    async def make(self, key: str, env_id: str, kwargs: dict[str, Any]) -> None:
        """Hold an env of ``env_id`` under ``key`` (kept if it is the one already held there)."""
        import gymnasium as gym

        import frog_gym  # noqa: F401  (registers the envs)
        from frog_gym.env.core import in_thread

        spec = (env_id, sorted(kwargs.items()))
        if key in self.envs and self.specs[key] == spec:
            return
        if key in self.envs:
            await self.envs.pop(key).aclose()
        # The env itself, not gymnasium's wrappers: its own step budget ends (and grades) an episode.
        self.envs[key] = (await in_thread(gym.make, env_id, **kwargs)).unwrapped
        self.specs[key] = spec

    async def reset(self, key: str, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        return await self.envs[key].areset(seed=seed, options=options)

    async def step(self, key: str, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return await self.envs[key].astep(action)

    async def diff(self, key: str) -> str:
        from frog_gym.env.core import in_thread

        return await in_thread(self.envs[key].diff)

    def load(self) -> dict[str, int]:
        """What this actor holds now: its envs, and its process's Python threads (bounded by the env's shared
        pools, whatever the number of envs)."""
        return {"envs": len(self.envs), "threads": threading.active_count()}

    async def close(self, key: str | None = None) -> None:
        """Close the env under ``key``; with no key, every env of the actor (the bench's too)."""
        from frog_gym.bench import worker
        from frog_gym.env.core import in_thread

        for k in [key] if key is not None else list(self.envs):
            env = self.envs.pop(k, None)
            self.specs.pop(k, None)
            if env is not None:
                await env.aclose()
        if key is None:
            await in_thread(worker.release)


# -- the pool ---------------------------------------------------------------------------------------
class RayEnvPool:
    """``workers`` env actors plus ``spares`` warm ones on the connected Ray cluster (see the module doc).

    Args:
        config: sizes, placement and retries.
        repos: repositories every actor prepares when it starts (the suite's), so that the first episode
            on a node does not pay for venv builds inside its wall-time budget.
    """

    def __init__(self, config: PoolConfig | None = None, repos: Sequence[str] = ()):
        ray = require_ray()
        if not ray.is_initialized():
            raise RayError("Ray is not connected; call frog_gym.bench.distributed.connect() first.")
        self.ray, self.config, self.repos = ray, config or PoolConfig(), sorted(set(repos))
        check_capacity(ray, self.config)
        # An asyncio actor: its envs' calls run at once on its loop (room for every episode it may hold, plus
        # where(), load() and close() beside them).
        opts: dict[str, Any] = {"num_cpus": self.config.cpus_per_env, "max_restarts": 0,
                                "max_concurrency": self.config.episodes_per_actor + 4}
        if self.config.memory_mb_per_env:
            opts["memory"] = self.config.memory_mb_per_env * 2**20
        if self.config.resources:
            opts["resources"] = dict(self.config.resources)
        if self.config.env_vars:
            opts["runtime_env"] = {"env_vars": {str(k): str(v) for k, v in self.config.env_vars.items()}}
        self._cls = ray.remote(EnvActor).options(**opts)
        self._died = _died_errors(ray)
        self._lock = threading.Lock()
        self.idle: list[Any] = []
        """Started actors not running an episode (the first ones serve, the rest are spares)."""
        self.starting: dict[Any, tuple[Any, float]] = {}
        """warm() reference -> (actor, when it was asked), at most ``max_starting`` at a time."""
        self.placed: dict[Any, Any] = {}
        """warm() reference -> where() reference of the same actor (ready once Ray has placed it)."""
        self.waiting = 0
        """Actors asked for but not yet started (held back by ``max_starting``)."""
        self.lost = 0
        """Actors that died (with their node or process) since the pool started."""
        self.running: dict[Any, tuple[Any, tuple[str, int, int]]] = {}
        """episode() reference -> (actor, (task_id, sample, tries)) of the episodes in flight."""
        self.leased: dict[Any, int] = {}
        """Actors leased to :class:`RemoteEnv` episodes -> how many each holds (up to ``episodes_per_actor``)."""
        self.placements: dict[str, str] = {}
        """``task_id/sample`` -> node id of the actor whose result was kept."""
        self._want(self.config.workers + self.config.spares)
        self._wait_started(self.config.workers)

    # -- actor life cycle --
    def _want(self, n: int) -> None:
        self.waiting += n
        self._start_more()

    def _start_more(self) -> None:
        while self.waiting and len(self.starting) < self.config.max_starting:
            actor = self._cls.remote()
            placed = actor.where.remote()
            ref = actor.warm.remote(self.repos)
            self.starting[ref], self.placed[ref] = (actor, time.monotonic()), placed
            self.waiting -= 1

    def _started(self, ref: Any) -> None:
        actor, _ = self.starting.pop(ref)
        self.placed.pop(ref, None)
        try:
            self.ray.get(ref)
            self.idle.append(actor)
        except self._died:
            self.lost += 1
            self.waiting += 1  # its node went away while it started: ask again
        self._start_more()

    def _check_starts(self, needed: int) -> None:
        """Raise if the wait for ``needed`` idle actors cannot end: an actor has found no node with room
        for ``place_timeout_s`` while too few others are placed, or a placed one takes too long to start."""
        now = time.monotonic()
        for ref in self.starting:
            placed = self.placed.get(ref)
            if placed is not None and self.ray.wait([placed], timeout=0)[0]:
                self.placed[ref] = None
        enough = len(self.idle) + sum(self.placed.get(ref) is None for ref in self.starting) >= needed
        for ref, (_, asked) in self.starting.items():
            if self.placed.get(ref) is not None and not enough:
                if now - asked > self.config.place_timeout_s:
                    raise PlacementError(
                        f"An env actor has waited {now - asked:.0f} s for a node with room for it: it asks for "
                        f"{_show(self.config.demand())}; free now: {_show({'CPU': 0.0, **self.ray.available_resources()})} "
                        f"of {_show(self.ray.cluster_resources())} in the cluster. Lower PoolConfig.cpus_per_env (now {self.config.cpus_per_env:g}) "
                        "or the number of envs (--workers, --spares), or add nodes.")
            elif self.placed.get(ref) is None and now - asked > self.config.start_timeout_s:
                raise FrogGymError(
                    f"An env actor was placed but has not built its env in {now - asked:.0f} s (preparing the "
                    "repositories' venvs on its node); see its log under Ray's session directory, or raise "
                    "PoolConfig.start_timeout_s.")

    def _wait_started(self, n: int) -> None:
        while len(self.idle) < n and self.starting:
            ready, _ = self.ray.wait(list(self.starting), num_returns=1, timeout=1)
            for ref in ready:
                self._started(ref)
            self._check_starts(n)

    def _lost(self, actor: Any) -> None:
        """An actor died: forget it and start a replacement (a spare serves meanwhile)."""
        self.lost += 1
        try:
            self.ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 (it is gone already)
            pass
        self._want(1)

    def lease(self) -> Any:
        """A started actor with room for one more episode: an idle one while fewer than ``workers`` are leased,
        else the least loaded leased one below ``episodes_per_actor``, else an idle one (a spare, replaced) or
        one that starts. Give it back with :meth:`release`."""
        with self._lock:
            room = [(n, i) for i, n in enumerate(self.leased.values()) if n < self.config.episodes_per_actor]
            if room and (len(self.leased) >= self.config.workers or not self.idle):
                actor = list(self.leased)[min(room)[1]]
            else:
                if not self.idle and not self.starting and not self.waiting:
                    self._want(1)
                while not self.idle:
                    self._wait_started(1)
                actor = self.idle.pop(0)
                if len(self.idle) + len(self.starting) + self.waiting < self.config.spares:
                    self._want(1)  # keep the spares warm
            self.leased[actor] = self.leased.get(actor, 0) + 1
            return actor

    def release(self, actor: Any) -> None:
        """One episode on ``actor`` ended; an actor that holds none is idle again."""
        with self._lock:
            n = self.leased.pop(actor, 1) - 1
            if n > 0:
                self.leased[actor] = n
            else:
                self.idle.append(actor)

    def replace(self, actor: Any) -> Any:
        """``actor`` died: a fresh one in its place (a warm spare when there is one). Each episode it held
        asks; the first one's call forgets it and starts a replacement."""
        with self._lock:
            if self.leased.pop(actor, None) is not None:
                self._lost(actor)
        return self.lease()

    # -- whole episodes --
    def run_episodes(self, spec: Any, agent: str, opts: dict[str, Any], label: str,
                     episodes: Sequence[tuple[str, int]]) -> Iterator[dict[str, Any]]:
        """Run ``episodes`` (``(task_id, sample)``) under ``spec`` on ``workers`` actors at a time; yields
        ``{"result": EpisodeResult dict, "trajectory": JSONL text, "node_id", "pid"}`` as each finishes.

        An episode whose actor died is rerun from its start on another actor; past ``max_retries`` it is
        yielded as an infrastructure failure (``result["infra_failure"]`` says so)."""
        spec_toml = spec.to_toml()
        queue = collections.deque((t, s, 0) for t, s in episodes)
        running = self.running
        while queue or running:
            with self._lock:
                while queue and self.idle and len(running) < self.config.workers:
                    actor = self.idle.pop(0)
                    job = queue.popleft()
                    running[actor.episode.remote(spec_toml, agent, opts, label, job[0], job[1])] = (actor, job)
                if not running:
                    if not self.starting and not self.waiting:
                        self._want(1)
                    self._wait_started(1)
                    continue
                refs = list(running) + list(self.starting)
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=5)
            finished = []
            with self._lock:  # (a start that waits long is no error while other actors serve)
                for ref in ready:
                    if ref in self.starting:
                        self._started(ref)
                        continue
                    actor, (task_id, sample, tries) = running.pop(ref)
                    try:
                        out = self.ray.get(ref)
                    except self._died as e:
                        self._lost(actor)
                        if tries < self.config.max_retries:
                            queue.appendleft((task_id, sample, tries + 1))
                        else:
                            finished.append(self._gave_up(spec, label, opts, task_id, sample, tries, e))
                        continue
                    self.idle.append(actor)
                    out["result"]["ray_tries"] = tries + 1
                    self.placements[f"{task_id}/{sample}"] = out["node_id"]
                    finished.append(out)
            yield from finished  # outside the lock: the caller may take its time writing them

    @staticmethod
    def _gave_up(spec: Any, label: str, opts: dict[str, Any], task_id: str, sample: int, tries: int,
                 e: BaseException) -> dict[str, Any]:
        from frog_gym.bench.harness import EpisodeResult
        from frog_gym.catalog.task import load_task

        r = EpisodeResult(task_id=task_id, sample=sample, seed=spec.seed + sample, agent=label,
                          fingerprint=spec.fingerprint(), repo=load_task(task_id).repo, agent_opts=dict(opts),
                          harness=spec.summary(), finished_at=time.time(),
                          infra_failure=f"ray: the episode's actor died {tries + 1} times ({_first(e)})")
        return {"result": r.to_dict(), "trajectory": "", "node_id": None, "pid": None}

    def close(self) -> None:
        """Close every actor's env (removing its workspace) and end the actors."""
        actors = (list(self.idle) + [a for a, _ in self.starting.values()] + [a for a, _ in self.running.values()]
                  + list(self.leased))
        refs = [a.close.remote() for a in actors]
        try:
            self.ray.wait(refs, num_returns=len(refs), timeout=30)
        except Exception:  # noqa: BLE001
            pass
        for a in actors:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        self.idle, self.starting, self.placed, self.running, self.waiting, self.leased = [], {}, {}, {}, 0, {}


_POOLS: dict[str, RayEnvPool] = {}


def make_env(env_id: str, ray_address: str | None = None, **kwargs: Any) -> Any:
    """``gymnasium.make(env_id, **kwargs)``, or with ``ray_address`` set (``"local"`` for a Ray on this
    machine, ``HOST:PORT`` for a cluster) a :class:`RemoteEnv` on an actor of this process's pool there
    (one pool per address, started on first use with a spare). What learners call for ``--ray``."""
    if ray_address is None:
        import gymnasium as gym

        import frog_gym  # noqa: F401  (registers the envs)

        return gym.make(env_id, **kwargs)
    if ray_address not in _POOLS:
        connect(ray_address)
        _POOLS[ray_address] = RayEnvPool(PoolConfig(workers=1, spares=1))
    return RemoteEnv(_POOLS[ray_address], env_id, **kwargs)


def close_pools() -> None:
    """Close the pools :func:`make_env` started (their actors' envs and workspaces)."""
    while _POOLS:
        _POOLS.popitem()[1].close()


# -- one env, step by step --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Blocking:
    """A :class:`RemoteEnv` operation waits for ``fn()`` (the pool's blocking lease of a replacement actor)."""

    fn: Any


class RemoteEnv:
    """A Gymnasium-style env whose episodes run in a pool actor, for learners that step envs themselves.

    ``reset``/``step``/``close`` behave as on the local env, and so do ``areset``/``astep``/``aclose``, awaited
    (the driver's loop awaits the actor's answer; no thread waits). Several RemoteEnvs may share an actor
    (``PoolConfig.episodes_per_actor``), each with its own env there. Constructing one leases an actor, which
    may wait for one to start:
    from a running loop, ``await frog_gym.env.core.in_thread(RemoteEnv, pool, env_id)``.
    If the actor dies mid-episode, a replacement replays the episode so far (the same seed and task, then the
    same actions: the env is deterministic in them) and the step is retried, so the learner never sees the
    failure as a reward.
    """

    def __init__(self, pool: RayEnvPool, env_id: str, **kwargs: Any):
        self.pool, self.env_id, self.kwargs = pool, env_id, kwargs
        self.key = uuid.uuid4().hex
        """This env's name in its actor."""
        self._reset_args: tuple[Any, Any] | None = None
        self._actions: list[Any] = []
        self.retries = 0
        """Times an actor died under this env and was replaced."""
        self.actor = pool.lease()
        self._run(self._call_g("make", env_id, kwargs))

    # Each operation is written once, as a generator that yields what it waits for (an actor call's reference,
    # or a blocking pool call), driven by ray.get (sync) or by awaiting (async).
    def _run(self, op: Generator[Any, Any, _T]) -> _T:
        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                item = op.throw(error) if error is not None else op.send(answer)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            try:
                answer = item.fn() if isinstance(item, _Blocking) else self.pool.ray.get(item)
            except Exception as e:  # noqa: BLE001 (handed to the operation, raised where it waited)
                error = e

    async def _arun(self, op: Generator[Any, Any, _T]) -> _T:
        from frog_gym.env.core import in_thread

        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                item = op.throw(error) if error is not None else op.send(answer)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            try:
                answer = await (in_thread(item.fn) if isinstance(item, _Blocking) else item)
            except Exception as e:  # noqa: BLE001 (as in _run)
                error = e

    def _call_g(self, name: str, *args: Any) -> Generator[Any, Any, Any]:
        for attempt in range(self.pool.config.max_retries + 1):
            try:
                return (yield getattr(self.actor, name).remote(self.key, *args))
            except self.pool._died:
                if attempt == self.pool.config.max_retries:
                    raise
                self.retries += 1
                yield from self._replace_g()
                if name in ("step", "diff") and self._reset_args is not None:
                    yield self.actor.reset.remote(self.key, *self._reset_args)
                    for a in self._actions[:-1] if name == "step" else self._actions:
                        yield self.actor.step.remote(self.key, a)
        raise AssertionError("unreachable")

    def _replace_g(self) -> Generator[Any, Any, None]:
        dead = self.actor
        self.actor = yield _Blocking(lambda: self.pool.replace(dead))
        yield self.actor.make.remote(self.key, self.env_id, self.kwargs)

    def _step_g(self, action: Any) -> Generator[Any, Any, tuple[Any, float, bool, bool, dict[str, Any]]]:
        self._actions.append(action)
        try:
            return (yield from self._call_g("step", action))
        except self.pool._died as e:
            why = f"ray: the env's actor died {self.pool.config.max_retries + 1} times ({_first(e)})"
            yield from self._replace_g()
            self._reset_args, self._actions = None, []
            return (f"Infrastructure failure (not scored): {why}", 0.0, False, True,
                    {"infra_failure": why, "steps": None})

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self._reset_args, self._actions = (seed, options), []
        return self._run(self._call_g("reset", seed, options))

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self._reset_args, self._actions = (seed, options), []
        return await self._arun(self._call_g("reset", seed, options))

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The env's step; if actors keep dying under it (past ``max_retries`` replays), the episode ends
        truncated with ``info["infra_failure"]`` (never scored; the 0.0 reward is Gymnasium's placeholder)
        and a fresh actor waits for the next ``reset``."""
        return self._run(self._step_g(action))

    async def astep(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:meth:`step`, awaited."""
        return await self._arun(self._step_g(action))

    def diff(self) -> str:
        return self._run(self._call_g("diff"))

    def close(self) -> None:
        if self.actor is not None:
            try:
                self.pool.ray.get(self.actor.close.remote(self.key))
                self.pool.release(self.actor)
            except self.pool._died:
                pass
            self.actor = None

    async def aclose(self) -> None:
        if self.actor is not None:
            try:
                await self.actor.close.remote(self.key)
                self.pool.release(self.actor)
            except self.pool._died:
                pass
            self.actor = None
