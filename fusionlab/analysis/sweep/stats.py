"""Statistics over repeats (separate processes) and along the swept sizes.

- Medians with 95% percentile-bootstrap confidence intervals (resampling the repeats;
  fixed seed, so tables regenerate identically). One repeat gives no interval.
- Speedup = median(eager) / median(variant) as the Inductor harness defines it; its CI
  resamples the eager and the variant repeats independently. Slowdowns stay < 1.
- Noise: the coefficient of variation (sample std / mean) of a configuration's repeats;
  above the sweep's noise_cv threshold the configuration is flagged `noisy`. It is still
  reported by its median, never averaged away or dropped.
- Crossover: along any swept axis (batch, dim, num_layers, ...), the value at which a
  variant starts to beat eager and the one where it stops, each interpolated linearly in
  log2(value) between the two swept values where its speedup crosses 1.
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


def _cross(p0, p1) -> float:
    """The value where the speedup crosses 1 between two swept points, linear in log2."""
    (b0, s0), (b1, s1) = p0, p1
    t = (1 - s0) / (s1 - s0)
    return float(2 ** (math.log2(b0) + t * (math.log2(b1) - math.log2(b0))))


def _num(x) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def ties(values, lo, hi) -> list[float]:
    """The swept values where the speedup's CI [lo, hi] includes 1: there the variant is
    not distinguishable from eager, whatever side of 1 the median falls."""
    return sorted(float(v) for v, a, b in zip(values, lo, hi) if a == a and b == b and a <= 1 <= b)


def crossover(values, speedups, axis: str = "batch", lo=None, hi=None) -> tuple[float, float, str]:
    """(start, stop, note) along one axis: where the variant starts to beat eager (the
    median speedup crosses 1 from below; the smallest swept value if it beats eager there)
    and where it stops (crosses back below 1; nan if it still beats eager at the largest
    value). With several such intervals, the last one; the note lists them all, and, given
    the speedups' CIs (lo, hi), the values where the CI includes 1 (ties)."""
    note = _crossover(values, speedups, axis)
    tied = ties(values, lo, hi) if lo is not None and hi is not None else []
    if tied:
        note = note[:2] + (note[2] + f"; not distinguishable from eager (95% CI includes 1) at {axis} "
                           + ", ".join(_num(v) for v in tied),)
    return note


def _points(values, speedups):
    return sorted((float(b), float(s)) for b, s in zip(values, speedups) if s is not None and s == s)


def _intervals(pts, axis):
    """The intervals where the median speedup is >= 1: [((start, where), (stop, where) or
    None)], `where` '' for a start at the smallest value."""
    intervals, start = [], None
    for i, (b, s) in enumerate(pts):
        if s >= 1 and start is None:
            start = (b, "") if i == 0 else (_cross(pts[i - 1], pts[i]), f"between {axis} {_num(pts[i - 1][0])} and {_num(b)}")
        if s < 1 and start is not None:
            intervals.append((start, (_cross(pts[i - 1], pts[i]), f"between {axis} {_num(pts[i - 1][0])} and {_num(b)}")))
            start = None
    if start is not None:
        intervals.append((start, None))
    return intervals


def spans(values, speedups) -> str:
    """Every interval where the variant beats eager, short: '128-362, 1563+' ('+': still
    at the largest value; '' when it never does)."""
    return ", ".join(f"{b0:.0f}" + (f"-{stop[0]:.0f}" if stop else "+")
                     for (b0, _), stop in _intervals(_points(values, speedups), ""))


def _crossover(values, speedups, axis):
    pts = _points(values, speedups)
    if not pts:
        return float("nan"), float("nan"), "no successful runs"
    intervals = _intervals(pts, axis)
    if not intervals:
        return float("nan"), float("nan"), f"does not beat eager at any swept {axis} ({_num(pts[0][0])} to {_num(pts[-1][0])})"
    if len(intervals) == 1 and intervals[0][0][1] == "" and intervals[0][1] is None:
        return pts[0][0], float("nan"), f"beats eager at every swept {axis} (from {_num(pts[0][0])})"
    parts = []
    for (b0, w0), stop in intervals:
        part = f"beats eager from {axis} {_num(pts[0][0])}" if w0 == "" else f"starts to beat eager {w0}"
        part += f", stops {stop[1]}" if stop else f" and still beats it at {axis} {_num(pts[-1][0])}"
        parts.append(part)
    (b0, _), stop = intervals[-1]
    return b0, (stop[0] if stop else float("nan")), "; ".join(parts)
