"""The roofline: every ok run configuration under the device's measured roofs, each point
labelled with its batch size, a point above a roof ringed in red with its reason
(tables/headline.csv ceiling_note); and the achieved share of copy bandwidth."""
from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.lines import Line2D

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import ok_runs
from fusionlab.analysis.report.style import MODEL_MARKERS, variant_colour, variant_order
from fusionlab.analysis.sweep import tables

MAX_NOTES = 4


def roofline(t, model):
    """Left: (arithmetic intensity, achieved FLOP/s) of each configuration (median over
    repeats) under the measured copy-bandwidth slope and matmul rate; marker per model,
    colour per variant, the batch size beside each point. Right: the achieved fraction of
    copy bandwidth, its value on each bar."""
    d = tables.with_size(ok_runs(t, model))
    r = d.dropna(subset=["arithmetic_intensity", "achieved_flops"])
    if r.empty:
        raise style.NoData("no run with a FLOP count and a kernel time")
    keys = ["model", "variant", "batch", "size"]
    r = r.groupby(keys, as_index=False)[["arithmetic_intensity", "achieved_flops", "copy_bandwidth_frac"]].median()
    peaks = t.get("peaks") or {}
    bw, fl = peaks.get("copy_bandwidth_Bps"), peaks.get("matmul_flops")
    h = t.get("headline")
    notes = {}
    if h is not None and len(h) and "ceiling_note" in h:
        hn = tables.with_size(h)
        notes = {tuple(k): n for k, n in zip(hn[keys].itertuples(index=False), hn["ceiling_note"])
                 if isinstance(n, str) and n}
    fig, (ax, bx) = style.figure(2, w=5.8, h=5.0)
    models = sorted(r["model"].unique())
    for (m, v), g in r.groupby(["model", "variant"]):
        ax.scatter(g["arithmetic_intensity"], g["achieved_flops"] / 1e12, s=28, color=variant_colour(v),
                   marker=MODEL_MARKERS[models.index(m) % len(MODEL_MARKERS)], edgecolors="k", linewidths=0.3, zorder=3)
        for x, y, b in zip(g["arithmetic_intensity"], g["achieved_flops"] / 1e12, g["batch"]):
            ax.annotate(f"{b:g}", (x, y), xytext=(3, -7), textcoords="offset points", fontsize=5.5, color="0.3")
    above = r[[tuple(k) in notes for k in r[keys].itertuples(index=False)]]
    if len(above):
        ax.scatter(above["arithmetic_intensity"], above["achieved_flops"] / 1e12, s=120, facecolors="none",
                   edgecolors="red", linewidths=1.2, zorder=4)
    ai = r["arithmetic_intensity"]
    ridge = fl / bw if (bw and fl) else None
    lo, hi = min(ai.min(), ridge or ai.min()) / 8, max(ai.max(), ridge or ai.max()) * 8
    if bw and fl:
        x = np.logspace(np.log10(lo), np.log10(hi), 200)
        ax.plot(x, np.minimum(bw * x, fl) / 1e12, color="k", lw=1.2)
        ax.annotate(f"copy bandwidth {bw / 1e9:.3g} GB/s", (ridge / 6, bw * ridge / 6 / 1e12), xytext=(4, 6),
                    textcoords="offset points", fontsize=6.5)
        ax.annotate(f"matmul {fl / 1e12:.3g} TFLOP/s", (ridge * 1.3, fl / 1e12), xytext=(0, 4),
                    textcoords="offset points", fontsize=6.5)
    lo, hi = measured_points(ax, d, models, bw, lo, hi)
    ax.set_xlim(lo, hi)
    style.log_axis(ax, "x"); style.log_axis(ax, "y")
    style.fit_log_ticks(ax, "x"); style.fit_log_ticks(ax, "y")
    ax.set_xlabel("FLOP per byte (filled: model, all FLOPs / ideal fused bytes; hollow: measured, "
                  "ncu FLOPs / DRAM bytes)", fontsize=7); ax.set_ylabel("achieved TFLOP/s")
    handles = [Line2D([], [], ls="none", marker=MODEL_MARKERS[i % len(MODEL_MARKERS)], color="grey", label=m)
               for i, m in enumerate(models)]
    handles += [Line2D([], [], ls="none", marker="s", color=variant_colour(v), label=v)
                for v in variant_order(r["variant"].unique())]
    if len(above):
        handles.append(Line2D([], [], ls="none", marker="o", mfc="none", mec="red", label="above a measured roof"))
    ax.legend(handles=handles, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4, frameon=False,
              title="marker: model, colour: variant, number: batch size", title_fontsize=6.5)
    b = r.dropna(subset=["copy_bandwidth_frac"])
    b = b.assign(_o=b["variant"].map({v: i for i, v in enumerate(variant_order(b["variant"].unique()))}))
    b = b.sort_values(["model", "size", "batch", "_o"])
    bars = bx.bar(range(len(b)), 100 * b["copy_bandwidth_frac"], color=[variant_colour(v) for v in b["variant"]])
    style.bar_values(bx, bars, (100 * b["copy_bandwidth_frac"]).tolist(), "{:.2g}")
    bx.set_xticks(range(len(b)))
    bx.set_xticklabels([f"{m} {bs:g}" + ("" if sz == "default" else f" {sz}") + f" {v}"
                        for m, bs, sz, v in zip(b["model"], b["batch"], b["size"], b["variant"])],
                       rotation=90, fontsize=6)
    for tick, v in zip(bx.get_xticklabels(), b["variant"]):
        tick.set_color(variant_colour(v))
    bx.axhline(100, color="grey", lw=0.8, ls="--")
    bx.set_ylabel("ideal fused bytes / kernel time, % of copy bandwidth")
    if len(above):
        lines = [f"{m} {v} bs {bs:g}: {notes[(m, v, bs, sz)]}" for m, v, bs, sz in
                 above[keys].itertuples(index=False)][:MAX_NOTES]
        ax.text(0.99, 0.01, "\n".join(textwrap.fill(s, 70) for s in lines), transform=ax.transAxes,
                fontsize=5.5, color="red", va="bottom", ha="right")
    style.title(fig, "Roofline under the measured roofs, and achieved share of copy bandwidth", t, model)
    return fig


