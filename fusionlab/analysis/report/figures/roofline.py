"""The roofline: every ok run under the device's measured roofs, and its achieved share
of the measured copy bandwidth."""
from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import ok_runs
from fusionlab.analysis.report.style import MODEL_MARKERS, variant_colour
from fusionlab.analysis.sweep import tables


def roofline(t, model):
    """Every ok run (median over repeats) at (arithmetic intensity, achieved FLOP/s), under
    both roofs of t["peaks"] (device/peaks.json): the measured copy bandwidth's slope and
    the measured matmul rate; marker per model, colour per variant. Right: the achieved
    fraction of copy bandwidth."""
    d = ok_runs(t, model)
    fig, (ax, bx) = style.figure(2, w=6.0, h=5.2 + 0.09 * d[["model", "variant"]].nunique().sum())
    peaks = t.get("peaks") or {}
    bw, fl = peaks.get("copy_bandwidth_Bps"), peaks.get("matmul_flops")
    r = d.dropna(subset=["arithmetic_intensity", "achieved_flops"])
    r = tables.with_size(r).groupby(["model", "variant", "batch", "size"], as_index=False)[
        ["arithmetic_intensity", "achieved_flops"]].median()
    if r.empty:
        style.empty(ax, "no run with a FLOP count and a GPU time")
    else:
        models = sorted(r["model"].unique())
        for (m, v), g in r.groupby(["model", "variant"]):
            ax.scatter(g["arithmetic_intensity"], g["achieved_flops"] / 1e12, s=26, color=variant_colour(v),
                       marker=MODEL_MARKERS[models.index(m) % len(MODEL_MARKERS)], edgecolors="k", linewidths=0.3)
        ai = r["arithmetic_intensity"]
        ridge = fl / bw if (bw and fl) else None
        lo = min(ai.min(), ridge or ai.min()) / 8
        hi = max(ai.max(), ridge or ai.max()) * 8
        if bw and fl:
            x = np.logspace(np.log10(lo), np.log10(hi), 200)
            ax.plot(x, np.minimum(bw * x, fl) / 1e12, color="k", lw=1.2)
            ax.annotate(f"copy bandwidth {bw / 1e12:.2f} TB/s", (ridge / 6, bw * ridge / 6 / 1e12), rotation=0,
                        xytext=(4, 6), textcoords="offset points", fontsize=7, ha="left")
            ax.annotate(f"matmul {fl / 1e12:.1f} TFLOP/s", (ridge * 1.3, fl / 1e12), xytext=(0, 4),
                        textcoords="offset points", fontsize=7)
            ax.axvline(ridge, color="grey", lw=0.6, ls=":")
        lo, hi = measured_points(ax, d, models, bw, lo, hi)
        ax.set_xlim(lo, hi)
        style.log_axis(ax, "x"); style.log_axis(ax, "y")
        style.fit_log_ticks(ax, "x"); style.fit_log_ticks(ax, "y")
        ax.set_xlabel("FLOP per byte (filled: model, all FLOPs / ideal fused bytes; hollow: measured, "
                      "ncu FLOPs / DRAM bytes)", fontsize=7); ax.set_ylabel("achieved TFLOP/s")
        handles = [Line2D([], [], ls="none", marker=MODEL_MARKERS[i % len(MODEL_MARKERS)], color="grey", label=m)
                   for i, m in enumerate(models)]
        handles += [Line2D([], [], ls="none", marker="s", color=variant_colour(v), label=v)
                    for v in sorted(r["variant"].unique())]
        ax.legend(handles=handles, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4,
                  title="marker: model, colour: variant", title_fontsize=7)
    b = d.dropna(subset=["copy_bandwidth_frac"])
    if b.empty:
        style.empty(bx, "no measured copy bandwidth or GPU time")
    else:
        g = tables.with_size(b).groupby(["model", "batch", "size", "variant"])["copy_bandwidth_frac"].median() \
            .unstack("variant")
        g.index = [f"{m}\n{bs}" + ("" if sz == "default" else f"\n{sz}") for m, bs, sz in g.index]
        g.plot.bar(ax=bx, rot=90, color=[variant_colour(v) for v in g.columns], width=0.8)
        bx.axhline(1.0, color="grey", lw=0.8, ls="--")
        bx.set_ylabel("ideal fused bytes / GPU busy time, over copy bandwidth\n(bars: variants, colours as on the left)")
        bx.tick_params(axis="x", labelsize=6.5)
        if bx.get_legend():
            bx.get_legend().remove()   # the colours are the variants' (the roofline's legend)
    style.title(fig, "Roofline (both roofs measured on this device) and achieved fraction of copy bandwidth",
                t, model)
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
