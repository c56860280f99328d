"""Tests for :mod:`frog_gym.curriculum`: posteriors, decay, sampling, persistence, the wrapper, baselines
and online synthesis. Doubles (a task env, a synthesizer) live here; nothing is mocked."""

from __future__ import annotations

import doctest
import json
import math
import threading
from collections import Counter
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from frog_gym import curriculum
from frog_gym.curriculum import (
    CurriculumConfig,
    CurriculumState,
    FrontierCurriculum,
    PendingTask,
    TaskSynthesizer,
    filter_group,
    learnability,
    prior_mean,
    wilson_bounds,
)
from frog_gym.errors import UnknownNameError


class TaskEnv(gymnasium.Env):
    """One-step episodes: the task succeeds iff it is in ``solvable``; tasks in ``broken`` end in an
    infrastructure failure (truncated, ``info["infra_failure"]`` set, reward 0)."""

    observation_space = spaces.Discrete(1)
    action_space = spaces.Discrete(2)

    def __init__(self, solvable: set[str], broken: frozenset[str] = frozenset()):
        self.solvable, self.broken = solvable, broken
        self.task_id: str | None = None
        self.history: list[str] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.task_id = options["task_id"]  # the contract: the wrapper always names the task
        self.history.append(self.task_id)
        return 0, {"task_id": self.task_id}

    def step(self, action):
        infra = "sandbox died" if self.task_id in self.broken else None
        reward = float(infra is None and self.task_id in self.solvable)
        return 0, reward, infra is None, infra is not None, {"task_id": self.task_id, "infra_failure": infra}


class ScriptedSynthesizer:
    """Proposes ``syn-<n>`` tasks with the features asked for; ``validate`` rejects ids in ``invalid``
    and records which thread ran it."""

    def __init__(self, invalid: frozenset[str] = frozenset()):
        self.invalid = invalid
        self.targets: list[dict[str, Any]] = []
        self.validated_on: list[str] = []
        self._made = 0

    def propose(self, n: int, target: dict[str, Any]) -> list[PendingTask]:
        self.targets.append(target)
        tasks = [PendingTask(f"syn-{self._made + i}", {"n_sites": target["n_sites"]}) for i in range(n)]
        self._made += n
        return tasks

    def validate(self, task: PendingTask) -> bool:
        self.validated_on.append(threading.current_thread().name)
        return task.task_id not in self.invalid


def ids(n: int) -> list[str]:
    return [f"t{i}" for i in range(n)]


def draws(state: CurriculumState, n: int) -> Counter[str]:
    return Counter(t for _ in range(n) for t in state.next_tasks(1, commit=False))


def test_docstring_examples() -> None:
    assert doctest.testmod(curriculum).failed == 0


# ---- posterior, score, bounds --------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b"), [(1.0, 1.0), (2.5, 7.0), (30.0, 4.0)])
def test_learnability_is_the_posterior_expectation_of_p_times_one_minus_p(a: float, b: float) -> None:
    p = np.linspace(0.0, 1.0, 200_001)
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    pdf = np.exp(
        log_norm + (a - 1) * np.log(np.clip(p, 1e-300, 1)) + (b - 1) * np.log(np.clip(1 - p, 1e-300, 1))
    )
    numeric = float(np.sum(p * (1 - p) * pdf) * (p[1] - p[0]))
    assert learnability(a, b) == pytest.approx(numeric, rel=1e-4)
    assert learnability(a, b) == pytest.approx(a * b / ((a + b) * (a + b + 1)), rel=1e-12)


def test_posterior_is_prior_plus_counts() -> None:
    state = CurriculumState(["easy", "hard"], features={"easy": {"n_sites": 1, "statement_level": "full"}})
    mean = prior_mean({"n_sites": 1, "statement_level": "full"})
    assert state.posterior("easy") == pytest.approx((2 * mean, 2 * (1 - mean)))
    assert state.posterior("hard") == (1.0, 1.0)
    state.update("hard", [1.0, 0.0, 0.0, None])  # None: infrastructure failure, counts as neither
    assert state.posterior("hard") == (2.0, 3.0)


