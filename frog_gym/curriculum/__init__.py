"""The curriculum: which task comes next, from what the current policy has been seen to solve.

May import: frog_gym.errors, frog_gym.catalog, frog_gym.generators.

A task teaches the most when the policy sometimes solves it: a GRPO group whose rewards are all equal has
zero advantage and no gradient. :class:`CurriculumState` keeps, per task, a Beta posterior over the
current policy's success probability ``p``, built from success and failure counts that decay with policy
updates (old evidence describes an old policy). Its ``frontier`` sampler ranks tasks by the posterior
expectation of ``p(1-p)`` and mixes that rank-based draw with a staleness share and a uniform share, so
that no task is ever out of reach. Tasks it is confident about (mastered, hopeless) are retired softly:
they leave the rank share and keep a reduced weight in the other two.

:class:`FrontierCurriculum` is the thin ``gymnasium.Wrapper`` over a (possibly shared) state: ``reset()``
without a ``task_id`` takes the next scheduled task, ``step()`` reports the final reward back. Several
wrappers, e.g. the sub-envs of a ``gymnasium.vector.SyncVectorEnv``, may share one state.

Modes ``uniform``, ``dapo`` and ``sfl`` are the baselines the benchmark ``benchmarks/curriculum_sim.py``
compares against. A :class:`TaskSynthesizer` can top the pool up when the frontier runs dry.

Modules: :mod:`.config` (:class:`CurriculumConfig`), :mod:`.stats` (priors, learnability, bounds,
:func:`episode_score`), :mod:`.state` (:class:`CurriculumState`: pool, posteriors, schedule, sampler),
:mod:`.synthesis` (:class:`TaskSynthesizer`, :class:`PendingTask`) and :mod:`.wrapper`
(:class:`FrontierCurriculum`).

Example:
    >>> cur = CurriculumState(["t0", "t1", "t2", "t3"], CurriculumConfig(seed=0))
    >>> batch = cur.next_tasks(2, group_size=3, commit=False)
    >>> len(batch), batch[0] == batch[1] == batch[2]
    (6, True)
    >>> cur.update(batch[0], [1.0, 0.0, 1.0], policy_step=1)  # True: the group has a learning signal
    True
    >>> cur.stats()["coverage"]
    0.25
"""

from __future__ import annotations

from frog_gym.curriculum.config import MODES, STATEMENT_LEVELS, CurriculumConfig
from frog_gym.curriculum.state import CurriculumState
from frog_gym.curriculum.stats import (
    PRIOR_FEATURES, Reference, episode_score, filter_group, learnability, prior_beta, prior_mean,
    registry_priors, wilson_bounds,
)
from frog_gym.curriculum.synthesis import PendingTask, TaskSynthesizer
from frog_gym.curriculum.wrapper import FrontierCurriculum

__all__ = [
    "MODES", "PRIOR_FEATURES", "STATEMENT_LEVELS", "CurriculumConfig", "CurriculumState",
    "FrontierCurriculum", "PendingTask", "Reference", "TaskSynthesizer", "episode_score", "filter_group",
    "learnability", "prior_beta", "prior_mean", "registry_priors", "wilson_bounds",
]
