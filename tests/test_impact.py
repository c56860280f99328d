"""Test impact (``frog_gym.grading.impact``): a grade runs the PASS_TO_PASS tests a change can reach and carries the
others over, and its verdict is the one a grade of every test gives.

A fixture repository (a git repository made here, as the generator's tests make theirs) whose tests reach the
package in each way selection must see: by executing a function, by reading a function's source without running
it, by a warning's line number, and through a module-level constant. Each wrong fix is graded twice, with
selection and with ``FROG_GYM_IMPACT=0``, through the real grade in the real sandbox; the two verdicts and failure
lists must agree, and the tests that fail must never be among those carried over. The slow test does the same on
registered tasks of several repositories, with a second task's bug as the wrong part of the fix.
"""

from __future__ import annotations

import ast
import difflib
import random
from pathlib import Path

import pytest

from frog_gym.catalog.live import is_live, task_spec
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo_file
from frog_gym.catalog.task import Task, load_task, registered_task_ids
from frog_gym.generators import coverage_map
from frog_gym.grading import impact
from frog_gym.grading.grade import ResolvedStatus, grade
from frog_gym.grading.runner import _patched, patch_files
from frog_gym.sandbox.workspace import Change, Workspace, template_for

CALC = '''"""A tiny library for the test-impact tests."""

import warnings

SCALE = 1


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def mean(xs):
    return sum(xs) / len(xs)


def shout(s):
    warnings.warn("loud", UserWarning)
    return s.upper()


def described(x):
    return x * 2 + 1


def spare(x):
    return x - 1


_SEEN = []


def remember(x):
    return x


def seen():
    return list(_SEEN)


def _build_table(n):
    return [i * i for i in range(n)]


SQUARES = _build_table(5)


def make_pair(x):
    return (x, x * 2)
'''

WARN_LINE = CALC.splitlines().index('    warnings.warn("loud", UserWarning)') + 1

TESTS = f'''import inspect
import warnings

import pytest

import calc


@pytest.fixture(scope="module")
def pair():
    return calc.make_pair(2)


def test_clamp_low():
    assert calc.clamp(-5, 0, 10) == 0


def test_clamp_inside():
    assert calc.clamp(5, 0, 10) == 5


def test_mean():
    assert calc.mean([1, 2, 3, 6]) == 3


def test_shout_warns_at_its_line():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert calc.shout("a") == "A"
    assert seen[0].lineno == {WARN_LINE}


def test_described_source():  # reads the function's source, never runs it
    assert "x * 2 + 1" in inspect.getsource(calc.described)


def test_scale():
    assert calc.SCALE == 1


class TestBounds:  # one test records what the others read, as pathspec's IterTreeTest does
    def test_a_records_the_low_bound(self):
        type(self).low = 0

    def test_b_clamps_to_it(self):  # runs clamp; reads what test_a left on the class
        assert calc.clamp(-1, self.low, 1) == 0


def test_remember():
    assert calc.remember(1) == 1


def test_nothing_seen():  # runs after test_remember, and sees what it left behind
    assert calc.seen() == []


def test_squares():  # runs no function: the table was built at import
    assert calc.SQUARES[3] == 9


def test_pair_first(pair):  # sets the module's fixture up: make_pair runs here
    assert pair[0] == 2


def test_pair_second(pair):  # gets the fixture made for the test before
    assert pair[1] == 4
'''

WORDS = '''def hello():
    return "hi"
'''

META = '''import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "words.py")) as f:
    WORDS_SOURCE = f.read()  # module-level code reading a measured file: every test may depend on it
'''

WORDS_TESTS = '''import meta
import words


def test_hello():
    assert words.hello() == "hi"


def test_words_source():
    assert 'return "hi"' in meta.WORDS_SOURCE
'''

PROPS = '''from hypothesis import given, strategies as st

import calc


@given(st.integers(-1000, 1000))
def test_mean_of_one(x):
    assert calc.mean([x]) == x
'''

SPEC = '''name = "{name}"
[source]
git = "{path}"
commit = "{commit}"
[install]
import_paths = ["."]
requires = ["pytest==8.4.2", "pytest-timeout==2.4.0", "hypothesis==6.170.27"]
install_package = false
[tests]
paths = ["test_calc.py", "test_words.py", "test_props.py"]
[generate]
mutable = ["calc.py", "words.py"]
'''

