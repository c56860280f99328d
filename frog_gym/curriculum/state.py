"""The curriculum's state: the task pool, per-task posteriors, the committed schedule, the sampler."""

from __future__ import annotations

import concurrent.futures
import warnings
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields
from typing import Any, SupportsFloat

import numpy as np

from frog_gym.curriculum.config import _STATE_FORMAT, STATEMENT_LEVELS, CurriculumConfig
from frog_gym.curriculum.stats import (
    Reference, filter_group, learnability, prior_beta, prior_mean, registry_priors, wilson_bounds,
)
from frog_gym.curriculum.synthesis import PendingTask, TaskSynthesizer
from frog_gym.errors import UnknownNameError


def _sample(weights: np.ndarray, rng: np.random.Generator) -> int:
    """An index drawn with probability proportional to the non-negative ``weights``."""
    cumulative = np.cumsum(weights)
    return min(
        int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right")), len(weights) - 1
    )


class CurriculumState:
    """The curriculum itself: the task pool, per-task posteriors, the committed schedule and the sampler.

    Args:
        task_ids: The pool. Order matters only for determinism.
        config: Sampling, decay and retirement settings.
        features: Optional ``task_id -> difficulty features`` for priors (:func:`prior_beta`).
        reference_pass_rates: Optional ``task_id -> (solved, runs)`` of a reference agent (or a pass rate,
            worth one run), evidence on top of the feature prior (:func:`prior_beta`).
        synthesizer: Optional source of new tasks when the frontier runs dry.

    :meth:`from_registry` fills both from the task records.

    Example:
        >>> cur = CurriculumState(["a", "b"], CurriculumConfig(seed=1))
        >>> cur.next_tasks(1, group_size=2) == [cur.take()[0], cur.take()[0]]
        True
    """

    def __init__(
        self,
        task_ids: Sequence[str],
        config: CurriculumConfig | None = None,
        *,
        features: Mapping[str, Mapping[str, Any]] | None = None,
        reference_pass_rates: Mapping[str, Reference] | None = None,
        synthesizer: TaskSynthesizer | None = None,
    ):
        self.config = config or CurriculumConfig()
        task_ids = [str(t) for t in task_ids]
        if not task_ids:
            raise ValueError("The task pool is empty; pass the ids of the tasks the env can reset to.")
        duplicates = sorted(t for t, n in Counter(task_ids).items() if n > 1)
        if duplicates:
            raise ValueError(f"Task ids must be unique; repeated: {duplicates[:5]}. Deduplicate the pool.")
        features, reference_pass_rates = dict(features or {}), dict(reference_pass_rates or {})
        for name, mapping in (("features", features), ("reference_pass_rates", reference_pass_rates)):
            unknown = sorted(set(mapping) - set(task_ids))
            if unknown:
                raise UnknownNameError(
                    "task", unknown[0], task_ids, hint=f"(a key of {name} not in task_ids)"
                )
        self.synthesizer = synthesizer
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._validating: list[tuple[PendingTask, concurrent.futures.Future[bool]]] = []
        self._rng = np.random.Generator(np.random.PCG64(self.config.seed))
        self.step = 0
        self._ids = task_ids
        self._index = {t: i for i, t in enumerate(task_ids)}
        self._features = [dict(features.get(t, {})) for t in task_ids]
        self._prior = np.array(
            [prior_beta(features.get(t), reference_pass_rates.get(t), self.config) for t in task_ids]
        ).reshape(-1, 2)
        self._counts = np.zeros((len(task_ids), 2))  # decayed (successes, failures)
        self._attempts = np.zeros(len(task_ids), dtype=np.int64)  # raw, never decayed: for coverage
        self._last_seen = np.zeros(len(task_ids))  # policy step of the last report (or of joining)
        self._schedule: deque[tuple[str, int]] = deque()
        self._groups: dict[int, dict[str, Any]] = {}  # committed groups not fully reported
        self._next_group = 0
        self._probation: dict[str, dict[str, Any]] = {}  # validated, waiting for their first group
        self._sfl_buffer: list[int] = []
        self._sfl_refreshed = -self.config.sfl_refresh_updates
        self._drawn_by: dict[int, str] = {}  # pool index -> sampling component, until the group reports
        self._by_source: dict[str, list[int]] = {}  # component -> [groups, zero-variance groups]
        self._counters = dict.fromkeys(
            (
                "groups",
                "zero_variance_groups",
                "dropped_groups",
                "synth_proposed",
                "synth_invalid",
                "synth_admitted",
                "synth_rejected",
            ),
            0,
        )

    @classmethod
    def from_registry(
        cls,
        task_ids: Sequence[str],
        config: CurriculumConfig | None = None,
        *,
        prior_agent: str | None = "apr",
        synthesizer: TaskSynthesizer | None = None,
    ) -> CurriculumState:
        """A curriculum whose priors are the tasks' measured difficulty, where the records have one.

        Each task found in the registry (or a ``FROG_GYM_TASK_DIRS`` folder) brings its difficulty
        features and ``prior_agent``'s solve rate (``frog-gym tasks --import-results``) as evidence on
        top of them; see :func:`registry_priors` and :func:`prior_beta`. Other ids start untried (0.5);
        synthesized tasks admitted later get the prior of the features they were proposed with.

        Args:
            task_ids: The pool.
            config: Sampling, decay and retirement settings (``reference_weight`` discounts the runs).
            prior_agent: Whose solve rates to use; None or ``"none"`` for the feature prior alone.
            synthesizer: Optional source of new tasks when the frontier runs dry.

        Example:
            >>> cur = CurriculumState.from_registry(["inflection__handwritten-0001", "not-registered"])
            >>> cur.posterior("not-registered")  # unknown to the registry: the untried default
            (1.0, 1.0)
            >>> cur.posterior("inflection__handwritten-0001") != (1.0, 1.0)  # its features set the prior
            True
        """
        features, references = registry_priors(task_ids, prior_agent)
        return cls(
            task_ids, config, features=features, reference_pass_rates=references, synthesizer=synthesizer
        )

    # ---- the pool and its posteriors -------------------------------------------------------------

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._index

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def task_ids(self) -> list[str]:
        """The pool, including admitted synthesized tasks."""
        return list(self._ids)

    def _add_task(self, task_id: str, features: Mapping[str, Any], mean: float) -> None:
        """Admit one task (a synthesized one that passed probation)."""
        self._index[task_id] = len(self._ids)
        self._ids.append(task_id)
        self._features.append(dict(features))
        strength = self.config.prior_strength
        self._prior = np.vstack([self._prior, [strength * mean, strength * (1 - mean)]])
        self._counts = np.vstack([self._counts, [0.0, 0.0]])
        self._attempts = np.append(self._attempts, 0)
        self._last_seen = np.append(self._last_seen, float(self.step))

    def posterior(self, task_id: str) -> tuple[float, float]:
        """``(alpha, beta)`` of the task's Beta posterior: prior plus decayed successes and failures."""
        i = self._lookup(task_id)
        a, b = self._prior[i] + self._counts[i]
        return float(a), float(b)

    def _lookup(self, task_id: str) -> int:
        try:
            return self._index[task_id]
        except KeyError:
            raise UnknownNameError("task", task_id, self._ids, hint="It is not in this curriculum's pool.")

    def _posterior_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        ab = self._prior + self._counts
        return ab[:, 0], ab[:, 1]

    def _retired(self) -> tuple[np.ndarray, np.ndarray]:
        """Boolean masks (mastered, hopeless) from Wilson bounds on decayed counts."""
        cfg = self.config
        n = self._counts.sum(axis=1)
        lo, hi = wilson_bounds(self._counts[:, 0], n, cfg.wilson_z)
        enough = n >= cfg.retire_min_attempts
        return enough & (lo > cfg.mastered_lower_bound), enough & (hi < cfg.hopeless_upper_bound)

    # ---- sampling ---------------------------------------------------------------------------------

    def _components(self) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
        """``(names, shares, weights)``: each draw picks component ``c`` with ``shares[c]``, then a task
        with ``weights[c]`` (each row sums to 1) among those not yet drawn."""
        cfg, n = self.config, len(self._ids)
        if cfg.mode in ("uniform", "dapo"):
            return ("uniform",), np.ones(1), np.full((1, n), 1.0 / n)
        if cfg.mode == "sfl":
            if self.step - self._sfl_refreshed >= cfg.sfl_refresh_updates or not self._sfl_buffer:
                self._refresh_sfl()
            if not self._sfl_buffer:
                return ("uniform",), np.ones(1), np.full((1, n), 1.0 / n)
            buffer = np.zeros(n)
            buffer[self._sfl_buffer] = 1.0 / len(self._sfl_buffer)
            return ("buffer", "uniform"), np.array([1.0 - cfg.uniform_share, cfg.uniform_share]), np.stack(
                [buffer, np.full(n, 1.0 / n)]
            )
        mastered, hopeless = self._retired()
        retired = mastered | hopeless
        base = np.where(retired, cfg.retired_weight, 1.0)
        uniform = base / base.sum()
        stale = (self.step - self._last_seen) * base
        stale = stale / stale.sum() if stale.sum() > 0 else uniform
        rank = np.zeros(n)
        active = np.flatnonzero(~retired)
        if active.size:
            score = np.asarray(learnability(*self._posterior_arrays()))[active]
            order = np.lexsort((self._rng.random(active.size), -score))  # ties broken at random
            rank[active[order]] = np.arange(1, active.size + 1, dtype=float) ** (-1.0 / cfg.rank_temperature)
            rank /= rank.sum()
        shares = np.array(
            [
                1.0 - cfg.staleness_share - cfg.uniform_share if active.size else 0.0,
                cfg.staleness_share,
                cfg.uniform_share,
            ]
        )
        if shares.sum() == 0:  # everything retired and both other shares set to 0
            shares = np.array([0.0, 0.0, 1.0])
        return ("frontier", "staleness", "uniform"), shares / shares.sum(), np.stack([rank, stale, uniform])

    def _refresh_sfl(self) -> None:
        """Re-rank the attempted tasks by observed ``p̂(1-p̂)`` (decayed counts, no prior) and keep the top K."""
        n = self._counts.sum(axis=1)
        seen = np.flatnonzero(n >= 1.0)
        p = self._counts[seen, 0] / n[seen]
        order = np.lexsort((self._rng.random(seen.size), -p * (1 - p)))
        self._sfl_buffer = sorted(int(i) for i in seen[order[: self.config.sfl_buffer_size]])
        self._sfl_refreshed = self.step

    def _draw(self, k: int, exclude: set[int]) -> list[int]:
        """k pool indices, distinct while the pool (less ``exclude``) allows; each index remembers the
        component that drew it until its group is reported (see ``stats()["by_source"]``)."""
        names, shares, weights = self._components()
        masked = weights.copy()
        masked[:, sorted(exclude)] = 0.0
        chosen = []
        for _ in range(k):
            usable = shares * (masked.sum(axis=1) > 0)
            if usable.sum() <= 0:  # fewer usable tasks than draws: allow repeats
                masked = weights.copy()
                usable = shares * (masked.sum(axis=1) > 0)
            component = _sample(usable, self._rng)
            i = _sample(masked[component], self._rng)
            chosen.append(i)
            self._drawn_by[i] = names[component]
            masked[:, i] = 0.0
        return chosen

    def next_tasks(self, k: int, group_size: int = 1, *, commit: bool = True) -> list[str]:
        """Choose the next ``k`` tasks, each repeated ``group_size`` times in a row.

        Tasks are distinct within a call (and differ from committed groups not yet reported) while the
        pool allows. Tasks on probation are scheduled first, each as one group of at least two episodes.

        Args:
            k: Number of groups.
            group_size: Episodes per group (G of GRPO).
            commit: Append the groups to the schedule that ``reset()`` without a ``task_id`` follows. Pass
                False when you run the episodes yourself and report them with :meth:`update`.

        Returns:
            The ``k * group_size`` task ids in schedule order (probation groups may add episodes).

        Example:
            >>> cur = CurriculumState(["a", "b", "c"])
            >>> ids = cur.next_tasks(2, group_size=2)
            >>> ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]
            True
        """
        if k < 0 or group_size < 1:
            raise ValueError(f"Need k >= 0 and group_size >= 1, got k={k}, group_size={group_size}.")
        self.poll()
        groups: list[tuple[str, int]] = []
        for task_id, entry in self._probation.items():
            if len(groups) < k and not entry["scheduled"]:
                entry["scheduled"] = True
                groups.append((task_id, max(group_size, 2)))
        if k > len(groups):
            busy = {self._index[g["task"]] for g in self._groups.values() if g["task"] in self._index}
            groups += [(self._ids[i], group_size) for i in self._draw(k - len(groups), busy)]
        out: list[str] = []
        for task_id, size in groups:
            out += [task_id] * size
            if commit:
                gid = self._next_group
                self._next_group += 1
                self._groups[gid] = {"task": task_id, "left": size, "rewards": []}
                self._schedule.extend([(task_id, gid)] * size)
        return out

    def take(self) -> tuple[str, int]:
        """Pop the next committed episode as ``(task_id, group_id)``, scheduling one task if none is left.

        The wrapper calls this from ``reset()`` and later hands the reward to :meth:`record`.
        """
        if not self._schedule:
            self.next_tasks(1)
        return self._schedule.popleft()

    def record(self, group_id: int, reward: SupportsFloat | None) -> None:
        """Report one episode of a committed group; ``None`` for an infrastructure failure or an abandoned
        episode. When the group's last episode is in, the group goes to :meth:`update`."""
        group = self._groups[group_id]
        group["left"] -= 1
        if reward is not None:
            group["rewards"].append(float(reward))
        if group["left"] == 0:
            del self._groups[group_id]
            self.update(group["task"], group["rewards"])

    # ---- learning from results --------------------------------------------------------------------

    def filter_group(self, rewards: Sequence[SupportsFloat | None]) -> bool:
        """True to keep a group for the gradient, False to drop it (all rewards equal); see
        :func:`filter_group`. In ``dapo`` mode :meth:`update` counts the dropped groups."""
        return filter_group(rewards)

    def update(
        self, task_id: str, rewards: Sequence[SupportsFloat | None], policy_step: int | None = None
    ) -> bool:
        """Report a finished group of episodes on one task.

        Rewards in [0, 1] count as that much success (others are clipped); ``None`` marks an episode lost
        to an infrastructure failure, which counts as neither. Episodes run through a
        :class:`FrontierCurriculum` are reported by the wrapper: do not report them again.

        Args:
            task_id: The task the group ran.
            rewards: The final reward of each episode.
            policy_step: The policy update that produced the episodes; a newer one than the state's first
                advances the clock as :meth:`on_policy_update` does.

        Returns:
            :meth:`filter_group` of the rewards: whether the group carries a learning signal.
        """
        if policy_step is not None and policy_step > self.step:
            self.on_policy_update(policy_step)
        scored = np.clip([float(r) for r in rewards if r is not None], 0.0, 1.0)
        keep = filter_group(rewards)
        source = "probation"
        if task_id in self._probation:
            if scored.size < 2:  # too few scored episodes to judge: schedule it again
                self._probation[task_id]["scheduled"] = False
                return keep
            self._judge_probation(task_id, scored)
        elif scored.size:
            i = self._lookup(task_id)
            source = self._drawn_by.pop(i, "unscheduled")
            self._counts[i] += (scored.sum(), scored.size - scored.sum())
            self._attempts[i] += scored.size
            self._last_seen[i] = self.step
        else:
            self._lookup(task_id)
        if scored.size >= 2:
            self._counters["groups"] += 1
            self._counters["zero_variance_groups"] += int(not keep)
            tally = self._by_source.setdefault(source, [0, 0])
            tally[0] += 1
            tally[1] += int(not keep)
        if self.config.mode == "dapo":
            self._counters["dropped_groups"] += int(not keep)
        return keep

    def on_policy_update(self, step: int | None = None) -> None:
        """Tell the curriculum the policy changed: decay the counts, refresh buffers, maybe synthesize.

        Args:
            step: The new policy step (default: one more than the last). Counts decay by
                ``0.5 ** (elapsed / half_life_updates)``.
        """
        step = self.step + 1 if step is None else int(step)
        if step < self.step:
            raise ValueError(f"Policy steps must not go backwards: got {step} after {self.step}.")
        self._counts *= 0.5 ** ((step - self.step) / self.config.half_life_updates)
        self.step = step
        self.poll()
        self._maybe_synthesize()

    # ---- synthesis --------------------------------------------------------------------------------

    def synthesis_target(self) -> dict[str, Any]:
        """What to ask a synthesizer for, from the retired tasks' features.

        More mastered than hopeless tasks: harder ones (one more bug site than the typical mastered task,
        a statement one level vaguer); otherwise easier ones (single-site, full statement).
        """
        mastered, hopeless = self._retired()
        harder = mastered.sum() >= hopeless.sum()
        target: dict[str, Any] = {
            "direction": "harder" if harder else "easier",
            "mastered": int(mastered.sum()),
            "hopeless": int(hopeless.sum()),
            "frontier": self._frontier_size(),
        }
        if not harder:
            return {**target, "n_sites": 1, "statement_level": STATEMENT_LEVELS[0]}
        feats = [self._features[i] for i in np.flatnonzero(mastered)]
        sites = [int(f.get("n_sites", 1)) for f in feats]
        levels = [
            STATEMENT_LEVELS.index(f["statement_level"])
            for f in feats
            if f.get("statement_level") in STATEMENT_LEVELS
        ]
        level = min(int(np.median(levels)) + 1, len(STATEMENT_LEVELS) - 1) if levels else 1
        return {
            **target,
            "n_sites": int(np.median(sites)) + 1 if sites else 2,
            "statement_level": STATEMENT_LEVELS[level],
        }

    def _maybe_synthesize(self) -> None:
        if self.synthesizer is None or self._validating or self._probation:
            return
        mastered, hopeless = self._retired()
        if self._frontier_size() >= self.config.synthesis_threshold or not (mastered | hopeless).any():
            return  # no shortage, or no evidence yet of which way to go
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                self.config.synthesis_workers, thread_name_prefix="frog-gym-synthesis"
            )
        for task in self.synthesizer.propose(self.config.synthesis_batch, self.synthesis_target()):
            self._counters["synth_proposed"] += 1
            self._validating.append((task, self._executor.submit(self.synthesizer.validate, task)))

    def poll(self, wait: bool = False) -> list[str]:
        """Collect finished background validations; valid tasks go on probation.

        Args:
            wait: Block until every validation in flight has finished.

        Returns:
            Ids of the tasks that went on probation, in the order they were proposed.
        """
        if wait:
            concurrent.futures.wait([f for _, f in self._validating])
        admitted, still_running = [], []
        for task, future in self._validating:
            if not future.done():
                still_running.append((task, future))
                continue
            if future.exception() is not None:
                warnings.warn(
                    f"Validating synthesized task {task.task_id!r} raised {future.exception()!r}; "
                    "counted as invalid.",
                    stacklevel=2,
                )
            new = task.task_id not in self._index and task.task_id not in self._probation
            if future.exception() is None and future.result() and new:
                self._probation[task.task_id] = {"features": dict(task.features), "scheduled": False}
                admitted.append(task.task_id)
            else:
                self._counters["synth_invalid"] += 1
        self._validating = still_running
        return admitted

    def _judge_probation(self, task_id: str, scored: np.ndarray) -> None:
        """Admit a probation task whose first group was neither all failures nor all successes."""
        entry = self._probation.pop(task_id)
        if not 0 < scored.mean() < 1:
            self._counters["synth_rejected"] += 1
            return
        self._counters["synth_admitted"] += 1
        self._add_task(task_id, entry["features"], prior_mean(entry["features"]))  # no reference runs yet
        i = self._index[task_id]
        self._counts[i] = (scored.sum(), scored.size - scored.sum())
        self._attempts[i] = scored.size

    def close(self) -> None:
        """Stop the validation threads (validations in flight are abandoned)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        self._validating = []

    # ---- reporting and persistence ----------------------------------------------------------------

    def _frontier_size(self) -> int:
        lo, hi = self.config.frontier_band
        a, b = self._posterior_arrays()
        mean = a / (a + b)
        mastered, hopeless = self._retired()
        seen = self._counts.sum(axis=1) >= 1.0
        return int((seen & ~mastered & ~hopeless & (mean > lo) & (mean < hi)).sum())

    def stats(self) -> dict[str, Any]:
        """A snapshot for logging.

        Returns:
            ``frontier_size`` (tasks with decayed attempts >= 1, not retired, posterior mean inside
            ``frontier_band``), ``p_histogram`` (posterior means of those attempted tasks in ten bins over
            [0, 1]), ``zero_variance_fraction`` (of reported groups of two or more episodes, cumulative),
            ``coverage`` (fraction of the pool ever attempted), ``mastered``/``hopeless`` (retired now),
            ``pool_size``, ``policy_step``, ``scheduled`` (committed episodes not yet taken), ``probation``,
            ``by_source`` (per sampling component that drew the groups: ``frontier``, ``staleness``,
            ``uniform``, sfl's ``buffer``, ``probation``, or ``unscheduled`` for groups on tasks the
            sampler did not pick: ``{"groups": n, "zero_variance_fraction": f}``, which shows where groups
            without a learning signal come from), and the raw counters (``groups``, ``dropped_groups``,
            ``synth_*``).
        """
        a, b = self._posterior_arrays()
        seen = self._counts.sum(axis=1) >= 1.0
        mastered, hopeless = self._retired()
        groups = self._counters["groups"]
        return {
            "frontier_size": self._frontier_size(),
            "p_histogram": np.histogram((a / (a + b))[seen], bins=10, range=(0.0, 1.0))[0].tolist(),
            "zero_variance_fraction": self._counters["zero_variance_groups"] / groups if groups else 0.0,
            "coverage": float((self._attempts > 0).mean()),
            "mastered": int(mastered.sum()),
            "hopeless": int(hopeless.sum()),
            "pool_size": len(self._ids),
            "policy_step": self.step,
            "scheduled": len(self._schedule),
            "probation": len(self._probation) + len(self._validating),
            "by_source": {
                name: {"groups": n, "zero_variance_fraction": zero / n}
                for name, (n, zero) in sorted(self._by_source.items())
            },
            **self._counters,
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly, as JSON-serializable data (floats round-trip exactly).

        Validations still in flight are not saved: they are lost, and synthesis asks again when needed.
        """
        return {
            "format": _STATE_FORMAT,
            "config": asdict(self.config),
            "rng": self._rng.bit_generator.state,
            "step": self.step,
            "task_ids": list(self._ids),
            "features": [dict(sorted(f.items())) for f in self._features],
            "prior": self._prior.tolist(),
            "counts": self._counts.tolist(),
            "attempts": self._attempts.tolist(),
            "last_seen": self._last_seen.tolist(),
            "schedule": [list(e) for e in self._schedule],
            "groups": [[gid, g["task"], g["left"], list(g["rewards"])] for gid, g in self._groups.items()],
            "next_group": self._next_group,
            "probation": [[t, dict(e["features"]), e["scheduled"]] for t, e in self._probation.items()],
            "sfl_buffer": list(self._sfl_buffer),
            "sfl_refreshed": self._sfl_refreshed,
            "counters": dict(self._counters),
            "drawn_by": [[i, name] for i, name in sorted(self._drawn_by.items())],
            "by_source": {name: list(t) for name, t in sorted(self._by_source.items())},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved, pool included; the config must be the same."""
        if state.get("format") != _STATE_FORMAT:
            raise ValueError(
                f"Unknown curriculum state format {state.get('format')!r}; expected {_STATE_FORMAT}."
            )
        saved = CurriculumConfig(**state["config"])
        if saved != self.config:
            diff = [f.name for f in fields(saved) if getattr(saved, f.name) != getattr(self.config, f.name)]
            raise ValueError(
                f"The saved curriculum used a different config (fields {diff}); construct the state with "
                "CurriculumConfig(**state['config']) to resume it."
            )
        self._rng.bit_generator.state = state["rng"]
        self.step = int(state["step"])
        self._ids = list(state["task_ids"])
        self._index = {t: i for i, t in enumerate(self._ids)}
        self._features = [dict(f) for f in state["features"]]
        self._prior = np.array(state["prior"], dtype=float).reshape(-1, 2)
        self._counts = np.array(state["counts"], dtype=float).reshape(-1, 2)
        self._attempts = np.array(state["attempts"], dtype=np.int64)
        self._last_seen = np.array(state["last_seen"], dtype=float)
        self._schedule = deque((str(t), int(g)) for t, g in state["schedule"])
        self._groups = {
            int(g): {"task": t, "left": int(n), "rewards": [float(r) for r in rs]}
            for g, t, n, rs in state["groups"]
        }
        self._next_group = int(state["next_group"])
        self._probation = {t: {"features": dict(f), "scheduled": bool(s)} for t, f, s in state["probation"]}
        self._validating = []
        self._sfl_buffer = [int(i) for i in state["sfl_buffer"]]
        self._sfl_refreshed = int(state["sfl_refreshed"])
        self._counters = {k: int(v) for k, v in state["counters"].items()}
        self._drawn_by = {int(i): str(name) for i, name in state.get("drawn_by", [])}
        self._by_source = {str(k): [int(n), int(z)] for k, (n, z) in state.get("by_source", {}).items()}
