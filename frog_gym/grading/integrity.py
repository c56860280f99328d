"""What grading trusts of an agent's final state, and how it notices a forged result.

The threat model (README, "Safety"): the agent controls every non-test file of its workspace and every
process it starts, knows frog-gym's source, and is optimised against the reward. Its library code runs
inside the test process, so grading trusts nothing that process could fake on its own. Five layers:

1. **Scope** (:func:`out_of_scope`): only edits to the package's own source (the spec's ``generate.mutable``
   folders and files, plus the files the task's gold patch touches) reach the grading tree. Test files,
   pytest configuration (``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``, ``conftest.py``),
   interpreter start-up hooks (``sitecustomize``, ``usercustomize``, ``*.pth``), compiled code and new
   top-level modules are reset to the pristine tree, so the run's configuration is the spec's alone.
2. **Static check** (:func:`tampering`), an allowlist decided on the host, where the agent's code never runs:
   what the edits *add* to a Python file may use ordinary library vocabulary only. Nothing computed may reach
   an attribute, a module or code (``getattr`` with a computed, private or special name, any alias of it,
   ``exec``/``eval``/``compile``/``__import__``/``importlib``); the interpreter's introspection (``sys``,
   ``traceback``, ``inspect``, ``gc``, ``weakref``, ``signal``, ``threading``, ``atexit``, ``ctypes``...) only
   where the file already imports it, and then not its frame-reaching parts, however it is reached
   (``os.sys``, ``traceback.linecache``); no special method that makes a value equal anything or runs code at
   its finalisation; no string that, once its literal pieces are put together, names ``/proc``, ``/dev`` or
   the grading machinery; no read of the environment but one variable by its literal name. What the file's
   own version already does in the same function stays allowed. A hit scores 0 and names the file, the line
   and the construct in ``info["tampering"]``.
3. **Authenticated results**: the report plugin reads a per-run key from a FIFO before any agent code can
   run (it loads with ``-p``, ahead of the package under test) and signs the report with it (HMAC-SHA256);
   a report written by anything else, or a key read by anything else, fails verification.
4. **Canaries** (:class:`Canaries`): randomly named tests appended to a test file at grading, some that
   must fail and one that must pass; a patch that flips outcomes wholesale turns a must-fail canary green
   and is caught, whatever it did to hide.

5. **Guarded test files** (``frog_gym/_plugin/frog_guard.py``): an audit hook in the test process refuses
   the package's own code every read of the graded test files (hidden tests, canaries) and every process
   start (a child would run without the hook), and reports it.

No layer alone is a proof (CPython has no in-process isolation); together they make every forgery we know
of (``tests/exploits/``) score 0 with its reason, and each new one becomes a test there.
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import dataclasses
import functools
import hashlib
import hmac
import json
import os
import random
import re
import sys
import threading
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import PurePosixPath

GRADING_VERSION = 5
"""Bumped whenever grading's rules change; with :func:`grading_code_digest` it is part of every cached grade's
key, so no grade made under older rules (or older code) is ever reused."""


def grading_code_digest() -> str:
    """A digest of the code that decides a grade (this module, grading, the warm server, the plugins)."""
    global _DIGEST
    if _DIGEST is None:
        from importlib import resources

        h = hashlib.sha256()
        for name in ("grading/integrity.py", "grading/runner.py", "grading/server.py", "_plugin/frog_report.py",
                     "_plugin/frog_key.py", "_plugin/frog_guard.py", "_plugin/frog_seal.py", "_plugin/frog_vault.py",
                     "_plugin/frog_server.py", "_plugin/frog_boot.py", "_plugin/sitecustomize.py", "grading/oracle.py",
                     "_plugin/frog_oracle.py", "_plugin/frog_fork.py", "_plugin/frog_oracle_server.py",
                     "grading/oracle_server.py", "grading/grade.py", "grading/impact.py", "_plugin/frog_coverage.py"):
            h.update(resources.files("frog_gym").joinpath(name).read_bytes())
        _DIGEST = h.hexdigest()[:16]
    return _DIGEST


_DIGEST: str | None = None

STARTUP_FILES = ("sitecustomize.py", "usercustomize.py", "conftest.py", "pytest.ini", ".pytest.ini", "tox.ini",
                 "setup.cfg", "pyproject.toml", "setup.py", "noxfile.py")
"""File names that configure pytest or run at interpreter start, wherever they are: always pristine."""

CODE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll", ".pyc", ".pyo", ".pth", ".egg-link", ".zip", ".whl", ".egg")
"""Compiled or importable-archive files: an agent's copy is never graded (its content can't be reviewed)."""


def out_of_scope(path: str, mutable: tuple[str, ...], gold_files: frozenset[str], import_paths: tuple[str, ...],
                 is_test_file, exists_in_template) -> str | None:
    """Why an agent's edit of ``path`` is not applied at grading, or None when it is.

    Args:
        path: the file, relative to the repository root.
        mutable: the spec's source folders and files (``generate.mutable``).
        gold_files: files the task's gold patch touches (always in scope unless tests or start-up files).
        import_paths: folders the venv puts on ``sys.path`` (a new module directly in one would shadow others).
        is_test_file: the spec's test-file predicate.
        exists_in_template: whether ``path`` exists in the task's starting tree.

    >>> f = lambda p: out_of_scope(p, ("src/pkg",), frozenset(), ("src",), lambda p: "tests/" in p, lambda p: False)
    >>> f("src/pkg/core.py") is None, f("src/sitecustomize.py"), f("tests/test_a.py")
    (True, 'an interpreter start-up or pytest configuration file', 'a test file')
    >>> f("src/pkg/__main__.py") is None, f("src/__main__.py")  # a package's own entry point is its source
    (True, "outside the package's source")
    >>> f("setup.py"), f("src/pkg/_speedups.so")
    ('an interpreter start-up or pytest configuration file', 'compiled or archive code')
    """
    name = PurePosixPath(path).name
    if is_test_file(path):
        return "a test file"
    if name in STARTUP_FILES or name.endswith(".pth"):
        return "an interpreter start-up or pytest configuration file"
    if name.endswith(CODE_SUFFIXES) or "__pycache__" in path.split("/"):
        return "compiled or archive code"
    if path in gold_files:
        return None
    for m in mutable:
        m = m.rstrip("/")
        if path == m:
            return None
        if path.startswith(m + "/"):
            parent = str(PurePosixPath(path).parent)
            on_sys_path = {p.strip("./") or "." for p in import_paths}
            if not exists_in_template(path) and (parent if parent != "." else ".") in on_sys_path:
                return "a new top-level module (it could shadow another module)"
            return None
    return "outside the package's source"


# -- the static check: an allowlist of what an edit may add ----------------------------------------------------
#
# What the edits add to a Python file may use ordinary library vocabulary, by reference. Everything a forgery
# needs and a bug fix does not is outside it: reaching an attribute or a module by a computed name, running
# code built at run time, the interpreter's introspection (frames, code objects, the module table, the garbage
# collector, finalisers, signal handlers), special methods that change how a value compares or dies, the
# process's environment and memory. Where the repository's own version of the file already does one of these
# things, that occurrence (the same construct in the same function) stays allowed; a new one is not.

_ANYWHERE: dict[str, frozenset[str] | None] = {
    # module -> the attributes an edit may add (None: any public one that is not a module)
    **dict.fromkeys((
        "abc", "argparse", "array", "ast", "base64", "binascii", "bisect", "calendar", "cmath", "collections",
        "colorsys", "configparser", "contextlib", "contextvars", "copy", "csv", "dataclasses", "datetime",
        "decimal", "difflib", "email", "enum", "errno", "fnmatch", "fractions", "glob", "gzip", "bz2", "lzma",
        "hashlib", "heapq", "hmac", "html", "http", "ipaddress", "itertools", "json", "keyword", "locale", "math",
        "mimetypes", "numbers", "os.path", "posixpath", "ntpath", "pathlib", "pprint", "queue", "random", "re",
        "reprlib", "secrets", "shlex", "shutil", "stat", "statistics", "string", "struct", "tempfile", "textwrap",
        "time", "tomllib", "unicodedata", "urllib", "uuid", "warnings", "xml", "zlib", "zipfile", "tarfile",
        "zoneinfo", "io", "asyncio", "typing_extensions", "__future__", "getopt", "optparse", "gettext",
        "graphlib", "plistlib", "filecmp", "token", "stringprep", "encodings", "quopri", "wsgiref",
        "netrc", "sched", "selectors", "cgi", "nturl2path",
    ), None),
    "typing": None, "functools": None, "operator": None, "logging": None, "codecs": None,
    "os": frozenset({
        "path", "sep", "altsep", "extsep", "pathsep", "linesep", "curdir", "pardir", "devnull", "name", "fspath",
        "fsencode", "fsdecode", "PathLike", "getcwd", "getcwdb", "listdir", "scandir", "walk", "stat", "lstat",
        "makedirs", "mkdir", "remove", "unlink", "rename", "renames", "replace", "rmdir", "removedirs", "chmod",
        "utime", "access", "cpu_count", "urandom", "strerror", "error", "get_terminal_size", "isatty", "umask",
        "F_OK", "R_OK", "W_OK", "X_OK", "SEEK_SET", "SEEK_CUR", "SEEK_END", "DirEntry", "stat_result",
        "terminal_size", "sched_getaffinity", "supports_follow_symlinks", "supports_fd", "readlink", "symlink",
        "getlogin", "get_exec_path", "times", "uname",
    }),
    "types": frozenset({
        "SimpleNamespace", "MappingProxyType", "GeneratorType", "AsyncGeneratorType", "CoroutineType", "MethodType",
        "BuiltinFunctionType", "BuiltinMethodType", "NoneType", "EllipsisType", "NotImplementedType", "UnionType",
        "GenericAlias", "DynamicClassAttribute", "coroutine",
    }),
}
"""Standard-library (and ubiquitous) modules an edit may import anywhere, each with what it may reach."""

_WHERE_USED: dict[str, frozenset[str]] = {
    "sys": frozenset({
        "version_info", "version", "hexversion", "implementation", "platform", "byteorder", "maxsize",
        "maxunicode", "float_info", "int_info", "stdout", "stderr", "stdin", "__stdout__", "__stderr__",
        "getdefaultencoding", "getfilesystemencoding", "getrecursionlimit", "getsizeof", "intern", "exit",
        "exc_info", "exception", "flags", "is_finalizing",
    }),
    "threading": frozenset({"Lock", "RLock", "Event", "Condition", "Semaphore", "BoundedSemaphore", "local",
                            "get_ident", "current_thread", "main_thread", "TIMEOUT_MAX", "Barrier"}),
    "weakref": frozenset({"WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "WeakMethod", "ReferenceType",
                          "ProxyType", "ref", "proxy"}),
    "pickle": frozenset({"dumps", "dump", "HIGHEST_PROTOCOL", "DEFAULT_PROTOCOL", "PicklingError",
                         "UnpicklingError", "PickleError"}),
    "concurrent": frozenset({"futures"}),
    "concurrent.futures": frozenset({"ThreadPoolExecutor", "Future", "as_completed", "wait", "TimeoutError",
                                     "CancelledError", "FIRST_COMPLETED", "ALL_COMPLETED", "FIRST_EXCEPTION"}),
    "inspect": frozenset({"isclass", "isfunction", "ismethod", "isroutine", "iscoroutinefunction", "isgenerator",
                          "isgeneratorfunction", "isasyncgenfunction", "isawaitable", "iscoroutine", "isbuiltin",
                          "isabstract", "ismodule", "isdatadescriptor", "signature", "Signature", "Parameter",
                          "BoundArguments", "cleandoc", "getdoc", "unwrap", "isasyncgen", "ismethoddescriptor",
                          "Traceback"}),
    "traceback": frozenset({"format_exception_only"}),
    "importlib": frozenset({"metadata"}),
    "importlib.metadata": frozenset({"version", "PackageNotFoundError", "entry_points", "EntryPoint", "metadata",
                                     "distribution", "packages_distributions"}),
    "signal": frozenset({"Signals", "SIGINT", "SIGTERM", "SIGPIPE", "SIG_DFL", "SIG_IGN", "getsignal"}),
    "dis": frozenset(), "gc": frozenset(), "linecache": frozenset(), "tokenize": frozenset(), "ctypes": frozenset(),
    "atexit": frozenset(), "faulthandler": frozenset(), "tracemalloc": frozenset(), "trace": frozenset(),
    "marshal": frozenset(), "copyreg": frozenset(), "shelve": frozenset(), "builtins": frozenset(),
    "subprocess": frozenset(), "multiprocessing": frozenset(), "pty": frozenset(), "mmap": frozenset(),
    "socket": frozenset(), "select": frozenset(), "resource": frozenset(), "fcntl": frozenset(),
    "posix": frozenset(), "code": frozenset(), "codeop": frozenset(), "runpy": frozenset(), "pkgutil": frozenset(),
    "site": frozenset(), "sysconfig": frozenset(), "zipimport": frozenset(), "pdb": frozenset(), "bdb": frozenset(),
    "unittest": frozenset(), "doctest": frozenset(), "pytest": frozenset(), "_pytest": frozenset(),
    "pluggy": frozenset(), "py": frozenset(), "frog_report": frozenset(),
}
"""Modules an edit may use only where the file's own version already imports them, each with the attributes
it may then reach (none of them private, none reaching frames, code, the module table or a callback the
interpreter runs later). Any other standard-library module, and any private one, is treated as an empty entry
here; a third-party module is allowed where the file already imports it."""

_MODULE_NAMES = frozenset(set(sys.stdlib_module_names) | set(_WHERE_USED))
"""Names that denote a module when reached as an attribute (``os.sys``, ``traceback.linecache``)."""

_REACHES_MODULE_ANYWHERE = frozenset({"sys", "gc", "inspect", "linecache", "traceback", "builtins", "ctypes",
                                      "importlib", "marshal", "pickle", "atexit", "weakref", "tokenize", "dis",
                                      "subprocess", "multiprocessing", "_pytest", "pytest", "pluggy"})
"""Attribute names taken to reach that module on any object, not only on a module (``pkg.compat.sys``)."""

_FRAME_ATTRS = frozenset({
    "f_back", "f_globals", "f_locals", "f_code", "f_builtins", "f_trace", "f_lasti", "tb_frame", "tb_next",
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "co_code", "co_consts", "co_names",
    "co_filename", "co_varnames", "co_freevars", "co_cellvars", "cell_contents", "__globals__", "__code__",
    "__closure__", "__builtins__", "__subclasses__", "__traceback__", "__self__", "__loader__", "__spec__",
    "__import__", "__reduce__", "__reduce_ex__", "exec", "eval",
})
"""Attributes that reach frames, code objects, closures, the builtins or every class: new only as an exact copy
of an occurrence the file already has (the same construct in the same function)."""

_DENIED = frozenset({"string.Formatter", "typing.get_type_hints", "typing.ForwardRef", "typing.evaluate_forward_ref",
                     "codecs.register",
                     "codecs.register_error", "logging.setLoggerClass", "logging.setLogRecordFactory",
                     "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell", "io.open_code"})
"""Attributes of the modules in :data:`_ANYWHERE` that an edit may not add: each evaluates strings as code,
installs a callback the whole process runs, or starts a process."""

_PLAIN_DUNDERS = frozenset({
    "__name__", "__qualname__", "__doc__", "__module__", "__class__", "__init__", "__new__", "__all__",
    "__version__", "__file__", "__slots__", "__annotations__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__hash__", "__len__", "__iter__", "__next__", "__contains__", "__getitem__", "__setitem__",
    "__delitem__", "__call__", "__enter__", "__exit__", "__aenter__", "__aexit__", "__str__", "__repr__",
    "__bool__", "__format__", "__index__", "__int__", "__float__", "__add__", "__sub__", "__mul__",
    "__truediv__", "__floordiv__", "__mod__", "__pow__", "__and__", "__or__", "__xor__", "__neg__", "__pos__",
    "__abs__", "__invert__", "__post_init__", "__fspath__", "__reversed__", "__missing__", "__copy__",
    "__deepcopy__", "__get__", "__set__", "__delete__", "__debug__", "__package__", "__wrapped__", "__await__",
    "__length_hint__", "__sizeof__", "__dir__", "__getstate__", "__setstate__", "__path__", "__cause__",
    "__context__", "__suppress_context__", "__notes__", "__class_getitem__", "__orig_bases__", "__match_args__",
    "__signature__", "__prepare__", "__text_signature__", "__firstlineno__", "__type_params__",
})
"""Special names whose use reads or calls what ordinary operators already do: allowed anywhere. Any other
special attribute is allowed where the file's own version already uses it."""

