"""Hidden tests: FAIL_TO_PASS test functions cut from the workspace, put back by grading (test_patch)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import frog_gym  # noqa: F401  (registers the envs)
from frog_gym.agents.oracle import OracleAgent
from frog_gym.generators.hidden import hidden_tests_patch, without_tests
from frog_gym.bench.harness import HarnessSpec
from frog_gym.catalog.task import load_task, registered_task_ids
from frog_gym.sandbox.workspace import apply_patch

SRC = '''import pytest


class TestBox:
    def test_width(self):
        assert 1

    @pytest.mark.parametrize("x", [1, 2])
    def test_height(self, x):
        assert x


class TestOnly:
    def test_gone(self):
        assert 1


def test_kept():
    assert 1
'''


def test_without_tests_cuts_functions_decorators_and_emptied_classes():
    out = without_tests(SRC, {(("TestBox",), "test_height"), (("TestOnly",), "test_gone")})
    assert "test_height" not in out and "parametrize" not in out and "TestOnly" not in out
    assert "def test_width" in out and "def test_kept" in out
    compile(out, "t.py", "exec")
    assert without_tests(SRC, {((), "test_kept"), (("TestBox",), "test_width"), (("TestBox",), "test_height"),
                               (("TestOnly",), "test_gone")}) is None  # nothing left: the file goes
    assert without_tests(SRC, {(("TestBox",), "test_inherited")}) == SRC  # not defined here: stays


def test_test_patch_adds_the_hidden_tests_back(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(SRC)
    (tmp_path / "tests" / "test_b.py").write_text("def test_b():\n    assert 1\n")
    f2p = ["tests/test_a.py::TestBox::test_height[1]", "tests/test_b.py::test_b", "README.rst::README.rst"]
    patch = hidden_tests_patch(tmp_path, f2p, lambda p: p.startswith("tests/"))
    apply_patch(tmp_path, patch, "hide", reverse=True)
    assert not (tmp_path / "tests" / "test_b.py").exists()
    assert "test_height" not in (tmp_path / "tests" / "test_a.py").read_text()
    apply_patch(tmp_path, patch, "restore")
    assert (tmp_path / "tests" / "test_a.py").read_text() == SRC
    assert (tmp_path / "tests" / "test_b.py").read_text() == "def test_b():\n    assert 1\n"


def test_registered_tasks_hide_their_tests():
    t = load_task("inflection__handwritten-0001")
    assert "+def test_ordinal" in t.test_patch or "+    def test_ordinal" in t.test_patch


def _grep(env, pattern: str) -> str:
    return env.step({"tool": "bash", "command": f"grep -c '{pattern}' test_inflection.py || true"})[0].split()[0]


def test_env_hides_by_default_shows_on_request_and_grades_with_the_tests():
    task = "inflection__handwritten-0001"
    e = gym.make(f"FrogSWE/{task}-v0").unwrapped
    try:
        obs, info = e.reset(seed=0)
        assert info["visible_tests"] is False and _grep(e, "def test_ordinal") == "0"
        assert "test_inflection.py" not in e.step({"tool": "bash", "command": "git status --porcelain"})[0]
        agent = OracleAgent()
        agent.reset(obs, info)
        while True:
            obs, reward, term, trunc, info = e.step(agent.act(obs))
            if term or trunc:
                break
        assert reward == 1.0 and set(info["report"]["fail_to_pass"]["success"]) == set(load_task(task).FAIL_TO_PASS)
        obs, info = e.reset(seed=0, options={"visible_tests": True})
        assert info["visible_tests"] is True and _grep(e, "def test_ordinal") != "0"
        obs, reward, *_ , info = e.step({"tool": "submit"})
        assert reward == 0.0 and set(info["report"]["fail_to_pass"]["failure"]) == set(load_task(task).FAIL_TO_PASS)
    finally:
        e.close()


def test_harness_fingerprint_records_visible_tests():
    spec = HarnessSpec.for_suite("smoke")
    assert spec.visible_tests is False and spec.summary()["visible_tests"] is False
    assert spec.replace(visible_tests=True).fingerprint() != spec.fingerprint()
    assert json.loads(json.dumps(spec.to_dict()))["visible_tests"] is False


def test_an_inherited_test_is_cut_where_it_is_defined(tmp_path):
    # cachetools' style: a mixin in tests/__init__.py; itsdangerous' style: a test class imported from another
    # test module (pytest collects it there too) and subclassed through a module attribute
    mixin = ("import unittest\n\n\nclass Mixin:\n    def test_x(self):\n        assert 1\n\n"
             "    def test_y(self):\n        assert 2\n")
    files = {
        "tests/__init__.py": mixin,
        "tests/test_a.py": "import unittest\n\nfrom . import Mixin\n\n\nclass TestA(unittest.TestCase, Mixin):\n    pass\n",
        "tests/test_b.py": ("import tests.test_a as ta\nfrom tests.test_a import TestA\n\n\n"
                            "class TestB(ta.TestA):\n    def test_own(self):\n        assert 3\n"),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    f2p = ["tests/test_a.py::TestA::test_x", "tests/test_b.py::TestA::test_y", "tests/test_b.py::TestB::test_own"]
    patch = hidden_tests_patch(tmp_path, f2p, lambda p: p.startswith("tests/"))
    apply_patch(tmp_path, patch, "hide", reverse=True)
    init = (tmp_path / "tests" / "__init__.py").read_text()
    assert "test_x" not in init and "test_y" not in init and "class Mixin" in init  # emptied, but kept
    compile(init, "__init__.py", "exec")
    assert not (tmp_path / "tests" / "test_b.py").exists()  # its one test of its own hidden: the file goes
    assert (tmp_path / "tests" / "test_a.py").read_text() == files["tests/test_a.py"]
    apply_patch(tmp_path, patch, "restore")
    assert {n: (tmp_path / n).read_text() for n in files} == files


def test_every_registered_task_hides_its_failing_tests():
    missing = [i for i in registered_task_ids() if not load_task(i).test_patch.strip()]
    assert not missing, (f"{len(missing)} task(s) leave their FAIL_TO_PASS tests in the workspace, e.g. {missing[:3]}; "
                         "`frog-gym tasks --hide-tests --repo R` computes their test_patch")


@pytest.mark.slow
def test_every_stored_test_patch_is_what_the_hider_computes_today():
    # a partial test_patch leaves some failing tests visible: recompute each (FrogLive's are the fix's own
    # test changes on the release before it, set when mined) from the pristine snapshot
    from frog_gym.catalog.live import is_live
    from frog_gym.catalog.snapshot import snapshot_tree
    from frog_gym.catalog.spec import load_repo

    trees: dict = {}
    stale = []
    for iid in registered_task_ids():
        if is_live(iid):
            continue
        task = load_task(iid)
        if task.repo not in trees:
            spec = load_repo(task.repo)
            trees[task.repo] = (snapshot_tree(spec), spec.tests.is_test_file)
        tree, is_test_file = trees[task.repo]
        if hidden_tests_patch(tree, task.FAIL_TO_PASS, is_test_file) != task.test_patch:
            stale.append(iid)
    assert not stale, f"{len(stale)} stale test_patch(es), e.g. {stale[:3]}: `frog-gym tasks --hide-tests --repo R`"
