"""Small pure statistics for the leaderboard: Wilson score intervals and the unbiased pass@k estimator.

Example:
    >>> lo, hi = wilson(5, 10)
    >>> round(lo, 4), round(hi, 4)
    (0.2366, 0.7634)
    >>> pass_at_k(n=5, c=2, k=2)
    0.7
"""

from __future__ import annotations

import math
from collections.abc import Iterable

Z95 = 1.959963984540054
"""The two-sided 95% quantile of the standard normal."""


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default).

    Unlike the normal approximation it stays inside [0, 1] and is sensible at 0 or n successes, which
    small suites hit often. With no trials the interval is the whole of [0, 1].

    >>> tuple(round(x, 4) for x in wilson(0, 10))
    (0.0, 0.2775)
    >>> wilson(0, 0)
    (0.0, 1.0)
    """
    if not 0 <= successes <= n:
        raise ValueError(f"wilson() needs 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends: rounding would leave 1e-17
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from ``n`` samples of which ``c`` passed (Chen et al., 2021):
    ``1 - C(n-c, k) / C(n, k)``, the chance that at least one of ``k`` samples drawn without replacement
    passes.

    >>> pass_at_k(10, 0, 5), pass_at_k(10, 10, 1), pass_at_k(4, 1, 1)
    (0.0, 1.0, 0.25)
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k() needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(per_task: Iterable[tuple[int, int]], k: int) -> float | None:
    """pass@k averaged over tasks, from ``(n, c)`` per task; tasks with fewer than ``k`` samples are left
    out; ``None`` when none has ``k``.

    >>> mean_pass_at_k([(2, 1), (2, 0), (1, 1)], 2)
    0.5
    """
    values = [pass_at_k(n, c, k) for n, c in per_task if n >= k]
    return sum(values) / len(values) if values else None
