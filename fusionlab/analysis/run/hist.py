"""Exact histograms of integer durations (Hist: sorted distinct values and their counts)
and their order statistics: median() and percentile() give what np.median and
np.percentile (linear) give over every value, from the histogram alone. The streamed pass
(analysis.run.stream) keeps one per range and attribution for kernel, launch-call and
queue durations; kernel_stats' records read them."""
from __future__ import annotations

import math

import numpy as np


class Hist:
    """Exact histogram of integers: sorted distinct values v and their counts c."""

    def __init__(self):
        self.v = np.empty(0, np.int64)
        self.c = np.empty(0, np.int64)

    def add(self, x: np.ndarray, counts: np.ndarray | None = None) -> None:
        if len(x) == 0:
            return
        if counts is None:
            x, counts = Hist.counted(x)
        v, c = np.concatenate([self.v, x]), np.concatenate([self.c, counts.astype(np.int64)])
        o = np.argsort(v, kind="stable")
        v, c = v[o], c[o]
        first = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
        self.v, self.c = v[first], np.add.reduceat(c, first)

    @staticmethod
    def counted(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distinct values of x (not empty), sorted, and their counts."""
        lo = int(x.min())
        span = int(x.max()) - lo + 1
        if span <= 4 * len(x):            # durations of similar kernels: count, not sort
            counts = np.bincount(x - lo, minlength=span)
            x = np.flatnonzero(counts) + lo
            return x, counts[x - lo]
        return np.unique(x, return_counts=True)

    @property
    def n(self) -> int:
        return int(self.c.sum())

    def at(self, ks) -> list[int]:
        """The k-th smallest values (0-based) of ks."""
        cum = np.cumsum(self.c)
        return [int(self.v[np.searchsorted(cum, k, side="right")]) for k in ks]

    def where(self, keep: np.ndarray) -> "Hist":
        h = Hist()
        h.v, h.c = self.v[keep], self.c[keep]
        return h

    def clip_low(self, lo: int) -> "Hist":
        """The histogram of max(x, lo)."""
        h = Hist()
        h.add(np.maximum(self.v, lo), self.c)
        return h



def median(h, scale: float | None = None) -> float | None:
    """np.median over the histogram's values (as float); with scale, the median pandas gives
    of the values / scale (the middle two scaled before they are averaged)."""
    n = h.n
    if n == 0:
        return None
    if n % 2:
        (x,) = h.at([n // 2])
        return x / scale if scale else float(x)
    a, b = h.at([n // 2 - 1, n // 2])
    return (a / scale + b / scale) / 2 if scale else (float(a) + float(b)) / 2


def percentile(h, q: float) -> float | None:
    """np.percentile(values, q) (method linear: index (n - 1) q / 100, numpy's _lerp)."""
    n = h.n
    if n == 0:
        return None
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:
        return float(h.at([n - 1])[0])
    prev = math.floor(virtual)
    t = virtual - prev
    a, b = h.at([prev, prev + 1])
    d = b - a
    return float(b) - d * (1 - t) if t >= 0.5 else float(a) + d * t
