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
- top_kernels(table): the kernels with the most GPU time, from the kernel table, each by
  its short name, or its full (demangled) name where kernels of different full names share
  the short one (eager's vectorized_elementwise_kernel).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.readers.trace import Chunks, Trace
from fusionlab.analysis.run import fields as F
from fusionlab.analysis.run import stream

WHOLE = "(whole report)"
TOP = 10     # top_kernels' rows


class _WithRanges:
    """A profile (Chunks or nsys_sqlite.Report) with other ranges."""

    def __init__(self, report, ranges: pd.DataFrame):
        self._report, self.ranges = report, ranges

    def __getattr__(self, name):
        return getattr(self._report, name)


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
    extra = pd.DataFrame([(WHOLE, "", s, e, t) for s, e, t in best.values()], columns=report.ranges.columns)
    ranges = pd.concat([report.ranges, extra], ignore_index=True) if len(extra) else report.ranges
    return _WithRanges(report, ranges.astype({"start": "int64", "end": "int64", "tid": "int64"})), bool(best)


def top_kernels(table: pd.DataFrame, n: int = TOP) -> list[dict]:
    """The n kernels with the most GPU time: name, calls, total_ms, share (of the table's
    summed time), median_us."""
    if table is None or table.empty:
        return []
    total = float(table["total_us"].sum())
    shared = table.groupby("name")["full_name"].transform("nunique") > 1   # a short name several kernels carry
    table = table.assign(name=table["name"].where(~shared, table["full_name"]))
    t = table.sort_values("total_us", ascending=False, kind="stable").head(n)
    return [{"name": r.name, "calls": int(r.calls), "total_ms": float(r.total_us) / 1e3,
             "share": float(r.total_us) / total if total else None, "median_us": float(r.median_us)}
            for r in t.itertuples()]


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
