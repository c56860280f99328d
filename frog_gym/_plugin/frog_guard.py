"""The guard: an audit hook (PEP 578) that keeps code under test from reading the tests it is graded by, from
starting a process, and from reaching the report vault through introspection.

Part of the report plugin (``frog_report``, which loads it from this folder, never through ``sys.path``, and
keeps it out of ``sys.modules``). :func:`install` runs while ``frog_report`` is imported, before any code under
test: it binds everything the hook and the process-starter wrapper use (tables, helpers, builtins, exception
classes) as closure cells, so that nothing of theirs is looked up in this module's globals (code under test can
reach them through any function's ``__globals__``) once installed. It relies on the standard library alone, and on
the list of findings ``frog_report`` hands it (the report's ``"guard"`` of an unsigned run; a graded run's vault
keeps its own copy through the ``frog.vault.flag`` event). What it refuses and why: ``frog_report``'s docstring.
"""

import os
import sys

_GUARDED_EVENTS = frozenset((
    "open", "os.symlink", "os.link", "ctypes.dlsym", "ctypes.cdata", "ctypes.string_at", "ctypes.wstring_at",
    # every way the standard library starts a process (its one unaudited C call is wrapped: _guard_spawns)
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    # what would reach the wrapped call's original, or run code where the hook is not installed
    "import", "object.__getattr__", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys._current_frames", "sys.settrace", "sys.setprofile", "cpython.PyInterpreterState_New",
    # how the guard reaches the processes a test starts (sitecustomize.py)
    "os.putenv", "os.unsetenv",
    # an audit hook of the package's would run inside the report vault (which raises events itself)
    "sys.addaudithook", "frog.vault.open",
    # code run as a test module (pytest's import hook execs each one's code)
    "exec"))
_INHERITED = frozenset(("FROG_GUARD_ROOT", "FROG_SELECT", "PYTHONPATH", "PYTHONHOME"))
_INTROSPECTION = {
    "gc.get_objects": "searched the garbage collector's objects", "gc.get_referrers": "searched the garbage "
    "collector's referrers", "gc.get_referents": "searched the garbage collector's referents",
    "sys._current_frames": "read the frames of every thread", "sys.settrace": "set a trace function",
    "sys.setprofile": "set a profile function", "cpython.PyInterpreterState_New": "started a subinterpreter "
    "(it runs without the guard)", "ctypes.cdata": "read memory through ctypes",
    "ctypes.string_at": "read memory through ctypes", "ctypes.wstring_at": "read memory through ctypes"}
_MEMORY = frozenset(("mem", "maps", "smaps", "smaps_rollup", "pagemap", "numa_maps"))
"""The files of ``/proc/<pid>`` (``self``, ``thread-self``, ``task/<tid>``) that read or write a process's memory or say
where it lies: the key and every outcome are in this process's memory."""
_NOT_FOR_IT = {"read": "the tests it is graded by are not for it to read",
               "tests": "the tests it is graded by are pytest's to run, as they are",
               "memory": "the test process's memory is not for it to read or write",
               "start": "code under test may not start a process at grading, nor reach the guard"}


def _package_dir(name):
    """The folder (with a final ``/``) of the package ``name`` that ``import`` would take now, found without
    importing it ("\0" where there is none): a process a test starts has not imported pytest, and importing it
    there would cost each such process a tenth of a second for nothing."""
    module = sys.modules.get(name)
    if module is not None:
        return os.path.dirname(module.__file__) + "/"
    for entry in sys.path:
        folder = os.path.join(entry or os.getcwd(), name)
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return folder + "/"
    return "\0"


