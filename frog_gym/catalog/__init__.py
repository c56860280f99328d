"""The task catalog: repository specs and their schema, task records, FrogLive ids, snapshots and venvs.

May import: frog_gym.errors, frog_gym.paths.

It reads what ``registry/`` (the package ``frog_gym.registry``) holds: :mod:`.spec` the repository specs,
:mod:`.schema` the checker both record kinds use, :mod:`.task` the task records and their index,
:mod:`.live` FrogLive's held-out ids; :mod:`.snapshot` fetches a spec's pinned source and builds its venv.
Writing new entries is the generators' work (``frog_gym.generators``, ``onboarding`` for repositories).
"""
