"""The behavioural oracle (issue 21): recorded from the gold code, replayed outside the test process, compared
on the host as bytes. Real tasks, real sandboxes; the forgery below is one the in-process layers let through."""

from __future__ import annotations

import importlib.util
import json
import platform
import textwrap
import uuid
from pathlib import Path

import gymnasium as gym
import pytest

import frog_gym  # noqa: F401  (registers the envs)
from frog_gym.grading import runner as grading
from frog_gym.grading import oracle
from frog_gym.catalog.live import is_live, task_spec
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.task import load_task, registered_task_ids
from frog_gym.sandbox.workspace import template_for

COVERED = "inflection__wrong_variable-a7636217"
"""singularize() returns the last rule's replacement instead of the word when no rule matches."""

_spec = importlib.util.spec_from_file_location(
    "frog_oracle", Path(oracle.__file__).parents[1] / "_plugin" / "frog_oracle.py")
assert _spec and _spec.loader
frog_oracle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(frog_oracle)


class Point:  # picklable by reference to this module
    def __init__(self, x):
        self.x = x


def test_targets_are_changed_functions_that_exist_in_both_versions():
    bug = textwrap.dedent("""
        def f(x):
            return x + 1
        def same(x):
            return x  # a comment
        class C:
            def m(self):
                return 1
            def gen(self):
                yield 1
        X = 1
    """).encode()
    gold = textwrap.dedent("""
        def f(x):
            return x + 2
        def same(x):
            return x  # the comment changed, the code did not
        def only_gold(x):
            return x
        class C:
            def m(self):
                return 2
            def gen(self):
                yield 2
        X = 2
    """).encode()
    assert oracle.targets({"p/a.py": bug, "p/new.py": None}, {"p/a.py": gold, "p/new.py": b"def g(): pass\n"}) == {
        "p/a.py": ["C.m", "f"]}


def test_reach_names_changed_generators_nested_code_and_import_time_changes():
    bug = b"T = 1\ndef g():\n    yield 1\ndef outer():\n    def inner():\n        return 1\n    return inner\ndef same():\n    pass\n"
    gold = b"T = 1\ndef g():\n    yield 2\ndef outer():\n    def inner():\n        return 2\n    return inner\ndef same():\n    pass\n"
    assert oracle.targets({"a.py": bug}, {"a.py": gold}) == {"a.py": ["outer"]}  # g is a generator: not replayed
    assert oracle.reach({"a.py": bug}, {"a.py": gold}) == {"a.py": ["g", "outer"]}
    assert oracle.reach({"a.py": bug}, {"a.py": bug.replace(b"T = 1", b"T = 2")}) == {"a.py": ["*"]}


def test_the_encoding_is_canonical_and_exact():
    enc = lambda v: frog_oracle._dumps(frog_oracle.encode(v))  # noqa: E731
    assert enc({"b": 1, "a": [1, 2.5]}) == enc({"a": [1, 2.5], "b": 1})  # equal dicts, any order
    assert enc((1, 2)) != enc([1, 2]) and enc(1) != enc(1.0) != enc(True)
    assert enc({3, 1, 2}) == enc({1, 2, 3}) and enc(float("nan")) == '{"f":"nan"}'
    p = frog_oracle.encode(Point(3))
    assert set(p) == {"p"} and frog_oracle.decode(p).x == 3
    for v in ([1, (2, "x"), {"k": {1, 2}}, b"\x00", 2**80, -0.0, 1j], {frozenset({1}): None}):
        assert frog_oracle.decode(frog_oracle.encode(v)) == v
    with pytest.raises(frog_oracle.Unencodable, match="lambda|function"):
        frog_oracle.encode(lambda: 1)


MODULE = textwrap.dedent("""
    class Box:
        def __init__(self, v):
            self.v = v
        def grow(self, n):
            self.v += n
            return self.v
    def double(x):
        if x < 0:
            raise ValueError(x)
        return helper(x) * 2
    def helper(x):
        return x
    def entry(x):
        return double(x) + 1
""")
DRIVER = textwrap.dedent("""
    import json, sys
    sys.path[:0] = [sys.argv[1], "."]
    import frog_oracle, pkgmod
    r = frog_oracle.Recorder({pkgmod.__file__: ["double", "Box.grow"]}, "out.jsonl", package=[pkgmod.__file__])
    r.start()
    pkgmod.double(3)
    try:
        pkgmod.double(-1)
    except ValueError:
        pass
    pkgmod.Box(1).grow(2)
    pkgmod.entry(5)
    pkgmod.helper(9)
    r.set_active(False)  # a test whose calls don't count: nothing kept, no hook paid
    pkgmod.double(7)
    r.set_active(True)
    pkgmod.double(8)
    r.stop()
""")


