"""The metrics of analysis.run.metrics computed in pandas over a Trace, range by range:
the oracle the streamed implementation (analysis.run.stream) is compared with, exactly
(test_stream.py). Each range's aggregates come from boolean masks over the Trace's frames;
analysis.run.fields turns them into the metrics and kernel tables."""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.readers.trace import CONFIG_COLUMNS, Trace
from fusionlab.analysis.run import fields as F
from fusionlab.core import ranges as R


def pid_of(tid):
    """The process of an nsys globalTid (PID = (globalTid >> 24) & 0xFFFFFF); a torch
    trace's thread ids are plain (one process per trace) and give 0. Works on a Series."""
    if isinstance(tid, pd.Series):
        return (tid.astype("int64") // (1 << 24)) % (1 << 24)
    return (int(tid) >> 24) & 0xFFFFFF


def inside(df: pd.DataFrame, r, start_col="start", end_col="end", attribution="same_thread") -> pd.Series:
    """Rows of df whose [start_col, end_col] lies in range r, launched by r's thread or
    (attribution `process`) by any thread of r's process."""
    window = (df[start_col] >= r.start) & (df[end_col] <= r.end)
    if attribution == "process":
        return window & (pid_of(df["tid"]) == pid_of(r.tid))
    if attribution != "same_thread":
        raise ValueError(f"attribution {attribution!r}: one of {F.ATTRIBUTIONS}")
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


def iterations(trace: Trace, rs: pd.DataFrame, name: str) -> int:
    """ITERATION ranges nested in the instances, else the instances themselves."""
    if name == R.ITERATION:
        return len(rs)
    its = trace.ranges[trace.ranges["name"] == R.ITERATION]
    return sum(int(inside(its, r).sum()) for r in rs.itertuples()) or len(rs)


def launch_path(k: pd.DataFrame) -> dict:
    """Medians of the launch path of kernels k (metrics' module doc)."""
    if k.empty:
        return {}
    api = (k["launch_end"] - k["launch_start"]).astype("int64")
    gap = (k["start"] - k["launch_end"]).astype("int64")
    kdur = (k["end"] - k["start"]).astype("int64")
    queue = gap[gap >= 0]
    short = (kdur < api) & (api <= F.SHORT_CALL_US * 1e3)
    return {
        "launch_api_us": float(np.median(api)) / 1e3,
        "queue_us": float(np.median(queue)) / 1e3 if len(queue) else None,
        "launch_delay_us": float(np.median(gap.clip(lower=0))) / 1e3,
        "short_kernel_share": float(short.mean()),
    }


def idle_breakdown(k: pd.DataFrame, lo: int, hi: int, kernel_wait_us: float = F.KERNEL_WAIT_US) -> dict:
    """GPU idle ns inside [lo, hi] split into host wait / kernel wait / other (HTA)."""
    out = {"host_wait": 0, "kernel_wait": 0, "other": 0}
    prev_end = lo
    for s, e, ls in sorted(zip(k["start"], k["end"], k["launch_start"])):
        s, e = min(max(int(s), lo), hi), min(int(e), hi)
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


def range_metrics(trace: Trace, name: str, domain: str | None = R.DOMAIN, attribution: str = "process") -> dict:
    """metrics.range_metrics, in pandas."""
    rs = F.instances(trace, name, domain)
    m = F.header(name, domain, attribution, len(rs))
    if rs.empty:
        return m
    k_mask = pd.Series(False, index=trace.kernels.index)
    a_mask = pd.Series(False, index=trace.api.index)
    busy = occupied = 0
    idle = {"host_wait": 0, "kernel_wait": 0, "other": 0}
    kpid = pid_of(trace.kernels["tid"])
    for r in rs.itertuples():
        mine = trace.kernels[kpid == pid_of(r.tid)]       # every kernel of the range's process
        occupied += union_ns(mine["start"], mine["end"], r.start, r.end)
        kin = inside(trace.kernels, r, "launch_start", "launch_end", attribution)
        k_mask |= kin
        a_mask |= inside(trace.api, r, attribution=attribution) & trace.api["is_launch"].astype(bool)
        kk = trace.kernels[kin]
        busy += union_ns(kk["start"], kk["end"], r.start, r.end)
        for key, v in idle_breakdown(kk, r.start, r.end).items():
            idle[key] += v
    k = trace.kernels[k_mask]
    a = trace.api[a_mask]
    kdur = (k["end"] - k["start"]).astype("int64")
    return F.finish(m, trace.device, iterations(trace, rs, name), int((rs["end"] - rs["start"]).sum()), {
        "kernels": len(k), "kernel_ns": int(kdur.sum()), "launches": len(a),
        "launch_ns": int((a["end"] - a["start"]).sum()), "busy_ns": busy,
        "first_start": k["start"].min() if len(k) else None, "last_end": k["end"].max() if len(k) else None,
        "kernel_durations": _hist(kdur.to_numpy()),
        "launch_path": launch_path(k), "idle": idle, "other_work_ns": occupied - busy})


def _hist(durations: np.ndarray):
    """The exact histogram of durations (sorted distinct values and counts), as
    fields.finish takes them."""
    from fusionlab.analysis.run.hist import Hist
    h = Hist()
    v, c = np.unique(durations.astype(np.int64), return_counts=True)
    h.v, h.c = v, c.astype(np.int64)
    return h


def kernel_table(trace: Trace, name: str = R.MEASURE, domain: str | None = R.DOMAIN,
                 attribution: str = "process") -> pd.DataFrame:
    """metrics.kernel_table, in pandas."""
    cols = F.KERNEL_TABLE_COLUMNS
    rs = F.instances(trace, name, domain)
    if rs.empty:
        return pd.DataFrame(columns=cols)
    mask = pd.Series(False, index=trace.kernels.index)
    for r in rs.itertuples():
        mask |= inside(trace.kernels, r, "launch_start", "launch_end", attribution)
    iters = iterations(trace, rs, name)
    k = trace.kernels[mask].assign(dur=lambda d: (d["end"] - d["start"]) / 1e3)
    if k.empty:
        return pd.DataFrame(columns=cols)
    g = k.groupby("full_name", sort=False).agg(name=("name", "first"), calls=("dur", "size"),
                                         total_us=("dur", "sum"), median_us=("dur", "median")).reset_index()
    g["calls_per_iter"] = g["calls"] / iters
    g["time_per_iter_us"] = g["total_us"] / iters
    configs = None
    if set(CONFIG_COLUMNS) <= set(k.columns):
        configs = F.launch_configs(k.assign(ns=(k["end"] - k["start"]).astype("int64"), calls=1)[
            ["full_name"] + CONFIG_COLUMNS + ["ns", "calls"]], trace.gpus)
    return F.with_resources(g, configs)[cols].sort_values("total_us", ascending=False, ignore_index=True)


def views(trace: Trace, targets=None, attributions=F.ATTRIBUTIONS, tables=()) -> tuple[dict, dict]:
    """metrics.views, in pandas."""
    targets = F.range_keys(trace) if targets is None else list(targets)
    return ({F.key(n, d): {a: range_metrics(trace, n, d, a) for a in attributions} for n, d in targets},
            {(n, d, a): kernel_table(trace, n, d, a) for n, d, a in tables})


def rows_in_measure_range(path: str, sql: str) -> list[tuple]:
    """The rows of sql (parameters :start, :end, :pid) over an nsys export, with the
    `measure` NVTX range's start and end and its process id, in plain SQL."""
    import sqlite3
    con = sqlite3.connect(path)
    (start, end, tid), = con.execute(
        "SELECT e.start, e.end, e.globalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
        "WHERE coalesce(e.text, s.value) = 'measure'").fetchall()
    rows = con.execute(sql, {"start": start, "end": end, "pid": (tid >> 24) & 0xFFFFFF}).fetchall()
    con.close()
    return rows
