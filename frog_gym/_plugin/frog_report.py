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

Grading authenticates the report: with ``FROG_KEY_FIFO`` set, the plugin reads a 64-character key from that
FIFO when it is imported (``-p`` loads it before any code of the package under test can run) and signs
the report with it (HMAC-SHA256 of the canonical JSON, key ``"signature"``), so a report written by anything
else fails verification. ``$FROG_SELECT`` may then be ``{"ids": [...], "canaries": [...]}``: the canaries are
selected too and run last, so that a must-fail canary can't stop the run early. With ``"only": true`` there
too, the plugin keeps pytest from even making the test items of functions and classes that no selected id
names (their parametrizations, fixture closures and marks are half of collecting a large file): a selected
test is made, set up and run exactly as before, and the others are as if deselected.

Grading also guards the test files (``"guard"`` in ``$FROG_SELECT``: the graded and hidden test files, the
package's source folders, the test folders). An audit hook (PEP 578; installed at import, before any code
under test runs, and impossible to remove) refuses, and records in the signed report (``"guard"``), every
attempt by the package's own code to open one of those files, to link to it, or to start a process that
names it (or a test folder, or a shell pattern), and any call it makes into C through ``ctypes``: code
under test must not learn the hidden tests or the canaries at grading and special-case them. Reads through ``linecache`` (tracebacks, ``warnings``, ``inspect`` on a caller's
frame) are the standard library's own and stay allowed. A frame counts as the package's when its file lies
in the package's source and not in a test folder.