def test_code(files, parent_code=None, canary_code=None, parent_keys=None):
    """What pytest runs of each test file it runs (``files``, relative to the working folder) and of each
    ``conftest.py`` on the way to one: {absolute path: frozenset of the keys (:func:`code_keys`) of its code and all
    code nested in it}, read-only. Made before any code under test runs: the asserts rewritten by pytest's own
    function, as its import hook rewrites them, or taken from the grading server's parent's code (``parent_code``:
    path -> (source bytes, code); ``canary_code``: (path, source bytes, code) of the canaries appended to their
    file) where the file's bytes are what the parent made it of, with the keys the parent made of that very code
    (``parent_keys``: id -> (code, keys), :func:`code_keys` being a function of the code alone). A file that pytest
    does not rewrite (``PYTEST_DONT_REWRITE``) is left out (the import system's compilation is read where needed). Returns that, and
    {absolute path: (source bytes, code)} of the code made here (pytest then runs that code: :func:`use_test_code`)."""
    import types

    root = os.getcwd()
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    rewrite_asserts = getattr(rewrite, "rewrite_asserts", None)
    parent_code = parent_code if type(parent_code) is dict else {}
    parent_keys = parent_keys if type(parent_keys) is dict else {}
    canary_code = canary_code if type(canary_code) is tuple and len(canary_code) == 3 else None
    paths = set()
    for rel in files:
        parts = str(rel).strip("/").split("/")
        paths.update(os.path.join(root, *parts[:i], "conftest.py") for i in range(len(parts)))
        paths.add(os.path.join(root, *parts))
    out, made_here = {}, {}
    for path in sorted(paths):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        made = parent_code.get(path)
        codes = None
        if type(made) is tuple and len(made) == 2 and type(made[1]) is types.CodeType:
            if made[0] == data:
                codes = [made[1]]
            elif canary_code is not None and canary_code[0] == path and data == made[0] + canary_code[1] and \
                    type(canary_code[2]) is types.CodeType:
                codes = [made[1], canary_code[2]]
        if codes is None and rewrite_asserts is not None and b"PYTEST_DONT_REWRITE" not in data:
            try:
                tree = compile(data, path, "exec", 0x400, True)  # ast.PyCF_ONLY_AST
                rewrite_asserts(tree, data, path, None)
                codes = [compile(tree, path, "exec", 0, True)]
                made_here[path] = (data, codes[0])
            except (ValueError, SyntaxError, TypeError):
                codes = None
        if codes is not None:
            keys = set()
            for c in codes:  # (code_keys of several code objects is the union of each one's)
                hit = parent_keys.get(id(c))
                keys |= hit[1] if type(hit) is tuple and len(hit) == 2 and hit[0] is c and \
                    type(hit[1]) is frozenset else code_keys([c])
            out[path] = frozenset(keys) - {None}  # (a key of None is never pytest's)
    return types.MappingProxyType(out), made_here


def use_test_code(made):
    """Let pytest's import hook take the code :func:`test_code` made of a test module or conftest (``made``: path ->
    (source bytes, code)) where the file's bytes are still those, instead of rewriting it a second time (what a warm
    grading server's child does with its parent's code: ``frog_server._use_code``). pytest makes the same code of
    the same bytes: its asserts rewritten without the run's config, taken only where the config would not rewrite
    otherwise (no assertion pass hook)."""
    from _pytest.assertion import rewrite

    own = rewrite._rewrite_test

    def _rewrite_test(fn, config, _made=made, _own=own, _stat=os.stat, _str=str):
        hit = _made.get(_str(fn))
        if hit is not None and (config is None or not config.getini("enable_assertion_pass_hook")):
            st = _stat(fn)
            if fn.read_bytes() == hit[0]:
                return st, hit[1]
        return _own(fn, config)

    rewrite._rewrite_test = _rewrite_test


