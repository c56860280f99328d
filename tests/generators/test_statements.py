"""Issue-like statements: evidence read from a test's source, three levels that differ, the checker (run
here on every registered task), and a writer for OpenAI-compatible endpoints against a local HTTP server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from frog_gym.generators import statements
from frog_gym.generators.restate import compose, recorded_failure
from frog_gym.generators.statement_check import check_task, mutated_lines, problems
from frog_gym.generators.testsource import Symbols, evidence_for_test, evidence_of
from frog_gym.catalog.task import load_task, registered_task_ids

LIB = '''"""Text helpers."""


def camelize(word, upper=True):
    parts = word.split("_")
    head = parts[0].capitalize() if upper else parts[0]
    return head + "".join(p.capitalize() for p in parts[1:])


class Box:
    def width(self):
        return 3
'''

TESTS = '''import pytest

from textkit.core import camelize, Box
import textkit.core as core


def test_camelize_lower():
    word = "foo_bar"
    assert camelize(word, False) == "fooBar"


@pytest.mark.parametrize("w", ["a_b"])
def test_param(w):
    assert core.camelize(w) == "AB"


def test_flipped():
    assert "FooBar" == camelize("foo_bar")


def test_raises():
    with pytest.raises(ValueError):
        camelize(None)
'''

BUG = ("--- a/src/textkit/core.py\n+++ b/src/textkit/core.py\n@@ -5,3 +5,3 @@\n"
       "-    head = parts[0].capitalize() if upper else parts[0]\n+    head = parts[0].capitalize()\n")


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src" / "textkit").mkdir(parents=True)
    (tmp_path / "src" / "textkit" / "__init__.py").write_text("from textkit.core import camelize\n")
    (tmp_path / "src" / "textkit" / "core.py").write_text(LIB)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_core.py").write_text(TESTS)
    return tmp_path


def _symbols(tree: Path) -> Symbols:
    return Symbols.of_tree(tree, ["src"], {"textkit"})


def test_symbols_know_modules_functions_and_members(tree):
    sym = _symbols(tree)
    assert sym.exists("textkit.core.camelize") and sym.exists("textkit.camelize")  # imported there counts
    assert sym.exists("textkit.core.Box.width") and sym.exists("textkit.core")
    assert not sym.exists("textkit.core.decamelize") and not sym.exists("textkit.util.camelize")
    assert not sym.exists("textkit.core.Box.height")


def test_evidence_lifts_a_clean_reproduction_and_refuses_fixtures(tree):
    sym = _symbols(tree)
    ev = evidence_for_test(tree, "tests/test_core.py::test_camelize_lower", "", sym, {"textkit"})
    assert ev.api == "textkit.core.camelize" and ev.expected == '"fooBar"'
    assert ev.repro == 'from textkit.core import camelize\nword = "foo_bar"\nprint(camelize(word, False))'
    param = evidence_for_test(tree, "tests/test_core.py::test_param[a_b]", "", sym, {"textkit"})
    assert param.api == "textkit.core.camelize" and param.repro == ""  # a parameter is not reproducible alone
    flipped = evidence_for_test(tree, "tests/test_core.py::test_flipped", "", sym, {"textkit"})
    assert flipped.flipped and flipped.expected == '"FooBar"' and flipped.repro.endswith('print(camelize("foo_bar"))')
    raises = evidence_of(TESTS, "test_raises", None, sym)
    assert raises.raises == "ValueError" and raises.repro == ""  # `with` blocks are not lifted


def _ctx(tree: Path, message: str = "AssertionError: assert 'FooBar' == 'fooBar'") -> statements.StatementContext:
    sym = _symbols(tree)
    f = statements.Failure("tests/test_core.py::test_camelize_lower", "AssertionError", message,
                           "tests/test_core.py:9: in test_camelize_lower\n    assert camelize(word, False) == 'fooBar'")
    ev = evidence_for_test(tree, f.test, f.longrepr, sym, {"textkit"})
    return statements.StatementContext("textkit", "textkit", [f], [ev])


def test_three_levels_really_differ(tree):
    ctx = _ctx(tree)
    full, medium, vague = (statements.write(ctx, lvl) for lvl in statements.LEVELS)
    assert "```python\nfrom textkit.core import camelize" in full
    assert "Expected: `\"fooBar\"`." in full and "Actual: `'FooBar'`." in full
    assert "`textkit.core.camelize()`" in medium and "'FooBar'" in medium and "```" not in medium
    assert "Expected" not in medium
    assert "`textkit`" in vague and vague != medium
    assert "camelize" not in vague and "FooBar" not in vague
    for text in (full, medium, vague):
        assert "test_camelize_lower" not in text and not problems(
            text, ["tests/test_core.py::test_camelize_lower"], BUG, _symbols(tree), {"textkit"})


def test_exception_statements_name_the_exception(tree):
    ctx = _ctx(tree, "TypeError: can only concatenate str (not \"int\") to str")
    ctx = statements.StatementContext(ctx.repo, ctx.package, [statements.Failure(
        ctx.failures[0].test, "TypeError", ctx.failures[0].message, ctx.failures[0].longrepr)], ctx.evidence)
    full, medium, vague = (statements.write(ctx, lvl) for lvl in statements.LEVELS)
    assert full.startswith("`textkit.core.camelize()` raises `TypeError`")
    assert "Actual: it raises `TypeError: can only concatenate" in full
    assert "raises `TypeError: can only" in medium and "`TypeError`" in vague and "camelize" not in vague


def test_checker_rejects_test_names_mutated_lines_and_missing_symbols(tree):
    sym, f2p = _symbols(tree), ["tests/test_core.py::test_camelize_lower"]

    def bad(text: str) -> list[str]:
        return problems(text, f2p, BUG, sym, {"textkit"})

    assert bad("These tests fail: tests/test_core.py::test_camelize_lower")[0].startswith("names the FAIL_TO_PASS")
    assert bad("See `test_camelize_lower`.")[0] == "names the FAIL_TO_PASS test function test_camelize_lower"
    assert bad("The line `head = parts[0].capitalize()` is wrong.")[0].startswith("quotes the mutated line")
    assert bad("`camelize()` in `textkit.util` is wrong.") == [
        "names `textkit.util.camelize`, which does not exist in the source"]
    assert bad("`textkit.core.decamelize()` is wrong.")
    assert bad("```python\nfrom textkit.core import nothing\n```") == [
        "names `textkit.core.nothing`, which does not exist in the source"]
    assert bad("`textkit.core.camelize()` returns `'FooBar'` for `camelize('foo_bar', False)`.") == []
    assert mutated_lines(BUG) == ["head=parts[0].capitalize()ifupperelseparts[0]", "head=parts[0].capitalize()"]


def _statements_failing(ids) -> dict:
    failing = {}
    for iid in ids:
        found = check_task(load_task(iid))
        if found:
            failing[iid] = found
    return failing


def test_the_statements_of_the_quick_repositories_pass_the_checker():
    """The default run's share of the check below: the repositories the default run builds anyway."""
    ids = [i for i in registered_task_ids() if i.split("__")[0] in ("inflection", "cachetools", "iniconfig", "frogtoy")]
    assert len(ids) > 100
    failing = _statements_failing(ids)
    assert not failing, f"{len(failing)} statements fail the checker, e.g. {list(failing.items())[:3]}"


