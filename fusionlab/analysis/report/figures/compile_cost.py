"""Compile cost as the Inductor harness defines it (the speedups table): compilation
latency and peak-memory compression ratio per model and variant, and the break-even
iteration count (tables/headline.csv: compile latency / time saved per iteration)."""
from __future__ import annotations

import numpy as np

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import settings
from fusionlab.analysis.report.grid import MAX_BARS, grid, grid_size
from fusionlab.analysis.report.style import variant_colour, variant_order
from fusionlab.analysis.sweep import tables

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'compile_cost',
        'scope': 'sweep',
        'category': '6. Compile cost',
        'needs': 'any_compared',
        'caption': ('Compilation latency per model and variant (median of the configurations; the records '
                    'give {compile}), peak memory as eager / the variant (below 1: the variant needs more '
                    'memory) and the iterations it takes to pay back (compile latency / time saved per '
                    'iteration, for speedups faster by their interval: {even}).'),
        'shows': ('compilation latency, peak memory against eager\'s, and the iterations that pay the compile back'),
    },
]


TITLE = "Compile cost and the iterations it takes to pay back"


def _break_even(t, model):
    """(label, variant, iterations, saved_ms, record) per variant configuration with a
    compile latency, from the headline table ([] without it)."""
    h = t.get("headline")
    if h is None or h.empty:
        return []
    h = tables.with_size(h[(h["variant"] != "eager") & (h["compile_s"] > 0) & h["saved_ms"].notna()])
    if model:
        h = h[h["model"] == model]
    h = h.assign(_o=h["variant"].map({v: i for i, v in enumerate(variant_order(h["variant"].unique()))}))
    both = len(settings(h)) > 1
    return [(f"{r['model']} bs {r['batch']:g}" + ("" if r["size"] == "default" else f" {r['size']}")
             + (f" {r['mode']} {r['dtype']}" if both else "") + f" {r['variant']}",
             r["variant"], r["break_even_iters"], r["saved_ms"], r)
            for _, r in h.sort_values(["model", "size", "batch", "_o"]).iterrows()]


