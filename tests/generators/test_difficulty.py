"""Measured difficulty: a real bench run's results become a task's solve rates, curriculum priors and the
`frog-gym tasks --difficulty` table (on a copy of a registered task in a task folder of the test's own)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from frog_gym.bench import bench
from frog_gym.curriculum import CurriculumState
from frog_gym.generators.difficulty import histogram, record_results, reference_pass_rates, tally
from frog_gym.harness import HarnessSpec
from frog_gym.task import TASK_DIRS_ENV, add_task_dir, load_task, refresh_tasks

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
    assert reference_pass_rates([iid, TASK], "oracle") == {iid: 1.0}
    cur = CurriculumState([iid, TASK], reference_pass_rates=reference_pass_rates([iid, TASK], "noop"))
    assert cur.posterior(iid)[0] < cur.posterior(TASK)[0]  # a 0% prior is below the untried default
    table = histogram([load_task(iid), load_task(TASK)])
    assert "oracle" in table and "noop" in table and "unmeasured" in table


def test_tally_refuses_mixed_harnesses_and_skips_infra_failures():
    from frog_gym.harness import EpisodeResult

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
