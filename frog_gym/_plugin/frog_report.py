"""pytest plugin used by frog-gym's grading: run only the selected tests, write per-test statuses.

Loaded with ``-p frog_report`` from a read-only folder outside the workspace. It reads the selected test
ids from ``$FROG_SELECT`` (JSON list) and writes ``$FROG_REPORT`` (JSON) at the end of the session, into a
folder that exists only during grading. Deselecting here, rather than passing ids on the command line,
keeps parametrized ids with odd characters exact.

With ``FROG_DETAILS=1`` the report also gets a ``"details"`` key: for each failed or errored test (and
each collection error), the exception type, its one-line message and the failure text pytest prints
(``longrepr``), trimmed. The ``"tests"`` key keeps its format, so older readers are unaffected.

With ``FROG_REPEAT=k`` (k > 1) every selected test runs k times in a row (its fixtures set up anew each
time); ``"tests"`` holds the first pass and ``"passes"`` one status map per pass (generators use it to
check that a bug's failures repeat without paying for more pytest processes).

Grading authenticates the report: with ``FROG_KEY_FIFO`` set, the plugin reads the selection and then a
64-character key from that FIFO when it is imported (``-p`` loads it before any code of the package under test
can run; the selection is no file the tests could open, and ``$FROG_SELECT`` then names the guard alone, for the
processes a test starts) and the report is signed with it (HMAC-SHA256 of the canonical JSON, key
``"signature"``), so a report written by anything else fails verification. The key is never a Python object: it
is read into a bytearray, handed to an HMAC object and wiped. In such a graded run the outcomes, every finding
and that HMAC object live in the *vault* (``frog_vault``), out of reach of code under test, which also
writes the report. The selection may be ``{"ids": [...], "canaries": [...]}``: the canaries are selected too
and run last, so that a must-fail canary can't stop the run early. With ``"only": true`` there
too, the plugin keeps pytest from even making the test items of functions and classes that no selected id
names (their parametrizations, fixture closures and marks are half of collecting a large file): a selected
test is made, set up and run exactly as before, and the others are as if deselected.

Grading also guards the test files (``"guard"`` in ``$FROG_SELECT``: the graded and hidden test files, the
package's source folders, the test folders). An audit hook (PEP 578; installed at import, before any code
under test runs, and impossible to remove) refuses, and records in the signed report (``"guard"``), every
attempt by the package's own code to open one of those files or to link to it, and any call it makes into
C through ``ctypes``: code under test must not learn the hidden tests or the canaries at grading and
special-case them. Nor may it start any process (the child would run without the hook): every audited
way is refused, the one C call that raises no audit event (``_posixsubprocess.fork_exec``, under
``subprocess`` and ``multiprocessing``) is wrapped wherever it is held, and the ways to its original (a
fresh import, the garbage collector, other threads' frames, tracing) are refused too. A process that a
test starts (a test running the package's command line) gets the guard too, at its start
(``sitecustomize.py``, found through ``PYTHONPATH``), with every frame but a test's counting as the
package's there. Reads of a caller's source line for a traceback, ``warnings`` or ``inspect`` are the
standard library's own and stay allowed; the package calling ``linecache`` itself is reading a file. A frame
counts as the package's when its file lies in the package's source and not in a test folder; a callback that
``weakref.finalize`` runs when an object dies counts as the package's wherever the object died. Every frame is
refused ``/proc/<pid>/mem``, ``maps`` and the like (the process's memory holds the key and every outcome), and
no audit hook may be added once the vault is open.

With ``FROG_MODULES=1`` the report also lists every imported module and its file (``"modules"``): the
grading server learns from a pristine collection which modules its parent may import ahead of time.
"""

import json
import os
import sys


def _sibling(name):
    """This plugin's module ``name`` (``frog_guard``, ``frog_vault``...), loaded from the file next to this one: never
    found through ``sys.path``, where the repository's folder comes first, and never put in ``sys.modules``, one
    lookup away from code under test. Runs at import, before any code under test. (``importlib.util`` is left
    alone: a process a test starts would pay for importing it.)"""
    from importlib.machinery import SourceFileLoader

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    loader = SourceFileLoader(name, path)
    module = type(sys)(name)
    module.__file__, module.__loader__ = path, loader
    exec(loader.get_code(name), vars(module))
    return module


