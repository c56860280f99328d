"""The name verifiers loads FrogSWE by: ``--env.taskset.id frog-gym-verifiers`` (verifiers imports a
taskset id as a top-level module and takes the ``Taskset``, ``Env`` and default ``Harness`` its ``__all__``
exports). The adapter itself is :mod:`frog_gym.adapters.verifiers`."""

from frog_gym.adapters.verifiers import FrogSWEHarness, FrogSWETaskset, FrogSWEVerifiersEnv, load_environment

__all__ = ["FrogSWEHarness", "FrogSWETaskset", "FrogSWEVerifiersEnv", "load_environment"]
