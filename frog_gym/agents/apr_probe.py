"""The `apr` agent's probe: a standalone script it writes into the sandbox's /tmp and runs with the venv's
Python. It needs only the standard library and pytest (the repository venv has no ``coverage``).

``run [--budget S] [--prefer NAMES] [PYTEST ARGS]`` runs the suite untraced and saves the failing tests
(the baseline); a test that fails because there is no network or a missing optional dependency is not
counted (the sandbox has neither).
``trace`` then runs the failing tests' files in-process under ``sys.settrace``, failing tests first, and records which source lines each test executes (test files, ``build/`` and everything
outside the repository are not counted). Lines are ranked by Ochiai suspiciousness,
failed(l) / sqrt(total_failed * (failed(l) + passed(l))), boosted where a failing test's traceback passes.
Both stop starting new tests after ``--budget`` seconds, so a slow suite gives a partial answer instead
of a timeout.

``check [--keep]`` reruns the first failing test, then all of them, and when fewer fail the whole suite,
and reports whether the current tree fixes them without breaking a test that passed before; with
``--keep`` a partial fix (fewer failing, none broken) becomes the baseline the next check compares with.

``repro FILE`` runs a test module of the statement's reproductions (written outside the tree) and adds
those that fail to the baseline's failing tests.

A watchdog prints what is known and exits when a mode overruns its budget (a slow test cannot be
interrupted from inside pytest).

``read PATH OFFSET`` prints a base64 chunk of a file (exact bytes, unlike the capped terminal output).

Each mode prints one line ``APR-PROBE {json}`` as its last line of output.
"""

import base64
import json
import math
import os
import sys
import threading
import time

STATE = "/tmp/frog_apr"
ROOT = os.getcwd()
CHUNK = 9000
TOP = 40


REPRO = os.path.join(STATE, "test_repro.py")


def _id(nodeid):
    """A test's id; pytest names a test of the reproductions (outside the tree) by its bare ``::name``."""
    return REPRO + nodeid if nodeid.startswith("::") else nodeid


def _is_test_file(path):
    rel = os.path.relpath(path, ROOT)
    parts = rel.split(os.sep)
    name = parts[-1]
    return (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
        or any(p in ("tests", "test", "testing") for p in parts[:-1])
    )


def _counted(path, cache={}):  # noqa: B006  (a per-process memo)
    hit = cache.get(path)
    if hit is None:
        rel = os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else None
        hit = bool(rel) and path.endswith(".py") and not rel.startswith(("build" + os.sep, ".")) \
            and not _is_test_file(path)
        cache[path] = hit
    return hit


class Spectrum:
    """A pytest plugin: per test, its outcome, the source lines it ran, and its traceback lines."""

    def __init__(self, budget, prefer=(), first=()):
        self.budget = budget
        self.prefer = [p.lower() for p in prefer if p]
        self.first = set(first)
        self.started = time.monotonic()
        self.lines = {}
        self.failed = {}
        self.trace_lines = {}
        self.current = None
        self.collect_errors = []

    def _local(self, frame, event, arg):
        if event == "line":
            self.current.add((frame.f_code.co_filename, frame.f_lineno))
        return self._local

    def _global(self, frame, event, arg):
        # A module's top level runs once, at the first import: a test that happened to import it first
        # would make every definition line look suspicious.
        if frame.f_code.co_name != "<module>" and _counted(frame.f_code.co_filename):
            self.current.add((frame.f_code.co_filename, frame.f_lineno))
            return self._local
        return None

    def pytest_collection_modifyitems(self, session, config, items):
        # The failing tests first, then those named like the statement: they matter most under the budget.
        items.sort(key=lambda item: (_id(item.nodeid) not in self.first,
                                     not any(p in item.nodeid.lower() for p in self.prefer)))

    def _start(self, nodeid):
        self.current = self.lines.setdefault(nodeid, set())
        sys.settrace(self._global)
        threading.settrace(self._global)

    def _stop(self):
        sys.settrace(None)
        threading.settrace(None)

    def pytest_runtest_logstart(self, nodeid, location):
        self._start(_id(nodeid))

    def pytest_runtest_logfinish(self, nodeid, location):
        self._stop()

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed[_id(report.nodeid)] = True
        else:
            self.failed.setdefault(_id(report.nodeid), False)
        if time.monotonic() - self.started > self.budget:
            self.session.shouldstop = f"apr probe: time budget of {self.budget:g}s used"

    def pytest_sessionstart(self, session):
        self.session = session

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors.append(report.nodeid)

    def pytest_exception_interact(self, node, call, report):
        tb = getattr(call.excinfo, "traceback", None) or []
        for entry in tb:
            path = str(entry.path)
            if _counted(path):
                self.trace_lines.setdefault((path, entry.lineno + 1), set()).add(_id(report.nodeid))


def _pytest(args, plugins=()):
    import pytest

    base = ["-q", "-p", "no:cacheprovider", "-o", "addopts=", "--tb=short"]
    if any(a.startswith(("/", "..")) for a in args):  # the reproductions, outside the tree: same node ids
        base += ["--rootdir", ROOT]
    return pytest.main(base + list(args), plugins=list(plugins))


