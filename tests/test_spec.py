"""Repository specs: the schema's error wording (file and field named), sources, the Python check, and
every registered spec."""

from __future__ import annotations

import re
import sys

import pytest

from frog_gym.cli import main
from frog_gym.errors import SourceError, SpecError
from frog_gym.catalog.spec import (REPO_SCHEMA, check_python, load_repo, load_repo_file, parse_repo, python_problem,
                           repo_names, schema_doc)

GIT = {"git": "/tmp/nowhere", "commit": "0" * 40}


def spec_dict(**overrides):
    d = {"name": "demo", "source": dict(GIT), "tests": {"paths": ["tests"]}}
    d.update(overrides)
    return d


def error_of(data, file="registry/repos/demo.toml") -> str:
    with pytest.raises(SpecError) as e:
        parse_repo(data, file)
    return str(e.value)


def test_missing_field_names_file_and_field():
    assert error_of({"name": "demo", "source": dict(GIT)}) == (
        "registry/repos/demo.toml: field 'tests': missing; expected a table")
    assert error_of(spec_dict(tests={})) == (
        "registry/repos/demo.toml: field 'tests.paths': missing; expected a list "
        "(test files or folders passed to pytest)")


def test_wrong_type_shows_the_value():
    assert error_of(spec_dict(tests={"paths": ["tests"], "timeout": "60"})) == (
        "registry/repos/demo.toml: field 'tests.timeout': expected an integer, got str '60'")
    assert error_of(spec_dict(tests={"paths": "tests"})) == (
        "registry/repos/demo.toml: field 'tests.paths': expected a list, got str 'tests'")
    assert error_of(spec_dict(install={"requires": ["pytest", 8]})) == (
        "registry/repos/demo.toml: field 'install.requires[1]': expected a string, got int 8")
    assert error_of(spec_dict(install={"env": {"X": 1}})) == (
        "registry/repos/demo.toml: field 'install.env.X': expected a string, got int 1")


def test_unknown_key_refused_with_suggestion():
    assert error_of(spec_dict(tests={"paths": ["tests"], "pathz": []})) == (
        "registry/repos/demo.toml: field 'tests.pathz': unknown key. Did you mean 'paths'? "
        "Known keys: args, paths, source_readers, suite_budget, test_files, timeout")
    msg = error_of(spec_dict(licence="MIT"))
    assert msg.startswith("registry/repos/demo.toml: field 'licence': unknown key. Did you mean 'license'?")


def test_source_rules():
    assert error_of(spec_dict(source={"pypi": "x", "version": "1", "sha256": "a" * 64, **GIT})) == (
        "registry/repos/demo.toml: field 'source': give either 'pypi' (with version, sha256) or 'git' "
        "(with commit), not both")
    assert error_of(spec_dict(source={"pypi": "x", "version": "1"})) == (
        "registry/repos/demo.toml: field 'source.sha256': missing; a pypi source needs 'version' and 'sha256' "
        "(frog-gym registry add computes the sha256)")
    assert error_of(spec_dict(source={"pypi": "x", "version": "1", "sha256": "ABC"})) == (
        "registry/repos/demo.toml: field 'source.sha256': expected 64 lowercase hex digits (a sha256), got 'ABC'")
    assert error_of(spec_dict(source={"git": "/x", "commit": "abc123"})) == (
        "registry/repos/demo.toml: field 'source.commit': expected a full 40-hex-digit commit id, got 'abc123'")
    spec = parse_repo(spec_dict(), "demo.toml")
    assert (spec.source.kind, spec.source.key) == ("git", "0" * 40)


def test_paths_stay_inside_the_tree():
    assert error_of(spec_dict(generate={"mutable": ["../etc"]})) == (
        "registry/repos/demo.toml: field 'generate.mutable': paths must be relative to the repository root and "
        "stay inside it, got '../etc'")


def test_file_level_errors(tmp_path):
    bad = tmp_path / "demo.toml"
    bad.write_text("name = \n")
    with pytest.raises(SpecError, match=re.escape(f"{bad}: field '<toml>': not valid TOML")):
        load_repo_file(bad)
    other = tmp_path / "other.toml"
    other.write_text('name = "demo"\n[source]\ngit = "/x"\ncommit = "' + "0" * 40 + '"\n[tests]\npaths = ["t"]\n')
    with pytest.raises(SpecError) as e:
        load_repo_file(other)
    assert str(e.value) == f"{other}: field 'name': 'demo' must match the file name 'other'"


def test_python_requirement_checked_with_packaging():
    spec = parse_repo(spec_dict(python={"requires": ">=3.99"}), "demo.toml")
    assert python_problem(spec, "3.11.7") == (
        "demo.toml: field 'python.requires': '>=3.99' excludes Python 3.11.7; run frog-gym with a Python it allows")
    assert python_problem(spec, "3.99.0") is None
    with pytest.raises(SourceError, match="excludes Python"):
        check_python(spec)
    assert python_problem(parse_repo(spec_dict(python={"requires": "3.x"}), "demo.toml")) == (
        "demo.toml: field 'python.requires': '3.x' is not a PEP 440 specifier")
    here = ".".join(map(str, sys.version_info[:2]))
    assert python_problem(parse_repo(spec_dict(python={"requires": f">={here}"}), "demo.toml")) is None


def test_schema_doc_documents_every_field(capsys):
    doc = schema_doc()
    for key, f in REPO_SCHEMA.items():
        assert key in doc
        for sub in f.schema or {}:
            assert re.search(rf"^  {re.escape(sub)} ", doc, re.M), sub
    assert main(["registry", "schema"]) == 0
    assert capsys.readouterr().out.strip() == doc.strip()


@pytest.mark.parametrize("name", repo_names())
def test_registered_spec(name):
    """Every registered spec loads, pins the test runner grading needs, and was measured by registry add."""
    spec = load_repo(name)
    pins = {r.split("==")[0] for r in spec.install.requires}
    assert {"pytest", "pytest-timeout"} <= pins, f"{name}: install.requires must pin pytest and pytest-timeout"
    assert spec.mutable, f"{name}: generate.mutable is empty"
    for line in spec.install.lock:
        assert re.fullmatch(r"[a-z0-9._-]+==\S+ --hash=sha256:[0-9a-f]{64}", line), line
    if spec.install.lock:
        assert spec.measured["runs"] >= 1 and spec.measured["passing"] > 0
        assert spec.measured["suite_seconds"] <= spec.tests.suite_budget