def compile_cost(t, model):
    """Compilation latency (median of cold compiles) and peak-memory compression ratio
    (eager / variant) per model and variant: bars with their values, or a grid for a large
    sweep; and, from the headline table, the break-even iteration count per configuration
    ('never' where the variant saves no time)."""
    s = t["speedups"]
    s = s[(s["variant"] != "eager") & (s["status"] == "ok")]
    several = len(settings(s)) > 1
    s = s.assign(_model=s["model"])
    if several:   # each setting (mode and dtype) its own bar, never a median across them
        s = s.assign(model=s["model"] + "\n" + s["mode"].astype(str) + " " + s["dtype"].astype(str))
    d = s.groupby(["model", "variant"])[["compilation_latency_s", "compression_ratio"]].median()
    first = s.groupby(["model", "variant"]).first()   # each bar's model and setting, for its marks

    def marks_of(fig, col, fmt, mark):
        """Each bar's (or cell's) value noted: the median of the ok rows of its model,
        variant and setting in tables/speedups.csv; its label's text returned."""
        out = []
        for (m, v), value in d[col].items():
            f = first.loc[(m, v)]
            keys = {"model": f["_model"], "variant": v, **({"mode": f["mode"], "dtype": f["dtype"]} if several else {})}
            out.append(style.noted(fig, fmt, value, **keys, mark=mark, quantity=f"speedups.{col}", agg="median"))
        return out
    if d.dropna(how="all").empty:
        raise style.NoData("no variant besides eager ran ok")
    if len(d) > MAX_BARS:
        w, h = grid_size(d.index.get_level_values(0).nunique(), d.index.get_level_values(1).nunique())
        fig, (ax, bx) = style.figure(2, w=w, h=h)
        rows = list(dict.fromkeys(d.index.get_level_values(0)))
        cols = variant_order(d.index.get_level_values(1))
        marks_of(fig, "compilation_latency_s", "2f", "cell")
        marks_of(fig, "compression_ratio", "2f", "cell")
        grid(ax, d["compilation_latency_s"].dropna(), ".2f", "compilation latency (s), cold compiles' median",
             cmap="YlOrRd", rows=rows, cols=cols)
        grid(bx, d["compression_ratio"].dropna(), ".2f", "eager peak memory / variant peak memory "
             "(red: the variant uses less)", centre=1.0, rows=rows, cols=cols)
        style.title(fig, TITLE, t, model)
        return fig
    even = _break_even(t, model)
    n = 3 if even else 2
    fig, axs = style.figure(n, w=max(4.2, 1.0 + 0.45 * max(len(d), len(even))), h=4.4)
    colours = [variant_colour(v) for _, v in d.index]
    slot = (fig.get_figwidth() / n - 0.9) / len(d)   # inches per bar
    upright = len(d) > 6 or max(len(x) for m, v in d.index for x in str(m).split("\n") + [v]) * 0.065 > slot
    labels = [f"{m} {v}".replace("\n", " ") if upright else f"{m}\n{v}" for m, v in d.index]
    for a, col, ylabel in ((axs[0], "compilation_latency_s", "compilation latency (s), median\n"
                                                              "of the configurations' cold compiles"),
                           (axs[1], "compression_ratio", "peak memory, eager / variant\n(below 1: the variant "
                                                         "needs more)")):
        bars = a.bar(range(len(d)), d[col].fillna(0), color=colours)
        a.bar_label(bars, labels=marks_of(fig, col, "3g", "bar"), fontsize=6.5, padding=2)
        a.set_ylabel(ylabel)
        a.set_xticks(range(len(d))); a.set_xticklabels(labels, fontsize=6.5 if upright else 7.5,
                                                       rotation=90 if upright else 0)
        for tick, (_, v) in zip(a.get_xticklabels(), d.index):
            tick.set_color(variant_colour(v))
        a.margins(y=0.15)
    axs[1].axhline(1.0, color="grey", lw=0.8, ls="--")
    if even:
        a = axs[2]
        it = np.array([e[2] for e in even], dtype=float)
        bars = a.bar(range(len(even)), np.nan_to_num(it, nan=0.0), color=[variant_colour(e[1]) for e in even])
        labels = []
        for x, (_, v, _, saved, r) in zip(it, even):
            keys = style.keys_of(r)
            if x == x:
                labels.append(style.noted(fig, "iterations", x, **keys, mark="bar", quantity="break_even_iters"))
            else:
                style.record(fig, **keys, mark="bar", quantity="saved_ms", value=saved)
                if saved > 0 and isinstance(r.get("verdict"), str):   # saves time, but not faster by its interval
                    style.record(fig, **keys, mark="label", quantity="verdict", text=r["verdict"])
                labels.append("never (slower)" if saved <= 0 else r["verdict"] if isinstance(r.get("verdict"), str) else "")
        wide = max((len(x) for x in labels), default=0) * 0.065 > (fig.get_figwidth() / n - 0.9) / len(even)
        a.bar_label(bars, labels=labels, fontsize=6.5, padding=2, rotation=90 if wide else 0)   # words upright
        if not np.isfinite(it).any():   # no configuration pays back: the words alone, no scale
            a.set_ylim(0, 1)
            a.set_yticks([])
        a.set_xticks(range(len(even)))
        a.set_xticklabels([e[0] for e in even], rotation=90, fontsize=6)
        for tick, e in zip(a.get_xticklabels(), even):
            tick.set_color(variant_colour(e[1]))
        a.set_ylabel("iterations to pay back the compile")
        if np.isfinite(it).any() and np.nanmax(it) / max(np.nanmin(it), 1e-9) > 50:
            style.log_axis(a, "y"); style.fit_log_ticks(a, "y")
        a.margins(y=0.15)
    style.title(fig, TITLE, t, model)
    return fig