With ``FROG_MODULES=1`` the report also lists every imported module and its file (``"modules"``): the
grading server learns from a pristine collection which modules its parent may import ahead of time.
"""

import hashlib
import hmac
import json
import os
import sys


def _signer():
    path = os.environ.pop("FROG_KEY_FIFO", "")
    if not path:
        return None
    fd = os.open(path, os.O_RDONLY)
    key = b""
    try:
        while len(key) < 64:
            chunk = os.read(fd, 64 - len(key))
            if not chunk:
                break
            key += chunk
    finally:
        os.close(fd)

    def sign(body):
        text = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(key, text, hashlib.sha256).hexdigest()

    return sign


_sign = _signer()


def _guard_config():
    path = os.environ.get("FROG_SELECT")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            chosen = json.load(f)
    except (OSError, ValueError):
        return None
    return chosen.get("guard") if isinstance(chosen, dict) else None


_guard_hits = []
_GUARDED_EVENTS = frozenset(("open", "os.symlink", "os.link", "subprocess.Popen", "os.system",
                             "os.exec", "os.posix_spawn", "os.spawn", "ctypes.dlsym"))


def _install_guard(config):
    import linecache
    import tokenize

    root = os.getcwd().rstrip("/") + "/"
    files = frozenset(str(p) for p in config.get("files", ()))
    names = frozenset(os.path.basename(p) for p in files)
    inodes = set()
    for p in files:
        try:
            st = os.stat(root + p)
            inodes.add((st.st_dev, st.st_ino))
        except OSError:
            pass
    stat = os.stat
    code = tuple(str(c).strip("/") for c in config.get("code", ()))
    tests = tuple(str(t).strip("/") for t in config.get("tests", ()))
    words = tuple(sorted(names | {t.split("/")[-1] for t in tests if t}))
    mediators = frozenset((linecache.__file__, tokenize.__file__))
    try:
        import _pytest

        pytest_dir = os.path.dirname(_pytest.__file__) + "/"
    except ImportError:  # pragma: no cover (the plugin only loads inside pytest)
        pytest_dir = "\0"
    getframe, fsdecode, basename, hits = sys._getframe, os.fsdecode, os.path.basename, _guard_hits

    def under(rel, roots):
        return any(r in ("", ".") or rel == r or rel.startswith(r + "/") for r in roots)

    def from_package():
        """Whether the innermost frame of the repository is the package's (not a test's), reached without
        the standard library's source-line cache or pytest's own code in between (pytest reads the tests; a
        package pytest itself runs on, like pluggy, has frames further out on every stack)."""
        f, mediated = getframe(2), False
        while f is not None:
            fn = f.f_code.co_filename
            if fn.startswith(pytest_dir):
                return False
            if fn.startswith(root):
                rel = fn[len(root):]
                if rel in files or under(rel, tests):
                    return False
                if under(rel, code):
                    return not mediated
            elif fn in mediators:
                mediated = True
            f = f.f_back
        return False

    def text(v):
        if isinstance(v, (str, bytes, os.PathLike)):
            try:
                return fsdecode(v)
            except (TypeError, ValueError):
                return ""
        if isinstance(v, (list, tuple)):
            return " ".join(text(x) for x in v)
        return ""

    def hook(event, args):
        if event not in _GUARDED_EVENTS:
            return
        if event in ("open", "os.symlink", "os.link"):
            what = text(args[0]) if args else ""
            if basename(what.rstrip("/")) not in names:
                return
            if what.startswith("/"):  # the same name elsewhere (another package's __init__.py) is no test file
                try:
                    st = stat(what)
                    if (st.st_dev, st.st_ino) not in inodes:
                        return
                except (OSError, ValueError):
                    pass
            # a relative name counts whatever it resolves to from here: a directory descriptor may be its base
            why = f"opened {what}" if event == "open" else f"linked to {what}"
        elif event == "ctypes.dlsym":
            why = "called into a C library through ctypes"
        else:
            command = text(args[1:3] if event == "os.spawn" else args[:2])
            if not any(w in command for w in words) and not any(c in command for c in "*?["):
                return
            why = f"started a process that names the tests: {command[:200]}"
        if not from_package():
            return
        message = f"code under test {why} (the tests it is graded by are not for it to read)"
        if message not in hits:
            hits.append(message)
        raise PermissionError(message)

    sys.addaudithook(hook)


_guard = _guard_config()
if _guard:
    _install_guard(_guard)


# -- the seal: pytest's machinery as it was before any code under test ran -----------------------------------

_SEALED_ROOTS = ("_pytest", "pytest", "pluggy")
_UNSEALED = frozenset(("RUNNER_CLASS", "CHECKER_CLASS", "_pluginmanager", "_config", "_recursive_debug",
                       "_wrapped_pdb_cls", "_getini_unknown_type", "makedir", "fspath", "invocation_dir", "rootdir",
                       "inifile", "startdir", "_tmpdirhandler", "_reprcompare", "_assertion_pass"))
"""Names pytest itself rebinds during a run: doctest's lazily made classes, the debugger's class state, the
assertion hooks it sets around each test, and what its ``legacypath`` plugin patches into its classes."""
_seal_hits = []


def _make_seal():
    """Every module of pytest and pluggy loaded now (``-p`` loads this plugin after all of pytest's built-in
    plugins and before any code under test) and every class defined there, with each attribute's object.
    Code under test that replaces one (``_pytest.runner.call_and_report``, a report class's method, pluggy's
    hook caller) to rewrite outcomes is then seen however it got hold of the module: the static check only
    reads what the edits spell out."""
    import types

    sealed, seen = [], set()

    def own(d):
        return tuple((k, v) for k, v in d.items()
                     if k not in _UNSEALED and not (k.startswith("__") and k.endswith("__")))

    for name, mod in list(sys.modules.items()):
        if not isinstance(mod, types.ModuleType) or name.split(".")[0] not in _SEALED_ROOTS or id(mod) in seen:
            continue
        seen.add(id(mod))
        d = mod.__dict__
        sealed.append((name, d, own(d)))
        for v in list(d.values()):
            if isinstance(v, type) and getattr(v, "__module__", None) == name and id(v) not in seen:
                seen.add(id(v))
                sealed.append((f"{name}.{v.__qualname__}", v.__dict__, own(v.__dict__)))
    return sealed


def _made_by_the_package(value, roots, depth=0):
    """Whether ``value`` (what now sits where pytest's own object was) is code the package made: a function
    (unwrapped from methods, partials, properties) compiled from the package's source or from no file at all
    (``compile``/``exec`` of a string), or a class or an instance of a class with such a function. A test
    tool's replacement (freezegun's clock, a mock) comes from a library's file and is pytest's business."""
    import functools
    import types

    for _ in range(8):
        if isinstance(value, (staticmethod, classmethod, types.MethodType)):
            value = value.__func__
        elif isinstance(value, functools.partial):
            value = value.func
        elif isinstance(value, property):
            value = value.fget
        else:
            break
    if isinstance(value, types.FunctionType):
        name = value.__code__.co_filename
        return name.startswith("<") or any(name.startswith(r) for r in roots)
    if depth < 2:
        cls = value if isinstance(value, type) else type(value)
        if cls.__module__ not in ("builtins",):
            return any(_made_by_the_package(v, roots, depth + 1) for v in list(vars(cls).values()))
    return False


def _check_seal(sealed, ours, roots):
    """The first sealed attribute (or hook of this plugin) that code the package made has replaced, or None."""
    for where, d, items in sealed:
        get = d.get
        for k, v in items:
            now = get(k)
            if now is not v and _made_by_the_package(now, roots):
                return f"{where}.{k}"
    for hook, impl, function in ours:
        if impl.function is not function or impl not in hook.get_hookimpls():
            return f"the report plugin's {hook.name}"
    return None


_seal = _make_seal() if _sign is not None else None  # graded runs
_seal_hooks = []
_seal_roots = tuple(os.path.join(os.getcwd(), str(c).strip("/")) for c in (_guard or {}).get("code", ()))
"""The package's source folders (absolute): code compiled from there is the package's."""

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


def pytest_configure(config):
    global _selected, _repeat, _passes, _canaries, _wanted
    if _seal is not None:  # this plugin's own hooks, as registered: they must stay the ones called
        me = sys.modules[__name__]
        for name in ("pytest_runtest_logreport", "pytest_sessionfinish", "pytest_collection_modifyitems"):
            hook = getattr(config.pluginmanager.hook, name)
            _seal_hooks.extend((hook, i, i.function) for i in hook.get_hookimpls() if i.plugin is me)
    _repeat = max(1, int(os.environ.get("FROG_REPEAT", "1") or 1))
    _passes[1:] = [{} for _ in range(_repeat - 1)]
    path = os.environ.get("FROG_SELECT")
    if path:
        with open(path, encoding="utf-8") as f:
            chosen = json.load(f)
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


def pytest_collectreport(report):
    if report.failed:
        _collect_errors.append(report.nodeid)
        if os.environ.get("FROG_DETAILS"):
            _details.setdefault(report.nodeid, _detail(report, _exc_type_of(report)))


def _exc_type_of(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", "") or ""
    head = message.split(":", 1)[0].strip()
    return head if head.replace(".", "").replace("_", "").isalnum() else ""


try:
    import pytest as _pytest

    @_pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(collector, name, obj):
        if _wanted is None:
            return None
        names = _wanted.get(collector.nodeid)
        if names is None or name in names:
            return None  # pytest makes it as always
        return []  # no selected test comes from it: as good as deselected, without the cost of making it

    @_pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        if not os.environ.get("FROG_DETAILS"):
            return
        report = outcome.get_result()
        if report.failed and item.nodeid not in _details:
            exc = call.excinfo.typename if call.excinfo is not None else _exc_type_of(report)
            _details[item.nodeid] = _detail(report, exc)
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
except ImportError:  # pragma: no cover (the plugin only loads inside pytest)
    pass


_HOT = ("_pytest.runner", "_pytest.reports", "_pytest.python", "_pytest.main", "_pytest.skipping",
        "_pytest.outcomes", "_pytest.nodes", "_pytest.fixtures", "_pytest.unittest", "_pytest.capture",
        "_pytest.config", "pytest", "pluggy._hooks", "pluggy._callers", "pluggy._manager", "pluggy._result")
"""The modules a report passes through: checked at each report of a graded test file's test."""
_hot = [e for e in _seal or () if e[0] in _HOT or e[0].rsplit(".", 1)[0] in _HOT]
_seal_files = frozenset(str(f) for f in (_guard or {}).get("files", ()))


