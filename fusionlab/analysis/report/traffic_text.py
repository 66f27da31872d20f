"""summary.md's section on measured memory traffic (Nsight Compute, analysis.sweep.traffic):
the bytes beside the model's, the bytes fusion removed, what Nsight Compute profiled only in
part or not at all, and source 000's Table 8.1."""
from __future__ import annotations

import math

import pandas as pd

from fusionlab.analysis.report.text import drop_constant, md_table as _md, varying_axes
from fusionlab.analysis.sweep import traffic


def traffic_md(runs: pd.DataFrame, sp: pd.DataFrame) -> list[str]:
    """Measured memory traffic (Nsight Compute, analysis.sweep.traffic) beside the model's
    bytes, the bytes fusion removed, and source 000's Table 8.1; or why there is none."""
    out = ["## Measured memory traffic (Nsight Compute)", ""]
    coverage = ncu_coverage_md(runs)
    if "dram_bytes_measured" not in runs or runs["dram_bytes_measured"].isna().all():
        notes = sorted(set(runs.get("ncu_note", pd.Series(dtype=object)).dropna().astype(str)))
        if coverage:
            return out + ["No measured bytes per iteration: Nsight Compute profiled part of each run's kernels "
                          "(below). Every byte per iteration in this summary is the model's (experiments.cost; "
                          "bytes_source model).", "", *coverage]
        return out + ["No measured bytes: " + ("; ".join(notes) if notes else "no run was profiled under "
                      "Nsight Compute") + ". Every byte in this summary is the model's (experiments.cost; "
                      "bytes_source model).", ""]
    r = runs[runs["dram_bytes_measured"].notna()]
    keys = ["model", "variant", *varying_axes(r), "batch", "size"]
    vals = ["dram_bytes_measured", "dram_bytes_low", "dram_bytes_high", "dram_bytes_cold", "l2_bytes_measured",
            "bytes_fused", "bytes_unfused", "dram_over_fused", "flops_measured_over_model"]
    r = r.reindex(columns=list(dict.fromkeys([*keys, "bytes_regime", *vals, *r.columns])))
    g = r.groupby(keys, as_index=False, dropna=False).agg({"bytes_regime": "first", **{c: "median" for c in vals}})
    for c in vals[:7]:
        g[c] = (pd.to_numeric(g[c], errors="coerce") / 1e6).round(3)
    out += ["Per iteration, in MB: `dram_bytes_measured` the steady state's median (DRAM bytes measured by "
            "Nsight Compute on repeat 0, caches warm, clocks free, over consecutive iterations), "
            "`dram_bytes_cold` with caches flushed once before each iteration (range replay), `low`..`high` the range a reader is "
            "told: above L2, the steady iterations' range; near or below L2 (the working set, bytes_fused, "
            "within 2x the GPU's L2), from the lowest to the highest of cold and steady, since which bytes stay "
            "in L2 depends on what ran before. A ratio under 1 is traffic the model counts that stays in L2.",
            "", _md(g.round(3)), ""]
    s = sp[(sp["variant"] != "eager") & sp["bytes_removed_measured"].notna()] if "bytes_removed_measured" in sp \
        else sp.iloc[:0]
    if len(s):
        rem = ["bytes_removed_measured", "bytes_removed_low", "bytes_removed_high", "bytes_removed_cold",
               "bytes_removed_model"]
        s = s.reindex(columns=["model", "variant", *varying_axes(s), "batch", "size", "bytes_regime", *rem]).copy()
        for c in rem:
            s[c] = (pd.to_numeric(s[c], errors="coerce") / 1e6).round(3)
        out += ["Bytes fusion removed per iteration (MB): measured = eager's steady DRAM bytes - the variant's "
                "(medians), low..high its range (the steady spread, and near or below L2 the cold difference "
                "too), cold = the same of the cold bytes; model = bytes_unfused - bytes_fused.", "", _md(s), ""]
    else:
        out += ["Bytes fusion removed: no variant has measured bytes beside eager's in the same "
                "configuration.", ""]
    out += coverage
    t = traffic.memory_access_table(runs)
    if len(t):
        out += ["Source 000's Table 8.1 as measured (mlp_small eager: the formula's reads ~ BF + FH + 3BH + 2H "
                "+ 2B and writes ~ 2BH + 2B elements, beside the cold and the steady-state DRAM bytes per "
                "iteration, in bytes):", "",
                _md(t.drop(columns=["ncu_note"]).round(0)), ""]
    return out


def _runs(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")


def ncu_coverage_md(runs: pd.DataFrame) -> list[str]:
    """What Nsight Compute left out, in a sweep where it profiled some run: the runs whose
    step profiled only the kernel names that carry the most time (ncu.top_kernels), with
    the names' count and share of the kernel time; and the runs it has no record of."""
    r = runs[runs["repeat"] == 0] if "repeat" in runs else runs
    if "ncu_status" not in r or not r["ncu_status"].eq("ok").any():
        return []
    out = []
    part = r[r["ncu_time_share_selected"].notna()] if "ncu_time_share_selected" in r else r.iloc[:0]
    if len(part):
        keys = ["model", "variant", *varying_axes(part), "batch", "size"]
        t = part[keys].assign(**{
            "names profiled": part["ncu_kernel_count_selected"].astype(int),
            # to a tenth of a percent, rounded down: a share short of all never reads 100%
            "their share of kernel time": part["ncu_time_share_selected"].map(
                lambda x: f"{math.floor(x * 1000) / 10:.1f}%"),
            "their DRAM MB (steady)": (pd.to_numeric(part["dram_bytes_measured_selected"], errors="coerce")
                                       / 1e6).round(1)})
        out += [f"{_runs(len(part))} where Nsight Compute profiled only the kernel names that carry the most time "
                "(`ncu.top_kernels`): they have no measured bytes per iteration (their bytes are the model's); "
                "the profiled kernels' own are `*_selected` in tables/runs.csv, the names `ncu_kernels_selected`.",
                "", _md(drop_constant(t, keys[:2] + ["batch", "names profiled", "their share of kernel time",
                                                         "their DRAM MB (steady)"])), ""]
    missing = r[r["ncu_status"].ne("ok") & r["ncu_status"].notna()]
    if len(missing):
        keys = ["model", "variant", *varying_axes(missing), "batch", "size"]
        out += [f"{_runs(len(missing))} without an Nsight Compute record (`ncu_note` in tables/runs.csv says why):", "",
                _md(drop_constant(missing[keys + ["ncu_status"]], keys[:2] + ["batch", "ncu_status"])), ""]
    return out