P2P = ("test_calc.py::test_clamp_inside", "test_calc.py::test_mean", "test_calc.py::test_shout_warns_at_its_line",
       "test_calc.py::test_described_source", "test_calc.py::test_scale", "test_calc.py::test_remember",
       "test_calc.py::test_nothing_seen", "test_calc.py::test_squares", "test_calc.py::test_pair_first",
       "test_calc.py::test_pair_second", "test_calc.py::TestBounds::test_a_records_the_low_bound",
       "test_calc.py::TestBounds::test_b_clamps_to_it", "test_words.py::test_hello",
       "test_words.py::test_words_source", "test_props.py::test_mean_of_one")


def diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


BUGGY = CALC.replace("    if x < lo:\n        return lo", "    if x < lo:\n        return x")


@pytest.fixture(scope="module")
def calc_task(tmp_path_factory, git_source):
    src = tmp_path_factory.mktemp("calcimpact")
    commit = git_source(src, {"calc.py": CALC, "test_calc.py": TESTS, "words.py": WORDS, "meta.py": META,
                              "test_words.py": WORDS_TESTS, "test_props.py": PROPS})
    path = tmp_path_factory.mktemp("specs") / "calcimpact.toml"
    path.write_text(SPEC.format(name="calcimpact", path=src, commit=commit))
    repo = prepare(load_repo_file(path))
    cmap, _ = coverage_map.build(repo)
    task = Task(instance_id="calcimpact__clamp-1", repo="calcimpact", version="0", base_commit=commit,
                patch=diff("calc.py", BUGGY, CALC), problem_statement="clamp(-5, 0, 10) returns -5, not 0",
                FAIL_TO_PASS=("test_calc.py::test_clamp_low",), PASS_TO_PASS=P2P,
                bug_patch=diff("calc.py", CALC, BUGGY))
    template = template_for(repo, task.bug_patch, task.instance_id)
    return repo, task, template, cmap, Workspace(tmp_path_factory.mktemp("scratch") / "s")


def both_ways(calc_task, monkeypatch, final: str):
    """The grade of ``final`` as calc.py with selection, then without; the two must agree."""
    repo, task, template, _, scratch = calc_task
    changes = [Change("calc.py", BUGGY.encode(), final.encode())]
    reports = []
    for on in ("1", "0"):
        monkeypatch.setenv("FROG_GYM_IMPACT", on)
        reports.append(grade(repo, task, template, changes, scratch, use_cache=False))
    picked, every = reports
    assert every.inferred == []
    assert picked.resolved == every.resolved, (picked.note, every.note)
    assert picked.fail_to_pass == every.fail_to_pass and picked.pass_to_pass == every.pass_to_pass
    assert not set(picked.inferred) & set(every.pass_to_pass["failure"])
    assert all(picked.tests[t] == "PASSED" for t in picked.inferred)
    return picked, every


def test_the_map_records_which_tests_read_a_file(calc_task):
    _, _, _, cmap, _ = calc_task
    assert cmap.version == impact.MAP_VERSION and cmap.files == ("calc.py", "words.py")
    readers = {cmap.tests[i] for i in cmap.readers.get("calc.py", ())}
    assert "test_calc.py::test_described_source" in readers
    assert "test_calc.py::test_mean" not in readers
    described = CALC.splitlines().index("def described(x):") + 2
    assert cmap.covering("calc.py", [described]) == []  # read, never run: only ``readers`` knows it
    # hypothesis reads the package's files for constants to draw from: on behalf of its tests
    assert "test_props.py::test_mean_of_one" in readers
    # read at import by meta.py (not by the import of words itself): on every test's behalf
    assert len(cmap.readers["words.py"]) == len(cmap.tests)


def test_a_file_read_at_import_reruns_every_test(calc_task, monkeypatch):
    repo, task, template, _, scratch = calc_task
    changes = [Change("calc.py", BUGGY.encode(), CALC.encode()),
               Change("words.py", WORDS.encode(), WORDS.replace('"hi"', '"hello"').encode())]
    reports = []
    for on in ("1", "0"):
        monkeypatch.setenv("FROG_GYM_IMPACT", on)
        reports.append(grade(repo, task, template, changes, scratch, use_cache=False))
    assert reports[0].inferred == [] and reports[0].resolved is reports[1].resolved is ResolvedStatus.NO


