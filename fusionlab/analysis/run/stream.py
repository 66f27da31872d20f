"""analysis.run.metrics over a profile, in one pass and memory bounded by the ranges: a
streamed nsys export (nsys_sqlite.Report), or a Trace read the same way (trace.Chunks).

Each kernel is joined to its launch call and the kernels come sorted by (start, end,
launch start) (nsys_sqlite.Report.kernel_chunks, which reads only the columns needed:
through ADBC's columnar SQLite reader where installed, nsys_arrow, else SQLite's own join
and sort); they arrive a chunk at a time. Each chunk is matched against every requested range at once:
a range's instances, sorted by start, are split into layers of disjoint instances (one
layer unless instances overlap), and np.searchsorted finds the one instance of each
layer whose window can hold a launch call. From the matches, per range and attribution:
- sums (kernels, kernel ns, launch calls and their ns, span) over the union of the
  instances' kernels (a kernel once);
- per instance, the running end of the kernels seen so far (start order), which gives
  busy time (the union of kernel intervals clipped to the instance) and HTA's idle
  breakdown chunk by chunk;
- exact histograms (distinct integer ns values and their counts) of the kernel, launch
  call and queue durations, whose order statistics give the medians and percentiles that
  np.median and np.percentile (linear) give over every value (median(), percentile()).
Busy time is the length of the union of the kernel intervals clipped to the instance;
the idle breakdown walks the kernels in (start, end, launch start) order.
Launch calls stream the same way (Report.launch_chunks). Memory: the ranges, the
histograms' distinct values, and one chunk; SQLite sorts in bounded memory (it spills to
a temporary file); the columnar reader also holds the launch calls (32 bytes each: 32 MB
for a million). Kernel tables keep one histogram per kernel name, and one sum of
kernel ns and launches per kernel and launch configuration (fields.launch_configs picks
each kernel's configuration from them).
"""
from __future__ import annotations

import math
import threading
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from fusionlab.analysis.readers.trace import CONFIG_COLUMNS, Chunks, Instances, RangeTable, Trace
from fusionlab.analysis.run import busy_at
from fusionlab.analysis.run import fields as F
from fusionlab.analysis.run.kernel_stats import median, percentile

if TYPE_CHECKING:
    import pandas as pd

KERNEL_WAIT_NS = F.KERNEL_WAIT_US * 1e3
SHORT_CALL_NS = F.SHORT_CALL_US * 1e3
PID_SHIFT, PID_MASK = 24, 0xFFFFFF
KNOWN_IDS = 1 << 24    # KernelTable: full ids below this are marked seen in an array


# --- exact order statistics from histograms ---------------------------------------------

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


# --- one range's instances (fields.instance_arrays) ---------------------------------------

class View:
    """What one range accumulates under one attribution."""

    def __init__(self, lo: np.ndarray, table: bool, rows: bool = False):
        self.carry = lo.copy()          # per instance: max(instance start, kernel ends so far)
        self.busy = 0
        self.idle = {"host_wait": 0, "kernel_wait": 0, "other": 0}
        self.kernels = self.kernel_ns = self.launches = self.launch_ns = self.short = 0
        self.first_start = self.last_end = None
        self.kdur, self.api, self.gap = Hist(), Hist(), Hist()
        self.table = KernelTable(rows) if table else None


