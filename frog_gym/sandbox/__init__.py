"""Where the agent's code runs, and the host's hands on what it touched: sandboxes, workspaces, leak reaping.

May import: frog_gym.errors, frog_gym.paths, frog_gym.catalog.

Sandbox backends share one protocol (:class:`~frog_gym.sandbox.base.Sandbox`); :mod:`.workspace` holds an
episode's writable tree, handled as hostile; :mod:`.reaper` removes what dead drivers left behind.

``make_sandbox`` is the one place that picks a backend by name: ``"local"`` (bubblewrap, the default)
or ``"docker"`` (the ``docker`` extra). Backends are imported lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from frog_gym.errors import UnknownNameError
from frog_gym.sandbox.base import AsyncSandbox, ExecResult, Limits, Sandbox

if TYPE_CHECKING:
    from frog_gym.catalog.snapshot import PreparedRepo

BACKENDS = ("local", "docker")

__all__ = ["BACKENDS", "AsyncSandbox", "ExecResult", "Limits", "Sandbox", "make_sandbox"]


def make_sandbox(backend: str, repo: PreparedRepo | None, workspace: Path, limits: Limits | None = None,
                 binds: tuple[tuple[Path, str, bool], ...] = ()) -> Sandbox:
    """A sandbox of the named backend over ``workspace`` (mounted at /testbed) for ``repo``'s venv."""
    env = repo.spec.install.env if repo is not None else None
    venv = repo.venv if repo is not None else None
    if backend == "local":
        import shutil

        from frog_gym.sandbox.local import LocalSandbox, bwrap_path, check_unsandboxed_opt_in

        if shutil.which("bwrap") is None and check_unsandboxed_opt_in():
            paths = ":".join(str(workspace / p) for p in (repo.spec.install.import_paths if repo else ()))
            return LocalSandbox(workspace, venv, limits, env={**(env or {}), "PYTHONPATH": paths}, isolated=False)
        bwrap_path()  # a clear error naming how to install bubblewrap, or how to opt out
        return LocalSandbox(workspace, venv, limits, env=env, binds=binds)
    if backend == "docker":
        from frog_gym.sandbox.docker import DockerSandbox  # type: ignore[import-not-found]

        return DockerSandbox(workspace, repo, limits, binds=binds)
    raise UnknownNameError("sandbox backend", backend, BACKENDS)
