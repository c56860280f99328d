"""The report plugin's selection (frog_gym/_plugin/frog_report.py): deselecting, and in grading collecting only
the selected ids, run by a real pytest on a small test file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

TESTS = textwrap.dedent("""
    import pytest


    def _id(x):
        raise RuntimeError("an id pytest must not make")


    @pytest.mark.parametrize("x", [1], ids=_id)
    def test_unselected(x):
        pass


    class TestBox:
        @pytest.mark.parametrize("y", [1, 2])
        def test_param(self, y):
            assert y == 2

        def test_other(self):
            pass


    def test_selected():
        pass


    def test_canary_must_fail():
        assert 1 == 2
""")


def _run(tmp_path: Path, select) -> dict:
    (tmp_path / "test_mod.py").write_text(TESTS)
    (tmp_path / "select.json").write_text(json.dumps(select))
    plugin = resources.files("frog_gym").joinpath("_plugin")
    env = {**os.environ, "PYTHONPATH": str(plugin), "FROG_SELECT": str(tmp_path / "select.json"),
           "FROG_REPORT": str(tmp_path / "report.json"), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # the host may have many plugins installed; none is needed
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "frog_report", "-p", "no:cacheprovider", "test_mod.py"],
                   cwd=tmp_path, env=env, capture_output=True, check=False)
    return json.loads((tmp_path / "report.json").read_text())


IDS = ["test_mod.py::test_selected", "test_mod.py::TestBox::test_param[2]"]


def test_deselecting_collects_the_whole_file(tmp_path):
    report = _run(tmp_path, IDS)
    assert report["collect_errors"] == ["test_mod.py"]  # the unselected test's id raised while collecting
    assert report["tests"] == {}


def test_grading_makes_only_the_items_the_selected_ids_name(tmp_path):
    report = _run(tmp_path, {"ids": IDS, "canaries": ["test_mod.py::test_canary_must_fail"], "only": True})
    assert report["collect_errors"] == []
    assert report["tests"] == {"test_mod.py::test_selected": "PASSED", "test_mod.py::TestBox::test_param[2]": "PASSED",
                               "test_mod.py::test_canary_must_fail": "FAILED"}
    assert list(report["tests"])[-1] == "test_mod.py::test_canary_must_fail"  # canaries run last
    assert report["exitstatus"] == 1


def test_a_module_that_does_not_import_leaves_the_tests_that_ran_trusted(tmp_path):
    """With --continue-on-collection-errors (mining, validation) pytest exits 1 for a module that fails to import
    even when every collected test passes; those passes stand, and the note names the module. A run that exits 1
    with nothing to explain it is still not trusted, and one that collected nothing says so."""
    from frog_gym.grading.runner import TestStatus, read_report

    (tmp_path / "test_ok.py").write_text("def test_fine():\n    pass\n")
    (tmp_path / "test_new.py").write_text("from pkg_of_a_later_release import api\n\n\ndef test_api():\n    pass\n")
    plugin = resources.files("frog_gym").joinpath("_plugin")
    env = {**os.environ, "PYTHONPATH": str(plugin), "FROG_REPORT": str(tmp_path / "report.json"),
           "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

    def run(*files: str):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "frog_report", "-p", "no:cacheprovider",
                               "--continue-on-collection-errors", *files], cwd=tmp_path, env=env, capture_output=True,
                              check=False)
        return read_report(tmp_path / "report.json", None, proc.returncode, proc.stdout.decode())

    r = run("test_ok.py", "test_new.py")
    assert r.exit_code == 1
    assert r.statuses == {"test_ok.py::test_fine": TestStatus.PASSED}
    assert r.collect_errors == ["test_new.py"]
    assert r.note == "1 test module(s) failed to collect: test_new.py"
    r = run("test_new.py")
    assert (r.statuses, r.collect_errors) == ({}, ["test_new.py"])
    report = json.loads((tmp_path / "report.json").read_text()) | {"collect_errors": []}
    (tmp_path / "report.json").write_text(json.dumps(report))
    r = read_report(tmp_path / "report.json", None, 1, "")
    assert r.note == "no selected test ran but pytest exited with 1; not trusted"
    (tmp_path / "report.json").write_text(json.dumps(report | {"tests": {"test_ok.py::test_fine": "PASSED"}}))
    r = read_report(tmp_path / "report.json", None, 1, "")
    assert r.statuses == {"test_ok.py::test_fine": TestStatus.FAILED}
    assert r.note == "every selected test passed but pytest exited with 1; not trusted"
