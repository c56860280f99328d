"""One benchmark episode in a worker process: the worker's env and agent, kept between its episodes.

:func:`frog_gym.bench.runner.bench` runs :func:`_episode` in ``spawn``ed worker processes (or in its own
process with one worker); a Ray actor (:mod:`frog_gym.bench.distributed`) runs the same function, so an
episode's result does not depend on where it ran. Each episode's trajectory goes to :func:`trajectory_path`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from frog_gym.bench.harness import HarnessSpec, make_env, run_episode


def trajectory_path(out: Path, task_id: str, sample: int) -> Path:
    return out / "trajectories" / f"{task_id}__s{sample}.jsonl"



_ENV: Any = None
_ENV_KEY: str | None = None
_AGENT: Any = None
_AGENT_KEY: str | None = None


def _episode(spec_toml: str, agent: str, opts: dict[str, Any], label: str, task_id: str, sample: int,
             out: str) -> dict[str, Any]:
    """Run one episode in a worker; keeps the worker's env and agent (which may hold a loaded model) for its
    next episode: ``reset`` starts an agent's episode afresh."""
    global _ENV, _ENV_KEY, _AGENT, _AGENT_KEY
    from frog_gym.agents.registry import make_agent

    spec = HarnessSpec.from_toml(spec_toml)
    if _ENV is None or _ENV_KEY != spec.fingerprint():
        if _ENV is not None:
            _ENV.close()
        _ENV, _ENV_KEY = make_env(spec), spec.fingerprint()
    t = time.monotonic()
    key = json.dumps([agent, opts], sort_keys=True, default=str)
    if _AGENT is None or _AGENT_KEY != key:
        _AGENT, _AGENT_KEY = make_agent(agent, opts), key
    setup_s = time.monotonic() - t
    result = run_episode(spec, _AGENT, label, task_id, sample, env=_ENV, agent_opts=opts,
                         trajectory=trajectory_path(Path(out), task_id, sample))
    d = result.to_dict()
    d["agent_setup_s"] = round(setup_s, 4)
    return d


def _init_worker(parent: int) -> None:
    # Ctrl-C goes to the whole process group; the parent decides. On its SIGTERM a worker closes its env
    # (killing the sandbox and removing the workspace) and exits; the kernel sends it SIGTERM when the parent
    # dies, SIGKILL included. A worker that ends normally closes its env too.
    import signal
    from multiprocessing.util import Finalize

    from frog_gym.sandbox.reaper import die_with_parent

    def close_env() -> None:
        if _ENV is not None:
            _ENV.close()

    def stop(signum: int, frame: Any) -> None:
        close_env()
        os._exit(1)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, stop)
    die_with_parent(parent)
    Finalize(None, close_env, exitpriority=10)


def release() -> None:
    """Close this process's env and drop its agent: a run that used the driver as its one worker ends so."""
    global _ENV, _AGENT
    if _ENV is not None:
        _ENV.close()
        _ENV = None
    _AGENT = None
