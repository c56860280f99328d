"""The parent of a grading fork server; runs inside the bubblewrap sandbox (see frog_gym.grading.server).

It imports pytest and the venv's test dependencies (the preload list, each import checked: nothing may come
from ``/testbed``, nor be a module the package under test owns) with ``/testbed`` off ``sys.path`` and the
working directory at ``/``, so nothing the agent controls ever runs in this process. Then, per request
(one JSON line on stdin), it checks that the protected test paths are still read-only mounts, forks a
child that becomes what ``python -m pytest`` in ``/testbed`` would be (environment, ``sys.path``,
working directory, session, stdio to ``/frog/out/log.txt``) and runs pytest there, waits for it (killing
at the deadline), then kills every other process of the sandbox, empties ``/tmp``, ``/dev/shm`` and
System V IPC, and only then replies with the exit status. So no process or file of one grade outlives it,
and the next child is forked from a process the agent's code never ran in. The parent is not dumpable,
so a child can neither ptrace it nor write its memory. Its objects are frozen out of the garbage
collector (``gc.freeze``), so a child's collections neither scan nor copy them.

pytest rewrites the asserts of every test module it imports, and Python compiles every module of the package
under test, and nothing keeps the result between cold runs (bytecode writing is off, the test folders are
read-only), so each run parses and compiles them all again: most of a large suite's collection time. The
parent does it once per file version: before forking, it rewrites the request's test files under the
read-only test mounts and compiles the package's modules (source in, code object out: nothing is executed,
no symlink is followed out of ``/testbed``, and no process of a grade is alive then), keeping each code
object with the exact bytes it was made from. The child's import system takes that code only for a file
whose bytes are still exactly those, and makes anything else itself, as cold. At the first request it also
fills hypothesis's Unicode tables (:func:`_warm_tables`), from hypothesis's own cache files where the host's
store keeps them, so that no child walks every code point again.
"""

import ctypes
import gc
import importlib
import json
import os
import sys
import time

from frog_fork import code_ahead, compiled as _compiled, lines as _lines, say as _say
from frog_fork import _name, fork_run, kept as _kept, source as _source, stdio_to, use_compiled

TESTBED = "/testbed"
PLUGIN = "/frog/plugin"
_PATH = list(sys.path)
sys.path[:] = [p for p in sys.path[1:] if p != TESTBED and not p.startswith(TESTBED + "/")]
_ENV = dict(os.environ)
os.chdir("/")
_PR_SET_DUMPABLE = 4
_PRELOADED_PLUGINS = set()
_REWRITE_KIND = "rewrite"
"""How test modules are made, with pytest's version (set once pytest is imported): part of the name kept code has."""
_REWRITTEN = {}
"""Test modules with their asserts rewritten: absolute path -> (source bytes, code), see the module docstring."""
_COMPILED = {}
"""The package's modules compiled: absolute path -> (source bytes, code), see the module docstring."""
_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _foreign(name, owned):
    mod = sys.modules.get(name)
    f = str(getattr(mod, "__file__", "") or "")
    return name.split(".")[0] in owned or f == TESTBED or f.startswith(TESTBED + "/")


def _plugin_modules():
    """Top-level modules of the distributions that register pytest plugins: pytest marks them for assertion
    rewriting at start-up and warns (an error under ``filterwarnings = error``) when one is already imported.
    A cold run never imports them that early, so the child keeps pytest from warning about those the parent
    preloaded (their own asserts are then not rewritten: messages only, never outcomes)."""
    from importlib import metadata

    out = set()
    for dist in metadata.distributions():
        if any(ep.group == "pytest11" for ep in dist.entry_points):
            for f in dist.files or ():
                parts = str(f).split("/")
                if parts[-1].endswith(".py") and ".dist-info" not in parts[0] and parts[0] != "..":
                    out.add(parts[0][:-3] if len(parts) == 1 else parts[0])
    return out


