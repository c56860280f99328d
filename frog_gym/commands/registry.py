"""``frog-gym registry``: add, list, show and validate repository specs; print the spec schema.

Examples:
    frog-gym registry add pypi:iniconfig==2.3.1 --kind parsing
    frog-gym registry add git:https://github.com/owner/repo@<commit> --tests tests --pytest-arg=-o --pytest-arg=addopts=
    frog-gym registry list
    frog-gym registry validate flask
    frog-gym registry validate --changed-since auto --sample 3 --budget 600   # what CI runs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HELP = "Add, list, show and validate the repositories of the registry."


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="registry_command", metavar="ACTION")
    a = sub.add_parser("add", help="fetch, build and measure a repository, then write its spec",
                       description="Fetch a source, hash it, build its venv, run its suite (3 times by default) "
                       "in the sandbox and write registry/repos/<name>.toml. Pass options that start with '-' "
                       "with '=', e.g. --pytest-arg=-o --pytest-arg=addopts=")
    a.add_argument("source", help="pypi:NAME==VERSION or git:URL@COMMIT (URL may be a local path)")
    a.add_argument("--name", help="registry name (default: the normalized project or folder name)")
    a.add_argument("--kind", default="", help="what the library does: parsing, dates, web, text, CLI, ...")
    a.add_argument("--import-path", action="append", dest="import_paths", metavar="DIR",
                   help="folder put on sys.path (repeatable; default: src for a src layout, else .)")
    a.add_argument("--tests", action="append", metavar="PATH", help="test file or folder (repeatable; default: inferred)")
    a.add_argument("--pytest-arg", action="append", default=[], dest="pytest_args", metavar="ARG",
                   help="extra pytest argument (repeatable), e.g. --pytest-arg=--deselect=tests/test_x.py::test_net")
    a.add_argument("--requires", action="append", default=[], metavar="REQ",
                   help="extra test requirement (repeatable); a pytest pin replaces the default pytest==8.4.2")
    a.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="sandbox environment variable")
    a.add_argument("--step", action="append", default=[], dest="steps", metavar="CMD",
                   help="shell command run in the venv after install")
    a.add_argument("--mutable", action="append", metavar="PATH", help="source folder generators may mutate")
    a.add_argument("--exclude", action="append", metavar="GLOB", help="glob pattern never mutated")
    a.add_argument("--no-install-package", action="store_true",
                   help="do not install the package's metadata and dependencies (default: install if it has a build file)")
    a.add_argument("--timeout", type=int, default=60, help="per-test timeout in seconds (default 60)")
    a.add_argument("--budget", type=int, default=120, help="seconds one full run may take (default 120)")
    a.add_argument("--runs", type=int, default=3, help="full runs used to find flaky tests (default 3)")
    a.add_argument("--out", type=Path, help="folder to write the spec to (default: the registry's repos folder)")
    a.add_argument("--force", action="store_true", help="overwrite an existing spec")
    a.add_argument("--json", action="store_true", help="print the written spec as JSON")

    ls = sub.add_parser("list", help="the registered repositories, with tests, suite time and task counts")
    ls.add_argument("--json", action="store_true", help="a JSON list")

    sh = sub.add_parser("show", help="one repository's spec and cache state")
    sh.add_argument("name", help="registry name or path to a spec file")
    sh.add_argument("--json", action="store_true", help="JSON")

    v = sub.add_parser("validate", help="re-verify, rebuild, re-run and compare with the recorded baseline",
                       description="With no names, every spec; with --changed-since, the specs added or "
                       "modified since REF ('auto': git merge-base HEAD origin/main, or the first commit), "
                       "plus --sample others picked at random while --budget seconds allow.")
    v.add_argument("names", nargs="*", help="registry names or spec file paths")
    v.add_argument("--changed-since", metavar="REF", help="validate specs changed since REF ('auto' for CI)")
    v.add_argument("--sample", type=int, default=0, help="also validate up to N other specs at random")
    v.add_argument("--budget", type=float, help="seconds for the random sample (required specs always run)")
    v.add_argument("--seed", type=int, help="seed of the random sample (printed, to reproduce it)")
    v.add_argument("--runs", type=int, default=1, help="runs of each suite (default 1)")
    v.add_argument("--json", action="store_true", help="a JSON list of results")

    c = sub.add_parser("coverage", help="measure which tests reach which code (grading then runs only those)",
                       description="Run each repository's suite once under coverage in the sandbox and cache the "
                       "map (per venv, under $FROG_GYM_HOME/coverage). Grading reads it to run only the "
                       "PASS_TO_PASS tests an agent's change can reach (frog_gym.grading.impact); generation "
                       "builds it too.")
    c.add_argument("names", nargs="*", help="registry names (default: every repository with synthetic tasks)")
    c.add_argument("--refresh", action="store_true", help="measure again even where a map is cached")

    sub.add_parser("schema", help="print the documented spec schema")
    p.set_defaults(_parser=p)


class _Bar:
    """A rich progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True)
        self.live = self.console.is_terminal
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                 TimeElapsedColumn(), console=self.console, transient=True)
        self.task = None
        self.last = ""

    def __enter__(self) -> _Bar:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.progress.stop()

    def __call__(self, desc: str, done: int, total: int) -> None:
        if self.live:
            if self.task is None:
                self.task = self.progress.add_task(desc, total=total)
            self.progress.update(self.task, description=desc, completed=done, total=total)
        elif desc != self.last:
            print(f"[{done}/{total}] {desc}", file=sys.stderr, flush=True)
        self.last = desc


