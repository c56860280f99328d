"""``frog-gym bench``: run an agent over a suite under a fixed harness, in parallel, resumably.

A run directory holds::

    harness.toml          the HarnessSpec (its fingerprint is in every result)
    run.json              the agent's name and options
    results.jsonl         one EpisodeResult per finished episode, appended as each finishes
    trajectories/         one JSONL trajectory per episode: <task_id>__s<sample>.jsonl

Rerunning the same command skips every episode already in ``results.jsonl`` (an episode that ended in
an infrastructure failure is retried), so an interrupted run (Ctrl-C or SIGTERM) loses only the episodes
in flight. A run
directory belongs to one harness and one agent configuration: reusing it with another is refused.

Episodes run in worker processes (``spawn``), each keeping one env for its episodes; with one worker
they run in this process.

Example:
    >>> from frog_gym.bench.harness import HarnessSpec
    >>> spec = HarnessSpec.for_suite("inflection__handwritten-0002")
    >>> summary = bench(spec, "noop", {}, "/tmp/frog-bench-doc", workers=1, progress=False)  # doctest: +SKIP
    >>> summary.finished  # doctest: +SKIP
    1
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frog_gym.errors import FrogGymError
from frog_gym.bench import worker
from frog_gym.bench.harness import EpisodeResult, HarnessSpec

RESULTS = "results.jsonl"


def load_results(path: str | Path) -> list[EpisodeResult]:
    """Results of a run directory or a results file; a later record of an episode replaces an earlier one.
    A torn last line (the process died while writing it) is ignored."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS
    latest: dict[tuple[str, str, str, int], EpisodeResult] = {}
    if not p.exists():
        return []
    for line in p.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            r = EpisodeResult.from_dict(json.loads(line))
        except (ValueError, TypeError):
            continue
        latest[(r.fingerprint, r.agent, r.task_id, r.sample)] = r
    return list(latest.values())


@dataclass
class BenchSummary:
    """What a bench call did."""

    out: Path
    fingerprint: str
    total: int
    skipped: int
    finished: int = 0
    resolved: int = 0
    infra_failures: int = 0
    interrupted: bool = False
    wall_s: float = 0.0
    results: list[EpisodeResult] = field(default_factory=list)


