"""Everything `python -m fusionlab.analysis` computes over an nsys export's kernels, in one
pass over them in start order (readers.nsys_pass), memory bounded by the report's
structure (its ranges, kernel names and streams) and its launch calls (32 bytes each):

- the (whole report) ranges (whole.with_activity's: per process, first kernel launch
  call to last kernel end) from a first read of the kernels' ends and correlation ids;
- every range's metrics and the whole report's kernel table (stream.views), its GPU
  projection and work-window fields (projection.projections), and the time the process's
  GPU work ran in each instance (busy_at), from the same chunks of joined kernels;
- the whole report's per-device and per-stream breakdowns (whole.gpu_breakdown) over
  every kernel (joined or not) merged with the memory copies and memsets in start order.

analyse(report, keys, wait_us) returns what the separate passes return, value for value;
usable(report) says whether the export can be read so (else the caller uses them).
"""
from __future__ import annotations

import copy
import re

import numpy as np

from fusionlab.analysis.readers import nsys_pass as P
from fusionlab.analysis.readers import nsys_sqlite as N
from fusionlab.analysis.run import busy_at, projection, stream, whole
from fusionlab.analysis.run import fields as F

NCCL = re.compile("nccl", re.IGNORECASE)    # whole.gpu_breakdown: NCCL kernels are not compute


def usable(report) -> bool:
    return P.usable(report) and P.kernel_name_column(report) == report._kernel["name"]


class Occupied(busy_at.BusyAt):
    """busy_at.BusyAt fed Chunks (their process ids computed once)."""

    def kernels(self, ch) -> None:
        ps = whole.distinct(ch.pid)
        for p in (p for p in ps if p in self.t):
            m = ch.pid == p if len(ps) > 1 else slice(None)
            self._add(p, ch.s[m], ch.e[m])


def _whole_ranges(report, times):
    """with_activity's (profile with the WHOLE ranges, whether it has a kernel), and
    whether the file holds the kernels in (start, end) order; times: the kernels' (start,
    end) and their launch calls (Calls.launch_of's hit, start, end, tid) in file order, in
    batches."""
    best: dict[int, list] = {}
    in_order, last = True, None
    for s, e, hit, ls, _, tid in times:
        if in_order:
            in_order, last = P.sorted_after(last, s, e)
        if not hit.all():
            if not hit.any():
                continue
            e, ls, tid = e[hit], ls[hit], tid[hit]
        if not len(e):
            continue
        pid = (tid >> stream.PID_SHIFT) & stream.PID_MASK
        for p in whole.distinct(pid):
            m = pid == p
            i = int(np.argmin(np.where(m, ls, np.iinfo(np.int64).max)))
            b_ = best.setdefault(p, [int(ls[i]), int(e[m].max()), int(tid[i])])
            if int(ls[i]) < b_[0]:
                b_[0], b_[2] = int(ls[i]), int(tid[i])
            b_[1] = max(b_[1], int(e[m].max()))
    return whole.with_ranges(report, [(whole.WHOLE, "", s, e, t) for s, e, t in best.values()]), bool(best), in_order


class LaunchChunk:
    """One chunk of launch calls (start ls, end le, tid) with what every target reads of it."""

    def __init__(self, ls: np.ndarray, le: np.ndarray, tid: np.ndarray):
        self.ls, self.le, self.tid = ls, le, tid
        self.pid = (tid >> stream.PID_SHIFT) & stream.PID_MASK
        self.lo, self.hi = int(ls.min()), int(ls.max())


class Chunk(LaunchChunk):
    """One chunk of joined kernels (stream's rows: start, end, launch start, launch end,
    tid, short name id, full name id[, trace.CONFIG_COLUMNS]) as a list of columns, with
    what every target reads of it."""

    def __init__(self, cols: list[np.ndarray]):
        self.cols = cols
        self.s, self.e = cols[0], cols[1]
        super().__init__(cols[2], cols[3], cols[4])
        self._sums = None

    def sums(self):
        """What a view adds from every kernel of the chunk, computed once for all the views
        that take them all: durations, their sum, the last end, the kernel, launch-call and
        queue durations as Hist.counted pairs, the short-kernel count."""
        if self._sums is None:
            kd, api, gap = self.e - self.s, self.le - self.ls, self.s - self.le
            self._sums = (kd, int(kd.sum()), int(self.e.max()), [stream.Hist.counted(x) for x in (kd, api, gap)],
                          int(((kd < api) & (api <= stream.SHORT_CALL_NS)).sum()))
        return self._sums


