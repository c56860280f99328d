"""Adapters to RL stacks that expect an environment in their own shape: :mod:`.skyrl` (skyrl-gym's
``BaseTextEnv``) and :mod:`.verifiers` (a verifiers taskset and env). Each imports its library lazily;
install the extra named in its docstring."""