def measured_points(ax, d, models, bw, lo, hi):
    """The runs' measured arithmetic intensity (Nsight Compute: flops_measured /
    dram_bytes_measured, analysis.sweep.traffic) as hollow markers at their measured FLOP
    rate (flops_measured / GPU busy time), and an L2 roof beside DRAM's: the highest L2
    rate the sweep's kernels reached (l2_bytes_measured / ncu_kernel_time_us: a lower
    bound of the L2 bandwidth, not a peak). Returns the x limits widened to them."""
    if "measured_intensity" not in d or d["measured_intensity"].isna().all():
        return lo, hi
    t = d["gpu_busy_per_iter_ms"].fillna(d["gpu_time_per_iter_ms"]) / 1e3
    m = d.assign(y=d["flops_measured"] / t.where(t > 0)).dropna(subset=["measured_intensity", "y"])
    m = m[(m["measured_intensity"] > 0) & (m["y"] > 0)]
    if m.empty:
        return lo, hi
    for (mod, v), g in m.groupby(["model", "variant"]):
        ax.scatter(g["measured_intensity"], g["y"] / 1e12, s=30, facecolors="none", edgecolors=variant_colour(v),
                   marker=MODEL_MARKERS[models.index(mod) % len(MODEL_MARKERS)] if mod in models else "o",
                   linewidths=0.9)
    lo, hi = min(lo, m["measured_intensity"].min() / 4), max(hi, m["measured_intensity"].max() * 4)
    l2 = (d["l2_bytes_measured"] / (d["ncu_kernel_time_us"] / 1e6)).max() if "l2_bytes_measured" in d else np.nan
    if l2 == l2 and l2 > 0 and (not bw or l2 > bw):
        x = np.logspace(np.log10(lo), np.log10(hi), 100)
        ax.plot(x, l2 * x / 1e12, color="grey", lw=0.9, ls="--")
        ax.annotate(f"L2 {l2 / 1e12:.1f} TB/s (highest measured)", (lo * 2, l2 * lo * 2 / 1e12), fontsize=6.5,
                    color="grey", xytext=(2, 4), textcoords="offset points")
    return lo, hi
