"""Measured memory traffic of one run (Nsight Compute, docs/ncu.md): per kernel and per
iteration, from the run folder's ncu.json and the reports of its passes (core.ncu_passes).

- steady (caches not flushed, one pass, the step's N consecutive iterations): each
  launch's DRAM and L2 bytes and duration; each iteration's DRAM bytes are the sum over
  its launches (the report's launches cut into N equal runs of the same kernels), so the
  steady state's median, min and max per iteration.
- cold (range replay: each iteration one range, caches flushed once before it, one pass,
  the step's iterations): each iteration's compulsory DRAM bytes, so their median, min
  and max. A cold report of kernels (kernel replay, caches flushed before each kernel)
  reads as each iteration's kernels summed (cold_replay says which).
- roofline (kernel replay, caches flushed before each kernel, several passes): FLOPs per
  pipe and tensor, each kernel's DRAM bytes and duration in that pass (dram_bytes_cold,
  roofline_time_us: the roofline's rates use one pass's bytes, FLOPs and time),
  L2-to-L1 bytes, the GPU's roofs, throughput, occupancy, spills.
- range (the iteration replayed as a whole): the iteration's bytes.
Per kernel, the passes are joined on the kernel (readers.ncu_report.kernel_key), each
summed per iteration of its own pass. A folder written with a `bytes` pass (the steady
pass's settings, one iteration) or with one multi-pass `kernel` report reads too;
bytes_replay says how the bytes were measured: `one pass` or `kernel replay, N passes`.

- traffic.csv (KERNEL_FILE): one row per distinct kernel (full_name, the demangled name
  nsys's kernels.csv has too), values per iteration: ncu_calls_per_iter,
  dram_read_bytes, dram_write_bytes, dram_bytes, ncu_time_us (steady), dram_bytes_cold
  and roofline_time_us (the roofline pass's: the kernel alone after a flush), l2_bytes,
  l2_l1_bytes, local_bytes, the FLOP columns (readers.ncu_report) and the
  roofs; dram_bandwidth_Bps = dram_bytes / ncu_time, the time-weighted means of
  dram_pct_peak, sm_pct_peak and achieved_occupancy_pct, measured_intensity = flops /
  dram_bytes.
- traffic.json (RUN_FILE): per iteration, dram_bytes_measured (the steady median) with
  dram_bytes_steady_min and _max over the steady_iterations, dram_read_bytes_measured
  and dram_write_bytes_measured (their medians), dram_bytes_cold (the cold iterations'
  median, with its read and write medians, dram_bytes_cold_min and _max over
  cold_iterations, cold_replay `range` or `kernel`), l2_bytes_measured, flops_measured,
  local_bytes_measured, ncu_kernel_time_us,
  ncu_kernels_per_iter, the range replay's iteration_* (medians), l2_size_bytes (the
  GPU's, from the report), the roofs (roof_*), ncu_status, ncu_note (why a value is
  missing, or how it was measured), bytes_replay, ncu_settings and ncu_passes.
- A step that profiled only the kernel names that carry the most time (ncu.top_kernels;
  ncu.json's `selection`): ncu_kernels_selected (the names), ncu_kernel_count_selected,
  ncu_time_share_selected (their share of the measured iterations' kernel time in the
  run's nsys kernel table). The steady pass's sums over kernels (SELECTED) then cover
  those kernels only: they are kept as `<field>_selected` and the whole-iteration fields
  are empty. The range-replay passes (cold, range) replay whole iterations: theirs stay.
"""
from __future__ import annotations

import math
import os
import statistics

import pandas as pd

from fusionlab.analysis.readers import ncu_report
from fusionlab.core import ncu_passes
from fusionlab.core.io import atomic_path, read_json, write_json_atomic

RUN_FILE = ncu_passes.RUN_FILE
KERNEL_FILE = ncu_passes.KERNEL_FILE
SUMMED = ["dram_read_bytes", "dram_write_bytes", "dram_bytes", "l2_bytes", "l2_l1_bytes", "ncu_time_us",
          "local_bytes", "flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor", "flops"]
