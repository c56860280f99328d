"""The behavioural oracle's sandbox side: a canonical encoding, a recorder (pytest plugin) and a replayer.

**Recording** (validation, gold code only): loaded with ``-p frog_oracle`` next to ``frog_report`` in a run
of a task's FAIL_TO_PASS tests on the gold tree. ``$FROG_ORACLE_TARGETS`` (a JSON object ``{"/testbed/<file>":
[qualname, ...]}``) names the functions the gold patch changes. A C-level hook (``sys.monitoring`` where it
exists, ``sys.settrace`` with line events off on CPython 3.11) sees each call into them: the arguments as the
frame holds them on entry, the value returned or the type of the exception raised, and every argument whose
encoding the call changed (``self`` included). No function is wrapped or replaced, so identity checks and
``__getattr__`` tricks in the tests see the code exactly as it is. ``$FROG_ORACLE_OUT`` receives one JSON line per
call kept (at most ``CAP`` per function, identical arguments once).

**Replay** (validation and grading): ``python frog_oracle.py IN OUT`` in a sandbox holding only the
package's source (no test file, no expected value, no key). ``IN`` lists calls (module, qualname, encoded
arguments, the names of arguments whose after-state counts); for each one it writes one line to ``OUT``:
the call's outcome in the canonical encoding, or ``{"e": why}`` when the call could not be made. The host
compares those lines with the gold record byte for byte and never decodes them.

**Encoding**: plain data as tagged JSON (``{"t": [...]}`` a tuple, ``{"d": [[k, v], ...]}`` a dict sorted by
its encoded keys, ``{"f": repr}`` a float, ...), anything else as a protocol-4 pickle, only where pickling
what the pickle loads gives the same bytes again; then ``json.dumps(sort_keys=True)`` with fixed separators.
This file must import nothing from frog_gym: it runs inside sandboxes on the repository's own interpreter.
"""

import base64
import json
import os
import pickle
import signal
import sys
import time

pytest = sys.modules.get("pytest")  # loaded as a plugin (recording); the replay never imports it

CAP = 30
"""Calls kept per function (the first ones with distinct arguments)."""
MAX_BYTES = 1 << 16
"""An encoded call larger than this is not kept."""
ENCODE_BUDGET = 2.0
"""Seconds of encoding one function may cost in a run; past it no more of its calls are kept."""
ENTRY_TRIES = 200
"""Calls of one function tried as an entry (arguments encoded) in a run; past it, no more."""
TOTAL_BUDGET = 20.0
"""Seconds of encoding all entry calls may cost in a run; past it only the changed functions' are kept."""
CALL_TIMEOUT = 5
"""Seconds one replayed call may run."""
_DEPTH = 40
_ModuleType = type(sys)


class Unencodable(Exception):
    """A value with no exact, reproducible encoding."""


def encode(v, depth=0):
    """A JSON-able form of ``v`` that is equal for equal plain data; see the module docstring."""
    if depth > _DEPTH:
        raise Unencodable("nested too deep")
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return {"i": str(v)} if abs(v) > 2**53 else v
    if t is float or t is complex:
        return {"f" if t is float else "c": repr(v)}
    if t is bytes:
        return {"b": v.hex()}
    if t is list:
        return [encode(x, depth + 1) for x in v]
    if t is tuple:
        return {"t": [encode(x, depth + 1) for x in v]}
    if t is dict:
        items = [(encode(k, depth + 1), encode(x, depth + 1)) for k, x in v.items()]
        return {"d": sorted(([k, x] for k, x in items), key=lambda kv: _dumps(kv[0]))}
    if t is set or t is frozenset:
        return {"s" if t is set else "z": sorted((encode(x, depth + 1) for x in v), key=_dumps)}
    if t is _ModuleType and sys.modules.get(v.__name__) is v:  # a module by name (``expat=expat`` defaults)
        return {"m": v.__name__}
    try:
        data = _dumps_checked(v) if TEST_PREFIXES else pickle.dumps(v, protocol=4)
        again = pickle.dumps(pickle.loads(data), protocol=4)
    except Unencodable:
        raise
    except Exception as e:  # unpicklable (locks, lambdas, generators, ...)
        raise Unencodable(f"{t.__qualname__}: {type(e).__name__}") from None
    if again != data:
        raise Unencodable(f"{t.__qualname__}: its pickle does not round-trip byte-identically")
    return {"p": base64.b64encode(data).decode()}