def _save(name, data):
    os.makedirs(STATE, exist_ok=True)
    with open(os.path.join(STATE, name), "w") as f:
        json.dump(data, f)


def _load(name, default=None):
    try:
        with open(os.path.join(STATE, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def _options(args):
    budget, prefer = 20.0, []
    while args[:1] in (["--budget"], ["--prefer"]):
        if args[0] == "--budget":
            budget = float(args[1])
        else:
            prefer = args[1].split(",")
        args = args[2:]
    return budget, prefer, args


def _watchdog(seconds, finish):
    """Past ``seconds``, print ``finish()`` (what is known so far) and exit: one slow test must not turn
    the whole command into a timeout with no answer."""

    def fire():
        for _ in range(3):
            try:
                result = dict(finish(), deadline_hit=True)
                break
            except RuntimeError:  # a dict changed size under us: the tests are still running
                time.sleep(0.05)
        else:
            result = {"error": "deadline hit while tests were running"}
        _emit(result)
        os._exit(0)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def run(args):
    """The whole suite, untraced: the failing tests, and the baseline the check compares against."""
    budget, prefer, args = _options(args)
    outcomes = Outcomes(budget, prefer)

    def result(code=None):
        failing = sorted(outcomes.failed)
        # After an early stop the regression check reruns only what ran; otherwise the suite as invoked.
        stopped = outcomes.stopped or code is None
        _save("baseline.json", {"failing": failing, "args": sorted(outcomes.seen) if stopped else args})
        return {"mode": "run", "exit": code, "ran": len(outcomes.seen), "failed": len(failing),
                "failing": failing[:30], "offline": len(outcomes.offline), "stopped_early": stopped}

    _watchdog(budget * 1.6, result)
    return result(int(_pytest(args, [outcomes])))


def repro(args):
    """The statement's reproductions (a test module the agent wrote outside the tree) join the baseline:
    those that fail are failing tests to localize from and to fix; the suite stays the regression check."""
    budget, _, args = _options(args)
    base = _load("baseline.json")
    if base is None:
        return {"mode": "repro", "error": "no baseline: run `run` first"}
    outcomes = Outcomes(budget)
    _watchdog(budget * 1.6, lambda: {"mode": "repro", "error": "the reproductions ran out of time"})
    code = int(_pytest(args, [outcomes]))
    failing = sorted(t for t in outcomes.failed if t in outcomes.seen)
    base.update(failing=sorted(set(base["failing"]) | set(failing)), repro=failing)
    _save("baseline.json", base)
    return {"mode": "repro", "exit": code, "ran": len(outcomes.seen), "failed": len(failing), "failing": failing}


def trace(args):
    """The failing tests and their neighbours (the other tests of their files), traced: Ochiai per line."""
    budget, prefer, args = _options(args)
    base = _load("baseline.json")
    if not base or not base["failing"]:
        return {"mode": "trace", "error": "no failing tests in the baseline: run `run` first"}
    failing_set = set(base["failing"])
    files = sorted({t.split("::", 1)[0] for t in failing_set})
    if base.get("repro"):  # the reproductions alone run no passing test: add the tests that share their names
        files += [f for f in _neighbours(prefer) if f not in files]
    spec = Spectrum(budget, prefer, first=failing_set)

    def result(code=None):
        outcome = dict(spec.failed)
        failing = sorted(t for t, f in outcome.items() if f)
        n_fail = len(failing)
        counts = {}
        for nodeid, lines in list(spec.lines.items()):
            failed = outcome.get(nodeid)
            if failed is None:  # still running: its outcome is unknown
                continue
            for key in list(lines):
                c = counts.setdefault(key, [0, 0])
                c[0 if failed else 1] += 1
        scored = []
        for (path, line), (ef, ep) in counts.items():
            if ef == 0:
                continue
            score = ef / math.sqrt(n_fail * (ef + ep))
            in_tb = len(spec.trace_lines.get((path, line), ()))
            scored.append((score + (0.5 if in_tb else 0.0), ef, -ep, os.path.relpath(path, ROOT), line))
        scored.sort(key=lambda s: (-s[0], -s[1], s[2], s[3], s[4]))
        return {"mode": "trace", "exit": code, "passed": len(outcome) - n_fail, "failed": n_fail,
                "stopped_early": code is None or time.monotonic() - spec.started > budget,
                "suspicious": [[rel, line, round(score, 4)] for score, _, _, rel, line in scored[:TOP]]}

    _watchdog(budget * 1.6, result)
    return result(int(_pytest(files, [spec])))


def _neighbours(names, most=2):
    """The test files that mention the statement's names most (names in nearly every file say nothing)."""
    import re

    texts = {}
    for d, subdirs, filenames in os.walk(ROOT):
        subdirs[:] = [s for s in subdirs if not s.startswith(".") and s not in ("build", "node_modules")]
        for name in filenames:
            path = os.path.join(d, name)
            if name.endswith(".py") and name != "conftest.py" and _is_test_file(path):
                try:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        texts[os.path.relpath(path, ROOT)] = f.read()
                except OSError:
                    continue
    if not texts:
        return []
    score = dict.fromkeys(texts, 0)
    for n in names:
        word = re.compile(r"\b" + re.escape(n) + r"\b")
        hits = {p: len(word.findall(t)) for p, t in texts.items()}
        if sum(1 for h in hits.values() if h) > 0.8 * len(texts) and len(texts) > 2:
            continue
        for p, h in hits.items():
            score[p] += h
    ranked = sorted((p for p in score if score[p]), key=lambda p: (-score[p], p))
    return ranked[:most]


_NO_NETWORK = (
    "ConnectionError", "ProxyError", "ConnectTimeout", "NewConnectionError", "MaxRetryError", "gaierror",
    "Network is unreachable", "Name or service not known", "Temporary failure in name resolution",
    "No route to host", "nodename nor servname", "Missing dependencies for", "ModuleNotFoundError: No module named",
)


def _offline(report):
    """A failure that says the network or an optional dependency is missing: the sandbox has no network (the
    prompt says so) and only the test requirements installed, so such a test fails whatever the code does
    and tells nothing about the bug."""
    text = str(report.longrepr)[-4000:]
    return any(sign in text for sign in _NO_NETWORK)


class Outcomes:
    """A pytest plugin: which tests ran and which failed; stops starting tests past the budget."""

    def __init__(self, budget=None, prefer=()):
        self.failed = set()
        self.offline = set()
        self.seen = set()
        self.budget = budget
        self.prefer = [p.lower() for p in prefer if p]
        self.started = time.monotonic()
        self.stopped = False

    def pytest_sessionstart(self, session):
        self.session = session

    def pytest_collection_modifyitems(self, session, config, items):
        # Tests named like something the statement mentions run first: they matter most under the budget.
        if self.prefer:
            items.sort(key=lambda item: not any(p in item.nodeid.lower() for p in self.prefer))

    def pytest_runtest_logreport(self, report):
        self.seen.add(_id(report.nodeid))
        if report.failed and _offline(report):
            self.offline.add(_id(report.nodeid))
        elif report.failed:
            self.failed.add(_id(report.nodeid))
        if self.budget is not None and time.monotonic() - self.started > self.budget:
            self.stopped = True
            self.session.shouldstop = f"apr probe: time budget of {self.budget:g}s used"

    def pytest_collectreport(self, report):
        if report.failed:
            self.failed.add(report.nodeid or "<collection>")


def check(args):
    """Does the current tree fix the baseline's failing tests without breaking one that passed?

    The first failing test alone runs first: most wrong candidates fail it, and that is cheap to learn.
    """
    budget = float(args[1]) if args[:1] == ["--budget"] else 25.0
    keep = "--keep" in args
    base = _load("baseline.json")
    if base is None:
        return {"mode": "check", "error": "no baseline: run `run` first"}
    before = set(base["failing"])
    state = {"mode": "check", "accepted": False, "solved": False, "of": len(before)}
    _watchdog(budget, lambda: dict(state, error="the check ran out of time"))
    first = Outcomes()
    _pytest(sorted(before)[:1], [first])
    if first.failed & before or not first.seen:
        return dict(state, targeted_failing=len(before), stage="first failing test")
    targeted = Outcomes()
    _pytest(sorted(before), [targeted])
    still = sorted(targeted.failed & before)
    state.update(targeted_failing=len(still), stage="failing tests")
    if len(still) < len(before):
        suite = Outcomes()
        _pytest(base["args"], [suite])
        new = sorted(suite.failed - before)
        state.update(stage="suite", suite_failing=len(suite.failed), new_failures=new[:20],
                     remaining=sorted(suite.failed & before)[:20], accepted=not new,
                     solved=not new and not suite.failed and not still)  # reproductions are not in the suite
        if keep and state["accepted"] and not state["solved"]:  # the agent builds on this edit
            _save("baseline.json", dict(base, failing=still))
    return state


def read(args):
    path, offset = args[0], int(args[1])
    with open(path, "rb") as f:
        data = f.read()
    chunk = data[offset:offset + CHUNK]
    return {"mode": "read", "size": len(data), "offset": offset, "data": base64.b64encode(chunk).decode()}


_OUT = [1]


def _emit(result):
    os.write(_OUT[0], ("APR-PROBE " + json.dumps(result) + "\n").encode())


def main(argv):
    mode, args = argv[0], argv[1:]
    # pytest's output is noise to the agent: only the result line matters, and the output is capped.
    _OUT[0] = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        result = {"run": run, "repro": repro, "trace": trace, "check": check, "read": read}[mode](args)
    except Exception as e:  # noqa: BLE001  (whatever broke, the agent reads it as data)
        result = {"mode": mode, "error": f"{type(e).__name__}: {e}"}
    sys.stdout.flush()
    _emit(result)
    os._exit(0)  # skip interpreter teardown: threads the tests left behind must not hold the answer back


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
