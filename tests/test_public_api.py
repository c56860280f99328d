"""The public API a user, a config file or a deployment may name: it changes only on purpose.

Pinned here: what ``import frog_gym`` exports, the gym ids it registers and their entry point, the console
script and any entry points in ``pyproject.toml``, the ``frog-gym`` subcommands, and the classes and
module paths the README tells users to import.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.envs.registration import load_env_creator

import frog_gym
from frog_gym.catalog.live import LIVE_MARK, time_split
from frog_gym.catalog.task import registered_task_ids, task_index

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
FROG_IDS = [i for i in gym.registry if i.startswith(("FrogSWE", "FrogLive"))]


def resolve(ref: str) -> object:
    """``module:attr`` (an entry point's value) to the object it names."""
    module, _, attr = ref.partition(":")
    obj: object = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def test_the_package_exports():
    assert sorted(frog_gym.__all__) == ["DEFAULT_MAX_STEPS", "TOY_MAX_STEPS", "TOY_REPO", "__version__"]
    assert (frog_gym.DEFAULT_MAX_STEPS, frog_gym.TOY_REPO, frog_gym.TOY_MAX_STEPS) == (100, "frogtoy", 4)
    assert frog_gym.__version__ == PYPROJECT["project"]["version"]


def test_the_gym_ids_are_the_pools_and_one_per_task():
    pools = {"FrogSWE-v0", "FrogSWE-Toy-v0", "FrogLive-v0"}
    per_task = {f"FrogSWE/{iid}-v0" for iid in task_index()}
    assert set(FROG_IDS) == pools | per_task
    assert len(FROG_IDS) == len(task_index()) + 3
    assert gym.spec("FrogSWE-v0").kwargs == {} and gym.spec("FrogSWE-v0").max_episode_steps == 100
    toy = gym.spec("FrogSWE-Toy-v0").kwargs["task_ids"]
    assert toy and all(t.startswith("frogtoy__") for t in toy) and gym.spec("FrogSWE-Toy-v0").max_episode_steps == 4
    live = gym.spec("FrogLive-v0").kwargs["task_ids"]
    held_out = time_split()["live"]
    assert live == [t for t in registered_task_ids() if LIVE_MARK in t and held_out[t]["held_out"]] and live
    some = sorted(task_index())[0]
    assert gym.spec(f"FrogSWE/{some}-v0").kwargs == {"task_id": some}


def test_every_gym_id_enters_through_frog_gym_env():
    from frog_gym.env.core import FrogSWEEnv

    assert {gym.spec(i).entry_point for i in FROG_IDS} == {"frog_gym.env:FrogSWEEnv"}
    assert load_env_creator("frog_gym.env:FrogSWEEnv") is FrogSWEEnv


def test_importing_a_light_env_module_does_not_load_the_env():
    # frog_gym.env exposes FrogSWEEnv lazily: a tool description must not pull in grading and sandboxes.
    import subprocess

    code = ("import sys, frog_gym.env.toolspec\n"
            "print('frog_gym.env.core' in sys.modules, 'frog_gym.grading.grade' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_the_console_script_and_entry_points():
    assert PYPROJECT["project"]["scripts"] == {"frog-gym": "frog_gym.cli:main"}
    assert callable(resolve("frog_gym.cli:main"))
    for group, entries in PYPROJECT["project"].get("entry-points", {}).items():
        for name, ref in entries.items():
            assert resolve(ref) is not None, f"entry point {group}:{name} = {ref} does not resolve"
    assert PYPROJECT["tool"]["setuptools"]["py-modules"] == ["frog_gym_verifiers"]
    assert callable(resolve("frog_gym_verifiers:load_environment"))


def test_the_cli_subcommands():
    from frog_gym.cli import build_parser
    from frog_gym.commands import COMMANDS

    names = {"bench", "demo", "docker", "export", "generate", "import", "leaderboard", "mine", "oracle",
             "predictions", "registry", "serve", "setup", "suites", "tasks", "train"}
    assert set(COMMANDS) == names
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == names


@pytest.mark.parametrize("ref", [
    "frog_gym.env:FrogSWEEnv",
    "frog_gym.curriculum:CurriculumState", "frog_gym.curriculum:CurriculumConfig",
    "frog_gym.curriculum:FrontierCurriculum", "frog_gym.curriculum:TaskSynthesizer",
    "frog_gym.curriculum:PendingTask", "frog_gym.curriculum:episode_score",
    "frog_gym.sandbox:make_sandbox", "frog_gym.bench.harness:HarnessSpec", "frog_gym.env.swebench_docker:SWEBenchEnv",
    "frog_gym.generators.splits:split_ids",
])
def test_names_the_readme_tells_users_to_import(ref):
    assert resolve(ref) is not None