class Target:
    """A range name's instances (rs, fields.instances), in layers of disjoint instances."""

    def __init__(self, rs: pd.DataFrame | Instances, attributions, table_attributions, rows: bool = False):
        lo, hi, tid = F.instance_arrays(rs)
        o = np.lexsort((hi, lo))            # by (start, end), stably
        self.lo, self.hi, self.tid = lo[o], hi[o], tid[o]
        self.pid = (self.tid >> PID_SHIFT) & PID_MASK
        layers, ends = [], []
        for i, (lo, hi) in enumerate(zip(self.lo.tolist(), self.hi.tolist())):
            j = next((j for j, e in enumerate(ends) if e < lo), None)
            if j is None:
                layers.append([])
                ends.append(None)
                j = len(layers) - 1
            layers[j].append(i)
            ends[j] = hi
        self.layers = [(self.lo[idx], np.asarray(idx, dtype=np.int64)) for idx in layers]
        self.window = (int(self.lo.min()), int(self.hi.max()))   # no call outside it matches
        self.views = {a: View(self.lo, a in table_attributions, rows) for a in set(attributions) | set(table_attributions)}
        self.kernel_wait_ns = KERNEL_WAIT_NS   # the idle breakdown's kernel-wait threshold
        self.occupied = None    # per instance, the time its process's kernels ran in it (busy_at), once known

    def match(self, start, end, tid):
        """Per layer: (instance of each row, rows in it by the process rule, by the thread rule)."""
        pid = (tid >> PID_SHIFT) & PID_MASK
        for starts, idx in self.layers:
            j = np.searchsorted(starts, start, side="right") - 1
            inst = idx[np.maximum(j, 0)]
            ok = (j >= 0) & (end <= self.hi[inst]) & (pid == self.pid[inst])
            yield inst, {"process": ok, "same_thread": ok & (tid == self.tid[inst])}

    def outside(self, start: np.ndarray) -> bool:
        """No row of the chunk can match (its calls start outside every instance)."""
        return int(start.max()) < self.window[0] or int(start.min()) > self.window[1]

    def kernels(self, c: np.ndarray) -> None:
        s, e, ls, le, tid = (c[:, i] for i in range(5))
        if self.outside(ls):
            return
        member = {a: np.zeros(len(c), bool) for a in self.views}
        for inst, rules in self.match(ls, le, tid):
            for a, v in self.views.items():
                rows = np.flatnonzero(rules[a])
                if len(rows):
                    member[a][rows] = True
                    self.timeline(v, rows, inst[rows], s, e, ls)
        for a, v in self.views.items():
            m = member[a]
            if not m.any():
                continue
            ks, ke, kls, kle = s[m], e[m], ls[m], le[m]
            kd, api, gap = ke - ks, kle - kls, ks - kle
            v.kernels += len(ks)
            v.kernel_ns += int(kd.sum())
            v.first_start = int(ks.min()) if v.first_start is None else min(v.first_start, int(ks.min()))
            v.last_end = int(ke.max()) if v.last_end is None else max(v.last_end, int(ke.max()))
            v.kdur.add(kd)
            v.api.add(api)
            v.gap.add(gap)
            v.short += int(((kd < api) & (api <= SHORT_CALL_NS)).sum())
            if v.table is not None:
                v.table.add(c[m, 5], c[m, 6], kd, c[m, 7:])

    def timeline(self, v: View, rows, inst, s, e, ls) -> None:
        """Busy time and the idle breakdown (module doc), continued over this chunk's
        kernels of each instance (rows in start order)."""
        o = np.argsort(inst, kind="stable")
        rows, g = rows[o], inst[o]
        lo, hi = self.lo[g], self.hi[g]
        sc, ec = np.clip(s[rows], lo, hi), np.minimum(e[rows], hi)   # a kernel starting after the end: none of it
        carry = v.carry[g]
        first = np.r_[True, g[1:] != g[:-1]]
        inc = _segmented_cummax(np.maximum(ec, carry), first)   # max(carry, ends up to this one)
        prev = np.empty_like(inc)
        prev[1:] = inc[:-1]
        prev[first] = carry[first]                               # before this kernel
        gap = sc - prev
        pos = gap > 0
        host = pos & (ls[rows] > prev)
        kwait = pos & ~host & (gap <= self.kernel_wait_ns)
        v.idle["host_wait"] += int(gap[host].sum())
        v.idle["kernel_wait"] += int(gap[kwait].sum())
        v.idle["other"] += int(gap[pos & ~host & ~kwait].sum())
        v.busy += int(np.maximum(0, ec - np.maximum(sc, prev)).sum())
        last = np.r_[g[1:] != g[:-1], True]
        v.carry[g[last]] = inc[last]

    def launches(self, c: np.ndarray) -> None:
        start, end, tid = c[:, 0], c[:, 1], c[:, 2]
        if self.outside(start):
            return
        member = {a: np.zeros(len(c), bool) for a in self.views}
        for _, rules in self.match(start, end, tid):
            for a in self.views:
                member[a] |= rules[a]
        for a, v in self.views.items():
            m = member[a]
            v.launches += int(m.sum())
            v.launch_ns += int((end[m] - start[m]).sum())

    def aggregates(self, a: str) -> dict:
        v = self.views[a]
        idle = dict(v.idle)
        tail = self.hi - v.carry
        idle["other"] += int(tail[tail > 0].sum())    # from the last kernel's end to the range end
        n = v.kernels
        path = {}
        if n:
            queue = v.gap.where(v.gap.v >= 0)
            path = {"launch_api_us": median(v.api) / 1e3,
                    "queue_us": median(queue) / 1e3 if queue.n else None,
                    "launch_delay_us": median(v.gap.clip_low(0)) / 1e3,
                    "short_kernel_share": v.short / n}
        return {"kernels": n, "kernel_ns": v.kernel_ns, "launches": v.launches, "launch_ns": v.launch_ns,
                "busy_ns": v.busy, "first_start": v.first_start, "last_end": v.last_end,
                "kernel_durations": v.kdur, "launch_path": path, "idle": idle,
                **({"other_work_ns": int(self.occupied.sum()) - v.busy} if self.occupied is not None else {})}