def test_reference_runs_are_discounted_evidence_on_top_of_the_feature_prior() -> None:
    config = CurriculumConfig(prior_strength=4, reference_weight=0.5)
    feats = {"n_sites": 5}
    m = prior_mean(feats)
    state = CurriculumState(
        ["rate", "counts"],
        features={"rate": feats, "counts": feats},
        reference_pass_rates={"rate": 0.25, "counts": (3, 4)},
        config=config,
    )
    assert state.posterior("rate") == pytest.approx((4 * m + 0.5 * 0.25, 4 * (1 - m) + 0.5 * 0.75))
    assert state.posterior("counts") == pytest.approx((4 * m + 1.5, 4 * (1 - m) + 0.5))
    ignored = CurriculumState(["a"], features={"a": feats}, reference_pass_rates={"a": (0, 9)},
                              config=CurriculumConfig(reference_weight=0.0))
    assert ignored.posterior("a") == pytest.approx((2 * m, 2 * (1 - m)))


def _mean(state: CurriculumState, task_id: str) -> float:
    a, b = state.posterior(task_id)
    return a / (a + b)


def test_a_task_the_reference_solved_starts_above_the_same_task_it_failed() -> None:
    feats = {"n_sites": 2, "statement_level": "medium"}
    state = CurriculumState(
        ["solved", "failed", "untried"],
        features=dict.fromkeys(["solved", "failed", "untried"], feats),
        reference_pass_rates={"solved": (1, 1), "failed": (0, 1)},
    )
    assert _mean(state, "solved") > _mean(state, "untried") > _mean(state, "failed")
    # one failure lowers the prior only somewhat: far from the old clip at 0.02
    assert _mean(state, "failed") > 0.5 * prior_mean(feats)


def test_two_tasks_the_reference_failed_keep_the_feature_order() -> None:
    easy, hard = {"n_sites": 1, "statement_level": "full"}, {"n_sites": 3, "statement_level": "vague"}
    state = CurriculumState(
        ["easy", "hard"], features={"easy": easy, "hard": hard}, reference_pass_rates={"easy": (0, 1), "hard": (0, 1)}
    )
    assert _mean(state, "easy") > _mean(state, "hard")
    assert learnability(*state.posterior("easy")) != learnability(*state.posterior("hard"))  # the sampler sees it


def test_bad_reference_records_say_what_is_expected() -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\], got 1.5; pass \(solved, runs\)"):
        CurriculumState(["a"], reference_pass_rates={"a": 1.5})
    with pytest.raises(ValueError, match=r"0 <= solved <= runs, got \(3, 2\)"):
        CurriculumState(["a"], reference_pass_rates={"a": (3, 2)})
    with pytest.raises(ValueError, match="reference_weight must be >= 0"):
        CurriculumConfig(reference_weight=-1)


def test_reference_prior_survives_a_state_round_trip() -> None:
    config = CurriculumConfig(seed=3, reference_weight=0.75)
    kwargs = {"features": {"a": {"n_sites": 2}}, "reference_pass_rates": {"a": (1, 3), "b": 0.5}}
    state = CurriculumState(["a", "b", "c"], config, **kwargs)
    state.update("a", [1.0, 0.0])
    saved = json.loads(json.dumps(state.state_dict()))
    fresh = CurriculumState(["a", "b", "c"], config)  # built without priors: the state brings them
    fresh.load_state_dict(saved)
    for t in "abc":
        assert fresh.posterior(t) == state.posterior(t)
    assert fresh.next_tasks(2, commit=False) == state.next_tasks(2, commit=False)


def test_wilson_bounds_match_the_textbook_interval() -> None:
    lo, hi = wilson_bounds(np.array([8.0, 0.0]), np.array([10.0, 0.0]), z=1.96)
    assert lo[0] == pytest.approx(0.4902, abs=1e-4) and hi[0] == pytest.approx(0.9433, abs=1e-4)
    assert (lo[1], hi[1]) == (0.0, 1.0)