MEANS = ["dram_pct_peak", "sm_pct_peak", "achieved_occupancy_pct"]
ROOFS = ncu_report.ROOF_COLUMNS
KERNEL_COLUMNS = ["full_name", "name", "ncu_calls_per_iter", "dram_read_bytes", "dram_write_bytes", "dram_bytes",
                  "dram_bytes_cold", "roofline_time_us", "l2_bytes", "l2_l1_bytes", "ncu_time_us", "dram_bandwidth_Bps", "dram_pct_peak",
                  "sm_pct_peak", "achieved_occupancy_pct", "local_bytes", "flops_fp64", "flops_fp32", "flops_fp16",
                  "flops_tensor", "tensor_flops_source", "flops", "measured_intensity", *ROOFS]
RUN_FIELDS = ["dram_read_bytes_measured", "dram_write_bytes_measured", "dram_bytes_measured", "dram_bytes_steady_min",
              "dram_bytes_steady_max", "steady_iterations", "dram_read_bytes_cold", "dram_write_bytes_cold",
              "dram_bytes_cold", "dram_bytes_cold_min", "dram_bytes_cold_max", "cold_iterations", "l2_bytes_measured", "flops_measured", "local_bytes_measured", "ncu_kernel_time_us",
              "ncu_kernels_per_iter", "iteration_dram_bytes_measured", "iteration_l2_bytes_measured",
              "iteration_ncu_time_us", "l2_size_bytes", *ROOFS]
# the steady pass's sums over its kernels: with a selection, those kernels' only
SELECTED = ["dram_read_bytes_measured", "dram_write_bytes_measured", "dram_bytes_measured", "dram_bytes_steady_min",
            "dram_bytes_steady_max", "l2_bytes_measured", "flops_measured", "local_bytes_measured",
            "ncu_kernel_time_us", "ncu_kernels_per_iter"]
SELECTION_FIELDS = ["ncu_kernel_count_selected", "ncu_time_share_selected", *(f + "_selected" for f in SELECTED)]
RUN_FIELDS += SELECTION_FIELDS
# a step's ncu.json keys -> the pass they hold (a `bytes` pass is the steady pass's
# settings; a lone `kernel` report holds every metric)
LEGACY = {"bytes": "steady", "kernel": "roofline"}


def _frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in (*ncu_report.COLUMNS.values(), *ncu_report.FLOP_COLUMNS, *ROOFS):
        if c not in df:
            df[c] = math.nan
    df["dram_bytes"] = df["dram_read_bytes"] + df["dram_write_bytes"]
    df["local_bytes"] = df["local_load_bytes"] + df["local_store_bytes"]
    df["ncu_time_us"] = df["ncu_time_ns"] / 1e3
    return df


def kernel_table(rows: list[dict], iters: int) -> pd.DataFrame:
    """Per distinct kernel, per iteration, from readers.ncu_report rows of one report
    (module doc; dram_bytes_cold and roofline_time_us left empty)."""
    if not rows:
        return pd.DataFrame(columns=KERNEL_COLUMNS)
    df = _frame(rows)
    out = []
    for full, g in df.groupby("full_name", sort=False):
        w = g["ncu_time_us"].fillna(0)
        row = {"full_name": full, "name": g["name"].iloc[0], "ncu_calls_per_iter": len(g) / iters,
               "dram_bytes_cold": math.nan, "roofline_time_us": math.nan}
        for c in SUMMED:
            row[c] = g[c].sum(min_count=1) / iters
        for c in MEANS:
            x = g[c]
            row[c] = (x * w).sum() / w.sum() if w.sum() > 0 and x.notna().all() else x.mean()
        for c in ROOFS:
            row[c] = g[c].median()
        src = sorted(set(g["tensor_flops_source"].dropna()) - {""}) if "tensor_flops_source" in g else []
        row["tensor_flops_source"] = ",".join(src)
        t = row["ncu_time_us"]
        row["dram_bandwidth_Bps"] = row["dram_bytes"] / (t / 1e6) if t and t > 0 else math.nan
        row["measured_intensity"] = row["flops"] / row["dram_bytes"] if row["dram_bytes"] else math.nan
        out.append(row)
    return pd.DataFrame(out, columns=KERNEL_COLUMNS).sort_values("ncu_time_us", ascending=False, ignore_index=True)


