"""Registry task files (``registry/tasks/<repo>.jsonl``) written in place: appended to, rewritten, kept with
their ``.ids`` sidecar, each under the file's lock so that concurrent generators never lose a record."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from frog_gym import paths
from frog_gym.catalog.task import Task, ids_sidecar_text


def append_task(path: Path, task: Task) -> None:
    """Append one record to a JSONL file atomically (one write under a lock, newline-terminated)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = task.to_json() + "\n"
    with FileLock(str(paths.home() / "locks" / f"tasks-{path.name}.lock")):
        with open(path, "ab") as f:
            if f.tell() > 0:
                with open(path, "rb") as r:
                    r.seek(-1, os.SEEK_END)
                    if r.read(1) != b"\n":
                        line = "\n" + line
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        write_ids_sidecar(path)


def write_ids_sidecar(path: Path) -> None:
    """Rewrite ``<repo>.ids`` beside a task file (what ``task_index`` reads instead of the whole file)."""
    side = path.with_suffix(".ids")
    tmp = side.with_name(f".{side.name}.{os.getpid()}.tmp")
    tmp.write_text(ids_sidecar_text(path.read_bytes()), encoding="utf-8")
    os.replace(tmp, side)


def rewrite_task_file(path: Path, fn: Callable[[dict], dict | None]) -> Counter:
    """Rewrite every record of a task file in place through ``fn`` (None drops it), same order, under the
    task file's lock; every rewritten record must still load. Returns counts of changed/unchanged/dropped."""
    counts: Counter = Counter()
    with FileLock(str(paths.home() / "locks" / f"tasks-{path.name}.lock")):
        out = []
        for d in read_existing(path):
            new = fn(d)
            counts["dropped" if new is None else "changed" if new != d else "unchanged"] += 1
            if new is not None:
                out.append(Task.from_dict(new, str(path)).to_json())
        if not counts["changed"] and not counts["dropped"]:
            return counts  # nothing to rewrite: the file keeps its bytes
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text("".join(x + "\n" for x in out), encoding="utf-8")
        os.replace(tmp, path)
        write_ids_sidecar(path)
    return counts


def read_existing(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