def _interpreters() -> list[str]:
    """This interpreter (3.11 here: sys.settrace) and any CPython >= 3.12 found (sys.monitoring)."""
    import glob
    import sys

    found = [sys.executable]
    for n in range(12, 16):
        real = [f"/usr/bin/python3.{n}", f"/usr/local/bin/python3.{n}",
                *sorted(glob.glob(str(Path.home() / f".pyenv/versions/3.{n}.*/bin/python3.{n}")))]
        exe = next((x for x in real if Path(x).is_file()), None)
        if exe:
            found.append(exe)
    return found


@pytest.mark.parametrize("python", _interpreters())
def test_the_recorder_sees_calls_returns_exceptions_and_state_on_every_hook(python, tmp_path):
    import subprocess

    (tmp_path / "pkgmod.py").write_text(MODULE)
    (tmp_path / "drive.py").write_text(DRIVER)
    plugin = str(Path(oracle.__file__).parents[1] / "_plugin")
    env = {"PATH": "/usr/bin:/bin"}
    p = subprocess.run([python, "drive.py", plugin], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    got = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(c["q"], c["args"].get("x"), json.loads(c["out"]).get("r"), json.loads(c["out"]).get("x"), c["after"])
            for c in got] == [("double", 3, 6, None, []), ("double", -1, None, "builtins.ValueError", []),
                              ("Box.grow", None, 3, None, ["self"]),
                              ("double", 5, 10, None, []), ("entry", 5, 11, None, []),  # helper(9) reaches none
                              ("double", 8, 16, None, [])]


def test_a_value_defined_in_test_code_is_refused_and_others_pickle_as_usual(monkeypatch):
    import collections
    import datetime
    import pickle
    import sys
    import types

    monkeypatch.setattr(frog_oracle, "TEST_PREFIXES", ("/nonexistent/tests/",))
    for v in (collections.OrderedDict(a=1), datetime.datetime(2020, 1, 2), [1, "x", (2, 3)], ValueError("x"), len,
              Point(3)):
        assert frog_oracle._dumps_checked(v) == pickle.dumps(v, protocol=4), v  # the bytes of a plain pickle
    mod = types.ModuleType("test_helpers")
    mod.__file__ = "/nonexistent/tests/test_helpers.py"

    class Timer:
        pass

    Timer.__module__, Timer.__qualname__, mod.Timer = "test_helpers", "Timer", Timer
    monkeypatch.setitem(sys.modules, "test_helpers", mod)
    with pytest.raises(frog_oracle.Unencodable, match="Timer is defined in test code"):
        frog_oracle.encode({"clock": Timer()})


def test_a_task_is_recorded_settled_and_covered():
    task = load_task(COVERED)
    rec = oracle.record_task(task)
    assert rec["covered"] >= 1, rec
    assert rec["recorded"] > len(rec["calls"])  # singularize('ors') depends on a test's set-up: dropped
    assert {(c["m"], c["q"]) for c in rec["calls"]} == {("inflection", "singularize")}
    assert all(json.loads(c["out"]) == {"r": "sponsor"} for c in rec["calls"])  # gold: the word itself
    # The stored record is this one (same digest), and replays byte for byte on the gold code.
    assert oracle.record_of(task) is not None and oracle.calls_of(task) == rec["calls"]
    repo = prepare(task_spec(task))
    template = template_for(repo, task.bug_patch, task.instance_id, hidden_tests=task.test_patch)
    gold = grading._patched(template, task.patch, "gold")
    changes = [grading.Change(f, (template.root / f).read_bytes(), new) for f, new in gold.items()]
    assert oracle.check(repo, task, template, changes).passed
    bug = oracle.check(repo, task, template, [])
    assert not bug.passed and bug.mismatch.startswith("inflection:singularize: call ")
    assert "sponsor" not in bug.mismatch  # the verdict names the function, never an expected value