def iteration_bytes(rows: list[dict], iters: int) -> list[dict] | None:
    """Each profiled iteration's DRAM read and write bytes: the launches cut into `iters`
    equal runs; None where they are not the same kernels in the same order."""
    if not rows or iters < 1 or len(rows) % iters:
        return None
    n = len(rows) // iters
    runs = [rows[i * n:(i + 1) * n] for i in range(iters)]
    names = [[ncu_report.kernel_key(r["full_name"]) for r in run] for run in runs]
    if any(x != names[0] for x in names):
        return None
    return [{"read": sum(r["dram_read_bytes"] for r in run), "write": sum(r["dram_write_bytes"] for r in run)}
            for run in runs]


def merge(steady: pd.DataFrame, other: pd.DataFrame | None, columns: list[str]) -> tuple[pd.DataFrame, str | None]:
    """The steady table with `columns` of another pass's table, joined per kernel
    (kernel_key); the note names the kernels either lacks."""
    if other is None or other.empty:
        return steady, None
    key = steady["full_name"].map(ncu_report.kernel_key)
    o = other.assign(_key=other["full_name"].map(ncu_report.kernel_key)).drop_duplicates("_key").set_index("_key")
    out = steady.copy()
    for c in columns:
        out[c] = key.map(o[c]).astype(float)
    if "tensor_flops_source" in o:   # where the FLOPs came from (text)
        out["tensor_flops_source"] = key.map(o["tensor_flops_source"]).fillna("")
    missing = sorted(set(key) ^ set(o.index))
    note = (f"{len(missing)} kernel(s) are in one pass and not the other ({', '.join(m[:40] for m in missing[:3])})"
            if missing else None)
    return out, note


def _read(path: str, notes: list[str]) -> list[dict] | None:
    if not os.path.exists(path):
        notes.append(f"{os.path.basename(path)} is not in the run folder")
        return None
    try:
        return ncu_report.read(path)
    except ncu_report.NcuReportError as e:
        notes.append(str(e))
        return None


def records(step: dict) -> dict:
    """pass name -> its record in a step's ncu.json (LEGACY keys read as their pass)."""
    out = {}
    for key, rec in step.items():
        name = LEGACY.get(key, key)
        if name in ncu_passes.PASSES and isinstance(rec, dict) and name not in out:
            out[name] = {**rec, "report": rec.get("report") or ncu_passes.PASSES[name].report}
    return out


def reports_missing(run_dir: str) -> bool:
    """A run folder whose ncu step ended ok but whose bytes report is not there (results
    copied without their .ncu-rep files: tens of MB a run)."""
    step = read_json(os.path.join(run_dir, ncu_passes.STEP_FILE)) or {}
    if step.get("status") != "ok":
        return False
    recs = records(step)
    first = recs.get("steady") or recs.get("roofline") or {}
    return not os.path.exists(os.path.join(run_dir, first.get("report") or ncu_passes.PASSES["steady"].report))


def traffic_lost(run_dir: str) -> bool:
    """A run folder copied with neither its ncu report (reports_missing) nor the traffic
    files read from it: its measured traffic is gone, and regenerating cannot make it."""
    return reports_missing(run_dir) and not os.path.exists(os.path.join(run_dir, RUN_FILE))


def _log_passes(d: str) -> int | None:
    try:
        with open(os.path.join(d, ncu_passes.LOG_FILE), errors="replace") as f:
            return ncu_report.passes(f.read())
    except OSError:
        return None


def _replay(passes: int | None) -> str:
    return f"kernel replay, {passes} passes" if passes else "kernel replay, several passes"


def _opt(v) -> float | None:
    return None if v is None or v != v else float(v)


