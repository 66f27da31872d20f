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

The chunks and the per-range targets they feed are analysis.run.pass_targets'.
analyse(report, keys, wait_us) returns what the separate passes return, value for value;
usable(report) says whether the export can be read so (else the caller uses them).
"""
from __future__ import annotations

import re

import numpy as np

from fusionlab.analysis.readers import nsys_pass as P
from fusionlab.analysis.readers import nsys_schema as NS
from fusionlab.analysis.run import busy_at, stream, whole
from fusionlab.analysis.run.pass_targets import Both, Chunk, LaunchChunk, Own
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


def _nccl_ids(report) -> np.ndarray:
    con = NS.open_report(report.source)
    try:
        rows = con.execute("SELECT id, value FROM StringIds WHERE value LIKE '%nccl%'").fetchall() \
            if "StringIds" in NS.table_names(con) else []
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

