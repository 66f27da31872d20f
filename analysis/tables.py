"""Tidy tables of a sweep: one row per run, a long table of metrics, and speedups.

speedup (per model, batch, mode, dtype, backend) = median eager time / median variant
time over repeats, as the Inductor benchmark harness defines it; slowdowns stay < 1.
Runs whose status is not ok (incorrect, oom, error, unsupported) get no speedup.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd

from analysis.run_metrics import KEYS

ID = list(KEYS) + ["backend", "device"]
METRICS = ["wall_time_per_iter_ms", "gpu_time_per_iter_ms", "cpu_kernel_time_per_iter_ms",
           "kernels_per_iter", "launch_calls_per_iter", "launch_overhead_ratio",
           "gpu_busy_fraction", "gpu_span_per_iter_ms", "median_kernel_us",
           "runner_wall_time_per_iter_ms", "cuda_event_time_per_iter_ms",
           "compile_latency_s", "peak_memory_bytes", "max_abs_err"]


def runs_table(metric_files: list[str]) -> pd.DataFrame:
    rows = []
    for p in metric_files:
        with open(p) as f:
            rows.append(json.load(f))
    df = pd.DataFrame(rows)
    for c in ID + ["status", "reason"] + METRICS:
        if c not in df:
            df[c] = np.nan
    return df.sort_values(ID, ignore_index=True)


def long_table(runs: pd.DataFrame) -> pd.DataFrame:
    present = [m for m in METRICS if m in runs]
    long = runs.melt(id_vars=ID + ["status"], value_vars=present, var_name="metric", value_name="value")
    return long.dropna(subset=["value"]).reset_index(drop=True)


def speedups(runs: pd.DataFrame) -> pd.DataFrame:
    group = ["model", "batch", "mode", "dtype", "backend", "device"]
    ok = runs[runs["status"] == "ok"]
    med = ok.groupby(group + ["variant"], dropna=False)[
        ["wall_time_per_iter_ms", "gpu_time_per_iter_ms", "kernels_per_iter"]].median().reset_index()
    eager = med[med["variant"] == "eager"].drop(columns="variant").rename(
        columns=lambda c: c if c in group else f"eager_{c}")
    out = runs[group + ["variant"]].drop_duplicates().merge(med, on=group + ["variant"], how="left")
    out = out.merge(eager, on=group, how="left")
    out["speedup_wall"] = out["eager_wall_time_per_iter_ms"] / out["wall_time_per_iter_ms"]
    out["speedup_gpu"] = out["eager_gpu_time_per_iter_ms"] / out["gpu_time_per_iter_ms"]
    out["kernel_reduction"] = out["eager_kernels_per_iter"] / out["kernels_per_iter"]
    status = runs.groupby(group + ["variant"], dropna=False)["status"].agg(
        lambda s: "ok" if (s == "ok").all() else ",".join(sorted(set(s)))).reset_index()
    out = out.merge(status, on=group + ["variant"], how="left")
    return out.sort_values(group + ["variant"], ignore_index=True)


def write(df: pd.DataFrame, csv: str, parquet: str | None = None) -> None:
    for path in (csv, parquet):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = csv + ".tmp"
    df.to_csv(tmp, index=False)
    os.replace(tmp, csv)
    if parquet:
        tmp = parquet + ".tmp"
        df.to_parquet(tmp, index=False)
        os.replace(tmp, parquet)