# ---- decay and determinism -----------------------------------------------------------------------


def test_counts_halve_every_half_life() -> None:
    state = CurriculumState(["a"], CurriculumConfig(half_life_updates=16, prior_strength=2))
    state.update("a", [1.0] * 8 + [0.0] * 8)
    state.on_policy_update(16)
    assert state.posterior("a") == pytest.approx((1 + 4, 1 + 4))
    for _ in range(16):
        state.on_policy_update()
    assert state.posterior("a") == pytest.approx((1 + 2, 1 + 2))


def test_policy_step_argument_drives_the_clock() -> None:
    state = CurriculumState(["a", "b"], CurriculumConfig(half_life_updates=4))
    state.update("a", [1.0] * 8)
    state.update("b", [0.0], policy_step=8)
    assert state.step == 8
    assert state.posterior("a") == pytest.approx((1 + 2, 1))
    with pytest.raises(ValueError, match="must not go backwards: got 3 after 8"):
        state.on_policy_update(3)


def simulate(state: CurriculumState, updates: int, p: dict[str, float], seed: int = 0) -> list[str]:
    """Drive a state with Bernoulli outcomes; return the schedule it produced."""
    rng = np.random.default_rng(seed)
    schedule = []
    for step in range(state.step, state.step + updates):
        for task in state.next_tasks(4, commit=False):
            schedule.append(task)
            state.update(task, (rng.random(8) < p[task]).astype(float).tolist())
        state.on_policy_update(step + 1)
    return schedule


