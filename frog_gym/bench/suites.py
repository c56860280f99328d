"""Task suites: named, versioned, deterministic subsets of the registered tasks, stratified by difficulty.

A suite is computed from whatever is registered, so it grows with the registry, but the same registry
always gives the same suite: tasks are ordered by a hash seeded with the suite's name and version, and
taken round-robin over repositories within each difficulty tier, in proportion to the tier's share of
the registry. The suite's hash covers every selected task's content hash; the harness fingerprint
includes it, so a changed task or a grown registry is never silently compared with an old score.

Difficulty tiers come from a task's ``features`` (see :func:`difficulty_points`): ``easy``, ``medium``,
``hard``.

Example:
    >>> s = resolve("smoke")
    >>> s.name, len(s.tasks) <= SUITES["smoke"].size
    ('smoke', True)
    >>> resolve("smoke").hash == s.hash
    True
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frog_gym.errors import UnknownNameError, UsageError
from frog_gym.catalog.task import Task, load_task, task_index

TIERS = ("easy", "medium", "hard")
_LEVEL_POINTS = {"full": 0, "medium": 1, "vague": 2}


@dataclass(frozen=True)
class SuiteDef:
    """A named suite: how many tasks it takes (``None``: all) and the version of its selection rule."""

    name: str
    size: int | None
    version: int
    description: str
    repos: tuple[str, ...] = ()
    """Draw only from these repositories (empty: from all). Few, quick ones keep a first run short: a fresh
    machine builds one venv per repository."""
    pool: str = "train"
    """Where its tasks come from: ``train`` (what ``FrogSWE-v0`` samples) or ``live`` (FrogLive's held-out
    real fixes, see :mod:`frog_gym.catalog.live`)."""


SUITES: dict[str, SuiteDef] = {
    s.name: s
    for s in (
        SuiteDef("first", 6, 1, "6 tasks from two quick repositories (parse, inflection): the README's first "
                 "run, a few minutes on a fresh machine", repos=("parse", "inflection")),
        SuiteDef("smoke", 20, 2, "about 20 tasks across tiers and repositories: a quick check of an agent"),
        SuiteDef("lite", 300, 2, "about 300 tasks, stratified by tier: the default for comparing agents"),
        SuiteDef("full", None, 2, "every registered task but the toy family"),
        SuiteDef("live", None, 2, "FrogLive: the real fixes mined from consecutive PyPI releases that are held "
                 "out of training (released after their repository's training snapshot and absent from it; "
                 "live@YYYY-MM-DD: only fixes released since that date)", pool="live"),
    )
}
"""The named suites. Changing a suite's rule means a new version, never an edit in place (version 2 leaves
the toy family out; live's version 2 holds only the fixes the time split holds out)."""


