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