TEST_PREFIXES = ()
PACKAGE_PREFIXES = ()
"""While recording: the package's source path prefixes (see :class:`_CheckingPickler`)."""
"""While recording: the test files' path prefixes. A value whose pickle names a class or function defined in
a test file can't be replayed (the replay holds no test code): it is refused when encoded, so that it takes
no place among a function's kept calls."""
_test_modules = (0, frozenset())


def _test_module_names():
    global _test_modules
    if _test_modules[0] != len(sys.modules):
        names = frozenset(n for n, m in list(sys.modules.items())
                          if str(getattr(m, "__file__", None) or "").startswith(TEST_PREFIXES)
                          or n == "conftest" or n.endswith(".conftest"))
        _test_modules = (len(sys.modules), names)
    return _test_modules[1]


class _CheckingPickler(pickle.Pickler):
    """``pickle.dumps`` (the same bytes), refusing any class or function that a test file defines."""

    def persistent_id(self, obj):
        mod = getattr(obj, "__module__", None) if isinstance(obj, type) or callable(obj) else type(obj).__module__
        if mod is not None and mod in self.tests:
            raise Unencodable(f"{getattr(obj, '__qualname__', type(obj).__qualname__)} is defined in test code")
        if not isinstance(obj, type):
            # pickling calls a class's own __getstate__, which may change the object (requests' Response reads its
            # whole body first): a value whose class has one of the package's is not encoded while recording
            code = getattr(getattr(type(obj), "__getstate__", None), "__code__", None)
            if code is not None and PACKAGE_PREFIXES and code.co_filename.startswith(PACKAGE_PREFIXES):
                raise Unencodable(f"{type(obj).__qualname__}.__getstate__ is the package's (pickling may change it)")
        return None


def _dumps_checked(v):
    import io

    buf = io.BytesIO()
    p = _CheckingPickler(buf, protocol=4)
    p.tests = _test_module_names()
    p.dump(v)
    return buf.getvalue()


def decode(e):
    """The object :func:`encode` encoded (sandbox side only: it may unpickle)."""
    if e is None or isinstance(e, (bool, str, int)):
        return e
    if isinstance(e, list):
        return [decode(x) for x in e]
    (tag, x), = e.items()
    if tag == "i":
        return int(x)
    if tag == "f":
        return float(x)
    if tag == "c":
        return complex(x)
    if tag == "b":
        return bytes.fromhex(x)
    if tag == "t":
        return tuple(decode(y) for y in x)
    if tag == "d":
        return {decode(k): decode(y) for k, y in x}
    if tag == "s":
        return {decode(y) for y in x}
    if tag == "z":
        return frozenset(decode(y) for y in x)
    if tag == "m":
        import importlib

        return importlib.import_module(x)
    if tag == "p":
        return pickle.loads(base64.b64decode(x))
    raise ValueError(f"unknown tag {tag!r}")


def _dumps(x):
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def type_name(t):
    return f"{t.__module__}.{t.__qualname__}"


def outcome_line(returned, raised, after):
    """The canonical line of one call's outcome: ``{"r": value}`` or ``{"x": exception type}``, with ``"a"``
    the after-state of the arguments named (sorted)."""
    d = {"x": type_name(raised)} if raised is not None else {"r": encode(returned)}
    if after:
        d["a"] = {k: encode(v) for k, v in sorted(after.items())}
    return _dumps(d)


def _param_names(code):
    """The code's parameters in order and how they are passed: (name, kind) with kind p/k/*/**."""
    n, kw = code.co_argcount, code.co_kwonlyargcount
    names = [(x, "p") for x in code.co_varnames[:n]] + [(x, "k") for x in code.co_varnames[n:n + kw]]
    i = n + kw
    if code.co_flags & 0x04:
        names.append((code.co_varnames[i], "*"))
        i += 1
    if code.co_flags & 0x08:
        names.append((code.co_varnames[i], "**"))
    return names


_NOGEN = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


