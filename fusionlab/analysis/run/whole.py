"""The whole profile, whatever ranges it has: the `(whole report)` entry of
`python -m fusionlab.analysis`.

- activity ranges (with_activity): one synthetic range WHOLE per process, from its first
  kernel launch call to its last kernel's end (the process's GPU activity); the metrics
  of analysis.run.metrics over it (attribution `process`) give kernels, GPU time, launch
  statistics and the idle breakdown of the merged kernel timeline over that window.
- gpu_breakdown(ops): over every GPU activity (readers.gpu_ops: kernels, memory copies,
  memsets), per device, HTA's temporal breakdown: span = first activity start to last
  activity end; idle = span - union of the activities; compute = union of the kernels
  (HTA's computation kernels: not NCCL); non-compute = the rest of the union; each as a
  share of the span. Per device and stream, HTA's idle time breakdown: each gap between
  consecutive activities of the stream is host wait when the next activity's CUDA call
  started after the previous one ended, kernel wait when not and the gap is at most
  fields.KERNEL_WAIT_US, other otherwise.
- Breakdown: gpu_breakdown's figures from activities fed in start order a batch at a
  time, in memory bounded by the devices and streams (analysis.run.single_pass).
- top_kernels(table): the kernels with the most GPU time, from the kernel table, each by
  its short name, or its full (demangled) name where kernels of different full names share
  the short one (eager's vectorized_elementwise_kernel).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fusionlab.analysis.readers.trace import Chunks, RangeTable, Trace
from fusionlab.analysis.run import busy_at
from fusionlab.analysis.run import fields as F
from fusionlab.analysis.run import kernel_table, stream

if TYPE_CHECKING:
    import pandas as pd

WHOLE = "(whole report)"
TOP = 10     # top_kernels' rows


class _WithRanges:
    """A profile (Chunks or nsys_sqlite.Report) with other ranges (range_table; ranges: as
    a DataFrame, made on first use)."""

    def __init__(self, report, ranges: RangeTable):
        self._report, self.range_table = report, ranges
        self._frame = None

    @property
    def ranges(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = self.range_table.frame()
        return self._frame

    def __getattr__(self, name):
        return getattr(self._report, name)


def with_ranges(report, rows: list[tuple]) -> _WithRanges:
    """The profile with the ranges rows (name, domain, start, end, tid) added."""
    return _WithRanges(report, RangeTable.of_profile(report).plus(rows))


def with_activity(report):
    """(the profile with the WHOLE ranges added, whether it has any kernel); one pass
    over its kernels."""
    if isinstance(report, Trace):
        report = Chunks(report)
    best: dict[int, list] = {}
    for c in report.kernel_chunks():
        pid = (c[:, 4] >> stream.PID_SHIFT) & stream.PID_MASK
        for p in np.unique(pid).tolist():
            rows = c[pid == p]
            i = int(np.argmin(rows[:, 2]))
            b = best.setdefault(p, [int(rows[i, 2]), int(rows[:, 1].max()), int(rows[i, 4])])
            if int(rows[i, 2]) < b[0]:
                b[0], b[2] = int(rows[i, 2]), int(rows[i, 4])
            b[1] = max(b[1], int(rows[:, 1].max()))
    return with_ranges(report, [(WHOLE, "", s, e, t) for s, e, t in best.values()]), bool(best)


def top_kernels(table, n: int = TOP) -> list[dict]:
    """The n kernels with the most GPU time: name, calls, total_ms, share (of the table's
    summed time), median_us. table: metrics.kernel_table's frame, or its rows as records
    (kernel_table.KernelTable.ranked) in the frame's order."""
    if table is None or len(table) == 0:
        return []
    if not isinstance(table, list):
        table = table[["name", "full_name", "calls", "total_us", "median_us"]].to_dict("records")
    totals = np.array([r["total_us"] for r in table], np.float64)
    total = float(totals.sum())
    fulls: dict = {}
    for r in table:      # a short name several kernels carry
        if not _null(r["name"]) and not _null(r["full_name"]):
            fulls.setdefault(r["name"], set()).add(r["full_name"])
    names = [r["full_name"] if not _null(r["name"]) and len(fulls.get(r["name"], ())) > 1 else r["name"]
             for r in table]
    top = kernel_table.descending(totals, "stable")[:n].tolist()
    return [{"name": names[i], "calls": int(table[i]["calls"]), "total_ms": float(table[i]["total_us"]) / 1e3,
             "share": float(table[i]["total_us"]) / total if total else None,
             "median_us": float(table[i]["median_us"])} for i in top]


