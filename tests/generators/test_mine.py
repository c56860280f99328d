"""The FrogLive miner: hunks, delta debugging, changelog matching, the index client (real HTTP against a
local server), and the CLI's bad-input line."""

from __future__ import annotations

import dataclasses

import hashlib
import http.server
import json
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frog_gym.generators import mine
from frog_gym.generators.changelog import changelog_files
from frog_gym.generators.mine import apply_hunks, hunks_of, minimize

lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "def f():\n", "    return 1\n", "\n"]), max_size=30)


@settings(max_examples=200, deadline=None)
@given(lines, lines)
def test_all_hunks_rebuild_the_new_file_and_none_keep_the_old(old, new):
    old_t, new_t = "".join(old), "".join(new)
    hs = hunks_of("m.py", old_t, new_t)
    assert apply_hunks({"m.py": old_t}, hs)[0].new.decode() == new_t if hs else old_t == new_t
    assert apply_hunks({"m.py": old_t}, []) == []


@settings(max_examples=100, deadline=None)
@given(lines, lines, st.data())
def test_any_subset_of_hunks_applies_each_hunk_in_place(old, new, data):
    old_t, new_t = "".join(old), "".join(new)
    hs = hunks_of("m.py", old_t, new_t)
    subset = data.draw(st.lists(st.sampled_from(hs), unique=True)) if hs else []
    got = apply_hunks({"m.py": old_t}, subset)
    if subset:
        text = got[0].new.decode().splitlines(keepends=True)
        # the lines outside the chosen hunks are the old file's, in order
        kept = sorted(subset, key=lambda h: h.start)
        a = old_t.splitlines(keepends=True)
        expect, pos = [], 0
        for h in kept:
            expect += a[pos:h.start] + list(h.new)
            pos = h.end
        assert text == expect + a[pos:]


def test_created_and_deleted_files_are_one_hunk_each():
    created = hunks_of("new.py", None, "x = 1\n")
    deleted = hunks_of("old.py", "y = 2\n", None)
    assert [h.created for h in created] == [True] and [h.deleted for h in deleted] == [True]
    changes = apply_hunks({"old.py": "y = 2\n"}, created + deleted)
    assert {(c.path, c.old, c.new) for c in changes} == {("new.py", None, b"x = 1\n"), ("old.py", b"y = 2\n", None)}


def test_minimize_finds_a_one_minimal_set_within_its_budget():
    calls = []

    def needs(s):
        calls.append(list(s))
        return {3, 11, 12} <= set(s)

    assert minimize(list(range(16)), needs, [200]) == [3, 11, 12]
    budget = [2]
    partial = minimize(list(range(16)), needs, budget)
    assert budget[0] == 0 and needs(partial)  # out of budget: the last passing set, not a minimal one


CHANGES = """\
Changelog
=========

2.1.0 (2025-07-02)
------------------

- Fix :func:`parse_range` returning an empty list for ``"1-1"``.
  Reported in :issue:`41`.
- Add the ``strict`` option to :class:`Reader`.

2.0.1 (2025-05-01)
------------------

- Fix a crash in ``Reader.close``.
"""


def test_changelog_section_and_entries_of_a_version():
    section = mine.changelog_section(CHANGES, "2.1.0")
    assert "parse_range" in section and "Reader.close" not in section
    entries = mine.changelog_entries(section)
    assert len(entries) == 2
    assert mine.clean_entry(entries[0]) == 'Fix `parse_range` returning an empty list for `"1-1"`. Reported in `41`.'
    assert mine.changelog_section(CHANGES, "9.9") == ""