class Recorder:
    """Records the calls into the target functions (see the module docstring)."""

    def __init__(self, targets, out, package=(), tests=(), reach=None):
        self.targets = {f: frozenset(q) for f, q in targets.items()}
        self.reach = {f: tuple(q) for f, q in (reach or {}).items()}
        self.reaching = {}  # code object -> whether it is changed code (see reaches)
        self.active = True  # whether the test running now is one whose calls are kept
        self.open_entries = 0  # entry calls being recorded now
        self.tried = {}  # entry key -> calls whose arguments were encoded (kept or not)
        self.package, self.tests, self.owned = tuple(package), tuple(tests), {}
        self.out = out
        self.known = {}  # code object -> its key "module:qualname" or None
        self.entries = {}  # code object -> its key when it is the package's (an entry when called from outside)
        self.hits = 0  # calls into a target so far: an entry call is kept only if it reached one
        self.total = 0.0
        self.open = {}  # id(frame) -> (key, names, encoded args, args seen)
        self.counts = {}
        self.seen = set()
        self.spent = {}
        self.lines = []
        self.raised = {}
        self.skipped = {}

    def skip(self, why):
        why = why[:160]
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def key_of(self, frame):
        code = frame.f_code
        k = self.known.get(code, 0)
        if k == 0:
            k = None
            q = self.targets.get(code.co_filename)
            if q and code.co_qualname in q and not code.co_flags & _NOGEN:
                k = f"{frame.f_globals.get('__name__')}:{code.co_qualname}"
            self.known[code] = k
        return k

    def entry_of(self, frame):
        """The key of a call into the package's own code from outside it (a test calling the package), or
        from package code outside every call kept so far (a test helper shipped in the package whose ``self``
        does not encode, calling the package's API), or None. Such a call is kept when it reaches a target."""
        code = frame.f_code
        k = self.entries.get(code, 0)
        if k == 0:
            k = None
            if self.own(code.co_filename) and "<" not in code.co_qualname and not code.co_flags & _NOGEN:
                k = f"{frame.f_globals.get('__name__')}:{code.co_qualname}"
            self.entries[code] = k
        if k is None or self.tried.get(k, 0) >= ENTRY_TRIES:
            return None
        caller = frame.f_back
        if caller is not None and self.own(caller.f_code.co_filename) and self.open_entries:
            return None  # inside a kept call into the package: its behaviour is that call's
        return k

    def own(self, filename):
        """Whether a file is the package's own source (not a test file inside it)."""
        o = self.owned.get(filename)
        if o is None:
            o = self.owned[filename] = filename.startswith(self.package) and not filename.startswith(self.tests)
        return o

    def enter(self, frame, entry=None):
        key = entry or self.key_of(frame)
        if key is None or self.counts.get(key, 0) >= CAP or self.spent.get(key, 0.0) > ENCODE_BUDGET:
            return False
        if entry is not None and self.total > TOTAL_BUDGET or not self.active:
            return False
        if entry is not None:
            self.tried[key] = self.tried.get(key, 0) + 1
        t0 = time.perf_counter()
        try:
            names = _param_names(frame.f_code)
            loc = frame.f_locals
            values = {n: loc[n] for n, _ in names}
            args = {n: encode(v) for n, v in values.items()}
            blob = _dumps(args)
        except (Unencodable, KeyError, RecursionError) as e:
            self.charge(key, t0)
            self.skip(f"{'entry ' if entry else ''}{key} arguments: {type(e).__name__}: {e}")
            return False
        self.charge(key, t0)
        if (key, blob) in self.seen:
            return False
        self.open[id(frame)] = (key, names, args, blob, values, None if entry is None else self.hits)
        self.open_entries += entry is not None
        return True

    def charge(self, key, t0):
        dt = time.perf_counter() - t0
        self.spent[key] = self.spent.get(key, 0.0) + dt
        self.total += dt

    def leave(self, frame, returned, raised):
        rec = self.open.pop(id(frame), None)
        if rec is None:
            return
        key, names, args, blob, values, hits = rec
        self.open_entries -= hits is not None
        if hits is not None and self.hits == hits:  # an entry call that never reached the changed code
            return
        t0 = time.perf_counter()
        try:
            after = {}
            for n, _ in names:
                v = values[n]
                if type(v) not in (int, float, str, bytes, bool, type(None), tuple, frozenset, complex):
                    if _dumps(encode(v)) != _dumps(args[n]):
                        after[n] = v
            line = outcome_line(returned, raised, after)
        except (Unencodable, RecursionError) as e:
            line = None
            self.skip(f"{key} outcome: {type(e).__name__}: {e}")
        self.charge(key, t0)
        if line is None or len(blob) + len(line) > MAX_BYTES or self.counts.get(key, 0) >= CAP:
            return
        self.seen.add((key, blob))
        self.counts[key] = self.counts.get(key, 0) + 1
        module, qualname = key.split(":", 1)
        self.lines.append(_dumps({"m": module, "q": qualname, "n": [[n, k] for n, k in names], "args": args,
                                  "after": sorted(after), "out": line}))

    # CPython 3.11: sys.settrace, with a local tracer only on the target frames and no line events.
    def trace(self, frame, event, arg):
        if event != "call" or not self.start_frame(frame):
            return None
        frame.f_trace_lines = False
        return self.local

    def reaches(self, code):
        """Whether ``code`` is changed code (``$FROG_ORACLE_REACH``: qualnames, a nested function's under its
        enclosing one's, or ``"*"`` for a whole file whose import-time code changed)."""
        r = self.reaching.get(code)
        if r is None:
            names = self.reach.get(code.co_filename, ())
            q = code.co_qualname
            r = self.reaching[code] = "*" in names or any(q == n or q.startswith(n + ".") for n in names)
        return r

    def start_frame(self, frame):
        """Whether a call is recorded (a target's, or an entry's): both paths of :meth:`start` use it."""
        if self.key_of(frame) is not None:
            self.hits += 1
            return self.enter(frame)
        if self.reach and self.reaches(frame.f_code):
            self.hits += 1
        entry = self.entry_of(frame) if self.package else None
        return entry is not None and self.enter(frame, entry)

    def local(self, frame, event, arg):
        if event == "exception":
            self.raised[id(frame)] = arg[0]
        elif event == "return":
            raised = self.raised.pop(id(frame), None)
            code = frame.f_code.co_code
            # A frame left by an exception reports "return" with None at the raising instruction.
            if frame.f_lasti < len(code) and code[frame.f_lasti] == _RETURN_VALUE:
                raised = None
            elif raised is None:
                raised = BaseException
            self.leave(frame, None if raised is not None else arg, raised)
        return self.local

    def start(self, active=True):
        self.active = active
        if hasattr(sys, "monitoring"):
            self._start_monitoring()
        if not active:
            self.set_active(False)
        elif not hasattr(sys, "monitoring"):
            sys.settrace(self.trace)

    def set_active(self, on):
        """Keep calls (and pay for the hook) only while a test whose calls count runs: the others run at full
        speed, so a timing test among them passes as it does in a grade."""
        self.active = on
        if hasattr(sys, "monitoring"):
            ev = sys.monitoring.events
            sys.monitoring.set_events(self._tool, ev.PY_START | ev.PY_UNWIND if on else 0)
        else:
            sys.settrace(self.trace if on else None)

    def _start_monitoring(self):
        m = sys.monitoring
        tool = m.PROFILER_ID
        m.use_tool_id(tool, "frog_oracle")
        ev = m.events
        m.set_events(tool, ev.PY_START | ev.PY_UNWIND)  # PY_UNWIND can only be a global event

        def start(code, offset):
            frame = sys._getframe(1)
            if self.key_of(frame) is None and not (self.package and self.own(code.co_filename)):
                return m.DISABLE  # neither changed nor the package's: never again
            if self.start_frame(frame):
                m.set_local_events(tool, code, ev.PY_RETURN)

        def ret(code, offset, value):
            self.leave(sys._getframe(1), value, None)

        def unwind(code, offset, exc):
            frame = sys._getframe(1)
            if id(frame) in self.open:
                self.leave(frame, None, type(exc))

        m.register_callback(tool, ev.PY_START, start)
        m.register_callback(tool, ev.PY_RETURN, ret)
        m.register_callback(tool, ev.PY_UNWIND, unwind)
        self._tool = tool

    def stop(self):
        if hasattr(sys, "monitoring") and getattr(self, "_tool", None) is not None:
            sys.monitoring.set_events(self._tool, 0)
            sys.monitoring.free_tool_id(self._tool)
        else:
            sys.settrace(None)
        with open(self.out, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in self.lines))
        with open(self.out + ".skipped", "w", encoding="utf-8") as f:
            json.dump(self.skipped, f)