def _sealed(what, sealed=None):
    """Record, once, that pytest's machinery was replaced (the report is then tampering: see _make_seal)."""
    if _seal is None:
        return
    broken = _check_seal(_seal if sealed is None else sealed, _seal_hooks, _seal_roots)
    if broken is not None:
        message = f"code under test replaced {broken} (seen {what})"
        if not any(m.startswith(f"code under test replaced {broken} ") for m in _seal_hits):
            _seal_hits.append(message)


def pytest_runtest_logreport(report):
    if _seal is not None and (report.when == "call" or report.failed):
        # The whole seal at each canary, the modules a report passes through at each test of a graded file (a
        # forged pass must be made there), everything again at the end. A full check costs about 0.5 ms.
        if report.nodeid.split("[", 1)[0] in _canaries:
            _sealed(f"at the report of {report.nodeid}")
        elif report.nodeid.split("::", 1)[0] in _seal_files:
            _sealed(f"at the report of {report.nodeid}", _hot)
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


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("FROG_REPORT")
    if not path:
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
        _sealed("at the end of the session")
        if _guard or _seal_hits:
            out["guard"] = list(_guard_hits) + list(_seal_hits)
        if _repeat > 1:
            out["passes"] = [{nodeid: _status(p) for nodeid, p in ps.items()} for ps in _passes]
        if _sign is not None:
            out["signature"] = _sign(out)
        json.dump(out, f)
    os.replace(tmp, path)
