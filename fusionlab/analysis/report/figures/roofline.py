"""The roofline: every ok run configuration of one setting (mode and dtype) under the
device's measured roofs, each point
labelled with its batch size, a point above a roof ringed in red with its reason
(tables/headline.csv ceiling_note); and the achieved share of copy bandwidth."""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from fusionlab.analysis.report import style
from fusionlab.analysis.report.text import fmt_flops, fmt_rate
from fusionlab.analysis.report.slicing import first_setting, ok_runs
from fusionlab.analysis.report.style import MODEL_MARKERS, variant_colour, variant_order
from fusionlab.analysis.sweep import tables

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'roofline',
        'scope': 'sweep',
        'category': '4. Roofline',
        'needs': 'models',
        'caption': ('Each configuration drawn (median of repeats; one mode and dtype, named in the title '
                    'where the sweep has several) under the roofs measured on this device, with its batch '
                    'size; {above}.'),
        'shows': ('achieved FLOP rate against arithmetic intensity, under the measured ceilings'),
    },
]


MAX_NOTES = 4


def roofline(t, model):
    """Left: (arithmetic intensity, achieved FLOP/s) of each configuration (median over
    repeats) under the measured copy-bandwidth slope and matmul rate; marker per model,
    colour per variant, the batch size beside each point. Right: bytes per GPU time as a
    share of the measured copy bandwidth, its value on each bar: Nsight Compute's DRAM
    bytes where the run has them (solid), else the model's ideal fused bytes (hatched)."""
    d, drawn = first_setting(tables.with_size(ok_runs(t, model)))   # one setting: the roof is in one dtype
    r = d.dropna(subset=["arithmetic_intensity", "achieved_flops"])
    if r.empty:
        raise style.NoData("no run with a FLOP count and a kernel time")
    keys = ["model", "variant", "batch", "size"]
    if "copy_bandwidth_frac_measured" not in r:
        r = r.assign(copy_bandwidth_frac_measured=np.nan)
    r = r.groupby(keys, as_index=False)[["arithmetic_intensity", "achieved_flops", "copy_bandwidth_frac",
                                         "copy_bandwidth_frac_measured"]].median()
    peaks = t.get("peaks") or {}
    bw, fl = peaks.get("copy_bandwidth_Bps"), peaks.get("matmul_flops")
    h = t.get("headline")
    notes = {}
    if h is not None and len(h) and "ceiling_note" in h:
        hn = tables.with_size(h)
        notes = {tuple(k): n for k, n in zip(hn[keys].itertuples(index=False), hn["ceiling_note"])
                 if isinstance(n, str) and n}
    fig, (ax, bx) = style.figure(2, w=5.8, h=5.0)
    setting = {c: d[c].iloc[0] for c in ("mode", "dtype", "device") if c in d and d[c].nunique() == 1}
    for _, p in r.iterrows():   # each configuration's point: medians of its ok repeats
        for col in ("arithmetic_intensity", "achieved_flops"):
            style.record(fig, **{k: p[k] for k in keys}, **setting, mark="point", quantity=f"runs.{col}",
                         agg="median", value=p[col])
    models = sorted(r["model"].unique())
    order = variant_order(r["variant"].unique())
    batch_labels = []
    for (m, v), g in r.groupby(["model", "variant"]):
        # earlier variants larger and below: variants at one point stay visible, nested
        ax.scatter(g["arithmetic_intensity"], g["achieved_flops"] / 1e12, s=22 + 20 * (len(order) - 1 - order.index(v)),
                   color=variant_colour(v), marker=MODEL_MARKERS[models.index(m) % len(MODEL_MARKERS)],
                   edgecolors="k", linewidths=0.3, zorder=3 + order.index(v) / len(order))
        batch_labels += [(x, y, f"{b:g}", {"fontsize": 5.5, "color": "0.3"})
                         for x, y, b in zip(g["arithmetic_intensity"], g["achieved_flops"] / 1e12, g["batch"])]
    above = r[[tuple(k) in notes for k in r[keys].itertuples(index=False)]]
    if len(above):
        ax.scatter(above["arithmetic_intensity"], above["achieved_flops"] / 1e12, s=120, facecolors="none",
                   edgecolors="red", linewidths=1.2, zorder=4)
    ai = r["arithmetic_intensity"]
    ridge = fl / bw if (bw and fl) else None
    lo, hi = min(ai.min(), ridge or ai.min()) / 8, max(ai.max(), ridge or ai.max()) * 8
    lo, hi, l2, measured = measured_points(ax, d, models, bw, lo, hi, fl)
    points = list(zip(measured["measured_intensity"], measured["y"] / 1e12))
    batch_labels += [(x, y, f"{b:g}", {"fontsize": 5.5, "color": "0.3"}) for (x, y), b in zip(points, measured["batch"])]
    for _, p in measured.iterrows():
        style.record(fig, **{k: p[k] for k in keys}, **setting, mark="measured point",
                     quantity="runs.measured_intensity", agg="median", value=p["measured_intensity"])
    joined = r.merge(measured, on=keys)   # each configuration's model point to its measured one
    for _, j in joined.iterrows():
        ax.plot([j["arithmetic_intensity"], j["measured_intensity"]],
                [j["achieved_flops"] / 1e12, j["y"] / 1e12], color=variant_colour(j["variant"]),
                lw=0.5, alpha=0.45, ls=":", zorder=1)
    if bw and fl:
        x = np.logspace(np.log10(lo), np.log10(hi), 200)
        ax.plot(x, np.minimum(bw * x, fl) / 1e12, color="k", lw=1.2)
    ax.set_xlim(lo, hi)
    style.log_axis(ax, "x"); style.log_axis(ax, "y")
    style.fit_log_ticks(ax, "x"); style.fit_log_ticks(ax, "y")
    ax.set_xlabel("FLOP per byte (model FLOPs / ideal fused bytes)" if measured.empty else
                  "FLOP per byte (filled: model FLOPs / ideal fused bytes; hollow: measured,\n"
                  "ncu FLOPs / DRAM bytes; dotted: one configuration's two points)", fontsize=7)
    ax.set_ylabel("achieved TFLOP/s (model FLOPs / GPU busy time)")
    handles = [Line2D([], [], ls="none", marker=MODEL_MARKERS[i % len(MODEL_MARKERS)], color="grey", label=m)
               for i, m in enumerate(models)]
    handles += [Line2D([], [], ls="none", marker="s", color=variant_colour(v), label=v)
                for v in variant_order(r["variant"].unique())]
    if len(above):
        handles.append(Line2D([], [], ls="none", marker="o", mfc="none", mec="red", label="above a measured roof"))
    ax.legend(handles=handles, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.16 if measured.empty else -0.22),
              ncol=4, frameon=False,
              title="marker: model, colour: variant (at one point: nested), number: batch size", title_fontsize=6.5)
    points += list(zip(r["arithmetic_intensity"], r["achieved_flops"] / 1e12))
    b = r.dropna(subset=["copy_bandwidth_frac"])
    b = b.assign(_o=b["variant"].map({v: i for i, v in enumerate(variant_order(b["variant"].unique()))}),
                 _frac=b["copy_bandwidth_frac_measured"].fillna(b["copy_bandwidth_frac"]),
                 _measured=b["copy_bandwidth_frac_measured"].notna())
    b = b.sort_values(["model", "size", "batch", "_o"])
    bars = bx.bar(range(len(b)), 100 * b["_frac"], color=[variant_colour(v) for v in b["variant"]],
                  hatch=["" if m else "////" for m in b["_measured"]], edgecolor="white", linewidth=0)
    bx.bar_label(bars, labels=[style.noted(fig, "share_whole", f, **{k: q[k] for k in keys}, **setting, mark="bar",
                                           agg="median", quantity="runs.copy_bandwidth_frac" + ("_measured" if m else ""))
                               for (_, q), f, m in zip(b.iterrows(), b["_frac"], b["_measured"])],
                 fontsize=6.5, padding=2)
    bx.set_xticks(range(len(b)))
    bx.set_xticklabels([f"{m} {bs:g}" + ("" if sz == "default" else f" {sz}") + f" {v}"
                        for m, bs, sz, v in zip(b["model"], b["batch"], b["size"], b["variant"])],
                       rotation=90, fontsize=6)
    for tick, v in zip(bx.get_xticklabels(), b["variant"]):
        tick.set_color(variant_colour(v))
    bx.axhline(100, color="grey", lw=0.8, ls="--")
    bx.set_ylim(0, max(bx.get_ylim()[1], 100) * 1.15)   # room above the 100% line for the legend
    bx.set_ylabel("bytes / GPU time, % of copy bandwidth")
    sources = {True: "solid: DRAM bytes measured by Nsight Compute", False: "hatched: the model's ideal fused bytes"}
    bx.legend(handles=[Patch(facecolor="0.55", hatch="" if m else "////", edgecolor="white", label=sources[m])
                       for m in (True, False) if m in set(b["_measured"])],
              fontsize=6.5, loc="upper left", frameon=False)
    avoid = []
    if len(above):
        lines = [f"{m} {v} bs {bs:g}: {notes[(m, v, bs, sz)]}" for m, v, bs, sz in
                 above[keys].itertuples(index=False)][:MAX_NOTES]
        avoid.append(free_corner_text(ax, ["\n".join(textwrap.fill(s, w) for s in lines) for w in (70, 45)],
                                      points, fontsize=5.5, color="red"))
    style.title(fig, f"Roofline under the measured roofs, and achieved share of copy bandwidth{drawn}", t, model)
    avoid += roof_labels(ax, lo, hi, bw, fl, l2, points, avoid,
                         f"matmul ({peaks['dtype']})" if peaks.get("dtype") else "matmul")
    style.place_labels(ax, batch_labels, markers=points, avoid=avoid)
    return fig


