"""Speedup figures from the headline table (tables/headline.csv): the headline speedup
(paired where the variant was paired) with its interval along the main swept axis, or
the variants side by side at one value; where the time saved comes from."""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.report import style
from fusionlab.analysis.report.figures.headline import speedup_label
from fusionlab.analysis.report.slicing import by_model, by_setting, joined_fixed, main_axis
from fusionlab.analysis.report.style import variant_colour, variant_order
from fusionlab.analysis.report.text import HOST_SKEWED, skewed

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'speedup_vs_batch',
        'scope': 'model',
        'category': '1. Headline',
        'needs': 'compared',
        'caption': ('Speedup over eager of each variant of {model} ({configs} configurations drawn): the '
                    'paired speedup where the variant was paired, solid, with its interval (a 95% t interval '
                    'over its processes, the between-process spread pooled over the sweep); across processes '
                    'dotted, as a diagnostic. Verdicts: {verdicts}; {best}.'),
        'shows': ('the speedup over eager against batch, per variant, with its named interval; hollow: '
                    'inconclusive'),
    },
    {
        'name': 'speedup_breakdown',
        'scope': 'model',
        'category': '2. Where the time goes',
        'needs': 'compared',
        'caption': ('Where the time saved per iteration of {model} comes from ({configs} configurations '
                    'drawn): exposed host time, memory traffic removed (measured or modelled bytes, as named '
                    'in tables/headline.csv), other kernel time, the host-speed difference between processes '
                    'and the remainder add up to the time saved that the headline speedup gives; {best}.'),
        'shows': ('the signed parts of the time saved (exposed host time, memory traffic, other kernel '
                    'time, host-speed difference, remainder) adding up to it'),
    },
]


# the parts' colours: host, traffic and kernel time as the headline's time split colours
# them, host speed a colour no variant has (style.VARIANT_COLOURS)
PART_COLOURS = {"host_saved_ms": "#dd8452", "traffic_ms": "#55a868", "kernels_saved_ms": "#4c72b0",
                "host_speed_ms": "#ccb974", "remainder_ms": "#9a9a9a"}
# the memory-traffic part by the source of its bytes (headline traffic_source): hatched where modelled
TRAFFIC_HATCH = {"measured": "", "modelled": "////"}
TRAFFIC_WORDS = {"measured": "measured bytes (Nsight Compute)", "modelled": "modelled bytes (cost model), hatched"}
PART_LABELS = {"host_saved_ms": "exposed host time", "traffic_ms": "memory traffic removed",
               "kernels_saved_ms": "other kernel time", "host_speed_ms": "host-speed difference between processes",
               "remainder_ms": "remainder"}
CPU_PART_LABELS = {**PART_LABELS, "host_saved_ms": "time outside operators", "kernels_saved_ms": "other operator time"}


def _point_marks(fig, g):
    """Each drawn speedup point: its estimate and interval (style.record)."""
    for _, r in g.iterrows():
        keys = style.keys_of(r)
        for q in ("speedup", "speedup_lo", "speedup_hi"):
            if r[q] == r[q]:
                style.record(fig, **keys, mark="point" if q == "speedup" else "interval", quantity=q, value=r[q])
        style.record(fig, **keys, mark="style", quantity="verdict", text=r["verdict"])


def _variants(t, model):
    h = by_model(t["headline"], model)
    return h[(h["variant"] != "eager") & h["speedup"].notna()]


def _errors(g):
    lo = (g["speedup"] - g["speedup_lo"]).clip(lower=0).fillna(0)
    hi = (g["speedup_hi"] - g["speedup"]).clip(lower=0).fillna(0)
    return [lo, hi]


def _estimator(d, at: str = "", note: str = ">1: faster") -> str:
    """'paired speedup at batch size 64 (>1: faster; interval: range of 2)': the axis label
    of a speedup, naming its estimator and interval."""
    ests = sorted(set(d["estimator"].dropna()))
    ivs = sorted(set(d["interval"].dropna().astype(str)) - {""})
    return f"{'/'.join(ests)} speedup{at} ({note}" + (f"; interval: {'/'.join(ivs)})" if ivs else ")")


