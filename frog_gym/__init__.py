"""frog-gym: executable software-engineering environments for training and benchmarking coding agents.

Importing ``frog_gym`` registers ``FrogSWE-v0`` (samples across every registered task), one id per
task, ``FrogSWE/<instance_id>-v0``, and ``FrogSWE-Toy-v0`` (samples the flipped-operator tasks of the
one-module ``frogtoy`` repository, small enough for a tiny model to learn) and ``FrogLive-v0`` (samples
the held-out real fixes mined from PyPI releases, see :mod:`frog_gym.catalog.live`; never in ``FrogSWE-v0``).
Registration reads only the task ids, so the import stays fast.

Example:
    >>> import gymnasium as gym, frog_gym
    >>> "FrogSWE-v0" in gym.registry
    True
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["DEFAULT_MAX_STEPS", "TOY_MAX_STEPS", "TOY_REPO", "__version__"]

DEFAULT_MAX_STEPS = 100
TOY_REPO = "frogtoy"
"""The repository of ``FrogSWE-Toy-v0``: one-line operator bugs a tiny model can learn to fix."""
TOY_MAX_STEPS = 4


def _register_all() -> None:
    from gymnasium.envs.registration import EnvSpec, register, registry

    from frog_gym.catalog.live import LIVE_MARK, time_split
    from frog_gym.catalog.task import registered_task_ids, task_index

    entry = "frog_gym.env:FrogSWEEnv"
    if "FrogSWE-v0" not in registry:
        register("FrogSWE-v0", entry_point=entry, max_episode_steps=DEFAULT_MAX_STEPS)
    # One spec per task, inserted directly: gymnasium's register() checks every registered id each call,
    # which is quadratic in the task count (seconds for a thousand tasks); these ids are unique by build.
    for iid in task_index():
        env_id = f"FrogSWE/{iid}-v0"
        if env_id not in registry:
            registry[env_id] = EnvSpec(id=env_id, entry_point=entry, max_episode_steps=DEFAULT_MAX_STEPS,
                                       kwargs={"task_id": iid})
    toy = sorted(iid for iid in task_index() if iid.startswith(TOY_REPO + "__"))
    if toy and "FrogSWE-Toy-v0" not in registry:
        register("FrogSWE-Toy-v0", entry_point=entry, max_episode_steps=TOY_MAX_STEPS, kwargs={"task_ids": toy})
    held_out = time_split()["live"]
    live = [iid for iid in registered_task_ids() if LIVE_MARK in iid and held_out.get(iid, {}).get("held_out")]
    if live and "FrogLive-v0" not in registry:
        register("FrogLive-v0", entry_point=entry, max_episode_steps=DEFAULT_MAX_STEPS, kwargs={"task_ids": live})


_register_all()
