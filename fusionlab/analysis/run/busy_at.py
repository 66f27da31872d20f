"""The time a process's GPU work occupied the GPU before given instants, from one pass
over the kernels in start order: per process, B(t) = the length of the union of the
process's kernel intervals that lies before t (any thread's kernels, whichever range
launched them). B(hi) - B(lo) is the time in [lo, hi] in which the GPU ran any of the
process's kernels: a range that launches nothing but waits (a synchronize) sees the GPU
busy with earlier work for that long.

With the kernels sorted by start, let j be the last kernel starting at or before t, cum_j
the union's length over kernels 0..j and run_j their latest end: the part of that union
after t is (t, run_j] (every such kernel starts at or before t), so
B(t) = cum_j - max(0, run_j - t). A query is answered once a kernel starting after it
has been seen (or at the end). Memory: the query instants and a few numbers per process.
"""
from __future__ import annotations

import numpy as np

PID_SHIFT, PID_MASK = 24, 0xFFFFFF
NONE = -(1 << 62)     # the latest end before any kernel (earlier than any time, no overflow)


def _distinct(x: np.ndarray) -> list[int]:
    """The sorted distinct values of x (np.unique's sort without counts would load numpy.ma)."""
    return np.unique(x, return_counts=True)[0].tolist()


class BusyAt:
    """B(t) of the module doc at the instants `queries` ({pid: times}) of each process."""

    def __init__(self, queries: dict[int, np.ndarray]):
        self.t = {p: np.unique(np.asarray(q, np.int64), return_counts=True)[0] for p, q in queries.items()}
        self.b = {p: np.zeros(len(q), np.int64) for p, q in self.t.items()}
        self.done = {p: 0 for p in self.t}            # queries answered, in time order
        self.state = {p: [0, NONE] for p in self.t}   # cum, run (before this chunk)

    def kernels(self, c: np.ndarray) -> None:
        """One chunk of stream's kernel rows (start, end, launch_start, launch_end, tid, ...)."""
        pid = (c[:, 4] >> PID_SHIFT) & PID_MASK
        for p in _distinct(pid):
            if p in self.t:
                rows = c[pid == p]
                self._add(p, rows[:, 0], rows[:, 1])

    def _add(self, p: int, s: np.ndarray, e: np.ndarray) -> None:
        cum0, run0 = self.state[p]
        run = np.maximum.accumulate(np.maximum(e, run0))
        prev = np.empty_like(run)
        prev[0], prev[1:] = run0, run[:-1]
        cum = cum0 + np.cumsum(np.maximum(0, e - np.maximum(s, prev)))
        t, i = self.t[p], self.done[p]
        k = i + int(np.searchsorted(t[i:], s[-1], side="left"))    # queries before the chunk's last start
        if k > i:
            q = t[i:k]
            j = np.searchsorted(s, q, side="right") - 1
            before = j < 0
            jj = np.maximum(j, 0)
            c_, r_ = np.where(before, cum0, cum[jj]), np.where(before, run0, run[jj])
            self.b[p][i:k] = c_ - np.maximum(0, r_ - q)
            self.done[p] = k
        self.state[p] = [int(cum[-1]), int(run[-1])]

    def finish(self) -> None:
        """Answer the queries after the last kernel."""
        for p, t in self.t.items():
            i = self.done[p]
            cum, run = self.state[p]
            self.b[p][i:] = cum - np.maximum(0, run - t[i:])
            self.done[p] = len(t)

    def between(self, pid: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """B(hi) - B(lo) per row (process pid; lo, hi among the queries)."""
        out = np.zeros(len(lo), np.int64)
        for p in _distinct(pid):
            m = pid == p
            if p not in self.t:
                continue
            t, b = self.t[p], self.b[p]
            out[m] = b[np.searchsorted(t, hi[m])] - b[np.searchsorted(t, lo[m])]
        return out
