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
attempt by the package's own code to open one of those files or to link to it, and any call it makes into
C through ``ctypes``: code under test must not learn the hidden tests or the canaries at grading and
special-case them. Nor may it start any process (the child would run without the hook): every audited
way is refused, the one C call that raises no audit event (``_posixsubprocess.fork_exec``, under
``subprocess`` and ``multiprocessing``) is wrapped wherever it is held, and the ways to its original (a
fresh import, the garbage collector, other threads' frames, tracing) are refused too. A process that a
test starts (a test running the package's command line) gets the guard too, at its start
(``sitecustomize.py``, found through ``PYTHONPATH``), with every frame but a test's counting as the
package's there. Reads through ``linecache`` (tracebacks, ``warnings``, ``inspect`` on a caller's
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
_GUARDED_EVENTS = frozenset((
    "open", "os.symlink", "os.link", "ctypes.dlsym", "ctypes.cdata", "ctypes.string_at", "ctypes.wstring_at",
    # every way the standard library starts a process (its one unaudited C call is wrapped: _guard_spawns)
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    # what would reach the wrapped call's original, or run code where the hook is not installed
    "import", "object.__getattr__", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys._current_frames", "sys.settrace", "sys.setprofile", "cpython.PyInterpreterState_New",
    # how the guard reaches the processes a test starts (sitecustomize.py)
    "os.putenv", "os.unsetenv"))
_INHERITED = frozenset(("FROG_GUARD_ROOT", "FROG_SELECT", "PYTHONPATH", "PYTHONHOME"))
_INTROSPECTION = {
    "gc.get_objects": "searched the garbage collector's objects", "gc.get_referrers": "searched the garbage "
    "collector's referrers", "gc.get_referents": "searched the garbage collector's referents",
    "sys._current_frames": "read the frames of every thread", "sys.settrace": "set a trace function",
    "sys.setprofile": "set a profile function", "cpython.PyInterpreterState_New": "started a subinterpreter "
    "(it runs without the guard)", "ctypes.cdata": "read memory through ctypes",
    "ctypes.string_at": "read memory through ctypes", "ctypes.wstring_at": "read memory through ctypes"}
_NOT_FOR_IT = {"read": "the tests it is graded by are not for it to read",
               "start": "code under test may not start a process at grading, nor reach the guard"}


def _install_guard(config):
    import linecache
    import pty
    import tokenize

    # a process a test starts inherits the guard (sitecustomize.py), with the test process's root
    root = (os.environ.get("FROG_GUARD_ROOT") or os.getcwd()).rstrip("/") + "/"
    os.environ["FROG_GUARD_ROOT"] = root
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
    import platform

    # the standard library's own reads of a source line, and platform's fixed commands (`uname -p`, which
    # boltons' environment profile asks for through platform.processor())
    mediators = frozenset((linecache.__file__, tokenize.__file__, platform.__file__))
    # the standard library's fork-then-exec helpers: the exec happens in the child, where a refusal is not
    # recorded, so the fork is refused when they make it (a plain os.fork stays allowed: the child keeps the hook)
    spawners = frozenset((os._spawnvef.__code__, pty.spawn.__code__))
    try:
        import _pytest

        pytest_dir = os.path.dirname(_pytest.__file__) + "/"
    except ImportError:  # pragma: no cover (the plugin only loads inside pytest)
        pytest_dir = "\0"
    getframe, fsdecode, basename, hits = sys._getframe, os.fsdecode, os.path.basename, _guard_hits

    def plugin_file(fn):
        """A pytest plugin's own module outside the repository (pytest-timeout's stack dump at a timeout runs on
        top of the test's frames, the package's included)."""
        name = basename(fn)
        return not fn.startswith(root) and (name.startswith("pytest_") or
                                            basename(os.path.dirname(fn)).startswith("pytest_"))

    def under(rel, roots):
        return any(r in ("", ".") or rel == r or rel.startswith(r + "/") for r in roots)

    def from_package(f):
        """Whether the innermost frame of the repository from ``f`` outwards is the package's (not a test's),
        reached without the standard library's source-line cache or pytest's own code in between (pytest
        reads the tests; a package pytest itself runs on, like pluggy, has frames further out on every stack).
        A stack with neither pytest's frames nor the repository's (a thread whose target is a builtin, like
        ``Thread(target=os.system)``, a callback the package left behind) counts as the package's: pytest's
        frames are at the bottom of every stack it runs a test on."""
        mediated = False
        while f is not None:
            fn = f.f_code.co_filename
            if fn.startswith(pytest_dir) or plugin_file(fn):
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
        return not mediated

    def text(v):
        if isinstance(v, (str, bytes, os.PathLike)):
            try:
                return fsdecode(v)
            except (TypeError, ValueError):
                return ""
        if isinstance(v, (list, tuple)):
            return " ".join(text(x) for x in v)
        return ""

    def refusal(why, kind):
        message = f"code under test {why} ({_NOT_FOR_IT[kind]})"
        if message not in hits:
            hits.append(message)
        return PermissionError(message)

    def caller():
        try:
            return getframe(2)
        except ValueError:  # an event raised with no Python frame below the hook
            return None

    keeper = []

    def hook(event, args):
        if event not in _GUARDED_EVENTS:
            return
        kind = "start"
        if event == "import":
            if not args or not isinstance(args[0], str) or args[0].rpartition(".")[2] != "_posixsubprocess":
                return
            # refused whoever asks: it is never imported twice unless code removed it from sys.modules, and a
            # fresh copy would hold the unwrapped call for everyone after
            raise refusal("imported _posixsubprocess afresh (it starts processes without an audit event)", kind)
        elif event == "object.__getattr__":
            if not keeper or not args or args[0] is not keeper[0]:
                return
            raise refusal(f"looked into the guard's process starter ({text(args[1:2])})", kind)
        elif event in ("os.fork", "os.forkpty"):
            f = caller()
            for _ in range(3):
                if f is None or f.f_code in spawners:
                    break
                f = f.f_back
            if f is None:
                return
            why = "started a process (a fork that execs)"
        elif event in ("os.putenv", "os.unsetenv"):
            key = text(args[0]) if args else ""
            if key not in _INHERITED:
                return
            why = f"changed ${key} (the guard reaches the processes a test starts through it)"
        elif event in _INTROSPECTION:
            why = _INTROSPECTION[event]
        elif event in ("open", "os.symlink", "os.link"):
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
            why, kind = (f"opened {what}" if event == "open" else f"linked to {what}"), "read"
        elif event == "ctypes.dlsym":
            why, kind = "called into a C library through ctypes", "read"
        else:
            command = text(args[0] if event == "os.system" else args[2] if event == "os.spawn" else args[1])
            why = f"started a process: {command.strip()[:200]}"
        if from_package(caller()):
            raise refusal(why, kind)

    _guard_spawns(from_package, refusal, keeper)  # first: it imports _posixsubprocess, which the hook refuses
    sys.addaudithook(hook)


def _guard_spawns(from_package, refusal, keeper):
    """Replace ``_posixsubprocess.fork_exec`` (the C call under ``subprocess``, ``multiprocessing``'s spawn
    and forkserver, ``concurrent.futures``' process pools), which raises no audit event, everywhere it is
    held with a wrapper that refuses the package's frames. The original lives only in the frame of a
    suspended generator: reaching it takes ``gi_frame`` (audited), the garbage collector (audited), another
    thread's frames (audited) or a fresh import of the module (audited); the hook refuses each. Sending to
    the generator directly is checked the same way, and an exception thrown into it never leaves it (its
    traceback would hold the frame)."""
    import _posixsubprocess
    import subprocess
    import threading

    original = _posixsubprocess.fork_exec
    getframe, fsencode = sys._getframe, os.fsencode

    def argv(call):  # only exact str and bytes are read: no method of the package's may run below run()
        words = call[0] if type(call) is tuple and call and type(call[0]) in (list, tuple) else ()
        return " ".join(w.decode(errors="replace") if type(w) is bytes else w for w in words
                        if type(w) in (str, bytes))[:200]

    def run():
        reply = None
        while True:
            try:
                call = yield reply
            except GeneratorExit:
                return
            except BaseException:  # noqa: BLE001 (thrown in: let out, it would carry this frame with it)
                reply = (refusal("threw into the guard's process starter", "start"), None)
                continue
            # the wrapper's caller, or whoever sends here directly; the wrapper sends a tuple of plain values
            if type(call) is not tuple or from_package(getframe(1)):
                reply = (refusal(f"started a process: {argv(call)}", "start"), None)
                continue
            try:
                reply = (None, original(*call))
            except BaseException as e:  # noqa: BLE001 (handed to the caller, without this frame)
                reply = (e.with_traceback(None), None)

    gen = run()
    next(gen)
    send, lock = gen.send, threading.Lock()
    os.register_at_fork(after_in_child=lock._at_fork_reinit)

    def fork_exec(*args):
        # path-likes become bytes here (argv, executables, cwd, environment), so that no __fspath__ of the
        # package's runs below the generator's frame
        args = tuple([fsencode(x) for x in a] if i in (0, 1, 5) and isinstance(a, (list, tuple))
                     else fsencode(a) if i == 4 and a is not None else a for i, a in enumerate(args))
        with lock:
            error, pid = send(args)
        if error is not None:
            raise error
        return pid

    keeper.append(gen)
    for m in list(sys.modules.values()):
        d = getattr(m, "__dict__", None)
        if isinstance(d, dict):
            for k, v in list(d.items()):
                if v is original:
                    d[k] = fork_exec
    subprocess._fork_exec = fork_exec


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