def _preload(names, owned):
    """Import each name; returns those that failed or pulled in code from /testbed (the host retries without)."""
    bad, clean = [], {}  # clean: name -> the module object found clean (each module read once, not once an import)
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 (any failure just keeps the module out of the preload)
            bad.append(name)
            continue
        for m, mod in list(sys.modules.items()):
            if clean.get(m) is not mod:
                if _foreign(m, owned):
                    bad.append(name)
                    return bad  # this process is no longer clean: the host restarts it without that module
                clean[m] = mod
    return bad


def _protected(paths):
    """Whether every path is still a read-only mount (the host replacing a mount point would drop it)."""
    ro = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if "ro" in parts[5].split(","):
                ro.add(parts[4].replace("\\040", " "))
    return all(p in ro for p in paths)


def _code_ahead(req, requests):
    """Fill the caches for a request (see the module docstring; :func:`frog_fork.code_ahead` takes what the host kept
    of earlier parents' work); nothing is executed. Returns (how many code objects it made, the new ones the host may
    keep: never those of a file the request names ``unkept``, the agent's)."""
    tests, wanted = [*req["protect"], PLUGIN], []
    unkept = set(req.get("unkept", ()))
    for path in req.get("rewrite", ()):
        source = _source(path, tests)
        if source is not None:
            wanted.append((_REWRITTEN, path, source, _rewritten, _REWRITE_KIND, path not in unkept))
    for path in req.get("compile", ()):  # the package's modules, and the report plugin's parts (frog_report loads)
        source = _source(path, [TESTBED, PLUGIN])
        if source is not None:
            wanted.append((_COMPILED, path, source, _compiled, "compile", path not in unkept))
    c = req.get("canaries")
    if c:  # the canaries' file without them: what other grades run
        source, tail = _source(c["file"], tests), c["source"].encode()
        if source is not None and tail and source.endswith(tail):
            wanted.append((_REWRITTEN, c["file"], source[:-len(tail)], _rewritten, _REWRITE_KIND,
                           c["file"] not in unkept))
    return code_ahead(wanted, requests, bool(req.get("store")))


def _rewritten(source, path):
    """pytest's assertion rewriting of a test module, as its import hook does it (without a config: the child
    takes the result only where the run's config would rewrite the same way)."""
    import ast

    from _pytest.assertion.rewrite import rewrite_asserts

    tree = ast.parse(source, filename=path)
    rewrite_asserts(tree, source, path, None)
    return compile(tree, path, "exec", dont_inherit=True)


def _canary_code(req):
    """The canary tests the host appends to a cached test file, rewritten and compiled on their own (their
    line numbers where they lie in the file, the file's ``__future__`` flags): the child runs the file's cached
    code, then this, in the module's namespace. Returns (path, canary source bytes, code) or None."""
    import __future__
    import ast

    from _pytest.assertion.rewrite import rewrite_asserts

    c = req.get("canaries")
    if not c or c["file"] not in _REWRITTEN:
        return None
    pristine, code = _REWRITTEN[c["file"]]
    source = c["source"].encode()
    if b"PYTEST_DONT_REWRITE" in pristine or not source.startswith(b"\n"):
        return None  # the child rewrites the whole file, as cold
    tree = ast.parse(source, filename=c["file"])
    ast.increment_lineno(tree, pristine.count(b"\n"))
    rewrite_asserts(tree, source, c["file"], None)
    futures = 0
    for name in __future__.all_feature_names:
        futures |= getattr(__future__, name).compiler_flag
    return c["file"], source, compile(tree, c["file"], "exec", flags=code.co_flags & futures, dont_inherit=True)


def _use_code(canaries):
    """Let this child's imports take the parent's code for a file whose bytes are still the same (and, for the
    canaries' file, whose bytes are the cached ones followed by exactly the canaries)."""
    from _pytest.assertion import rewrite

    own_rewrite = rewrite._rewrite_test
    then = {}

    def _rewrite_test(fn, config):
        hit = _REWRITTEN.get(str(fn))
        if hit is not None and (config is None or not config.getini("enable_assertion_pass_hook")):
            st = os.stat(fn)
            source = fn.read_bytes()
            if source == hit[0]:
                return st, hit[1]
            if canaries is not None and canaries[0] == str(fn) and source == hit[0] + canaries[1]:
                then[str(fn)] = canaries[2]
                return st, hit[1]
        return own_rewrite(fn, config)

    rewrite._rewrite_test = _rewrite_test
    own_exec = rewrite.AssertionRewritingHook.exec_module

    def exec_module(self, module):
        own_exec(self, module)
        extra = then.pop(module.__spec__.origin, None)
        if extra is not None:
            exec(extra, module.__dict__)

    rewrite.AssertionRewritingHook.exec_module = exec_module
    use_compiled(_COMPILED)


