"""What the parents of the warm fork servers share (``frog_server.py`` for test runs, ``frog_oracle_server.py``
for the behavioural oracle's replays): one JSON line per request and per answer, the wait for a child with a
deadline, and the clean-up after it (every other process of the sandbox killed, ``/tmp``, ``/dev/shm`` and System V
IPC emptied) before the parent answers. Runs inside the sandbox; imports only the standard library."""

import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import time


def say(obj):
    """Write one JSON line to stdout (the host's end of the pipe), whole."""
    data = memoryview((json.dumps(obj) + "\n").encode())
    while data:
        data = data[os.write(1, data):]


def lines():
    """The host's requests, one JSON object per line of stdin, until it closes."""
    buf, parts = b"", []  # a long line (the host's kept code) is read in many chunks: each is searched once
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield json.loads(line)
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return
        if b"\n" in chunk:
            buf, parts = b"".join([buf, *parts, chunk]), []
        else:
            parts.append(chunk)


def others():
    """Every live process of the sandbox but its init and this one."""
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


def kill_others(reaped=None):
    """Kill every process of the sandbox but its init and this one; True when none is left. This process's own
    children are reaped on the way, each as soon as it is dead: their status and rusage go in ``reaped`` (pid ->
    (status, rusage)), where :func:`wait_child` finds its child's when it killed it here (no later wait can)."""
    for _ in range(500):
        if not others():
            return True
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            while True:
                done, st, ru = os.wait4(-1, os.WNOHANG)
                if not done:
                    break
                if reaped is not None:
                    reaped[done] = (st, ru)
        except ChildProcessError:
            pass
        time.sleep(0.002)
    return False


def wipe():
    """Empty what a child could leave for the next one outside /testbed (which the host syncs)."""
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


def _pidfd(pid):
    """A pidfd of child ``pid`` (readable once it exits), or None where the kernel or Python has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def wait_child(pid, deadline):
    """Wait for child ``pid`` until ``deadline`` (monotonic); then kill every other process, reap the child and
    empty the shared folders. Returns (exit code or None when it ran past the deadline, its rusage, clean).
    The wait blocks on the child's pidfd (no CPU spent while the tests run); without one it polls every 2 ms."""
    status, usage = None, None
    fd = _pidfd(pid)
    poller = None
    if fd is not None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
    try:
        while True:
            done, st, ru = os.wait4(pid, os.WNOHANG)
            if done:
                status, usage = st, ru
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if poller is not None:
                poller.poll(min(int(left * 1000) + 1, 60_000))
            else:
                time.sleep(0.002)
    finally:
        if fd is not None:
            os.close(fd)
    reaped = {}
    clean = kill_others(reaped)
    if status is None:  # killed at the deadline: reaped by kill_others when it was dead in time for its reap
        status, usage = reaped[pid] if pid in reaped else os.wait4(pid, 0)[1:]
        code = None
    else:
        code = os.waitstatus_to_exitcode(status)
    wipe()
    return code, usage, clean