@dataclass(frozen=True)
class Suite:
    """A resolved suite: its name, version and the selected tasks with their content hashes."""

    name: str
    version: str
    tasks: tuple[tuple[str, str], ...]

    @property
    def hash(self) -> str:
        blob = json.dumps([self.name, self.version, list(self.tasks)], separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def task_ids(self) -> list[str]:
        return [t for t, _ in self.tasks]


def difficulty_points(features: dict[str, Any], statement_level: str = "full") -> int:
    """Difficulty points of a task: more bug sites, a vaguer statement, more files touched, and a single
    failing test (less signal to localize from) each make a task harder.

    >>> difficulty_points({"n_sites": 1, "f2p": 5}), difficulty_points({"n_sites": 3, "statement_level": "vague"})
    (0, 4)
    """
    n_sites = int(features.get("n_sites", 1) or 1)
    level = str(features.get("statement_level", statement_level))
    points = min(max(n_sites - 1, 0), 2) + _LEVEL_POINTS.get(level, 1)
    if int(features.get("files_touched", 1) or 1) > 1:
        points += 1
    f2p = features.get("f2p", features.get("fail_to_pass", 2))  # generated tasks spell it fail_to_pass
    if int(f2p or 2) == 1:
        points += 1
    return points


def tier_of(task: Task) -> str:
    """``easy`` (0 points), ``medium`` (1-2) or ``hard`` (3 or more); see :func:`difficulty_points`."""
    points = difficulty_points(task.features, task.statement_level)
    return "easy" if points == 0 else "medium" if points <= 2 else "hard"


def _key(salt: str, text: str) -> str:
    return hashlib.sha256(f"{salt}\0{text}".encode()).hexdigest()


def _allocate(counts: dict[str, int], size: int) -> dict[str, int]:
    """Split ``size`` over tiers in proportion to ``counts`` (largest remainder; every non-empty tier gets
    one when the size allows)."""
    total = sum(counts.values())
    if size >= total:
        return dict(counts)
    share = {t: size * c / total for t, c in counts.items()}
    got = {t: min(counts[t], int(share[t])) for t in counts}
    for t, c in counts.items():
        if c and not got[t] and sum(got.values()) < size:
            got[t] = 1
    order = sorted(counts, key=lambda t: (-(share[t] - int(share[t])), TIERS.index(t)))
    while sum(got.values()) < size:
        for t in order:
            if got[t] < counts[t] and sum(got.values()) < size:
                got[t] += 1
    while sum(got.values()) > size:  # the minimum-one rule overshot: take from the largest
        t = max(got, key=lambda t: got[t])
        got[t] -= 1
    return got


def select(definition: SuiteDef, task_ids: list[str] | None = None) -> Suite:
    """Pick the suite's tasks from ``task_ids`` (default: what ``FrogSWE-v0`` samples: every task of the
    registry but the toy family, never tasks found through ``FROG_GYM_TASK_DIRS``). Deterministic."""
    if task_ids is None and definition.pool == "live":
        from frog_gym.catalog.live import live_task_ids

        task_ids = live_task_ids()
    elif task_ids is None:
        from frog_gym.env.core import default_pool

        task_ids = default_pool()
    ids = sorted(i for i in task_ids if not definition.repos or i.split("__", 1)[0] in definition.repos)
    salt = f"{definition.name}:{definition.version}"
    by_tier: dict[str, dict[str, list[str]]] = {t: defaultdict(list) for t in TIERS}
    tasks = {i: load_task(i) for i in ids}
    for i, task in tasks.items():
        by_tier[tier_of(task)][task.repo].append(i)
    counts = {t: sum(len(v) for v in by_tier[t].values()) for t in TIERS}
    quota = _allocate(counts, definition.size if definition.size is not None else len(ids))
    chosen: list[str] = []
    for t in TIERS:
        repos = {r: sorted(v, key=lambda i: _key(salt, i)) for r, v in by_tier[t].items()}
        order = sorted(repos, key=lambda r: _key(salt, r))
        picked: list[str] = []
        depth = 0
        while len(picked) < quota[t]:
            for r in order:
                if depth < len(repos[r]) and len(picked) < quota[t]:
                    picked.append(repos[r][depth])
            depth += 1
        chosen += picked
    return Suite(definition.name, str(definition.version),
                 tuple(sorted((i, tasks[i].content_hash) for i in chosen)))


def resolve(suite: str) -> Suite:
    """A suite by name (``smoke``, ``lite``, ``full``), or an ad-hoc one: comma-separated task ids, or a
    text file of task ids (one a line, ``#`` comments). An ad-hoc suite's version is a hash of its ids.

    Raises:
        UnknownNameError: an unknown suite name or task id, with the nearest valid name.
    """
    if suite in SUITES:
        return select(SUITES[suite])
    if suite.startswith("live@"):
        from frog_gym.catalog.live import check_date, live_task_ids

        since = check_date(suite[len("live@"):])
        s = select(SUITES["live"], live_task_ids(since))
        return Suite("live", f"{s.version}@{since}", s.tasks)
    path = Path(suite)
    if "," in suite or suite in task_index():  # ids first: a long list of ids is no file name
        ids, name = suite.split(","), "custom"
    elif suite.endswith(".txt") or "/" in suite or _is_file(path):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise UsageError(f"Cannot read the suite file {suite}: {e.strerror}. Give a file of task ids (one a "
                             "line; `frog-gym tasks --unmeasured AGENT` writes one), a suite name or comma-separated "
                             "task ids; see `frog-gym suites`.") from None
        ids = [ln.split("#", 1)[0].strip() for ln in lines]
        name = path.stem
    else:
        raise UnknownNameError("suite", suite, list(SUITES), "Give a suite name, comma-separated task ids, or a "
                               "file of task ids; see `frog-gym suites`.")
    ids = sorted({i for i in ids if i})
    for i in ids:
        if i not in task_index():
            raise UnknownNameError("task", i, task_index(), "See `frog-gym tasks`.")
    version = "ids-" + hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]
    return Suite(name, version, tuple((i, load_task(i).content_hash) for i in ids))


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system, say: not a file
        return False


def tier_counts(suite: Suite) -> dict[str, int]:
    counts = dict.fromkeys(TIERS, 0)
    for i in suite.task_ids:
        counts[tier_of(load_task(i))] += 1
    return counts