def _task_counts() -> dict[str, int]:
    from frog_gym.catalog.task import task_index

    counts: dict[str, int] = {}
    for file_name, _ in task_index().values():
        repo = file_name.removesuffix(".jsonl")
        counts[repo] = counts.get(repo, 0) + 1
    return counts


def _skipped(m: dict[str, Any]) -> int:
    """Tests neither passing in every run, flaky, nor always failing: skipped (or xfailed, or never run)."""
    return max(0, m["tests"] - m["passing"] - len(m["flaky"]) - len(m["failing"]))


def _measured_line(m: dict[str, Any]) -> str:
    return (f"{m['tests']} tests: {m['passing']} passing, {_skipped(m)} skipped or never passing, "
            f"{len(m['flaky'])} flaky, {len(m['failing'])} always failing")


def _summary(spec: Any, tasks: dict[str, int]) -> dict[str, Any]:
    m = spec.measured
    return {"name": spec.name, "kind": spec.kind, "source": str(spec.source),
            "version": spec.source.version or spec.source.commit[:12], "license": spec.license,
            "tests": m["tests"], "passing": m["passing"], "flaky": len(m["flaky"]), "failing": len(m["failing"]),
            "skipped": _skipped(m),
            "suite_seconds": m["suite_seconds"], "tasks": tasks.get(spec.name, 0)}


def _add(args: argparse.Namespace) -> int:
    from frog_gym.errors import RefusedError
    from frog_gym.generators.onboarding import AddOptions, add

    env = {}
    for kv in args.env:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise RefusedError(f"--env expects KEY=VALUE, got {kv!r}")
        env[key] = value
    opts = AddOptions(name=args.name, kind=args.kind, import_paths=tuple(args.import_paths or ()) or None,
                      tests=tuple(args.tests or ()) or None, pytest_args=tuple(args.pytest_args),
                      requires=tuple(args.requires), env=env, steps=tuple(args.steps),
                      mutable=tuple(args.mutable) if args.mutable else None,
                      exclude=tuple(args.exclude) if args.exclude else None,
                      install_package=False if args.no_install_package else None, timeout=args.timeout,
                      budget=args.budget, runs=args.runs, out_dir=args.out, force=args.force)
    with _Bar() as bar:
        result = add(args.source, opts, bar)
    m = result.data["measured"]
    if args.json:
        print(json.dumps({"path": str(result.path), "spec": result.data}, indent=1))
    else:
        print(f"wrote {result.path}: {_measured_line(m)} (over {m['runs']} runs), suite {m['suite_seconds']} s")
    return 0