try:
    import dis as _dis

    _RETURN_VALUE = _dis.opmap["RETURN_VALUE"]
except Exception:  # pragma: no cover
    _RETURN_VALUE = 83

_recorder = None
_only = None


def pytest_configure(config):
    global _recorder
    global _only
    targets, out = os.environ.get("FROG_ORACLE_TARGETS"), os.environ.get("FROG_ORACLE_OUT")
    only = os.environ.get("FROG_ORACLE_ONLY")
    _only = frozenset(json.loads(only)) if only else None
    if targets and out and _recorder is None:
        global TEST_PREFIXES, PACKAGE_PREFIXES
        TEST_PREFIXES = tuple(json.loads(os.environ.get("FROG_ORACLE_TESTS", "[]")))
        PACKAGE_PREFIXES = tuple(json.loads(os.environ.get("FROG_ORACLE_PACKAGE", "[]")))
        _recorder = Recorder(json.loads(targets), out, json.loads(os.environ.get("FROG_ORACLE_PACKAGE", "[]")),
                             json.loads(os.environ.get("FROG_ORACLE_TESTS", "[]")),
                             json.loads(os.environ.get("FROG_ORACLE_REACH", "{}")))
        _recorder.start(active=_only is None)


if pytest is not None:  # the recorder's side (the replay runs without pytest)
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        """Keep only the calls of the tests ``$FROG_ORACLE_ONLY`` names (the FAIL_TO_PASS tests; the others run
        as grading runs them, so that no test depends on an order that grading would not have)."""
        if _recorder is not None and _only is not None:
            _recorder.set_active(item.nodeid in _only)
        yield
        if _recorder is not None and _only is not None:
            _recorder.set_active(False)


