"""Task interchange: SWE-bench-format JSONL and Hugging Face datasets (parquet), out and back in.

SWE-bench stores ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` as JSON-encoded strings; ``export_swebench`` does the
same and keeps our fields (``bug_patch``, ``statement_level``, ``provenance``, ``features``,
``validation``) beside them, so that ``import_tasks`` rebuilds exactly the task records. A Hugging Face
export is one parquet file under ``<dir>/data/`` (our dict fields as JSON strings, so every row has the
same schema) plus a short dataset card; it needs the ``hf`` extra (``pip install 'frog-gym[hf]'``).

Example:
    >>> from frog_gym.task import load_task
    >>> row = to_swebench(load_task("inflection__handwritten-0001"))
    >>> type(row["FAIL_TO_PASS"]).__name__, from_row(row) == load_task("inflection__handwritten-0001")
    ('str', True)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from frog_gym.task import Task, load_task, task_index

SWEBENCH_FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
                   "created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit")
OUR_FIELDS = ("bug_patch", "statement_level", "provenance", "features", "validation", "solve_rates")
_DICTS = ("provenance", "features", "validation", "solve_rates")


def to_swebench(task: Task, dicts_as_json: bool = False) -> dict[str, Any]:
    """One task as a SWE-bench row (test lists as JSON strings) plus our fields."""
    d = asdict(task)
    row = {k: d[k] for k in SWEBENCH_FIELDS}
    row["FAIL_TO_PASS"] = json.dumps(list(task.FAIL_TO_PASS))
    row["PASS_TO_PASS"] = json.dumps(list(task.PASS_TO_PASS))
    for k in OUR_FIELDS:
        row[k] = json.dumps(d[k], sort_keys=True) if dicts_as_json and k in _DICTS else d[k]
    return row


def from_row(row: dict[str, Any], where: str = "<row>") -> Task:
    """A task from a SWE-bench row, ours or another tool's (missing fields of ours take defaults)."""
    d = {k: v for k, v in row.items() if v is not None}
    for k in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        if isinstance(d.get(k), str):
            d[k] = json.loads(d[k])
    for k in _DICTS:
        if isinstance(d.get(k), str):
            d[k] = json.loads(d[k]) if d[k] else {}
    d.setdefault("bug_patch", "")
    known = {f for f in Task.__dataclass_fields__}
    return Task.from_dict({k: v for k, v in d.items() if k in known}, where)


def registered_tasks(ids: Iterable[str] | None = None) -> list[Task]:
    return [load_task(i) for i in sorted(ids if ids is not None else task_index())]


def export_swebench(tasks: list[Task], out: str | Path) -> int:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for t in tasks:
            f.write(json.dumps(to_swebench(t), ensure_ascii=False) + "\n")
    return len(tasks)


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        from frog_gym.errors import FrogGymError

        raise FrogGymError("Exporting or importing a Hugging Face dataset needs the 'hf' extra: "
                           "pip install 'frog-gym[hf]'") from None
    return datasets


def export_hf(tasks: list[Task], out_dir: str | Path) -> int:
    """Write ``out_dir/data/train-00000-of-00001.parquet`` and a dataset card (``datasets`` loads it)."""
    datasets = _datasets()
    out = Path(out_dir)
    (out / "data").mkdir(parents=True, exist_ok=True)
    ds = datasets.Dataset.from_list([to_swebench(t, dicts_as_json=True) for t in tasks])
    ds.to_parquet(str(out / "data" / "train-00000-of-00001.parquet"))
    repos = sorted({t.repo for t in tasks})
    (out / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/*.parquet\n---\n"
        f"# frog-gym tasks\n\n{len(tasks)} validated tasks from {len(repos)} repositories, in SWE-bench format "
        "(`FAIL_TO_PASS`/`PASS_TO_PASS` as JSON strings) plus frog-gym's fields (`provenance`, `features`, "
        "`validation` as JSON strings). `frog-gym import` turns the folder back into runnable tasks.\n")
    return len(tasks)


def read_any(src: str | Path) -> list[Task]:
    """Tasks from a JSONL file (SWE-bench format or ours) or a Hugging Face export folder."""
    src = Path(src)
    if src.is_dir():
        datasets = _datasets()
        files = sorted(str(p) for p in src.rglob("*.parquet"))
        if not files:
            raise FileNotFoundError(f"{src}: no parquet files found; expected an `export --format hf` folder")
        ds = datasets.Dataset.from_parquet(files)
        return [from_row(dict(r), f"{src}[{i}]") for i, r in enumerate(ds)]
    out = []
    with open(src, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                out.append(from_row(json.loads(line), f"{src}:{n}"))
    return out


def import_tasks(src: str | Path, dest_dir: str | Path | None = None, check_repos: bool = True) -> dict[str, int]:
    """Append the tasks of ``src`` to ``<dest_dir>/<repo>.jsonl`` (default: the registry), skipping ids that
    are already there; returns how many were added per repository."""
    from frog_gym.generators.synthesis import append_task, read_existing, tasks_path, GenerateConfig
    from frog_gym.spec import load_repo

    cfg = GenerateConfig(tasks_dir=str(dest_dir) if dest_dir else None)
    added: dict[str, int] = {}
    have: dict[str, set[str]] = {}
    for t in read_any(src):
        spec = load_repo(t.repo) if check_repos else None
        path = tasks_path(spec, cfg) if spec is not None else Path(dest_dir or ".") / f"{t.repo}.jsonl"
        ids = have.setdefault(str(path), {d["instance_id"] for d in read_existing(path)})
        if t.instance_id in ids:
            continue
        append_task(path, t)
        ids.add(t.instance_id)
        added[t.repo] = added.get(t.repo, 0) + 1
    return added
