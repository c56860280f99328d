"""The Gymnasium env and what an agent meets in an episode: tools, their spec, spaces, the prompt.

May import: frog_gym, frog_gym.errors, frog_gym.paths, frog_gym.catalog, frog_gym.sandbox, frog_gym.grading.

:class:`FrogSWEEnv` lives in :mod:`.core` (the env, its reset/step/close); :mod:`.tools` parses and runs an
action, :mod:`.toolspec` describes the tools to a model, :mod:`.spaces` holds the text spaces and
:mod:`.prompt` the task prompt; :mod:`.swebench_docker` runs SWE-bench's own instances in their images.
``frog_gym.env.FrogSWEEnv`` (the gym entry point ``frog_gym.env:FrogSWEEnv``) is loaded on first use, so that
importing a light module here (``toolspec``) does not import grading.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FrogSWEEnv"]


def __getattr__(name: str) -> Any:
    if name == "FrogSWEEnv":
        from frog_gym.env.core import FrogSWEEnv

        return FrogSWEEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
