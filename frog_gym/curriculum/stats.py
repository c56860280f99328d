"""Per-task statistics: the prior from difficulty features and reference agents, the learnability score,
Wilson bounds, and what an episode scores (:func:`episode_score`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, SupportsFloat

import numpy as np

from frog_gym.curriculum.config import STATEMENT_LEVELS, CurriculumConfig


Reference = float | tuple[float, float]
"""A reference agent's record on one task: ``(solved, runs)``, or a pass rate that counts as one run."""

PRIOR_FEATURES = ("n_sites", "statement_level")
"""The difficulty features the prior and :meth:`CurriculumState.synthesis_target` read."""


def prior_mean(
    features: Mapping[str, Any] | None = None,
    reference_pass_rate: Reference | None = None,
    config: CurriculumConfig | None = None,
) -> float:
    """The prior success probability of a task nobody has tried under the current policy.

    Without reference runs, a deliberately simple heuristic on difficulty features: ``logit = 1 - 0.8 *
    (n_sites - 1) - s`` with ``s`` = 0, 0.5 or 1 for a ``full``, ``medium`` or ``vague`` statement (0.5 for
    other levels); other features are ignored; without features, 0.5. With them, the mean of
    :func:`prior_beta`, the feature prior updated by the reference runs. The prior only orders untried
    tasks: a group's evidence soon outweighs it (see ``CurriculumConfig.prior_strength``).

    Example:
        >>> round(prior_mean({"n_sites": 1, "statement_level": "full"}), 3)
        0.731
        >>> round(prior_mean({"n_sites": 3, "statement_level": "vague"}), 3)
        0.168
        >>> prior_mean(reference_pass_rate=1.0), prior_mean(reference_pass_rate=(0, 2)), prior_mean()
        (0.6, 0.3333333333333333, 0.5)
    """
    if reference_pass_rate is not None:
        alpha, beta = prior_beta(features, reference_pass_rate, config)
        return alpha / (alpha + beta)
    if not features:
        return 0.5
    level = features.get("statement_level")
    vagueness = STATEMENT_LEVELS.index(level) / 2 if level in STATEMENT_LEVELS else 0.5
    logit = 1.0 - 0.8 * (int(features.get("n_sites", 1)) - 1) - vagueness
    return 1.0 / (1.0 + math.exp(-logit))


def prior_beta(
    features: Mapping[str, Any] | None = None,
    reference: Reference | None = None,
    config: CurriculumConfig | None = None,
) -> tuple[float, float]:
    """``(alpha, beta)`` of a task's prior: the feature prior, then a reference agent's runs as evidence.

    The feature prior is ``Beta(m s, (1 - m) s)`` with ``m`` = :func:`prior_mean` of the features and ``s``
    = ``config.prior_strength`` pseudo-attempts. Each reference run then counts as ``w`` =
    ``config.reference_weight`` policy attempts: ``solved`` of ``runs`` add ``w * solved`` to ``alpha`` and
    ``w * (runs - solved)`` to ``beta``. A float reference is a pass rate worth one run.

    Args:
        features: Difficulty features (``n_sites``, ``statement_level``).
        reference: ``(solved, runs)`` of a reference agent, or a pass rate in [0, 1].
        config: Supplies ``prior_strength`` and ``reference_weight`` (default: ``CurriculumConfig()``).

    Example:
        >>> easy, hard = {"n_sites": 1, "statement_level": "full"}, {"n_sites": 2, "statement_level": "vague"}
        >>> [round(prior_mean(easy, r), 3) for r in (None, (1, 1), (0, 1))]  # solved > untried > failed
        [0.731, 0.785, 0.585]
        >>> round(prior_mean(hard, (0, 1)), 3)  # failed too, and still below the easy task it failed
        0.248
        >>> prior_beta(reference=(3, 4), config=CurriculumConfig(reference_weight=1.0))
        (4.0, 2.0)
    """
    cfg = config or CurriculumConfig()
    mean = prior_mean(features)
    alpha, beta = cfg.prior_strength * mean, cfg.prior_strength * (1 - mean)
    if reference is None:
        return alpha, beta
    if isinstance(reference, (int, float, np.floating, np.integer)):
        if not 0 <= reference <= 1:
            raise ValueError(
                f"A reference pass rate must be in [0, 1], got {reference!r}; pass (solved, runs) for counts."
            )
        solved, runs = float(reference), 1.0
    else:
        solved, runs = (float(x) for x in reference)
        if not 0 <= solved <= runs:
            raise ValueError(
                f"A reference record (solved, runs) needs 0 <= solved <= runs, got {tuple(reference)!r}."
            )
    w = cfg.reference_weight
    return alpha + w * solved, beta + w * (runs - solved)