_BEHAVIOUR_METHODS = frozenset({
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__", "__contains__",
    "__format__", "__add__", "__radd__", "__iadd__", "__rsub__", "__rmul__", "__rmod__", "__rtruediv__",
    "__ror__", "__rand__", "__index__", "__getattr__", "__getattribute__", "__setattr__", "__delattr__",
    "__instancecheck__", "__subclasscheck__", "__del__", "__init_subclass__", "__set_name__", "__mro_entries__",
})
"""Special methods whose new definition changes how a value compares, converts or formats, how a class answers
attribute and type questions, or runs code when the interpreter decides (a finaliser, a subclass hook): a
value that equals anything passes any assertion."""

_DYNAMIC = {"getattr": 1, "setattr": 1, "delattr": 1, "__getattribute__": 0, "__getattr__": 0,
            "__setattr__": 0, "__delattr__": 0}
"""Calls that reach an attribute by a name given as data, and which argument is the name (after the object
for ``object.__getattribute__(o, name)``-style calls)."""

_NAMERS = frozenset({"getattr", "setattr", "delattr", "attrgetter", "methodcaller", "vars", "globals", "locals",
                     "eval", "exec", "compile", "__import__", "breakpoint", "chr"})
"""Callables that turn data into an attribute, a namespace, code or a character: any reference to one that is
not a direct call (``g = getattr``, ``reduce(getattr, ...)``, ``map(chr, ...)``) hides what it reaches."""