def compute(ncu_json: str) -> tuple[dict, pd.DataFrame]:
    """(traffic.json's fields, traffic.csv's table) of the run folder holding ncu_json."""
    step = read_json(ncu_json) or {}
    d = os.path.dirname(ncu_json)
    settings = step.get("settings") or {}
    ok = step.get("status") == "ok"
    notes = [] if ok else [f"ncu step {step.get('status', 'missing')}: {step.get('reason')}"]
    recs = records(step)
    done = {n: r for n, r in recs.items() if r.get("status") == "ok"}
    for n, r in recs.items():
        if n != "steady" and r.get("status") != "ok" and ok:
            notes.append(f"{n} pass {r.get('status', 'not run')}: {(r.get('reason') or '')[:200]}")
    read = {n: _read(os.path.join(d, r["report"]), notes) for n, r in done.items()} if ok else {}
    iters = {n: int(r.get("iterations") or settings.get("iterations") or 1) for n, r in recs.items()}
    if "steady" in recs:
        rows, src = read.get("steady"), "steady"
    else:   # one multi-pass report holds the bytes too
        rows, src = read.get("roofline"), "roofline"
    bytes_replay = None
    if rows is not None:
        p = recs[src].get("passes") or (1 if src == "steady" else _log_passes(d))
        bytes_replay = "one pass" if p == 1 else _replay(p)
        if src == "roofline":
            notes.append(f"the bytes came from the multi-pass report ({bytes_replay}), which saves and restores "
                         "memory between passes: its DRAM reads of intermediates that stay in L2 are higher than "
                         "the loop's")
    kernels = kernel_table(rows or [], iters.get(src, 1))
    if src == "steady" and read.get("roofline") is not None:
        roof = kernel_table(read["roofline"], iters["roofline"])
        roof = roof.drop(columns=["dram_bytes_cold", "roofline_time_us"]).rename(
            columns={"dram_bytes": "dram_bytes_cold", "ncu_time_us": "roofline_time_us"})
        kernels, note = merge(kernels, roof, [c for c in ncu_report.KERNEL_COLUMNS
                                              if c not in ("local_load_bytes", "local_store_bytes")]
                              + ["local_bytes", "dram_bytes_cold", "roofline_time_us"])
        notes += [f"roofline pass: {note}"] if note else []
    cold_rows = read.get("cold")
    if cold_rows and not _ranges(cold_rows) and kernels["dram_bytes_cold"].isna().all():
        cold = kernel_table(cold_rows, iters["cold"])   # a cold pass of kernels: each after a flush
        kernels, note = merge(kernels, cold.drop(columns="dram_bytes_cold").rename(columns={"dram_bytes": "dram_bytes_cold"}), ["dram_bytes_cold"])
        notes += [f"cold pass: {note}"] if note else []
    kernels["measured_intensity"] = kernels["flops"] / kernels["dram_bytes"].where(kernels["dram_bytes"] > 0)
    row = {**{k: None for k in RUN_FIELDS}, "cold_replay": None}
    if rows is not None:
        row.update(run_fields(rows, kernels, iters.get(src, 1), read.get("cold"), read.get("range"),
                              iters.get("cold", 1)))
        if row["steady_iterations"] is None:
            notes.append(f"the {iters.get(src, 1)} profiled iterations did not launch the same kernels: "
                         "their mean per iteration, no range")
        if read.get("cold") and row["cold_iterations"] is None:
            notes.append("the cold pass's iterations did not launch the same kernels: their mean, no range")
    row["ncu_kernels_selected"] = None
    sel = step.get("selection") or {}
    if sel.get("active"):
        names, share = list(sel.get("names") or []), sel.get("time_share")
        row.update(ncu_kernels_selected=names, ncu_kernel_count_selected=len(names),
                   ncu_time_share_selected=_opt(share))
        for f in SELECTED:
            row[f + "_selected"], row[f] = row[f], None
        notes.append(f"Nsight Compute profiled the {len(names)} kernel names that carry {share:.0%} of the "
                     f"kernel time (ncu.top_kernels {sel.get('top_kernels')}"
                     + (f", top_share {sel['top_share']:g}" if sel.get("top_share") else "")
                     + f", of {sel.get('names_total')}): "
                     "its sums cover those kernels only (the *_selected columns)")
    elif sel.get("reason"):
        notes.append(sel["reason"])
    row["ncu_status"] = "ok" if rows else (step.get("status") if not ok else "unreadable")
    row["ncu_note"] = "; ".join(notes)[:500] or None
    row["ncu_iterations"] = iters.get(src, 1)
    row["bytes_replay"] = bytes_replay
    row["ncu_passes"] = ", ".join(n for n in recs if n in done) or None
    items = {**{k: v for k, v in settings.items() if k != "iterations"}, "iterations": iters.get(src, 1),
             **({"bytes_replay": bytes_replay} if bytes_replay else {})}
    row["ncu_settings"] = ", ".join(f"{k} {v}" for k, v in items.items()) or None
    return row, kernels


