"""A task's test and gold patches as applied to its starting tree (``frog_gym.grading.runner._patched``), kept on disk
so that a later process takes them instead of running ``git apply`` again at each grade."""

from __future__ import annotations

import hashlib
import json

from frog_gym.catalog.live import task_spec
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.task import load_task
from frog_gym.grading import runner as grading
from frog_gym.sandbox.workspace import template_for

TID = "inflection__handwritten-0001"


def _template():
    task = load_task(TID)
    repo = prepare(task_spec(task))
    return task, template_for(repo, task.bug_patch, TID, hidden_tests=task.test_patch)


def _counting(monkeypatch) -> list[str]:
    """Count the real ``git apply`` runs of this process from here on."""
    runs, real = [], grading.apply_patch

    def counted(tree, patch, what, reverse=False):
        runs.append(what)
        return real(tree, patch, what, reverse)

    monkeypatch.setattr(grading, "apply_patch", counted)
    return runs


def test_a_patch_applied_in_one_process_is_taken_from_disk_by_the_next(monkeypatch):
    task, template = _template()
    for patch in (task.patch, task.test_patch):
        made = grading._patched(template, patch, "made")
        assert isinstance(made, dict) and made, made
        monkeypatch.setattr(grading, "_PATCHED", {})  # what a new process starts with
        runs = _counting(monkeypatch)
        assert grading._patched(template, patch, "again") == made
        assert runs == []
        # and it is what git apply makes of it
        monkeypatch.setattr(grading, "_PATCHED", {})
        grading._patched_file(template, hashlib.sha256(patch.encode()).hexdigest()).unlink()
        assert grading._patched(template, patch, "applied") == made
        assert runs == ["applied"]


def test_a_kept_patch_that_does_not_read_back_as_written_is_applied_again(monkeypatch):
    task, template = _template()
    made = grading._patched(template, task.patch, "made")
    digest = hashlib.sha256(task.patch.encode()).hexdigest()
    f = grading._patched_file(template, digest)
    good = json.loads(f.read_text(encoding="utf-8"))
    wrong = dict(good, files={name: "AAAA" for name in good["files"]})
    for text in ("{not json", json.dumps(dict(good, patch="0" * 64)), json.dumps(dict(good, files={"x": "%%"})),
                 json.dumps(dict(good, template="another"))):
        f.write_text(text, encoding="utf-8")
        monkeypatch.setattr(grading, "_PATCHED", {})
        runs = _counting(monkeypatch)
        assert grading._patched(template, task.patch, "again") == made
        assert runs == ["again"]
        assert json.loads(f.read_text(encoding="utf-8")) == good  # written again, whole
    # a file that reads back but holds other bytes is taken at its word: the folder is host-only and keyed by
    # what the template and the patch are (what the process wrote is what the next one reads)
    f.write_text(json.dumps(wrong), encoding="utf-8")
    try:
        monkeypatch.setattr(grading, "_PATCHED", {})
        assert grading._patched(template, task.patch, "again") == {name: b"\0\0\0" for name in good["files"]}
    finally:
        f.write_text(json.dumps(good), encoding="utf-8")


def test_the_kept_patches_are_not_in_the_agents_sandbox():
    """The kept files hold the gold fix and the hidden tests: no path of theirs may be readable where the agent runs."""
    import gymnasium as gym

    import frog_gym  # noqa: F401  (registers the envs)
    from frog_gym import paths

    task, template = _template()
    assert isinstance(grading._patched(template, task.patch, "made"), dict)
    kept = grading._patched_file(template, hashlib.sha256(task.patch.encode()).hexdigest())
    assert kept.is_file()
    env = gym.make(f"FrogSWE/{TID}-v0").unwrapped
    try:
        env.reset(seed=0)
        probe = "; ".join(f"test -e {p} && echo SEEN {p}" for p in (kept, kept.parent, paths.home() / "patched"))
        obs, *_ = env.step({"tool": "bash", "command": f"{probe}; echo PROBED"})
    finally:
        env.close()
    assert "PROBED" in obs and "SEEN" not in obs, obs