def code_keys(todo, nested=True, _type=type, _tuple=tuple, _frozenset=frozenset, _list=list, _set=set, _str=str,
              _all=all, _code=type(_package_dir.__code__), _ValueError=ValueError,
              _exact=(str, bytes, int, float, complex, bool, type(None), type(Ellipsis))):
    """frozenset of the keys of the code objects ``todo`` (and, with ``nested``, of all code nested in them). A code
    object's key is what makes it behave as it does, by value: its name, first line, bytecode, flags, the names it
    loads and its constants (a nested code object by its name and first line: it has a key of its own); None where a
    name or a constant is of a type of the package's (hashing it could run the package's code). Two code objects with
    one key run the same instructions on the same values. Self-contained (no global is read when it runs), so that a
    copy of it (``FunctionType(code_keys.__code__, ...)``) made before any code under test runs is out of its reach."""

    def value(k):
        t = _type(k)
        if t is _code:
            name = k.co_name
            return _code, name if _type(name) is _str else None, k.co_firstlineno
        if t is _tuple:
            return _tuple, _tuple([value(x) for x in k])
        if t is _frozenset:
            return _frozenset, _frozenset([value(x) for x in k])
        for e in _exact:
            if t is e:
                return t, k
        raise _ValueError

    found, todo = _set(), _list(todo)
    while todo:
        c = todo.pop()
        name, names = c.co_name, c.co_names
        try:
            if _type(name) is not _str or _type(names) is not _tuple or not _all([_type(n) is _str for n in names]):
                raise _ValueError
            found.add((name, c.co_firstlineno, c.co_code, c.co_flags, names, value(c.co_consts)))
        except _ValueError:
            found.add(None)
        if nested:
            todo.extend([k for k in c.co_consts if _type(k) is _code])
    return _frozenset(found)