def pytest_unconfigure(config):
    global _recorder
    if _recorder is not None:
        _recorder.stop()
        _recorder = None


# --- replay -------------------------------------------------------------------------------------------

def _resolve(module, qualname):
    """The plain function whose code is ``module``'s ``qualname`` (through classes, static and class
    methods, properties and ``__wrapped__`` chains), or a string saying why there is none."""
    import importlib

    try:
        obj = importlib.import_module(module)
    except BaseException as e:  # the package may not import at all
        return f"import {module}: {type(e).__name__}"
    for part in qualname.split("."):
        d = getattr(obj, "__dict__", None)
        if not isinstance(d, dict) and not hasattr(d, "get"):
            return f"{qualname}: {part} is not reachable"
        if part.startswith("__") and not part.endswith("__") and isinstance(obj, type):
            part = f"_{obj.__name__.lstrip('_')}{part}"  # a private name, as the class body mangled it
        if part not in d:
            return f"{qualname}: no {part}"
        obj = d[part]
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        elif isinstance(obj, property):
            obj = obj.fget
    for _ in range(20):
        code = getattr(obj, "__code__", None)
        if code is not None and getattr(code, "co_qualname", qualname) == qualname and callable(obj):
            return obj
        obj = getattr(obj, "__wrapped__", None)
        if obj is None:
            break
    return f"{qualname}: not a function with that name"


def _alarm(signum, frame):
    raise TimeoutError("frog_oracle: the call ran past its limit")


def pin_machine():
    """Give the replay's process one machine identity wherever it runs: the kernel's release and version, the
    host's name and the CPU count (a recorded ``requests.help.info()`` held the recording machine's kernel release,
    and a gold fix failed its own oracle on another machine). A call whose recorded outcome depended on them
    differs at settling (the recording run sees the real machine) and is dropped."""
    import platform

    real = os.uname()
    fixed = os.uname_result((real.sysname, "sandbox", "0", "#0", real.machine))
    os.uname = lambda: fixed
    os.cpu_count = lambda: 1
    if hasattr(os, "sched_getaffinity"):
        os.sched_getaffinity = lambda pid: {0}
    if hasattr(os, "process_cpu_count"):
        os.process_cpu_count = lambda: 1
    platform._uname_cache = None
    getattr(platform, "_platform_cache", {}).clear()


