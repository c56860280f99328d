"""The `apr` agent: its pure parts, and real episodes where it solves some tasks and honestly fails others."""

from __future__ import annotations

import dataclasses

import json

import pytest

from frog_gym.agents.apr import AprAgent, candidates_for, repro_tests, reproductions, statement_names, transition
from frog_gym.agents.base import Agent
from frog_gym.bench.runner import bench
from frog_gym.bench.harness import HarnessSpec

SOLVABLE = ["frogtoy__handwritten-0004", "toolz__handwritten-0004"]  # a flipped `<`; `n + 1` for `n`
UNSOLVABLE = ["frogtoy__handwritten-0003"]  # `e + f` for `e * f`: no local edit of ours undoes it


def test_transition_is_a_unique_minimal_replacement():
    current = "def f(x):\n    return x + 1\n\ndef g(x):\n    return x + 1\n"
    target = current.replace("g(x):\n    return x + 1", "g(x):\n    return x - 1")
    old, new = transition(current, target)
    assert current.count(old) == 1
    assert current.replace(old, new) == target
    assert old == "def g(x):\n    return x + 1\n"


def test_transition_handles_deletions_and_the_file_end():
    current, target = "a\nb\nc", "a\nc"
    old, new = transition(current, target)
    assert current.replace(old, new) == target and current.count(old) == 1
    with pytest.raises(ValueError, match="nothing to replace"):
        transition("x", "x")


def test_statement_names_are_the_quoted_identifiers():
    assert statement_names("`drop(2, [10, 20])` returns `[40, 50]`; see `toolz.drop`") == ["drop", "toolz"]


def test_candidates_follow_suspicion_then_the_named_function_then_the_family():
    source = "def first(xs):\n    return xs[1]\n\n\ndef last(xs):\n    return xs[len(xs) - 2]\n"
    lines = [("m.py", 2, 0.5), ("m.py", 6, 0.5)]
    cands = candidates_for(lines, {"m.py": source}, names=["last"])
    assert cands and cands[0].path == "m.py"
    assert "last()" in cands[0].description  # equally suspicious, but the statement names last()
    fixed = "def first(xs):\n    return xs[1]\n\n\ndef last(xs):\n    return xs[len(xs) - 1]\n"
    assert fixed in [c.text for c in cands]
    assert len({c.text for c in cands}) == len(cands)


def test_options_are_checked():
    assert isinstance(AprAgent(), Agent)
    with pytest.raises(ValueError, match="at least 6"):
        AprAgent(max_steps=3)


def test_apr_solves_some_tasks_and_honestly_fails_others(tmp_path):
    # apr localises the bug from the failing tests' tracebacks, so it needs them in the workspace
    spec = dataclasses.replace(HarnessSpec.for_suite(",".join(SOLVABLE + UNSOLVABLE)), visible_tests=True)
    summary = bench(spec, "apr", {}, tmp_path, workers=1, progress=False)
    by_task = {r.task_id: r for r in summary.results}
    assert not any(r.infra_failure for r in by_task.values())
    for t in SOLVABLE:
        assert by_task[t].resolved, t
        removed = [ln for ln in by_task[t].model_patch.splitlines() if ln.startswith("-") and not ln.startswith("---")]
        assert len(removed) == 1  # one local edit
    for t in UNSOLVABLE:
        r = by_task[t]
        assert not r.resolved and r.submitted and r.model_patch == ""  # it reverts what did not work
        assert r.steps <= spec.max_steps
    records = [json.loads(ln) for ln in (tmp_path / "trajectories" / f"{SOLVABLE[0]}__s0.jsonl").open()]
    tools = [r["action"]["tool"] for r in records if r["type"] == "step"]
    assert tools[-1] == "submit" and "str_replace" in tools  # edits go through the env's own tools
    assert records[-1]["agent_stats"]["extra"]["outcome"].startswith("solved by frogtoy.py:")


class FakeRepo:
    """Answers the agent's actions like the env would, from a script of probe results keyed by mode."""

    def __init__(self, source: str, checks: dict[str, dict[str, object]]):
        self.files = {"m.py": source}
        self.checks = checks
        self.suspicious = [["m.py", 2, 1.0]]
        self.actions: list[dict[str, object]] = []

    def step(self, action: dict[str, object]) -> str:
        import base64

        self.actions.append(action)
        if action["tool"] == "str_replace":
            text = self.files[action["path"]]
            assert text.count(action["old_str"]) == 1
            self.files[action["path"]] = text.replace(action["old_str"], action["new_str"])
            return f"Edited /testbed/{action['path']}."
        command = str(action.get("command", ""))
        if " run " in command:
            result = {"mode": "run", "failed": 2, "failing": ["t::a", "t::b"]}
        elif " trace " in command:
            result = {"mode": "trace", "failed": 2, "suspicious": self.suspicious}
        elif " read " in command:
            data = self.files["m.py"].encode()
            result = {"mode": "read", "size": len(data), "data": base64.b64encode(data).decode()}
        elif " check " in command:
            result = self.checks.get(self.files["m.py"], {"accepted": False, "solved": False})
        else:
            return "\n[exit code 0]"
        return "APR-PROBE " + json.dumps(result) + "\n\n[exit code 0]"


def drive(agent: AprAgent, repo: FakeRepo) -> list[dict[str, object]]:
    agent.reset(PROMPT, {"max_steps": 40})
    actions, obs = [], PROMPT
    while True:
        action = agent.act(obs)
        actions.append(action)
        if action["tool"] == "submit":
            return actions
        obs = repo.step(action)