def _accel():
    """The vault's C helper (``frog_accel.c``, built by the install where a C compiler was found) as ``(heap_classes,
    same_names, same_items)``, loaded from the file next to this one for this interpreter (never through ``sys.path``, never into
    ``sys.modules``), or None where there is none (the vault then does the same in Python, and checks the helper
    against its own walk before it takes it)."""
    from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, ModuleSpec

    if os.environ.get("FROG_VAULT_ACCEL") == "0":  # (the host's choice: its Python checks alone)
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "frog_accel" + EXTENSION_SUFFIXES[0])
    if not os.path.isfile(path):
        return None
    try:
        loader = ExtensionFileLoader("frog_accel", path)
        module = loader.create_module(ModuleSpec("frog_accel", loader, origin=path))
        loader.exec_module(module)
        return module.heap_classes, module.same_names, module.same_items
    except Exception:  # noqa: BLE001 (a helper that does not load: the vault's Python walk, as without one)
        return None


# The plugin's parts, one idea each, loaded only where they are used (an ungraded run without a guard, as the
# SWE-bench export runs it, needs this file alone): grading's FIFO (the selection and the key), the guard (an audit
# hook on the test files, process starts and introspection), the seal (pytest and pluggy as they were) and the
# vault (the graded run's outcomes, findings and key, and the report's signing). Each binds what it uses when it
# is installed: nothing of theirs is looked up in a module's globals afterwards.
_key_fifo = os.environ.pop("FROG_KEY_FIFO", "")
_graded = bool(_key_fifo)
"""A graded run: the report is kept, checked and signed by the vault (frog_vault), not by this module."""
_fifo = None
if _graded:
    _key, _guard_module = _sibling("frog_key"), _sibling("frog_guard")
    _seal, _vault = _sibling("frog_seal"), _sibling("frog_vault")
    # the selection (ids, canaries, the guard) comes with the key, never as a file code under test could open;
    # processes a test starts get the guard alone, from $FROG_SELECT
    _chosen, _fifo = _key.open_fifo(_key_fifo)
else:
    _chosen = None


def _selection():
    """The selection: from grading's FIFO in a graded run, else ``$FROG_SELECT``'s JSON (None without one, or
    unreadable)."""
    if _graded:
        return _chosen
    path = os.environ.get("FROG_SELECT")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _guard_config():
    chosen = _selection()
    return chosen.get("guard") if isinstance(chosen, dict) else None


def _ahead(name):
    """What the grading server's parent read or made before it forked (``SEAL_AHEAD``: the seal and its code,
    ``frog_seal.ahead``; ``SLOTS_AHEAD``: the library functions in comparison slots, ``frog_vault.library_slots``;
    ``LIBRARY_AHEAD``: what the preloaded plugins' files compile to, ``frog_vault.library_ahead``; ``SPAWNS_AHEAD``:
    where the modules hold ``_posixsubprocess.fork_exec``, ``frog_guard.spawn_holders``;
    ``_REWRITTEN`` and ``CANARY_CODE``: the test modules' and the canaries' code; ``TEST_KEYS``: the keys of the
    test modules' code, ``frog_guard.code_keys``)
    when this process is its child (its ``__main__``, where nothing but pytest has run since the fork), else None."""
    main = sys.modules.get("__main__")
    if type(main) is type(sys) and vars(main).get("__file__") == "/frog/plugin/frog_server.py":
        return vars(main).get(name)
    return None


def _test_files():
    """The test files a graded run runs (its selected ids' and canaries'), and those the guard guards."""
    chosen = _selection()
    if isinstance(chosen, dict):
        ids = [*chosen.get("ids", ()), *chosen.get("canaries", ())]
    else:
        ids = chosen if isinstance(chosen, list) else []
    return sorted({str(t).split("::", 1)[0] for t in ids} | {str(f) for f in (_guard_config() or {}).get("files", ())})


# what pytest runs of each test file the run runs and of each conftest on the way, made before any code under test runs
# (and what pytest then runs, where it was made here: a grading server's child runs its parent's)
_test_code = None
if _graded:
    _test_code, _made_here = _guard_module.test_code(_test_files(), _ahead("_REWRITTEN"), _ahead("CANARY_CODE"),
                                                     _ahead("TEST_KEYS"))
    if _made_here:
        _guard_module.use_test_code(_made_here)
    del _made_here