def shift_clock(seconds):
    """Move the process's wall clock ``seconds`` ahead: ``time``'s clock functions and ``datetime``'s ``now``,
    ``utcnow`` and ``today`` (its ``date`` and ``datetime`` replaced by look-alikes whose constructors make the
    real objects, that ``isinstance`` sees through and that pickle to the very same bytes). Settling replays the
    calls once under a moved clock: a call whose outcome depends on the date or time (a recorded ``now``
    compared with a fixed date) differs there and is dropped, instead of failing the gold code on a later
    day. Only settling moves the clock; a grade's replay never does. What the look-alikes cannot hide, an exact
    type check (``type(d) is datetime.datetime``), only drops a call more, never keeps one wrongly."""
    import copyreg
    import datetime as _dt

    moved = {name: getattr(time, name) for name in ("time", "time_ns", "localtime", "gmtime", "ctime", "asctime",
                                                    "strftime")}
    time.time = lambda: moved["time"]() + seconds
    time.time_ns = lambda: moved["time_ns"]() + int(seconds * 10**9)
    time.localtime = lambda secs=None: moved["localtime"](time.time() if secs is None else secs)
    time.gmtime = lambda secs=None: moved["gmtime"](time.time() if secs is None else secs)
    time.ctime = lambda secs=None: moved["ctime"](time.time() if secs is None else secs)
    time.asctime = lambda t=None: moved["asctime"](time.localtime() if t is None else t)
    time.strftime = lambda fmt, t=None: moved["strftime"](fmt, time.localtime() if t is None else t)
    real_date, real_datetime = _dt.date, _dt.datetime

    class SeesReal(type):  # isinstance() and issubclass() with a look-alike answer for its real class
        def __instancecheck__(cls, obj):
            return isinstance(obj, cls.__dict__["real"]) if "real" in cls.__dict__ else \
                type.__instancecheck__(cls, obj)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, cls.__dict__["real"]) if "real" in cls.__dict__ else \
                type.__subclasscheck__(cls, sub)

    def look_alike(real, **clock):
        """A class that passes for ``real`` (its module and name, ``isinstance``, pickles of real objects naming it)
        and reads the moved clock: its constructor makes a plain real object, while a package's own subclass
        (tomlkit's DateTime) stays a subclass, with real instances of itself and the moved clock."""
        def __new__(cls, *args, **kw):
            return real(*args, **kw) if cls is look else real.__new__(cls, *args, **kw)

        look = SeesReal(real.__name__, (real,), {"__slots__": (), "real": real, "__new__": __new__,
                                                 "today": classmethod(lambda cls: cls.fromtimestamp(time.time())),
                                                 **clock})
        # the real class's own name strings (one module string shared by every datetime type, as pickle's memo
        # sees it), and pickles of real objects that name the look-alike: the same bytes as without the move
        look.__module__, look.__qualname__ = real.__module__, real.__qualname__
        copyreg.pickle(real, lambda o: (look, o.__reduce__()[1]))
        return look

    date = look_alike(real_date)
    datetime = look_alike(
        real_datetime, now=classmethod(lambda cls, tz=None: cls.fromtimestamp(time.time(), tz)),
        utcnow=classmethod(lambda cls: cls.fromtimestamp(time.time(), _dt.timezone.utc).replace(tzinfo=None)))
    _dt.date, _dt.datetime = date, datetime


def replay(calls_path, out_path):
    """Replay every call listed in ``calls_path`` (see the module docstring), one outcome line each, on the
    machine identity of :func:`pin_machine` (and, settling, a clock moved by ``$FROG_ORACLE_CLOCK_SHIFT``
    seconds: :func:`shift_clock`)."""
    pin_machine()
    shift = float(os.environ.get("FROG_ORACLE_CLOCK_SHIFT") or 0)
    if shift:
        shift_clock(shift)
    signal.signal(signal.SIGALRM, _alarm)
    out = open(out_path, "w", encoding="utf-8")
    with open(calls_path, encoding="utf-8") as f:
        calls = [json.loads(line) for line in f if line.strip()]
    for c in calls:
        out.write(_replay_one(c) + "\n")
        out.flush()
    out.close()


def _replay_one(c):
    fn = _resolve(c["m"], c["q"])
    if isinstance(fn, str):
        return _dumps({"e": "resolve: " + fn})
    if [n for n, _ in _param_names(fn.__code__)] != [n for n, _ in c["n"]]:
        return _dumps({"e": "resolve: the parameters differ"})
    try:
        values = {n: decode(v) for n, v in c["args"].items()}
    except BaseException as e:
        return _dumps({"e": f"decode: {type(e).__name__}"})
    pos, kw = [], {}
    for n, kind in c["n"]:
        if kind == "p":
            pos.append(values[n])
        elif kind == "*":
            pos.extend(values[n])
        elif kind == "k":
            kw[n] = values[n]
        else:
            kw.update(values[n])
    returned, raised = None, None
    signal.alarm(CALL_TIMEOUT)
    try:
        returned = fn(*pos, **kw)
    except BaseException as e:
        raised = type(e)
    finally:
        signal.alarm(0)
    try:
        return outcome_line(returned, raised, {n: values[n] for n in c["after"]})
    except BaseException as e:
        return _dumps({"e": f"encode: {type(e).__name__}"})


if __name__ == "__main__":
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    replay(sys.argv[1], sys.argv[2])
