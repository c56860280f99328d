"""The built wheel installs into a fresh venv and finds the registry data from the installed copy."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_reads_registry_data(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True)
    wheel = next(dist.glob("frog_gym-*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=True)  # dependencies come from this interpreter
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    code = ("import frog_gym, frog_gym.registry, frog_gym.generators, frog_gym.learners, frog_gym.leaderboard\n"
            "from frog_gym.catalog.task import task_index, load_task\n"
            "from frog_gym.catalog.spec import repo_names, load_repo\n"
            "import gymnasium as gym\n"
            "print(frog_gym.__file__)\n"
            "print(len(task_index()), len(repo_names()), load_repo('inflection').path)\n"
            "print(load_task(sorted(task_index())[0]).repo, 'FrogSWE-v0' in gym.registry)\n"
            "import frog_gym.commands.bench, frog_gym.commands.train\n"
            "import importlib.util; print(importlib.util.find_spec('generators'), importlib.util.find_spec('registry'))\n")
    out = subprocess.run([str(py), "-c", code], check=True, capture_output=True, text=True, cwd=tmp_path).stdout
    lines = out.splitlines()
    assert str(env_dir) in lines[0], "imported the source tree instead of the installed wheel"
    n_tasks, n_repos, spec_path = lines[1].split()
    assert int(n_tasks) >= 15 and int(n_repos) >= 3 and str(env_dir) in spec_path
    assert lines[2].endswith("True")
    assert lines[3] == "None None", "generic top-level names must not be installed"


def test_editable_install_reads_registry_data_from_the_tree():
    import frog_gym
    from frog_gym.catalog.spec import load_repo

    assert Path(frog_gym.__file__).resolve().is_relative_to(ROOT)
    assert Path(load_repo("inflection").path).resolve().is_relative_to(ROOT / "registry")


def test_console_script_runs():
    out = subprocess.run(["frog-gym", "--help"], capture_output=True, text=True, check=True).stdout
    assert "demo" in out and "tasks" in out