_guard_hits = []
_guard = _guard_config()
if _guard:
    if not _graded:  # a process a test started (sitecustomize.py), or an ungraded run with a guard
        _guard_module = _sibling("frog_guard")
    _guard_module.install(_guard, _guard_hits, _test_code, _ahead("SPAWNS_AHEAD"))

_selected = None
_wanted = None
_canaries = set()
_repeat = 1
_pass = 0
_passes = [{}]
_phases = _passes[0]
_collect_errors = []
_details = {}
_DETAIL_CHARS = 6000


def _detail(report, exc_type):
    text = str(report.longrepr or "")
    if len(text) > _DETAIL_CHARS:
        text = "[...]\n" + text[-_DETAIL_CHARS:]
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", "") or (text.strip().splitlines() or [""])[-1]
    return {"when": report.when, "exc_type": exc_type or "", "message": message[:500], "longrepr": text}


def _wanted_names(ids):
    """For each collector a selected id passes through (a module, a class), the names of its children that
    lead to a selected test: ``a.py::C::test_f[x]`` gives ``{"a.py": {"C"}, "a.py::C": {"test_f"}}``."""
    out = {}
    for nodeid in ids:
        path, _, rest = nodeid.partition("::")
        parent = path
        for name in rest.split("[", 1)[0].split("::") if rest else ():
            out.setdefault(parent, set()).add(name)
            parent = f"{parent}::{name}"
    return out


# In a graded run each hook below hands what pytest gave it to the vault (frog_vault) as an audit event, through
# the ``sys.audit`` bound when it was defined (a default argument, which pluggy does not count as a hook argument):
# a package that rebinds this module's ``sys`` reaches none of them.

def pytest_configure(config, _audit=sys.audit):
    global _selected, _repeat, _passes, _canaries, _wanted
    if _graded:
        _audit("frog.vault.configure", config)
    _repeat = max(1, int(os.environ.get("FROG_REPEAT", "1") or 1))
    _passes[1:] = [{} for _ in range(_repeat - 1)]
    chosen = _selection()
    if chosen is not None:
        if isinstance(chosen, dict) and "ids" not in chosen:  # the guard alone: the whole suite runs
            return
        if isinstance(chosen, dict):
            _canaries = set(chosen.get("canaries", ()))
            only = bool(chosen.get("only"))
            chosen = list(chosen.get("ids", ())) + sorted(_canaries)
            if only:
                _wanted = _wanted_names(chosen)
        _selected = set(chosen)


def pytest_collection_modifyitems(session, config, items):
    if _selected is None:
        return
    def canary(i):  # an autouse fixture with params gives every test, canaries included, an id suffix
        return i.nodeid.split("[", 1)[0] in _canaries

    keep = [i for i in items if i.nodeid in _selected or canary(i)]
    keep.sort(key=canary)  # stable: canaries last, the rest in collection order
    kept = set(id(i) for i in keep)
    drop = [i for i in items if id(i) not in kept]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def pytest_collectreport(report, _audit=sys.audit):
    if report.failed:
        if _graded:
            _audit("frog.vault.collect_error", report)
        _collect_errors.append(report.nodeid)
        if os.environ.get("FROG_DETAILS"):
            _details.setdefault(report.nodeid, _detail(report, _exc_type_of(report)))