TABLES = None
"""What became of hypothesis's Unicode tables in this parent (``"made"``, ``"kept"``: taken from the host's store,
None: no hypothesis preloaded, or not yet asked), said in the first request's reply."""


def _warm_tables(requests, store):
    """Fill, once, the tables a preloaded test library computes in each process and keeps for the process's life:
    hypothesis's Unicode category map and the characters UTF-8 encodes (a walk of every code point, about a second
    of CPU, which its text strategies pay at their first draw). Pure functions of hypothesis's version and the
    interpreter's Unicode data: a child inherits the result instead of making it.

    hypothesis keeps them on disk itself, under its storage folder (``.hypothesis/unicode_data``), as a developer's
    runs find them; a grade's tree never keeps that folder. So, with ``store``, the host keeps hypothesis's own files
    of them as it keeps code (:func:`frog_fork.kept`, under one name for hypothesis's version, the Unicode data's and
    the interpreter's): a parent that finds them there puts them in a scratch storage
    folder and lets hypothesis read them, instead of walking every code point. Only a parent (no child can write to
    its pipe) makes what the host keeps. hypothesis's storage is left unchosen afterwards, so a child's is its
    working folder's, as cold. Returns what the host may keep ({name: [label, base64 marshal]})."""
    global TABLES
    charmap = sys.modules.get("hypothesis.internal.charmap")
    conf = sys.modules.get("hypothesis.configuration")
    if charmap is None or conf is None or not callable(getattr(conf, "set_hypothesis_home_dir", None)):
        return {}
    import base64
    import marshal
    import shutil
    import tempfile
    import unicodedata

    version = getattr(sys.modules.get("hypothesis.version"), "__version__", "")
    what = f"{version}\0{unicodedata.unidata_version}\0{sys.maxunicode}".encode()
    name = _name("hypothesis unicode tables", str(getattr(charmap, "__file__", "")), what) if store else None
    kept = _kept([name], requests).get(name, {}) if name else {}
    if type(kept) is not dict or not all(type(k) is str and type(v) is bytes for k, v in kept.items()):
        kept = {}  # a damaged copy: made again below
    home = tempfile.mkdtemp(prefix="frog-tables-")
    try:
        for rel, data in kept.items():
            parts = rel.split("/")
            if not parts or any(p in ("", ".", "..") for p in parts):
                kept = {}
                break
            os.makedirs(os.path.join(home, *parts[:-1]), exist_ok=True)
            with open(os.path.join(home, *parts), "wb") as f:
                f.write(data)
        conf.set_hypothesis_home_dir(home)
        try:
            for fn, args in (("charmap", ()), ("intervals_from_codec", ("utf-8",))):
                try:
                    getattr(charmap, fn)(*args)
                except Exception:  # noqa: BLE001 (another version: its first draw makes them, as cold)
                    pass
        finally:
            conf.set_hypothesis_home_dir(None)
        TABLES = "kept" if kept else "made"
        if not name or kept:
            return {}
        made = {}
        for folder, _, files in os.walk(os.path.join(home, "unicode_data")):
            for fname in files:
                path = os.path.join(folder, fname)
                with open(path, "rb") as f:
                    made[os.path.relpath(path, home)] = f.read()
        return {name: ["<hypothesis unicode tables>", base64.b64encode(marshal.dumps(made)).decode()]} if made else {}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _as_if_imported_here():
    """Redo what a preloaded module derived from the working directory when the parent (at ``/``) imported it:
    hypothesis's default storage folder (``.hypothesis`` in the working directory, where a cold run keeps it)."""
    conf = sys.modules.get("hypothesis.configuration")
    if conf is not None and "__hypothesis_home_directory_default" in vars(conf):
        from pathlib import Path

        vars(conf)["__hypothesis_home_directory_default"] = Path(TESTBED) / ".hypothesis"


