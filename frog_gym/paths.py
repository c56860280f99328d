"""Where frog-gym keeps its caches: ``$FROG_GYM_HOME``, by default ``~/.cache/frog-gym``."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The cache root (created on first use).

    Layout: ``sdists/`` (verified source archives by sha256), ``snapshots/`` (unpacked trees, content
    addressed), ``venvs/`` (one per repository and lock), ``templates/`` (per task: the buggy tree as a
    one-commit git repository), ``work/`` (episode workspaces), ``grades/`` (cached grades), ``locks/``.
    """
    root = Path(os.environ.get("FROG_GYM_HOME") or Path.home() / ".cache" / "frog-gym")
    root.mkdir(parents=True, exist_ok=True)
    return root


def offline() -> bool:
    """True when ``FROG_GYM_OFFLINE=1``: every download attempt then fails, naming what is missing."""
    return os.environ.get("FROG_GYM_OFFLINE", "") not in ("", "0", "false", "no")
