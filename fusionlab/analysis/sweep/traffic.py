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
  `kernel replay, N passes`). A run whose step profiled only the kernels that carry the
  most time (ncu.top_kernels) has no whole-iteration sums over kernels (empty, so the
  ratios and bytes_source fall back to the model): its sums are the `_selected` columns,
  with ncu_kernels_selected (the names, `; ` between them), ncu_kernel_count_selected and
  ncu_time_share_selected.
  The spread a reader is told: working_set_bytes = bytes_fused (the model's inputs,
  parameters and outputs: what any variant moves at least once), working_set_over_l2 (the
  GPU's L2 size from the report), bytes_regime = `above L2` where the working set is more
  than ABOVE_L2 x L2 (one figure: the steady state's, dram_bytes_low..high its range over
  the profiled iterations), else `near or below L2` (dram_bytes_low..high: from the
  lowest to the highest of the cold iterations and the steady iterations: which bytes
  stay in L2 depends on what ran before).
  Without measured values the columns are empty and ncu_note says why.
- speedups: dram_bytes_measured, l2_bytes_measured and the bytes fusion removed:
  bytes_removed_measured = eager's dram_bytes_measured - the variant's (steady medians),
  bytes_removed_cold (the same of the cold bytes), bytes_removed_low and _high (eager's
  lowest steady iteration - the variant's highest, eager's highest - the variant's
  lowest, and near or below L2 the cold difference too: the spread carried through),
  bytes_regime (eager's),
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
import sys

import numpy as np
import pandas as pd

from fusionlab.analysis.readers import ncu_report
from fusionlab.analysis.run import traffic as run_traffic
from fusionlab.core.io import read_csv, read_json

CONFIG = ["model", "variant", "batch", "size", "mode", "dtype", "backend", "device"]
RUN_COLUMNS = run_traffic.RUN_FIELDS + ["ncu_status", "ncu_note", "bytes_replay", "cold_replay", "ncu_kernels_selected"]
ABOVE_L2 = 2.0   # a working set above this many L2 sizes: one figure (module doc)
SPREAD = ["working_set_bytes", "working_set_over_l2", "bytes_regime", "dram_bytes_low", "dram_bytes_high"]
RATIOS = [*SPREAD, "dram_over_fused", "dram_over_unfused", "l2_over_unfused", "flops_measured_over_model",
          "measured_intensity", "copy_bandwidth_frac_measured", "bytes_source"]
KERNEL_COLUMNS = [c for c in run_traffic.KERNEL_COLUMNS if c not in ("full_name", "name")] + ["ncu_over_nsys_time"]
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8, "amp_bfloat16": 4}


REMOVED = ("bytes_removed_cold", "bytes_removed_low", "bytes_removed_high", "bytes_regime")
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
    for r in recs:   # the profiled kernel names, one cell
        if isinstance(r.get("ncu_kernels_selected"), list):
            r["ncu_kernels_selected"] = "; ".join(r["ncu_kernels_selected"])
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
    return spread(runs)


def spread(runs: pd.DataFrame) -> pd.DataFrame:
    """The working set against L2 and the range of DRAM bytes a reader is told (module doc)."""
    ws = runs["bytes_fused"] if "bytes_fused" in runs else pd.Series(np.nan, index=runs.index)
    runs["working_set_bytes"] = ws
    runs["working_set_over_l2"] = ws / runs["l2_size_bytes"].where(runs["l2_size_bytes"] > 0)
    above = runs["working_set_over_l2"] > ABOVE_L2
    known = runs["working_set_over_l2"].notna() & runs["dram_bytes_measured"].notna()
    runs["bytes_regime"] = np.where(~known, None, np.where(above, "above L2", "near or below L2"))
    lo = runs["dram_bytes_steady_min"].fillna(runs["dram_bytes_measured"])
    hi = runs["dram_bytes_steady_max"].fillna(runs["dram_bytes_measured"])
    near = known & ~above
    cold = runs["dram_bytes_cold"]
    cold_lo = runs["dram_bytes_cold_min"].fillna(cold) if "dram_bytes_cold_min" in runs else cold
    cold_hi = runs["dram_bytes_cold_max"].fillna(cold) if "dram_bytes_cold_max" in runs else cold
    runs["dram_bytes_low"] = lo.where(~near, pd.concat([lo, cold_lo], axis=1).min(axis=1))
    runs["dram_bytes_high"] = hi.where(~near, pd.concat([hi, cold_hi], axis=1).max(axis=1))
    return runs


def add_to_speedups(sp: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """speedups with the measured bytes and the bytes fusion removed (module doc)."""
    group = [c for c in CONFIG if c in sp and c in runs]
    cols = ["dram_bytes_measured", "l2_bytes_measured", "bytes_fused", "bytes_unfused", "dram_bytes_cold",
            "dram_bytes_steady_min", "dram_bytes_steady_max"]
    have = [c for c in cols if c in runs]
    per = runs.assign(size=runs["size"].fillna("default")).groupby(group, dropna=False)[have].median().reset_index()
    sp = sp.drop(columns=[c for c in ("dram_bytes_measured", "l2_bytes_measured", "bytes_removed_measured",
                                      "l2_bytes_removed_measured", "bytes_removed_model", "bytes_source",
                                      *REMOVED) if c in sp])
    sp = sp.assign(size=sp["size"].fillna("default")).merge(
        per[group + [c for c in ("dram_bytes_measured", "l2_bytes_measured") if c in per]], on=group, how="left")
    base = [c for c in group if c != "variant"]
    side = {"dram_bytes_measured": "dram", "l2_bytes_measured": "l2", "dram_bytes_cold": "cold",
            "dram_bytes_steady_min": "low", "dram_bytes_steady_max": "high"}
    side = {k: v for k, v in side.items() if k in per}
    eager = per[per["variant"] == "eager"].drop(columns="variant").rename(columns={k: f"_e_{v}" for k, v in side.items()})
    mine = per.rename(columns={k: f"_v_{v}" for k, v in side.items()})[group + [f"_v_{v}" for v in side.values()]]
    sp = sp.merge(eager[base + [f"_e_{v}" for v in side.values()]], on=base, how="left").merge(mine, on=group, how="left")
    for v in ("cold", "low", "high"):
        for who in ("_e_", "_v_"):
            if who + v not in sp:
                sp[who + v] = np.nan
    regime = runs.assign(size=runs["size"].fillna("default")).groupby(group, dropna=False)["bytes_regime"].first() \
        if "bytes_regime" in runs else None
    sp["bytes_removed_measured"] = sp["_e_dram"] - sp["dram_bytes_measured"]
    sp["bytes_removed_cold"] = sp["_e_cold"] - sp["_v_cold"]
    sp["bytes_regime"] = (sp[base].assign(variant="eager").set_index(group).index.map(regime)
                          if regime is not None else None)
    near = sp["bytes_regime"] == "near or below L2"
    low = (sp["_e_low"] - sp["_v_high"]).fillna(sp["bytes_removed_measured"])
    high = (sp["_e_high"] - sp["_v_low"]).fillna(sp["bytes_removed_measured"])
    sp["bytes_removed_low"] = low.where(~near, pd.concat([low, sp["bytes_removed_cold"]], axis=1).min(axis=1))
    sp["bytes_removed_high"] = high.where(~near, pd.concat([high, sp["bytes_removed_cold"]], axis=1).max(axis=1))
    sp["l2_bytes_removed_measured"] = sp["_e_l2"] - sp["l2_bytes_measured"]
    model = per.set_index(group)
    unf = model["bytes_unfused"] - model["bytes_fused"] if {"bytes_unfused", "bytes_fused"} <= set(model) else None
    sp["bytes_removed_model"] = (sp.set_index(group).index.map(unf).astype(float) if unf is not None else np.nan)
    sp.loc[sp["variant"] == "eager", "bytes_removed_model"] = 0.0
    sp["bytes_source"] = np.where(sp["dram_bytes_measured"].notna(), "measured", "model")
    return sp.drop(columns=[c for c in sp if c.startswith(("_e_", "_v_"))])


def add_to_kernels(kernels: pd.DataFrame, files) -> pd.DataFrame:
    """The fusion map with traffic.csv's per-kernel columns (joined on kernel_key)."""
    frames = []
    for m, _, csv in files:
        try:
            k = read_csv(csv)
        except (pd.errors.EmptyDataError, FileNotFoundError):
            continue
        except (OSError, ValueError) as e:   # the other runs' traffic still joins
            print(f"fusionlab: {csv}: cannot be read ({type(e).__name__}: {str(e)[:200]}); its run's per-kernel "
                  f"traffic is left out of kernels.csv", file=sys.stderr)
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


def _median(g: pd.DataFrame, c: str) -> float:
    return g[c].median() if c in g else np.nan


def memory_access_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 8.1 of source 000 as a measured result, for each mlp_small eager configuration:
    the formula's reads and writes (elements x dtype bytes; B batch, F feature, H hidden)
    beside the cold DRAM bytes (caches flushed once before the iteration: read, write, total), the
    steady-state DRAM bytes (read, write, median and range per iteration), the L2 bytes,
    the iteration range's DRAM bytes and the model's bytes_unfused."""
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
                     "dram_read_bytes_cold": _median(g, "dram_read_bytes_cold"),
                     "dram_write_bytes_cold": _median(g, "dram_write_bytes_cold"),
                     "dram_bytes_cold": _median(g, "dram_bytes_cold"),
                     "dram_read_bytes_measured": g["dram_read_bytes_measured"].median(),
                     "dram_write_bytes_measured": g["dram_write_bytes_measured"].median(),
                     "dram_bytes_steady": _median(g, "dram_bytes_measured"),
                     "dram_bytes_steady_min": _median(g, "dram_bytes_steady_min"),
                     "dram_bytes_steady_max": _median(g, "dram_bytes_steady_max"),
                     "l2_bytes_measured": g["l2_bytes_measured"].median(),
                     "iteration_dram_bytes_measured": g["iteration_dram_bytes_measured"].median(),
                     "ncu_note": r.get("ncu_note")})
    return pd.DataFrame(rows)