CANARY_CODE = None
"""This child's canaries: (path, source bytes, code), as ``_canary_code`` made them (the report plugin's vault reads it
before any code under test runs, with ``_REWRITTEN``: what pytest runs of each test module)."""


_CONFIG = None
"""pytest's configuration as ``_pytest.config.get_config`` makes it at the start of a run, before any argument is parsed:
the plugin manager with pytest's default plugins registered and their options added, nothing of ``/testbed`` read, no
plugin of the run's own loaded. (the ``-p no:`` plugins it blocks, the Config), made by the parent at the first request
(every request of a repository blocks the same ones) and again where those differ; a child's ``get_config`` takes it
(:func:`_take_config`) instead of making the same again, its invocation parameters the child's own."""


def _blocked(args):
    """The plugins ``args`` block (``-p no:NAME``, as pytest's ``consider_preparse`` reads them), in order."""
    out, i = [], 0
    while i < len(args):
        opt, i = args[i], i + 1
        if opt == "-p":
            if i >= len(args):
                break
            parg, i = args[i], i + 1
        elif opt.startswith("-p"):
            parg = opt[2:]
        else:
            continue
        if parg.strip().startswith("no:"):
            out.append(parg.strip())
    return tuple(out)


def _config_ahead(args):
    """Make ``_CONFIG`` for a request's arguments where the one in hand blocks other plugins (nothing of the request's
    tree is read: what ``get_config`` does is register pytest's own modules, loaded here already)."""
    global _CONFIG
    blocked = _blocked(args)
    if _CONFIG is not None and _CONFIG[0] == blocked:
        return
    _CONFIG = None
    from _pytest import config as pytest_config

    try:
        _CONFIG = blocked, pytest_config.get_config(list(args), None)
    except Exception:  # noqa: BLE001 (only a saving: each child then makes its own, as cold)
        _CONFIG = None


def _take_config():
    """Let this child's ``pytest.main`` take the parent's ``_CONFIG`` where its arguments block the same plugins: the
    object ``get_config`` would make here (its invocation parameters set as it sets them: the arguments, the plugins,
    this working directory). pytest's own ``get_config`` is back in its module at its first call, before any plugin of
    the run's loads."""
    from pathlib import Path

    from _pytest import config as pytest_config

    own = pytest_config.get_config

    def get_config(args=None, plugins=None):
        pytest_config.get_config = own
        made = _CONFIG
        if made is None or not isinstance(args, list) or made[0] != _blocked(args):
            return own(args, plugins)
        try:
            params = pytest_config.Config.InvocationParams(args=args, plugins=plugins, dir=Path.cwd())
        except Exception:  # noqa: BLE001 (a pytest whose parameters are made otherwise: its own get_config, as cold)
            return own(args, plugins)
        made[1].invocation_params = params
        return made[1]

    pytest_config.get_config = get_config


def _child(req, pytest, canaries):
    """Become ``python -m pytest <args>`` run in /testbed, and run it (never returns)."""
    global CANARY_CODE
    CANARY_CODE = canaries
    os.setsid()
    stdio_to("/frog/out/log.txt")
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    gc.enable()
    os.environ.clear()
    os.environ.update(_ENV)
    os.environ.update(req["env"])
    os.chdir(TESTBED)
    _as_if_imported_here()
    sys.path[:] = [TESTBED, *_PATH[1:]]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    from _pytest.assertion import rewrite

    warn = rewrite.AssertionRewritingHook._warn_already_imported

    def _warn_unless_preloaded(self, name):
        if name not in _PRELOADED_PLUGINS:
            warn(self, name)

    rewrite.AssertionRewritingHook._warn_already_imported = _warn_unless_preloaded
    _use_code(canaries)
    _take_config()
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *req["args"]]
    try:
        code = pytest.main(plugins=[_ChildPlugin])
        sys.stdout.flush()
    except BrokenPipeError:  # as pytest's console entry point: a closed output is exit status 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    raise SystemExit(code)


