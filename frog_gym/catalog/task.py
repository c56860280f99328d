"""Task records: a repository snapshot, a bug, and the tests that prove it (SWE-bench compatible).

Tasks live as JSONL in ``registry/tasks/<repo>.jsonl``, one record a line, ``instance_id`` first (the
registration loop reads ids without parsing whole records).

Example:
    >>> t = load_task("inflection__handwritten-0001")
    >>> t.repo, bool(t.FAIL_TO_PASS)
    ('inflection', True)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from frog_gym.errors import SpecError, UnknownNameError
from frog_gym.catalog.schema import Field, check

_ID_PREFIX = re.compile(r'^\{"instance_id":\s*"([^"\\]+)"')

TASK_SCHEMA = {
    "instance_id": Field(str, doc="unique id, '<repo>__<generator>-<n>'"),
    "repo": Field(str, doc="registry name of the repository"),
    "version": Field(str, doc="the repository's released version"),
    "base_commit": Field(str, doc="content address of the snapshot (sdist sha256 or git commit)"),
    "patch": Field(str, doc="the gold fix: a unified diff from the buggy tree to the pristine one"),
    "test_patch": Field(str, required=False, default="",
                        doc="SWE-bench field: the diff that adds the hidden FAIL_TO_PASS tests back (empty: none hidden)"),
    "problem_statement": Field(str),
    "hints_text": Field(str, required=False, default=""),
    "FAIL_TO_PASS": Field(list, items=str, doc="tests the bug breaks"),
    "PASS_TO_PASS": Field(list, items=str, doc="tests that pass with and without the bug"),
    "created_at": Field(str, required=False, default=""),
    "environment_setup_commit": Field(str, required=False, default=""),
    "bug_patch": Field(str, doc="unified diff from the pristine tree to the buggy one"),
    "statement_level": Field(str, required=False, default="full", doc="full | medium | vague"),
    "provenance": Field(dict, required=False, default=dict, doc="generator, operator family, seed, sites"),
    "features": Field(dict, required=False, default=dict, doc="difficulty features"),
    "validation": Field(dict, required=False, default=dict, doc="validation runs, timings, flaky tests"),
    "solve_rates": Field(dict, required=False, default=dict,
                         doc="agent -> {solved, runs, fingerprint, max_steps}: measured difficulty"),
}


@dataclass(frozen=True)
class Task:
    """One task. Field names of the SWE-bench part follow SWE-bench exactly."""

    instance_id: str
    repo: str
    version: str
    base_commit: str
    patch: str
    problem_statement: str
    FAIL_TO_PASS: tuple[str, ...]
    PASS_TO_PASS: tuple[str, ...]
    bug_patch: str
    test_patch: str = ""
    hints_text: str = ""
    created_at: str = ""
    environment_setup_commit: str = ""
    statement_level: str = "full"
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)
    features: dict[str, Any] = field(default_factory=dict, compare=False)
    validation: dict[str, Any] = field(default_factory=dict, compare=False)
    solve_rates: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def selected_tests(self) -> tuple[str, ...]:
        """FAIL_TO_PASS ∪ PASS_TO_PASS, in a stable order: what grading runs."""
        return tuple(dict.fromkeys(self.FAIL_TO_PASS + self.PASS_TO_PASS))

    @property
    def content_hash(self) -> str:
        """A hash of everything that affects grading (the harness suite hash is built from these)."""
        parts = [self.repo, self.base_commit, self.bug_patch, self.FAIL_TO_PASS, self.PASS_TO_PASS,
                 self.problem_statement]
        if self.test_patch:  # hidden tests grade too (kept out of the blob when empty: old hashes stay)
            parts.append(self.test_patch)
        blob = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> str:
        d = asdict(self)
        d["FAIL_TO_PASS"], d["PASS_TO_PASS"] = list(self.FAIL_TO_PASS), list(self.PASS_TO_PASS)
        return json.dumps({"instance_id": d.pop("instance_id"), **d}, ensure_ascii=False, sort_keys=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any], file: str = "<task>") -> Task:
        d = check(d, TASK_SCHEMA, file)
        if not d["FAIL_TO_PASS"]:
            raise SpecError(file, "FAIL_TO_PASS", "empty; a task needs at least one test that the bug breaks")
        d["FAIL_TO_PASS"], d["PASS_TO_PASS"] = tuple(d["FAIL_TO_PASS"]), tuple(d["PASS_TO_PASS"])
        return cls(**d)


def _tasks_dir() -> Any:
    return resources.files("frog_gym.registry").joinpath("tasks")


def task_files() -> list[Any]:
    return sorted((p for p in _tasks_dir().iterdir() if p.name.endswith(".jsonl")), key=lambda p: p.name)


_KEY = b'{"instance_id": "'


def _scan_ids(data: bytes) -> list[tuple[str, int]]:
    """``(instance_id, line number)`` of every record, found without parsing (ids are the first key)."""
    out = []
    for n, line in enumerate(data.split(b"\n")):
        if line.startswith(_KEY):
            out.append((line[len(_KEY):line.index(b'"', len(_KEY))].decode("utf-8"), n))
        elif line.strip():
            m = _ID_PREFIX.match(line.decode("utf-8"))
            out.append((m.group(1) if m else json.loads(line)["instance_id"], n))
    return out


def read_ids_sidecar(text: str, size: int) -> list[tuple[str, int]] | None:
    """The ids listed in a ``<repo>.ids`` sidecar, or None when it does not describe a file of ``size`` bytes.

    A sidecar is ``id<TAB>line`` per record and a last line ``#size <bytes of the .jsonl>``; a task file
    edited without it (by hand, by git) no longer has that size, so it is scanned instead.

    >>> read_ids_sidecar("a__x-1\\t0\\n#size 10\\n", 10), read_ids_sidecar("a__x-1\\t0\\n#size 10\\n", 11)
    ([('a__x-1', 0)], None)
    """
    lines = text.splitlines()
    if not lines or lines[-1] != f"#size {size}":
        return None
    out = []
    for line in lines[:-1]:
        iid, _, n = line.rpartition("\t")
        out.append((iid, int(n)))
    return out


def ids_sidecar_text(data: bytes) -> str:
    """The sidecar of a task file's bytes (see :func:`read_ids_sidecar`)."""
    return "".join(f"{iid}\t{n}\n" for iid, n in _scan_ids(data)) + f"#size {len(data)}\n"