def free_corner_text(ax, text, points, **kw):
    """`text` (or the first of several wrappings of it that fits) in the lower right,
    lower left or upper left corner of the axes, whichever covers the fewest of `points`
    (data coordinates; the first of a tie)."""
    r = style.renderer(ax.figure)
    xy = ax.transData.transform(np.asarray(points, float).reshape(-1, 2)) if len(points) else np.empty((0, 2))
    corners = ((0.99, 0.01, "right", "bottom"), (0.01, 0.01, "left", "bottom"), (0.01, 0.82, "left", "top"))
    texts = (ax.text(x, y, one, transform=ax.transAxes, ha=ha, va=va, **kw)
             for one in ([text] if isinstance(text, str) else text) for x, y, ha, va in corners)

    def covered(t):
        b = t.get_window_extent(r).padded(4)
        return int(sum(b.contains(px, py) for px, py in xy))
    return style.cheapest_text(texts, covered)


def percent(p) -> str:
    """A share in whole percent ('112'; '<1' below one half)."""
    return "" if p != p else "<1" if 0 < p < 0.5 else f"{p:.0f}"


def roof_labels(ax, lo, hi, bw, fl, l2, points, avoid, matmul="matmul") -> list:
    """The roofs' labels where no point is: along each bandwidth slope from as near its
    left end as is free (L2 above its line, DRAM copy below its line), the matmul rate
    above the flat roof at its right end."""
    out = []
    ridge = fl / max(bw or 0, l2 if l2 == l2 else 0) if fl else hi
    starts = np.geomspace(lo * 1.15, max(lo * 1.2, ridge / 4), 12)
    if bw:
        out.append(style.line_label(ax, starts, lambda x: bw * x / 1e12, f"copy (DRAM) {fmt_rate(bw)}",
                                    above=False, markers=points, avoid=avoid, fontsize=6.5))
    if l2 == l2 and l2:
        out.append(style.line_label(ax, starts, lambda x: l2 * x / 1e12, f"L2 {fmt_rate(l2)} (highest measured)",
                                    above=True, markers=points, avoid=avoid + out, fontsize=6.5, color="grey"))
    if fl:
        t = ax.annotate(f"{matmul} {fmt_flops(fl)}", (hi / 1.5, fl / 1e12), xytext=(0, 3),
                        textcoords="offset points", fontsize=6.5, ha="right", va="bottom")
        t.set_in_layout(False)
        out.append(t)
    return out


