"""SWE-bench instances in their own image, graded by swebench's get_eval_report: a tiny repository baked
into a locally built image at /testbed, and a SWE-bench-format instance JSONL."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile

import pytest

from frog_gym.sandbox import images
from frog_gym.catalog.snapshot import git_commit_tree, prepare
from frog_gym.catalog.spec import load_repo

pytestmark = pytest.mark.docker
pytest.importorskip("swebench", reason="the swebench extra is not installed (pip install 'frog-gym[swebench]')")

from frog_gym.env.swebench_docker import SWEBenchEnv, load_instances  # noqa: E402

BUGGY = "def add(a, b):\n    return abs(a) + b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_PATCH = """diff --git a/test_calc.py b/test_calc.py
--- a/test_calc.py
+++ b/test_calc.py
@@ -3,3 +3,7 @@ from calc import add
 
 def test_add():
     assert add(2, 3) == 5
+
+
+def test_add_negative():
+    assert add(-2, 3) == 1
"""
GOLD = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return abs(a) + b
+    return a + b
"""


def _eval_script(base: str) -> str:
    return f"""#!/bin/bash
set -uxo pipefail
cd /testbed
git status
git checkout {base} test_calc.py
git apply -v - <<'EOF_114329324912'
{TEST_PATCH}EOF_114329324912
: '>>>>> Start Test Output'
python -m pytest -rA -p no:cacheprovider test_calc.py
: '>>>>> End Test Output'
git checkout {base} test_calc.py
"""


@pytest.fixture(scope="module")
def instance_and_image(docker_engine, tmp_path_factory):
    """An image like SWE-bench's (repository at /testbed with its git history, test environment on PATH),
    built locally from the inflection image (which carries a venv with pytest), and its instance."""
    client = docker_engine
    repo = prepare(load_repo("inflection"))
    parent, _ = images.build_repo_image(repo, client)
    src = tmp_path_factory.mktemp("tiny") / "testbed"
    src.mkdir()
    (src / "calc.py").write_text(BUGGY)
    (src / "test_calc.py").write_text(TESTS)
    git_commit_tree(src, "tiny calc")
    base = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dockerfile = f"FROM {parent}\nENV PATH={repo.venv}/bin:/usr/local/bin:/usr/bin:/bin\nCOPY testbed /testbed\n"
    ctx = io.BytesIO()
    with tarfile.open(fileobj=ctx, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile.encode()))
        tar.add(src, arcname="testbed")
    ctx.seek(0)
    tag = "frog-gym-test-swe-tiny:1"
    client.images.build(fileobj=ctx, custom_context=True, tag=tag, rm=True, forcerm=True, network_mode="none",
                        labels={"frog-gym": "1", "frog-gym.kind": "test"})
    record = {"instance_id": "tiny__calc-1", "repo": "tiny/calc", "version": "0.1", "base_commit": base,
              "problem_statement": "add(-2, 3) returns 5, it should be 1.", "patch": GOLD, "test_patch": TEST_PATCH,
              "FAIL_TO_PASS": json.dumps(["test_calc.py::test_add_negative"]),
              "PASS_TO_PASS": json.dumps(["test_calc.py::test_add"]), "image": tag,
              "eval_script": _eval_script(base), "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail"}
    jsonl = tmp_path_factory.mktemp("inst") / "instances.jsonl"
    jsonl.write_text(json.dumps(record) + "\n")
    yield load_instances(jsonl)[0], tag
    client.images.remove(tag, force=True)


def test_gold_fix_is_resolved_and_bare_submit_is_not(instance_and_image, docker_engine):
    instance, image = instance_and_image
    env = SWEBenchEnv(instance, client=docker_engine)
    try:
        obs, info = env.reset()
        assert "add(-2, 3)" in obs and info["image"] == image
        cmd = "git log --oneline | wc -l; id -u; python -m pytest -q -p no:cacheprovider"
        out = env.step({"tool": "bash", "command": cmd})[0]
        assert out.split()[:2] == ["1", "65534"] and "1 passed" in out
        obs, reward, terminated, _, info = env.step({"tool": "str_replace", "path": "calc.py",
                                                     "old_str": "abs(a) + b", "new_str": "a + b"})
        assert not terminated
        obs, reward, terminated, _, info = env.step({"tool": "submit"})
        report = info["report"]
        assert terminated and reward == 1.0 and report["resolved"], report.get("log_tail")
        assert report["tests_status"]["FAIL_TO_PASS"]["success"] == ["test_calc.py::test_add_negative"]
        assert report["model_patch"].startswith("diff --git a/calc.py b/calc.py")
        env.reset()
        assert "abs(a)" in env.step({"tool": "bash", "command": "cat calc.py"})[0]
        _, reward, terminated, _, info = env.step({"tool": "submit"})
        assert terminated and reward == 0.0 and not info["report"]["resolved"]
        assert info["report"]["tests_status"]["FAIL_TO_PASS"]["failure"] == ["test_calc.py::test_add_negative"]
    finally:
        env.close()


def test_editing_the_tests_does_not_help(instance_and_image, docker_engine):
    instance, _ = instance_and_image
    env = SWEBenchEnv(instance, client=docker_engine)
    try:
        env.reset()
        env.step({"tool": "create", "path": "test_calc.py", "file_text": "def test_add_negative():\n    pass\n"})
        _, reward, _, _, info = env.step({"tool": "submit"})
        assert reward == 0.0 and info["infra_failure"] is None
    finally:
        env.close()


def test_instances_without_harness_fields_are_refused(tmp_path):
    from frog_gym.errors import FrogGymError

    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps({"instance_id": "x", "problem_statement": "p"}) + "\n")
    with pytest.raises(FrogGymError, match="lacks"):
        load_instances(p)
