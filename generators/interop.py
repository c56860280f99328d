"""Task interchange: SWE-bench-format JSONL and Hugging Face datasets, out and back in.

SWE-bench stores ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` as JSON-encoded strings; ``export_swebench`` does the
same, adds the harness fields swebench 5.x's ``make_test_spec`` needs (``image``, an ``eval_script`` that
grades as frog-gym grades, ``log_parser = "parse_log_tap"``, which keeps test ids with spaces whole, and
``eval_type``), names the repository by its upstream ``owner/name`` and dates it by its release, and keeps
our fields (``bug_patch``, ``statement_level``, ``provenance``, ``features``, ``validation``,
``frog_repo``, ``frog_created_at``) beside them, so that ``import_tasks`` rebuilds exactly the task
records. The raw test log of every grade (``GradeReport.log_path``) is in the format that
``parse_log_tap`` reads, so swebench's ``get_eval_report`` grades our runs too
(``tests/test_swebench_interop.py`` checks that it agrees with us). A Hugging Face export is a folder that
``datasets.load_from_disk`` and ``datasets.load_dataset`` both read (our dict fields as JSON strings, so
every row has the same schema); it needs the ``hf`` extra (``pip install 'frog-gym[hf]'``).

Example:
    >>> from frog_gym.catalog.task import load_task
    >>> row = to_swebench(load_task("inflection__handwritten-0001"))
    >>> type(row["FAIL_TO_PASS"]).__name__, from_row(row) == load_task("inflection__handwritten-0001")
    ('str', True)
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from importlib import resources
from typing import TYPE_CHECKING, Any

from frog_gym.errors import SpecError, UsageError
from frog_gym.grading.runner import END_TEST_OUTPUT, START_TEST_OUTPUT, test_files_of
from frog_gym.catalog.task import Task, load_task, task_index

if TYPE_CHECKING:
    from frog_gym.catalog.spec import RepoSpec

SWEBENCH_FIELDS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
                   "created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit")
HARNESS_FIELDS = ("image", "eval_script", "log_parser", "eval_type")
"""What swebench 5.x's ``make_test_spec`` needs beside the dataset fields."""
OUR_FIELDS = ("bug_patch", "statement_level", "provenance", "features", "validation", "solve_rates", "frog_repo",
              "frog_created_at")
_DICTS = ("provenance", "features", "validation", "solve_rates")
LOG_PARSER = "parse_log_tap"
"""SWE-bench's parser for our logs: it keeps the whole rest of a result line as the test id, spaces and all."""
EVAL_TYPE = "pass_and_fail"


def swebench_repo(spec: RepoSpec) -> str:
    """SWE-bench's ``repo``: the spec's upstream ``owner/name``, or ``frog-gym/<name>`` when none is known."""
    return spec.source.repository or f"frog-gym/{spec.name}"


def image_name(spec: RepoSpec) -> str:
    """The image name an export points at: ``frog-gym/<name>:<version>``, holding the task's tree at
    ``/testbed`` and the repository's test environment first on ``PATH`` (the user builds it)."""
    return f"frog-gym/{spec.name}:{spec.source.version or spec.source.key[:12]}".lower()