def speedup_vs_batch(t, model):
    """Every variant's headline speedup along the main swept axis (solid, with its
    interval; hollow where inconclusive), the speedup across processes faint and dotted
    as a diagnostic; at one value, the variants side by side."""
    d = _variants(t, model)
    if d.empty:
        raise style.NoData("no variant besides eager ran ok")
    slices = by_setting(d)
    if all(rows[axis].nunique() <= 1 for _, rows, axis, _ in slices):
        return _side_by_side(t, model, slices)
    d, axis, fixed = main_axis(d)
    if d[axis].nunique() <= 1:
        return _side_by_side(t, model, [("", d, axis, fixed)])
    fig, (ax,) = style.figure(w=6.2, h=4.2)
    for variant in variant_order(d["variant"].unique()):
        g = d[d["variant"] == variant].sort_values(axis)
        c = variant_colour(variant)
        ax.errorbar(g[axis], g["speedup"], yerr=_errors(g), marker="o", capsize=3, color=c, lw=1.6, label=variant)
        _point_marks(fig, g)
        unsure = g[g["verdict"] == "inconclusive"]
        if len(unsure):
            ax.scatter(unsure[axis], unsure["speedup"], s=50, facecolors="white", edgecolors=c, zorder=3)
        for _, r in g[[skewed(r) for _, r in g.iterrows()]].iterrows():   # a host-skewed estimate said so
            label = f"{r['speedup']:.2f}x {HOST_SKEWED}"
            ax.annotate(label, (r[axis], r["speedup"]), xytext=(6, -2), textcoords="offset points", fontsize=6,
                        color=c, ha="left", va="top")
            style.record(fig, **style.keys_of(r), mark="label", quantity="speedup", value=r["speedup"], text=label)
        across = g[(g["estimator"] == "paired") & g["speedup_across"].notna()]
        if len(across):
            ax.plot(across[axis], across["speedup_across"], ls=":", lw=0.9, marker=".", color=c, alpha=0.45)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    style.log_axis(ax, "x", base=2); style.log_axis(ax, "y")
    style.plain_x_ticks(ax, d[axis].unique())
    ax.set_xlabel(style.xlabel(axis)); ax.set_ylabel(style.wrapped(_estimator(d), 3.2), fontsize=7)
    style.fit_log_ticks(ax, "y")
    style.legend(ax, loc="best")
    if (d["estimator"] == "paired").any() and d["speedup_across"].notna().any():
        ax.text(0.01, 0.01, "dotted, faint: across processes (diagnostic); hollow: interval holds 1",
                transform=ax.transAxes, fontsize=6, color="0.35")
    style.title(fig, f"Speedup over eager along {style.xlabel(axis)}{style.at(fixed)}", t, model)
    return fig


