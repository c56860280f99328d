"""The curriculum: which task comes next, from what the current policy has been seen to solve.

May import: frog_gym.errors, frog_gym.catalog, frog_gym.generators.
"""

from __future__ import annotations

from frog_gym.curriculum.state import *  # noqa: F403  (replaced by the split into modules next)
from frog_gym.curriculum.state import _STATE_FORMAT  # noqa: F401
