"""Per-kernel tables of the streamed pass (analysis.run.stream): KernelTable gathers, a
chunk at a time, each kernel's calls, summed ns and exact duration histogram, and each
kernel and launch configuration's summed ns and launches, in memory bounded by the
number of distinct kernels and durations; frame() is metrics.kernel_table's frame,
ranked() its records. exact_us sums durations in us without rounding; descending is
pandas' descending sort order."""
from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from fusionlab.analysis.readers.trace import CONFIG_COLUMNS
from fusionlab.analysis.run import fields as F
from fusionlab.analysis.run.hist import Hist, median

if TYPE_CHECKING:
    import pandas as pd

KNOWN_IDS = 1 << 24    # KernelTable: full ids below this are marked seen in an array


def exact_us(ns: np.ndarray, counts: np.ndarray) -> Fraction:
    """The exact sum of each ns / 1e3 (as a float) times its count: each float is m 2^k with
    an integer m of 53 bits, so the sum is an integer times a power of two."""
    mant, exp = np.frexp(ns / 1e3)
    m = (mant * (1 << 53)).astype(np.int64)
    k = exp.astype(np.int64) - 53
    k0 = int(k.min(initial=0))
    total = sum(a * b << sh for a, b, sh in zip(m.tolist(), counts.tolist(), (k - k0).tolist()))
    return Fraction(total) * Fraction(2) ** k0