@pytest.mark.slow
def test_every_registered_statement_passes_the_checker():
    """Every repository's source is read: on a fresh cache this downloads every release (minutes)."""
    failing = _statements_failing(registered_task_ids())
    assert not failing, f"{len(failing)} statements fail the checker, e.g. {list(failing.items())[:3]}"


def test_compose_falls_back_when_a_writer_leaks(tree):
    from frog_gym.catalog.spec import load_repo_file

    spec_file = tree / "textkit.toml"
    spec_file.write_text('name = "textkit"\n[source]\ngit = "registry:toy/frogtoy"\ncommit = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"\n'
                         '[install]\nimport_paths = ["src"]\n[tests]\npaths = ["tests"]\n'
                         '[generate]\nmutable = ["src/textkit"]\n')
    spec = load_repo_file(spec_file)
    ctx = _ctx(tree)
    f2p = [ctx.failures[0].test]
    leaky = compose(spec, tree, ctx.failures, False, 1, "medium", f2p, BUG, lambda c: f"Fix {c['failures'][0]['test']}")
    assert "test_camelize_lower" not in leaky and "`textkit.core.camelize()`" in leaky
    assert compose(spec, tree, ctx.failures, False, 1, "vague", f2p, BUG, lambda c: "My camelize broke.") == \
        "My camelize broke."


def test_recorded_failure_reads_old_statements_and_kept_failures():
    old = {"problem_statement": "These tests fail:\n- `t.py::test_a`\n\nThe first failure reports:\n\n"
                                "    ValueError: bad width 3\n\nTraceback of `t.py::test_a` (trimmed):\n\n"
                                "```\nt.py:3: in test_a\n    f()\n```\n", "FAIL_TO_PASS": ["t.py::test_a", "t.py::test_b"]}
    failures, crash = recorded_failure(old)
    assert failures[0] == statements.Failure("t.py::test_a", "ValueError", "ValueError: bad width 3",
                                             "t.py:3: in test_a\n    f()")
    assert [f.test for f in failures] == ["t.py::test_a", "t.py::test_b"] and not crash
    kept = dict(old, problem_statement="anything", validation={"failure": {
        "test": "t.py::test_b", "exc_type": "KeyError", "message": "KeyError: 'x'", "longrepr": ""}})
    assert recorded_failure(kept)[0][0].exc_type == "KeyError"


class _Chat(BaseHTTPRequestHandler):
    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Chat.seen.append({"path": self.path, "body": body})
        prompt = body["messages"][-1]["content"]
        reply = "When I call camelize with upper=False I still get 'FooBar'." if "fooBar" in prompt else ""
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


