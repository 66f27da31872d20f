"""The paired speedup's interval: what the runner records and what the analysis recomputes
from a run's kept timing windows."""
from __future__ import annotations

import math
import random
import statistics


def median_ratio_ci(windows: list[float], eager_windows: list[float], resamples: int = 2000,
                    seed: int = 0) -> tuple[float, float] | None:
    """95% CI of paired_speedup (the ratio of the medians): a percentile bootstrap over the
    pairs, each resample drawing whole pairs (a variant window with its eager window), seeded
    so a record is reproducible; None for fewer than 2 pairs. It is the interval of the
    estimate that is reported, so it holds that estimate even where the host's state moved
    some pairs (a t interval on the pairs' log ratios, pair_ratio_ci, centres on their mean
    instead)."""
    pairs = [(v, e) for v, e in zip(windows, eager_windows) if v and e]
    if len(pairs) < 2:
        return None
    rng = random.Random(seed)
    n = len(pairs)
    ratios = []
    for _ in range(resamples):
        s = [pairs[rng.randrange(n)] for _ in range(n)]
        ratios.append(statistics.median(e for _, e in s) / statistics.median(v for v, _ in s))
    ratios.sort()
    return ratios[int(0.025 * (resamples - 1))], ratios[int(math.ceil(0.975 * (resamples - 1)))]


# two-sided 95% Student t quantiles by degrees of freedom (the next lower one is used)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t95(df: float) -> float:
    """The two-sided 95% Student t quantile at df degrees of freedom, from the table at the
    next lower tabled df (wider than the exact quantile, never narrower); inf below 1."""
    return _T95[max(k for k in _T95 if k <= df)] if df >= 1 else math.inf
