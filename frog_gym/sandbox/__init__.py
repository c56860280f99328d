"""Sandbox backends behind one protocol (:class:`~frog_gym.sandbox.base.Sandbox`).

``make_sandbox`` is the one place that picks a backend by name: ``"local"`` (bubblewrap, the default)
or ``"docker"`` (the ``docker`` extra). Backends are imported lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from frog_gym.errors import UnknownNameError
from frog_gym.sandbox.base import ExecResult, Limits, Sandbox

if TYPE_CHECKING:
    from frog_gym.snapshot import PreparedRepo

BACKENDS = ("local", "docker")

__all__ = ["BACKENDS", "ExecResult", "Limits", "Sandbox", "make_sandbox"]


def make_sandbox(backend: str, repo: PreparedRepo | None, workspace: Path, limits: Limits | None = None,
                 binds: tuple[tuple[Path, str, bool], ...] = ()) -> Sandbox:
    """A sandbox of the named backend over ``workspace`` (mounted at /testbed) for ``repo``'s venv."""
    env = repo.spec.install.env if repo is not None else None
    venv = repo.venv if repo is not None else None
    if backend == "local":
        from frog_gym.sandbox.local import LocalSandbox

        return LocalSandbox(workspace, venv, limits, env=env, binds=binds)
    if backend == "docker":
        from frog_gym.sandbox.docker import DockerSandbox  # type: ignore[import-not-found]

        return DockerSandbox(workspace, repo, limits, binds=binds)
    raise UnknownNameError("sandbox backend", backend, BACKENDS)
