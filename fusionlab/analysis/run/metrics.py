"""Per-range metrics of a profile: a normalised Trace (here, in pandas) or a streamed nsys
export (nsys_sqlite.Report: analysis.stream computes the same numbers in one pass;
views() takes either). finish() turns either path's aggregates into the fields below.

Definitions (see ../shared/reference/metrics.md and the report's captions):
- a kernel belongs to a range if the API call that launched it lies inside the range's
  time window, by one of two attribution rules:
  - `process` (the pipeline's own runs): a call of any thread of the range's process.
    PyTorch launches the backward pass from autograd's device thread and CUDA graphs
    replay from a graph launch, so only this rule counts a training step's kernels.
  - `same_thread`: a call of the thread that opened the range (nsys nvtx_gpu_proj_trace).
  A launch call likewise.
- iterations: the ITERATION ranges nested in the range (else the range's instances).
- wall_time_per_iter_ms: summed range duration / iterations (the measure range ends
  after a device synchronize, so this is host-observed time per iteration).
- gpu_time_per_iter_ms: summed kernel duration (end - start) / iterations (the Total
  Time of cuda_gpu_kern_sum restricted to the range).
- kernels_per_iter, launch_calls_per_iter: counts / iterations.
- launch_overhead_ratio: summed launch-API duration / summed kernel duration.
- gpu_busy_fraction: union of the range's kernel intervals, clipped to the range,
  over the range duration (1 - HTA's idle share of the range).
- gpu_busy_per_iter_ms: that union / iterations: the time the GPU ran any kernel. It is
  gpu_time_per_iter_ms when kernels never overlap, less when they do (cuDNN's LSTM runs
  kernels on several streams at once: 0.38 against 0.54 ms summed on the H100).
- gpu_span_per_iter_ms: first kernel start to last kernel end / iterations
  (nvtx_gpu_proj_trace's projected duration).
- median_kernel_us, p10_kernel_us, p90_kernel_us: kernel duration percentiles.

Launch path, per kernel (cuda_kern_exec_trace, join of launch call and kernel on the
correlation id), reported as medians over the range's kernels:
- launch_api_us: API Dur = call end - call start.
- queue_us: Queue Dur = kernel start - call end (negative values dropped, as nsys does).
- launch_delay_us: HTA's launch delay = kernel start - call end, clipped at 0 (the
  median of the clipped values, so it is 0 when most kernels start before their call
  returns).
- short_kernel_share: HTA's short kernels: kernel duration < its launch call's duration
  and the call <= 50 us; the share of the range's kernels that are short.

GPU idle time inside the range (HTA's idle breakdown, applied per range instance on
the merged kernel timeline): each gap before a kernel (from the range start or the end
of the previous kernel) is
- host wait if the kernel's launch call started after the previous kernel ended (the
  GPU ran dry waiting for the CPU);
- kernel wait if not, and the gap is at most KERNEL_WAIT_US (GPU-side launch latency
  between queued kernels);
- other otherwise; the tail from the last kernel's end to the range end (the final
  synchronize) is other too.
idle_{host_wait,kernel_wait,other}_per_iter_ms and *_frac (share of the range); the
three add up to 1 - gpu_busy_fraction.
- bound: "cpu" when the GPU waits on the host for more of the range than it computes
  (idle_host_wait_frac > gpu_busy_fraction), else "gpu".
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fusionlab.analysis.run import occupancy as occ
from fusionlab.analysis.readers.trace import CONFIG_COLUMNS, NO_VALUE, RESOURCE_COLUMNS, Trace
from fusionlab.core import ranges as R

NAN = float("nan")
KERNEL_WAIT_US = 5.0   # gaps up to this between already-queued kernels are "kernel wait"
SHORT_CALL_US = 50.0   # HTA: a short kernel's launch call is at most 50 us


ATTRIBUTIONS = ("process", "same_thread")


def pid_of(tid):
    """The process of an nsys globalTid (PID = (globalTid >> 24) & 0xFFFFFF); a torch
    trace's thread ids are plain (one process per trace) and give 0. Works on a Series."""
    if isinstance(tid, pd.Series):
        return (tid.astype("int64") // (1 << 24)) % (1 << 24)
    return (int(tid) >> 24) & 0xFFFFFF


def _inside(df: pd.DataFrame, r, start_col="start", end_col="end", attribution="same_thread") -> pd.Series:
    """Rows of df whose [start_col, end_col] lies in range r, launched by r's thread or
    (attribution `process`) by any thread of r's process."""
    window = (df[start_col] >= r.start) & (df[end_col] <= r.end)
    if attribution == "process":
        return window & (pid_of(df["tid"]) == pid_of(r.tid))
    if attribution != "same_thread":
        raise ValueError(f"attribution {attribution!r}: one of {ATTRIBUTIONS}")
    return window & (df["tid"] == r.tid)


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


def _instances(trace: Trace, name: str, domain: str | None) -> pd.DataFrame:
    """The range's instances (of that domain, where the trace has one)."""
    rs = trace.ranges[trace.ranges["name"] == name]
    if domain is not None and (trace.ranges["domain"] == domain).any():
        rs = rs[rs["domain"] == domain]
    return rs


def _iterations(trace: Trace, rs: pd.DataFrame, name: str) -> int:
    """ITERATION ranges nested in the instances, else the instances themselves."""
    if name == R.ITERATION:
        return len(rs)
    its = trace.ranges[trace.ranges["name"] == R.ITERATION]
    return sum(int(_inside(its, r).sum()) for r in rs.itertuples()) or len(rs)


def header(name: str, domain: str | None, attribution: str, instances: int) -> dict:
    """The fields every range's metrics start with (all a range without instances has)."""
    return {"range": name, "domain": domain or "", "attribution": attribution, "instances": int(instances)}


def finish(m: dict, device: str, iters: int, dur: int, a: dict) -> dict:
    """The metrics of the module doc from a range's aggregates `a` (integer ns unless
    named otherwise): kernels, kernel_ns, launches, launch_ns, busy_ns, first_start,
    last_end, kernel_median_ns, kernel_p10_ns, kernel_p90_ns (floats, as np.median and
    np.percentile give them), launch_path (launch_path()'s dict), idle (idle_breakdown()'s
    keys, summed over the instances); iters and dur (summed range ns) from the ranges."""
    cuda = device == "cuda"
    n, ktime, na = a["kernels"], a["kernel_ns"], a["launches"]
    api_time = a["launch_ns"] if cuda else None
    m.update({
        "iterations": iters,
        "duration_ms": dur / 1e6,
        "wall_time_per_iter_ms": dur / 1e6 / iters,
        "kernels": int(n),
        "kernels_per_iter": n / iters,
        "launch_calls": int(na) if cuda else None,
        "launch_calls_per_iter": na / iters if cuda else None,
        "kernel_time_ms": ktime / 1e6,
        "gpu_time_per_iter_ms": ktime / 1e6 / iters if cuda else None,
        "cpu_kernel_time_per_iter_ms": ktime / 1e6 / iters if device == "cpu" else None,
        "launch_api_time_ms": api_time / 1e6 if api_time is not None else None,
        "launch_overhead_ratio": (api_time / ktime) if (api_time is not None and ktime) else None,
        "gpu_busy_fraction": a["busy_ns"] / dur if (dur and cuda) else None,
        "gpu_busy_per_iter_ms": a["busy_ns"] / 1e6 / iters if cuda else None,
        "gpu_span_per_iter_ms": ((a["last_end"] - a["first_start"]) / 1e6 / iters) if (n and cuda) else None,
        "median_kernel_us": a["kernel_median_ns"] / 1e3 if n else None,
        "p10_kernel_us": a["kernel_p10_ns"] / 1e3 if n else None,
        "p90_kernel_us": a["kernel_p90_ns"] / 1e3 if n else None,
    })
    if cuda:
        m.update(a["launch_path"])
        for key, v in a["idle"].items():
            m[f"idle_{key}_per_iter_ms"] = v / 1e6 / iters
            m[f"idle_{key}_frac"] = v / dur if dur else None
        if m["gpu_busy_fraction"] is not None and m["idle_host_wait_frac"] is not None:
            m["bound"] = "cpu" if m["idle_host_wait_frac"] > m["gpu_busy_fraction"] else "gpu"
    return m


def range_metrics(trace, name: str, domain: str | None = R.DOMAIN, attribution: str = "process") -> dict:
    """The metrics of the module doc over every instance of range `name`; kernels and launch
    calls attributed by `attribution` (`process` or `same_thread`). `trace`: a Trace (this
    module, in pandas) or a streamed nsys export (nsys_sqlite.Report: analysis.stream)."""
    if not isinstance(trace, Trace):
        return views(trace, [(name, domain)], (attribution,))[0][_key(name, domain)][attribution]
    rs = _instances(trace, name, domain)
    m = header(name, domain, attribution, len(rs))
    if rs.empty:
        return m
    k_mask = pd.Series(False, index=trace.kernels.index)
    a_mask = pd.Series(False, index=trace.api.index)
    busy = 0
    idle = {"host_wait": 0, "kernel_wait": 0, "other": 0}
    for r in rs.itertuples():
        kin = _inside(trace.kernels, r, "launch_start", "launch_end", attribution)
        k_mask |= kin
        a_mask |= _inside(trace.api, r, attribution=attribution) & trace.api["is_launch"].astype(bool)
        kk = trace.kernels[kin]
        busy += union_ns(kk["start"], kk["end"], r.start, r.end)
        for key, v in idle_breakdown(kk, r.start, r.end).items():
            idle[key] += v
    k = trace.kernels[k_mask]
    a = trace.api[a_mask]
    kdur = (k["end"] - k["start"]).astype("int64")
    return finish(m, trace.device, _iterations(trace, rs, name), int((rs["end"] - rs["start"]).sum()), {
        "kernels": len(k), "kernel_ns": int(kdur.sum()), "launches": len(a),
        "launch_ns": int((a["end"] - a["start"]).sum()), "busy_ns": busy,
        "first_start": k["start"].min() if len(k) else None, "last_end": k["end"].max() if len(k) else None,
        "kernel_median_ns": float(np.median(kdur)) if len(k) else None,
        "kernel_p10_ns": float(np.percentile(kdur, 10)) if len(k) else None,
        "kernel_p90_ns": float(np.percentile(kdur, 90)) if len(k) else None,
        "launch_path": launch_path(k), "idle": idle})


def launch_path(k: pd.DataFrame) -> dict:
    """Medians of the launch path of kernels k (see the module doc)."""
    if k.empty:
        return {}
    api = (k["launch_end"] - k["launch_start"]).astype("int64")
    gap = (k["start"] - k["launch_end"]).astype("int64")
    kdur = (k["end"] - k["start"]).astype("int64")
    queue = gap[gap >= 0]
    short = (kdur < api) & (api <= SHORT_CALL_US * 1e3)
    return {
        "launch_api_us": float(np.median(api)) / 1e3,
        "queue_us": float(np.median(queue)) / 1e3 if len(queue) else None,
        "launch_delay_us": float(np.median(gap.clip(lower=0))) / 1e3,
        "short_kernel_share": float(short.mean()),
    }


def idle_breakdown(k: pd.DataFrame, lo: int, hi: int, kernel_wait_us: float = KERNEL_WAIT_US) -> dict:
    """GPU idle ns inside [lo, hi] split into host wait / kernel wait / other (HTA)."""
    out = {"host_wait": 0, "kernel_wait": 0, "other": 0}
    prev_end = lo
    for s, e, ls in sorted(zip(k["start"], k["end"], k["launch_start"])):
        s, e = max(int(s), lo), min(int(e), hi)
        gap = s - prev_end
        if gap > 0:
            if ls > prev_end:
                out["host_wait"] += gap
            elif gap <= kernel_wait_us * 1e3:
                out["kernel_wait"] += gap
            else:
                out["other"] += gap
        prev_end = max(prev_end, e)
    if hi > prev_end:
        out["other"] += hi - prev_end
    return out


RESOURCE_TABLE_COLUMNS = RESOURCE_COLUMNS + ["theoretical_occupancy", "occupancy_limited_by"]
KERNEL_TABLE_COLUMNS = ["name", "full_name", "calls", "calls_per_iter", "total_us", "time_per_iter_us",
                        "median_us"] + RESOURCE_TABLE_COLUMNS


def launch_configs(configs: pd.DataFrame, gpus: dict) -> pd.DataFrame:
    """Per kernel (full_name, the index), the launch configuration that carries the most
    of its GPU time in the range (ties: the most launches, then the smallest configuration),
    with its theoretical occupancy and limiting factor (analysis.occupancy, against the
    limits of the launch's GPU in `gpus`, Trace.gpus). configs: full_name,
    trace.CONFIG_COLUMNS, ns (summed kernel ns) and calls, at any granularity (one row per
    launch, or sums per configuration). A value the export does not record is NA."""
    cols = ["full_name"] + CONFIG_COLUMNS
    if configs.empty:
        return pd.DataFrame(columns=RESOURCE_TABLE_COLUMNS, index=pd.Index([], name="full_name"))
    g = configs.groupby(cols, sort=False)[["ns", "calls"]].sum().reset_index()
    g = g.sort_values(["full_name", "ns", "calls"] + CONFIG_COLUMNS,
                      ascending=[True, False, False] + [True] * len(CONFIG_COLUMNS), kind="stable")
    best = g.drop_duplicates("full_name").set_index("full_name")
    only = next(iter(gpus.values())) if len(gpus) == 1 else None
    values = {c: best[c].where(best[c] != NO_VALUE) for c in CONFIG_COLUMNS}
    results = [occ.occupancy(t, r, ss, ds, gpus.get(int(dev), only) if dev == dev else only)
               for dev, t, r, ss, ds in zip(*(values[c].tolist() for c in
                                               ("device_id", "block_threads", "registers_per_thread",
                                                "static_smem_bytes", "dynamic_smem_bytes")))]
    out = pd.DataFrame({c: values[c].astype("Int64") for c in RESOURCE_COLUMNS}, index=best.index)
    out["theoretical_occupancy"] = [float(o.occupancy) for o in results]
    out["occupancy_limited_by"] = [o.limited_by for o in results]
    return out


def with_resources(table: pd.DataFrame, configs: pd.DataFrame | None) -> pd.DataFrame:
    """A kernel table with RESOURCE_TABLE_COLUMNS from launch_configs' frame (NA where a
    kernel has none, or configs is None: a profile without launch configurations)."""
    t = table.copy()
    best = configs if configs is not None else launch_configs(pd.DataFrame(), {})
    for c in RESOURCE_COLUMNS:
        t[c] = t["full_name"].map(best[c]).astype("Int64")
    t["theoretical_occupancy"] = t["full_name"].map(best["theoretical_occupancy"]).astype(float)
    t["occupancy_limited_by"] = t["full_name"].map(best["occupancy_limited_by"]).astype(object)
    return t


def kernel_table(trace, name: str = R.MEASURE, domain: str | None = R.DOMAIN,
                 attribution: str = "process") -> pd.DataFrame:
    """The kernels launched inside the range, one row per kernel (its demangled name, so
    eager's sin and cos kernels stay apart though both are `vectorized_elementwise_kernel`):
    calls, total and median duration (cuda_gpu_kern_sum restricted to the range), and the
    launch configuration of its launches in the range that carry the most GPU time, with
    its theoretical occupancy (launch_configs; NA without: torch.profiler traces).
    `trace`: a Trace or a streamed nsys export (as range_metrics)."""
    cols = KERNEL_TABLE_COLUMNS
    if not isinstance(trace, Trace):
        return views(trace, [], (), [(name, domain, attribution)])[1][(name, domain, attribution)]
    rs = _instances(trace, name, domain)
    if rs.empty:
        return pd.DataFrame(columns=cols)
    mask = pd.Series(False, index=trace.kernels.index)
    for r in rs.itertuples():
        mask |= _inside(trace.kernels, r, "launch_start", "launch_end", attribution)
    iters = _iterations(trace, rs, name)
    k = trace.kernels[mask].assign(dur=lambda d: (d["end"] - d["start"]) / 1e3)
    if k.empty:
        return pd.DataFrame(columns=cols)
    g = k.groupby("full_name", sort=False).agg(name=("name", "first"), calls=("dur", "size"),
                                         total_us=("dur", "sum"), median_us=("dur", "median")).reset_index()
    g["calls_per_iter"] = g["calls"] / iters
    g["time_per_iter_us"] = g["total_us"] / iters
    configs = None
    if set(CONFIG_COLUMNS) <= set(k.columns):
        configs = launch_configs(k.assign(ns=(k["end"] - k["start"]).astype("int64"), calls=1)[
            ["full_name"] + CONFIG_COLUMNS + ["ns", "calls"]], trace.gpus)
    return with_resources(g, configs)[cols].sort_values("total_us", ascending=False, ignore_index=True)


def _key(name: str, domain: str | None) -> str:
    return f"{domain}:{name}" if domain else name


def range_keys(trace) -> list[tuple[str, str | None]]:
    """(name, domain or None) of every range name of the trace, by domain then name."""
    return [(name, domain or None) for (domain, name), _ in trace.ranges.groupby(["domain", "name"], sort=True)]


def all_range_metrics(trace, attribution: str = "process") -> dict:
    """One object per range name (domain:name where the range has a domain)."""
    if not isinstance(trace, Trace):
        return {k: v[attribution] for k, v in views(trace, None, (attribution,))[0].items()}
    return {_key(name, domain): range_metrics(trace, name, domain, attribution) for name, domain in range_keys(trace)}


def views(trace, targets=None, attributions=ATTRIBUTIONS, tables=()) -> tuple[dict, dict]:
    """Metrics of ranges `targets` ((name, domain) pairs; None: every range name) under each
    attribution, and kernel tables of `tables` ((name, domain, attribution) triples):
    ({"domain:name": {attribution: metrics}}, {(name, domain, attribution): kernel table}).
    A streamed nsys export (nsys_sqlite.Report) is read once for all of them
    (analysis.stream); a Trace range by range, in pandas."""
    targets = range_keys(trace) if targets is None else list(targets)
    if not isinstance(trace, Trace):
        from fusionlab.analysis.run import stream
        return stream.views(trace, targets, attributions, tables)
    return ({_key(n, d): {a: range_metrics(trace, n, d, a) for a in attributions} for n, d in targets},
            {(n, d, a): kernel_table(trace, n, d, a) for n, d, a in tables})


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
