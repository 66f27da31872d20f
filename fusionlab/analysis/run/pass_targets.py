"""The chunks of analysis.run.single_pass's one pass and the targets they feed: LaunchChunk
and Chunk (a chunk of launch calls, or of joined kernels, with what every target reads of
it, computed once) and the targets that take them: Own (a range's metrics, stream.Target's
sums in fewer operations) and Both (a range's metrics and its GPU projection,
projection.Projected, from one match per chunk)."""
from __future__ import annotations

import copy

import numpy as np

from fusionlab.analysis.run import projection, stream
from fusionlab.analysis.run.hist import Hist


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
            self._sums = (kd, int(kd.sum()), int(self.e.max()), [Hist.counted(x) for x in (kd, api, gap)],
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
