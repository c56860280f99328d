"""Grading: running the selected tests, the warm server, integrity checks, the oracle and the verdict.

May import: frog_gym.errors, frog_gym.paths, frog_gym.catalog, frog_gym.sandbox.

:mod:`.runner` runs a selection of tests cold in a sandbox and reads the signed report; :mod:`.server` is
the warm grading server that forks one child per grade; :mod:`.integrity` decides what of an agent's
edits reaches the grading tree and checks it; :mod:`.oracle` records and replays the behavioural oracle;
:mod:`.grade` puts them together into a :class:`~frog_gym.grading.grade.GradeReport`. The sandbox-side
half (the pytest plugins those runs load) is ``frog_gym/_plugin``, read as data, never imported here.
"""
