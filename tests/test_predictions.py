"""SWE-bench interop: predictions export, and our per-test statuses against SWE-bench's own log parser."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from frog_gym.bench.harness import EpisodeResult
from frog_gym.bench.predictions import export_predictions

TASK = "inflection__handwritten-0001"  # 8 failing tests among 455, parametrized ids


def test_predictions_are_swebench_records(tmp_path):
    results = [EpisodeResult("b__x-2", 0, 0, "apr", "fp", model_patch="diff --git a/m b/m\n"),
               EpisodeResult("a__x-1", 0, 0, "apr", "fp", model_patch=""),
               EpisodeResult("a__x-1", 1, 1, "apr", "fp", model_patch="other sample"),
               EpisodeResult("c__x-3", 0, 0, "apr", "fp", infra_failure="sandbox failed")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
    out = tmp_path / "preds.jsonl"
    assert export_predictions(tmp_path, out, model_name="frog-apr") == 2
    preds = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert preds == [
        {"instance_id": "a__x-1", "model_name_or_path": "frog-apr", "model_patch": ""},
        {"instance_id": "b__x-2", "model_name_or_path": "frog-apr", "model_patch": "diff --git a/m b/m\n"},
    ]


def test_our_statuses_agree_with_swebench_log_parser_on_the_same_run(tmp_path):
    log_parsers = pytest.importorskip(
        "swebench.harness.log_parsers",
        reason="swebench is not installed (pip install 'frog-gym[swebench]'); it provides the reference parser")
    from frog_gym.grading.runner import TestStatus, test_files_of
    from frog_gym.sandbox import make_sandbox
    from frog_gym.sandbox.base import Limits
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.catalog.spec import load_repo
    from frog_gym.catalog.task import load_task
    from frog_gym.sandbox.workspace import Workspace, template_for

    task = load_task(TASK)
    repo = prepare(load_repo(task.repo))
    ws = Workspace(tmp_path / "ws")
    ws.sync(template_for(repo, task.bug_patch, TASK))
    io = tmp_path / "io"
    (io / "in").mkdir(parents=True)
    (io / "out").mkdir()
    ids = task.selected_tests
    (io / "in" / "select.json").write_text(json.dumps(list(ids)))
    with resources.as_file(resources.files("frog_gym").joinpath("_plugin")) as plugin:
        sb = make_sandbox("local", repo, ws.path, Limits(command_timeout=300, output_cap=8 << 20),
                          binds=((io / "in", "/frog/in", False), (io / "out", "/frog/out", True),
                                 (Path(plugin), "/frog/plugin", False)))
        # One pytest run, read two ways: our report plugin (what grading trusts) and SWE-bench's -rA log.
        argv = [str(repo.python), "-m", "pytest", *repo.spec.pytest_args, "-rA", "-p", "frog_report",
                *test_files_of(ids)]
        result = sb.exec(argv, 300, env={"PYTHONPATH": "/frog/plugin", "FROG_REPORT": "/frog/out/report.json",
                                         "FROG_SELECT": "/frog/in/select.json"})
        sb.close()
    assert result.dropped_bytes == 0, "the log was cut; raise the output cap"
    ours = json.loads((io / "out" / "report.json").read_text())["tests"]
    theirs = log_parsers.parse_log_pytest(result.output, None)
    assert set(ours) == set(ids)
    plain = [t for t in ours if " " not in t]
    assert len(plain) > 400
    assert {t: ours[t] for t in plain} == {t: theirs.get(t) for t in plain}
    # SWE-bench's parser splits lines on whitespace, so an id with a space (a parametrized string) is cut
    # at its first space; it still agrees on the status under that cut name.
    spaced = [t for t in ours if " " in t]
    assert spaced and all(theirs.get(t.split()[0]) == ours[t] for t in spaced
                          if sum(u.split()[0] == t.split()[0] for u in spaced) == 1)
    failing = {t for t, s in ours.items() if not TestStatus(s).ok}
    assert failing == set(task.FAIL_TO_PASS)
