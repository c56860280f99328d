"""Shared fixtures. Tests use the real cache ($FROG_GYM_HOME, default ~/.cache/frog-gym): the first run
builds the repositories' venvs, later runs reuse them."""

from __future__ import annotations

import shutil

import pytest


def pytest_collection_modifyitems(config, items):
    if shutil.which("bwrap") is None:
        raise pytest.UsageError("bubblewrap is required for the test suite: apt-get install -y bubblewrap")


@pytest.fixture(scope="session")
def docker_engine():
    """A client of the Docker engine at DOCKER_HOST (``bash .ci/docker.sh start`` starts one), checked once;
    tests that need it skip, saying why, where none answers."""
    from frog_gym.errors import SandboxUnavailableError
    from frog_gym.sandbox.images import docker_client

    try:
        return docker_client()
    except SandboxUnavailableError as e:
        pytest.skip(f"no Docker engine: {e}")


@pytest.fixture
def together():
    """``together(n)``: an async function that returns once ``n`` tasks have called it (what ``asyncio.Barrier``
    does on Python 3.11+), to start concurrent episodes' timed steps at one moment."""
    import asyncio

    def make(n: int):
        arrived, go = [0], asyncio.Event()

        async def wait() -> None:
            arrived[0] += 1
            if arrived[0] == n:
                go.set()
            await go.wait()

        return wait

    return make


@pytest.fixture(scope="session")
def git_source():
    """A factory for fixture repositories with a git source: ``make(folder, {path: text})`` writes the files,
    commits them as one commit (fixed author and date, no user or system git configuration) and returns the
    commit's sha."""
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def make(folder, files):
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "fixture"]):
            subprocess.run(cmd, cwd=folder, env=env, check=True)
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    return make