def _null(v) -> bool:
    return v is None or v != v


def _union(start: np.ndarray, end: np.ndarray) -> int:
    """Length of the union of intervals sorted by start."""
    if not len(start):
        return 0
    run = np.maximum.accumulate(end)
    prev = np.r_[start[0], run[:-1]]
    return int(np.maximum(0, end - np.maximum(start, prev)).sum())


def gpu_breakdown(ops: pd.DataFrame, kernel_wait_us: float = F.KERNEL_WAIT_US) -> dict:
    """{"devices": [...], "streams": [...]} of the module doc (times in ms)."""
    devices, streams = [], []
    for dev, d in ops.groupby("device", sort=True):
        d = d.sort_values(["start", "end"], kind="stable")
        s, e = d["start"].to_numpy(np.int64), d["end"].to_numpy(np.int64)
        span = int(e.max() - s.min())
        busy = _union(s, e)
        comp = d[(d["kind"] == "kernel") & ~d["name"].str.contains("nccl", case=False)]
        compute = _union(comp["start"].to_numpy(np.int64), comp["end"].to_numpy(np.int64))
        devices.append({"device": int(dev), "gpu_ops": len(d), "kernels": int((d["kind"] == "kernel").sum()),
                        "span_ms": span / 1e6, "busy_ms": busy / 1e6,
                        "idle_frac": (span - busy) / span if span else None,
                        "compute_frac": compute / span if span else None,
                        "non_compute_frac": (busy - compute) / span if span else None})
    for (dev, st), d in ops.groupby(["device", "stream"], sort=True):
        s, e = d["start"].to_numpy(np.int64), d["end"].to_numpy(np.int64)
        ls = d["launch_start"].to_numpy(np.int64)
        prev = e[:-1]
        gap = s[1:] - prev
        host = ls[1:] > prev
        kwait = ~host & (gap <= kernel_wait_us * 1e3)
        idle = {"host_wait": int(gap[host].sum()), "kernel_wait": int(gap[kwait].sum()),
                "other": int(gap[~host & ~kwait].sum())}
        total = sum(idle.values())
        row = {"device": int(dev), "stream": int(st), "gpu_ops": len(d),
               "kernels": int((d["kind"] == "kernel").sum()),
               "kernel_time_ms": int((e - s)[(d["kind"] == "kernel").to_numpy()].sum()) / 1e6,
               "span_ms": int(e.max() - s.min()) / 1e6, "idle_ms": total / 1e6}
        for k, v in idle.items():
            row[f"idle_{k}_ms"] = v / 1e6
            row[f"idle_{k}_ratio"] = v / total if total else None
        streams.append(row)
    return {"devices": devices, "streams": streams}


def distinct(x: np.ndarray) -> list[int]:
    """The sorted distinct values of x (one compare where all are equal, as mostly)."""
    if not len(x):
        return []
    if (x == x[0]).all():
        return [int(x[0])]
    return np.unique(x, return_counts=True)[0].tolist()     # numpy's sort-based path


