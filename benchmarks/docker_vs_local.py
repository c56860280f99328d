"""Docker backend vs local backend, measured in one run on the same task: medians and their ratios.

- reset: ``env.reset()`` of the same task (workspace sync plus the sandbox's in-place restart).
- step: ``env.step({"tool": "bash", "command": "true"})``.
- sandbox start: a new sandbox and its first command (what a fresh env pays once).
- grading: a gold fix graded with the cache off (one fresh sandbox running pytest).

Run: ``python benchmarks/docker_vs_local.py [--task ID] [--n 30]`` with an engine at DOCKER_HOST
(``bash .ci/docker.sh start``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import frog_gym  # noqa: F401
from frog_gym.agents.oracle import hunks
from frog_gym.env import FrogSWEEnv
from frog_gym.grading.grade import grade
from frog_gym.sandbox import make_sandbox
from frog_gym.catalog.snapshot import prepare
from frog_gym.catalog.spec import load_repo
from frog_gym.catalog.task import load_task
from frog_gym.sandbox.workspace import Change, Workspace, template_for


def median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def measure(backend: str, task_id: str, n: int) -> dict[str, float]:
    env = FrogSWEEnv(task_id, backend=backend)
    env.reset(seed=0)  # builds the image or venv on first use; not timed
    out = {"reset": median_ms(lambda: env.reset(seed=0), n),
           "step": median_ms(lambda: env.step({"tool": "bash", "command": "true"}), n * 10)}
    env.close()

    task = load_task(task_id)
    repo = prepare(load_repo(task.repo))
    with tempfile.TemporaryDirectory() as tmp:
        def start() -> None:
            sb = make_sandbox(backend, repo, Path(tmp), None)
            sb.run("true")
            sb.close()

        out["sandbox start"] = median_ms(start, max(3, n // 5))
        template = template_for(repo, task.bug_patch, task_id)
        path, old, new = hunks(task.patch)[0]
        text = (template.root / path).read_bytes()
        fix = [Change(path, text, text.replace(old.encode(), new.encode(), 1))]
        scratch = Workspace(Path(tmp) / "grade")
        out["grading"] = median_ms(lambda: grade(repo, task, template, fix, scratch, use_cache=False,
                                                 backend=backend), max(3, n // 10))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", default="inflection__handwritten-0001")
    p.add_argument("--n", type=int, default=30)
    args = p.parse_args()
    local = measure("local", args.task, args.n)
    docker = measure("docker", args.task, args.n)
    print(f"task {args.task}, medians of {args.n} resets and {args.n * 10} steps")
    print(f"{'':14} {'local ms':>10} {'docker ms':>10} {'docker/local':>13}")
    for k in local:
        print(f"{k:14} {local[k]:10.2f} {docker[k]:10.2f} {docker[k] / local[k]:12.2f}x")


if __name__ == "__main__":
    main()