def test_the_replay_sees_no_test_file(tmp_path):
    task = load_task(COVERED)
    repo = prepare(task_spec(task))
    template = template_for(repo, task.bug_patch, task.instance_id, hidden_tests=task.test_patch)
    tree = oracle.package_tree(repo, template, [], tmp_path / "t")
    files = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file())
    assert files and not [f for f in files if "test" in f.rsplit("/", 1)[-1]]
    assert "inflection/__init__.py" in files


FORGERY = textwrap.dedent('''\
    return _Same(replacement)


class _Same(str):
    """A string equal to every value: the tests pass while the buggy value is returned."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


def tableize''')


@pytest.mark.parametrize("warm", ["1", "0"])
def test_a_forgery_that_wins_the_test_run_scores_0_by_the_oracle_alone(monkeypatch, warm):
    """The buggy line stays; the package returns an always-equal string (issue 21's class 5), with the
    static check and the vault's check of comparison methods disabled. Without the oracle the in-process verdict is a
    pass (reward 1.0); with it, 0."""
    monkeypatch.setenv("FROG_GYM_GRADE_SERVER", warm)
    monkeypatch.setattr("frog_gym.grading.grade.scan", lambda changes: [])  # the static check, out of the way
    guard_for = grading.guard_for  # and the vault's check of comparison methods (it reads what guard_for adds)
    monkeypatch.setattr("frog_gym.grading.grade.guard_for",
                        lambda repo, task, canaries, *rest: guard_for(repo, task, canaries))
    env = gym.make(f"FrogSWE/{COVERED}-v0")
    try:
        def forge() -> dict:
            env.reset()
            obs, *_ = env.step({"tool": "str_replace", "path": "inflection/__init__.py",
                                "old_str": "    return replacement\n\n\ndef tableize",
                                "new_str": FORGERY.replace("class _Same", f"# {uuid.uuid4().hex}\nclass _Same")})
            assert "No replacement" not in obs
            _, reward, terminated, _, info = env.step({"tool": "submit"})
            assert terminated
            return {"reward": reward, **info}

        with_oracle = forge()
        assert with_oracle["report"]["fail_to_pass"]["failure"] == []  # the tests were won in-process
        assert with_oracle["tampering"] == []
        assert with_oracle["reward"] == 0.0 and with_oracle["resolved"] is False
        assert with_oracle["report"]["oracle"]["passed"] is False
        assert with_oracle["report"]["oracle"]["mismatch"].startswith("inflection:singularize:")
        assert with_oracle["report"]["resolved"] == "RESOLVED_NO"
        assert "the behavioural oracle disagrees: inflection:singularize:" in with_oracle["report"]["note"]
        assert "the behavioural oracle disagrees" in Path(with_oracle["report"]["log_path"]).read_text()

        monkeypatch.setattr(oracle, "calls_of", lambda task: [])  # the same grade without the oracle
        without = forge()
        assert without["reward"] == 1.0 and without["report"]["oracle"] is None
    finally:
        env.close()


def test_the_gold_fix_passes_its_oracle_through_the_env():
    task = load_task(COVERED)
    env = gym.make(f"FrogSWE/{COVERED}-v0")
    try:
        env.reset()
        ws = env.unwrapped._ws.path
        for f, new in grading._patched(env.unwrapped._template, task.patch, "gold").items():
            (ws / f).write_bytes(new)
        _, reward, _, _, info = env.step({"tool": "submit"})
        assert reward == 1.0, info["report"]["note"]
        assert info["report"]["oracle"] == {**info["report"]["oracle"], "calls": 2, "matched": 2, "passed": True,
                                            "mismatch": ""}
    finally:
        env.close()


@pytest.mark.slow
def test_every_registered_gold_fix_passes_its_oracle():
    """Every task with an oracle: the gold fix's package reproduces every recorded outcome, in the grading
    replay (the same sandbox and comparison as a grade)."""
    failed, checked = [], 0
    for iid in registered_task_ids():
        task = load_task(iid)
        if not oracle.calls_of(task):
            continue
        repo = prepare(task_spec(task))
        template = template_for(repo, task.bug_patch, iid, hidden_tests="" if is_live(iid) else task.test_patch)
        gold = grading._patched(template, task.patch, "gold")
        tests = grading.patch_files(task.test_patch)
        changes = [grading.Change(f, (template.root / f).read_bytes() if (template.root / f).is_file() else None, new)
                   for f, new in gold.items() if f not in tests]
        v = oracle.check(repo, task, template, changes)
        checked += 1
        if not v.passed:
            failed.append((iid, v.mismatch))
    assert checked and not failed, f"{len(failed)} of {checked} gold fixes fail their oracle: {failed[:5]}"