@pytest.mark.parametrize("mode", curriculum.MODES)
def test_same_seed_same_schedule(mode: str) -> None:
    p = {t: i / 29 for i, t in enumerate(ids(30))}
    runs = [simulate(CurriculumState(ids(30), CurriculumConfig(mode=mode, seed=s)), 20, p) for s in (3, 3, 4)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.parametrize("mode", curriculum.MODES)
def test_state_round_trip_resumes_the_identical_schedule(mode: str) -> None:
    p = {t: i / 29 for i, t in enumerate(ids(30))}
    config = CurriculumConfig(mode=mode, seed=7, sfl_buffer_size=8)
    original = CurriculumState(ids(30), config)
    simulate(original, 12, p)
    original.next_tasks(2, group_size=3)  # committed and half consumed: part of the state too
    original.take()
    saved = json.loads(json.dumps(original.state_dict()))
    resumed = CurriculumState(ids(30), CurriculumConfig(**saved["config"]))
    resumed.load_state_dict(saved)
    assert [resumed.take() for _ in range(5)] == [original.take() for _ in range(5)]
    assert simulate(resumed, 10, p, seed=1) == simulate(original, 10, p, seed=1)
    assert resumed.state_dict() == original.state_dict()


def test_loading_a_state_saved_with_another_config_says_how_to_resume() -> None:
    saved = CurriculumState(ids(3), CurriculumConfig(seed=1, uniform_share=0.3)).state_dict()
    with pytest.raises(
        ValueError,
        match=r"fields \['uniform_share', 'seed'\]\); construct the state with "
        r"CurriculumConfig\(\*\*state\['config'\]\)",
    ):
        CurriculumState(ids(3)).load_state_dict(saved)


# ---- sampling, retirement ------------------------------------------------------------------------


def test_rank_share_picks_the_most_learnable_task() -> None:
    state = CurriculumState(ids(5), CurriculumConfig(staleness_share=0.0, uniform_share=0.0))
    for task in ids(5):
        state.update(task, [1.0, 0.0] * 4 if task == "t3" else [0.0] * 8)
    assert draws(state, 200)["t3"] >= 190


def test_next_tasks_are_distinct_within_a_call_while_the_pool_allows() -> None:
    state = CurriculumState(ids(6), CurriculumConfig(staleness_share=0.0, uniform_share=0.0))
    assert sorted(state.next_tasks(6, commit=False)) == ids(6)
    assert len(state.next_tasks(9, commit=False)) == 9


def test_staleness_share_follows_updates_since_last_seen() -> None:
    state = CurriculumState(["a", "b", "c"], CurriculumConfig(staleness_share=1.0, uniform_share=0.0))
    state.update("a", [1.0, 0.0], policy_step=5)
    state.update("b", [1.0, 0.0])
    state.on_policy_update(10)  # staleness: a 5, b 5, c 10
    counts = draws(state, 4000)
    assert counts["c"] / 4000 == pytest.approx(0.5, abs=0.04)


def test_retired_tasks_are_sampled_at_the_reduced_rate_and_come_back() -> None:
    config = CurriculumConfig(retired_weight=0.1)
    state = CurriculumState(ids(5), config)
    state.update("t0", [1.0] * 16)  # Wilson lower bound (z=1) 0.94 > 0.9: mastered
    state.update("t1", [0.0] * 24)  # Wilson upper bound 0.04 < 0.05: hopeless
    state.update("t2", [0.0] * 8)  # too few attempts to retire
    stats = state.stats()
    assert (stats["mastered"], stats["hopeless"]) == (1, 1)
    counts = draws(state, 6000)
    # Retired tasks only come from the staleness and uniform shares (staleness falls back to uniform
    # before any update), each at weight 0.1 against 1 for the three active tasks.
    expected = (config.staleness_share + config.uniform_share) * 0.1 / 3.2
    for retired in ("t0", "t1"):
        assert counts[retired] / 6000 == pytest.approx(expected, abs=4 * math.sqrt(expected / 6000))
    assert min(counts[t] for t in ("t2", "t3", "t4")) > 5 * max(counts["t0"], counts["t1"])

    state.update("t1", [1.0, 1.0, 0.0, 0.0])  # new evidence: no longer hopeless
    assert state.stats()["hopeless"] == 0
    state.on_policy_update(config.half_life_updates)  # evidence decays: retirement lapses
    assert state.stats()["mastered"] == 0


def test_stats_say_which_sampling_component_drew_the_zero_variance_groups() -> None:
    # Only the uniform share draws (frontier and staleness shares 0), then only the frontier share.
    uniform_only = CurriculumState(ids(4), CurriculumConfig(staleness_share=0.0, uniform_share=1.0, seed=1))
    for task in uniform_only.next_tasks(4, commit=False):
        uniform_only.update(task, [0.0] * 4 if task in ("t0", "t1") else [1.0, 0.0, 1.0, 0.0])
    uniform_only.update("t3", [1.0, 1.0])  # reported without being drawn again
    by_source = uniform_only.stats()["by_source"]
    assert by_source == {
        "uniform": {"groups": 4, "zero_variance_fraction": 0.5},
        "unscheduled": {"groups": 1, "zero_variance_fraction": 1.0},
    }
    ranked = CurriculumState(ids(4), CurriculumConfig(staleness_share=0.0, uniform_share=0.0))
    for task in ranked.next_tasks(3, commit=False):
        ranked.update(task, [1.0, 0.0])
    restored = CurriculumState(ids(4), ranked.config)
    restored.load_state_dict(json.loads(json.dumps(ranked.state_dict())))
    assert restored.stats()["by_source"] == {"frontier": {"groups": 3, "zero_variance_fraction": 0.0}}


# ---- the wrapper ---------------------------------------------------------------------------------


def test_next_tasks_commits_the_schedule_that_resets_follow() -> None:
    state = CurriculumState(ids(8), CurriculumConfig(seed=2))
    env = FrontierCurriculum(TaskEnv(solvable={"t0"}), state)
    committed = env.next_tasks(3, group_size=2)
    assert len(committed) == 6 and committed[0::2] == committed[1::2] and len(set(committed)) == 3
    seen = []
    for _ in range(6):
        _, info = env.reset()
        seen.append(info["task_id"])
        env.step(0)
    assert seen == committed
    assert state.stats()["groups"] == 3 and state.stats()["scheduled"] == 0
    other = next(t for t in ids(8) if t not in committed and t != "t0")
    _, info = env.reset(options={"task_id": other})  # naming a task runs it and reports it alone
    env.step(0)
    assert info["task_id"] == other and state.posterior(other) == (1.0, 2.0)


def test_infrastructure_failures_and_abandoned_episodes_count_as_neither() -> None:
    state = CurriculumState(["ok", "broken"])
    env = FrontierCurriculum(TaskEnv(solvable={"ok", "broken"}, broken=frozenset({"broken"})), state)
    env.reset(options={"task_id": "broken"})
    *_, truncated, info = env.step(0)
    assert truncated and info["infra_failure"] and state.posterior("broken") == (1.0, 1.0)
    solo = CurriculumState(["ok"])
    env = FrontierCurriculum(TaskEnv(solvable={"ok"}), solo)
    env.reset()
    env.reset()  # abandons the first episode
    env.step(0)
    assert solo.posterior("ok") == (2.0, 1.0)


def test_wrapper_under_sync_vector_env_shares_one_state_and_learns() -> None:
    solvable = {f"t{i}" for i in range(0, 12, 2)}
    state = CurriculumState(ids(12), CurriculumConfig(seed=5))
    envs = gymnasium.vector.SyncVectorEnv([lambda: FrontierCurriculum(TaskEnv(solvable), state)] * 4)
    envs.reset(seed=0)  # four single draws, distinct because each is in flight
    first = [e.env.history[0] for e in envs.envs]
    assert len(set(first)) == 4
    for step in range(40):
        envs.step(np.zeros(4, dtype=int))  # even steps end every episode, odd ones autoreset
        if step % 2 == 0:
            state.next_tasks(1, group_size=4)  # the group the four sub-envs start next
            state.on_policy_update()
    stats = state.stats()
    assert stats["coverage"] >= 0.75 and stats["pool_size"] == 12
    assert stats["groups"] == 19  # the twentieth committed group has only just started
    assert stats["zero_variance_fraction"] == 1.0  # the env is deterministic
    means = {t: a / (a + b) for t in ids(12) for a, b in [state.posterior(t)] if a + b > 2}
    assert len(means) == 12 * stats["coverage"]
    assert min(m for t, m in means.items() if t in solvable) > 0.5
    assert max(m for t, m in means.items() if t not in solvable) < 0.5
    envs.close()


# ---- baselines -----------------------------------------------------------------------------------


def test_dapo_samples_uniformly_and_flags_all_equal_groups_as_dropped() -> None:
    state = CurriculumState(ids(4), CurriculumConfig(mode="dapo"))
    assert state.update("t0", [1.0, 1.0, 1.0]) is False
    assert state.update("t1", [0.0, 1.0, None]) is True
    assert state.filter_group([0.5, 0.5]) is False and filter_group([]) is False
    assert state.stats()["dropped_groups"] == 1
    counts = draws(state, 4000)
    assert all(c / 4000 == pytest.approx(0.25, abs=0.03) for c in counts.values())


def test_sfl_buffer_holds_the_top_k_by_observed_learnability() -> None:
    config = CurriculumConfig(mode="sfl", sfl_buffer_size=3, sfl_refresh_updates=4, uniform_share=0.0)
    state = CurriculumState(ids(10), config)
    assert len(draws(state, 50)) > 3  # nothing observed yet: uniform
    for i, task in enumerate(ids(10)):
        state.update(task, [1.0] * i + [0.0] * (8 - i) if i < 9 else [1.0] * 8)
    state.on_policy_update(4)
    assert set(draws(state, 200)) == {"t3", "t4", "t5"}  # p̂ = 3/8, 4/8, 5/8
    for task in ("t3", "t4", "t5"):
        state.update(task, [1.0] * 40)
    assert set(draws(state, 50)) == {"t3", "t4", "t5"}  # kept until the next re-ranking
    state.on_policy_update(8)
    buffer = set(draws(state, 300))
    assert len(buffer) == 3 and {"t2", "t6"} < buffer < {"t1", "t2", "t6", "t7"}  # 2/8, 6/8, then a tie


# ---- synthesis -----------------------------------------------------------------------------------


def test_synthesized_tasks_join_only_after_a_probation_group_with_mixed_results() -> None:
    synth = ScriptedSynthesizer(invalid=frozenset({"syn-1"}))
    assert isinstance(synth, TaskSynthesizer)
    config = CurriculumConfig(synthesis_threshold=2, synthesis_batch=3)
    state = CurriculumState(ids(4), config, features={t: {"n_sites": 2} for t in ids(4)}, synthesizer=synth)
    for task in ids(4):
        state.update(task, [1.0] * 20)  # everything mastered: the frontier is empty
    state.on_policy_update()
    assert synth.targets[0]["direction"] == "harder" and synth.targets[0]["n_sites"] == 3
    assert state.poll(wait=True) == ["syn-0", "syn-2"]  # syn-1 failed validation
    assert all(name.startswith("frog-gym-synthesis") for name in synth.validated_on)
    state.on_policy_update()
    assert len(synth.targets) == 1  # no new request while tasks are on probation

    batch = state.next_tasks(3, group_size=1)
    assert batch[:4] == ["syn-0", "syn-0", "syn-2", "syn-2"]  # probation groups first, at least two episodes
    assert "syn-0" not in state
    state.update("syn-0", [1.0, 0.0])  # 0 < p̂ < 1: admitted
    state.update("syn-2", [1.0, None])  # one scored episode cannot show 0 < p̂ < 1: scheduled again
    assert state.next_tasks(1, commit=False)[:2] == ["syn-2", "syn-2"]
    state.update("syn-2", [1.0, 1.0])  # all successes: rejected
    assert "syn-0" in state and "syn-2" not in state
    assert state.posterior("syn-0") == pytest.approx(
        (2 * prior_mean({"n_sites": 3}) + 1, 2 * (1 - prior_mean({"n_sites": 3})) + 1)
    )
    stats = state.stats()
    assert (stats["synth_admitted"], stats["synth_rejected"], stats["synth_invalid"]) == (1, 1, 1)
    state.close()


def test_synthesis_asks_for_easier_tasks_when_most_are_hopeless() -> None:
    synth = ScriptedSynthesizer()
    state = CurriculumState(ids(3), CurriculumConfig(synthesis_threshold=1), synthesizer=synth)
    for task in ids(3):
        state.update(task, [0.0] * 24)
    state.on_policy_update()
    assert synth.targets[0] == {
        "direction": "easier",
        "mastered": 0,
        "hopeless": 3,
        "frontier": 0,
        "n_sites": 1,
        "statement_level": "full",
    }
    state.close()


# ---- errors --------------------------------------------------------------------------------------


def test_config_errors_say_what_to_set_instead() -> None:
    with pytest.raises(ValueError, match="Unknown curriculum mode 'dpao'. Did you mean 'dapo'?"):
        CurriculumConfig(mode="dpao")
    with pytest.raises(
        ValueError,
        match=r"staleness_share \+ uniform_share must be at most 1 \(the rest is "
        r"the frontier share\), got 0.6 \+ 0.6; lower one of them.",
    ):
        CurriculumConfig(staleness_share=0.6, uniform_share=0.6)
    with pytest.raises(ValueError, match="use a small positive weight such as 0.1 rather than 0"):
        CurriculumConfig(retired_weight=0.0)


def test_unknown_task_ids_suggest_the_nearest() -> None:
    state = CurriculumState(["flask-1", "click-2"])
    with pytest.raises(UnknownNameError, match="Unknown task 'flsk-1'. Did you mean 'flask-1'?"):
        state.update("flsk-1", [1.0])
    with pytest.raises(ValueError, match="Task ids must be unique; repeated: \\['a'\\]"):
        CurriculumState(["a", "a"])
