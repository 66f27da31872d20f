"""Measured memory traffic in the sweep's tables (Nsight Compute, docs/ncu.md), beside the
model's bytes (experiments.cost).

- runs: analysis.run.traffic's per-iteration fields of the run's configuration (measured
  on its repeat 0, the same value on every repeat's row), and
  dram_over_fused = dram_bytes_measured / bytes_fused,
  dram_over_unfused = dram_bytes_measured / bytes_unfused,
  l2_over_unfused = l2_bytes_measured / bytes_unfused,
  flops_measured_over_model = flops_measured / (flops + flops_pointwise),
  measured_intensity = flops_measured / dram_bytes_measured,
  copy_bandwidth_frac_measured = copy_bandwidth_frac x dram_over_fused (measured DRAM
  bytes per GPU time over the measured copy bandwidth),
  bytes_source: `measured` where the run has measured DRAM bytes, else `model`;
  bytes_replay: how the per-kernel bytes were measured (`one pass`, or
  `kernel replay, N passes`).
  Without measured values the columns are empty and ncu_note says why.
- speedups: dram_bytes_measured, l2_bytes_measured and the bytes fusion removed:
  bytes_removed_measured = eager's dram_bytes_measured - the variant's,
  l2_bytes_removed_measured (the same in L2 bytes), bytes_removed_model =
  bytes_unfused - bytes_fused (the model's ideal: every intermediate kept on chip).
- kernels: traffic.csv's per-kernel columns joined on the kernel's demangled name
  (readers.ncu_report.kernel_key: scopes and integer casts left out),
  and ncu_over_nsys_time = the kernel's duration under ncu / nsys's per iteration.
- memory_access_table: source 000's Table 8.1 (the MLP's reads ~ BF + FH + 3BH + 2H + 2B,
  writes ~ 2BH + 2B elements) beside mlp_small eager's measured bytes.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from fusionlab.analysis.readers import ncu_report
from fusionlab.analysis.run import traffic as run_traffic
from fusionlab.core.io import read_json

CONFIG = ["model", "variant", "batch", "size", "mode", "dtype", "backend", "device"]
RUN_COLUMNS = run_traffic.RUN_FIELDS + ["ncu_status", "ncu_note", "bytes_replay"]
RATIOS = ["dram_over_fused", "dram_over_unfused", "l2_over_unfused", "flops_measured_over_model",
          "measured_intensity", "copy_bandwidth_frac_measured", "bytes_source"]
KERNEL_COLUMNS = [c for c in run_traffic.KERNEL_COLUMNS if c not in ("full_name", "name")] + ["ncu_over_nsys_time"]
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8, "amp_bfloat16": 4}


NOT_RUN = ("no Nsight Compute record for this configuration: its step did not run (the sweep stopped "
           "before it), or its files (ncu.json, or both the .ncu-rep report and traffic.json) were not copied")


def traffic_files(metric_files) -> list[tuple[str, str, str]]:
    """(metrics.json, traffic.json, traffic.csv) of the runs that have a traffic.json beside
    their metrics.json (their run folder)."""
    out = []
    for m in metric_files:
        d = os.path.dirname(m)
        j = os.path.join(d, run_traffic.RUN_FILE)
        if os.path.exists(j):
            out.append((m, j, os.path.join(d, run_traffic.KERNEL_FILE)))
    return out


def _keys(metrics_json: str) -> dict:
    row = read_json(metrics_json) or {}
    return {k: row.get(k) for k in CONFIG}


def add_to_runs(runs: pd.DataFrame, files, note: str | None = None) -> pd.DataFrame:
    """runs with the measured columns (module doc); `note` says why there are none where no
    run has a traffic.json."""
    recs = [{**_keys(m), **(read_json(j) or {})} for m, j, _ in files]
    runs = runs.drop(columns=[c for c in RUN_COLUMNS + RATIOS if c in runs])
    if recs:
        t = pd.DataFrame(recs).reindex(columns=CONFIG + RUN_COLUMNS).drop_duplicates(CONFIG)
        t["size"] = t["size"].fillna("default") if "size" in t else "default"
        on = [c for c in CONFIG if c in runs]
        left = runs.assign(size=runs["size"].fillna("default")) if "size" in runs else runs
        runs = left.merge(t, on=on, how="left")
        absent = runs["ncu_status"].isna() & (runs["status"] == "ok" if "status" in runs else True)
        runs["ncu_status"] = runs["ncu_status"].astype(object).where(~absent, "not run")
        runs["ncu_note"] = runs["ncu_note"].astype(object).where(~absent, NOT_RUN)
    else:
        for c in RUN_COLUMNS:
            runs[c] = np.nan
    if note:
        runs["ncu_note"] = runs["ncu_note"].astype(object).where(runs["ncu_note"].notna(), note)
    for c in run_traffic.RUN_FIELDS:
        runs[c] = pd.to_numeric(runs[c], errors="coerce")
    model_flops = runs["flops"].fillna(0) + runs.get("flops_pointwise", pd.Series(0, index=runs.index)).fillna(0)
    runs["dram_over_fused"] = runs["dram_bytes_measured"] / runs["bytes_fused"]
    runs["dram_over_unfused"] = runs["dram_bytes_measured"] / runs["bytes_unfused"]
    runs["l2_over_unfused"] = runs["l2_bytes_measured"] / runs["bytes_unfused"]
    runs["flops_measured_over_model"] = runs["flops_measured"] / model_flops.where(model_flops > 0)
    runs["measured_intensity"] = runs["flops_measured"] / runs["dram_bytes_measured"].where(
        runs["dram_bytes_measured"] > 0)
    frac = runs["copy_bandwidth_frac"] if "copy_bandwidth_frac" in runs else np.nan
    runs["copy_bandwidth_frac_measured"] = frac * runs["dram_over_fused"]
    runs["bytes_source"] = np.where(runs["dram_bytes_measured"].notna(), "measured", "model")
    return runs


def add_to_speedups(sp: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """speedups with the measured bytes and the bytes fusion removed (module doc)."""
    group = [c for c in CONFIG if c in sp and c in runs]
    cols = ["dram_bytes_measured", "l2_bytes_measured", "bytes_fused", "bytes_unfused"]
    have = [c for c in cols if c in runs]
    per = runs.assign(size=runs["size"].fillna("default")).groupby(group, dropna=False)[have].median().reset_index()
    sp = sp.drop(columns=[c for c in ("dram_bytes_measured", "l2_bytes_measured", "bytes_removed_measured",
                                      "l2_bytes_removed_measured", "bytes_removed_model", "bytes_source") if c in sp])
    sp = sp.assign(size=sp["size"].fillna("default")).merge(
        per[group + [c for c in ("dram_bytes_measured", "l2_bytes_measured") if c in per]], on=group, how="left")
    base = [c for c in group if c != "variant"]
    eager = per[per["variant"] == "eager"].drop(columns="variant").rename(
        columns={"dram_bytes_measured": "_e_dram", "l2_bytes_measured": "_e_l2"})
    sp = sp.merge(eager[base + ["_e_dram", "_e_l2"]], on=base, how="left")
    sp["bytes_removed_measured"] = sp["_e_dram"] - sp["dram_bytes_measured"]
    sp["l2_bytes_removed_measured"] = sp["_e_l2"] - sp["l2_bytes_measured"]
    model = per.set_index(group)
    unf = model["bytes_unfused"] - model["bytes_fused"] if {"bytes_unfused", "bytes_fused"} <= set(model) else None
    sp["bytes_removed_model"] = (sp.set_index(group).index.map(unf).astype(float) if unf is not None else np.nan)
    sp.loc[sp["variant"] == "eager", "bytes_removed_model"] = 0.0
    sp["bytes_source"] = np.where(sp["dram_bytes_measured"].notna(), "measured", "model")
    return sp.drop(columns=["_e_dram", "_e_l2"])


def add_to_kernels(kernels: pd.DataFrame, files) -> pd.DataFrame:
    """The fusion map with traffic.csv's per-kernel columns (joined on kernel_key)."""
    frames = []
    for m, _, csv in files:
        try:
            k = pd.read_csv(csv)
        except (pd.errors.EmptyDataError, FileNotFoundError):
            continue
        if k.empty:
            continue
        keys = _keys(m)
        for c in CONFIG:
            k[c] = keys[c]
        frames.append(k.drop(columns=["name"], errors="ignore"))
    kernels = kernels.drop(columns=[c for c in KERNEL_COLUMNS if c in kernels])
    if not frames or kernels.empty or "full_name" not in kernels:
        for c in KERNEL_COLUMNS:
            kernels[c] = np.nan
        return kernels
    t = pd.concat(frames, ignore_index=True)
    t["_size"] = t["size"].fillna("default")
    t["_key"] = t["full_name"].map(ncu_report.kernel_key)
    on = ["_size" if c == "size" else c for c in CONFIG if c in kernels] + ["_key"]
    out = kernels.assign(_size=kernels["size"].fillna("default") if "size" in kernels else "default",
                         _key=kernels["full_name"].map(ncu_report.kernel_key))
    t = t.reindex(columns=on + KERNEL_COLUMNS[:-1]).drop_duplicates(on)
    out = out.merge(t, on=on, how="left")
    nsys = out["time_per_iter_us"] if "time_per_iter_us" in out else np.nan
    out["ncu_over_nsys_time"] = out["ncu_time_us"] / nsys
    return out.drop(columns=["_size", "_key"])