class _ChildPlugin:
    """A child's own pytest plugin: what a run that ends at ``os._exit`` (:func:`frog_fork.end`) need not do."""

    @staticmethod
    def pytest_configure(config):
        # At its cleanup, after the session's end (the report plugin has signed the report by then), pytest runs
        # five full collections so that finalisers' exceptions become warnings; the child then exits without freeing
        # anything, and pytest's own in-process runs (pytester) turn them off the same way
        key = getattr(sys.modules.get("_pytest.unraisableexception"), "gc_collect_iterations_key", None)
        if key is not None:
            config.stash[key] = 0


SEAL_AHEAD = None
"""The report plugin's seal and its code ids, read here once (``frog_seal.ahead``): a child's plugin takes the code
ids from it where its own seal holds the very same objects (``frog_report._sealed``), instead of reading every
function's code again (an audit event each) in every grade."""


SLOTS_AHEAD = None
"""The library functions in comparison and format slots of every class alive here (``frog_vault.library_slots``): a
child's vault takes them as judged (their verdict in ``lying_values`` reads nothing a grade can change but their
code), instead of reading each one's code at its first walk."""


LIBRARY_AHEAD = None
"""What the files of the pytest plugins preloaded here, and this file, compile to (``frog_vault.library_ahead``): a
child's vault judges those plugins' hook implementations (and ``_ChildPlugin``'s) by that code at its first check,
instead of compiling each file again in every grade. The files are read-only mounts outside the repository."""


TEST_KEYS = {}
"""The keys (``frog_guard.code_keys``) of the test modules' code this parent made (``_REWRITTEN``): id -> (code,
keys), made again only for new code. A child's guard takes them for that very code instead of reading every code
object and constant of each test module again."""
_CODE_KEYS = None


def _test_keys():
    """Bring :data:`TEST_KEYS` up to ``_REWRITTEN`` (before a fork: nothing of a package runs here)."""
    if _CODE_KEYS is None:
        return
    now = {}
    for _, code in list(_REWRITTEN.values()):
        hit = TEST_KEYS.get(id(code))
        now[id(code)] = hit if hit is not None and hit[0] is code else (code, _CODE_KEYS([code]))
    TEST_KEYS.clear()
    TEST_KEYS.update(now)


SPAWNS_AHEAD = None
"""Where the modules loaded here hold ``_posixsubprocess.fork_exec`` (``frog_guard.spawn_holders``): a child's guard
replaces it there, reading only the modules loaded or grown since, instead of every value of every module."""


def _part(name):
    """The report plugin's part ``name`` (``frog_guard``...) for this parent's own reading, never put in ``sys.modules``:
    run from the code the first request's compile list made of its file (``_COMPILED``: the host's store keeps it, as
    it keeps the package's), where the file's bytes are still those, else compiled here."""
    path = f"{PLUGIN}/{name}.py"
    source = _source(path, [PLUGIN])
    if source is None:
        raise ImportError(f"the report plugin's {path} can't be read")
    hit = _COMPILED.get(path)
    code = hit[1] if hit is not None and hit[0] == source else _compiled(source, path)
    module = type(sys)(name)
    module.__file__ = path
    exec(code, vars(module))
    return module


