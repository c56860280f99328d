"""Write a task's statement from its failures and its tests' source, checked before it is kept.

:func:`compose` serves generation (failures from the validation run) and :func:`restate_file`, which
rewrites the statements of a registered task file from what the old statements recorded of the first
failure (its message and traceback), so that no test has to run again.

Example (what ``frog-gym tasks --restate`` runs for each task file):
    >>> restate_file(Path("registry/tasks/inflection.jsonl"))  # doctest: +SKIP
    Counter({'rewritten': 62})
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from frog_gym.generators import statements
from frog_gym.generators.statement_check import problems, symbols_of
from frog_gym.generators.testsource import Evidence, evidence_for_test

WRITER = "builtin-v2"
"""``provenance.statement_writer`` of statements written here by the built-in writer."""
_EVIDENCE_TESTS = 8


def compose(spec, tree: Path, failures: list[statements.Failure], crash: bool, n_bugs: int, level: str,  # noqa: ANN001
            fail_to_pass: list[str] | tuple[str, ...], bug_patch: str,
            writer: Callable[[dict], str] | None = None, sites: list[dict] | None = None) -> str:
    """The statement at ``level``, passing the checker: the writer's text, else the built-in one, else the
    built-in one with less evidence (no reproduction, then no messages), else a bare one naming the failing
    path's entry point. ``sites`` (the bug's ``provenance.sites``) tell which code is on the failing path."""
    symbols, pkgs = symbols_of(spec, tree)
    package = sorted(pkgs)[0] if pkgs else spec.name
    if failures and failures[0].longrepr:  # the package the failing call went into, when there are several
        package = next((p for p in sorted(pkgs) if f"/{p}/" in failures[0].longrepr), package)
    evidence = [evidence_for_test(tree, f.test, f.longrepr, symbols, set(pkgs)) for f in failures[:_EVIDENCE_TESTS]]
    if evidence:
        package = next((e.api.split(".")[0] for e in evidence if e.api), package)
    path = failing_path_of(spec, tree, failures, sites or [], set(pkgs), symbols)
    if path:  # evidence naming code off the failing path (a test helper the package ships) is dropped
        on = {p.rsplit(".", 1)[-1] for p in path} | set(path)
        evidence = [e if not e.api or e.api in on or e.api.rsplit(".", 1)[-1] in on else replace(e, api="", call="")
                    for e in evidence]
    ctx = statements.StatementContext(spec.name, package, failures, evidence, crash, n_bugs, path,
                                      frozenset(symbols.names))
    tries = [ctx, replace(ctx, evidence=[replace(e, repro="", call="") for e in evidence]),
             replace(ctx, evidence=[replace(e, repro="", call="", expected="") for e in evidence],
                     failures=[replace(f, message="", longrepr="") for f in failures])]
    if writer is not None:
        text = statements.write(ctx, level, writer)
        if not problems(text, fail_to_pass, bug_patch, symbols, set(pkgs)):
            return text
    for c in tries:
        text = statements.write(c, level)
        if not problems(text, fail_to_pass, bug_patch, symbols, set(pkgs)):
            return text
    return statements.vague(replace(ctx, failures=[statements.Failure("", "", "", "")], evidence=[]))


_FRAME = re.compile(r"^(?P<path>[^\s:]+\.py):\d+: in (?P<func>\w+)", re.M)
_GRAPH: dict[str, dict[str, set[str]]] = {}


def _public_callers(graph: dict[str, set[str]], mod: str, func: str, depth: int = 4) -> list[str]:
    """Public module-level functions and classes of the package that reach ``mod.func`` within ``depth``
    calls (by name), nearest first and those of ``mod`` before others."""
    frontier = {p for p in func.split(".") if p and p != "<locals>"}
    if not frontier:
        return []
    found: dict[str, int] = {}
    seen = set(frontier)
    for d in range(depth):
        new = {q for q, used in graph.items() if used & frontier}
        for q in new:
            top = q[len(mod) + 1:] if q.startswith(mod + ".") else q.split(".", 1)[-1]
            head = top.split(".")[0]
            if not head.startswith("_") and "." not in top and q not in found:
                found[q] = d
        frontier = {q.rsplit(".", 1)[-1] for q in new} - seen
        seen |= frontier
        if not frontier:
            break
    return sorted(found, key=lambda q: (found[q], not q.startswith(mod + "."), len(q)))


def failing_path_of(spec, tree: Path, failures: list[statements.Failure], sites: list[dict],  # noqa: ANN001
                    pkgs: set[str], symbols) -> list[str]:  # noqa: ANN001
    """Dotted package code on the failing path, entry point first: the package frames of the first failure's
    traceback (outermost first), then each evidence-free fallback: the bug's module. Names of a test file
    (the package's own tests, its test helpers' callers) never count."""
    from frog_gym.generators.statement_check import _calls_of

    out: list[str] = []
    tb = failures[0].longrepr if failures else ""
    for m in _FRAME.finditer(tb):
        rel = m.group("path")
        if spec.tests.is_test_file(rel) or "/tests/" in f"/{rel}" or rel.rsplit("/", 1)[-1].startswith("test"):
            out = []  # what a test (or a test helper it went through) called before is not the failing path
            continue
        parts = rel.removesuffix(".py").split("/")
        for i in range(len(parts)):
            mod = ".".join(parts[i:]).removesuffix(".__init__")
            if mod in symbols.names:
                name = f"{mod}.{m.group('func')}"
                if m.group("func") != "<module>" and symbols.exists(name) and name not in out:
                    out.append(name)
                break
    key = str(tree)
    if key not in _GRAPH:
        _GRAPH[key] = _calls_of(tree, spec.install.import_paths, pkgs)
    graph = _GRAPH[key]
    if sites and out:  # a frame that cannot reach the bug (a helper the package ships for its tests, which
        reach: set[str] = set()  # calls what it is given) is not where to look: keep the frames that can
        for s in sites:
            frontier = {p for p in (s.get("function") or "").split(".") if p and p != "<locals>"}
            reach |= frontier
            for _ in range(6):
                frontier = {q.rsplit(".", 1)[-1] for q, used in graph.items() if used & frontier} - reach
                reach |= frontier
        kept = [n for n in out if n.rsplit(".", 1)[-1] in reach]
        out = kept or out[-1:]
    # a trimmed traceback may start inside private helpers: a public frame is the better entry point
    out = [n for n in out if not n.rsplit(".", 1)[-1].startswith("_")] + \
          [n for n in out if n.rsplit(".", 1)[-1].startswith("_")]
    for s in sites:
        func, mod = s.get("function") or "", s.get("module") or ""
        if not mod:
            continue
        # the nearest public caller of the bug's function is the entry point when the traceback has none
        simple = func.split(".")[0]
        if not out and not simple.startswith(("_", "<")) and symbols.exists(f"{mod}.{simple}"):
            out.append(f"{mod}.{simple}")
        callers = _public_callers(graph, mod, func)
        out += [c for c in callers[:1] if c not in out]
        if not callers and simple and symbols.exists(f"{mod}.{simple}") and f"{mod}.{simple}" not in out:
            out.append(f"{mod}.{simple}")  # no public caller found: the (private) function itself
        if mod not in out:
            out.append(mod)
    return out


_FIRST = re.compile(r"The first failure reports:\n\n {4}(?P<msg>[^\n]*)")
_TRACE = re.compile(r"Traceback of `(?P<test>[^`]+)` \(trimmed\):\n\n```\n(?P<tb>.*?)\n```", re.S)
_SYMPTOM = re.compile(r"(?:raises|blows up with|fails with|not what it should be:) `(?P<msg>[^`]+)`")


def recorded_failure(record: dict) -> tuple[list[statements.Failure], bool]:
    """The first failure as ``validation.failure`` keeps it or, for older records, as their statement
    recorded it (message and traceback), and whether the bug crashes the import; the other FAIL_TO_PASS
    tests follow without details."""
    text = record["problem_statement"]
    f2p = list(record["FAIL_TO_PASS"])
    kept = record.get("validation", {}).get("failure")
    if kept:
        first = statements.Failure(**kept)
        return [first] + [statements.Failure(t, "", "", "") for t in f2p if t != first.test][: _EVIDENCE_TESTS - 1], \
            bool(record.get("features", {}).get("crash"))
    crash = bool(record.get("features", {}).get("crash")) or "cannot be imported" in text \
        or text.startswith("Importing the package fails")
    msg, tb, test = "", "", f2p[0]
    if m := _FIRST.search(text):
        msg = m.group("msg")
    if m := _TRACE.search(text):
        test, tb = m.group("test"), m.group("tb")
    if not msg and (m := _SYMPTOM.search(text)):
        msg = m.group("msg")
    exc = ""
    if msg:
        head = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt|Failed|Iteration)\w*)\b", msg)
        exc = head.group(1) if head else ("AssertionError" if msg.startswith("assert") else "")
        if msg.startswith("AssertionError"):
            exc = "AssertionError"
    first = statements.Failure(test, exc, msg, tb)
    return [first] + [statements.Failure(t, "", "", "") for t in f2p if t != test][: _EVIDENCE_TESTS - 1], crash


_HUNK = re.compile(r"^\+\+\+ b/(?P<path>\S+)$|^@@ -\d+(?:,\d+)? \+(?P<line>\d+)", re.M)


def sites_of(record: dict, tree: Path, symbols) -> list[dict]:  # noqa: ANN001 (Symbols)
    """The record's bug sites, else ones read off its gold patch: for each hunk, the module and the function
    (``Class.method``) around its first changed line in ``tree`` (the fixed source), so that handwritten and
    FrogLive tasks have a failing path too."""
    import ast

    sites = (record.get("provenance") or {}).get("sites") or []
    if sites:
        return sites
    out, path = [], ""
    for m in _HUNK.finditer(record.get("patch", "")):
        if m.group("path"):
            path = m.group("path")
            continue
        if not path.endswith(".py"):
            continue
        parts = path.removesuffix(".py").split("/")
        mod = next((".".join(parts[i:]).removesuffix(".__init__") for i in range(len(parts))
                    if ".".join(parts[i:]).removesuffix(".__init__") in symbols.names), "")
        if not mod:
            continue
        try:
            mtree = ast.parse((tree / path).read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        line, func = int(m.group("line")) + 3, ""

        def visit(body, prefix: str) -> None:  # noqa: ANN001
            nonlocal func
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                        node.lineno <= line <= (node.end_lineno or node.lineno):
                    func = f"{prefix}{node.name}"
                    visit(node.body, f"{func}.")

        visit(mtree.body, "")
        site = {"module": mod, "function": func}
        if site not in out:  # a module-level change: the module is the site
            out.append(site)
    return out


def restate_record(spec, tree: Path, record: dict) -> dict:  # noqa: ANN001
    """The record with its statement rewritten at its own level (nothing else changes but provenance)."""
    failures, crash = recorded_failure(record)
    sites = sites_of(record, tree, symbols_of(spec, tree)[0])
    n_bugs = len(record.get("provenance", {}).get("sites", [])) or 1
    text = compose(spec, tree, failures, crash, n_bugs, record.get("statement_level", "full"),
                   record["FAIL_TO_PASS"], record["bug_patch"], sites=sites)
    prov = dict(record.get("provenance", {}), statement_writer=WRITER)
    return dict(record, problem_statement=text, provenance=prov,
                validation=dict(record.get("validation", {}), failure=kept_failure(failures[0])))


def kept_failure(f: statements.Failure) -> dict:
    """What a task record keeps of its first failure (``validation.failure``), so that its statement can be
    written again without running a test: the message and the last lines of the traceback."""
    tb = f.longrepr.splitlines()
    return {"test": f.test, "exc_type": f.exc_type, "message": f.message[:2000],
            "longrepr": "\n".join(tb[-40:])}


def distinguish(records: list[dict], derived: dict[str, list[dict]] | None = None) -> int:
    """Make statements that several records share their own, in place: each gets the sentence naming the
    package code its failure shows up through (its bug's public entry point, else its function's module and
    the failure's message) that the others of its group lack. Returns how many were changed."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(r["problem_statement"].strip(), []).append(r)
    changed = 0
    for text, rs in groups.items():
        if len(rs) < 2:
            continue
        taken = {text}
        for r in rs:
            sites = r.get("provenance", {}).get("sites") or (derived or {}).get(r["instance_id"], [])
            funcs = [f"{s['module']}.{s['function'].split('.<locals>')[0]}" for s in sites
                     if s.get("module") and s.get("function")]
            public = [f for f in funcs if not f.rsplit(".", 1)[-1].startswith("<")]
            msg = ((r.get("validation") or {}).get("failure") or {}).get("message", "").strip().splitlines()
            msg = [m for m in msg[:1] if m.strip() not in ("AssertionError", "assert False", "")]
            extras = []
            if "__live-" in r["instance_id"] and sites:  # a changelog entry several fixes share: which part
                extras.append("This report is about the part in " +
                              ", ".join(f"`{m}`" for m in dict.fromkeys(s["module"] for s in sites)) + ".")
            if public:
                extras.append("It shows up through " + ", ".join(f"`{f}`" for f in dict.fromkeys(public)) + ".")
            if msg and msg[0][:160] not in text:
                extras.append(f"The error I see: `{statements._first_line(msg[0], 160)}`.")
            if sites:
                extras.append("Affected: " + ", ".join(f"`{m}`" for m in dict.fromkeys(
                    s["module"] for s in sites if s.get("module"))) + ".")
            for k in range(1, len(extras) + 1):
                new = text + "\n\n" + " ".join(extras[:k])
                if new not in taken:
                    taken.add(new)
                    r["problem_statement"] = new
                    changed += 1
                    break
    return changed


def restate_file(path: Path) -> Counter:
    """Rewrite every statement of one ``<repo>.jsonl`` in place (same order), under the task file's lock."""
    from frog_gym.generators.taskfiles import read_existing, rewrite_task_file
    from frog_gym.catalog.snapshot import snapshot_tree
    from frog_gym.catalog.spec import load_repo

    records = read_existing(path)
    if not records:
        return Counter()
    spec = load_repo(records[0]["repo"])
    tree = snapshot_tree(spec)
    return rewrite_task_file(path, lambda d: restate_record(spec, tree, d))


def restate_generated_live(path: Path) -> Counter:
    """Rewrite the generated statements of one ``<repo>.live.jsonl`` (``provenance["statement"] ==
    "generated"``, no changelog entry matched) with the failing path read off the fix, on the task's own
    release; changelog statements are left as they are (``frog-gym mine --restate`` matches those)."""
    from frog_gym.catalog.live import release_spec
    from frog_gym.catalog.spec import load_repo
    from frog_gym.generators.statement_check import repo_symbols
    from frog_gym.generators.taskfiles import rewrite_task_file

    def one(d: dict) -> dict:
        prov = d.get("provenance") or {}
        if prov.get("statement") != "generated":
            return d
        src = prov.get("source") or {}
        symbols, _, tree = repo_symbols(d["repo"], src.get("version", ""), src.get("sha256", ""))
        spec = release_spec(load_repo(d["repo"]), src.get("version", ""), src.get("sha256", ""), None)
        failures, _ = recorded_failure(d)
        text = compose(spec, tree, failures, False, 1, d.get("statement_level") or "medium", d["FAIL_TO_PASS"],
                       d.get("bug_patch", ""), sites=sites_of(d, tree, symbols))
        return dict(d, problem_statement=text)

    return rewrite_task_file(path, one)


def distinguish_registry(paths: list[Path]) -> int:
    """:func:`distinguish` over every registered task (uniqueness is registry-wide), rewriting in ``paths``
    only the records whose statement it changed."""
    import json

    from frog_gym.catalog.task import task_files
    from frog_gym.generators.statement_check import repo_symbols
    from frog_gym.generators.taskfiles import rewrite_task_file

    records = [json.loads(line) for p in task_files() for line in p.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    before = {r["instance_id"]: r["problem_statement"] for r in records}
    texts: dict[str, int] = {}
    for r in records:
        texts[r["problem_statement"].strip()] = texts.get(r["problem_statement"].strip(), 0) + 1
    derived = {}
    for r in records:  # only shared statements without recorded sites need their patch read
        if texts[r["problem_statement"].strip()] > 1 and not (r.get("provenance") or {}).get("sites"):
            src = (r.get("provenance") or {}).get("source") or {}
            symbols, _, tree = repo_symbols(r["repo"], src.get("version", ""), src.get("sha256", ""))
            derived[r["instance_id"]] = sites_of(r, tree, symbols)
    distinguish(records, derived)
    new = {r["instance_id"]: r["problem_statement"] for r in records if r["problem_statement"] != before[r["instance_id"]]}
    n = 0
    for path in paths:
        ids = {json.loads(line)["instance_id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
        if ids & set(new):
            rewrite_task_file(path, lambda d: dict(d, problem_statement=new.get(d["instance_id"], d["problem_statement"])))
            n += len(ids & set(new))
    return n


__all__ = ["Evidence", "WRITER", "compose", "distinguish", "restate_generated_live", "distinguish_registry", "recorded_failure", "restate_file", "restate_record"]
