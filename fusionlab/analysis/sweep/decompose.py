"""Where a speedup comes from: the change in wall time per iteration, variant against
eager, split into parts that add up to it exactly.

Per configuration (tables.GROUP + variant; eager of the same GROUP is the reference),
each quantity is the median over the configuration's ok repeats (as tables.speedups):
- W: wall time per iteration, untraced (wall_time_per_iter_ms).
- G: GPU time per iteration, summed kernel durations (gpu_time_per_iter_ms; on the CPU
  backend the outermost operators' time, cpu_kernel_time_per_iter_ms). Summed, not the
  busy time the roofline uses: where kernels overlap (cuDNN's LSTM streams) the overlap
  shows in R as a negative part, so that W = G + H + R still holds.
- H: exposed host time per iteration: the GPU idle time spent waiting on the host (HTA's
  host wait, idle_host_wait_per_iter_ms: the next kernel's launch call started after the
  previous kernel ended) less the profiler's own cost (traced_wall_time_per_iter_ms -
  wall_time_per_iter_ms, which tracing adds to host time), clipped at 0. It is the host
  work (Python, framework dispatch, launch calls) that the GPU had to wait for; host work
  hidden behind running kernels costs no wall time and is not in H. On the CPU backend
  (host and kernels on one processor) H = W - G, the time outside operators.
- R = W - G - H: the remainder (GPU kernel-wait and other idle time, the final
  synchronize, less any kernel overlap), so W = G + H + R for eager and variant alike.

The parts, in ms saved per iteration (eager - variant; positive: the variant is faster
by that much from that cause; negative: slower), add up to total = W_eager - W_variant:
- host      = H_eager - H_variant: host and launch time saved (fewer launches, less
              framework overhead).
- traffic   = min(max(saved_bytes / BW, 0), max(G_eager - G_variant, 0)): the GPU time
              that removing the model's intermediate memory traffic explains, where
              saved_bytes = bytes_unfused - bytes_fused (experiments.cost: every operator
              reads and writes memory once vs. fully fused) and BW is the device's
              measured copy bandwidth (device/peaks.json; without it, eager's own achieved
              rate bytes_unfused / G_eager). Capped at the GPU time actually saved: a
              variant that fuses nothing (a CUDA graph) saves no traffic. Where both
              sides have Nsight Compute's measured DRAM bytes (analysis.sweep.traffic),
              saved_bytes = eager's dram_bytes_measured - the variant's instead, and
              bytes_source says which (measured / model).
- kernels   = (G_eager - G_variant) - traffic: the rest of the GPU time saved (fewer
              kernels, faster kernels: better tiling, vectorisation, a library call).
- remainder = R_eager - R_variant: what is left (idle changes other than host wait).
So host + traffic + kernels + remainder = total exactly (the identity holds for the
medians: W = G + H + R per side by definition of R).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.sweep import tables

PARTS = ("host", "traffic", "kernels", "remainder")
TOTAL = "total"
LABELS = {"host": "host and launch time", "traffic": "memory traffic removed",
          "kernels": "other kernel time", "remainder": "remainder (other idle)",
          TOTAL: "wall time per iteration"}
# the per-side quantities each part is the difference of (traffic and kernels: none)
SIDES = {"host": "host_ms", "remainder": "remainder_ms", TOTAL: "wall_ms"}
CONTEXT = ["wall_ms", "gpu_ms", "host_ms", "remainder_ms", "kernels_per_iter", "launches_per_iter"]


def _med(g: pd.DataFrame, col: str) -> float:
    if col not in g:
        return np.nan
    x = pd.to_numeric(g[col], errors="coerce").dropna()
    return float(x.median()) if len(x) else np.nan


def side(g: pd.DataFrame) -> dict:
    """W, G, H, R (module doc) and counts of one configuration's ok runs."""
    cpu = set(g["device"].dropna()) == {"cpu"} if "device" in g else False
    w = _med(g, "wall_time_per_iter_ms")
    gpu = _med(g, "cpu_kernel_time_per_iter_ms" if cpu else "gpu_time_per_iter_ms")
    if cpu:
        host = w - gpu
    else:
        hw = _med(g, "idle_host_wait_per_iter_ms")
        traced = _med(g, "traced_wall_time_per_iter_ms")
        prof = traced - w if traced == traced else 0.0
        host = max(hw - prof, 0.0) if hw == hw else np.nan
    return {"wall_ms": w, "gpu_ms": gpu, "host_ms": host,
            "remainder_ms": w - gpu - (host if host == host else 0.0),
            "kernels_per_iter": _med(g, "kernels_per_iter"),
            "launches_per_iter": _med(g, "launch_calls_per_iter"),
            "bytes_unfused": _med(g, "bytes_unfused"), "bytes_fused": _med(g, "bytes_fused"),
            "dram_bytes_measured": _med(g, "dram_bytes_measured")}


def saved_bytes(e: dict, v: dict) -> tuple[float, str]:
    """The bytes the variant removed and their source: measured (both sides' DRAM bytes
    from Nsight Compute) or model (bytes_unfused - bytes_fused)."""
    em, vm = e.get("dram_bytes_measured", np.nan), v.get("dram_bytes_measured", np.nan)
    if em == em and vm == vm:
        return em - vm, "measured"
    return e["bytes_unfused"] - e["bytes_fused"], "model"


