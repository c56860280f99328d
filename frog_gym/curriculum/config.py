"""How a curriculum samples, decays, retires and synthesizes: :class:`CurriculumConfig` and its modes."""

from __future__ import annotations

from dataclasses import dataclass

from frog_gym.errors import did_you_mean

MODES = ("frontier", "uniform", "dapo", "sfl")
STATEMENT_LEVELS = ("full", "medium", "vague")
"""Problem-statement levels, most to least informative, as the prior heuristic and synthesis read them."""

_STATE_FORMAT = 1


@dataclass(frozen=True)
class CurriculumConfig:
    """How a :class:`CurriculumState` samples, decays, retires and synthesizes.

    Example:
        >>> CurriculumConfig(mode="uniform").mode
        'uniform'
        >>> CurriculumConfig(mode="fronteir")
        Traceback (most recent call last):
        ...
        ValueError: Unknown curriculum mode 'fronteir'. Did you mean 'frontier'? Set mode to one of: frontier, uniform, dapo, sfl.
    """

    mode: str = "frontier"
    """``"frontier"`` (rank by learnability, mixed with staleness and uniform shares), ``"uniform"``,
    ``"dapo"`` (uniform sampling; :meth:`CurriculumState.filter_group` flags groups whose rewards are all
    equal as dropped) or ``"sfl"`` (uniform over a buffer of the K attempted tasks with the highest observed
    ``p̂(1-p̂)``, re-ranked every ``sfl_refresh_updates``, mixed with ``uniform_share`` uniform draws that
    discover tasks, as SFL mixes its buffer with fresh levels)."""

    half_life_updates: float = 16.0
    """Policy updates after which a success or failure counts half as much."""

    rank_temperature: float = 0.1
    """``T`` in P(rank r) ∝ ``r**(-1/T)`` for the frontier share; smaller is greedier."""

    staleness_share: float = 0.1
    """Share of draws made in proportion to policy updates since a task was last seen."""

    uniform_share: float = 0.2
    """Share of draws made uniformly over the pool (``frontier``: retired tasks at ``retired_weight``;
    ``sfl``: the rest comes from its buffer)."""

    mastered_lower_bound: float = 0.9
    """A task is mastered when the Wilson lower bound of its success rate exceeds this."""

    hopeless_upper_bound: float = 0.05
    """A task is hopeless when the Wilson upper bound of its success rate is below this."""

    retire_min_attempts: float = 16.0
    """Decayed attempts a task needs before it can be retired; retirement lapses as its counts decay."""

    wilson_z: float = 1.0
    """z of the Wilson score interval used for retirement (1.0: about 84% one-sided confidence)."""

    retired_weight: float = 0.1
    """Weight of a retired task relative to an active one in the staleness and uniform shares."""

    prior_strength: float = 2.0
    """Pseudo-attempts ``alpha + beta`` of the feature part of the prior (see :func:`prior_beta`)."""

    reference_weight: float = 0.5
    """How many of the policy's own attempts one run of a reference agent is worth in the prior (see
    :func:`prior_beta`): 0 ignores reference runs, 1 counts them as the policy's. The reference agent
    (``apr``, model-free) is not the policy being trained, so its runs count less: a task it solved starts
    higher than the same task it failed, and two tasks it failed keep the order their features give."""

    sfl_buffer_size: int = 64
    """K, the size of the ``sfl`` mode's buffer of most learnable tasks."""

    sfl_refresh_updates: int = 8
    """Policy updates between two re-rankings of the ``sfl`` buffer."""

    frontier_band: tuple[float, float] = (0.1, 0.9)
    """Posterior means strictly inside this band make an attempted task part of the frontier."""

    synthesis_threshold: int = 16
    """With a synthesizer, ask for new tasks when the frontier holds fewer tasks than this."""

    synthesis_batch: int = 8
    """Tasks asked of the synthesizer at a time (no new request while a batch is outstanding)."""

    synthesis_workers: int = 2
    """Threads that validate proposed tasks in the background."""

    seed: int = 0
    """Seed of the curriculum's own random generator (its state is saved by ``state_dict``)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(
                f"Unknown curriculum mode {self.mode!r}.{did_you_mean(self.mode, MODES)} "
                f"Set mode to one of: {', '.join(MODES)}."
            )
        object.__setattr__(self, "frontier_band", tuple(float(x) for x in self.frontier_band))
        for name in ("half_life_updates", "rank_temperature", "prior_strength", "wilson_z"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}.")
        if not self.reference_weight >= 0:
            raise ValueError(
                f"reference_weight must be >= 0 (policy attempts one reference run is worth), got "
                f"{self.reference_weight!r}; 0 ignores reference runs."
            )
        for name in ("staleness_share", "uniform_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} is a share of draws in [0, 1], got {getattr(self, name)!r}.")
        if self.staleness_share + self.uniform_share > 1:
            raise ValueError(
                f"staleness_share + uniform_share must be at most 1 (the rest is the frontier share), got "
                f"{self.staleness_share} + {self.uniform_share}; lower one of them."
            )
        if not 0 < self.retired_weight <= 1:
            raise ValueError(
                f"retired_weight must be in (0, 1], got {self.retired_weight!r}; retired tasks stay "
                "reachable, so use a small positive weight such as 0.1 rather than 0."
            )
        if not 0 < self.hopeless_upper_bound < self.mastered_lower_bound < 1:
            raise ValueError(
                "Need 0 < hopeless_upper_bound < mastered_lower_bound < 1, got "
                f"{self.hopeless_upper_bound} and {self.mastered_lower_bound}."
            )
        if self.retire_min_attempts < 0:
            raise ValueError(f"retire_min_attempts must be >= 0, got {self.retire_min_attempts!r}.")
        lo, hi = self.frontier_band
        if len(self.frontier_band) != 2 or not 0 <= lo < hi <= 1:
            raise ValueError(f"frontier_band must be (low, high) with 0 <= low < high <= 1, got {lo, hi}.")
        for name in ("sfl_buffer_size", "sfl_refresh_updates", "synthesis_batch", "synthesis_workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)!r}.")
        if self.synthesis_threshold < 0:
            raise ValueError(
                f"synthesis_threshold must be >= 0, got {self.synthesis_threshold!r}; 0 never synthesizes."
            )
