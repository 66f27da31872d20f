"""Measured memory traffic of one run (Nsight Compute, docs/ncu.md): per kernel and per
iteration, from the run folder's ncu.json and its kept .ncu-rep files.

- traffic.csv (KERNEL_FILE): one row per distinct kernel (full_name, the demangled name
  nsys's kernels.csv has too) of the profiled iteration(s), values per iteration:
  ncu_calls_per_iter, dram_read_bytes, dram_write_bytes, dram_bytes, l2_bytes,
  ncu_time_us (duration under ncu, clocks free), local_bytes (spill traffic: local loads
  + stores), flops (readers.ncu_report: FP64/FP32/FP16 thread instructions, fma = 2);
  and per kernel: dram_bandwidth_Bps = dram_bytes / ncu_time, the time-weighted means of
  dram_pct_peak, sm_pct_peak and achieved_occupancy_pct, measured_intensity = flops /
  dram_bytes.
- traffic.json (RUN_FILE): the run's per-iteration sums over its kernels
  (dram_read_bytes_measured, dram_write_bytes_measured, dram_bytes_measured,
  l2_bytes_measured, flops_measured, local_bytes_measured, ncu_kernel_time_us) and the
  per-iteration range replay (iteration_dram_bytes_measured, iteration_l2_bytes_measured,
  iteration_ncu_time_us: the median over the profiled iterations), with ncu_status and
  ncu_note (why a value is missing).
"""
from __future__ import annotations

import math
import os

import pandas as pd

from fusionlab.analysis.readers import ncu_report
from fusionlab.core.io import atomic_path, read_json, write_json_atomic

RUN_FILE = "traffic.json"
KERNEL_FILE = "traffic.csv"
KERNEL_COLUMNS = ["full_name", "name", "ncu_calls_per_iter", "dram_read_bytes", "dram_write_bytes", "dram_bytes",
                  "l2_bytes", "ncu_time_us", "dram_bandwidth_Bps", "dram_pct_peak", "sm_pct_peak",
                  "achieved_occupancy_pct", "local_bytes", "flops", "measured_intensity"]
RUN_FIELDS = ["dram_read_bytes_measured", "dram_write_bytes_measured", "dram_bytes_measured", "l2_bytes_measured",
              "flops_measured", "local_bytes_measured", "ncu_kernel_time_us", "ncu_kernels_per_iter",
              "iteration_dram_bytes_measured", "iteration_l2_bytes_measured", "iteration_ncu_time_us"]


def kernel_table(rows: list[dict], iters: int) -> pd.DataFrame:
    """Per distinct kernel, per iteration (module doc), from readers.ncu_report rows."""
    if not rows:
        return pd.DataFrame(columns=KERNEL_COLUMNS)
    df = pd.DataFrame(rows)
    df["dram_bytes"] = df["dram_read_bytes"] + df["dram_write_bytes"]
    df["local_bytes"] = df["local_load_bytes"] + df["local_store_bytes"]
    df["ncu_time_us"] = df["ncu_time_ns"] / 1e3
    out = []
    for full, g in df.groupby("full_name", sort=False):
        w = g["ncu_time_us"].fillna(0)
        row = {"full_name": full, "name": g["name"].iloc[0], "ncu_calls_per_iter": len(g) / iters}
        for c in ("dram_read_bytes", "dram_write_bytes", "dram_bytes", "l2_bytes", "ncu_time_us",
                  "local_bytes", "flops"):
            row[c] = g[c].sum(min_count=1) / iters
        for c in ("dram_pct_peak", "sm_pct_peak", "achieved_occupancy_pct"):
            x = g[c]
            row[c] = (x * w).sum() / w.sum() if w.sum() > 0 and x.notna().all() else x.mean()
        t = row["ncu_time_us"]
        row["dram_bandwidth_Bps"] = row["dram_bytes"] / (t / 1e6) if t and t > 0 else math.nan
        row["measured_intensity"] = row["flops"] / row["dram_bytes"] if row["dram_bytes"] else math.nan
        out.append(row)
    return pd.DataFrame(out, columns=KERNEL_COLUMNS).sort_values("ncu_time_us", ascending=False, ignore_index=True)


def run_fields(kernels: pd.DataFrame, range_rows: list[dict] | None) -> dict:
    """The per-iteration sums over the kernels and the range replay's median (module doc)."""
    def total(c):
        v = kernels[c].sum(min_count=1) if len(kernels) else math.nan
        return None if v != v else float(v)
    row = {"dram_read_bytes_measured": total("dram_read_bytes"), "dram_write_bytes_measured": total("dram_write_bytes"),
           "dram_bytes_measured": total("dram_bytes"), "l2_bytes_measured": total("l2_bytes"),
           "flops_measured": total("flops"), "local_bytes_measured": total("local_bytes"),
           "ncu_kernel_time_us": total("ncu_time_us"), "ncu_kernels_per_iter": total("ncu_calls_per_iter")}
    it = pd.DataFrame(range_rows or [])
    med = (lambda c: float(it[c].median()) if c in it and it[c].notna().any() else None)
    row["iteration_dram_bytes_measured"] = (med("dram_read_bytes") + med("dram_write_bytes")
                                            if med("dram_read_bytes") is not None else None)
    row["iteration_l2_bytes_measured"] = med("l2_bytes")
    row["iteration_ncu_time_us"] = med("ncu_time_ns") / 1e3 if med("ncu_time_ns") is not None else None
    return row


def _read(path: str, notes: list[str]) -> list[dict] | None:
    if not os.path.exists(path):
        return None
    try:
        return ncu_report.read(path)
    except ncu_report.NcuReportError as e:
        notes.append(str(e))
        return None


def compute(ncu_json: str) -> tuple[dict, pd.DataFrame]:
    """(traffic.json's fields, traffic.csv's table) of the run folder holding ncu_json."""
    rec = read_json(ncu_json) or {}
    d = os.path.dirname(ncu_json)
    iters = int((rec.get("settings") or {}).get("iterations") or 1)
    notes = [] if rec.get("status") == "ok" else [f"ncu step {rec.get('status', 'missing')}: {rec.get('reason')}"]
    kernel = (rec.get("kernel") or {}).get("report") or "ncu.ncu-rep"
    rows = _read(os.path.join(d, kernel), notes) if rec.get("status") == "ok" else None
    rng = rec.get("range") or {}
    range_rows = _read(os.path.join(d, rng["report"]), notes) if rng.get("status") == "ok" else None
    if rng and rng.get("status") not in (None, "ok"):
        notes.append(f"range replay {rng['status']}: {(rng.get('reason') or '')[:200]}")
    kernels = kernel_table(rows or [], iters)
    row = {k: None for k in RUN_FIELDS}
    if rows is not None:
        row.update(run_fields(kernels, range_rows))
    row["ncu_status"] = "ok" if rows else (rec.get("status") if rec.get("status") != "ok" else "unreadable")
    row["ncu_note"] = "; ".join(notes)[:500] or None
    row["ncu_iterations"] = iters
    row["ncu_settings"] = ", ".join(f"{k} {v}" for k, v in (rec.get("settings") or {}).items()) or None
    return row, kernels


def main(ncu_json: str, out_json: str, out_csv: str) -> dict:
    row, kernels = compute(ncu_json)
    with atomic_path(out_csv) as tmp:
        kernels.to_csv(tmp, index=False)
    write_json_atomic(out_json, row)
    return row