def _segmented_cummax(x: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Running maximum of x restarting where `first` is True."""
    if not len(x):
        return x
    seg = np.cumsum(first) - 1
    base = int(x.min())
    span = int(x.max()) - base + 1
    if int(seg[-1]) * span < 2 ** 62:      # lift each segment above the previous ones
        lift = seg * np.int64(span)
        return np.maximum.accumulate(x - base + lift) - lift + base
    out = np.empty_like(x)
    bounds = np.r_[np.flatnonzero(first), len(x)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        out[a:b] = np.maximum.accumulate(x[a:b])
    return out


def _exact_us(ns: np.ndarray, counts: np.ndarray) -> Fraction:
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
            r[3] += _exact_us(d, c)
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


# --- the pass -----------------------------------------------------------------------------

def _queries(targets) -> dict:
    """busy_at's query instants: every instance's start and end, per process."""
    pid = np.concatenate([t.pid for t in targets])
    at = np.concatenate([np.r_[t.lo, t.hi] for t in targets])
    both = np.concatenate([t.pid for t in targets for _ in (0, 1)]) if len(pid) else pid
    return {p: at[both == p] for p in busy_at._distinct(both)}


def _both(background, foreground) -> None:
    """Run two passes at once: SQLite sorts and scans with the GIL released, so the launch
    calls' pass (which touches only the launch sums) overlaps the kernels' sort."""
    failed = []

    def run():
        try:
            background()
        except BaseException as e:      # re-raised in the caller's thread
            failed.append(e)

    th = threading.Thread(target=run, name="fusionlab-launch-pass")
    th.start()
    try:
        foreground()
    finally:
        th.join()
    if failed:
        raise failed[0]


def views(report, targets, attributions, tables=(), kernel_wait_us: float = F.KERNEL_WAIT_US) -> tuple[dict, dict]:
    """metrics.views over a streamed nsys export (nsys_sqlite.Report) or a Trace: every
    target, every attribution and every kernel table from one pass over its kernels and
    one over its launch calls; kernel_wait_us: the idle breakdown's kernel-wait threshold."""
    if isinstance(report, Trace):
        report = Chunks(report)
    plan = {}
    for name, domain in list(targets) + [(n, d) for n, d, _ in tables]:
        if (name, domain) not in plan:
            rs = F.instances(report, name, domain)
            plan[(name, domain)] = [rs, set(), set()]
    for name, domain in targets:
        plan[(name, domain)][1].update(attributions)
    for name, domain, a in tables:
        plan[(name, domain)][2].add(a)
    rows = getattr(report, "in_memory", False)
    live = {k: Target(rs, views_, tabs, rows) for k, (rs, views_, tabs) in plan.items() if len(rs)}
    for t in live.values():
        t.kernel_wait_ns = kernel_wait_us * 1e3
    occupied = busy_at.BusyAt(_queries(live.values())) if live and report.device == "cuda" else None
    if live:
        def launch_pass():
            return [t.launches(c) for c in report.launch_chunks() for t in live.values()]

        def kernel_pass():
            for c in report.kernel_chunks(names=bool(tables), config=bool(tables)):
                for t in live.values():
                    t.kernels(c)
                if occupied is not None:
                    occupied.kernels(c)
        if getattr(report, "columnar", False):     # both read one array of launch calls: in turn
            launch_pass()
            kernel_pass()
        else:
            _both(launch_pass, kernel_pass)
    if occupied is not None:
        occupied.finish()
        for t in live.values():
            t.occupied = occupied.between(t.pid, t.lo, t.hi)
    return answer(report, RangeTable.of_profile(report), targets, tables, plan, live, attributions)



def answer(report, ranges, targets, tables, plan, live, attributions=F.ATTRIBUTIONS, frames: bool = True):
    """views' answer from the fed targets (live): per target its metrics per attribution,
    and the kernel tables asked for (ranges: the profile's, a DataFrame or RangeTable);
    frames: each table as metrics.kernel_table's DataFrame, else as KernelTable.ranked's
    records (without the per-iteration and resource columns)."""
    if not isinstance(ranges, RangeTable):
        ranges = RangeTable.of(ranges)
    out, kt = {}, {}
    ids = set()
    for t in live.values():
        for v in t.views.values():
            if v.table is not None:
                ids.update(v.table.order)
                ids.update(n for _, n in v.table.order.values())
    strings = report.strings(ids) if ids else {}
    for name, domain in targets:
        rs, t = plan[(name, domain)][0], live.get((name, domain))
        lo, hi, _ = F.instance_arrays(rs)
        iters, dur = (F.iterations(ranges, rs, name) if t else None), int((hi - lo).sum())
        out[F.key(name, domain)] = {
            a: F.finish(F.header(name, domain, a, len(rs)), report.device, iters, dur, t.aggregates(a))
            if t else F.header(name, domain, a, len(rs)) for a in attributions}
    for name, domain, a in tables:
        rs, t = plan[(name, domain)][0], live.get((name, domain))
        if not frames:
            kt[(name, domain, a)] = t.views[a].table.ranked(strings) if t else []
        elif t:
            kt[(name, domain, a)] = t.views[a].table.frame(strings, F.iterations(ranges, rs, name),
                                                           getattr(report, "gpus", {}))
        else:
            import pandas as pd
            kt[(name, domain, a)] = pd.DataFrame(columns=F.KERNEL_TABLE_COLUMNS)
    return out, kt
