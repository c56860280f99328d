"""Imported by every Python process of a graded test run (``/frog/plugin`` is on its ``PYTHONPATH``).

In a process that a test started, the report plugin's guard (it leaves ``FROG_GUARD_ROOT`` in the
environment that processes inherit) is installed before anything else runs, so package code run there (a
test running the package's command-line entry point) is held to the test process's rules: it reads no
graded test file and starts no process. A child whose guard can't start exits with status 70 rather
than run unguarded. Anywhere else (the test process itself, the grading server, an agent's episode) it
does nothing.
"""

import os
import sys

if os.environ.get("FROG_GUARD_ROOT"):
    try:
        import frog_report

        guarded = bool(frog_report._guard)
    except Exception as e:  # noqa: BLE001 (any failure means an unguarded child: refuse to run it)
        guarded, why = False, repr(e)
    else:
        why = "its configuration ($FROG_SELECT) is missing"
    if not guarded:
        sys.stderr.write(f"frog-gym: the grading guard could not start in this child process: {why}\n")
        sys.stderr.flush()
        os._exit(70)
