"""Adapters that give FrogSWE the shape another RL stack or protocol expects.

May import: frog_gym, frog_gym.errors, frog_gym.env, frog_gym.learners.

:mod:`.skyrl` (skyrl-gym's ``BaseTextEnv``), :mod:`.skyrl_train` (skyrl-train's dataset and entry point),
:mod:`.verl` (a verl agent loop, its dataset and agent-loop file) and :mod:`.verifiers` (a verifiers taskset and
env). Each imports its library lazily; install the extra named in its docstring. They read model replies with
:mod:`frog_gym.env.toolcalls` and describe the tools with :mod:`frog_gym.env.toolspec`. The OpenEnv server is
:mod:`frog_gym.serve`, beside the CLI, so that its documented ``uvicorn frog_gym.serve:app`` stays."""