def _segments(g: np.ndarray):
    """Starts of the runs of equal values of nondecreasing g, and each run's value."""
    if g[0] == g[-1]:
        return np.zeros(1, np.int64), g[:1]
    b = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    return b, g[b]


def _running_max(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Running maximum of x restarting at the segment starts b."""
    if len(b) == 1:
        return np.maximum.accumulate(x)
    first = np.zeros(len(x), bool)
    first[b] = True
    return stream._segmented_cummax(x, first)


def _before(inc: np.ndarray, b: np.ndarray, carry: np.ndarray) -> np.ndarray:
    """Per row, the running end before it: the previous row's, or its segment's carry."""
    prev = np.empty_like(inc)
    prev[1:] = inc[:-1]
    prev[b] = carry
    return prev


class Own(stream.Target):
    """stream.Target that matches a chunk once per layer for both attributions and walks
    each instance's kernels in one vectorised pass (the same sums, in fewer operations).
    While every launch and kernel seen so far falls in a range's instance by the thread
    rule exactly where it does by the process rule (the range's process launches from
    its own thread alone), the same_thread view is the process view: only the process
    view accumulates, and untwin() gives same_thread a copy of it (at the first chunk
    where the rules differ, and before the views are read)."""

    project = False
    twin = False

    def twin_views(self) -> None:
        """Accumulate the same_thread view through the process view (class doc)."""
        self.twin = "process" in self.views and "same_thread" in self.views \
            and self.views["same_thread"].table is None

    def untwin(self) -> None:
        """same_thread's view as a copy of the process view's (class doc)."""
        if not self.twin:
            return
        self.twin = False
        p = self.views["process"]
        table, p.table = p.table, None
        try:
            self.views["same_thread"] = copy.deepcopy(p)
        finally:
            p.table = table

    def _matched(self, ch):
        """_layers' matches; the views to accumulate (untwin where the rules differ)."""
        matched = list(self._layers(ch))
        if self.twin and any(not np.array_equal(r["process"], r["same_thread"]) for _, r in matched):
            self.untwin()
        views = {"process": self.views["process"]} if self.twin else self.views
        return matched, views

    def _layers(self, ch: Chunk):
        """stream.Target.match over a Chunk."""
        for starts, idx in self.layers:
            if len(idx) == 1:       # one instance: compared, not searched
                inst = int(idx[0])
                ok = (ch.ls >= starts[0]) & (ch.le <= self.hi[inst]) & (ch.pid == self.pid[inst])
            else:
                j = np.searchsorted(starts, ch.ls, side="right") - 1
                inst = idx[np.maximum(j, 0)]
                ok = (j >= 0) & (ch.le <= self.hi[inst]) & (ch.pid == self.pid[inst])
            rules = {"process": ok}
            if "same_thread" in self.views:
                rules["same_thread"] = ok & (ch.tid == self.tid[inst])
            yield inst, rules

    def launches(self, ch: LaunchChunk) -> None:
        if ch.hi < self.window[0] or ch.lo > self.window[1]:
            return
        member = {}
        matched, views = self._matched(ch)
        for _, rules in matched:
            for a in views:
                member[a] = member[a] | rules[a] if a in member else rules[a]
        for a, v in views.items():
            m = member[a]
            v.launches += int(m.sum())
            v.launch_ns += int((ch.le[m] - ch.ls[m]).sum())

    def kernels(self, ch: Chunk) -> None:
        if ch.hi < self.window[0] or ch.lo > self.window[1]:
            return
        layers = len(self.layers)
        member = {}
        matched, views = self._matched(ch)
        for inst, rules in matched:
            for a, v in views.items():
                rows = np.flatnonzero(rules[a])
                if not len(rows):
                    continue
                m = rules[a]
                member[a] = m if layers == 1 else (member[a] | m if a in member else m)
                g = np.full(len(rows), inst) if isinstance(inst, int) else inst[rows]
                self.walk(v, rows, g, ch)
        c = ch.cols
        for a, m in member.items():
            v = self.views[a]
            every = len(m) == int(m.sum())
            if every:
                kd, kns, last, counted, short = ch.sums()
                first = int(ch.s[0])
                for h, (x, n) in zip((v.kdur, v.api, v.gap), counted):
                    h.add(x, n)
            else:
                ks, ke, kls, kle = ch.s[m], ch.e[m], ch.ls[m], ch.le[m]
                kd, api, gap = ke - ks, kle - kls, ks - kle
                kns, first, last = int(kd.sum()), int(ks[0]), int(ke.max())
                for h, x in ((v.kdur, kd), (v.api, api), (v.gap, gap)):
                    h.add(x)
                short = int(((kd < api) & (api <= stream.SHORT_CALL_NS)).sum())
            v.kernels += len(kd)
            v.kernel_ns += kns
            v.first_start = first if v.first_start is None else min(v.first_start, first)
            v.last_end = last if v.last_end is None else max(v.last_end, last)
            v.short += short
            if v.table is not None:
                config = np.column_stack([x if every else x[m] for x in c[7:]]) if len(c) > 7 else None
                v.table.add(c[5] if every else c[5][m], c[6] if every else c[6][m], kd, config)

    def walk(self, v, rows, g, ch: Chunk) -> None:
        """stream.Target.timeline (and projection.Projected.timeline where project) over
        rows of the chunk in instances g."""
        if len(g) > 1 and (g[1:] < g[:-1]).any():
            o = np.argsort(g, kind="stable")
            rows, g = rows[o], g[o]
        b, gu = _segments(g)
        s, e, ls = ch.s[rows], ch.e[rows], ch.ls[rows]
        lo, hi = (self.lo[gu[0]], self.hi[gu[0]]) if len(b) == 1 else (self.lo[g], self.hi[g])
        kw = self.kernel_wait_ns
        # the range's timeline (stream.Target.timeline): kernels clipped to the instance
        sc, ec = np.clip(s, lo, hi), np.minimum(e, hi)
        inc = _running_max(np.maximum(ec, v.carry[g] if len(b) > 1 else v.carry[gu[0]]), b)
        prev = _before(inc, b, v.carry[gu])
        gap = sc - prev
        pos = gap > 0
        host = pos & (ls > prev)
        kwait = pos & ~host & (gap <= kw)
        v.idle["host_wait"] += int(gap @ host)       # the sums of gap where the mask holds
        v.idle["kernel_wait"] += int(gap @ kwait)
        v.idle["other"] += int(gap @ (pos & ~host & ~kwait))
        v.busy += int(np.maximum(0, ec - np.maximum(sc, prev)).sum())
        ends = np.r_[b[1:] - 1, len(g) - 1]
        v.carry[gu] = inc[ends]
        if not self.project:
            return
        # the projection's timeline (projection.Projected.timeline): kernels not clipped to the end
        sc = np.maximum(s, lo)
        inc = _running_max(np.maximum(e, v.pcarry[g] if len(b) > 1 else v.pcarry[gu[0]]), b)
        prev = _before(inc, b, v.pcarry[gu])
        gap = np.maximum(sc - prev, 0)
        pos = gap > 0
        host = pos & (ls > prev)
        kwait = pos & ~host & (gap <= kw)
        lead = v.count[gu] == 0         # the segment's first row is its instance's first kernel
        cat0 = np.where(host[b], 0, np.where(kwait[b], 1, 2))
        v.lead[gu[lead], cat0[lead]] += gap[b][lead]
        inner = gap.copy()
        inner[b[lead]] = 0
        for k, sel in enumerate((host, kwait & ~host, ~host & ~kwait)):
            v.inner[gu, k] += np.add.reduceat(np.where(sel, inner, 0), b)
        v.ibusy[gu] += np.add.reduceat(np.maximum(0, e - np.maximum(sc, prev)), b)
        v.first[gu] = np.minimum(v.first[gu], s[b])
        v.last[gu] = np.maximum(v.last[gu], np.maximum.reduceat(e, b))
        v.count[gu] += np.diff(np.r_[b, len(g)])
        v.pcarry[gu] = inc[ends]


class Both(Own, projection.Projected):
    """stream.Target and projection.Projected of one range in one: the instances matched
    once per chunk, each timeline with its own running end (stream's clipped to the range
    end, the projection's not)."""

    project = True

    def __init__(self, rs, attributions, table_attributions):
        stream.Target.__init__(self, rs, attributions, table_attributions)
        n = len(self.lo)
        for v in self.views.values():
            v.first = np.full(n, np.iinfo(np.int64).max)
            v.last = np.full(n, projection.NONE_END)
            v.count = np.zeros(n, np.int64)
            v.ibusy = np.zeros(n, np.int64)
            v.inner = np.zeros((n, 3), np.int64)
            v.lead = np.zeros((n, 3), np.int64)
            v.pcarry = self.lo.copy()

    def fields(self, a: str) -> dict:
        v = self.views[a]
        v.carry, v.pcarry = v.pcarry, v.carry
        try:
            return projection.Projected.fields(self, a)
        finally:
            v.carry, v.pcarry = v.pcarry, v.carry

    aggregates = stream.Target.aggregates


def _nccl_ids(report) -> np.ndarray:
    con = N.open_report(report.source)
    try:
        rows = con.execute("SELECT id, value FROM StringIds WHERE value LIKE '%nccl%'").fetchall() \
            if "StringIds" in N._tables(con) else []
    finally:
        con.close()
    return np.array(sorted(i for i, v in rows if v and NCCL.search(v)), np.int64)


class _Merge:
    """Kernels (start, end, rowid order) and memops (start, end, kind, rowid order) fed to a
    Breakdown in (start, end, kind, rowid) order, a batch at a time."""

    def __init__(self, out: whole.Breakdown, memops, calls: P.Calls):
        self.out, self.calls = out, calls
        self.mem = iter(memops)
        first = next(self.mem, None)
        self.buf = first if first is not None else np.empty((0, 6), np.int64)
        self.done = first is None       # no memops at all: kernels go straight through
        self.none = first is None
        self.held = None

    def _memops_before(self, bound):
        while not self.done and (not len(self.buf) or bound is None or self.buf[-1, 0] < bound):
            nxt = next(self.mem, None)
            if nxt is None:
                self.done = True
                break
            self.buf = np.concatenate([self.buf, nxt])
        n = len(self.buf) if bound is None else int(np.searchsorted(self.buf[:, 0], bound, side="left"))
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def kernels(self, cols, bound_last: bool = True) -> None:
        """cols: start, end, device, stream, launch start, compute (bool) of all kernels of a
        batch."""
        if self.none:       # kernels alone: already in (start, end, rowid) order
            if len(cols[0]):
                self.out.add(*cols[:5], None, cols[5])
            return
        if self.held is not None:
            cols = [np.concatenate([a, b]) for a, b in zip(self.held, cols)]
        bound = None
        if bound_last and len(cols[0]):
            bound = int(cols[0][-1])
            k = int(np.searchsorted(cols[0], bound, side="left"))
            self.held, cols = [c[k:] for c in cols], [c[:k] for c in cols]
        else:
            self.held = None
        m = self._memops_before(bound)
        if not len(cols[0]) and not len(m):
            return
        if not len(m):
            return self.out.add(*cols[:5], None, cols[5])
        ls = self.calls.first_call(m[:, 4])
        s = np.concatenate([cols[0], m[:, 0]])
        e = np.concatenate([cols[1], m[:, 1]])
        kind = np.concatenate([np.zeros(len(cols[0]), np.int64), m[:, 5]])
        o = np.lexsort((kind, e, s))
        dev = np.concatenate([cols[2], m[:, 2]])[o]
        st = np.concatenate([cols[3], m[:, 3]])[o]
        lsa = np.concatenate([cols[4], ls])[o]
        comp = np.concatenate([cols[5], np.zeros(len(m), bool)])[o]
        self.out.add(s[o], e[o], dev, st, lsa, kind[o] == 0, comp)

    def finish(self) -> None:
        self.kernels([np.empty(0, np.int64)] * 5 + [np.empty(0, bool)], bound_last=False)


def analyse(report, keys, tables: bool, wait_us: float, ops: bool = True, frames: bool = True):
    """(views, kernel tables, projections, breakdown or None, has_kernels): stream.views over
    keys + WHOLE (the WHOLE kernel table where tables; as stream.answer's frames or records),
    projection.projections over keys, and whole.gpu_breakdown (where ops), from one pass
    (module doc)."""
    calls = P.Calls(report)
    n = P.kernel_count(report)
    held = P.held_kernels(report, n) if n <= P.HELD else None
    if held is not None:        # each kernel's launch call, found once
        joined = [np.empty(len(held[0]), t) for t in (bool, np.int64, np.int64, np.int64)]
        for i in range(0, len(held[0]), P.CHUNK):
            for x, y in zip(joined, calls.launch_of(held[2][i:i + P.CHUNK])):
                x[i:i + P.CHUNK] = y
        times = ([held[0][i:i + P.CHUNK], held[1][i:i + P.CHUNK]] + [x[i:i + P.CHUNK] for x in joined]
                 for i in range(0, len(held[0]), P.CHUNK))
    else:
        times = ([s, e, *calls.launch_of(corr)] for s, e, corr in P.kernel_times(report))
    aug, has_kernels, in_order = _whole_ranges(report, times)
    targets = list(keys) + ([(whole.WHOLE, None)] if has_kernels else [])
    tabs = [(whole.WHOLE, None, "process")] if (has_kernels and tables) else []
    plan = {}
    for name, domain in targets:
        plan[(name, domain)] = [F.instances(aug, name, domain), set(F.ATTRIBUTIONS), set()]
    for name, domain, a in tabs:
        plan[(name, domain)][2].add(a)
    cuda = report.device == "cuda"
    ranges = set(keys) if cuda else set()       # projections: the ranges of a GPU profile
    live = {k: (Both if k in ranges else Own)(rs, v, t) for k, (rs, v, t) in plan.items() if len(rs)}
    for t in live.values():
        t.kernel_wait_ns = wait_us * 1e3
        t.twin_views()
    proj = {k: t for k, t in live.items() if isinstance(t, Both)}
    everyone = list(live.values())
    occupied = Occupied(stream._queries(everyone)) if everyone and cuda else None
    for c in calls.launches():
        if len(c[0]):
            c = LaunchChunk(*c)
            for t in live.values():
                t.launches(c)
    breakdown = whole.Breakdown(wait_us) if ops and cuda else None
    merge = _Merge(breakdown, P.memops(report), calls) if breakdown is not None else None
    nccl = _nccl_ids(report) if breakdown is not None else None
    carry = None
    if held is not None:
        held += joined
        del joined
        if not in_order:        # (start, end, rowid) order, a column at a time
            o = np.lexsort((held[1], held[0]))
            for i in range(len(held)):
                held[i] = held[i][o]
            del o
        batches = ([x[i:i + P.CHUNK] for x in held] for i in range(0, len(held[0]), P.CHUNK))
    else:
        batches = ([*b, *calls.launch_of(b[2])] for b in P.kernel_rows(report, in_order))
    for s, e, corr, name, full, dev, st, hit, ls, le, tid in batches:
        if merge is not None:
            merge.kernels([s, e, dev, st, calls.first_call(corr, hit, ls),
                           ~np.isin(name, nccl) if len(nccl) else np.ones(len(s), bool)])
        every = hit.all()
        cols = [s, e, ls, le, tid, name, full] if every else [x[hit] for x in (s, e, ls, le, tid, name, full)]
        if carry is not None:
            cols = [np.concatenate([a, b]) for a, b in zip(carry, cols)]
        if not len(cols[0]):
            continue
        s, e = cols[0], cols[1]
        n = len(s) - 1      # the rows sharing the last (start, end) wait for the next batch
        while n > 0 and s[n - 1] == s[-1] and e[n - 1] == e[-1]:
            n -= 1
        carry = [x[n:] for x in cols]
        if n:
            _feed(_rows([x[:n] for x in cols]), live, proj, occupied)
    if carry is not None and len(carry[0]):
        _feed(_rows(carry), live, proj, occupied)
    if merge is not None:
        merge.finish()
    for t in live.values():
        t.untwin()
    if occupied is not None:
        occupied.finish()
        for t in everyone:
            t.occupied = occupied.between(t.pid, t.lo, t.hi)
    views, kt = stream.answer(report, aug.range_table, targets, tabs, plan, live, frames=frames)
    projections = {F.key(n, d): ({a: proj[(n, d)].fields(a) for a in F.ATTRIBUTIONS} if (n, d) in proj
                                 else {a: {} for a in F.ATTRIBUTIONS}) for n, d in keys}
    return views, kt, projections, (breakdown.result() if breakdown is not None and breakdown.dev else None), \
        has_kernels


def _rows(cols: list[np.ndarray]) -> list[np.ndarray]:
    """Columns sorted by (start, end), rows sharing a (start, end) ordered by launch start
    (stably: nsys_arrow.joined_kernels' order)."""
    s, e = cols[0], cols[1]
    if len(s) > 1 and ((s[1:] == s[:-1]) & (e[1:] == e[:-1])).any():
        o = np.lexsort((cols[2], e, s))
        cols = [x[o] for x in cols]
    return cols


def _feed(c, live, proj, occupied) -> None:
    ch = Chunk(c)
    for t in live.values():
        t.kernels(ch)
    if occupied is not None:
        occupied.kernels(ch)

