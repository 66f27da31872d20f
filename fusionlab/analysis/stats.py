"""Statistics over repeats (separate processes) and across batch sizes.

- Medians with 95% percentile-bootstrap confidence intervals (resampling the repeats;
  fixed seed, so tables regenerate identically). One repeat gives no interval.
- Speedup = median(eager) / median(variant) as the Inductor harness defines it; its CI
  resamples the eager and the variant repeats independently. Slowdowns stay < 1.
- Noise: the coefficient of variation (sample std / mean) of a configuration's repeats;
  above the sweep's noise_cv threshold the configuration is flagged `noisy`. It is still
  reported by its median, never averaged away or dropped.
- Crossover: the batch size at which a variant starts to beat eager, interpolated
  linearly in log2(batch) between the two swept batch sizes where its speedup crosses 1.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

N_BOOT = 2000
SEED = 0


def cv(x) -> float:
    x = np.asarray(pd.Series(x).dropna(), dtype=float)
    if len(x) < 2 or x.mean() == 0:
        return float("nan")
    return float(x.std(ddof=1) / x.mean())


def _boot_medians(x: np.ndarray, rng, n: int) -> np.ndarray:
    idx = rng.integers(0, len(x), size=(n, len(x)))
    return np.median(x[idx], axis=1)


def median_ci(x, n: int = N_BOOT, seed: int = SEED, level: float = 0.95) -> tuple[float, float]:
    x = np.asarray(pd.Series(x).dropna(), dtype=float)
    if len(x) < 2:
        return (float("nan"), float("nan"))
    b = _boot_medians(x, np.random.default_rng(seed), n)
    a = (1 - level) / 2
    return float(np.quantile(b, a)), float(np.quantile(b, 1 - a))


def ratio_ci(num, den, n: int = N_BOOT, seed: int = SEED, level: float = 0.95) -> tuple[float, float]:
    """CI of median(num) / median(den), resampling both independently."""
    num = np.asarray(pd.Series(num).dropna(), dtype=float)
    den = np.asarray(pd.Series(den).dropna(), dtype=float)
    if len(num) < 2 and len(den) < 2 or not len(num) or not len(den):
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    r = _boot_medians(num, rng, n) / _boot_medians(den, rng, n)
    a = (1 - level) / 2
    return float(np.quantile(r, a)), float(np.quantile(r, 1 - a))


def crossover(batches, speedups) -> tuple[float, str]:
    """(batch, note): where the speedup curve last crosses 1 from below."""
    pts = sorted((b, s) for b, s in zip(batches, speedups) if s == s and s is not None)
    if not pts:
        return float("nan"), "no successful runs"
    if all(s >= 1 for _, s in pts):
        return float(pts[0][0]), f"beats eager at every swept batch (from {pts[0][0]})"
    if pts[-1][1] < 1:
        return float("nan"), f"does not beat eager up to batch {pts[-1][0]}"
    i = max(j for j in range(len(pts) - 1) if pts[j][1] < 1 <= pts[j + 1][1])
    (b0, s0), (b1, s1) = pts[i], pts[i + 1]
    t = (1 - s0) / (s1 - s0)
    b = 2 ** (math.log2(b0) + t * (math.log2(b1) - math.log2(b0)))
    return float(b), f"starts to beat eager between batch {b0} and {b1}"
