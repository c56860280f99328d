"""pytest plugin used by frog-gym's coverage map: record which lines each test executes, and which measured
files each test opens.

Loaded with ``-p frog_coverage`` next to ``frog_report``, with coverage.py importable from a read-only
folder on ``PYTHONPATH``. ``$FROG_COVERAGE`` names the data file to write; ``$FROG_COVERAGE_INCLUDE`` (a
JSON list of file paths) limits measurement to the code that may be mutated. Each test runs in its
own dynamic context, named by its pytest node id (setup, call and teardown together), so the data says
exactly which tests reach a line; lines run while collecting (imports, ``def`` lines) get the empty context.

An audit hook notes every ``open`` of a measured file while a test runs (a source read by ``inspect`` or
``linecache``, a lazy import): a test that reads a file depends on all of it, executed or not. A file opened
before the first test by anything but the import system loading it (module-level code reading source text)
is read on every test's behalf: ``*``. Measurement starts when pytest loads this plugin; a measured module
imported before that is listed as ``preloaded``; a module's own execution, even when a test imports it, is
import time (the empty context), since what it builds outlives that test; so is the setup of a fixture
shared by several tests. Hypothesis reads the package's source for constants to draw
examples from (once, then kept): whenever that happens, the file is read on behalf of every test in a module
that uses hypothesis. The record (``readers``: measured path -> node ids; ``preloaded``) goes to
``$FROG_COVERAGE`` + ``.readers.json``.
"""

import json
import os
import sys

import pytest

_cov = None
_test = ""
_started = False
_include = frozenset()
_readers = {}


def _reader():
    """Who opens a file: "import" (the import system loading a module), "hypothesis", or "" (anything else)."""
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if f.f_code.co_name == "get_data" and "importlib" in name:
            return "import"
        if os.sep + "hypothesis" + os.sep in name:
            return "hypothesis"
        f = f.f_back
    return ""


def _audit(event, args):
    if event != "open" or not args or (not _test and _started):
        return
    path = args[0]
    if isinstance(path, int):
        return
    try:
        path = os.fsdecode(os.fspath(path))
    except TypeError:
        return
    path = os.path.normpath(os.path.join(os.getcwd(), path))
    if path in _include:
        who = _reader()
        if who == "hypothesis":
            _readers.setdefault(path, set()).add("*hypothesis")
        elif _test:
            _readers.setdefault(path, set()).add(_test)
        elif who != "import":
            _readers.setdefault(path, set()).add("*")


def _start():
    """Measure from the plugin's import on (``-p`` plugins load before any conftest), note the measured modules
    imported before that (their import-time code is unmeasured), and count a module's execution, wherever its
    import happens, as import time (the empty context): what it computes at import outlives the test."""
    global _cov, _include, _preloaded
    path = os.environ.get("FROG_COVERAGE")
    if not path or _cov is not None:
        return
    import coverage
    from importlib import _bootstrap_external

    include = json.loads(os.environ.get("FROG_COVERAGE_INCLUDE", "null"))
    _include = frozenset(include or ())
    for module in list(sys.modules.values()):
        f = getattr(module, "__file__", None)
        if isinstance(f, str) and os.path.normpath(f) in _include:
            _preloaded.add(os.path.normpath(f))
    sys.addaudithook(_audit)
    _cov = coverage.Coverage(data_file=path, include=include, config_file=False, branch=False)
    _cov.start()
    run = _bootstrap_external._LoaderBasics.exec_module

    def exec_module(self, module):
        global _importing
        if _cov is None or not _test:
            return run(self, module)
        if not _importing:
            _cov.switch_context("")
        _importing += 1
        try:
            return run(self, module)
        finally:
            _importing -= 1
            if not _importing and _test:
                _cov.switch_context(_test)

    _bootstrap_external._LoaderBasics.exec_module = exec_module


_preloaded = set()
_importing = 0
_start()


def pytest_configure(config):
    _start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _test, _started
    _started = True
    if _cov is not None:
        _cov.switch_context(item.nodeid)
        _test = item.nodeid
    yield
    if _cov is not None:
        _test = ""
        _cov.switch_context("")


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """A fixture shared by several tests (class, module, package or session scope, xunit's ``setup_module`` and
    unittest's ``setUpClass`` included) is set up in the first test's context but serves them all: its setup is
    counted as import time."""
    shared = _cov is not None and _test and fixturedef.scope != "function" and not _importing
    if shared:
        _cov.switch_context("")
    try:
        yield
    finally:
        if shared and _test:
            _cov.switch_context(_test)


_hypothesis_tests = set()


def _of_hypothesis(v):
    try:  # a module's values include proxies whose attributes raise anything (flask's ``request``)
        names = [getattr(v, "__name__", ""), getattr(v, "__module__", "")]
        if isinstance(v, type):
            names += [getattr(b, "__module__", "") for b in v.__mro__]
    except Exception:
        return False
    return any(isinstance(n, str) and n.split(".")[0] == "hypothesis" for n in names)


def _has_handle(obj):
    try:
        return hasattr(obj, "hypothesis")
    except Exception:
        return False


def pytest_collection_finish(session):
    """The tests that may draw from hypothesis: a ``@given`` test, or any test of a module that binds hypothesis
    or one of its objects (a strategy, a state machine's class)."""
    uses = {}
    for item in session.items:
        obj, module = getattr(item, "obj", None), getattr(item, "module", None)
        if _of_hypothesis(obj) or getattr(obj, "is_hypothesis_test", False) is True or _has_handle(obj):
            _hypothesis_tests.add(item.nodeid)
            continue
        if module is None:
            continue
        if module not in uses:
            uses[module] = any(_of_hypothesis(v) for v in list(vars(module).values()))
        if uses[module]:
            _hypothesis_tests.add(item.nodeid)


def pytest_unconfigure(config):
    global _cov
    if _cov is not None:
        _cov.stop()
        _cov.save()
        _cov = None
        record = os.environ["FROG_COVERAGE"] + ".readers.json"
        readers = {p: sorted((ids - {"*hypothesis"}) | (_hypothesis_tests if "*hypothesis" in ids else set()))
                   for p, ids in sorted(_readers.items())}
        with open(record + ".tmp", "w") as f:
            json.dump({"readers": readers, "preloaded": sorted(_preloaded)}, f)
        os.replace(record + ".tmp", record)
