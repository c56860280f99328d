"""Benchmarking: the fixed harness, task suites, runs over a suite (local or on Ray), predictions.

May import: frog_gym, frog_gym.errors, frog_gym.catalog, frog_gym.sandbox, frog_gym.env, frog_gym.agents.

:mod:`.harness` freezes and fingerprints everything that affects a score; :mod:`.suites` names task
subsets; :mod:`.runner` runs an agent over a suite in worker processes, resumably; :mod:`.worker` is one
episode in such a worker; :mod:`.distributed` runs the same episodes on Ray actors; :mod:`.predictions`
writes SWE-bench predictions from a run.
"""