def install(config, found, pytests_code=None, holders=None):
    """Install the guard for ``config`` (the selection's ``"guard"``); each refusal is appended to ``found``.
    ``pytests_code``: :func:`test_code`'s, for the test process (a process a test starts compiles what it needs);
    ``holders``: :func:`spawn_holders`' (a grading server's parent's), or None."""
    import inspect
    import pty
    import traceback
    import warnings
    import weakref

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
    # the package's own traceback utilities (boltons' tbutils): a read of a source line there is their caller's
    own_readers = frozenset(str(t).strip("/") for t in config.get("readers", ()))
    import platform

    # the standard library's own reads of a source line, and platform's fixed commands (`uname -p`, which
    # boltons' environment profile asks for through platform.processor())
    mediators = frozenset((platform.__file__,))
    # what reads a caller's source line for it (through linecache, which, called directly, reads whatever file
    # it is given: it mediates nothing itself)
    readers = frozenset((traceback.__file__, inspect.__file__, warnings.__file__))
    # a callback the interpreter runs when an object dies runs on top of whatever frame let it die (a test's):
    # it counts as the package's, which armed it
    callbacks = frozenset((weakref.finalize.__call__.__code__,))
    proc_dev = os.stat("/proc").st_dev if os.path.isdir("/proc") else None
    vault_open = []
    # the standard library's fork-then-exec helpers: the exec happens in the child, where a refusal is not
    # recorded, so the fork is refused when they make it (a plain os.fork stays allowed: the child keeps the hook)
    spawners = frozenset((os._spawnvef.__code__, pty.spawn.__code__))
    pytest_dir = _package_dir("_pytest")
    # The two readers of cached bytecode, and the trees whose bytecode they may read: pytest's (a rewritten test
    # module's, ``_read_pyc``) and the import system's (a source module's, ``SourceLoader.get_code`` through
    # ``FileLoader.get_data``; a sourceless module's read is no cache and stays allowed). A graded run writes no
    # bytecode, so the only bytecode there is the interpreter's and the environment's, on read-only mounts; any other
    # was planted (``sys.pycache_prefix`` pointed at a folder the package writes, and a file carrying a source's size
    # and time): code of the package's under a test file's or a library's name. Refused quietly, as a missing file:
    # the loader compiles the source, as the run would have.
    import _frozen_importlib_external as _external

    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    read_pyc = getattr(getattr(rewrite, "_read_pyc", None), "__code__", None)
    get_data, get_code = _external.FileLoader.get_data.__code__, _external.SourceLoader.get_code.__code__
    realpath = os.path.realpath
    bytecode_trees = tuple(sorted({realpath(p).rstrip("/") + "/" for p in (sys.base_prefix, sys.base_exec_prefix,
                                                                            sys.prefix, sys.exec_prefix) if p}))
    FileNotFoundError_ = FileNotFoundError
    # A frame whose code names a test file pytest runs (``pytests_code``: its conftests too) counts as the tests' own
    # only where that code is what pytest runs of the file (see tests_own). Any other code under such a file's name (``compile(src, "/testbed/test_x.py", "exec")``, or
    # hypothesis's @given wrapper, compiled from a string and given its test's file and line) is no one's: the frames
    # further out decide, so the package's frame that called it is found. (Any other file of the test folders is
    # taken at its word, as before: see the README's residuals.)
    import types

    pytests_code = pytests_code if type(pytests_code) is types.MappingProxyType else types.MappingProxyType({})
    # a copy of code_keys that only this closure holds: the module's is one __globals__ away from the package
    compiled_plain, compile_, open_, frozenset_ = {}, compile, open, frozenset
    code_keys_ = types.FunctionType(code_keys.__code__, {}, "code_keys", code_keys.__defaults__)
    ident, SyntaxError_ = object.__hash__, SyntaxError  # (object.__hash__: an identity without a builtins.id event)
    import _thread

    get_ident, own_reads = _thread.get_ident, []
    code_type_, id_of = type(_package_dir.__code__), object.__hash__
    made_names = {id_of(keys): path.removeprefix(root) for path, keys in pytests_code.items()}
    judged_test_code = {}  # id -> (code, verdict): held, so that ids stay theirs

    def plain_code(fn):
        """What the import system compiles of the file ``fn``: its keys (:func:`code_keys`), read once."""
        keys = compiled_plain.get(fn)
        if keys is None:
            own_reads.append(get_ident())  # this thread's own read of the file: no event of it is judged
            try:
                with open_(fn, "rb") as src:
                    keys = code_keys_([compile_(src.read(), fn, "exec", 0, True)]) - frozenset_((None,))
            except (OSError_, ValueError_, SyntaxError_):
                keys = frozenset_()
            finally:
                own_reads.pop()
            compiled_plain[fn] = keys
        return keys

    def tests_own(f, frame_code, fn):
        """Whether the frame ``f`` (of ``frame_code``, which names the test file ``fn``) is that file's own: code
        pytest runs of it, or that the import system compiles of it, by value (:func:`code_keys`)."""
        made = pytests_code.get(fn)
        if made is None:
            return True
        i = ident(frame_code)
        hit = judged_test_code.get(i)
        if hit is not None and hit[0] is frame_code:
            return hit[1]
        key = list_(code_keys_((frame_code,), False))[0]  # by value: its constants and names too
        verdict = key is not None and (key in made or key in plain_code(fn))
        judged_test_code[i] = (frame_code, verdict)
        return verdict
    getframe, fsdecode, basename, hits, audit = sys._getframe, os.fsdecode, os.path.basename, found, sys.audit
    # Everything the hook reads is bound here, never looked up in this module's globals when it runs: the module is
    # one ``__globals__`` away, and a package that rebinds its event list, a builtin or ``os`` would switch the
    # guard off (the lookups are faster too).
    dirname = os.path.dirname
    guarded, introspection, memory, inherited, not_for_it = _GUARDED_EVENTS, _INTROSPECTION, _MEMORY, _INHERITED, \
        _NOT_FOR_IT
    str_, bytes_, list_, tuple_, any_, len_, range_ = str, bytes, list, tuple, any, len, range
    PermissionError_, RuntimeError_, OSError_, ValueError_, TypeError_ = (PermissionError, RuntimeError, OSError,
                                                                          ValueError, TypeError)

    def plugin_file(fn):
        """A pytest plugin's own module outside the repository (pytest-timeout's stack dump at a timeout runs on
        top of the test's frames, the package's included)."""
        name = basename(fn)
        return not fn.startswith(root) and (name.startswith("pytest_") or
                                            basename(dirname(fn)).startswith("pytest_"))

    def under(rel, roots):
        return any_(r in ("", ".") or rel == r or rel.startswith(r + "/") for r in roots)

    def from_package(f, reading=False):
        """Whether the innermost frame of the repository from ``f`` outwards is the package's (not a test's),
        reached without pytest's own code in between, nor (``reading``) the standard library's readers of a
        caller's source line (a traceback, ``warnings``, ``inspect``; ``linecache`` called directly is none) (pytest
        reads the tests; a package pytest itself runs on, like pluggy, has frames further out on every stack).
        A stack with neither pytest's frames nor the repository's (a thread whose target is a builtin, like
        ``Thread(target=os.system)``, a callback the package left behind) counts as the package's: pytest's
        frames are at the bottom of every stack it runs a test on."""
        mediated = False
        while f is not None:
            frame_code = f.f_code
            if any_(frame_code is c for c in callbacks):  # by identity: hashing a code object hashes its names
                return True
            fn = frame_code.co_filename
            fn = fn if type_(fn) is str_ else "".join((fn,))  # a str subclass's characters, never its methods
            if fn.startswith(pytest_dir) or plugin_file(fn):
                return False
            if fn.startswith(root):
                rel = fn[len_(root):]
                if rel in files or under(rel, tests):
                    if tests_own(f, frame_code, fn):
                        return False
                    # code that only claims a test file's name (hypothesis's @given wrapper, compiled from a string,
                    # or the package's) is no one's: the frames further out decide
                if reading and rel in own_readers:
                    mediated = True
                elif under(rel, code):
                    return not mediated
            elif fn in mediators or reading and fn in readers:
                mediated = True
            f = f.f_back
        return not mediated

    type_, OPAQUE, issubclass_, slice_ = type, object(), issubclass, slice
    mro_of, dict_of, name_of = type.__dict__["__mro__"].__get__, type.__dict__["__dict__"].__get__, \
        type.__dict__["__name__"].__get__
    bytes_copy = bytes.__getitem__  # a bytes subclass's own bytes, by its C slot (not its __buffer__ or __bytes__)
    import pathlib
    stdlib_paths = (pathlib.PurePosixPath, pathlib.PosixPath)

    def fspath_class(t):
        """Whether the class ``t`` has an ``__fspath__`` in its MRO's dictionaries (read through C descriptors: no
        metaclass or ``__class__`` of the package's is asked, as ``isinstance`` would ask)."""
        for base in mro_of(t):
            for k, _ in dict_of(base).items():
                if type_(k) is str_ and k == "__fspath__":
                    return True
        return False

    def text(v):
        """The path ``v`` names, as the C code that opens it reads it, running no method of the package's: a
        ``str`` or ``bytes`` subclass by its characters (it may override ``startswith`` or ``rstrip`` to pass
        for another name here), a path of pathlib's own classes as pathlib reads it (nothing of the package's runs
        between the call's reading of it and this event's); any other path-like is ``OPAQUE``: its ``__fspath__``,
        or the ``__str__`` of a pathlib class's subclass, is the package's, and may name another file here than
        the call opened. Types are told apart by identity and MRO, never by ``isinstance`` (which asks the object's
        ``__class__``)."""
        t = type_(v)
        if t is stdlib_paths[0] or t is stdlib_paths[1]:
            v = fsdecode(v)
        elif t is not str_ and t is not bytes_:
            if issubclass_(t, str_):
                v = "".join((v,))
            elif issubclass_(t, bytes_):
                v = bytes_copy(v, slice_(None))
            elif t is list_ or t is tuple_:
                return " ".join(text(x) for x in v)
            elif fspath_class(t):
                return OPAQUE
            else:
                return ""
        try:
            return fsdecode(v)
        except (TypeError_, ValueError_):
            return ""

    def refusal(why, kind):
        message = f"code under test {why} ({not_for_it[kind]})"
        if message not in hits:
            hits.append(message)
        audit("frog.vault.flag", message)  # the vault's copy (a graded run's report), out of the package's reach
        return PermissionError_(message)

    def caller():
        try:
            return getframe(2)
        except ValueError_:  # an event raised with no Python frame below the hook
            return None

    keeper = []

    def hook(event, args):
        if event not in guarded or own_reads and own_reads[-1] == get_ident():
            return
        kind = "start"
        if event == "import":
            # its characters, never its methods
            name = text(args[0]) if args and issubclass_(type_(args[0]), str_) else ""
            if name.rpartition(".")[2] != "_posixsubprocess":
                return
            # refused whoever asks: it is never imported twice unless code removed it from sys.modules, and a
            # fresh copy would hold the unwrapped call for everyone after
            raise refusal("imported _posixsubprocess afresh (it starts processes without an audit event)", kind)
        elif event == "exec":
            # Code naming a test file the run runs (or a conftest on the way) must be code pytest runs of it, whoever
            # runs it: a test module handed to pytest's import hook by a rewrite function swapped in and out, put in
            # a grading server's cache, or a function compiled under a test file's name and run, is the package's.
            code = args[0] if args else None
            if type_(code) is not code_type_:
                return
            fn = code.co_filename
            fn = fn if type_(fn) is str_ else "".join((fn,))
            made = pytests_code.get(fn)
            if made is None:
                return
            keys = code_keys_([code])
            if keys <= made or keys <= plain_code(fn):  # (a test package's __init__.py is imported, not rewritten)
                return
            raise refusal(f"ran code of its own as {made_names.get(id_of(made), 'a test file')}", "tests")
        elif event == "object.__getattr__":
            if not keeper or not args or args[0] is not keeper[0]:
                return
            raise refusal(f"looked into the guard's process starter ({text(args[1:2])})", kind)
        elif event in ("os.fork", "os.forkpty"):
            f = caller()
            for _ in range_(3):
                if f is None or any_(f.f_code is c for c in spawners):
                    break
                f = f.f_back
            if f is None:
                return
            why = "started a process (a fork that execs)"
        elif event == "frog.vault.open":
            vault_open.append(True)
            return
        elif event == "sys.addaudithook":
            if not vault_open:
                return  # the vault's own
            why = "added an audit hook (it would run inside the report vault)"
            if from_package(caller()):
                refusal(why, "start")
            raise RuntimeError_(why)  # a RuntimeError: the hook is not added, and the caller carries on
        elif event in ("os.putenv", "os.unsetenv"):
            key = text(args[0]) if args else ""
            if key not in inherited:
                return
            why = f"changed ${key} (the guard reaches the processes a test starts through it)"
        elif event in introspection:
            why = introspection[event]
        elif event in ("open", "os.symlink", "os.link"):
            what = text(args[0]) if args else ""
            if what is OPAQUE:  # its own __fspath__ names the file: what it says here need not be what is opened
                if from_package(caller(), True):
                    raise refusal(f"{'opened' if event == 'open' else 'linked to'} a path of its own making "
                                  f"({name_of(type_(args[0]))}, a path-like of its own class)", "read")
                return
            last = basename(what.rstrip("/"))
            if last.endswith(".pyc") and event == "open":
                f = caller()
                if f is not None and (f.f_code is read_pyc or f.f_code is get_data and f.f_back is not None and
                                      f.f_back.f_code is get_code) and not realpath(what).startswith(bytecode_trees):
                    raise FileNotFoundError_(2, "a graded run reads no bytecode it did not ship with", what)
            if last in memory:
                # a relative name may hang off a descriptor of /proc/self: refused wherever it would resolve; so is
                # any frame's attempt (a callback the package left would run on a test's frames)
                try:
                    elsewhere = what.startswith("/") and stat(what).st_dev != proc_dev
                except (OSError_, ValueError_):
                    elsewhere = True
                if not elsewhere:
                    raise refusal(f"{'opened' if event == 'open' else 'linked to'} {what}", "memory")
            if last not in names:
                return
            if what.startswith("/"):  # the same name elsewhere (another package's __init__.py) is no test file
                try:
                    st = stat(what)
                    if (st.st_dev, st.st_ino) not in inodes:
                        return
                except (OSError_, ValueError_):
                    pass
            # a relative name counts whatever it resolves to from here: a directory descriptor may be its base
            why, kind = (f"opened {what}" if event == "open" else f"linked to {what}"), "read"
            if from_package(caller(), True):
                raise refusal(why, kind)
            return
        elif event == "ctypes.dlsym":
            why, kind = "called into a C library through ctypes", "read"
        else:
            command = text(args[0] if event == "os.system" else args[2] if event == "os.spawn" else args[1])
            why = f"started a process: {command.strip()[:200]}"
        if from_package(caller()):
            raise refusal(why, kind)

    _guard_spawns(from_package, refusal, keeper, holders)  # first: it imports _posixsubprocess (the hook refuses that)
    sys.addaudithook(hook)


