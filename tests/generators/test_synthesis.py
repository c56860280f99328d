"""Task synthesis end to end on a tiny fixture repository: coverage targeting, the keep-rules (uncaught,
flaky and crashing mutants), statements, features, seeded determinism and resuming; plus export/import
round trips and check_env on a sample of the registered tasks.

The fixture is a git repository made here and registered through a temporary spec file (a git source
pointing at the local path); its venv is built once into the real cache like any repository's.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import frog_gym  # noqa: F401  (registers the envs)
from frog_gym.generators import coverage_map, dedupe, interop, statements
from frog_gym.generators.statement_check import problems, symbols_of
from frog_gym.generators.synthesis import GENERATOR, GenerateConfig, generate
from frog_gym.generators.taskfiles import read_existing
from frog_gym.generators.validate import validate
from frog_gym.grading.runner import run_tests
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo_file
from frog_gym.catalog.task import load_task, task_index
from frog_gym.sandbox.workspace import Change, Workspace, apply_patch

CALC = '''"""A tiny library for the generator's tests."""

import random


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)


def span(xs):
    return max(xs) - min(xs)


def noisy():
    return 1


def never_tested(x):
    return x * 2 + 1


_CACHE = {}


def remember(key, value):
    _CACHE[key] = value


def recall(key, default=None):
    return _CACHE.get(key, default)
'''

TESTS = '''from calc import _CACHE, clamp, mean, noisy, recall, remember, span


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0


def test_clamp_high():
    assert clamp(50, 0, 10) == 10


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_mean():
    assert mean([1, 2, 3, 6]) == 3


def test_span():
    assert span([4, 1, 9]) == 8


def test_noisy():
    assert noisy() == 1


def test_recall_default():
    value = recall("absent", 3)
    remember("last", value)
    assert value == 3


def test_last_default():  # passes alone; after test_recall_default, only if recall honours its default
    assert _CACHE.get("last", 3) == 3
'''

OTHER = '''def test_unrelated():
    assert sum([1, 2]) == 3


def test_unrelated_too():
    assert "a".upper() == "A"