def registry_priors(
    task_ids: Sequence[str], prior_agent: str | None = "apr"
) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[int, int]]]:
    """The difficulty features and ``prior_agent``'s ``(solved, runs)`` of the tasks that have them.

    Tasks are looked up in the registry (and ``FROG_GYM_TASK_DIRS``); ids found in neither get nothing
    (their prior is the untried default). ``prior_agent`` None, ``""`` or ``"none"``: no solve rates.

    Returns:
        ``(features, references)``: ``task_id -> {n_sites, statement_level}`` and ``task_id -> (solved,
        runs)``, ready for :class:`CurriculumState`'s ``features=`` and ``reference_pass_rates=``.
    """
    from frog_gym.generators.difficulty import reference_pass_rates
    from frog_gym.catalog.task import load_task, task_index

    index = task_index()
    known = [t for t in task_ids if t in index]
    features = {}
    for t in known:
        task = load_task(t)
        found = {"statement_level": task.statement_level, **task.features}
        features[t] = {k: found[k] for k in PRIOR_FEATURES if k in found}
    agent = None if prior_agent in (None, "", "none") else prior_agent
    return features, (reference_pass_rates(known, agent) if agent else {})


def learnability(alpha: np.ndarray | float, beta: np.ndarray | float) -> np.ndarray | float:
    """Posterior expectation of ``p(1-p)`` under ``Beta(alpha, beta)``: ``αβ / ((α+β)(α+β+1))``.

    Example:
        >>> learnability(1.0, 1.0)  # uniform prior: E[p] - E[p^2] = 1/2 - 1/3
        0.16666666666666666
    """
    total = alpha + beta
    return alpha * beta / (total * (total + 1.0))


def wilson_bounds(successes: np.ndarray, attempts: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper Wilson score bounds of a success rate; (0, 1) where there are no attempts.

    Example:
        >>> lo, hi = wilson_bounds(np.array([16.0]), np.array([16.0]), z=1.0)
        >>> round(float(lo[0]), 4), float(hi[0])
        (0.9412, 1.0)
    """
    n = np.maximum(attempts, 1e-12)
    p = np.clip(successes / n, 0.0, 1.0)
    centre = p + z * z / (2 * n)
    spread = z * np.sqrt(np.maximum(p * (1 - p) / n + z * z / (4 * n * n), 0.0))
    scale = 1 + z * z / n
    lo = np.where(attempts > 0, (centre - spread) / scale, 0.0)
    hi = np.where(attempts > 0, (centre + spread) / scale, 1.0)
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def filter_group(rewards: Sequence[SupportsFloat | None]) -> bool:
    """DAPO's dynamic-sampling filter: True to keep a group, False when its rewards are all equal.

    ``None`` marks an episode lost to an infrastructure failure and is ignored; a group with fewer than
    two scored episodes carries no advantage and is dropped.

    Example:
        >>> filter_group([1, 0, 1]), filter_group([1, 1, None]), filter_group([0.0])
        (True, False, False)
    """
    scored = [float(r) for r in rewards if r is not None]
    return len(scored) >= 2 and max(scored) > min(scored)


def episode_score(
    reward: SupportsFloat, *, terminated: bool, truncated: bool, infra_failure: str | None = None,
    mask_truncated: bool = False,
) -> float | None:
    """The one rule for what an ended episode scores, shared by training, evaluation and the curriculum.

    ``terminated``: the agent submitted. ``truncated``: a budget cut it (steps, wall time, or the context
    window; a runner that cuts an episode at the context window submits its state for grading, so that
    ``reward`` is always the graded state). A cut episode scores its graded state, or ``None`` (masked:
    neither success nor failure) with ``mask_truncated``. An infrastructure failure, or an episode that
    never ended, is always ``None``.

    Example:
        >>> episode_score(1.0, terminated=False, truncated=True)
        1.0
        >>> episode_score(1.0, terminated=False, truncated=True, mask_truncated=True) is None
        True
        >>> episode_score(0.0, terminated=False, truncated=True, infra_failure="sandbox died") is None
        True
    """
    if infra_failure is not None or not (terminated or truncated) or (truncated and mask_truncated):
        return None
    return float(reward)
