"""Cold build time of registry repositories against the cache-hit time of a second prepare.

For each repository: a fresh, empty ``FROG_GYM_HOME`` (pip's own download cache is left alone), then
``prepare(spec)`` twice, timed. The first fetches and verifies the sdist, downloads the locked wheels into
the wheelhouse, gets the package's wheel and builds the venv; the second finds everything cached. Prints a
table with the ratio cold / hit.

    python benchmarks/registry_build.py                 # a sample of 3 repositories
    python benchmarks/registry_build.py --repos parse,six
    python benchmarks/registry_build.py --all
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time

from frog_gym.catalog import snapshot
from frog_gym.catalog.spec import load_repo, repo_names


def measure(name: str, root: str) -> tuple[float, float, int]:
    """(cold seconds, cache-hit seconds, pip runs on the cache hit) for one repository."""
    home = tempfile.mkdtemp(prefix=f"bench-{name}-", dir=root)
    os.environ["FROG_GYM_HOME"] = home
    try:
        spec = load_repo(name)
        start = time.perf_counter()
        snapshot.prepare(spec)
        cold = time.perf_counter() - start
        before = sum(snapshot.PIP_RUNS.values())
        start = time.perf_counter()
        snapshot.prepare(spec)
        hit = time.perf_counter() - start
        return cold, hit, sum(snapshot.PIP_RUNS.values()) - before
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", help="comma-separated registry names")
    ap.add_argument("--all", action="store_true", help="every registered repository")
    ap.add_argument("--sample", type=int, default=3, help="random repositories when neither is given")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--root", default=None, help="folder for the fresh homes (default: the system temp dir)")
    args = ap.parse_args()
    names = (list(repo_names()) if args.all else args.repos.split(",") if args.repos
             else random.Random(args.seed).sample(list(repo_names()), args.sample))
    saved = os.environ.get("FROG_GYM_HOME")
    rows = []
    print(f"{'repository':<18} {'cold s':>8} {'hit ms':>8} {'ratio':>9} {'pip on hit':>10}", flush=True)
    try:
        for name in names:
            cold, hit, pip_runs = measure(name, args.root or tempfile.gettempdir())
            rows.append((name, cold, hit))
            print(f"{name:<18} {cold:8.1f} {hit * 1000:8.2f} {cold / hit:9.0f}x {pip_runs:10d}", flush=True)
    finally:
        if saved is None:
            os.environ.pop("FROG_GYM_HOME", None)
        else:
            os.environ["FROG_GYM_HOME"] = saved
    colds = [r[1] for r in rows]
    hits = [r[2] * 1000 for r in rows]
    print(f"{len(rows)} repositories: cold {min(colds):.1f}-{max(colds):.1f} s (median {statistics.median(colds):.1f}), "
          f"cache hit {min(hits):.2f}-{max(hits):.2f} ms (median {statistics.median(hits):.2f})")


if __name__ == "__main__":
    main()
