"""Online task synthesis: the mutation generators as the curriculum's :class:`~frog_gym.curriculum.TaskSynthesizer`.

When the frontier thins out, :class:`~frog_gym.curriculum.CurriculumState` asks for tasks near a target
(see :meth:`~frog_gym.curriculum.CurriculumState.synthesis_target`):

* ``n_sites == 1`` (most tasks hopeless: *easier*): a fresh single-site mutation of a covered line,
  taken in the same seeded, family-balanced order as ``frog-gym generate``, skipping every site a task
  already uses;
* ``n_sites >= 2`` (most tasks mastered: *harder*): 2 or 3 already validated single bugs of one package
  (registered tasks, or earlier online ones), in different functions, combined into one task;

each with the statement level asked for. :meth:`MutationSynthesizer.validate` (run by the curriculum on
its background threads) validates a proposal exactly as the offline generator does (the covering tests,
three runs, a gold fix that passes, a non-empty PASS_TO_PASS; a combined bug must also break every test
its parts break) in a process of its own, and writes an accepted task to ``<out_dir>/<repo>.jsonl``. That
folder is added to ``FROG_GYM_TASK_DIRS``, so ``FrogSWEEnv.reset(options={"task_id": ...})`` loads the
task at once, here and in env processes started later. The curriculum then puts it on probation and
admits it after a first group with mixed results.

Example:
    >>> from frog_gym.curriculum import CurriculumState
    >>> synth = MutationSynthesizer(["inflection"], seed=0)  # doctest: +SKIP
    >>> state = CurriculumState(pool, synthesizer=synth)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from frog_gym.generators import coverage_map, statements
from frog_gym.generators.synthesis import Candidate, GenerateConfig, Site, _sample_tests, _sha8, all_sites, combinable, combination_tests, covering_tests, make_task, order_sites, validate_candidate
from frog_gym.generators.taskfiles import append_task
from frog_gym.generators.validate import baseline

from frog_gym import paths
from frog_gym.curriculum import PendingTask
from frog_gym.catalog.snapshot import PreparedRepo, prepare
from frog_gym.catalog.live import LIVE_MARK, MIRROR_MARK
from frog_gym.catalog.spec import load_repo
from frog_gym.catalog.task import add_task_dir, load_task, refresh_tasks, task_index


@dataclass
class _RepoState:
    """What proposing in one repository needs, made on first use."""

    repo: PreparedRepo
    cmap: coverage_map.CoverageMap
    passing: set[str]
    sites: list[Site]
    used_sites: set[str]
    singles: list[dict[str, Any]] = field(default_factory=list)  # validated single-bug task records
    combined: set[str] = field(default_factory=set)


def _task_records(repo: str) -> Iterable[dict[str, Any]]:
    for iid in task_index():
        if iid.startswith(f"{repo}__") and LIVE_MARK not in iid and MIRROR_MARK not in iid:
            yield json.loads(load_task(iid).to_json())


class MutationSynthesizer:
    """Makes new validated tasks in the given repositories when a curriculum asks (see the module docstring).

    Args:
        repos: Registered repository names to synthesize in, taken in turn (``frog-gym registry list``).
        out_dir: Where accepted tasks are written (default ``$FROG_GYM_HOME/online/seed<seed>``).
        seed: Seeds the order of candidate sites and of combinations.
        workers: Processes validating at once (each holds one warm workspace per repository).
        config: Validation settings (default: the offline generator's, with this seed).
        statement_writer: ``module:function`` of your own statement writer (default: the built-in one).
    """

    def __init__(
        self,
        repos: Sequence[str],
        out_dir: str | os.PathLike[str] | None = None,
        *,
        seed: int = 0,
        workers: int = 1,
        config: GenerateConfig | None = None,
        statement_writer: str | None = None,
    ):
        if not repos:
            raise ValueError("MutationSynthesizer needs at least one repository name, e.g. ['toolz'].")
        self.specs = {name: load_repo(name) for name in dict.fromkeys(repos)}
        self.out_dir = Path(out_dir) if out_dir is not None else paths.home() / "online" / f"seed{seed}"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        base = config or GenerateConfig(seed=seed)
        self.config = replace(base, seed=seed, workers=workers, tasks_dir=str(self.out_dir),
                              statement_writer=statement_writer or base.statement_writer)
        self._writer: Callable[[dict], str] | None = statements.load_writer(self.config.statement_writer)
        self._rng = random.Random(f"online:{seed}")
        self._states: dict[str, _RepoState] = {}
        self._proposed: dict[str, tuple[str, Candidate, str, list[dict[str, Any]]]] = {}
        self._turn = 0
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self.rejected: dict[str, str] = {}
        """Why each proposal that failed validation was refused, by task id."""
        add_task_dir(self.out_dir)

    # ---- proposing --------------------------------------------------------------------------------

    def _state(self, name: str) -> _RepoState:
        if name not in self._states:
            repo = prepare(self.specs[name])
            cmap, _ = coverage_map.build(repo)
            passing = cmap.passing() & {t for t, s in baseline(repo).items() if s in ("PASSED", "XFAIL")}
            records = list(_task_records(name))
            used = {
                f"{s['path']}:{s['start']}:{s['end']}:{s['replacement']}"
                for d in records
                for s in d.get("provenance", {}).get("sites", [])
            }
            rng = random.Random(f"{self.config.seed}:online:{name}:{repo.spec.source.key}")
            sites = order_sites(all_sites(repo, cmap, self.config.families), rng)
            singles = [
                d for d in records
                if len(d.get("provenance", {}).get("sites", [])) == 1 and not d.get("features", {}).get("crash")
            ]
            combined = {",".join(sorted(d["provenance"].get("parts", []))) for d in records}
            self._states[name] = _RepoState(repo, cmap, passing, sites, used, singles, combined)
        return self._states[name]

    def _single(self, name: str, state: _RepoState) -> Candidate | None:
        while state.sites:
            s = state.sites.pop(0)
            if s.key in state.used_sites:
                continue
            tests = _sample_tests(covering_tests(state.cmap, s, state.repo), state.cmap, state.passing,
                                  self.config, s.key)
            if not tests:
                continue
            state.used_sites.add(s.key)
            return Candidate(f"{name}__{s.family}-{_sha8('online', self.config.seed, s.key)}", [s], tests)
        return None

    def _combination(self, name: str, state: _RepoState, k: int) -> tuple[Candidate, list[dict]] | None:
        by_pkg: dict[str, list[dict[str, Any]]] = {}
        for d in state.singles:
            by_pkg.setdefault(os.path.dirname(d["provenance"]["sites"][0]["path"]), []).append(d)
        groups = [g for _, g in sorted(by_pkg.items()) if len(g) >= 2]
        for _ in range(50):
            if not groups:
                return None
            group = self._rng.choice(groups)
            picked = self._rng.sample(group, min(k, len(group)))
            sites = [Site(**d["provenance"]["sites"][0]) for d in picked]
            parts = ",".join(sorted(d["instance_id"] for d in picked))
            if parts in state.combined or not combinable(sites):
                continue
            state.combined.add(parts)
            tests = combination_tests(state.repo, state.cmap, state.passing, sites, picked, self.config, parts)
            iid = f"{name}__combo{len(sites)}-{_sha8('online', self.config.seed, *sorted(s.key for s in sites))}"
            return Candidate(iid, sites, tests), picked
        return None

    def propose(self, n: int, target: dict[str, Any]) -> list[PendingTask]:
        """Up to ``n`` unvalidated tasks near ``target`` (``n_sites``, ``statement_level``), the
        repositories taken in turn; fewer when the repositories run out of candidates."""
        k = max(1, min(3, int(target.get("n_sites", 1))))
        level = target.get("statement_level")
        level = level if level in statements.LEVELS else "full"
        out: list[PendingTask] = []
        names = list(self.specs)
        dry: set[str] = set()
        with self._lock:
            while len(out) < n and len(dry) < len(names):
                name = names[self._turn % len(names)]
                self._turn += 1
                if name in dry:
                    continue
                state = self._state(name)
                made = self._single(name, state) if k == 1 else self._combination(name, state, k)
                if made is None:
                    dry.add(name)
                    continue
                cand, parts = (made, []) if k == 1 else made
                self._proposed[cand.iid] = (name, cand, level, parts)
                family = cand.sites[0].family if k == 1 else "+".join(sorted({s.family for s in cand.sites}))
                out.append(PendingTask(cand.iid, {"n_sites": len(cand.sites), "statement_level": level,
                                                  "family": family, "repo": name}))
        return out

    # ---- validating -------------------------------------------------------------------------------

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                # spawn: the curriculum validates from threads, and forking a threaded process is unsafe
                self._executor = ProcessPoolExecutor(
                    self.config.workers, mp_context=multiprocessing.get_context("spawn")
                )
            return self._executor

    def validate(self, task: PendingTask) -> bool:
        """Validate a proposal like the offline generator; write it to ``out_dir`` when it passes."""
        with self._lock:
            entry = self._proposed.pop(task.task_id, None)
        if entry is None:
            raise ValueError(f"{task.task_id!r} was not proposed by this synthesizer (or was validated already).")
        name, cand, level, parts = entry
        state = self._states[name]
        v = self._pool().submit(validate_candidate, self.specs[name], cand.sites, cand.tests, self.config).result()
        reason = v.reason if not v.ok else ""
        need = {t for d in parts for t in d["FAIL_TO_PASS"]}
        if v.ok and not need <= set(v.fail_to_pass):
            reason = "combined bug: FAIL_TO_PASS lacks some failures of its parts"
        if reason:
            self.rejected[task.task_id] = reason
            return False
        record = make_task(state.repo, cand, v, self.config, self._writer, level=level)
        record.provenance["online"] = True
        if parts:
            record.provenance["parts"] = sorted(d["instance_id"] for d in parts)
        append_task(self.out_dir / f"{name}.jsonl", record)
        refresh_tasks()
        if len(cand.sites) == 1 and not v.crash:
            with self._lock:
                state.singles.append(json.loads(record.to_json()))
        return True

    def close(self) -> None:
        """Stop the validation processes."""
        if self._executor is not None:
            self._executor.shutdown(cancel_futures=True)
            self._executor = None


def make_synthesizer(repos: Sequence[str], out_dir: str | os.PathLike[str], seed: int = 0) -> MutationSynthesizer:
    """What ``frog-gym train --synthesizer mutation`` builds: one per run, writing into the run folder."""
    return MutationSynthesizer(repos, out_dir, seed=seed, workers=1)
