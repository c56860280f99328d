"""The report vault's C helper (``frog_gym/_plugin/frog_accel.c``): built by the install where a C compiler is, the
same walk of the classes and the same comparisons (the classes' names, the sealed namespaces) as the vault's Python,
and taken by the vault in a graded run (warm and cold) unless the host says ``FROG_VAULT_ACCEL=0``."""

from __future__ import annotations

import gc
import itertools
import json
import operator
import random
import shutil
import sysconfig
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo
from frog_gym.catalog.task import load_task
from frog_gym.grading import runner as grading
from frog_gym.grading import server as grading_server
from frog_gym.grading.integrity import Canaries
from frog_gym.sandbox.workspace import append_file, template_for

PLUGIN = Path(__file__).resolve().parents[1] / "frog_gym" / "_plugin"
HELPER = PLUGIN / ("frog_accel" + EXTENSION_SUFFIXES[0])
FLAT = "inflection__handwritten-0001"
STATIC = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE, as the vault reads it


def _compiler() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) is not None


@pytest.fixture(scope="module")
def helper():
    """The helper as the report plugin loads it (``frog_report._accel``, the plugin file run as a module of its own:
    outside a graded run it does nothing else at import)."""
    import importlib.util

    if not HELPER.is_file():
        assert not _compiler(), f"a C compiler is here but {HELPER.name} was not built: run pip install -e ."
        pytest.skip("no C compiler here: the vault runs its Python walk")
    spec = importlib.util.spec_from_file_location("frog_report_probe", str(PLUGIN / "frog_report.py"))
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    made = report._accel()
    assert made is not None, f"{HELPER} is there but does not load"
    return made


def _python_walk(static: int) -> list[type]:
    """The vault's own walk (``frog_vault.heap_classes`` without its helper), for comparison."""
    subclasses, flags, ident = type.__dict__["__subclasses__"], type.__dict__["__flags__"].__get__, object.__hash__
    heap, seen, todo = [], set(), [object]
    while todo:
        for cls in subclasses(todo.pop()):
            if ident(cls) in seen:
                continue
            seen.add(ident(cls))
            todo.append(cls)
            if not flags(cls) & static:
                heap.append(cls)
    return heap


def _names(classes):
    dict_of = type.__dict__["__dict__"].__get__
    return tuple(tuple(dict_of(c)) for c in classes)


def test_the_helper_is_built_where_a_compiler_is():
    assert HELPER.is_file() or not _compiler(), f"a C compiler is here but {HELPER.name} was not built"


def test_the_helper_walks_the_classes_the_vaults_python_walk_does(helper):
    heap_classes, _, _ = helper

    class Base:
        pass

    class Left(Base):
        pass

    class Right(Base):
        pass

    class Both(Left, Right):  # met through both bases: listed once
        pass

    made = type("Made", (dict,), {"__eq__": lambda self, other: True})  # a subclass of a static type
    for static in (STATIC, 0):
        ours, theirs = _python_walk(static), heap_classes(object, static)
        assert len(theirs) == len(ours) and all(map(operator.is_, theirs, ours))
    theirs = heap_classes(object, STATIC)
    assert sum(c is Both for c in theirs) == 1 and made in theirs and Base in theirs
    assert dict not in theirs and dict in heap_classes(object, 0)  # a static type is left out by its flag
    gone = id(made)
    del made, theirs, ours  # (the lists held it)
    gc.collect()
    assert gone not in {id(c) for c in heap_classes(object, STATIC)}  # a class that died is not met


def test_the_helper_compares_the_names_by_identity(helper):
    _, same_names, _ = helper

    class Held:
        a = 1
        b = 2

    classes = [Held, int, type("Other", (), {"c": 3})]
    names = _names(classes)
    assert same_names(classes, names) is True
    Held.c = 3  # a name added
    assert same_names(classes, names) is False
    del Held.c
    assert same_names(classes, names) is True
    del Held.b  # the same names, another order
    Held.b = 2
    assert same_names(classes, names) is False
    names = _names(classes)
    assert same_names(classes, names) is True
    assert same_names(classes[::-1], names) is False  # other classes at those places
    assert same_names(classes[:2], names) is False


