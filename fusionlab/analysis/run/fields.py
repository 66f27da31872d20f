"""The fields of a range's metrics (analysis.run.metrics' module doc defines them) and of
its kernel table, from the aggregates the streamed pass (analysis.run.stream) collects;
and the ranges' keys and instances.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from fusionlab.analysis.readers.trace import CONFIG_COLUMNS, NO_VALUE, RESOURCE_COLUMNS, Instances
from fusionlab.analysis.run import kernel_stats
from fusionlab.analysis.run import occupancy as occ
from fusionlab.core import ranges as R

if TYPE_CHECKING:
    import pandas as pd
    from fusionlab.analysis.readers.trace import RangeTable

KERNEL_WAIT_US = 5.0   # gaps up to this between already-queued kernels are "kernel wait"
HTA_KERNEL_WAIT_US = 30.0   # HTA's default (get_idle_time_breakdown's consecutive_kernel_delay)
SHORT_CALL_US = 50.0   # HTA: a short kernel's launch call is at most 50 us
ATTRIBUTIONS = ("process", "same_thread")

RESOURCE_TABLE_COLUMNS = RESOURCE_COLUMNS + ["theoretical_occupancy", "occupancy_limited_by"]
KERNEL_TABLE_COLUMNS = ["name", "full_name", "calls", "calls_per_iter", "total_us", "time_per_iter_us",
                        "median_us"] + RESOURCE_TABLE_COLUMNS


def key(name: str, domain: str | None) -> str:
    """A range name's key in the metrics: domain:name where the range has a domain."""
    return f"{domain}:{name}" if domain else name


def range_keys(trace) -> list[tuple[str, str | None]]:
    """(name, domain or None) of every range name of the trace, by domain then name."""
    table = getattr(trace, "range_table", None)
    if table is not None:
        return table.keys()
    return [(name, domain or None) for (domain, name), _ in trace.ranges.groupby(["domain", "name"], sort=True)]


def instances(trace, name: str, domain: str | None) -> pd.DataFrame | Instances:
    """The range's instances (of that domain, where the trace has one): rows of the trace's
    ranges, or trace.Instances where the ranges are a RangeTable (range_table)."""
    table = getattr(trace, "range_table", None)
    if table is not None:
        return table.instances(name, domain)
    rs = trace.ranges[trace.ranges["name"] == name]
    if domain is not None and (trace.ranges["domain"] == domain).any():
        rs = rs[rs["domain"] == domain]
    return rs


def header(name: str, domain: str | None, attribution: str, instances: int) -> dict:
    """The fields every range's metrics start with (all a range without instances has)."""
    return {"range": name, "domain": domain or "", "attribution": attribution, "instances": int(instances)}


NO_GPU_WORK, WAITING = "no GPU work", "waiting on the GPU"


def verdict(kernels: int, busy: float, host_wait: float, other_work: float, window: float) -> str:
    """What bounds a range over a window (times or shares of it): `busy`, the union of its
    own kernels; `host_wait`, HTA's host wait between them; `other_work`, the time the GPU
    ran other work of the process (earlier launches, other threads') and none of the
    range's. Without kernels of its own: WAITING where that other work fills more than half
    the window, else NO_GPU_WORK. With kernels: WAITING where the other work exceeds both
    its own busy time and the host wait; else "cpu" where the host wait exceeds the busy
    time (the GPU ran dry waiting for the host), else "gpu"."""
    if not kernels:
        return WAITING if other_work > window / 2 else NO_GPU_WORK
    if other_work > busy and other_work >= host_wait:
        return WAITING
    return "cpu" if host_wait > busy else "gpu"


def finish(m: dict, device: str, iters: int, dur: int, a: dict) -> dict:
    """The metrics of analysis.run.metrics' module doc from a range's aggregates `a`
    (integer ns unless named otherwise): kernels, kernel_ns, launches, launch_ns, busy_ns,
    first_start, last_end, kernel_durations (a hist.Hist of the kernels' ns: the
    kernel_stats records' input), launch_path (launch_api_us, queue_us,
    launch_delay_us, short_kernel_share; {} without kernels), idle (host_wait, kernel_wait,
    other, summed over the instances), other_work_ns (busy_at: the time the GPU ran other
    work of the process and none of the range's; absent where not known); iters and dur
    (summed range ns) from the ranges."""
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
        **kernel_stats.values(a["kernel_durations"]),
    })
    if cuda:
        m.update(a["launch_path"])
        for k, v in a["idle"].items():
            m[f"idle_{k}_per_iter_ms"] = v / 1e6 / iters
            m[f"idle_{k}_frac"] = v / dur if dur else None
        other = a.get("other_work_ns")
        m["gpu_other_work_frac"] = other / dur if (dur and other is not None) else None
        if dur:
            m["bound"] = verdict(n, a["busy_ns"], a["idle"]["host_wait"], other or 0, dur)
    return m


def launch_configs(configs: pd.DataFrame, gpus: dict) -> pd.DataFrame:
    """Per kernel (full_name, the index), the launch configuration that carries the most
    of its GPU time in the range (ties: the most launches, then the smallest configuration),
    with its theoretical occupancy and limiting factor (analysis.run.occupancy, against the
    limits of the launch's GPU in `gpus`, Trace.gpus). configs: full_name,
    trace.CONFIG_COLUMNS, ns (summed kernel ns) and calls, at any granularity (one row per
    launch, or sums per configuration). A value the export does not record is NA."""
    import pandas as pd
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
    import pandas as pd
    t = table.copy()
    best = configs if configs is not None else launch_configs(pd.DataFrame(), {})
    for c in RESOURCE_COLUMNS:
        t[c] = t["full_name"].map(best[c]).astype("Int64")
    t["theoretical_occupancy"] = t["full_name"].map(best["theoretical_occupancy"]).astype(float)
    t["occupancy_limited_by"] = t["full_name"].map(best["occupancy_limited_by"]).astype(object)
    return t


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


def instance_arrays(rs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """start, end and tid of a range's instances (fields.instances: rows of a DataFrame, or
    trace.Instances) as int64 arrays, in their order."""
    if isinstance(rs, Instances):
        return rs.start, rs.end, rs.tid
    return rs["start"].to_numpy(np.int64), rs["end"].to_numpy(np.int64), rs["tid"].to_numpy(np.int64)


def iterations(ranges: RangeTable, rs, name: str) -> int:
    """ITERATION ranges of each instance's thread inside it, summed over the instances (the
    ITERATION ranges nested in the range), else the instances."""
    if name == R.ITERATION:
        return len(rs)
    i = ranges.rows(R.ITERATION)
    o = np.argsort(ranges.start[i], kind="stable")
    st, en, tids = ranges.start[i][o], ranges.end[i][o], ranges.tid[i][o]
    by_tid = {t: (st[tids == t], en[tids == t]) for t in np.unique(tids, return_counts=True)[0].tolist()}
    total = 0
    for lo, hi, tid in zip(*(x.tolist() for x in instance_arrays(rs))):
        if tid not in by_tid:
            continue
        s, e = by_tid[tid]
        a, b = np.searchsorted(s, lo, side="left"), np.searchsorted(s, hi, side="right")
        total += int((e[a:b] <= hi).sum())
    return total or len(rs)