TASK_DIRS_ENV = "FROG_GYM_TASK_DIRS"
"""Extra folders of ``<name>.jsonl`` task files (``os.pathsep``-separated), loadable by id like registered
tasks: where online synthesis writes, inherited by the processes a run starts."""


def extra_task_dirs() -> list[Path]:
    """The folders named by ``FROG_GYM_TASK_DIRS``, in order (missing ones are skipped)."""
    return [Path(d) for d in os.environ.get(TASK_DIRS_ENV, "").split(os.pathsep) if d and Path(d).is_dir()]


def add_task_dir(path: str | os.PathLike[str]) -> None:
    """Make the tasks under ``path`` loadable by id here and in child processes started from now on.

    Call :func:`refresh_tasks` after writing new records to a folder already added (the synthesizers do).
    """
    path = str(Path(path).resolve())
    dirs = [d for d in os.environ.get(TASK_DIRS_ENV, "").split(os.pathsep) if d]
    if path not in dirs:
        os.environ[TASK_DIRS_ENV] = os.pathsep.join([*dirs, path])
    refresh_tasks()


def refresh_tasks() -> None:
    """Forget the cached task index and records, so that task files written since are seen."""
    task_index.cache_clear()
    _registered_ids.cache_clear()
    _file_lines.cache_clear()
    load_task.cache_clear()


@lru_cache(maxsize=1)
def task_index() -> dict[str, tuple[str, int]]:
    """instance_id -> (task file, line number), read without parsing the records.

    The file is a name in the registry's task folder, or an absolute path in one of
    :func:`extra_task_dirs` (whose ids must not repeat registered ones: the registry wins). Each
    ``<repo>.jsonl`` may have a ``<repo>.ids`` sidecar (written by the generators) that lists its ids;
    when it matches the file's size it is read instead of the file, which keeps ``import frog_gym`` fast
    with thousands of tasks.
    """
    index: dict[str, tuple[str, int]] = {}
    files: list[tuple[str, Any, Any]] = [
        (f.name, f, _tasks_dir().joinpath(f.name[: -len(".jsonl")] + ".ids")) for f in task_files()
    ]
    for d in extra_task_dirs():
        files += [(str(f), f, f.with_suffix(".ids")) for f in sorted(d.glob("*.jsonl"))]
    for key, f, side in files:
        ids = None
        try:
            if side.is_file():
                ids = read_ids_sidecar(side.read_text(encoding="utf-8"), f.stat().st_size)  # type: ignore[union-attr]
        except (AttributeError, OSError, ValueError):
            ids = None
        if ids is None:
            ids = _scan_ids(f.read_bytes())
        for iid, n in ids:
            index.setdefault(iid, (key, n))
    return index


@lru_cache(maxsize=1)
def _registered_ids() -> tuple[str, ...]:
    return tuple(sorted(i for i, (f, _) in task_index().items() if not os.path.isabs(f)))


def registered_task_ids() -> list[str]:
    """Ids of the tasks in the registry itself, sorted (not those found through ``FROG_GYM_TASK_DIRS``);
    computed once per task index (``FrogSWE-v0`` reads it at every reset)."""
    return list(_registered_ids())


@lru_cache(maxsize=64)
def _file_lines(name: str) -> list[str]:
    if os.path.isabs(name):
        return Path(name).read_text(encoding="utf-8").splitlines()
    return _tasks_dir().joinpath(name).read_text(encoding="utf-8").splitlines()


@lru_cache(maxsize=4096)
def load_task(instance_id: str) -> Task:
    """Load one registered task by id, with a did-you-mean on a miss."""
    index = task_index()
    if instance_id not in index:
        raise UnknownNameError("task", instance_id, index, "See `frog-gym tasks` for the registered ids.")
    name, n = index[instance_id]
    where = name if os.path.isabs(name) else f"registry/tasks/{name}"
    return Task.from_dict(json.loads(_file_lines(name)[n]), f"{where}:{n + 1}")


def load_tasks_file(path: str) -> list[Task]:
    """All tasks of one JSONL file (for imports and tests)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            if line.strip():
                out.append(Task.from_dict(json.loads(line), f"{path}:{n + 1}"))
    return out
