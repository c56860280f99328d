"""Every benchmark runs against the registry as it stands: each one at its smallest size (slow), and every task
id a benchmark names is registered (default run)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from frog_gym.catalog.task import task_index

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
HELPERS = {"cpumeter.py", "taskpick.py"}
"""Modules the benchmarks import, not benchmarks themselves."""

SMALLEST: dict[str, list[str]] = {
    "async_steps.py": ["--episodes", "2", "--steps", "3", "--rounds", "1"],
    "child_profile.py": ["--tasks", "2", "--top", "5"],
    "curriculum_sim.py": ["--quick", "--seeds", "1", "--plot", "{tmp}/curriculum.png"],
    "env_latency.py": ["--task", "inflection__handwritten-0001", "--n", "1", "--resets", "1"],
    "env_latency_ab.py": ["--baseline", "{baseline}", "--task", "inflection__handwritten-0001", "--n", "1",
                          "--rounds", "1"],
    "generation.py": ["--repo", "inflection", "--n", "1"],
    "grading_integrity.py": ["--task", "inflection__handwritten-0001", "--n", "1"],
    "grading_profile.py": ["--task", "inflection__handwritten-0001", "--n", "1", "--first", "5"],
    "grpo_gpu.py": ["--tiny", "--batch", "2", "--prompt-tokens", "8", "--new-tokens", "2", "--micro-batch", "1",
                    "--dtype", "float32"],
    "grpo_toy.py": ["--updates", "2", "--out", "{tmp}/grpo_toy.png"],
    "harness.py": ["--tasks", "2", "--rounds", "1"],
    "oracle_cost.py": ["--tasks", "1", "--n", "1"],
    "one_edit_undo.py": ["--per-family", "1", "--repos", "inflection", "--json", "{tmp}/undo.json"],
    "registry_build.py": ["--repos", "frogtoy", "--root", "{tmp}"],
    "report_dict.py": ["--tasks", "1", "--n", "3"],
    "reset_latency.py": ["--n", "1", "--no-grade"],
    "scale.py": ["--tasks", "2", "--workers", "1", "--measure", "1", "--sides", "local"],
    "soak.py": ["--episodes", "2", "--recycle", "1"],
    "static_check_cost.py": ["--tasks", "2"],
    "vault_costs.py": ["--tasks", "2"],
    "warm_costs.py": ["--tasks", "2"],
}
NEEDS_DOCKER = {"docker_vs_local.py": ["--n", "1"]}


def _benchmarks() -> list[str]:
    return sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name not in HELPERS)


def test_every_benchmark_has_a_smallest_size():
    missing = [b for b in _benchmarks() if b not in SMALLEST and b not in NEEDS_DOCKER]
    assert not missing, f"add the smallest arguments of {missing} to SMALLEST in {__file__}"


def test_every_task_a_benchmark_names_is_registered():
    index = task_index()
    named = {(p.name, m) for p in BENCHMARKS.glob("*.py")
             for m in re.findall(r"[\"']([a-z0-9_-]+__[a-z0-9_.-]+)[\"']", p.read_text(encoding="utf-8"))}
    assert named, "no benchmark names a task: the pattern no longer matches how they are written"
    stale = sorted(x for x in named if x[1] not in index)
    assert not stale, f"benchmarks name tasks the registry no longer has: {stale}"


def _run(name: str, args: list[str], tmp_path: Path) -> None:
    fill = {"tmp": str(tmp_path), "baseline": str(tmp_path / "baseline")}
    if "{baseline}" in args:
        subprocess.run(["git", "worktree", "add", "--detach", fill["baseline"], "HEAD"], cwd=ROOT, check=True,
                       capture_output=True)
    try:
        proc = subprocess.run([sys.executable, str(BENCHMARKS / name), *(a.format(**fill) for a in args)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=1500,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        if "{baseline}" in args:
            subprocess.run(["git", "worktree", "remove", "--force", fill["baseline"]], cwd=ROOT, check=False,
                           capture_output=True)
    assert proc.returncode == 0, f"{name} {args}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip() or proc.stderr.strip(), f"{name} printed nothing"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALLEST))
def test_benchmark_runs_at_its_smallest_size(name, tmp_path):
    _run(name, SMALLEST[name], tmp_path)


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(NEEDS_DOCKER))
def test_docker_benchmark_runs_at_its_smallest_size(name, tmp_path, docker_engine):
    _run(name, NEEDS_DOCKER[name], tmp_path)
