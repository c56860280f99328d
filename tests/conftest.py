"""Shared fixtures. Tests use the real cache ($FROG_GYM_HOME, default ~/.cache/frog-gym): the first run
builds the repositories' venvs, later runs reuse them."""

from __future__ import annotations

import shutil

import pytest


def pytest_collection_modifyitems(config, items):
    if shutil.which("bwrap") is None:
        raise pytest.UsageError("bubblewrap is required for the test suite: apt-get install -y bubblewrap")
