"""pytest plugin used by frog-gym's coverage map: record which lines each test executes.

Loaded with ``-p frog_coverage`` next to ``frog_report``, with coverage.py importable from a read-only
folder on ``PYTHONPATH``. ``$FROG_COVERAGE`` names the data file to write; ``$FROG_COVERAGE_INCLUDE`` (a
JSON list of file patterns) limits measurement to the code that may be mutated. Each test runs in its
own dynamic context, named by its pytest node id (setup, call and teardown together), so the data says
exactly which tests reach a line; lines run while collecting (imports, ``def`` lines) get the empty context.
"""

import json
import os

import pytest

_cov = None


def pytest_configure(config):
    global _cov
    path = os.environ.get("FROG_COVERAGE")
    if not path:
        return
    import coverage

    include = json.loads(os.environ.get("FROG_COVERAGE_INCLUDE", "null"))
    _cov = coverage.Coverage(data_file=path, include=include, config_file=False, branch=False)
    _cov.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _cov is not None:
        _cov.switch_context(item.nodeid)
    yield
    if _cov is not None:
        _cov.switch_context("")


def pytest_unconfigure(config):
    global _cov
    if _cov is not None:
        _cov.stop()
        _cov.save()
        _cov = None
