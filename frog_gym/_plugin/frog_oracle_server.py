"""The parent of a warm oracle server; runs inside the bubblewrap sandbox (see frog_gym.grading.oracle_server).

The cold replay of the behavioural oracle (``frog_gym.grading.oracle.replay``) starts a sandbox and an
interpreter per grade: ``python -s`` with the hash seed pinned to 0, ``/frog/oracle`` first on ``sys.path``, the
working folder off it, then ``frog_oracle.replay``. This parent is started exactly so (the host gives it the same
environment, flags and mounts over a tree that holds only the package) and imports ``frog_oracle`` and nothing of
``/testbed``, so no code the agent wrote ever runs in it. Per request (one JSON line on stdin) it forks a child
that does what the cold replay's process does (working folder ``/testbed``, its own session, stdio to
``/frog/out/log.txt``): the package is imported by the child, from the tree as the host left it for this grade.
Then it kills every other process of the sandbox, empties ``/tmp``, ``/dev/shm`` and System V IPC, and only
then answers. It keeps the package's modules compiled (see ``_COMPILED``). The parent is not dumpable (no child can ptrace it or write its memory), and its objects are
frozen out of the garbage collector. Being forked from the same interpreter, a child's hash seed is the cold
replay's (0), so a set's order, which an outcome line may show, is the same.
"""

import ctypes
import gc
import importlib
import os
import sys
import time

from frog_fork import code_ahead, compiled, fork_run, lines, say, source, stdio_to, use_compiled

import frog_oracle

_COMPILED = {}
"""The package's modules compiled by the parent: absolute path -> (source bytes, code). Before each fork the parent
compiles the request's files (source in, code object out: nothing is executed, no symlink is followed out of
``/testbed``, and no process of a replay is alive then); a child takes that code only for a file whose bytes are
still exactly those, and compiles anything else itself, as cold."""
_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0


def _child(req):
    os.setsid()
    stdio_to("/frog/out/log.txt")
    _libc.prctl(4, 1, 0, 0, 0)  # as a cold replay's process is
    gc.enable()
    os.chdir("/testbed")
    use_compiled(_COMPILED)
    sys.path_importer_cache.clear()  # the tree is this grade's: nothing the parent's finders saw of it holds
    importlib.invalidate_caches()
    frog_oracle.replay("/frog/in/calls.jsonl", "/frog/out/results.jsonl")


def main():
    gc.disable()
    os.chdir("/")
    say({"ready": True, "hashseed": os.environ.get("PYTHONHASHSEED"), "path": sys.path[:1],
         "testbed": sorted(m for m, v in list(sys.modules.items())
                           if str(getattr(v, "__file__", "") or "").startswith("/testbed"))})
    gc.collect()
    gc.freeze()
    requests = lines()
    for req in requests:
        start = time.monotonic()
        unkept = set(req.get("unkept", ()))  # the agent's files: their code is never kept by the host
        wanted = [(_COMPILED, path, data, compiled, "compile", path not in unkept) for path in req.get("compile", ())
                  for data in (source(path, ["/testbed"]),) if data is not None]
        made, new = code_ahead(wanted, requests, bool(req.get("store")))
        gc.freeze()
        code, usage, clean = fork_run(lambda: _child(req), start + req["timeout"])
        own = os.times()
        say({"made": made, "exit": code, "clean": clean, "cpu": usage.ru_utime + usage.ru_stime, "parent_cpu": own.user + own.system,
             "seconds": time.monotonic() - start, "new": new})


main()