def eval_script(task: Task, spec: RepoSpec) -> str:
    """A bash script that grades ``/testbed`` as frog-gym grades it, for SWE-bench's harness to run.

    It runs exactly the task's selected tests under frog-gym's report plugin (written out by the script),
    reads each test's status from the report file, not from pytest's output, distrusts a report whose exit
    status disagrees with pytest's or that claims every test passed while pytest failed (as
    :func:`frog_gym.grading.runner.read_report` does), and prints one TAP line per test between SWE-bench's
    markers for :data:`LOG_PARSER`. pytest's own output follows, with its markers defused.
    """
    plugin = resources.files("frog_gym").joinpath("_plugin", "frog_report.py").read_text(encoding="utf-8")
    ids = json.dumps(list(task.selected_tests), ensure_ascii=False)
    env = {"PYTHONHASHSEED": "0", "TZ": "UTC", "LC_ALL": "C.UTF-8", **spec.install.env,
           "PYTHONPATH": ":".join(["/tmp/frog/plugin", *("/testbed" if p in (".", "") else f"/testbed/{p}"
                                                        for p in spec.install.import_paths)]),
           "FROG_SELECT": "/tmp/frog/select.json", "FROG_REPORT": "/tmp/frog/report.json"}
    argv = ["python", "-m", "pytest", *spec.pytest_args, "-q", "-p", "frog_report", *test_files_of(task.selected_tests)]
    tap = (
        "import json, sys\n"
        "ids = json.load(open('/tmp/frog/select.json', encoding='utf-8'))\n"
        "rc = int(sys.argv[1])\n"
        "try:\n    report = json.load(open('/tmp/frog/report.json', encoding='utf-8'))\n"
        "except (OSError, ValueError):\n    report = {}\n"
        "tests = report.get('tests', {}) if report.get('exitstatus') == rc else {}\n"
        "ok = {t: tests.get(t) in ('PASSED', 'XFAIL') for t in ids}\n"
        "if all(ok.values()) and rc != 0:\n    ok = dict.fromkeys(ids, False)\n"
        "for n, t in enumerate(ids, 1):\n    print(('ok' if ok[t] else 'not ok'), n, t)\n")
    return "\n".join([
        "#!/bin/bash", "set -uxo pipefail", "cd /testbed", "mkdir -p /tmp/frog/plugin",
        "cat > /tmp/frog/plugin/frog_report.py <<'FROG_PLUGIN_EOF'", plugin.rstrip("\n"), "FROG_PLUGIN_EOF",
        "cat > /tmp/frog/select.json <<'FROG_SELECT_EOF'", ids, "FROG_SELECT_EOF",
        "cat > /tmp/frog/tap.py <<'FROG_TAP_EOF'", tap.rstrip("\n"), "FROG_TAP_EOF",
        " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), *map(shlex.quote, argv)])
        + " > /tmp/frog/pytest.log 2>&1",
        "frog_rc=$?",
        f"echo '{START_TEST_OUTPUT}'",
        "python /tmp/frog/tap.py $frog_rc",
        "(exit $frog_rc)",  # SWE-bench records $? of the line before the end marker as the test exit code
        f"echo '{END_TEST_OUTPUT}'",
        "sed 's/>>>>>/>>>> >/g' /tmp/frog/pytest.log",
    ]) + "\n"


def to_swebench(task: Task, dicts_as_json: bool = False) -> dict[str, Any]:
    """One task as a SWE-bench row that swebench 5.x's ``make_test_spec`` accepts, plus our fields.

    ``repo`` is the upstream ``owner/name``; ``base_commit`` and ``environment_setup_commit`` the git
    commit of a git source, else the sdist's sha256 (a PyPI release has no commit of its own);
    ``created_at`` the source's release date where the spec records it. ``frog_repo`` and
    ``frog_created_at`` keep our values, so that :func:`from_row` rebuilds the task exactly.
    """
    from frog_gym.catalog.spec import load_repo

    spec = load_repo(task.repo)
    d = asdict(task)
    row = {k: d[k] for k in SWEBENCH_FIELDS}
    row.update(repo=swebench_repo(spec), created_at=spec.source.released,
               environment_setup_commit=task.environment_setup_commit or task.base_commit)
    row["FAIL_TO_PASS"] = json.dumps(list(task.FAIL_TO_PASS))
    row["PASS_TO_PASS"] = json.dumps(list(task.PASS_TO_PASS))
    row.update(image=image_name(spec), eval_script=eval_script(task, spec), log_parser=LOG_PARSER,
               eval_type=EVAL_TYPE)
    d.update(frog_repo=task.repo, frog_created_at=task.created_at)
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
    if "frog_repo" in d:  # our own export: our registry name and dates
        d["repo"], d["created_at"] = d["frog_repo"], d.get("frog_created_at", "")
        if d.get("environment_setup_commit") == d.get("base_commit"):
            d["environment_setup_commit"] = ""
    elif "/" in str(d.get("repo", "")):  # another tool's row: map the upstream owner/name to our name
        d["repo"] = _registry_names().get(d["repo"].lower(), d["repo"])
    known = {f for f in Task.__dataclass_fields__}
    return Task.from_dict({k: v for k, v in d.items() if k in known}, where)


