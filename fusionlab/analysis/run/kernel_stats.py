"""The statistics of a range's kernel durations, one record each: name, unit, definition,
how it is computed from the range's durations (an exact histogram, hist.Hist: sorted
distinct ns values and their counts, with its order statistics median and percentile) and its oracle (the same statistic by numpy over the
plain durations, which tests/test_metric_records.py selects by SQL from a real export).
The streamed pass, the pandas oracle, tables.METRICS, the table in docs/metrics.md and the
oracle test all read STATS: a new statistic is one record here (and the docs table
regenerated: `python -m fusionlab.analysis.run.kernel_stats`).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from fusionlab.analysis.run.hist import median, percentile


@dataclass(frozen=True)
class KernelStat:
    """One statistic of a range's kernel durations: `of(hist)` from the histogram of its
    durations in ns, `oracle(durations)` the same from a plain numpy array, both in `unit`."""
    name: str
    unit: str
    definition: str
    of: Callable
    oracle: Callable


STATS = (
    KernelStat("median_kernel_us", "us", "median kernel duration",
               lambda h: median(h) / 1e3, lambda d: float(np.median(d)) / 1e3),
    KernelStat("p10_kernel_us", "us", "10th percentile of the kernel durations (numpy's linear method)",
               lambda h: percentile(h, 10) / 1e3, lambda d: float(np.percentile(d, 10)) / 1e3),
    KernelStat("p90_kernel_us", "us", "90th percentile of the kernel durations (numpy's linear method)",
               lambda h: percentile(h, 90) / 1e3, lambda d: float(np.percentile(d, 90)) / 1e3),
)
NAMES = tuple(s.name for s in STATS)


def values(hist) -> dict:
    """Each statistic of a range whose kernel durations are `hist` (None without kernels)."""
    return {s.name: (s.of(hist) if hist.n else None) for s in STATS}


def docs_table() -> str:
    """The table docs/metrics.md holds between its kernel-stats markers."""
    rows = ["| metric | unit | definition |", "|---|---|---|"]
    rows += [f"| `{s.name}` | {s.unit} | {s.definition} |" for s in STATS]
    return "\n".join(rows)


if __name__ == "__main__":   # the docs table, to paste between docs/metrics.md's markers
    sys.stdout.write(docs_table() + "\n")