def memory_access_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 8.1 of source 000 for each mlp_small eager configuration: the counted reads and
    writes (elements x dtype bytes; B batch, F feature, H hidden) beside the measured DRAM
    and L2 bytes per iteration, and the model's bytes_unfused."""
    sel = runs[(runs["model"] == "mlp_small") & (runs["variant"] == "eager")]
    rows = []
    for _, g in sel.groupby(["batch", "size", "dtype", "mode"], dropna=False):
        r = g.iloc[0]
        b, f = int(r["batch"]), int(r["feature"]) if "feature" in r and r["feature"] == r["feature"] else 1
        h = int(r["hidden"]) if "hidden" in r and r["hidden"] == r["hidden"] else 64
        e = DTYPE_BYTES.get(r["dtype"], 4)
        reads, writes = (b * f + f * h + 3 * b * h + 2 * h + 2 * b) * e, (2 * b * h + 2 * b) * e
        rows.append({"batch": b, "feature": f, "hidden": h, "dtype": r["dtype"], "mode": r["mode"],
                     "table_reads_bytes": reads, "table_writes_bytes": writes, "table_bytes": reads + writes,
                     "bytes_unfused": r.get("bytes_unfused"),
                     "dram_read_bytes_measured": g["dram_read_bytes_measured"].median(),
                     "dram_write_bytes_measured": g["dram_write_bytes_measured"].median(),
                     "l2_bytes_measured": g["l2_bytes_measured"].median(),
                     "iteration_dram_bytes_measured": g["iteration_dram_bytes_measured"].median(),
                     "ncu_note": r.get("ncu_note")})
    return pd.DataFrame(rows)