def _registry_names() -> dict[str, str]:
    """Upstream ``owner/name`` (lowercase) -> registry name, for the specs that record one."""
    from frog_gym.catalog.spec import load_repo, repo_names

    return {swebench_repo(load_repo(n)).lower(): n for n in repo_names()}


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
    """Write a ``datasets`` folder that both ``datasets.load_from_disk(out_dir)`` and
    ``datasets.load_dataset(out_dir)`` read as one ``train`` split: ``save_to_disk``'s layout (``train/*.arrow``
    with its state) plus a dataset card whose ``configs`` point ``load_dataset`` at the same arrow file."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file; `export --format hf` writes a folder: give a new or existing folder.")
    datasets = _datasets()
    out.mkdir(parents=True, exist_ok=True)
    ds = datasets.Dataset.from_list([to_swebench(t, dicts_as_json=True) for t in tasks])
    datasets.DatasetDict({"train": ds}).save_to_disk(str(out))
    repos = sorted({t.repo for t in tasks})
    (out / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: train/*.arrow\n---\n"
        f"# frog-gym tasks\n\n{len(tasks)} validated tasks from {len(repos)} repositories, in SWE-bench format "
        "(`FAIL_TO_PASS`/`PASS_TO_PASS` as JSON strings, with the harness fields `image`, `eval_script`, "
        "`log_parser`, `eval_type`) plus frog-gym's fields (`provenance`, `features`, `validation` as JSON "
        "strings). Load it with `datasets.load_from_disk` or `datasets.load_dataset`; `frog-gym import` turns "
        "the folder back into runnable tasks.\n", encoding="utf-8")
    return len(tasks)


def read_any(src: str | Path) -> list[Task]:
    """Tasks from a JSONL file (SWE-bench format or ours) or a Hugging Face export folder."""
    src = Path(src)
    if src.is_dir():
        datasets = _datasets()
        if (src / "dataset_dict.json").exists() or (src / "state.json").exists():
            loaded = datasets.load_from_disk(str(src))
            splits = list(loaded.values()) if isinstance(loaded, datasets.DatasetDict) else [loaded]
        else:
            files = sorted(str(p) for p in src.rglob("*.parquet"))  # an older export, or a Hub download
            if not files:
                raise UsageError(f"{src}: neither a `datasets` folder nor parquet files; expected a folder "
                                 "written by `frog-gym export --format hf`.")
            splits = [datasets.Dataset.from_parquet(files)]
        return [from_row(dict(r), f"{src}[{i}]") for ds in splits for i, r in enumerate(ds)]
    if not src.is_file():
        raise UsageError(f"{src}: no such file; give a JSONL file from `frog-gym export --format swebench` "
                         "or a folder from `export --format hf`.")
    out = []
    with open(src, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise UsageError(f"{src}:{n}: not valid JSON ({e.msg} at column {e.colno}); each line must be "
                                 "one task object, as `frog-gym export --format swebench` writes.") from None
            if not isinstance(row, dict):
                raise UsageError(f"{src}:{n}: a JSON {type(row).__name__}, not a task object; each line must be "
                                 "one task object, as `frog-gym export --format swebench` writes.")
            try:
                out.append(from_row(row, f"{src}:{n}"))
            except SpecError as e:
                raise UsageError(f"{e}; each line must be a task record as `frog-gym export` writes.") from None
    return out


def import_tasks(src: str | Path, dest_dir: str | Path | None = None, check_repos: bool = True) -> dict[str, int]:
    """Append the tasks of ``src`` to ``<dest_dir>/<repo>.jsonl`` (default: the registry), skipping ids that
    are already there; returns how many were added per repository."""
    from frog_gym.generators.synthesis import tasks_path, GenerateConfig
    from frog_gym.generators.taskfiles import append_task, read_existing
    from frog_gym.catalog.spec import load_repo

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
