"""Online synthesis end to end: a curriculum whose frontier is empty asks the mutation generators for
tasks, they are validated in the background on the real repository's tests, written where the env finds
them, put on probation, and admitted after a first group with mixed results run in the real env."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from frog_gym.generators.online import MutationSynthesizer

from frog_gym.catalog import task as task_module
from frog_gym.agents.oracle import OracleAgent
from frog_gym.curriculum import CurriculumConfig, CurriculumState, prior_mean
from frog_gym.env.core import FrogSWEEnv, default_pool
from frog_gym.errors import UnknownNameError
from frog_gym.catalog.task import TASK_DIRS_ENV, load_task, refresh_tasks, task_index

POOL = ["inflection__handwritten-0001", "inflection__handwritten-0002", "inflection__handwritten-0003"]


@pytest.fixture
def synth(tmp_path, monkeypatch):
    monkeypatch.delenv(TASK_DIRS_ENV, raising=False)  # restored afterwards, like the task caches below
    s = MutationSynthesizer(["inflection"], tmp_path / "synthesized", seed=3)
    yield s
    s.close()
    monkeypatch.delenv(TASK_DIRS_ENV, raising=False)
    refresh_tasks()


def episode(task_id: str, fix: bool) -> float:
    """One episode in the real env: the oracle's gold fix, or an immediate submit."""
    env = FrogSWEEnv()
    try:
        obs, info = env.reset(options={"task_id": task_id})
        agent = OracleAgent()
        agent.reset(obs, info)
        while True:
            action = agent.act(obs) if fix else {"tool": "submit"}
            obs, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                assert info.get("infra_failure") is None, info
                return float(reward)
    finally:
        env.close()


def test_a_dry_frontier_synthesizes_validated_tasks_the_env_can_run(synth, tmp_path):
    config = CurriculumConfig(synthesis_threshold=2, synthesis_batch=3, synthesis_workers=2)
    state = CurriculumState(POOL, config, synthesizer=synth)
    for task_id in POOL:  # every pool task hopeless: no frontier, and the evidence says "easier"
        state.update(task_id, [0.0] * 24)
    state.on_policy_update()
    assert state.stats()["synth_proposed"] == 3
    admitted = state.poll(wait=True)
    stats = state.stats()
    assert len(admitted) + stats["synth_invalid"] == 3
    assert admitted, f"no proposal validated; reasons: {synth.rejected}"
    assert all(isinstance(reason, str) and reason for reason in synth.rejected.values())

    # What was written is a complete task with the features the curriculum asked for.
    records = [json.loads(line) for line in (tmp_path / "synthesized" / "inflection.jsonl").read_text().splitlines()]
    assert sorted(r["instance_id"] for r in records) == sorted(admitted)
    first = load_task(admitted[0])
    assert first.statement_level == "full" and first.features["n_sites"] == 1
    assert first.FAIL_TO_PASS and first.PASS_TO_PASS and first.provenance["online"] is True
    assert admitted[0] in task_index() and admitted[0] not in state  # on probation, not yet in the pool

    # Probation groups are scheduled first; a group with one fix and one plain submit is mixed.
    schedule = state.next_tasks(1, group_size=2, commit=False)
    assert schedule == [admitted[0]] * 2
    rewards = [episode(admitted[0], fix=True), episode(admitted[0], fix=False)]
    assert rewards == [1.0, 0.0]
    state.update(admitted[0], rewards)
    assert admitted[0] in state and state.stats()["synth_admitted"] == 1
    prior = prior_mean({"n_sites": 1, "statement_level": "full"}) * config.prior_strength
    assert state.posterior(admitted[0]) == pytest.approx((prior + 1, config.prior_strength - prior + 1))
    state.close()


def test_harder_targets_combine_validated_bugs_of_one_package(synth):
    proposals = synth.propose(2, {"direction": "harder", "n_sites": 2, "statement_level": "vague"})
    assert len(proposals) == 2
    for p in proposals:
        assert p.features["n_sites"] == 2 and p.features["statement_level"] == "vague"
        assert "__combo2-" in p.task_id
    results: dict[str, Any] = {p.task_id: synth.validate(p) for p in proposals}
    for task_id, ok in results.items():
        if ok:
            t = load_task(task_id)
            assert len(t.provenance["parts"]) == 2 and t.statement_level == "vague"
            parts = [load_task(p) for p in t.provenance["parts"]]
            assert {f for p in parts for f in p.FAIL_TO_PASS} <= set(t.FAIL_TO_PASS)
        else:
            assert synth.rejected[task_id]
    with pytest.raises(ValueError, match="was not proposed by this synthesizer"):
        synth.validate(proposals[0])


def test_proposals_skip_sites_that_registered_tasks_already_use(synth):
    used = {
        f"{s['path']}:{s['start']}:{s['end']}:{s['replacement']}"
        for iid in task_index() if iid.startswith("inflection__")
        for s in load_task(iid).provenance.get("sites", [])
    }
    proposals = synth.propose(20, {"n_sites": 1, "statement_level": "medium"})
    assert len(proposals) == 20 and len({p.task_id for p in proposals}) == 20
    keys = {s.key for p in proposals for s in synth._proposed[p.task_id][1].sites}
    assert used and not keys & used


def test_unknown_repositories_are_named(tmp_path):
    with pytest.raises(UnknownNameError, match="inflexion.*inflection"):
        MutationSynthesizer(["inflexion"], tmp_path)
    with pytest.raises(ValueError, match="at least one repository"):
        MutationSynthesizer([], tmp_path)


def test_added_task_folders_are_inherited_and_registered_ids_win(tmp_path, monkeypatch):
    monkeypatch.delenv(TASK_DIRS_ENV, raising=False)
    registered = load_task(POOL[0])
    clash = json.loads(registered.to_json()) | {"problem_statement": "a copy that must not shadow the registry"}
    extra = json.loads(registered.to_json()) | {"instance_id": "inflection__online-test-0001"}
    (tmp_path / "inflection.jsonl").write_text(json.dumps(clash) + "\n" + json.dumps(extra) + "\n")
    task_module.add_task_dir(tmp_path)
    try:
        assert task_module.extra_task_dirs() == [tmp_path.resolve()]
        assert str(tmp_path.resolve()) in os.environ[TASK_DIRS_ENV].split(os.pathsep)
        assert load_task(POOL[0]).problem_statement == registered.problem_statement
        assert load_task(extra["instance_id"]).patch == registered.patch
        # Loadable by id, but neither FrogSWE-v0 nor the named suites draw on it.
        assert extra["instance_id"] not in task_module.registered_task_ids()
        assert extra["instance_id"] not in default_pool() and POOL[0] in default_pool()
    finally:
        monkeypatch.delenv(TASK_DIRS_ENV, raising=False)
        refresh_tasks()