def fork_run(body, deadline):
    """Fork a child that runs ``body()`` and exits as the interpreter would (``SystemExit``'s status, a traceback and
    1 for any other exception, 0 when it returns); the parent waits for it (:func:`wait_child`) and returns what that
    returns."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            body()
        except SystemExit as e:
            end(e.code)
        except BaseException:  # noqa: BLE001 (printed and exit status 1, as the interpreter would)
            import traceback

            traceback.print_exc()
            end(1)
        end(0)
    return wait_child(pid, deadline)


def end(code):
    """Exit the way the interpreter exits on ``SystemExit(code)`` (threads joined, ``atexit`` handlers run,
    stdio flushed, the same status), less the teardown of every object, which only costs time here: the
    parent removes whatever the child leaves."""
    import atexit
    import threading

    threading._shutdown()
    atexit._run_exitfuncs()
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:  # noqa: BLE001 (as at interpreter exit: a broken stream is not an error)
            pass
    os._exit(code & 0xFF)


def stdio_to(path):
    """The child's stdin from /dev/null, its stdout and stderr to ``path`` (truncated)."""
    fd = os.open("/dev/null", os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


CODE_CAP = 64 << 20
"""Source bytes each code cache keeps at most (the oldest entries go first)."""


def under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def source(path, roots):
    """The bytes of a regular file under ``roots`` (no symlink leading out of them), or None."""
    if not (under(path, roots) and under(os.path.realpath(path), roots)):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    except OSError:
        return None
    finally:
        os.close(fd)


STORE_FORMAT = b"frog-code-1"
"""Part of every kept code's name (:func:`code_ahead`): a change of what a parent makes changes it, so nothing kept
before is taken."""


def _name(kind, path, data):
    """The name the host keeps code under: a digest of what made it (the format, the kind of making with its tool's
    version, the interpreter's bytecode magic, the path compiled into it) and of the exact source bytes."""
    import hashlib
    from importlib.util import MAGIC_NUMBER

    h = hashlib.sha256(b"\0".join((STORE_FORMAT, kind.encode(), MAGIC_NUMBER, path.encode(), b"")))
    h.update(data)
    return h.hexdigest()


def kept(names, requests):
    """What the host's store keeps under ``names`` (:func:`_name`), unmarshalled: one ``{"need": [...]}`` line, whose
    answer (``{"code": {name: base64 marshal}}``) is the next line of ``requests``. A copy that does not load is left
    out (its caller makes it again). The host's copies came from parents like this one, over this pipe, which no
    child can write to (a child's stdio are its own, and this process is not dumpable)."""
    import base64
    import marshal

    say({"need": list(names)})
    got = (next(requests, None) or {}).get("code") or {}
    out = {}
    for name in names:
        if isinstance(got.get(name), str):
            try:
                out[name] = marshal.loads(base64.b64decode(got[name]))
            except Exception:  # noqa: BLE001 (a damaged copy: made again by the caller)
                pass
    return out


def code_ahead(wanted, requests, store):
    """Fill the parent's code caches for one request, before any child of it is forked. ``wanted``: (cache, path,
    source bytes, make, kind, keep) for each file; a file whose bytes the cache already holds is done. With ``store``
    (the host keeps code on disk), the parent names each other file marked ``keep`` (:func:`_name`), asks the host
    for what it kept under those names (:func:`kept`) and makes only the rest; a copy that does not load as code is
    made again. Returns (how many code objects were made, {name:
    [path, base64 marshal]} of those made for files marked ``keep``, for the host to keep)."""
    import base64
    import marshal

    todo = [w for w in wanted if not (w[1] in w[0] and w[0][w[1]][0] == w[2])]
    names = [_name(kind, path, data) if store and keep else None for _, path, data, _, kind, keep in todo]
    got = kept([n for n in names if n], requests) if any(names) else {}
    made, new = 0, {}
    for (cache, path, data, make, _, _), name in zip(todo, names):
        code = got.get(name) if name else None
        if type(code) is not type(_name.__code__):
            code = None
        if code is None:
            try:
                code = make(data, path)
            except Exception:  # noqa: BLE001 (a file that doesn't compile here is left to the child, as cold)
                continue
            made += 1
            if name:
                new[name] = [path, base64.b64encode(marshal.dumps(code)).decode()]
        keep_code(cache, path, data, code)
    return made, new


def keep_code(cache, path, data, code):
    """Put ``code`` made of ``data`` in ``cache`` (path -> (source bytes, code)), the oldest entries leaving past
    :data:`CODE_CAP`."""
    cache.pop(path, None)
    cache[path] = (data, code)
    while sum(len(v[0]) for v in cache.values()) > CODE_CAP and len(cache) > 1:
        del cache[next(iter(cache))]


def compiled(source, path):
    """What the import system's ``SourceLoader.source_to_code`` makes of a module."""
    return compile(source, path, "exec", dont_inherit=True)


def use_compiled(cache):
    """Let this child's imports take the parent's code (``cache``: path -> (source bytes, code), made by
    :func:`compiled`) for a module whose source bytes are still exactly those; anything else is compiled as usual."""
    from importlib import machinery

    own_compile = machinery.SourceFileLoader.source_to_code

    def source_to_code(self, data, path, *, _optimize=-1):
        hit = cache.get(path)
        if hit is not None and _optimize == -1 and hit[0] == data:
            return hit[1]
        return own_compile(self, data, path, _optimize=_optimize)

    machinery.SourceFileLoader.source_to_code = source_to_code
