"""Adapters that give FrogSWE the shape another RL stack or protocol expects.

May import: frog_gym, frog_gym.errors, frog_gym.env, frog_gym.learners.

:mod:`.skyrl` (skyrl-gym's ``BaseTextEnv``) and :mod:`.verifiers` (a verifiers taskset and env). The OpenEnv
server is :mod:`frog_gym.serve`, beside the CLI, so that its documented ``uvicorn frog_gym.serve:app`` stays.
Each imports its library lazily; install the extra named in its docstring."""
