"""Intervals that say what they are: a Student t-interval over processes (on logs for a
ratio or a time), the interval of a ratio of two independent samples (Welch, on logs),
or the plain range of the values where only that is honest. Each carries its label
("95% t-interval over 5 processes", "range of 3 processes"), printed beside it.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float
    label: str          # what the interval is, in words

    def text(self) -> str:
        return f"[{self.lo:.3g}, {self.hi:.3g}] ({self.label})"


def _finite(values) -> list[float]:
    out = []
    for v in values or []:
        try:
            v = float(v)
        except (TypeError, ValueError):
            continue
        if not math.isnan(v):
            out.append(v)
    return out


def t_quantile(level: float, df: float) -> float:
    from scipy.stats import t
    return float(t.ppf(1 - (1 - level) / 2, df))


def t_interval(values, level: float = LEVEL, log: bool = True) -> Interval | None:
    """The t-interval of the mean over processes, on logs where `log` (the geometric mean
    of ratios or times, back-transformed); None for fewer than two values."""
    x = _finite(values)
    if log:
        if any(v <= 0 for v in x):
            return None
        x = [math.log(v) for v in x]
    n = len(x)
    if n < 2:
        return None
    m, s = statistics.fmean(x), statistics.stdev(x)
    h = t_quantile(level, n - 1) * s / math.sqrt(n)
    lo, hi = (math.exp(m - h), math.exp(m + h)) if log else (m - h, m + h)
    return Interval(lo, hi, f"{level:.0%} t-interval over {n} processes")


def ratio_interval(num, den, level: float = LEVEL) -> Interval | None:
    """The interval of mean(log num) - mean(log den) (Welch), back-transformed: a ratio of
    two quantities measured in separate processes; None without two of each."""
    a, b = [[math.log(v) for v in _finite(x) if v > 0] for x in (num, den)]
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    d = statistics.fmean(a) - statistics.fmean(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if va + vb > 0 else len(a) + len(b) - 2
    h = t_quantile(level, df) * se
    return Interval(math.exp(d - h), math.exp(d + h),
                    f"{level:.0%} Welch t-interval over {len(a)} + {len(b)} processes")


def range_of(values) -> Interval | None:
    """The smallest and largest value, labelled as such; None for fewer than two."""
    x = _finite(values)
    return Interval(min(x), max(x), f"range of {len(x)}") if len(x) >= 2 else None


def geomean(values) -> float | None:
    x = [v for v in _finite(values) if v > 0]
    return math.exp(statistics.fmean(math.log(v) for v in x)) if x else None


def spread(values) -> float | None:
    """The between-process spread of one quantity: its standard deviation over its mean
    (None for fewer than two values)."""
    x = _finite(values)
    return statistics.stdev(x) / statistics.fmean(x) if len(x) >= 2 and statistics.fmean(x) > 0 else None