def test_the_gold_fix_runs_only_its_failing_test(calc_task, monkeypatch):
    picked, every = both_ways(calc_task, monkeypatch, CALC)
    assert picked.resolved is ResolvedStatus.FULL
    assert sorted(picked.inferred) == sorted(P2P)  # the tree is the snapshot's: nothing can behave otherwise
    assert "inferred test_calc.py::test_mean" in Path(picked.log_path).read_text()


def test_a_broken_function_reruns_the_tests_that_execute_it(calc_task, monkeypatch):
    picked, _ = both_ways(calc_task, monkeypatch, CALC.replace("sum(xs) / len(xs)", "sum(xs) / (len(xs) + 1)"))
    assert picked.resolved is ResolvedStatus.NO
    assert picked.pass_to_pass["failure"] == ["test_calc.py::test_mean", "test_props.py::test_mean_of_one"]
    assert "test_calc.py::test_scale" in picked.inferred


def test_a_function_read_as_text_reruns_its_readers(calc_task, monkeypatch):
    picked, _ = both_ways(calc_task, monkeypatch, CALC.replace("return x * 2 + 1", "return x * 3 + 1"))
    assert picked.pass_to_pass["failure"] == ["test_calc.py::test_described_source"]


def test_moved_lines_rerun_the_tests_of_the_functions_below(calc_task, monkeypatch):
    fixed_longer = CALC.replace("    if x < lo:\n        return lo", "    if x < lo:\n        x = lo\n        return x")
    picked, _ = both_ways(calc_task, monkeypatch, fixed_longer)
    assert picked.pass_to_pass["failure"] == ["test_calc.py::test_shout_warns_at_its_line"]  # the warning moved
    assert "test_calc.py::test_described_source" not in picked.inferred  # its file changed under its reader


def test_a_module_level_change_runs_everything(calc_task, monkeypatch):
    picked, _ = both_ways(calc_task, monkeypatch, CALC.replace("SCALE = 1", "SCALE = 2"))
    assert picked.inferred == [] and picked.pass_to_pass["failure"] == ["test_calc.py::test_scale"]


def test_a_function_that_leaves_state_behind_runs_everything(calc_task, monkeypatch):
    """remember() now records into a module-level list that seen() reads: test_nothing_seen never runs
    remember(), yet fails after test_remember did."""
    picked, _ = both_ways(calc_task, monkeypatch, CALC.replace("def remember(x):\n    return x",
                                                               "def remember(x):\n    _SEEN.append(x)\n    return x"))
    assert picked.inferred == [] and picked.pass_to_pass["failure"] == ["test_calc.py::test_nothing_seen"]


@pytest.mark.parametrize("code, shared", [
    ("def f(k, v):\n    _CACHE[k] = v", True),
    ("def f(v):\n    REGISTRY.append(v)", True),
    ("def f(v):\n    mod.attr.x = v", True),
    ("def f(v):\n    global N\n    N = v", True),
    ("def f(o, v):\n    setattr(o, 'x', v)", True),
    ("def f():\n    def g():\n        nonlocal x\n    x = 1", True),
    ("def f(v):\n    import mod as m\n    m.attr = v", True),  # a module imported here is no local object
    ("def f(v):\n    m = MOD\n    m.attr = v", True),  # nor an alias of a module's object
    ("def f(v):\n    cache = _CACHE\n    cache.update(v=v)", True),
    ("def f(self, v):\n    self.v = v\n    self.items.append(v)", False),  # the caller's object
    ("def f(v):\n    out = {}\n    out[v] = 1\n    out.update(a=1)\n    return out", False),
    ("def f(v):\n    return sorted(DATA) + [v]", False),
])
def test_writes_shared_state(code, shared):
    assert impact.writes_shared_state(ast.parse(code).body[0]) is shared


def test_a_function_run_at_import_runs_everything(calc_task, monkeypatch):
    """_build_table ran while calc was imported; test_squares reads what it built and runs no function."""
    _, _, _, cmap, _ = calc_task
    picked, _ = both_ways(calc_task, monkeypatch, CALC.replace("return [i * i for", "return [i + i for"))
    assert picked.inferred == [] and picked.pass_to_pass["failure"] == ["test_calc.py::test_squares"]


def test_a_shared_fixture_counts_as_import_time(calc_task, monkeypatch):
    """make_pair runs once, in test_pair_first's setup of a module fixture that test_pair_second uses too."""
    picked, _ = both_ways(calc_task, monkeypatch, CALC.replace("return (x, x * 2)", "return (x, x * 3)"))
    assert picked.inferred == [] and picked.pass_to_pass["failure"] == ["test_calc.py::test_pair_second"]


