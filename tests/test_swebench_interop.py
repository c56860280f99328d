"""SWE-bench's own code grades our exports and our raw test logs the way frog-gym grades them.

Each grade keeps its raw test log (``GradeReport.log_path``); swebench's ``make_test_spec`` accepts the
exported row, its ``parse_log_tap`` parser (named by the row) reads the log with test ids whole (spaces
included), and its ``get_eval_report`` must agree with our grade: resolved or not, and the success and
failure lists of FAIL_TO_PASS and PASS_TO_PASS. The exported ``eval_script``, run in our sandbox, must
produce a log that swebench grades the same way again.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

from frog_gym import paths
from frog_gym.generators import interop
from frog_gym.grading.grade import GradeReport, grade
from frog_gym.sandbox import Limits, make_sandbox
from frog_gym.catalog.live import task_spec
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo, repo_names
from frog_gym.catalog.task import Task, load_task, task_index
from frog_gym.sandbox.workspace import Workspace, apply_patch, template_for

swebench = pytest.importorskip("swebench", reason="the 'swebench' extra: pip install 'frog-gym[swebench]'")
from swebench.harness.grading import get_eval_report  # noqa: E402
from swebench.harness.utils import make_test_spec  # noqa: E402


def swebench_verdict(task: Task, log_path: str) -> dict:
    spec = make_test_spec(interop.to_swebench(task))
    entry = get_eval_report(
        spec,
        {"instance_id": task.instance_id, "model_name_or_path": "frog-gym", "model_patch": "diff"},
        log_path,
        include_tests_status=True,
    )[task.instance_id]
    assert entry["patch_successfully_applied"], Path(log_path).read_text()[:3000]
    return entry


def assert_parity(task: Task, ours: GradeReport) -> None:
    assert ours.infra_failure is None, ours.infra_failure
    assert ours.log_path and Path(ours.log_path).is_relative_to(paths.home()), ours.log_path
    theirs = swebench_verdict(task, ours.log_path)
    assert theirs["resolved"] == ours.is_resolved, (task.instance_id, ours.resolved)
    assert theirs["tests_status"]["FAIL_TO_PASS"] == ours.fail_to_pass, task.instance_id
    assert theirs["tests_status"]["PASS_TO_PASS"] == ours.pass_to_pass, task.instance_id


def grade_bug_and_gold(task: Task, tmp: Path) -> tuple[GradeReport, GradeReport, Path]:
    """Our grades of the untouched buggy tree and of the gold fix; also returns the gold tree."""
    repo = prepare(task_spec(task))  # a FrogLive task runs on its own release
    template = template_for(repo, task.bug_patch, task.instance_id)
    ws, scratch = Workspace(tmp / "ws"), Workspace(tmp / "scratch")
    ws.sync(template)
    bug = grade(repo, task, template, ws.changes(), scratch)
    apply_patch(ws.path, task.patch, "the gold patch")
    gold = grade(repo, task, template, ws.changes(), scratch)
    return bug, gold, ws.path


def spaced(tasks: list[Task]) -> list[Task]:
    """Tasks whose test ids hold spaces first (swebench's pytest parser would cut them)."""
    return sorted(tasks, key=lambda t: (not any(" " in i for i in t.selected_tests), t.instance_id))


def test_export_row_carries_what_make_test_spec_needs():
    task = spaced([load_task(i) for i in task_index() if i.startswith("humanize__")])[0]
    row = interop.to_swebench(task)
    spec = make_test_spec(row)
    assert row["repo"] == "python-humanize/humanize" and spec.repo == row["repo"]
    assert row["log_parser"] == "parse_log_tap" and row["eval_type"] == "pass_and_fail" and row["image"]
    assert row["created_at"] == load_repo("humanize").source.released != ""
    assert spec.FAIL_TO_PASS == list(task.FAIL_TO_PASS) and any(" " in t for t in task.selected_tests)
    assert "SWEBENCH_TEST_EXIT_CODE=$?" in spec.eval_script_list  # its exit-code recording found our marker
    assert interop.from_row(row) == task and interop.from_row(row).created_at == task.created_at
    foreign = {k: v for k, v in row.items() if not k.startswith("frog_")}  # another tool's copy of the row
    assert interop.from_row(foreign).repo == "humanize"


def test_raw_logs_parity_on_tasks_with_spaced_ids(tmp_path):
    """Fast variant: one task of two repositories whose ids hold spaces, bug and gold."""
    for repo in ("humanize", "iniconfig"):
        task = spaced([load_task(i) for i in task_index() if i.startswith(f"{repo}__")])[0]
        bug, gold, _ = grade_bug_and_gold(task, tmp_path / repo)
        assert not bug.is_resolved and gold.is_resolved
        assert_parity(task, bug)
        assert_parity(task, gold)
        text = Path(gold.log_path).read_text(encoding="utf-8")
        assert any(" " in t and f" {t}\n" in text for t in task.selected_tests)


def test_raw_logs_parity_when_tests_are_carried_over(tmp_path, monkeypatch):
    """Under test-impact selection the log still gives SWE-bench a status for every selected test (the carried-over
    ones as passed, then listed as not run), so its verdict is ours."""
    from frog_gym.generators import coverage_map

    monkeypatch.setenv("FROG_GYM_IMPACT", "1")
    coverage_map.build(prepare(load_repo("humanize")))
    task = spaced([load_task(i) for i in task_index() if i.startswith("humanize__") and "__combo" not in i])[0]
    bug, gold, _ = grade_bug_and_gold(task, tmp_path)
    assert gold.is_resolved and gold.inferred and not bug.is_resolved
    for report in (bug, gold):
        assert_parity(task, report)
        text = Path(report.log_path).read_text(encoding="utf-8")
        assert all(f"inferred {t}\n" in text for t in report.inferred)


def test_a_log_cannot_spoof_results_from_pytest_output(tmp_path):
    """Output of the code under test that prints SWE-bench's markers is defused in the raw log."""
    from frog_gym.grading.runner import RunResult, TestStatus, write_test_log

    ids = ("t.py::test_a",)
    fake = ">>>>> Start Test Output\nok 1 t.py::test_a\n>>>>> End Test Output\n"
    log = write_test_log(tmp_path / "g.log", ids, RunResult({ids[0]: TestStatus.FAILED}, 1, output=fake))
    task = load_task(sorted(i for i in task_index() if i.startswith("inflection__"))[0])
    task = Task(**{**task.__dict__, "FAIL_TO_PASS": ids, "PASS_TO_PASS": ()})
    assert not swebench_verdict(task, log)["resolved"]
    assert Path(log).read_text().count(">>>>> Start Test Output") == 1


def test_exported_eval_script_grades_like_we_do(tmp_path):
    """The row's eval_script, run in the repository's sandbox over the gold tree, gives swebench the
    same verdict as our grade."""
    task = spaced([load_task(i) for i in task_index() if i.startswith("humanize__")])[0]
    bug, gold, tree = grade_bug_and_gold(task, tmp_path)
    repo = prepare(load_repo(task.repo))
    for state, ours in (("gold", gold),):
        with tempfile.TemporaryDirectory(dir=paths.home()) as io:
            (Path(io) / "in").mkdir()
            (Path(io) / "out").mkdir()
            (Path(io) / "in" / "eval.sh").write_text(
                interop.to_swebench(task)["eval_script"], encoding="utf-8"
            )
            sb = make_sandbox(
                "local",
                repo,
                tree,
                Limits(command_timeout=600),
                binds=((Path(io) / "in", "/frog/in", False), (Path(io) / "out", "/frog/out", True)),
            )
            result = sb.exec(["bash", "-c", "bash /frog/in/eval.sh > /frog/out/eval.log 2>&1"], 600)
            sb.close()
            assert not result.timed_out
            theirs = swebench_verdict(task, str(Path(io) / "out" / "eval.log"))
        assert theirs["resolved"] == ours.is_resolved, state
        assert theirs["tests_status"]["FAIL_TO_PASS"] == ours.fail_to_pass
        assert theirs["tests_status"]["PASS_TO_PASS"] == ours.pass_to_pass


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_raw_logs_parity_across_every_repository(tmp_path):
    """At least 50 tasks, two per repository (spaced ids first), each graded bug and gold."""
    by_repo: dict[str, list[Task]] = defaultdict(list)
    for i in task_index():
        t = load_task(i)
        by_repo[t.repo].append(t)
    chosen = [t for repo in sorted(by_repo) for t in spaced(by_repo[repo])[:2]]
    assert len(chosen) >= 50 and {t.repo for t in chosen} == set(by_repo) >= set(repo_names()) - {"frogtoy"}
    counts = {"tasks": 0, "grades": 0, "spaced": 0}
    for t in chosen:
        bug, gold, _ = grade_bug_and_gold(t, tmp_path / t.instance_id)
        assert not bug.is_resolved and gold.is_resolved, t.instance_id
        assert_parity(t, bug)
        assert_parity(t, gold)
        counts["tasks"] += 1
        counts["grades"] += 2
        counts["spaced"] += any(" " in i for i in t.selected_tests)
        print(t.instance_id, "bug", bug.resolved.value, "gold", gold.resolved.value, "parity ok", flush=True)
    print(json.dumps(counts))


def test_the_env_reports_the_raw_log_of_its_grade():
    import gymnasium as gym

    import frog_gym  # noqa: F401  (registers the envs)

    task = spaced([load_task(i) for i in task_index() if i.startswith("iniconfig__")])[0]
    env = gym.make(f"FrogSWE/{task.instance_id}-v0").unwrapped
    try:
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step({"tool": "submit"})
    finally:
        env.close()
    assert terminated and reward == 0.0
    log = Path(info["report"]["log_path"])
    assert log.is_file() and log.is_relative_to(paths.home() / "grades")
    assert not swebench_verdict(task, str(log))["resolved"]
