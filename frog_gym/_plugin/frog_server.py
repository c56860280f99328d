"""The parent of a grading fork server; runs inside the bubblewrap sandbox (see frog_gym.grading_server).

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
"""

import ctypes
import gc
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

TESTBED = "/testbed"
_PATH = list(sys.path)
sys.path[:] = [p for p in sys.path[1:] if p != TESTBED and not p.startswith(TESTBED + "/")]
_ENV = dict(os.environ)
os.chdir("/")
_PR_SET_DUMPABLE = 4
_PRELOADED_PLUGINS = set()
_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _say(obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(1, data):]


def _lines():
    buf = b""
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield json.loads(line)
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        buf += chunk


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
    bad = []
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 (any failure just keeps the module out of the preload)
            bad.append(name)
            continue
        if any(_foreign(m, owned) for m in list(sys.modules)):
            bad.append(name)
            break  # this process is no longer clean: the host restarts it without that module
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


def _others():
    me, out = os.getpid(), []
    for n in os.listdir("/proc"):
        if n.isdigit() and int(n) not in (1, me):
            try:
                with open(f"/proc/{n}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        out.append(int(n))
            except (OSError, IndexError):
                pass
    return out


def _kill_others():
    """Kill every process of the sandbox but its init and this one; True when none is left."""
    for _ in range(500):
        if not _others():
            return True
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.002)
    return False


def _wipe():
    """Empty what a grade could leave for the next one outside /testbed (which the host syncs)."""
    for top in ("/tmp", "/dev/shm"):
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for n in names:
            p = os.path.join(top, n)
            try:
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                else:
                    os.unlink(p)
            except OSError:
                pass
    for kind in ("shm", "msg", "sem"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                if len(f.readlines()) > 1:
                    subprocess.run(["ipcrm", "-a"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   check=False)
                    break
        except OSError:
            pass


def _child(req, pytest):
    """Become ``python -m pytest <args>`` run in /testbed, and run it (never returns)."""
    os.setsid()
    fd = os.open("/dev/null", os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    fd = os.open("/frog/out/log.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    gc.enable()
    os.environ.clear()
    os.environ.update(_ENV)
    os.environ.update(req["env"])
    os.chdir(TESTBED)
    sys.path[:] = [TESTBED, *_PATH[1:]]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    from _pytest.assertion import rewrite

    warn = rewrite.AssertionRewritingHook._warn_already_imported

    def _warn_unless_preloaded(self, name):
        if name not in _PRELOADED_PLUGINS:
            warn(self, name)

    rewrite.AssertionRewritingHook._warn_already_imported = _warn_unless_preloaded
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *req["args"]]
    raise SystemExit(pytest.console_main())


def main():
    gc.disable()  # then gc.freeze() before each fork: children neither scan nor copy the parent's objects
    with open("/frog/in/server.json") as f:
        config = json.load(f)
    owned = set(config["owned"])
    try:
        import pytest
    except ImportError as e:  # pytest itself needs the package under test (iniconfig, pluggy): grade cold
        _say({"ready": False, "bad": [], "error": f"importing pytest needs the package under test: {e}"})
        return

    bad = _preload(config["preload"], owned)
    _say({"ready": not bad, "bad": bad, "modules": len(sys.modules), "dumpable": _libc.prctl(3, 0, 0, 0, 0),
          "testbed": sorted(m for m in list(sys.modules) if _foreign(m, owned))})
    if bad:
        return
    global _PRELOADED_PLUGINS
    _PRELOADED_PLUGINS = _plugin_modules() & set(sys.modules)
    gc.collect()
    gc.freeze()
    for req in _lines():
        if not _protected(req["protect"]):
            _say({"error": "a protected test path is no longer a read-only mount"})
            return
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(req, pytest)
        deadline = start + req["timeout"]
        status, usage = None, None
        while True:
            done, st, ru = os.wait4(pid, os.WNOHANG)
            if done:
                status, usage = st, ru
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.002)
        clean = _kill_others()
        if status is None:
            _, status, usage = os.wait4(pid, 0)
            code = None
        else:
            code = os.waitstatus_to_exitcode(status)
        _wipe()
        own = os.times()
        _say({"exit": code, "clean": clean, "cpu": usage.ru_utime + usage.ru_stime, "parent_cpu": own.user + own.system,
              "seconds": time.monotonic() - start})


main()