PROMPT = "You are working in the repository at /testbed (the Python package `m`).\n<issue>\n`f(1)` is wrong\n</issue>\n"
SOURCE = "def f(x):\n    return x < 1\n"


def test_without_a_full_fix_it_keeps_the_best_partial_one():
    partial = "def f(x):\n    return x <= 1\n"
    repo = FakeRepo(SOURCE, {partial: {"accepted": True, "solved": False, "suite_failing": 1}})
    actions = drive(AprAgent(max_steps=40), repo)
    assert repo.files["m.py"] == partial
    assert sum(a["tool"] == "submit" for a in actions) == 1


def test_without_any_fix_it_reverts_every_edit():
    repo = FakeRepo(SOURCE, {})
    agent = AprAgent(max_steps=40)
    actions = drive(agent, repo)
    assert repo.files["m.py"] == SOURCE
    assert agent.stats.extra["outcome"] == "no candidate passed"
    assert len(actions) <= 40


def test_it_stops_at_max_candidates_and_within_its_step_budget():
    repo = FakeRepo(SOURCE, {})
    agent = AprAgent(max_steps=12, max_candidates=50)
    actions = drive(agent, repo)
    assert len(actions) <= 12 and repo.files["m.py"] == SOURCE
    agent = AprAgent(max_steps=100, max_candidates=2)
    drive(agent, FakeRepo(SOURCE, {}))
    assert len(agent.stats.extra["tried"]) == 2


def test_partial_fixes_are_kept_and_built_on_until_every_site_is_fixed():
    source = "def f(x):\n    a = x + 1\n    return a - 2\n"
    first = "def f(x):\n    a = x - 1\n    return a - 2\n"
    both = "def f(x):\n    a = x - 1\n    return a + 2\n"
    repo = FakeRepo(source, {first: {"accepted": True, "solved": False, "suite_failing": 1},
                             both: {"accepted": True, "solved": True}})
    repo.suspicious = [["m.py", 2, 1.0], ["m.py", 3, 0.9]]
    agent = AprAgent(max_steps=100)
    drive(agent, repo)
    assert repo.files["m.py"] == both
    assert agent.stats.extra["outcome"].startswith("solved by m.py:2 ") and "; m.py:3 " in agent.stats.extra["outcome"]
    assert all("--keep" in a["command"] for a in repo.actions if " check " in str(a.get("command", "")))


STATEMENT = """`toolz.itertoolz.drop()` returns a wrong result

Running this:

```python
from toolz.itertoolz import drop
print(list(drop(3, 'ABCDE')))
```

Expected: `['D', 'E']`.
Actual: `['E']`.

---

Calling `json.dumps([set()], default=default_iterable)` (that is, `simplejson.dumps()`):

Expected: no exception.
Actual: it raises `TypeError: boom`.

---

Calling `Version.parse("1.2")` (that is, `semver.version.Version.parse()`):

Expected: `ValueError` is raised.
Actual: no exception.

---

Calling `sj.loads("[1]")` (that is, `simplejson.loads()`):

Actual: it raises `KeyError: 3`.

---

Calling `six.with_metaclass(Meta, Base)`:

Actual: the result is wrong (`AssertionError: assert False`).
"""


def test_reproductions_are_read_from_the_statement_and_become_tests():
    found = reproductions(STATEMENT)
    assert [r.code for r in found] == ["from toolz.itertoolz import drop",
                                       "import simplejson as json",
                                       "from semver.version import Version",
                                       "import simplejson as sj"]
    assert found[0].value == "list(drop(3, 'ABCDE'))" and found[0].expected == "['D', 'E']"
    assert found[2].raises == "ValueError" and found[3].value == 'sj.loads("[1]")'
    module = repro_tests(found)
    # the json call reads a helper of the test module (default_iterable): it cannot run, so it is left out
    assert module.count("def test_repro_") == 3 and "default_iterable" not in module
    namespace: dict = {}
    exec(compile(module, "test_repro.py", "exec"), namespace)  # it compiles and defines the tests
    assert sorted(n for n in namespace if n.startswith("test_")) == ["test_repro_0", "test_repro_1", "test_repro_2"]
    assert "assert (list(drop(3, 'ABCDE'))) == (['D', 'E'])" in module
    assert "assert type(_raised.value).__name__ == 'ValueError'" in module


def test_a_statement_without_a_runnable_reproduction_gives_no_tests():
    assert repro_tests(reproductions("Something in `toolz` returns a wrong result.")) == ""
    vague_call = "Calling `f(x)` (that is, `demo.f()`):\n\nActual: the result is wrong.\n"
    assert reproductions(vague_call) == []  # nothing to compare the result with


def test_under_hidden_tests_apr_fixes_a_bug_from_the_statements_reproduction(tmp_path):
    task = "toolz__handwritten-0004"
    spec = HarnessSpec.for_suite(task)
    assert not spec.visible_tests  # SWE-bench's contract: the failing tests are not in the workspace
    summary = bench(spec, "apr", {}, tmp_path, workers=1, progress=False)
    (result,) = summary.results
    assert result.resolved and not result.infra_failure
    records = [json.loads(ln) for ln in (tmp_path / "trajectories" / f"{task}__s0.jsonl").open()]
    extra = records[-1]["agent_stats"]["extra"]
    assert extra["reproductions"] == {"written": 1, "failing": 1}
    assert extra["outcome"].startswith("solved by toolz/itertoolz.py:")
    assert "test_repro" not in result.model_patch  # the reproductions live outside the tree