def _check_run_dir(out: Path, spec: HarnessSpec, agent: str, opts: dict[str, Any], label: str) -> None:
    run = {"agent": agent, "agent_opts": opts, "label": label, "fingerprint": spec.fingerprint()}
    harness_file, run_file = out / "harness.toml", out / "run.json"
    if harness_file.exists():
        old = HarnessSpec.load(harness_file)
        if old.fingerprint() != spec.fingerprint():
            raise FrogGymError(
                f"{out} holds a run under harness {old.fingerprint()} (suite {old.suite!r}), but this run's "
                f"harness is {spec.fingerprint()} (suite {spec.suite!r}). Results under different harnesses "
                f"are not comparable: use another --out, or rerun with --harness {harness_file} to resume.")
    if run_file.exists():
        old_run = json.loads(run_file.read_text(encoding="utf-8"))
        if (old_run.get("agent"), old_run.get("agent_opts")) != (agent, opts):
            raise FrogGymError(
                f"{out} holds a run of agent {old_run.get('agent')!r} with options {old_run.get('agent_opts')}, "
                f"not {agent!r} with {opts}. Use another --out for a different agent configuration.")
    out.mkdir(parents=True, exist_ok=True)
    spec.save(harness_file)
    run_file.write_text(json.dumps(run, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# -- driver side ------------------------------------------------------------------------------------
def bench(spec: HarnessSpec, agent: str, opts: dict[str, Any], out: str | Path, *, workers: int = 1,
          label: str | None = None, progress: bool = True, limit: int | None = None,
          ray: str | None = None, spares: int = 1, cpus_per_env: float | None = None) -> BenchSummary:
    """Run ``agent`` (a registry name or ``python:module:factory``) on every episode of ``spec``.

    Args:
        spec: the harness; its tasks are checked against the registry first.
        agent: the agent's registry name.
        opts: the agent's options (strings as from ``--agent-opt``, or typed values).
        out: the run directory (see the module docstring); reused to resume.
        workers: parallel episodes (processes).
        label: the name results carry (default ``agent``); the leaderboard shows it.
        progress: draw a progress bar.
        limit: run at most this many of the pending episodes (for smoke checks and benchmarks).
        ray: run the episodes on Ray actors instead of local processes (:mod:`frog_gym.bench.distributed`):
            ``"local"`` (or ``""``) starts a Ray on this machine, ``"HOST:PORT"`` or ``"auto"`` joins a cluster.
        spares: with ``ray``, warm actors kept to replace those that die.
        cpus_per_env: with ``ray``, CPUs each actor reserves (default :attr:`PoolConfig.cpus_per_env`).

    Returns:
        What ran; ``interrupted`` is set after Ctrl-C, with every finished episode kept on disk.
    """
    from frog_gym.agents.registry import check_agent

    if workers < 1:
        raise FrogGymError(f"--workers {workers} must be at least 1.")
    spec.check_tasks()
    label = label or agent
    check_agent(agent, opts)  # fail fast on an unknown agent or a bad option, before any episode
    out = Path(out)
    made = not out.exists()
    _check_run_dir(out, spec, agent, opts, label)
    fp = spec.fingerprint()
    done = {(r.task_id, r.sample) for r in load_results(out)
            if r.fingerprint == fp and r.agent == label and not r.infra_failure}
    pending = [e for e in spec.episodes() if e not in done]
    if limit is not None:
        pending = pending[:limit]
    summary = BenchSummary(out, fp, total=len(spec.episodes()), skipped=len(done))
    started = time.monotonic()
    spec_toml = spec.to_toml()
    bar = _progress(progress, len(pending), f"{label} on {spec.suite}")
    results_file = (out / RESULTS).open("a", encoding="utf-8")

    def record(d: dict[str, Any]) -> None:
        results_file.write(json.dumps(d, ensure_ascii=False) + "\n")
        results_file.flush()
        os.fsync(results_file.fileno())
        r = EpisodeResult.from_dict(d)
        summary.results.append(r)
        summary.finished += 1
        summary.resolved += r.resolved
        summary.infra_failures += bool(r.infra_failure)
        bar.update(summary.resolved, summary.finished, summary.infra_failures)

    previous = _sigterm_interrupts()
    ray_pool = None
    try:
        if ray is not None:
            from frog_gym.bench.distributed import PoolConfig, RayEnvPool, connect
            from frog_gym.catalog.task import load_task

            pool_config = PoolConfig(workers=workers, spares=spares, **({} if cpus_per_env is None else
                                                                        {"cpus_per_env": cpus_per_env}))
            connect(ray, num_cpus=workers + spares)
            ray_pool = RayEnvPool(pool_config,
                                  repos=[load_task(t).repo for t in {t for t, _ in pending}])
            for d in ray_pool.run_episodes(spec, agent, opts, label, pending):
                r = d["result"]
                if d["trajectory"]:
                    path = worker.trajectory_path(out, r["task_id"], r["sample"])
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(d["trajectory"], encoding="utf-8")
                record(r)
        elif workers == 1:
            for task_id, sample in pending:
                record(worker._episode(spec_toml, agent, opts, label, task_id, sample, str(out)))
        else:
            ctx = multiprocessing.get_context("spawn")
            pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=worker._init_worker,
                                         initargs=(os.getpid(),))
            try:
                futures = [pool.submit(worker._episode, spec_toml, agent, opts, label, t, s, str(out)) for t, s in pending]
                for fut in cf.as_completed(futures):
                    record(fut.result())
            except BaseException:
                procs = list((getattr(pool, "_processes", None) or {}).values())
                for proc in procs:
                    proc.terminate()  # episodes in flight are lost; each worker closes its env and exits
                pool.shutdown(wait=False, cancel_futures=True)
                for proc in procs:
                    proc.join(timeout=30)
                raise
            pool.shutdown(wait=True)
    except KeyboardInterrupt:
        summary.interrupted = True
    except BaseException:
        if made and summary.finished == 0:  # a start that failed leaves no run folder behind
            results_file.close()
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        if ray_pool is not None:
            ray_pool.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        results_file.close()
        bar.close()
        worker.release()
        summary.wall_s = time.monotonic() - started
    return summary


def _sigterm_interrupts() -> Any:
    """Make SIGTERM (``kill``) stop a run the way Ctrl-C does, keeping what finished; returns the old handler."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, interrupt)


class _progress:
    """A rich progress bar (a no-op when ``enabled`` is false or output is not a terminal-like stream)."""

    def __init__(self, enabled: bool, total: int, title: str):
        self._p = None
        if not enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("resolved {task.fields[resolved]}  infra {task.fields[infra]}"),
                           TimeElapsedColumn())
        self._task = self._p.add_task(title, total=total, resolved=0, infra=0)
        self._p.start()

    def update(self, resolved: int, finished: int, infra: int) -> None:
        if self._p is not None:
            self._p.update(self._task, completed=finished, resolved=resolved, infra=infra)

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()