def _list(args: argparse.Namespace) -> int:
    from frog_gym.catalog.spec import load_repo, repo_names

    tasks = _task_counts()
    rows = [_summary(load_repo(n), tasks) for n in repo_names()]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} repositories")
    for col, justify in (("repository", "left"), ("version", "left"), ("kind", "left"), ("tests", "right"),
                         ("passing", "right"), ("suite s", "right"), ("tasks", "right")):
        table.add_column(col, justify=justify, no_wrap=col in ("repository", "version"))  # type: ignore[arg-type]
    for r in rows:
        table.add_row(r["name"], r["version"], r["kind"], str(r["tests"]), str(r["passing"]),
                      f"{r['suite_seconds']:.1f}", str(r["tasks"]))
    Console().print(table)
    return 0


def _show(args: argparse.Namespace) -> int:
    from frog_gym import paths
    from frog_gym.catalog.snapshot import venv_key
    from frog_gym.catalog.spec import load_spec

    spec = load_spec(args.name)
    home = paths.home()
    cache = {"sdist": bool(list((home / "sdists").glob(f"{spec.source.key}.*"))) if spec.source.kind == "pypi" else None,
             "snapshot": (home / "snapshots" / spec.source.key[:24] / ".frog-complete").exists(),
             "venv": (home / "venvs" / f"{spec.name}-{venv_key(spec)}" / ".frog-complete").exists()}
    if args.json:
        print(json.dumps({**_summary(spec, _task_counts()), "path": spec.path, "cache": cache,
                          "spec": _spec_dict(spec)}, indent=1))
        return 0
    print(f"# {spec.path}")
    print(Path(spec.path).read_text(encoding="utf-8").rstrip())
    print(f"# measured: {_measured_line(spec.measured)}")
    print(f"# cache ({home}): " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in cache.items() if v is not None))
    return 0


def _coverage(args: argparse.Namespace) -> int:
    from frog_gym.catalog.snapshot import prepare
    from frog_gym.catalog.spec import load_spec
    from frog_gym.generators import coverage_map

    names = args.names or sorted(f for f in _task_counts() if "." not in f)  # task files: REPO.jsonl, REPO.live.jsonl
    failed = 0
    for name in names:
        spec = load_spec(name)
        try:
            cmap, _ = coverage_map.build(prepare(spec), refresh=args.refresh)
        except RuntimeError as e:
            print(f"{name}: {e}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: {len(cmap.tests)} tests over {len(cmap.files)} files "
              f"({cmap.seconds:.0f} s to measure), {sum(len(v) for v in cmap.readers.values())} reads of source files")
    return 1 if failed else 0


def _spec_dict(spec: Any) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib.loads(Path(spec.path).read_text(encoding="utf-8"))


def _validate(args: argparse.Namespace) -> int:
    import random

    from frog_gym.generators.onboarding import plan, validate_many

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    required, optional = plan(args.names, args.changed_since, args.sample, seed)
    if args.changed_since or args.sample:
        print(f"validating {len(required)} changed spec(s): {', '.join(required) or '-'}; a sample of up to "
              f"{len(optional)} other(s) (seed {seed}, budget {args.budget or 'none'} s)", file=sys.stderr)
    with _Bar() as bar:
        checks, skipped = validate_many(required, optional, args.runs, args.budget, bar)
    if args.json:
        print(json.dumps({"checks": [c.to_dict() for c in checks], "skipped_for_time": skipped, "seed": seed},
                         indent=1))
    else:
        for c in checks:
            if c.ok:
                print(f"ok      {c.name}: {c.tests} tests, {c.passing} passing, {c.seconds} s")
            elif c.error:
                print(f"FAILED  {c.name}: {c.error}")
            else:
                print(f"CHANGED {c.name}: " + "; ".join(c.changes))
        if skipped:
            print(f"skipped for time: {', '.join(skipped)}")
    return 0 if all(c.ok for c in checks) else 1


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "registry_command", None)
    if action == "schema":
        from frog_gym.catalog.spec import schema_doc

        print(schema_doc())
        return 0
    handlers = {"add": _add, "list": _list, "show": _show, "validate": _validate, "coverage": _coverage}
    if action not in handlers:
        args._parser.print_help()
        return 2
    return handlers[action](args)
