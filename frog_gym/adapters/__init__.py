"""Adapters to RL stacks that expect an environment in their own shape: :mod:`.skyrl` (skyrl-gym's
``BaseTextEnv``), :mod:`.skyrl_train` (skyrl-train's dataset and entry point), :mod:`.verl` (a verl agent
loop, its dataset and agent-loop file) and :mod:`.verifiers` (a verifiers taskset and env). Each imports its
library lazily; install the extra named in its docstring. They read model replies with
:mod:`frog_gym.toolcalls` and describe the tools with :mod:`frog_gym.toolspec`."""
