"""Measured memory traffic of one run (Nsight Compute, docs/ncu.md): per kernel and per
iteration, from the run folder's ncu.json and its kept .ncu-rep files.

Each launch's DRAM and L2 bytes and duration come from the one-pass report
(ncu_bytes.ncu-rep), its throughput, occupancy, local bytes and flops from the multi-pass
report (ncu.ncu-rep), joined per launch (`join`). A run folder with only ncu.ncu-rep (every
metric in one multi-pass kernel replay) takes all of them from it. bytes_replay says which:
`one pass`, or `kernel replay, N passes`.

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
  iteration_ncu_time_us: the median over the profiled iterations), with ncu_status,
  ncu_note (why a value is missing, or how it was measured), bytes_replay and
  ncu_settings.
"""
from __future__ import annotations

import math
import os
from collections import Counter

import pandas as pd

from fusionlab.analysis.readers import ncu_report
from fusionlab.core.io import atomic_path, read_json, write_json_atomic

RUN_FILE = "traffic.json"
KERNEL_FILE = "traffic.csv"
BYTES_REPORT = "ncu_bytes.ncu-rep"
KERNEL_REPORT = "ncu.ncu-rep"
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


def _launches(rows: list[dict]) -> list[tuple[str, int]]:
    """Each row's (kernel_key of its full_name, occurrence index of that kernel)."""
    seen = Counter()
    out = []
    for r in rows:
        k = ncu_report.kernel_key(r["full_name"])
        out.append((k, seen[k]))
        seen[k] += 1
    return out


def join(byte_rows: list[dict], kernel_rows: list[dict] | None) -> tuple[list[dict], str | None]:
    """The bytes report's rows with the multi-pass report's columns (ncu_report.KERNEL_COLUMNS),
    matched per launch by kernel and occurrence index. Where the two reports' launches differ
    (or there is no multi-pass report) those columns are NaN; the note says why."""
    empty = {c: math.nan for c in ncu_report.KERNEL_COLUMNS}
    if kernel_rows is None:
        return [{**r, **empty} for r in byte_rows], None
    mine, theirs = _launches(byte_rows), _launches(kernel_rows)
    if sorted(mine) != sorted(theirs):
        note = (f"the multi-pass report's launches ({len(kernel_rows)}) differ from the bytes report's "
                f"({len(byte_rows)}): throughput, occupancy, local bytes and flops left empty")
        return [{**r, **empty} for r in byte_rows], note
    other = dict(zip(theirs, kernel_rows))
    return [{**r, **{c: other[k].get(c, math.nan) for c in ncu_report.KERNEL_COLUMNS}}
            for k, r in zip(mine, byte_rows)], None


def _log_passes(d: str) -> int | None:
    try:
        with open(os.path.join(d, "ncu.log"), errors="replace") as f:
            return ncu_report.passes(f.read())
    except OSError:
        return None


def _replay(replay: str, passes: int | None) -> str:
    return f"{replay} replay, {passes} passes" if passes else f"{replay} replay, several passes"


def _read(path: str, notes: list[str]) -> list[dict] | None:
    if not os.path.exists(path):
        notes.append(f"{os.path.basename(path)} is not in the run folder")
        return None
    try:
        return ncu_report.read(path)
    except ncu_report.NcuReportError as e:
        notes.append(str(e))
        return None


def reports_missing(run_dir: str) -> bool:
    """A run folder whose ncu step ended ok but whose report of the bytes is not there
    (results copied without their .ncu-rep files: tens of MB a run)."""
    rec = read_json(os.path.join(run_dir, "ncu.json")) or {}
    if rec.get("status") != "ok":
        return False
    key = "bytes" if "bytes" in rec else "kernel"
    report = (rec.get(key) or {}).get("report") or (BYTES_REPORT if key == "bytes" else KERNEL_REPORT)
    return not os.path.exists(os.path.join(run_dir, report))


def traffic_lost(run_dir: str) -> bool:
    """A run folder copied with neither its ncu report (reports_missing) nor the traffic
    files read from it: its measured traffic is gone, and regenerating cannot make it."""
    return reports_missing(run_dir) and not os.path.exists(os.path.join(run_dir, RUN_FILE))


def compute(ncu_json: str) -> tuple[dict, pd.DataFrame]:
    """(traffic.json's fields, traffic.csv's table) of the run folder holding ncu_json."""
    rec = read_json(ncu_json) or {}
    d = os.path.dirname(ncu_json)
    iters = int((rec.get("settings") or {}).get("iterations") or 1)
    notes = [] if rec.get("status") == "ok" else [f"ncu step {rec.get('status', 'missing')}: {rec.get('reason')}"]
    ok = rec.get("status") == "ok"
    settings = rec.get("settings") or {}
    replay = settings.get("replay") or "kernel"
    kern = rec.get("kernel") or {}
    kernel_path = os.path.join(d, kern.get("report") or KERNEL_REPORT)
    bytes_replay = None
    if "bytes" in rec:   # the one-pass bytes report and the multi-pass one
        b = rec.get("bytes") or {}
        rows = _read(os.path.join(d, b.get("report") or BYTES_REPORT), notes) if ok else None
        if rows is not None:
            bytes_replay = "one pass" if (b.get("passes") or 1) == 1 else _replay(replay, b["passes"])
            if kern.get("status") != "ok":
                notes.append(f"multi-pass kernel replay {kern.get('status', 'not run')}: "
                             f"{(kern.get('reason') or '')[:200]}")
            krows = _read(kernel_path, notes) if kern.get("status") == "ok" else None
            rows, note = join(rows, krows)
            notes += [note] if note else []
    else:                # one multi-pass kernel replay of every metric
        rows = _read(kernel_path, notes) if ok else None
        if rows is not None:
            bytes_replay = _replay(replay, kern.get("passes") or _log_passes(d))
            notes.append(f"the bytes came from the multi-pass report ({bytes_replay})" + (
                ", which saves and restores memory between passes: its DRAM reads of intermediates that "
                "stay in L2 are higher than the loop's" if replay == "kernel" else ""))
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
    row["bytes_replay"] = bytes_replay
    items = {**settings, **({"bytes_replay": bytes_replay} if bytes_replay else {})}
    row["ncu_settings"] = ", ".join(f"{k} {v}" for k, v in items.items()) or None
    return row, kernels


def main(ncu_json: str, out_json: str, out_csv: str) -> dict:
    row, kernels = compute(ncu_json)
    with atomic_path(out_csv) as tmp:
        kernels.to_csv(tmp, index=False)
    write_json_atomic(out_json, row)
    return row