class KernelTable:
    """Per kernel (full name id): calls, summed ns, the first short name id and histogram;
    per kernel and launch configuration (trace.CONFIG_COLUMNS): summed ns and launches.
    With rows (a source held in memory, trace.Chunks), every row's full id and duration
    too: total_us is then pandas' groupby sum of the durations in kernel order, else the
    exact sum."""

    def __init__(self, rows: bool = False):

        self.order: dict[int, tuple[int, int]] = {}   # full id -> (first position, name id)
        self.seen = 0
        self.known = np.zeros(0, bool)                 # per full id below KNOWN_IDS: in order
        self.rows = [] if rows else None               # (full ids, durations) per chunk
        self.pairs = np.empty((0, 3), np.int64)        # full id, duration, count
        self.configs = np.empty((0, len(CONFIG_COLUMNS) + 3), np.int64)   # full id, config, ns, count

    def add(self, name: np.ndarray, full: np.ndarray, dur: np.ndarray, config: np.ndarray | None = None) -> None:
        if config is not None and config.shape[1] == len(CONFIG_COLUMNS):
            self.add_configs(full, dur, config)
        at = self._unseen(full)
        if len(at):
            u, first = np.unique(full[at], return_index=True)
            for f, i in zip(u.tolist(), at[first].tolist()):
                if f not in self.order:
                    self.order[f] = (self.seen + i, int(name[i]))
        self.seen += len(full)
        if self.rows is not None:
            self.rows.append((full, dur))
        if len(dur) and int(full.min()) >= 0 and int(full.max()) < 1 << 31 and int(dur.min()) >= 0 \
                and int(dur.max()) < 1 << 32:     # count the chunk's distinct pairs first
            k, n = np.unique((full << 32) | dur, return_counts=True)
            new = np.column_stack([k >> 32, k & 0xFFFFFFFF, n])
        else:
            new = np.stack([full, dur, np.ones_like(dur)], axis=1)
        p = np.concatenate([self.pairs, new])
        o = np.lexsort((p[:, 1], p[:, 0]))
        p = p[o]
        first = np.flatnonzero(np.r_[True, (p[1:, 0] != p[:-1, 0]) | (p[1:, 1] != p[:-1, 1])])
        self.pairs = np.column_stack([p[first, 0], p[first, 1], np.add.reduceat(p[:, 2], first)])

    def _unseen(self, full: np.ndarray) -> np.ndarray:
        """Positions of the rows whose full id may not be in order yet (every row where the
        ids are not small non-negative numbers)."""
        if not len(full) or int(full.min()) < 0 or int(full.max()) >= KNOWN_IDS:
            return np.arange(len(full))
        top = int(full.max())
        if top >= len(self.known):
            self.known = np.concatenate([self.known, np.zeros(top + 1 - len(self.known), bool)])
        at = np.flatnonzero(~self.known[full])
        self.known[full[at]] = True
        return at

    def add_configs(self, full: np.ndarray, dur: np.ndarray, config: np.ndarray) -> None:
        """Sum ns and launches per (full id, configuration): rows as many as distinct pairs."""
        k = len(CONFIG_COLUMNS) + 1
        p = np.concatenate([self.configs, np.column_stack([full, config, dur, np.ones_like(dur)])])
        o = np.lexsort(p[:, :k].T[::-1])
        p = p[o]
        first = np.flatnonzero(np.r_[True, (p[1:, :k] != p[:-1, :k]).any(axis=1)])
        self.configs = np.column_stack([p[first, :k], np.add.reduceat(p[:, k:], first, axis=0)])

    def summary(self, strings: dict[int, str]) -> list[tuple]:
        """Per kernel (kernels whose full names read the same are one), in the order they
        first ran: (full_name, name, calls, total_us, median_us)."""
        hists: dict[str, Hist] = {}
        rows: dict[str, list] = {}
        if not len(self.pairs):
            return []
        bounds = np.r_[np.flatnonzero(np.r_[True, self.pairs[1:, 0] != self.pairs[:-1, 0]]), len(self.pairs)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            f = int(self.pairs[a, 0])
            full, (pos, nid) = strings[f], self.order[f]
            d, c = self.pairs[a:b, 1], self.pairs[a:b, 2]
            hists.setdefault(full, Hist()).add(d, c)
            r = rows.setdefault(full, [pos, strings[nid], 0, Fraction(0)])
            if pos < r[0]:
                r[0], r[1] = pos, strings[nid]
            r[2] += int(c.sum())
            r[3] += exact_us(d, c)
        totals = None
        if self.rows:
            import pandas as pd
            full, dur = (np.concatenate(x) for x in zip(*self.rows))
            totals = pd.Series(dur / 1e3).groupby([strings[int(f)] for f in full], sort=False).sum().to_dict()
        out = sorted(((r[0], full, r[1], r[2], totals[full] if totals else float(r[3]), median(hists[full], 1e3))
                      for full, r in rows.items()), key=lambda x: x[0])
        return [x[1:] for x in out]

    def ranked(self, strings: dict[int, str]) -> list[dict]:
        """summary()'s kernels as records (name, full_name, calls, total_us, median_us) in
        frame()'s order (by total_us, descending, as pandas' sort_values orders them)."""
        rows = self.summary(strings)
        order = descending(np.array([r[3] for r in rows], np.float64), "quicksort")
        return [dict(zip(("full_name", "name", "calls", "total_us", "median_us"), rows[i])) for i in order.tolist()]

    def frame(self, strings: dict[int, str], iters: int, gpus: dict | None = None) -> pd.DataFrame:
        """metrics.kernel_table's frame; kernels whose full names read the same are one."""
        import pandas as pd
        rows = self.summary(strings)
        if not rows:
            return pd.DataFrame(columns=F.KERNEL_TABLE_COLUMNS)
        g = pd.DataFrame(rows, columns=["full_name", "name", "calls", "total_us", "median_us"])
        g["calls_per_iter"] = g["calls"] / iters
        g["time_per_iter_us"] = g["total_us"] / iters
        configs = None
        if len(self.configs):
            c = pd.DataFrame(self.configs[:, 1:], columns=CONFIG_COLUMNS + ["ns", "calls"])
            c.insert(0, "full_name", [strings[int(f)] for f in self.configs[:, 0]])
            configs = F.launch_configs(c, gpus or {})
        return F.with_resources(g, configs)[F.KERNEL_TABLE_COLUMNS].sort_values("total_us", ascending=False,
                                                                                ignore_index=True)


def descending(x: np.ndarray, kind: str) -> np.ndarray:
    """The order pandas' sort_values(ascending=False, kind=kind) gives a column x without
    NaN (pandas.core.sorting.nargsort)."""
    idx = np.arange(len(x))[::-1]
    return idx[x[::-1].argsort(kind=kind)][::-1]