def measured_points(ax, d, models, bw, lo, hi, peaks_flops=None):
    """The runs' measured arithmetic intensity (Nsight Compute: flops_measured /
    dram_bytes_measured, analysis.sweep.traffic) as hollow markers at their measured FLOP
    rate (flops_measured / GPU busy time), and an L2 roof beside DRAM's: the highest L2
    rate the sweep's kernels reached (l2_bytes_measured / ncu_kernel_time_us: a lower
    bound of the L2 bandwidth, not a peak), flat at peaks_flops. Returns the x limits widened to them, the L2
    rate drawn (nan for none) and the points drawn (model, variant, batch, size,
    measured_intensity, y: FLOP/s), one per configuration."""
    none = pd.DataFrame(columns=["model", "variant", "batch", "size", "measured_intensity", "y"])
    if "measured_intensity" not in d or d["measured_intensity"].isna().all():
        return lo, hi, np.nan, none
    t = d["gpu_busy_per_iter_ms"].fillna(d["gpu_time_per_iter_ms"]) / 1e3
    m = d.assign(y=d["flops_measured"] / t.where(t > 0)).dropna(subset=["measured_intensity", "y"])
    m = m[(m["measured_intensity"] > 0) & (m["y"] > 0)]
    if m.empty:
        return lo, hi, np.nan, none
    m = m.groupby(list(none.columns[:4]), as_index=False)[["measured_intensity", "y"]].median()   # one per configuration
    for (mod, v), g in m.groupby(["model", "variant"]):
        ax.scatter(g["measured_intensity"], g["y"] / 1e12, s=30, facecolors="none", edgecolors=variant_colour(v),
                   marker=MODEL_MARKERS[models.index(mod) % len(MODEL_MARKERS)] if mod in models else "o",
                   linewidths=0.9)
    lo, hi = min(lo, m["measured_intensity"].min() / 8), max(hi, m["measured_intensity"].max() * 4)
    l2 = (d["l2_bytes_measured"] / (d["ncu_kernel_time_us"] / 1e6)).max() if "l2_bytes_measured" in d else np.nan
    if l2 == l2 and l2 > 0 and (not bw or l2 > bw):
        x = np.logspace(np.log10(lo), np.log10(hi), 100)
        ax.plot(x, np.minimum(l2 * x, peaks_flops or np.inf) / 1e12, color="grey", lw=0.9, ls="--")
    else:
        l2 = np.nan
    return lo, hi, l2, m[list(none.columns)]
