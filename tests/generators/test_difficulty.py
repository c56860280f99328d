"""Measured difficulty: a real bench run's results become a task's solve rates, curriculum priors and the
`frog-gym tasks --difficulty` table (on a copy of a registered task in a task folder of the test's own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from frog_gym.bench.runner import bench
from frog_gym.curriculum import CurriculumConfig, CurriculumState, prior_beta, prior_mean
from frog_gym.generators.difficulty import breakdown, histogram, record_results, reference_pass_rates, tally
from frog_gym.bench.harness import HarnessSpec
from frog_gym.catalog.task import TASK_DIRS_ENV, add_task_dir, load_task, refresh_tasks, task_index

TASK = "inflection__handwritten-0002"


@pytest.fixture()
def own_task(tmp_path, monkeypatch):
    monkeypatch.setenv(TASK_DIRS_ENV, "")
    record = json.loads(load_task(TASK).to_json())
    record["instance_id"] = "inflection__difftest-0001"
    d = tmp_path / "tasks"
    d.mkdir()
    (d / "inflection.jsonl").write_text(json.dumps(record) + "\n")
    add_task_dir(d)
    yield record["instance_id"], d / "inflection.jsonl"
    refresh_tasks()


def test_bench_results_become_solve_rates_priors_and_a_histogram(own_task, tmp_path):
    iid, path = own_task
    spec = HarnessSpec.for_suite(iid, max_steps=8)
    run = tmp_path / "run"
    bench(spec, "oracle", {}, run, workers=1, progress=False)
    bench(spec.replace(samples_per_task=2), "noop", {}, tmp_path / "run-noop", workers=1, progress=False)
    before = load_task(iid).content_hash
    assert sum(record_results(run).values()) == 1
    record_results(tmp_path / "run-noop", label="noop")
    rates = load_task(iid).solve_rates
    assert rates["oracle"]["solved"] == rates["oracle"]["runs"] == 1
    assert rates["oracle"]["fingerprint"] == spec.fingerprint() and rates["oracle"]["max_steps"] == 8
    assert rates["noop"] == {"solved": 0, "runs": 2, "fingerprint": spec.replace(samples_per_task=2).fingerprint(),
                             "max_steps": 8}
    assert load_task(iid).content_hash == before  # measured difficulty is not part of what is graded
    assert reference_pass_rates([iid, TASK], "oracle") == {iid: (1, 1)}
    assert reference_pass_rates([iid, TASK], "noop") == {iid: (0, 2)}
    noop = CurriculumState.from_registry([iid, TASK], prior_agent="noop")
    oracle = CurriculumState.from_registry([iid, TASK], prior_agent="oracle")
    a, b = noop.posterior(iid)
    assert a / (a + b) < _mean(noop, TASK) < _mean(oracle, iid)  # same features: the runs decide
    table = histogram([load_task(iid), load_task(TASK)])
    assert "oracle" in table and "noop" in table and "unmeasured" in table


def _mean(cur: CurriculumState, task_id: str) -> float:
    a, b = cur.posterior(task_id)
    return a / (a + b)


def _write_tasks(directory, rows):
    """Copies of the registered ``TASK`` as ``(repo_file, id, statement_level, n_sites, solve_rates)``."""
    directory.mkdir(exist_ok=True)
    base = json.loads(load_task(TASK).to_json())
    files: dict[str, list[str]] = {}
    for repo_file, iid, level, n_sites, rates in rows:
        features = dict(base["features"], statement_level=level, n_sites=n_sites, family="comparison_flip")
        record = dict(base, instance_id=iid, repo=repo_file.split(".")[0], statement_level=level, features=features,
                      solve_rates=rates)
        files.setdefault(repo_file, []).append(json.dumps(record))
    for name, lines in files.items():
        (directory / name).write_text("\n".join(lines) + "\n")


def _rates(agent, solved, runs):
    return {agent: {"solved": solved, "runs": runs, "fingerprint": "f", "max_steps": 30}}


def test_from_registry_takes_solve_rates_and_features_from_a_task_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(TASK_DIRS_ENV, "")
    _write_tasks(tmp_path / "tasks", [
        ("inflection.jsonl", "inflection__prior-0001", "full", 1, _rates("apr", 1, 1)),
        ("inflection.jsonl", "inflection__prior-0002", "full", 1, _rates("apr", 0, 1)),
        ("inflection.jsonl", "inflection__prior-0003", "vague", 3, _rates("apr", 0, 1)),
        ("inflection.jsonl", "inflection__prior-0004", "full", 1, _rates("other", 2, 2)),
    ])
    add_task_dir(tmp_path / "tasks")
    try:
        pool = [f"inflection__prior-000{i}" for i in range(1, 5)] + ["synthesized-not-in-registry"]
        config = CurriculumConfig(seed=1)
        cur = CurriculumState.from_registry(pool, config)  # prior_agent defaults to apr
        solved, failed, failed_hard, unmeasured = (_mean(cur, t) for t in pool[:4])
        easy = {"n_sites": 1, "statement_level": "full"}
        assert cur.posterior(pool[0]) == pytest.approx(prior_beta(easy, (1, 1), config))
        assert solved > unmeasured > failed > failed_hard  # a failure lowers, the features still order
        assert unmeasured == pytest.approx(prior_mean(easy))
        assert cur.posterior("synthesized-not-in-registry") == (1.0, 1.0)
        flat = CurriculumState.from_registry(pool, config, prior_agent="none")
        assert _mean(flat, pool[0]) == _mean(flat, pool[1]) == pytest.approx(prior_mean(easy))
        assert _mean(flat, pool[2]) == pytest.approx(prior_mean({"n_sites": 3, "statement_level": "vague"}))
        other = CurriculumState.from_registry(pool, config, prior_agent="other")
        assert _mean(other, pool[3]) > _mean(other, pool[0]) == pytest.approx(prior_mean(easy))
    finally:
        refresh_tasks()


def _cell(table: str, group: str, agent: str) -> tuple[int, int, str]:
    """(tasks, measured, rate) of one group's row for ``agent`` in a :func:`breakdown` table."""
    lines = table.splitlines()
    header = [c.strip() for c in lines[1].split("|")]
    row = next(line for line in lines if line.split()[0] == group)
    cells = [c.split() for c in row.split("|")]
    measured, rate = cells[header.index(agent)]
    return int(cells[0][1]), int(measured), rate


