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
is read on every test's behalf: ``*``. Hypothesis reads the package's source for constants to draw
examples from (once, then kept): whenever that happens, the file is read on behalf of every test in a module
that uses hypothesis. The record, measured path -> node ids, goes to ``$FROG_COVERAGE`` + ``.readers.json``.
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


def pytest_configure(config):
    global _cov, _include
    path = os.environ.get("FROG_COVERAGE")
    if not path:
        return
    import coverage

    include = json.loads(os.environ.get("FROG_COVERAGE_INCLUDE", "null"))
    _include = frozenset(include or ())
    sys.addaudithook(_audit)
    _cov = coverage.Coverage(data_file=path, include=include, config_file=False, branch=False)
    _cov.start()


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
        with open(record + ".tmp", "w") as f:
            json.dump({p: sorted((ids - {"*hypothesis"}) | (_hypothesis_tests if "*hypothesis" in ids else set()))
                       for p, ids in sorted(_readers.items())}, f)
        os.replace(record + ".tmp", record)