def _side_by_side(t, model, slices):
    """The variants at one value of the main axis, a row each, slowest first within each
    setting (slices: by_setting's (label, rows, axis, fixed); the setting named on its
    rows where there are several), each with its interval written out."""
    axis = slices[0][2]
    d = pd.concat([rows.assign(_setting=label).sort_values("speedup", ascending=False)
                   for label, rows, _, _ in slices])[::-1]
    fixed = joined_fixed([f for *_, f in slices])
    values = sorted(d[axis].unique())
    one_value = len(values) == 1
    fig, (ax,) = style.figure(w=7.5, h=1.5 + 0.34 * len(d) + 0.1 * (len(slices) - 1))
    _point_marks(fig, d)
    column = []
    for i, (_, r) in enumerate(d.iterrows()):
        c = variant_colour(r["variant"])
        err = _errors(d.iloc[[i]])
        ax.errorbar([r["speedup"]], [i], xerr=[[err[0].iloc[0]], [err[1].iloc[0]]],
                    marker="o", capsize=3, color=c, mfc="white" if r["verdict"] == "inconclusive" else c)
        if r["estimator"] == "paired" and r["speedup_across"] == r["speedup_across"]:
            ax.plot([r["speedup_across"]], [i], marker="x", color=c, alpha=0.45, ls="none")
        label = speedup_label(r, method=False)
        style.record(fig, **style.keys_of(r), mark="label", quantity="speedup", value=r["speedup"], text=label)
        if r["estimator"] == "paired" and r["speedup_across"] == r["speedup_across"]:
            label += f"; across processes {r['speedup_across']:.2f}x"
        # the numbers in a column right of the panel: the axis spans the intervals and 1 alone
        column.append(ax.annotate(label, (1.0, i), xycoords=ax.get_yaxis_transform(), xytext=(8, 0),
                                  textcoords="offset points", fontsize=6.5, va="center", color=c))
        column[-1].set_in_layout(False)
    names = [", ".join(filter(None, [r["variant"], r["_setting"],
                                     None if one_value else f"{'bs' if axis == 'batch' else axis} {r[axis]:g}"]))
             for _, r in d.iterrows()]
    ax.set_yticks(range(len(d))); ax.set_yticklabels(names, fontsize=8)
    for tick, v in zip(ax.get_yticklabels(), d["variant"]):
        tick.set_color(variant_colour(v))
    for i in range(1, len(d)):      # a rule between settings
        if d["_setting"].iloc[i] != d["_setting"].iloc[i - 1]:
            ax.axhline(i - 0.5, color="0.8", lw=0.6)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    style.log_axis(ax, "x")
    at = f" at {style.xlabel(axis)} {values[0]:g}" if one_value else ""
    ax.set_xlabel(style.wrapped(_estimator(d, at, ">1: faster; x: across processes"), 3.6), fontsize=7)
    ends = pd.concat([d["speedup"], d["speedup_lo"], d["speedup_hi"], d["speedup_across"]]).dropna()
    ends = ends[ends > 0]
    lo, hi = min(ends.min(), 1.0), max(ends.max(), 1.0)
    pad = (hi / lo) ** 0.08 if hi > lo else 1.5
    ax.set_xlim(lo / pad, hi * pad)
    ax.set_ylim(-0.6, len(d) - 0.4)
    r_ = style.renderer(fig)
    style.keep_right(fig, max(x.get_window_extent(r_).width for x in column) / fig.dpi + 0.2)
    style.title(fig, f"Speedup over eager{style.at(fixed)}", t, model)
    style.fit_log_ticks(ax, "x")
    return fig


def speedup_breakdown(t, model):
    """Where the time saved per iteration comes from (headline parts, adding up to eager's
    wall time as the headline estimator sees it - the variant's), in time per iteration:
    saved above zero, added below, the total as a diamond labelled with the headline
    speedup; a panel per setting (mode and dtype: by_setting), each on its own scale."""
    w = _variants(t, model)
    w = w[w["saved_ms"].notna()]
    if w.empty:
        raise style.NoData("no configuration with both eager and a variant ok")
    slices = by_setting(w)
    if len(slices) > 1 and len({axis for _, _, axis, _ in slices}) == 1:
        fixed = joined_fixed([f for *_, f in slices])
    else:
        rows, axis, fixed = main_axis(w)
        slices = [("", rows, axis, fixed)]
    bars = max(len(rows) for _, rows, _, _ in slices)
    fig, axs = style.figure(len(slices), w=max(5.8 if len(slices) == 1 else 3.4, 2.6 + 0.75 * bars), h=4.4)
    labels_of = CPU_PART_LABELS if set(w["device"].dropna()) == {"cpu"} else PART_LABELS
    for ax, (setting, rows, axis, _) in zip(axs, slices):
        _breakdown_panel(fig, ax, rows, axis, labels_of)
        if setting:
            ax.set_title(setting, fontsize=8)
    handles = {}
    for a in axs:   # every panel's entries once (a traffic source may be drawn in one panel only)
        for hd, name in zip(*a.get_legend_handles_labels()):
            handles.setdefault(name, hd)
    style.legend_below(fig, list(handles.values()), list(handles), fontsize=6.5, ncol=2)
    style.title(fig, f"Where the time saved comes from{style.at(fixed)}", t, model)
    return fig