def test_cli_difficulty_breaks_solve_rates_down_by_level_tier_and_family_for_one_repo(tmp_path, monkeypatch):
    monkeypatch.setenv(TASK_DIRS_ENV, "")
    registered = {lv: sum(1 for i in task_index() if load_task(i).repo == "inflection"
                          and load_task(i).features.get("statement_level", load_task(i).statement_level) == lv)
                  for lv in ("full", "medium", "vague")}
    _write_tasks(tmp_path / "tasks", [
        ("inflection.jsonl", "inflection__probe-0001", "full", 1, _rates("probe", 1, 2)),
        ("inflection.jsonl", "inflection__probe-0002", "full", 1, _rates("probe", 0, 1)),
        ("inflection.jsonl", "inflection__probe-0003", "vague", 2, _rates("probe", 1, 1)),
        ("inflection.jsonl", "inflection__probe-0004", "medium", 1, {}),
        ("parse.jsonl", "parse__probe-0001", "medium", 1, _rates("probe", 1, 1)),  # another repo: filtered out
    ])
    env = {**os.environ, TASK_DIRS_ENV: str(tmp_path / "tasks")}
    out = subprocess.run([sys.executable, "-m", "frog_gym.cli", "tasks", "--repo", "inflection", "--difficulty"],
                         capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, out.stderr
    table = out.stdout[out.stdout.index("by group"):]
    assert _cell(table, "level=full", "probe") == (registered["full"] + 2, 2, "0.333")
    assert _cell(table, "level=vague", "probe") == (registered["vague"] + 1, 1, "1.000")
    assert _cell(table, "level=medium", "probe") == (registered["medium"] + 1, 0, "-")  # parse's is not counted
    assert _cell(table, "family=comparison_flip", "probe")[1:] == (3, "0.500")
    tiers = [_cell(table, f"tier={t}", "probe")[1] for t in ("easy", "medium", "hard") if f"tier={t} " in table]
    assert sum(tiers) == 3


def test_breakdown_is_empty_without_measurements():
    import dataclasses

    assert breakdown([dataclasses.replace(load_task(TASK), solve_rates={})]) == ""  # registered ones carry apr's


def test_tally_refuses_mixed_harnesses_and_skips_infra_failures():
    from frog_gym.bench.harness import EpisodeResult

    a = EpisodeResult("t", 0, 0, "apr", "f1", resolved=True)
    b = EpisodeResult("t", 1, 1, "apr", "f1", infra_failure="sandbox broke")
    assert tally([a, b]) == {"t": {"apr": {"solved": 1, "runs": 1, "fingerprint": "f1", "max_steps": None}}}
    with pytest.raises(ValueError, match="two harnesses"):
        tally([a, EpisodeResult("t", 1, 1, "apr", "f2")])


def test_cli_difficulty_and_bad_import_path(tmp_path):
    out = subprocess.run([sys.executable, "-m", "frog_gym.cli", "tasks", "--repo", "frogtoy", "--difficulty"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "6 tasks" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "frog_gym.cli", "tasks", "--import-results", str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "holds no results.jsonl" in bad.stderr and "Traceback" not in bad.stderr


def test_docstring_examples():
    import doctest

    from frog_gym.generators import difficulty

    assert doctest.testmod(difficulty).attempted >= 4 and doctest.testmod(difficulty).failed == 0


def test_cli_lists_the_tasks_an_agent_is_not_measured_on_as_a_suite_file(tmp_path, monkeypatch):
    _write_tasks(tmp_path / "tasks", [
        ("inflection.jsonl", "inflection__probe-0001", "full", 1, _rates("probe", 1, 2)),
        ("inflection.jsonl", "inflection__probe-0002", "full", 1, {}),
    ])
    env = {**os.environ, TASK_DIRS_ENV: str(tmp_path / "tasks")}
    out = subprocess.run([sys.executable, "-m", "frog_gym.cli", "tasks", "--repo", "inflection", "--unmeasured", "probe"],
                         capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, out.stderr
    ids = out.stdout.split()
    inflection = [i for i in task_index() if load_task(i).repo == "inflection"]
    assert "inflection__probe-0002" in ids and "inflection__probe-0001" not in ids
    assert len(ids) == len(inflection) + 1  # every registered inflection task, none measured by "probe"
    suite, harness = tmp_path / "rest.txt", tmp_path / "harness.toml"
    suite.write_text(out.stdout)
    made = subprocess.run([sys.executable, "-m", "frog_gym.cli", "bench", "--agent", "noop", "--suite", str(suite),
                           "--write-harness", str(harness)], capture_output=True, text=True, env=env, check=False)
    assert made.returncode == 0, made.stderr  # `frog-gym bench --suite FILE` takes the list as it is
    assert sorted(HarnessSpec.load(harness).task_ids) == sorted(ids)


def test_every_registered_task_carries_the_reference_solve_rate():
    from frog_gym.catalog.task import registered_task_ids

    ids = registered_task_ids()  # the registry itself, not folders another test added
    # every task, new ones included, is measured before it is registered (the command below measures the rest)
    missing = [i for i in ids if "apr" not in load_task(i).solve_rates]
    assert not missing, (f"{len(missing)} task(s) without a measured difficulty, e.g. {missing[:3]}: "
                         "`frog-gym tasks --unmeasured apr > rest.txt && frog-gym bench --agent apr --max-steps 40 "
                         "--suite rest.txt --out runs/apr-rest && frog-gym tasks --import-results runs/apr-rest`")
    entries = [load_task(i).solve_rates["apr"] for i in ids if "apr" in load_task(i).solve_rates]
    assert {e["max_steps"] for e in entries} == {40}  # one fixed budget
    assert all(e["runs"] >= 1 and 0 <= e["solved"] <= e["runs"] and e["fingerprint"] for e in entries)


def test_every_stored_apr_solve_is_a_committed_run():
    """A task ``apr`` solved has that run's row in ``docs/difficulty/*.results.jsonl`` (the fix the static check's
    slow test reads back as an honest fix): a solve rate imported from a run that was not kept fails here."""
    from pathlib import Path

    from frog_gym.catalog.task import registered_task_ids

    rows = set()
    for f in sorted((Path(__file__).parents[2] / "docs" / "difficulty").glob("*.results.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if r["agent"] == "apr" and r["resolved"] and r["model_patch"]:
                rows.add((r["task_id"], r["fingerprint"]))
    solved = [(i, load_task(i).solve_rates["apr"]["fingerprint"]) for i in registered_task_ids()
              if (load_task(i).solve_rates.get("apr") or {}).get("solved")]
    assert solved and [s for s in solved if s not in rows] == [], \
        "copy the run's results.jsonl and harness.toml into docs/difficulty/ (apr40-<label>.*)"