def _exc_type_of(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", "") or ""
    head = message.split(":", 1)[0].strip()
    return head if head.replace(".", "").replace("_", "").isalnum() else ""


try:
    if "_pytest" not in sys.modules:  # a process a test started, guarded (sitecustomize.py): no pytest run here
        raise ImportError("pytest is not running in this process")
    import pytest as _pytest

    @_pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(collector, name, obj):
        if _wanted is None:
            return None
        names = _wanted.get(collector.nodeid)
        if names is None or name in names:
            return None  # pytest makes it as always
        return []  # no selected test comes from it: as good as deselected, without the cost of making it

    @_pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(item, call, _audit=sys.audit):
        if _graded:  # before any other implementation: what pytest's call says, for the vault to hold the report to
            _audit("frog.vault.made", item, call)
        outcome = yield
        if not os.environ.get("FROG_DETAILS"):
            return
        report = outcome.get_result()
        if report.failed and item.nodeid not in _details:
            exc = call.excinfo.typename if call.excinfo is not None else _exc_type_of(report)
            _details[item.nodeid] = _detail(report, exc)
    @_pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(item, _audit=sys.audit):
        if _graded:  # the vault checks that the test about to run is the one collected
            _audit("frog.vault.call", item)

    @_pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(item, nextitem):
        global _pass
        if _repeat <= 1:
            return None
        from _pytest.runner import runtestprotocol

        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for i in range(_repeat):
            _pass = i
            if i and hasattr(item, "_initrequest"):
                item._initrequest()
            runtestprotocol(item, nextitem=nextitem, log=True)
        _pass = 0
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True
except ImportError:  # a guarded process a test started (the plugin itself only loads inside pytest)
    pass



def pytest_runtest_logstart(nodeid, location, _audit=sys.audit):
    if _graded:
        _audit("frog.vault.start", nodeid)


def pytest_runtest_logfinish(nodeid, location, _audit=sys.audit):
    if _graded:
        _audit("frog.vault.end", nodeid)


def pytest_runtest_logreport(report, _audit=sys.audit):
    if _graded:
        _audit("frog.vault.record", report)
    phases = _passes[_pass].setdefault(report.nodeid, {})
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfail" if report.skipped else "xpass"
    phases[report.when] = outcome


def _status(phases):
    setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
    if setup == "failed" or teardown == "failed":
        return "ERROR"
    if setup == "skipped" or call == "skipped":
        return "SKIPPED"
    if setup == "xfail" or call == "xfail":
        return "XFAIL"
    if call == "passed" or call == "xpass":
        return "PASSED"
    if call == "failed":
        return "FAILED"
    return "ERROR"


def pytest_sessionfinish(session, exitstatus, _audit=sys.audit):
    path = os.environ.get("FROG_REPORT")
    if not path:
        return
    if _graded:  # the vault writes and signs the report from what it kept itself
        extra = {}
        if os.environ.get("FROG_DETAILS"):
            extra["details"] = _details
        if os.environ.get("FROG_MODULES"):
            extra["modules"] = {n: str(getattr(m, "__file__", "") or "") for n, m in list(sys.modules.items())}
        if _repeat > 1:
            extra["passes"] = [{nodeid: _status(p) for nodeid, p in ps.items()} for ps in _passes]
        _audit("frog.vault.finish", session, exitstatus, extra)
        return
    tests = {nodeid: _status(p) for nodeid, p in _phases.items()}
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        t = os.times()
        out = {"exitstatus": int(exitstatus), "tests": tests, "collect_errors": _collect_errors,
               "collected": int(getattr(session, "testscollected", 0) or 0),
               "cpu_seconds": round(t.user + t.system + t.children_user + t.children_system, 3)}
        if os.environ.get("FROG_DETAILS"):
            out["details"] = _details
        if os.environ.get("FROG_MODULES"):  # the grading server's preload list (a pristine tree only)
            out["modules"] = {n: str(getattr(m, "__file__", "") or "") for n, m in list(sys.modules.items())}
        if _guard:
            out["guard"] = list(_guard_hits)
        if _repeat > 1:
            out["passes"] = [{nodeid: _status(p) for nodeid, p in ps.items()} for ps in _passes]
        json.dump(out, f)
    os.replace(tmp, path)


if _graded:  # last: every hook is defined, and nothing of the package under test has run yet
    _vault.open_vault(
        _fifo, _key.read_exactly, _guard, _guard_hits, _seal.make_seal(_ahead("SEAL_AHEAD")), _seal.HOT,
        _seal.HOT_HOOKS, {
            "configure": pytest_configure, "start": pytest_runtest_logstart, "record": pytest_runtest_logreport,
            "end": pytest_runtest_logfinish, "collect_error": pytest_collectreport, "finish": pytest_sessionfinish,
            "call": pytest_runtest_call, "made": pytest_runtest_makereport,
            "select": pytest_collection_modifyitems}, sys.modules[__name__],
        (globals(), vars(_key), vars(_guard_module), vars(_seal), vars(_vault)), _selection(), _seal.code_of,
        _ahead("SEAL_AHEAD"), _ahead("SLOTS_AHEAD"), _test_code, _guard_module.code_keys, _ahead("LIBRARY_AHEAD"),
        _accel())
