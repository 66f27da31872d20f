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
  np.median and np.percentile (linear) give over every value (analysis.run.hist).
Busy time is the length of the union of the kernel intervals clipped to the instance;
the idle breakdown walks the kernels in (start, end, launch start) order.
Launch calls stream the same way (Report.launch_chunks). Memory: the ranges, the
histograms' distinct values, and one chunk; SQLite sorts in bounded memory (it spills to
a temporary file); the columnar reader also holds the launch calls (32 bytes each: 32 MB
for a million). Kernel tables (analysis.run.kernel_table) keep one histogram per kernel
name, and one sum of kernel ns and launches per kernel and launch configuration
(fields.launch_configs picks each kernel's configuration from them).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from fusionlab.analysis.readers.trace import Chunks, Instances, RangeTable, Trace
from fusionlab.analysis.run import busy_at
from fusionlab.analysis.run import fields as F
from fusionlab.analysis.run.hist import Hist, median
from fusionlab.analysis.run.kernel_table import KernelTable

if TYPE_CHECKING:
    import pandas as pd

KERNEL_WAIT_NS = F.KERNEL_WAIT_US * 1e3
SHORT_CALL_NS = F.SHORT_CALL_US * 1e3
PID_SHIFT, PID_MASK = 24, 0xFFFFFF


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
