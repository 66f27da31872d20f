"""Per-range metrics of a normalised Trace.

Definitions (see ../shared/reference/metrics.md and the report's captions):
- a kernel belongs to a range if the API call that launched it lies inside the range
  on the same thread (nsys nvtx_gpu_proj_trace); a launch call likewise.
- iterations: the ITERATION ranges nested in the range (else the range's instances).
- wall_time_per_iter_ms: summed range duration / iterations (the measure range ends
  after a device synchronize, so this is host-observed time per iteration).
- gpu_time_per_iter_ms: summed kernel duration (end - start) / iterations (the Total
  Time of cuda_gpu_kern_sum restricted to the range).
- kernels_per_iter, launch_calls_per_iter: counts / iterations.
- launch_overhead_ratio: summed launch-API duration / summed kernel duration.
- gpu_busy_fraction: union of the range's kernel intervals, clipped to the range,
  over the range duration (1 - HTA's idle share of the range).
- gpu_span_per_iter_ms: first kernel start to last kernel end / iterations
  (nvtx_gpu_proj_trace's projected duration).
- median_kernel_us: median kernel duration.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.trace import Trace
from experiments import ranges as R

NAN = float("nan")


def _inside(df: pd.DataFrame, r, start_col="start", end_col="end") -> pd.Series:
    return (df[start_col] >= r.start) & (df[end_col] <= r.end) & (df["tid"] == r.tid)


def union_ns(starts, ends, lo=None, hi=None) -> int:
    """Length of the union of intervals [start, end), optionally clipped to [lo, hi]."""
    iv = sorted(zip(starts, ends))
    total, cur_s, cur_e = 0, None, None
    for s, e in iv:
        if lo is not None:
            s = max(s, lo)
        if hi is not None:
            e = min(e, hi)
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return int(total)


def range_metrics(trace: Trace, name: str, domain: str | None = R.DOMAIN) -> dict:
    rs = trace.ranges[trace.ranges["name"] == name]
    if domain is not None and (trace.ranges["domain"] == domain).any():
        rs = rs[rs["domain"] == domain]
    m = {"range": name, "domain": domain or "", "instances": int(len(rs))}
    if rs.empty:
        return m
    its = trace.ranges[(trace.ranges["name"] == R.ITERATION)]
    k_mask = pd.Series(False, index=trace.kernels.index)
    a_mask = pd.Series(False, index=trace.api.index)
    n_iter, busy = 0, 0
    for r in rs.itertuples():
        kin = _inside(trace.kernels, r, "launch_start", "launch_end")
        k_mask |= kin
        a_mask |= _inside(trace.api, r) & trace.api["is_launch"].astype(bool)
        n_iter += int(_inside(its, r).sum()) if name != R.ITERATION else 1
        kk = trace.kernels[kin]
        busy += union_ns(kk["start"], kk["end"], r.start, r.end)
    iters = n_iter or len(rs)
    dur = int((rs["end"] - rs["start"]).sum())
    k = trace.kernels[k_mask]
    a = trace.api[a_mask]
    kdur = (k["end"] - k["start"]).astype("int64")
    ktime = int(kdur.sum())
    api_time = int((a["end"] - a["start"]).sum()) if trace.device == "cuda" else None
    m.update({
        "iterations": iters,
        "duration_ms": dur / 1e6,
        "wall_time_per_iter_ms": dur / 1e6 / iters,
        "kernels": int(len(k)),
        "kernels_per_iter": len(k) / iters,
        "launch_calls": int(len(a)) if trace.device == "cuda" else None,
        "launch_calls_per_iter": len(a) / iters if trace.device == "cuda" else None,
        "kernel_time_ms": ktime / 1e6,
        "gpu_time_per_iter_ms": ktime / 1e6 / iters if trace.device == "cuda" else None,
        "cpu_kernel_time_per_iter_ms": ktime / 1e6 / iters if trace.device == "cpu" else None,
        "launch_api_time_ms": api_time / 1e6 if api_time is not None else None,
        "launch_overhead_ratio": (api_time / ktime) if (api_time is not None and ktime) else None,
        "gpu_busy_fraction": busy / dur if (dur and trace.device == "cuda") else None,
        "gpu_span_per_iter_ms": ((k["end"].max() - k["start"].min()) / 1e6 / iters)
        if (len(k) and trace.device == "cuda") else None,
        "median_kernel_us": float(np.median(kdur)) / 1e3 if len(k) else None,
    })
    return m


def all_range_metrics(trace: Trace) -> dict:
    """One object per range name (domain:name where the range has a domain)."""
    out = {}
    for (domain, name), _ in trace.ranges.groupby(["domain", "name"], sort=True):
        key = f"{domain}:{name}" if domain else name
        out[key] = range_metrics(trace, name, domain or None)
    return out


def clean(d: dict) -> dict:
    """JSON-safe: NaN and numpy scalars to plain Python (None for missing)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, (np.floating, float)):
            v = None if math.isnan(float(v)) else float(v)
        elif isinstance(v, np.integer):
            v = int(v)
        out[k] = v
    return out
