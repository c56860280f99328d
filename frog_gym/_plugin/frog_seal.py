"""The seal: pytest's and pluggy's modules and classes as they were before any code under test ran, and which of
them a test's report passes through.

Part of the report plugin (``frog_report``, which loads it from this folder, never through ``sys.path``, and
keeps it out of ``sys.modules``). :func:`make_seal` runs while ``frog_report`` is imported, before any code under
test; the vault (``frog_vault``) takes the snapshot and these tables as arguments when it opens and checks them with
what it bound then: nothing here is looked up afterwards. It relies on the standard library alone.
"""

import sys

_SEALED_ROOTS = ("_pytest", "pytest", "pluggy")
_UNSEALED = frozenset(("RUNNER_CLASS", "CHECKER_CLASS", "_pluginmanager", "_config", "_recursive_debug",
                       "_wrapped_pdb_cls", "_getini_unknown_type", "makedir", "fspath", "invocation_dir", "rootdir",
                       "inifile", "startdir", "_tmpdirhandler", "_reprcompare", "_assertion_pass"))
"""Names pytest itself rebinds during a run: doctest's lazily made classes, the debugger's class state, the
assertion hooks it sets around each test, and what its ``legacypath`` plugin patches into its classes."""

def make_seal(prior=None):
    """Every module of pytest and pluggy loaded now (``-p`` loads this plugin after all of pytest's built-in
    plugins and before any code under test) and every class defined there, with each attribute's object.
    Code under test that replaces one (``_pytest.runner.call_and_report``, a report class's method, pluggy's
    hook caller) to rewrite outcomes is then seen however it got hold of the module: the static check only
    reads what the edits spell out.

    ``prior``: :func:`ahead`'s (a grading server's parent's), or None. A dictionary whose keys and values are all still
    the very objects they were there, in the same order (found by its entry's name), keeps the sealed items it had
    there (the same tuple object, which :func:`code_of` then takes without comparing its items): what is sealed of a
    dictionary depends on its items alone. The comparison makes no tuple per item: a grading server's child runs it
    on pages its parent wrote, and each new object it made there would be more memory of its own."""
    import itertools
    import operator
    import types

    sealed, seen, before = [], set(), {}
    if type(prior) is tuple and len(prior) == 3 and len(prior[0]) == len(prior[2]):
        for (name, _, items), (keys, values) in zip(prior[0], prior[2]):
            before[name] = (keys, values, items)
    chain, is_ = itertools.chain, operator.is_

    def own(name, d):
        hit = before.get(name)
        if hit is not None and len(d) == len(hit[0]) and all(map(is_, chain(d, d.values()), chain(hit[0], hit[1]))):
            return hit[2]
        return tuple((k, v) for k, v in d.items()
                     if k not in _UNSEALED and not (k.startswith("__") and k.endswith("__")))

    for name, mod in list(sys.modules.items()):
        if not isinstance(mod, types.ModuleType) or name.split(".")[0] not in _SEALED_ROOTS or id(mod) in seen:
            continue
        seen.add(id(mod))
        d = mod.__dict__
        sealed.append((name, d, own(name, d)))
        for v in list(d.values()):
            if isinstance(v, type) and getattr(v, "__module__", None) == name and id(v) not in seen:
                seen.add(id(v))
                where = f"{name}.{v.__qualname__}"
                sealed.append((where, v.__dict__, own(where, v.__dict__)))
    return sealed


def code_of(sealed, known=None):
    """The ids (``object.__hash__``, as the vault keeps them) of the code objects the functions of ``sealed`` hold,
    their nested code included: pytest's and pluggy's own code, told apart from the package's by object. Reading
    ``__code__`` raises an audit event per function, so where ``known`` (:func:`ahead`'s, read by the grading
    server's parent) holds the same names in the same order, only the objects that differ from its are read (the
    server's child replaced a few of pytest's import hooks before this plugin loaded), and its ids are taken for
    the rest: the caller keeps ``known`` alive, and with it every object those ids belong to."""
    import itertools
    import operator
    import types

    ident, flat = object.__hash__, itertools.chain.from_iterable
    out, todo = set(), []
    values = [v for _, _, items in sealed for _, v in items]
    if known is not None:
        then, ids = known[0], known[1]
        if len(then) == len(sealed) and all(map(operator.is_, (x[2] for x in then), (y[2] for y in sealed))):
            out, values = set(ids), []  # every entry's items the parent's very tuple (make_seal's prior)
        elif len(then) == len(sealed) and all(len(x[2]) == len(y[2]) for x, y in zip(then, sealed)) and \
                all(map(operator.is_, flat(k for _, _, items in then for k, _ in items),
                        flat(k for _, _, items in sealed for k, _ in items))):
            out = set(ids)
            values = [v for v, w in zip(values, (w for _, _, items in then for _, w in items)) if v is not w]
    for v in values:
        for _ in range(3):
            if type(v) in (staticmethod, classmethod, property):
                v = v.fget if type(v) is property else v.__func__
        if type(v) is types.FunctionType:
            todo.append(v.__code__)
    while todo:
        c = todo.pop()
        if ident(c) not in out:
            out.add(ident(c))
            todo.extend(k for k in c.co_consts if type(k) is types.CodeType)
    return frozenset(out)


def ahead():
    """The seal, its code ids (:func:`code_of`) and every sealed dictionary's keys and values as they were, made by a
    grading server's parent before it forks, where nothing of a package under test ever ran: a child's report plugin
    makes its seal from it (:func:`make_seal`) and hands it to the vault, which takes the ids."""
    sealed = make_seal()
    return sealed, code_of(sealed), tuple((tuple(d), tuple(d.values())) for _, d, _ in sealed)


HOT = ("_pytest.runner", "_pytest.reports", "_pytest.python", "_pytest.main", "_pytest.skipping",
        "_pytest.outcomes", "_pytest.nodes", "_pytest.fixtures", "_pytest.unittest", "_pytest.capture",
        "_pytest.config", "pytest", "pluggy._hooks", "pluggy._callers", "pluggy._manager", "pluggy._result")
"""The modules a report passes through: checked at each report of a graded test file's test."""
HOT_HOOKS = frozenset((
    "pytest_runtest_protocol", "pytest_runtest_logstart", "pytest_runtest_setup", "pytest_runtest_call",
    "pytest_runtest_teardown", "pytest_runtest_makereport", "pytest_runtest_logreport", "pytest_runtest_logfinish",
    "pytest_pyfunc_call", "pytest_report_teststatus", "pytest_exception_interact", "pytest_sessionfinish"))
"""The hooks a test's report passes through: their implementations are checked at each report of a graded file."""

