"""summary.md (headline tables of a sweep) and the fusion-map HTML table, from the tidy
tables only."""
from __future__ import annotations

import html

import pandas as pd

from fusionlab.core.io import atomic_path


def _fmt_speedup(r) -> str:
    if r["status"] != "ok" or r["speedup_wall"] != r["speedup_wall"]:
        return f"{r['status']}"
    s = f"{r['speedup_wall']:.2f}x"
    if r["speedup_wall_lo"] == r["speedup_wall_lo"]:
        s += f" [{r['speedup_wall_lo']:.2f}, {r['speedup_wall_hi']:.2f}]"
    if r.get("noisy"):
        s += " noisy"
    return s


def _md(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join("" if (isinstance(v, float) and v != v) else str(v) for v in row) + " |")
    return "\n".join(lines)


def summary_md(runs: pd.DataFrame, sp: pd.DataFrame, cross: pd.DataFrame, peaks: dict | None) -> str:
    out = ["# fusionlab sweep summary", ""]
    first = runs.iloc[0] if len(runs) else {}
    meta = {k: first.get(k) for k in ("backend", "device", "gpu", "torch", "nsys", "mode", "dtype")}
    out.append("Machine and setup: " + ", ".join(f"{k}={v}" for k, v in meta.items() if v == v and v is not None))
    if peaks:
        out.append(f"Measured ceilings ({peaks.get('name')}): copy bandwidth "
                   f"{peaks['copy_bandwidth_Bps'] / 1e9:.0f} GB/s, {peaks.get('dtype')} matmul "
                   f"{peaks['matmul_flops'] / 1e12:.2f} TFLOP/s.")
    n = runs["status"].value_counts().to_dict()
    out += ["", f"Runs: {len(runs)} ({', '.join(f'{v} {k}' for k, v in sorted(n.items()))}). "
            "Speedup = median eager wall time / median variant wall time per iteration over "
            "repeats, [95% bootstrap CI]; wall times come from untraced iterations (no profiler "
            "tracing them; see 'The profiler's own cost'); `noisy`: the repeats' coefficient of variation exceeds "
            f"{sp['noise_cv_threshold'].iloc[0] if len(sp) else ''}.", ""]
    for batch, g in sp[sp["variant"] != "eager"].groupby("batch"):
        g = g.assign(cell=g.apply(_fmt_speedup, axis=1))
        m = g.pivot_table(index="model", columns="variant", values="cell", aggfunc="first")
        out += [f"## Speedup over eager at batch {batch}", "", _md(m.reset_index()), ""]
    cols = ["model", "variant", "batch", "kernels_per_iter", "eager_kernels_per_iter", "kernel_reduction"]
    k = sp[sp["variant"] != "eager"][cols].round(2)
    out += ["## Kernels per iteration (eager -> variant)", "", _md(k), ""]
    ok = runs[runs["status"] == "ok"]
    cols = ["gpu_busy_fraction", "idle_host_wait_frac", "idle_kernel_wait_frac", "idle_other_frac",
            "copy_bandwidth_frac", "launch_overhead_ratio"]
    if ok[cols[0]].notna().any():
        g = ok.groupby(["model", "variant", "batch"])[cols + ["bound"]].agg(
            {**{c: "median" for c in cols}, "bound": "first"}).round(3).reset_index()
        out += ["## Where the time goes (medians over repeats)", "",
                "Shares of the measured range: GPU busy, and idle split into host wait / kernel wait / "
                "other (HTA); copy_bandwidth_frac = ideal fused bytes / GPU time over the measured "
                "copy bandwidth; bound = cpu when host wait exceeds busy time.", "", _md(g), ""]
    if "profiler_overhead" in ok and ok["profiler_overhead"].notna().any():
        cols = ["untraced_wall_time_per_iter_ms", "traced_wall_time_per_iter_ms", "profiler_overhead",
                "injection_overhead", "untraced_wall_cv"]
        cols = [c for c in cols if c in ok and ok[c].notna().any()]
        g = ok.groupby(["model", "variant", "batch"])[cols].median().round(4).reset_index()
        out += ["## The profiler's own cost (medians over repeats)", "",
                "profiler_overhead = wall time per iteration under tracing / untraced wall time "
                "per iteration (ms); injection_overhead = the traced process's own iterations timed "
                "before its nsys capture range opened / untraced; untraced_wall_cv = CV of the "
                "untraced timing windows. Kernel metrics come from the traced iterations, wall "
                "times and speedups from the untraced ones.", "", _md(g), ""]
    if len(cross):
        c = cross[["model", "variant", "crossover_batch", "note"]].round(0)
        out += ["## Crossover batch size (variant starts to beat eager)", "", _md(c), ""]
    bad = runs[runs["status"] != "ok"]
    if len(bad):
        out += ["## Runs that are not ok", "",
                _md(bad[["model", "variant", "batch", "repeat", "status", "reason"]]), ""]
    return "\n".join(out) + "\n"


def fusion_map_html(kernels: pd.DataFrame, top: int = 12) -> str:
    """Per model, variant and batch (repeat 0): the kernels of one iteration, what they
    fuse, and their time."""
    parts = ["<html><head><meta charset='utf-8'><title>fusion map</title><style>"
             "body{font-family:sans-serif;font-size:13px} table{border-collapse:collapse;margin-bottom:14px}"
             "td,th{border:1px solid #ccc;padding:2px 6px} th{background:#eee}</style></head><body>",
             "<h2>Fusion map</h2><p>Kernels launched in one measured iteration (repeat 0), grouped by what "
             "they compute: Inductor kernel names parsed into the aten ops they fuse; eager kernels "
             "mapped to their aten op from the demangled name. Top kernels by time.</p>"]
    if kernels.empty or "name" not in kernels or kernels["name"].isna().all():
        parts.append("<p>No kernels recorded.</p>")
    else:
        k = kernels[kernels["repeat"] == kernels["repeat"].min()]
        for (model, batch), g in k.groupby(["model", "batch"]):
            parts.append(f"<h3>{html.escape(str(model))}, batch {batch}</h3>")
            for variant, v in g.groupby("variant"):
                v = v.sort_values("time_per_iter_us", ascending=False)
                total = v["calls_per_iter"].sum()
                parts.append(f"<b>{html.escape(str(variant))}</b>: {total:g} kernels per iteration, "
                             f"{v['time_per_iter_us'].sum():.1f} us")
                t = v.head(top)[["name", "kind", "ops", "n_ops", "calls_per_iter", "time_per_iter_us"]].round(2)
                parts.append(t.to_html(index=False, escape=True))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_text(path: str, text: str) -> None:
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        f.write(text)
