"""FrogLive: real bug fixes mined from consecutive PyPI releases, held out of every training pool.

A live task starts from release N of a registered repository (its sdist, pinned by sha256 in the task's
``base_commit``, its version in ``version``), has release N+1's source change (reduced to the hunks the
tests need) as its gold ``patch``, and release N+1's new or changed tests as its hidden ``test_patch``,
applied at grading only. Its ``provenance`` records both versions, the release date of N+1 and where its
problem statement came from (the release's changelog, or generated when no entry matched).

Live tasks are ids ``<repo>__live-<N+1>-<k>`` in ``registry/tasks/<repo>.live.jsonl``: ``FrogLive-v0``
samples the *held-out* ones (fixes released after the repository's training snapshot, checked to be absent
from it: ``frog_gym.generators.timesplit``), the ``live`` suite benchmarks them, and neither ``FrogSWE-v0`` nor
the curriculum ever sees any live task. Mirror tasks (``<repo>__mirror-<N+1>-<k>``, in ``<repo>.mirror.jsonl``) are the same kind of
fix reversed onto the repository's pinned release: they are training tasks.

Example:
    >>> is_live("attrs__live-25.4.0-1"), is_live("attrs__mirror-25.4.0-1"), is_live("attrs__x-1")
    (True, False, False)
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from frog_gym.catalog.spec import RepoSpec, load_repo

LIVE_MARK = "__live-"
"""What every live task id contains (after the repository name)."""
MIRROR_MARK = "__mirror-"
"""What every mirror task id contains."""
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def is_live(instance_id: str) -> bool:
    """Whether a task id is a FrogLive task (held out of training)."""
    return LIVE_MARK in instance_id


def release_spec(spec: RepoSpec, version: str, sha256: str, lock: list[str] | tuple[str, ...] | None = None
                 ) -> RepoSpec:
    """``spec`` at another release of the same PyPI project (and, when given, its own hashed ``lock``).

    The venv of the result is its own (the source is part of the venv key), built by the same machinery.
    """
    if spec.source.kind != "pypi":
        raise ValueError(f"{spec.name}: only a PyPI source has releases; this spec pins {spec.source}")
    out = dataclasses.replace(spec, source=dataclasses.replace(spec.source, version=version, sha256=sha256))
    if lock:
        out = dataclasses.replace(out, install=dataclasses.replace(out.install, lock=tuple(lock)))
    return out


def task_spec(task: Any) -> RepoSpec:
    """The repository spec a task runs against: the registered one, or for a task that records its own
    release (``provenance["source"]``, as live tasks do) that release of it."""
    spec = load_repo(task.repo)
    src = (task.provenance or {}).get("source")
    if not src:
        return spec
    return release_spec(spec, src["version"], src["sha256"], src.get("lock"))


def check_date(since: str) -> str:
    """``since`` if it is a date ``YYYY-MM-DD``; else a ValueError that says what to write."""
    if not _DATE.match(since or ""):
        raise ValueError(f"--since must be a date YYYY-MM-DD (e.g. 2025-06-01), got {since!r}")
    return since


def released(task: Any) -> str:
    """The release date (``YYYY-MM-DD``) of the fix a live or mirror task carries, '' if unknown."""
    return str((task.provenance or {}).get("released", ""))[:10]


def time_split() -> dict[str, Any]:
    """``registry/timesplit.json``: per repository its training snapshot, per live task whether it is held out
    (``frog_gym.generators.timesplit`` writes it; ``tests/test_time_split.py`` checks it against the data)."""
    import json
    from importlib import resources

    f = resources.files("frog_gym.registry").joinpath("timesplit.json")
    return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {"repos": {}, "live": {}}


def live_task_ids(since: str | None = None, *, seen: bool = False) -> list[str]:
    """The held-out live task ids, sorted (what ``FrogLive-v0`` and the ``live`` suite hold); with ``since``,
    only fixes released on or after that date. ``seen=True``: the live tasks that are *not* held out (their
    fix is in the repository's training snapshot), loadable by id but in no FrogLive suite."""
    from frog_gym.catalog.task import load_task, registered_task_ids

    verdicts = time_split()["live"]
    ids = [i for i in registered_task_ids() if is_live(i)
           and bool(verdicts.get(i, {}).get("held_out", False)) != seen]
    if since:
        check_date(since)
        ids = [i for i in ids if released(load_task(i)) >= since]
    return ids
