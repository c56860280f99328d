"""Where frog-gym keeps its caches: ``$FROG_GYM_HOME``, by default ``~/.cache/frog-gym``."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The cache root (created on first use).

    Layout: ``sdists/`` (verified source archives by sha256), ``snapshots/`` (unpacked trees, content
    addressed), ``venvs/`` (one per repository and lock), ``templates/`` (per task: the buggy tree as a
    one-commit git repository), ``work/`` (episode workspaces), ``grades/`` (cached grades), ``analyses/`` (the static
    check's analyses of files no agent wrote), ``locks/``.
    """
    root = Path(os.environ.get("FROG_GYM_HOME") or Path.home() / ".cache" / "frog-gym")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        from frog_gym.errors import FrogGymError

        where = "$FROG_GYM_HOME" if os.environ.get("FROG_GYM_HOME") else "the default cache folder"
        raise FrogGymError(f"Cannot create {where} {root}: {e.strerror}. Set FROG_GYM_HOME to a folder you can "
                           "write (default ~/.cache/frog-gym).") from None
    return root


def check_writable(path: str | Path, option: str) -> None:
    """Raise a :class:`~frog_gym.errors.UsageError` naming ``option`` unless ``path`` could be created or written,
    before anything is made: the nearest existing folder on its way must be a writable folder.

    >>> check_writable("/proc/nope/out.jsonl", "OUT")
    Traceback (most recent call last):
    ...
    frog_gym.errors.UsageError: OUT: cannot write /proc/nope/out.jsonl: /proc is not writable. Give a path in a folder you can write.
    """
    from frog_gym.errors import UsageError

    target = Path(path).absolute()
    probe = target
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    fix = "Give a path in a folder you can write."
    if probe == target and target.exists() and target.is_dir():
        probe_dir = target
    elif probe == target:
        probe_dir = target.parent
    elif probe.is_dir():
        probe_dir = probe
    else:
        raise UsageError(f"{option}: cannot write {path}: {probe} is a file, not a folder. {fix}")
    if not os.access(probe_dir, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: cannot write {path}: {probe_dir} is not writable. {fix}")


def offline() -> bool:
    """True when ``FROG_GYM_OFFLINE=1``: every download attempt then fails, naming what is missing."""
    return os.environ.get("FROG_GYM_OFFLINE", "") not in ("", "0", "false", "no")
