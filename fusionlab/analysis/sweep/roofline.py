"""The per-kernel hierarchical roofline as a table (Nsight Compute's convention): for each
configuration's top kernels by time under ncu (the rest summed into one `other` row),
achieved FLOP/s against arithmetic intensity at DRAM and at L2, under the GPU's own roofs
(readers.ncu_report roof_*: Nsight Compute's peak-sustained metrics from the same report).

- flops: the kernel's measured FLOPs per iteration (FP64/FP32/FP16-BF16 pipes + tensor,
  as Nsight Compute's roofline sections count them). Every rate uses one pass's bytes and
  duration: the roofline pass's (time_us = roofline_time_us, dram_bytes_roof =
  dram_bytes_cold: the kernel alone after a flush, as Nsight Compute's roofline is drawn),
  or where that pass has no DRAM bytes or duration, the steady pass's (ncu_time_us,
  dram_bytes); rate_pass names which. FLOP counts are instruction counts: the same in
  every pass.
- achieved_flops = flops / time_us; dram_intensity = flops / dram_bytes_roof;
  l2_intensity = flops / l2_l1_bytes (bytes L2 sent to L1).
- pipe: the pipe with the most FLOPs (tensor, fp32, fp16, fp64); roof_flops its roof.
- bound: `compute` where dram_intensity is past the ridge (roof_flops / roof_dram_Bps),
  else `memory`; roof_at = min(roof_flops, dram_intensity x roof_dram_Bps) (the roof
  drawn above the point); fraction_of_roof: for a compute-bound kernel its pipe's FLOPs
  per second over its pipe's roof, for a memory-bound one its DRAM bytes per second over
  the DRAM roof (= achieved_flops / roof_at). Both are one pass's counts over the same
  pass's duration, so at most 1 up to the counters' own precision.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

TOP = 5
KEYS = ["model", "variant", "batch", "size", "mode", "dtype"]
PIPES = {"tensor": "flops_tensor", "fp32": "flops_fp32", "fp16": "flops_fp16", "fp64": "flops_fp64"}
SUMMED = ["flops", "flops_tensor", "flops_fp32", "flops_fp16", "flops_fp64", "ncu_time_us", "dram_bytes",
          "dram_bytes_cold", "roofline_time_us", "l2_l1_bytes"]
ROOFS = ["roof_dram_Bps", "roof_l2_Bps", "roof_fp32_flops", "roof_fp16_flops", "roof_fp64_flops", "roof_tensor_flops"]
COLUMNS = [*KEYS, "kernel", "kernels", *SUMMED, "rate_pass", "time_us", "dram_bytes_roof", "achieved_flops",
           "dram_intensity", "l2_intensity", "pipe", "roof_flops", *ROOFS, "bound", "roof_at", "fraction_of_roof"]


def _one_config(g: pd.DataFrame, top: int) -> list[dict]:
    g = g.sort_values("ncu_time_us", ascending=False)   # the steady pass's time: the loop's order
    name = g["name"] if "name" in g else g["full_name"]
    rows = [{"kernel": n, "kernels": 1, **{c: r.get(c, np.nan) for c in SUMMED + ROOFS}}
            for n, (_, r) in zip(name.head(top), g.head(top).iterrows())]
    rest = g.iloc[top:]
    if len(rest):
        rows.append({"kernel": f"other ({len(rest)} kernels)", "kernels": len(rest),
                     **{c: rest[c].sum(min_count=1) if c in rest else np.nan for c in SUMMED},
                     **{c: rest[c].median() if c in rest else np.nan for c in ROOFS}})
    return rows


def kernel_roofline(kernels: pd.DataFrame, top: int = TOP) -> pd.DataFrame:
    """The table (module doc) from the sweep's kernels table (traffic columns joined)."""
    if kernels is None or kernels.empty or "flops" not in kernels or kernels["flops"].isna().all():
        return pd.DataFrame(columns=COLUMNS)
    k = kernels.reindex(columns=list(dict.fromkeys([*kernels.columns, *KEYS, *SUMMED, *ROOFS])))
    k = k[k["flops"].notna() & (k["ncu_time_us"] > 0)]
    k = k.assign(size=k["size"].fillna("default")).drop_duplicates([*KEYS, "full_name"])
    rows = []
    for keys, g in k.groupby(KEYS, dropna=False, sort=True):
        rows += [{**dict(zip(KEYS, keys)), **r} for r in _one_config(g, top)]
    t = pd.DataFrame(rows).reindex(columns=COLUMNS)
    for c in SUMMED + ROOFS:
        t[c] = pd.to_numeric(t[c], errors="coerce")
    same = t["roofline_time_us"].gt(0) & t["dram_bytes_cold"].notna()   # the roofline pass's own pair
    t["rate_pass"] = np.where(same, "roofline", "steady")
    t["time_us"] = t["roofline_time_us"].where(same, t["ncu_time_us"])
    t["dram_bytes_roof"] = t["dram_bytes_cold"].where(same, t["dram_bytes"])
    seconds = t["time_us"].where(t["time_us"] > 0) / 1e6
    t["achieved_flops"] = t["flops"] / seconds
    dram = t["dram_bytes_roof"]
    t["dram_intensity"] = t["flops"] / dram.where(dram > 0)
    t["l2_intensity"] = t["flops"] / t["l2_l1_bytes"].where(t["l2_l1_bytes"] > 0)
    pipes = t[list(PIPES.values())].fillna(0)
    t["pipe"] = np.where(pipes.sum(axis=1) > 0, pipes.idxmax(axis=1).map({v: k for k, v in PIPES.items()}), None)
    named = [p if isinstance(p, str) else None for p in t["pipe"]]    # no FLOPs on any pipe: None (or nan)
    t["roof_flops"] = [r.get(f"roof_{p}_flops", np.nan) if p else np.nan for p, (_, r) in zip(named, t.iterrows())]
    pipe_flops = pd.Series([r.get(PIPES[p], np.nan) if p else np.nan for p, (_, r) in zip(named, t.iterrows())],
                           index=t.index, dtype=float)
    ridge = t["roof_flops"] / t["roof_dram_Bps"]
    known = t["dram_intensity"].notna() & ridge.notna()
    compute = known & (t["dram_intensity"] >= ridge)
    t["bound"] = np.where(~known, None, np.where(compute, "compute", "memory"))
    t["roof_at"] = np.minimum(t["roof_flops"], t["dram_intensity"] * t["roof_dram_Bps"])
    on_pipe = pipe_flops / seconds / t["roof_flops"].where(t["roof_flops"] > 0)
    on_dram = dram / seconds / t["roof_dram_Bps"].where(t["roof_dram_Bps"] > 0)
    t["fraction_of_roof"] = on_pipe.where(compute, on_dram.where(known))
    return t