def test_the_entry_naming_the_fix_is_chosen_and_no_match_is_empty(tmp_path):
    (tmp_path / "CHANGES.rst").write_text(CHANGES)
    entry, source, score = mine.match_changelog(tmp_path, "2.1.0", {"parse_range", "lo"}, {"ranges"})
    assert source == "CHANGES.rst" and entry.startswith("Fix :func:`parse_range`") and score >= 2
    assert mine.match_changelog(tmp_path, "2.1.0", {"unrelated_name"}, {"other"}) == ("", "", 0.0)
    # an entry the statement checker would reject (here: one naming `Reader`, an API release N lacks) is
    # passed over for the next entry that names the fix
    accept = lambda text: "Reader" not in text  # noqa: E731
    names = {"parse_range", "strict", "Reader"}
    assert mine.match_changelog(tmp_path, "2.1.0", names, set())[0].startswith("Add the ``strict``")
    assert mine.match_changelog(tmp_path, "2.1.0", names, set(), accept=accept)[0].startswith("Fix :func:`parse_range`")
    assert mine.match_changelog(tmp_path, "2.1.0", {"strict"}, set(), accept=accept) == ("", "", 0.0)
    assert mine.match_changelog(tmp_path, "2.1.0", {"strict"}, set())[0].startswith("Add the ``strict``")


def test_fix_names_include_the_enclosing_function():
    old = {"pkg/ranges.py": "def parse_range(s):\n    lo, hi = s.split('-')\n    return list(range(lo, hi))\n"}
    h = hunks_of("pkg/ranges.py", old["pkg/ranges.py"], old["pkg/ranges.py"].replace("hi))", "hi + 1))"))
    idents, mods = mine.fix_names(h, old)
    assert "parse_range" in idents and mods == {"ranges"}