def spawn_holders():
    """Where ``_posixsubprocess.fork_exec`` is held in the modules loaded now: {id of a module's dictionary: (that
    dictionary, its size, the names that hold it)}. Made by a grading server's parent, where no code of a package under
    test ever ran: a child's guard replaces the original under those names in each dictionary still of that size,
    and reads every other dictionary whole (a module loaded since, or one with a name added), instead of reading
    every value of every module (which also copies, in a forked child, every page those values lie on)."""
    import _posixsubprocess

    original, out = _posixsubprocess.fork_exec, {}
    for m in list(sys.modules.values()):
        d = getattr(m, "__dict__", None)
        if type(d) is dict:
            out[id(d)] = (d, len(d), _holding(d, original))
    return out


def _holding(d, value):
    """The names under which the dictionary ``d`` holds ``value`` (by identity)."""
    return tuple(k for k, v in list(d.items()) if v is value)


def _guard_spawns(from_package, refusal, keeper, holders=None):
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
    # bound here, as install() binds the hook's: the generator's frame holds the original, and a builtin rebound in
    # this module's globals would run the package's code on top of it
    type_, list_, tuple_, str_, bytes_, isinstance_, enumerate_ = type, list, tuple, str, bytes, isinstance, enumerate
    BaseException_, GeneratorExit_ = BaseException, GeneratorExit

    def argv(call):  # only exact str and bytes are read: no method of the package's may run below run(), so types
        # are told apart by identity (``in`` a tuple compares with ==, which runs a metaclass's __eq__)
        kind = type_(call[0]) if type_(call) is tuple_ and call else None
        words = call[0] if kind is list_ or kind is tuple_ else ()
        return " ".join(w.decode(errors="replace") if type_(w) is bytes_ else w for w in words
                        if type_(w) is str_ or type_(w) is bytes_)[:200]

    def run():
        reply = None
        while True:
            try:
                call = yield reply
            except GeneratorExit_:
                return
            except BaseException_:  # noqa: BLE001 (thrown in: let out, it would carry this frame with it)
                reply = (refusal("threw into the guard's process starter", "start"), None)
                continue
            # the wrapper's caller, or whoever sends here directly; the wrapper sends a tuple of plain values
            if type_(call) is not tuple_ or from_package(getframe(1)):
                reply = (refusal(f"started a process: {argv(call)}", "start"), None)
                continue
            try:
                reply = (None, original(*call))
            except BaseException_ as e:  # noqa: BLE001 (handed to the caller, without this frame)
                reply = (e.with_traceback(None), None)

    gen = run()
    next(gen)
    send, lock = gen.send, threading.Lock()
    os.register_at_fork(after_in_child=lock._at_fork_reinit)

    def fork_exec(*args):
        # path-likes become bytes here (argv, executables, cwd, environment), so that no __fspath__ of the
        # package's runs below the generator's frame
        args = tuple_([fsencode(x) for x in a] if i in (0, 1, 5) and isinstance_(a, (list_, tuple_))
                      else fsencode(a) if i == 4 and a is not None else a for i, a in enumerate_(args))
        with lock:
            error, pid = send(args)
        if error is not None:
            raise error
        return pid

    keeper.append(gen)
    holders = holders if type(holders) is dict else {}
    for m in list(sys.modules.values()):
        d = getattr(m, "__dict__", None)
        if isinstance(d, dict):
            hit = holders.get(id(d))
            if hit is not None and type(hit) is tuple and hit[0] is d and hit[1] == len(d):
                names = [k for k in hit[2] if d.get(k) is original]  # (exact str: the parent's names)
            else:
                names = _holding(d, original)
            for k in names:
                d[k] = fork_exec
    subprocess._fork_exec = fork_exec