def test_a_new_module_runs_everything(calc_task, monkeypatch):
    repo, task, template, _, scratch = calc_task
    changes = [Change("calc.py", BUGGY.encode(), CALC.encode()), Change("extra.py", None, b"X = 1\n")]
    monkeypatch.setenv("FROG_GYM_IMPACT", "1")
    assert impact.select(repo, task, template, changes) is None
    assert impact.select(repo, task, template, changes[:1]) is not None


def test_a_change_no_test_reaches_is_carried_over(calc_task, monkeypatch):
    picked, _ = both_ways(calc_task, monkeypatch, CALC.replace("return x - 1", "return x - 2"))
    assert picked.resolved is ResolvedStatus.FULL
    # all but the test that reads calc.py's text, which depends on every line of it
    assert sorted(picked.inferred) == sorted(set(P2P) - {"test_calc.py::test_described_source",
                                                         "test_props.py::test_mean_of_one"})


def test_a_class_runs_whole(calc_task, monkeypatch):
    """Another correct fix of clamp: TestBounds.test_b runs clamp, so test_a, which runs no library code but
    leaves the bound test_b reads on their class, runs too (carried over, test_b failed on its own)."""
    picked, _ = both_ways(calc_task, monkeypatch, CALC.replace("    if x < lo:\n        return lo",
                                                               "    if x <= lo:\n        return lo"))
    assert picked.resolved is ResolvedStatus.FULL
    assert "test_calc.py::TestBounds::test_a_records_the_low_bound" not in picked.inferred
    assert "test_calc.py::test_mean" in picked.inferred


def test_an_unfixed_bug_is_a_change_too(calc_task, monkeypatch):
    """The agent fixes nothing and edits another function: the bug's own function still differs from the
    snapshot, so the tests that execute clamp run."""
    picked, _ = both_ways(calc_task, monkeypatch, BUGGY.replace("return x - 1", "return x - 2"))
    assert picked.resolved is ResolvedStatus.NO
    assert "test_calc.py::test_clamp_inside" not in picked.inferred


@pytest.mark.parametrize("old, new, expect", [
    ("def f():\n    '''doc'''\n    return 1\n", "def f():\n    '''other'''\n    return 1\n", None),  # __doc__
    ("@a\ndef f():\n    return 1\n", "@b\ndef f():\n    return 1\n", None),  # decorators run at import
    ("def f(x=1):\n    return x\n", "def f(x=2):\n    return x\n", None),  # defaults too
    ("class C:\n    n = 1\n\n    def m(self):\n        return 1\n",
     "class C:\n    n = 1\n\n    def m(self):\n        return 2\n", [(4, 5)]),  # a method
    ("class C:\n    n = 1\n", "class C:\n    n = 2\n", None),  # a class attribute
    ("def f():\n    def g():\n        return 1\n    return g\n",
     "def f():\n    def g():\n        return 2\n    return g\n", [(1, 4)]),  # a nested function: its outer one
    ("if X:\n    def f():\n        return 1\n", "if X:\n    def f():\n        return 2\n", [(2, 3)]),
    ("def f():\n    return 1  # one\n", "def f():\n    return 1  # two\n", []),  # a comment
    ("def f():\n    return 1\n", "def f(:\n    return 1\n", None),  # does not parse
    ("def f():\n    return 1\n", "def f():\n    return 1\n\n\ndef g():\n    return 2\n", None),  # a new function
])
def test_changed_functions(old, new, expect):
    assert impact.changed_functions(old.encode(), new.encode()) == expect


def test_a_froglive_task_is_graded_on_every_test():
    """A FrogLive fix is a later release's code: the snapshot's map does not speak for its tree."""
    tid = next(i for i in registered_task_ids() if is_live(i))
    task = load_task(tid)
    repo = prepare(task_spec(task))
    template = template_for(repo, task.bug_patch, tid, hidden_tests="")
    assert not impact.reference_is_snapshot(repo, task, template)


def _pairs(n_repos: int, per_repo: int, seed: int = 0):
    """(task, other task) pairs of single-bug tasks of one repository, ``per_repo`` in each of ``n_repos``
    repositories drawn at random."""
    rng = random.Random(seed)
    by_repo: dict[str, list[str]] = {}
    for tid in registered_task_ids():
        if not is_live(tid) and "__combo" not in tid and "__mirror" not in tid:
            by_repo.setdefault(tid.split("__")[0], []).append(tid)
    for name in rng.sample(sorted(r for r, ids in by_repo.items() if len(ids) >= 8), n_repos):
        ids = rng.sample(sorted(by_repo[name]), per_repo * 2)
        yield from zip(ids[::2], ids[1::2])