class _Index(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    listing: dict = {}

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path.startswith("/simple/"):
            body = json.dumps(self.listing).encode()
            ctype = "application/vnd.pypi.simple.v1+json"
        elif self.path.lstrip("/") in self.files:
            body, ctype = self.files[self.path.lstrip("/")], "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def index():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _file(name, data, uploaded, yanked=False):
    return {"filename": name, "url": f"/{name}", "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
            "upload-time": uploaded, "yanked": yanked, "requires-python": ">=3.8"}


def test_releases_come_from_the_index_oldest_first_without_prereleases_or_yanked(index):
    _Index.listing = {"files": [
        _file("demo-1.10.0.tar.gz", b"c", "2025-03-01T00:00:00Z"),
        _file("demo-1.2.0.zip", b"z", "2025-01-01T00:00:00Z"),
        _file("demo-1.2.0.tar.gz", b"a", "2025-01-01T00:00:00Z"),
        _file("demo-1.3.0rc1.tar.gz", b"r", "2025-02-01T00:00:00Z"),
        _file("demo-1.4.0.tar.gz", b"y", "2025-02-02T00:00:00Z", yanked=True),
        _file("demo-1.9.0-py3-none-any.whl", b"w", "2025-02-03T00:00:00Z"),
    ]}
    rels = mine.list_releases("demo", index=f"{index}/simple")
    assert [(r.version, r.filename) for r in rels] == [("1.2.0", "demo-1.2.0.tar.gz"), ("1.10.0", "demo-1.10.0.tar.gz")]
    assert rels[1].uploaded.startswith("2025-03-01") and rels[0].sha256 == hashlib.sha256(b"a").hexdigest()


def test_a_release_is_fetched_pinned_by_the_index_sha256(index, tmp_path, monkeypatch):
    monkeypatch.setenv("FROG_GYM_HOME", str(tmp_path))
    from frog_gym.catalog.spec import load_repo

    spec = load_repo("semver")
    data = b"not really a tarball"
    _Index.files = {"semver-0.0.9.tar.gz": data}
    good = mine.Release("0.0.9", "semver-0.0.9.tar.gz", f"{index}/semver-0.0.9.tar.gz",
                        hashlib.sha256(data).hexdigest(), "2025-01-01")
    got = mine.fetch_release(spec, good)
    assert (got.source.version, got.source.sha256) == ("0.0.9", good.sha256)
    assert (tmp_path / "sdists" / f"{good.sha256}.tar.gz").read_bytes() == data
    bad = mine.Release("0.0.9", "semver-0.0.9.tar.gz", good.url, "0" * 64, "2025-01-01")
    with pytest.raises(OSError, match="differs from the index's"):
        mine.fetch_release(spec, bad)


def test_pair_outcomes_are_kept_beside_the_tasks_and_a_kept_pair_is_not_mined_again(index, tmp_path, monkeypatch):
    """Which release pairs were mined, and what each gave, is part of the registry (``registry/mine/``): a fresh
    machine reads it back and does not mine a kept pair again."""
    from frog_gym.catalog.spec import load_repo

    monkeypatch.setenv("FROG_GYM_HOME", str(tmp_path / "home"))
    pin = load_repo("semver").source.version
    _Index.listing = {"files": [_file(f"semver-{v}.tar.gz", v.encode(), f"2030-01-0{i + 1}T00:00:00Z")
                                for i, v in enumerate([pin, "90.0.0", "90.0.1"])]}
    monkeypatch.setenv("PIP_INDEX_URL", f"{index}/simple")
    tasks = tmp_path / "tasks"
    later = mine.PairResult("semver", "90.0.0", "90.0.1", "skipped", "no new or changed test fails", 0, [], 3.0, 2)
    first = mine.PairResult("semver", pin, "90.0.0", "kept", "", 2, ["semver__live-90.0.0-1"], 40.0, 9)
    mine.keep_records([later, first], "live", tasks)
    mine.keep_records([dataclasses.replace(later, seconds=4.0)], "live", tasks)  # kept again: replaces its outcome
    rows = [json.loads(line) for line in mine.records_path("semver", "live", tasks).read_text().splitlines()]
    assert [(r["old"], r["new"], r["seconds"]) for r in rows] == [(pin, "90.0.0", 40.0), ("90.0.0", "90.0.1", 4.0)]
    got = mine.mine(["semver"], tasks_dir=tasks, log=lambda s: None)
    assert got == [dataclasses.replace(later, seconds=4.0), first]  # newest first, both read back, none mined
    assert not (tmp_path / "home" / "mine" / "semver").exists()
    mine.keep_records([dataclasses.replace(first, old="90.0.1", new="90.0.2")], "mirror", tasks)
    assert mine.recorded("semver", "mirror", tasks).keys() == {("90.0.1", "90.0.2")}
    assert mine.unrecorded_note({"semver": 3, "six": 0}, got) == ""
    assert "semver (3)" in mine.unrecorded_note({"semver": 3}, [])


def test_pairs_are_newest_first_and_since_filters_by_release_date():
    from frog_gym.catalog.spec import load_repo

    rels = [mine.Release(v, f"x-{v}.tar.gz", "", "0" * 64, d) for v, d in
            [("1.0", "2024-01-01"), ("1.1", "2024-06-01"), ("1.2", "2025-02-01"), ("1.3", "2025-08-01")]]
    pairs = mine.pairs_for(load_repo("semver"), rels, None, None)
    assert [(a.version, b.version) for a, b in pairs] == [("1.2", "1.3"), ("1.1", "1.2"), ("1.0", "1.1")]
    assert [(a.version, b.version) for a, b in mine.pairs_for(load_repo("semver"), rels, "2025-01-01", None)] == \
        [("1.2", "1.3"), ("1.1", "1.2")]
    assert len(mine.pairs_for(load_repo("semver"), rels, None, 1)) == 1


def test_report_counts_yield_per_repository():
    rs = [mine.PairResult("a", "1", "2", "kept", candidates=3, kept=["a__live-2-1"], seconds=10),
          mine.PairResult("a", "2", "3", "skipped", "no test module added or changed", seconds=2),
          mine.PairResult("b", "1", "2", "error", "boom", seconds=4)]
    text = mine.report(rs)
    assert "| a | 2 | 3 | 1 | 6 |" in text and "| **all** | 3 | 3 | 1 | 5 |" in text
    assert "- a 2 -> 3: skipped: no test module added or changed" in text and "- b 1 -> 2: error: boom" in text


def test_cli_refuses_a_bad_date_in_one_line():
    proc = subprocess.run([sys.executable, "-m", "frog_gym.cli", "mine", "semver", "--since", "last week"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("frog-gym mine: --since must be a date YYYY-MM-DD (e.g. 2025-06-01), "
                                   "got 'last week'")


def test_a_fix_is_reversed_onto_a_later_release_wherever_its_lines_moved(tmp_path):
    old = {"pkg/m.py": "def f(x):\n    return x + 1\n\n\ndef g():\n    return 2\n"}
    fixed = old["pkg/m.py"].replace("x + 1", "x + 2")
    hs = hunks_of("pkg/m.py", old["pkg/m.py"], fixed)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("import os\n\n\n" + fixed + "\n\ndef h():\n    pass\n")
    (c,) = mine.reverse_onto(tmp_path, hs, old)
    assert c.new.decode() == "import os\n\n\n" + old["pkg/m.py"] + "\n\ndef h():\n    pass\n"
    (tmp_path / "pkg" / "m.py").write_text(fixed.replace("x + 2", "x + 3"))  # the fix was rewritten since
    with pytest.raises(ValueError, match="occur 0 times"):
        mine.reverse_onto(tmp_path, hs, old)


def test_a_version_history_in_the_readme_counts_when_its_sole_entry_names_the_module(tmp_path):
    (tmp_path / "README.rst").write_text("History\n-------\n\n- 1.22.2 Fix negative Decimals in parse\n"
                                         "- 1.22.1 Parse zero-precision floats\n")
    entry, source, _ = mine.match_changelog(tmp_path, "1.22.2", {"convert_decimal"}, {"parse"})
    assert (entry, source) == ("Fix negative Decimals in parse", "README.rst")
    assert mine.match_changelog(tmp_path, "1.22.2", {"convert_decimal"}, {"other"})[0] == ""


@pytest.mark.slow
def test_mining_a_real_release_pair_yields_a_task_graded_with_its_hidden_tests(tmp_path):
    from frog_gym.catalog.spec import load_repo
    from frog_gym.catalog.task import load_tasks_file

    rels = {r.version: r for r in mine.list_releases("semver")}
    r = mine.mine_pair(load_repo("semver"), rels["3.0.2"], rels["3.0.4"], tasks_dir=tmp_path, runs=1)
    assert (r.outcome, r.candidates, len(r.kept)) == ("kept", 1, 1), r.reason
    (task,) = load_tasks_file(str(tmp_path / "semver.live.jsonl"))
    assert task.instance_id == "semver__live-3.0.4-1" and task.version == "3.0.2"
    assert task.base_commit == rels["3.0.2"].sha256 and task.provenance["to_sha256"] == rels["3.0.4"].sha256
    assert task.FAIL_TO_PASS == ("tests/test_subclass.py::test_compare_with_subclass",)
    assert "+++ b/tests/test_subclass.py" in task.test_patch and "+++ b/src/semver/" in task.patch
    assert task.validation["graded"] and task.provenance["released"].startswith(rels["3.0.4"].uploaded[:10])


def test_cli_refuses_an_unknown_repository_with_a_suggestion():
    proc = subprocess.run([sys.executable, "-m", "frog_gym.cli", "mine", "semvr"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("frog-gym mine: Unknown repository 'semvr'. Did you mean 'semver'? "
                                   "See `frog-gym registry list`.")


def test_a_fix_follows_its_module_into_a_package(tmp_path):
    old = {"parse.py": "def f(x):\n    return x\n"}
    hs = hunks_of("parse.py", old["parse.py"], "def f(x):\n    return -x\n")
    (tmp_path / "parse").mkdir()
    (tmp_path / "parse" / "__init__.py").write_text("import re\n\n\ndef f(x):\n    return -x\n")
    (c,) = mine.reverse_onto(tmp_path, hs, old)
    assert c.path == "parse/__init__.py" and c.new.decode().endswith("def f(x):\n    return x\n")


def test_a_release_pair_belongs_to_one_family(tmp_path, monkeypatch):
    from frog_gym.catalog.spec import load_repo

    monkeypatch.setenv("FROG_GYM_HOME", str(tmp_path))
    spec = load_repo("semver")
    spec = dataclasses.replace(spec, source=dataclasses.replace(spec.source, version="2.0.0"))
    rels = [mine.Release(v, f"semver-{v}.tar.gz", "", "0" * 64, f"2020-01-0{i + 1}")
            for i, v in enumerate(["2.0.0", "2.0.1", "2.0.2", "2.0.3"])]
    pairs = mine.pairs_for(spec, rels, None, None)
    claimed = mine.state_path(spec, rels[1], rels[2], "mirror")
    claimed.parent.mkdir(parents=True)
    claimed.write_text("{}")
    assert [b.version for _, b in mine.family_pairs(spec, pairs, "live")] == ["2.0.3", "2.0.1"]
    mine.state_path(spec, rels[2], rels[3]).write_text("{}")
    spec = dataclasses.replace(spec, source=dataclasses.replace(spec.source, version="2.0.3"))
    live_of_mirror = {b.version for _, b in mine.family_pairs(spec, pairs, "mirror")}
    assert "2.0.3" not in live_of_mirror and {"2.0.1", "2.0.2"} <= live_of_mirror


def test_live_mining_starts_at_the_training_snapshot(tmp_path, monkeypatch):
    """The time split: a live fix is released after the training snapshot, so no pair before the pin is mined
    for live tasks (those fixes are in the training code); mirror tasks come from exactly those pairs."""
    from frog_gym.catalog.spec import load_repo

    monkeypatch.setenv("FROG_GYM_HOME", str(tmp_path))
    spec = load_repo("semver")
    spec = dataclasses.replace(spec, source=dataclasses.replace(spec.source, version="2.0.1"))
    rels = [mine.Release(v, f"semver-{v}.tar.gz", "", "0" * 64, f"2020-01-0{i + 1}")
            for i, v in enumerate(["2.0.0", "2.0.1", "2.0.2", "2.0.3"])]
    pairs = mine.pairs_for(spec, rels, None, None)
    assert [(a.version, b.version) for a, b in mine.family_pairs(spec, pairs, "live")] == [("2.0.2", "2.0.3"),
                                                                                          ("2.0.1", "2.0.2")]
    assert [b.version for _, b in mine.family_pairs(spec, pairs, "mirror")] == ["2.0.1"]


def test_an_entry_citing_the_issue_a_failing_test_is_named_after_wins(tmp_path):
    (tmp_path / "CHANGES.rst").write_text("0.12.0\n------\n\n- Changed the signature of ``_match_file(patterns, file)``.\n"
                                          "- `Issue #81`_: GitIgnoreSpec behaviors differ from git.\n")
    tests = ["tests/test_02_gitwildmatch.py::GitWildMatchTest::test_14_issue_81_a"]
    assert mine.issue_refs(tests) == {"81"}
    idents = {"patterns", "file"}
    assert "_match_file" in mine.match_changelog(tmp_path, "0.12.0", idents, set())[0]
    entry, _, _ = mine.match_changelog(tmp_path, "0.12.0", idents, set(), refs=mine.issue_refs(tests))
    assert entry == "`Issue #81`_: GitIgnoreSpec behaviors differ from git."


def test_an_entry_naming_the_function_a_failing_test_is_named_after_wins(tmp_path):
    """Werkzeug 3.1.9: two entries name ``port``; the fix's test, ``test_get_host_invalid``, names ``get_host``."""
    (tmp_path / "CHANGES.rst").write_text("Version 3.1.9\n-------------\n\n"
                                          "-   ``uri_to_iri`` and ``iri_to_uri`` preserve empty username, password,\n"
                                          "    and port 0. :issue:`3189`\n"
                                          "-   ``get_host`` also checks that the port is in the valid range. :pr:`3236`\n")
    tests = ["tests/sansio/test_utils.py::test_get_host_invalid[a.test:0]"]
    assert "uri_to_iri" in mine.match_changelog(tmp_path, "3.1.9", {"port", "hostname"}, {"utils"})[0]
    idents = {"port", "hostname"} | mine.test_name_words(tests)
    assert mine.match_changelog(tmp_path, "3.1.9", idents, {"utils"})[0].startswith("``get_host`` also checks")


def test_a_section_of_indented_bullets_splits_into_its_entries(tmp_path):
    """wcwidth's history indents every bullet under an unmarked ``0.9.3 *date*`` heading: each bullet is its own
    entry (the section was once stripped on its first line only, which made the whole release one entry)."""
    (tmp_path / "history.rst").write_text("0.9.3 *2026-10-20*\n"
                                          "  * **Bugfix** libwcwidth no longer has undefined behavior on NULL\n"
                                          "    input, `PR #293`_.\n"
                                          "  * **Changed** `HyperlinkParams.parse()`_ now rejects trailing text.\n\n"
                                          "0.9.2 *2026-10-04*\n  * **Bugfix** `clip()`_ with ``tabsize=0``.\n")
    entries = mine.changelog_entries(mine.changelog_section((tmp_path / "history.rst").read_text(), "0.9.3"))
    assert len(entries) == 2 and entries[1].startswith("**Changed** `HyperlinkParams.parse()`_")
    entry = mine.match_changelog(tmp_path, "0.9.3", {"HyperlinkParams", "parse"}, {"hyperlink"})[0]
    assert mine.clean_entry(entry) == "**Changed** `HyperlinkParams.parse()`_ now rejects trailing text."


def test_a_test_file_the_spec_names_is_a_target_whatever_its_name():
    """voluptuous keeps its tests in ``voluptuous/tests/tests.py`` (its spec names the file): a change to it is a
    changed test module; a ``tests.py`` the spec does not name is not one."""
    from frog_gym.catalog.spec import load_repo

    spec = load_repo("voluptuous")
    files = {"voluptuous/tests/tests.py": b"", "voluptuous/other/tests.py": b"", "voluptuous/tests/test_x.py": b""}
    assert list(spec.tests.paths) == ["voluptuous/tests/tests.py"]
    assert mine._test_targets(spec, ["voluptuous/other/tests.py", "voluptuous/tests/tests.py"], files) == [
        "voluptuous/tests/tests.py"]


def test_a_heading_s_link_target_does_not_name_its_section():
    """PyJWT's headings link to a compare view naming the previous version too (``Unreleased`` links to
    ``2.15.1...HEAD``): each version's section is the one its heading's own text names."""
    text = ("Changelog\n=========\n\n"
            "`Unreleased <https://github.com/o/r/compare/2.15.1...HEAD>`__\n---------------\n\n"
            "`v2.15.1 <https://github.com/o/r/compare/2.15.0...2.15.1>`__\n---------------\n\n"
            "Fixed\n~~~~~\n\n- Accept trailing padding (`#1209 <https://github.com/o/r/issues/1209>`__).\n\n"
            "`v2.15.0 <https://github.com/o/r/compare/2.14.0...2.15.0>`__\n---------------\n\n"
            "- Wrap errors.\n\n## [1.1](https://github.com/o/r/compare/1.0...1.1)\n- Fix b.\n\n"
            "## [1.0](https://github.com/o/r/releases/1.0)\n- Add a.\n")
    assert mine.changelog_entries(mine.changelog_section(text, "2.15.1")) == [
        "Accept trailing padding (`#1209 <https://github.com/o/r/issues/1209>`__)."]
    assert mine.changelog_section(text, "2.15.0") == "- Wrap errors."
    assert mine.changelog_section(text, "1.0") == "- Add a."


def test_a_changelog_folder_of_one_file_per_release_is_read(tmp_path):
    """rfc3986 keeps docs/source/release-notes/<version>.rst, each headed by its version and date, subsections
    under it; its fixes' statements were all generated before the folder was read."""
    notes = tmp_path / "docs" / "source" / "release-notes"
    notes.mkdir(parents=True)
    (notes / "1.3.2.rst").write_text("1.3.2 -- 2019-05-13\n-------------------\n\n- Remove unnecessary IRI-flavored "
                                     "matchers from ``rfc3986.misc``.\n")
    (notes / "1.4.0.rst").write_text(
        "1.4.0 -- 2020-04-07\n-------------------\n\nSecurity\n~~~~~~~~\n\n- Prevent users from receiving an invalid "
        "authority parsed from a malicious\n  URL. Previously we did not stop parsing the authority section at the "
        "first\n  backslash character.\n\nBug Fixes and Features\n~~~~~~~~~~~~~~~~~~~~~~\n\n- Add ``from_uri`` to "
        "``URIBuilder``.\n")
    (notes / "index.rst").write_text("Release Notes\n=============\n\n.. toctree::\n\n    1.4.0\n    1.3.2\n")
    assert "docs/source/release-notes/1.4.0.rst" in changelog_files(tmp_path)
    entry, source, _ = mine.match_changelog(tmp_path, "1.4.0", {"authority"}, {"abnf_regexp"})
    assert source == "docs/source/release-notes/1.4.0.rst" and entry.startswith("Prevent users from receiving")
    assert mine.match_changelog(tmp_path, "1.4.0", {"from_uri", "URIBuilder"}, set())[0].startswith("Add ``from_uri``")
    assert mine.match_changelog(tmp_path, "1.3.2", {"authority"}, set()) == ("", "", 0.0)


def test_the_miner_s_doctests_hold():
    """Among them: a pair whose new test modules do not import on the old release is skipped with the module
    and its import error (``_collect_error``), not as a suite that "does not run"."""
    import doctest

    result = doctest.testmod(mine)
    assert result.attempted >= 6 and result.failed == 0


@pytest.mark.slow
def test_a_live_fix_with_a_hunk_its_tests_do_not_need_is_reduced_to_the_hunks_they_do(tmp_path):
    """A registered live task's gold patch plus an unrelated hunk (a comment at the top of the file), marked not
    minimal as a mining run out of budget leaves it: the reduction drops the extra hunk, proves the rest 1-minimal,
    and the task grades as a fix with the smaller patch; the task as registered is already 1-minimal, kept as is."""
    import dataclasses

    from frog_gym.catalog.live import task_spec
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.catalog.task import load_task
    from frog_gym.generators.mine import _changes_of
    from frog_gym.generators.minimal import reduce_task
    from frog_gym.sandbox.workspace import Change, diff_text

    task = load_task("semver__live-3.0.4-1")
    (fixed,) = _changes_of(prepare(task_spec(task)).tree, task.patch)
    padded = Change(fixed.path, fixed.old, b"# an unrelated comment\n" + fixed.new)
    loose = dataclasses.replace(task, patch=diff_text([padded]),
                                features={**task.features, "minimal": False, "hunks": 2, "n_sites": 2})
    reduced, rep = reduce_task(loose, runs=1)
    assert (rep.hunks, rep.kept, rep.minimal, rep.why) == (2, 1, True, "")
    assert reduced.patch == task.patch and reduced.features["minimal"] is True and reduced.features["hunks"] == 1
    same, rep = reduce_task(dataclasses.replace(task, features={**task.features, "minimal": False}), runs=1)
    assert same.patch == task.patch and (rep.kept, rep.minimal) == (1, True) and same.features["minimal"] is True
