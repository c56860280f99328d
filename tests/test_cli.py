"""Each CLI mistake is one line saying what was wrong and how to fix it, with exit status 2."""

from __future__ import annotations

import pytest

from frog_gym.cli import main
from frog_gym.catalog.task import task_index


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    return err


def test_import_of_a_missing_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["import", "missing.jsonl", "--tasks-dir", str(tmp_path / "t")]) == 2
    assert "missing.jsonl: no such file; give a JSONL file from `frog-gym export" in one_line_error(capsys)


def test_import_of_malformed_json(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n{bad\n")
    assert main(["import", str(bad), "--tasks-dir", str(tmp_path / "t")]) == 2
    err = one_line_error(capsys)
    assert f"{bad}:2: not valid JSON (Expecting property name enclosed in double quotes at column 2)" in err
    assert "each line must be one task object" in err
    bad.write_text("[1, 2]\n")
    assert main(["import", str(bad), "--tasks-dir", str(tmp_path / "t")]) == 2
    assert f"{bad}:1: a JSON list, not a task object" in one_line_error(capsys)
    bad.write_text('{"instance_id": "a"}\n')
    assert main(["import", str(bad), "--tasks-dir", str(tmp_path / "t")]) == 2
    assert f"{bad}:1: field 'repo': missing" in one_line_error(capsys)


def test_export_hf_onto_an_existing_file(tmp_path, capsys):
    existing = tmp_path / "existing.jsonl"
    existing.write_text("")
    assert main(["export", "--format", "hf", str(existing), "--repo", "inflection"]) == 2
    assert f"{existing} is a file; `export --format hf` writes a folder" in one_line_error(capsys)
    assert existing.read_text() == ""


def test_export_swebench_onto_a_folder(tmp_path, capsys):
    assert main(["export", "--format", "swebench", str(tmp_path), "--repo", "inflection"]) == 2
    assert f"{tmp_path} is a folder; `export --format swebench` writes one JSONL file" in one_line_error(
        capsys
    )


def test_export_of_an_unknown_repository(tmp_path, capsys):
    assert main(["export", str(tmp_path / "x.jsonl"), "--repo", "inflecton"]) == 2
    assert "--repo: no repository 'inflecton'. Did you mean 'inflection'?" in one_line_error(capsys)


def test_tasks_of_an_unknown_repository(capsys):
    assert main(["tasks", "--repo", "tenacty"]) == 2
    err = one_line_error(capsys)
    assert "--repo: no repository 'tenacty'." in err and "See `frog-gym registry list`." in err
    assert main(["tasks", "--repo", "inflection"]) == 0
    assert "inflection__" in capsys.readouterr().out


def test_bench_with_a_long_list_of_unknown_task_ids(capsys):
    ids = ",".join(f"inflection__nosuch-{i:040d}" for i in range(10))
    assert main(["bench", "--agent", "noop", "--suite", ids]) == 2
    err = one_line_error(capsys)
    assert "--suite: Unknown task 'inflection__nosuch-" in err and "See `frog-gym tasks`." in err


def test_bench_with_a_long_list_of_task_ids_is_a_suite(tmp_path, capsys):
    ids = sorted(i for i in task_index() if i.startswith("inflection__"))[:10]
    if len(ids) < 10:
        pytest.skip("fewer than 10 inflection tasks registered")
    out = tmp_path / "h.toml"
    assert main(["bench", "--agent", "noop", "--suite", ",".join(ids), "--write-harness", str(out)]) == 0
    assert "(10 tasks)" in capsys.readouterr().out


def test_setup_finds_a_working_bubblewrap(capsys):
    assert main(["setup"]) == 0
    assert "bubblewrap works" in capsys.readouterr().out


def test_setup_without_bubblewrap_installs_it_with_apt_or_says_what_to_do(tmp_path):
    import os
    import subprocess
    import sys

    empty = tmp_path / "bin"
    empty.mkdir()
    cmd = [sys.executable, "-m", "frog_gym.cli", "setup", "--dry-run"]
    proc = subprocess.run(
        cmd, env={**os.environ, "PATH": str(empty)}, capture_output=True, text=True, timeout=120
    )
    assert (
        proc.returncode == 1 and "not a Debian/Ubuntu system; install the 'bubblewrap' package" in proc.stderr
    )
    (empty / "apt-get").write_text("#!/bin/sh\nexit 1\n")  # never run: --dry-run
    (empty / "apt-get").chmod(0o755)
    proc = subprocess.run(
        cmd, env={**os.environ, "PATH": str(empty)}, capture_output=True, text=True, timeout=120
    )
    want = "frog-gym setup: apt-get install -y -qq --no-install-recommends bubblewrap"
    if os.geteuid() != 0:
        want = "you are not root and there is no sudo"
    assert want in proc.stderr, proc.stderr


def test_generate_harden_with_a_negative_count(capsys):
    assert main(["generate", "toolz", "--harden", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "frog-gym generate: --harden must be >= 0, got -1" and "Traceback" not in err


@pytest.fixture
def a_file(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("not a folder\n")
    return f


@pytest.mark.parametrize("argv, says", [
    (["export", "--format", "swebench", "{f}/x/out.jsonl", "--repo", "inflection"], "OUT: cannot write {f}/x/out.jsonl: {f} is a file, not a folder"),
    (["export", "--format", "hf", "{f}/x", "--repo", "inflection"], "OUT: cannot write {f}/x: {f} is a file, not a folder"),
    (["export", "--format", "swebench", "{f}/out.jsonl", "--repo", "inflection"], "OUT: cannot write {f}/out.jsonl: {f} is a file"),
    (["bench", "--agent", "noop", "--suite", "first", "--out", "{f}/run"], "--out: cannot write {f}/run: {f} is a file, not a folder"),
    (["bench", "--agent", "noop", "--suite", "{f}.missing/ids.txt", "--out", "{d}/run"], "Cannot read the suite file {f}.missing/ids.txt: No such file or directory"),
    (["bench", "--agent", "nosuch", "--suite", "first", "--out", "{d}/run"], "Unknown agent 'nosuch'"),
])
def test_unusable_paths_are_one_line_before_anything_is_made(argv, says, a_file, tmp_path, capsys):
    fill = {"f": str(a_file), "d": str(tmp_path)}
    assert main([a.format(**fill) for a in argv]) in (1, 2)
    err = one_line_error(capsys)
    assert says.format(**fill) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # no run folder, no partial output


def test_an_unusable_cache_folder_is_one_line(a_file, capsys, monkeypatch):
    monkeypatch.setenv("FROG_GYM_HOME", str(a_file / "home"))
    assert main(["bench", "--agent", "noop", "--suite", "first", "--out", str(a_file.parent / "run"),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"Cannot create $FROG_GYM_HOME {a_file / 'home'}: Not a directory. Set FROG_GYM_HOME" in err
    assert not (a_file.parent / "run").exists()  # the failed start left no run folder


def test_the_demo_is_a_sensible_episode_under_hidden_tests(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    steps = out.split("step ")
    assert "Capital" in steps[1] and "capital" in steps[4]  # the statement's reproduction, before and after the fix
    assert "ERROR" not in out and "not found" not in out  # it never runs the hidden tests by name
    assert "RESOLVED_FULL  reward=1.0" in out