def test_openai_writer_against_a_local_server(tree, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = HTTPServer(("127.0.0.1", 0), _Chat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        writer = statements.load_writer(f"openai:tiny-model@http://127.0.0.1:{server.server_port}/v1")
        text = statements.write(_ctx(tree), "full", writer)
    finally:
        server.shutdown()
    assert text == "When I call camelize with upper=False I still get 'FooBar'."
    req = _Chat.seen[-1]
    assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "tiny-model"
    assert "test_camelize_lower" not in json.dumps(req["body"])  # the model never sees test ids
    with pytest.raises(ValueError, match="openai:<model>@<base_url>"):
        statements.load_writer("openai:tiny-model")
    with pytest.raises(ValueError, match="module:function"):
        statements.load_writer("nocolon")


def test_every_registered_statement_meets_the_text_rubric():
    """Over the whole registry (no source read, so fast): every synthetic statement names package code below
    the package, none shows an Expected and an Actual value that read the same, no two tasks share one."""
    from frog_gym.generators.statement_check import registry_records, rubric_problems

    records = registry_records()
    assert len(records) > 1000
    # the toy repository's statements are written for a tiny model (the learning tests and the toy prompt test
    # read their reproduction, `add(2, 3)`); every other task is held to the rubric
    bad = {k: v for k, v in rubric_problems(records).items() if not k.startswith("frogtoy__")}
    assert not bad, f"{len(bad)} statements fail the rubric, e.g. {list(bad.items())[:3]}"


def test_rubric_catches_each_kind_of_unactionable_statement():
    from frog_gym.generators.statement_check import rubric_problems

    def rec(iid: str, text: str) -> dict:
        return {"instance_id": iid, "repo": "toolz", "problem_statement": text, "patch": "+++ b/toolz/itertoolz.py\n",
                "provenance": {"sites": [{"module": "toolz.itertoolz", "function": "last"}]}}

    good = rec("a", "`toolz.itertoolz.last()` returns a wrong result\n\nExpected: `'E'`.\nActual: `'D'`.")
    bad = rubric_problems([good, rec("b", "Some results I get from `toolz` are wrong."),
                           rec("c", "`toolz.itertoolz.last()` is wrong\n\nExpected: `'ab...'`.\nActual: `\"ab...\"`."),
                           rec("d", good["problem_statement"])])
    assert set(bad) == {"a", "b", "c", "d"}
    assert bad["b"][0].startswith("names only the package") and bad["c"] == [
        "shows an Expected and an Actual value that read the same"]
    assert bad["a"] == bad["d"] == ["shares its statement with 1 other task(s)"]


def test_expected_and_actual_keep_their_difference_visible():
    got, want = statements._differ("{'count': False, 'name': None, 'x': [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}",
                                   "{'count': False, 'name': None, 'x': [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12]}")
    assert got != want and got.endswith("11]}") and want.endswith("12]}") and got.startswith("...")
    assert statements._differ("'a'", '"a"') == ("", "")


def test_every_froglive_task_passes_the_quality_rule():
    """FrogLive tasks are single bug fixes with a PASS_TO_PASS test, no rewrite, data update, feature or
    version drop (``generators.mine.quality_problems``); the rule itself rejects each kind."""
    from frog_gym.generators.mine import quality_problems
    from frog_gym.generators.statement_check import registry_records

    live = registry_records("*.live.jsonl")
    assert len(live) > 50
    bad = {r["instance_id"]: quality_problems(r) for r in live if quality_problems(r)}
    assert not bad, bad
    fix = {"patch": "+++ b/pkg/a.py\n-    x = 1\n+    x = 2\n", "PASS_TO_PASS": ["t.py::a"],
           "problem_statement": "Fix `a()` returning 1."}
    assert quality_problems(fix) == []
    assert quality_problems(dict(fix, problem_statement="Drop support for Python 2.7.")) == [
        "its statement is a version drop"]
    for feature in ("Add `b()`, which returns 2.", "Support `b()` on windows.", "PEP 639: license expressions.",
                    "Allow `a()` to take a path.", "Tests for `a()` on 32-bit platforms.", "Deprecated `c()`."):
        assert quality_problems(dict(fix, problem_statement=feature)) == ["its statement is a feature"], feature
    for fixed in ("Remove double-encoding of alt text.", "Support for `b()` crashed on windows: fixed.",
                  "Testing a path with `a()` raised TypeError.", "Added a missing check: `a()` gave a wrong result."):
        assert quality_problems(dict(fix, problem_statement=fixed)) == [], fixed
    assert quality_problems(dict(fix, PASS_TO_PASS=[])) == ["it has no PASS_TO_PASS test"]
    big = dict(fix, patch="+++ b/pkg/data.json\n" + "+x\n" * 500)
    assert len(quality_problems(big)) == 2