_CODE = frozenset({"eval", "exec", "compile", "__import__", "breakpoint", "globals", "locals", "vars"})
"""Builtins that run code built at run time or hand out a namespace: never added."""

_STRINGS = ("/proc", "/dev/", "frog", "testbed", "pytest", "conftest", "pluggy")
_TEST_FILE = re.compile(r"(?:^|[/\\])((?:test_[\w.-]*|[\w.-]*_test)\.py)\b")
"""A test module's file name (``test_x.py``, ``x_test.py``) in a string: package code has no reason to name one."""
"""What no string an edit adds may spell, once its literal pieces are put together: the process's memory and
descriptors, the grading paths and environment, the test machinery."""


@dataclass(frozen=True)
class _Hit:
    """One construct outside the allowlist: ``key`` says what and where (rule, name, function), ``unless``
    names what in the file's own version allows it anyway (a module it imports, a special name it uses),
    ``line``, ``text`` (the construct's source) and ``why`` are for the message."""

    key: tuple[str, str, str]
    unless: tuple[str, str] | None
    line: int
    text: str
    why: str


def _own(path: str) -> frozenset[str]:
    """The top-level name of the file's own package: the first folder of its path (after ``src``/``lib``), or
    the module itself for a top-level module. Never a standard-library name: an absolute ``import sys`` in
    ``pkg/sys.py`` is the interpreter's ``sys``."""
    parts = [p for p in PurePosixPath(path).with_suffix("").parts if p not in ("src", "lib")]
    top = parts[0] if parts else ""
    return frozenset({top} if top.isidentifier() and top not in _MODULE_NAMES else ())