def _parts(e: dict, v: dict, bw: float | None) -> tuple[dict, str]:
    total = e["wall_ms"] - v["wall_ms"]
    gpu = e["gpu_ms"] - v["gpu_ms"]
    host = (e["host_ms"] if e["host_ms"] == e["host_ms"] else 0.0) - \
        (v["host_ms"] if v["host_ms"] == v["host_ms"] else 0.0)
    saved, _ = saved_bytes(e, v)
    source = "measured copy bandwidth" if bw else "eager's achieved bandwidth"
    if not bw and e["bytes_unfused"] and e["gpu_ms"] == e["gpu_ms"] and e["gpu_ms"] > 0:
        bw = e["bytes_unfused"] / (e["gpu_ms"] / 1e3)
    if saved == saved and bw and gpu == gpu:
        traffic = min(max(saved / bw * 1e3, 0.0), max(gpu, 0.0))
    else:
        traffic, source = 0.0, "no byte counts"
    return {"host": host, "traffic": traffic, "kernels": gpu - traffic,
            "remainder": e["remainder_ms"] - v["remainder_ms"], TOTAL: total}, source


def breakdown_wide(runs: pd.DataFrame, sp: pd.DataFrame | None = None,
                   peaks: dict | None = None) -> pd.DataFrame:
    """One row per (GROUP, variant) with an ok eager and an ok variant: the parts
    (ms saved per iteration), both sides' W, G, H, R, kernels and launches, the
    bandwidth used and, from the speedups table where given, the speedup with its CI and
    the noisy flag."""
    keys = list(tables.GROUP)
    runs = tables.with_size(runs)
    ok = runs[runs["status"] == "ok"]
    bw = (peaks or {}).get("copy_bandwidth_Bps")
    eagers = {k: side(g) for k, g in tables.groups_by_key(ok[ok["variant"] == "eager"], keys).items()}
    rows = []
    for key, g in ok[ok["variant"] != "eager"].groupby(keys + ["variant"], dropna=False, sort=True):
        e = eagers.get(tables.group_key(key[:-1]))   # a NaN key value found too (tables.group_key)
        if e is None or e["wall_ms"] != e["wall_ms"]:
            continue
        v = side(g)
        if v["wall_ms"] != v["wall_ms"]:
            continue
        parts, source = _parts(e, v, bw)
        row = dict(zip(keys + ["variant"], key))
        row.update(parts)
        row["bandwidth"] = source
        row["saved_bytes"], row["bytes_source"] = saved_bytes(e, v)
        for c in CONTEXT:
            row[f"eager_{c}"], row[f"variant_{c}"] = e[c], v[c]
        row["speedup_wall"] = e["wall_ms"] / v["wall_ms"] if v["wall_ms"] else np.nan
        rows.append(row)
    cols = keys + ["variant", *PARTS, TOTAL, "bandwidth", "saved_bytes", "bytes_source"] + \
        [f"{s}_{c}" for c in CONTEXT for s in ("eager", "variant")] + ["speedup_wall"]
    wide = pd.DataFrame(rows, columns=cols)
    if sp is not None and len(wide) and len(sp):
        extra = [c for c in ("speedup_wall_lo", "speedup_wall_hi", "noisy", "speedup_paired") if c in sp]
        wide = wide.merge(sp[keys + ["variant"] + extra], on=keys + ["variant"], how="left")
    return wide


def breakdown(runs: pd.DataFrame, sp: pd.DataFrame | None = None, peaks: dict | None = None) -> pd.DataFrame:
    """The tidy long table (tables/speedup_breakdown.csv): one row per configuration and
    part (PARTS, then `total`), with saved_ms (eager - variant), share (saved_ms / total),
    eager_ms and variant_ms where the part is a difference of per-side quantities, and the
    configuration's speedup (CI, noisy) and the bandwidth the traffic part used."""
    wide = breakdown_wide(runs, sp, peaks)
    keys = list(tables.GROUP) + ["variant"]
    extra = [c for c in ("speedup_wall", "speedup_wall_lo", "speedup_wall_hi", "noisy", "bandwidth", "bytes_source")
             if c in wide]
    rows = []
    for r in wide.to_dict("records"):
        for part in (*PARTS, TOTAL):
            s = SIDES.get(part)
            rows.append({**{k: r[k] for k in keys}, "part": part, "label": LABELS[part],
                         "saved_ms": r[part],
                         "share": r[part] / r[TOTAL] if r[TOTAL] else np.nan,
                         "eager_ms": r[f"eager_{s}"] if s else np.nan,
                         "variant_ms": r[f"variant_{s}"] if s else np.nan,
                         **{c: r[c] for c in extra}})
    return pd.DataFrame(rows, columns=keys + ["part", "label", "saved_ms", "share", "eager_ms", "variant_ms"] + extra)


def wide_from_long(long: pd.DataFrame) -> pd.DataFrame:
    """The long breakdown (tables/speedup_breakdown.csv: one row per configuration and part)
    back to one row per configuration: its keys (tables.GROUP, variant), the total and each
    of PARTS in ms saved per iteration, eager_wall_ms (eager's wall time per iteration) and
    speedup_wall."""
    if long.empty:
        return pd.DataFrame()
    keys = [c for c in list(tables.GROUP) + ["variant"] if c in long]
    total = long[long["part"] == TOTAL]
    wide = total[keys].assign(**{TOTAL: total["saved_ms"], "eager_wall_ms": total["eager_ms"],
                                 "speedup_wall": total["speedup_wall"]}).reset_index(drop=True)
    for part in PARTS:
        p = long[long["part"] == part][keys + ["saved_ms"]].rename(columns={"saved_ms": part})
        wide = wide.merge(p, on=keys, how="left")
    return wide