def _ranges(rows: list[dict] | None) -> bool:
    """Whether a report's results are NVTX ranges (range replay), not kernels."""
    return bool(rows) and all(r.get("kind") == ncu_report.RANGE for r in rows)


def cold_fields(rows: list[dict], iters: int) -> dict:
    """The cold pass's per-iteration fields (module doc): each range result is one
    iteration; a report of kernels is cut into `iters` iterations (their mean where the
    iterations launched different kernels: cold_iterations None)."""
    if _ranges(rows):
        per = [{"read": r["dram_read_bytes"], "write": r["dram_write_bytes"]} for r in rows]
        replay = "range"
    else:
        per = iteration_bytes(rows, iters)
        replay = "kernel"
    out = {"cold_replay": replay, "cold_iterations": len(per) if per else None}
    if not per:   # kernels that do not cut into equal iterations: their mean per iteration
        c = _frame(rows)
        r, w = c["dram_read_bytes"].sum(min_count=1) / iters, c["dram_write_bytes"].sum(min_count=1) / iters
        return {**out, "dram_read_bytes_cold": _opt(r), "dram_write_bytes_cold": _opt(w),
                "dram_bytes_cold": _opt(r + w), "dram_bytes_cold_min": None, "dram_bytes_cold_max": None}
    total = [p["read"] + p["write"] for p in per]
    return {**out, "dram_read_bytes_cold": float(statistics.median(p["read"] for p in per)),
            "dram_write_bytes_cold": float(statistics.median(p["write"] for p in per)),
            "dram_bytes_cold": float(statistics.median(total)), "dram_bytes_cold_min": float(min(total)),
            "dram_bytes_cold_max": float(max(total))}


def run_fields(rows: list[dict], kernels: pd.DataFrame, iters: int, cold_rows: list[dict] | None,
               range_rows: list[dict] | None, cold_iters: int = 1) -> dict:
    """traffic.json's measured fields (module doc) from the steady rows (`iters`
    iterations), the per-kernel table, the cold rows (`cold_iters` iterations) and the
    range rows."""
    def total(c):
        v = kernels[c].sum(min_count=1) if len(kernels) else math.nan
        return _opt(v)
    row = {c + "_measured": total(c) for c in ("dram_read_bytes", "dram_write_bytes", "dram_bytes", "l2_bytes")}
    row.update(flops_measured=total("flops"), local_bytes_measured=total("local_bytes"),
               ncu_kernel_time_us=total("ncu_time_us"), ncu_kernels_per_iter=total("ncu_calls_per_iter"),
               steady_iterations=None, cold_iterations=None, cold_replay=None)
    per = iteration_bytes(rows, iters)
    if per:
        dram = [p["read"] + p["write"] for p in per]
        row.update(dram_bytes_measured=float(statistics.median(dram)), dram_bytes_steady_min=float(min(dram)),
                   dram_bytes_steady_max=float(max(dram)), steady_iterations=len(per),
                   dram_read_bytes_measured=float(statistics.median(p["read"] for p in per)),
                   dram_write_bytes_measured=float(statistics.median(p["write"] for p in per)))
    if cold_rows:
        row.update(cold_fields(cold_rows, cold_iters))
    it = pd.DataFrame(range_rows or [])
    med = (lambda c: float(it[c].median()) if c in it and it[c].notna().any() else None)
    row["iteration_dram_bytes_measured"] = (med("dram_read_bytes") + med("dram_write_bytes")
                                            if med("dram_read_bytes") is not None else None)
    row["iteration_l2_bytes_measured"] = med("l2_bytes")
    row["iteration_ncu_time_us"] = med("ncu_time_ns") / 1e3 if med("ncu_time_ns") is not None else None
    sizes = [r.get("l2_size_bytes") for r in rows if r.get("l2_size_bytes") == r.get("l2_size_bytes")]
    row["l2_size_bytes"] = _opt(sizes[0]) if sizes else None
    for c in ROOFS:
        row[c] = _opt(kernels[c].median()) if c in kernels and kernels[c].notna().any() else None
    return row


def main(ncu_json: str, out_json: str, out_csv: str) -> dict:
    row, kernels = compute(ncu_json)
    with atomic_path(out_csv) as tmp:
        kernels.to_csv(tmp, index=False)
    write_json_atomic(out_json, row)
    return row