def _breakdown_panel(fig, ax, w, axis, labels_of):
    """One panel of speedup_breakdown: a stacked bar of the signed parts per row of w
    (variants in the sweep's order along axis)."""
    w = w.assign(_o=w["variant"].map({v: i for i, v in enumerate(variant_order(w["variant"].unique()))}))
    w = w.sort_values([axis, "_o"]).reset_index(drop=True)
    x = np.arange(len(w))
    f, unit = style.time_unit(w[["saved_ms", *PART_COLOURS]].abs().max(axis=1))
    pos, neg = np.zeros(len(w)), np.zeros(len(w))
    source = (w["traffic_source"] if "traffic_source" in w else pd.Series("", index=w.index)).fillna("").astype(str)
    for part, colour in PART_COLOURS.items():
        v = f * w[part].fillna(0).to_numpy()
        if part == "traffic_ms":   # hatched where its bytes are modelled, a legend entry per source drawn
            drawn = [src for src in TRAFFIC_HATCH if ((source == src) & (v != 0)).any()]
            for src in drawn or [""]:
                sel = (source == src).to_numpy() if drawn else np.ones(len(w), bool)
                ax.bar(x[sel], v[sel], 0.62, bottom=np.where(v >= 0, pos, neg)[sel], color=colour,
                       hatch=TRAFFIC_HATCH.get(src, ""), edgecolor="white", lw=0,
                       label=labels_of[part] + (f": {TRAFFIC_WORDS[src]}" if src else ""))
            for (_, r), value, src in zip(w.iterrows(), w[part], source):
                if value and src:
                    style.record(fig, **style.keys_of(r), mark="bar part source", quantity="traffic_source", text=src)
        else:
            ax.bar(x, v, 0.62, bottom=np.where(v >= 0, pos, neg), color=colour, label=labels_of[part])
        for (_, r), value in zip(w.iterrows(), w[part]):
            style.record(fig, **style.keys_of(r), mark="bar part", quantity=part, value=value)
        pos, neg = pos + np.clip(v, 0, None), neg + np.clip(v, None, 0)
    tot = f * w["saved_ms"].to_numpy()
    ax.scatter(x, tot, marker="D", color="k", s=26, zorder=3, label="total saved")
    for i, r in w.iterrows():
        skew = f" {HOST_SKEWED}" if skewed(r) else ""
        label = f"{r['speedup']:.2f}x{skew}\n{style.fmt_time(r['saved_ms'])}"
        ax.annotate(label, (i, max(pos[i], tot[i])), xytext=(0, 6), textcoords="offset points", ha="center",
                    fontsize=6.5)
        style.record(fig, **style.keys_of(r), mark="total", quantity="saved_ms", value=r["saved_ms"])
        style.record(fig, **style.keys_of(r), mark="label", quantity="speedup", value=r["speedup"],
                     text=label.replace("\n", " "))
    ax.axhline(0, color="k", lw=0.8)
    many = len(w) > 5
    labels = [f"{r['variant']}{', ' if many else chr(10)}{'bs' if axis == 'batch' else axis} {r[axis]:g}"
              for _, r in w.iterrows()]
    crowded = not many and len(w) > 2 and max(len(v) for v in w["variant"]) > 10
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7, rotation=90 if many else 25 if crowded else 0,
                       ha="right" if crowded else "center")
    for tick, v in zip(ax.get_xticklabels(), w["variant"]):
        tick.set_color(variant_colour(v))
    ax.set_xlim(-0.6 - 0.2 * (len(w) == 1), len(w) - 0.4 + 0.2 * (len(w) == 1))
    ax.set_ylabel(f"time saved per iteration ({unit}; below 0: added)")
    lo, hi = min(neg.min(), tot.min(), 0), max(pos.max(), tot.max(), 0)
    pad = 0.05 * max(hi - lo, 1e-9)
    ax.set_ylim(lo - 0.08 * (hi - lo) - pad, hi + 0.22 * (hi - lo) + pad)