def test_the_helper_reads_a_c_metaclass_dict_subclass(helper):
    """ctypes' classes keep a dict subclass as their namespace: read by its keys, as iterating it reads it."""
    import ctypes

    _, same_names, _ = helper
    classes = [ctypes.CFUNCTYPE(ctypes.c_int), ctypes.Structure]
    assert same_names(classes, _names(classes)) is True


def _state(namespaces):
    """A namespace group's state as the vault's seal keeps it: the sizes, then every key, then every value."""
    dicts = [d for d in namespaces if type(d) is dict]
    proxies = [d for d in namespaces if type(d) is not dict]
    every = (*dicts, *proxies)
    keys = [k for d in every for k in d]
    values = [v for d in dicts for v in d.values()] + [v for d in proxies for v in d.values()]
    return every, tuple(map(len, every)), (*keys, *values)


def test_the_helper_compares_the_sealed_namespaces_by_identity(helper):
    import _pytest.runner
    import _pytest.reports

    _, _, same_items = helper

    class Sealed:
        def method(self):
            return 1

    module = {"a": 1, "b": Sealed}
    every, sizes, flat = _state([module, vars(_pytest.runner), vars(Sealed), _pytest.reports.TestReport.__dict__])
    assert same_items(every, sizes, flat) is True
    module["b"] = Sealed  # the same object put back
    assert same_items(every, sizes, flat) is True
    module["b"] = type("Sealed", (), {})  # another object under the name
    assert same_items(every, sizes, flat) is False
    module["b"] = Sealed
    Sealed.method = lambda self: 2  # a class's value replaced (its mappingproxy read through)
    assert same_items(every, sizes, flat) is False
    every, sizes, flat = _state([module, vars(Sealed)])
    module["c"] = 3  # a name added: its size differs
    assert same_items(every, sizes, flat) is False
    del module["c"]
    assert same_items(every, sizes, flat) is True
    assert same_items(every, sizes, flat[:-1]) is False and same_items(every, sizes[:1], flat) is False
    assert same_items((*every[:1], 42), sizes, flat) is False  # no namespace at all


def _graded_cold(tmp_path, task, repo, template):
    canaries = Canaries.make(grading.test_files_of(task.FAIL_TO_PASS)[0], random.Random(0),
                             {t.rsplit("::", 1)[-1] for t in task.selected_tests})
    tree = tmp_path / "tree"
    shutil.copytree(template.root, tree, symlinks=True)
    append_file(tree, canaries.file, canaries.source.encode())
    out = tmp_path / "out"
    grading.run_tests(repo, tree, task.selected_tests, 120, canaries=canaries, authenticate=True, out_dir=out,
                      protect=repo.spec.tests.paths, args=grading.GRADING_PYTEST_ARGS,
                      guard=grading.guard_for(repo, task, canaries, template, []))
    return json.loads((out / "report.json").read_text())


def _graded_warm(task, repo, template, seed):
    canaries = Canaries.make(grading.test_files_of(task.FAIL_TO_PASS)[0], random.Random(seed),
                             {t.rsplit("::", 1)[-1] for t in task.selected_tests})
    server = grading_server.server_for(repo, template)
    assert server is not None, grading_server._REFUSED
    with server.lock:
        server.run(template, [], task.selected_tests, canaries, 120)
        return json.loads((server.out / "report.json").read_text())


@pytest.mark.parametrize("accel", ["on", "off"])
def test_a_graded_run_takes_the_helper_unless_the_host_says_no(helper, tmp_path, monkeypatch, accel):
    """The vault checks the helper against its own walk when it opens and says in the signed report which walked the
    classes: the helper where it is built, Python where the host set ``FROG_VAULT_ACCEL=0`` (the tests of
    ``tests/exploits/test_in_process.py`` run the lying-value attacks both ways)."""
    if accel == "off":
        monkeypatch.setenv("FROG_VAULT_ACCEL", "0")
    task = load_task(FLAT)
    repo = prepare(load_repo(task.repo))
    template = template_for(repo, task.bug_patch, FLAT)
    want = "c+c" if accel == "on" else "python+python"  # (the walk of the classes, then the seal's comparison)
    cold = _graded_cold(tmp_path, task, repo, template)
    warm = _graded_warm(task, repo, template, 1)
    assert cold["vault"] == want and warm["vault"] == want, (cold.get("guard"), warm.get("guard"))
    assert not cold.get("guard") and not warm.get("guard")