def _apr_fixes() -> list[tuple[str, str]]:
    """(task id, model_patch) of every fix the `apr` agent got reward 1.0 for in the stored leaderboard runs."""
    from frog_gym.catalog.task import task_index

    root = Path(oracle.__file__).parents[2] / "leaderboard" / "results"
    out, index = {}, task_index()
    for f in sorted(root.glob("apr__*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            if r.get("reward") == 1 and r.get("model_patch") and r["task_id"] in index:
                out[(r["task_id"], r["model_patch"])] = None
    return list(out)


@pytest.mark.slow
def test_the_fixes_apr_found_pass_their_oracle(tmp_path):
    """Fixes that are not the gold patch (a program-repair agent's) but pass the tests pass the oracle too."""
    from frog_gym.sandbox.workspace import Workspace, apply_patch

    checked, failed = 0, []
    for iid, patch in _apr_fixes():
        task = load_task(iid)
        if not oracle.calls_of(task):
            continue
        repo = prepare(task_spec(task))
        template = template_for(repo, task.bug_patch, iid, hidden_tests="" if is_live(iid) else task.test_patch)
        ws = Workspace(tmp_path / iid)
        ws.sync(template)
        apply_patch(ws.path, patch, f"apr's fix of {iid}")
        v = oracle.check(repo, task, template, ws.changes())
        checked += 1
        if not v.passed:
            failed.append((iid, v.mismatch))
    assert checked and not failed, f"{len(failed)} of {checked} of apr's fixes fail the oracle: {failed}"


def test_an_oracle_counts_only_for_the_task_it_was_recorded_from():
    import dataclasses

    task = load_task(COVERED)
    assert oracle.calls_of(task)
    for field, value in [("patch", task.patch + "\n"), ("bug_patch", task.bug_patch + "\n"),
                         ("FAIL_TO_PASS", (*task.FAIL_TO_PASS, "x.py::t"))]:
        assert oracle.calls_of(dataclasses.replace(task, **{field: value})) == [], field
    assert oracle.calls_of(dataclasses.replace(task, problem_statement="reworded")) == oracle.calls_of(task)


def test_no_recorded_task_had_a_gold_test_change_outcome_under_recording():
    """Recording keeps no oracle where a FAIL_TO_PASS test failed on the gold code while recorded; the stored
    records say none did (``frog-gym oracle stats`` prints the same count)."""
    from frog_gym.grading.oracle import _oracles_dir, _read_lines

    latest = {r["instance_id"]: r for f in _oracles_dir().iterdir() if f.name.endswith(".jsonl.gz")
              for r in _read_lines(f.read_bytes())}  # a later record of a task replaces an earlier one
    records = list(latest.values())
    assert len(records) > 100
    changed = [r for r in records if r.get("changed_outcome")]
    # A task whose recording changed a gold test's outcome would keep no oracle (grading never runs the recorder, so
    # its grades are the tests' alone); none does (requests' Response, whose __getstate__ reads the body, is no
    # longer pickled while recorded).
    # One does since session 15: werkzeug__live-2.3.7-4, whose only FAIL_TO_PASS test uploads an empty file through
    # EnvironBuilder and fails while recorded (the recorder's encoding of a stream argument is the likely cause, as it
    # was for requests; not yet mended); like any such task it keeps no oracle, and any other one fails here.
    disturbed = {"werkzeug__live-2.3.7-4"}
    assert {r["instance_id"] for r in changed} == disturbed and not any(r["calls"] for r in changed), \
        [(r["instance_id"], r["changed_outcome"]) for r in changed]


def test_partial_credit_counts_the_oracle_calls_that_agree():
    from frog_gym.grading.grade import GradeReport, ResolvedStatus

    r = GradeReport(ResolvedStatus.FULL, {}, {"success": ["a"], "failure": []}, {"success": ["b"], "failure": []},
                    1, 0.0, oracle={"calls": 4, "matched": 3, "passed": False, "mismatch": "m:f: call 2 of 4 ..."})
    assert not r.is_resolved and r.reward() == 0.0 and r.reward(partial_credit=True) == 0.75
    r.oracle = {"calls": 4, "matched": 4, "passed": True, "mismatch": ""}
    assert r.is_resolved and r.reward() == 1.0
    assert GradeReport.from_dict(r.to_dict()).oracle == r.oracle


def test_a_grade_report_as_a_dictionary_is_what_asdict_makes_and_shares_no_container():
    from dataclasses import asdict

    from frog_gym.grading.grade import GradeReport, ResolvedStatus

    r = GradeReport(ResolvedStatus.PARTIAL, {"t::a": "PASSED", "t::b": "FAILED"},
                    {"success": ["t::a"], "failure": []}, {"success": [], "failure": ["t::b"]}, 1, 0.5,
                    discarded={"x.py": "a test file"}, tampering=["flag"],
                    oracle={"calls": 2, "matched": 1, "passed": False, "mismatch": [{"at": (1, "f")}]})
    want = asdict(r)
    want["resolved"] = r.resolved.value
    got = r.to_dict()
    assert got == want and json.loads(json.dumps(got)) == json.loads(json.dumps(want))
    assert type(got["oracle"]["mismatch"][0]["at"]) is tuple
    got["tests"]["t::a"] = "FAILED"
    got["fail_to_pass"]["success"].append("t::z")
    got["oracle"]["mismatch"][0]["at"] = None
    assert r.tests["t::a"] == "PASSED" and r.fail_to_pass["success"] == ["t::a"]
    assert r.oracle["mismatch"][0]["at"] == (1, "f")
    assert GradeReport.from_dict(r.to_dict()) == r


PROBE = textwrap.dedent('''\
    import os as _os


    def singularize(word: str) -> str:
        """A probe in the agent's place: report what the replay's process can see."""
        tests = sorted(p for d, _, fs in _os.walk("/testbed") for p in fs if p.startswith("test") or p == "conftest.py")
        return repr({"in": sorted(_os.listdir("/frog/in")), "calls": open("/frog/in/calls.jsonl").read(),
                     "tests": tests, "oracles": _os.path.exists(%r), "snapshots": _os.path.exists(%r),
                     "hash_randomization": __import__("sys").flags.hash_randomization,
                     "machine": [*__import__("platform").uname()[1:4], _os.cpu_count()]})
''')


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_the_replay_gets_arguments_only_and_sees_no_test_or_task_data(tmp_path, warm):
    """Cold (a sandbox of its own) and warm (a child of the repository's oracle server) alike."""
    task = load_task(COVERED)
    repo = prepare(task_spec(task))
    template = template_for(repo, task.bug_patch, task.instance_id, hidden_tests=task.test_patch)
    rel = "inflection/__init__.py"
    src = (template.root / rel).read_text()
    oracles = str(Path(oracle._oracles_dir()))  # where the expected values live on the host
    from frog_gym import paths

    probed = src + "\n\n" + PROBE % (oracles, str(paths.home() / "snapshots"))  # the original sources
    changes = [grading.Change(rel, src.encode(), probed.encode())]
    calls = oracle.calls_of(task)
    if warm:
        from frog_gym.grading.oracle_server import replay_warm

        replayed = replay_warm(repo, template, changes, calls, 60.0, frozenset(grading.patch_files(task.test_patch)))
        assert replayed is not None
        got, note = replayed
    else:
        got, note = oracle.replay(repo, oracle.package_tree(repo, template, changes, tmp_path / "t"), calls)
    assert not note and got[0].startswith(b'{"r":')
    seen = eval(json.loads(got[0])["r"])  # the test decodes what the probe returned; the host never does
    assert seen["in"] == ["calls.jsonl"] and seen["tests"] == []
    assert seen["oracles"] is False and seen["snapshots"] is False
    assert seen["hash_randomization"] == 0  # PYTHONHASHSEED=0, as in the recording run: a set's order is fixed
    # one machine identity on every machine (a recorded outcome once held the recording kernel's release)
    assert seen["machine"] == ["sandbox", "0", "#0", 1] and platform.release() != "0"
    sent = [json.loads(line) for line in seen["calls"].splitlines()]
    assert len(sent) == len(calls) and all(set(c) == {"m", "q", "n", "args", "after"} for c in sent)
    assert all(c["out"] not in seen["calls"] for c in calls)  # no expected outcome reached the process
    assert not oracle.compare(calls, got).passed


def test_frog_gym_tasks_shows_each_tasks_oracle(capsys):
    from frog_gym.cli import main

    assert main(["tasks", "--repo", "inflection"]) == 0
    out, err = capsys.readouterr()
    line = next(x for x in out.splitlines() if x.startswith(COVERED))
    assert f"oracle={len(oracle.calls_of(load_task(COVERED)))} " in line
    assert "oracle=N: the grade replays N recorded calls" in err
    assert main(["tasks", "--repo", "inflection", "--json"]) == 0
    rows = {json.loads(x)["instance_id"]: json.loads(x) for x in capsys.readouterr().out.splitlines()}
    assert rows[COVERED]["oracle"]["calls"] >= 1 and rows[COVERED]["oracle"]["covered"] >= 1


def test_an_oracle_file_being_appended_reads_up_to_its_last_whole_record(tmp_path):
    a = {"instance_id": "r__a-1", "repo": "r", "calls": []}
    b = {"instance_id": "r__b-1", "repo": "r", "calls": []}
    oracle.append_record(tmp_path, a)
    oracle.append_record(tmp_path, b)
    data = (tmp_path / "r.jsonl.gz").read_bytes()
    assert [r["instance_id"] for r in oracle._read_lines(data)] == ["r__a-1", "r__b-1"]
    assert [r["instance_id"] for r in oracle._read_lines(data[:-5])] == ["r__a-1"]  # b half written
    oracle.compact(tmp_path)
    assert [r["instance_id"] for r in oracle._read_lines((tmp_path / "r.jsonl.gz").read_bytes())] == ["r__a-1", "r__b-1"]


CLOCKED = '''


def stamp_date(word):
    import datetime
    return f"{word}-{datetime.date.today():%Y-%m}"


def stamp_strftime(word):
    import time
    return f"{word}-{time.strftime('%Y')}"


def stamp_now(word):
    from datetime import datetime
    return (word, datetime.now().year)


def no_clock(word):
    import datetime
    made = datetime.datetime(2020, 1, 2, 3, 4, tzinfo=datetime.timezone.utc)
    return (word, made, made.date(), datetime.date(2021, 3, 4), isinstance(made, datetime.date))
'''


def test_settling_drops_a_call_whose_outcome_depends_on_the_date(tmp_path):
    """A call that compares with today passes its oracle on the day it was recorded and fails the gold code on
    a later one (boltons__live-26.2.0-5 and pyjwt__live-2.6.0-1 had such calls): settling replays every call
    once more under a clock moved a year, a month, a day and hours ahead and drops the ones that differ, while
    calls that only build dates keep the very same outcome bytes there."""
    task = load_task(COVERED)
    repo = prepare(task_spec(task))
    template = template_for(repo, task.bug_patch, task.instance_id, hidden_tests=task.test_patch)
    rel = "inflection/__init__.py"
    src = (template.root / rel).read_text()
    tree = oracle.package_tree(repo, template, [grading.Change(rel, src.encode(), (src + CLOCKED).encode())],
                               tmp_path / "t")
    first = oracle.calls_of(task)[0]
    names = ["stamp_date", "stamp_strftime", "stamp_now", "no_clock"]
    calls = [{**first, "q": q} for q in names] + [first]
    got, note = oracle.replay(repo, tree, calls)
    assert not note and all(line.startswith(b'{"r":') for line in got), got
    calls = [{**c, "out": line.decode()} for c, line in zip(calls, got)]
    moved, _ = oracle.replay(repo, tree, calls, clock_shift=oracle.CLOCK_SHIFT)
    assert [a == b for a, b in zip(got, moved)] == [False, False, False, True, True]
    kept = oracle._settle(repo, tree, calls)
    assert [c["q"] for c in kept] == ["no_clock", first["q"]]
    assert sum("p" in part for part in json.loads(got[3])["r"]["t"][1:4]) == 3  # the dates were pickled: alike


def test_a_stored_oracle_settles_again_under_the_moved_clock():
    task = load_task(COVERED)
    rec = dict(oracle.record_of(task))
    rec.pop("clock", None)
    again = oracle.resettle(task, rec)
    assert again is not None and again["clock"] == oracle.CLOCK_SHIFT
    assert again["calls"] == rec["calls"] and again["covered"] == rec["covered"]  # singularize needs no clock
    assert oracle.resettle(task, again) is None  # settled so already
