"""Move a repository's training snapshot back to a release older than every FrogLive fix of it.

FrogLive is held out only if the training snapshot does not already contain its fixes. Every registered
repository was first pinned at its newest release, and FrogLive was mined from the release pairs before
that pin, so the training code held every live fix. The time split (``docs/froglive.md``, "What is held
out") moves the pin back instead: the training snapshot becomes release N of the repository's oldest live
fix (the pair N -> N+1), so every live fix is released after it.

``python -m frog_gym.generators.repin REPO [VERSION] --write``:

1. picks VERSION (default: the oldest release N among the repository's live tasks) from the index,
   fetches and verifies its sdist (sha256 from the index), and takes the lock the miner resolved for that
   release when a live task records one;
2. builds its venv and runs the suite twice (``[measured]``, as ``frog-gym registry add`` does);
3. writes the spec (``[source]`` version, sha256 and ``released``: the upload date) and retires what was
   made on the old snapshot: the pool task file, the mirror tasks (made on the old pin) and the oracle
   records.

Then generate the new pool on it (``frog-gym generate REPO``), record its oracles and verdicts; the
script ``.ci/repin.sh`` runs the whole chain for one repository.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from frog_gym.catalog.live import release_spec
from frog_gym.catalog.snapshot import prepare, snapshot_tree
from frog_gym.catalog.spec import load_repo, parse_repo
from frog_gym.generators import onboarding
from frog_gym.generators.releases import fetch_release, list_releases
from packaging.version import Version

REGISTRY = Path(str(resources.files("frog_gym.registry")))
"""The registry's folder (a source checkout's ``registry/``: re-pinning edits data that is committed)."""
REPOS, TASKS, ORACLES = REGISTRY / "repos", REGISTRY / "tasks", REGISTRY / "oracles"


def _records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _provenance(record: dict[str, Any]) -> dict[str, Any]:
    p = record.get("provenance") or {}
    p = ast.literal_eval(p) if isinstance(p, str) else p
    if isinstance(p.get("source"), str):
        p["source"] = ast.literal_eval(p["source"])
    return p


def live_bases(name: str) -> list[tuple[str, dict[str, Any]]]:
    """(release N, its recorded source) of each live task of ``name``."""
    return [(r["version"], _provenance(r).get("source") or {}) for r in _records(TASKS / f"{name}.live.jsonl")]


def default_version(name: str) -> str:
    bases = live_bases(name)
    if not bases:
        raise SystemExit(f"{name}: no live task; give the release to pin explicitly (python -m frog_gym.generators.repin "
                         f"{name} VERSION)")
    return str(min((Version(v) for v, _ in bases)))


def repin(name: str, version: str, runs: int = 2, budget: float = 900.0) -> dict[str, Any]:
    """The new spec data for ``name`` at ``version`` (fetched, built and measured); nothing written."""
    path = REPOS / f"{name}.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    spec = load_repo(name)
    rel = next((r for r in list_releases(spec.source.name) if Version(r.version) == Version(version)), None)
    if rel is None:
        raise SystemExit(f"{name}: the index has no sdist of release {version}")
    fetch_release(spec, rel)
    lock = next((src.get("lock") for v, src in live_bases(name) if Version(v) == Version(version) and src.get("lock")),
                None)
    tree = snapshot_tree(release_spec(spec, rel.version, rel.sha256, lock))
    data["source"].update(version=rel.version, sha256=rel.sha256, released=rel.uploaded[:10])
    if lock:
        data["install"]["lock"] = list(lock)
    # An older release may lay its code or tests out differently: paths it lacks are inferred again, as
    # `frog-gym registry add` infers them.
    missing = lambda paths: not paths or any(not (tree / p).exists() for p in paths)  # noqa: E731
    if missing(data["install"].get("import_paths", ["."])):
        data["install"]["import_paths"] = onboarding.infer_import_paths(tree)
    if missing(data["tests"].get("paths", [])):
        data["tests"]["paths"] = onboarding.infer_tests(tree)
    gen = data.setdefault("generate", {})
    if missing(gen.get("mutable", [])):
        gen["mutable"] = onboarding.infer_mutable(tree, data["install"]["import_paths"])
        gen["exclude"] = onboarding.infer_exclude(tree, gen["mutable"])
    repo = prepare(parse_repo(data, str(path)))
    base = onboarding.measure(repo, runs, budget, lambda d, i, n: print(d, flush=True))
    if not base.passing:
        raise SystemExit(f"{name} {version}: no test passed in every run; not re-pinned")
    data["measured"] = base.measured()
    return data


def retire_old(name: str, version: str) -> dict[str, int]:
    """Remove what was made on the old snapshot: pool tasks, mirror tasks and oracle records."""
    out = {"pool": 0, "mirror": 0, "oracles": 0}
    for suffix in ("jsonl", "ids"):
        p = TASKS / f"{name}.{suffix}"
        if p.exists():
            if suffix == "jsonl":
                out["pool"] = len(_records(p))
            p.unlink()
    # Mirror tasks reverse a real fix onto the pinned release (their bug patch is made on it): none survives
    # a new pin; `frog-gym mine --mirror` makes them again on the new one.
    mirror = TASKS / f"{name}.mirror.jsonl"
    out["mirror"] = len(_records(mirror))
    mirror.unlink(missing_ok=True)
    mirror.with_suffix(".ids").unlink(missing_ok=True)
    oracle = ORACLES / f"{name}.jsonl.gz"
    if oracle.exists():
        oracle.unlink()
        out["oracles"] = 1
    return out


def drop_failed(name: str, record: Path) -> list[str]:
    """Drop the pool tasks of ``name`` whose last graded verdict in ``record`` failed, or whose oracle recording
    changed a gold test's outcome (generated bugs that validation accepts but grading cannot score honestly:
    one that makes the package start a process, tests that depend on the sandbox, e.g. symlinks), and keep in
    the oracle file only the records of tasks still registered."""
    import gzip

    last: dict[str, dict[str, Any]] = {}
    for line in record.read_text(encoding="utf-8").splitlines():
        v = json.loads(line)
        if v.get("mode") == "graded":
            last[v["id"]] = v
    bad = {i for i, v in last.items() if i.startswith(name + "__") and not v["ok"]}
    oracle = ORACLES / f"{name}.jsonl.gz"
    recs = ([json.loads(x) for x in gzip.decompress(oracle.read_bytes()).decode().splitlines() if x.strip()]
            if oracle.exists() else [])
    bad |= {r["instance_id"] for r in recs if r.get("changed_outcome")}
    from frog_gym.generators.taskfiles import rewrite_task_file

    rewrite_task_file(TASKS / f"{name}.jsonl", lambda r: None if r["instance_id"] in bad else r)
    kept = {r["instance_id"] for kind in ("", ".live", ".mirror") for r in _records(TASKS / f"{name}{kind}.jsonl")}
    if recs:
        oracle.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in recs if r["instance_id"] in kept).encode()))
    return sorted(bad)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m frog_gym.generators.repin", description=__doc__.split("\n\n")[0])
    ap.add_argument("repo")
    ap.add_argument("version", nargs="?", help="the release to pin (default: the oldest live task's release N)")
    ap.add_argument("--runs", type=int, default=2, help="full suite runs for [measured] (default 2)")
    ap.add_argument("--write", action="store_true", help="write the spec and retire the old snapshot's tasks")
    ap.add_argument("--drop-failed", metavar="RECORD", help="instead, drop the repository's tasks whose last "
                    "graded verdict in RECORD (.ci/sample_tasks.py --record) failed")
    args = ap.parse_args(argv)
    if args.drop_failed:
        print("dropped:", drop_failed(args.repo, Path(args.drop_failed)))
        return 0
    version = args.version or default_version(args.repo)
    if Version(load_repo(args.repo).source.version) == Version(version):
        print(f"{args.repo}: already pinned at {version}; nothing to do (its pool was made on it)")
        return 0
    data = repin(args.repo, version, args.runs)
    print(json.dumps({k: data[k] for k in ("source", "measured")}, indent=1)[:2000])
    if args.write:
        onboarding.write_spec(REPOS / f"{args.repo}.toml", data)
        print("retired:", retire_old(args.repo, version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