class Breakdown:
    """gpu_breakdown over GPU activities fed in (start, end, kind, rowid) order, a batch
    at a time (analysis.run.single_pass)."""

    def __init__(self, kernel_wait_us: float):
        self.wait_ns = kernel_wait_us * 1e3
        self.dev: dict[int, list] = {}      # ops, kernels, first start, last end, run, busy, compute run, compute
        self.st: dict[tuple, list] = {}     # ops, kernels, kernel ns, first start, last end, prev end, host, kwait, other

    @staticmethod
    def _union(s, e, run0):
        run = np.maximum.accumulate(np.maximum(e, run0))
        prev = np.empty_like(run)
        prev[0], prev[1:] = run0, run[:-1]
        return int(np.maximum(0, e - np.maximum(s, prev)).sum()), int(run[-1])

    def add(self, s, e, dev, st, ls, kernel, compute) -> None:
        """kernel: which rows are kernels (None: all)."""
        devs = distinct(dev)
        for d in devs:
            m = dev == d if len(devs) > 1 else slice(None)
            ds, de = s[m], e[m]
            a = self.dev.setdefault(d, [0, 0, int(ds[0]), int(de.max()), busy_at.NONE, 0, busy_at.NONE, 0])
            a[0] += len(ds)
            a[1] += len(ds) if kernel is None else int(kernel[m].sum())
            a[2], a[3] = min(a[2], int(ds.min())), max(a[3], int(de.max()))
            u, a[4] = self._union(ds, de, a[4])
            a[5] += u
            c = compute[m]
            if c.all():
                u, a[6] = self._union(ds, de, a[6])
                a[7] += u
            elif c.any():
                u, a[6] = self._union(ds[c], de[c], a[6])
                a[7] += u
        key = dev * (1 << 32) + st if (dev.max(initial=0) < (1 << 30) and st.min(initial=0) >= 0
                                       and st.max(initial=0) < (1 << 32) and dev.min(initial=0) >= 0) else None
        pairs = {(int(a), int(b)) for a, b in zip(dev.tolist(), st.tolist())} if key is None else \
            {(int(k) >> 32, int(k) & 0xFFFFFFFF) for k in distinct(key)}
        for d, t in pairs:
            if len(pairs) == 1:
                ss, se, sl, k = s, e, ls, kernel
            else:
                m = (key == (d << 32) + t) if key is not None else (dev == d) & (st == t)
                ss, se, sl, k = s[m], e[m], ls[m], None if kernel is None else kernel[m]
            a = self.st.setdefault((d, t), [0, 0, 0, int(ss.min()), int(se.max()), None, 0, 0, 0])
            a[0] += len(ss)
            a[1] += len(ss) if k is None else int(k.sum())
            a[2] += int((se - ss).sum()) if k is None else int((se - ss)[k].sum())
            a[3], a[4] = min(a[3], int(ss.min())), max(a[4], int(se.max()))
            prev = np.empty_like(se)
            prev[1:] = se[:-1]
            if a[5] is None:
                ss, sl, prev = ss[1:], sl[1:], prev[1:]
            else:
                prev[0] = a[5]
            a[5] = int(se[-1])
            gap = ss - prev
            host = sl > prev
            kwait = ~host & (gap <= self.wait_ns)
            a[6] += int(gap[host].sum())
            a[7] += int(gap[kwait].sum())
            a[8] += int(gap[~host & ~kwait].sum())

    def result(self) -> dict:
        devices, streams = [], []
        for d in sorted(self.dev):
            ops, kernels, first, last, _, busy, _, compute = self.dev[d]
            span = last - first
            devices.append({"device": int(d), "gpu_ops": ops, "kernels": kernels,
                            "span_ms": span / 1e6, "busy_ms": busy / 1e6,
                            "idle_frac": (span - busy) / span if span else None,
                            "compute_frac": compute / span if span else None,
                            "non_compute_frac": (busy - compute) / span if span else None})
        for (d, t) in sorted(self.st):
            ops, kernels, kns, first, last, _, host, kwait, other = self.st[(d, t)]
            idle = {"host_wait": host, "kernel_wait": kwait, "other": other}
            total = sum(idle.values())
            row = {"device": int(d), "stream": int(t), "gpu_ops": ops, "kernels": kernels,
                   "kernel_time_ms": kns / 1e6, "span_ms": (last - first) / 1e6, "idle_ms": total / 1e6}
            for k, v in idle.items():
                row[f"idle_{k}_ms"] = v / 1e6
                row[f"idle_{k}_ratio"] = v / total if total else None
            streams.append(row)
        return {"devices": devices, "streams": streams}