def _seal_ahead():
    """Fill ``SEAL_AHEAD``, ``SLOTS_AHEAD``, ``LIBRARY_AHEAD`` and ``SPAWNS_AHEAD`` (at the first request, after its
    code is made: the plugin's parts come from there, not compiled at every start)."""
    global SEAL_AHEAD, SLOTS_AHEAD, LIBRARY_AHEAD, SPAWNS_AHEAD, _CODE_KEYS
    frog_guard, frog_seal, frog_vault = _part("frog_guard"), _part("frog_seal"), _part("frog_vault")

    try:
        import _pytest._argcomplete  # noqa: F401 (a child's pytest imports it before its plugins load)
    except ImportError:
        pass

    try:
        SEAL_AHEAD = frog_seal.ahead()
        try:
            SLOTS_AHEAD = frog_vault.library_slots(TESTBED)
        except Exception:  # noqa: BLE001 (only a saving: each child's vault then judges them itself, as cold)
            SLOTS_AHEAD = None
        # the modules of the plugins' distributions that define a pytest hook (pytest_timeout; hypothesis's plugin
        # module, not the whole of hypothesis)
        files = [getattr(m, "__file__", None) for name, m in list(sys.modules.items())
                 if name.split(".")[0] in _PRELOADED_PLUGINS and any(
                     k.startswith("pytest_") and callable(v) for k, v in list(vars(m).items()))]
        LIBRARY_AHEAD = frog_vault.library_ahead([*files, os.path.abspath(__file__)], TESTBED)
        SPAWNS_AHEAD = frog_guard.spawn_holders()  # (the modules as a child finds them: the plugin's own are in none)
        _CODE_KEYS = frog_guard.code_keys
    finally:
        for name in ("frog_guard", "frog_seal", "frog_vault"):  # a child's plugin loads its own copies, never
            sys.modules.pop(name, None)  # through sys.modules


def main():
    gc.disable()  # then gc.freeze() before each fork: children neither scan nor copy the parent's objects
    with open("/frog/in/server.json") as f:
        config = json.load(f)
    owned = set(config["owned"])
    pristine = config.get("pristine") or []
    sys.path[:0] = pristine  # pytest's own dependency is the package under test: bind pytest to a pristine copy
    try:
        import pytest
        from _pytest import config as _config

        for name in _config.default_plugins:
            importlib.import_module(name if "." in name else f"_pytest.{name}")
    except ImportError as e:  # pytest itself needs the package under test and no pristine copy was given
        _say({"ready": False, "bad": [], "error": f"importing pytest needs the package under test: {e}"})
        return
    if pristine:
        for name in list(sys.modules):
            if name.split(".")[0] in owned:
                del sys.modules[name]
        del sys.path[:len(pristine)]  # (_PATH, the child's path, was taken before they were added)

    bad = _preload(config["preload"], owned)
    _say({"ready": not bad, "bad": bad, "modules": len(sys.modules), "dumpable": _libc.prctl(3, 0, 0, 0, 0),
          "testbed": sorted(m for m in list(sys.modules) if _foreign(m, owned))})
    if bad:
        return
    global _PRELOADED_PLUGINS, _REWRITE_KIND
    _PRELOADED_PLUGINS = _plugin_modules() & set(sys.modules)
    _REWRITE_KIND = f"rewrite pytest {pytest.__version__}"
    # frozen without a collection first: importing leaves a few hundred objects in cycles (648 after pytest,
    # hypothesis and flask), which a full collection (15-30 ms a start) would free; frozen, they are only memory,
    # and no finalizer of theirs runs in a child either way (a child's collections never scan frozen objects)
    gc.freeze()
    requests = _lines()
    warmed = sealed = False
    for req in requests:
        if not _protected(req["protect"]):
            _say({"error": "a protected test path is no longer a read-only mount"})
            return
        start = time.monotonic()
        tables = {}
        if not warmed:  # at the first request: the host's store answers the parent from there on
            tables, warmed = _warm_tables(requests, req.get("store")), True
        made, new = _code_ahead(req, requests)
        new.update(tables)
        if not sealed:
            _seal_ahead()
            sealed = True
        try:
            canaries = _canary_code(req)
        except Exception:  # noqa: BLE001 (the child rewrites the whole file instead, as cold)
            canaries = None
        _test_keys()
        _config_ahead(req["args"])
        gc.freeze()
        code, usage, clean = fork_run(lambda: _child(req, pytest, canaries), start + req["timeout"])
        own = os.times()
        _say({"made": made, "exit": code, "clean": clean, "cpu": usage.ru_utime + usage.ru_stime,
              "system": usage.ru_stime, "faults": usage.ru_minflt, "parent_cpu": own.user + own.system,
              "seconds": time.monotonic() - start, "new": new, "tables": TABLES})


main()