def _rules(module: str) -> tuple[bool, frozenset[str] | None]:
    """(importable anywhere, the attributes it may reach) for a dotted module name; see :data:`_ANYWHERE`."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        if name in _WHERE_USED:
            if i == len(parts):
                return False, _WHERE_USED[name]
            # an object the module lets an edit use (inspect.Parameter) is used freely; anything else is not
            return False, None if i == len(parts) - 1 and parts[-1] in _WHERE_USED[name] else frozenset()
        if name in _ANYWHERE:
            return True, _ANYWHERE[name] if i == len(parts) else None
    if parts[0] in sys.stdlib_module_names or module.startswith("_"):
        return False, frozenset()
    return False, None


def _fold(node: ast.AST, consts: dict[str, object], depth: int = 0) -> object:
    """The value of an expression built only from literals (and names bound once to such an expression), or
    None: ``"/pr" + "oc"``, ``"corp/"[::-1]``, ``"".join(map(chr, [47, 112]))``, ``b"..".decode()``."""
    if depth > 40:
        return None
    f = functools.partial(_fold, consts=consts, depth=depth + 1)
    try:
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, (str, bytes, int)) else None
        if isinstance(node, ast.Name):
            return consts.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = f(node.operand)
            return -value if isinstance(value, int) else None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [f(e) for e in node.elts]
            return None if any(i is None for i in items) else tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.JoinedStr):
            parts = [f(v.value) if isinstance(v, ast.FormattedValue) else f(v) for v in node.values]
            return None if any(p is None for p in parts) else "".join(str(p) for p in parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Mod, ast.Div)):
            a, b = f(node.left), f(node.right)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Div):  # Path("/") / "proc"
                return a.rstrip("/") + "/" + b if isinstance(a, str) and isinstance(b, str) else None
            if isinstance(node.op, ast.Mult):
                n, seq = (a, b) if isinstance(a, int) else (b, a)
                return seq * n if not isinstance(seq, int) and n * len(seq) <= 10000 else None
            return a + b if isinstance(node.op, ast.Add) else a % b
        if isinstance(node, ast.Subscript):
            value = f(node.value)
            if value is None:
                return None
            s = node.slice
            if isinstance(s, ast.Slice):
                bounds = [f(b) if b is not None else None for b in (s.lower, s.upper, s.step)]
                if any(v is None and b is not None for v, b in zip(bounds, (s.lower, s.upper, s.step))):
                    return None
                return value[slice(*bounds)]
            return value[f(s)]
        if isinstance(node, ast.Call) and not node.keywords:
            if isinstance(node.func, ast.Name) and node.func.id == "map" and len(node.args) == 2 and \
                    isinstance(node.args[0], ast.Name) and node.args[0].id in ("chr", "str"):
                items = f(node.args[1])
                return None if items is None else [chr(i) if node.args[0].id == "chr" else str(i) for i in items]
            args = [f(a) for a in node.args]
            if any(a is None for a in args):
                return None
            called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr \
                if isinstance(node.func, ast.Attribute) else ""
            if called in ("Path", "PurePath", "PosixPath", "PurePosixPath") or called == "join" and \
                    isinstance(node.func, ast.Attribute) and not isinstance(f(node.func.value), (str, bytes)):
                return "/".join(a.rstrip("/") for a in args) if all(isinstance(a, str) for a in args) else None
            if isinstance(node.func, ast.Name):
                name = node.func.id
                if name == "chr" and len(args) == 1:
                    return chr(args[0])
                if name in ("bytes", "bytearray") and len(args) == 1 and isinstance(args[0], list):
                    return bytes(args[0])
                if name in ("str", "list", "tuple") and len(args) == 1:
                    return args[0] if name == "str" else list(args[0])
                if name == "reversed" and len(args) == 1:
                    return list(reversed(args[0]))
                return None
            if isinstance(node.func, ast.Attribute):
                obj = f(node.func.value)
                method = node.func.attr
                if isinstance(obj, (str, bytes)) and method in (
                        "join", "replace", "upper", "lower", "strip", "lstrip", "rstrip", "decode", "encode",
                        "title", "capitalize", "swapcase", "casefold", "removeprefix", "removesuffix",
                        "translate", "zfill"):
                    if method == "join":
                        return obj.join(args[0])
                    return getattr(obj, method)(*args)
                if method == "fromhex" and len(args) == 1:
                    return bytes.fromhex(args[0])
                if method in ("b64decode", "b32decode", "b16decode", "b85decode", "a85decode", "unhexlify") \
                        and len(args) == 1:
                    return (binascii.unhexlify if method == "unhexlify" else getattr(base64, method))(args[0])
                if method == "decode" and len(args) == 2 and args[1] == "rot13":
                    return codecs.decode(args[0], "rot13")
    except Exception:
        return None
    return None


_BLOCKS = frozenset(("body", "orelse", "finalbody", "handlers", "cases"))
"""The fields of a node that hold statements (an ``except`` clause's and a ``case``'s body one level further down)."""
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)


def _walrus_possible(source: bytes) -> bool:
    """Whether ``source`` may hold an assignment expression (``:=``): its bytes spell one, or its first two lines
    declare an encoding (which may spell the characters otherwise)."""
    return b":=" in source or bool(_COOKIE.search(b"".join(source.splitlines(keepends=True)[:2])))


def _binding_nodes(tree: ast.AST, walrus: bool = True):
    """The nodes of ``tree`` that may bind a module-level name for :class:`_Walk` (imports, assignments), in the order
    ``ast.walk`` yields them, without visiting every expression: a statement only sits in a statement list of a
    statement, an ``except`` clause or a ``case`` block, and those nodes are at the same depth, in the same order, in
    a breadth-first walk of themselves alone as in a walk of every node. An assignment expression can sit in any
    expression: with ``walrus`` (its source may hold one: :func:`_walrus_possible`) the tree is walked whole."""
    if walrus:
        yield from ast.walk(tree)
        return
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        for name in node._fields:  # in the node's own field order, as ast.walk takes its children
            if name in _BLOCKS and type(block := getattr(node, name, None)) is list:
                todo.extend(block)
        yield node


class _Walk(ast.NodeVisitor):
    """One pass over a module: every construct outside the allowlist, as :class:`_Hit` s."""

    def __init__(self, path: str, tree: ast.Module, index: bool = True, walrus: bool = True):
        """The module's bindings (imports anywhere, names bound once to a literal); with ``index``, also each node's
        parent and the calls, which the walk of a node needs (else :meth:`index` adds them per statement).
        ``walrus``: the source may hold an assignment expression (:func:`_binding_nodes`)."""
        self.own = _own(path)
        self.hits: list[_Hit] = []
        self.scope: list[str] = []
        self.local: list[frozenset[str]] = []  # names each enclosing function binds itself (they shadow imports)
        self.parent: dict[ast.AST, ast.AST] = {}
        self.modules: dict[str, str] = {}  # name bound by an import -> the module (or module.attribute) it is
        self.imported: set[str] = set()  # names bound by a plain `import` (a module for sure)
        self.calls: set[int] = set()  # id() of nodes that are the function of a call
        self.consts: dict[str, object] = {}
        assigned: Counter[str] = Counter()
        assignments = []
        if index:
            self.index(tree)
        for node in _binding_nodes(tree, walrus):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imported.add(a.asname or a.name.split(".")[0])
                    if a.asname:
                        self.modules[a.asname] = a.name
                    else:
                        self.modules.setdefault(a.name.split(".")[0], a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and not node.level:
                for a in node.names:
                    self.modules[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                assignments.append(node)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            assigned[n.id] += 1 + isinstance(node, ast.AugAssign)
        for node in assignments:  # names bound exactly once, to an expression of literals
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if len(targets) == 1 and isinstance(targets[0], ast.Name) and assigned[targets[0].id] == 1:
                    value = _fold(node.value, self.consts)
                    if value is not None:
                        self.consts[targets[0].id] = value
        self.folded: dict[int, object] = {}

    def index(self, tree: ast.AST) -> None:
        """Each node's parent and the function of each call, under ``tree``."""
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
            if isinstance(node, ast.Call):
                self.calls.add(id(node.func))

    # -- recording --
    def hit(self, node: ast.AST, rule: str, name: str, why: str, unless: tuple[str, str] | None = None) -> None:
        text = ast.unparse(node)
        text = text if len(text) <= 120 else text[:117] + "..."
        self.hits.append(_Hit((rule, name, ".".join(self.scope) or "<module>"), unless,
                              getattr(node, "lineno", 0), text, why))

    def in_scope(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            self.local.append(_locals(node))
        self.generic_visit(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            self.local.pop()
        self.scope.pop()

    # -- definitions --
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        owner = self.parent.get(node)
        if _is_dunder(node.name) and node.name in _BEHAVIOUR_METHODS and isinstance(owner, (ast.ClassDef, ast.Module)):
            where = "a module" if isinstance(owner, ast.Module) else f"class {owner.name}"
            self.hits.append(_Hit(("defines", node.name, ".".join(self.scope) or "<module>"), None, node.lineno,
                                  f"def {node.name}", f"a definition of {node.name} in {where} (a value or class that "
                                                      f"answers comparisons, formatting, attribute lookups or its own "
                                                      f"end by code of its own)"))
        self.in_scope(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.in_scope(node, node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.in_scope(node, "<lambda>")

    # -- imports --
    def module_use(self, node: ast.AST, module: str, how: str) -> None:
        top = module.split(".")[0]
        if top in self.own:
            return
        anywhere, _ = _rules(module)
        if anywhere:
            return
        known = top in _MODULE_NAMES or module.startswith("_")
        self.hit(node, "module", module, f"{how} {module!r}, " + (
            "a module an edit may use only where the file already imports it" if known else
            "a module the file does not import"), unless=("module", top))

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.module_use(node, a.name, "an import of")
            if _names_a_test(a.name):
                self.hit(node, "test", a.name, f"an import of the test module {a.name!r}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if _names_a_test(mod) or (not mod and any(_names_a_test(a.name) for a in node.names)):
            self.hit(node, "test", "." * node.level + mod, f"an import from a test module {'.' * node.level + mod!r}")
        if node.level:
            return
        self.module_use(node, mod, "an import from")
        for a in node.names:
            self.attribute(node, mod, a.name)

    # -- names and attributes --
    def visit_Name(self, node: ast.Name) -> None:
        real = self.modules.get(node.id, node.id).rsplit(".", 1)[-1]
        if real in _NAMERS and id(node) not in self.calls:
            self.hit(node, "alias", real, f"a reference to {node.id} that is not a direct call (an alias, or "
                                             f"an argument to another function: what it reaches can't be read)")
        module = self.module_of(node)
        if module is not None and node.id in self.imported and module.split(".")[0] not in self.own and \
                not self.followed(node) and not self.named_by_literal(node) and \
                (module.split(".")[0] in sys.stdlib_module_names or module in _WHERE_USED) and \
                _rules(module)[1] is not None and not isinstance(node.ctx, ast.Store):
            self.hit(node, "alias", module, f"a reference to the module {module} other than to one of its "
                                            f"attributes (what is reached through it can't be read)")
        if node.id in _CODE:
            self.hit(node, "code", node.id, f"use of {node.id} (code or a namespace built at run time)")
        elif node.id in _FRAME_ATTRS:
            self.hit(node, "attribute", node.id, f"use of {node.id} (frames, code, closures or the builtins)")
        elif isinstance(node.ctx, ast.Store) and _is_dunder(node.id) and not self.local:
            if node.id in _BEHAVIOUR_METHODS:
                self.hit(node, "defines", node.id, f"a definition of {node.id} (a value or class that answers "
                                                   f"comparisons, formatting, attribute lookups or its own end by "
                                                   f"code of its own)")
        elif _is_dunder(node.id) and node.id not in _PLAIN_DUNDERS:
            self.hit(node, "dunder", node.id, f"use of the special name {node.id}", unless=("dunder", node.id))

    def named_by_literal(self, node: ast.AST) -> bool:
        """Whether ``node`` is the object of ``getattr``/``hasattr``/``setattr``/``delattr`` with a literal name
        (the name's own rules apply to it there)."""
        up = self.parent.get(node)
        return (isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and len(up.args) > 1
                and up.args[0] is node and up.func.id in ("getattr", "hasattr", "setattr", "delattr")
                and isinstance(up.args[1], ast.Constant) and isinstance(up.args[1].value, str))

    def followed(self, node: ast.AST) -> bool:
        """Whether ``node`` is the object of an attribute access (``node.attr``)."""
        up = self.parent.get(node)
        return isinstance(up, ast.Attribute) and up.value is node

    def chain(self, node: ast.AST) -> list[str] | None:
        """``a.b.c`` as ["a", "b", "c"], or None when it does not start at a name."""
        out = []
        while isinstance(node, ast.Attribute):
            out.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return [node.id, *reversed(out)]
        return None

    def module_of(self, node: ast.AST) -> str | None:
        """The module an expression denotes (``os``, ``os.path``, ``sys`` for ``os.sys``), if a module."""
        if isinstance(node, ast.Name):
            if node.id not in self.modules or (self.local and node.id in self.local[-1]):
                return None
            return self.modules[node.id]
        if isinstance(node, ast.Attribute):
            base = self.module_of(node.value)
            if node.attr in _REACHES_MODULE_ANYWHERE:
                return node.attr
            if base is None:
                return None
            dotted = f"{base}.{node.attr}"
            if base.split(".")[0] in self.own:
                return dotted
            if dotted in _ANYWHERE or dotted in _WHERE_USED:
                return dotted
            if node.attr in _MODULE_NAMES and node.attr != base.split(".")[-1]:
                return node.attr
        return None

    def attribute(self, node: ast.AST, module: str | None, attr: str) -> None:
        """The rules for reaching ``attr`` (of ``module``, when it is one)."""
        if attr in _FRAME_ATTRS:
            self.hit(node, "attribute", attr, f"access to {attr!r} (frames, code, namespaces or a class's "
                                              f"hierarchy)")
        elif _is_dunder(attr) and attr not in _PLAIN_DUNDERS:
            self.hit(node, "dunder", attr, f"access to the special attribute {attr!r}", unless=("dunder", attr))
        if module is None:
            return
        if _is_dunder(attr) and attr not in ("__name__", "__file__", "__version__", "__all__", "__doc__"):
            self.hit(node, "reach", f"{module}.{attr}", f"access to the special attribute {attr!r} of the module "
                                                        f"{module}")
            return
        if attr in ("environ", "environb", "getenv", "getenvb", "putenv", "unsetenv") and module == "os":
            self.environ(node)
            return
        top = module.split(".")[0]
        if top in self.own:
            return
        if attr.startswith("_") and not _is_dunder(attr):
            self.hit(node, "private", f"{module}.{attr}", f"access to the private attribute {module}.{attr}")
            return
        if attr in _MODULE_NAMES and attr != module.split(".")[-1] and f"{module}.{attr}" not in _ANYWHERE and \
                f"{module}.{attr}" not in _WHERE_USED:
            self.module_use(node, attr, f"a module reached as {module}.{attr}:")
            return
        _, allowed = _rules(module)
        if (allowed is not None and attr not in allowed and not _is_dunder(attr)) or f"{module}.{attr}" in _DENIED:
            self.hit(node, "reach", f"{module}.{attr}", f"access to {attr!r} of {module}, outside what an edit may "
                                                        f"use of that module")

    def environ(self, node: ast.AST) -> None:
        """``os.environ`` only as ``.get("NAME")``, ``["NAME"]`` or ``"NAME" in``, ``os.getenv("NAME")``."""
        up = self.parent.get(node)
        key = None
        if isinstance(node, ast.Attribute) and node.attr == "getenv" and isinstance(up, ast.Call) and up.func is node:
            key = up.args[0] if up.args else None
        elif isinstance(node, ast.Attribute) and node.attr == "environ":
            if isinstance(up, ast.Subscript) and up.value is node:
                key = up.slice
            elif isinstance(up, ast.Attribute) and up.attr == "get" and isinstance(self.parent.get(up), ast.Call):
                call = self.parent[up]
                key = call.args[0] if call.args else None
            elif isinstance(up, ast.Compare) and len(up.ops) == 1 and isinstance(up.ops[0], (ast.In, ast.NotIn)):
                key = up.left
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and "frog" not in key.value.lower()):
            self.hit(node, "environ", "os.environ", "a read of the environment other than one variable by its "
                                                    "literal name (grading's own variables are there)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        base = self.module_of(node.value)
        if node.attr in _REACHES_MODULE_ANYWHERE and base is None and self.module_of(node) == node.attr:
            self.module_use(node, node.attr, f"a module reached as an attribute ({ast.unparse(node)}):")
        self.attribute(node, base, node.attr)
        if node.attr in _NAMERS and id(node) not in self.calls and base is not None:
            self.hit(node, "alias", node.attr, f"a reference to {node.attr} that is not a direct call (an alias, "
                                               f"or an argument to another function: what it reaches can't be read)")
        if isinstance(node.ctx, ast.Store) and node.attr in _BEHAVIOUR_METHODS:
            self.hit(node, "defines", node.attr, f"an assignment of the special method {node.attr} (a value or "
                                                 f"class that answers comparisons or attribute lookups by code of "
                                                 f"its own)")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and base is not None and base.split(".")[0] not in self.own:
            self.hit(node, "monkeypatch", ast.unparse(node), f"an assignment to another module's attribute "
                                                              f"{ast.unparse(node)}")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__" and \
                not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
                     and not node.slice.value.startswith("_")):
            self.hit(node, "dynamic", "__dict__", "a namespace read by a computed or private key")
        self.generic_visit(node)

    # -- calls --
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if isinstance(func, ast.Name) and name in self.modules:  # from operator import attrgetter as ag
            name = self.modules[name].rsplit(".", 1)[-1]
        if name in _DYNAMIC:
            at = _DYNAMIC[name] + (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                   and func.value.id in ("object", "type"))
            self.literal_name(node, name, node.args[at] if len(node.args) > at else None)
        elif name in ("attrgetter", "methodcaller"):
            names = node.args if name == "attrgetter" else node.args[:1]
            up = self.parent.get(node)  # attrgetter("modules")(sys): the object is known after all
            applied = up.args[0] if isinstance(up, ast.Call) and up.func is node and up.args else None
            for a in names or [None]:
                self.literal_name(node, name, a, dotted=name == "attrgetter", obj=applied)
        elif name == "type" and len(node.args) == 3:
            self.hit(node, "dynamic", "type", "a class made by type() from a computed namespace")
        elif name in ("format", "format_map") and isinstance(func, ast.Attribute) and \
                not isinstance(self.fold(func.value), str):
            self.hit(node, "dynamic", "format", "a format string that is not a literal (str.format reaches "
                                                "attributes by the names in its fields)")
        elif name in ("ref", "proxy") and len(node.args) > 1 and (
                isinstance(func, ast.Attribute) and self.module_of(func.value) == "weakref"
                or isinstance(func, ast.Name) and self.modules.get(func.id, "").startswith("weakref.")):
            self.hit(node, "callback", name, "a weak reference with a callback (run when the interpreter decides)")
        self.generic_visit(node)

    def literal_name(self, node: ast.Call, func: str, arg: ast.AST | None, dotted: bool = False,
                     obj: ast.AST | None = None) -> None:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            self.hit(node, "dynamic", func, f"{func} with a computed name")
            return
        if func in ("getattr", "setattr", "delattr") and node.args:
            obj = node.args[0]
        module = self.module_of(obj) if obj is not None else None
        owner = module
        for part in arg.value.split(".") if dotted else [arg.value]:
            if part.startswith("_") and not _is_dunder(part):
                self.hit(node, "private", part, f"{func} of the private attribute {part!r}", unless=("attr", part))
            self.attribute(node, owner, part)
            if part in _REACHES_MODULE_ANYWHERE and owner is None:
                self.module_use(node, part, f"a module reached by {func} as the attribute {part!r}:")
            owner = part if part in _REACHES_MODULE_ANYWHERE else None if owner is None else \
                f"{owner}.{part}" if f"{owner}.{part}" in _ANYWHERE or f"{owner}.{part}" in _WHERE_USED else \
                part if part in _MODULE_NAMES else None
        if func == "setattr" and arg.value in _BEHAVIOUR_METHODS:
            self.hit(node, "defines", arg.value, f"an assignment of the special method {arg.value} (a value or class "
                                                 f"that answers comparisons or attribute lookups by code of its own)")
        if func == "setattr" and module is not None and module.split(".")[0] not in self.own:
            self.hit(node, "monkeypatch", f"{module}.{arg.value}", f"an assignment to another module's attribute "
                                                                    f"{module}.{arg.value}")

    # -- strings --
    def fold(self, node: ast.AST | None) -> object:
        if node is None:
            return None
        if id(node) not in self.folded:
            self.folded[id(node)] = _fold(node, self.consts)
        return self.folded[id(node)]

    def generic_visit(self, node: ast.AST) -> None:
        """Each string the edit spells, checked once its literal pieces are put together: at the outermost
        expression that still folds to a string."""
        if isinstance(node, ast.expr) and not isinstance(node, ast.Name):
            value = self.fold(node)
            if isinstance(value, (str, bytes)) and not isinstance(self.fold(self.parent.get(node)), (str, bytes)):
                self.string(node, value if isinstance(value, str) else value.decode("latin-1"))
        super().generic_visit(node)

    def visit_Dict(self, node: ast.Dict | ast.List | ast.Tuple | ast.Set) -> None:
        """A literal table (emoji's is 3 MB) is checked string by string, without a visit per entry."""
        leaves: list[ast.Constant] = []
        todo: list[ast.AST | None] = [node]
        while todo:
            n = todo.pop()
            if isinstance(n, ast.Constant):
                leaves.append(n)
            elif isinstance(n, ast.Dict):
                todo += [*n.keys, *n.values]
            elif isinstance(n, (ast.List, ast.Tuple, ast.Set)):
                todo += n.elts
            else:
                self.generic_visit(node)
                return
        for c in leaves:
            if isinstance(c.value, (str, bytes)):
                self.string(c, c.value if isinstance(c.value, str) else c.value.decode("latin-1"))

    visit_List = visit_Tuple = visit_Set = visit_Dict

    def visit_Constant(self, node: ast.Constant) -> None:
        self.generic_visit(node)  # (NodeVisitor's own visit_Constant looks for long-gone visitor names first)

    def string(self, node: ast.AST, text: str) -> None:
        low = text.lower()
        for s in _STRINGS:
            if s in low:
                self.hit(node, "string", s, f"a string that spells {s!r}")
        named_test = _TEST_FILE.search(text)
        if named_test:
            self.hit(node, "string", "a test file", f"a string naming a test file ({named_test.group(1)!r}): the "
                                                    "tests it is graded by are not for the package to read")
        # the first one the text names (by place, then name): a set's order changes with the hash seed, and the
        # key must be the same in every process (kept analyses are read by others)
        named = sorted((a for a in _FRAME_ATTRS if (a.startswith("__") or "_" in a[:3]) and a in text),
                       key=lambda a: (text.find(a), a))
        if named or len(text) < 40 and any(p in _FRAME_ATTRS for p in text.split(".")):
            self.hit(node, "string", named[0] if named else text, f"a string naming {(named or [text])[0]!r} (an "
                                                                  f"attribute that reaches frames or code, as data: "
                                                                  f"a template engine or getattr reads it)")
        for field_ in _FIELD.findall(text):  # "{0.__globals__}".format(f) reads an attribute by its field name
            for attr in field_.split(".")[1:]:
                attr = attr.split("[")[0]
                if attr in _FRAME_ATTRS or attr.startswith("_"):
                    self.hit(node, "format", attr, f"a format field that reaches the attribute {attr!r}")


_FIELD = re.compile(r"\{([^{}!:]*\.[^{}!:]*)")
"""The field name of a ``str.format`` replacement field that reaches an attribute (``{0.attr}``); an unclosed
field counts (the rest may be added at run time)."""


def _locals(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    """The names a function binds itself (arguments, assignments, loop and ``with`` targets), without those of
    functions nested in it and without those it declares ``global``."""
    out: set[str] = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                                     *(x for x in (fn.args.vararg, fn.args.kwarg) if x))}
    declared: set[str] = set()
    todo = list(fn.body) if isinstance(fn.body, list) else [fn.body]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            continue  # an import inside the function binds a module there: still a module
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(out - declared)


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _names_a_test(module: str) -> bool:
    """Whether a dotted module name reaches into a test module (``tests.test_x``, ``pkg.tests``, ``conftest``)."""
    return any(p in ("test", "tests", "conftest") or p.startswith("test_") for p in module.split("."))


Analysis = tuple[tuple[_Hit, ...], frozenset[tuple[str, str]]]
"""What a source adds up to (see :func:`_analysis`): its hits in file order, and its vocabulary."""


@dataclass(frozen=True)
class _Part:
    """One top-level statement's share of an analysis: its hits (lines counted from the statement's first line,
    0-based) and its vocabulary."""

    hits: tuple[_Hit, ...]
    vocabulary: frozenset[tuple[str, str]]


_PARTS: OrderedDict[tuple[str, str, str], _Part] = OrderedDict()
"""Parts of analyses made or read in this process: (path, context, digest of the statement's exact source) ->
part, the least recently used dropped past :data:`_PARTS_CAP`."""
_PARTS_CAP = 50_000


def _vocabulary(tree: ast.AST) -> set[tuple[str, str]]:
    """The modules a tree imports and the special and attribute names it spells (what allows some hits)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(("module", a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(("module", node.module.split(".")[0]))
        elif isinstance(node, ast.Attribute):
            out.add(("attr", node.attr))
            if _is_dunder(node.attr):
                out.add(("dunder", node.attr))
        elif isinstance(node, ast.Name) and _is_dunder(node.id):
            out.add(("dunder", node.id))
    return out


def _spans(source: bytes, tree: ast.Module) -> list[tuple[int, str]] | None:
    """Each top-level statement's first line (its decorators' included) and the digest of its exact source lines;
    None where two statements share a line (``a = 1; b = 2``), which the parts can't tell apart."""
    lines = source.splitlines(keepends=True)
    out, last = [], 0
    for stmt in tree.body:
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        end = stmt.end_lineno or stmt.lineno
        if first <= last:
            return None
        out.append((first, hashlib.sha256(b"".join(lines[first - 1:end])).hexdigest()))
        last = end
    return out


def _context(path: str, source: bytes, walk: _Walk) -> str:
    """What a statement's hits depend on besides its own source: the file's path (its own package), its first two
    lines (the encoding they may declare), and what the whole module binds (imports anywhere, names bound once to
    a literal). Two statements of the same source under the same context are walked alike."""
    head = b"".join(source.splitlines(keepends=True)[:2])
    h = hashlib.sha256(repr((path, head, sorted(walk.modules.items()), sorted(walk.imported),
                             sorted((k, type(v).__name__, repr(v)) for k, v in walk.consts.items()))).encode())
    return h.hexdigest()


def _remember_part(key: tuple[str, str, str], part: _Part) -> None:
    _PARTS[key] = part
    while len(_PARTS) > _PARTS_CAP:
        try:
            _PARTS.popitem(last=False)
        except KeyError:  # emptied meanwhile by another thread
            break


def _analyse(path: str, source: bytes) -> tuple[Analysis | None, list | None]:
    """:func:`_analysis`, walking only the top-level statements whose source and context no earlier analysis in
    this process (or kept on disk, see :func:`_kept_analysis`) walked: the others' parts are taken as they were,
    their lines moved. The second value is what :func:`_kept_analysis` stores: the context and each statement's
    digest with its part (None where the parts can't be told apart)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None, None
    spans = _spans(source, tree)
    walk = _Walk(path, tree, index=spans is None, walrus=_walrus_possible(source))
    if spans is None:
        walk.visit(tree)
        return (tuple(walk.hits), frozenset(_vocabulary(tree))), None
    context = _context(path, source, walk)
    hits: list[_Hit] = []
    vocabulary: set[tuple[str, str]] = set()
    stored: list | None = [context, []]
    for stmt, (first, digest) in zip(tree.body, spans):
        key = (path, context, digest)
        part = _PARTS.get(key)
        if part is None:
            walk.hits = []
            walk.index(stmt)
            walk.parent[stmt] = tree
            walk.visit(stmt)
            end = stmt.end_lineno or stmt.lineno
            if all(first <= h.line <= end for h in walk.hits):
                part = _Part(tuple(dataclasses.replace(h, line=h.line - first) for h in walk.hits),
                             frozenset(_vocabulary(stmt)))
                _remember_part(key, part)
            else:  # a hit placed outside its statement: this source is walked whole every time
                hits += walk.hits
                vocabulary |= _vocabulary(stmt)
                stored = None
                continue
        else:
            try:
                _PARTS.move_to_end(key)
            except KeyError:  # dropped meanwhile by another thread's grade: the part in hand is still right
                pass
        hits += [dataclasses.replace(h, line=h.line + first) for h in part.hits]
        vocabulary |= part.vocabulary
        if stored is not None:
            stored[1].append([digest, part])
    return (tuple(hits), frozenset(vocabulary)), stored


@functools.lru_cache(maxsize=512)
def _analysis(path: str, source: bytes) -> Analysis | None:
    """What a source adds up to: every construct outside the allowlist, and the vocabulary that allows some
    (modules it imports, special names and attribute names it spells). None: it does not parse. Cached: the
    starting and pristine versions of a file recur at every grade of a task; and by top-level statement
    (:func:`_analyse`): an agent's edit leaves most of a file's statements as they were."""
    return _analyse(path, source)[0]


def _analysis_key(path: str, source: bytes) -> str:
    """What a kept analysis is filed under: the rules (this module's own code), the interpreter's ``ast``, the path
    (it decides the file's own package) and the source."""
    global _RULES_DIGEST
    if _RULES_DIGEST is None:
        with open(__file__, "rb") as f:
            _RULES_DIGEST = hashlib.sha256(f.read()).hexdigest()
    h = hashlib.sha256(f"{_RULES_DIGEST}\0{sys.version_info[:2]}\0{path}\0".encode())
    h.update(source)
    return h.hexdigest()


_RULES_DIGEST: str | None = None


def _hits_of(rows) -> tuple[_Hit, ...]:
    return tuple(_Hit((str(k[0]), str(k[1]), str(k[2])), (str(u[0]), str(u[1])) if u else None, int(line), str(text),
                      str(why)) for k, u, line, text, why in rows)


def _rows_of(hits) -> list:
    return [[list(h.key), list(h.unless) if h.unless else None, h.line, h.text, h.why] for h in hits]


@functools.lru_cache(maxsize=512)
def _kept_analysis(path: str, source: bytes) -> Analysis | None:
    """:func:`_analysis` of a file no agent wrote (a task's starting file, the repository's own), kept on disk in
    ``$FROG_GYM_HOME/analyses`` (host-only: no sandbox mounts it), so that a process grading a task for the first
    time does not walk files another process already walked. The parts of each top-level statement are kept with
    it, and taken back into this process's parts, so that the agent's version of the file is walked only where
    its statements differ (:func:`_analyse`). The agent's own files are never kept. An entry that does not read
    back as written is analysed again."""
    key = _analysis_key(path, source)
    f = _kept_file(key)
    try:
        d = json.loads(f.read_text(encoding="utf-8"))
        if d.get("key") == key:
            if d["parsed"] is False:
                return None
            got = _hits_of(d["hits"]), frozenset((str(a), str(b)) for a, b in d["vocabulary"])
            if d.get("parts"):
                context, parts = d["parts"]
                for digest, (hits, vocabulary) in parts:
                    _remember_part((path, str(context), str(digest)),
                                   _Part(_hits_of(hits), frozenset((str(a), str(b)) for a, b in vocabulary)))
            return got
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    got, parts = _analyse(path, source)
    d = {"key": key, "parsed": got is not None, "hits": _rows_of(got[0]) if got else [],
         "vocabulary": sorted(got[1]) if got else [],
         "parts": [parts[0], [[digest, [_rows_of(part.hits), sorted(part.vocabulary)]] for digest, part in parts[1]]]
         if parts else None}
    keep_json(f, d)
    return got


def _kept_file(key: str):
    from frog_gym import paths

    return paths.home() / "analyses" / key[:2] / f"{key}.json"


def keep_json(f, d: dict) -> None:
    """Write a kept entry whole (a reader sees the old file or the new one); a read-only home only costs the time
    the next process spends making it again."""
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(d), encoding="utf-8")
        os.replace(tmp, f)
    except OSError:
        pass


def keep_analysis(path: str, source: bytes) -> None:
    """Analyse a file no agent wrote (a task's starting file, the repository's own) and keep the result on disk
    for every later process (what a grade does on its first visit of a task)."""
    _kept_analysis(path, source)


def tampering(path: str, old: bytes | None, new: bytes, pristine: bytes | None = None) -> list[str]:
    """What an edit of a Python file adds outside the allowlist, one reason per construct (empty: clean).

    ``old`` is the file as the agent found it and ``pristine`` the repository's own version: a construct either
    already has in the same function, and a module either imports, stays allowed (a fix that restores a
    traceback helper's ``f_globals`` is the repository's code, not a forgery). A file that no longer parses is
    not flagged: it fails its tests.

    >>> tampering("pkg/a.py", b"x = 1\\n", b"import _pytest.reports\\nx = 1\\n")
    ["pkg/a.py:1: adds an import of '_pytest.reports', a module an edit may use only where the file already imports it: import _pytest.reports"]
    >>> tampering("pkg/a.py", b"def f(x):\\n    return x - 1\\n", b"def f(x):\\n    return x + 1\\n")
    []
    """
    if not path.endswith((".py", ".pyw", ".pyi")):
        return []
    # the starting and pristine files first: their parts, kept, spare the walk of every statement the edit left
    before = [a for a in (_kept_analysis(path, old or b""), _kept_analysis(path, pristine or b"")) if a is not None]
    now = _analysis(path, new)
    if now is None:
        return []
    vocabulary = frozenset().union(*(v for _, v in before))
    seen: Counter[tuple[str, str, str]] = Counter()
    for hits, _ in before:
        counts = Counter(h.key for h in hits)
        for k, n in counts.items():
            seen[k] = max(seen[k], n)
    out = []
    for h in now[0]:
        if h.unless is not None and h.unless in vocabulary:
            continue
        if seen[h.key] > 0:
            seen[h.key] -= 1
            continue
        out.append(f"{path}:{h.line}: adds {h.why}: {h.text}")
    return out


# -- canaries -------------------------------------------------------------------------------------------------

_WORDS = ("value", "parse", "render", "empty", "nested", "default", "roundtrip", "unicode", "repr", "order",
          "format", "missing", "keys", "error", "compare", "convert", "simple", "multiple", "invalid", "none")


@dataclass
class Canaries:
    """Tests appended to one test file at grading: each of ``must_fail`` must fail, ``must_pass`` must pass.

    Names are drawn from ``rng`` in the style of real test names, so agent code can't tell them from the
    file's own tests by name.
    """

    file: str
    must_fail: list[str] = field(default_factory=list)
    must_pass: list[str] = field(default_factory=list)
    source: str = ""

    @classmethod
    def make(cls, file: str, rng: random.Random, taken: set[str]) -> Canaries:
        def name() -> str:
            while True:
                n = "test_" + "_".join(rng.sample(_WORDS, 2)) + f"_{rng.randrange(10, 99)}"
                if n not in taken:
                    taken.add(n)
                    return n

        c = cls(file)
        a, b = rng.randrange(1, 10**6), rng.randrange(1, 10**6)
        b = b if b != a else a + 1
        c.must_fail = [name(), name()]
        c.must_pass = [name()]
        c.source = ("\n\n"
                    f"def {c.must_fail[0]}():\n    assert {a} == {b}\n\n\n"
                    f"def {c.must_fail[1]}():\n    raise ValueError({str(a)!r})\n\n\n"
                    f"def {c.must_pass[0]}():\n    assert {a} + 0 == {a}\n")
        return c

    def ids(self) -> list[str]:
        return [f"{self.file}::{n}" for n in (*self.must_fail, *self.must_pass)]

    def verdict(self, statuses: dict[str, str], exit_code: int | None, collect_errors: list[str] = ()) -> list[str]:
        """Reasons the run is not to be trusted (empty: the canaries behaved).

        A canary may be reported several times, once per parameter of an autouse fixture (``name[param]``). A
        canary missing because its file failed to collect is honest: every test of that file failed with it; so
        is one missing because another file failed to collect and pytest stopped there (exit status 2): no test
        ran at all, so nothing can have passed (a bug or an edit that breaks a test module at import)."""
        def of(name: str) -> list[str]:
            base = f"{self.file}::{name}"
            return [s for t, s in statuses.items() if t == base or t.startswith(base + "[")]

        out = []
        for n in self.must_fail:
            seen = of(n)
            if any(s in ("PASSED", "XFAIL") for s in seen):
                out.append("a test that must fail reported a pass: outcomes were rewritten in the test process")
            elif not seen and not any(e.split("::")[0] == self.file for e in collect_errors) and \
                    not (collect_errors and exit_code == 2 and not statuses):
                out.append("a canary test was never reported: the test run was cut short or filtered")
        for n in self.must_pass:
            if "FAILED" in of(n):
                out.append("a test that must pass reported FAILED: outcomes were rewritten in the test process")
        if exit_code == 0:
            out.append("pytest exited 0 although tests that must fail ran: the exit status was forged")
        return sorted(set(out))


# -- authenticated reports -----------------------------------------------------------------------------------

BEHAVIOUR_SLOTS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__len__",
                   "__contains__", "__format__", "__add__", "__radd__", "__iadd__", "__rsub__", "__rmul__", "__rmod__",
                   "__rtruediv__", "__ror__", "__rand__", "__index__", "__instancecheck__", "__subclasscheck__")
"""The special methods that decide how a value compares, converts or formats (:data:`_BEHAVIOUR_METHODS` less the
attribute and finaliser hooks): the report plugin's vault checks, in the test process, that such a method of any
class, where a file the agent changed made it, is code that the repository's own version of that file defines."""


def defined_names(source: bytes) -> dict[str, list[str]]:
    """What a module's source defines (``"code"``): every function, lambda, comprehension and class, by the
    qualified name CPython gives its code object (``f.<locals>.C.m``, ``C.<lambda>``). Source that does not parse
    defines nothing. (A new dictionary each call, of a walk made once per source: a task's pristine file recurs at
    every grade.)"""
    return {"code": list(_defined_code(source))}


def kept_defined_names(source: bytes) -> dict[str, list[str]]:
    """:func:`defined_names` of a file no agent wrote (the repository's own version of a file the agent changed, at
    every grade of its task), kept on disk beside the analyses (:func:`_kept_analysis`), so that a process grading
    the task for the first time does not parse it again. An entry that does not read back as written is made again."""
    return {"code": list(_kept_defined_code(source))}


@functools.lru_cache(maxsize=256)
def _kept_defined_code(source: bytes) -> tuple[str, ...]:
    key = _analysis_key("<defined names>", source)
    f = _kept_file(key)
    try:
        d = json.loads(f.read_text(encoding="utf-8"))
        code = d.get("code")
        if d.get("key") == key and isinstance(code, list) and all(isinstance(q, str) for q in code):
            return tuple(code)
    except (OSError, ValueError, AttributeError):
        pass
    got = _defined_code(source)
    keep_json(f, {"key": key, "code": list(got)})
    return got


@functools.lru_cache(maxsize=256)
def _defined_code(source: bytes) -> tuple[str, ...]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    code: set[str] = set()

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = prefix + child.name
                code.add(q)
                for d in child.decorator_list:
                    visit(d, prefix)
                if isinstance(child, ast.ClassDef):
                    for b in (*child.bases, *child.keywords):
                        visit(b, prefix)
                    visit(ast.Module(body=child.body, type_ignores=[]), q + ".")
                else:
                    visit(child.args, prefix)
                    visit(ast.Module(body=child.body, type_ignores=[]), q + ".<locals>.")
            elif isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                # a comprehension is a code object of its own before Python 3.12, inlined since: both names
                kind = {ast.ListComp: "listcomp", ast.SetComp: "setcomp", ast.DictComp: "dictcomp"}.get(type(child), "genexpr")
                code.add(f"{prefix}<{kind}>")
                visit(child, prefix)
                visit(child, f"{prefix}<{kind}>.")
            elif isinstance(child, ast.Lambda):
                code.add(prefix + "<lambda>")
                visit(child.args, prefix)
                visit(ast.Expr(child.body), prefix + "<lambda>.<locals>.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return tuple(sorted(code))


def sign(key: bytes, body: dict) -> str:
    """HMAC-SHA256 of a report body's canonical JSON (the plugin computes the same)."""
    return hmac.new(key, json.dumps(body, sort_keys=True, separators=(",", ":")).encode(), hashlib.sha256).hexdigest()


def verify(key: bytes, report: dict) -> bool:
    """Whether ``report`` (with its ``"signature"``) was signed with ``key``."""
    body = {k: v for k, v in report.items() if k != "signature"}
    got = report.get("signature")
    return isinstance(got, str) and hmac.compare_digest(got, sign(key, body))


def scan(edits, limit: int = 50) -> list[str]:
    """:func:`tampering` over ``(path, old, new, pristine)`` tuples, at most ``limit`` reasons."""
    out: list[str] = []
    for path, old, new, pristine in edits:
        if new is not None:
            out += tampering(path, old, new, pristine)
    return out[:limit]
