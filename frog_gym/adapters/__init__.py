"""Adapters that give FrogSWE the shape another RL stack or protocol expects.

May import: frog_gym, frog_gym.errors, frog_gym.env, frog_gym.learners.

:mod:`.skyrl` (skyrl-gym's ``BaseTextEnv``), :mod:`.verifiers` (a verifiers taskset and env) and
:mod:`.openenv` (the OpenEnv server behind ``frog-gym serve``). Each imports its library lazily; install the
extra named in its docstring."""
