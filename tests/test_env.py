"""FrogSWEEnv end to end on the registered hand-written tasks: tools, budgets, grading, spoofing."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import frog_gym  # noqa: F401
from frog_gym.agents.oracle import OracleAgent, hunks, placed_hunks
from frog_gym.catalog.task import load_task, task_index

# Every hand-written task, plus a seeded sample of the (hundreds of) generated ones: .ci/sample_tasks.py
# re-validates another sample of those each day.
_IDS = sorted(task_index())
CHECKED_IDS = [i for i in _IDS if "__handwritten-" in i] + sorted(
    __import__("random").Random(0).sample([i for i in _IDS if "__handwritten-" not in i],
                                          min(10, len([i for i in _IDS if "__handwritten-" not in i]))))

QUICK_REPOS = {"inflection", "frogtoy", "cachetools", "iniconfig"}
"""Repositories whose tasks the default run checks here; the others need their venvs built on a fresh cache
(minutes each), so they run under ``-m slow``."""
CHECKED = [pytest.param(i, marks=() if i.split("__")[0] in QUICK_REPOS else pytest.mark.slow) for i in CHECKED_IDS]

TASK = "inflection__handwritten-0001"  # ordinal(): 13 -> 'th'; 8 FAIL_TO_PASS tests


@pytest.fixture(scope="module")
def env():
    e = gym.make(f"FrogSWE/{TASK}-v0").unwrapped
    yield e
    e.close()


def _run(env, actions):
    obs, info = env.reset(seed=0)
    out = None
    for a in actions:
        out = env.step(a)
        if out[2] or out[3]:
            break
    return out


def test_reset_returns_prompt_and_fresh_one_commit_repo(env):
    obs, info = env.reset(seed=0)
    assert "<issue>" in obs and "/testbed" in obs and info["task_id"] == TASK
    log = env.step({"tool": "bash", "command": "git log --oneline | wc -l; git status --porcelain | wc -l"})[0]
    assert log.split()[:2] == ["1", "0"]
    assert "fix" not in env.step({"tool": "bash", "command": "git log --format=%s"})[0].lower()


def test_check_env_on_the_sampling_env():
    e = gym.make("FrogSWE-v0").unwrapped
    try:
        check_env(e, skip_render_check=True)
    finally:
        e.close()


@pytest.mark.parametrize("task_id", CHECKED)
def test_check_env_on_every_registered_id(task_id):
    e = gym.make(f"FrogSWE/{task_id}-v0").unwrapped
    try:
        check_env(e, skip_render_check=True)
    finally:
        e.close()


def test_sampler_is_seeded():
    e = gym.make("FrogSWE-v0").unwrapped
    try:
        a = e.reset(seed=3)[1]["task_id"]
        assert e.reset(seed=3)[1]["task_id"] == a
        seen = {e.reset(seed=s)[1]["task_id"] for s in range(12)}
        assert len(seen) > 1
    finally:
        e.close()


@pytest.mark.parametrize("task_id", CHECKED)
def test_gold_fix_through_edit_tools_scores_one(task_id):
    e = gym.make(f"FrogSWE/{task_id}-v0").unwrapped
    try:
        obs, info = e.reset(seed=0)
        agent = OracleAgent()
        agent.reset(obs, info)
        while True:
            obs, reward, term, trunc, info = e.step(agent.act(obs))
            if term or trunc:
                break
        assert reward == 1.0, info["report"]
        assert info["report"]["resolved"] == "RESOLVED_FULL"
    finally:
        e.close()


def test_oracle_places_a_hunk_whose_text_occurs_twice_by_its_line():
    """Code repeated in two functions (wcwidth's wcswidth and wcstwidth) makes a gold hunk's old text occur twice:
    the oracle's str_replace is refused, and it anchors the edit at the hunk's own line instead."""
    e = gym.make(f"FrogSWE/{TASK}-v0").unwrapped
    try:
        obs, info = e.reset(seed=0)
        (path, old, _new, _at), = placed_hunks(load_task(TASK).patch)
        copy = f"\n_COPY = r'''{old}'''\n"
        obs, *_ = e.step({"tool": "bash", "command": f"cat >> {path} <<'FROG_EOF'\n{copy}FROG_EOF"})
        agent = OracleAgent()
        agent.reset(obs, info)
        actions = []
        while True:
            actions.append(agent.act(obs))
            obs, reward, term, trunc, info = e.step(actions[-1])
            if term or trunc:
                break
        assert [a["tool"] for a in actions] == ["str_replace", "insert", "str_replace", "submit"]
        assert reward == 1.0 and info["report"]["resolved"] == "RESOLVED_FULL", info["report"]
        diff = e.diff()  # the episode's changes: the fix at the hunk's line, the copy appended, no anchor left
        assert "+    if number % 100 in (11, 12, 13):" in diff and "+_COPY = r'''" in diff
        assert "frog-gym oracle" not in diff
    finally:
        e.close()


def test_bare_submit_scores_zero(env):
    obs, reward, term, trunc, info = _run(env, [{"tool": "submit"}])
    assert (reward, term, trunc) == (0.0, True, False)
    assert info["report"]["resolved"] == "RESOLVED_NO"
    assert set(info["report"]["fail_to_pass"]["failure"]) == set(load_task(TASK).FAIL_TO_PASS)


def test_partial_fix_is_partial_and_zero(env):
    # Special-case 13 only: fixes ordinal(13) but not 113, 1013, ...
    fix = {"tool": "str_replace", "path": "inflection/__init__.py",
           "old_str": "    number = abs(int(number))\n", "new_str": "    number = abs(int(number))\n"
           "    if number == 13:\n        return 'th'\n"}
    obs, reward, term, trunc, info = _run(env, [fix, {"tool": "submit"}])
    assert reward == 0.0
    assert info["report"]["resolved"] == "RESOLVED_PARTIAL"
    assert info["report"]["fail_to_pass"]["success"] and info["report"]["fail_to_pass"]["failure"]


def test_partial_credit_option():
    e = gym.make(f"FrogSWE/{TASK}-v0", partial_credit=True).unwrapped
    try:
        fix = {"tool": "str_replace", "path": "inflection/__init__.py", "old_str": "    number = abs(int(number))\n",
               "new_str": "    number = abs(int(number))\n    if number == 13:\n        return 'th'\n"}
        _, reward, *_ = _run(e, [fix, {"tool": "submit"}])
        assert 0.0 < reward < 1.0
    finally:
        e.close()


def test_step_budget_truncates_and_still_grades():
    e = gym.make(f"FrogSWE/{TASK}-v0", max_steps=3).unwrapped
    try:
        e.reset(seed=0)
        agent = OracleAgent()
        agent.reset("", {"task_id": TASK})
        fix = agent.act("")
        r1 = e.step({"tool": "bash", "command": "true"})
        r2 = e.step(fix)
        obs, reward, term, trunc, info = e.step({"tool": "view", "path": "inflection/__init__.py",
                                                 "view_range": [1, 3]})
        assert not r1[2] and not r1[3] and not r2[3]
        assert trunc and not term and reward == 1.0 and "step budget" in obs
    finally:
        e.close()


def test_wall_time_budget_truncates():
    e = gym.make(f"FrogSWE/{TASK}-v0", wall_time_s=0.5).unwrapped
    try:
        e.reset(seed=0)
        obs, reward, term, trunc, info = e.step({"tool": "bash", "command": "sleep 1"})
        assert trunc and "wall-time budget" in obs and info["report"]["resolved"] == "RESOLVED_NO"
    finally:
        e.close()


# -- spoofing ---------------------------------------------------------------------------------------------
def test_editing_the_tests_to_pass_scores_zero(env):
    obs, info = env.reset(seed=0)
    cmd = ("sed -i 's/^def test_/def _disabled_/' test_inflection.py && "
           "python -m pytest -q -p no:cacheprovider test_inflection.py 2>&1 | tail -1")
    out = env.step({"tool": "bash", "command": cmd})[0]
    assert "no tests ran" in out or "deselected" in out or "passed" not in out or "0 passed" in out
    obs, reward, term, trunc, info = env.step({"tool": "submit"})
    assert reward == 0.0
    assert info["report"]["discarded_test_edits"] == ["test_inflection.py"]


def test_fake_pytest_output_scores_zero(env):
    fake = 'print("=" * 20 + " 455 passed in 0.01s " + "=" * 20)\n'
    obs, reward, *_ , info = _run(env, [
        {"tool": "create", "path": "conftest_fake.py", "file_text": fake},
        {"tool": "bash", "command": "echo '455 passed in 0.01s'"},
        {"tool": "submit"}])
    assert reward == 0.0


def test_fake_report_file_scores_zero(env):
    ids = load_task(TASK).selected_tests
    report = json.dumps({"exitstatus": 0, "tests": {t: "PASSED" for t in ids}, "collect_errors": []})
    obs, reward, *_, info = _run(env, [
        {"tool": "bash", "command": f"mkdir -p /tmp/frog/out && echo '{report}' > /tmp/frog/out/report.json "
                                    f"&& echo '{report}' > /testbed/report.json && mkdir -p /frog/out 2>&1"},
        {"tool": "submit"}])
    assert reward == 0.0 and info["report"]["resolved"] == "RESOLVED_NO"


def test_source_that_fakes_the_report_at_import_scores_zero(env):
    # Agent code runs inside grading's pytest; a forged report must still be refused by the exit-code check.
    ids = list(load_task(TASK).selected_tests)
    payload = ("import json, os\np = os.environ.get('FROG_REPORT')\n"
               f"ids = {ids!r}\n"
               "if p:\n    json.dump({'exitstatus': 0, 'tests': {t: 'PASSED' for t in ids}, 'collect_errors': []},"
               " open(p, 'w'))\n    import atexit, sys\n")
    obs, reward, *_, info = _run(env, [
        {"tool": "insert", "path": "inflection/__init__.py", "insert_line": 0, "insert_text": payload},
        {"tool": "submit"}])
    assert reward == 0.0


# -- bad input --------------------------------------------------------------------------------------------
BAD = [
    ({"tool": "bsh", "command": "ls"}, "Did you mean 'bash'"),
    ({"tool": "str_replace", "path": "inflection/__init__.py", "old_str": "x"}, "needs the argument 'new_str'"),
    ({"tool": "str_replace", "path": "inflection/__init__.py", "old_str": "no such text here", "new_str": ""},
     "did not appear verbatim"),
    ({"tool": "str_replace", "path": "inflection/__init__.py", "old_str": "def ", "new_str": "def  "}, "occurs"),
    ({"tool": "view", "path": "../../etc/passwd"}, "leaves the repository"),
    ({"tool": "view", "path": "/etc/passwd"}, "outside the repository"),
    ({"tool": "create", "path": "/tmp/x.py", "file_text": "x"}, "outside the repository"),
    ({"tool": "view", "path": "escape/passwd"}, "points outside the repository"),
    ({"tool": "create", "path": "escape/new.py", "file_text": "x"}, "points outside the repository"),
    ({"tool": "str_replace", "path": "binary.dat", "old_str": "a", "new_str": "b"}, "not valid UTF-8"),
    ({"tool": "view", "path": "inflection/__init__.py", "view_range": [5, 1]}, "Invalid view_range"),
    ("x" * (10 * 1024 * 1024), "characters"),
    ("I think I should look at the code first.", "Could not read a tool call"),
    (12345, "must be a dict or text"),
]


def test_bad_input_gives_clear_observations_and_the_episode_goes_on(env):
    env.reset(seed=0)
    env.step({"tool": "bash", "command": "ln -s /etc escape && printf '\\xff\\xfeab' > binary.dat"})
    for action, expected in BAD:
        obs, reward, term, trunc, info = env.step(action)
        assert expected in obs, (action if not isinstance(action, str) else action[:40], obs)
        assert not term and not trunc and info["action_ok"] is False
    obs = env.step({"tool": "view", "path": "binary.dat"})[0]
    assert "not valid UTF-8" in obs
    assert env.step({"tool": "bash", "command": "echo still going"})[0].startswith("still going")


def test_view_and_edit_roundtrip_with_undo(env):
    env.reset(seed=0)
    view = env.step({"tool": "view", "path": "/testbed/inflection/__init__.py", "view_range": [1, 3]})[0]
    assert "     1\t" in view
    env.step({"tool": "create", "path": "new_mod.py", "file_text": "A = 1\n"})
    env.step({"tool": "insert", "path": "new_mod.py", "insert_line": 1, "insert_text": "B = 2"})
    assert env.step({"tool": "bash", "command": "cat new_mod.py"})[0].startswith("A = 1\nB = 2")
    env.step({"tool": "undo_edit", "path": "new_mod.py"})
    assert env.step({"tool": "bash", "command": "cat new_mod.py"})[0] == "A = 1\n\n[exit code 0]"
    env.step({"tool": "undo_edit", "path": "new_mod.py"})
    assert "No such file" in env.step({"tool": "bash", "command": "cat new_mod.py"})[0]
    listing = env.step({"tool": "view", "path": "/testbed"})[0]
    assert "/testbed/inflection/" in listing


def test_reset_restores_the_starting_state(env):
    env.reset(seed=0)
    env.step({"tool": "bash", "command": "rm -rf inflection && echo junk > junk.txt && git commit -qam x || true"})
    env.reset(seed=0)
    out = env.step({"tool": "bash", "command": "ls inflection/__init__.py; ls junk.txt 2>&1; git log --oneline | wc -l"})[0]
    assert "inflection/__init__.py" in out and "No such file" in out and "\n1\n" in out


def test_raw_text_actions(env):
    env.reset(seed=0)
    obs = env.step("Let me look.\n```bash\necho from-fence\n```")[0]
    assert obs.startswith("from-fence")
    obs = env.step('{"tool": "bash", "command": "echo from-json"}')[0]
    assert obs.startswith("from-json")
    obs = env.step({"name": "bash", "arguments": '{"command": "echo openai-style"}'})[0]
    assert obs.startswith("openai-style")


def test_random_actions_are_harmless(env):
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(20):
        obs, reward, term, trunc, info = env.step(env.action_space.sample())
        assert isinstance(obs, str) and not term
    assert env.step({"tool": "bash", "command": "git status --porcelain | wc -l"})[0].startswith("0")


def test_identical_diffs_reuse_the_cached_grade(env):
    agent = OracleAgent()
    results = []
    for _ in range(2):
        obs, info = env.reset(seed=0)
        agent.reset(obs, info)
        while True:
            obs, reward, term, trunc, info = env.step(agent.act(obs))
            if term or trunc:
                break
        results.append(info["report"])
    assert results[1]["cached"] and results[0]["resolved"] == results[1]["resolved"] == "RESOLVED_FULL"


def test_close_twice_is_fine():
    e = gym.make(f"FrogSWE/{TASK}-v0").unwrapped
    e.reset(seed=0)
    d = e._dir
    e.close()
    e.close()
    assert not d.exists()


def test_unknown_task_id_suggests_the_nearest():
    with pytest.raises(KeyError, match="Did you mean 'inflection__handwritten-0001'"):
        gym.make("FrogSWE-v0", task_id="inflection__handwriten-0001")
    assert hunks(load_task(TASK).patch)


def test_switching_repository_and_back_restores_each_starting_state():
    """An env keeps a workspace per repository: coming back to one after another repository's episode starts
    from that task's starting state, not from the last episode's edits, and the shell sees that tree."""
    other = "humanize__missing_branch-08a9c4b2"
    e = gym.make("FrogSWE-v0", task_ids=[TASK, other]).unwrapped
    try:
        e.reset(options={"task_id": TASK})
        first = e._ws.path
        e.step({"tool": "bash", "command": "echo broken >> inflection/__init__.py && touch left_over.py"})
        e.reset(options={"task_id": other})
        assert e._ws.path != first
        out, *_ = e.step({"tool": "bash", "command": "ls src"})
        assert "humanize" in out
        e.reset(options={"task_id": TASK})
        assert e._ws.path == first and e._ws.changes() == []
        out, *_ = e.step({"tool": "bash", "command": "ls left_over.py; tail -c 7 inflection/__init__.py"})
        assert "No such file" in out and "broken" not in out
    finally:
        e.close()


def test_reset_after_a_graded_episode_restores_every_kind_of_change(env):
    """After grading (every process of the episode verified dead), reset restores from the walk grading made
    instead of walking again, and rewrites changed files in place where that is safe (one link, no extended
    attribute): every kind of change an agent can leave must still be undone, two tracked files made one
    inode included."""
    from frog_gym.sandbox.workspace import _manifest

    env.reset(seed=0)
    env.step({"tool": "bash", "command": (
        "echo broken >> inflection/__init__.py && rm setup.py && mkdir -p new/deep && echo x > new/deep/a.py && "
        "ln -s /etc/passwd link && chmod 600 README.rst && mkfifo pipe && ln -f MANIFEST.in LICENSE && "
        "echo shared >> LICENSE && git commit -qam x; "
        "(sleep 30 &) ; true")})
    env.step({"tool": "create", "path": "scratch.py", "file_text": "x = 1\n"})
    *_, info = env.step({"tool": "submit"})
    assert "report" in info and env._graded_walk is not None
    env.reset(seed=0)
    assert env._graded_walk is None  # used once
    assert _manifest(env._ws.path) == env._template.manifest
    out = env.step({"tool": "bash", "command": "git status --porcelain | wc -l; git log --oneline | wc -l"})[0]
    assert out.split()[:2] == ["0", "1"], out


def test_a_reset_mid_episode_walks_the_tree_again(env):
    """Without grading there is no verified-dead walk to reuse: the reset kills, then walks."""
    env.reset(seed=0)
    env.step({"tool": "bash", "command": "echo broken >> inflection/__init__.py; touch junk.py"})
    assert env._graded_walk is None
    env.reset(seed=0)
    from frog_gym.sandbox.workspace import _manifest

    assert _manifest(env._ws.path) == env._template.manifest