'''

SPEC = '''name = "{name}"
[source]
git = "{path}"
commit = "{commit}"
[install]
import_paths = ["."]
requires = ["pytest==8.4.2", "pytest-timeout==2.4.0"]
install_package = false
[tests]
paths = ["test_calc.py", "test_other.py"]
[generate]
mutable = ["calc.py"]
'''


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory, git_source):
    src = tmp_path_factory.mktemp("calcrepo")
    commit = git_source(src, {"calc.py": CALC, "test_calc.py": TESTS, "test_other.py": OTHER})
    specs = tmp_path_factory.mktemp("specs")
    path = specs / "calcfixture.toml"
    path.write_text(SPEC.format(name="calcfixture", path=src, commit=commit))
    spec = load_repo_file(path)
    return spec, prepare(spec)


def test_coverage_map_knows_which_tests_reach_a_line(fixture_repo):
    spec, repo = fixture_repo
    cmap, template = coverage_map.build(repo)
    lines = CALC.splitlines()
    low = lines.index("        return lo") + 1
    assert cmap.covering("calc.py", [low]) == ["test_calc.py::test_clamp_low"]
    untested = lines.index("    return x * 2 + 1") + 1
    assert cmap.covering("calc.py", [untested]) == []
    assert (template.root / "__pycache__").is_dir()  # the generation tree is precompiled


def _change(repo, old: str, new: str) -> list[Change]:
    text = (repo.tree / "calc.py").read_text()
    assert text.count(old) == 1
    return [Change("calc.py", text.encode(), text.replace(old, new).encode())]


def test_validate_rejects_a_mutant_no_test_catches(fixture_repo):
    spec, repo = fixture_repo
    v = validate(repo, _change(repo, "return x * 2 + 1", "return x * 2 - 1"))
    assert not v.ok and v.reason == "no test fails with the bug"


def test_validate_rejects_a_flaky_mutant(fixture_repo):
    spec, repo = fixture_repo
    # fails about half the time: across 10 runs, results disagree (all 10 agreeing has odds 1 in 512)
    v = validate(repo, _change(repo, "def noisy():\n    return 1", "def noisy():\n    return random.choice([1, 2])"),
                 runs=10, candidates=["test_calc.py::test_noisy", "test_calc.py::test_span"])
    assert not v.ok
    assert v.reason in ("the failures do not repeat across runs", "no test fails with the bug")


def test_validate_keeps_a_real_bug_and_marks_an_import_crash(fixture_repo):
    spec, repo = fixture_repo
    v = validate(repo, _change(repo, "return max(xs) - min(xs)", "return max(xs) + min(xs)"), details=True)
    assert v.ok and v.fail_to_pass == ["test_calc.py::test_span"] and not v.crash
    assert v.details["test_calc.py::test_span"]["exc_type"] == "AssertionError"
    crash = validate(repo, _change(repo, "import random\n", "import random\nrandom.nope()\n"), details=True)
    assert crash.ok and crash.crash, crash.reason


def test_validate_drops_a_test_whose_result_depends_on_tests_outside_the_selection(fixture_repo):
    spec, repo = fixture_repo
    # Only test_recall_default covers the line, so PASS_TO_PASS is widened with the file's other tests,
    # each passing on the bug when run without it; run as graded, test_last_default fails after it.
    v = validate(repo, _change(repo, "return _CACHE.get(key, default)", "return _CACHE.get(key)"),
                 candidates=["test_calc.py::test_recall_default"])
    assert v.ok, v.reason
    assert v.fail_to_pass == ["test_calc.py::test_recall_default"]
    assert "test_calc.py::test_last_default" in v.flaky
    assert "test_calc.py::test_last_default" not in v.pass_to_pass and "test_calc.py::test_span" in v.pass_to_pass


def test_regrade_fixes_or_drops_tasks_whose_lists_contradict_a_graded_run(fixture_repo):
    from frog_gym.generators.synthesis import regrade_record
    from frog_gym.generators.validate import patches

    spec, repo = fixture_repo
    bug_patch, _ = patches(_change(repo, "return max(xs) - min(xs)", "return max(xs) + min(xs)"))
    record = {"instance_id": "calcfixture__span", "bug_patch": bug_patch, "validation": {"flaky": []},
              "FAIL_TO_PASS": ["test_calc.py::test_span", "test_calc.py::test_mean"],  # test_mean passes
              "PASS_TO_PASS": ["test_calc.py::test_clamp_low"], "features": {"fail_to_pass": 2}}
    cfg = GenerateConfig()
    verdict, fixed = regrade_record(spec, record, cfg)
    assert verdict.startswith("fixed: removed 1 test")
    assert fixed["FAIL_TO_PASS"] == ["test_calc.py::test_span"] and fixed["features"]["fail_to_pass"] == 1
    assert fixed["validation"]["regraded"]["removed"] == ["test_calc.py::test_mean"]
    assert regrade_record(spec, fixed, cfg) == ("ok", fixed)
    verdict, gone = regrade_record(spec, dict(record, FAIL_TO_PASS=["test_calc.py::test_mean"]), cfg)
    assert gone is None and verdict.startswith("dropped: FAIL_TO_PASS would be empty")


def test_generate_end_to_end_is_seeded_and_resumable(fixture_repo, tmp_path):
    spec, repo = fixture_repo
    a, b = tmp_path / "a", tmp_path / "b"
    cfg = GenerateConfig(max_tasks=4, seed=7, workers=2, combined_fraction=0.25, tasks_dir=str(a))
    summary = generate(spec, cfg, progress=False)
    tasks = read_existing(a / "calcfixture.jsonl")
    assert summary.accepted + summary.combined - summary.deduped == len(tasks) >= 3
    assert not dedupe.violations(tasks)  # one single-bug task per line; each combined one holds a bug of its own
    lines = CALC.splitlines()
    untested = lines.index("    return x * 2 + 1") + 1
    symbols, pkgs = symbols_of(spec, repo.tree)
    assert pkgs == {"calc"}
    for t in tasks:
        assert next(iter(t)) == "instance_id" and t["instance_id"].startswith("calcfixture__")
        assert t["provenance"]["generator"] == GENERATOR and t["FAIL_TO_PASS"] and t["PASS_TO_PASS"]
        assert t["statement_level"] in statements.LEVELS and t["problem_statement"]
        assert not problems(t["problem_statement"], t["FAIL_TO_PASS"], t["bug_patch"], symbols, set(pkgs))
        assert {"family", "n_sites", "files_touched", "fail_to_pass", "statement_level", "function_lines",
                "test_files", "direct_import"} <= set(t["features"])
        assert all(s["lineno"] != untested for s in t["provenance"]["sites"])  # only covered lines mutate
    # each accepted task's behavioural oracle was recorded beside the task folder (frog_gym.grading.oracle)
    from frog_gym.grading.oracle import _read_lines

    oracles = {r["instance_id"]: r for r in _read_lines((tmp_path / "oracles" / "calcfixture.jsonl.gz").read_bytes())}
    assert {t["instance_id"] for t in tasks} <= set(oracles), oracles.keys()
    assert not [r["why"] for r in oracles.values() if r.get("infra")]
    assert any(r["calls"] for r in oracles.values()), [r.get("why") for r in oracles.values()]
    combos = [t for t in tasks if t["features"]["n_sites"] > 1]
    for c in combos:
        parts = [t for t in tasks if t["instance_id"] in c["provenance"]["parts"]]
        assert {x for p in parts for x in p["FAIL_TO_PASS"]} <= set(c["FAIL_TO_PASS"])
    # the same seed gives the same tasks; a second call resumes and adds nothing
    generate(spec, GenerateConfig(max_tasks=4, seed=7, workers=1, combined_fraction=0.25, tasks_dir=str(b)),
             progress=False)
    again = read_existing(b / "calcfixture.jsonl")
    strip = lambda ts: [{k: v for k, v in t.items() if k != "validation"} for t in ts]  # noqa: E731 (timings differ)
    assert strip(again) == strip(tasks)
    assert generate(spec, cfg, progress=False).accepted == 0
    assert len(read_existing(a / "calcfixture.jsonl")) == len(tasks)
    # a task's bug fails its FAIL_TO_PASS and the gold fix passes everything
    t = tasks[0]
    ws = Workspace(tmp_path / "ws")
    ws.sync(coverage_map.build(repo)[1])
    apply_patch(ws.path, t["bug_patch"], "bug")
    r = run_tests(repo, ws.path, tuple(t["FAIL_TO_PASS"]), 120)
    assert not any(s.ok for s in r.statuses.values())
    apply_patch(ws.path, t["patch"], "gold")
    r = run_tests(repo, ws.path, tuple(t["FAIL_TO_PASS"] + t["PASS_TO_PASS"]), 120)
    assert all(s.ok for s in r.statuses.values())


def test_export_import_round_trip(tmp_path):
    ids = sorted(task_index())
    sample = random.Random(0).sample(ids, min(12, len(ids)))
    tasks = [load_task(i) for i in sample]
    interop.export_swebench(tasks, tmp_path / "out.jsonl")
    row = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert isinstance(row["FAIL_TO_PASS"], str) and isinstance(json.loads(row["PASS_TO_PASS"]), list)
    assert {"instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
            "created_at", "version", "environment_setup_commit"} <= set(row)
    added = interop.import_tasks(tmp_path / "out.jsonl", tmp_path / "imported")
    assert sum(added.values()) == len(tasks)
    back = {t.instance_id: t for f in (tmp_path / "imported").glob("*.jsonl") for t in map(
        interop.from_row, read_existing(f))}
    for t in tasks:
        assert back[t.instance_id] == t and back[t.instance_id].features == t.features
    assert interop.import_tasks(tmp_path / "out.jsonl", tmp_path / "imported") == {}  # ids already there
    datasets = pytest.importorskip("datasets")
    interop.export_hf(tasks, tmp_path / "hf")
    for loaded in (datasets.load_from_disk(str(tmp_path / "hf")), datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "hf-cache"))):
        assert sorted(loaded["train"]["instance_id"]) == sorted(t.instance_id for t in tasks)
    again = {t.instance_id: t for t in interop.read_any(tmp_path / "hf")}
    assert all(again[t.instance_id] == t and again[t.instance_id].provenance == t.provenance for t in tasks)


def test_an_imported_task_runs(tmp_path):
    task = load_task("inflection__handwritten-0001")
    interop.export_swebench([task], tmp_path / "one.jsonl")
    (back,) = interop.read_any(tmp_path / "one.jsonl")
    from frog_gym.catalog.spec import load_repo

    repo = prepare(load_repo(back.repo))
    ws = Workspace(tmp_path / "ws")
    ws.sync(coverage_map.build(repo)[1] if False else __import__("frog_gym.generators.validate",
                                                              fromlist=["x"]).pristine_template(repo))
    apply_patch(ws.path, back.bug_patch, "bug")
    r = run_tests(repo, ws.path, back.FAIL_TO_PASS, 120)
    assert not any(s.ok for s in r.statuses.values())
    apply_patch(ws.path, back.patch, "gold")
    r = run_tests(repo, ws.path, back.selected_tests, 300)
    assert all(s.ok for s in r.statuses.values())


def test_check_env_on_a_sample_of_generated_ids():
    generated = sorted(i for i in task_index() if "__handwritten-" not in i)
    if not generated:
        pytest.skip("no generated tasks registered yet")
    for iid in random.Random(1).sample(generated, min(5, len(generated))):
        env = gym.make(f"FrogSWE/{iid}-v0").unwrapped
        try:
            check_env(env, skip_render_check=True)
        finally:
            env.close()


def test_ids_sidecar_is_used_only_when_it_matches_its_task_file(tmp_path):
    from frog_gym.generators.taskfiles import write_ids_sidecar
    from frog_gym.catalog.task import _scan_ids, read_ids_sidecar

    task = load_task("inflection__handwritten-0001")
    path = tmp_path / "inflection.jsonl"
    path.write_text(task.to_json() + "\n\n" + task.to_json().replace("handwritten-0001", "handwritten-9999") + "\n")
    write_ids_sidecar(path)
    side = path.with_suffix(".ids").read_text()
    ids = read_ids_sidecar(side, path.stat().st_size)
    assert ids == _scan_ids(path.read_bytes()) == [("inflection__handwritten-0001", 0),
                                                   ("inflection__handwritten-9999", 2)]
    with open(path, "a") as f:
        f.write(task.to_json().replace("handwritten-0001", "handwritten-5555") + "\n")
    assert read_ids_sidecar(side, path.stat().st_size) is None  # stale: task_index scans the file instead


@pytest.mark.slow
def test_harden_pairs_a_hard_bug_with_an_easy_one_and_retires_the_easy_single(fixture_repo, tmp_path):
    from frog_gym.generators.harden import harden, retire_paired
    from frog_gym.generators.undo import task_undone

    spec, repo = fixture_repo
    cfg = GenerateConfig(max_tasks=5, seed=3, workers=1, combined_fraction=0.0, tasks_dir=str(tmp_path))
    generate(spec, cfg, progress=False)
    path = tmp_path / "calcfixture.jsonl"
    before = {t["instance_id"]: t for t in read_existing(path)}
    easy = {i for i, t in before.items() if task_undone(repo.tree, t)}
    assert easy, "the fixture should yield bugs one candidate edit undoes"
    # any family can be the anchor: take the family of a task that is *not* the only one of its function
    anchor_fam = sorted({t["provenance"]["sites"][0]["family"] for t in before.values()})[0]
    # bugsize's size policy retires only small easy bugs: none changes fewer than one line, so nothing pairs
    assert harden(spec, cfg, 1, progress=False, anchors=(anchor_fam,), easy_below=1).combined == 0
    assert {t["instance_id"] for t in read_existing(path)} == set(before)
    s = harden(spec, cfg, 1, progress=False, anchors=(anchor_fam,))
    after = read_existing(path)
    combos = [t for t in after if t.get("provenance", {}).get("harden")]
    assert s.combined == len(combos) == 1 and s.deduped == 1
    c = combos[0]
    a, e = before[c["provenance"]["harden"]["anchor"]], before[c["provenance"]["harden"]["easy"]]
    assert a["provenance"]["sites"][0]["family"] == anchor_fam != e["provenance"]["sites"][0]["family"]
    assert e["instance_id"] in easy and a["provenance"]["sites"][0]["function"] != e["provenance"]["sites"][0]["function"]
    ids = {t["instance_id"] for t in after}
    assert a["instance_id"] in ids and e["instance_id"] not in ids  # the easy single lives on only in the combination
    assert len(after) == len(before)
    assert set(a["FAIL_TO_PASS"]) | set(e["FAIL_TO_PASS"]) <= set(c["FAIL_TO_PASS"]) and c["test_patch"]
    assert not dedupe.violations(after) and not retire_paired(after)
    symbols, pkgs = symbols_of(spec, repo.tree)
    assert not problems(c["problem_statement"], c["FAIL_TO_PASS"], c["bug_patch"], symbols, set(pkgs))


def test_progress_off_a_terminal_is_one_plain_line_per_task():
    import subprocess
    import sys

    code = ("from frog_gym.generators.synthesis import _bar; b = _bar(True, 'demo', 3, 1); "
            "b.set_postfix_str('tried 7'); b.update(1); b.update(1); b.close()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stderr.splitlines()[0] == "demo: 1/3 tasks"
    assert [ln.split(" (")[0] for ln in proc.stderr.splitlines()[1:]] == ["demo: 2/3 tasks", "demo: 3/3 tasks"]
    assert "\r" not in proc.stderr and "tried 7" in proc.stderr