@pytest.mark.slow
def test_selection_agrees_with_grading_every_test_on_registered_tasks(monkeypatch, tmp_path):
    """Each task graded with its gold fix, then with its gold fix plus another task's bug (a fix that breaks
    something else), with selection and without: same verdicts, same failures, none of them carried over."""
    agreed, carried, ran = 0, 0, 0
    for tid, other in _pairs(n_repos=10, per_repo=3):
        task, wrong = load_task(tid), load_task(other)
        repo = prepare(task_spec(task))
        coverage_map.build(repo)
        template = template_for(repo, task.bug_patch, tid, hidden_tests=task.test_patch)
        gold = _patched(template, task.patch, "gold")
        elsewhere = template_for(repo, wrong.bug_patch, other, hidden_tests=wrong.test_patch)
        broken = {**gold, **{f: (elsewhere.root / f).read_bytes() for f in patch_files(wrong.bug_patch)}}
        for final in (gold, broken):
            changes = [Change(f, (template.root / f).read_bytes() if (template.root / f).is_file() else None, new)
                       for f, new in sorted(final.items()) if new is not None]
            reports = []
            for on in ("1", "0"):
                monkeypatch.setenv("FROG_GYM_IMPACT", on)
                reports.append(grade(repo, task, template, changes, Workspace(tmp_path / "s"), use_cache=False))
            picked, every = reports
            assert (picked.resolved, picked.pass_to_pass, picked.fail_to_pass) == (
                every.resolved, every.pass_to_pass, every.fail_to_pass), (tid, other, picked.note, every.note)
            assert not set(picked.inferred) & set(every.pass_to_pass["failure"]), (tid, other)
            agreed += 1
            carried += len(picked.inferred)
            ran += len(task.selected_tests) - len(picked.inferred)
    print(f"{agreed} grades agree; {carried} PASS_TO_PASS tests carried over, {ran} run")
    assert agreed == 60 and carried > 0


def test_the_cli_builds_a_map_that_grading_reads(capsys):
    from frog_gym.catalog.spec import load_repo
    from frog_gym.cli import main

    assert main(["registry", "coverage", "inflection"]) == 0
    assert "inflection: " in capsys.readouterr().out
    cmap = impact.cached_map(load_repo("inflection"))
    assert cmap is not None and cmap.version == impact.MAP_VERSION and "inflection/__init__.py" in cmap.files
    assert main(["registry", "coverage", "no-such-repository"]) != 0


@pytest.mark.parametrize("selection", [True, False])
def test_the_env_grades_with_selection_unless_told_not_to(selection):
    """The env's grade carries tests over (training's default); ``impact_selection=False`` grades them all."""
    from frog_gym.agents.oracle import OracleAgent
    from frog_gym.catalog.spec import load_repo
    from frog_gym.env import FrogSWEEnv

    tid = "inflection__swapped_call_args-e597d9c8"
    coverage_map.build(prepare(load_repo("inflection")))
    env = FrogSWEEnv(task_id=tid, impact_selection=selection)
    try:
        obs, info = env.reset(seed=0)
        agent = OracleAgent()
        agent.reset(obs, info)
        while True:
            obs, reward, term, trunc, info = env.step(agent.act(obs))
            if term or trunc:
                break
        report = info["report"]
        assert reward == 1.0 and report["resolved"] == "RESOLVED_FULL"
        assert bool(report["inferred"]) is selection
        assert set(report["inferred"]) <= set(load_task(tid).PASS_TO_PASS)
    finally:
        env.close()


def test_what_is_not_the_repository_is_left_out_of_the_reference_check():
    """A snapshot that ran its suite has pytest's cache; a workspace has its .git: neither is the repository."""
    entry = ["f", 3, "abc", 0o644]
    files = impact._files({"pkg/m.py": entry, ".pytest_cache/v/cache/lastfailed": entry, ".git/HEAD": entry,
                           "pkg/__pycache__/m.cpython-311.pyc": entry, "docs/.pytest_cache.md": entry})
    assert sorted(files) == ["docs/.pytest_cache.md", "pkg/m.py"]
